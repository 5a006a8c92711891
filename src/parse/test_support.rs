//! Views of a [`DocumentTree`] that the parsers' unit tests compare
//! against: one set for every format, so that the formats are held to the
//! same expectations in the same terms.

use super::{BlockKind, DocumentTree, Table};

/// `(level, heading)` of every section below the document root.
pub fn headings(tree: &DocumentTree) -> Vec<(u8, String)> {
    tree.sections
        .iter()
        .skip(1)
        .map(|s| (s.level, s.heading()))
        .collect()
}

/// Every block's kind in reading order.
pub fn blocks(tree: &DocumentTree) -> Vec<BlockKind> {
    tree.blocks().map(|(_, b)| b.kind.clone()).collect()
}

/// The text of every block that has one, in reading order.
pub fn texts(tree: &DocumentTree) -> Vec<String> {
    tree.blocks()
        .filter_map(|(_, b)| b.kind.text().map(str::to_string))
        .collect()
}

/// Every table, in reading order.
pub fn tables(tree: &DocumentTree) -> Vec<Table> {
    tree.blocks()
        .filter_map(|(_, b)| match &b.kind {
            BlockKind::Table(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

pub fn paragraph(text: &str) -> BlockKind {
    BlockKind::Paragraph { text: text.into() }
}

pub fn item(depth: u8, marker: &str, text: &str) -> BlockKind {
    BlockKind::ListItem {
        text: text.into(),
        depth,
        marker: Some(marker.into()),
    }
}
