//! What a document says about itself: its author, date, version and
//! language, as its format records them (DOCX core properties, PDF
//! document info and XMP, HTML `<meta>`, Markdown front matter). The title
//! is the tree's own [`DocumentTree::title`](super::DocumentTree::title).
//!
//! Dates are kept only in a form the API can compare: `YYYY`, `YYYY-MM` or
//! `YYYY-MM-DD`, as precise as the document gives them ([`iso_date`]). A
//! date in another form is left out with a warning rather than guessed.

use serde::{Deserialize, Serialize};

/// Longest value kept of one field, in characters: metadata is a label,
/// and a field holding a whole text is not one.
const MAX_FIELD_CHARS: usize = 300;

/// A document's own metadata, each field where the document gives it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DocumentInfo {
    /// The author or authors, as written (several joined by `; `).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// When it was written or issued: `YYYY`, `YYYY-MM` or `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// Its version or revision, as written ("2.1", "Draft 3").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Its language tag, as declared ("en", "en-GB").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

impl DocumentInfo {
    pub fn is_empty(&self) -> bool {
        self == &DocumentInfo::default()
    }

    /// Sets each field `other` has and this one does not: the first source
    /// read wins.
    pub fn fill_from(&mut self, other: DocumentInfo) {
        self.author = self.author.take().or(other.author);
        self.date = self.date.take().or(other.date);
        self.version = self.version.take().or(other.version);
        self.language = self.language.take().or(other.language);
    }
}

/// The fields of a document's metadata, read one key at a time.
#[derive(Debug, Default, PartialEq)]
pub struct InfoReader {
    info: DocumentInfo,
    /// A date the reader could not put in ISO form, for a warning.
    pub unread_date: Option<String>,
}

/// The metadata fields a key may fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Author,
    Date,
    Version,
    Language,
}

impl InfoReader {
    /// Sets `field` to `value` unless it is set already or `value` is
    /// empty. A date is kept only in ISO form.
    pub fn set(&mut self, field: Field, value: &str) {
        let Some(value) = clean(value) else {
            return;
        };
        let slot = match field {
            Field::Author => &mut self.info.author,
            Field::Version => &mut self.info.version,
            Field::Language => &mut self.info.language,
            Field::Date => match iso_date(&value) {
                Some(date) => {
                    if self.info.date.is_none() {
                        self.info.date = Some(date);
                    }
                    return;
                }
                None => {
                    self.unread_date.get_or_insert(value);
                    return;
                }
            },
        };
        if slot.is_none() {
            *slot = Some(value);
        }
    }

    /// The metadata read, and the warning for a date that was not
    /// understood (and left out), if any.
    pub fn finish(self) -> (DocumentInfo, Option<String>) {
        let warning = match (&self.info.date, self.unread_date) {
            (None, Some(raw)) => Some(format!(
                "the document's date {raw:?} is not in a form Trellis reads \
                 (YYYY, YYYY-MM or YYYY-MM-DD); it is left out of the metadata"
            )),
            _ => None,
        };
        (self.info, warning)
    }
}

/// `value` with runs of whitespace collapsed, or `None` when it is empty
/// or holds control characters (bytes of a string that did not decode).
fn clean(value: &str) -> Option<String> {
    if value.chars().any(|c| c.is_control() && !c.is_whitespace()) {
        return None;
    }
    let value = super::collapse_whitespace(value);
    if value.is_empty() {
        return None;
    }
    Some(match value.char_indices().nth(MAX_FIELD_CHARS) {
        Some((at, _)) => value[..at].to_string(),
        None => value,
    })
}

/// `raw` as `YYYY`, `YYYY-MM` or `YYYY-MM-DD`, as precise as it is:
/// ISO 8601 dates and date-times ("2023-04-15T10:00:00Z"), with `/` or `.`
/// between the parts, and PDF dates ("D:20230415103000+02'00'"). `None`
/// for anything else, or a date the calendar does not have.
pub fn iso_date(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if let Some(digits) = raw.strip_prefix("D:") {
        return compact_date(digits);
    }
    let date = raw.split(['T', ' ']).next().unwrap_or(raw);
    let parts: Vec<&str> = date.split(['-', '/', '.']).collect();
    if parts.len() == 1 {
        return compact_date(date);
    }
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let numbers: Option<Vec<u32>> = parts
        .iter()
        .map(|p| {
            p.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| p.parse().ok())?
        })
        .collect();
    let numbers = numbers?;
    if parts[0].len() != 4 || parts[1..].iter().any(|p| p.len() > 2) {
        return None;
    }
    format_date(numbers[0], numbers.get(1).copied(), numbers.get(2).copied())
}

/// A date of digits only, `YYYY[MM[DD[…]]]`, the rest (a time) ignored.
fn compact_date(digits: &str) -> Option<String> {
    let digits: String = digits.chars().take_while(char::is_ascii_digit).collect();
    let number = |range: std::ops::Range<usize>| digits.get(range)?.parse::<u32>().ok();
    let year = number(0..4)?;
    match digits.len() {
        4 => format_date(year, None, None),
        5 => None,
        6 | 7 => format_date(year, number(4..6), None),
        _ => format_date(year, number(4..6), number(6..8)),
    }
}

fn format_date(year: u32, month: Option<u32>, day: Option<u32>) -> Option<String> {
    if !(1000..=2999).contains(&year) {
        return None;
    }
    match (month, day) {
        (None, _) => Some(format!("{year:04}")),
        (Some(m), None) => (1..=12).contains(&m).then(|| format!("{year:04}-{m:02}")),
        (Some(m), Some(d)) => {
            is_calendar_day(year, m, d).then(|| format!("{year:04}-{m:02}-{d:02}"))
        }
    }
}

/// Whether a year, month and day name a real calendar day (Gregorian,
/// years 1000–2999).
pub fn is_calendar_day(year: u32, month: u32, day: u32) -> bool {
    (1000..=2999).contains(&year)
        && (1..=12).contains(&month)
        && (1..=days_in_month(year, month)).contains(&day)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The first and last day a date written `YYYY`, `YYYY-MM` or
/// `YYYY-MM-DD` stands for, as `YYYY-MM-DD` strings, which compare as the
/// dates do: "2023" runs from "2023-01-01" to "2023-12-31". The form is
/// checked (years 1000–2999, months 01–12, days 01–31, two digits each)
/// and nothing more: a day the month does not have ("2023-02-30") is a
/// period no date falls in, so that every string of the form
/// [`DATE_RANGE_PATTERN`] describes means something.
pub fn date_bounds(date: &str) -> Option<(String, String)> {
    let two = |part: &str, range: std::ops::RangeInclusive<u32>| {
        (part.len() == 2 && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse::<u32>().ok())
            .flatten()
            .filter(|n| range.contains(n))
    };
    let mut parts = date.split('-');
    let year = parts.next()?;
    if year.len() != 4 || !year.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let year: u32 = year.parse().ok().filter(|y| (1000..=2999).contains(y))?;
    Some(match (parts.next(), parts.next(), parts.next()) {
        (None, _, _) => (format!("{year:04}-01-01"), format!("{year:04}-12-31")),
        (Some(m), None, _) => {
            let m = two(m, 1..=12)?;
            (
                format!("{year:04}-{m:02}-01"),
                format!("{year:04}-{m:02}-{:02}", days_in_month(year, m)),
            )
        }
        (Some(m), Some(d), None) => {
            let (m, d) = (two(m, 1..=12)?, two(d, 1..=31)?);
            let day = format!("{year:04}-{m:02}-{d:02}");
            (day.clone(), day)
        }
        _ => return None,
    })
}

/// The form of a date range ([`DateRange`]'s `FromStr`), as a JSON Schema
/// pattern: a date, or two joined by `..` with either left out.
pub const DATE_RANGE_PATTERN: &str = "^([12][0-9]{3}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?(\\.\\.([12][0-9]{3}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?)?)?|\\.\\.[12][0-9]{3}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?)$";

/// A span of calendar days, both ends included, either end open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DateRange {
    /// The first day, `YYYY-MM-DD`.
    pub from: Option<String>,
    /// The last day, `YYYY-MM-DD`.
    pub to: Option<String>,
}

impl DateRange {
    /// The whole period `date` stands for: "2023" is the year.
    pub fn period(date: &str) -> Result<DateRange, String> {
        let (from, to) = date_bounds(date).ok_or_else(|| not_a_date(date))?;
        Ok(DateRange {
            from: Some(from),
            to: Some(to),
        })
    }

    /// From the first day of `from` to the last day of `to`: "2022" to
    /// "2023-06" runs from 2022-01-01 to 2023-06-30. One that ends before
    /// it starts holds no date.
    pub fn between(from: Option<&str>, to: Option<&str>) -> Result<DateRange, String> {
        let from = from
            .map(|d| date_bounds(d).map(|b| b.0).ok_or_else(|| not_a_date(d)))
            .transpose()?;
        let to = to
            .map(|d| date_bounds(d).map(|b| b.1).ok_or_else(|| not_a_date(d)))
            .transpose()?;
        // A range that ends before it starts holds no date.
        Ok(DateRange { from, to })
    }

    /// Whether the whole period of `date` (an ISO date of [`iso_date`])
    /// lies in the range: a document dated only "2023" is in a range of
    /// that year or wider, not in one of April 2023.
    pub fn contains(&self, date: &str) -> bool {
        let Some((start, end)) = date_bounds(date) else {
            return false;
        };
        self.holds(&start, &end)
    }

    /// Whether the days `start` to `end` (`YYYY-MM-DD`) lie in the range.
    pub fn holds(&self, start: &str, end: &str) -> bool {
        self.from.as_deref().is_none_or(|from| start >= from)
            && self.to.as_deref().is_none_or(|to| end <= to)
    }
}

/// `2023` (that period), `2022-07..2023-06` (from the first day of one
/// to the last day of the other), `2023..` or `..2023-06` (open at one
/// end).
impl std::str::FromStr for DateRange {
    type Err = String;

    fn from_str(text: &str) -> Result<DateRange, String> {
        match text.split_once("..") {
            None => DateRange::period(text),
            Some((from, to)) => {
                if from.is_empty() && to.is_empty() {
                    return Err("a date range needs at least one end (\"2023..\")".to_string());
                }
                DateRange::between(
                    (!from.is_empty()).then_some(from),
                    (!to.is_empty()).then_some(to),
                )
            }
        }
    }
}

fn not_a_date(date: &str) -> String {
    format!("{date:?} is not a date in the form YYYY, YYYY-MM or YYYY-MM-DD")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_read_as_precisely_as_they_are_written() {
        assert_eq!(iso_date("2023-04-15").as_deref(), Some("2023-04-15"));
        assert_eq!(
            iso_date("2023-04-15T10:30:00Z").as_deref(),
            Some("2023-04-15")
        );
        assert_eq!(iso_date("2023/4/5").as_deref(), Some("2023-04-05"));
        assert_eq!(iso_date("2023-04").as_deref(), Some("2023-04"));
        assert_eq!(iso_date("2023").as_deref(), Some("2023"));
        assert_eq!(
            iso_date("D:20230415103000+02'00'").as_deref(),
            Some("2023-04-15")
        );
        assert_eq!(iso_date("D:202304").as_deref(), Some("2023-04"));
        assert_eq!(iso_date("20230415").as_deref(), Some("2023-04-15"));
        for unread in [
            "April 15, 2023",
            "15/04/2023",
            "2023-02-30",
            "2023-13",
            "0999",
            "",
            "D:",
        ] {
            assert_eq!(iso_date(unread), None, "{unread}");
        }
        assert_eq!(iso_date("2024-02-29").as_deref(), Some("2024-02-29"));
        assert_eq!(iso_date("2023-02-29"), None);
    }

    #[test]
    fn a_date_stands_for_its_whole_period() {
        let bounds = |d| date_bounds(d).unwrap();
        assert_eq!(bounds("2023"), ("2023-01-01".into(), "2023-12-31".into()));
        assert_eq!(
            bounds("2024-02"),
            ("2024-02-01".into(), "2024-02-29".into())
        );
        assert_eq!(
            bounds("2024-02-03"),
            ("2024-02-03".into(), "2024-02-03".into())
        );
    }

    #[test]
    fn a_range_holds_the_dates_whose_whole_period_it_covers() {
        let year = DateRange::period("2023").unwrap();
        assert!(year.contains("2023") && year.contains("2023-04") && year.contains("2023-12-31"));
        assert!(!year.contains("2024-01-01") && !year.contains("not a date"));
        let april = DateRange::period("2023-04").unwrap();
        assert!(!april.contains("2023"), "a year is not within a month");
        let since = DateRange::between(Some("2022-07"), None).unwrap();
        assert!(since.contains("2022-07-01") && since.contains("2030"));
        assert!(!since.contains("2022"));
        let reversed = DateRange::between(Some("2024"), Some("2023")).unwrap();
        assert!(!reversed.contains("2023-06-01") && !reversed.contains("2024-01-01"));
        // A day the month lacks is a period no date falls in.
        let missing = DateRange::period("2023-02-30").unwrap();
        assert!(!missing.contains("2023-02-28") && !missing.contains("2023-03-01"));
        for refused in [
            "2023-2",
            "2023-13",
            " 2023",
            "2023/04",
            "999",
            "2023-04-1",
            "April",
        ] {
            assert!(refused.parse::<DateRange>().is_err(), "{refused}");
        }
        assert!(DateRange::period("April").is_err());
        assert_eq!(
            "2022-07..2023".parse(),
            Ok(DateRange::between(Some("2022-07"), Some("2023")).unwrap())
        );
        assert_eq!("2023..".parse::<DateRange>().unwrap().to, None);
        assert_eq!(
            "..2023".parse::<DateRange>().unwrap().to.as_deref(),
            Some("2023-12-31")
        );
        assert!("..".parse::<DateRange>().is_err());
    }

    #[test]
    fn the_pattern_and_the_parser_agree() {
        let pattern = regex::Regex::new(DATE_RANGE_PATTERN).unwrap();
        for text in [
            "2023",
            "2023-04",
            "2023-04-15",
            "2023-02-30",
            "2022-07..2023-06",
            "2023..",
            "..2023-06",
            "2024..2023",
            "..",
            "2023-13",
            "2023-4",
            " 2023",
            "2023..2024..2025",
            "3000",
            "0999",
            "2023-04-15T00:00",
            "",
            "...2023",
            "2023...",
        ] {
            assert_eq!(
                pattern.is_match(text),
                text.parse::<DateRange>().is_ok(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn the_first_value_of_a_field_wins_and_an_unread_date_is_a_warning() {
        let mut reader = InfoReader::default();
        reader.set(Field::Author, "  Jane   Doe ");
        reader.set(Field::Author, "Someone Else");
        reader.set(Field::Version, "");
        reader.set(Field::Language, "en\u{1}");
        reader.set(Field::Date, "the spring of 2023");
        let (info, warning) = reader.finish();
        assert_eq!(info.author.as_deref(), Some("Jane Doe"));
        assert_eq!(info.version, None);
        assert_eq!(info.language, None);
        assert_eq!(info.date, None);
        assert!(warning.unwrap().contains("the spring of 2023"));
    }
}
