//! Labels: the keyword-and-designator pairs that name parts of a document
//! ("Section 5.1", "ARTICLE V", "Exhibit A", "Table 3", "Fig. 7") and the
//! bare outline numbers and markers that open numbered clauses ("5.1",
//! "(a)", "b.").
//!
//! The same grammar serves both directions: a heading or a paragraph that
//! *opens* with a label is the target; a sentence that *mentions* a label
//! refers to it (see [`super::references`]).

use std::sync::LazyLock;

use regex::Regex;
use regex_syntax::hir::literal::{ExtractKind, Extractor};
use serde::Serialize;

use super::compile;
use super::numbering::{Romans, designator_key, marker_key};

/// What a label names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceKind {
    Section,
    Article,
    Clause,
    Paragraph,
    Chapter,
    Part,
    Table,
    Figure,
    Appendix,
    Annex,
    Schedule,
    Exhibit,
    Attachment,
    Addendum,
}

impl ReferenceKind {
    /// The kind a keyword names, and whether the keyword is plural
    /// ("Sections", "Exhibits", "§§"): "Section", "sec.", "§", "Art.",
    /// "sub-clause", "Fig.", "Appendices", "Addenda", ….
    pub fn from_keyword(keyword: &str) -> Option<(ReferenceKind, bool)> {
        use ReferenceKind::*;
        if keyword.starts_with('§') {
            return Some((Section, keyword.starts_with("§§")));
        }
        let word = keyword.trim_end_matches('.').to_ascii_lowercase();
        let word = word
            .strip_prefix("sub-")
            .or_else(|| word.strip_prefix("sub"))
            .unwrap_or(&word);
        Some(match word {
            "section" | "sec" => (Section, false),
            "sections" | "secs" => (Section, true),
            "article" | "art" => (Article, false),
            "articles" | "arts" => (Article, true),
            "clause" => (Clause, false),
            "clauses" => (Clause, true),
            "paragraph" | "para" => (Paragraph, false),
            "paragraphs" | "paras" => (Paragraph, true),
            "chapter" => (Chapter, false),
            "chapters" => (Chapter, true),
            "part" => (Part, false),
            "parts" => (Part, true),
            "table" => (Table, false),
            "tables" => (Table, true),
            "figure" | "fig" => (Figure, false),
            "figures" | "figs" => (Figure, true),
            "appendix" => (Appendix, false),
            "appendices" => (Appendix, true),
            "annex" => (Annex, false),
            "annexes" => (Annex, true),
            "schedule" => (Schedule, false),
            "schedules" => (Schedule, true),
            "exhibit" => (Exhibit, false),
            "exhibits" => (Exhibit, true),
            "attachment" => (Attachment, false),
            "attachments" => (Attachment, true),
            "addendum" => (Addendum, false),
            "addenda" => (Addendum, true),
            _ => return None,
        })
    }

    /// Material appended to the body: appendix, annex, schedule, exhibit,
    /// attachment, addendum.
    pub fn is_annex(self) -> bool {
        use ReferenceKind::*;
        matches!(
            self,
            Appendix | Annex | Schedule | Exhibit | Attachment | Addendum
        )
    }

    /// Numbered provisions of the body, which contracts call sections,
    /// clauses and paragraphs interchangeably.
    fn is_provision(self) -> bool {
        use ReferenceKind::*;
        matches!(self, Section | Clause | Paragraph)
    }

    /// Whether a label of kind `self` may designate a heading or paragraph
    /// labelled with keyword `other`. Provisions match each other; every
    /// other kind matches only itself.
    pub fn matches(self, other: ReferenceKind) -> bool {
        self == other || (self.is_provision() && other.is_provision())
    }

    /// Kinds whose designators are numbered in the document's structure
    /// (and so may match a bare "5.1" heading or clause).
    pub fn is_structural(self) -> bool {
        use ReferenceKind::*;
        matches!(
            self,
            Section | Article | Clause | Paragraph | Chapter | Part
        )
    }

    /// How Roman-looking designators of this kind are read: "Article V" is
    /// Article 5, but "Exhibit C" is Exhibit C.
    pub fn romans(self) -> Romans {
        if self.is_structural() {
            Romans::Numbers
        } else {
            Romans::AfterFirstLetter
        }
    }

    /// Whether a clause id keeps the keyword: "ARTICLE V" and "Exhibit A"
    /// do, "Section 5.1" is just "5.1".
    pub fn keeps_keyword_in_clause_id(self) -> bool {
        !self.is_provision()
    }
}

/// The keywords that open a label, as a regex alternation.
///
/// Whole words end at a word boundary ("TABLES" is not "TABLE S");
/// abbreviations end with their period.
pub const KEYWORD: &str = r"(?-u:\b)(?i:sub-?sections?|sections?|articles?|sub-?clauses?|clauses?|sub-?paragraphs?|paragraphs?|chapters?|tables?|figures?|appendix|appendices|annex(?:es)?|schedules?|exhibits?|attachments?|addend(?:um|a))(?-u:\b)|(?-u:\b)(?i:secs?|arts?|paras?|figs?)\.|(?-u:\b)Parts?(?-u:\b)|(?-u:\b)PARTS?(?-u:\b)|§§?";

/// A designator: an outline number with an optional letter and
/// parenthesised parts ("5.1", "5.1a", "2.5(c)(ii)"), a Roman numeral
/// ("V", "XII"), a capital letter with an optional number ("A", "A-1",
/// "B.2"), or parenthesised parts alone ("(b)").
pub const DESIGNATOR: &str = r"(?:\d+(?:\.\d+)*(?:[A-Za-z](?-u:\b)|(?-u:\b))|[IVXLCDM]+(?-u:\b)|[A-Z](?:[-.]\d+)?(?-u:\b))(?:\([A-Za-z0-9]{1,4}\))*|(?:\([A-Za-z0-9]{1,4}\))+";

/// A label at the start of a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label<'a> {
    /// The keyword's kind; `None` for bare outline numbers and markers.
    pub kind: Option<ReferenceKind>,
    /// The keyword as written ("ARTICLE", "Fig."); empty for bare labels.
    pub keyword: &'a str,
    /// The designator as written ("V", "5.1.", "(a)", "b.").
    pub designator: &'a str,
    /// Whether the designator is a sub-clause marker ("(a)", "b)", "b.").
    pub is_marker: bool,
    /// The text after the label.
    pub rest: &'a str,
}

/// A label at the start of a text: a keyword and designator, a bare outline
/// number or a marker.
fn leading_pattern() -> String {
    format!(
        r"^(?:(?P<keyword>{KEYWORD})\s*(?P<designator>{DESIGNATOR})|(?P<outline>\d{{1,3}}(?:\.\d{{1,3}})*\.?)|(?P<marker>\((?:[A-Za-z]{{1,4}}|\d{{1,3}})\)|(?:[a-z]{{1,4}}|\d{{1,3}})\)|[a-z]\.))"
    )
}

static LEADING: LazyLock<Regex> = LazyLock::new(|| compile(&leading_pattern()));

/// The bytes a label can open with, read off [`leading_pattern`]. Most
/// sentences open with a capital no keyword starts with ("He", "In",
/// "Beyoncé"); [`Label::leading`] runs on every paragraph and many
/// sentences, and a regex search costs far more than a table lookup even
/// when it fails at the first byte.
static OPENING_BYTES: LazyLock<[bool; 256]> = LazyLock::new(|| opening_bytes(&leading_pattern()));

/// Every byte a match of `pattern` can start with: the first bytes of its
/// prefix literals, which regex-syntax extracts with classes expanded
/// (Unicode digits and case folds included) and literals cut to one byte.
/// Where the literals are not a finite set, or a match may be empty, any
/// byte may start one.
fn opening_bytes(pattern: &str) -> [bool; 256] {
    let hir = match regex_syntax::parse(pattern) {
        Ok(hir) => hir,
        Err(error) => panic!("invalid enrichment pattern: {error}"),
    };
    let mut extractor = Extractor::new();
    extractor
        .kind(ExtractKind::Prefix)
        .limit_class(10_000)
        .limit_literal_len(1)
        .limit_total(100_000);
    let prefixes = extractor.extract(&hir);
    let Some(literals) = prefixes.literals() else {
        return [true; 256];
    };
    let mut opening = [false; 256];
    for literal in literals {
        match literal.as_bytes().first() {
            Some(&b) => opening[usize::from(b)] = true,
            None => return [true; 256],
        }
    }
    opening
}

impl<'a> Label<'a> {
    /// The label a text opens with, if any. Bare outline numbers must be
    /// followed by a capitalised word, a quote or a parenthesis ("1.1 HDI
    /// shall …", "1. HDI's Responsibilities"), so that "2.5 million" or
    /// "10 days" are not read as numbers of clauses; markers must be
    /// followed by a space. Either may also stand alone ("7.").
    pub fn leading(text: &'a str) -> Option<Label<'a>> {
        let first = text.as_bytes().first()?;
        if !OPENING_BYTES[usize::from(*first)] {
            return None;
        }
        let caps = LEADING.captures(text)?;
        let whole = caps.get(0)?;
        let rest = &text[whole.end()..];
        if let (Some(keyword), Some(designator)) = (caps.name("keyword"), caps.name("designator")) {
            let (kind, _) = ReferenceKind::from_keyword(keyword.as_str())?;
            return Some(Label {
                kind: Some(kind),
                keyword: keyword.as_str(),
                designator: designator.as_str(),
                is_marker: false,
                rest,
            });
        }
        let (designator, is_marker) = match (caps.name("outline"), caps.name("marker")) {
            (Some(outline), _) => (outline, false),
            (None, Some(marker)) => (marker, true),
            (None, None) => return None,
        };
        let mut after = rest.chars();
        let spaced = after.next().is_some_and(char::is_whitespace);
        let next = after.find(|c| !c.is_whitespace());
        // A number standing alone ("7." split off "7. DELIVERIES" by the
        // sentence splitter) is a label too.
        let alone = rest.trim().is_empty();
        let accepted = alone
            || if is_marker {
                spaced
            } else {
                spaced && next.is_some_and(|c| c.is_uppercase() || matches!(c, '"' | '“' | '('))
            };
        accepted.then_some(Label {
            kind: None,
            keyword: "",
            designator: designator.as_str(),
            is_marker,
            rest,
        })
    }

    /// Whether the label stands as a title rather than opening a sentence
    /// that mentions it: nothing follows, or punctuation ("Table 3: Fees",
    /// "Section 5.1. Payment", "Schedule 2 — Fees"), or a capitalised word
    /// ("ARTICLE V TERM", "Section 5.1 The Company shall …"). "Section 5.1
    /// of this Agreement …" is a mention.
    pub fn is_title(&self) -> bool {
        let rest = self.rest.trim_start();
        match rest.chars().next() {
            None => true,
            Some('.' | ':' | '-' | '–' | '—' | ')' | '|') => true,
            Some(c) => {
                self.rest.starts_with(char::is_whitespace)
                    && (c.is_uppercase() || matches!(c, '"' | '“'))
            }
        }
    }

    /// The matching key of the designator ("5.1", "5", "(b)", "a-1").
    pub fn key(&self) -> String {
        if self.is_marker {
            return marker_key(self.designator);
        }
        let romans = self.kind.map_or(Romans::Numbers, ReferenceKind::romans);
        designator_key(self.designator, romans)
    }

    /// The label as a clause id: "5.1", "ARTICLE V", "Exhibit A", "(a)".
    pub fn clause_id(&self) -> String {
        let designator = self.designator.trim_end_matches(['.', ':']);
        if self.is_marker {
            return marker_key(designator);
        }
        match self.kind {
            Some(kind) if kind.keeps_keyword_in_clause_id() => {
                format!("{} {designator}", self.keyword)
            }
            _ => designator.to_string(),
        }
    }
}

/// The label of a heading's numbering as the parser split it ("5.1",
/// "ARTICLE V", "A.", "Exhibit A"): a keyword and a designator, or a bare
/// designator.
pub fn numbering_label(numbering: &str) -> Label<'_> {
    let numbering = numbering.trim();
    if let Some((keyword, designator)) = numbering.split_once(char::is_whitespace)
        && let Some((kind, _)) = ReferenceKind::from_keyword(keyword)
    {
        return Label {
            kind: Some(kind),
            keyword,
            designator: designator.trim(),
            is_marker: false,
            rest: "",
        };
    }
    let is_marker = numbering.ends_with(')');
    Label {
        kind: None,
        keyword: "",
        designator: numbering,
        is_marker,
        rest: "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords() {
        use ReferenceKind::*;
        assert_eq!(
            ReferenceKind::from_keyword("Sections"),
            Some((Section, true))
        );
        assert_eq!(ReferenceKind::from_keyword("§"), Some((Section, false)));
        assert_eq!(
            ReferenceKind::from_keyword("sub-clause"),
            Some((Clause, false))
        );
        assert_eq!(ReferenceKind::from_keyword("Fig."), Some((Figure, false)));
        assert_eq!(
            ReferenceKind::from_keyword("APPENDICES"),
            Some((Appendix, true))
        );
        assert_eq!(
            ReferenceKind::from_keyword("Addenda"),
            Some((Addendum, true))
        );
        assert_eq!(ReferenceKind::from_keyword("subject"), None);
        assert!(Clause.matches(Section));
        assert!(!Article.matches(Section));
        assert!(!Exhibit.matches(Schedule));
    }

    /// The screen is read off the pattern, so it must still screen: a
    /// pattern whose prefixes could not be listed would let every byte
    /// through and silently cost the search again.
    #[test]
    fn most_capitals_open_no_label() {
        for b in *b"BDGHIJKLMNOQRUVWXYZ\"' -" {
            assert!(!OPENING_BYTES[usize::from(b)], "{:?}", char::from(b));
        }
        for text in [
            "Section 5",
            "§ 5",
            "ſection 5",
            "Part 2",
            "(a) x",
            "b) x",
            "7.",
            "٣. A",
        ] {
            let first = text.as_bytes()[0];
            assert!(OPENING_BYTES[usize::from(first)], "{text:?}");
        }
    }

    proptest::proptest! {
        /// Every text the pattern reads a label from opens with a byte the
        /// screen lets through: keywords in any case (and with "ſ" for
        /// "s"), "§", outline numbers in any script's digits, markers.
        #[test]
        fn the_opening_byte_screen_passes_every_label(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "Section", "SECTIONS", "ſection", "sub-clause", "Art.", "Fig.", "PART", "Parts",
                    "Exhibit", "annexes", "Addenda", "§", "§§", "5", "5.1", "٣", "３", "12.", "(a)",
                    "(iv)", "b)", "c.", "V", "A-1", " ", "The", "He", "é", "\"", "x",
                ]),
                1..5,
            )
        ) {
            let text = pieces.concat();
            if LEADING.is_match(&text) {
                proptest::prop_assert!(OPENING_BYTES[usize::from(text.as_bytes()[0])], "{:?}", text);
            }
        }
    }

    #[test]
    fn leading_labels() {
        let label = Label::leading("1.1 HDI shall design the Site.").unwrap();
        assert_eq!((label.kind, label.key()), (None, "1.1".to_string()));
        let label = Label::leading("1. HDI's Responsibilities.").unwrap();
        assert_eq!(label.clause_id(), "1");
        let label = Label::leading("ARTICLE V TERM").unwrap();
        assert_eq!(label.kind, Some(ReferenceKind::Article));
        assert_eq!(label.key(), "5");
        assert_eq!(label.clause_id(), "ARTICLE V");
        assert!(label.is_title());
        let label = Label::leading("(b) the Company shall").unwrap();
        assert!(label.is_marker);
        assert_eq!(label.key(), "(b)");
        assert_eq!(Label::leading("b. The Company").unwrap().key(), "(b)");
        assert_eq!(Label::leading("ii) any").unwrap().key(), "(ii)");
        let label = Label::leading("Table 3: Revenue by segment").unwrap();
        assert_eq!(label.kind, Some(ReferenceKind::Table));
        assert!(label.is_title());
        assert!(
            !Label::leading("Section 5.1 of this Agreement")
                .unwrap()
                .is_title()
        );
        assert!(Label::leading("Section 5.1. Payment").unwrap().is_title());
    }

    #[test]
    fn ordinary_openings_are_not_labels() {
        assert!(Label::leading("2.5 million shares were issued.").is_none());
        assert!(Label::leading("10 days after notice").is_none());
        assert!(Label::leading("2024 was a good year.").is_none());
        assert!(Label::leading("Section shall mean a part.").is_none());
        assert!(Label::leading("The Company").is_none());
        assert!(Label::leading("a.m. on Monday").is_none());
        assert_eq!(Label::leading("7.").map(|l| l.key()), Some("7".into()));
    }

    #[test]
    fn numberings() {
        let label = numbering_label("ARTICLE V");
        assert_eq!(
            (label.kind, label.key()),
            (Some(ReferenceKind::Article), "5".into())
        );
        assert_eq!(numbering_label("5.1.").key(), "5.1");
        assert_eq!(numbering_label("Exhibit A").clause_id(), "Exhibit A");
        assert_eq!(numbering_label("Section 2").clause_id(), "2");
        assert_eq!(numbering_label("(a)").key(), "(a)");
    }
}
