//! `word/numbering.xml`: list and heading numbers rendered as Word shows
//! them ("1.", "2.1.3", "Article IV", "(a)", bullets).
//!
//! A paragraph names a numbering instance (`w:num`) and a level; the
//! instance points at an abstract definition (`w:abstractNum`) holding the
//! levels' formats. Counters run per abstract definition, so instances that
//! share one continue each other's sequence, as in Word; an instance that
//! overrides a level's start (`w:lvlOverride/w:startOverride`) restarts that
//! level the first time it is used.

use std::collections::{HashMap, HashSet};

use super::styles::Styles;
use super::xml::{Ns, Visit, XmlReader};
use crate::parse::ParseFailure;

/// Levels a numbering definition has (`w:ilvl` 0–8).
const LEVELS: usize = 9;

/// How a level's counter is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum NumberFormat {
    #[default]
    Decimal,
    DecimalZero,
    UpperRoman,
    LowerRoman,
    UpperLetter,
    LowerLetter,
    Ordinal,
    CardinalText,
    OrdinalText,
    DecimalEnclosedParen,
    DecimalEnclosedCircle,
    Bullet,
    None,
}

impl NumberFormat {
    fn from_val(val: &str) -> NumberFormat {
        match val {
            "decimalZero" => NumberFormat::DecimalZero,
            "upperRoman" => NumberFormat::UpperRoman,
            "lowerRoman" => NumberFormat::LowerRoman,
            "upperLetter" => NumberFormat::UpperLetter,
            "lowerLetter" => NumberFormat::LowerLetter,
            "ordinal" => NumberFormat::Ordinal,
            "cardinalText" => NumberFormat::CardinalText,
            "ordinalText" => NumberFormat::OrdinalText,
            "decimalEnclosedParen" => NumberFormat::DecimalEnclosedParen,
            "decimalEnclosedCircle" => NumberFormat::DecimalEnclosedCircle,
            "bullet" => NumberFormat::Bullet,
            "none" => NumberFormat::None,
            // "decimal" and the many East Asian formats we do not spell out.
            _ => NumberFormat::Decimal,
        }
    }

    /// `n` written in this format.
    pub fn format(self, n: i64) -> String {
        match self {
            NumberFormat::Decimal => n.to_string(),
            NumberFormat::DecimalZero if (0..10).contains(&n) => format!("0{n}"),
            NumberFormat::DecimalZero => n.to_string(),
            NumberFormat::UpperRoman => roman(n).unwrap_or_else(|| n.to_string()),
            NumberFormat::LowerRoman => roman(n)
                .map(|r| r.to_ascii_lowercase())
                .unwrap_or_else(|| n.to_string()),
            NumberFormat::UpperLetter => letters(n).unwrap_or_else(|| n.to_string()),
            NumberFormat::LowerLetter => letters(n)
                .map(|l| l.to_ascii_lowercase())
                .unwrap_or_else(|| n.to_string()),
            NumberFormat::Ordinal => {
                let suffix = match (n % 100, n % 10) {
                    (11..=13, _) => "th",
                    (_, 1) => "st",
                    (_, 2) => "nd",
                    (_, 3) => "rd",
                    _ => "th",
                };
                format!("{n}{suffix}")
            }
            NumberFormat::CardinalText => cardinal_words(n, false),
            NumberFormat::OrdinalText => cardinal_words(n, true),
            NumberFormat::DecimalEnclosedParen => format!("({n})"),
            NumberFormat::DecimalEnclosedCircle => match u32::try_from(n) {
                Ok(k @ 1..=20) => char::from_u32(0x2460 + k - 1)
                    .map(String::from)
                    .unwrap_or_else(|| n.to_string()),
                _ => n.to_string(),
            },
            NumberFormat::Bullet | NumberFormat::None => String::new(),
        }
    }
}

/// Roman numerals for 1–3999.
fn roman(n: i64) -> Option<String> {
    u32::try_from(n)
        .ok()
        .and_then(crate::parse::numerals::to_roman)
}

/// Word's letter numbering: A … Z, then AA … ZZ, then AAA …
fn letters(n: i64) -> Option<String> {
    if !(1..=780).contains(&n) {
        return None;
    }
    let letter = char::from(b'A' + ((n - 1) % 26) as u8);
    let repeat = ((n - 1) / 26 + 1) as usize;
    Some(std::iter::repeat_n(letter, repeat).collect())
}

/// English words for 1–99 ("Twenty-One", "Twenty-First"), digits beyond.
fn cardinal_words(n: i64, ordinal: bool) -> String {
    const ONES: [&str; 20] = [
        "Zero",
        "One",
        "Two",
        "Three",
        "Four",
        "Five",
        "Six",
        "Seven",
        "Eight",
        "Nine",
        "Ten",
        "Eleven",
        "Twelve",
        "Thirteen",
        "Fourteen",
        "Fifteen",
        "Sixteen",
        "Seventeen",
        "Eighteen",
        "Nineteen",
    ];
    const ONES_ORDINAL: [&str; 20] = [
        "Zeroth",
        "First",
        "Second",
        "Third",
        "Fourth",
        "Fifth",
        "Sixth",
        "Seventh",
        "Eighth",
        "Ninth",
        "Tenth",
        "Eleventh",
        "Twelfth",
        "Thirteenth",
        "Fourteenth",
        "Fifteenth",
        "Sixteenth",
        "Seventeenth",
        "Eighteenth",
        "Nineteenth",
    ];
    const TENS: [&str; 10] = [
        "", "", "Twenty", "Thirty", "Forty", "Fifty", "Sixty", "Seventy", "Eighty", "Ninety",
    ];
    const TENS_ORDINAL: [&str; 10] = [
        "",
        "",
        "Twentieth",
        "Thirtieth",
        "Fortieth",
        "Fiftieth",
        "Sixtieth",
        "Seventieth",
        "Eightieth",
        "Ninetieth",
    ];
    let Ok(k) = usize::try_from(n) else {
        return n.to_string();
    };
    match k {
        0..=19 if ordinal => ONES_ORDINAL[k].to_string(),
        0..=19 => ONES[k].to_string(),
        20..=99 if k % 10 == 0 && ordinal => TENS_ORDINAL[k / 10].to_string(),
        20..=99 if k % 10 == 0 => TENS[k / 10].to_string(),
        20..=99 => {
            let ones = if ordinal { ONES_ORDINAL } else { ONES };
            format!("{}-{}", TENS[k / 10], ones[k % 10])
        }
        _ if ordinal => NumberFormat::Ordinal.format(n),
        _ => n.to_string(),
    }
}

/// One level of a numbering definition (`w:lvl`).
#[derive(Clone, Debug, PartialEq)]
struct Level {
    start: i64,
    format: NumberFormat,
    /// `w:lvlText`: "%1.%2." with `%n` standing for level n's counter.
    text: Option<String>,
    /// `w:lvlRestart`: the counter restarts when a level shallower than
    /// this 1-based level is used; 0 means never. Unset: any shallower.
    restart: Option<u8>,
    /// `w:isLgl`: every level's counter is written in decimal.
    legal: bool,
    /// `w:pStyle`: the paragraph style that uses this level.
    style: Option<String>,
}

impl Default for Level {
    fn default() -> Self {
        Self {
            start: 1,
            format: NumberFormat::Decimal,
            text: None,
            restart: None,
            legal: false,
            style: None,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct AbstractNum {
    levels: [Option<Level>; LEVELS],
    /// `w:numStyleLink`: the levels live in the definition of this
    /// numbering style.
    style_link: Option<String>,
}

/// A numbering instance (`w:num`).
#[derive(Clone, Debug, Default)]
struct Num {
    abstract_id: Option<u32>,
    start_overrides: [Option<i64>; LEVELS],
    level_overrides: [Option<Level>; LEVELS],
}

/// The rendered number of one paragraph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Marker {
    /// As Word shows it ("1.", "2.1.3", "(a)"); empty for bullets and
    /// levels numbered "none".
    pub text: String,
    pub bullet: bool,
}

/// The numbering definitions of a document.
#[derive(Debug, Default)]
pub(super) struct Numbering {
    abstracts: HashMap<u32, AbstractNum>,
    nums: HashMap<u32, Num>,
}

/// Counter state while walking a document, per abstract definition.
#[derive(Debug, Default)]
pub(super) struct Counters {
    values: HashMap<u32, [Option<i64>; LEVELS]>,
    used_nums: HashSet<u32>,
}

/// Where the numbering.xml walker is.
#[derive(Default)]
struct Cursor {
    abstract_id: Option<u32>,
    num_id: Option<u32>,
    level: Option<usize>,
    in_override: bool,
}

impl Numbering {
    pub fn parse(text: &str, part: &str, max_depth: u32) -> Result<Numbering, ParseFailure> {
        let mut numbering = Numbering::default();
        let mut at = Cursor::default();
        let mut reader = XmlReader::new(text, part, max_depth);
        reader.visit_all(|visit| {
            let Visit::Element(path, element) = visit else {
                return;
            };
            if element.ns != Ns::Word {
                return;
            }
            let parent = path.last().map(String::as_str);
            let level_index = || {
                element
                    .attr("ilvl")
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .filter(|&l| l < LEVELS)
            };
            match (path.len(), parent, element.local()) {
                (1, _, "abstractNum") => {
                    at = Cursor {
                        abstract_id: element
                            .attr("abstractNumId")
                            .and_then(|v| v.trim().parse().ok()),
                        ..Cursor::default()
                    };
                    if let Some(id) = at.abstract_id {
                        numbering.abstracts.entry(id).or_default();
                    }
                }
                (1, _, "num") => {
                    at = Cursor {
                        num_id: element.attr("numId").and_then(|v| v.trim().parse().ok()),
                        ..Cursor::default()
                    };
                    if let Some(id) = at.num_id {
                        numbering.nums.entry(id).or_default();
                    }
                }
                (2, _, "numStyleLink") => {
                    if let Some(abs) = at
                        .abstract_id
                        .and_then(|id| numbering.abstracts.get_mut(&id))
                    {
                        abs.style_link = element.attr("val");
                    }
                }
                (2, _, "abstractNumId") => {
                    if let Some(num) = at.num_id.and_then(|id| numbering.nums.get_mut(&id)) {
                        num.abstract_id = element.int_val().and_then(|v| u32::try_from(v).ok());
                    }
                }
                (2, _, "lvlOverride") => {
                    at.level = level_index();
                    at.in_override = true;
                }
                (3, Some("lvlOverride"), "startOverride") => {
                    if let (Some(num), Some(level)) = (
                        at.num_id.and_then(|id| numbering.nums.get_mut(&id)),
                        at.level,
                    ) {
                        num.start_overrides[level] = element.int_val();
                    }
                }
                (2 | 3, _, "lvl") => {
                    // A level of an abstract definition, or a whole level
                    // replaced by an override (which names the level too).
                    let level = level_index().or(at.level);
                    at.level = level;
                    if let Some(level) = level
                        && let Some(slot) = numbering.level_slot(&at, level)
                    {
                        *slot = Some(Level::default());
                    }
                }
                (_, Some("lvl"), property) => {
                    let Some(level) = at.level else {
                        return;
                    };
                    let Some(Some(lvl)) = numbering.level_slot(&at, level) else {
                        return;
                    };
                    match property {
                        "start" => lvl.start = element.int_val().unwrap_or(1),
                        "numFmt" => {
                            lvl.format =
                                NumberFormat::from_val(&element.attr("val").unwrap_or_default())
                        }
                        "lvlText" => lvl.text = element.attr("val"),
                        "lvlRestart" => {
                            lvl.restart = element.int_val().and_then(|v| u8::try_from(v).ok())
                        }
                        "isLgl" => lvl.legal = element.is_on(),
                        "pStyle" => lvl.style = element.attr("val"),
                        _ => {}
                    }
                }
                _ => {}
            }
        })?;
        Ok(numbering)
    }

    /// The level being defined where the walker is.
    fn level_slot(&mut self, at: &Cursor, level: usize) -> Option<&mut Option<Level>> {
        if at.in_override {
            let num = self.nums.get_mut(&at.num_id?)?;
            num.level_overrides.get_mut(level)
        } else {
            let abs = self.abstracts.get_mut(&at.abstract_id?)?;
            abs.levels.get_mut(level)
        }
    }

    /// The abstract definition holding the levels of instance `num_id`,
    /// following `w:numStyleLink` through numbering styles.
    fn definition(&self, num_id: u32, styles: &Styles) -> Option<(u32, &AbstractNum)> {
        let mut abstract_id = self.nums.get(&num_id)?.abstract_id?;
        // A style link points at an instance whose definition carries the
        // levels; follow a few hops, never a cycle.
        for _ in 0..4 {
            let abs = self.abstracts.get(&abstract_id)?;
            let Some(link) = &abs.style_link else {
                return Some((abstract_id, abs));
            };
            let linked = styles.numbering_style_num(link)?;
            abstract_id = self.nums.get(&linked)?.abstract_id?;
        }
        None
    }

    /// The level of instance `num_id` used by paragraph style `style`, for
    /// paragraphs whose style names a list but not its level.
    pub fn level_for_style(&self, num_id: u32, style: &str, styles: &Styles) -> Option<u8> {
        let (_, abs) = self.definition(num_id, styles)?;
        let index = abs
            .levels
            .iter()
            .position(|l| l.as_ref().and_then(|l| l.style.as_deref()) == Some(style))?;
        u8::try_from(index).ok()
    }

    /// Counts one paragraph numbered by instance `num_id` at `level` and
    /// returns its marker; `None` when the document defines no such list
    /// (`w:numId` 0 is "no numbering").
    pub fn advance(
        &self,
        counters: &mut Counters,
        num_id: u32,
        level: u8,
        styles: &Styles,
    ) -> Option<Marker> {
        if num_id == 0 {
            return None;
        }
        let num = self.nums.get(&num_id)?;
        let (abstract_id, abs) = self.definition(num_id, styles)?;
        let level = usize::from(level).min(LEVELS - 1);
        let definition = |l: usize| -> Option<&Level> {
            num.level_overrides
                .get(l)
                .and_then(Option::as_ref)
                .or_else(|| abs.levels.get(l).and_then(Option::as_ref))
        };
        let start = |l: usize| -> i64 {
            num.start_overrides
                .get(l)
                .copied()
                .flatten()
                .or_else(|| definition(l).map(|d| d.start))
                .unwrap_or(1)
        };
        let this = definition(level)?;

        let values = counters.values.entry(abstract_id).or_insert([None; LEVELS]);
        if counters.used_nums.insert(num_id) {
            // First use of an instance that overrides starts: restart those.
            for (l, value) in values.iter_mut().enumerate() {
                if num.start_overrides[l].is_some() || num.level_overrides[l].is_some() {
                    *value = None;
                }
            }
        }
        values[level] = Some(match values[level] {
            Some(v) => v.saturating_add(1),
            None => start(level),
        });
        // Shallower levels never used show (and from now on count from)
        // their start value, as Word renders "1.1.1" for a skipped level.
        for (l, value) in values.iter_mut().enumerate().take(level) {
            if value.is_none() {
                *value = Some(start(l));
            }
        }
        for (deeper, value) in values.iter_mut().enumerate().skip(level + 1) {
            let restart_below = definition(deeper)
                .and_then(|d| d.restart)
                .map(usize::from)
                .unwrap_or(deeper);
            if level < restart_below {
                *value = None;
            }
        }

        if this.format == NumberFormat::Bullet {
            return Some(Marker {
                text: String::new(),
                bullet: true,
            });
        }
        let template = this.text.as_deref().unwrap_or("");
        let mut text = String::new();
        let mut chars = template.chars().peekable();
        while let Some(c) = chars.next() {
            let referenced = match (c, chars.peek()) {
                ('%', Some(d @ '1'..='9')) => d.to_digit(10).map(|d| d as usize - 1),
                _ => None,
            };
            match referenced {
                Some(l) => {
                    chars.next();
                    let value = values.get(l).copied().flatten().unwrap_or_else(|| start(l));
                    let format = match definition(l) {
                        Some(d) if this.legal && d.format != NumberFormat::None => {
                            NumberFormat::Decimal
                        }
                        Some(d) => d.format,
                        None => NumberFormat::Decimal,
                    };
                    text.push_str(&format.format(value));
                }
                None => text.push(c),
            }
        }
        Some(Marker {
            text: text.trim().to_string(),
            bullet: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbering(xml: &str) -> Numbering {
        let xml = format!(
            r#"<w:numbering xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">{xml}</w:numbering>"#
        );
        Numbering::parse(&xml, "word/numbering.xml", 64).unwrap()
    }

    fn lvl(ilvl: u8, start: i64, fmt: &str, text: &str) -> String {
        format!(
            r#"<w:lvl w:ilvl="{ilvl}"><w:start w:val="{start}"/><w:numFmt w:val="{fmt}"/><w:lvlText w:val="{text}"/></w:lvl>"#
        )
    }

    fn markers(n: &Numbering, steps: &[(u32, u8)]) -> Vec<String> {
        let styles = Styles::default();
        let mut counters = Counters::default();
        steps
            .iter()
            .map(|&(num, level)| {
                n.advance(&mut counters, num, level, &styles)
                    .map(|m| if m.bullet { "•".to_string() } else { m.text })
                    .unwrap_or_else(|| "none".into())
            })
            .collect()
    }

    #[test]
    fn formats_render_as_word_shows_them() {
        let cases = [
            (NumberFormat::Decimal, 12, "12"),
            (NumberFormat::DecimalZero, 7, "07"),
            (NumberFormat::UpperRoman, 1994, "MCMXCIV"),
            (NumberFormat::LowerRoman, 4, "iv"),
            (NumberFormat::UpperLetter, 28, "BB"),
            (NumberFormat::LowerLetter, 3, "c"),
            (NumberFormat::Ordinal, 22, "22nd"),
            (NumberFormat::Ordinal, 13, "13th"),
            (NumberFormat::CardinalText, 21, "Twenty-One"),
            (NumberFormat::OrdinalText, 3, "Third"),
            (NumberFormat::DecimalEnclosedParen, 3, "(3)"),
            (NumberFormat::DecimalEnclosedCircle, 2, "②"),
            (NumberFormat::None, 2, ""),
        ];
        for (format, n, expected) in cases {
            assert_eq!(format.format(n), expected, "{format:?} {n}");
        }
    }

    #[test]
    fn multilevel_counters_reset_deeper_levels() {
        let n = numbering(&format!(
            r#"<w:abstractNum w:abstractNumId="0">{}{}{}</w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>"#,
            lvl(0, 1, "decimal", "%1."),
            lvl(1, 1, "decimal", "%1.%2."),
            lvl(2, 1, "lowerLetter", "(%3)"),
        ));
        assert_eq!(
            markers(
                &n,
                &[
                    (1, 0),
                    (1, 1),
                    (1, 1),
                    (1, 2),
                    (1, 0),
                    (1, 1),
                    (1, 2),
                    (1, 2)
                ]
            ),
            ["1.", "1.1.", "1.2.", "(a)", "2.", "2.1.", "(a)", "(b)"]
        );
        // A skipped level shows its start value and counts on from it.
        assert_eq!(
            markers(&n, &[(1, 0), (1, 2), (1, 1)]),
            ["1.", "(a)", "1.2."]
        );
    }

    #[test]
    fn articles_and_legal_numbering() {
        let n = numbering(
            r#"<w:abstractNum w:abstractNumId="3">
                 <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="Article %1"/></w:lvl>
                 <w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:isLgl/><w:lvlText w:val="%1.%2"/></w:lvl>
                 <w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%3)"/></w:lvl>
               </w:abstractNum>
               <w:num w:numId="9"><w:abstractNumId w:val="3"/></w:num>"#,
        );
        assert_eq!(
            markers(&n, &[(9, 0), (9, 0), (9, 1), (9, 2), (9, 2)]),
            ["Article I", "Article II", "2.1", "a)", "b)"]
        );
    }

    #[test]
    fn instances_share_counters_unless_they_override_the_start() {
        let n = numbering(&format!(
            r#"<w:abstractNum w:abstractNumId="0">{}</w:abstractNum>
               <w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>
               <w:num w:numId="2"><w:abstractNumId w:val="0"/></w:num>
               <w:num w:numId="3"><w:abstractNumId w:val="0"/>
                 <w:lvlOverride w:ilvl="0"><w:startOverride w:val="5"/></w:lvlOverride></w:num>"#,
            lvl(0, 1, "decimal", "%1."),
        ));
        assert_eq!(
            markers(
                &n,
                &[
                    (1, 0),
                    (1, 0),
                    (2, 0),
                    (3, 0),
                    (3, 0),
                    (1, 0),
                    (0, 0),
                    (42, 0)
                ]
            ),
            ["1.", "2.", "3.", "5.", "6.", "7.", "none", "none"]
        );
    }

    #[test]
    fn restart_rules_and_bullets() {
        let n = numbering(
            r#"<w:abstractNum w:abstractNumId="0">
                 <w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/><w:lvlText w:val=""/></w:lvl>
                 <w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlRestart w:val="0"/><w:lvlText w:val="%2."/></w:lvl>
               </w:abstractNum>
               <w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>"#,
        );
        // Level 2 never restarts, so it keeps counting across level-1 items.
        assert_eq!(
            markers(&n, &[(1, 0), (1, 1), (1, 1), (1, 0), (1, 1)]),
            ["•", "1.", "2.", "•", "3."]
        );
    }

    #[test]
    fn level_overrides_replace_the_level() {
        let n = numbering(&format!(
            r#"<w:abstractNum w:abstractNumId="0">{}</w:abstractNum>
               <w:num w:numId="4"><w:abstractNumId w:val="0"/>
                 <w:lvlOverride w:ilvl="0">{}</w:lvlOverride></w:num>"#,
            lvl(0, 1, "decimal", "%1."),
            lvl(0, 3, "upperLetter", "%1)"),
        ));
        assert_eq!(markers(&n, &[(4, 0), (4, 0)]), ["C)", "D)"]);
    }
}
