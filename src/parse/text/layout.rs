//! The layout of plain text: lines, pages, and blocks of lines.
//!
//! Blocks ("chunks") are runs of non-blank lines. Form feeds are page
//! breaks. Two layouts need more than that:
//!
//! * **Flattened pages.** Text extracted from PDFs or HTML filings often
//!   comes as one very long line per page or paragraph, where the original
//!   line and paragraph breaks survive only as runs of spaces: "EXHIBIT
//!   10.1   STRATEGIC SALES & MARKETING AGREEMENT   THIS AGREEMENT is …".
//!   A line longer than [`FLATTENED_LINE_CHARS`] is split at runs of
//!   [`MIN_GAP`] or more spaces where the gap evidently separates blocks: the
//!   text before it ends a sentence, or the text before or after it is a
//!   heading, or what follows starts with a list marker or is a page
//!   number. Other gaps (justified text, "(ii)           $2,000,000") are
//!   kept as spaces.
//! * **Underlines on the same line.** "1.   Definitions.     -----------"
//!   is a title followed by its underline; the underline becomes a line of
//!   its own so that the title is read as an underlined heading.

use smallvec::SmallVec;

use super::{heading, marker};
use crate::parse::clean::is_page_number;

/// Lines longer than this many bytes are taken for flattened paragraphs or
/// pages (typewritten and e-mailed text wraps at 65–80 characters).
pub(super) const FLATTENED_LINE_CHARS: usize = 120;

/// Fewest spaces in a run that may stand for a line or paragraph break.
const MIN_GAP: usize = 3;

/// Width of a tab when measuring indentation.
const TAB_WIDTH: usize = 8;

/// One line of text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Line<'a> {
    /// The line as written (indentation included), for column positions.
    pub raw: &'a str,
    /// The line without its indentation and trailing whitespace.
    pub text: &'a str,
    /// Width of the indentation, a tab counting [`TAB_WIDTH`].
    pub indent: usize,
}

impl<'a> Line<'a> {
    pub(super) fn new(raw: &'a str) -> Self {
        let text = raw.trim();
        let indent = raw
            .chars()
            .take_while(|c| c.is_whitespace())
            .map(|c| if c == '\t' { TAB_WIDTH } else { 1 })
            .sum();
        Line { raw, text, indent }
    }
}

/// A block of consecutive non-blank lines.
#[derive(Debug, Default)]
pub(super) struct Chunk<'a> {
    pub lines: Vec<Line<'a>>,
    /// The page the block starts on (1-based), when the text has form
    /// feeds.
    pub page: Option<u32>,
}

impl Chunk<'_> {
    /// The block's text when it is a single line.
    pub(super) fn single_line(&self) -> Option<&str> {
        match self.lines.as_slice() {
            [line] => Some(line.text),
            _ => None,
        }
    }
}

/// Splits a text into blocks of lines, in order.
pub(super) fn chunks(text: &str) -> Vec<Chunk<'_>> {
    // The memchr crate's searches, not `str::split` and `contains`: they
    // run over the whole text, and std's search is several times slower.
    let bytes = text.as_bytes();
    let mut reader = ChunkReader {
        chunks: Vec::new(),
        current: Chunk::default(),
        page: memchr::memchr(b'\x0c', bytes).map(|_| 1),
    };
    // Old Mac files end lines with a bare carriage return.
    let separator = match memchr::memchr(b'\n', bytes) {
        Some(_) => b'\n',
        None => b'\r',
    };
    let mut line_start = 0;
    for line_end in memchr::memchr_iter(separator, bytes).chain([bytes.len()]) {
        // Each end is an ASCII byte or the text's end: a char boundary.
        let physical = &text[line_start..line_end];
        line_start = line_end + 1;
        let physical = physical.strip_suffix('\r').unwrap_or(physical);
        if reader.page.is_none() {
            // No form feeds anywhere: no need to look for them line by line.
            reader.line(physical);
            continue;
        }
        for (i, part) in physical.split('\x0c').enumerate() {
            if i > 0 {
                reader.page_break();
            }
            reader.line(part);
        }
    }
    reader.end_chunk();
    reader.chunks
}

struct ChunkReader<'a> {
    chunks: Vec<Chunk<'a>>,
    current: Chunk<'a>,
    page: Option<u32>,
}

impl<'a> ChunkReader<'a> {
    fn line(&mut self, raw: &'a str) {
        let text = raw.trim();
        if text.is_empty() {
            self.end_chunk();
            return;
        }
        let flattened = text.len() > FLATTENED_LINE_CHARS;
        let segments = segments(text, flattened);
        if matches!(segments.as_slice(), [only] if only.underline.is_none()) {
            self.push(Line::new(raw));
            return;
        }
        if flattened {
            self.end_chunk();
        }
        for segment in segments {
            self.push(Line::new(segment.text));
            if let Some(underline) = segment.underline {
                self.push(Line::new(underline));
            }
            if flattened {
                self.end_chunk();
            }
        }
    }

    fn push(&mut self, line: Line<'a>) {
        if self.current.lines.is_empty() {
            self.current.page = self.page;
        }
        self.current.lines.push(line);
    }

    fn page_break(&mut self) {
        self.end_chunk();
        self.page = self.page.map(|p| p.saturating_add(1));
    }

    fn end_chunk(&mut self) {
        if !self.current.lines.is_empty() {
            self.chunks.push(std::mem::take(&mut self.current));
        }
    }
}

/// The segments of a line: on the stack for the line that is one segment,
/// or a title and its underline, as most are (a line's heap allocation
/// costs as much as its reading).
type Segments<'a> = SmallVec<[Segment<'a>; 2]>;

/// A part of a line that stands for a line of its own, with the rule that
/// underlined it, if one followed it on the same line.
#[derive(Debug, PartialEq, Eq)]
struct Segment<'a> {
    text: &'a str,
    underline: Option<&'a str>,
}

/// Splits a line at its gaps where they separate blocks (see the module
/// documentation); without `flattened`, only at an underline.
fn segments(text: &str, flattened: bool) -> Segments<'_> {
    let pieces = pieces(text);
    let mut segments = Segments::new();
    let Some(&(first_start, first_end)) = pieces.first() else {
        return segments;
    };
    let (mut start, mut end) = (first_start, first_end);
    if flattened && let Some(title_end) = leading_title(&text[start..end]) {
        segments.push(Segment {
            text: &text[start..start + title_end],
            underline: None,
        });
        start += title_end;
        start += text[start..end].len() - text[start..end].trim_start().len();
    }
    for &(piece_start, piece_end) in pieces.iter().skip(1) {
        let current = &text[start..end];
        let next = &text[piece_start..piece_end];
        if is_underline(next) {
            // An underline under a title makes it a heading; under part of
            // a sentence ("Ownership of the Product. The parties …") it
            // is dropped and the sentence goes on.
            if heading::is_underlinable(current) {
                segments.push(Segment {
                    text: current,
                    underline: Some(next),
                });
                (start, end) = (piece_end, piece_end);
            }
            continue;
        }
        if start == end {
            (start, end) = (piece_start, piece_end);
            continue;
        }
        if flattened && separates_blocks(current, next) {
            segments.push(Segment {
                text: current,
                underline: None,
            });
            start = piece_start;
        }
        end = piece_end;
    }
    if start < end {
        segments.push(Segment {
            text: &text[start..end],
            underline: None,
        });
    }
    segments
}

/// The end of a title that opens a flattened line without a gap after it:
/// a run of words in capitals followed by the capitalised first word of a
/// sentence ("WALABOT-HOME RESELLER AGREEMENT This Agreement is made …"),
/// or a division label with its run-in title, if it has one ("Section 2.2
/// Operation and Maintenance Services. Operator shall …", "Exhibit
/// 99(k)(5) FORM OF …").
fn leading_title(text: &str) -> Option<usize> {
    let is_capitals =
        |w: &str| w.chars().any(char::is_alphabetic) && !w.chars().any(char::is_lowercase);
    // Both kinds of title open with a division keyword or a word in
    // capitals; most lines open with neither, and need no more reading.
    let words = text.trim_start_matches(' ');
    let first = &words[..memchr::memchr(b' ', words.as_bytes()).unwrap_or(words.len())];
    if !is_capitals(first) && heading::division_keyword(first).is_none() {
        return None;
    }
    // Only the opening words matter: a possible two-word label, the run of
    // words in capitals after it, and the word after that run. Collecting
    // just those keeps this cheap on long flattened lines.
    let mut words: Vec<(usize, &str)> = Vec::new();
    let all_words = text
        .split(' ')
        .scan(0usize, |offset, word| {
            let start = *offset;
            *offset += word.len() + 1;
            Some((start, word))
        })
        .filter(|(_, w)| !w.is_empty())
        .take(heading::MAX_HEADING_CHARS);
    for word in all_words {
        let past_label = words.len() >= 2;
        words.push(word);
        if past_label && !is_capitals(word.1) {
            break;
        }
    }
    let end_of = |i: usize| words.get(i).map(|&(start, word)| start + word.len());
    let label_words = match words.as_slice() {
        // The keyword test first: it is cheap, and `classify` copies.
        [(_, keyword), (_, label), ..]
            if heading::division_keyword(keyword).is_some()
                && heading::classify(&format!("{keyword} {label}"))
                    .is_some_and(|h| !h.has_title) =>
        {
            2
        }
        _ => 0,
    };
    let capitals = words
        .iter()
        .skip(label_words)
        .take_while(|(_, w)| is_capitals(w))
        .count();
    let sentence_follows = words
        .get(label_words + capitals)
        .is_some_and(|(_, w)| starts_sentence(w));
    if capitals >= 3 && sentence_follows {
        let end = end_of(label_words + capitals - 1)?;
        if heading::classify(&text[..end]).is_some() {
            return Some(end);
        }
    }
    if label_words != 2 {
        return None;
    }
    // "Section 2.2 Operation and Maintenance Services. Operator shall …":
    // the run-in title belongs to the heading.
    let label_end = end_of(1)?;
    let run_in_title = text
        .match_indices(". ")
        .map(|(i, _)| i + 1)
        .find(|&end| end > label_end)
        .filter(|&end| {
            heading::classify(&text[..end]).is_some_and(|h| h.has_title)
                && starts_sentence(&text[end..])
        });
    Some(run_in_title.unwrap_or(label_end))
}

/// Whether a text starts like a sentence: a capitalised word that is not
/// in capitals throughout ("This", not "TREASURY").
fn starts_sentence(text: &str) -> bool {
    let word = text.split_whitespace().next().unwrap_or_default();
    word.chars().next().is_some_and(char::is_uppercase) && word.chars().any(char::is_lowercase)
}

/// Whether the gap between `before` and `after` (parts of a flattened
/// line) separates two blocks.
fn separates_blocks(before: &str, after: &str) -> bool {
    let label_only = || heading::classify(before).is_some_and(|h| !h.has_title);
    if marker::is_bare(before) || label_only() {
        // "1.   Definitions.", "Section 3.2    TERMS OF PAYMENT.": the gap
        // aligns a number with its title.
        return false;
    }
    super::join::ends_sentence(before)
        || is_page_number(after)
        || marker::leading(after).is_some()
        || heading::classify(before).is_some()
        || heading::classify(after).is_some()
}

/// A searcher for [`MIN_GAP`] spaces, built once.
static GAP: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(&[b' '; MIN_GAP]));

/// Byte ranges of the parts of a line between runs of [`MIN_GAP`] or more
/// spaces or tabs.
fn pieces(text: &str) -> SmallVec<[(usize, usize); 2]> {
    let mut pieces = SmallVec::new();
    let mut piece_start = 0;
    let mut gap: Option<(usize, usize)> = None; // (start byte, width)
    // Most lines of prose have no gap at all: two searches (vectorised)
    // instead of a walk over every byte.
    let bytes = text.as_bytes();
    let gapless = memchr::memchr(b'\t', bytes).is_none() && GAP.find(bytes).is_none();
    // Bytes, not chars: spaces and tabs are ASCII, and the byte after one
    // is always a char boundary.
    if !gapless {
        for (i, &b) in bytes.iter().enumerate() {
            if b == b' ' || b == b'\t' {
                let (start, width) = gap.unwrap_or((i, 0));
                gap = Some((start, width + if b == b'\t' { MIN_GAP } else { 1 }));
                continue;
            }
            if let Some((gap_start, width)) = gap.take()
                && width >= MIN_GAP
            {
                pieces.push((piece_start, gap_start));
                piece_start = i;
            }
        }
    }
    // "1.   OVERVIEW =========": an underline after a single space.
    let last = &text[piece_start..];
    match memchr::memrchr(b' ', last.as_bytes()) {
        Some(space) if is_underline(&last[space..]) => {
            let title_end = piece_start + last[..space].trim_end().len();
            pieces.push((piece_start, title_end));
            pieces.push((piece_start + space + 1, text.len()));
        }
        _ => pieces.push((piece_start, text.len())),
    }
    pieces
}

/// A line drawn with `-`, `=` or `~` (three or more) under a title.
/// Underscores are blanks to fill in ("By: ______"), not underlines.
pub(super) fn is_underline(text: &str) -> bool {
    is_rule(text) && !text.contains(['_', '*'])
}

/// A line drawn with `-`, `=`, `_`, `~` or `*` (three or more), used to
/// underline titles or separate parts.
pub(super) fn is_rule(text: &str) -> bool {
    let text = text.trim();
    // The `all` check fails on the first letter of ordinary text, so it
    // goes first.
    text.bytes()
        .all(|b| b.is_ascii_whitespace() || matches!(b, b'-' | b'=' | b'_' | b'~' | b'*'))
        && text.bytes().filter(|b| !b.is_ascii_whitespace()).count() >= 3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<Vec<&str>> {
        chunks(text)
            .iter()
            .map(|c| c.lines.iter().map(|l| l.text).collect())
            .collect()
    }

    #[test]
    fn blank_lines_separate_chunks() {
        assert_eq!(
            texts("one\n  two\n\n\nthree\r\nfour\r\n"),
            vec![vec!["one", "two"], vec!["three", "four"]]
        );
        assert_eq!(
            texts("mac\rlines\r\rnext"),
            vec![vec!["mac", "lines"], vec!["next"]]
        );
        let chunk = &chunks("\t  indented")[0];
        assert_eq!(chunk.lines[0].indent, 10);
    }

    #[test]
    fn form_feeds_count_pages() {
        let chunks = chunks("first page\n\x0csecond\nstill second\x0cthird");
        let pages: Vec<_> = chunks.iter().map(|c| c.page).collect();
        assert_eq!(pages, vec![Some(1), Some(2), Some(3)]);
        assert_eq!(super::chunks("no feeds")[0].page, None);
    }

    #[test]
    fn flattened_lines_split_where_blocks_end() {
        let line = "EXHIBIT 10.1   STRATEGIC SALES & MARKETING AGREEMENT   THIS AGREEMENT is \
                    entered into by and between Surgical and Imprimis.   WHEREAS, Imprimis is \
                    licensed;   1. Sales Representation Services.     1.1. Surgical will provide \
                    services (the \"Services\") to Imprimis.     Page 1 of 11";
        assert_eq!(
            texts(line),
            vec![
                vec!["EXHIBIT 10.1"],
                vec!["STRATEGIC SALES & MARKETING AGREEMENT"],
                vec!["THIS AGREEMENT is entered into by and between Surgical and Imprimis."],
                vec!["WHEREAS, Imprimis is licensed;"],
                vec!["1. Sales Representation Services."],
                vec!["1.1. Surgical will provide services (the \"Services\") to Imprimis."],
                vec!["Page 1 of 11"],
            ]
        );
    }

    #[test]
    fn titles_opening_flattened_lines_are_split_off() {
        let line = "WALABOT-HOME RESELLER AGREEMENT This Walabot-HOME Reseller Agreement is made \
                    and entered into as of this 31 day of July 2019 by and between the parties.";
        assert_eq!(texts(line)[0], vec!["WALABOT-HOME RESELLER AGREEMENT"]);
        let line = "Exhibit 99(k)(5) FORM OF BLOCKCHAIN ADMINISTRATION AND DEVELOPMENT AGREEMENT \
                    BETWEEN ARCA U.S. TREASURY FUND AND ARCA CAPITAL MANAGEMENT, LLC This Agreement \
                    is made as of 2020.";
        assert_eq!(texts(line)[0], vec!["Exhibit 99(k)(5)"]);
        let line = "Section 2.2 Operation and Maintenance Services. Operator shall operate and \
                    maintain the Bloom Systems in accordance with the Operating Procedures.";
        assert_eq!(
            texts(line)[0],
            vec!["Section 2.2 Operation and Maintenance Services."]
        );
        let line = "IN WITNESS WHEREOF, the parties have executed this Agreement as of the date \
                    first written above by their duly authorised representatives.";
        assert_eq!(texts(line).len(), 1);
    }

    #[test]
    fn underlines_under_sentences_are_dropped() {
        let line = "5.   Ownership of the Product. The parties respective rights in and to the     \
                    ------------------------      Product will be as set forth in the Software \
                    Development Agreement.";
        let chunks = texts(line);
        assert_eq!(chunks.len(), 1, "{chunks:?}");
    }

    #[test]
    fn gaps_inside_sentences_are_kept() {
        let line = "\"Annual Royalty Advance\" shall mean (i) $1,000,000 in respect of fiscal year \
                    1999, (ii)           $2,000,000 in respect of fiscal year 2000 and (iii) \
                    $3,000,000 thereafter.";
        let chunks = texts(line);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].len(), 1);
    }

    #[test]
    fn same_line_underlines_become_lines() {
        assert_eq!(
            texts("     1.   Definitions.           -----------"),
            vec![vec!["1.   Definitions.", "-----------"]]
        );
        assert_eq!(
            texts("  1.   OVERVIEW ==========="),
            vec![vec!["1.   OVERVIEW", "==========="]]
        );
        // Fill-in blanks are not underlines.
        assert_eq!(texts("By:    ________"), vec![vec!["By:    ________"]]);
        // Short lines are not split at their gaps otherwise.
        assert_eq!(
            texts("ABC          I/PRO          PWC"),
            vec![vec!["ABC          I/PRO          PWC"]]
        );
    }

    #[test]
    fn rules() {
        assert!(is_rule("-----"));
        assert!(is_rule(" = = = "));
        assert!(!is_rule("--"));
        assert!(!is_rule("- item"));
    }
}
