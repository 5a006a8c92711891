//! Cleaning passes shared by every format.
//!
//! * glyph artefacts of PDF-to-text converters (`GLYPH<c=3,font=/F1>`,
//!   `/uni2022`) are removed or decoded;
//! * blocks made only of bullets, dashes, underscores or dots (rules, empty
//!   list markers, separator lines) are dropped;
//! * short paragraphs that repeat through a document (running headers and
//!   footers, "Page 3 of 10", banners) are dropped when
//!   `parsing.dropBoilerplate` is on, and counted in a warning.

use std::collections::HashMap;

use super::{BlockKind, DocumentTree, Format, collapse_whitespace};
use crate::spec::ParsingSpec;

/// Paragraphs longer than this are never considered boilerplate.
const BOILERPLATE_MAX_CHARS: usize = 100;

/// Applies every cleaning pass to a tree.
pub fn clean_tree(tree: &mut DocumentTree, spec: &ParsingSpec) {
    for section in &mut tree.sections {
        if let Some(cleaned) = clean_inline(&section.title) {
            section.title = cleaned;
        }
        for block in &mut section.blocks {
            match &mut block.kind {
                BlockKind::Code { .. } => {}
                BlockKind::Table(table) => {
                    for cell in table.rows.iter_mut().flatten() {
                        if let Some(cleaned) = clean_inline(cell) {
                            *cell = cleaned;
                        }
                    }
                }
                kind => {
                    if let Some(text) = kind.text_mut()
                        && let Some(cleaned) = clean_inline(text)
                    {
                        *text = cleaned;
                    }
                }
            }
        }
        section.blocks.retain(|b| match &b.kind {
            BlockKind::Table(_) => true,
            BlockKind::Code { text, .. } => !text.trim().is_empty(),
            kind => kind.text().is_some_and(|t| !is_rule_line(t)),
        });
    }
    if spec.drop_boilerplate && has_page_furniture(tree.format) {
        drop_boilerplate(tree, spec.boilerplate_min_repeats.max(2) as usize);
    }
}

/// Formats whose body text can carry running headers, footers and page
/// numbers. DOCX keeps them in separate parts (which are not read) and
/// Markdown has none, so a paragraph repeated there is the author's.
fn has_page_furniture(format: Format) -> bool {
    matches!(format, Format::Text | Format::Html | Format::Pdf)
}

/// Removes glyph artefacts from one piece of text. Returns `None` when the
/// text has none (the common case, without allocating).
pub fn clean_inline(text: &str) -> Option<String> {
    if !has_glyph_artefact(text.as_bytes()) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("GLYPH<") {
            // Skip to the matching '>' (glyph descriptors do not nest).
            match after.find('>') {
                Some(end) => {
                    rest = &after[end + 1..];
                    continue;
                }
                None => {
                    rest = "";
                    continue;
                }
            }
        }
        if let Some(after) = rest.strip_prefix("/uni") {
            let hex_len = after
                .bytes()
                .take(6)
                .take_while(u8::is_ascii_hexdigit)
                .count();
            if hex_len >= 4 {
                let decoded = u32::from_str_radix(&after[..4], 16)
                    .ok()
                    .and_then(char::from_u32)
                    .filter(|c| !c.is_control());
                if let Some(c) = decoded {
                    out.push(c);
                }
                rest = &after[4..];
                continue;
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    Some(collapse_whitespace(&out))
}

/// Whether `bytes` hold "GLYPH<" or "/uni": one search for the two bytes
/// that stand at the joint of each ("<" ends the first, "/" opens the
/// second), both rare in prose, instead of a search for each artefact.
fn has_glyph_artefact(bytes: &[u8]) -> bool {
    memchr::memchr2_iter(b'<', b'/', bytes).any(|at| match bytes[at] {
        b'<' => bytes[..at].ends_with(b"GLYPH"),
        _ => bytes[at + 1..].starts_with(b"uni"),
    })
}

/// True for text made only of bullets, dashes, underscores, dots, asterisks,
/// equals signs, box-drawing characters and spaces.
pub fn is_rule_line(text: &str) -> bool {
    !text.is_empty()
        && text.chars().all(|c| {
            c.is_whitespace()
                || matches!(
                    c,
                    '-' | '_'
                        | '='
                        | '*'
                        | '.'
                        | '·'
                        | '•'
                        | '‣'
                        | '◦'
                        | '▪'
                        | '▫'
                        | '●'
                        | '○'
                        | '■'
                        | '□'
                        | '–'
                        | '—'
                        | '―'
                        | '~'
                        | '⁃'
                        | '∙'
                        | '…'
                )
                || ('\u{2500}'..='\u{257f}').contains(&c)
        })
}

/// "Page 3", "Page 3 of 10", "- 3 -", "3", "iv": a line that is only a page
/// number.
pub fn is_page_number(text: &str) -> bool {
    // "Page 12345 of 12345" with dashes around is the longest form.
    if text.len() > 32 {
        return false;
    }
    let t = text
        .trim()
        .trim_matches(|c: char| c == '-' || c == '–' || c == '—' || c.is_whitespace());
    let t = t
        .strip_prefix("Page ")
        .or_else(|| t.strip_prefix("page "))
        .or_else(|| t.strip_prefix("PAGE "))
        .unwrap_or(t);
    let (number, total) = match t.split_once(" of ") {
        Some((n, total)) => (n.trim(), Some(total.trim())),
        None => match t.split_once('/') {
            Some((n, total)) => (n.trim(), Some(total.trim())),
            None => (t, None),
        },
    };
    let numeric = |s: &str| !s.is_empty() && s.len() <= 5 && s.chars().all(|c| c.is_ascii_digit());
    let roman = |s: &str| {
        !s.is_empty() && s.len() <= 6 && s.chars().all(|c| matches!(c, 'i' | 'v' | 'x' | 'l' | 'c'))
    };
    (numeric(number) || roman(number)) && total.is_none_or(numeric)
}

/// Drops short paragraphs that occur at least `min_repeats` times, and (in
/// plain text, where page breaks leave them behind) paragraphs that are only
/// a page number.
fn drop_boilerplate(tree: &mut DocumentTree, min_repeats: usize) {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for (_, block) in tree.blocks() {
        if let BlockKind::Paragraph { text } = &block.kind
            && is_short(text)
        {
            *counts.entry(boilerplate_key(text)).or_default() += 1;
        }
    }
    let page_numbers_are_noise = matches!(tree.format, Format::Text | Format::Pdf);
    let mut dropped = 0usize;
    for section in &mut tree.sections {
        section.blocks.retain(|block| {
            let BlockKind::Paragraph { text } = &block.kind else {
                return true;
            };
            let repeated = is_short(text)
                && counts.get(&boilerplate_key(text)).copied().unwrap_or(0) >= min_repeats;
            let page_number = page_numbers_are_noise && is_page_number(text);
            let drop = repeated || page_number;
            dropped += usize::from(drop);
            !drop
        });
    }
    if dropped > 0 {
        tree.warnings.push(format!(
            "dropped {dropped} repeated header/footer or page-number paragraphs"
        ));
    }
}

/// Whether a paragraph is short enough to be boilerplate (byte length
/// decides most cases without counting characters).
fn is_short(text: &str) -> bool {
    text.len() <= BOILERPLATE_MAX_CHARS
        || (text.len() <= 4 * BOILERPLATE_MAX_CHARS
            && text.chars().count() <= BOILERPLATE_MAX_CHARS)
}

/// Key under which repeated lines are counted: lowercase, whitespace
/// collapsed, and in lines that start or end by naming their page, digits
/// masked (so that "Page 3 of 10" and "Sample Agreement — page 4" count
/// with their variants, but "Section 1.1" and "Section 2.1", or "see page
/// 4 for details", do not).
pub(super) fn boilerplate_key(text: &str) -> String {
    let lower = super::collapse_whitespace(text).to_lowercase();
    if lower.starts_with("page ") || ends_naming_its_page(&lower) || is_page_number(&lower) {
        lower
            .chars()
            .map(|c| if c.is_ascii_digit() { '#' } else { c })
            .collect()
    } else {
        lower
    }
}

/// Whether a lowercase line ends with "page 3" or "page 3 of 10".
fn ends_naming_its_page(lower: &str) -> bool {
    let number = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit());
    // The last four words, last first; this runs on every short line.
    let mut words = lower.rsplit(' ');
    match [words.next(), words.next(), words.next(), words.next()] {
        [Some(n), Some("page"), ..] => number(n),
        [Some(m), Some("of"), Some(n), Some("page")] => number(n) && number(m),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{Format, TreeBuilder};

    #[test]
    fn glyph_artefacts_are_removed() {
        assert_eq!(
            clean_inline("Total GLYPH<c=3,font=/AAAA+Arial>revenue /uni2022 rose").as_deref(),
            Some("Total revenue • rose")
        );
        assert_eq!(clean_inline("plain text"), None);
        for (text, found) in [
            ("a GLYPH<c=1>", true),
            ("GLYPH<", true),
            ("/uni", true),
            ("x/uni2022", true),
            ("GLYPH", false),
            ("and/or <b>", false),
            ("/un", false),
            ("GLYPH <", false),
        ] {
            assert_eq!(has_glyph_artefact(text.as_bytes()), found, "{text:?}");
        }
        assert_eq!(
            clean_inline("path /unix/x").as_deref(),
            Some("path /unix/x")
        );
    }

    #[test]
    fn rule_lines_and_page_numbers() {
        assert!(is_rule_line("• • •"));
        assert!(is_rule_line("----------"));
        assert!(is_rule_line("________"));
        assert!(!is_rule_line("- item"));
        assert!(is_page_number("Page 3 of 10"));
        assert!(is_page_number("- 12 -"));
        assert!(is_page_number("iv"));
        assert!(!is_page_number("2024 results"));
    }

    #[test]
    fn repeated_short_paragraphs_are_dropped() {
        let mut b = TreeBuilder::new(Format::Text);
        for page in 1..=4 {
            b.paragraph("ACME CONFIDENTIAL");
            b.paragraph(&format!("Body text of page {page} that says something."));
            b.paragraph(&format!("Page {page} of 4"));
        }
        b.paragraph("-----");
        let mut tree = b.finish();
        clean_tree(&mut tree, &ParsingSpec::default());
        let texts: Vec<&str> = tree.blocks().filter_map(|(_, b)| b.kind.text()).collect();
        assert_eq!(texts.len(), 4, "{texts:?}");
        assert!(texts.iter().all(|t| t.starts_with("Body text")));
        assert!(tree.warnings[0].contains("dropped 8"));
    }

    #[test]
    fn page_numbers_are_masked_only_where_a_line_names_its_page() {
        let key = boilerplate_key;
        assert_eq!(
            key("Sample Agreement — page 2"),
            key("Sample  Agreement — Page 3")
        );
        assert_eq!(key("Page 2 of 9"), key("page 3 of 9"));
        assert_eq!(key("ACME Corp. Page 2 of 9"), key("ACME Corp. page 3 of 9"));
        assert_ne!(
            key("See page 2 for details."),
            key("See page 3 for details.")
        );
        assert_ne!(key("Section 2.1"), key("Section 3.1"));
    }
}
