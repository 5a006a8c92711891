//! Charts (`word/charts/chartN.xml`) → a table of their cached data.
//!
//! A chart's numbers are content a reader sees (and asks about), and Word
//! keeps a cache of them in the chart part: categories down, series across,
//! captioned with the chart's title (or its kind, "Line chart", when it has
//! none).

use std::collections::BTreeMap;

use super::xml::{Ns, Visit, XmlReader};
use crate::parse::{ParseFailure, Table};

/// One series: its name and values by category index.
#[derive(Debug, Default)]
struct Series {
    name: String,
    categories: BTreeMap<u64, String>,
    values: BTreeMap<u64, String>,
}

/// Which cache a data point belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cache {
    Name,
    Category,
    Value,
}

/// Reads a chart part into a captioned table; `None` when it caches no
/// data.
pub(super) fn read_chart(
    text: &str,
    part: &str,
    max_depth: u32,
) -> Result<Option<Table>, ParseFailure> {
    let mut series: Vec<Series> = Vec::new();
    let mut title = String::new();
    let mut kind: Option<String> = None;
    let mut point: Option<u64> = None;
    let mut reader = XmlReader::new(text, part, max_depth);
    reader.visit_all(|visit| match visit {
        Visit::Element(path, e) => {
            let in_plot = path.iter().any(|p| p == "plotArea");
            match e.local() {
                local if in_plot && e.ns == Ns::Chart && local.ends_with("Chart") => {
                    kind.get_or_insert_with(|| local.to_string());
                }
                "ser" if e.ns == Ns::Chart => series.push(Series::default()),
                "pt" if e.ns == Ns::Chart => {
                    point = e.attr("idx").and_then(|i| i.trim().parse().ok());
                }
                _ => {}
            }
        }
        Visit::Text(path, text) => {
            let last = path.last().map(String::as_str);
            if last == Some("t")
                && path.iter().any(|p| p == "title")
                && !path.iter().any(|p| p == "ser")
            {
                title.push_str(text);
                return;
            }
            if last != Some("v") {
                return;
            }
            let Some(current) = series.last_mut() else {
                return;
            };
            let cache = if path.iter().any(|p| p == "tx") {
                Cache::Name
            } else if path.iter().any(|p| p == "cat" || p == "xVal") {
                Cache::Category
            } else if path.iter().any(|p| p == "val" || p == "yVal") {
                Cache::Value
            } else {
                return;
            };
            match (cache, point) {
                (Cache::Name, _) => current.name.push_str(text),
                (Cache::Category, Some(i)) => {
                    current.categories.entry(i).or_default().push_str(text)
                }
                (Cache::Value, Some(i)) => current.values.entry(i).or_default().push_str(text),
                _ => {}
            }
        }
    })?;
    if series.iter().all(|s| s.values.is_empty()) {
        return Ok(None);
    }
    let mut categories: BTreeMap<u64, String> = BTreeMap::new();
    for s in &series {
        for (i, name) in &s.categories {
            categories.entry(*i).or_insert_with(|| name.clone());
        }
        for i in s.values.keys() {
            categories.entry(*i).or_default();
        }
    }
    let mut rows = vec![
        std::iter::once(String::new())
            .chain(series.iter().map(|s| s.name.trim().to_string()))
            .collect::<Vec<_>>(),
    ];
    for (i, category) in &categories {
        let mut row = vec![tidy_number(category)];
        row.extend(
            series
                .iter()
                .map(|s| s.values.get(i).map(|v| tidy_number(v)).unwrap_or_default()),
        );
        rows.push(row);
    }
    let title = title.trim();
    let caption = if title.is_empty() {
        kind.map(|k| kind_name(&k))
    } else {
        Some(title.to_string())
    };
    Ok(Some(Table {
        caption,
        header_rows: 1,
        rows,
        ..Table::default()
    }))
}

/// "lineChart" → "Line chart", "bar3DChart" → "Bar chart".
fn kind_name(kind: &str) -> String {
    let base = kind.trim_end_matches("Chart").trim_end_matches("3D");
    let mut chars = base.chars();
    match chars.next() {
        Some(first) => format!("{}{} chart", first.to_uppercase(), chars.as_str()),
        None => "Chart".to_string(),
    }
}

/// Spreadsheet caches hold binary floats ("4.4000000000000004"): show them
/// to 15 significant digits, as the spreadsheet does. Text stays as is.
fn tidy_number(value: &str) -> String {
    let value = value.trim();
    let Ok(x) = value.parse::<f64>() else {
        return value.to_string();
    };
    if x == 0.0 || !x.is_finite() {
        return value.to_string();
    }
    let magnitude = x.abs().log10().floor() as i32 + 1;
    let decimals = 15 - magnitude;
    if !(0..=15).contains(&decimals) {
        return value.to_string();
    }
    let fixed = format!("{x:.*}", decimals as usize);
    if fixed.contains('.') {
        fixed
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        fixed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_become_columns_and_categories_rows() {
        let xml = r#"<c:chartSpace xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart"><c:chart><c:plotArea><c:barChart>
          <c:ser><c:tx><c:strRef><c:strCache><c:pt idx="0"><c:v>Revenue</c:v></c:pt></c:strCache></c:strRef></c:tx>
            <c:cat><c:strRef><c:strCache><c:pt idx="0"><c:v>2023</c:v></c:pt><c:pt idx="1"><c:v>2024</c:v></c:pt></c:strCache></c:strRef></c:cat>
            <c:val><c:numRef><c:numCache><c:pt idx="0"><c:v>4.4000000000000004</c:v></c:pt><c:pt idx="1"><c:v>12</c:v></c:pt></c:numCache></c:numRef></c:val></c:ser>
        </c:barChart></c:plotArea></c:chart></c:chartSpace>"#;
        let table = read_chart(xml, "word/charts/chart1.xml", 64)
            .unwrap()
            .unwrap();
        assert_eq!(table.caption.as_deref(), Some("Bar chart"));
        assert_eq!(
            table.rows,
            vec![vec!["", "Revenue"], vec!["2023", "4.4"], vec!["2024", "12"]]
        );
    }
}
