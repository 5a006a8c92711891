//! Numbers of sections, clauses and annexes, normalised so that the way a
//! reference writes a number matches the way a heading or clause writes it:
//! "5.1." and "5.1", "ARTICLE V" and "Article 5", "(b)", "b)" and "b.".

pub use crate::parse::numerals::roman_value;

/// How Roman-looking designators are read when normalising.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Romans {
    /// Any canonical Roman numeral is a number: sections, articles, parts
    /// ("Article V" is Article 5).
    Numbers,
    /// Single letters are letters ("Exhibit C", "Schedule D"); longer Roman
    /// numerals are numbers ("Schedule II" is Schedule 2).
    AfterFirstLetter,
}

/// The matching key of a designator as written: "5.1." → "5.1", "V" →
/// "5" (per `romans`), "5.1(A)(ii)" → "5.1(a)(ii)", "A-1" → "a-1",
/// "b)" / "b." / "(b)" → "(b)".
///
/// Only the leading part is read as a Roman numeral; parenthesised parts
/// keep their letters, since "(i)" there is as often a letter as a number.
pub fn designator_key(written: &str, romans: Romans) -> String {
    let written = written.trim().trim_end_matches(['.', ':', ',']);
    // A bare sub-clause marker: "b)" → "(b)", "(b)" stays.
    if let Some(inner) = written.strip_suffix(')')
        && !inner.contains('(')
    {
        return format!("({})", inner.to_ascii_lowercase());
    }
    let (head, parts) = match written.find('(') {
        Some(at) => written.split_at(at),
        None => (written, ""),
    };
    let head_is_roman = match romans {
        Romans::Numbers => true,
        Romans::AfterFirstLetter => head.len() > 1,
    };
    let head = match roman_value(head).filter(|_| head_is_roman) {
        Some(value) => value.to_string(),
        None => head.to_ascii_lowercase(),
    };
    let mut key = head;
    key.push_str(&parts.to_ascii_lowercase());
    key
}

/// A sub-clause marker written as "b." (the form some contracts use for
/// lettered paragraphs) in key form "(b)".
pub fn marker_key(marker: &str) -> String {
    let inner = marker
        .trim()
        .trim_start_matches('(')
        .trim_end_matches([')', '.']);
    format!("({})", inner.to_ascii_lowercase())
}

/// Whether a designator key is made only of parenthesised parts: "(b)",
/// "(b)(ii)".
pub fn is_parenthesised(key: &str) -> bool {
    key.starts_with('(')
}

/// The key without its last parenthesised part: "5.1(a)(ii)" → "5.1(a)",
/// "5.1(a)" → "5.1", "5.1" → `None`.
pub fn parent_key(key: &str) -> Option<&str> {
    let at = key.rfind('(').filter(|&at| at > 0)?;
    Some(&key[..at])
}

/// Whether a designator looks like an outline number ("5", "5.1", "10.2")
/// rather than a letter or a keyword label; only those combine with
/// sub-clause markers ("5.1" + "(a)" → "5.1(a)").
pub fn is_outline_number(written: &str) -> bool {
    let written = written.trim_end_matches('.');
    !written.is_empty()
        && written
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_across_spellings() {
        assert_eq!(designator_key("5.1.", Romans::Numbers), "5.1");
        assert_eq!(designator_key("V", Romans::Numbers), "5");
        assert_eq!(designator_key("5", Romans::Numbers), "5");
        assert_eq!(designator_key("5.1(A)(ii)", Romans::Numbers), "5.1(a)(ii)");
        assert_eq!(designator_key("b)", Romans::Numbers), "(b)");
        assert_eq!(designator_key("(b)", Romans::Numbers), "(b)");
        assert_eq!(designator_key("C", Romans::AfterFirstLetter), "c");
        assert_eq!(designator_key("II", Romans::AfterFirstLetter), "2");
        assert_eq!(designator_key("A-1", Romans::AfterFirstLetter), "a-1");
        assert_eq!(marker_key("b."), "(b)");
    }

    #[test]
    fn parents_and_outline_numbers() {
        assert_eq!(parent_key("5.1(a)(ii)"), Some("5.1(a)"));
        assert_eq!(parent_key("5.1(a)"), Some("5.1"));
        assert_eq!(parent_key("5.1"), None);
        assert_eq!(parent_key("(a)"), None);
        assert!(is_outline_number("5.1."));
        assert!(is_outline_number("12"));
        assert!(!is_outline_number("ARTICLE V"));
        assert!(!is_outline_number("A."));
        assert!(!is_outline_number("5..1"));
    }
}
