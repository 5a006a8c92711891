//! Fiscal periods: years, quarters and halves, normalised to "FY2024",
//! "Q4-2024" and "H1-2023".
//!
//! Recognised forms: "FY2024", "FY 2024", "FY24", "FY'24", "fiscal 2024",
//! "fiscal year 2024"; "Q4 2024", "Q4-2024", "Q4'24", "Q4 FY24", "4Q24",
//! "fourth quarter of 2024"; "H1 2023", "H1-2023", "1H23", "first half of
//! fiscal 2023". Two-digit years are read with a pivot: 00–49 are 20xx,
//! 50–99 are 19xx. The "FY" and "Q"/"H" markers must be upper case, so
//! words such as "fy" or "h1" in running text are not read.

use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde::Serialize;

use super::compile;
use super::cues::{Cues, Edges};

/// A fiscal period found in a sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FiscalPeriod {
    /// The period as written.
    pub text: String,
    /// The normalised period: "FY2024", "Q4-2024" or "H1-2023".
    pub period: String,
}

/// Written with an explicit separator or space, a year may be two or four
/// digits; an apostrophe marks a two-digit year.
const YEAR: &str = r"(?:'?\d{2}|\d{4})";

static PERIOD: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        r"(?x)
        (?-u:\b)FY\s?(?P<fy>{YEAR})(?-u:\b)
      | (?-u:\b)(?i:fiscal)\s+(?:(?i:year)\s+)?(?P<fiscal>\d{{4}})(?-u:\b)
      | (?-u:\b)Q(?P<q>[1-4])(?:\s*[-–/]\s*|\s+|')(?:FY\s?)?(?P<q_year>{YEAR})(?-u:\b)
      | (?-u:\b)(?P<nq>[1-4])Q\s?(?P<nq_year>{YEAR})(?-u:\b)
      | (?-u:\b)H(?P<h>[12])(?:\s*[-–/]\s*|\s+|')(?:FY\s?)?(?P<h_year>{YEAR})(?-u:\b)
      | (?-u:\b)(?P<nh>[12])H\s?(?P<nh_year>{YEAR})(?-u:\b)
      | (?-u:\b)(?P<wq>(?i:first|second|third|fourth))\s+(?i:quarter)\s+(?:(?i:of)\s+)?
          (?:(?i:fiscal)\s+(?:(?i:year)\s+)?)?(?P<wq_year>\d{{4}})(?-u:\b)
      | (?-u:\b)(?P<wh>(?i:first|second))\s+(?i:half)\s+(?:(?i:of)\s+)?
          (?:(?i:fiscal)\s+(?:(?i:year)\s+)?)?(?P<wh_year>\d{{4}})(?-u:\b)
    "
    ))
});

/// What every match of [`PERIOD`] contains besides a digit: "FY", a
/// quarter or half with its number on either side ("Q4", "4Q", "H1", "1H"),
/// or the words "fiscal", "quarter" or "half" in any case, each a whole
/// word (the pattern has a word boundary or whitespace on both sides of
/// each, so "behalf" and "quarterly" cue nothing).
pub(super) fn cues() -> Cues {
    let mut exact = vec!["FY".to_string()];
    for n in 1..=4 {
        exact.push(format!("Q{n}"));
        exact.push(format!("{n}Q"));
    }
    for n in 1..=2 {
        exact.push(format!("H{n}"));
        exact.push(format!("{n}H"));
    }
    Cues {
        exact,
        caseless: ["fiscal", "quarter", "half"].map(String::from).to_vec(),
        exact_edges: Edges::OPENING,
        caseless_edges: Edges::WHOLE,
        needs_digit: true,
    }
}

/// The fiscal periods of a sentence, in order of appearance.
pub fn find_periods(text: &str) -> Vec<FiscalPeriod> {
    if !text.bytes().any(|b| b.is_ascii_digit()) {
        return Vec::new();
    }
    PERIOD
        .captures_iter(text)
        .filter_map(|caps| {
            Some(FiscalPeriod {
                text: caps.get(0)?.as_str().to_string(),
                period: normalise(&caps)?,
            })
        })
        .collect()
}

fn normalise(caps: &Captures) -> Option<String> {
    let group = |name: &str| caps.name(name).map(|m| m.as_str());
    if let Some(year) = group("fy").or(group("fiscal")) {
        return Some(format!("FY{}", full_year(year)?));
    }
    let quarter = group("q")
        .zip(group("q_year"))
        .or(group("nq").zip(group("nq_year")));
    if let Some((q, year)) = quarter {
        return Some(format!("Q{q}-{}", full_year(year)?));
    }
    let half = group("h")
        .zip(group("h_year"))
        .or(group("nh").zip(group("nh_year")));
    if let Some((h, year)) = half {
        return Some(format!("H{h}-{}", full_year(year)?));
    }
    if let Some((word, year)) = group("wq").zip(group("wq_year")) {
        return Some(format!("Q{}-{}", ordinal(word)?, full_year(year)?));
    }
    let (word, year) = group("wh").zip(group("wh_year"))?;
    Some(format!("H{}-{}", ordinal(word)?, full_year(year)?))
}

/// "2024" → 2024; "24" and "'24" → 2024; "99" → 1999.
fn full_year(written: &str) -> Option<u32> {
    let digits = written.trim_start_matches('\'');
    let value: u32 = digits.parse().ok()?;
    Some(match digits.len() {
        2 if value < 50 => 2000 + value,
        2 => 1900 + value,
        _ => value,
    })
}

fn ordinal(word: &str) -> Option<u8> {
    ["first", "second", "third", "fourth"]
        .iter()
        .position(|o| o.eq_ignore_ascii_case(word))
        .map(|i| i as u8 + 1)
}

#[cfg(test)]
mod tests {
    use super::super::cues::{Cued, Extractor, glued};
    use super::*;

    fn periods(text: &str) -> Vec<String> {
        find_periods(text).into_iter().map(|p| p.period).collect()
    }

    #[test]
    fn fiscal_years() {
        assert_eq!(periods("Revenue in FY2024 rose"), ["FY2024"]);
        assert_eq!(periods("in FY 2024"), ["FY2024"]);
        assert_eq!(periods("in FY24 and FY'99"), ["FY2024", "FY1999"]);
        assert_eq!(periods("for fiscal year 2024"), ["FY2024"]);
        assert_eq!(periods("Fiscal 2023 results"), ["FY2023"]);
    }

    #[test]
    fn quarters_and_halves() {
        assert_eq!(periods("Q4-2024 sales"), ["Q4-2024"]);
        assert_eq!(periods("Q4 2024 sales"), ["Q4-2024"]);
        assert_eq!(periods("4Q24 sales"), ["Q4-2024"]);
        assert_eq!(periods("Q1 FY25 guidance"), ["Q1-2025"]);
        assert_eq!(periods("H1 2023 margin"), ["H1-2023"]);
        assert_eq!(periods("1H23 margin"), ["H1-2023"]);
        assert_eq!(periods("the fourth quarter of 2024"), ["Q4-2024"]);
        assert_eq!(periods("the second half of fiscal year 2023"), ["H2-2023"]);
    }

    #[test]
    fn non_periods() {
        assert!(periods("Section 4.2 of the 2024 plan").is_empty());
        assert!(periods("Q5 2024 and H3 2023").is_empty());
        assert!(periods("the fy2024 budget").is_empty());
        assert!(periods("fiscal matters").is_empty());
        assert!(periods("model 4Q240 engine").is_empty());
        assert!(periods("quarterly fees").is_empty());
    }

    proptest::proptest! {
        /// The cues are necessary where "fiscal", "quarter" or "half" run
        /// into the letters around them: a text the screen passes over
        /// holds no period.
        #[test]
        fn periods_among_running_words_are_cued(
            text in glued(
                &[
                    "fiscal", "FISCAL", "quarter", "Half", "be", "ly", "first", "Second", " ",
                    "FY", "Q3", "3Q", "H1", "2H", "Q", "5",
                    "of ", "year ", "2024", "24", "x", "_", "é", "ſ", "-",
                ],
                12,
            ),
        ) {
            let cued = Cued::of(&text, Cued::only([Extractor::FiscalPeriods]));
            if !find_periods(&text).is_empty() {
                proptest::prop_assert!(cued.may_match(Extractor::FiscalPeriods), "{:?}", text);
            }
        }
    }
}
