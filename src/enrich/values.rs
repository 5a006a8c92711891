//! Typed values: the amounts, percentages, dates and fiscal periods a
//! sentence states, as numbers and calendar spans, for exact filters
//! ("an amount over 1,000,000", "dated in 2023") that words cannot give.
//!
//! A fiscal period is read as the calendar period of the same name
//! ("FY2024" as 2024, "Q4-2024" as October to December 2024): a document
//! rarely says where its fiscal year starts. Its granularity says it is a
//! fiscal period, so a caller can tell.

use serde::{Deserialize, Serialize};

use super::SentenceAnnotations;

/// A value a sentence states.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TypedValue {
    /// An amount of money, multipliers applied ("$5m" is 5,000,000), in
    /// the currency's ISO 4217 code.
    Money { amount: f64, currency: String },
    /// A percentage: the number of percent.
    Percent { value: f64 },
    /// A date or period, as its first and last day (`YYYY-MM-DD`).
    Date {
        from: String,
        to: String,
        granularity: DateGranularity,
    },
}

/// How fine a dated value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DateGranularity {
    Day,
    FiscalQuarter,
    FiscalHalf,
    FiscalYear,
}

/// The typed values of a sentence's notes, in the order: amounts,
/// percentages, dates, fiscal periods. An amount whose figure was not
/// read has none.
pub fn typed_values(notes: &SentenceAnnotations) -> Vec<TypedValue> {
    let mut values = Vec::new();
    values.extend(notes.amounts.iter().filter_map(|a| {
        Some(TypedValue::Money {
            amount: a.amount.filter(|x| x.is_finite())?,
            currency: a.currency.to_string(),
        })
    }));
    values.extend(
        notes
            .percentages
            .iter()
            .filter(|p| p.value.is_finite())
            .map(|p| TypedValue::Percent { value: p.value }),
    );
    values.extend(notes.dates.iter().map(|d| TypedValue::Date {
        from: d.date.clone(),
        to: d.date.clone(),
        granularity: DateGranularity::Day,
    }));
    values.extend(
        notes
            .fiscal_periods
            .iter()
            .filter_map(|p| fiscal_span(&p.period)),
    );
    values
}

/// The calendar span of a normalised fiscal period ("FY2024", "Q4-2024",
/// "H1-2023").
fn fiscal_span(period: &str) -> Option<TypedValue> {
    let span = |from: String, to: String, granularity| {
        Some(TypedValue::Date {
            from,
            to,
            granularity,
        })
    };
    if let Some(year) = period.strip_prefix("FY") {
        let year: u32 = year.parse().ok()?;
        return span(
            format!("{year:04}-01-01"),
            format!("{year:04}-12-31"),
            DateGranularity::FiscalYear,
        );
    }
    let (part, year) = period.split_once('-')?;
    let year: u32 = year.parse().ok()?;
    let (months, granularity) = match part {
        "Q1" => ((1, 3), DateGranularity::FiscalQuarter),
        "Q2" => ((4, 6), DateGranularity::FiscalQuarter),
        "Q3" => ((7, 9), DateGranularity::FiscalQuarter),
        "Q4" => ((10, 12), DateGranularity::FiscalQuarter),
        "H1" => ((1, 6), DateGranularity::FiscalHalf),
        "H2" => ((7, 12), DateGranularity::FiscalHalf),
        _ => return None,
    };
    let (_, last) = crate::parse::info::date_bounds(&format!("{year:04}-{:02}", months.1))?;
    span(format!("{year:04}-{:02}-01", months.0), last, granularity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fiscal_periods_are_their_calendar_namesakes() {
        let date = |p| match fiscal_span(p) {
            Some(TypedValue::Date {
                from,
                to,
                granularity,
            }) => (from, to, granularity),
            other => panic!("{p}: {other:?}"),
        };
        assert_eq!(
            date("FY2024"),
            (
                "2024-01-01".into(),
                "2024-12-31".into(),
                DateGranularity::FiscalYear
            )
        );
        assert_eq!(
            date("Q1-2024"),
            (
                "2024-01-01".into(),
                "2024-03-31".into(),
                DateGranularity::FiscalQuarter
            )
        );
        assert_eq!(
            date("H2-2023"),
            (
                "2023-07-01".into(),
                "2023-12-31".into(),
                DateGranularity::FiscalHalf
            )
        );
        assert_eq!(fiscal_span("Q5-2024"), None);
    }

    #[test]
    fn a_sentences_amounts_percentages_and_dates_are_typed() {
        use crate::enrich::{DateMention, FiscalPeriod, MoneyAmount, Percentage};
        let notes = SentenceAnnotations {
            dates: vec![DateMention {
                text: "March 31, 2024".into(),
                date: "2024-03-31".into(),
            }],
            amounts: vec![
                MoneyAmount {
                    text: "$1.5 million".into(),
                    currency: "USD",
                    amount: Some(1_500_000.0),
                },
                MoneyAmount {
                    text: "$ several".into(),
                    currency: "USD",
                    amount: None,
                },
            ],
            percentages: vec![Percentage {
                text: "12.5%".into(),
                value: 12.5,
            }],
            fiscal_periods: vec![FiscalPeriod {
                text: "FY2024".into(),
                period: "FY2024".into(),
            }],
            ..Default::default()
        };
        let values = typed_values(&notes);
        assert_eq!(values.len(), 4, "an amount without a figure has no value");
        assert!(values.contains(&TypedValue::Money {
            amount: 1_500_000.0,
            currency: "USD".into()
        }));
        assert!(values.contains(&TypedValue::Percent { value: 12.5 }));
        assert!(values.contains(&TypedValue::Date {
            from: "2024-03-31".into(),
            to: "2024-03-31".into(),
            granularity: DateGranularity::Day
        }));
        assert!(values.iter().any(|v| matches!(
            v,
            TypedValue::Date {
                granularity: DateGranularity::FiscalYear,
                ..
            }
        )));
    }
}
