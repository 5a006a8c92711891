//! Outbound references ("see Section 2.1", "as set out in Exhibit A",
//! "Table 3 shows") and their targets inside the same document.
//!
//! A mention is a keyword and a designator ("Section 2.1", "Fig. 7",
//! "ARTICLE V", "§ 4", "clause (b)"); a plural keyword may head a list
//! ("Sections 2.1 and 2.3", "Exhibits 10 and/or 11", "Sections 3.02(b)
//! and (e)"), which yields one reference per item, each labelled with the
//! singular keyword ("Section 2.1", "Section 2.3", "Section 3.02(e)").
//! Ranges ("Sections 2.1 through 2.5") yield their two ends only. A keyword
//! without a designator ("this Section shall survive") is no reference.
//!
//! Targets are looked up among:
//! 1. headings, by numbering ("5.1", "ARTICLE V" — Roman and Arabic
//!    numerals match) or by an opening label ("Appendix B: Glossary");
//! 2. paragraphs that open with a label as a title: captions ("Table 3:
//!    Revenue"), and label lines ("EXHIBIT A", "Section 5.1. Payment");
//! 3. numbered clause paragraphs, by clause id ("5.1 The Company shall …",
//!    "(a)" under 5.1 is "5.1(a)");
//!
//! in that order of preference; among equals, the candidate sharing the
//! most enclosing sections with the referring sentence wins (a "Section 2"
//! inside Exhibit A means Exhibit A's section 2 when it has one), then the
//! first in reading order. Provision keywords (section, clause, paragraph)
//! match each other and bare numbers; "Article 5" matches "ARTICLE V" or
//! "5." but not "Section 5"; annex, table and figure keywords match only
//! their own kind. A designator that is not found falls back to its
//! enclosing clause ("Section 5.1(b)" → 5.1). A bare marker ("paragraph
//! (b)") is looked up among the markers of the referring sentence's own
//! section only, since every section reuses (a), (b), ….
//!
//! A sentence never targets its own paragraph or its own section, and the
//! label that opens a caption or title line ("Table 3: Revenue",
//! "EXHIBIT A") is that paragraph's name, not a reference. A mention
//! followed by "of" and the name of another instrument ("Section 16 of the
//! Securities Exchange Act", "Section 409A of the Code", "Section 2 of the
//! Credit Agreement") is kept without a target: it points outside the
//! document.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::clauses::ParagraphClause;
use super::cues::{Cues, Edges};
use super::labels::{DESIGNATOR, KEYWORD, Label, ReferenceKind, numbering_label};
use super::numbering::{Romans, designator_key, is_parenthesised, parent_key, roman_value};
use super::{compile, dedup_in_order, strip_suffix_ignore_case};
use crate::skeleton::{ParagraphId, ParagraphKind, SectionId, Sentence, Skeleton};

/// A reference from a sentence to a part of the document.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Reference {
    pub kind: ReferenceKind,
    /// The reference as written; for the items of a list, the singular
    /// keyword and the item ("Section 2.3").
    pub label: String,
    /// Where the reference points in the same document, when found there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

/// A part of the document a reference points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "type", content = "id", rename_all = "snake_case")]
pub enum Target {
    Section(SectionId),
    Paragraph(ParagraphId),
}

/// A mention found in a sentence's text, before resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mention {
    pub kind: ReferenceKind,
    pub label: String,
    /// The designator's matching key ("5.1", "5", "(b)", "a").
    pub key: String,
    /// Byte offset of the mention in the sentence.
    pub start: usize,
    /// Whether the mention names a part of another instrument.
    pub external: bool,
}

const SEPARATOR: &str =
    r"(?:\s*,\s*(?:(?i:and/or|and|or)\s+)?|\s+(?i:and/or|and|or|through|to)\s+|\s*[-–]\s*)";

static MENTION: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        r"(?P<keyword>{KEYWORD})\s*(?P<first>{DESIGNATOR})(?P<list>(?:{SEPARATOR}(?:{DESIGNATOR}))*)"
    ))
});

static LIST_ITEM: LazyLock<Regex> =
    LazyLock::new(|| compile(&format!(r"{SEPARATOR}(?P<item>{DESIGNATOR})")));

/// "of the Securities Exchange Act", "of the Code", "of the Credit
/// Agreement": the words after a mention that name another instrument.
static OTHER_INSTRUMENT: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"^,?\s+of\s+(?:the\s+)?(?P<name>\p{Lu}[\p{L}\p{N}.'’&\-]*(?:\s+(?:of\s+)?\p{Lu}[\p{L}\p{N}.'’&\-]*|\s+\d{4}(?-u:\b))*)",
    )
});

/// Names of laws that stand alone ("of the Code").
const LAW_WORDS: &[&str] = &[
    "act",
    "code",
    "rule",
    "rules",
    "regulation",
    "regulations",
    "directive",
    "convention",
    "treaty",
    "law",
    "statute",
    "statutes",
    "constitution",
];

/// What every match of [`MENTION`] contains: a word its keyword is made
/// of, in any case and opening a word ("sub-sections" holds "section"
/// after a hyphen, "notable" holds no "table"), "Part" or "PART" as
/// written, an abbreviation with its period ("Sec.", "figs."), or "§".
/// Kept by hand beside [`KEYWORD`]; a test reads every word that pattern
/// matches and checks that it holds one of these.
pub(super) fn cues() -> Cues {
    let words = [
        "subsection",
        "subclause",
        "subparagraph",
        "section",
        "sec.",
        "secs.",
        "article",
        "art.",
        "arts.",
        "clause",
        "paragraph",
        "para.",
        "paras.",
        "chapter",
        "table",
        "figure",
        "fig.",
        "figs.",
        "appendi",
        "annex",
        "schedule",
        "exhibit",
        "attachment",
        "addend",
    ];
    Cues {
        // "Part" is the one keyword the pattern matches case for case, so
        // "part of", "party" and "department" cue nothing.
        exact: ["§", "Part", "PART"].map(String::from).to_vec(),
        caseless: words.map(String::from).to_vec(),
        exact_edges: Edges::ANYWHERE,
        // Every keyword but "§" follows `(?-u:\b)`; "sub-section" holds
        // "section" after a hyphen, "subsection" only as itself.
        caseless_edges: Edges::OPENING,
        needs_digit: false,
    }
}

/// The mentions of a sentence, in order of appearance.
pub fn find_mentions(text: &str) -> Vec<Mention> {
    let mut out = Vec::new();
    for caps in MENTION.captures_iter(text) {
        let (Some(whole), Some(keyword), Some(first)) =
            (caps.get(0), caps.name("keyword"), caps.name("first"))
        else {
            continue;
        };
        let Some((kind, plural)) = ReferenceKind::from_keyword(keyword.as_str()) else {
            continue;
        };
        let external = names_other_instrument(&text[whole.end()..]);
        let first_end = first.end();
        let label = if plural {
            format!("{} {}", singular(keyword.as_str()), first.as_str())
        } else {
            text[whole.start()..first_end].to_string()
        };
        out.push(Mention {
            kind,
            label,
            key: designator_key(first.as_str(), kind.romans()),
            start: whole.start(),
            external,
        });
        // Lists follow plural keywords only: in "Section 5 and 6 months"
        // the 6 is no section.
        let Some(list) = caps.name("list").filter(|_| plural) else {
            continue;
        };
        let mut previous = first.as_str().to_string();
        for item in LIST_ITEM.captures_iter(list.as_str()) {
            let Some(item) = item.name("item") else {
                continue;
            };
            // "(e)" after "3.02(b)" is 3.02(e).
            let written = if is_parenthesised(item.as_str()) {
                let base = previous.split('(').next().unwrap_or_default();
                format!("{base}{}", item.as_str())
            } else {
                item.as_str().to_string()
            };
            out.push(Mention {
                kind,
                label: format!("{} {written}", singular(keyword.as_str())),
                key: designator_key(&written, kind.romans()),
                start: list.start() + item.start(),
                external,
            });
            previous = written;
        }
    }
    out
}

/// Whether the text after a mention names another instrument: "of the
/// Securities Exchange Act of 1934", "of the Code", "of the Credit
/// Agreement". A single word other than a law's ("of the Agreement") is
/// this document's own name, and an annex or article ("of Exhibit A") is a
/// part of it.
fn names_other_instrument(after: &str) -> bool {
    let Some(name) = OTHER_INSTRUMENT
        .captures(after)
        .and_then(|caps| caps.name("name"))
    else {
        return false;
    };
    let words: Vec<&str> = name.as_str().split_whitespace().collect();
    let Some(first) = words.first() else {
        return false;
    };
    if ReferenceKind::from_keyword(first).is_some() {
        return false;
    }
    let law = words.iter().any(|w| {
        LAW_WORDS
            .iter()
            .any(|l| l.eq_ignore_ascii_case(w.trim_end_matches(['.', ','])))
    });
    law || words.len() >= 2
}

/// The singular of a plural keyword, in the keyword's case: "Sections" →
/// "Section", "APPENDICES" → "APPENDIX", "Addenda" → "Addendum", "§§" → "§".
fn singular(keyword: &str) -> String {
    if let Some(rest) = keyword.strip_prefix("§§") {
        return format!("§{rest}");
    }
    let upper = keyword
        .chars()
        .filter(|c| c.is_alphabetic())
        .all(char::is_uppercase);
    let cased = |s: &str| {
        if upper {
            s.to_ascii_uppercase()
        } else {
            s.to_string()
        }
    };
    let (word, dot) = match keyword.strip_suffix('.') {
        Some(word) => (word, "."),
        None => (keyword, ""),
    };
    let singular = if let Some(stem) = strip_suffix_ignore_case(word, "ices") {
        format!("{stem}{}", cased("ix"))
    } else if let Some(stem) = strip_suffix_ignore_case(word, "exes") {
        format!("{stem}{}", cased("ex"))
    } else if let Some(stem) = strip_suffix_ignore_case(word, "nda") {
        format!("{stem}{}", cased("ndum"))
    } else if let Some(stem) = strip_suffix_ignore_case(word, "s") {
        stem.to_string()
    } else {
        word.to_string()
    };
    format!("{singular}{dot}")
}

/// How strongly a kind of candidate answers a reference: headings before
/// title lines and captions before numbered clause paragraphs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Heading,
    Label,
    Clause,
}

#[derive(Clone, Copy, Debug)]
struct Candidate {
    /// The label keyword's kind, `None` for bare numbers.
    kind: Option<ReferenceKind>,
    target: Target,
    /// The section the target lies in (itself, for a section).
    section: SectionId,
    rank: Rank,
}

impl Candidate {
    fn answers(&self, kind: ReferenceKind) -> bool {
        match self.kind {
            Some(own) => kind.matches(own),
            None => kind.is_structural(),
        }
    }
}

/// Every labelled part of one document, indexed for reference lookup.
pub struct Resolver<'a> {
    skeleton: &'a Skeleton,
    /// Candidates by designator key, in reading order within each rank.
    by_key: HashMap<String, Vec<Candidate>>,
    /// Sub-clause markers by section: (section, "(b)") → paragraph.
    markers: HashMap<(SectionId, String), ParagraphId>,
    /// Every section's enclosing sections from the root down, itself last.
    chains: Vec<Vec<SectionId>>,
}

impl<'a> Resolver<'a> {
    /// Indexes the headings, title lines, captions and numbered clauses of
    /// a skeleton. `clauses` is aligned with its paragraphs.
    pub fn new(skeleton: &'a Skeleton, clauses: &[ParagraphClause]) -> Self {
        let mut resolver = Resolver {
            skeleton,
            by_key: HashMap::new(),
            markers: HashMap::new(),
            chains: ancestor_chains(skeleton),
        };
        for section in skeleton.sections.iter().filter(|s| s.level > 0) {
            let label = match section.numbering.as_deref() {
                Some(numbering) => Some(numbering_label(numbering)),
                None => {
                    Label::leading(&section.heading).filter(|l| l.kind.is_some() && l.is_title())
                }
            };
            if let Some(label) = label {
                resolver.add(
                    &label,
                    Target::Section(section.id),
                    section.id,
                    Rank::Heading,
                );
            }
        }
        for paragraph in &skeleton.paragraphs {
            let target = Target::Paragraph(paragraph.id);
            let first = skeleton
                .sentences
                .get(paragraph.sentences.start as usize)
                .map_or("", |s| s.text.as_str());
            let label = Label::leading(first).filter(|l| {
                l.kind.is_some() && (paragraph.kind == ParagraphKind::Caption || l.is_title())
            });
            let clause = clauses.get(paragraph.id.index());
            if let Some(label) = label {
                resolver.add(&label, target, paragraph.section, Rank::Label);
            } else if let Some(id) = clause
                .filter(|c| c.numbered)
                .and_then(|c| c.clause.as_deref())
                .filter(|id| !is_parenthesised(id))
            {
                let key = designator_key(id, Romans::Numbers);
                resolver.insert(key, None, target, paragraph.section, Rank::Clause);
            }
            if let Some(marker) = clause.and_then(|c| c.marker.clone()) {
                resolver
                    .markers
                    .entry((paragraph.section, marker))
                    .or_insert(paragraph.id);
            }
        }
        resolver
    }

    fn add(&mut self, label: &Label, target: Target, section: SectionId, rank: Rank) {
        let key = label.key();
        // A bare single-letter heading number ("C.", "V.") is a letter as
        // often as a Roman numeral: index both readings.
        let bare = label.designator.trim_end_matches(['.', ':']);
        if label.kind.is_none() && bare.len() == 1 && roman_value(bare).is_some() {
            self.insert(bare.to_ascii_lowercase(), None, target, section, rank);
        }
        self.insert(key, label.kind, target, section, rank);
    }

    fn insert(
        &mut self,
        key: String,
        kind: Option<ReferenceKind>,
        target: Target,
        section: SectionId,
        rank: Rank,
    ) {
        self.by_key.entry(key).or_default().push(Candidate {
            kind,
            target,
            section,
            rank,
        });
    }

    /// The references of one sentence, resolved.
    pub fn references(&self, sentence: &Sentence) -> Vec<Reference> {
        let mentions = find_mentions(&sentence.text);
        if mentions.is_empty() {
            return Vec::new();
        }
        let opens_paragraph = self
            .skeleton
            .paragraphs
            .get(sentence.paragraph.index())
            .filter(|p| p.sentences.start == sentence.id.0);
        let own_label = opens_paragraph.is_some_and(|p| {
            p.kind == ParagraphKind::Caption
                || Label::leading(&sentence.text).is_some_and(|l| l.kind.is_some() && l.is_title())
        });
        let mut out: Vec<Reference> = Vec::with_capacity(mentions.len());
        for mention in mentions {
            if own_label && mention.start == 0 {
                continue;
            }
            let target = if mention.external {
                None
            } else {
                self.resolve(&mention, sentence)
            };
            let reference = Reference {
                kind: mention.kind,
                label: mention.label,
                target,
            };
            out.push(reference);
        }
        dedup_in_order(&mut out);
        out
    }

    fn resolve(&self, mention: &Mention, sentence: &Sentence) -> Option<Target> {
        let own = |target: Target| match target {
            Target::Section(s) => s == sentence.section,
            Target::Paragraph(p) => p == sentence.paragraph,
        };
        if is_parenthesised(&mention.key) {
            return self
                .markers
                .get(&(sentence.section, mention.key.clone()))
                .map(|&p| Target::Paragraph(p))
                .filter(|&t| !own(t));
        }
        let mut key = mention.key.as_str();
        loop {
            let best = self
                .by_key
                .get(key)
                .into_iter()
                .flatten()
                .filter(|c| c.answers(mention.kind) && !own(c.target))
                .min_by_key(|c| {
                    let shared = self.shared_ancestors(c.section, sentence.section);
                    (c.rank, std::cmp::Reverse(shared))
                });
            if let Some(best) = best {
                return Some(best.target);
            }
            key = parent_key(key)?;
        }
    }

    /// How many enclosing sections (the root included) two sections share.
    fn shared_ancestors(&self, a: SectionId, b: SectionId) -> usize {
        match (self.chains.get(a.index()), self.chains.get(b.index())) {
            (Some(a), Some(b)) => a.iter().zip(b).take_while(|(x, y)| x == y).count(),
            _ => 0,
        }
    }
}

/// Every section's chain of enclosing sections, root first and itself
/// last. Parents come before their children in a skeleton, so each chain
/// extends its parent's.
fn ancestor_chains(skeleton: &Skeleton) -> Vec<Vec<SectionId>> {
    let mut chains: Vec<Vec<SectionId>> = Vec::with_capacity(skeleton.sections.len());
    for section in &skeleton.sections {
        let mut chain = section
            .parent
            .filter(|p| p.index() < chains.len())
            .and_then(|p| chains.get(p.index()).cloned())
            .unwrap_or_default();
        chain.push(section.id);
        chains.push(chain);
    }
    chains
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_keyword_holds_a_cue() {
        // The words KEYWORD matches, read from the pattern itself with its
        // case-insensitive groups made case-sensitive (so that each word is
        // listed once, as written there): the cue list is kept by hand, and
        // a keyword added without a cue would otherwise go unseen.
        use crate::enrich::cues::{Cued, Extractor};
        use regex_syntax::hir::literal::{ExtractKind, Extractor as Literals};
        let pattern = KEYWORD.replace("(?i:", "(?:");
        let hir = regex_syntax::parse(&pattern).expect("KEYWORD parses");
        let words = Literals::new()
            .kind(ExtractKind::Prefix)
            .limit_total(10_000)
            .extract(&hir);
        assert!(words.is_finite() && words.is_exact(), "{words:?}");
        let wanted = Cued::only([Extractor::References]);
        let mut checked = 0;
        for word in words.literals().unwrap_or_default() {
            let word = String::from_utf8_lossy(word.as_bytes());
            // Through the screen enrichment runs, with a designator beside
            // the word so that a digit never decides.
            let cued = Cued::of(&format!("{word} 1"), wanted);
            assert!(
                cued.may_match(Extractor::References),
                "the keyword {word:?} holds no cue of references::cues"
            );
            checked += 1;
        }
        assert!(checked > 40, "only {checked} keywords read from KEYWORD");
    }

    /// Pieces glued without spaces: keywords after letters, digits,
    /// hyphens, underscores and characters outside ASCII.
    const GLUED: &[&str] = &[
        "sub",
        "-",
        "section",
        "SECTION",
        "Subsection",
        "table",
        "no",
        "art.",
        "st",
        "Part",
        "§",
        "5",
        "1.2",
        " ",
        "(",
        "a",
        "_",
        "\u{e9}",
        "\u{17f}",
        "clause",
        "s",
        "Exhibit",
        "A",
        ".",
    ];

    proptest::proptest! {
        /// Wherever a mention is found, the screen, which counts a keyword
        /// only where it opens a word, lets its sentence through.
        #[test]
        fn every_mention_is_cued_wherever_its_keyword_stands(
            pieces in proptest::collection::vec(proptest::sample::select(GLUED), 0..12),
        ) {
            use crate::enrich::cues::{Cued, Extractor};
            let text = pieces.concat();
            let cued = Cued::of(&text, Cued::only([Extractor::References]));
            proptest::prop_assert!(
                find_mentions(&text).is_empty() || cued.may_match(Extractor::References),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_keyword_inside_a_word_cues_nothing() {
        use crate::enrich::cues::{Cued, Extractor};
        let wanted = Cued::only([Extractor::References]);
        for text in ["a notable 5", "the start. 5", "intersection 5"] {
            assert!(
                !Cued::of(text, wanted).may_match(Extractor::References),
                "{text:?}"
            );
        }
        for text in [
            "sub-section 5",
            "(table 5)",
            "\u{e9}Section 5",
            "subsection 5",
        ] {
            assert!(
                Cued::of(text, wanted).may_match(Extractor::References),
                "{text:?}"
            );
        }
    }

    fn labels(text: &str) -> Vec<(ReferenceKind, String, String)> {
        find_mentions(text)
            .into_iter()
            .map(|m| (m.kind, m.label, m.key))
            .collect()
    }

    #[test]
    fn single_mentions() {
        use ReferenceKind::*;
        let found = labels(
            "See Table 3, Fig. 7, Appendix B, Annex 2, Schedule A, Exhibit 10.1, clause 5.1, \
             Article V, paragraph (b), § 4.2 and Section 8.2(b).",
        );
        assert_eq!(
            found,
            [
                (Table, "Table 3".into(), "3".into()),
                (Figure, "Fig. 7".into(), "7".into()),
                (Appendix, "Appendix B".into(), "b".into()),
                (Annex, "Annex 2".into(), "2".into()),
                (Schedule, "Schedule A".into(), "a".into()),
                (Exhibit, "Exhibit 10.1".into(), "10.1".into()),
                (Clause, "clause 5.1".into(), "5.1".into()),
                (Article, "Article V".into(), "5".into()),
                (Paragraph, "paragraph (b)".into(), "(b)".into()),
                (Section, "§ 4.2".into(), "4.2".into()),
                (Section, "Section 8.2(b)".into(), "8.2(b)".into()),
            ]
        );
    }

    #[test]
    fn lists_after_plural_keywords() {
        let found: Vec<String> = find_mentions("Sections 2.1 and 2.3 apply.")
            .into_iter()
            .map(|m| m.label)
            .collect();
        assert_eq!(found, ["Section 2.1", "Section 2.3"]);
        let found: Vec<String> =
            find_mentions("under Sections 3.02(b) and (e) and EXHIBITS A, B and C")
                .into_iter()
                .map(|m| m.label)
                .collect();
        assert_eq!(
            found,
            [
                "Section 3.02(b)",
                "Section 3.02(e)",
                "EXHIBIT A",
                "EXHIBIT B",
                "EXHIBIT C"
            ]
        );
        let found: Vec<String> = find_mentions("Section 5 and 6 months later")
            .into_iter()
            .map(|m| m.label)
            .collect();
        assert_eq!(found, ["Section 5"]);
        assert_eq!(singular("Appendices"), "Appendix");
        assert_eq!(singular("ADDENDA"), "ADDENDUM");
        assert_eq!(singular("Annexes"), "Annex");
        assert_eq!(singular("Secs."), "Sec.");
    }

    #[test]
    fn keywords_without_designators_are_not_references() {
        assert!(find_mentions("Section headings are for convenience only.").is_empty());
        assert!(find_mentions("This Section shall survive termination.").is_empty());
        assert!(find_mentions("the table below and the figures").is_empty());
        assert!(find_mentions("schedule a meeting").is_empty());
        assert!(find_mentions("Exhibits hereto form part of it").is_empty());
        assert!(find_mentions("Form 10-K and Schedule 13Dx").is_empty());
    }

    #[test]
    fn other_instruments() {
        let external = |text: &str| find_mentions(text).first().map(|m| m.external);
        assert_eq!(
            external("Section 16 of the Securities Exchange Act of 1934"),
            Some(true)
        );
        assert_eq!(external("Section 409A of the Code"), Some(true));
        assert_eq!(external("Section 2 of the Credit Agreement"), Some(true));
        assert_eq!(external("Section 2 of the Agreement"), Some(false));
        assert_eq!(external("Section 2 of this Agreement"), Some(false));
        assert_eq!(external("Section 2 of Exhibit A"), Some(false));
    }
}
