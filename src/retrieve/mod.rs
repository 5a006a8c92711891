//! Three-stage retrieval over an index version.
//!
//! 1. **Anchors**: the query's vector against the sentence vectors (HNSW,
//!    or exact search on small indexes) and the query's terms against BM25,
//!    each taking the top `candidates` sentences, fused by Reciprocal Rank
//!    Fusion.
//! 2. **Expansion**: around the best anchors, the NEXT/PREV window, the
//!    `RELATED_TO` links and the continuation of the same clause become
//!    candidates too.
//! 3. **Scoring and selection**: a composite of fusion, dense, lexical,
//!    structure, provenance and entity signals ranks the candidates; top-k,
//!    threshold, per-document limits and MMR select the results, which are
//!    shown inside their paragraphs ("sentence search, paragraph display");
//!    results that would show the same passage become one. A route may
//!    have a reranker read the best candidates again before selection.
//!
//! Access filters (ACL tags, documents, section prefixes) apply before any
//! ranking and to every expansion hop, so nothing outside them is ever
//! scored or shown.
//!
//! [`Retriever::retrieve`] runs the stages in order; each has its file:
//! `filter.rs` (what a query may see), `anchors.rs`, `expansion.rs`,
//! `scoring.rs` (the composite), `rerank/` (the reranker's pass),
//! `selection.rs` (common queries, top-k and the hits) and `context.rs`
//! (the answer's context text).

mod anchors;
mod budget;
mod context;
mod expansion;
mod filter;
mod named;
pub mod rerank;
mod route;
mod routing;
mod scoring;
mod selection;
mod vectors;

use std::collections::HashMap;

use serde::Serialize;
use thiserror::Error;

use crate::embed::{EmbedError, Embedder};
use crate::graph::anchors::VersionSearch;
use crate::graph::{GraphError, Pool, Pooled};
use crate::index::{IndexError, IndexVersion, Ranking, SentenceNumber};
use crate::parse::DocumentInfo;
use crate::skeleton::PageBox;
use crate::spec::{AnchorMode, ParentLevel, RerankerKind, RetrievalRouteSpec, Signal};

pub use budget::{BudgetUse, ESTIMATE_CHARS_PER_TOKEN, Reach, estimate_tokens};
pub use context::assemble_context;
pub use expansion::expansion;
pub use filter::{Filter, NumberRange, ValueFilter};
pub use rerank::{RerankError, RerankOutcome, Reranker};
pub use route::{LoadedRoute, opening};
pub use routing::{Granularity, Routing, route_query};
pub use selection::{Display, fit_hits};

#[derive(Debug, Error)]
pub enum RetrieveError {
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Rerank(#[from] RerankError),
    #[error("the index was built with {built} but the query embedder is {query}")]
    ModelMismatch { built: String, query: String },
    /// The version's profile is not the one the caller was told to expect
    /// (the operator's rendering of it): its files were written by an
    /// ingest pod, and the profile decides where queries, and the Secrets
    /// that go with them, are sent.
    #[error(
        "index version {version} was built with profile {found}, not the profile {expected} \
         the operator rendered: refusing to serve it"
    )]
    ProfileNotRendered {
        version: String,
        found: String,
        expected: String,
    },
    #[error("graph expansion: {0}")]
    Graph(#[from] GraphError),
    #[error("{0}")]
    OpenGraph(GraphError),
    #[error(
        "the route searches or expands through the graph store, but none is connected \
         (the index version's profile has graph.store {0:?})"
    )]
    NoGraphStore(crate::spec::GraphStoreKind),
}

/// The per-signal scores of one result, each in [0, 1], indexed by
/// [`Signal`](crate::spec::Signal).
pub type Signals = crate::spec::PerSignal;

/// Where a result comes from.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Citation {
    pub document: String,
    pub document_id: String,
    /// The document's title, where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_title: Option<String>,
    /// The document's author, date, version and language, where it
    /// records them.
    #[serde(skip_serializing_if = "DocumentInfo::is_empty")]
    pub document_info: DocumentInfo,
    pub sentence_id: String,
    pub section_path: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Character offset and length in the document's canonical text.
    pub char_span: [u32; 2],
    /// Where the sentence stands on its pages, one box per line (PDF).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<PageBox>,
    /// The references the sentence makes ("Section 1.4"), each with
    /// where it points in the same document when that was found.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<CitedReference>,
    /// Sentences whose references point to this sentence's paragraph or
    /// section, in reading order (their ids; at most
    /// [`REFERENCED_BY_SHOWN`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub referenced_by: Vec<String>,
    /// The table, for a sentence that is a table row: its headers, so a
    /// row shows what its cells are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<CitedTable>,
    /// The amounts, percentages and dates the sentence states, typed (what
    /// `filters.values` reads).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<crate::enrich::TypedValue>,
    /// The form fields of the sentence's section and of the sections
    /// enclosing it, outermost first (what `filters.documents.fields`
    /// reads over the whole document).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<crate::parse::FormField>,
}

/// The table a cited row belongs to.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CitedTable {
    /// `<doc>:t<n>`, one id over all the pages it runs over.
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Each column's label, its header cells joined.
    pub columns: Vec<String>,
    /// Each column's unit, where its header gives one.
    pub units: Vec<Option<String>>,
    /// The row's label, when the first column labels rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_header: Option<String>,
    /// The row's place among the table's data rows, from 1, and how many
    /// there are.
    pub row: u32,
    pub rows: u32,
    /// Whether the row stands on a page the table continues onto.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub continued: bool,
}

/// Most referring sentences a citation lists: a definitions section can be
/// referred to from every page.
pub const REFERENCED_BY_SHOWN: usize = 10;

/// A reference a cited sentence makes.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CitedReference {
    /// As written ("Section 1.4", "Exhibit B").
    pub label: String,
    /// The section path of what it points to; absent when the document
    /// has no such part (or the reference points outside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section_path: Option<Vec<String>>,
    /// The first sentence of what it points to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sentence_id: Option<String>,
}

/// One result: an anchor sentence shown inside its paragraph.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Hit {
    /// Global sentence number in the index version.
    pub sentence: SentenceNumber,
    pub score: f32,
    pub signals: Signals,
    pub text: String,
    /// The paragraph (or the window around the sentence) to display.
    pub display: String,
    /// The sentences `display` shows, `[first, end)`, as global sentence
    /// numbers (the generation stage's sources).
    #[serde(skip)]
    pub passage: [SentenceNumber; 2],
    /// What the passage may show, step by step, for a context budget to
    /// fill (the generation stage's own budget reads it).
    #[serde(skip)]
    pub reach: Reach,
    /// Other selected sentences that this display shows, in reading
    /// order: each would have been a result of its own, showing the same
    /// passage again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub highlights: Vec<Highlight>,
    pub citation: Citation,
}

/// A further selected sentence inside a result's display.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Highlight {
    /// Global sentence number in the index version.
    pub sentence: SentenceNumber,
    /// Its own composite score, below the result's.
    pub score: f32,
    pub text: String,
    pub sentence_id: String,
    /// Character offset and length in the document's canonical text.
    pub char_span: [u32; 2],
}

/// The answer to one query.
#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    pub hits: Vec<Hit>,
    /// The results' display texts in reading order, duplicates removed.
    pub context: String,
    /// The query was common to the corpus (`selection.commonQueryShare`):
    /// answered in each of the best documents, which then took turns.
    pub common_query: bool,
    /// The documents (keys) the query names outright, among those it may
    /// see (`scoring.namedDocuments`): its sentences were measured by the
    /// rest of the query.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub named_documents: Vec<String>,
    /// How the route's context budget (`selection.contextTokens`) was
    /// spent; `None` without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_budget: Option<BudgetUse>,
    /// What `anchors.mode: auto` chose for the query, and why; `None` for
    /// a fixed mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing: Option<Routing>,
    /// Every scored sentence, best first (for evaluation).
    #[serde(skip)]
    pub ranking: Ranking,
    /// The selected sentences, best first, before results that show the
    /// same passage were joined: the hits' sentences and highlights in
    /// rank order (for evaluation).
    #[serde(skip)]
    pub sentences: Vec<SentenceNumber>,
    /// What the route's reranker did; `None` without one.
    #[serde(skip)]
    pub rerank: Option<RerankOutcome>,
}

/// Answers queries against one loaded index version.
pub struct Retriever<'a> {
    index: &'a IndexVersion,
    embedder: &'a dyn Embedder,
    /// The graph store holding this version, for routes whose anchor or
    /// expansion source is `graph`.
    graph: Option<GraphAccess<'a>>,
    /// The route's reranker, for routes that set one.
    reranker: Option<&'a dyn Reranker>,
}

/// The graph store a retriever reads, and how it searches the version
/// there.
struct GraphAccess<'a> {
    pool: &'a Pool,
    search: VersionSearch<'a>,
}

impl GraphAccess<'_> {
    /// A connection of this query's own, for one stage's statements.
    fn connection(&self) -> Result<Pooled<'_>, GraphError> {
        self.pool.get()
    }
}

/// Every candidate sentence of a query, with what is known of it.
type Candidates = HashMap<SentenceNumber, Candidate>;

/// A candidate sentence and what is known of it.
#[derive(Clone, Copy, Debug, Default)]
struct Candidate {
    fused: f32,
    dense: Option<f32>,
    lexical: f32,
    anchor: bool,
}

impl<'a> Retriever<'a> {
    pub fn new(index: &'a IndexVersion, embedder: &'a dyn Embedder) -> Result<Self, RetrieveError> {
        if embedder.model_id() != index.manifest.model_id {
            return Err(RetrieveError::ModelMismatch {
                built: index.manifest.model_id.clone(),
                query: embedder.model_id().to_string(),
            });
        }
        Ok(Self {
            index,
            embedder,
            graph: None,
            reranker: None,
        })
    }

    /// Reranks full-mode rankings of routes whose `reranker.kind` is set.
    pub fn with_reranker(mut self, reranker: &'a dyn Reranker) -> Self {
        self.reranker = Some(reranker);
        self
    }

    /// Runs stage 1 or 2 in `graph` for routes whose anchor or expansion
    /// source is `graph`.
    pub fn with_graph(mut self, pool: &'a Pool) -> Self {
        self.graph = Some(GraphAccess {
            pool,
            search: VersionSearch::new(self.index, self.index.profile.graph.retries()),
        });
        self
    }

    /// The graph store, for a stage the route runs there.
    fn graph_store(&self) -> Result<&GraphAccess<'a>, RetrieveError> {
        self.graph
            .as_ref()
            .ok_or(RetrieveError::NoGraphStore(self.index.profile.graph.store))
    }

    pub fn index(&self) -> &IndexVersion {
        self.index
    }

    /// Runs the route's three stages for `query` and returns `k` results
    /// (the route's `topK` when `None`).
    pub fn retrieve(
        &self,
        route: &RetrievalRouteSpec,
        query: &str,
        k: Option<usize>,
        filter: &Filter,
    ) -> Result<Answer, RetrieveError> {
        self.retrieve_embedded(route, query, None, k, filter)
    }

    /// [`retrieve`](Self::retrieve) with the query's vector when the caller
    /// has it already (batched or cached); embedded here when `None` and
    /// the mode needs it.
    pub fn retrieve_embedded(
        &self,
        route: &RetrievalRouteSpec,
        query: &str,
        query_vector: Option<&[f32]>,
        k: Option<usize>,
        filter: &Filter,
    ) -> Result<Answer, RetrieveError> {
        let _span = tracing::info_span!("query", mode = ?route.anchors.mode).entered();
        let access = filter::Access::new(self.index, filter, route.scoring.confidence_floor);
        let allowed = |i: SentenceNumber| access.admits(i);
        // Auto mode decides once per query, then runs as `full`.
        let decided;
        let (route, routing) = match route.anchors.mode {
            AnchorMode::Auto => {
                let names = route.scoring.named_documents
                    && named::named(self.index, query, &access.documents).is_some();
                let routing = route_query(query, names);
                decided = routing::decided(route, routing.granularity);
                (&decided, Some(routing))
            }
            _ => (route, None),
        };
        let mode = route.anchors.mode;

        // Stage 1: anchors.
        let embedded;
        let query_vector = match (mode, query_vector) {
            (AnchorMode::Bm25, _) => None,
            (_, Some(v)) => Some(v),
            (_, None) => {
                embedded = self.embedder.embed_query(query)?;
                Some(embedded.as_slice())
            }
        };
        let mut vectors = self.query_vectors();
        let anchors::Anchors {
            mut candidates,
            dense,
            lexical,
            definitions,
        } = self.anchors(route, query, query_vector, &allowed, &mut vectors)?;

        // Full mode scores with query features; the other modes rank by
        // their anchor lists alone. A query that names a document is
        // measured by the rest of it once the document is picked (see
        // `named.rs`).
        let named = match mode == AnchorMode::Full && route.scoring.named_documents {
            true => named::named(self.index, query, &access.documents),
            false => None,
        };
        let rest = named.as_ref().map(|n| n.rest.as_str());
        let rest_vector = match (rest, query_vector) {
            (Some(rest), Some(_)) => Some(self.embedder.embed_query(rest)?),
            _ => None,
        };
        let mut features = None;
        let ranking: Ranking = match mode {
            AnchorMode::Bm25 => lexical,
            AnchorMode::Dense => dense,
            AnchorMode::Hybrid => {
                Ranking::best_first(candidates.iter().map(|(&i, c)| (i, c.fused)))
            }
            // Auto was decided above, into `full`.
            AnchorMode::Full | AnchorMode::Auto => {
                self.expand(route, &mut candidates, &allowed)?;
                if let Some(rest) = rest {
                    self.measure_against(route, rest, &mut candidates)?;
                }
                let q = rest_vector.as_deref().or(query_vector).unwrap_or(&[]);
                if !q.is_empty() {
                    self.read_vectors(&mut vectors, candidates.keys().copied())?;
                }
                for (&i, cand) in candidates.iter_mut() {
                    if cand.dense.is_none() && !q.is_empty() {
                        cand.dense = vectors.sentence(i).map(|v| crate::vector::dot(q, v));
                    }
                }
                let f = features.insert(scoring::QueryFeatures::new(
                    self.index,
                    scoring::Query {
                        text: query,
                        rest,
                        vector: q,
                    },
                    &route.scoring,
                    &candidates,
                    definitions,
                ));
                Ranking::best_first(scoring::score(self.index, &vectors, route, f, &candidates))
            }
        };

        let signals_of = |i: SentenceNumber| -> Signals {
            let c = candidates.get(&i).copied().unwrap_or_default();
            let mut signals = Signals::default();
            signals[Signal::Fusion] = c.fused;
            signals[Signal::Dense] = c.dense.unwrap_or(0.0);
            signals[Signal::Lexical] = c.lexical;
            signals
        };
        let k = k.unwrap_or(route.selection.top_k as usize);
        // A query common to the corpus is answered in each of the best
        // documents, searched alone; documents then take turns.
        let common = self.is_common(route, query, &access.documents, &ranking)?;
        let ranking = match common {
            true => self.per_document(route, query, query_vector, k, filter, ranking)?,
            false => ranking,
        };
        // The reranker reads the final order once: a common query's
        // documents are searched without it.
        let (ranking, rerank_scores, rerank) = match self.reranker {
            Some(reranker)
                if mode == AnchorMode::Full && route.reranker.kind != RerankerKind::None =>
            {
                let done = rerank::rerank(reranker, self.index, route, query, ranking);
                (done.ranking, done.scores, Some(done.outcome))
            }
            _ => (ranking, HashMap::new(), None),
        };
        let mut selection = route.selection.clone();
        if common {
            selection.document_decay = selection.document_decay.max(selection.common_query_decay);
        }
        if selection.mmr_lambda < 1.0 && query_vector.is_some() {
            // MMR compares the results with each other: a common query's
            // ranking holds sentences its per-document searches read.
            self.read_vectors(&mut vectors, ranking.sentences())?;
        }
        let selected = scoring::select(self.index, &vectors, &selection, &ranking, k, query_vector);
        let signals = |i: SentenceNumber| {
            let mut signals = match &features {
                Some(f) => scoring::signals(self.index, &vectors, f, i, &candidates),
                None => signals_of(i),
            };
            signals[Signal::Rerank] = rerank_scores.get(&i).copied().unwrap_or(0.0);
            signals
        };
        if route.expansion.parent == ParentLevel::Chunk {
            // Displays climb to the chunk: its members, read here once.
            self.index.chunk_members()?;
        }
        let hits = self.hits(&selected, signals, selection::Display::of(route));
        let (hits, context_budget) = match route.selection.context_tokens {
            0 => (hits, None),
            budget => {
                let store = &self.index.store;
                let cost = |i: SentenceNumber| estimate_tokens(&store.sentences[i].text);
                let (hits, spent) = fit_hits(self.index, hits, budget as usize, &cost, &|_| 0);
                (hits, Some(spent))
            }
        };
        let context = assemble_context(&hits);
        let named_documents = named
            .iter()
            .flat_map(|n| &n.documents)
            .map(|&d| self.index.store.documents[d].key.clone())
            .collect();
        Ok(Answer {
            hits,
            context,
            common_query: common,
            named_documents,
            context_budget,
            routing,
            ranking,
            sentences: selected.iter().map(|&(i, _)| i).collect(),
            rerank,
        })
    }
}
