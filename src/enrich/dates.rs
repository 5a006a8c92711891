//! Calendar dates, normalised to `YYYY-MM-DD`.
//!
//! Recognised forms:
//! * ISO: "2024-03-31";
//! * written: "March 31, 2024", "Mar. 31st, 2024", "31 March 2024",
//!   "the 1st day of June, 2020", "the first day of June, 2020" (month
//!   names capitalised or upper-case, so "may" the modal verb never starts
//!   a date);
//! * US numeric: "3/31/2024" is read month/day/year. When that reading is
//!   impossible but day/month/year is valid ("31/3/2024"), the latter is
//!   taken. Two-digit years ("3/31/24") are not read: their century is a
//!   guess.
//!
//! Every candidate is validated against the calendar ("February 30" is
//! dropped); years run from 1000 to 2999. A month and year without a day
//! ("March 2024") is not a date here: it has no `YYYY-MM-DD` form.

use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde::Serialize;

use super::cues::Cues;
use super::{compile, strip_suffix_ignore_case};

/// A date found in a sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DateMention {
    /// The date as written.
    pub text: String,
    /// The date as `YYYY-MM-DD`.
    pub date: String,
}

const MONTHS: [(&str, &str); 12] = [
    ("January", "Jan"),
    ("February", "Feb"),
    ("March", "Mar"),
    ("April", "Apr"),
    ("May", "May"),
    ("June", "Jun"),
    ("July", "Jul"),
    ("August", "Aug"),
    ("September", "Sept|Sep"),
    ("October", "Oct"),
    ("November", "Nov"),
    ("December", "Dec"),
];

const ORDINALS: [&str; 31] = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
    "twenty-first",
    "twenty-second",
    "twenty-third",
    "twenty-fourth",
    "twenty-fifth",
    "twenty-sixth",
    "twenty-seventh",
    "twenty-eighth",
    "twenty-ninth",
    "thirtieth",
    "thirty-first",
];

/// What every match of [`DATE`] contains besides a digit: the hyphen of an
/// ISO date or the slash of a US date, each with the digit after it (a bare
/// hyphen is in far more sentences than dates are), or the first three
/// letters of a month name, which every full name and abbreviation opens
/// with ("Sept" and "September" with "Sep"), in title case or upper case.
pub(super) fn cues() -> Cues {
    let mut exact: Vec<String> = ('0'..='9')
        .flat_map(|digit| [format!("-{digit}"), format!("/{digit}")])
        .collect();
    for (full, _) in MONTHS {
        let opening = &full[..3];
        exact.push(opening.to_string());
        exact.push(opening.to_ascii_uppercase());
    }
    Cues {
        exact,
        needs_digit: true,
        ..Cues::default()
    }
}

/// Month names and abbreviations, in title case and upper case, longest
/// first, so that "Sept" wins over "Sep" and "March" over "Mar".
fn month_names() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (full, short) in MONTHS {
        for name in std::iter::once(full).chain(short.split('|')) {
            names.push(name.to_string());
            names.push(name.to_ascii_uppercase());
        }
    }
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    names.dedup();
    names
}

/// The month names and abbreviations [`DATE`] reads.
static MONTH_NAMES: LazyLock<Vec<String>> = LazyLock::new(month_names);

static DATE: LazyLock<Regex> = LazyLock::new(|| {
    let month = MONTH_NAMES.join("|");
    // Longest first: "twenty-first" before "first".
    let mut ordinals = ORDINALS.to_vec();
    ordinals.sort_by_key(|o| std::cmp::Reverse(o.len()));
    let ordinals = ordinals.join("|");
    let pattern = format!(
        r"(?x)
        (?-u:\b)(?P<iso_y>\d{{4}})-(?P<iso_m>\d{{2}})-(?P<iso_d>\d{{2}})(?-u:\b)
      | (?-u:\b)(?P<md_m>{month})\.?\s+(?P<md_d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<md_y>\d{{4}})(?-u:\b)
      | (?-u:\b)(?P<dm_d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:day\s+of\s+)?(?P<dm_m>{month})\.?,?\s+(?P<dm_y>\d{{4}})(?-u:\b)
      | (?-u:\b)(?P<wd_d>(?i:{ordinals}))\s+(?i:day\s+of)\s+(?P<wd_m>{month})\.?,?\s+(?P<wd_y>\d{{4}})(?-u:\b)
      | (?-u:\b)(?P<us_a>\d{{1,2}})/(?P<us_b>\d{{1,2}})/(?P<us_y>\d{{4}})(?-u:\b)
    "
    );
    compile(&pattern)
});

/// The dates of a sentence, in order of appearance.
pub fn find_dates(text: &str) -> Vec<DateMention> {
    if !may_hold_date(text) {
        return Vec::new();
    }
    read_dates(text)
}

/// The dates [`DATE`] reads in a sentence, without the pre-check.
fn read_dates(text: &str) -> Vec<DateMention> {
    DATE.captures_iter(text)
        .filter_map(|caps| {
            let whole = caps.get(0)?;
            let (year, month, day) = read(&caps)?;
            Some(DateMention {
                text: whole.as_str().to_string(),
                date: iso_date(year, month, day),
            })
        })
        .collect()
}

/// Whether a year stands in `text` where a date [`DATE`] reads could hold
/// it. Every form has a four-digit year, and [`read`] parses ASCII digits
/// only, so a date's year is a run of exactly four ASCII digits (the word
/// boundary after it, and the one, the slash or the whitespace before it,
/// end the run), and what stands beside it is fixed:
/// * an ISO date goes on with a hyphen ("2024-03-31");
/// * a numeric one has a slash before it ("3/31/2024");
/// * a written one has whitespace, an optional comma, and before those a
///   day ("31st, 2024") or a month name, perhaps with its period, which
///   itself follows whitespace and a day or the "of" of "day of" ("31 Mar.
///   2024", "the first day of June, 2020").
///
/// Most years in prose follow some other word ("in 1998", "the 2010
/// season", "in March 1998"); such a sentence skips the pattern, which
/// costs more than this check by far.
fn may_hold_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(offset) = bytes
        .get(at..)
        .and_then(|rest| rest.iter().position(u8::is_ascii_digit))
    {
        let start = at + offset;
        let run = bytes.get(start..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        });
        at = start + run;
        if run == 4 && is_placed_as_year(text, start, at) {
            return true;
        }
    }
    false
}

/// Whether the four digits at `start..end` of `text` stand where a date's
/// year does (see [`may_hold_date`]).
fn is_placed_as_year(text: &str, start: usize, end: usize) -> bool {
    let bytes = text.as_bytes();
    if bytes.get(end) == Some(&b'-')
        || start.checked_sub(1).and_then(|i| bytes.get(i)) == Some(&b'/')
    {
        return true;
    }
    let before = text.get(..start).unwrap_or_default();
    let spaced = before.trim_end();
    if spaced.len() == before.len() {
        return false;
    }
    let spaced = spaced.strip_suffix(',').unwrap_or(spaced);
    if ends_with_day(spaced) {
        return true;
    }
    // A month name is the word of ASCII letters the text ends with, when
    // whitespace stands before it.
    let month = spaced.strip_suffix('.').unwrap_or(spaced);
    let letters = month
        .bytes()
        .rev()
        .take_while(u8::is_ascii_alphabetic)
        .count();
    let (before, word) = month.split_at(month.len() - letters);
    let spaced = before.trim_end();
    spaced.len() < before.len()
        && MONTH_NAMES.iter().any(|name| name == word)
        && (ends_with_day(spaced) || strip_suffix_ignore_case(spaced, "of").is_some())
}

/// Whether `text` ends with a day of the month in ASCII digits, perhaps
/// with its ordinal suffix ("31", "1st"). Only its last digit is looked at.
fn ends_with_day(text: &str) -> bool {
    let digits = ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|suffix| text.strip_suffix(suffix))
        .unwrap_or(text);
    digits.ends_with(|c: char| c.is_ascii_digit())
}

/// Where the groups of [`DATE`] stand, by form: year, month and day, or
/// for a numeric date its two leading numbers and the year. Read once: a
/// group looked up by name costs a hash lookup every time.
struct Groups {
    iso: [usize; 3],
    month_day: [usize; 3],
    day_month: [usize; 3],
    word_day: [usize; 3],
    numeric: [usize; 3],
}

static GROUPS: LazyLock<Groups> = LazyLock::new(|| {
    let index = |name: &str| {
        DATE.capture_names()
            .position(|group| group == Some(name))
            .unwrap_or_else(|| panic!("the date pattern has no group {name}"))
    };
    let form = |names: [&str; 3]| names.map(index);
    Groups {
        iso: form(["iso_y", "iso_m", "iso_d"]),
        month_day: form(["md_y", "md_m", "md_d"]),
        day_month: form(["dm_y", "dm_m", "dm_d"]),
        word_day: form(["wd_y", "wd_m", "wd_d"]),
        numeric: form(["us_a", "us_b", "us_y"]),
    }
});

/// Year, month and day of one match, if they make a real date.
fn read(caps: &Captures) -> Option<(u32, u32, u32)> {
    let groups = &*GROUPS;
    let number = |group: usize| caps.get(group).and_then(|m| m.as_str().parse::<u32>().ok());
    let month_named = |group: usize| caps.get(group).and_then(|m| month_number(m.as_str()));
    let written = |[year, month, day]: [usize; 3]| -> Option<_> {
        caps.get(month)?;
        Some((year, month, day))
    };
    let candidates: [Option<(u32, u32, u32)>; 2] = if caps.get(groups.iso[0]).is_some() {
        let [year, month, day] = groups.iso;
        [Some((number(year)?, number(month)?, number(day)?)), None]
    } else if let Some((year, month, day)) =
        written(groups.month_day).or_else(|| written(groups.day_month))
    {
        [
            Some((number(year)?, month_named(month)?, number(day)?)),
            None,
        ]
    } else if let Some((year, month, day)) = written(groups.word_day) {
        let day = ordinal_number(caps.get(day)?.as_str())?;
        [Some((number(year)?, month_named(month)?, day)), None]
    } else {
        let [a, b, year] = groups.numeric.map(number);
        let (a, b, year) = (a?, b?, year?);
        // Month/day first (US); day/month only when month/day is impossible.
        [Some((year, a, b)), Some((year, b, a))]
    };
    candidates
        .into_iter()
        .flatten()
        .find(|&(y, m, d)| is_valid(y, m, d))
}

/// `YYYY-MM-DD`, for a date [`is_valid`] accepts (a four-digit year).
fn iso_date(year: u32, month: u32, day: u32) -> String {
    let digit = |value: u32| char::from_digit(value % 10, 10).unwrap_or('0');
    [
        digit(year / 1000),
        digit(year / 100),
        digit(year / 10),
        digit(year),
        '-',
        digit(month / 10),
        digit(month),
        '-',
        digit(day / 10),
        digit(day),
    ]
    .into_iter()
    .collect()
}

fn month_number(name: &str) -> Option<u32> {
    // Every spelling the pattern reads is ASCII and opens with the
    // month's first three letters.
    let prefix = name.get(..3)?;
    MONTHS
        .iter()
        .position(|(full, _)| full[..3].eq_ignore_ascii_case(prefix))
        .map(|i| i as u32 + 1)
}

fn ordinal_number(word: &str) -> Option<u32> {
    ORDINALS
        .iter()
        .position(|o| o.eq_ignore_ascii_case(word))
        .map(|i| i as u32 + 1)
}

/// Whether a year, month and day name a real calendar day (Gregorian, years
/// 1000–2999).
pub fn is_valid(year: u32, month: u32, day: u32) -> bool {
    crate::parse::info::is_calendar_day(year, month, day)
}

#[cfg(test)]
mod tests {
    use super::super::cues::{Cued, Extractor};
    use super::*;

    fn dates(text: &str) -> Vec<String> {
        find_dates(text).into_iter().map(|d| d.date).collect()
    }

    /// The cues are necessary: every form of date [`DATE`] reads is handed
    /// to [`find_dates`] by the screen.
    #[test]
    fn every_form_of_date_holds_a_cue() {
        for text in [
            "on 2020-03-03.",
            "on 3/3/2020",
            "due 12/31/2020,",
            "March 3, 2020",
            "MAR. 3 2020",
            "Sept 30th, 2021",
            "3 Dec 2020",
            "the 3rd day of March, 2020",
            "the twenty-first day of SEPTEMBER 2020",
            "this Third Day of June, 2019",
        ] {
            assert!(!find_dates(text).is_empty(), "{text}");
            let cued = Cued::of(text, Cued::only([Extractor::Dates]));
            assert!(cued.may_match(Extractor::Dates), "{text}");
        }
    }

    #[test]
    fn written_and_iso_forms() {
        assert_eq!(dates("Effective 2024-03-31."), ["2024-03-31"]);
        assert_eq!(dates("dated as of August 9, 1999 is made"), ["1999-08-09"]);
        assert_eq!(dates("on 31 March 2024 and"), ["2024-03-31"]);
        assert_eq!(dates("by Mar. 31, 2024"), ["2024-03-31"]);
        assert_eq!(dates("on 31 Mar. 2024"), ["2024-03-31"]);
        assert_eq!(dates("by Sept 1st, 2021"), ["2021-09-01"]);
        assert_eq!(dates("this 1st day of June, 2020"), ["2020-06-01"]);
        assert_eq!(dates("the first day of June, 2020"), ["2020-06-01"]);
        assert_eq!(dates("the Twenty-First day of JUNE 2020"), ["2020-06-21"]);
        assert_eq!(dates("AS OF DECEMBER 1, 2019"), ["2019-12-01"]);
    }

    proptest::proptest! {
        /// The year check drops only sentences without a date: pieces of
        /// dates, years placed as in prose, digits of other scripts,
        /// Unicode spaces and runs of one to five digits, glued in any
        /// order.
        #[test]
        fn the_year_check_drops_no_date(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "2024-03-31", "3/31/2024", "March 31, 2024", "1st day of May 2020",
                    "2024", "202", "20245", "7", "31", "03", "-", "/", " ", ", ", ",", ".",
                    "March ", "Mar. ", "31 Mar. ", "3 Sept., ", "SEPT", "Sept.", "JUNE", "May", "1st ", "15th", "rd",
                    "first ", "day of ", "DAY OF ", "in ", "the ", "end of ", "in February ", "\u{a0}", "\u{2003}", "\n",
                    "٢٠٢٤", "２０２４", "٣", "x",
                ]),
                0..12,
            )
        ) {
            let text = pieces.concat();
            proptest::prop_assert_eq!(find_dates(&text), read_dates(&text), "{:?}", text);
        }
    }

    #[test]
    fn iso_dates_are_written_as_format_would() {
        for year in 1000..=2999 {
            for (month, day) in [(1, 1), (9, 30), (10, 9), (12, 31)] {
                assert_eq!(
                    iso_date(year, month, day),
                    format!("{year:04}-{month:02}-{day:02}")
                );
            }
        }
    }

    #[test]
    fn numeric_dates_are_month_first() {
        assert_eq!(dates("signed 3/31/2024"), ["2024-03-31"]);
        assert_eq!(dates("signed 4/5/2024"), ["2024-04-05"]);
        // Month/day is impossible, day/month is not.
        assert_eq!(dates("signed 31/3/2024"), ["2024-03-31"]);
        assert!(dates("signed 3/31/24").is_empty());
    }

    #[test]
    fn impossible_dates_are_dropped() {
        assert!(dates("on February 30, 2024").is_empty());
        assert!(dates("2023-02-29").is_empty());
        assert_eq!(dates("2024-02-29"), ["2024-02-29"]);
        assert!(dates("13/13/2024").is_empty());
        assert!(dates("2024-13-01").is_empty());
    }

    #[test]
    fn non_dates() {
        // "may" the modal verb; a month without a day; a bare year.
        assert!(dates("The Company may 5 times in 2024 renew.").is_empty());
        assert!(dates("In March 2024 the parties met.").is_empty());
        assert!(dates("Section 2.1 of the 1999 plan").is_empty());
        assert!(dates("no digits at all").is_empty());
        let found = find_dates("from May 1, 2020 to June 30, 2021");
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].text, "May 1, 2020");
        assert_eq!(found[1].date, "2021-06-30");
    }
}
