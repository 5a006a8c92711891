//! Table-of-contents detection.
//!
//! A table of contents is recognised three ways:
//!
//! 1. a section headed "Contents" / "Table of Contents" (its blocks are the
//!    entries);
//! 2. a run of at least [`MIN_RUN`] consecutive lines with dotted leaders or
//!    tab gaps and a trailing page number ("Payment terms ....... 12");
//! 3. a run of at least [`MIN_RUN`] consecutive short lines each of which is
//!    the heading of a later section.
//!
//! The entries are removed from the body and kept in [`DocumentTree::toc`].
//! Where the entries carry levels (list depth or outline numbering) and a
//! matching heading disagrees, the heading takes the ToC's level: a ToC is
//! the author's own statement of the outline.

use std::collections::HashMap;

use super::{BlockKind, DocumentTree, SectionIdx, TocEntry, split_heading_numbering};

/// Fewest consecutive entry-like lines that make a table of contents.
const MIN_RUN: usize = 3;

/// Longest line (in bytes) considered as a ToC entry.
const MAX_ENTRY_BYTES: usize = 240;

/// Finds, records and removes the document's table of contents.
pub fn extract_toc(tree: &mut DocumentTree) {
    if let Some(section) = find_contents_section(tree) {
        let entries: Vec<TocEntry> = tree.sections[section]
            .blocks
            .iter()
            .filter_map(|b| entry_from_block(&b.kind, true))
            .collect();
        // A "Contents" heading followed by prose is not a ToC.
        if entries.len() >= MIN_RUN.min(tree.sections[section].blocks.len()).max(1) {
            tree.sections[section].blocks.clear();
            tree.sections[section].title.clear();
            tree.sections[section].numbering = None;
            tree.toc = entries;
        }
    }
    if tree.toc.is_empty() {
        extract_toc_run(tree);
    }
    if !tree.toc.is_empty() {
        confirm_levels(tree);
    }
}

fn find_contents_section(tree: &DocumentTree) -> Option<SectionIdx> {
    tree.sections.iter().position(|s| {
        let title = s.title.trim().trim_end_matches(':').to_lowercase();
        s.numbering.is_none()
            && matches!(
                title.as_str(),
                "contents" | "table of contents" | "toc" | "content"
            )
    })
}

/// Reads a ToC entry from a block: "1.2 Payment ....... 12" or a list item.
fn entry_from_block(kind: &BlockKind, lenient: bool) -> Option<TocEntry> {
    let (text, depth) = match kind {
        BlockKind::Paragraph { text } => (text.as_str(), None),
        BlockKind::ListItem { text, depth, .. } => (text.as_str(), Some(*depth)),
        _ => return None,
    };
    let (title, page) = split_page_reference(text, lenient);
    let title = title.trim();
    if title.is_empty() || title.chars().count() > 160 {
        return None;
    }
    let (numbering, _) = split_heading_numbering(title);
    let level = match (&numbering, depth) {
        (Some(n), _) if n.starts_with(|c: char| c.is_ascii_digit()) => {
            n.trim_end_matches('.').split('.').count() as u8
        }
        (_, Some(depth)) => depth + 1,
        _ => 1,
    };
    Some(TocEntry {
        level,
        title: title.to_string(),
        page,
    })
}

/// Splits "Title ....... 12" (or "Title …… xii") into the title and its page
/// number; text without a leader and a trailing page number is returned
/// whole. With `lenient` (inside a section headed "Contents"), a plain space
/// is leader enough.
fn split_page_reference(text: &str, lenient: bool) -> (&str, Option<u32>) {
    let trimmed = text.trim_end();
    let number_start = trimmed
        .rfind(|c: char| !c.is_ascii_alphanumeric())
        .map_or(0, |i| {
            i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
        });
    let number = &trimmed[number_start..];
    let page = number.parse::<u32>().ok();
    let roman = !number.is_empty()
        && number.len() <= 6
        && number
            .chars()
            .all(|c| matches!(c, 'i' | 'v' | 'x' | 'l' | 'c'));
    if page.is_none() && !roman {
        return (text, None);
    }
    let before = &trimmed[..number_start];
    let title = before.trim_end_matches(|c: char| {
        c == '.' || c == '…' || c == '·' || c == '_' || c.is_whitespace()
    });
    let leader = &before[title.len()..];
    let has_leader = leader.contains("..") || leader.contains('…') || leader.contains("__");
    if title.is_empty() || !(has_leader || lenient && !leader.is_empty()) {
        return (text, None);
    }
    (title, page)
}

/// Whether a line has a leader (dots, ellipsis) before a trailing page
/// number.
fn has_leader(text: &str) -> bool {
    split_page_reference(text, false).0.len() < text.len()
}

/// Looks for a run of leader lines, or of lines naming later headings, and
/// moves it into `tree.toc`.
fn extract_toc_run(tree: &mut DocumentTree) {
    // The last section each normalised heading occurs at: a block names a
    // later heading when its title is a key here with a larger index.
    let mut last_heading: HashMap<String, SectionIdx> = HashMap::new();
    for (idx, s) in tree.sections.iter().enumerate().skip(1) {
        last_heading.insert(normalize_title(&s.heading()), idx);
    }
    for section in 0..tree.sections.len() {
        let blocks = &tree.sections[section].blocks;
        let mut run_start = None;
        let mut found = None;
        for (i, block) in blocks.iter().enumerate() {
            let is_entry = match block.kind.text() {
                // Entries are short lines; most body paragraphs are not, and
                // skipping them keeps this pass cheap.
                Some(text)
                    if text.len() <= MAX_ENTRY_BYTES
                        && !matches!(block.kind, BlockKind::Code { .. }) =>
                {
                    has_leader(text) || {
                        let (title, _) = split_page_reference(text, false);
                        !last_heading.is_empty()
                            && last_heading
                                .get(&normalize_title(title))
                                .is_some_and(|&idx| idx > section)
                    }
                }
                _ => false,
            };
            match (is_entry, run_start) {
                (true, None) => run_start = Some(i),
                (false, Some(start)) => {
                    if i - start >= MIN_RUN {
                        found = Some((start, i));
                        break;
                    }
                    run_start = None;
                }
                _ => {}
            }
        }
        if found.is_none()
            && let Some(start) = run_start
            && blocks.len() - start >= MIN_RUN
        {
            found = Some((start, blocks.len()));
        }
        if let Some((start, end)) = found {
            let removed: Vec<_> = tree.sections[section].blocks.drain(start..end).collect();
            tree.toc = removed
                .iter()
                .filter_map(|b| entry_from_block(&b.kind, false))
                .collect();
            return;
        }
    }
}

/// A title as headings and ToC entries are matched: letters and digits
/// only, words joined by one space, lower case. It is built in one pass
/// (this runs on every short block of a document with headings) and
/// lowered as a whole, so that a final capital sigma lowers as `str`
/// lowers it.
fn normalize_title(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = !kept.is_empty();
        } else if c.is_alphanumeric() {
            if space {
                kept.push(' ');
                space = false;
            }
            kept.push(c);
        }
    }
    if kept.is_ascii() {
        kept.make_ascii_lowercase();
        kept
    } else {
        kept.to_lowercase()
    }
}

/// Gives headings the levels the ToC states, when the ToC states more than
/// one level.
fn confirm_levels(tree: &mut DocumentTree) {
    let levels: std::collections::BTreeSet<u8> = tree.toc.iter().map(|e| e.level).collect();
    if levels.len() < 2 {
        return;
    }
    // The first section carrying each normalised heading.
    let mut first_heading: HashMap<String, SectionIdx> = HashMap::new();
    for (idx, s) in tree.sections.iter().enumerate().skip(1) {
        first_heading
            .entry(normalize_title(&s.heading()))
            .or_insert(idx);
    }
    let mut changed = false;
    for entry in &tree.toc {
        if let Some(&idx) = first_heading.get(&normalize_title(&entry.title))
            && tree.sections[idx].level != entry.level
        {
            tree.sections[idx].level = entry.level;
            changed = true;
        }
    }
    if changed {
        tree.link_parents();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{Format, TreeBuilder};

    proptest::proptest! {
        /// One pass gives what filtering, splitting, joining and lowering
        /// in turn gave.
        #[test]
        fn a_title_normalises_as_filtered_split_joined_and_lowered(text in "[ a-zA-Z0-9.,:\t\n\u{a0}\u{3000}ΣΑσéÉ_-]{0,40}") {
            let expected = text
                .chars()
                .filter(|c| c.is_alphanumeric() || c.is_whitespace())
                .collect::<String>()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase();
            proptest::prop_assert_eq!(normalize_title(&text), expected);
        }
    }

    #[test]
    fn page_references_split() {
        assert_eq!(
            split_page_reference("1.2 Payment ........ 12", false),
            ("1.2 Payment", Some(12))
        );
        assert_eq!(
            split_page_reference("Preface …… xii", false),
            ("Preface", None)
        );
        assert_eq!(
            split_page_reference("Revenue rose 12", false),
            ("Revenue rose 12", None)
        );
        assert_eq!(
            split_page_reference("Revenue 12", true),
            ("Revenue", Some(12))
        );
    }

    #[test]
    fn contents_section_becomes_metadata() {
        let mut b = TreeBuilder::new(Format::Text);
        b.heading(1, "Table of Contents");
        b.paragraph("1 Scope ........ 1");
        b.paragraph("1.1 Definitions ........ 2");
        b.paragraph("2 Payment ........ 3");
        b.heading(1, "1 Scope");
        b.paragraph("This agreement covers things.");
        b.heading(1, "1.1 Definitions");
        b.paragraph("Words mean things.");
        b.heading(1, "2 Payment");
        b.paragraph("Pay on time.");
        let mut tree = b.finish();
        extract_toc(&mut tree);
        tree.prune_empty_sections();
        assert_eq!(tree.toc.len(), 3);
        assert_eq!(tree.toc[1].title, "1.1 Definitions");
        assert_eq!(tree.toc[1].level, 2);
        assert_eq!(tree.toc[2].page, Some(3));
        // The ToC is gone from the body and has confirmed the levels.
        assert!(tree.sections.iter().all(|s| s.title != "Table of Contents"));
        let definitions = tree
            .sections
            .iter()
            .find(|s| s.title == "Definitions")
            .unwrap();
        assert_eq!(definitions.level, 2);
    }

    #[test]
    fn a_list_of_later_headings_is_a_toc() {
        let mut b = TreeBuilder::new(Format::Markdown);
        b.heading(1, "Guide");
        b.list_item(0, None, "Install");
        b.list_item(0, None, "Configure");
        b.list_item(0, None, "Run");
        b.paragraph("Welcome to the guide.");
        b.heading(2, "Install");
        b.paragraph("Download it.");
        b.heading(2, "Configure");
        b.paragraph("Edit the file.");
        b.heading(2, "Run");
        b.paragraph("Start it.");
        let mut tree = b.finish();
        extract_toc(&mut tree);
        assert_eq!(tree.toc.len(), 3);
        assert_eq!(tree.sections[1].blocks.len(), 1);
    }

    #[test]
    fn ordinary_lists_are_not_tocs() {
        let mut b = TreeBuilder::new(Format::Markdown);
        b.list_item(0, None, "apples");
        b.list_item(0, None, "pears");
        b.list_item(0, None, "plums");
        b.heading(1, "Fruit");
        b.paragraph("Fruit is good.");
        let mut tree = b.finish();
        extract_toc(&mut tree);
        assert!(tree.toc.is_empty());
        assert_eq!(tree.sections[0].blocks.len(), 3);
    }
}
