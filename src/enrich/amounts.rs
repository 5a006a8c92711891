//! Money amounts and percentages.
//!
//! Money is a currency marker and a figure: a symbol or ISO code before the
//! figure ("$1,250,000", "US$5", "USD 5 million", "€3.2bn", "£100") or a
//! currency word or code after it ("10 million dollars", "500 EUR",
//! "100 pounds sterling"). A bare "$" is read as US dollars, as it is in
//! the vast majority of English business documents; "C$", "A$", "HK$" and
//! friends name their own dollars. "pounds" alone is not a currency (it is
//! as often a weight); "pounds sterling" is. Amounts written only in words
//! ("Eleven Thousand Dollars") are not read; contracts nearly always repeat
//! them in figures, which are.

use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde::Serialize;

use super::compile;
use super::cues::{Cues, Edges};

/// A money amount found in a sentence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MoneyAmount {
    /// The amount as written.
    pub text: String,
    /// ISO 4217 code of the currency.
    pub currency: &'static str,
    /// The value in units of the currency, multipliers applied ("$5m" →
    /// 5000000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount: Option<f64>,
}

/// A percentage found in a sentence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Percentage {
    /// The percentage as written.
    pub text: String,
    /// The number of percent: "12.5 percent" → 12.5.
    pub value: f64,
}

/// Currency markers written before the figure, longest first so that
/// "US$" is never read as a bare "$".
const PREFIXES: [(&str, &str); 29] = [
    ("U.S.$", "USD"),
    ("US$", "USD"),
    ("CA$", "CAD"),
    ("AU$", "AUD"),
    ("NZ$", "NZD"),
    ("HK$", "HKD"),
    ("C$", "CAD"),
    ("A$", "AUD"),
    ("S$", "SGD"),
    ("R$", "BRL"),
    ("$", "USD"),
    ("€", "EUR"),
    ("£", "GBP"),
    ("¥", "JPY"),
    ("₹", "INR"),
    ("USD", "USD"),
    ("EUR", "EUR"),
    ("GBP", "GBP"),
    ("JPY", "JPY"),
    ("CHF", "CHF"),
    ("CAD", "CAD"),
    ("AUD", "AUD"),
    ("NZD", "NZD"),
    ("HKD", "HKD"),
    ("SGD", "SGD"),
    ("CNY", "CNY"),
    ("RMB", "CNY"),
    ("INR", "INR"),
    ("SEK", "SEK"),
];

/// Currency words and codes written after the figure (matched
/// case-insensitively for words).
const SUFFIXES: [(&str, &str); 8] = [
    ("u.s. dollars", "USD"),
    ("us dollars", "USD"),
    ("dollars", "USD"),
    ("dollar", "USD"),
    ("euros", "EUR"),
    ("euro", "EUR"),
    ("pounds sterling", "GBP"),
    ("yen", "JPY"),
];

const NUMBER: &str = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?";
const MULTIPLIER: &str = r"(?i:thousand|million|billion|trillion)|mn|bn|MM|MN|BN";

static MONEY: LazyLock<Regex> = LazyLock::new(|| {
    let symbols: Vec<String> = PREFIXES
        .iter()
        .map(|(marker, _)| {
            if marker.chars().all(|c| c.is_ascii_uppercase()) {
                format!(r"(?-u:\b){marker}")
            } else {
                regex::escape(marker)
            }
        })
        .collect();
    let codes: Vec<&str> = PREFIXES
        .iter()
        .map(|(marker, _)| *marker)
        .filter(|m| m.chars().all(|c| c.is_ascii_uppercase()))
        .collect();
    let words: Vec<String> = SUFFIXES
        .iter()
        .map(|(word, _)| regex::escape(word).replace(' ', r"\s+"))
        .collect();
    compile(&format!(
        r"(?x)
        (?P<prefix>{symbols})\s?(?P<num>{NUMBER})
            (?:\s?(?P<mult>{MULTIPLIER})(?-u:\b)|(?P<short>[mMkKbB])(?-u:\b))?
      | (?-u:\b)(?P<num_after>{NUMBER})(?:\s?(?P<mult_after>{MULTIPLIER})(?-u:\b))?\s*
            (?P<suffix>(?:(?i:{words})|{codes})(?-u:\b)|€)
    ",
        symbols = symbols.join("|"),
        words = words.join("|"),
        codes = codes.join("|"),
    ))
});

static PERCENT: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"(?-u:\b)(?P<num>\d+(?:\.\d+)?)\s?(?:%|(?i:percent|per\s?cent|pct)(?-u:\b))")
});

/// What every match of [`MONEY`] contains besides a digit: a currency
/// marker or code as written ("$", "€", "USD"), or the last word of a
/// currency name in any case ("dollars", "sterling").
pub(super) fn money_cues() -> Cues {
    Cues {
        exact: PREFIXES
            .iter()
            .map(|(marker, _)| marker.to_string())
            .collect(),
        caseless: SUFFIXES
            .iter()
            .filter_map(|(name, _)| name.split(' ').next_back())
            .map(String::from)
            .collect(),
        exact_edges: Edges::ANYWHERE,
        caseless_edges: Edges::CLOSING,
        needs_digit: true,
    }
}

/// What every match of [`PERCENT`] contains besides a digit: "%", or in
/// any case "percent", "pct", or "per" and "cent" with one whitespace
/// character between them (`\s?` in the pattern: Unicode's White_Space,
/// which `char::is_whitespace` follows, all of it below U+3001). "cent"
/// alone would cover all three spellings, but it is also in "century",
/// "center" and "recent", which share their sentences with numbers: in
/// SQuAD it sent 330 of 5,220 sentences to the pattern. Each word closes a
/// word where it is cued, as the pattern asks ("percentage" is none).
pub(super) fn percentage_cues() -> Cues {
    let spaced = pattern_whitespace().map(|space| format!("per{space}cent"));
    Cues {
        exact: vec!["%".to_string()],
        caseless: ["percent", "pct"]
            .map(String::from)
            .into_iter()
            .chain(spaced)
            .collect(),
        exact_edges: Edges::ANYWHERE,
        caseless_edges: Edges::CLOSING,
        needs_digit: true,
    }
}

/// Every character the pattern's `\s` matches: `char::is_whitespace`,
/// all of it below U+3001 (pinned over all of Unicode by a test).
fn pattern_whitespace() -> impl Iterator<Item = char> {
    ('\0'..='\u{3000}').filter(|c| c.is_whitespace())
}

/// The money amounts of a sentence, in order of appearance.
pub fn find_money(text: &str) -> Vec<MoneyAmount> {
    if !text.bytes().any(|b| b.is_ascii_digit()) {
        return Vec::new();
    }
    MONEY
        .captures_iter(text)
        .filter_map(|caps| read_money(&caps))
        .collect()
}

fn read_money(caps: &Captures) -> Option<MoneyAmount> {
    let (currency, number, multiplier) = match caps.name("prefix") {
        Some(prefix) => {
            let currency = PREFIXES
                .iter()
                .find(|(marker, _)| *marker == prefix.as_str())?
                .1;
            let multiplier = caps.name("mult").or(caps.name("short"));
            (currency, caps.name("num")?, multiplier)
        }
        None => {
            let suffix = caps.name("suffix")?.as_str();
            let folded = suffix.split_whitespace().collect::<Vec<_>>().join(" ");
            let currency = SUFFIXES
                .iter()
                .chain(PREFIXES.iter())
                .find(|(word, _)| word.eq_ignore_ascii_case(&folded))?
                .1;
            (currency, caps.name("num_after")?, caps.name("mult_after"))
        }
    };
    let factor = multiplier.map_or(Some(1.0), |m| multiplier_value(m.as_str()));
    let amount = number
        .as_str()
        .replace(',', "")
        .parse::<f64>()
        .ok()
        .zip(factor)
        .map(|(n, f)| n * f);
    Some(MoneyAmount {
        text: caps.get(0)?.as_str().to_string(),
        currency,
        amount,
    })
}

fn multiplier_value(word: &str) -> Option<f64> {
    Some(match word.to_ascii_lowercase().as_str() {
        "k" | "thousand" => 1e3,
        "m" | "mn" | "mm" | "million" => 1e6,
        "b" | "bn" | "billion" => 1e9,
        "trillion" => 1e12,
        _ => return None,
    })
}

/// The percentages of a sentence, in order of appearance. "percentage"
/// and "percentile" are not percentages.
pub fn find_percentages(text: &str) -> Vec<Percentage> {
    if !text.bytes().any(|b| b.is_ascii_digit()) {
        return Vec::new();
    }
    PERCENT
        .captures_iter(text)
        .filter_map(|caps| {
            Some(Percentage {
                text: caps.get(0)?.as_str().to_string(),
                value: caps.name("num")?.as_str().parse().ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::cues::{Cued, Extractor, glued};
    use super::*;

    /// The cues are necessary: every spelling [`PERCENT`] reads is handed
    /// to [`find_percentages`] by the screen, with any whitespace the
    /// pattern allows between "per" and "cent".
    #[test]
    fn every_form_of_percentage_holds_a_cue() {
        let spaced = pattern_whitespace().map(|space| format!("up 5 PER{space}Cent"));
        let forms = [
            "up 5%",
            "up 5 %",
            "5.5 percent",
            "5 Per Cent",
            "5 PerCent",
            "5 pct",
        ];
        for text in forms.map(String::from).into_iter().chain(spaced) {
            assert!(!find_percentages(&text).is_empty(), "{text:?}");
            let cued = Cued::of(&text, Cued::only([Extractor::Percentages]));
            assert!(cued.may_match(Extractor::Percentages), "{text:?}");
        }
        let century = Cued::of("the 19th century", Cued::only([Extractor::Percentages]));
        assert!(!century.may_match(Extractor::Percentages));
    }

    /// The cues list "per" and "cent" around each character of
    /// [`pattern_whitespace`]: exactly what the pattern's `\s` matches.
    #[test]
    fn the_pattern_and_the_cues_agree_on_whitespace() {
        let space = regex::Regex::new(r"^\s$").expect("a valid pattern");
        let listed: std::collections::BTreeSet<char> = pattern_whitespace().collect();
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            let mut buffer = [0; 4];
            let matched = space.is_match(c.encode_utf8(&mut buffer));
            assert_eq!(matched, listed.contains(&c), "U+{:04X}", c as u32);
        }
    }

    fn money(text: &str) -> Vec<(String, &'static str, Option<f64>)> {
        find_money(text)
            .into_iter()
            .map(|m| (m.text, m.currency, m.amount))
            .collect()
    }

    #[test]
    fn symbols_and_codes_before_the_figure() {
        assert_eq!(
            money("a fee of $1,250,000 payable"),
            [("$1,250,000".into(), "USD", Some(1_250_000.0))]
        );
        assert_eq!(
            money("USD 5 million in cash"),
            [("USD 5 million".into(), "USD", Some(5e6))]
        );
        assert_eq!(money("€3.2bn"), [("€3.2bn".into(), "EUR", Some(3.2e9))]);
        assert_eq!(money("only £100."), [("£100".into(), "GBP", Some(100.0))]);
        assert_eq!(money("$100.00"), [("$100.00".into(), "USD", Some(100.0))]);
        assert_eq!(money("$5m"), [("$5m".into(), "USD", Some(5e6))]);
        assert_eq!(
            money("Eleven Thousand Dollars ($11,000) per month"),
            [("$11,000".into(), "USD", Some(11_000.0))]
        );
    }

    #[test]
    fn dollar_sign_inside_other_markers() {
        assert_eq!(money("US$250"), [("US$250".into(), "USD", Some(250.0))]);
        assert_eq!(money("C$ 40"), [("C$ 40".into(), "CAD", Some(40.0))]);
        assert_eq!(
            money("HK$1,000"),
            [("HK$1,000".into(), "HKD", Some(1000.0))]
        );
        assert!(money("prices in US$ only").is_empty());
    }

    #[test]
    fn currency_words_after_the_figure() {
        assert_eq!(
            money("10 million dollars"),
            [("10 million dollars".into(), "USD", Some(1e7))]
        );
        assert_eq!(money("500 EUR."), [("500 EUR".into(), "EUR", Some(500.0))]);
        assert_eq!(
            money("100 pounds sterling"),
            [("100 pounds sterling".into(), "GBP", Some(100.0))]
        );
        assert_eq!(money("100 €"), [("100 €".into(), "EUR", Some(100.0))]);
        assert!(money("10 pounds of flour").is_empty());
        assert!(money("the Dollar amount").is_empty());
    }

    #[test]
    fn percentages() {
        let values = |text: &str| -> Vec<f64> {
            find_percentages(text)
                .into_iter()
                .map(|p| p.value)
                .collect()
        };
        assert_eq!(values("thirty percent (30%) of"), [30.0]);
        assert_eq!(values("5% and 12.5 percent"), [5.0, 12.5]);
        assert_eq!(values("10 per cent"), [10.0]);
        assert!(values("a percentage of 10 items").is_empty());
        assert!(values("10 percentile").is_empty());
        assert!(values("percent").is_empty());
        assert_eq!(find_percentages("12.5 percent")[0].text, "12.5 percent");
    }

    proptest::proptest! {
        /// The cues are necessary where a currency word or "percent" runs
        /// into the letters around it: a text the screen passes over holds
        /// no amount.
        #[test]
        fn amounts_in_running_words_are_cued(
            text in glued(
                &[
                    "euro", "Euros", "EURO", "pean", "dollar", "s", "sterling", "yen", "pounds ",
                    "percent", "PerCent", "per cent", "pct", "age", "ile", "%", "$", "€", "EUR",
                    "5", "1.5", " ", "_", "x", "é", "ſ", "m ", "million ",
                ],
                10,
            ),
        ) {
            let cued = Cued::of(&text, Cued::only([Extractor::Money, Extractor::Percentages]));
            if !find_money(&text).is_empty() {
                proptest::prop_assert!(cued.may_match(Extractor::Money), "{:?}", text);
            }
            if !find_percentages(&text).is_empty() {
                proptest::prop_assert!(cued.may_match(Extractor::Percentages), "{:?}", text);
            }
        }
    }
}
