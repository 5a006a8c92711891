//! Does extracted text read as written language, or as what a PDF's glyph
//! codes look like once the font's Unicode mapping is lost?
//!
//! A PDF shows glyph codes, not characters; the text comes from the font's
//! `ToUnicode` map or encoding. When those are missing or unreadable (a
//! truncated file, a subset font without a map) the codes still decode,
//! just to the wrong characters, and nothing in the file says so. What
//! comes out has three shapes, and each is judged here from the text alone:
//!
//! - glyphs with no character at all: U+FFFD, `?`, control characters or
//!   private-use code points ([`is_unknown_glyph`]);
//! - codes read as ASCII or Latin-1: punctuation in the middle of words
//!   (`7KLV&RPSDQ\`, `"#$!%&'%$()!&*!`), which prose does not have, or
//!   letters in the wrong places: a subset font's glyph ids are the
//!   character codes less 29, so "This supplier" reads "7KLV VXSSOLHU",
//!   whose letters are a sixth vowels where every language written in
//!   Latin letters has a third or more;
//! - one glyph per word: every letter its own token (`( [ K L E L W`).
//!
//! The word rule is for extracted PDF text only: Markdown, HTML and DOCX
//! carry LaTeX and markup where symbols among letters are what was written.

/// A character no font mapping produces for real text: the replacement
/// character, `C0`/`C1` controls other than line breaks and tabs, the
/// private-use areas and Unicode noncharacters.
pub fn is_unknown_glyph(c: char) -> bool {
    let code = c as u32;
    if (0x20..0x7F).contains(&code) {
        // Printable ASCII, most of any text, answered at once.
        return false;
    }
    c == '\u{FFFD}'
        || (c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
        || (0xE000..=0xF8FF).contains(&code)
        || code >= 0xF0000
        || (0xFDD0..=0xFDEF).contains(&code)
        || code & 0xFFFE == 0xFFFE
}

/// Symbols that prose does not put inside a word. Apostrophes, hyphens,
/// dots, commas, colons, slashes, `&`, `_`, `+`, `*`, brackets and `%`
/// are left out: "don't", "U.S.", "and/or", "AT&T", "2(a)", "10%".
fn is_odd_symbol(c: char) -> bool {
    matches!(
        c,
        '!' | '"'
            | '#'
            | '$'
            | ';'
            | '<'
            | '='
            | '>'
            | '?'
            | '@'
            | '\\'
            | '^'
            | '`'
            | '{'
            | '|'
            | '}'
            | '~'
    ) || ('\u{A1}'..='\u{BF}').contains(&c)
        || matches!(c, '×' | '÷')
}

/// Punctuation that opens or closes a word without being part of it.
fn is_word_edge(c: char) -> bool {
    matches!(
        c,
        '(' | ')'
            | '['
            | ']'
            | '{'
            | '}'
            | '"'
            | '\''
            | '“'
            | '”'
            | '‘'
            | '’'
            | '«'
            | '»'
            | '¿'
            | '¡'
            | '*'
            | '.'
            | ','
            | ';'
            | ':'
            | '!'
            | '?'
    )
}

/// Addresses keep their `?`, `=` and `@` (query strings, e-mail).
fn is_address(word: &str) -> bool {
    let email = || {
        let Some((user, host)) = word.split_once('@') else {
            return false;
        };
        let user_ok = |c: char| c.is_alphanumeric() || "._%+-".contains(c);
        let host_ok = |c: char| c.is_alphanumeric() || ".-".contains(c);
        !user.is_empty()
            && user.chars().all(user_ok)
            && host.contains('.')
            && host.chars().all(host_ok)
    };
    word.contains("://") || word.starts_with("www.") || email()
}

/// How many characters of a whitespace-free token are garbled.
fn garbled_chars(token: &str) -> usize {
    let length = token.chars().count();
    let unknown = token.chars().filter(|&c| is_unknown_glyph(c)).count();
    if unknown > 0 || token.chars().all(|c| c == '?') {
        // A word with unmapped glyphs is not one to search for.
        return length;
    }
    let word = token.trim_matches(is_word_edge);
    if word.is_empty() || is_address(word) {
        return 0;
    }
    let chars: Vec<char> = word.chars().collect();
    let touching_letters = (0..chars.len())
        .filter(|&i| is_odd_symbol(chars[i]))
        .filter(|&i| {
            let before = i.checked_sub(1).map(|j| chars[j]);
            let after = chars.get(i + 1).copied();
            before.is_some_and(char::is_alphabetic) || after.is_some_and(char::is_alphabetic)
        })
        .count();
    // Rulers and leaders ("=====", "-----", "*****") repeat one or two
    // characters; symbols from codes are assorted.
    let mut distinct: Vec<char> = chars.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let assorted = distinct.len() > 2;
    let odd = chars.iter().filter(|&&c| is_odd_symbol(c)).count();
    let symbols_only = !chars.iter().any(|c| c.is_alphanumeric());
    if touching_letters >= 2
        || (assorted && odd >= 3 && odd * 3 >= chars.len())
        || (assorted && symbols_only && chars.len() > 3)
    {
        return length;
    }
    0
}

/// A letter of the Latin script (Basic Latin, Latin-1, Latin Extended-A
/// and -B, Latin Extended Additional), and whether it is a vowel.
fn latin_letter(c: char) -> Option<bool> {
    let code = c as u32;
    let latin = c.is_ascii_alphabetic()
        || ((0xC0..=0x24F).contains(&code) && c != '×' && c != '÷')
        || (0x1E00..=0x1EFF).contains(&code);
    if !latin {
        return None;
    }
    let vowel = matches!(c.to_ascii_lowercase(), 'a' | 'e' | 'i' | 'o' | 'u' | 'y')
        || "àáâãäåæèéêëìíîïòóôõöøùúûüýÿÀÁÂÃÄÅÆÈÉÊËÌÍÎÏÒÓÔÕÖØÙÚÛÜÝŸ\
            āăąēĕėęěĩīĭįıōŏőœũūŭůűųŷĀĂĄĒĔĖĘĚĨĪĬĮİŌŎŐŒŨŪŬŮŰŲŶơưƠƯ"
            .contains(c)
        // Latin Extended Additional's A to Y with marks (Vietnamese).
        || (0x1EA0..=0x1EF9).contains(&code);
    Some(vowel)
}

/// Tallies over a text, added to line by line.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Legibility {
    /// Non-whitespace characters.
    pub chars: usize,
    /// Of those, characters in garbled words.
    pub garbled: usize,
    /// Words with a letter, and of those the one-character ones.
    pub words: usize,
    pub single_letters: usize,
    /// Latin letters, and of those the vowels.
    pub latin_letters: usize,
    pub latin_vowels: usize,
}

/// Below this many words, one glyph per word says nothing (a table of
/// initials, a short heading).
const MIN_WORDS_FOR_SPACING: usize = 20;

/// Below this many Latin letters, the vowel share says nothing (a list of
/// acronyms, a line of part numbers).
const MIN_LETTERS_FOR_VOWELS: usize = 200;

/// English writes about 38% of its letters as vowels (with y), French,
/// Spanish and Italian more, German and Dutch about 35%, Czech and Polish
/// about 30%; shifted glyph codes give about 15%.
const MIN_VOWEL_SHARE: f32 = 0.2;

impl Legibility {
    pub fn of(text: &str) -> Self {
        let mut legibility = Self::default();
        legibility.add(text);
        legibility
    }

    pub fn add(&mut self, text: &str) {
        for token in text.split_whitespace() {
            let length = token.chars().count();
            self.chars += length;
            self.garbled += garbled_chars(token);
            for vowel in token.chars().filter_map(latin_letter) {
                self.latin_letters += 1;
                self.latin_vowels += usize::from(vowel);
            }
            if token.chars().any(char::is_alphabetic) {
                self.words += 1;
                self.single_letters += usize::from(length == 1);
            }
        }
    }

    /// The share of characters in words that read as words, in [0, 1].
    pub fn legible_share(&self) -> f32 {
        if self.chars == 0 {
            1.0
        } else {
            1.0 - self.garbled as f32 / self.chars as f32
        }
    }

    /// The share of Latin letters that are vowels, when there are enough
    /// letters to tell.
    fn vowel_share(&self) -> Option<f32> {
        (self.latin_letters >= MIN_LETTERS_FOR_VOWELS)
            .then(|| self.latin_vowels as f32 / self.latin_letters as f32)
    }

    /// The text does not read as language: most of its characters are in
    /// garbled words, most of its words are single glyphs (in prose, "a"
    /// and "I" are a few per cent of words; in a table, a third), or its
    /// Latin letters are too few vowels for any language.
    pub fn is_garbled(&self) -> bool {
        self.legible_share() < 0.5
            || (self.words >= MIN_WORDS_FOR_SPACING && self.single_letters * 2 > self.words)
            || self
                .vowel_share()
                .is_some_and(|share| share < MIN_VOWEL_SHARE)
    }

    /// Why [`Self::is_garbled`] holds, for a warning.
    pub fn describe(&self) -> String {
        if self.legible_share() < 0.5 {
            format!(
                "{:.0}% of its characters are in words of unmapped glyphs or symbols among letters",
                100.0 * (1.0 - self.legible_share())
            )
        } else if let Some(share) = self.vowel_share().filter(|&s| s < MIN_VOWEL_SHARE) {
            format!(
                "{:.0}% of its {} Latin letters are vowels, too few for any language",
                100.0 * share,
                self.latin_letters
            )
        } else {
            format!(
                "{} of its {} words are single letters",
                self.single_letters, self.words
            )
        }
    }

    /// Adds another text's tallies (a page's to its document's).
    pub fn merge(&mut self, other: &Legibility) {
        self.chars += other.chars;
        self.garbled += other.garbled;
        self.words += other.words;
        self.single_letters += other.single_letters;
        self.latin_letters += other.latin_letters;
        self.latin_vowels += other.latin_vowels;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_reads_as_language() {
        for text in [
            "This Agreement (\"Agreement\") is made as of March 14, 2016, by and between \
             Lifeway Foods, Inc. and the Company.",
            "Section 2(a)(i) applies; see https://example.com/a?b=c&d=e or mail legal@example.com.",
            "Don't sign A.T.&T.'s and/or the U.S. form — 10% off, $5.00 (net), #3, x = y + 2.",
            "Table of Contents ........ 3 ---------- ==== ***",
            "미래 국가 정보보안 기술 발전 방향 — تحسين اإلنتاجية وحل المشكالت",
            &"Příliš žluťoučký kůň úpěl ďábelské ódy; strč prst skrz krk. ".repeat(5),
            &"Zażółć gęślą jaźń, chrząszcz brzmi w trzcinie w Szczebrzeszynie. ".repeat(5),
            &"Người được cấp phép phải tuân thủ các điều khoản của hợp đồng này. ".repeat(5),
        ] {
            let l = Legibility::of(text);
            assert_eq!(l.garbled, 0, "{text}: {l:?}");
            assert!(!l.is_garbled(), "{text}");
        }
    }

    #[test]
    fn lost_font_mappings_read_as_garbled() {
        // The same sentence ("This Endorsement Agreement made October") as
        // a TrueType subset's glyph ids read as ASCII (codes 29 below the
        // characters), as one glyph per token, and as a font's raw codes.
        for text in [
            "\u{FFFD}7KLV\u{FFFD}(QGRUVHPHQW\u{FFFD}$JUHHPHQW\u{FFFD}PDGH\u{FFFD}2FWREHU",
            "05-:;<)#!%$')1,96!=/)$')$-!5'!;>?>!79!@#,5.)&(#$,!A/)#/0!B#&3$.C!)#$!",
            "??? ?? ? ?F???f?B?r ?V?c",
        ] {
            let l = Legibility::of(text);
            assert!(l.is_garbled(), "{text}: {l:?}");
        }
        let shifted = "3DJH 7KH VXSSOLHU VKDOO GHOLYHU WKH JRRGV ZLWKLQ GD\\V 3D\\PHQW LV GXH \
                       WKLUW\\ GD\\V DIWHU WKH LQYRLFH GDWH ";
        let l = Legibility::of(&shifted.repeat(5));
        assert_eq!(l.garbled, 0, "no word is odd by itself");
        assert!(l.is_garbled(), "{l:?}");
        assert!(l.describe().contains("vowels"), "{}", l.describe());
        let spaced = "( [ K L E L W ( ; ( & 8 7 , 2 1 9 ( 5 6 , 2 1 > @ & H U W D L Q F R Q I";
        let l = Legibility::of(&spaced.repeat(2));
        assert!(l.is_garbled(), "{l:?}");
        assert!(l.describe().contains("single letters"), "{}", l.describe());
    }

    #[test]
    fn unknown_glyphs_are_the_unmappable_code_points() {
        for c in [
            '\u{FFFD}', '\u{0003}', '\u{0085}', '\u{E000}', '\u{F0B7}', '\u{FDD0}',
        ] {
            assert!(is_unknown_glyph(c), "{c:?}");
        }
        for c in ['a', 'é', '\n', '\t', '—', '미', '€'] {
            assert!(!is_unknown_glyph(c), "{c:?}");
        }
    }

    #[test]
    fn a_few_bad_words_do_not_make_a_text_garbled() {
        let mut l = Legibility::of(&"The parties agree to the terms below. ".repeat(20));
        l.add("r\u{FFFD} r\u{FFFD}");
        assert!(l.garbled > 0);
        assert!(!l.is_garbled());
    }
}
