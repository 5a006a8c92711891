//! Units in table headers: a row or cell that holds only units ("USD m",
//! "%", "in thousands", "€bn"), and the unit a column's header gives.
//! The chunker keeps a units row with the header it follows; the
//! skeleton's table objects record each column's unit.

use std::borrow::Cow;

use super::Table;

/// Whether a row holds only units ("USD m", "%", "in thousands", "€bn"):
/// such a row right after the header belongs to the header.
pub fn is_units_row(row: &[String]) -> bool {
    let mut cells = row.iter().filter(|c| !c.is_empty()).peekable();
    cells.peek().is_some() && cells.all(|c| is_units_cell(c))
}

pub fn is_units_cell(cell: &str) -> bool {
    if cell.chars().count() > 24 {
        return false;
    }
    let mut strong = false;
    for word in cell
        .split(|c: char| c.is_whitespace() || "()[]/,".contains(c))
        .filter(|w| !w.is_empty())
    {
        match unit_word(word) {
            Some(UnitWord::Strong) => strong = true,
            Some(UnitWord::Weak) => {}
            None => return false,
        }
    }
    strong
}

/// How surely a word names a unit.
enum UnitWord {
    /// A currency, a percentage, a scale word or a multi-letter unit.
    Strong,
    /// A single letter ("m", "k", "x"): a unit only beside a strong word,
    /// as in "USD m".
    Weak,
}

fn unit_word(word: &str) -> Option<UnitWord> {
    const CURRENCY_SYMBOLS: &[char] = &['$', '€', '£', '¥', '₹', '₩', '₽', '₺', '₪', '฿'];
    const CURRENCY_CODES: &[&str] = &[
        "usd", "eur", "gbp", "jpy", "chf", "cny", "rmb", "cad", "aud", "nzd", "sek", "nok", "dkk",
        "inr", "brl", "mxn", "zar", "krw", "hkd", "sgd", "rub", "try", "pln", "czk", "huf",
    ];
    const SCALES: &[&str] = &[
        "", "k", "m", "mn", "mm", "bn", "b", "t", "tn", "000", "'000", "000s",
    ];
    const UNITS: &[&str] = &[
        "%",
        "pp",
        "bp",
        "bps",
        "in",
        "per",
        "mn",
        "mm",
        "bn",
        "tn",
        "000",
        "'000",
        "000s",
        "thousand",
        "thousands",
        "million",
        "millions",
        "billion",
        "billions",
        "units",
        "unit",
        "kg",
        "km",
        "cm",
        "hrs",
        "hours",
        "days",
        "years",
        "months",
        "fte",
        "kwh",
        "mwh",
        "gwh",
        "tco2e",
        "pcs",
        "no.",
        "number",
    ];
    const LETTERS: &[&str] = &["x", "k", "m", "b", "t", "g", "h"];
    let lower: Cow<'_, str> = if word.chars().any(char::is_uppercase) {
        Cow::Owned(word.to_lowercase())
    } else {
        Cow::Borrowed(word)
    };
    // "$", "€bn", "USD", "USDm".
    let after_symbol = lower.trim_start_matches(CURRENCY_SYMBOLS);
    let currency = after_symbol.len() < lower.len();
    let (currency, scale) = match CURRENCY_CODES
        .iter()
        .find_map(|code| after_symbol.strip_prefix(code))
    {
        Some(rest) => (true, rest),
        None => (currency, after_symbol),
    };
    if currency && SCALES.contains(&scale) {
        return Some(UnitWord::Strong);
    }
    if UNITS.contains(&lower.as_ref()) {
        return Some(UnitWord::Strong);
    }
    LETTERS.contains(&lower.as_ref()).then_some(UnitWord::Weak)
}

impl Table {
    /// Per column, the unit its header gives, if any: the cell of a units
    /// row right after the header rows ("USD m"), else the unit a header
    /// label ends with, in brackets ("Fee (USD)", "Margin [%]") or after a
    /// comma ("Revenue, EUR m"), else a label that is a unit alone ("%").
    pub fn column_units(&self) -> Vec<Option<String>> {
        let header_rows = self.header_rows.min(self.rows.len());
        let units_row = self
            .rows
            .get(header_rows)
            .filter(|row| header_rows > 0 && is_units_row(row));
        let labels = self.column_labels();
        labels
            .iter()
            .enumerate()
            .map(|(c, label)| {
                if let Some(cell) = units_row
                    .and_then(|row| row.get(c))
                    .filter(|c| !c.is_empty())
                {
                    return Some(cell.clone());
                }
                label_unit(label)
            })
            .collect()
    }

    /// Whether row `r` is the units row right after the header rows (part
    /// of the header, not data).
    pub fn is_units_row_at(&self, r: usize) -> bool {
        r == self.header_rows
            && self.header_rows > 0
            && self.rows.get(r).is_some_and(|row| is_units_row(row))
    }
}

/// The unit a header label ends with, or is.
fn label_unit(label: &str) -> Option<String> {
    let label = label.trim();
    if label.is_empty() {
        return None;
    }
    for (open, close) in [('(', ')'), ('[', ']')] {
        if let Some(inner) = label
            .strip_suffix(close)
            .and_then(|rest| rest.rsplit_once(open))
            .map(|(_, inner)| inner.trim())
            && is_units_cell(inner)
        {
            return Some(inner.to_string());
        }
    }
    if let Some((_, tail)) = label.rsplit_once(',')
        && is_units_cell(tail.trim())
    {
        return Some(tail.trim().to_string());
    }
    // The last header row's part of a label joined over several rows.
    let last = label.rsplit(" / ").next().unwrap_or(label);
    is_units_cell(last).then(|| last.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_rows_are_recognised() {
        let row = |cells: &[&str]| cells.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        assert!(is_units_row(&row(&["", "USD m", "%"])));
        assert!(is_units_row(&row(&["", "(€bn)", "in thousands"])));
        assert!(!is_units_row(&row(&["Setup", "Yes", "No"])));
        assert!(!is_units_row(&row(&["2024", "12.5", "%"])));
        assert!(!is_units_row(&row(&["", ""])));
        // A lone letter may be data ("x" marks a cell).
        assert!(!is_units_row(&row(&["x", "m"])));
        assert!(is_units_row(&row(&["USDm", "$", "kg"])));
    }

    #[test]
    fn a_columns_unit_comes_from_a_units_row_or_its_label() {
        let table = |rows: &[&[&str]], header_rows| Table {
            header_rows,
            rows: rows
                .iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect(),
            ..Table::default()
        };
        let labelled = table(
            &[
                &["Item", "Fee (USD)", "Margin [%]", "Revenue, EUR m", "Share"],
                &["Setup", "100", "12", "3.4", "half"],
            ],
            1,
        );
        assert_eq!(
            labelled.column_units(),
            vec![
                None,
                Some("USD".into()),
                Some("%".into()),
                Some("EUR m".into()),
                None
            ]
        );
        let units_row = table(
            &[
                &["Metric", "2024", "2023"],
                &["", "USD m", "%"],
                &["Revenue", "1", "2"],
            ],
            1,
        );
        assert_eq!(
            units_row.column_units(),
            vec![None, Some("USD m".into()), Some("%".into())]
        );
        assert!(units_row.is_units_row_at(1) && !units_row.is_units_row_at(2));
        // Without header rows nothing is a label.
        assert_eq!(
            table(&[&["a (USD)", "b"]], 0).column_units(),
            vec![None, None]
        );
    }
}
