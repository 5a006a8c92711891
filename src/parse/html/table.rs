//! HTML tables as rectangular grids.
//!
//! Cells are placed with the HTML table model: a cell goes to the first
//! column of its row not already taken by a `rowspan` from above, and a
//! merged cell's text is repeated in every position it covers, so that each
//! row reads on its own (`Header: value | …` downstream). Spans only cover
//! rows that exist (a `rowspan` ends with its row group), and once the
//! document's cell budget (`parsing.maxTableCells`) is spent, spans stop
//! being repeated, so no input can blow the grid up.
//!
//! Header rows are the rows of `<thead>` and leading rows made only of
//! `<th>`. A row made only of `<th>` cells that span down (a pivot table's
//! "2025" opening a group of months) is not a row of its own: its cells
//! start on the rows they span, as a reader sees them.

use crate::parse::Table;

/// A cell spanning down into later rows.
struct Carry {
    text: String,
    /// Rows still to cover.
    rows: u32,
}

/// The row being read.
#[derive(Default)]
struct OpenRow {
    cells: Vec<String>,
    /// Cells written in this row's own markup (not carried from above).
    own: usize,
    all_header: bool,
    all_spanning_header: bool,
    in_head: bool,
}

/// A table under construction.
pub(super) struct TableGrid {
    rows: Vec<Vec<String>>,
    /// Whether each kept row is a header row.
    header: Vec<bool>,
    row: Option<OpenRow>,
    /// Per column, the cell spanning down into the next rows, if any.
    carries: Vec<Option<Carry>>,
    in_head: bool,
    caption: String,
    /// Grid positions filled so far.
    cells: u64,
    /// Positions this table may fill (what is left of the document's budget).
    budget: u64,
    /// Whether the budget cut spans or rows.
    truncated: bool,
}

impl TableGrid {
    /// A table that may fill at most `budget` grid positions.
    pub(super) fn new(budget: u64) -> Self {
        Self {
            rows: Vec::new(),
            header: Vec::new(),
            row: None,
            carries: Vec::new(),
            in_head: false,
            caption: String::new(),
            cells: 0,
            budget,
            truncated: false,
        }
    }

    /// Enters or leaves a `<thead>` (`head`) or another row group. Spans end
    /// with their row group.
    pub(super) fn row_group(&mut self, head: bool) {
        self.end_row();
        self.carries.clear();
        self.in_head = head;
    }

    pub(super) fn start_row(&mut self) {
        self.end_row();
        self.row = Some(OpenRow {
            all_header: true,
            all_spanning_header: true,
            in_head: self.in_head,
            ..OpenRow::default()
        });
    }

    /// Adds the caption's text (a table has one caption; extra ones are
    /// appended).
    pub(super) fn add_caption(&mut self, text: &str) {
        if !self.caption.is_empty() {
            self.caption.push(' ');
        }
        self.caption.push_str(text);
    }

    /// Places one cell in the open row (opening one if needed).
    pub(super) fn push_cell(&mut self, text: &str, header: bool, colspan: u32, rowspan: u32) {
        if self.row.is_none() {
            self.start_row();
        }
        let (mut colspan, mut rowspan) = (u64::from(colspan.max(1)), rowspan.max(1));
        if self.cells.saturating_add(colspan) > self.budget {
            // Out of budget: the cell is kept once, its spans dropped.
            self.truncated = true;
            colspan = 1;
            rowspan = 1;
        }
        self.fill_carried(None);
        let Some(row) = self.row.as_mut() else {
            return;
        };
        row.own += 1;
        row.all_header &= header;
        row.all_spanning_header &= header && rowspan > 1;
        for _ in 0..colspan {
            let column = row.cells.len();
            row.cells.push(text.to_string());
            self.cells += 1;
            // A colspan running into a cell carried from above overlaps it
            // (a table-model error): the carried cell still uses up a row.
            if let Some(slot) = self.carries.get_mut(column)
                && let Some(carry) = slot
            {
                carry.rows -= 1;
                if carry.rows == 0 {
                    *slot = None;
                }
            }
            if rowspan > 1 {
                if self.carries.len() <= column {
                    self.carries.resize_with(column + 1, || None);
                }
                if let Some(slot) = self.carries.get_mut(column) {
                    *slot = Some(Carry {
                        text: text.to_string(),
                        rows: rowspan - 1,
                    });
                }
            }
        }
    }

    /// Fills the open row with cells carried from above: the run of carried
    /// columns at its end, or (`until` = `Some(width)`) every carried column
    /// below `width`, padding gaps with empty cells.
    fn fill_carried(&mut self, until: Option<usize>) {
        let Some(row) = self.row.as_mut() else {
            return;
        };
        loop {
            let column = row.cells.len();
            let carried = self.carries.get_mut(column).and_then(Option::take);
            match carried {
                Some(mut carry) => {
                    row.cells.push(carry.text.clone());
                    self.cells += 1;
                    carry.rows -= 1;
                    if carry.rows > 0
                        && let Some(slot) = self.carries.get_mut(column)
                    {
                        *slot = Some(carry);
                    }
                }
                None if until.is_some_and(|width| column < width) => row.cells.push(String::new()),
                None => break,
            }
        }
    }

    /// Closes the open row, if any.
    pub(super) fn end_row(&mut self) {
        if self.row.is_none() {
            return;
        }
        let last_carried = self.carries.iter().rposition(Option::is_some);
        self.fill_carried(last_carried.map(|c| c + 1));
        let Some(row) = self.row.take() else {
            return;
        };
        if row.cells.is_empty() {
            return;
        }
        if row.own > 0 && row.all_spanning_header && !self.rows.is_empty() {
            // A pivot group's opening row: its cells live on in `carries`
            // and start on the next row.
            return;
        }
        self.header
            .push(row.in_head || (row.own > 0 && row.all_header));
        self.rows.push(row.cells);
    }

    /// The finished table, the grid positions it takes once padded to a
    /// rectangle, and whether the budget cut spans or rows from it.
    pub(super) fn finish(mut self) -> (Table, u64, bool) {
        self.end_row();
        let width = self.rows.iter().map(Vec::len).max().unwrap_or(0) as u64;
        if width > 0 && (self.rows.len() as u64).saturating_mul(width) > self.budget {
            let keep = usize::try_from(self.budget / width).unwrap_or(usize::MAX);
            self.rows.truncate(keep);
            self.truncated = true;
        }
        let mut header_rows = self.header.iter().take_while(|&&h| h).count();
        header_rows = header_rows.min(self.rows.len());
        if header_rows == self.rows.len() && header_rows > 1 {
            // Every row is made of `<th>`: only the first labels the others.
            header_rows = 1;
        }
        let used = (self.rows.len() as u64).saturating_mul(width);
        let caption = (!self.caption.trim().is_empty()).then_some(self.caption);
        let table = Table {
            caption,
            header_rows,
            rows: self.rows,
            ..Table::default()
        };
        (table, used, self.truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(grid: &mut TableGrid, text: &str, colspan: u32, rowspan: u32) {
        grid.push_cell(text, false, colspan, rowspan);
    }

    #[test]
    fn colspan_and_rowspan_repeat_text() {
        let mut grid = TableGrid::new(1_000);
        grid.row_group(true);
        grid.start_row();
        grid.push_cell("H1", true, 1, 1);
        grid.push_cell("H2-3", true, 2, 1);
        grid.row_group(false);
        grid.start_row();
        cell(&mut grid, "A", 1, 2);
        cell(&mut grid, "B", 1, 1);
        cell(&mut grid, "C", 1, 1);
        grid.start_row();
        cell(&mut grid, "D", 2, 1);
        grid.start_row();
        cell(&mut grid, "E", 1, 1);
        cell(&mut grid, "F", 1, 1);
        cell(&mut grid, "G", 1, 1);
        let (table, used, _) = grid.finish();
        assert_eq!(
            table.rows,
            vec![
                vec!["H1", "H2-3", "H2-3"],
                vec!["A", "B", "C"],
                vec!["A", "D", "D"],
                vec!["E", "F", "G"],
            ]
        );
        assert_eq!(table.header_rows, 1);
        assert_eq!(used, 12);
    }

    #[test]
    fn rowspans_end_with_their_row_group_and_last_row() {
        let mut grid = TableGrid::new(1_000);
        grid.start_row();
        cell(&mut grid, "A", 1, 65534);
        cell(&mut grid, "B", 1, 1);
        grid.start_row();
        cell(&mut grid, "C", 1, 1);
        let (table, _, _) = grid.finish();
        assert_eq!(table.rows, vec![vec!["A", "B"], vec!["A", "C"]]);
    }

    #[test]
    fn carried_cells_fill_rows_without_own_cells_at_that_column() {
        let mut grid = TableGrid::new(1_000);
        grid.start_row();
        cell(&mut grid, "A", 1, 1);
        cell(&mut grid, "B", 1, 2);
        grid.start_row();
        cell(&mut grid, "C", 1, 1);
        grid.start_row();
        let (table, _, _) = grid.finish();
        assert_eq!(table.rows, vec![vec!["A", "B"], vec!["C", "B"]]);
    }

    #[test]
    fn pivot_group_rows_merge_into_the_rows_they_span() {
        let mut grid = TableGrid::new(1_000);
        grid.start_row();
        for h in ["Year", "Month", "Revenue"] {
            grid.push_cell(h, true, 1, 1);
        }
        grid.start_row();
        grid.push_cell("2025", true, 1, 3);
        for month in ["Jan", "Feb"] {
            grid.start_row();
            cell(&mut grid, month, 1, 1);
            cell(&mut grid, "$1", 1, 1);
        }
        let (table, _, _) = grid.finish();
        assert_eq!(
            table.rows,
            vec![
                vec!["Year", "Month", "Revenue"],
                vec!["2025", "Jan", "$1"],
                vec!["2025", "Feb", "$1"],
            ]
        );
        assert_eq!(table.header_rows, 1);
    }

    #[test]
    fn budget_stops_span_expansion_and_cuts_rows() {
        let mut grid = TableGrid::new(10);
        grid.start_row();
        cell(&mut grid, "wide", 1000, 1);
        let (table, _, _) = grid.finish();
        assert_eq!(table.rows, vec![vec!["wide"]]);

        let mut grid = TableGrid::new(6);
        for _ in 0..5 {
            grid.start_row();
            cell(&mut grid, "a", 1, 1);
            cell(&mut grid, "b", 1, 1);
        }
        let (table, used, _) = grid.finish();
        assert_eq!(table.rows.len(), 3);
        assert_eq!(used, 6);
    }
}
