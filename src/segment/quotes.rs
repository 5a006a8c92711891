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
//! Both are decided at candidate boundaries only, by short scans around
//! the terminator, so the scanner's main loop is untouched.

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
    matches!(b, b'"' | b'\'' | b'(' | b')' | 0xE2 | 0xC2)
}

/// Whether the terminator at `p` stands inside a quotation or a
/// parenthesis that opened after `sentence_start` and closes within
/// [`MAX_QUOTATION`] bytes, before a blank line.
pub(super) fn is_inside_quotation(bytes: &[u8], sentence_start: usize, p: usize) -> bool {
    let Some(before) = bytes.get(sentence_start..p) else {
        return false;
    };
    let open = count_open(before, sentence_start, bytes);
    if open.iter().all(|&n| n == 0) {
        return false;
    }
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

/// How many marks of each kind are open at the end of `text`, which starts
/// at `offset` in `bytes`. The marks are found with two vectorised
/// searches, each finding every mark of its kinds (the kinds are counted
/// apart, so their order across the searches does not matter): this runs
/// at every sentence end.
fn count_open(text: &[u8], offset: usize, bytes: &[u8]) -> [u32; KINDS] {
    let mut open = [0u32; KINDS];
    let mut count = |at: usize| {
        if let Some(mark) = mark_at(bytes, offset + at) {
            let n = &mut open[mark.kind.index()];
            *n = if mark.opens {
                *n + 1
            } else {
                n.saturating_sub(1)
            };
        }
    };
    memchr::memchr3_iter(b'"', b'(', b')', text).for_each(&mut count);
    memchr::memchr3_iter(b'\'', 0xE2, 0xC2, text).for_each(&mut count);
    open
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
        is_inside_quotation(text.as_bytes(), 0, p)
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
}
