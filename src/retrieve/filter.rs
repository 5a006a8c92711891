//! Access filters: which sentences a query may see. They apply before any
//! ranking and to every expansion hop (stage 1 searches only admitted
//! sentences, stage 2 drops the neighbours it may not show), so nothing
//! outside them is ever scored or shown.

use crate::enrich::TypedValue;
use crate::index::{DocumentRecord, IndexVersion, SentenceNumber};
use crate::parse::DateRange;

/// Which sentences a caller may see and wants.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// ACL tags the caller holds; `None` for all documents.
    pub acl: Option<Vec<String>>,
    /// Only these documents (by key or id).
    pub documents: Option<Vec<String>>,
    /// Only sentences under this heading path.
    pub section_prefix: Option<Vec<String>>,
    /// Only documents whose metadata has every one of these values.
    pub metadata: Option<std::collections::BTreeMap<String, String>>,
    /// Only documents whose key lies under this path ("this folder").
    pub path_prefix: Option<String>,
    /// Only documents whose author names this, ignoring case.
    pub author: Option<String>,
    /// Only documents dated within this range.
    pub dated: Option<DateRange>,
    /// Only documents in this language; "en" takes "en-GB" too.
    pub language: Option<String>,
    /// Only sentences stating values that meet these conditions.
    pub values: Option<ValueFilter>,
    /// Only documents with a form field of each of these names (ignoring
    /// case) holding the value given ([`crate::parse::FieldValue::matches`]).
    pub fields: Option<std::collections::BTreeMap<String, String>>,
}

/// Conditions on the values a sentence states ([`TypedValue`]): each one
/// given must be met by some value of the sentence.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValueFilter {
    /// An amount of money within this range…
    pub amount: Option<NumberRange>,
    /// …in this currency (ISO 4217, any case); alone, any amount in it.
    pub currency: Option<String>,
    /// A percentage within this range.
    pub percent: Option<NumberRange>,
    /// A date or period lying wholly within this range.
    pub dated: Option<DateRange>,
}

impl ValueFilter {
    /// Whether `values` meet every condition.
    pub fn admits(&self, values: &[TypedValue]) -> bool {
        let money = self.amount.is_some() || self.currency.is_some();
        (!money
            || values.iter().any(|v| match v {
                TypedValue::Money { amount, currency } => {
                    self.amount.is_none_or(|range| range.contains(*amount))
                        && self
                            .currency
                            .as_deref()
                            .is_none_or(|c| c.trim().eq_ignore_ascii_case(currency))
                }
                _ => false,
            }))
            && self.percent.is_none_or(|range| {
                values
                    .iter()
                    .any(|v| matches!(v, TypedValue::Percent { value } if range.contains(*value)))
            })
            && self.dated.as_ref().is_none_or(|range| {
                values.iter().any(
                    |v| matches!(v, TypedValue::Date { from, to, .. } if range.holds(from, to)),
                )
            })
    }
}

/// A range of numbers, each bound optional: `gt`/`gte` below, `lt`/`lte`
/// above.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NumberRange {
    pub gt: Option<f64>,
    pub gte: Option<f64>,
    pub lt: Option<f64>,
    pub lte: Option<f64>,
}

impl NumberRange {
    pub fn contains(&self, x: f64) -> bool {
        self.gt.is_none_or(|b| x > b)
            && self.gte.is_none_or(|b| x >= b)
            && self.lt.is_none_or(|b| x < b)
            && self.lte.is_none_or(|b| x <= b)
    }
}

/// `>1,000,000`, `>=5`, `<5`, `<=5`, `=5` or `100..500` (both ends in);
/// commas in a figure are read as thousands separators.
impl std::str::FromStr for NumberRange {
    type Err = String;

    fn from_str(text: &str) -> Result<NumberRange, String> {
        let number = |t: &str| {
            t.trim()
                .replace(',', "")
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| {
                    format!("{text:?} is not a number range (>N, >=N, <N, <=N, =N or A..B)")
                })
        };
        let text = text.trim();
        Ok(if let Some((low, high)) = text.split_once("..") {
            NumberRange {
                gte: Some(number(low)?),
                lte: Some(number(high)?),
                ..NumberRange::default()
            }
        } else if let Some(n) = text.strip_prefix(">=") {
            NumberRange {
                gte: Some(number(n)?),
                ..NumberRange::default()
            }
        } else if let Some(n) = text.strip_prefix("<=") {
            NumberRange {
                lte: Some(number(n)?),
                ..NumberRange::default()
            }
        } else if let Some(n) = text.strip_prefix('>') {
            NumberRange {
                gt: Some(number(n)?),
                ..NumberRange::default()
            }
        } else if let Some(n) = text.strip_prefix('<') {
            NumberRange {
                lt: Some(number(n)?),
                ..NumberRange::default()
            }
        } else {
            let n = number(text.strip_prefix('=').unwrap_or(text))?;
            NumberRange {
                gte: Some(n),
                lte: Some(n),
                ..NumberRange::default()
            }
        })
    }
}

/// What one query may see: its documents (ACL tags, keys, metadata), its
/// sections (heading prefix), and sentences sure enough to rank.
pub(super) struct Access<'a> {
    index: &'a IndexVersion,
    /// One entry per document of the index version.
    pub documents: Vec<bool>,
    /// Conditions on the values each sentence states.
    values: Option<ValueFilter>,
    /// One entry per section, with a section prefix.
    sections: Option<Vec<bool>>,
    confidence_floor: f32,
}

impl<'a> Access<'a> {
    pub(super) fn new(index: &'a IndexVersion, filter: &Filter, confidence_floor: f32) -> Self {
        let sections = filter.section_prefix.as_ref().map(|prefix| {
            index
                .store
                .sections
                .iter()
                .map(|section| section_under(&section.path, prefix))
                .collect::<Vec<bool>>()
        });
        Access {
            index,
            documents: Self::documents(index, filter),
            values: filter.values.clone(),
            sections,
            confidence_floor,
        }
    }

    /// Whether sentence `i` may be ranked and shown.
    pub(super) fn admits(&self, i: SentenceNumber) -> bool {
        let s = &self.index.store.sentences[i];
        s.indexed
            && self.documents[s.document.index()]
            && s.confidence >= self.confidence_floor
            && self
                .sections
                .as_ref()
                .is_none_or(|sections| sections[s.section.index()])
            && self.values.as_ref().is_none_or(|v| v.admits(&s.values))
    }

    fn documents(index: &IndexVersion, filter: &Filter) -> Vec<bool> {
        let filled = filter
            .fields
            .as_ref()
            .map(|wanted| with_fields(index, wanted));
        index
            .store
            .documents
            .iter()
            .enumerate()
            .map(|(n, d)| {
                let acl_ok = filter.acl.as_ref().is_none_or(|tags| {
                    tags.iter().any(|t| t == "*") || d.acl.iter().any(|a| tags.contains(a))
                });
                let doc_ok = filter
                    .documents
                    .as_ref()
                    .is_none_or(|ids| ids.iter().any(|x| *x == d.key || *x == d.id));
                let metadata_ok = filter.metadata.as_ref().is_none_or(|wanted| {
                    wanted
                        .iter()
                        .all(|(key, value)| d.metadata.get(key) == Some(value))
                });
                let fields_ok = filled.as_ref().is_none_or(|filled| filled[n]);
                acl_ok && doc_ok && metadata_ok && fields_ok && described(d, filter)
            })
            .collect()
    }
}

/// Per document of `index`: whether every field `wanted` names is one of
/// its form fields holding the value wanted.
fn with_fields(
    index: &IndexVersion,
    wanted: &std::collections::BTreeMap<String, String>,
) -> Vec<bool> {
    let mut met = vec![vec![false; wanted.len()]; index.store.documents.len()];
    for section in &index.store.sections {
        let Some(met) = met.get_mut(section.document.index()) else {
            continue;
        };
        for field in &section.fields {
            for (held, (name, value)) in met.iter_mut().zip(wanted) {
                *held |= field.is_named(name) && field.value.matches(value);
            }
        }
    }
    met.into_iter()
        .map(|m| m.into_iter().all(|held| held))
        .collect()
}

/// Whether a document's key and own metadata pass the filter's path,
/// author, date and language conditions. A document without the field
/// asked about does not.
fn described(d: &DocumentRecord, filter: &Filter) -> bool {
    let info = &d.info;
    filter
        .path_prefix
        .as_deref()
        .is_none_or(|prefix| path_under(&d.key, prefix))
        && filter.author.as_deref().is_none_or(|wanted| {
            info.author.as_deref().is_some_and(|author| {
                author
                    .to_lowercase()
                    .contains(&wanted.trim().to_lowercase())
            })
        })
        && filter.dated.as_ref().is_none_or(|range| {
            info.date
                .as_deref()
                .is_some_and(|date| range.contains(date))
        })
        && filter.language.as_deref().is_none_or(|wanted| {
            info.language
                .as_deref()
                .is_some_and(|language| language_matches(language, wanted))
        })
}

/// Whether `key` lies under `prefix`, a whole path component at a time:
/// "contracts/2023" takes "contracts/2023/msa.pdf" and not
/// "contracts/2023-old/msa.pdf".
fn path_under(key: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    if prefix.is_empty() {
        return true;
    }
    key.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether a language tag is `wanted` or a variant of it ("en-GB" of
/// "en"), ignoring case and `_` for `-`.
fn language_matches(language: &str, wanted: &str) -> bool {
    let norm = |tag: &str| tag.trim().replace('_', "-").to_ascii_lowercase();
    let (language, wanted) = (norm(language), norm(wanted));
    language == wanted
        || language
            .strip_prefix(&wanted)
            .is_some_and(|rest| rest.starts_with('-'))
}

/// Whether a section with heading path `path` lies under `prefix`. Each
/// heading of the prefix matches its heading in the path case-insensitively,
/// with or without the path heading's numbering ("Governing Law" matches
/// "2. Governing Law"), so that a caller need not know how a document
/// numbers its sections.
fn section_under(path: &[String], prefix: &[String]) -> bool {
    prefix.len() <= path.len()
        && path
            .iter()
            .zip(prefix)
            .all(|(heading, wanted)| heading_matches(heading, wanted))
}

fn heading_matches(heading: &str, wanted: &str) -> bool {
    let heading = heading.trim();
    let wanted = wanted.trim();
    if heading.eq_ignore_ascii_case(wanted) {
        return true;
    }
    // Strip a leading numbering token ("2.", "4.1", "(a)", "IV.", "A)"),
    // with the word that introduces it ("Article IV.", "Section 5").
    let Some((first, rest)) = heading.split_once(char::is_whitespace) else {
        return false;
    };
    const LABELS: [&str; 9] = [
        "article", "section", "chapter", "part", "clause", "schedule", "annex", "appendix",
        "exhibit",
    ];
    let (number, rest) = if LABELS.iter().any(|l| first.eq_ignore_ascii_case(l)) {
        match rest.trim_start().split_once(char::is_whitespace) {
            Some(split) => split,
            None => return false,
        }
    } else {
        (first, rest)
    };
    let numbering = number.chars().any(|c| c.is_ascii_digit())
        || number.ends_with('.')
        || number.ends_with(')');
    numbering && rest.trim().eq_ignore_ascii_case(wanted)
}

#[cfg(test)]
mod tests {
    use super::{NumberRange, ValueFilter, language_matches, path_under, section_under};
    use crate::enrich::{DateGranularity, TypedValue};

    #[test]
    fn value_conditions_are_met_by_some_value_of_the_sentence() {
        let values = [
            TypedValue::Money {
                amount: 2_500_000.0,
                currency: "USD".into(),
            },
            TypedValue::Percent { value: 7.5 },
            TypedValue::Date {
                from: "2023-10-01".into(),
                to: "2023-12-31".into(),
                granularity: DateGranularity::FiscalQuarter,
            },
        ];
        let admits = |filter: ValueFilter| filter.admits(&values);
        let range = |t: &str| t.parse::<NumberRange>().unwrap();
        assert!(admits(ValueFilter {
            amount: Some(range(">1,000,000")),
            currency: Some("usd".into()),
            ..Default::default()
        }));
        assert!(!admits(ValueFilter {
            currency: Some("EUR".into()),
            ..Default::default()
        }));
        assert!(!admits(ValueFilter {
            amount: Some(range("<=2,000,000")),
            ..Default::default()
        }));
        assert!(admits(ValueFilter {
            percent: Some(range("5..10")),
            dated: Some("2023".parse().unwrap()),
            ..Default::default()
        }));
        assert!(!admits(ValueFilter {
            dated: Some("2023-11".parse().unwrap()),
            ..Default::default()
        }));
        assert!(ValueFilter::default().admits(&[]));
        assert!(
            !ValueFilter {
                percent: Some(range(">0")),
                ..Default::default()
            }
            .admits(&[])
        );
        assert_eq!(range("=5"), range("5..5"));
        for bad in ["", ">", "five", "1..", ">=x"] {
            assert!(bad.parse::<NumberRange>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_path_prefix_takes_whole_components_and_a_language_its_variants() {
        assert!(path_under("contracts/2023/msa.pdf", "contracts/2023"));
        assert!(path_under("contracts/2023/msa.pdf", "contracts/2023/"));
        assert!(path_under("contracts/2023/msa.pdf", ""));
        assert!(!path_under("contracts/2023-old/msa.pdf", "contracts/2023"));
        assert!(language_matches("en-GB", "en"));
        assert!(language_matches("en_gb", "EN-gb"));
        assert!(!language_matches("eng", "en"));
    }

    fn path(headings: &[&str]) -> Vec<String> {
        headings.iter().map(|h| h.to_string()).collect()
    }

    #[test]
    fn a_section_prefix_matches_with_or_without_numbering() {
        let section = path(&["ARTICLE IV. Payment", "4.1 Fees", "(a) Late fees"]);
        assert!(section_under(&section, &path(&["Payment"])));
        assert!(section_under(
            &section,
            &path(&["article iv. payment", "Fees"])
        ));
        assert!(section_under(
            &section,
            &path(&["Payment", "4.1 Fees", "Late fees"])
        ));
        assert!(section_under(&section, &[]));
        assert!(!section_under(&section, &path(&["Fees"])));
        assert!(!section_under(
            &section,
            &path(&["Payment", "Fees", "Late", "More"])
        ));
        assert!(!section_under(&path(&["Payments"]), &path(&["Payment"])));
        // A heading whose first word is not numbering keeps it.
        assert!(!section_under(
            &path(&["General Provisions"]),
            &path(&["Provisions"])
        ));
    }
}
