//! Enrichment over the CUAD contracts (`../shared/eval/cuad/contracts`):
//! nothing panics, every annotation is well formed, inbound lists mirror
//! outbound references, and known facts of one contract are found. Run
//! with `--nocapture` for per-kind counts, examples and throughput
//! (meaningful in a release build: `cargo test --release --test it enrich:: --
//! --nocapture`).

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use trellis::enrich::cues::{Cued, Extractor};
use trellis::enrich::{
    Enrichment, Target, amounts, dates, definitions, enrich, organizations, periods, references,
};
use trellis::segment::{Segmenter, SentenceFilter};
use trellis::skeleton::Skeleton;
use trellis::spec::{EnrichmentSpec, ParsingSpec};

fn contracts() -> Vec<PathBuf> {
    let dir = common::eval_dir().join("cuad").join("contracts");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no contracts under {}", dir.display());
    paths
}

fn skeleton(path: &Path) -> Skeleton {
    let tree =
        trellis::parse::parse_file(path, &ParsingSpec::default()).unwrap_or_else(|e| panic!("{e}"));
    Skeleton::build(
        &path.display().to_string(),
        tree,
        &Segmenter::default(),
        &SentenceFilter::default(),
    )
}

/// Structural invariants of one document's enrichment.
fn check(skeleton: &Skeleton, enrichment: &Enrichment) {
    assert_eq!(enrichment.sentences.len(), skeleton.sentences.len());
    assert_eq!(enrichment.paragraphs.len(), skeleton.paragraphs.len());
    assert_eq!(enrichment.sections.len(), skeleton.sections.len());
    for (sentence, annotations) in skeleton.sentences.iter().zip(&enrichment.sentences) {
        for reference in &annotations.references {
            let inbound = match reference.target {
                None => continue,
                Some(Target::Section(id)) => {
                    assert_ne!(id, sentence.section, "{}", sentence.text);
                    &enrichment.sections[id.index()].inbound
                }
                Some(Target::Paragraph(id)) => {
                    assert_ne!(id, sentence.paragraph, "{}", sentence.text);
                    &enrichment.paragraphs[id.index()].inbound
                }
            };
            assert!(inbound.contains(&sentence.id), "{}", sentence.text);
        }
        for date in &annotations.dates {
            let parts: Vec<u32> = date
                .date
                .split('-')
                .map(|p| p.parse().unwrap_or(0))
                .collect();
            assert!(
                parts.len() == 3 && (1..=12).contains(&parts[1]) && (1..=31).contains(&parts[2]),
                "{date:?}"
            );
        }
        for amount in &annotations.amounts {
            assert!(amount.amount.is_some_and(f64::is_finite), "{amount:?}");
        }
        if annotations.definition.is_some() {
            assert!(!annotations.defined_terms.is_empty(), "{}", sentence.text);
        }
    }
    let inbound_total: usize = enrichment
        .sections
        .iter()
        .map(|s| s.inbound.len())
        .chain(enrichment.paragraphs.iter().map(|p| p.inbound.len()))
        .sum();
    let mut outbound = std::collections::HashSet::new();
    for (sentence, annotations) in skeleton.sentences.iter().zip(&enrichment.sentences) {
        for target in annotations.references.iter().filter_map(|r| r.target) {
            outbound.insert((sentence.id, target));
        }
    }
    assert_eq!(inbound_total, outbound.len());
}

#[derive(Default)]
struct Tally {
    documents: usize,
    sentences: usize,
    bytes: usize,
    elapsed: Duration,
    references: usize,
    resolved: usize,
    dates: usize,
    periods: usize,
    amounts: usize,
    percentages: usize,
    organizations: usize,
    definitions: usize,
    defined_terms: usize,
    clause_sentences: usize,
    annex_sections: usize,
    examples: Vec<(&'static str, String)>,
}

impl Tally {
    fn example(&mut self, kind: &'static str, text: String) {
        if self.examples.iter().filter(|(k, _)| *k == kind).count() < 4 {
            self.examples.push((kind, text));
        }
    }

    fn add(&mut self, skeleton: &Skeleton, enrichment: &Enrichment) {
        self.documents += 1;
        self.sentences += skeleton.sentences.len();
        self.bytes += skeleton
            .sentences
            .iter()
            .map(|s| s.text.len())
            .sum::<usize>();
        self.annex_sections += enrichment.sections.iter().filter(|s| s.is_annex).count();
        for (sentence, a) in skeleton.sentences.iter().zip(&enrichment.sentences) {
            self.references += a.references.len();
            self.resolved += a.references.iter().filter(|r| r.target.is_some()).count();
            self.dates += a.dates.len();
            self.periods += a.fiscal_periods.len();
            self.amounts += a.amounts.len();
            self.percentages += a.percentages.len();
            self.organizations += a.organizations.len();
            self.definitions += usize::from(a.definition.is_some());
            self.defined_terms += a.defined_terms.len();
            self.clause_sentences += usize::from(a.clause.is_some());
            for r in &a.references {
                let target = match r.target {
                    Some(Target::Section(id)) => skeleton.section(id).heading.clone(),
                    Some(Target::Paragraph(id)) => {
                        let first = skeleton.paragraph(id).sentences.start;
                        skeleton.sentences[first as usize]
                            .text
                            .chars()
                            .take(50)
                            .collect()
                    }
                    None => "-".into(),
                };
                self.example("reference", format!("{} → {target}", r.label));
            }
            for d in &a.dates {
                self.example("date", format!("{} → {}", d.text, d.date));
            }
            for m in &a.amounts {
                self.example(
                    "amount",
                    format!("{} → {} {:?}", m.text, m.currency, m.amount),
                );
            }
            for o in &a.organizations {
                self.example("organization", o.clone());
            }
            if let Some(form) = a.definition {
                self.example(
                    "definition",
                    format!(
                        "{form:?} {:?}: {}",
                        a.defined_terms,
                        truncate(&sentence.text)
                    ),
                );
            }
        }
    }
}

fn truncate(text: &str) -> String {
    text.chars().take(70).collect()
}

/// Cues only skip work: an extractor that a sentence holds no cue of finds
/// nothing in it when run anyway.
fn uncued_sentences_hold_no_match(skeleton: &Skeleton) {
    for sentence in &skeleton.sentences {
        let text = sentence.text.as_str();
        let cued = Cued::of(text, Cued::only(Extractor::ALL));
        for extractor in Extractor::ALL {
            if cued.may_match(extractor) {
                continue;
            }
            let found = match extractor {
                Extractor::Dates => dates::find_dates(text).len(),
                Extractor::FiscalPeriods => periods::find_periods(text).len(),
                Extractor::Money => amounts::find_money(text).len(),
                Extractor::Percentages => amounts::find_percentages(text).len(),
                Extractor::Organizations => organizations::find_organizations(text).len(),
                Extractor::References => references::find_mentions(text).len(),
                Extractor::Definitions => {
                    let found = definitions::find_definitions(text);
                    found.terms.len() + usize::from(found.form.is_some())
                }
            };
            assert_eq!(found, 0, "{extractor:?} uncued but found in {text:?}");
        }
    }
}

#[test]
fn cuad_contracts_enrich_cleanly() {
    let spec = EnrichmentSpec::default();
    let mut tally = Tally::default();
    for path in contracts() {
        let skeleton = skeleton(&path);
        let started = Instant::now();
        let enrichment = enrich(&skeleton, &spec);
        tally.elapsed += started.elapsed();
        check(&skeleton, &enrichment);
        uncued_sentences_hold_no_match(&skeleton);
        tally.add(&skeleton, &enrichment);
    }
    let seconds = tally.elapsed.as_secs_f64().max(1e-9);
    println!(
        "{} contracts, {} sentences, {:.2} MB of sentence text enriched in {:.3} s: \
         {:.0} sentences/s, {:.2} MB/s",
        tally.documents,
        tally.sentences,
        tally.bytes as f64 / 1e6,
        seconds,
        tally.sentences as f64 / seconds,
        tally.bytes as f64 / 1e6 / seconds,
    );
    println!(
        "references {} (resolved {}), dates {}, fiscal periods {}, amounts {}, percentages {}, \
         organizations {}, definition sentences {} ({} terms), sentences with clause ids {}, \
         annex sections {}",
        tally.references,
        tally.resolved,
        tally.dates,
        tally.periods,
        tally.amounts,
        tally.percentages,
        tally.organizations,
        tally.definitions,
        tally.defined_terms,
        tally.clause_sentences,
        tally.annex_sections,
    );
    for (kind, example) in &tally.examples {
        println!("  {kind:>12}: {example}");
    }
    // Contracts reference their own clauses, date themselves, state fees,
    // name their parties and define their terms.
    assert!(tally.resolved > 0);
    assert!(tally.dates > 0);
    assert!(tally.amounts > 0);
    assert!(tally.organizations > 0);
    assert!(tally.definitions > 0);
    assert!(tally.clause_sentences > 0);
}

#[test]
fn a_known_contract() {
    let path = contracts()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("AMERICASSHOPPINGMALL"))
        .unwrap_or_else(|| panic!("the Hanover Direct contract is missing"));
    let skeleton = skeleton(&path);
    let enrichment = enrich(&skeleton, &EnrichmentSpec::default());
    let all: Vec<_> = skeleton.sentences.iter().map(|s| s.id).collect();
    let meta = enrichment.chunk_metadata(&skeleton, &all);
    let has = |values: &[String], wanted: &str| values.iter().any(|v| v == wanted);
    assert!(
        has(&meta.organizations, "Hanover Direct, Inc."),
        "{:?}",
        meta.organizations
    );
    assert!(
        has(&meta.organizations, "The Deerskin Companies, Inc."),
        "{:?}",
        meta.organizations
    );
    assert!(has(&meta.dates, "1999-08-09"), "{:?}", meta.dates);
    for term in ["Agreement", "HDI", "Company", "Party", "Site", "Net Sales"] {
        assert!(
            has(&meta.defined_terms, term),
            "{term}: {:?}",
            meta.defined_terms
        );
    }
    assert!(has(&meta.amounts, "$11,000"), "{:?}", meta.amounts);
    assert!(has(&meta.clause_ids, "1.1"), "{:?}", meta.clause_ids);
}
