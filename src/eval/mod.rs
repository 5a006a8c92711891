//! Trellis measuring itself: a dataset is written out as a corpus, indexed
//! through the same ingest as any corpus, and its queries run through a
//! route; document- and sentence-level metrics come back.
//!
//! The materialised corpus lives under `<data-dir>/eval/<corpus>/` with
//! `<corpus>` = `eval-<kind>-<hash of the documents>`, and its index
//! versions under `<data-dir>/indexes/<corpus>/` like any other, so a
//! second run (another `--mode`, another route) reuses the index, and a
//! changed profile builds a new version beside it.

pub mod align;
pub mod answers;
mod chunks;
pub mod dataset;
pub mod metrics;

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;
use thiserror::Error;

use crate::embed::{EmbedError, Embedder, EmbeddingCache};
use crate::index::{DocumentNumber, IndexError, IndexVersion, Ranking, SentenceNumber};
use crate::ingest::{self, IngestError, Progress};
use crate::retrieve::{Filter, LoadedRoute, RetrieveError};
use crate::spec::{
    AnchorMode, CorpusSpec, IndexProfileSpec, ObjectRef, RetrievalRouteSpec, SourceSpec,
};

pub use dataset::{DatasetKind, EvalSet, parse_dataset_arg};
pub use metrics::{Metrics, PassageMetrics, SectionMetrics};

use align::FoldedText;
use chunks::ChunkBaseline;
use dataset::Relevance;
use metrics::{Accumulator, PassageAccumulator, SectionAccumulator, first_occurrences};

#[derive(Debug, Error)]
pub enum EvalError {
    #[error("dataset {0}")]
    Dataset(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Ingest(#[from] IngestError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The route could not be opened over the version just built.
    #[error(transparent)]
    Open(RetrieveError),
    #[error("query {id}: {source}")]
    Retrieve {
        id: String,
        #[source]
        source: RetrieveError,
    },
}

impl EvalError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        EvalError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Results ranked per query; the metrics look at the first ten.
const RESULTS: usize = 10;

/// Characters a sentence must share in one run with a CUAD excerpt.
const EXCERPT_RUN: usize = 30;

/// How many queries could be scored, per level.
#[derive(Clone, Debug, Serialize)]
pub struct Coverage {
    /// Queries the dataset holds for the split (skipped ones included).
    pub queries: usize,
    /// Queries scored at document level.
    pub document: usize,
    /// Queries scored at sentence level: their relevant text was found
    /// among the indexed document's sentences.
    pub sentence: usize,
    /// Queries whose relevant text matched no sentence (left out of the
    /// sentence metrics).
    pub unmatched: usize,
}

/// What `trellis eval` prints.
#[derive(Clone, Debug, Serialize)]
pub struct EvalReport {
    pub dataset: String,
    pub split: String,
    pub mode: String,
    /// Queries run.
    pub queries: usize,
    /// Document-level metrics (a document ranks by its best sentence);
    /// `null` where the set cannot measure them.
    pub document: Option<Metrics>,
    /// Sentence-level metrics on the route's top ten results.
    pub sentence: Option<Metrics>,
    /// CUAD: the sentence metrics with the same queries over all contracts
    /// instead of filtered to their own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unfiltered: Option<Metrics>,
    /// How the top ten spread over the sections holding relevant
    /// sentences.
    pub sections: Option<SectionMetrics>,
    /// What the results' displayed passages (paragraphs) hold.
    pub passages: Option<PassageMetrics>,
    /// The plain chunk baseline on the same queries, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_baseline: Option<BaselineReport>,
    /// The route's answers against the gold answers, where the set has
    /// them (SQuAD) and a generator was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answers: Option<answers::AnswerMetrics>,
    pub coverage: Coverage,
    /// Sentence-level outcome of each judged query (filtered to its
    /// document where the set filters).
    #[serde(skip)]
    pub per_query: Vec<QueryResult>,
    pub index_version: String,
    pub indexed_sentences: usize,
    /// Seconds spent indexing (0 when the cached index was reused).
    pub index_seconds: f64,
    /// Seconds spent answering the queries.
    pub query_seconds: f64,
    /// Seconds in all.
    pub seconds: f64,
}

/// What retrieval over the chunks alone found ([`chunks`]).
#[derive(Clone, Debug, Serialize)]
pub struct BaselineReport {
    /// Chunks indexed.
    pub chunks: usize,
    /// Documents in the order of their best chunk.
    pub document: Option<Metrics>,
    /// What the top chunks hold.
    pub passages: Option<PassageMetrics>,
    /// Seconds spent embedding and indexing the chunks.
    pub index_seconds: f64,
}

/// How one judged query fared at sentence level.
#[derive(Clone, Debug, Serialize)]
pub struct QueryResult {
    pub id: String,
    /// Sentences judged relevant.
    pub relevant: usize,
    /// Relevant sentences among the top ten results.
    pub found: usize,
    /// Rank (1-based) of the first relevant result in the top ten.
    pub first: Option<usize>,
    /// CUAD: relevant sentences among the top ten over all contracts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found_unfiltered: Option<usize>,
    /// What `anchors.mode: auto` answered the query from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routed: Option<crate::retrieve::Granularity>,
}

/// Runs an evaluation set through a profile and route.
pub struct Evaluation<'a> {
    pub set: &'a EvalSet,
    /// A label for the report (`beir:scifact`).
    pub dataset: String,
    pub profile: &'a IndexProfileSpec,
    /// Where relative paths of the profile resolve.
    pub profile_base: &'a Path,
    /// The route; its corpus reference is replaced by the evaluation's.
    pub route: &'a RetrievalRouteSpec,
    pub data_dir: &'a Path,
    /// Also run the plain chunk baseline ([`chunks`]).
    pub chunk_baseline: bool,
    /// Write an answer to every query that has gold answers, from the
    /// route's top-k results, and score it ([`answers`]).
    pub generator: Option<&'a crate::generate::Generator>,
    /// Answers only the first this many queries that have gold answers.
    pub answer_limit: usize,
}

impl Evaluation<'_> {
    pub fn run(&self, progress: Progress<'_>) -> Result<EvalReport, EvalError> {
        let started = Instant::now();
        let corpus_name = format!(
            "eval-{}-{}",
            self.set.kind.as_str(),
            self.set.content_hash()
        );
        let corpus_dir = self.data_dir.join("eval").join(&corpus_name);
        materialise(self.set, &corpus_dir)?;
        let corpus = CorpusSpec {
            profile_ref: ObjectRef {
                name: "evaluation".to_string(),
            },
            sources: vec![SourceSpec {
                path: Some("documents".to_string()),
                ..Default::default()
            }],
            include: Vec::new(),
            exclude: Vec::new(),
            acl: Vec::new(),
            storage: Default::default(),
            ingest: Default::default(),
        };
        let sources = crate::source::SourceContext::new(&corpus_dir);
        let inputs = ingest::Inputs {
            corpus_name: &corpus_name,
            corpus: &corpus,
            sources: &sources,
            profile: self.profile,
            profile_base: self.profile_base,
            data_dir: self.data_dir,
        };
        let report = ingest::run(&inputs, &[], progress)?;
        let index_seconds = if report.reused {
            0.0
        } else {
            report.manifest.timings.total
        };
        let mut route = self.route.clone();
        route.corpus_ref.name = corpus_name.clone();
        // Queries run on rayon's threads, each with a connection of its
        // own when the route reads a graph store.
        let queries = rayon::current_num_threads();
        let loaded = LoadedRoute::open(
            self.data_dir,
            &route,
            Some(&report.manifest.version),
            queries,
        )
        .map_err(EvalError::Open)?;
        let retriever = loaded.retriever().map_err(EvalError::Open)?;
        let (index, embedder) = (&loaded.index, &loaded.embedder);
        let relevance = Judgements::resolve(self.set, index);

        let t = Instant::now();
        let query_vectors = if route.anchors.mode == AnchorMode::Bm25 {
            None
        } else {
            Some(embed_queries(
                self.set,
                embedder.as_ref(),
                self.data_dir,
                progress,
            )?)
        };
        let baseline_started = Instant::now();
        let baseline = match self.chunk_baseline {
            true => Some(ChunkBaseline::build(
                index,
                embedder.as_ref(),
                self.data_dir,
                progress,
            )?),
            false => None,
        };
        let baseline_seconds = baseline_started.elapsed().as_secs_f64();
        let total = self.set.queries.len() as u64;
        let done = std::sync::atomic::AtomicU64::new(0);
        let outcomes: Vec<QueryOutcome> = self
            .set
            .queries
            .par_iter()
            .enumerate()
            .map(|(n, q)| {
                let _span = tracing::debug_span!("eval query", id = %q.id).entered();
                let vector = query_vectors.as_ref().map(|v| v[n].as_slice());
                let run = |filter: &Filter| {
                    retriever
                        .retrieve_embedded(&route, &q.text, vector, Some(RESULTS), filter)
                        .map_err(|source| EvalError::Retrieve {
                            id: q.id.clone(),
                            source,
                        })
                };
                let filter = Filter {
                    documents: q
                        .within
                        .as_ref()
                        .map(|file| vec![relevance.key_of(index, file)]),
                    ..Filter::default()
                };
                let answer = run(&filter)?;
                let written = match self.generator {
                    Some(generator) if !q.answers.is_empty() && n < self.answer_limit => {
                        Some(write_answer(generator, &route, q, &answer, &loaded))
                    }
                    _ => None,
                };
                let passages = answer
                    .hits
                    .iter()
                    .map(|hit| SentenceNumber::range(hit.passage).collect())
                    .collect();
                let baseline = match (&baseline, vector) {
                    (Some(b), Some(v)) => {
                        // Within an unindexed document: within nothing.
                        let within = q.within.as_ref().map(|file| {
                            let none = DocumentNumber(u32::MAX);
                            relevance.by_file.get(file).copied().unwrap_or(none)
                        });
                        let found = b.search(&q.text, v, within, RESULTS).map_err(|e| {
                            EvalError::Dataset(format!("query {}: chunk baseline: {e}", q.id))
                        })?;
                        Some(found)
                    }
                    _ => None,
                };
                let unfiltered = match q.within {
                    Some(_) => Some(run(&Filter::default())?),
                    None => None,
                };
                let documents = first_occurrences(
                    answer
                        .ranking
                        .iter()
                        .map(|&(i, _)| index.store.sentences[i].document),
                );
                let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                progress("query", n, total);
                Ok(QueryOutcome {
                    sentences: answer.sentences,
                    documents,
                    passages,
                    unfiltered: unfiltered.map(|a| a.sentences),
                    baseline,
                    written,
                    routed: answer.routing.as_ref().map(|r| r.granularity),
                })
            })
            .collect::<Result<_, EvalError>>()?;
        let query_seconds = t.elapsed().as_secs_f64();

        let mut document = Accumulator::default();
        let mut sentence = Accumulator::default();
        let mut unfiltered = Accumulator::default();
        let mut sections = SectionAccumulator::default();
        let mut passages = PassageAccumulator::default();
        let mut baseline_documents = Accumulator::default();
        let mut baseline_passages = PassageAccumulator::default();
        let words = |i: SentenceNumber| index.store.sentences[i].text.split_whitespace().count();
        let mut per_query = Vec::new();
        let mut written = answers::AnswerAccumulator::default();
        for (n, outcome) in outcomes.iter().enumerate() {
            let judged = &relevance.queries[n];
            match &outcome.written {
                Some(Ok((answer, cited))) => {
                    let cited: Vec<&str> = cited.iter().map(String::as_str).collect();
                    written.add(answer, &cited, &self.set.queries[n].answers);
                }
                Some(Err(e)) => {
                    tracing::warn!(query = %self.set.queries[n].id, error = %e, "no answer");
                    written.failed();
                }
                None => {}
            }
            if !judged.sentences.is_empty() {
                per_query.push(QueryResult {
                    id: self.set.queries[n].id.clone(),
                    relevant: judged.sentences.len(),
                    found: metrics::found(&outcome.sentences, &judged.sentences, RESULTS),
                    first: metrics::first_relevant(&outcome.sentences, &judged.sentences),
                    found_unfiltered: outcome
                        .unfiltered
                        .as_ref()
                        .map(|ranked| metrics::found(ranked, &judged.sentences, RESULTS)),
                    routed: outcome.routed,
                });
            }
            if self.set.document_level {
                document.add(&outcome.documents, &judged.documents);
            }
            sentence.add(&outcome.sentences, &judged.sentences);
            sections.add(&outcome.sentences, &judged.sentences, |i| {
                index.store.sentences[i].section
            });
            if let Some(ranked) = &outcome.unfiltered {
                unfiltered.add(ranked, &judged.sentences);
            }
            passages.add(&outcome.passages, &judged.sentences, words);
            if let (Some(found), Some(b)) = (&outcome.baseline, &baseline) {
                if self.set.document_level {
                    let documents = first_occurrences(found.iter().map(|&c| b.chunk(c).document));
                    baseline_documents.add(&documents, &judged.documents);
                }
                let shown: Vec<Vec<SentenceNumber>> = found
                    .iter()
                    .map(|&c| b.chunk(c).sentences.clone())
                    .collect();
                baseline_passages.add(&shown, &judged.sentences, words);
            }
        }
        let coverage = Coverage {
            queries: self.set.queries.len() + self.set.skipped.len(),
            document: document.finish().map_or(0, |m| m.queries),
            sentence: sentence.finish().map_or(0, |m| m.queries),
            unmatched: relevance.unmatched,
        };
        Ok(EvalReport {
            dataset: self.dataset.clone(),
            split: self.set.split.clone(),
            mode: serde_json::to_value(route.anchors.mode)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            queries: self.set.queries.len(),
            document: document.finish(),
            sentence: sentence.finish(),
            unfiltered: unfiltered.finish(),
            sections: sections.finish(),
            passages: passages.finish(),
            chunk_baseline: baseline.as_ref().map(|b| BaselineReport {
                chunks: b.len(),
                document: baseline_documents.finish(),
                passages: baseline_passages.finish(),
                index_seconds: baseline_seconds,
            }),
            answers: self
                .generator
                .and_then(|g| written.finish(g.provider_name())),
            coverage,
            per_query,
            index_version: report.manifest.version.clone(),
            indexed_sentences: index.manifest.counts.indexed_sentences,
            index_seconds,
            query_seconds,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// The set's query vectors, through a query-side embedding cache so that
/// runs after the first (other modes, other weights) embed nothing.
fn embed_queries(
    set: &EvalSet,
    embedder: &dyn Embedder,
    data_dir: &Path,
    progress: Progress<'_>,
) -> Result<Vec<Vec<f32>>, EvalError> {
    let mut cache = EmbeddingCache::open(
        &data_dir.join(crate::index::files::CACHE_DIR),
        &embedder.query_cache_id(),
        embedder.dimensions(),
    )?;
    let texts: Vec<&str> = set.queries.iter().map(|q| q.text.as_str()).collect();
    let mut out = Vec::with_capacity(texts.len());
    const BATCH: usize = 512;
    for batch in texts.chunks(BATCH) {
        let (vectors, _) = cache.embed_with(batch, |todo| embedder.embed_queries(todo))?;
        cache.flush()?;
        out.extend(vectors);
        progress("embed", out.len() as u64, texts.len() as u64);
    }
    Ok(out)
}

struct QueryOutcome {
    /// The route's results, best first.
    sentences: Vec<SentenceNumber>,
    /// Documents in the order of their best sentence.
    documents: Vec<DocumentNumber>,
    /// The sentences each result displays, best result first.
    passages: Vec<Vec<SentenceNumber>>,
    unfiltered: Option<Vec<SentenceNumber>>,
    /// What `anchors.mode: auto` chose.
    routed: Option<crate::retrieve::Granularity>,
    /// The chunk baseline's chunks, best first.
    baseline: Option<Vec<u32>>,
    /// The answer written from the route's top-k results, and the text of
    /// the source sentences it cites; `None` when none was asked for.
    written: Option<Result<(crate::generate::GeneratedAnswer, Vec<String>), String>>,
}

/// The route's answer to `query` from the route's top-k results of
/// `retrieved` (retrieved with more, for the metrics), and the text of
/// the source sentences that best support its sentences.
fn write_answer(
    generator: &crate::generate::Generator,
    route: &RetrievalRouteSpec,
    query: &crate::eval::dataset::EvalQuery,
    retrieved: &crate::retrieve::Answer,
    loaded: &LoadedRoute,
) -> Result<(crate::generate::GeneratedAnswer, Vec<String>), String> {
    let shown = crate::retrieve::Answer {
        hits: retrieved
            .hits
            .iter()
            .take(route.selection.top_k as usize)
            .cloned()
            .collect(),
        context: String::new(),
        common_query: retrieved.common_query,
        named_documents: retrieved.named_documents.clone(),
        context_budget: retrieved.context_budget,
        routing: retrieved.routing.clone(),
        ranking: Ranking::default(),
        sentences: Vec::new(),
        rerank: None,
    };
    let written = generator
        .answer(
            &query.text,
            &shown,
            &loaded.index,
            loaded.embedder.as_ref(),
            &mut |_| {},
        )
        .map_err(|e| e.to_string())?;
    let cited = written
        .sentences
        .iter()
        .filter_map(|s| {
            let source = written.sources.get(s.support.best_source? - 1)?;
            let id = s.support.best_sentence_id.as_deref()?;
            source
                .sentences
                .iter()
                .find(|x| x.sentence_id == id)
                .map(|x| x.text.clone())
        })
        .collect();
    Ok((written, cited))
}

/// Writes the set's documents under `dir/documents` once: into a
/// temporary directory renamed into place, so an interrupted run never
/// leaves a partial corpus that a later run would index.
fn materialise(set: &EvalSet, dir: &Path) -> Result<(), EvalError> {
    let target = dir.join("documents");
    if target.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| EvalError::io(dir, e))?;
    let tmp = dir.join(format!(".documents-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| EvalError::io(&tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| EvalError::io(&tmp, e))?;
    for doc in &set.documents {
        let path = tmp.join(&doc.file);
        std::fs::write(&path, &doc.content).map_err(|e| EvalError::io(&path, e))?;
    }
    std::fs::rename(&tmp, &target).map_err(|e| EvalError::io(&target, e))
}

/// Relevance of every query in the index's terms.
struct Judgements {
    /// Per query (in the set's order).
    queries: Vec<QueryJudgement>,
    /// Document file name → its number in the index version.
    by_file: HashMap<String, DocumentNumber>,
    unmatched: usize,
}

#[derive(Default)]
struct QueryJudgement {
    /// Document numbers of the index version and their grades.
    documents: HashMap<DocumentNumber, f64>,
    /// Global sentence numbers judged relevant.
    sentences: HashMap<SentenceNumber, f64>,
}

impl Judgements {
    fn resolve(set: &EvalSet, index: &IndexVersion) -> Self {
        let store = &index.store;
        let by_file: HashMap<String, DocumentNumber> = store
            .documents
            .iter()
            .enumerate()
            .filter_map(|(n, d)| {
                let file = d.key.rsplit('/').next()?;
                Some((file.to_string(), DocumentNumber(n as u32)))
            })
            .collect();
        let references: HashMap<&str, &crate::eval::dataset::EvalDocument> =
            set.documents.iter().map(|d| (d.file.as_str(), d)).collect();

        // Aligning a document once serves all its queries.
        let mut aligned: HashMap<DocumentNumber, Aligned> = HashMap::new();
        let mut queries = Vec::with_capacity(set.queries.len());
        let mut unmatched = 0;
        for q in &set.queries {
            let mut judged = QueryJudgement::default();
            for (file, grade) in &q.documents {
                if let Some(&d) = by_file.get(file) {
                    judged.documents.insert(d, *grade);
                }
            }
            for (file, relevance) in &q.sentences {
                let (Some(&d), Some(doc)) = (by_file.get(file), references.get(file.as_str()))
                else {
                    continue;
                };
                let a = aligned
                    .entry(d)
                    .or_insert_with(|| Aligned::new(index, d, doc));
                let [start, _] = store.documents[d].sentences;
                let excerpts: Vec<Excerpt> = match relevance {
                    Relevance::Excerpts(list) => {
                        list.iter().map(|e| Excerpt::new(e, &a.folded)).collect()
                    }
                    Relevance::Spans(_) => Vec::new(),
                };
                for (offset, range) in a.ranges.iter().enumerate() {
                    let Some(range) = range else { continue };
                    let i = start.after(offset as u32);
                    let holds = match relevance {
                        Relevance::Spans(spans) => spans
                            .iter()
                            .any(|s| s.start < range.end && range.start < s.end),
                        Relevance::Excerpts(_) => {
                            let text = normalise(&store.sentences[i].text);
                            excerpts.iter().any(|e| e.matches(&text, range))
                        }
                    };
                    if holds {
                        judged.sentences.insert(i, 1.0);
                    }
                }
            }
            if !q.sentences.is_empty() && judged.sentences.is_empty() {
                unmatched += 1;
            }
            queries.push(judged);
        }
        Self {
            queries,
            by_file,
            unmatched,
        }
    }

    /// The index key of a document file (the file name itself, which
    /// matches no document, when it was not indexed).
    fn key_of(&self, index: &IndexVersion, file: &str) -> String {
        match self.by_file.get(file) {
            Some(&d) => index.store.documents[d].key.clone(),
            None => file.to_string(),
        }
    }
}

/// A document's sentences placed in its reference text.
struct Aligned {
    folded: FoldedText,
    ranges: Vec<Option<Range<usize>>>,
}

impl Aligned {
    fn new(index: &IndexVersion, d: DocumentNumber, doc: &dataset::EvalDocument) -> Self {
        let store = &index.store;
        let texts: Vec<&str> = SentenceNumber::range(store.documents[d].sentences)
            .map(|i| store.sentences[i].text.as_str())
            .collect();
        // A team's own file has no text of its own beside Trellis': its
        // quotes are looked for in the sentences, one per line.
        let joined;
        let reference = match &doc.reference {
            Some(text) => text,
            None => {
                joined = texts.join("\n");
                &joined
            }
        };
        let folded = FoldedText::new(reference);
        let ranges = folded.align(&texts);
        Self { folded, ranges }
    }
}

/// A CUAD excerpt prepared for matching against every sentence of its
/// contract.
struct Excerpt {
    /// Lower-cased, whitespace collapsed.
    text: String,
    /// Its runs of [`EXCERPT_RUN`] characters (empty for a shorter one).
    runs: HashSet<String>,
    /// Where it occurs in the contract.
    occurrences: Vec<Range<usize>>,
}

impl Excerpt {
    fn new(excerpt: &str, contract: &FoldedText) -> Self {
        let text = normalise(excerpt);
        let chars: Vec<char> = text.chars().collect();
        let runs = if chars.len() >= EXCERPT_RUN {
            chars
                .windows(EXCERPT_RUN)
                .map(|w| w.iter().collect())
                .collect()
        } else {
            HashSet::new()
        };
        Self {
            occurrences: contract.occurrences(excerpt),
            text,
            runs,
        }
    }

    /// Whether a sentence (normalised text, place in the contract) shares
    /// a run of [`EXCERPT_RUN`] characters with the excerpt, holds a
    /// shorter excerpt whole, or lies inside one of its occurrences.
    fn matches(&self, sentence: &str, range: &Range<usize>) -> bool {
        if self.text.is_empty() {
            return false;
        }
        let shares_run = if self.runs.is_empty() {
            sentence.contains(&self.text)
        } else {
            let chars: Vec<char> = sentence.chars().collect();
            chars.windows(EXCERPT_RUN).any(|w| {
                let run: String = w.iter().collect();
                self.runs.contains(&run)
            })
        };
        shares_run
            || self
                .occurrences
                .iter()
                .any(|o| o.start <= range.start && range.end <= o.end)
    }
}

/// Lower-cased, whitespace runs collapsed to one space.
fn normalise(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_thirty_characters_make_a_sentence_relevant() {
        let contract = "1. GOVERNING LAW. This Agreement shall be governed by the laws of \
                        the State of New York. Dated as of June 1, 2020.";
        let folded = FoldedText::new(contract);
        let e = Excerpt::new(
            "This Agreement shall be governed by the laws of the State of New York.",
            &folded,
        );
        let elsewhere = 1000..1010;
        assert!(e.matches(
            &normalise(
                "2. Governing law. This Agreement shall be governed by the laws of Delaware."
            ),
            &elsewhere
        ));
        assert!(!e.matches(&normalise("The laws of the State apply."), &elsewhere));
        // A sentence inside an occurrence of the excerpt.
        let inside = folded.occurrences("the State of New York")[0].clone();
        assert!(e.matches("the state of new york", &inside));
        // A short excerpt must occur whole.
        let short = Excerpt::new("June 1, 2020", &folded);
        assert!(short.matches("dated as of june 1, 2020.", &elsewhere));
        assert!(!short.matches("dated as of june 2, 2020.", &elsewhere));
    }
}
