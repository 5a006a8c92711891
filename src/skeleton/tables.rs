//! Tables as objects: each table of a document with its id, headers,
//! units, row headers and shape, one object across the pages it runs
//! over, and the near-duplicates of earlier tables found and dropped from
//! the index.
//!
//! * **Continuation.** A table paragraph continues the table just before
//!   it when nothing stands between them but a page break (the next
//!   paragraph of the document, on the next page), it has as many columns,
//!   no caption of its own, and either no header rows or the same ones.
//!   A table's `parts` are its paragraphs in reading order.
//! * **Near-duplicates.** A table whose cells (lower-cased, whitespace
//!   collapsed) overlap an earlier table's by a Jaccard similarity of at
//!   least [`DUPLICATE_JACCARD`], with as many columns, repeats it (the
//!   same table on a cover page and in the body, or with one figure
//!   restated): it keeps its object, marked `duplicate_of`, and its rows
//!   are left out of the index. An exact copy is the case of similarity 1.

use std::collections::HashSet;

use serde::Serialize;

use super::{ParagraphId, ParagraphKind, ParagraphNode};
use crate::parse::{Table, collapse_whitespace};

/// Cell overlap from which a table repeats an earlier one: 0.9 lets one
/// cell in ten differ (a restated figure, a footnote mark) and keeps apart
/// two tables of one layout with different figures (a quarter's and the
/// next one's), whose shared cells are their labels.
pub const DUPLICATE_JACCARD: f64 = 0.9;
/// Earlier tables each table is compared with, nearest first: bounds the
/// work on a document of thousands of tables.
const COMPARED: usize = 200;

/// A table of a document.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TableNode {
    /// Position among the document's tables, from 0; its id is `<doc>:t<n>`.
    pub index: u32,
    /// The table paragraphs holding it, in reading order: more than one
    /// when it continues over a page break.
    pub parts: Vec<ParagraphId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Each column's label: its header cells joined, as the row
    /// sentences write them (empty for a column without a header).
    pub columns: Vec<String>,
    /// Each column's unit, where its header gives one ("USD m", "%").
    pub units: Vec<Option<String>>,
    /// Each data row's first cell, when the first column labels the rows
    /// (text in every data row, no unit, not all numbers); empty
    /// otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub row_headers: Vec<String>,
    /// Data rows over all parts, and columns.
    pub shape: [u32; 2],
    /// First and last page, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<[u32; 2]>,
    /// The earlier table this one nearly repeats: its rows are not indexed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<u32>,
}

/// The tables of a document's paragraphs, and the rows (sentences) of the
/// near-duplicates, to be left out of the index.
pub(super) fn find(paragraphs: &[ParagraphNode]) -> (Vec<TableNode>, Vec<std::ops::Range<u32>>) {
    let mut tables: Vec<TableNode> = Vec::new();
    // Per table, its cells and first part's grid, for comparisons.
    let mut cells: Vec<HashSet<String>> = Vec::new();
    let mut dropped = Vec::new();
    let mut last_part: Option<&ParagraphNode> = None;
    for paragraph in paragraphs {
        let (ParagraphKind::Table, Some(grid)) = (paragraph.kind, &paragraph.table) else {
            continue;
        };
        let rows = data_rows(grid);
        if let (Some(previous), Some(table)) = (last_part, tables.last_mut())
            && continues(previous, paragraph)
        {
            table.parts.push(paragraph.id);
            table.shape[0] += rows.len() as u32;
            extend_pages(&mut table.pages, paragraph.page);
            if let Some(headers) = row_headers(grid, &table.units, &rows) {
                table.row_headers.extend(headers);
            }
            if let Some(set) = cells.last_mut() {
                set.extend(cell_set(grid));
            }
            if table.duplicate_of.is_some() {
                dropped.push(paragraph.sentences.clone());
            }
            last_part = Some(paragraph);
            continue;
        }
        let own = cell_set(grid);
        let columns = grid.column_labels();
        let duplicate_of = tables
            .iter()
            .zip(&cells)
            .rev()
            .take(COMPARED)
            .find(|(earlier, earlier_cells)| {
                earlier.columns.len() == columns.len()
                    && jaccard(&own, earlier_cells) >= DUPLICATE_JACCARD
            })
            .map(|(earlier, _)| earlier.duplicate_of.unwrap_or(earlier.index));
        if duplicate_of.is_some() {
            dropped.push(paragraph.sentences.clone());
        }
        let units = grid.column_units();
        tables.push(TableNode {
            index: tables.len() as u32,
            parts: vec![paragraph.id],
            caption: grid.caption.clone(),
            row_headers: row_headers(grid, &units, &rows).unwrap_or_default(),
            units,
            shape: [rows.len() as u32, columns.len() as u32],
            columns,
            pages: paragraph.page.map(|p| [p, p]),
            duplicate_of,
        });
        cells.push(own);
        last_part = Some(paragraph);
    }
    // A continued table's row headers hold only when every part has them.
    for table in &mut tables {
        if table.row_headers.len() != table.shape[0] as usize {
            table.row_headers.clear();
        }
    }
    (tables, dropped)
}

/// Whether table paragraph `next` continues `previous` over a page break.
fn continues(previous: &ParagraphNode, next: &ParagraphNode) -> bool {
    let (Some(a), Some(b)) = (&previous.table, &next.table) else {
        return false;
    };
    let adjacent = next.id.0 == previous.id.0 + 1;
    let next_page = matches!((previous.page, next.page), (Some(p), Some(n)) if n == p + 1);
    let header = |t: &Table| t.rows[..t.header_rows.min(t.rows.len())].to_vec();
    adjacent
        && next_page
        && a.columns() == b.columns()
        && b.caption.is_none()
        && (b.header_rows == 0 || header(a) == header(b))
}

fn extend_pages(pages: &mut Option<[u32; 2]>, page: Option<u32>) {
    if let Some(page) = page {
        *pages = Some(match *pages {
            Some([first, last]) => [first.min(page), last.max(page)],
            None => [page, page],
        });
    }
}

/// The rows of a grid that the skeleton made sentences of
/// ([`Table::is_data_row`]).
fn data_rows(table: &Table) -> Vec<&[String]> {
    table
        .rows
        .iter()
        .enumerate()
        .filter(|(r, _)| table.is_data_row(*r))
        .map(|(_, row)| row.as_slice())
        .collect()
}

/// The first cells of `rows` when the first column labels the rows: text
/// in every row, no unit in its header (`units`, the table's column
/// units), and not a column of numbers.
fn row_headers(table: &Table, units: &[Option<String>], rows: &[&[String]]) -> Option<Vec<String>> {
    if table.columns() < 2 || rows.is_empty() {
        return None;
    }
    if units.first().is_some_and(Option::is_some) {
        return None;
    }
    let firsts: Vec<&str> = rows
        .iter()
        .map(|r| r.first().map_or("", |c| c.as_str()))
        .collect();
    let labels = firsts.iter().all(|c| !c.is_empty())
        && firsts.iter().any(|c| c.chars().any(char::is_alphabetic));
    labels.then(|| firsts.iter().map(|c| c.to_string()).collect())
}

/// A grid's non-empty cells, lower-cased with whitespace collapsed.
fn cell_set(table: &Table) -> HashSet<String> {
    table
        .rows
        .iter()
        .flatten()
        .map(|c| collapse_whitespace(&c.to_lowercase()))
        .filter(|c| !c.is_empty())
        .collect()
}

fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let shared = a.intersection(b).count();
    shared as f64 / (a.len() + b.len() - shared) as f64
}

#[cfg(test)]
mod tests {
    use crate::parse::{Format, Table, TreeBuilder};
    use crate::skeleton::Skeleton;

    fn grid(caption: Option<&str>, rows: &[&[&str]]) -> Table {
        Table {
            caption: caption.map(str::to_string),
            header_rows: 1,
            rows: rows
                .iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect(),
            ..Table::default()
        }
    }

    fn skeleton(build: impl FnOnce(&mut TreeBuilder)) -> Skeleton {
        let mut builder = TreeBuilder::new(Format::Pdf);
        build(&mut builder);
        Skeleton::from_builder("t.pdf", builder)
    }

    #[test]
    fn a_table_over_a_page_break_is_one_object_and_a_near_copy_is_dropped() {
        let header = &["Metric", "Revenue (EUR m)", "Margin [%]"][..];
        let first_page: [&[&str]; 5] = [
            header,
            &["Europe", "1,200", "14.1"],
            &["Americas", "640", "13.9"],
            &["Africa", "95", "7.2"],
            &["Oceania", "80", "6.4"],
        ];
        let second_page: [&[&str]; 3] = [header, &["Asia", "300", "9.5"], &["Arctic", "2", "0.3"]];
        let mut restated: Vec<&[&str]> = first_page.to_vec();
        restated.extend([&["Asia", "300", "9.6"][..], &["Arctic", "2", "0.3"]]);
        let s = skeleton(|b| {
            b.set_page(Some(1));
            b.table(grid(Some("Table 1: Key figures"), &first_page));
            b.set_page(Some(2));
            // The same header again on the next page: the table goes on.
            b.table(grid(None, &second_page));
            b.paragraph("The figures are unaudited.");
            // Later, the whole table again with one figure restated.
            b.table(grid(Some("Table 1: Key figures"), &restated));
            // A table of the same layout with other figures stays.
            b.table(grid(
                Some("Table 2: Prior year"),
                &[
                    header,
                    &["Europe", "1,100", "12.0"],
                    &["Americas", "600", "11.2"],
                    &["Africa", "90", "7.0"],
                    &["Oceania", "70", "6.0"],
                    &["Asia", "280", "9.0"],
                    &["Arctic", "1", "0.1"],
                ],
            ));
        });
        let tables = &s.tables;
        assert_eq!(tables.len(), 3, "{tables:?}");
        let first = &tables[0];
        assert_eq!(first.parts.len(), 2);
        assert_eq!(first.shape, [6, 3]);
        assert_eq!(first.pages, Some([1, 2]));
        assert_eq!(
            first.row_headers,
            ["Europe", "Americas", "Africa", "Oceania", "Asia", "Arctic"]
        );
        assert_eq!(
            first.units,
            vec![None, Some("EUR m".to_string()), Some("%".to_string())]
        );
        assert_eq!(first.caption.as_deref(), Some("Table 1: Key figures"));
        assert_eq!(tables[1].duplicate_of, Some(0));
        assert_eq!(tables[2].duplicate_of, None);
        // The near-copy's rows are not indexed; the others' are.
        let rows = |t: usize| {
            let p = &s.paragraphs[tables[t].parts[0].index()];
            s.sentences[p.sentences.start as usize..p.sentences.end as usize].to_vec()
        };
        assert!(rows(1).iter().all(|r| !r.indexable));
        assert!(rows(0).iter().chain(&rows(2)).all(|r| r.indexable));
    }
}
