//! Enrichment: metadata extracted from the skeleton's sentences.
//!
//! Every extractor reads one sentence's text and nothing else, except
//! references (resolved against the whole skeleton), clause ids (a
//! paragraph-level fact shared by its sentences) and annexes (a section
//! fact). The result is aligned with the skeleton's arrays, so that
//! retrieval reaches a sentence's annotations with the same id it reaches
//! the sentence with.
//!
//! | annotation | module | on |
//! |---|---|---|
//! | outbound references and their targets | [`references`] | sentence |
//! | inbound references | this module | section, paragraph |
//! | dates (`YYYY-MM-DD`) | [`dates`] | sentence |
//! | fiscal periods (FY2024, Q4-2024, H1-2023) | [`periods`] | sentence |
//! | money amounts and percentages | [`amounts`] | sentence |
//! | organisations with a legal suffix | [`organizations`] | sentence |
//! | defined terms, definition sentences | [`definitions`] | sentence |
//! | clause ids | [`clauses`] | sentence (per paragraph) |
//! | annexes | [`clauses`] | section |
//!
//! Extractors are regular expressions compiled once per process. They run
//! only on the sentences that hold one of their cues ([`cues`]), found for
//! all of them in one literal search per sentence, so that the great
//! majority of sentences never reach a pattern.

pub mod amounts;
pub mod clauses;
pub mod cues;
pub mod dates;
pub mod definitions;
pub mod labels;
pub mod numbering;
pub mod organizations;
pub mod periods;
pub mod references;
pub mod values;

use std::collections::HashSet;
use std::hash::Hash;

use regex::Regex;
use serde::Serialize;

use cues::{Cued, Extractor};

pub use amounts::{MoneyAmount, Percentage};
pub use dates::DateMention;
pub use definitions::DefinitionForm;
pub use labels::ReferenceKind;
pub use periods::FiscalPeriod;
pub use references::{Reference, Target};
pub use values::{DateGranularity, TypedValue, typed_values};

use crate::skeleton::{SentenceId, Skeleton};
use crate::spec::EnrichmentSpec;

/// Annotations of one document, aligned with its skeleton's arrays.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Enrichment {
    /// One entry per sentence, by sentence id; none at all when the
    /// profile enables no extractor that annotates sentences (read them
    /// with [`Enrichment::sentence`], or with `get`).
    pub sentences: Vec<SentenceAnnotations>,
    /// One entry per paragraph, by paragraph id.
    pub paragraphs: Vec<ParagraphAnnotations>,
    /// One entry per section, by section id.
    pub sections: Vec<SectionAnnotations>,
}

/// What one sentence mentions. Empty fields are left out of the JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SentenceAnnotations {
    /// Outbound references, each with its target when the document has it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<Reference>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dates: Vec<DateMention>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fiscal_periods: Vec<FiscalPeriod>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub amounts: Vec<MoneyAmount>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub percentages: Vec<Percentage>,
    /// Organisation names as written, each once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub organizations: Vec<String>,
    /// Terms this sentence defines (not terms it merely uses).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub defined_terms: Vec<String>,
    /// How this sentence defines its terms; `None` when it defines none.
    /// Retrieval boosts definition sentences, explicit ones most.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition: Option<DefinitionForm>,
    /// The clause the sentence belongs to ("5.1", "5.1(a)", "ARTICLE V").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clause: Option<String>,
}

/// What points at one paragraph (a caption, a title line, a numbered
/// clause).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ParagraphAnnotations {
    /// Sentences whose references target this paragraph, in reading
    /// order, each once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inbound: Vec<SentenceId>,
}

/// Facts about one section.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SectionAnnotations {
    /// Whether the section is (or lies inside) an annex, schedule,
    /// exhibit, appendix, attachment or addendum.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_annex: bool,
    /// Sentences whose references target this section, in reading order,
    /// each once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inbound: Vec<SentenceId>,
}

/// Annotations of the sentences of one chunk, merged: each value once, in
/// order of first appearance. Empty fields are left out of the JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ChunkMetadata {
    /// Reference labels ("Section 2.1", "Exhibit A").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// Dates as `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dates: Vec<String>,
    /// Normalised fiscal periods ("FY2024", "Q4-2024").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fiscal_periods: Vec<String>,
    /// Money amounts as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub amounts: Vec<String>,
    /// Percentages as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub percentages: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub organizations: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub defined_terms: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clause_ids: Vec<String>,
    /// Whether any covered sentence lies in an annex.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_annex: bool,
}

/// Annotates a skeleton with the extractors `spec` turns on.
pub fn enrich(skeleton: &Skeleton, spec: &EnrichmentSpec) -> Enrichment {
    // Clause facts serve clause ids and reference targets alike.
    let clauses = if spec.clauses || spec.references {
        clauses::paragraph_clauses(skeleton)
    } else {
        Vec::new()
    };
    let resolver = spec
        .references
        .then(|| references::Resolver::new(skeleton, &clauses));
    let wanted = Cued::only(
        [
            (spec.references, Extractor::References),
            (spec.dates, Extractor::Dates),
            (spec.fiscal_periods, Extractor::FiscalPeriods),
            (spec.amounts, Extractor::Money),
            (spec.amounts, Extractor::Percentages),
            (spec.organizations, Extractor::Organizations),
            (spec.definitions, Extractor::Definitions),
        ]
        .into_iter()
        .filter_map(|(on, extractor)| on.then_some(extractor)),
    );
    // With nothing to find, no sentence gets an entry: a document's worth
    // of empty annotations costs as much to write and drop as the rest of
    // this pass.
    let annotates_sentences = wanted != Cued::NONE || spec.clauses || resolver.is_some();
    let sentences_to_read = if annotates_sentences {
        skeleton.sentences.as_slice()
    } else {
        &[]
    };
    let texts: Vec<&str> = sentences_to_read.iter().map(|s| s.text.as_str()).collect();
    let cues = Cued::of_each(&texts, wanted);
    let mut sentences = Vec::with_capacity(sentences_to_read.len());
    for (sentence, cued) in sentences_to_read.iter().zip(cues) {
        let text = sentence.text.as_str();
        let mut annotations = SentenceAnnotations::default();
        if let Some(resolver) = &resolver
            && cued.may_match(Extractor::References)
        {
            annotations.references = resolver.references(sentence);
        }
        if cued.may_match(Extractor::Dates) {
            annotations.dates = dates::find_dates(text);
        }
        if cued.may_match(Extractor::FiscalPeriods) {
            annotations.fiscal_periods = periods::find_periods(text);
        }
        if cued.may_match(Extractor::Money) {
            annotations.amounts = amounts::find_money(text);
        }
        if cued.may_match(Extractor::Percentages) {
            annotations.percentages = amounts::find_percentages(text);
        }
        if cued.may_match(Extractor::Organizations) {
            annotations.organizations = organizations::find_organizations(text);
        }
        if cued.may_match(Extractor::Definitions) {
            let holds = definitions::Holds::cued(cued);
            let found = definitions::find_held_definitions(text, holds);
            annotations.defined_terms = found.terms;
            annotations.definition = found.form;
        }
        if spec.clauses {
            annotations.clause = clauses
                .get(sentence.paragraph.index())
                .and_then(|c| c.clause.clone());
        }
        sentences.push(annotations);
    }

    let annex = if spec.clauses {
        clauses::annex_sections(skeleton)
    } else {
        vec![false; skeleton.sections.len()]
    };
    let mut sections: Vec<SectionAnnotations> = annex
        .into_iter()
        .map(|is_annex| SectionAnnotations {
            is_annex,
            inbound: Vec::new(),
        })
        .collect();
    let mut paragraphs = vec![ParagraphAnnotations::default(); skeleton.paragraphs.len()];

    // Inbound pass: every resolved reference, filed under its target.
    // Sentences are visited in reading order, so the lists come out sorted;
    // a sentence that names one target twice is filed once.
    for (sentence, annotations) in skeleton.sentences.iter().zip(&sentences) {
        for target in annotations.references.iter().filter_map(|r| r.target) {
            let inbound = match target {
                Target::Section(id) => sections.get_mut(id.index()).map(|s| &mut s.inbound),
                Target::Paragraph(id) => paragraphs.get_mut(id.index()).map(|p| &mut p.inbound),
            };
            if let Some(inbound) = inbound
                && inbound.last() != Some(&sentence.id)
            {
                inbound.push(sentence.id);
            }
        }
    }

    Enrichment {
        sentences,
        paragraphs,
        sections,
    }
}

impl Enrichment {
    /// The annotations of one sentence; empty ones when it has none or
    /// the id is outside the skeleton.
    pub fn sentence(&self, id: SentenceId) -> &SentenceAnnotations {
        static NONE: SentenceAnnotations = SentenceAnnotations {
            references: Vec::new(),
            dates: Vec::new(),
            fiscal_periods: Vec::new(),
            amounts: Vec::new(),
            percentages: Vec::new(),
            organizations: Vec::new(),
            defined_terms: Vec::new(),
            definition: None,
            clause: None,
        };
        self.sentences.get(id.index()).unwrap_or(&NONE)
    }

    /// The merged annotations of a chunk's sentences. Ids outside the
    /// skeleton are ignored.
    pub fn chunk_metadata(&self, skeleton: &Skeleton, sentences: &[SentenceId]) -> ChunkMetadata {
        let mut meta = ChunkMetadata::default();
        for id in sentences {
            let annotations = self.sentence(*id);
            for reference in &annotations.references {
                meta.references.push(reference.label.clone());
            }
            for date in &annotations.dates {
                meta.dates.push(date.date.clone());
            }
            for period in &annotations.fiscal_periods {
                meta.fiscal_periods.push(period.period.clone());
            }
            for amount in &annotations.amounts {
                meta.amounts.push(amount.text.clone());
            }
            for percentage in &annotations.percentages {
                meta.percentages.push(percentage.text.clone());
            }
            for organization in &annotations.organizations {
                meta.organizations.push(organization.clone());
            }
            for term in &annotations.defined_terms {
                meta.defined_terms.push(term.clone());
            }
            if let Some(clause) = &annotations.clause {
                meta.clause_ids.push(clause.clone());
            }
            meta.is_annex |= skeleton
                .sentences
                .get(id.index())
                .and_then(|s| self.sections.get(s.section.index()))
                .is_some_and(|s| s.is_annex);
        }
        for values in [
            &mut meta.references,
            &mut meta.dates,
            &mut meta.fiscal_periods,
            &mut meta.amounts,
            &mut meta.percentages,
            &mut meta.organizations,
            &mut meta.defined_terms,
            &mut meta.clause_ids,
        ] {
            dedup_in_order(values);
        }
        meta
    }
}

/// Keeps the first occurrence of every value, in order. Linear in the
/// number of values: a hostile sentence or chunk may hold many thousands.
pub(crate) fn dedup_in_order<T: Hash + Eq + Clone>(values: &mut Vec<T>) {
    if values.len() < 2 {
        return;
    }
    let mut seen = HashSet::with_capacity(values.len());
    values.retain(|value| seen.insert(value.clone()));
}

/// `word` without `suffix`, compared ASCII case-insensitively.
fn strip_suffix_ignore_case<'a>(word: &'a str, suffix: &str) -> Option<&'a str> {
    let at = word.len().checked_sub(suffix.len())?;
    let tail = word.get(at..)?;
    tail.eq_ignore_ascii_case(suffix)
        .then(|| word.get(..at))
        .flatten()
}

/// Compiles one of the module's constant patterns. A pattern that fails to
/// compile is a bug in this module, caught by every unit test that touches
/// it, never a property of the input.
fn compile(pattern: &str) -> Regex {
    match Regex::new(pattern) {
        Ok(regex) => regex,
        Err(error) => panic!("invalid enrichment pattern: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{Format, Table, TreeBuilder};
    use crate::skeleton::{ParagraphId, SectionId};

    /// A small contract, one sentence per paragraph so that the test does
    /// not depend on the sentence splitter.
    fn contract() -> Skeleton {
        let mut b = TreeBuilder::new(Format::Markdown);
        b.heading(1, "1 Definitions");
        b.paragraph(r#""Fees" means the amounts listed in Schedule A."#);
        b.heading(1, "2 Payment");
        b.paragraph("2.1 The Company shall pay the Fees set out in Table 1.");
        b.paragraph("(a) Invoices are due within 30 days of March 31, 2024.");
        b.paragraph("(b) Late payments accrue 1.5% interest as set out in paragraph (a).");
        b.table(Table {
            caption: Some("Table 1: Fees".into()),
            header_rows: 1,
            rows: vec![
                vec!["Item".into(), "Fee".into()],
                vec!["Setup".into(), "$100".into()],
            ],
            ..Table::default()
        });
        b.heading(1, "3 Term");
        b.paragraph("This Agreement ends in FY2025 unless renewed under Sections 2 and 2.1(a).");
        b.paragraph("Section 3 and Article II survive termination.");
        b.heading(1, "Schedule A — Fees");
        b.paragraph("Fees are payable in USD 5 million tranches to Acme Corp.");
        b.heading(2, "A.1 Details");
        b.paragraph("Details follow Table 1 and Figure 9.");
        Skeleton::from_builder("contract.md", b)
    }

    fn sentence_with<'a>(skeleton: &'a Skeleton, prefix: &str) -> &'a crate::skeleton::Sentence {
        skeleton
            .sentences
            .iter()
            .find(|s| s.text.starts_with(prefix))
            .unwrap_or_else(|| panic!("no sentence starts with {prefix:?}"))
    }

    fn section_titled(skeleton: &Skeleton, heading: &str) -> SectionId {
        skeleton
            .sections
            .iter()
            .find(|s| s.heading == heading)
            .map(|s| s.id)
            .unwrap_or_else(|| panic!("no section {heading:?}"))
    }

    fn targets(enrichment: &Enrichment, sentence: SentenceId) -> Vec<(String, Option<Target>)> {
        enrichment.sentences[sentence.index()]
            .references
            .iter()
            .map(|r| (r.label.clone(), r.target))
            .collect()
    }

    #[test]
    fn references_resolve_to_sections_clauses_and_captions() {
        let skeleton = contract();
        let enrichment = enrich(&skeleton, &EnrichmentSpec::default());
        let schedule = section_titled(&skeleton, "Schedule A Fees");
        let payment = section_titled(&skeleton, "2 Payment");
        let item_a = sentence_with(&skeleton, "(a) Invoices").paragraph;
        let caption = sentence_with(&skeleton, "Table 1: Fees").paragraph;
        assert_eq!(
            skeleton.paragraph(caption).kind,
            crate::skeleton::ParagraphKind::Caption
        );

        let definition = sentence_with(&skeleton, "\"Fees\" means").id;
        assert_eq!(
            targets(&enrichment, definition),
            [("Schedule A".into(), Some(Target::Section(schedule)))]
        );
        let pays = sentence_with(&skeleton, "2.1 The Company").id;
        assert_eq!(
            targets(&enrichment, pays),
            [("Table 1".into(), Some(Target::Paragraph(caption)))]
        );
        // A bare marker resolves inside the sentence's own section.
        let late = sentence_with(&skeleton, "(b) Late").id;
        assert_eq!(
            targets(&enrichment, late),
            [("paragraph (a)".into(), Some(Target::Paragraph(item_a)))]
        );
        // A list after a plural keyword: a heading and a sub-clause.
        let term = sentence_with(&skeleton, "This Agreement ends").id;
        assert_eq!(
            targets(&enrichment, term),
            [
                ("Section 2".into(), Some(Target::Section(payment))),
                ("Section 2.1(a)".into(), Some(Target::Paragraph(item_a))),
            ]
        );
        // Its own section is no target; Roman II is heading 2.
        let survive = sentence_with(&skeleton, "Section 3 and").id;
        assert_eq!(
            targets(&enrichment, survive),
            [
                ("Section 3".into(), None),
                ("Article II".into(), Some(Target::Section(payment))),
            ]
        );
        // The caption's own label is not a reference to itself.
        let caption_sentence = sentence_with(&skeleton, "Table 1: Fees").id;
        assert!(targets(&enrichment, caption_sentence).is_empty());
        // A figure the document lacks stays unresolved.
        let details = sentence_with(&skeleton, "Details").id;
        assert_eq!(
            targets(&enrichment, details),
            [
                ("Table 1".into(), Some(Target::Paragraph(caption))),
                ("Figure 9".into(), None),
            ]
        );
    }

    #[test]
    fn inbound_lists_follow_reading_order() {
        let skeleton = contract();
        let enrichment = enrich(&skeleton, &EnrichmentSpec::default());
        let caption = sentence_with(&skeleton, "Table 1: Fees").paragraph;
        let payment = section_titled(&skeleton, "2 Payment");
        let item_a = sentence_with(&skeleton, "(a) Invoices").paragraph;
        assert_eq!(
            enrichment.paragraphs[caption.index()].inbound,
            [
                sentence_with(&skeleton, "2.1 The Company").id,
                sentence_with(&skeleton, "Details").id
            ]
        );
        assert_eq!(
            enrichment.sections[payment.index()].inbound,
            [
                sentence_with(&skeleton, "This Agreement ends").id,
                sentence_with(&skeleton, "Section 3 and").id
            ]
        );
        assert_eq!(
            enrichment.paragraphs[item_a.index()].inbound,
            [
                sentence_with(&skeleton, "(b) Late").id,
                sentence_with(&skeleton, "This Agreement ends").id
            ]
        );
        assert!(
            enrichment.paragraphs[ParagraphId(0).index()]
                .inbound
                .is_empty()
        );
    }

    #[test]
    fn clause_ids_and_annexes() {
        let skeleton = contract();
        let enrichment = enrich(&skeleton, &EnrichmentSpec::default());
        let clause = |prefix: &str| {
            enrichment.sentences[sentence_with(&skeleton, prefix).id.index()]
                .clause
                .clone()
        };
        assert_eq!(clause("2.1 The Company").as_deref(), Some("2.1"));
        assert_eq!(clause("(a) Invoices").as_deref(), Some("2.1(a)"));
        assert_eq!(clause("(b) Late").as_deref(), Some("2.1(b)"));
        assert_eq!(clause("Item: Setup").as_deref(), Some("2"));
        assert_eq!(clause("This Agreement ends").as_deref(), Some("3"));
        assert_eq!(clause("Fees are payable").as_deref(), Some("Schedule A"));

        let annex: Vec<bool> = enrichment.sections.iter().map(|s| s.is_annex).collect();
        let schedule = section_titled(&skeleton, "Schedule A Fees");
        let details = section_titled(&skeleton, "A.1 Details");
        for section in &skeleton.sections {
            let expected = section.id == schedule || section.id == details;
            assert_eq!(annex[section.id.index()], expected, "{}", section.heading);
        }
    }

    #[test]
    fn chunk_metadata_merges_and_deduplicates() {
        let skeleton = contract();
        let enrichment = enrich(&skeleton, &EnrichmentSpec::default());
        let all: Vec<SentenceId> = skeleton.sentences.iter().map(|s| s.id).collect();
        let meta = enrichment.chunk_metadata(&skeleton, &all);
        assert_eq!(
            meta.references.iter().filter(|r| *r == "Table 1").count(),
            1
        );
        assert_eq!(meta.dates, ["2024-03-31"]);
        assert_eq!(meta.fiscal_periods, ["FY2025"]);
        assert_eq!(meta.amounts, ["$100", "USD 5 million"]);
        assert_eq!(meta.percentages, ["1.5%"]);
        assert_eq!(meta.organizations, ["Acme Corp."]);
        assert_eq!(meta.defined_terms, ["Fees"]);
        assert!(meta.clause_ids.contains(&"2.1(a)".to_string()));
        assert!(meta.is_annex);

        let body = [
            sentence_with(&skeleton, "2.1 The Company").id,
            SentenceId(9_999),
        ];
        let meta = enrichment.chunk_metadata(&skeleton, &body);
        assert!(!meta.is_annex);
        assert_eq!(meta.clause_ids, ["2.1"]);
        let json = serde_json::to_value(&meta).unwrap_or_default();
        assert!(
            json.get("dates").is_none(),
            "empty fields are left out: {json}"
        );
    }

    #[test]
    fn json_is_small_and_snake_case() {
        let skeleton = contract();
        let enrichment = enrich(&skeleton, &EnrichmentSpec::default());
        let caption = sentence_with(&skeleton, "Table 1: Fees").paragraph;
        let pays = sentence_with(&skeleton, "2.1 The Company").id;
        let json = serde_json::to_value(&enrichment.sentences[pays.index()]).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({
                "references": [{
                    "kind": "table",
                    "label": "Table 1",
                    "target": {"type": "paragraph", "id": caption.0},
                }],
                "clause": "2.1",
            })
        );
        let schedule = section_titled(&skeleton, "Schedule A Fees");
        let json = serde_json::to_value(&enrichment.sections[schedule.index()]).unwrap_or_default();
        let definition = sentence_with(&skeleton, "\"Fees\" means").id;
        assert_eq!(
            json,
            serde_json::json!({"is_annex": true, "inbound": [definition.0]})
        );
        let root = serde_json::to_value(&enrichment.sections[0]).unwrap_or_default();
        assert_eq!(root, serde_json::json!({}));
    }

    /// Tokens that steer random text into every extractor's paths.
    const VOCABULARY: &[&str] = &[
        "Section",
        "Sections",
        "ARTICLE",
        "clause",
        "paragraph",
        "Table",
        "Fig.",
        "Exhibit",
        "Schedule",
        "§",
        "5.1",
        "5.1.",
        "V",
        "II",
        "A",
        "(a)",
        "(ii)",
        "b)",
        "and",
        "or",
        "through",
        ",",
        "of",
        "the",
        "Securities",
        "Act",
        "Inc.",
        "LLC",
        "Company",
        "Co.,",
        "Ltd.",
        "The",
        "a",
        "\"",
        "“",
        "”",
        "‘",
        "’",
        "(",
        ")",
        "means",
        "shall",
        "mean",
        "hereinafter",
        "referred",
        "to",
        "as",
        "defined",
        "Including",
        "\u{17f}",
        "$",
        "US$",
        "€",
        "£",
        "1,250,000",
        "3.2bn",
        "million",
        "dollars",
        "%",
        "percent",
        "March",
        "31,",
        "2024",
        "2024-02-30",
        "3/31/2024",
        "day",
        "first",
        "FY24",
        "Q4",
        "4Q24",
        "H1",
        "fiscal",
        "year",
        "é",
        "\u{2028}",
        "7.",
        "-",
        "—",
        ":",
    ];

    fn vocabulary_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop::collection::vec(
            prop_oneof![
                3 => prop::sample::select(VOCABULARY).prop_map(str::to_string),
                1 => "\\PC{0,6}",
            ],
            0..40,
        )
        .prop_map(|tokens| tokens.join(" "))
    }

    proptest::proptest! {
        #[test]
        fn extractors_never_panic(text in vocabulary_text()) {
            let _ = dates::find_dates(&text);
            let _ = periods::find_periods(&text);
            let _ = amounts::find_money(&text);
            let _ = amounts::find_percentages(&text);
            let _ = organizations::find_organizations(&text);
            let _ = definitions::find_definitions(&text);
            let _ = references::find_mentions(&text);
            let _ = labels::Label::leading(&text).map(|l| (l.key(), l.clause_id(), l.is_title()));
        }

        #[test]
        fn screened_definitions_are_the_definitions(text in vocabulary_text()) {
            let cued = Cued::of(&text, Cued::only([Extractor::Definitions]));
            let holds = definitions::Holds::cued(cued);
            proptest::prop_assert_eq!(
                definitions::find_held_definitions(&text, holds),
                definitions::find_definitions(&text)
            );
        }

        #[test]
        fn any_document_enriches_consistently(
            blocks in proptest::collection::vec((0u8..3, vocabulary_text()), 0..12),
        ) {
            let mut b = TreeBuilder::new(Format::Markdown);
            for (kind, text) in &blocks {
                match kind {
                    0 => b.heading(1 + (text.len() % 3) as u8, text),
                    1 => b.caption(text),
                    _ => b.paragraph(text),
                }
            }
            let skeleton =
                Skeleton::from_builder("p.md", b);
            let enrichment = enrich(&skeleton, &EnrichmentSpec::default());
            proptest::prop_assert_eq!(enrichment.sentences.len(), skeleton.sentences.len());
            for (sentence, annotations) in skeleton.sentences.iter().zip(&enrichment.sentences) {
                for target in annotations.references.iter().filter_map(|r| r.target) {
                    let inbound = match target {
                        Target::Section(id) => {
                            proptest::prop_assert_ne!(id, sentence.section);
                            &enrichment.sections[id.index()].inbound
                        }
                        Target::Paragraph(id) => {
                            proptest::prop_assert_ne!(id, sentence.paragraph);
                            &enrichment.paragraphs[id.index()].inbound
                        }
                    };
                    proptest::prop_assert!(inbound.contains(&sentence.id));
                }
            }
            let all: Vec<SentenceId> = skeleton.sentences.iter().map(|s| s.id).collect();
            let _ = enrichment.chunk_metadata(&skeleton, &all);
        }
    }

    /// Thousands of mentions in one sentence (a table dump, a hostile
    /// file) cost time in proportion; duplicates are folded.
    #[test]
    fn long_sentences_with_many_mentions() {
        let items: Vec<String> = (1..=5_000).map(|n| n.to_string()).collect();
        let list = format!("Sections {} and 1 apply.", items.join(", "));
        let mentions = references::find_mentions(&list);
        assert_eq!(mentions.len(), 5_001);
        let names = "Acme Inc. and Acme Inc. and Beta LLC and ".repeat(2_000);
        assert_eq!(
            organizations::find_organizations(&names),
            ["Acme Inc.", "Beta LLC"]
        );
        let terms = r#"("Alpha") ("Beta") ("Alpha") "#.repeat(2_000);
        assert_eq!(
            definitions::find_definitions(&terms).terms,
            ["Alpha", "Beta"]
        );
    }

    #[test]
    fn the_spec_switches_extractors_off() {
        let skeleton = contract();
        let spec = EnrichmentSpec::none();
        let enrichment = enrich(&skeleton, &spec);
        // No sentence has an entry; each reads as empty.
        assert!(enrichment.sentences.is_empty());
        assert_eq!(enrichment.sections.len(), skeleton.sections.len());
        assert_eq!(enrichment.paragraphs.len(), skeleton.paragraphs.len());
        assert!(
            skeleton
                .sentences
                .iter()
                .all(|s| *enrichment.sentence(s.id) == SentenceAnnotations::default())
        );
        assert!(
            enrichment
                .sections
                .iter()
                .all(|s| *s == SectionAnnotations::default())
        );
    }
}
