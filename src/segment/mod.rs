//! Sentence boundaries.
//!
//! [`Segmenter::split`] returns the byte ranges of the sentences of one
//! block of text; [`SentenceFilter`] decides which sentences are indexed.
//!
//! # How a boundary is found
//!
//! The scanner walks the bytes with a 256-entry class table and stops only
//! at the few bytes that can end a sentence (`.`, `?`, `!`, `\n`, the lead
//! bytes of "…", bullets and CJK full stops) and, while a numbered list is
//! open, at the first byte of its next number. Each stop is decided from
//! its neighbourhood alone:
//!
//! * A terminator ends a sentence only when whitespace follows it (after
//!   any closing quotes and brackets, and Wikipedia-style citation marks
//!   such as `[12]` or `:33`, which all stay with the sentence) and the
//!   next word is not lowercase or continuing punctuation: "Yahoo! in the",
//!   "5.1", "Jane.Doe@example.com" never split. A digit opens a new
//!   sentence only after an ordinary word ("… Arab oil. 71% of …"), never
//!   after an abbreviation ("p. 55", "No. 5") or a number.
//! * Two exceptions need no whitespace: a sentence run into the next one
//!   ("world.Today is", "bought 1,000.That is"; not "U.S.Army",
//!   "Dr.Smith", "example.com/Setup.Html", "obj.Dispose()"), and footnote
//!   numerals after a word's period, which stay with the sentence they
//!   mark ("… a consultation.11 12 Take the …", "(1987).1 According …").
//! * After an abbreviation (see `abbreviations.rs`) a capitalised word ends the
//!   sentence only if it typically opens one ("… & Co. It closed"), never
//!   after a title ("Mr. Smith"), and only when the sentence so far has a
//!   few words ("At 5 a.m. Mr. Smith went …" is one sentence). After a
//!   time of day ("6 P.M.") any capitalised word but a time zone, weekday
//!   or month opens the next sentence ("… at 6 P.M. Travelers who …").
//! * Inside a quotation or a parenthesis that closes later in the same
//!   paragraph no terminator ends the sentence (`"Help! Help!" he
//!   cried`, `(see Exhibit B. The rates vary.)`); a quoted `?` or `!`
//!   followed by a speaker and a verb of speech continues it (`"… know
//!   that?" I asked`). See `quotes.rs`.
//! * Ellipses: "[...]" never ends a sentence, a free-standing "..." or
//!   ". . ." is a pause, four dots and an attached "..." end a sentence
//!   before a capitalised word, and a word's own period before a spaced
//!   ellipsis ("compounds. . . . The") ends it with the ellipsis opening the
//!   next sentence.
//! * Full-width and CJK terminators ("。", "．", "！", "？") end a sentence
//!   with no space after them, in CJK and in Latin text.
//! * A blank line always ends a sentence; a single newline does when a
//!   bullet or list marker follows it, or when its block of lines is a
//!   list of short items without punctuation ("Home\nAbout us\nContact",
//!   see `lines.rs`); any other newline is whitespace.
//! * Bullets ("•", "⁃") start a sentence; so does the next number of an
//!   open list ("1.) The first item 2.) The second item", "a. here it is
//!   b. another"), a numbered item after a terminator (`… ("GAAP"). 2.
//!   Milestone Payments`) and the first item after a colon ("Compensation:
//!   1. Sales Commissions.").
//!
//! No regular expressions, no allocation beyond the output vector.

mod abbreviations;
mod filter;
mod lines;
mod lists;
mod punctuation;
mod quotes;

use std::ops::Range;

use crate::byteset::Cursor;
use crate::spec::SentenceSpec;

pub use filter::{Screen, SentenceFilter, is_form_label};

use abbreviations::{AbbreviationKind, continues_time, is_sentence_starter};
use lines::ItemBlock;
use lists::{ListState, bullet_len, parse_marker};
use punctuation::{
    BYTE_CLASS, EXCLAMATION, Following, GENERAL_PUNCTUATION, NEWLINE, PERIOD, PLAIN,
    WIDE_TERMINATOR, following, footnote_end, is_whitespace_at, skip_closers, skip_whitespace,
    strip_openers, unspaced_word, whitespace_len,
};
use quotes::{OpenMarks, ends_with_quote, is_speech_tag};

/// Longest word (in bytes) before a period that is looked up as an
/// abbreviation; a longer run of non-space bytes is a URL, a number or a
/// word, never an abbreviation.
const MAX_TOKEN: usize = 32;

/// Fewest words before an abbreviation for its period to end a sentence:
/// "I live in the E.U. How …" splits, "At 5 a.m. Mr. Smith …" does not.
const MIN_WORDS_BEFORE_ABBREVIATION: usize = 3;

/// Abbreviation-aware English sentence splitter.
///
/// Cheap to clone and to share between threads; building one only copies
/// the profile's extra abbreviations.
#[derive(Clone, Debug)]
pub struct Segmenter {
    /// The profile's own abbreviations, ASCII-lowercased, without their
    /// final period.
    extra_abbreviations: Vec<Box<[u8]>>,
    /// Longest sentence in characters (`sentences.maxChars`).
    max_chars: usize,
}

impl Default for Segmenter {
    fn default() -> Self {
        Self::new(&SentenceSpec::default())
    }
}

impl Segmenter {
    /// A segmenter with the built-in English rules plus
    /// `spec.extra_abbreviations` (a trailing period in an entry is
    /// ignored; entries are matched ignoring ASCII case). An extra
    /// abbreviation behaves like the built-in "Inc." or "etc.": its period
    /// ends a sentence only before a typical sentence starter.
    pub fn new(spec: &SentenceSpec) -> Self {
        let extra_abbreviations = spec
            .extra_abbreviations
            .iter()
            .map(|a| a.trim().trim_end_matches('.').to_ascii_lowercase())
            .filter(|a| !a.is_empty())
            .map(|a| a.into_bytes().into_boxed_slice())
            .collect();
        Self {
            extra_abbreviations,
            max_chars: spec.max_chars.max(1) as usize,
        }
    }

    /// Byte ranges of the sentences of `text`: in order, non-overlapping,
    /// on char boundaries, trimmed of surrounding whitespace, never empty.
    /// Every non-whitespace character of `text` lies in exactly one range.
    pub fn split(&self, text: &str) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        self.split_into(text, &mut out);
        out
    }

    /// Like [`split`](Self::split), appending to `out` (which is not
    /// cleared), so one vector can serve a whole document.
    pub fn split_into(&self, text: &str, out: &mut Vec<Range<usize>>) {
        Scanner {
            text,
            bytes: text.as_bytes(),
            extra_abbreviations: &self.extra_abbreviations,
            max_chars: self.max_chars,
            out,
            sentence_start: 0,
            list: None,
            stops: STOPS,
            block: None,
            marks: OpenMarks::default(),
        }
        .run();
    }
}

/// Cuts `sentence` (trimmed, starting at byte `offset` of the text) into
/// pieces of at most `max_chars` characters, each trimmed and never empty:
/// after the last clause punctuation followed by a space in the second
/// half of the bound, else after the last whitespace there, else at the
/// bound itself. Every non-whitespace character stays in one piece.
fn cut_long(sentence: &str, offset: usize, max_chars: usize, out: &mut Vec<Range<usize>>) {
    let max_chars = max_chars.max(1);
    let mut rest = sentence;
    let mut at = offset;
    while !rest.is_empty() {
        let bound = rest
            .char_indices()
            .nth(max_chars)
            .map_or(rest.len(), |(i, _)| i);
        let cut = if bound == rest.len() {
            bound
        } else {
            let half = rest.char_indices().nth(max_chars / 2).map_or(0, |(i, _)| i);
            let window = &rest[half..bound];
            let after_clause = window
                .char_indices()
                .rev()
                .find(|&(i, c)| {
                    matches!(c, ';' | ':' | ',' | '—' | '–')
                        && window[i + c.len_utf8()..]
                            .chars()
                            .next()
                            .is_some_and(char::is_whitespace)
                })
                .map(|(i, c)| half + i + c.len_utf8());
            let after_word = || {
                window
                    .char_indices()
                    .rev()
                    .find(|&(_, c)| c.is_whitespace())
                    .map(|(i, _)| half + i)
            };
            after_clause
                .or_else(after_word)
                .filter(|&c| c > 0)
                .unwrap_or(bound)
        };
        let piece = &rest[..cut];
        let trimmed_end = piece.trim_end();
        if !trimmed_end.is_empty() {
            out.push(at..at + trimmed_end.len());
        }
        let next = &rest[cut..];
        let next_trimmed = next.trim_start();
        at += cut + (next.len() - next_trimmed.len());
        rest = next_trimmed;
    }
}

/// A byte that never occurs in UTF-8: the scanner's "next list number"
/// byte while no list is open.
const NO_LIST_BYTE: u8 = 0xFF;

/// The bytes that may matter to the scanner: those of [`BYTE_CLASS`] other
/// than [`PLAIN`], and last the first byte of the open list's next number.
const STOPS: Cursor<8> = Cursor::new([b'.', b'?', b'!', b'\n', 0xE2, 0xE3, 0xEF, NO_LIST_BYTE]);

/// Where the open list's next number stands in [`STOPS`].
const LIST_STOP: usize = 7;

/// One pass over one text.
struct Scanner<'t, 'o> {
    text: &'t str,
    bytes: &'t [u8],
    extra_abbreviations: &'t [Box<[u8]>],
    max_chars: usize,
    out: &'o mut Vec<Range<usize>>,
    /// Where the current sentence begins (possibly on whitespace).
    sentence_start: usize,
    /// The numbered list the text is in, if any.
    list: Option<ListState>,
    /// Where the [`STOPS`] stand; the last of them is the first byte of the
    /// open list's next number, or [`NO_LIST_BYTE`].
    stops: Cursor<8>,
    /// The block of lines (text between blank lines) the last newline
    /// met belongs to, and whether its lines are items.
    block: Option<ItemBlock>,
    /// The quotation marks and brackets open in the current sentence.
    marks: OpenMarks,
}

impl Scanner<'_, '_> {
    fn run(mut self) {
        let mut i = self.open_sentence(0);
        while let Some((at, byte)) = self.next_stop(i) {
            let resume = match BYTE_CLASS[usize::from(byte)] {
                PERIOD => self.at_period(at),
                EXCLAMATION => self.at_exclamation(at),
                NEWLINE => self.at_newline(at),
                GENERAL_PUNCTUATION => self.at_general_punctuation(at),
                WIDE_TERMINATOR => self.at_wide_terminator(at),
                PLAIN => self.at_list_number(at),
                _ => at + 1,
            };
            i = resume.max(at + 1);
        }
        self.close_sentence(self.bytes.len());
    }

    /// The next byte at or after `from` that may matter, and its position.
    fn next_stop(&mut self, from: usize) -> Option<(usize, u8)> {
        let at = self.stops.next(self.bytes, from)?;
        Some((at, *self.bytes.get(at)?))
    }

    /// Ends the current sentence at `at` (an empty or all-whitespace
    /// sentence is dropped).
    fn close_sentence(&mut self, at: usize) {
        if let Some(piece) = self.text.get(self.sentence_start..at) {
            let trimmed = piece.trim_start();
            let start = at - trimmed.len();
            let trimmed = trimmed.trim_end();
            if trimmed.len() > self.max_chars && trimmed.chars().count() > self.max_chars {
                cut_long(trimmed, start, self.max_chars, self.out);
            } else if !trimmed.is_empty() {
                self.out.push(start..start + trimmed.len());
            }
        }
        self.sentence_start = at;
    }

    /// Ends the current sentence at `at` and opens the next one.
    fn end_sentence(&mut self, at: usize) -> usize {
        self.close_sentence(at);
        self.open_sentence(at)
    }

    /// Opens a sentence at `at`: skips whitespace and bullets, and a list
    /// marker ("1.", "a)", "(iv)", "2.1") so that its period is not taken
    /// for a terminator; a marker that can run on opens a list. Returns
    /// where scanning resumes.
    fn open_sentence(&mut self, at: usize) -> usize {
        let mut i = skip_whitespace(self.bytes, at);
        while let Some(len) = bullet_len(self.text, i, self.is_line_start(i)) {
            i = skip_whitespace(self.bytes, i + len);
        }
        match parse_marker(self.bytes, i) {
            Some(marker) => {
                if let Some(list) = ListState::start(&marker) {
                    self.set_list(list);
                }
                marker.end
            }
            None => i,
        }
    }

    fn set_list(&mut self, list: ListState) {
        self.list = Some(list);
        self.stops
            .set_byte(LIST_STOP, list.next_first_byte().unwrap_or(NO_LIST_BYTE));
    }

    /// Whether only horizontal whitespace stands between the previous
    /// newline (or the start of the text) and `i`.
    fn is_line_start(&self, i: usize) -> bool {
        let before = self.bytes.get(..i).unwrap_or_default();
        before
            .iter()
            .rev()
            .find(|&&b| !matches!(b, b' ' | b'\t' | b'\r'))
            .is_none_or(|&b| b == b'\n')
    }

    /// A period at `p`: a full stop, an abbreviation's period, a decimal
    /// point or part of an ellipsis.
    fn at_period(&mut self, p: usize) -> usize {
        let bytes = self.bytes;
        let run = bytes
            .get(p..)
            .map_or(0, |rest| rest.iter().take_while(|&&b| b == b'.').count());
        let run_end = p + run;
        if run == 3 && self.is_free_standing(p, run_end) {
            // A free-standing "..." is a pause or an omission within a
            // sentence ("like one dead ... Suddenly"), or opens one after
            // a full stop ("of the Law. ... But when").
            return run_end;
        }
        if run >= 3 {
            return self.after_ellipsis(p, run_end);
        }
        // A spaced ellipsis after this period: ". . ." or ". . . .".
        let mut spaced_end = run_end;
        let mut spaced = 0;
        while bytes.get(spaced_end..spaced_end + 2) == Some(b" .") {
            spaced_end += 2;
            spaced += 1;
        }
        if run == 1 && spaced >= 2 {
            return if self.follows_space(p) {
                // ". . . ." ends a sentence, ". . ." is a pause within one.
                if spaced >= 3 {
                    self.after_ellipsis(p, spaced_end)
                } else {
                    spaced_end
                }
            } else if spaced >= 3 {
                // "compounds. . . . The": the word's own period ends the
                // sentence, the ellipsis opens the next one.
                if self.starts_new_sentence(spaced_end) {
                    self.end_sentence(p + 1)
                } else {
                    spaced_end
                }
            } else {
                // "word. . ." reads as "word...".
                self.after_ellipsis(p, spaced_end)
            };
        }
        self.after_full_stop(p, run_end)
    }

    /// A one- or two-dot period at `p` ending at `end`.
    fn after_full_stop(&mut self, p: usize, end: usize) -> usize {
        let close = skip_closers(self.bytes, end);
        if !is_whitespace_at(self.bytes, close) {
            // End of text, or more text right after: "5.1", "U.S.A",
            // "Jane.Doe", "Jr.'s" — unless a sentence was run into the
            // next one ("world.Today"), or footnote numerals follow the
            // period ("consultation.11 12 Take").
            if end - p == 1 && close == end {
                let (word_start, word) = self.word_before(p);
                if abbreviations::classify(word, self.extra_abbreviations).is_none() {
                    if self.runs_into_next(word_start, word, end) {
                        return self.end_sentence(end);
                    }
                    if let Some(numerals_end) = footnote_end(self.text, word, end) {
                        return self.end_sentence(numerals_end);
                    }
                }
            }
            return close;
        }
        let next = following(self.text, skip_whitespace(self.bytes, close));
        if matches!(next, Following::End | Following::Continuation) {
            return close;
        }
        let (word_start, word) = self.word_before(p);
        let kind = match end - p {
            1 => abbreviations::classify(word, self.extra_abbreviations),
            _ => None,
        };
        let kind = match kind {
            Some(AbbreviationKind::Time) if !self.follows_number(word_start) => {
                Some(AbbreviationKind::Ambiguous)
            }
            kind => kind,
        };
        if kind.is_none()
            && matches!(next, Following::Word(_))
            && self.is_list_number_after_colon(word_start, word)
        {
            // "Compensation: 1. Sales Commissions." — the colon ends the
            // lead-in, the number opens the first item.
            return self.end_sentence(word_start);
        }
        let ends = match kind {
            // A number opens a sentence only after an ordinary word
            // ("… Arab oil. 71% of its imports"); after a number or a
            // symbol the period is more likely part of a reference
            // ("in 1413. 14th-century", "N°. 1026").
            None if next == Following::Numeral => {
                word.len() >= 2 && word.last().is_some_and(u8::is_ascii_alphabetic)
            }
            None => true,
            Some(AbbreviationKind::Never) => false,
            Some(AbbreviationKind::BeforeNumber) => match next {
                Following::Word(w) => !is_numeral_word(w),
                Following::Enumerator => true,
                // "p. 5. The" is a page, not a list item.
                _ => false,
            },
            Some(AbbreviationKind::Ambiguous) => {
                let starter = match next {
                    Following::Word(w) => is_sentence_starter(w),
                    Following::Enumerator | Following::ListItem => true,
                    _ => false,
                };
                starter && self.has_words_before(word_start, MIN_WORDS_BEFORE_ABBREVIATION)
            }
            Some(AbbreviationKind::Time) => {
                let opens = match next {
                    Following::Word(w) => !continues_time(w),
                    Following::Enumerator | Following::ListItem => true,
                    _ => false,
                };
                opens && self.has_words_before(word_start, MIN_WORDS_BEFORE_ABBREVIATION)
            }
        };
        if ends
            && !(close == end
                && self
                    .marks
                    .is_inside_quotation(self.bytes, self.sentence_start, p))
        {
            self.end_sentence(close)
        } else {
            close
        }
    }

    /// Whether the terminator after `word` (which starts at `word_start`
    /// and is no abbreviation: "Dr.Smith"), ending at `end`, is run into
    /// the next sentence without a space: "world.Today", "1,000.That",
    /// "happened?Nobody". The word must be a plain word or a number, not
    /// part of an address ("example.com/Setup.Html", "Jane.Doe@"); see
    /// [`unspaced_word`].
    fn runs_into_next(&self, word_start: usize, word: &[u8], end: usize) -> bool {
        // A number opening the sentence is a clause number ("5.Term").
        self.has_words_before(word_start, 1) && unspaced_word(self.bytes, word, end)
    }

    /// An ellipsis from `start` to `end` ("...", "....", ". . . .", "…").
    /// It ends a sentence when a capitalised word follows, unless it marks
    /// an omission inside brackets ("[...]").
    fn after_ellipsis(&mut self, start: usize, end: usize) -> usize {
        let bracketed = start
            .checked_sub(1)
            .and_then(|i| self.bytes.get(i))
            .is_some_and(|&b| matches!(b, b'[' | b'('));
        if bracketed {
            return end;
        }
        let close = skip_closers(self.bytes, end);
        if self.starts_new_sentence(end) {
            self.end_sentence(close)
        } else {
            close
        }
    }

    /// Whether, after the closing quotes at `end`, whitespace and then a
    /// capitalised word or a clause number follow.
    fn starts_new_sentence(&self, end: usize) -> bool {
        let close = skip_closers(self.bytes, end);
        is_whitespace_at(self.bytes, close)
            && matches!(
                following(self.text, skip_whitespace(self.bytes, close)),
                Following::Word(_) | Following::Enumerator | Following::ListItem
            )
    }

    /// `?`, `!` and runs of them ("?!", "!!").
    fn at_exclamation(&mut self, p: usize) -> usize {
        let run = self.bytes.get(p..).map_or(0, |rest| {
            rest.iter()
                .take_while(|&&b| matches!(b, b'?' | b'!'))
                .count()
        });
        let end = p + run;
        let close = skip_closers(self.bytes, end);
        if !is_whitespace_at(self.bytes, close) {
            if close == end {
                let (word_start, word) = self.word_before(p);
                if abbreviations::classify(word, self.extra_abbreviations).is_none()
                    && self.runs_into_next(word_start, word, end)
                {
                    return self.end_sentence(end);
                }
            }
            return close;
        }
        let next = skip_whitespace(self.bytes, close);
        match following(self.text, next) {
            Following::End | Following::Continuation | Following::Numeral => close,
            // "Where? When?" inside a quotation that goes on, and a
            // quoted question before its speech tag (`… that?" I asked`).
            _ if close == end
                && self
                    .marks
                    .is_inside_quotation(self.bytes, self.sentence_start, p) =>
            {
                close
            }
            Following::Word(_)
                if ends_with_quote(self.bytes, close) && is_speech_tag(self.bytes, next) =>
            {
                close
            }
            Following::Word(_)
            | Following::Enumerator
            | Following::ListItem
            | Following::Symbol => self.end_sentence(close),
        }
    }

    /// A newline: a blank line, or a new line opening with a bullet or a
    /// list marker, ends the sentence; otherwise it is whitespace.
    fn at_newline(&mut self, i: usize) -> usize {
        let mut j = i + 1;
        while self.bytes.get(j) != Some(&b'\n') {
            match whitespace_len(self.bytes, j) {
                0 => break,
                len => j += len,
            }
        }
        let blank_line = self.bytes.get(j) == Some(&b'\n');
        if blank_line
            || bullet_len(self.text, j, true).is_some()
            || parse_marker(self.bytes, j).is_some()
            || self.is_item_line_end(i)
        {
            self.end_sentence(i)
        } else {
            j
        }
    }

    /// Whether the newline at `i` ends an item of a block of item lines
    /// (see `lines.rs`), deciding each block once.
    fn is_item_line_end(&mut self, i: usize) -> bool {
        let block = match self.block {
            Some(block) if block.contains(i) => block,
            _ => {
                let block = ItemBlock::around(self.bytes, i);
                self.block = Some(block);
                block
            }
        };
        block.items
    }

    /// A character of U+2000–U+2FFF: "…" or a bullet.
    fn at_general_punctuation(&mut self, i: usize) -> usize {
        let Some(c) = self.text.get(i..).and_then(|rest| rest.chars().next()) else {
            return i + 1;
        };
        let len = c.len_utf8();
        if c == '…' {
            let dots = self
                .bytes
                .get(i + len..)
                .map_or(0, |rest| rest.iter().take_while(|&&b| b == b'.').count());
            if dots == 0 && self.is_free_standing(i, i + len) {
                // A free-standing "…", like "...": a pause.
                return i + len;
            }
            return self.after_ellipsis(i, i + len + dots);
        }
        if self.follows_space(i) && bullet_len(self.text, i, false).is_some() {
            // "• 9. The first item • 10. The second item"
            self.end_sentence(i)
        } else {
            i + len
        }
    }

    /// A lead byte of U+3000–U+3FFF or U+F000–U+FFFF: the CJK full stop
    /// ("。", "｡"), the full-width period "．" and the full-width "！" and
    /// "？" end a sentence with no space after, in CJK and in Latin text
    /// ("This is a sentence．This is another．"). They do not where a
    /// lowercase word follows after a space ("He shouted “yes！” and
    /// left"), and "．" between digits is a full-width decimal point.
    fn at_wide_terminator(&mut self, i: usize) -> usize {
        let mut end = i;
        while let Some(c) = self.text.get(end..).and_then(|rest| rest.chars().next()) {
            if !matches!(c, '。' | '｡' | '．' | '！' | '？') {
                break;
            }
            end += c.len_utf8();
        }
        if end == i {
            return i + 1;
        }
        let decimal = self
            .text
            .get(..i)
            .and_then(|before| before.chars().next_back())
            .is_some_and(|c| c.is_numeric())
            && self.text.get(i..end) == Some("．")
            && self
                .text
                .get(end..)
                .and_then(|rest| rest.chars().next())
                .is_some_and(|c| c.is_numeric());
        if decimal {
            return end;
        }
        let close = skip_closers(self.bytes, end);
        if is_whitespace_at(self.bytes, close)
            && following(self.text, skip_whitespace(self.bytes, close)) == Following::Continuation
        {
            return close;
        }
        self.end_sentence(close)
    }

    /// The first byte of the open list's next number: a new item starts
    /// here if the whole marker is there ("… first item 2. The second").
    fn at_list_number(&mut self, i: usize) -> usize {
        let after_space = self.follows_space(i);
        let next_item = self
            .list
            .zip(parse_marker(self.bytes, i))
            .is_some_and(|(list, marker)| list.is_next(&marker));
        if after_space && next_item {
            self.end_sentence(i)
        } else {
            i + 1
        }
    }

    /// Whether the byte before `i` is ASCII whitespace, or `i` opens the
    /// text.
    fn follows_space(&self, i: usize) -> bool {
        i.checked_sub(1)
            .and_then(|j| self.bytes.get(j))
            .is_none_or(u8::is_ascii_whitespace)
    }

    /// Whether `word` (starting at `word_start`) is a one- to three-digit
    /// number right after a colon: the first item of a numbered list.
    fn is_list_number_after_colon(&self, word_start: usize, word: &[u8]) -> bool {
        (1..=3).contains(&word.len())
            && word.iter().all(u8::is_ascii_digit)
            && self
                .bytes
                .get(self.sentence_start..word_start)
                .and_then(|before| before.iter().rev().find(|b| !b.is_ascii_whitespace()))
                == Some(&b':')
    }

    /// Whether the ellipsis from `start` to `end` stands between spaces;
    /// one that closes a quotation (`my work ..." There`) is not.
    fn is_free_standing(&self, start: usize, end: usize) -> bool {
        self.follows_space(start) && skip_closers(self.bytes, end) == end
    }

    /// The word before the period at `p` (its start and bytes, leading
    /// quotes and brackets stripped); empty when longer than [`MAX_TOKEN`].
    fn word_before(&self, p: usize) -> (usize, &[u8]) {
        let floor = p.saturating_sub(MAX_TOKEN + 1).max(self.sentence_start);
        let before = self.bytes.get(floor..p).unwrap_or_default();
        let start = before
            .iter()
            .rposition(u8::is_ascii_whitespace)
            .map_or(floor, |ws| floor + ws + 1);
        if p - start > MAX_TOKEN {
            return (start, &[]);
        }
        let word = self.bytes.get(start..p).unwrap_or_default();
        (start, strip_openers(word))
    }

    /// Whether the word before `word_start` ends with a digit: "6 P.M.",
    /// "6:00 p.m.".
    fn follows_number(&self, word_start: usize) -> bool {
        let before = self
            .bytes
            .get(self.sentence_start..word_start)
            .unwrap_or_default();
        before
            .iter()
            .rev()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(u8::is_ascii_digit)
    }

    /// Whether at least `n` words stand between the sentence start and
    /// `end`.
    fn has_words_before(&self, end: usize, n: usize) -> bool {
        let before = self.bytes.get(self.sentence_start..end).unwrap_or_default();
        let mut words = 0;
        let mut in_word = false;
        for &b in before.iter().rev() {
            if b.is_ascii_whitespace() {
                in_word = false;
            } else if !in_word {
                in_word = true;
                words += 1;
                if words >= n {
                    return true;
                }
            }
        }
        false
    }
}

/// Whether a capitalised word after "No.", "Art.", "Vol." is a numeral: a
/// single letter ("Exhibit A", "Vol. I") or an upper-case roman numeral
/// ("Art. IV").
fn is_numeral_word(word: &[u8]) -> bool {
    word.len() == 1
        || !word.is_empty()
            && word
                .iter()
                .all(|b| matches!(b, b'I' | b'V' | b'X' | b'L' | b'C' | b'D' | b'M'))
}

#[cfg(test)]
mod tests;
