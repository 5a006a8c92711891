//! Byte classes for the scanner and the characters around a terminator:
//! whitespace, closing and opening quotes and brackets, and what the next
//! word looks like.

use super::abbreviations::MAX_WORD;
use super::lists::{Delimiter, parse_marker};

/// Class of a byte the scanner walks over without stopping.
pub(super) const PLAIN: u8 = 0;
/// `.`: a period, a decimal point, an ellipsis or part of a URL.
pub(super) const PERIOD: u8 = 1;
/// `?` and `!`.
pub(super) const EXCLAMATION: u8 = 2;
/// `\n`: blank lines and list items on a new line start sentences.
pub(super) const NEWLINE: u8 = 3;
/// Lead byte `0xE2` of U+2000–U+2FFF: "…", bullets ("•", "⁃", "◦", "▪").
pub(super) const GENERAL_PUNCTUATION: u8 = 4;
/// Lead bytes `0xE3` and `0xEF`: the CJK full stops "。" and "｡", and the
/// full-width "．", "！" and "？", which end sentences without a following
/// space.
pub(super) const WIDE_TERMINATOR: u8 = 5;

/// The class of every byte; all but the few above are [`PLAIN`]. The
/// scanner finds the others with vectorised searches and dispatches on
/// their class here.
pub(super) static BYTE_CLASS: [u8; 256] = {
    let mut table = [PLAIN; 256];
    table[b'.' as usize] = PERIOD;
    table[b'?' as usize] = EXCLAMATION;
    table[b'!' as usize] = EXCLAMATION;
    table[b'\n' as usize] = NEWLINE;
    table[0xE2] = GENERAL_PUNCTUATION;
    table[0xE3] = WIDE_TERMINATOR;
    table[0xEF] = WIDE_TERMINATOR;
    table
};

/// Byte length of the Unicode whitespace character at `i` (the
/// `White_Space` set `char::is_whitespace` uses), 0 if there is none.
pub(super) fn whitespace_len(bytes: &[u8], i: usize) -> usize {
    match bytes.get(i..) {
        Some([b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C, ..]) => 1,
        Some([0xC2, 0x85 | 0xA0, ..]) => 2,
        Some([0xE1, 0x9A, 0x80, ..]) => 3,
        Some([0xE2, 0x80, 0x80..=0x8A | 0xA8 | 0xA9 | 0xAF, ..]) => 3,
        Some([0xE2, 0x81, 0x9F, ..]) => 3,
        Some([0xE3, 0x80, 0x80, ..]) => 3,
        _ => 0,
    }
}

/// Whether a whitespace character starts at `i`.
pub(super) fn is_whitespace_at(bytes: &[u8], i: usize) -> bool {
    whitespace_len(bytes, i) > 0
}

/// First byte at or after `i` that is not whitespace (or the length).
pub(super) fn skip_whitespace(bytes: &[u8], mut i: usize) -> usize {
    loop {
        match whitespace_len(bytes, i) {
            0 => return i.min(bytes.len()),
            len => i += len,
        }
    }
}

/// Byte length of a closing quote or bracket at `i`, 0 if there is none.
/// These stay with the sentence a terminator before them ends:
/// `"This is great." She …`.
fn closer_len(bytes: &[u8], i: usize) -> usize {
    match bytes.get(i..) {
        Some([b'"' | b'\'' | b')' | b']' | b'}', ..]) => 1,
        // » (U+00BB)
        Some([0xC2, 0xBB, ..]) => 2,
        // ’ ” › (U+2019, U+201D, U+203A)
        Some([0xE2, 0x80, 0x99 | 0x9D | 0xBA, ..]) => 3,
        // 」 』 (U+300D, U+300F)
        Some([0xE3, 0x80, 0x8D | 0x8F, ..]) => 3,
        // ） (U+FF09)
        Some([0xEF, 0xBC, 0x89, ..]) => 3,
        // Superscript footnote numerals: ¹ ² ³ (U+00B9, U+00B2, U+00B3)
        // and ⁰ ⁴–⁹ (U+2070, U+2074–U+2079).
        Some([0xC2, 0xB2 | 0xB3 | 0xB9, ..]) => 2,
        Some([0xE2, 0x81, 0xB0 | 0xB4..=0xB9, ..]) => 3,
        _ => 0,
    }
}

/// Byte length of an opening quote or bracket (or the Spanish inverted
/// marks) at `i`, 0 if there is none.
fn opener_len(bytes: &[u8], i: usize) -> usize {
    match bytes.get(i..) {
        Some([b'"' | b'\'' | b'(' | b'[' | b'{', ..]) => 1,
        // ¡ « ¿ (U+00A1, U+00AB, U+00BF)
        Some([0xC2, 0xA1 | 0xAB | 0xBF, ..]) => 2,
        // ‘ “ „ ‹ (U+2018, U+201C, U+201E, U+2039)
        Some([0xE2, 0x80, 0x98 | 0x9C | 0x9E | 0xB9, ..]) => 3,
        _ => 0,
    }
}

/// `word` without the opening quotes and brackets it starts with:
/// `("Inc` → `Inc`.
pub(super) fn strip_openers(word: &[u8]) -> &[u8] {
    let mut start = 0;
    loop {
        match opener_len(word, start) {
            0 => return word.get(start..).unwrap_or_default(),
            len => start += len,
        }
    }
}

/// First byte after the closing quotes and brackets at `i`, and after
/// the citation marks of Wikipedia-sourced text that follow a sentence's
/// final period: "[12]", "[a]", "[citation needed]", ":121,154".
pub(super) fn skip_closers(bytes: &[u8], mut i: usize) -> usize {
    loop {
        let len = match closer_len(bytes, i) {
            0 => match annotation_len(bytes, i) {
                0 => page_citation_len(bytes, i),
                len => len,
            },
            len => len,
        };
        if len == 0 {
            return i.min(bytes.len());
        }
        i += len;
    }
}

/// Longest bracketed annotation after a terminator, brackets included.
const MAX_ANNOTATION: usize = 40;

/// Byte length of a bracketed note or citation mark at `i`: "[1]",
/// "[note 3]", "[citation needed]", "[improper synthesis?]". Only words,
/// digits, spaces and light punctuation, no periods: "[...]" is an
/// omission, not a note.
fn annotation_len(bytes: &[u8], i: usize) -> usize {
    let Some([b'[', rest @ ..]) = bytes.get(i..) else {
        return 0;
    };
    let inner = rest
        .iter()
        .take(MAX_ANNOTATION)
        .take_while(|&&b| {
            b.is_ascii_alphanumeric() || matches!(b, b' ' | b'?' | b',' | b'-' | b'\'')
        })
        .count();
    match rest.get(inner) {
        Some(b']') if inner > 0 => inner + 2,
        _ => 0,
    }
}

/// Byte length of a page citation at `i` (Wikipedia's "rp" style):
/// ":33", ":121,154", ":162–164", ":43, 301".
fn page_citation_len(bytes: &[u8], i: usize) -> usize {
    if bytes.get(i) != Some(&b':') {
        return 0;
    }
    let mut j = i + 1;
    loop {
        j += match bytes.get(j..) {
            Some([d, ..]) if d.is_ascii_digit() => 1,
            Some([b',' | b'-', d, ..]) if j > i + 1 && d.is_ascii_digit() => 2,
            Some([b',', b' ', d, ..]) if j > i + 1 && d.is_ascii_digit() => 3,
            // "–" (U+2013)
            Some([0xE2, 0x80, 0x93, d, ..]) if j > i + 1 && d.is_ascii_digit() => 4,
            _ => break,
        };
    }
    if j > i + 1 { j - i } else { 0 }
}

/// Most digits in one footnote numeral after a period ("….11 12 Take").
const MAX_FOOTNOTE_DIGITS: usize = 3;

/// Footnote or citation numerals right after the period that ends `word`,
/// at `end`: "consultation.11 12 Take", "(1987).1 According",
/// "documented.3,4 However". Returns where the numerals end when whitespace
/// and a capitalised word follow them. The word must be a word of two
/// letters or more ending in a lowercase letter, or end in a closing
/// bracket or quote: after a digit or a capital the numerals are a decimal
/// or a clause number ("2.1 Definitions", "Table A.1 The").
pub(super) fn footnote_end(text: &str, word: &[u8], end: usize) -> Option<usize> {
    let after_word = match word {
        [.., b')' | b']' | b'"'] => true,
        [.., a, b] => a.is_ascii_alphabetic() && b.is_ascii_lowercase(),
        _ => false,
    };
    if !after_word {
        return None;
    }
    let bytes = text.as_bytes();
    let mut j = end;
    loop {
        let digits = bytes
            .get(j..)?
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 || digits > MAX_FOOTNOTE_DIGITS {
            return None;
        }
        j += digits;
        match bytes.get(j..) {
            Some([b',' | b' ', d, ..]) if d.is_ascii_digit() => j += 1,
            _ => break,
        }
    }
    (is_whitespace_at(bytes, j)
        && matches!(
            following(text, skip_whitespace(bytes, j)),
            Following::Word(_)
        ))
    .then_some(j)
}

/// Whether the terminator ending `word` at `end` is run into a next
/// sentence with no space between: "world.Today", "1,000.That",
/// "happened?Nobody". The word before is a plain word of two letters or
/// more with a lowercase one, or a number; the word after is a capital and
/// lowercase letters ending at a space or punctuation. Anything else is an
/// address, a name or code: "example.com/Setup.Html", "U.S.Army",
/// "obj.Dispose()". (The caller rules out abbreviations: "Dr.Smith".)
pub(super) fn unspaced_word(bytes: &[u8], word: &[u8], end: usize) -> bool {
    let plain = word
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b',' | b'$' | b'%' | b'\'' | b')'));
    let before_ok = plain
        && match word.last() {
            Some(b) if b.is_ascii_digit() || matches!(b, b'%' | b')') => true,
            Some(b) if b.is_ascii_alphabetic() => {
                let letters = word.iter().rev().take_while(|b| b.is_ascii_alphabetic());
                let (count, lower) = letters.fold((0, false), |(n, lower), b| {
                    (n + 1, lower || b.is_ascii_lowercase())
                });
                count >= 2 && lower
            }
            _ => false,
        };
    if !before_ok {
        return false;
    }
    let Some([first, rest @ ..]) = bytes.get(end..) else {
        return false;
    };
    let lower = rest.iter().take_while(|b| b.is_ascii_lowercase()).count();
    if !first.is_ascii_uppercase() || lower == 0 {
        return false;
    }
    match rest.get(lower..) {
        None | Some([]) => true,
        Some([b'.', after, ..]) => after.is_ascii_whitespace(),
        Some([b'.']) => true,
        Some([b, ..]) => {
            b.is_ascii_whitespace()
                || matches!(b, b',' | b';' | b':' | b'!' | b'?' | b'\'' | b'"' | b')')
        }
    }
}

/// What follows a terminator and the whitespace after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Following<'a> {
    /// Nothing: the text ends.
    End,
    /// A lowercase word or continuing punctuation (",", ";", "–"): the
    /// sentence goes on ("Yahoo! in the", "Co. at noon").
    Continuation,
    /// A digit: a number or a clause number ("p. 55", "No. 5", "oil. 71%
    /// of its imports …").
    Numeral,
    /// A capitalised word (or one of a script without case), possibly
    /// after opening quotes: its leading ASCII letters and apostrophes, for
    /// the sentence-starter lookup (empty for a non-ASCII letter).
    Word(&'a [u8]),
    /// An enclosed clause number opening a clause: "(a)", "(iv)", "(2)".
    Enumerator,
    /// A bare list marker (a number, a lowercase letter or a lowercase
    /// roman numeral) before a capitalised word: "2. Milestone Payments",
    /// "a. Initial Payment", "iv) Term".
    ListItem,
    /// Any other symbol: "§", "$", "#".
    Symbol,
}

/// Classifies the text at `i` (the first non-whitespace byte after a
/// terminator).
pub(super) fn following(text: &str, i: usize) -> Following<'_> {
    let bytes = text.as_bytes();
    // Capital letters are left out: "J. R. R. Tolkien" has initials.
    if bytes
        .get(i)
        .is_some_and(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        && let Some(marker) = parse_marker(bytes, i)
        && matches!(
            marker.delimiter(),
            Delimiter::Period | Delimiter::PeriodParen | Delimiter::Paren
        )
        && text
            .get(skip_whitespace(bytes, marker.end)..)
            .and_then(|rest| rest.chars().next())
            .is_some_and(char::is_uppercase)
    {
        return Following::ListItem;
    }
    let mut j = i;
    loop {
        if bytes.get(j) == Some(&b'(')
            && parse_marker(bytes, j).is_some_and(|m| m.delimiter() == Delimiter::Enclosed)
        {
            return Following::Enumerator;
        }
        match opener_len(bytes, j) {
            0 => break,
            len => j += len,
        }
    }
    let Some(c) = text.get(j..).and_then(|rest| rest.chars().next()) else {
        return Following::End;
    };
    if c.is_ascii_digit() {
        Following::Numeral
    } else if c.is_lowercase()
        || matches!(
            c,
            ',' | ';' | ':' | '-' | '–' | '—' | '&' | '%' | ')' | ']' | '}'
        )
    {
        Following::Continuation
    } else if c.is_alphabetic() {
        let rest = bytes.get(j..).unwrap_or_default();
        let len = rest
            .iter()
            .take(MAX_WORD + 1)
            .take_while(|&&b| b.is_ascii_alphabetic() || b == b'\'')
            .count();
        Following::Word(rest.get(..len).unwrap_or_default())
    } else {
        Following::Symbol
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_matches_char_is_whitespace() {
        for c in (0..=0x3000u32).filter_map(char::from_u32) {
            let mut buf = [0u8; 4];
            let s = c.encode_utf8(&mut buf);
            let expected = if c.is_whitespace() { s.len() } else { 0 };
            assert_eq!(whitespace_len(s.as_bytes(), 0), expected, "{c:?}");
        }
    }

    #[test]
    fn skips_closers_and_citations() {
        let text = "great.\u{201d})[12] Next";
        assert_eq!(skip_closers(text.as_bytes(), 6), 14);
        assert_eq!(skip_closers(b"x.[citation needed][a] y", 2), 22);
        assert_eq!(skip_closers(b"x.:121,154 y", 2), 10);
        assert_eq!(skip_closers(b"x.:43, 301 y", 2), 10);
        assert_eq!(skip_closers("x.:162\u{2013}164 y".as_bytes(), 2), 12);
        assert_eq!(skip_closers(b"x.[...] y", 2), 2);
        assert_eq!(skip_closers(b"x.: y", 2), 2);
        assert_eq!(strip_openers("(\u{201c}Inc".as_bytes()), b"Inc");
    }

    #[test]
    fn classifies_what_follows() {
        assert_eq!(following("She held", 0), Following::Word(b"She"));
        assert_eq!(following("\"I'm here", 0), Following::Word(b"I'm"));
        assert_eq!(following("in the", 0), Following::Continuation);
        assert_eq!(following("55.", 0), Following::Numeral);
        assert_eq!(following("(b) The", 0), Following::Enumerator);
        assert_eq!(following("2. Milestone", 0), Following::ListItem);
        assert_eq!(following("a. Initial", 0), Following::ListItem);
        assert_eq!(following("a. the", 0), Following::Continuation);
        assert_eq!(following("5. 3", 0), Following::Numeral);
        assert_eq!(following("(Smith 55)", 0), Following::Word(b"Smith"));
        assert_eq!(following("§ 101", 0), Following::Symbol);
        assert_eq!(following("\u{c9}lan", 0), Following::Word(b""));
        assert_eq!(following("", 0), Following::End);
    }
}
