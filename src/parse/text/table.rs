//! Tables in plain text: pipe tables and columns aligned with spaces.
//!
//! Detection is deliberately conservative: a paragraph of prose taken for a
//! table loses its sentences, while a missed table still keeps its text. A
//! block of lines is a table only when every line splits into the same
//! number of cells at gaps of two or more spaces (or tabs), the columns
//! start (or end) at the same positions on every line, no cell is as long
//! as a sentence, and there are at least three rows (or two rows of three
//! columns or more). Two columns whose second is only page numbers are a
//! table of contents, not a table.

use super::layout::{Line, is_rule};
use crate::parse::Table;
use crate::parse::tree::DOUBLE_SPACE;

/// Fewest rows of a column table (two suffice when it has
/// [`MIN_COLUMNS_FOR_TWO_ROWS`] columns).
const MIN_ROWS: usize = 3;
const MIN_COLUMNS_FOR_TWO_ROWS: usize = 3;

/// Longest cell of a column table, in characters: longer ones are prose.
const MAX_CELL_CHARS: usize = 60;

/// How far (in characters) the starts or ends of one column may wander
/// between rows.
const ALIGNMENT_TOLERANCE: usize = 2;

/// The table a block of lines forms, if it forms one.
pub(super) fn detect(lines: &[Line<'_>]) -> Option<Table> {
    // Every table has at least two rows; most blocks are one line of prose.
    if lines.len() < 2 {
        return None;
    }
    pipe_table(lines).or_else(|| column_table(lines))
}

/// "| a | b |" rows, with an optional "|---|---|" rule after the header.
fn pipe_table(lines: &[Line<'_>]) -> Option<Table> {
    if lines.len() < 2 || !lines.iter().all(|l| l.text.starts_with('|')) {
        return None;
    }
    let mut rows = Vec::new();
    let mut header_rows = 0;
    for line in lines {
        let inner = line.text.trim_start_matches('|');
        let inner = inner.strip_suffix('|').unwrap_or(inner);
        let cells: Vec<String> = inner.split('|').map(|c| c.trim().to_string()).collect();
        if cells.iter().all(|c| {
            !c.is_empty()
                && c.chars()
                    .all(|ch| matches!(ch, '-' | ':' | '=' | '+' | ' '))
        }) {
            if rows.len() == 1 {
                header_rows = 1;
            }
            continue;
        }
        rows.push(cells);
    }
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    (rows.len() >= 2 && columns >= 2).then(|| Table {
        header_rows,
        rows,
        ..Table::default()
    })
}

/// One cell of a column-aligned line: its text and its start and end
/// positions in characters.
struct Cell<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

fn column_table(lines: &[Line<'_>]) -> Option<Table> {
    let mut rows: Vec<Vec<Cell<'_>>> = Vec::new();
    let mut header_rows = 0;
    for line in lines {
        if is_rule(line.text) || is_column_rule(line.text) {
            if rows.len() == 1 {
                header_rows = 1;
            }
            continue;
        }
        // A row has at least one gap between cells; looking for one is much
        // cheaper than splitting a line of prose into cells.
        if !has_gap(line.raw) {
            return None;
        }
        let cells = split_cells(line.raw);
        // Stop at the first line that cannot belong (most blocks are prose).
        if cells.len() < 2 || rows.first().is_some_and(|first| first.len() != cells.len()) {
            return None;
        }
        rows.push(cells);
    }
    let columns = rows.first()?.len();
    let enough_rows =
        rows.len() >= MIN_ROWS || (rows.len() >= 2 && columns >= MIN_COLUMNS_FOR_TWO_ROWS);
    if columns < 2 || !enough_rows || rows.iter().any(|r| r.len() != columns) {
        return None;
    }
    if rows
        .iter()
        .flatten()
        .any(|c| c.text.chars().count() > MAX_CELL_CHARS)
    {
        return None;
    }
    let aligned = (0..columns).all(|col| {
        let spread = |position: fn(&Cell<'_>) -> usize| {
            let values = rows.iter().filter_map(|r| r.get(col)).map(position);
            let (min, max) = values.fold((usize::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
            max.saturating_sub(min)
        };
        // Right alignment is how figures line up; justified prose lines end
        // flush too, so it counts only for columns of figures.
        let figures = rows
            .iter()
            .filter_map(|r| r.get(col))
            .all(|c| is_figure(c.text));
        spread(|c| c.start) <= ALIGNMENT_TOLERANCE
            || (figures && spread(|c| c.end) <= ALIGNMENT_TOLERANCE)
    });
    if !aligned {
        return None;
    }
    let last_column_is_page_numbers = columns == 2
        && rows.iter().all(|r| {
            r.last().is_some_and(|c| {
                c.text
                    .chars()
                    .all(|ch| ch.is_ascii_digit() || "ivxlc".contains(ch))
            })
        });
    if last_column_is_page_numbers {
        return None;
    }
    Some(Table {
        header_rows,
        rows: rows
            .iter()
            .map(|r| r.iter().map(|c| c.text.to_string()).collect())
            .collect(),
        ..Table::default()
    })
}

/// "1,200", "$5.00", "(12.5)%", "-": a number as tables write it.
fn is_figure(text: &str) -> bool {
    text.chars().any(|c| c.is_ascii_digit() || c == '-')
        && text
            .chars()
            .all(|c| c.is_ascii_digit() || " .,$€£%()-+".contains(c))
}

/// "-----   ------": a rule under each column of a header.
fn is_column_rule(text: &str) -> bool {
    text.contains(['-', '='])
        && text
            .chars()
            .all(|c| matches!(c, '-' | '=' | '+' | ' ' | '\t' | ':'))
}

/// Whether a line has a tab or two spaces in a row.
fn has_gap(raw: &str) -> bool {
    let bytes = raw.trim().as_bytes();
    memchr::memchr(b'\t', bytes).is_some() || DOUBLE_SPACE.find(bytes).is_some()
}

/// Splits a line at runs of two or more spaces or at tabs; positions count
/// characters, a tab advancing to the next multiple of eight.
fn split_cells(raw: &str) -> Vec<Cell<'_>> {
    let mut cells = Vec::new();
    let mut column = 0usize;
    let mut cell_start: Option<(usize, usize)> = None; // (byte, column)
    let mut last_end = (0usize, 0usize); // end of the last non-space char
    let mut spaces = 0usize;
    for (byte, ch) in raw.char_indices() {
        let is_gap_char = ch == ' ' || ch == '\t';
        if is_gap_char {
            spaces += if ch == '\t' { 2 } else { 1 };
        } else {
            if let Some((start_byte, start_col)) = cell_start
                && spaces >= 2
            {
                cells.push(Cell {
                    text: &raw[start_byte..last_end.0],
                    start: start_col,
                    end: last_end.1,
                });
                cell_start = None;
            }
            if cell_start.is_none() {
                cell_start = Some((byte, column));
            }
            spaces = 0;
            last_end = (byte + ch.len_utf8(), column + 1);
        }
        column = if ch == '\t' {
            (column / 8 + 1) * 8
        } else {
            column + 1
        };
    }
    if let Some((start_byte, start_col)) = cell_start {
        cells.push(Cell {
            text: &raw[start_byte..last_end.0],
            start: start_col,
            end: last_end.1,
        });
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<Line<'_>> {
        text.lines().map(Line::new).collect()
    }

    #[test]
    fn aligned_columns_make_a_table() {
        let block = "Item          Quantity    Price\n\
                     -----------   --------    -----\n\
                     Widget        10          $5.00\n\
                     Gadget        2           $12.50\n";
        let table = detect(&lines(block)).expect("table");
        assert_eq!(table.header_rows, 1);
        assert_eq!(
            table.rows,
            vec![
                vec!["Item", "Quantity", "Price"],
                vec!["Widget", "10", "$5.00"],
                vec!["Gadget", "2", "$12.50"],
            ]
        );
    }

    #[test]
    fn right_aligned_numbers_and_tabs() {
        let block = "Revenue\t   1,200\nCosts\t     800\nProfit\t     400\n";
        let table = detect(&lines(block)).expect("table");
        assert_eq!(table.rows[0], vec!["Revenue", "1,200"]);
        assert_eq!(table.header_rows, 0);
    }

    #[test]
    fn pipe_tables() {
        let block = "| Key | Value |\n|-----|-------|\n| a   | 1     |\n";
        let table = detect(&lines(block)).expect("table");
        assert_eq!(table.header_rows, 1);
        assert_eq!(table.rows, vec![vec!["Key", "Value"], vec!["a", "1"]]);
    }

    #[test]
    fn prose_is_not_a_table() {
        // Typewriter text with two spaces after each sentence.
        let prose = "The Supplier shall deliver.  The Buyer shall pay within\n\
                     thirty days.  Late payments bear interest at the rate\n\
                     of two percent.  Title passes on delivery to the Buyer.\n";
        assert!(detect(&lines(prose)).is_none());
        let two_rows = "Name      Value\nfoo       1\n";
        assert!(detect(&lines(two_rows)).is_none());
        let contents = "Definitions        2\nServices           12\nTerm               18\n";
        assert!(detect(&lines(contents)).is_none());
        let ragged = "a    b    c\nd    e\nf    g    h\n";
        assert!(detect(&lines(ragged)).is_none());
    }
}
