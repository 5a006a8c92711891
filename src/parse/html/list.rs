//! List containers and their item markers: `-` for bullets, `3.`, `c.`,
//! `iv.` for ordered lists as the `start`, `type`, `reversed` and `value`
//! attributes number them.

/// How a list numbers its items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Numbering {
    /// `<ul>`, `<menu>`, `<dir>` and description lists.
    Bullet,
    Decimal,
    LowerAlpha,
    UpperAlpha,
    LowerRoman,
    UpperRoman,
}

impl Numbering {
    /// The numbering an `<ol type="…">` asks for (decimal when absent or
    /// unknown). The attribute is case-sensitive: `a` and `A` differ.
    pub(super) fn from_type(list_type: Option<&str>) -> Self {
        match list_type.map(str::trim) {
            Some("a") => Numbering::LowerAlpha,
            Some("A") => Numbering::UpperAlpha,
            Some("i") => Numbering::LowerRoman,
            Some("I") => Numbering::UpperRoman,
            _ => Numbering::Decimal,
        }
    }
}

/// An open list container while the walk is inside it.
#[derive(Debug)]
pub(super) struct OpenList {
    numbering: Numbering,
    /// The ordinal of the next item.
    next: i64,
    /// +1, or -1 for `<ol reversed>`.
    step: i64,
    /// Whether this is a description list (`<dl>`).
    pub(super) description: bool,
    /// For a description list: whether a term (`<dt>`) has been seen, so
    /// that descriptions nest under it.
    pub(super) saw_term: bool,
}

impl OpenList {
    /// An ordered or bullet list. `start` is the `start` attribute; a
    /// reversed list without one counts down from its number of items.
    pub(super) fn new(
        numbering: Numbering,
        start: Option<i64>,
        reversed: bool,
        items: usize,
    ) -> Self {
        let step = if reversed { -1 } else { 1 };
        let default_start = if reversed {
            i64::try_from(items).unwrap_or(i64::MAX)
        } else {
            1
        };
        Self {
            numbering,
            next: start.unwrap_or(default_start),
            step,
            description: false,
            saw_term: false,
        }
    }

    /// A description list (`<dl>`): its terms and descriptions are bullets.
    pub(super) fn description() -> Self {
        Self {
            description: true,
            ..Self::new(Numbering::Bullet, None, false, 0)
        }
    }

    /// The marker of the next item; `value` is the item's own `value`
    /// attribute, which also renumbers the items after it.
    pub(super) fn next_marker(&mut self, value: Option<i64>) -> String {
        let ordinal = value.unwrap_or(self.next);
        self.next = ordinal.saturating_add(self.step);
        marker(self.numbering, ordinal)
    }
}

/// Renders an item's marker.
pub(super) fn marker(numbering: Numbering, ordinal: i64) -> String {
    let label = match numbering {
        Numbering::Bullet => return "-".to_string(),
        Numbering::Decimal => None,
        Numbering::LowerAlpha => alphabetic(ordinal),
        Numbering::UpperAlpha => alphabetic(ordinal).map(|s| s.to_ascii_uppercase()),
        Numbering::LowerRoman => roman(ordinal),
        Numbering::UpperRoman => roman(ordinal).map(|s| s.to_ascii_uppercase()),
    };
    // Ordinals a numbering cannot write (zero, negatives, huge romans)
    // fall back to decimal, as browsers do.
    let label = label.unwrap_or_else(|| ordinal.to_string());
    format!("{label}.")
}

/// a, b, …, z, aa, ab, … (bijective base 26, as CSS `lower-alpha`).
fn alphabetic(ordinal: i64) -> Option<String> {
    if ordinal < 1 {
        return None;
    }
    let mut n = ordinal;
    let mut letters = Vec::new();
    while n > 0 {
        n -= 1;
        let letter = u8::try_from(n % 26).ok()?;
        letters.push(b'a' + letter);
        n /= 26;
    }
    letters.reverse();
    String::from_utf8(letters).ok()
}

/// Lower-case roman numerals for 1 to 3999.
fn roman(ordinal: i64) -> Option<String> {
    u32::try_from(ordinal)
        .ok()
        .and_then(crate::parse::numerals::to_roman)
        .map(|r| r.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_follow_the_list_type() {
        assert_eq!(marker(Numbering::Bullet, 7), "-");
        assert_eq!(marker(Numbering::Decimal, 42), "42.");
        assert_eq!(marker(Numbering::LowerAlpha, 1), "a.");
        assert_eq!(marker(Numbering::LowerAlpha, 27), "aa.");
        assert_eq!(marker(Numbering::UpperAlpha, 28), "AB.");
        assert_eq!(marker(Numbering::LowerRoman, 4), "iv.");
        assert_eq!(marker(Numbering::UpperRoman, 1994), "MCMXCIV.");
        assert_eq!(marker(Numbering::LowerRoman, 0), "0.");
        assert_eq!(marker(Numbering::UpperAlpha, -3), "-3.");
    }

    #[test]
    fn start_value_and_reversed_number_items() {
        let mut list = OpenList::new(Numbering::Decimal, Some(42), false, 3);
        assert_eq!(list.next_marker(None), "42.");
        assert_eq!(list.next_marker(None), "43.");
        assert_eq!(list.next_marker(Some(10)), "10.");
        assert_eq!(list.next_marker(None), "11.");
        let mut reversed = OpenList::new(Numbering::Decimal, None, true, 3);
        assert_eq!(reversed.next_marker(None), "3.");
        assert_eq!(reversed.next_marker(None), "2.");
    }

    #[test]
    fn extreme_ordinals_do_not_overflow() {
        let mut list = OpenList::new(Numbering::LowerAlpha, Some(i64::MAX), false, 0);
        assert!(!list.next_marker(None).is_empty());
        assert!(!list.next_marker(None).is_empty());
        assert_eq!(marker(Numbering::LowerAlpha, i64::MAX).len(), 15);
    }
}
