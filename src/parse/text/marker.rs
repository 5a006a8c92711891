//! Markers at the start of a line: bullets, enumerators and outline numbers.

use super::heading::decimal_depth;

/// How a line's leading marker is written. Bullets and enumerators make
/// list items; outline numbers mark numbered clauses, which stay paragraphs
/// (enrichment reads the clause id from the number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MarkerStyle {
    /// "•", "▪", "-", "*", "o" …
    Bullet,
    /// "(a)", "(iv)", "(1)".
    Parenthesized,
    /// "a)", "iv)", "1)".
    RightParenthesis,
    /// "a.", "iv." (lowercase letters and Roman numerals with a dot).
    LetterDot,
    /// "1.", "5.1", "5.1.2.".
    Outline,
}

impl MarkerStyle {
    /// Whether lines with this marker are list items (when several follow
    /// one another; bullets always are).
    pub(super) fn is_list(self) -> bool {
        !matches!(self, MarkerStyle::Outline)
    }
}

/// A line's leading marker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Marker {
    pub style: MarkerStyle,
    /// The marker as written ("(a)", "•", "5.1").
    pub label: String,
    /// Byte length of the marker and the whitespace after it in the line.
    pub len: usize,
}

/// What a list marker counts in: the same style ("(a)", "(i)") can count
/// letters or Roman numerals, and those are different levels of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sequence {
    Bullet(char),
    Digits,
    LowerLetters,
    UpperLetters,
    LowerRoman,
    UpperRoman,
}

impl Marker {
    /// The sequence the marker counts in. "(i)", "(v)" and "(x)" are Roman
    /// numerals unless they follow "(h)", "(u)" or "(w)".
    pub(super) fn sequence(&self, previous: Option<&Marker>) -> Sequence {
        let core = |label: &str| {
            label
                .trim_start_matches('(')
                .trim_end_matches([')', '.'])
                .to_string()
        };
        let inner = core(&self.label);
        let mut chars = inner.chars();
        let (Some(first), rest) = (chars.next(), chars.as_str()) else {
            return Sequence::Digits;
        };
        if self.style == MarkerStyle::Bullet {
            return Sequence::Bullet(first);
        }
        if first.is_ascii_digit() {
            return Sequence::Digits;
        }
        let follows_letter_before = previous.is_some_and(|p| {
            let prev = core(&p.label);
            let mut prev_chars = prev.chars();
            match (prev_chars.next(), prev_chars.next()) {
                (Some(prev), None) => u32::from(prev) + 1 == u32::from(first),
                _ => false,
            }
        });
        let roman = is_lower_roman(&inner.to_ascii_lowercase())
            && (!rest.is_empty() || !follows_letter_before);
        match (roman, first.is_ascii_uppercase()) {
            (true, false) => Sequence::LowerRoman,
            (true, true) => Sequence::UpperRoman,
            (false, false) => Sequence::LowerLetters,
            (false, true) => Sequence::UpperLetters,
        }
    }
}

/// Bullet characters that need no space after them.
const BULLETS: &[char] = &[
    '•', '◦', '▪', '▫', '●', '○', '■', '□', '‣', '⁃', '∙', '·', '➢', '►',
    // Wingdings bullets left by PDF and Word converters.
    '\u{f0b7}', '\u{f0a7}',
];

/// Bullet characters that are bullets only when a space follows ("-",
/// "*", "o", "–").
const SPACED_BULLETS: &[char] = &['-', '*', 'o', '–', '+'];

impl Marker {
    /// Whether the marker is a bullet that ordinary prose never starts a
    /// line with ("•", but not "-" or "o"), so that it starts a new item
    /// even after a line without final punctuation.
    pub(super) fn is_unambiguous_bullet(&self) -> bool {
        self.style == MarkerStyle::Bullet && !self.label.starts_with(SPACED_BULLETS)
    }
}

/// The marker at the start of `text` (already without indentation), if any.
pub(super) fn leading(text: &str) -> Option<Marker> {
    let first = text.chars().next()?;
    let (token, after) = match text.find(char::is_whitespace) {
        Some(end) => (&text[..end], &text[end..]),
        None => (text, ""),
    };
    if BULLETS.contains(&first) {
        // "•Item" has no space after its bullet.
        let rest = text[first.len_utf8()..].trim_start();
        if rest.is_empty() {
            return None;
        }
        return Some(Marker {
            style: MarkerStyle::Bullet,
            label: first.to_string(),
            len: text.len() - rest.len(),
        });
    }
    let body = after.trim_start();
    if body.is_empty() {
        return None;
    }
    let len = text.len() - body.len();
    let marker = |style| {
        Some(Marker {
            style,
            label: token.to_string(),
            len,
        })
    };
    if token.chars().count() == 1 && SPACED_BULLETS.contains(&first) {
        return marker(MarkerStyle::Bullet);
    }
    if let Some(inner) = token.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        return is_enumerator(inner).then(|| marker(MarkerStyle::Parenthesized))?;
    }
    if let Some(inner) = token.strip_suffix(')') {
        return is_enumerator(inner).then(|| marker(MarkerStyle::RightParenthesis))?;
    }
    if decimal_depth(token).is_some() && token.contains('.') {
        return marker(MarkerStyle::Outline);
    }
    if let Some(inner) = token.strip_suffix('.')
        && !inner.is_empty()
        && (inner.chars().count() == 1 || is_lower_roman(inner))
        && inner.chars().all(|c| c.is_ascii_lowercase())
    {
        return marker(MarkerStyle::LetterDot);
    }
    None
}

/// "a", "B", "iv", "12": a letter, a Roman numeral or a small number.
fn is_enumerator(inner: &str) -> bool {
    let letter = inner.chars().count() == 1 && inner.chars().all(|c| c.is_ascii_alphabetic());
    let number = !inner.is_empty() && inner.len() <= 3 && inner.bytes().all(|b| b.is_ascii_digit());
    letter || number || is_lower_roman(inner) || is_lower_roman(&inner.to_ascii_lowercase())
}

fn is_lower_roman(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 6
        && token
            .chars()
            .all(|c| matches!(c, 'i' | 'v' | 'x' | 'l' | 'c'))
}

/// Whether a line is nothing but a marker ("1.", "5.1", "(a)", "•"): in a
/// flattened line the gap after it is alignment, not a paragraph break. A
/// bare integer is not one: in flattened contents pages it is a page
/// number.
pub(super) fn is_bare(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty()
        && !text.contains(char::is_whitespace)
        && leading(&format!("{text} x")).is_some_and(|m| m.len == text.len() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn style(text: &str) -> Option<MarkerStyle> {
        leading(text).map(|m| m.style)
    }

    #[test]
    fn bullets_and_enumerators() {
        assert_eq!(style("• Item"), Some(MarkerStyle::Bullet));
        assert_eq!(style("•Item"), Some(MarkerStyle::Bullet));
        assert_eq!(style("- item"), Some(MarkerStyle::Bullet));
        assert_eq!(style("o Wear sunglasses"), Some(MarkerStyle::Bullet));
        assert_eq!(style("(a) the Company"), Some(MarkerStyle::Parenthesized));
        assert_eq!(style("(iv) any"), Some(MarkerStyle::Parenthesized));
        assert_eq!(style("a) first"), Some(MarkerStyle::RightParenthesis));
        assert_eq!(style("1) first"), Some(MarkerStyle::RightParenthesis));
        assert_eq!(style("b. second"), Some(MarkerStyle::LetterDot));
        assert_eq!(style("5.1 Payment"), Some(MarkerStyle::Outline));
        assert_eq!(style("1. Scope"), Some(MarkerStyle::Outline));
        let marker = leading("(a)   the Company").expect("marker");
        assert_eq!(marker.label, "(a)");
        assert_eq!(&"(a)   the Company"[marker.len..], "the Company");
    }

    #[test]
    fn ordinary_words_are_not_markers() {
        assert_eq!(style("one of them"), None);
        assert_eq!(style("-dash"), None);
        assert_eq!(style("2024 results"), None);
        assert_eq!(style("(see above) text"), None);
        assert_eq!(style("e.g. this"), None);
        assert_eq!(style("(a)"), None);
    }

    #[test]
    fn sequences_tell_letters_from_roman_numerals() {
        let marker = |text: &str| leading(&format!("{text} x")).expect("marker");
        let (h, i, ii, a) = (marker("(h)"), marker("(i)"), marker("(ii)"), marker("(a)"));
        assert_eq!(i.sequence(Some(&h)), Sequence::LowerLetters);
        assert_eq!(i.sequence(Some(&a)), Sequence::LowerRoman);
        assert_eq!(i.sequence(None), Sequence::LowerRoman);
        assert_eq!(ii.sequence(Some(&i)), Sequence::LowerRoman);
        assert_eq!(a.sequence(None), Sequence::LowerLetters);
        assert_eq!(marker("B)").sequence(None), Sequence::UpperLetters);
        assert_eq!(marker("12)").sequence(None), Sequence::Digits);
        assert_eq!(marker("•").sequence(None), Sequence::Bullet('•'));
    }

    #[test]
    fn bare_markers() {
        assert!(is_bare("1."));
        assert!(is_bare("(a)"));
        assert!(is_bare("5.1"));
        assert!(!is_bare("4"));
        assert!(!is_bare("Definitions."));
        assert!(!is_bare("1. Definitions"));
    }
}
