//! The document outline ("bookmarks"): the author's own table of
//! contents, with each entry's depth and target page.
//!
//! Where a bookmark's title is printed on the page it points to, that line
//! is a heading whatever its font, and the bookmark's depth is its level;
//! headings the outline does not list nest under the last one it does.
//! An outline that names nothing on its pages changes nothing.
//!
//! The outline and page tree are walked here rather than by the PDF
//! library's own reader, which follows `/First` and `/Next` links without
//! remembering where it has been: a file whose bookmarks link in a circle
//! would hang it or overflow the stack. This walk visits each object once
//! and stops at [`MAX_ENTRIES`] entries and [`MAX_DEPTH`] levels.

use std::collections::{HashMap, HashSet};

use pdf_oxide::PdfDocument;
use pdf_oxide::object::{Object, ObjectRef};

use super::layout::PageLayout;
use crate::parse::DocumentTree;

/// Most outline entries read.
const MAX_ENTRIES: usize = 10_000;
/// Deepest outline level read (and deepest page-tree node followed).
const MAX_DEPTH: u8 = 32;

/// One bookmark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutlineEntry {
    pub title: String,
    /// 1 for a top-level bookmark.
    pub depth: u8,
    /// The 1-based page it points to, when that is known.
    pub page: Option<u32>,
}

/// Reads the outline, in document order; empty when there is none or it
/// cannot be read.
pub(super) fn read(document: &PdfDocument) -> Vec<OutlineEntry> {
    let Ok(catalog) = document.catalog() else {
        return Vec::new();
    };
    let mut walk = Walk {
        document,
        visited: HashSet::new(),
        pages: HashMap::new(),
        entries: Vec::new(),
    };
    if let Some(pages) = catalog.as_dict().and_then(|c| c.get("Pages")) {
        walk.page_tree(pages, 0);
    }
    let first = catalog
        .as_dict()
        .and_then(|c| walk.resolve(c.get("Outlines")?))
        .and_then(|o| o.as_dict()?.get("First").cloned());
    if let Some(first) = first {
        walk.visited.clear();
        walk.items(&first, 1);
    }
    walk.entries
}

struct Walk<'a> {
    document: &'a PdfDocument,
    visited: HashSet<ObjectRef>,
    /// Page object → 1-based page number.
    pages: HashMap<ObjectRef, u32>,
    entries: Vec<OutlineEntry>,
}

impl Walk<'_> {
    fn resolve(&self, object: &Object) -> Option<Object> {
        match object {
            Object::Reference(r) => self.document.load_object(*r).ok(),
            other => Some(other.clone()),
        }
    }

    /// Numbers the leaves of the page tree in order.
    fn page_tree(&mut self, node: &Object, depth: u8) {
        let Object::Reference(reference) = node else {
            return;
        };
        if depth > MAX_DEPTH || !self.visited.insert(*reference) {
            return;
        }
        let Some(object) = self.resolve(node) else {
            return;
        };
        let Some(dict) = object.as_dict() else {
            return;
        };
        match dict.get("Kids").and_then(|k| self.resolve(k)) {
            Some(Object::Array(kids)) => {
                for kid in &kids {
                    self.page_tree(kid, depth + 1);
                }
            }
            _ => {
                let number = self.pages.len() as u32 + 1;
                self.pages.insert(*reference, number);
            }
        }
    }

    /// Reads a chain of sibling items, starting at `first`, and their
    /// children.
    fn items(&mut self, first: &Object, depth: u8) {
        let mut next = Some(first.clone());
        while let Some(Object::Reference(reference)) = next.take() {
            if depth > MAX_DEPTH
                || self.entries.len() >= MAX_ENTRIES
                || !self.visited.insert(reference)
            {
                return;
            }
            let Some(item) = self.document.load_object(reference).ok() else {
                return;
            };
            let Some(dict) = item.as_dict() else {
                return;
            };
            let title = dict
                .get("Title")
                .and_then(|t| self.resolve(t))
                .and_then(|t| {
                    t.as_string()
                        .map(pdf_oxide::optional_content::decode_pdf_text_string)
                })
                .unwrap_or_default();
            let page = self.target_page(dict);
            self.entries.push(OutlineEntry { title, depth, page });
            if let Some(child) = dict.get("First") {
                self.items(child, depth + 1);
            }
            next = dict.get("Next").cloned();
        }
    }

    /// The page an item points to, through `/Dest` or a go-to action's
    /// `/D`, when it is given as an explicit destination.
    fn target_page(&self, item: &HashMap<String, Object>) -> Option<u32> {
        let destination = match item.get("Dest") {
            Some(d) => self.resolve(d)?,
            None => {
                let action = self.resolve(item.get("A")?)?;
                self.resolve(action.as_dict()?.get("D")?)?
            }
        };
        let destination = match &destination {
            Object::Dictionary(d) => self.resolve(d.get("D")?)?,
            _ => destination,
        };
        match destination.as_array()?.first()? {
            Object::Reference(page) => self.pages.get(page).copied(),
            // Some writers give a 0-based page number instead.
            Object::Integer(index) => u32::try_from(*index).ok().map(|i| i + 1),
            _ => None,
        }
    }
}

/// Lowercase letters and digits: how a bookmark's title and a printed line
/// are compared ("PART I - DEFINITIONS" and "Part I — Definitions" agree).
fn key(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The lines where bookmarks' titles are printed, by page number and
/// index of the line on its page: on the page each bookmark points to or
/// the next one, a line reading exactly the title, or two consecutive
/// lines that do together (the second is then marked [`Printed::Rest`]).
pub(super) fn printed_titles(
    pages: &[PageLayout],
    outline: &[OutlineEntry],
) -> HashMap<(u32, usize), Printed> {
    let mut found = HashMap::new();
    for entry in outline {
        let (title, Some(target)) = (key(&entry.title), entry.page) else {
            continue;
        };
        if title.is_empty() {
            continue;
        }
        let candidates = pages
            .iter()
            .filter(|p| p.number == target || p.number == target + 1);
        'pages: for page in candidates {
            let keys: Vec<String> = page.lines.iter().map(|l| key(&l.text)).collect();
            for (i, line) in keys.iter().enumerate() {
                if found.contains_key(&(page.number, i)) || line.is_empty() {
                    continue;
                }
                if *line == title {
                    found.insert((page.number, i), Printed::Title);
                    break 'pages;
                }
                let rest = title.strip_prefix(line.as_str());
                if let Some(next) = keys.get(i + 1)
                    && rest == Some(next.as_str())
                    && !found.contains_key(&(page.number, i + 1))
                {
                    found.insert((page.number, i), Printed::Title);
                    found.insert((page.number, i + 1), Printed::Rest);
                    break 'pages;
                }
            }
        }
    }
    found
}

/// How a line prints a bookmark's title.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Printed {
    /// The title, or its first line.
    Title,
    /// The rest of the title begun on the line before.
    Rest,
}

/// Sets section levels from the outline: a section whose heading is a
/// bookmark's title takes its depth, and the sections between nest one
/// level under the last bookmarked one. Nothing changes when no heading
/// is bookmarked.
pub(super) fn relevel(tree: &mut DocumentTree, outline: &[OutlineEntry]) {
    let depths: HashMap<String, Vec<u8>> = outline.iter().fold(HashMap::new(), |mut m, e| {
        m.entry(key(&e.title)).or_default().push(e.depth);
        m
    });
    let mut last: Option<u8> = None;
    let mut changed = false;
    for section in tree.sections.iter_mut().skip(1) {
        let depth = depths
            .get(&key(&section.heading()))
            .and_then(|d| d.first().copied());
        match (depth, last) {
            (Some(depth), _) => {
                section.level = depth.clamp(1, 9);
                last = Some(section.level);
                changed = true;
            }
            (None, Some(last)) => section.level = (last + 1).min(9),
            (None, None) => {}
        }
    }
    if changed {
        tree.link_parents();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::pdf::layout::Line;

    fn line(text: &str) -> Line {
        Line {
            text: text.into(),
            x0: 0.0,
            x1: 0.0,
            baseline: 0.0,
            size: 10.0,
            bold: false,
            pieces: Vec::new(),
            xs: Vec::new(),
        }
    }

    fn entry(title: &str, depth: u8, page: u32) -> OutlineEntry {
        OutlineEntry {
            title: title.into(),
            depth,
            page: Some(page),
        }
    }

    #[test]
    fn titles_are_found_on_their_pages_not_in_the_contents() {
        let pages = vec![
            PageLayout {
                number: 1,
                lines: vec![
                    line("Contents"),
                    line("1. Scope 2"),
                    line("2. Fees and Payment 2"),
                ],
                ..PageLayout::default()
            },
            PageLayout {
                number: 2,
                lines: vec![
                    line("1. Scope"),
                    line("This applies."),
                    line("2. Fees and"),
                    line("Payment"),
                ],
                ..PageLayout::default()
            },
        ];
        let outline = [entry("1. Scope", 1, 2), entry("2. Fees and Payment", 1, 2)];
        let found = printed_titles(&pages, &outline);
        assert_eq!(
            found,
            HashMap::from([
                ((2, 0), Printed::Title),
                ((2, 2), Printed::Title),
                ((2, 3), Printed::Rest)
            ])
        );
    }

    #[test]
    fn levels_follow_the_bookmarks() {
        let mut builder = crate::parse::TreeBuilder::new(crate::parse::Format::Pdf);
        builder.heading(1, "PART I - DEFINITIONS");
        builder.heading(1, "1. Interpretation");
        builder.heading(1, "(a) Unlisted");
        builder.heading(1, "PART II - OBLIGATIONS");
        let mut tree = builder.finish();
        let outline = [
            entry("PART I - DEFINITIONS", 1, 1),
            entry("1. Interpretation", 2, 1),
            entry("PART II - OBLIGATIONS", 1, 2),
        ];
        relevel(&mut tree, &outline);
        let levels: Vec<u8> = tree.sections.iter().skip(1).map(|s| s.level).collect();
        assert_eq!(levels, [1, 2, 3, 1]);
        assert_eq!(tree.sections[3].parent, Some(2));
    }
}
