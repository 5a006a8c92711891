//! Plain text → [`DocumentTree`].
//!
//! Plain text is what contracts, filings and exported manuals often come
//! as: hard-wrapped or one paragraph per line, headings told apart only by
//! their shape, page breaks as form feeds or as page numbers between
//! fragments of a sentence. Parsing runs in three linear passes:
//!
//! 1. `layout` cuts the text into blocks of lines ("chunks"), counting
//!    pages at form feeds and splitting flattened lines;
//! 2. each chunk becomes `Unit`s: page furniture (a page number, a
//!    running header or footer), a `table`, `heading`s, and text units
//!    (paragraphs, or lines starting with a `marker`);
//! 3. units are rejoined where a page break cut a sentence (`rejoin`),
//!    capitals lines that are rows of a list rather than headings are
//!    turned back into text (`demote_false_capitals`), and the units are
//!    emitted with outline levels and list depths (`emit`).
//!
//! The rules, in brief:
//!
//! * **Paragraphs** are separated by blank lines; wrapped lines are joined
//!   with spaces and words broken at a line end are mended (`join`).
//!   Indentation is not structure (except for list depth). Flattened lines
//!   (a whole page or paragraph on one line, as PDF and HTML extractions
//!   of filings give) are split where runs of spaces stand for breaks
//!   (`layout`).
//! * **Rejoining.** A paragraph that does not end with `.`, `!`, `?`, `:`
//!   or `;` and is followed — past blank lines, page numbers and running
//!   headers — by a paragraph starting with a lowercase letter, or that
//!   ends with a word such as "to", "the" or "and", is one paragraph cut by
//!   a page break; the two are joined.
//! * **Headings** are recognised by shape (`heading`). Levels: ARTICLE,
//!   Chapter and Part → 1; Section → 2 once an ARTICLE/Chapter/Part was
//!   seen, else the depth of its number; SCHEDULE/EXHIBIT/APPENDIX/Annex →
//!   1; numbered titles → the depth of their number ("5" → 1, "5.1" → 2);
//!   lines in capitals and `=`-underlined titles → 1 before the first
//!   numbered heading and 2 after it (inside a numbered outline they are
//!   sub-headings, not new top-level parts); `-`-underlined titles → 2. A
//!   "SECTION 5" heading without a title takes the capitals heading that
//!   follows it as its title. The first capitals or underlined heading
//!   before any numbered one is the document's title. Three or more
//!   capitals lines in a row, or one followed by text without letters, are
//!   rows of a flattened list or table, not headings.
//! * **Numbered clauses** ("1.1 HDI shall design, …") stay paragraphs, with
//!   their number, from which enrichment reads the clause id. A clause
//!   whose title runs into its text ("11. Customer References. Customer
//!   agrees …", "5. Ownership - Individual agrees …") also opens a section
//!   with that heading, at the depth of its number; a paragraph running
//!   several such clauses together is split where each starts, when their
//!   numbers follow on (`clause`).
//! * **Lists.** Lines starting with a bullet are list items; lines starting
//!   with "(a)", "(i)", "a)", "1)" or "a." are list items when at least two
//!   follow one another, else paragraphs. Depth comes from indentation, and
//!   from the marker kind: after an item ending with ':', a new kind
//!   ("(i)" after "(a)") opens a sub-list, and an earlier kind coming back
//!   closes it.
//! * **Tables**: pipe tables and aligned columns, conservatively
//!   (`table`).
//! * **Pages**: form feeds are page breaks, pages count from 1. Lines that
//!   are only a page number, and short lines repeated through the document,
//!   are kept as paragraphs (the shared cleaning pass drops them when
//!   `parsing.dropBoilerplate` is on) but are transparent to rejoining and
//!   never headings.

mod clause;
mod heading;
mod join;
mod layout;
mod marker;
mod table;

use std::collections::{HashMap, HashSet};

use super::clean::{boilerplate_key, is_page_number};
use super::{DocumentTree, Format, ParseFailure, Table, TreeBuilder, collapse_whitespace};
use crate::spec::ParsingSpec;
use clause::ClauseNumbers;
use heading::{HeadingKind, HeadingLine};
use layout::{Chunk, is_rule, is_underline};
use marker::{Marker, MarkerStyle, Sequence};

/// Whether `cell`, whole, is a list marker or clause number ("1.",
/// "(a)", "•", "5.1"): what a list's first column holds when it is laid
/// out like a table.
pub(crate) fn is_list_marker(cell: &str) -> bool {
    let cell = cell.trim();
    // A marker is recognised before the text it marks.
    let marked = format!("{cell} text");
    marker::leading(&marked).is_some_and(|m| m.label == cell)
}

/// Parses a plain-text document. The caller runs the shared passes
/// ([`super::finish`]) on the result.
pub fn parse(text: &str, spec: &ParsingSpec) -> Result<DocumentTree, ParseFailure> {
    let chunks = layout::chunks(text);
    let running = RunningLines::count(&chunks, spec.boilerplate_min_repeats);
    let mut units = Vec::with_capacity(chunks.len());
    for chunk in &chunks {
        read_chunk(chunk, &running, &mut units);
    }
    let mut units = rejoin(units);
    demote_false_capitals(&mut units);
    let mut builder = TreeBuilder::new(Format::Text);
    emit(units, &mut builder);
    Ok(builder.finish())
}

/// What a chunk of text is made of.
#[derive(Debug)]
enum Unit {
    Heading {
        heading: HeadingLine,
        page: Option<u32>,
    },
    Text(TextUnit),
    Table {
        table: Table,
        page: Option<u32>,
    },
    /// A page number or a running header/footer line.
    Furniture {
        text: String,
        page: Option<u32>,
    },
}

/// A paragraph, or a line starting with a marker and its continuation.
#[derive(Debug)]
struct TextUnit {
    /// The text as written, marker included, lines joined.
    text: String,
    marker: Option<Marker>,
    indent: usize,
    page: Option<u32>,
}

impl TextUnit {
    fn new(text: &str, indent: usize, page: Option<u32>) -> Self {
        TextUnit {
            text: text.trim().to_string(),
            marker: marker::leading(text.trim()),
            indent,
            page,
        }
    }

    /// The marker's style, when it is a list marker.
    fn list_style(&self) -> Option<MarkerStyle> {
        self.marker
            .as_ref()
            .map(|m| m.style)
            .filter(|s| s.is_list())
    }
}

/// Short lines that occur again and again (running headers and footers,
/// "Source: …" banners of filings): never headings, and transparent when a
/// paragraph cut by a page break is rejoined.
struct RunningLines {
    /// The keys of the lines that repeat often enough; most documents have
    /// none, and then no line needs its key made again.
    keys: HashSet<String>,
}

/// Longest line counted as a running header or footer, in characters (the
/// bound the cleaning pass uses for boilerplate).
const RUNNING_LINE_MAX_CHARS: usize = 100;

impl RunningLines {
    fn count(chunks: &[Chunk<'_>], min_repeats: u32) -> Self {
        let mut counts: HashMap<String, u32> = HashMap::new();
        for line in chunks.iter().filter_map(Chunk::single_line) {
            if let Some(key) = Self::key(line) {
                *counts.entry(key).or_default() += 1;
            }
        }
        let min_repeats = min_repeats.max(2);
        RunningLines {
            keys: counts
                .into_iter()
                .filter_map(|(key, n)| (n >= min_repeats).then_some(key))
                .collect(),
        }
    }

    fn contains(&self, line: &str) -> bool {
        !self.keys.is_empty() && Self::key(line).is_some_and(|key| self.keys.contains(&key))
    }

    /// The cleaning pass's key ([`boilerplate_key`]), for lines short
    /// enough to be furniture.
    fn key(line: &str) -> Option<String> {
        if line.len() > 4 * RUNNING_LINE_MAX_CHARS {
            return None;
        }
        // Each printable ASCII byte stays one character of the key
        // (lowered, or masked if a digit): a line with more of them than
        // the bound has a key over it, which is not built.
        let printable = line.bytes().filter(|b| b.is_ascii_graphic()).count();
        if printable > RUNNING_LINE_MAX_CHARS {
            return None;
        }
        let key = boilerplate_key(line);
        (key.chars().count() <= RUNNING_LINE_MAX_CHARS).then_some(key)
    }
}

/// Turns one chunk into units.
fn read_chunk(chunk: &Chunk<'_>, running: &RunningLines, units: &mut Vec<Unit>) {
    let page = chunk.page;
    if let Some(line) = chunk.single_line()
        && (is_page_number(line) || running.contains(line))
    {
        units.push(Unit::Furniture {
            text: line.to_string(),
            page,
        });
        return;
    }
    if let Some(table) = table::detect(&chunk.lines) {
        units.push(Unit::Table { table, page });
        return;
    }
    let lines = &chunk.lines;
    let mut current: Option<TextUnit> = None;
    let mut i = 0;
    while let Some(line) = lines.get(i) {
        let next = lines.get(i + 1);
        let at_block_start = current
            .as_ref()
            .is_none_or(|c| join::ends_sentence(&c.text));
        if is_rule(line.text) {
            // A separator line: it ends the block before it.
            units.extend(current.take().map(Unit::Text));
            i += 1;
            continue;
        }
        if is_contents_entry(line.text) {
            // "3. Fees and Payment ....... 2": an entry of a table of
            // contents stands alone, so the contents pass can read it.
            units.extend(current.take().map(Unit::Text));
            units.push(Unit::Text(TextUnit::new(line.text, line.indent, page)));
            i += 1;
            continue;
        }
        if at_block_start
            && let Some(underline) = next.filter(|n| is_underline(n.text))
            && heading::is_underlinable(line.text)
        {
            units.extend(current.take().map(Unit::Text));
            let heading = heading::classify(line.text).unwrap_or_else(|| HeadingLine {
                kind: HeadingKind::Underlined {
                    double: underline.text.contains('='),
                },
                text: collapse_whitespace(line.text),
                has_title: true,
            });
            units.push(Unit::Heading { heading, page });
            i += 2;
            continue;
        }
        if at_block_start
            && !next.is_some_and(|n| join::starts_lowercase(n.text))
            && let Some(heading) = heading::classify(line.text)
        {
            units.extend(current.take().map(Unit::Text));
            units.push(Unit::Heading { heading, page });
            i += 1;
            continue;
        }
        // A marker starts a new item after the end of a clause, after
        // another list item, or when it is a bullet no sentence starts with.
        let starts_item = marker::leading(line.text).is_some_and(|m| {
            current.as_ref().is_some_and(|c| {
                ends_clause(&c.text)
                    || (m.style.is_list() && c.list_style().is_some())
                    || m.is_unambiguous_bullet()
            })
        });
        match &mut current {
            Some(unit) if !starts_item => join::append_line(&mut unit.text, line.text),
            _ => {
                units.extend(current.take().map(Unit::Text));
                current = Some(TextUnit::new(line.text, line.indent, page));
            }
        }
        i += 1;
    }
    units.extend(current.map(Unit::Text));
}

/// Whether a line is a table-of-contents entry: a title, a leader of three
/// or more dots (or an ellipsis) and a page number ("Payment ..... 12").
fn is_contents_entry(line: &str) -> bool {
    let line = line.trim_end();
    let number = line.trim_end_matches(|c: char| c.is_ascii_digit());
    let roman = line.trim_end_matches(['i', 'v', 'x', 'l', 'c']);
    let before = if number.len() < line.len() {
        number
    } else {
        roman
    };
    if before.len() == line.len() {
        return false;
    }
    let leader = before.trim_end();
    let title = leader.trim_end_matches(['.', '…', ' ', '·']);
    let dots = leader[title.len()..]
        .chars()
        .filter(|&c| c == '.' || c == '·')
        .count()
        + 3 * leader[title.len()..].matches('…').count();
    dots >= 3 && !title.trim().is_empty()
}

/// Whether a block ends where a new item may start: at the end of a
/// sentence or clause, or after "; and" / "; or".
fn ends_clause(text: &str) -> bool {
    let text = text.trim_end();
    join::ends_sentence(text)
        || [" and", " or"].iter().any(|conjunction| {
            text.strip_suffix(conjunction)
                .is_some_and(|before| before.trim_end().ends_with([';', ',']))
        })
}

/// Joins paragraphs cut by page breaks: a unit not ending a sentence,
/// followed (past furniture) by a paragraph that starts with a lowercase
/// letter. A heading candidate followed that way was the start of such a
/// paragraph and becomes text again.
fn rejoin(units: Vec<Unit>) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::with_capacity(units.len());
    // The last unit that a following fragment may continue.
    let mut open: Option<usize> = None;
    for unit in units {
        // What may continue an open paragraph: unmarked text, or a line in
        // capitals after a dangling "with respect to".
        let fragment = match &unit {
            Unit::Text(t) if t.marker.is_none() => Some(t.text.as_str()),
            Unit::Heading { heading, .. } if heading.kind == HeadingKind::Capitals => {
                Some(heading.text.as_str())
            }
            _ => None,
        };
        if let Some(fragment) = fragment
            && let Some(previous) = open.and_then(|i| out.get_mut(i))
            && let Some(text) = continuable_text(previous, join::starts_lowercase(fragment))
        {
            join::append_line(text, fragment);
            continue;
        }
        match unit {
            Unit::Furniture { .. } => {
                out.push(unit);
                continue;
            }
            Unit::Table { .. } => {
                out.push(unit);
                open = None;
                continue;
            }
            unit => out.push(unit),
        }
        open = Some(out.len() - 1);
    }
    out
}

/// The text a fragment may be appended to: a text unit's, or a heading's
/// (turned back into text), when it does not end a sentence and the
/// fragment evidently continues it — the fragment starts with a lowercase
/// letter, or the text ends with a word like "to" or "the".
fn continuable_text(unit: &mut Unit, fragment_starts_lowercase: bool) -> Option<&mut String> {
    let continues = |text: &str| {
        !join::ends_sentence(text) && (fragment_starts_lowercase || join::ends_with_connector(text))
    };
    if let Unit::Heading { heading, page } = unit {
        // Headings never end with "to" or "the"; only a lowercase fragment
        // shows that one was the start of a sentence.
        if !fragment_starts_lowercase
            || !continues(&heading.text)
            || heading.kind == HeadingKind::Contents
        {
            return None;
        }
        let text = std::mem::take(&mut heading.text);
        *unit = Unit::Text(TextUnit::new(&text, 0, *page));
    }
    match unit {
        Unit::Text(text) if continues(&text.text) => Some(&mut text.text),
        _ => None,
    }
}

/// Fewest capitals headings in a row that are taken for the rows of a
/// flattened table or list rather than for headings.
const MIN_CAPITALS_RUN: usize = 3;

/// Turns back into text the capitals "headings" that are not: runs of
/// [`MIN_CAPITALS_RUN`] or more with nothing between them (a flattened
/// list of parts, contents or signatories), and those followed by text
/// without a letter (a row of a flattened table: "VALVE-BRAKE  [*****]").
fn demote_false_capitals(units: &mut [Unit]) {
    let is_capitals = |unit: &Unit| matches!(unit, Unit::Heading { heading, .. } if heading.kind == HeadingKind::Capitals);
    let content: Vec<usize> = (0..units.len())
        .filter(|&i| !matches!(units[i], Unit::Furniture { .. }))
        .collect();
    let mut demote = vec![false; units.len()];
    let mut run_start = 0;
    for (position, &index) in content.iter().enumerate() {
        if !is_capitals(&units[index]) {
            run_start = position + 1;
            continue;
        }
        let run_ends = content
            .get(position + 1)
            .is_none_or(|&next| !is_capitals(&units[next]));
        if run_ends && position + 1 - run_start >= MIN_CAPITALS_RUN {
            for &i in &content[run_start..=position] {
                demote[i] = true;
            }
        }
        let letterless_next = content.get(position + 1).is_some_and(|&next| {
            matches!(&units[next], Unit::Text(t) if !t.text.chars().any(char::is_alphabetic))
        });
        demote[index] |= letterless_next;
    }
    for (unit, demote) in units.iter_mut().zip(demote) {
        if demote && let Unit::Heading { heading, page } = unit {
            let text = std::mem::take(&mut heading.text);
            *unit = Unit::Text(TextUnit::new(&text, 0, *page));
        }
    }
}

/// Heading levels from the headings seen so far (see the module
/// documentation).
#[derive(Default)]
struct Outline {
    seen_numbered: bool,
    seen_division: bool,
    title_taken: bool,
}

impl Outline {
    fn level(&mut self, kind: HeadingKind) -> u8 {
        let level = match kind {
            HeadingKind::Division | HeadingKind::Annex | HeadingKind::Contents => 1,
            HeadingKind::Section { depth } if self.seen_division => depth.max(2),
            HeadingKind::Section { depth } | HeadingKind::Numbered { depth } => depth.max(1),
            HeadingKind::Capitals | HeadingKind::Underlined { double: true } => {
                if self.seen_numbered { 2 } else { 1 }
            }
            HeadingKind::Underlined { double: false } => 2,
        };
        self.seen_division |= kind == HeadingKind::Division;
        self.seen_numbered |= kind.is_outline();
        level
    }

    /// Whether a heading of this kind is the document's title: the first
    /// capitals or underlined heading before the numbered outline starts.
    fn takes_title(&mut self, kind: HeadingKind) -> bool {
        let candidate = matches!(kind, HeadingKind::Capitals | HeadingKind::Underlined { .. });
        let takes = candidate && !self.title_taken && !self.seen_numbered;
        self.title_taken |= takes || kind.is_outline();
        takes
    }
}

/// Emits the units into the builder.
fn emit(units: Vec<Unit>, builder: &mut TreeBuilder) {
    let mut outline = Outline::default();
    let mut clauses = ClauseNumbers::default();
    let mut units = units.into_iter().peekable();
    while let Some(unit) = units.next() {
        match unit {
            Unit::Heading { heading, page } => {
                let mut text = heading.text;
                // "ARTICLE V" then "TERM AND TERMINATION": one heading.
                let label_only = !heading.has_title
                    && matches!(
                        heading.kind,
                        HeadingKind::Division | HeadingKind::Section { .. } | HeadingKind::Annex
                    );
                if label_only
                    && let Some(Unit::Heading { heading: title, .. }) = units.peek()
                    && matches!(
                        title.kind,
                        HeadingKind::Capitals | HeadingKind::Underlined { .. }
                    )
                {
                    text.push(' ');
                    text.push_str(&title.text);
                    units.next();
                }
                builder.set_page(page);
                if outline.takes_title(heading.kind) {
                    builder.set_title(&text);
                }
                if heading.kind.is_outline() {
                    clauses.saw_heading(&text);
                }
                builder.heading(outline.level(heading.kind), &text);
            }
            Unit::Text(unit) if unit.list_style().is_some() => {
                let mut run = vec![Unit::Text(unit)];
                while let Some(next) = units.next_if(|u| match u {
                    Unit::Text(t) => t.list_style().is_some(),
                    Unit::Furniture { .. } => true,
                    _ => false,
                }) {
                    run.push(next);
                }
                emit_list_run(run, builder);
            }
            Unit::Text(unit) => {
                builder.set_page(unit.page);
                emit_clauses(unit.text, &mut outline, &mut clauses, builder);
            }
            Unit::Table { table, page } => {
                builder.set_page(page);
                builder.table(table);
            }
            Unit::Furniture { text, page } => {
                builder.set_page(page);
                builder.paragraph(&text);
            }
        }
    }
}

/// Emits a paragraph, opening a section at each clause with a run-in
/// heading in it (see [`clause`]): at its start, and inside it where the
/// clause numbers continue.
fn emit_clauses(
    text: String,
    outline: &mut Outline,
    clauses: &mut ClauseNumbers,
    builder: &mut TreeBuilder,
) {
    let starts = clause::clause_starts(&text, clauses);
    if starts.is_empty() {
        // No clause opens inside: the paragraph is the text, kept whole.
        builder.paragraph_owned(text);
        return;
    }
    let first = starts.first().map_or(text.len(), |&(at, ..)| at);
    builder.paragraph(&text[..first]);
    for (i, &(at, depth, heading)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(text.len(), |&(next, ..)| next);
        let level = outline.level(HeadingKind::Numbered { depth });
        builder.run_in_heading(level, heading);
        builder.paragraph(&text[at..end]);
    }
}

/// Emits a run of units with list markers (and furniture between them):
/// list items when there are two or more, or when they are bulleted; else
/// paragraphs.
fn emit_list_run(run: Vec<Unit>, builder: &mut TreeBuilder) {
    let items = run.iter().filter(|u| matches!(u, Unit::Text(_))).count();
    let bulleted = run.iter().all(|u| match u {
        Unit::Text(t) => t.list_style() == Some(MarkerStyle::Bullet),
        _ => true,
    });
    let is_list = items >= 2 || bulleted;
    let mut levels = ListLevels::default();
    let mut previous: Option<TextUnit> = None;
    for unit in run {
        match unit {
            Unit::Text(unit) => {
                builder.set_page(unit.page);
                match (&unit.marker, unit.list_style()) {
                    (Some(marker), Some(style)) if is_list => {
                        let previous_marker = previous.as_ref().and_then(|p| p.marker.as_ref());
                        let kind = (style, marker.sequence(previous_marker));
                        let introduces = previous
                            .as_ref()
                            .is_some_and(|p| p.text.trim_end().ends_with([':', '—', '-']));
                        let depth = levels.depth(unit.indent, kind, introduces);
                        let body = unit.text.get(marker.len..).unwrap_or_default();
                        builder.list_item(depth, Some(&marker.label), body);
                    }
                    _ => builder.paragraph(&unit.text),
                }
                previous = Some(unit);
            }
            Unit::Furniture { text, page } => {
                builder.set_page(page);
                builder.paragraph(&text);
            }
            Unit::Heading { .. } | Unit::Table { .. } => {}
        }
    }
}

/// How a list level writes its markers.
type ListKind = (MarkerStyle, Sequence);

/// The open levels of a list: indentation and marker kind of each.
#[derive(Default)]
struct ListLevels {
    open: Vec<(usize, ListKind)>,
}

impl ListLevels {
    /// The depth of the next item. Deeper when indented further than the
    /// open level, or when the item before introduced it (ended with ':')
    /// and its marker kind is new; back to an open level when its
    /// indentation and kind come back; a new kind at the same indentation
    /// after a finished item starts a new list.
    fn depth(&mut self, indent: usize, kind: ListKind, introduced: bool) -> u8 {
        while self.open.last().is_some_and(|&(i, _)| i > indent) {
            self.open.pop();
        }
        match self.open.last() {
            Some(&(i, k)) if i == indent && k == kind => {}
            Some(&(i, _)) if i < indent => self.open.push((indent, kind)),
            Some(_) => {
                let reopened = self
                    .open
                    .iter()
                    .rposition(|&(i, k)| i == indent && k == kind);
                match reopened {
                    Some(position) => self.open.truncate(position + 1),
                    None if introduced => self.open.push((indent, kind)),
                    None => {
                        self.open.clear();
                        self.open.push((indent, kind));
                    }
                }
            }
            None => self.open.push((indent, kind)),
        }
        u8::try_from(self.open.len().saturating_sub(1)).unwrap_or(u8::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::TextSpan;
    use crate::parse::test_support::{blocks, headings, item, paragraph, texts};

    #[test]
    fn contents_entries_are_recognised() {
        assert!(is_contents_entry("1. Definitions .................... 1"));
        assert!(is_contents_entry("Preface …… xii"));
        assert!(is_contents_entry("Schedule A . . . . . 14"));
        assert!(!is_contents_entry(
            "The fee is 1.5% per month, payable in 30 days"
        ));
        assert!(!is_contents_entry("See page 12"));
        assert!(!is_contents_entry("... 12"));
    }
    use crate::parse::BlockKind;

    fn parse_text(text: &str) -> DocumentTree {
        parse(text, &ParsingSpec::default()).expect("parses")
    }

    #[test]
    fn wrapped_lines_join_into_paragraphs() {
        let tree = parse_text(
            "    The Supplier shall deliver the goods to the\n\
             Buyer within thirty days of a com-\n\
             puter-generated order, on a non-\n\
             exclusive basis.\n\n\
             Second paragraph.\n",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                paragraph(
                    "The Supplier shall deliver the goods to the Buyer within thirty days of \
                     a computer-generated order, on a non-exclusive basis."
                ),
                paragraph("Second paragraph."),
            ]
        );
    }

    #[test]
    fn page_breaks_inside_sentences_are_rejoined() {
        let tree = parse_text(
            "1.4 HDI shall provide the Company with access to, and\n\n\
             the right to use, a computer system.\n\n\
             1.8 HDI agrees to promote the Site no less favorably than it promotes HDI's\n\n\
                                    -2-\n\n\
             catalog titles.\n\n\
             It ends here\n\n\
             Next Paragraph starts uppercase.\n",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                paragraph(
                    "1.4 HDI shall provide the Company with access to, and the right to use, \
                     a computer system."
                ),
                paragraph(
                    "1.8 HDI agrees to promote the Site no less favorably than it promotes \
                     HDI's catalog titles."
                ),
                // The page number stays for the cleaning pass to drop.
                paragraph("-2-"),
                paragraph("It ends here"),
                paragraph("Next Paragraph starts uppercase."),
            ]
        );
    }

    #[test]
    fn numbered_titles_are_headings_and_numbered_clauses_paragraphs() {
        let tree = parse_text(
            "SITE DEVELOPMENT AND HOSTING AGREEMENT\n\n\
             1. HDI's Responsibilities.\n\n\
             1.1 HDI shall design, develop, implement, operate and maintain the Site.\n\n\
             4.2 Termination Payment.\n\n\
             (b) In the event of termination, HDI shall be paid.\n",
        );
        assert_eq!(
            headings(&tree),
            vec![
                (1, "SITE DEVELOPMENT AND HOSTING AGREEMENT".into()),
                (1, "1. HDI's Responsibilities.".into()),
                (2, "4.2 Termination Payment.".into()),
            ]
        );
        assert_eq!(
            tree.title.as_deref(),
            Some("SITE DEVELOPMENT AND HOSTING AGREEMENT")
        );
        assert_eq!(
            blocks(&tree),
            vec![
                paragraph(
                    "1.1 HDI shall design, develop, implement, operate and maintain the Site."
                ),
                // A single "(b)" clause is a paragraph, not a list.
                paragraph("(b) In the event of termination, HDI shall be paid."),
            ]
        );
    }

    #[test]
    fn clauses_with_run_in_titles_open_sections() {
        let mut tree = parse_text(
            "The terms are as follows: 1. License - Individual grants a license. \
             2. Marketing Materials - Marketing Materials shall mean materials. \
             The fee under Section 4. 5. Price is due.\n\n\
             10. Term and Termination.\n\n\
             10.1 Term. This Agreement runs for one year.\n\n\
             11. Customer References. Customer agrees to be named.\n\n\
             12. Miscellaneous. This Agreement shall be governed by the laws of \
             California.\n",
        );
        assert_eq!(
            headings(&tree),
            vec![
                (1, "1. License".into()),
                (1, "2. Marketing Materials".into()),
                (1, "10. Term and Termination.".into()),
                (2, "10.1 Term".into()),
                (1, "11. Customer References".into()),
                (1, "12. Miscellaneous".into()),
            ]
        );
        // The clauses keep their text whole; a paragraph running clauses
        // together is split where each starts ("5." does not follow "2.").
        assert_eq!(
            texts(&tree),
            vec![
                "The terms are as follows:",
                "1. License - Individual grants a license.",
                "2. Marketing Materials - Marketing Materials shall mean materials. \
                 The fee under Section 4. 5. Price is due.",
                "10.1 Term. This Agreement runs for one year.",
                "11. Customer References. Customer agrees to be named.",
                "12. Miscellaneous. This Agreement shall be governed by the laws of California.",
            ]
        );
        // A run-in heading is no line of its own in the canonical text: its
        // span is the opening words of its paragraph.
        tree.render();
        let chars: Vec<char> = tree.text.chars().collect();
        let slice = |span: TextSpan| -> String {
            chars[span.offset as usize..span.end() as usize]
                .iter()
                .collect()
        };
        assert_eq!(tree.text.matches("Customer References").count(), 1);
        assert_eq!(slice(tree.sections[5].span), "11. Customer References");
        assert_eq!(
            tree.sections[5].span.offset,
            tree.sections[5].blocks[0].span.offset
        );
        assert_eq!(slice(tree.sections[3].span), "10. Term and Termination.");
        // A plain text's title is never a clause's run-in heading.
        assert_eq!(
            parse_text("1. Fees. Customer pays.\n\n2. Term. One year.\n").title,
            None
        );
    }

    #[test]
    fn division_keywords_set_levels() {
        let tree = parse_text(
            "ARTICLE V\nTERM AND TERMINATION\n\nSection 5.1 Term\n\nThe term is one year.\n\n\
             ARTICLE 6 — PAYMENT\n\nSECTION 6\n\nGENERAL\n\nBody.\n\nEXHIBIT B\n\nPRICING\n\n\
             Prices.\n\nSCHEDULE A\n\nAPPENDIX 1\n",
        );
        assert_eq!(
            headings(&tree),
            vec![
                (1, "ARTICLE V TERM AND TERMINATION".into()),
                (2, "Section 5.1 Term".into()),
                (1, "ARTICLE 6 PAYMENT".into()),
                (2, "SECTION 6 GENERAL".into()),
                (1, "EXHIBIT B PRICING".into()),
                (1, "SCHEDULE A".into()),
                (1, "APPENDIX 1".into()),
            ]
        );
        assert_eq!(tree.sections[1].numbering.as_deref(), Some("ARTICLE V"));
    }

    #[test]
    fn capitals_nest_inside_a_numbered_outline() {
        let tree = parse_text(
            "MASTER AGREEMENT\n\nRECITALS\n\nWHEREAS, the parties agree.\n\n\
             1. Services\n\nText.\n\nWITNESSETH:\n\nMore text.\n",
        );
        assert_eq!(
            headings(&tree),
            vec![
                (1, "MASTER AGREEMENT".into()),
                (1, "RECITALS".into()),
                (1, "1. Services".into()),
                (2, "WITNESSETH:".into()),
            ]
        );
    }

    #[test]
    fn underlined_titles_are_headings() {
        let tree = parse_text(
            "User Manual\n===========\n\nIntro text.\n\nInstallation\n------------\n\n\
             Steps.\n\n     2.   Services.           --------\n\nBody.\n",
        );
        assert_eq!(
            headings(&tree),
            vec![
                (1, "User Manual".into()),
                (2, "Installation".into()),
                (1, "2. Services.".into()),
            ]
        );
        assert_eq!(tree.title.as_deref(), Some("User Manual"));
    }

    #[test]
    fn a_short_capitals_line_that_continues_is_not_a_heading() {
        let tree = parse_text("THIS AGREEMENT IS MADE\nbetween the parties below.\n");
        assert!(headings(&tree).is_empty());
        assert_eq!(
            blocks(&tree),
            vec![paragraph(
                "THIS AGREEMENT IS MADE between the parties below."
            )]
        );
    }

    #[test]
    fn bulleted_and_enumerated_lists() {
        let tree = parse_text(concat!(
            "The Company shall:\n",
            "(a) deliver the goods; and\n",
            "(b) invoice the Buyer:\n",
            "    (i) monthly; or\n",
            "    (ii) quarterly.\n\n",
            "• First bullet\n",
            "• Second bullet that wraps\n",
            "  onto a second line\n",
            "    - nested dash\n\n",
            "a) alpha\n\nb) beta\n",
        ));
        assert_eq!(
            blocks(&tree),
            vec![
                paragraph("The Company shall:"),
                item(0, "(a)", "deliver the goods; and"),
                item(0, "(b)", "invoice the Buyer:"),
                item(1, "(i)", "monthly; or"),
                item(1, "(ii)", "quarterly."),
                item(0, "•", "First bullet"),
                item(0, "•", "Second bullet that wraps onto a second line"),
                item(1, "-", "nested dash"),
                item(0, "a)", "alpha"),
                item(0, "b)", "beta"),
            ]
        );
    }

    #[test]
    fn an_introduced_new_marker_kind_opens_a_sub_list() {
        let tree = parse_text(
            "(a) first, as follows:\n\n1) sub one;\n\n2) sub two;\n\n(b) second.\n\n(c) third:\n\n\
             (i) roman one;\n\n(ii) roman two.\n\n(d) fourth.\n",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                item(0, "(a)", "first, as follows:"),
                item(1, "1)", "sub one;"),
                item(1, "2)", "sub two;"),
                item(0, "(b)", "second."),
                item(0, "(c)", "third:"),
                item(1, "(i)", "roman one;"),
                item(1, "(ii)", "roman two."),
                item(0, "(d)", "fourth."),
            ]
        );
    }

    #[test]
    fn tables_in_text() {
        let tree = parse_text(
            "Fees are as follows:\n\n\
             Service        Monthly Fee    Setup\n\
             Hosting        $1,000         $500\n\
             Support        $250           none\n",
        );
        let kinds = blocks(&tree);
        assert_eq!(kinds[0], paragraph("Fees are as follows:"));
        let BlockKind::Table(table) = &kinds[1] else {
            panic!("table expected: {kinds:?}");
        };
        assert_eq!(table.rows.len(), 3);
        assert_eq!(table.rows[1], vec!["Hosting", "$1,000", "$500"]);
    }

    #[test]
    fn form_feeds_set_pages() {
        let tree = parse_text("Page one text.\n\x0cPage two text.\n\x0c\nPAGE THREE\n\nThree.\n");
        let pages: Vec<_> = tree.blocks().map(|(_, b)| b.page).collect();
        assert_eq!(pages, vec![Some(1), Some(2), Some(3)]);
        assert_eq!(tree.sections[1].page, Some(3));
    }

    #[test]
    fn running_lines_are_never_headings() {
        let banner = "CONFIDENTIAL TREATMENT REQUESTED";
        let text = format!(
            "{banner}\n\nFirst part of a sentence cut by a\n\n{banner}\n\npage break.\n\n{banner}\n"
        );
        let tree = parse_text(&text);
        assert!(headings(&tree).is_empty(), "{:?}", headings(&tree));
        assert!(
            blocks(&tree).contains(&paragraph("First part of a sentence cut by a page break."))
        );
    }

    #[test]
    fn runs_of_capitals_lines_are_not_headings() {
        let tree = parse_text(
            "PARTS LIST\n\nThe parts are:\n\nVALVE-BRAKE\n\nACTUATOR-TRIM\n\nSMOKE DETECTOR\n\n\
             GROUND COOLING FAN\n\nCONDENSER\n\n[*****] [*****]\n\nWARRANTY\n\nThe warranty.\n",
        );
        assert_eq!(
            headings(&tree),
            vec![(1, "PARTS LIST".into()), (1, "WARRANTY".into())]
        );
    }

    #[test]
    fn fragments_after_a_dangling_word_are_rejoined() {
        let tree = parse_text(
            "Confidential treatment is requested with respect to\n\nTHE OMITTED PORTIONS.\n",
        );
        assert_eq!(
            blocks(&tree),
            vec![paragraph(
                "Confidential treatment is requested with respect to THE OMITTED PORTIONS."
            )]
        );
    }

    #[test]
    fn signature_blocks_stay_paragraphs() {
        let tree = parse_text(
            "IN WITNESS WHEREOF, the parties have signed.\n\n\
             THE DEERSKIN COMPANIES, INC.                HANOVER DIRECT, INC.\n\n\
             By: /s/ John Smith\nName: John Smith\nTitle: President\n",
        );
        assert!(headings(&tree).is_empty(), "{:?}", headings(&tree));
        assert_eq!(blocks(&tree).len(), 3);
    }

    #[test]
    fn arbitrary_input_does_not_panic() {
        let inputs = [
            String::new(),
            "\x0c\x0c\x0c".into(),
            "-\n-\n-".into(),
            "(".repeat(1000),
            format!("{}x", " ".repeat(10_000)),
            "a   ".repeat(20_000),
            "1.\n\n(a)\n\n•\n\n| |\n|-|\n".into(),
            "é-\nà\u{0}\r\r\n\u{feff}ARTICLE".into(),
            "word-\n".repeat(100),
        ];
        for input in inputs {
            let _ = parse(&input, &ParsingSpec::default());
        }
    }

    proptest::proptest! {
        /// A running line's key is skipped only where it would be over the
        /// bound: the key is what building it and then measuring it gives.
        #[test]
        fn running_line_keys_skip_only_keys_over_the_bound(
            words in proptest::collection::vec("[A-Za-z0-9]{1,30}", 1..8),
            gaps in proptest::collection::vec(
                proptest::sample::select(&[
                    " ", "  ", "\t", "\u{a0}", "\u{200b}", "\u{feff}", "\u{3000}", "İ", "ẞ", "—",
                    " page ", " of ",
                ][..]),
                8,
            ),
        ) {
            // Printable ASCII words near the bound, joined by whitespace
            // and by characters whose keys are longer or shorter.
            let line: String = words
                .iter()
                .zip(&gaps)
                .flat_map(|(word, gap)| [word.as_str(), gap])
                .collect();
            let built = (line.len() <= 4 * RUNNING_LINE_MAX_CHARS)
                .then(|| boilerplate_key(&line))
                .filter(|key| key.chars().count() <= RUNNING_LINE_MAX_CHARS);
            proptest::prop_assert_eq!(RunningLines::key(&line), built);
        }
    }
}
