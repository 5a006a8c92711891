//! Roman numerals, as outlines number articles, clauses and list items.
//!
//! Shared by the parsers that render list and heading numbers (DOCX, HTML)
//! and by enrichment, which matches "Article V" against "ARTICLE 5".

/// The value of a canonical Roman numeral ("IV" → 4, "xii" → 12), or `None`
/// when `text` is not one. Non-canonical spellings ("IIII", "VX") are
/// rejected, so that ordinary words made of the letters I, V, X, L, C, D, M
/// ("DIM", "MIX") do not pass for numbers.
pub fn roman_value(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 15 {
        return None;
    }
    let mut total = 0u32;
    let mut previous = 0u32;
    for ch in text.chars().rev() {
        let value = match ch.to_ascii_uppercase() {
            'I' => 1,
            'V' => 5,
            'X' => 10,
            'L' => 50,
            'C' => 100,
            'D' => 500,
            'M' => 1000,
            _ => return None,
        };
        if value < previous {
            total = total.checked_sub(value)?;
        } else {
            total += value;
            previous = value;
        }
    }
    (total > 0 && roman_digits(total).eq_ignore_ascii_case(text)).then_some(total)
}

/// The canonical upper-case Roman numeral of `value`, for 1 to 3999 (the
/// numbers Roman numerals can write without overlines).
pub fn to_roman(value: u32) -> Option<String> {
    (1..4000).contains(&value).then(|| roman_digits(value))
}

fn roman_digits(mut value: u32) -> String {
    const DIGITS: [(u32, &str); 13] = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut out = String::new();
    for (step, digits) in DIGITS {
        while value >= step {
            out.push_str(digits);
            value -= step;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roman_numerals_are_canonical() {
        assert_eq!(roman_value("V"), Some(5));
        assert_eq!(roman_value("xiv"), Some(14));
        assert_eq!(roman_value("MCMXCIX"), Some(1999));
        assert_eq!(roman_value("IIII"), None);
        assert_eq!(roman_value("VX"), None);
        assert_eq!(roman_value("MIX"), Some(1009));
        assert_eq!(roman_value("DIM"), None);
        assert_eq!(roman_value(""), None);
        assert_eq!(roman_value("A"), None);
    }

    #[test]
    fn numbers_become_roman_numerals() {
        assert_eq!(to_roman(4).as_deref(), Some("IV"));
        assert_eq!(to_roman(1999).as_deref(), Some("MCMXCIX"));
        assert_eq!(to_roman(0), None);
        assert_eq!(to_roman(4000), None);
    }
}
