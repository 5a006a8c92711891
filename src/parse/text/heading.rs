//! Which lines of plain text are headings.
//!
//! Plain text has no markup, so a heading is recognised by its shape: a
//! division keyword with a label ("ARTICLE V", "Section 2.1 Scope",
//! "EXHIBIT B"), an outline number before a short title ("5.1 Payment",
//! "1. HDI's Responsibilities."), or a short line in capitals ("RECITALS").
//! The hard part is what is *not* a heading: a numbered clause ("1.1 HDI
//! shall design, develop, …") starts a sentence, a table-of-contents entry
//! ends with a page number, a party's name in a signature block is in
//! capitals too. Each rule below exists for one of those.

use super::join::{CONNECTORS, ends_with_connector};
use crate::parse::collapse_whitespace;

/// Longest line (in characters) taken for a heading.
pub(super) const MAX_HEADING_CHARS: usize = 100;

/// Most words a heading's title may have.
const MAX_TITLE_WORDS: usize = 12;

/// Most words of a title written in sentence case ("Limitation of
/// liability"); longer sentence-case lines are sentences.
const MAX_SENTENCE_CASE_WORDS: usize = 4;

/// What kind of heading a line is; the outline level follows from it and
/// from the headings before it (see `Outline` in the parent module).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum HeadingKind {
    /// "ARTICLE V", "Chapter 2", "Part B": the top of an outline.
    Division,
    /// "Section 2.1 Scope"; `depth` is the number's depth (2 for "2.1").
    Section { depth: u8 },
    /// "SCHEDULE A", "EXHIBIT B", "Appendix 1", "Annex", "Attachment",
    /// "Addendum": a part appended to the main document.
    Annex,
    /// "5.1 Payment", "IV. Remedies", "A. Scope"; `depth` from the number
    /// (5.1.2 → 3; Roman numerals 1, letters 2).
    Numbered { depth: u8 },
    /// A short line in capitals: "RECITALS", "SITE DEVELOPMENT AGREEMENT".
    Capitals,
    /// "Table of Contents", "CONTENTS Page".
    Contents,
    /// A line underlined by the next one: `=====` (`double`) or `-----`.
    Underlined { double: bool },
}

impl HeadingKind {
    /// Whether the heading belongs to the document's numbered outline, after
    /// which unnumbered capital headings nest one level down. Annexes do
    /// not count: filings start with an "EXHIBIT 10.2" label above the
    /// document's title.
    pub(super) fn is_outline(self) -> bool {
        matches!(
            self,
            HeadingKind::Division | HeadingKind::Section { .. } | HeadingKind::Numbered { .. }
        )
    }
}

/// A line recognised as a heading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct HeadingLine {
    pub kind: HeadingKind,
    /// The heading as written, whitespace collapsed ("CONTENTS Page"
    /// becomes "CONTENTS").
    pub text: String,
    /// Whether there is a title after the label ("ARTICLE V" has none;
    /// the next line often carries it).
    pub has_title: bool,
}

/// Classifies one line (or segment of a line).
pub(super) fn classify(line: &str) -> Option<HeadingLine> {
    // Cheap refusal before any copying: callers pass whole paragraphs too.
    // (Bytes, generous for multi-byte characters and wide gaps.)
    if line.len() > 4 * MAX_HEADING_CHARS {
        return None;
    }
    let text = collapse_whitespace(line);
    if text.is_empty() || text.chars().count() > MAX_HEADING_CHARS {
        return None;
    }
    if let Some(contents) = contents_heading(&text) {
        return Some(HeadingLine {
            kind: HeadingKind::Contents,
            text: contents.to_string(),
            has_title: true,
        });
    }
    let mut words = text.splitn(2, ' ');
    let first = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default();

    if let Some(kind) = division_keyword(first) {
        // A keyword without a label is an ordinary word ("Section headings
        // are for convenience only") unless the line is in capitals.
        let mut rest_words = rest.splitn(2, ' ');
        let label = rest_words.next().unwrap_or_default();
        if is_division_label(label) {
            let title = rest_words
                .next()
                .unwrap_or_default()
                .trim_start_matches(['-', '–', '—', ':', '.', ' ']);
            if title.is_empty() {
                let kind = kind.with_depth(label);
                return Some(HeadingLine {
                    kind,
                    text,
                    has_title: false,
                });
            }
            if ends_with_page_reference(title) {
                // "ARTICLE 1 DEFINITIONS 2": an entry of a table of contents.
                return None;
            }
            if is_title(title) || is_capitals(title) {
                return Some(HeadingLine {
                    kind: kind.with_depth(label),
                    text,
                    has_title: true,
                });
            }
            return None;
        }
    }

    if let Some(depth) = outline_number_depth(first) {
        // "500 Woodward Avenue" is an address; "4 ARTICLE II …" and
        // "22 10. PRICES" are page numbers of a flattened contents page.
        let plain_integer = first.bytes().all(|b| b.is_ascii_digit());
        let rest_first = rest.split(' ').next().unwrap_or_default();
        if rest.is_empty()
            || ends_with_page_reference(rest)
            || (plain_integer && first.len() > 2)
            || outline_number_depth(rest_first).is_some()
            || division_keyword(rest_first).is_some()
        {
            return None;
        }
        if is_title(rest) || is_capitals(rest) {
            return Some(HeadingLine {
                kind: HeadingKind::Numbered { depth },
                text,
                has_title: true,
            });
        }
        return None;
    }

    if is_capitals(&text)
        && !ends_with_page_reference(&text)
        && !is_party_name(&text)
        && !is_signature_line(&text)
    {
        return Some(HeadingLine {
            kind: HeadingKind::Capitals,
            text,
            has_title: true,
        });
    }
    None
}

/// Whether a line may be a heading underlined by the next line
/// ("Title\n=====" in plain text): short, one phrase, not the end of a
/// clause, and not a form field ("By: /s/ Jane Doe" above a signature
/// line).
pub(super) fn is_underlinable(line: &str) -> bool {
    if line.len() > 4 * MAX_HEADING_CHARS {
        return false;
    }
    let text = collapse_whitespace(line);
    !text.is_empty()
        && text.chars().count() <= MAX_HEADING_CHARS
        && text.chars().any(char::is_alphanumeric)
        && !text.ends_with([',', ';'])
        && !has_sentence_break(&text)
        && !is_signature_line(&text)
}

/// Division keywords and the kind of heading they open.
pub(super) fn division_keyword(word: &str) -> Option<HeadingKind> {
    let word = word.trim_end_matches([':', '.']);
    if word == "§" {
        return Some(HeadingKind::Section { depth: 1 });
    }
    // Every other keyword is short ASCII: lower-case it on the stack.
    let mut buffer = [0u8; 10];
    let lower = buffer.get_mut(..word.len()).filter(|_| word.is_ascii())?;
    lower.copy_from_slice(word.as_bytes());
    lower.make_ascii_lowercase();
    Some(match &*lower {
        b"article" | b"chapter" | b"part" => HeadingKind::Division,
        b"section" => HeadingKind::Section { depth: 1 },
        b"schedule" | b"exhibit" | b"appendix" | b"annex" | b"attachment" | b"addendum" => {
            HeadingKind::Annex
        }
        _ => return None,
    })
}

impl HeadingKind {
    fn with_depth(self, label: &str) -> HeadingKind {
        match self {
            HeadingKind::Section { .. } => HeadingKind::Section {
                depth: decimal_depth(label).unwrap_or(1),
            },
            kind => kind,
        }
    }
}

/// The label after a division keyword: "V", "5", "2.1", "A", "10.14",
/// "99(k)(5)", "10(xiv)", "1A" — short, and a number, a Roman numeral or a
/// single letter at heart.
fn is_division_label(label: &str) -> bool {
    let label = label.trim_end_matches([':', '.', ')', '-', '–', '—']);
    if label.is_empty() || label.chars().count() > 12 {
        return false;
    }
    if !label
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '(' | ')' | '-'))
    {
        return false;
    }
    let has_digit = label.chars().any(|c| c.is_ascii_digit());
    let single_letter = label.chars().count() == 1;
    has_digit || single_letter || is_roman(label)
}

/// Depth of an outline number at the start of a line, or `None` when the
/// token is not one: "5" and "5." → 1, "5.1" → 2, "12.01.1.3" → 4; Roman
/// numerals with a dot ("IV.") → 1; a capital letter with a dot ("A.") → 2.
fn outline_number_depth(token: &str) -> Option<u8> {
    if let Some(depth) = decimal_depth(token) {
        return Some(depth);
    }
    let stripped = token.strip_suffix('.')?;
    if stripped.chars().count() == 1 && stripped.chars().all(|c| c.is_ascii_uppercase()) {
        return Some(2);
    }
    (is_roman(stripped) && stripped.chars().all(|c| c.is_ascii_uppercase())).then_some(1)
}

/// "5" → 1, "5." → 1, "5.1" → 2, "5.1." → 2; parts of one to three digits
/// (so that years and amounts are not outline numbers).
pub(super) fn decimal_depth(token: &str) -> Option<u8> {
    let body = token.strip_suffix('.').unwrap_or(token);
    if body.is_empty() {
        return None;
    }
    let mut depth = 0u8;
    for part in body.split('.') {
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        depth = depth.saturating_add(1);
    }
    Some(depth)
}

fn is_roman(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 7
        && token.chars().all(|c| {
            matches!(
                c.to_ascii_uppercase(),
                'I' | 'V' | 'X' | 'L' | 'C' | 'D' | 'M'
            )
        })
}

/// "Table of Contents", "CONTENTS", "TABLE OF CONTENTS Page": the heading
/// without the column label "Page".
fn contents_heading(text: &str) -> Option<&str> {
    let lower = text.to_lowercase();
    let mut end = text.len();
    for suffix in [" page no.", " page", " pages"] {
        if lower.ends_with(suffix) {
            end = text.len() - suffix.len();
            break;
        }
    }
    let head = text.get(..end)?.trim_end_matches([':', '.']);
    matches!(
        head.to_lowercase().as_str(),
        "contents" | "table of contents"
    )
    .then_some(head)
}

/// Small words that stay lowercase in a title ("Representations and
/// Warranties of the Agent").
const TITLE_SMALL_WORDS: &[&str] = &[
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "its", "of", "on", "or",
    "per", "the", "to", "upon", "under", "via", "vs", "with", "and/or", "this", "these", "each",
    "any", "all", "other", "such",
];

/// Verbs that make a short line a sentence rather than a title.
const SENTENCE_VERBS: &[&str] = &[
    "shall",
    "will",
    "may",
    "must",
    "is",
    "are",
    "means",
    "mean",
    "agrees",
    "has",
    "have",
    "be",
    "warrants",
    "represents",
];

/// A title: short, one phrase (no sentence break), not ending mid-clause,
/// and in title case ("HDI's Responsibilities.") or, when very short, in
/// sentence case ("Limitation of liability").
pub(super) fn is_title(text: &str) -> bool {
    let text = text.trim();
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() || words.len() > MAX_TITLE_WORDS || has_sentence_break(text) {
        return false;
    }
    if words
        .iter()
        .any(|w| SENTENCE_VERBS.contains(&bare_word(w).as_str()))
    {
        return false;
    }
    if text.ends_with([',', ';']) || ends_with_connector(text) {
        return false;
    }
    let Some(first) = words.iter().find(|w| w.chars().any(char::is_alphabetic)) else {
        return false;
    };
    if !starts_uppercase(first) {
        return false;
    }
    if lowercase_words(&words) == 0 {
        return true;
    }
    words.len() <= MAX_SENTENCE_CASE_WORDS && !text.ends_with(':')
}

/// A title in title case: every word capitalised but the small ones
/// ("Representations and Warranties of the Agent"), no sentence verb, and
/// not ending on a connector. Stricter than [`is_title`], for titles run
/// into the text that follows them.
pub(super) fn is_title_case(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    let Some(first) = words.first() else {
        return false;
    };
    starts_uppercase(first)
        && lowercase_words(&words) == 0
        && !ends_with_connector(text)
        && !words
            .iter()
            .any(|w| SENTENCE_VERBS.contains(&bare_word(w).as_str()))
}

/// Words written in lower case that a title would capitalise.
fn lowercase_words(words: &[&str]) -> usize {
    words
        .iter()
        .filter(|w| {
            // The case as written: `bare_word` lower-cases.
            w.chars()
                .find(|c| c.is_alphanumeric())
                .is_some_and(char::is_lowercase)
                && !TITLE_SMALL_WORDS.contains(&bare_word(w).as_str())
        })
        .count()
}

/// A line in capitals: at least two letters, no more than one cased letter
/// in ten lowercase, and not the end of a clause or a sentence in full.
fn is_capitals(text: &str) -> bool {
    let text = text.trim();
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() || words.len() > MAX_TITLE_WORDS {
        return false;
    }
    let (mut upper, mut lower) = (0usize, 0usize);
    for c in text.chars() {
        if c.is_uppercase() {
            upper += 1;
        } else if c.is_lowercase() {
            lower += 1;
        }
    }
    if upper < 2 || lower * 10 > upper + lower {
        return false;
    }
    // "66049:53214:DALLAS:277267.9", ". [TBD]": letters make less than
    // two thirds of the line.
    let visible = text.chars().filter(|c| !c.is_whitespace()).count();
    if 3 * (upper + lower) < 2 * visible {
        return false;
    }
    if words
        .iter()
        .any(|w| SENTENCE_VERBS.contains(&bare_word(w).as_str()))
    {
        return false;
    }
    if text.ends_with([',', ';']) || ends_with_connector(text) {
        return false;
    }
    // "[SIGNATURE PAGE FOLLOWS]", "WATER EXTRACTOR [*****]": notes and
    // redacted table rows.
    if text.contains(['[', ']']) {
        return false;
    }
    // "AND", "BETWEEN:", "BY AND BETWEEN" introduce parties; they are not
    // headings.
    words
        .iter()
        .any(|w| !CONNECTORS.contains(&bare_word(w).as_str()) && bare_word(w) != "between")
}

/// Legal-entity suffixes: a capitals line ending with one names a party
/// (cover pages, signature blocks), not a section.
const ENTITY_SUFFIXES: &[&str] = &[
    "inc",
    "incorporated",
    "llc",
    "l.l.c",
    "ltd",
    "limited",
    "corp",
    "corporation",
    "co",
    "lp",
    "l.p",
    "llp",
    "plc",
    "n.a",
    "s.a",
    "gmbh",
    "ag",
    "n.v",
    "b.v",
];

fn is_party_name(text: &str) -> bool {
    text.split_whitespace()
        .next_back()
        .is_some_and(|last| ENTITY_SUFFIXES.contains(&bare_word(last).as_str()))
}

/// Labels of the fields of a signature block or form.
const FORM_LABELS: &[&str] = &[
    "by:",
    "name:",
    "title:",
    "date:",
    "its:",
    "attn:",
    "attention:",
    "tel:",
    "fax:",
    "email:",
    "e-mail:",
    "phone:",
    "telephone:",
];

/// Lines of a signature block or form: "/s/ Jane Doe", "NAME:", "By: ____",
/// "JOHN V. SMITH" (a name with a middle initial).
fn is_signature_line(text: &str) -> bool {
    let lower = text.to_lowercase();
    if lower.contains("/s/") {
        return true;
    }
    let words: Vec<&str> = lower.split_whitespace().collect();
    if words.iter().any(|w| FORM_LABELS.contains(w)) {
        return true;
    }
    // A person's name: three or four words with an initial in the middle.
    let middle = match words.as_slice() {
        [_, middle @ .., _] if (1..=2).contains(&middle.len()) => middle,
        _ => return false,
    };
    middle.iter().any(|w| {
        let mut chars = w.chars();
        matches!(
            (chars.next(), chars.next(), chars.next()),
            (Some(c), Some('.'), None) if c.is_alphabetic()
        )
    })
}

/// "Definitions 2", "Term ........ 18", "Service Fees ii": a line that
/// ends with a page number after its title.
fn ends_with_page_reference(text: &str) -> bool {
    let mut words = text.split_whitespace().rev();
    let (Some(last), Some(_)) = (words.next(), words.next()) else {
        return false;
    };
    let digits = !last.is_empty() && last.len() <= 4 && last.bytes().all(|b| b.is_ascii_digit());
    let roman = last.len() <= 5 && last.chars().all(|c| matches!(c, 'i' | 'v' | 'x'));
    digits || roman
}

/// ". " after a word of three or more letters with lowercase in it ("Act.
/// The …") ends a sentence; "U.S. Sales" does not.
fn has_sentence_break(text: &str) -> bool {
    let body = text.trim_end_matches(['.', ':']);
    body.match_indices(". ").any(|(i, _)| {
        let before = &body[..i];
        let word = before.rsplit(' ').next().unwrap_or(before);
        word.chars().filter(|c| c.is_alphabetic()).count() >= 3
            && word.chars().any(char::is_lowercase)
    })
}

fn starts_uppercase(word: &str) -> bool {
    word.chars()
        .find(|c| c.is_alphanumeric())
        .is_some_and(|c| c.is_uppercase() || c.is_numeric())
}

/// A word lowercased, without surrounding punctuation.
fn bare_word(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(line: &str) -> Option<HeadingKind> {
        classify(line).map(|h| h.kind)
    }

    #[test]
    fn division_keywords_with_labels() {
        assert_eq!(kind("ARTICLE V"), Some(HeadingKind::Division));
        assert_eq!(kind("ARTICLE 5 — TERM"), Some(HeadingKind::Division));
        assert_eq!(kind("Chapter 2: Scope"), Some(HeadingKind::Division));
        assert_eq!(
            kind("Section 2.1 Scope"),
            Some(HeadingKind::Section { depth: 2 })
        );
        assert_eq!(
            kind("SECTION 1 DEFINITIONS"),
            Some(HeadingKind::Section { depth: 1 })
        );
        assert_eq!(kind("SCHEDULE A"), Some(HeadingKind::Annex));
        assert_eq!(kind("EXHIBIT 10.2"), Some(HeadingKind::Annex));
        assert_eq!(kind("Exhibit B Product Prices"), Some(HeadingKind::Annex));
        assert_eq!(kind("APPENDIX 1"), Some(HeadingKind::Annex));
        assert!(!classify("ARTICLE V").is_some_and(|h| h.has_title));
    }

    #[test]
    fn keywords_inside_sentences_are_not_headings() {
        assert_eq!(kind("Section 2.1 of this Agreement shall survive."), None);
        assert_eq!(kind("Exhibit A attached hereto is incorporated"), None);
        assert_eq!(kind("Section headings are for convenience only."), None);
    }

    #[test]
    fn numbered_titles_but_not_numbered_clauses() {
        assert_eq!(
            kind("1. HDI's Responsibilities."),
            Some(HeadingKind::Numbered { depth: 1 })
        );
        assert_eq!(
            kind("5.1 Payment"),
            Some(HeadingKind::Numbered { depth: 2 })
        );
        assert_eq!(
            kind("5.1. Payment Terms"),
            Some(HeadingKind::Numbered { depth: 2 })
        );
        assert_eq!(
            kind("4. Term; Termination; Termination Payment."),
            Some(HeadingKind::Numbered { depth: 1 })
        );
        assert_eq!(
            kind("10.   Limitation of liability"),
            Some(HeadingKind::Numbered { depth: 1 })
        );
        assert_eq!(
            kind("IV. Remedies"),
            Some(HeadingKind::Numbered { depth: 1 })
        );
        // Title case over more than four words: every word capitalised or
        // small ("of", "each"), none lowercase as written.
        assert_eq!(
            kind("9. Representations and Warranties of Each Party"),
            Some(HeadingKind::Numbered { depth: 1 })
        );
        assert_eq!(
            kind("9. Representations and warranties of each party"),
            None
        );
        assert_eq!(
            kind("1.3 HDI shall host and maintain the Site on a server provided by HDI."),
            None
        );
        assert_eq!(
            kind("1.1 HDI shall design, develop, implement, operate"),
            None
        );
        assert_eq!(kind("7.2  Inktomi warrants and represents that:"), None);
        assert_eq!(
            kind("1.03 Advisers Act. The Investment Advisers Act of 1940."),
            None
        );
        assert_eq!(
            kind("1.16 \"Web Site\" means a collection of Web Pages."),
            None
        );
        assert_eq!(kind("2024 Outlook and Guidance"), None);
        assert_eq!(kind("(a) Scope"), None);
        assert_eq!(kind("500 Woodward Avenue"), None);
        assert_eq!(kind("4 ARTICLE II APPOINTMENT OF THE AGENT"), None);
        assert_eq!(kind("22 10. PRICES"), None);
    }

    #[test]
    fn capital_lines() {
        for line in [
            "SITE DEVELOPMENT AND HOSTING AGREEMENT",
            "RECITALS",
            "WITNESSETH:",
            "MISCELLANEOUS.",
        ] {
            assert_eq!(kind(line), Some(HeadingKind::Capitals), "{line}");
        }
        for line in [
            "NOW, THEREFORE,",
            "BY AND BETWEEN",
            "AND:",
            "THE DEERSKIN COMPANIES, INC.",
            "BLOOM ENERGY CORPORATION",
            "SUBJECT TO THE TERMS OF",
            "V3.03/17/10 AURA/ZANOTTI STRATEGIC ALLIANCE AGREEMENT Exhibit A",
            "66049:53214:DALLAS:277267.9",
            ". [TBD]",
            "[SIGNATURE PAGE FOLLOWS]",
            "WATER EXTRACTOR [*****]",
            "/S/ KATHLEEN A. MCGAH",
            "JOHN V. LAGRASSE",
            "NAME:",
            "15.2 NOTHING IN THIS AGREEMENT SHALL EXCLUDE ANY LIABILITY",
        ] {
            assert_eq!(kind(line), None, "{line}");
        }
    }

    #[test]
    fn contents_entries_are_not_headings() {
        assert_eq!(kind("ARTICLE 1 DEFINITIONS 2"), None);
        assert_eq!(kind("3. Term 18"), None);
        assert_eq!(kind("Exhibit A Service Fees ii"), None);
        let contents = classify("TABLE OF CONTENTS Page").expect("contents heading");
        assert_eq!(contents.kind, HeadingKind::Contents);
        assert_eq!(contents.text, "TABLE OF CONTENTS");
    }

    #[test]
    fn underlinable_lines() {
        assert!(is_underlinable("Installation"));
        assert!(is_underlinable("1.   Definitions."));
        assert!(!is_underlinable("By: /s/ Joe Backer"));
        assert!(!is_underlinable(
            "Ownership of the Product. The parties respective rights"
        ));
        assert!(!is_underlinable("the parties agree,"));
    }

    #[test]
    fn long_lines_are_not_headings() {
        let long = "A".repeat(MAX_HEADING_CHARS + 1);
        assert_eq!(kind(&long), None);
    }
}
