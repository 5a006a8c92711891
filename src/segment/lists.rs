//! List markers and bullets: "1.", "2.)", "3)", "(a)", "iv.", "1.2",
//! "•", "⁃", "☐".
//!
//! A marker opening a sentence starts (or continues) a list; the next
//! number of that list, met later inside the text, starts a new sentence
//! ("1. The first item 2. The second item"). Requiring the *next* number
//! in the same style keeps ordinary numbers ("he bought 2. Then …",
//! "Section 2. The Company …") from being taken for list items.

use super::punctuation::{is_whitespace_at, skip_whitespace};

/// Longest label of a marker in bytes ("viii" is 4, "xxviii" 6).
const MAX_LABEL: usize = 7;

/// Largest arabic label taken for a list number (three digits): longer
/// numbers at a sentence start are years and amounts, not list items.
const MAX_ARABIC_DIGITS: usize = 3;

/// How the items of a list are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Numbering {
    Arabic,
    LowerAlpha,
    UpperAlpha,
    LowerRoman,
    UpperRoman,
}

/// What follows (or encloses) the label of a marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Delimiter {
    /// "1."
    Period,
    /// "1.)"
    PeriodParen,
    /// "1)"
    Paren,
    /// "(1)": also the inline enumeration of legal clauses ("shall (a) pay
    /// and (b) deliver"), so never continued inside a sentence.
    Enclosed,
    /// "1.2", "1.2.", "2.1.3": clause numbering, never a running list.
    Outline,
}

/// A list marker found in the text.
#[derive(Clone, Copy, Debug)]
pub(super) struct Marker<'a> {
    label: &'a [u8],
    delimiter: Delimiter,
    /// Byte just after the marker (its delimiter).
    pub(super) end: usize,
}

impl Marker<'_> {
    /// What follows or encloses the label.
    pub(super) fn delimiter(&self) -> Delimiter {
        self.delimiter
    }
}

/// The list a text is in: the numbering, delimiter and number of its last
/// item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ListState {
    numbering: Numbering,
    delimiter: Delimiter,
    last: u32,
}

impl ListState {
    /// The list a marker opening a sentence starts, if it can run on inside
    /// one block of text (arabic, lowercase letters and lowercase roman
    /// numerals, not enclosed or outline numbers). Capital letters are left
    /// out because "A. Smith and B. Jones" are initials far more often than
    /// inline list items.
    pub(super) fn start(marker: &Marker<'_>) -> Option<Self> {
        if matches!(marker.delimiter, Delimiter::Enclosed | Delimiter::Outline) {
            return None;
        }
        let (numbering, value) = Numbering::infer(marker.label)?;
        if matches!(numbering, Numbering::UpperAlpha | Numbering::UpperRoman) {
            return None;
        }
        Some(Self {
            numbering,
            delimiter: marker.delimiter,
            last: value,
        })
    }

    /// Whether `marker` is the next item of this list.
    pub(super) fn is_next(&self, marker: &Marker<'_>) -> bool {
        marker.delimiter == self.delimiter
            && self.numbering.value_of(marker.label) == self.last.checked_add(1)
    }

    /// The first byte of the next item's label: the scanner stops at this
    /// byte (besides punctuation) while the list is open.
    pub(super) fn next_first_byte(&self) -> Option<u8> {
        let next = self.last.checked_add(1)?;
        match self.numbering {
            Numbering::Arabic => {
                let mut leading = next;
                while leading >= 10 {
                    leading /= 10;
                }
                Some(b'0' + leading as u8)
            }
            Numbering::LowerAlpha => (next <= 26).then(|| b'a' + (next - 1) as u8),
            Numbering::LowerRoman => roman_first_letter(next),
            Numbering::UpperAlpha | Numbering::UpperRoman => None,
        }
    }
}

impl Numbering {
    /// The numbering and value a label starts a list with. A lone "i"/"I"
    /// is roman one; other lone letters are alphabetic.
    fn infer(label: &[u8]) -> Option<(Self, u32)> {
        let numbering = match label {
            [b'i'] => Self::LowerRoman,
            [b'I'] => Self::UpperRoman,
            [b'a'..=b'z'] => Self::LowerAlpha,
            [b'A'..=b'Z'] => Self::UpperAlpha,
            _ if label.iter().all(u8::is_ascii_digit) => Self::Arabic,
            _ if label
                .iter()
                .all(|&b| is_roman_letter(b.to_ascii_lowercase())) =>
            {
                if label.iter().all(u8::is_ascii_lowercase) {
                    Self::LowerRoman
                } else if label.iter().all(u8::is_ascii_uppercase) {
                    Self::UpperRoman
                } else {
                    return None;
                }
            }
            _ => return None,
        };
        Some((numbering, numbering.value_of(label)?))
    }

    /// The value of `label` read in this numbering.
    fn value_of(self, label: &[u8]) -> Option<u32> {
        match (self, label) {
            (Self::Arabic, _) => {
                if label.is_empty() || label.len() > MAX_ARABIC_DIGITS {
                    return None;
                }
                label.iter().try_fold(0u32, |acc, &b| {
                    b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0'))
                })
            }
            (Self::LowerAlpha, [b @ b'a'..=b'z']) => Some(u32::from(b - b'a') + 1),
            (Self::UpperAlpha, [b @ b'A'..=b'Z']) => Some(u32::from(b - b'A') + 1),
            (Self::LowerRoman, _) if label.iter().all(u8::is_ascii_lowercase) => roman_value(label),
            (Self::UpperRoman, _) if label.iter().all(u8::is_ascii_uppercase) => roman_value(label),
            _ => None,
        }
    }
}

/// Parses a list marker starting at byte `i`: "1.", "1.)", "1)", "(1)",
/// "a.", "iv)", "1.2", "1.2." followed by whitespace and then more text.
/// Outline numbers without a final period ("1.2 Definitions") must be
/// followed by something other than a lowercase word or a digit, so that a
/// decimal at the start of a wrapped line ("2.5 million") is no marker.
pub(super) fn parse_marker(bytes: &[u8], i: usize) -> Option<Marker<'_>> {
    let enclosed = bytes.get(i) == Some(&b'(');
    let label_start = if enclosed { i + 1 } else { i };
    let label_len = bytes
        .get(label_start..)?
        .iter()
        .take(MAX_LABEL + 1)
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    if label_len == 0 || label_len > MAX_LABEL {
        return None;
    }
    let label_end = label_start + label_len;
    let label = bytes.get(label_start..label_end)?;
    Numbering::infer(label)?;
    let rest = bytes.get(label_end..)?;
    let (delimiter, end) = if enclosed {
        (rest.first() == Some(&b')')).then_some((Delimiter::Enclosed, label_end + 1))?
    } else {
        match rest {
            [b'.', b')', ..] => (Delimiter::PeriodParen, label_end + 2),
            [b')', ..] => (Delimiter::Paren, label_end + 1),
            [b'.', d, ..] if d.is_ascii_digit() && label.iter().all(u8::is_ascii_digit) => {
                (Delimiter::Outline, outline_end(bytes, label_end))
            }
            [b'.', ..] => (Delimiter::Period, label_end + 1),
            _ => return None,
        }
    };
    if !is_whitespace_at(bytes, end) {
        return None;
    }
    let text_start = skip_whitespace(bytes, end);
    let first = *bytes.get(text_start)?;
    let outline_without_period = delimiter == Delimiter::Outline
        && bytes
            .get(end.wrapping_sub(1))
            .is_some_and(u8::is_ascii_digit);
    if outline_without_period && (first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return None;
    }
    Some(Marker {
        label,
        delimiter,
        end,
    })
}

/// End of an outline number whose first component ends at `i` (on its
/// first inner period): "2.1.3" or "2.1.3.".
fn outline_end(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i) == Some(&b'.') {
        let digits = bytes.get(i + 1..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        });
        if digits == 0 {
            // A trailing period closes the number: "2.1." → keep it.
            return i + 1;
        }
        i += 1 + digits;
    }
    i
}

/// Byte length of the bullet at `i`, if there is one. Inline bullets
/// (•, ‣, ⁃, ◦, ▪, ●, ■) start a new item anywhere; the others (checkboxes,
/// arrows, ticks, and ASCII "-", "*", "+" followed by a space) only at the
/// start of a line, where they cannot be ordinary punctuation.
pub(super) fn bullet_len(text: &str, i: usize, line_start: bool) -> Option<usize> {
    let c = text.get(i..)?.chars().next()?;
    let inline = matches!(c, '•' | '‣' | '⁃' | '◦' | '▪' | '●' | '■' | '▫' | '∙');
    let at_line_start = match c {
        '-' | '*' | '+' => is_whitespace_at(text.as_bytes(), i + 1),
        '○' | '□' | '►' | '▶' | '➢' | '➤' | '✓' | '✔' | '☐' | '☑' | '☒' | '❖' => {
            true
        }
        _ => false,
    };
    (inline || (line_start && at_line_start)).then(|| c.len_utf8())
}

fn is_roman_letter(b: u8) -> bool {
    matches!(b, b'i' | b'v' | b'x' | b'l' | b'c' | b'd' | b'm')
}

/// Value of a roman numeral (either case), subtractive notation.
fn roman_value(label: &[u8]) -> Option<u32> {
    let digit = |b: u8| match b.to_ascii_lowercase() {
        b'i' => Some(1i64),
        b'v' => Some(5),
        b'x' => Some(10),
        b'l' => Some(50),
        b'c' => Some(100),
        b'd' => Some(500),
        b'm' => Some(1000),
        _ => None,
    };
    let mut total = 0i64;
    let mut iter = label.iter().peekable();
    while let Some(&b) = iter.next() {
        let value = digit(b)?;
        match iter.peek() {
            Some(&&next) if digit(next)? > value => total -= value,
            _ => total += value,
        }
    }
    u32::try_from(total).ok().filter(|&v| v > 0)
}

/// First letter of `n` written as a lowercase roman numeral.
fn roman_first_letter(n: u32) -> Option<u8> {
    const TABLE: [(u32, u8); 13] = [
        (1000, b'm'),
        (900, b'c'),
        (500, b'd'),
        (400, b'c'),
        (100, b'c'),
        (90, b'x'),
        (50, b'l'),
        (40, b'x'),
        (10, b'x'),
        (9, b'i'),
        (5, b'v'),
        (4, b'i'),
        (1, b'i'),
    ];
    TABLE.iter().find(|&&(v, _)| n >= v).map(|&(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(s: &str) -> Option<(String, Delimiter, usize)> {
        parse_marker(s.as_bytes(), 0).map(|m| {
            (
                String::from_utf8_lossy(m.label).into_owned(),
                m.delimiter,
                m.end,
            )
        })
    }

    /// Label, delimiter and end of the marker parsed from an input.
    type Parsed<'a> = Option<(&'a str, Delimiter, usize)>;

    #[test]
    fn parses_markers() {
        use Delimiter::*;
        let cases: &[(&str, Parsed<'_>)] = &[
            ("1. The", Some(("1", Period, 2))),
            ("12.) The", Some(("12", PeriodParen, 4))),
            ("3) The", Some(("3", Paren, 2))),
            ("(a) the", Some(("a", Enclosed, 3))),
            ("(iv) the", Some(("iv", Enclosed, 4))),
            ("iv. The", Some(("iv", Period, 3))),
            ("1.2 Definitions", Some(("1", Outline, 3))),
            ("2.1.3. Scope", Some(("2", Outline, 6))),
            ("2.5 million", None),
            ("1.", None),
            ("1990. The", None),
            ("The end", None),
            ("ab. c", None),
            ("5.1(a) x", None),
        ];
        for &(input, expected) in cases {
            let expected = expected.map(|(l, d, e)| (l.to_string(), d, e));
            assert_eq!(marker(input), expected, "{input}");
        }
    }

    #[test]
    fn roman_numerals() {
        assert_eq!(roman_value(b"iv"), Some(4));
        assert_eq!(roman_value(b"ix"), Some(9));
        assert_eq!(roman_value(b"XIV"), Some(14));
        assert_eq!(roman_value(b"mcmxc"), Some(1990));
        assert_eq!(roman_value(b"ab"), None);
        assert_eq!(roman_first_letter(4), Some(b'i'));
        assert_eq!(roman_first_letter(5), Some(b'v'));
        assert_eq!(roman_first_letter(40), Some(b'x'));
    }

    #[test]
    fn lists_continue_with_the_next_item_only() {
        let bytes = b"1. x 2. y 3) z";
        let first = parse_marker(bytes, 0).and_then(|m| ListState::start(&m));
        let Some(list) = first else {
            panic!("\"1.\" starts a list");
        };
        assert_eq!(list.next_first_byte(), Some(b'2'));
        let second = parse_marker(bytes, 5).map(|m| list.is_next(&m));
        assert_eq!(second, Some(true));
        let other_style = parse_marker(bytes, 10).map(|m| list.is_next(&m));
        assert_eq!(other_style, Some(false));
        let upper = parse_marker(b"A. Smith", 0).and_then(|m| ListState::start(&m));
        assert_eq!(upper, None);
    }
}
