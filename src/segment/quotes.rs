//! Quotations and parentheses: a terminator inside them does not end the
//! sentence around them, and a quoted exclamation or question may be
//! followed by its speech tag.
//!
//! * `She asked, "Where are you going? When will you return?" and
//!   waited.` is one sentence: the question marks stand inside a quotation
//!   that closes later in the same paragraph. So is `The fee is due
//!   monthly (see Exhibit B. The rates change yearly.) and …`.
//! * A quotation still ends a sentence where it closes: `"I am here. You
//!   are there." Then he left.` splits after the closing quote.
//! * `"How on earth did you know that?" I asked in astonishment.` is one
//!   sentence: after a quoted `?` or `!`, a speaker and a verb of speech
//!   ("I asked", "Holmes cried", "Mr. Smith said") continue it. A quoted
//!   period is different: `"This is great." She held the book …` opens a
//!   new sentence, as English punctuation asks.
//!
//! Both are decided at candidate boundaries only, by short scans after
//! the terminator and a count of the marks before it (from searches kept
//! across the text, see [`OpenMarks`]), so the scanner's main loop is
//! untouched.

use super::abbreviations::{MAX_WORD, is_sentence_starter};

/// Longest quotation or parenthesis (in bytes, from the terminator to its
/// closing mark) whose terminators are held inside one sentence. A longer
/// one is a block quotation whose sentences stand on their own.
const MAX_QUOTATION: usize = 400;

/// The kinds of quotation mark and bracket that are tracked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `"`
    Straight,
    /// `'`
    Single,
    /// `‘ ’`
    CurlySingle,
    /// `“ ”`, `« »`
    Curly,
    /// `( )`
    Paren,
}

const KINDS: usize = 5;

impl Kind {
    fn index(self) -> usize {
        self as usize
    }
}

/// A quotation mark or bracket at some position: its kind, whether it
/// opens, and its length in bytes.
#[derive(Clone, Copy)]
struct Mark {
    kind: Kind,
    opens: bool,
    len: usize,
}

/// The mark at `i`, if the byte there is one. A straight quote opens after
/// a space, a bracket, a dash or the text start and closes otherwise (so
/// `"50".` closes, and an inch mark `15"` closes nothing). A single quote
/// or `’` between letters is an apostrophe ("don't", "don’t"), and one
/// after a letter before a space closes ("the students' books" closes
/// nothing that was open).
fn mark_at(bytes: &[u8], i: usize) -> Option<Mark> {
    let previous = i.checked_sub(1).and_then(|j| bytes.get(j)).copied();
    let after_boundary = previous.is_none_or(|b| {
        b.is_ascii_whitespace()
            || matches!(b, b'(' | b'[' | b'{' | b'-')
            // The last byte of "—" or "–".
            || matches!(b, 0x93 | 0x94)
    });
    let (kind, opens, len) = match bytes.get(i..)? {
        [b'"', ..] => (Kind::Straight, after_boundary, 1),
        [b'\'', next, ..] if after_boundary => {
            if next.is_ascii_whitespace() {
                return None;
            }
            (Kind::Single, true, 1)
        }
        [b'\'', next, ..] => (!next.is_ascii_alphanumeric()).then_some((Kind::Single, false, 1))?,
        [b'\''] => (Kind::Single, false, 1),
        [b'(', ..] => (Kind::Paren, true, 1),
        [b')', ..] => (Kind::Paren, false, 1),
        [0xE2, 0x80, 0x98, ..] => (Kind::CurlySingle, true, 3),
        [0xE2, 0x80, 0x99, rest @ ..] => {
            let apostrophe = rest.first().is_some_and(u8::is_ascii_alphabetic);
            (!apostrophe).then_some((Kind::CurlySingle, false, 3))?
        }
        [0xE2, 0x80, 0x9C, ..] => (Kind::Curly, true, 3),
        [0xE2, 0x80, 0x9D, ..] => (Kind::Curly, false, 3),
        [0xC2, 0xAB, ..] => (Kind::Curly, true, 2),
        [0xC2, 0xBB, ..] => (Kind::Curly, false, 2),
        _ => return None,
    };
    Some(Mark { kind, opens, len })
}

/// Whether the byte at `i` may start a mark (a cheap pre-check).
fn may_be_mark(b: u8) -> bool {
    MARK_BYTES.as_flattened().contains(&b)
}

/// The quotation marks and brackets open in the sentence being read, for
/// one text: [`is_inside_quotation`](Self::is_inside_quotation) runs at
/// every sentence end, and most sentences hold no mark at all. Like the
/// scanner's stops, the next mark of each group of mark bytes is searched
/// for once and kept until the sentences pass it, so a sentence without
/// marks costs no search, and the searches run over long stretches of
/// text instead of one sentence each.
#[derive(Default)]
pub(super) struct OpenMarks {
    /// For each group of [`MARK_BYTES`]: where its last search began, and
    /// the first byte of the group found at or after it (the text length
    /// when there is none).
    next: [Option<(usize, usize)>; MARK_BYTES.len()],
    /// The sentence start and the end up to which `open` is counted.
    counted: Option<(usize, usize)>,
    open: [u32; KINDS],
}

/// The bytes a mark starts with, in groups of three for one vectorised
/// search each. The kinds of the marks of different groups differ, so the
/// groups' order does not matter to the counts.
const MARK_BYTES: [[u8; 3]; 2] = [[b'"', b'(', b')'], [b'\'', 0xE2, 0xC2]];

impl OpenMarks {
    /// Whether the terminator at `p` stands inside a quotation or a
    /// parenthesis that opened after `sentence_start` and closes within
    /// [`MAX_QUOTATION`] bytes, before a blank line.
    pub(super) fn is_inside_quotation(
        &mut self,
        bytes: &[u8],
        sentence_start: usize,
        p: usize,
    ) -> bool {
        if sentence_start > p || p > bytes.len() {
            return false;
        }
        let open = self.count(bytes, sentence_start, p);
        if open.iter().all(|&n| n == 0) {
            return false;
        }
        closes_later(bytes, open, p)
    }

    /// How many marks of each kind are open at `end` in the sentence that
    /// begins at `start`, going on from the last count when it was of the
    /// same sentence.
    fn count(&mut self, bytes: &[u8], start: usize, end: usize) -> [u32; KINDS] {
        let from = match self.counted {
            Some((counted_start, counted_end)) if counted_start == start && counted_end <= end => {
                counted_end
            }
            _ => {
                self.open = [0; KINDS];
                start
            }
        };
        for group in 0..MARK_BYTES.len() {
            let mut at = from;
            loop {
                let found = self.next_mark(bytes, group, at);
                if found >= end {
                    break;
                }
                if let Some(mark) = mark_at(bytes, found) {
                    let n = &mut self.open[mark.kind.index()];
                    *n = if mark.opens {
                        *n + 1
                    } else {
                        n.saturating_sub(1)
                    };
                }
                at = found + 1;
            }
        }
        self.counted = Some((start, end));
        self.open
    }

    /// The first byte of `group` at or after `at`, or the text length.
    fn next_mark(&mut self, bytes: &[u8], group: usize, at: usize) -> usize {
        if let Some((searched, found)) = self.next[group]
            && searched <= at
            && at <= found
        {
            return found;
        }
        let [a, b, c] = MARK_BYTES[group];
        let rest = bytes.get(at..).unwrap_or_default();
        let found = memchr::memchr3(a, b, c, rest).map_or(bytes.len(), |offset| at + offset);
        self.next[group] = Some((at, found));
        found
    }
}

/// Whether a mark open at the terminator at `p` (`open` of each kind)
/// closes within [`MAX_QUOTATION`] bytes, before a blank line.
fn closes_later(bytes: &[u8], open: [u32; KINDS], p: usize) -> bool {
    let limit = (p + MAX_QUOTATION).min(bytes.len());
    let mut depth = open;
    let mut newline = false;
    let mut i = p;
    while i < limit {
        let Some(&b) = bytes.get(i) else {
            break;
        };
        if b == b'\n' {
            if newline {
                return false;
            }
            newline = true;
        } else if !b.is_ascii_whitespace() {
            newline = false;
        }
        let mark = may_be_mark(b).then(|| mark_at(bytes, i)).flatten();
        let Some(mark) = mark else {
            i += 1;
            continue;
        };
        let k = mark.kind.index();
        match (mark.kind, mark.opens) {
            // Quotation marks do not nest within their own kind: the next
            // one after an open quotation must close it; if it opens
            // another, the first was never closed.
            (Kind::Straight | Kind::Single | Kind::CurlySingle, opens) if open[k] > 0 => {
                return !opens;
            }
            (_, true) => depth[k] += 1,
            (_, false) if depth[k] > 0 => {
                depth[k] -= 1;
                if depth[k] < open[k] {
                    return true;
                }
            }
            _ => {}
        }
        i += mark.len;
    }
    false
}

/// Whether the byte before `end` (the end of a terminator and its closing
/// marks) is a closing double quote: `…?"`, `…!”`, `…!»`.
pub(super) fn ends_with_quote(bytes: &[u8], end: usize) -> bool {
    let Some(before) = bytes.get(..end) else {
        return false;
    };
    before.ends_with(b"\"")
        || before.ends_with("\u{201d}".as_bytes())
        || before.ends_with("\u{bb}".as_bytes())
}

/// Most capitalised words (or titles with their period) taken for the
/// speaker of a speech tag: "Sherlock Holmes", "Mr. Smith".
const MAX_SPEAKER_WORDS: usize = 3;

/// Whether the text at `i` (after a quoted `?` or `!`) is a speech tag
/// with a named speaker: a capitalised name or "I", then a verb of speech
/// ("I asked", "Holmes cried", "Mr. Jabez Wilson said"). A capitalised
/// word that typically opens a sentence ("He", "Nobody", "Then") is not
/// a speaker: ""Stop!" Nobody listened." is two sentences.
pub(super) fn is_speech_tag(bytes: &[u8], i: usize) -> bool {
    let mut j = i;
    let mut speakers = 0;
    loop {
        let word = letters(bytes, j);
        if word.is_empty() || word.len() > MAX_WORD {
            return false;
        }
        let capitalised = word.first().is_some_and(u8::is_ascii_uppercase);
        if !capitalised {
            return speakers > 0 && is_speech_verb(word);
        }
        let is_i = word == b"I";
        if speakers == MAX_SPEAKER_WORDS || (!is_i && is_sentence_starter(word) && !is_title(word))
        {
            return false;
        }
        speakers += 1;
        j += word.len();
        if bytes.get(j) == Some(&b'.') && is_title(word) {
            j += 1;
        }
        if bytes.get(j) != Some(&b' ') {
            return false;
        }
        j += 1;
    }
}

/// The ASCII letters at `i`.
fn letters(bytes: &[u8], i: usize) -> &[u8] {
    let rest = bytes.get(i..).unwrap_or_default();
    let len = rest.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    rest.get(..len).unwrap_or_default()
}

/// Titles before a speaker's name.
fn is_title(word: &[u8]) -> bool {
    matches!(
        word,
        b"Mr" | b"Mrs" | b"Ms" | b"Dr" | b"Miss" | b"Sir" | b"Lady" | b"Lord"
    )
}

/// Verbs that tag quoted speech, in the past and present tense.
fn is_speech_verb(word: &[u8]) -> bool {
    matches!(
        word,
        b"said"
            | b"says"
            | b"asked"
            | b"asks"
            | b"cried"
            | b"cries"
            | b"shouted"
            | b"shouts"
            | b"exclaimed"
            | b"exclaims"
            | b"replied"
            | b"replies"
            | b"answered"
            | b"answers"
            | b"called"
            | b"calls"
            | b"yelled"
            | b"yells"
            | b"screamed"
            | b"whispered"
            | b"whispers"
            | b"muttered"
            | b"murmured"
            | b"added"
            | b"adds"
            | b"continued"
            | b"remarked"
            | b"observed"
            | b"ejaculated"
            | b"returned"
            | b"repeated"
            | b"interrupted"
            | b"demanded"
            | b"inquired"
            | b"enquired"
            | b"protested"
            | b"roared"
            | b"gasped"
            | b"sighed"
            | b"thought"
            | b"wondered"
            | b"wrote"
            | b"writes"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inside(text: &str, terminator: &str) -> bool {
        let p = text
            .find(terminator)
            .map_or(0, |at| at + terminator.len() - 1);
        OpenMarks::default().is_inside_quotation(text.as_bytes(), 0, p)
    }

    #[test]
    fn finds_terminators_inside_quotations() {
        assert!(inside("She asked, \"Where? When?\" and waited.", "Where?"));
        assert!(inside(
            "The sign read \u{201c}No entry! Staff only!\u{201d} in red.",
            "entry!"
        ));
        assert!(inside(
            "The fee (see Exhibit B. The rates vary.) is due.",
            "B."
        ));
        assert!(!inside("It is 15\" wide. It is 10\" tall.", "wide."));
        assert!(!inside(
            "a gold-plated \"50\". Each digit (15 kg) weighs.",
            "\"."
        ));
        assert!(!inside(
            "services\") and more. The term \"including\" is wide.",
            "more."
        ));
        assert!(!inside(
            "The words \"hereof', \"herein\" apply. The term \"including\" means.",
            "apply."
        ));
        assert!(inside("'Stop! Stop!' he cried.", "Stop!"));
        assert!(!inside(
            "The students' books were lost. They cried.",
            "lost."
        ));
        assert!(inside(
            "\u{2018}Don\u{2019}t stop! Go!\u{2019} he cried.",
            "stop!"
        ));
        assert!(!inside("\"Well,\" said he. \"I do not know.\"", "he."));
        assert!(!inside("He said \"No. Never.\n\nThen he left.\"", "No."));
        let long = format!("He wrote \"Yes. {}\" and left.", "word ".repeat(100));
        assert!(!inside(&long, "Yes."));
    }

    #[test]
    fn recognises_speech_tags() {
        for tag in [
            "I asked in astonishment.",
            "Holmes cried.",
            "Mr. Jabez Wilson said",
            "Alice whispered",
        ] {
            assert!(is_speech_tag(tag.as_bytes(), 0), "{tag}");
        }
        for tag in [
            "Nobody answered him.",
            "He said nothing.",
            "Then he left.",
            "Holmes was",
        ] {
            assert!(!is_speech_tag(tag.as_bytes(), 0), "{tag}");
        }
        assert!(ends_with_quote(b"Stop!\"", 6));
        assert!(!ends_with_quote(b"Stop!", 5));
    }

    /// The marks open at `end` in the sentence `start..end`, read byte by
    /// byte: what [`OpenMarks`] must find with its kept searches.
    fn open_by_bytes(bytes: &[u8], start: usize, end: usize) -> [u32; KINDS] {
        let mut open = [0u32; KINDS];
        for mark in (start..end).filter_map(|i| mark_at(bytes, i)) {
            let n = &mut open[mark.kind.index()];
            *n = if mark.opens {
                *n + 1
            } else {
                n.saturating_sub(1)
            };
        }
        open
    }

    const PIECES: &[&str] = &[
        "word", " ", "\"", "'", "(", ")", "\u{2018}", "\u{2019}", "\u{201c}", "\u{201d}", "\u{ab}",
        "\u{bb}", "\u{2014}", "\u{e9}", ". ", "\n",
    ];

    proptest::proptest! {
        /// Sentences read as the scanner reads them (a sentence's ends in
        /// turn, then the next sentence), with jumps back now and then:
        /// every count matches a count of the sentence byte by byte.
        #[test]
        fn open_marks_are_counted_as_byte_by_byte(
            pieces in proptest::collection::vec(proptest::sample::select(PIECES), 0..40),
            steps in proptest::collection::vec((0u8..3, 0usize..40), 1..16),
        ) {
            let text = pieces.concat();
            let bytes = text.as_bytes();
            let mut marks = OpenMarks::default();
            let (mut start, mut end) = (0, 0);
            for (kind, delta) in steps {
                match kind {
                    0 => end = (end + delta).min(bytes.len()),
                    1 => {
                        start = end;
                        end = (end + delta).min(bytes.len());
                    }
                    _ => {
                        start = delta.min(bytes.len()) / 2;
                        end = delta.min(bytes.len());
                    }
                }
                proptest::prop_assert_eq!(
                    marks.count(bytes, start, end),
                    open_by_bytes(bytes, start, end),
                    "{:?} {}..{}", text, start, end
                );
            }
        }
    }
}
