//! Tables on a laid-out page, from ruling lines and from column
//! alignment.
//!
//! A grid of ruling lines — three horizontal rules or more over the same
//! width, crossed by one vertical rule or more — is a table whatever its
//! text: each band between rules is a row, each between vertical rules a
//! column, and every piece of text inside falls in the cell under it, so
//! cells set on several lines and rows whose first cell is centred against
//! a tall neighbour come out whole. Lines not in a grid are looked at for
//! alignment, below.
//!
//! Outside grids, a table is a run of consecutive lines split into pieces
//! by wide gaps,
//! whose pieces line up in columns: projected onto the x axis, the pieces
//! of the run leave empty strips between them, and each strip separates
//! two columns (so left-, right- and centre-aligned columns are found
//! alike). A line with a piece in the first column, or with pieces in two
//! columns or more, starts a row; a line with one piece further right
//! continues the row above (a description wrapped within its cell).
//!
//! What is not a table, though it lines up: a list whose first column is
//! only markers ("1.", "(a)", "•") before text, a caption ("Table 2-1
//! Functions", "Figure 3"), and prose lines that happen to have one wide
//! gap. A table therefore needs two rows with pieces in two columns or
//! more, and three rows, or two of three columns or more.
//!
//! Found tables are rendered as pipe tables, which the text parser reads.

use super::Rule;
use super::layout::{Line, Piece, is_rtl};
use crate::parse::text::is_list_marker;

/// The widest vertical gap between two lines of one table, in multiples
/// of the table's usual row pitch.
const MAX_ROW_GAP: f32 = 2.2;
/// Most columns a table may have.
const MAX_COLUMNS: usize = 24;
/// Least width (points) of an empty strip that separates two columns.
const MIN_COLUMN_GAP: f32 = 4.0;

/// A table found among a page's lines.
#[derive(Clone, Debug, PartialEq)]
pub struct FoundTable {
    /// The lines it takes, `start..end` in the page's line order.
    pub start: usize,
    pub end: usize,
    /// Cells, row by row; every row has one cell per column.
    pub rows: Vec<Vec<String>>,
    /// Whether the first row is a header.
    pub header: bool,
}

impl FoundTable {
    /// The table as pipe-table lines, with a rule under the header.
    pub fn render(&self, out: &mut String) {
        for (i, row) in self.rows.iter().enumerate() {
            out.push('|');
            for cell in row {
                out.push(' ');
                // A bar inside a cell would split it.
                out.push_str(&cell.replace('|', "¦"));
                out.push_str(" |");
            }
            out.push('\n');
            if i == 0 && self.header {
                out.push('|');
                out.push_str(&" --- |".repeat(row.len()));
                out.push('\n');
            }
        }
    }
}

/// The tables among a page's lines (in reading order), in order: grids of
/// `rules` first, then column alignment in the lines outside them.
pub fn find(lines: &[Line], rules: &[Rule]) -> Vec<FoundTable> {
    let mut tables: Vec<FoundTable> = grids(rules)
        .iter()
        .filter_map(|grid| grid_table(lines, grid))
        .collect();
    tables.sort_by_key(|t| t.start);
    tables.dedup_by(|later, earlier| later.start < earlier.end);
    let mut aligned = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(grid) = tables.iter().find(|t| t.start == i) {
            i = grid.end;
            continue;
        }
        let next_grid = tables.iter().map(|t| t.start).find(|&s| s > i);
        let upto = next_grid.unwrap_or(lines.len());
        match table_at(&lines[..upto], i) {
            Some(table) => {
                i = table.end;
                aligned.push(table);
            }
            None => i += 1,
        }
    }
    tables.extend(aligned);
    tables.sort_by_key(|t| t.start);
    tables
}

/// A grid of ruling lines: row borders top down, column borders left to
/// right.
#[derive(Clone, Debug, PartialEq)]
struct Grid {
    rows: Vec<f32>,
    columns: Vec<f32>,
}

/// Ruling lines closer than this (points) are one border.
const BORDER_TOLERANCE: f32 = 2.0;

/// The grids the rules form.
fn grids(rules: &[Rule]) -> Vec<Grid> {
    let mut horizontal: Vec<&Rule> = rules.iter().filter(|r| r.horizontal).collect();
    horizontal.sort_by(|a, b| b.at.total_cmp(&a.at));
    let vertical: Vec<&Rule> = rules.iter().filter(|r| !r.horizontal).collect();
    // Horizontal rules in groups spanning the same width, each group a
    // candidate grid; every rule joins the first group it overlaps.
    let mut groups: Vec<(f32, f32, Vec<f32>)> = Vec::new();
    for rule in horizontal {
        let overlaps = |(x0, x1): (f32, f32)| {
            let shared = rule.to.min(x1) - rule.from.max(x0);
            shared >= 0.5 * (rule.to - rule.from).min(x1 - x0)
        };
        match groups.iter_mut().find(|(x0, x1, _)| overlaps((*x0, *x1))) {
            Some((x0, x1, ys)) => {
                *x0 = x0.min(rule.from);
                *x1 = x1.max(rule.to);
                ys.push(rule.at);
            }
            None => groups.push((rule.from, rule.to, vec![rule.at])),
        }
    }
    groups
        .into_iter()
        .filter_map(|(x0, x1, ys)| {
            let rows = distinct(ys, |a, b| b.total_cmp(a));
            let (top, bottom) = (*rows.first()?, *rows.last()?);
            // Vertical rules inside the group's box, running along most of
            // at least one row.
            let xs: Vec<f32> = vertical
                .iter()
                .filter(|v| v.at >= x0 - BORDER_TOLERANCE && v.at <= x1 + BORDER_TOLERANCE)
                .filter(|v| v.to.min(top) - v.from.max(bottom) >= 4.0)
                .map(|v| v.at)
                .collect();
            let mut columns = distinct(xs, f32::total_cmp);
            // The outer edges bound the table even where no rule is drawn.
            if columns.first().is_none_or(|&c| c - x0 > BORDER_TOLERANCE) {
                columns.insert(0, x0);
            }
            if columns.last().is_none_or(|&c| x1 - c > BORDER_TOLERANCE) {
                columns.push(x1);
            }
            let ruled = rows.len() >= 3 && columns.len() >= 3;
            ruled.then_some(Grid { rows, columns })
        })
        .collect()
}

/// Values sorted by `order`, those within [`BORDER_TOLERANCE`] of the one
/// before dropped.
fn distinct(mut values: Vec<f32>, order: impl Fn(&f32, &f32) -> std::cmp::Ordering) -> Vec<f32> {
    values.sort_by(&order);
    values.dedup_by(|later, earlier| (*later - *earlier).abs() <= BORDER_TOLERANCE);
    values
}

/// The table a grid holds, from the lines inside it (which must follow
/// one another in reading order).
fn grid_table(lines: &[Line], grid: &Grid) -> Option<FoundTable> {
    let (top, bottom) = (*grid.rows.first()?, *grid.rows.last()?);
    let (left, right) = (*grid.columns.first()?, *grid.columns.last()?);
    let inside = |l: &Line| {
        l.baseline < top && l.baseline > bottom && l.x0 >= left - 2.0 && l.x1 <= right + 2.0
    };
    let start = lines.iter().position(inside)?;
    let end = start + lines[start..].iter().take_while(|l| inside(l)).count();
    if lines[end..].iter().any(inside) {
        // Text of the grid read apart from the rest of it: leave it.
        return None;
    }
    let mut cells = vec![vec![String::new(); grid.columns.len() - 1]; grid.rows.len() - 1];
    for line in &lines[start..end] {
        let row = grid.rows.iter().rposition(|&y| y > line.baseline)?;
        for piece in &line.pieces {
            let column = grid
                .columns
                .iter()
                .rposition(|&x| x <= piece.x0 + BORDER_TOLERANCE)
                .unwrap_or(0)
                .min(grid.columns.len() - 2);
            let cell = &mut cells[row.min(grid.rows.len() - 2)][column];
            if !cell.is_empty() {
                cell.push(' ');
            }
            cell.push_str(piece.text.trim());
        }
    }
    let mut rows: Vec<Vec<String>> = cells
        .into_iter()
        .filter(|r| r.iter().any(|c| !c.is_empty()))
        .collect();
    // Columns no row fills (a border drawn twice) are dropped.
    let filled: Vec<bool> = (0..grid.columns.len() - 1)
        .map(|c| rows.iter().any(|r| !r[c].is_empty()))
        .collect();
    for row in &mut rows {
        let mut c = 0;
        row.retain(|_| {
            c += 1;
            filled[c - 1]
        });
    }
    let columns = filled.iter().filter(|&&f| f).count();
    let empty = rows.iter().flatten().filter(|c| c.is_empty()).count();
    // Mostly empty: a form's boxes or a frame round the page, whose text
    // reads better as text.
    if rows.len() < 2 || columns < 2 || empty * 5 > rows.len() * columns * 3 {
        return None;
    }
    right_to_left(&mut rows);
    Some(FoundTable {
        start,
        end,
        header: is_header(&rows[0]),
        rows,
    })
}

/// Turns the rows of a right-to-left table round, so that each reads from
/// its first (rightmost) cell.
fn right_to_left(rows: &mut [Vec<String>]) {
    let rtl = rows
        .iter()
        .flatten()
        .flat_map(|c| c.chars())
        .filter(|c| c.is_alphabetic())
        .fold(0i64, |n, c| n + if is_rtl(c) { 1 } else { -1 });
    if rtl > 0 {
        for row in rows {
            row.reverse();
        }
    }
}

/// Whether a line may open a table run: two pieces or more, and not a
/// caption.
fn opens(line: &Line) -> bool {
    line.pieces.len() >= 2 && !is_caption(&line.text)
}

/// "Table 2-1 …", "Figure 3: …", "Example 2-1 …".
fn is_caption(text: &str) -> bool {
    let mut words = text.split_whitespace();
    let first = words.next().unwrap_or("").to_lowercase();
    let second = words.next().unwrap_or("");
    matches!(
        first.as_str(),
        "table" | "figure" | "fig." | "example" | "listing" | "chart" | "exhibit"
    ) && second.starts_with(|c: char| c.is_ascii_digit())
}

/// The table whose first line is `lines[start]`, if one starts there.
fn table_at(lines: &[Line], start: usize) -> Option<FoundTable> {
    if !opens(&lines[start]) {
        return None;
    }
    let left = lines[start].x0;
    // The run: multi-piece lines, and single pieces right of the first
    // column's start (wrapped cells), with no wide vertical gap.
    let mut end = start + 1;
    let mut pitch: Option<f32> = None;
    while end < lines.len() {
        let (previous, line) = (&lines[end - 1], &lines[end]);
        let gap = previous.baseline - line.baseline;
        let usual = pitch.unwrap_or(1.6 * line.size.max(previous.size));
        let continues = line.pieces.len() == 1 && line.x0 > left + line.size;
        if gap <= 0.0
            || gap > MAX_ROW_GAP * usual
            || !(opens(line) || continues)
            || line.x0 < left - line.size
        {
            break;
        }
        // (Two lines of one row set a hair apart say nothing of the pitch.)
        if line.pieces.len() >= 2 && gap >= 0.5 * line.size {
            pitch = Some(pitch.map_or(gap, |p| p.min(gap)));
        }
        end += 1;
    }
    // A lone piece in the first column after the last row of several
    // pieces is the first line of what follows the table, not a row.
    let columns = columns(&lines[start..end])?;
    while end > start + 1
        && lines[end - 1].pieces.len() == 1
        && column_of(&columns, &lines[end - 1].pieces[0]) == 0
    {
        end -= 1;
    }
    let run = &lines[start..end];
    if is_text_columns(run, &columns) {
        return None;
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut multi_rows = 0;
    for line in run {
        let starts_row =
            rows.is_empty() || line.pieces.len() >= 2 || column_of(&columns, &line.pieces[0]) == 0;
        if starts_row {
            rows.push(vec![String::new(); columns.len()]);
            multi_rows += usize::from(line.pieces.len() >= 2);
        }
        let row = rows.last_mut()?;
        for piece in &line.pieces {
            let cell = &mut row[column_of(&columns, piece)];
            if !cell.is_empty() {
                cell.push(' ');
            }
            cell.push_str(piece.text.trim());
        }
    }
    right_to_left(&mut rows);
    let enough = rows.len() >= 3 || (rows.len() >= 2 && columns.len() >= 3);
    if multi_rows < 2 || !enough || is_list(&rows) || is_contents(&rows) {
        return None;
    }
    let header = is_header(&rows[0]);
    if !header && rows.len() < 3 {
        // Two rows of labels without a header: a figure's callouts.
        return None;
    }
    if !header
        && rows
            .iter()
            .any(|r| r.iter().any(|c| words(c) >= PROSE_WORDS))
    {
        // Terms beside their definitions, or labels beside paragraphs:
        // running text with a hanging indent, read better as text.
        return None;
    }
    Some(FoundTable {
        start,
        end,
        rows,
        header,
    })
}

/// A cell of this many words or more is running text.
const PROSE_WORDS: usize = 8;
/// Most words in a header cell.
const HEADER_WORDS: usize = 5;

fn words(cell: &str) -> usize {
    cell.split_whitespace().count()
}

/// Whether a row is a header: every cell a short label, not a number,
/// and not the end of a clause ("Services”);" closing an entry begun on
/// the page before).
fn is_header(row: &[String]) -> bool {
    row.iter().all(|c| {
        !c.is_empty()
            && words(c) <= HEADER_WORDS
            && c.chars().any(char::is_alphabetic)
            && !c.ends_with([';', ',', '.'])
    })
}

/// The columns of a run of lines: the x ranges the pieces of its lines of
/// several pieces cover, merged where they overlap (a wrapped cell's lone
/// line may run wider). `None` unless there are two to [`MAX_COLUMNS`].
fn columns(run: &[Line]) -> Option<Vec<(f32, f32)>> {
    let mut spans: Vec<(f32, f32)> = run
        .iter()
        .filter(|l| l.pieces.len() >= 2)
        .flat_map(|l| &l.pieces)
        .map(|p| (p.x0, p.x1))
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut merged: Vec<(f32, f32)> = Vec::new();
    for (x0, x1) in spans {
        match merged.last_mut() {
            Some(last) if x0 < last.1 + MIN_COLUMN_GAP => last.1 = last.1.max(x1),
            _ => merged.push((x0, x1)),
        }
    }
    (2..=MAX_COLUMNS).contains(&merged.len()).then_some(merged)
}

/// Whether the columns are columns of running text (a page set in two
/// columns that were not read apart): two or more of them each take a
/// third of the run's width and hold mostly pieces of five words or more.
fn is_text_columns(run: &[Line], columns: &[(f32, f32)]) -> bool {
    let extent = columns.last().map_or(0.0, |c| c.1) - columns.first().map_or(0.0, |c| c.0);
    let text_columns = columns
        .iter()
        .filter(|&&(x0, x1)| x1 - x0 >= extent / 3.0)
        .filter(|&&(x0, x1)| {
            let pieces: Vec<&Piece> = run
                .iter()
                .flat_map(|l| &l.pieces)
                .filter(|p| p.x0 >= x0 - 0.5 && p.x1 <= x1 + 0.5)
                .collect();
            let wordy = pieces
                .iter()
                .filter(|p| p.text.split_whitespace().count() >= 5)
                .count();
            wordy * 2 > pieces.len()
        })
        .count();
    text_columns >= 2
}

/// The column a piece falls in.
fn column_of(columns: &[(f32, f32)], piece: &Piece) -> usize {
    columns
        .iter()
        .rposition(|&(x0, _)| x0 <= piece.x0 + 0.5)
        .unwrap_or(0)
}

/// Whether the rows are a list: a first column of markers only, or of
/// nothing, before text.
fn is_list(rows: &[Vec<String>]) -> bool {
    rows.iter()
        .all(|row| row.first().is_none_or(|c| c.is_empty() || is_marker(c)))
}

/// A list marker or clause number ("1.", "(a)", "•", "5.1"), or a short
/// label closed by a full stop or bracket ("A.", "IV.", "B)"), which
/// would be an initial in running text but in a column of its own marks
/// an item.
fn is_marker(cell: &str) -> bool {
    let cell = cell.trim();
    let label = cell.strip_suffix(['.', ')']).unwrap_or("");
    is_list_marker(cell)
        || (!label.is_empty()
            && label.chars().count() <= 4
            && label.chars().all(char::is_alphanumeric))
}

/// Whether the rows are a table of contents: a last column of page
/// numbers (below a header), which the contents pass reads.
fn is_contents(rows: &[Vec<String>]) -> bool {
    let page_number = |c: &str| {
        let c = c.trim().trim_start_matches(['.', ' ']);
        !c.is_empty()
            && (c.chars().all(|ch| ch.is_ascii_digit())
                || crate::parse::numerals::roman_value(c).is_some())
    };
    let body = &rows[1..];
    !body.is_empty()
        && body
            .iter()
            .all(|row| row.last().is_some_and(|c| page_number(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(x0: f32, text: &str) -> Piece {
        let x1 = x0 + 5.0 * text.chars().count() as f32;
        Piece {
            x0,
            x1,
            text: text.into(),
            xs: Vec::new(),
        }
    }

    fn line(baseline: f32, pieces: &[(f32, &str)]) -> Line {
        let pieces: Vec<Piece> = pieces.iter().map(|&(x, t)| piece(x, t)).collect();
        Line {
            text: pieces
                .iter()
                .map(|p| p.text.as_str())
                .collect::<Vec<_>>()
                .join("   "),
            x0: pieces[0].x0,
            x1: pieces.last().map_or(0.0, |p| p.x1),
            baseline,
            size: 9.0,
            bold: false,
            pieces,
            xs: Vec::new(),
        }
    }

    #[test]
    fn aligned_columns_with_wrapped_cells_form_a_table() {
        let lines = vec![
            line(520.0, &[(137.0, "Functions are listed below.")]),
            line(
                506.0,
                &[(137.0, "Table 2-1"), (181.0, "FUNCTION_USAGE view")],
            ),
            line(
                489.0,
                &[
                    (143.0, "Column name"),
                    (217.0, "Data type"),
                    (289.0, "Description"),
                ],
            ),
            line(
                470.0,
                &[
                    (143.0, "FUNCTION_ID"),
                    (217.0, "VARCHAR(30)"),
                    (289.0, "ID."),
                ],
            ),
            line(
                451.0,
                &[
                    (143.0, "USER_NAME"),
                    (217.0, "VARCHAR(10)"),
                    (289.0, "Name of the"),
                ],
            ),
            line(440.0, &[(289.0, "user.")]),
            line(
                421.0,
                &[(143.0, "USAGE"), (217.0, "VARCHAR(7)"), (289.0, "Usage:")],
            ),
            line(410.0, &[(304.0, "ALLOWED.")]),
            line(
                395.0,
                &[(160.0, "An indented paragraph follows the table,")],
            ),
            line(380.0, &[(137.0, "long enough to be prose.")]),
        ];
        let tables = find(&lines, &[]);
        assert_eq!(tables.len(), 1, "{tables:?}");
        let table = &tables[0];
        assert_eq!((table.start, table.end), (2, 8));
        assert!(table.header);
        assert_eq!(
            table.rows,
            vec![
                vec!["Column name", "Data type", "Description"],
                vec!["FUNCTION_ID", "VARCHAR(30)", "ID."],
                vec!["USER_NAME", "VARCHAR(10)", "Name of the user."],
                vec!["USAGE", "VARCHAR(7)", "Usage: ALLOWED."],
            ]
        );
        let mut out = String::new();
        table.render(&mut out);
        assert!(
            out.starts_with("| Column name | Data type | Description |\n| --- | --- | --- |\n")
        );
    }

    fn rule(horizontal: bool, at: f32, from: f32, to: f32) -> Rule {
        Rule {
            horizontal,
            at,
            from,
            to,
        }
    }

    #[test]
    fn a_ruled_grid_keeps_cells_set_on_several_lines_whole() {
        // Rows between rules at 500, 470, 430, 400; columns at 72, 150, 400.
        let mut rules: Vec<Rule> = [500.0, 470.0, 430.0, 400.0]
            .iter()
            .map(|&y| rule(true, y, 72.0, 400.0))
            .collect();
        rules.extend(
            [72.0, 150.0, 400.0]
                .iter()
                .map(|&x| rule(false, x, 400.0, 500.0)),
        );
        let lines = vec![
            line(520.0, &[(72.0, "Above the table.")]),
            line(485.0, &[(80.0, "Class"), (160.0, "Diseases")]),
            line(455.0, &[(160.0, "Cholera, typhoid")]),
            line(448.0, &[(80.0, "Group 1")]),
            line(441.0, &[(160.0, "and dysentery")]),
            line(415.0, &[(80.0, "Group 2"), (160.0, "Measles")]),
            line(380.0, &[(72.0, "Below the table.")]),
        ];
        let tables = find(&lines, &rules);
        assert_eq!(tables.len(), 1, "{tables:?}");
        assert_eq!((tables[0].start, tables[0].end), (1, 6));
        assert_eq!(
            tables[0].rows,
            vec![
                vec!["Class", "Diseases"],
                vec!["Group 1", "Cholera, typhoid and dysentery"],
                vec!["Group 2", "Measles"],
            ]
        );
        assert!(tables[0].header);
    }

    #[test]
    fn centred_numbers_share_a_column() {
        let lines = vec![
            line(444.0, &[(247.0, "Model"), (289.0, "TEDs"), (395.0, "mAP")]),
            line(430.0, &[(247.0, "OTSL"), (289.0, "0.965"), (397.0, "0.88")]),
            line(416.0, &[(247.0, "HTML"), (290.0, "0.96"), (395.0, "0.853")]),
        ];
        let tables = find(&lines, &[]);
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].rows[2], vec!["HTML", "0.96", "0.853"]);
    }

    #[test]
    fn lists_captions_and_prose_are_not_tables() {
        let list = vec![
            line(
                500.0,
                &[(72.0, "1."), (100.0, "The Supplier shall deliver")],
            ),
            line(488.0, &[(100.0, "the goods on time.")]),
            line(476.0, &[(72.0, "2."), (100.0, "The Buyer shall pay")]),
            line(464.0, &[(72.0, "(a)"), (100.0, "within thirty days")]),
        ];
        assert!(find(&list, &[]).is_empty());
        let captions = vec![
            line(500.0, &[(72.0, "Table 1"), (120.0, "Fees")]),
            line(400.0, &[(72.0, "Figure 2"), (120.0, "Flow")]),
        ];
        assert!(find(&captions, &[]).is_empty());
        // One line with a wide gap, then prose: no second row.
        let prose = vec![
            line(500.0, &[(72.0, "Signed"), (300.0, "Dated")]),
            line(488.0, &[(72.0, "The parties agree as follows.")]),
        ];
        assert!(find(&prose, &[]).is_empty());
        let recitals = vec![
            line(500.0, &[(72.0, "A."), (100.0, "Whereas the Licensor owns")]),
            line(488.0, &[(100.0, "the marks;")]),
            line(
                476.0,
                &[(72.0, "B."), (100.0, "Whereas the Licensee wishes")],
            ),
        ];
        assert!(find(&recitals, &[]).is_empty());
        let contents = vec![
            line(500.0, &[(72.0, "Clause"), (400.0, "Page")]),
            line(488.0, &[(72.0, "1. Definitions"), (400.0, "6")]),
            line(476.0, &[(72.0, "2. Term"), (400.0, "15")]),
        ];
        assert!(find(&contents, &[]).is_empty());
    }
}
