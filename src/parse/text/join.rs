//! Joining lines and fragments back into paragraphs.
//!
//! Hard-wrapped lines are joined with a space. A word broken at the end of
//! a line ("com-" / "puter") is rejoined without its hyphen when both parts
//! are lowercase letters and the first part is not a prefix that forms
//! compounds ("non-", "self-", "co-", …): "com-\nputer" → "computer", but
//! "non-\nexclusive" → "non-exclusive" and "Computing-\nTabulating" keeps its
//! hyphen. A kept hyphen is joined without a space.

/// Prefixes that are written with a hyphen ("non-exclusive",
/// "third-party"): a line break after them keeps the hyphen.
const COMPOUND_PREFIXES: &[&str] = &[
    "all", "anti", "co", "counter", "cross", "ex", "first", "full", "half", "high", "inter",
    "intra", "long", "low", "mid", "multi", "non", "one", "over", "post", "pre", "pro", "quasi",
    "re", "second", "self", "semi", "short", "so", "sub", "third", "two", "under", "vice", "well",
];

/// Appends a line (or fragment) to a paragraph's text.
pub(super) fn append_line(text: &mut String, line: &str) {
    let line = line.trim();
    if line.is_empty() {
        return;
    }
    if text.is_empty() {
        text.push_str(line);
        return;
    }
    if let Some(break_) = line_end_hyphen(text) {
        let next = line.chars().next();
        let rejoin = next.is_some_and(char::is_lowercase)
            && !break_.in_compound
            && !break_.stem.is_empty()
            && break_.stem.chars().all(char::is_lowercase)
            && !COMPOUND_PREFIXES.contains(&break_.stem);
        if rejoin {
            text.pop();
        }
        if next.is_some_and(char::is_alphanumeric) {
            text.push_str(line);
            return;
        }
    }
    text.push(' ');
    text.push_str(line);
}

/// A hyphen ending a line right after a letter or digit.
struct LineEndHyphen<'a> {
    /// The letters before the hyphen ("com" for "… com-").
    stem: &'a str,
    /// Whether a hyphen precedes the stem too ("state-of-").
    in_compound: bool,
}

/// The hyphen that ends `text` after a letter or digit, if any; a dash
/// after a space ("word -") or a double hyphen is punctuation.
fn line_end_hyphen(text: &str) -> Option<LineEndHyphen<'_>> {
    let before = text.strip_suffix('-')?;
    if !before
        .chars()
        .next_back()
        .is_some_and(char::is_alphanumeric)
    {
        return None;
    }
    let start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| !c.is_alphabetic())
        .map_or(0, |(i, c)| i + c.len_utf8());
    Some(LineEndHyphen {
        stem: before.get(start..).unwrap_or_default(),
        in_compound: before.get(..start).is_some_and(|b| b.ends_with('-')),
    })
}

/// Words that end a line only when the sentence goes on.
pub(super) const CONNECTORS: &[&str] = &[
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "that",
    "the", "to", "which", "whether", "with",
];

/// Whether a text ends with a word after which its sentence must go on
/// ("… with respect to").
/// A capital "A" is more often a label ("Exhibit A") than an article.
pub(super) fn ends_with_connector(text: &str) -> bool {
    text.split_whitespace()
        .next_back()
        .is_some_and(|word| word != "A" && CONNECTORS.contains(&word.to_lowercase().as_str()))
}

/// Whether a paragraph ends a sentence or a clause: its last character,
/// closing quotes and brackets aside, is `.`, `!`, `?`, `:` or `;`.
pub(super) fn ends_sentence(text: &str) -> bool {
    text.trim_end()
        .trim_end_matches(['"', '\'', '”', '’', ')', ']', '*'])
        .ends_with(['.', '!', '?', ':', ';'])
}

/// Whether a fragment continues the paragraph before it (a page break or a
/// stray blank line split a sentence): it starts with a lowercase letter.
pub(super) fn starts_lowercase(text: &str) -> bool {
    text.trim_start()
        .chars()
        .next()
        .is_some_and(char::is_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(a: &str, b: &str) -> String {
        let mut text = a.to_string();
        append_line(&mut text, b);
        text
    }

    #[test]
    fn lines_join_with_spaces() {
        assert_eq!(
            joined("The Supplier shall", "deliver."),
            "The Supplier shall deliver."
        );
        assert_eq!(joined("", "  first  "), "first");
    }

    #[test]
    fn broken_words_are_dehyphenated() {
        assert_eq!(
            joined("a personal com-", "puter system"),
            "a personal computer system"
        );
        assert_eq!(
            joined("a non-", "exclusive licence"),
            "a non-exclusive licence"
        );
        assert_eq!(joined("a third-", "party"), "a third-party");
        assert_eq!(joined("state-of-", "the-art"), "state-of-the-art");
        assert_eq!(
            joined("the Computing-", "Tabulating-Recording Company"),
            "the Computing-Tabulating-Recording Company"
        );
        assert_eq!(joined("pages 3 -", "4"), "pages 3 - 4");
        assert_eq!(joined("items --", "more"), "items -- more");
        assert_eq!(joined("the years 2024-", "2025"), "the years 2024-2025");
    }

    #[test]
    fn sentence_ends() {
        assert!(ends_sentence("It ends."));
        assert!(ends_sentence("as follows:"));
        assert!(ends_sentence("the \"Agreement\".)"));
        assert!(!ends_sentence("with access to, and"));
        assert!(starts_lowercase("the right to use"));
        assert!(ends_with_connector(
            "CONFIDENTIAL TREATMENT WITH RESPECT TO"
        ));
        assert!(!ends_with_connector("the Company."));
        assert!(!ends_with_connector("as set out in Exhibit A"));
        assert!(!starts_lowercase("The right"));
    }
}
