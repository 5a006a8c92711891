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
//!    shown inside their paragraphs ("sentence search, paragraph display").
//!
//! Access filters (ACL tags, documents, section prefixes) apply before any
//! ranking and to every expansion hop, so nothing outside them is ever
//! scored or shown.

mod context;
mod scoring;

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use serde::Serialize;
use thiserror::Error;

use crate::embed::{EmbedError, Embedder};
use crate::graph::{GraphError, GraphStore};
use crate::index::vectors;
use crate::index::{IndexError, IndexVersion};
use crate::skeleton::PageBox;
use crate::spec::{AnchorMode, ExpansionSource, ExpansionSpec, RetrievalRouteSpec};

pub use context::assemble_context;

/// The places of the corpus-wide ranking in which one document must not
/// hold more than half for a query to count as common.
const COMMON_QUERY_PLACES: usize = 10;

#[derive(Debug, Error)]
pub enum RetrieveError {
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("the index was built with {built} but the query embedder is {query}")]
    ModelMismatch { built: String, query: String },
    #[error("graph expansion: {0}")]
    Graph(#[from] GraphError),
    #[error(
        "the route expands through the graph store, but none is connected \
         (the index version's profile has graph.store {0:?})"
    )]
    NoGraphStore(crate::spec::GraphStoreKind),
}

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
}

/// The per-signal scores of one result, each in [0, 1].
#[derive(Clone, Copy, Debug, Default, Serialize, utoipa::ToSchema)]
pub struct Signals {
    pub fusion: f32,
    pub dense: f32,
    pub lexical: f32,
    pub structure: f32,
    pub context: f32,
    pub heading: f32,
    pub paragraph: f32,
    pub definition: f32,
    pub provenance: f32,
    pub entity: f32,
    pub answer_type: f32,
}

/// Where a result comes from.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Citation {
    pub document: String,
    pub document_id: String,
    pub sentence_id: String,
    pub section_path: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Character offset and length in the document's canonical text.
    pub char_span: [u32; 2],
    /// Where the sentence stands on its pages, one box per line (PDF).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<PageBox>,
}

/// One result: an anchor sentence shown inside its paragraph.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Hit {
    /// Global sentence number in the index version.
    pub sentence: u32,
    pub score: f32,
    pub signals: Signals,
    pub text: String,
    /// The paragraph (or the window around the sentence) to display.
    pub display: String,
    pub citation: Citation,
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
    /// Every scored sentence, best first (for evaluation).
    #[serde(skip)]
    pub ranking: Vec<(u32, f32)>,
}

/// Answers queries against one loaded index version.
pub struct Retriever<'a> {
    index: &'a IndexVersion,
    embedder: &'a dyn Embedder,
    /// The graph store holding this version, for routes whose expansion
    /// source is `graph`.
    graph: Option<&'a Mutex<Box<dyn GraphStore>>>,
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
        })
    }

    /// Runs stage 2 in `graph` for routes whose expansion source is
    /// `graph`.
    pub fn with_graph(mut self, graph: &'a Mutex<Box<dyn GraphStore>>) -> Self {
        self.graph = Some(graph);
        self
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
        let store = &self.index.store;
        let allowed_docs = self.allowed_documents(filter);
        let allowed_sections = filter.section_prefix.as_ref().map(|prefix| {
            store
                .sections
                .iter()
                .map(|section| section_under(&section.path, prefix))
                .collect::<Vec<bool>>()
        });
        let allowed = |i: u32| {
            let s = &store.sentences[i as usize];
            s.indexed
                && allowed_docs[s.document as usize]
                && s.confidence >= route.scoring.confidence_floor
                && allowed_sections
                    .as_ref()
                    .is_none_or(|sections| sections[s.section as usize])
        };
        let mode = route.anchors.mode;
        let c = route.anchors.candidates.max(1) as usize;

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
        let dense = match query_vector {
            Some(q) => self.with_paragraphs(
                q,
                vectors::nearest(
                    &self.index.vectors,
                    &self.index.graph,
                    q,
                    c,
                    route.anchors.ef_search as usize,
                    &allowed,
                ),
                route.anchors.paragraph_mix,
            ),
            None => Vec::new(),
        };
        let lexical = if mode == AnchorMode::Dense {
            Vec::new()
        } else {
            self.index
                .bm25
                .search(query, c, route.anchors.paragraph_boost, &allowed)?
        };

        let mut candidates: HashMap<u32, Candidate> = HashMap::new();
        let rrf_k = route.fusion.k as f32;
        for (rank, &(i, score)) in dense.iter().enumerate() {
            let e = candidates.entry(i).or_default();
            e.fused += route.fusion.dense_weight / (rrf_k + rank as f32 + 1.0);
            e.dense = Some(score);
            e.anchor = true;
        }
        let best_lexical = lexical.first().map_or(1.0, |&(_, s)| s.max(f32::EPSILON));
        for (rank, &(i, score)) in lexical.iter().enumerate() {
            let e = candidates.entry(i).or_default();
            e.fused += route.fusion.lexical_weight / (rrf_k + rank as f32 + 1.0);
            e.lexical = score / best_lexical;
            e.anchor = true;
        }

        // Full mode: definitions of terms close to the query join the
        // anchors, and every definition's similarity is kept for scoring.
        let definitions = match (mode, query_vector) {
            (AnchorMode::Full, Some(q))
                if route.scoring.weights.definition > 0.0
                    || route.anchors.definition_similarity <= 1.0 =>
            {
                let found = self.definitions(q, &allowed);
                for (&i, &similarity) in &found {
                    if similarity >= route.anchors.definition_similarity {
                        candidates.entry(i).or_default().anchor = true;
                    }
                }
                found
            }
            _ => HashMap::new(),
        };

        // Full mode scores with query features; the other modes rank by
        // their anchor lists alone.
        let mut features = None;
        let ranking: Vec<(u32, f32)> = match mode {
            AnchorMode::Bm25 => lexical,
            AnchorMode::Dense => dense,
            AnchorMode::Hybrid => sorted(candidates.iter().map(|(&i, c)| (i, c.fused))),
            AnchorMode::Full => {
                self.expand(route, &mut candidates, &allowed)?;
                let q = query_vector.unwrap_or(&[]);
                for (&i, cand) in candidates.iter_mut() {
                    if cand.dense.is_none() && !q.is_empty() {
                        cand.dense = Some(crate::embed::dot(q, self.index.vectors.row(i)));
                    }
                }
                let f = features.insert(scoring::QueryFeatures::new(
                    query,
                    q,
                    &route.scoring.weights,
                    &candidates,
                    definitions,
                ));
                sorted(scoring::score(self.index, route, f, &candidates).into_iter())
            }
        };

        let signals_of = |i: u32| -> Signals {
            let c = candidates.get(&i).copied().unwrap_or_default();
            Signals {
                fusion: c.fused,
                dense: c.dense.unwrap_or(0.0),
                lexical: c.lexical,
                ..Signals::default()
            }
        };
        let k = k.unwrap_or(route.selection.top_k as usize);
        // A query common to the corpus is answered in each of the best
        // documents, searched alone; documents then take turns.
        let common = self.is_common(route, query, &allowed_docs, &ranking)?;
        let ranking = match common {
            true => self.per_document(route, query, query_vector, k, filter, ranking)?,
            false => ranking,
        };
        let mut selection = route.selection.clone();
        if common {
            selection.document_decay = selection.document_decay.max(selection.common_query_decay);
        }
        let selected = scoring::select(self.index, &selection, &ranking, k, query_vector);
        let hits: Vec<Hit> = selected
            .into_iter()
            .map(|(i, score)| {
                let signals = match &features {
                    Some(f) => scoring::signals(self.index, f, i, &candidates),
                    None => signals_of(i),
                };
                self.hit(i, score, signals, route.selection.neighbours)
            })
            .collect();
        let context = assemble_context(&hits);
        Ok(Answer {
            hits,
            context,
            common_query: common,
            ranking,
        })
    }

    /// Whether `query` is common to the corpus: its words are used, on
    /// average, by at least `selection.commonQueryShare` of the documents
    /// (see [`Bm25Index::document_share`](crate::index::bm25::Bm25Index::document_share)),
    /// and the corpus-wide `ranking` does not already settle on one
    /// document (its first holds at most half of the first ten places).
    /// A question about one document may use common words ("In what year
    /// was …?"), but its ranking then gathers in that document.
    fn is_common(
        &self,
        route: &RetrievalRouteSpec,
        query: &str,
        allowed_docs: &[bool],
        ranking: &[(u32, f32)],
    ) -> Result<bool, RetrieveError> {
        let spec = &route.selection;
        if spec.common_query_share > 1.0 || allowed_docs.iter().filter(|&&a| a).nth(1).is_none() {
            return Ok(false);
        }
        let store = &self.index.store;
        let document = |&(i, _): &(u32, f32)| store.sentences[i as usize].document;
        let Some(first) = ranking.first().map(document) else {
            return Ok(false);
        };
        let lead = ranking
            .iter()
            .take(COMMON_QUERY_PLACES)
            .filter(|r| document(r) == first)
            .count();
        let share = self
            .index
            .bm25
            .document_share(query, self.index.indexed_documents)?;
        tracing::debug!(share, lead, "how common the query is");
        Ok(share >= spec.common_query_share && 2 * lead <= COMMON_QUERY_PLACES)
    }

    /// The ranking of a common query: the `k` documents that `ranking`
    /// (over the whole corpus) puts first are each searched alone, as a
    /// reviewer asks "in this document, …", which finds the best sentences
    /// of a document far better than a corpus-wide candidate list that
    /// holds a few of them. Each document's sentences keep their order
    /// and are scaled so that its best scores what the document's best
    /// did corpus-wide; other documents keep their corpus-wide scores.
    fn per_document(
        &self,
        route: &RetrievalRouteSpec,
        query: &str,
        query_vector: Option<&[f32]>,
        k: usize,
        filter: &Filter,
        ranking: Vec<(u32, f32)>,
    ) -> Result<Vec<(u32, f32)>, RetrieveError> {
        let store = &self.index.store;
        let mut best: Vec<(u32, f32)> = Vec::new();
        for &(i, score) in &ranking {
            let document = store.sentences[i as usize].document;
            if !best.iter().any(|&(d, _)| d == document) {
                best.push((document, score));
                if best.len() == k {
                    break;
                }
            }
        }
        // Searched alone, a document is never common to itself.
        let mut alone = route.clone();
        alone.selection.common_query_share = f32::INFINITY;
        let mut merged: Vec<(u32, f32)> = ranking
            .into_iter()
            .filter(|&(i, _)| {
                let document = store.sentences[i as usize].document;
                !best.iter().any(|&(d, _)| d == document)
            })
            .collect();
        for (document, corpus_best) in best {
            let only = Filter {
                documents: Some(vec![store.documents[document as usize].key.clone()]),
                ..filter.clone()
            };
            let answer = self.retrieve_embedded(&alone, query, query_vector, Some(k), &only)?;
            let local_best = answer.ranking.first().map_or(1.0, |&(_, s)| s);
            let scale = if local_best > 0.0 && corpus_best > 0.0 {
                corpus_best / local_best
            } else {
                1.0
            };
            merged.extend(answer.ranking.into_iter().map(|(i, s)| (i, s * scale)));
        }
        Ok(sorted(merged.into_iter()))
    }

    /// Stage 2: adds the window, related and same-clause neighbours of the
    /// best anchors as candidates, found in the embedded index or, when the
    /// route says so, in the graph store.
    fn expand(
        &self,
        route: &RetrievalRouteSpec,
        candidates: &mut HashMap<u32, Candidate>,
        allowed: &dyn Fn(u32) -> bool,
    ) -> Result<(), RetrieveError> {
        let spec = &route.expansion;
        let anchors: Vec<u32> = sorted(candidates.iter().map(|(&i, c)| (i, c.fused)))
            .into_iter()
            .take(spec.anchors as usize)
            .map(|(i, _)| i)
            .collect();
        let added = match spec.source {
            ExpansionSource::Embedded => expansion(self.index, &anchors, spec),
            ExpansionSource::Graph => {
                let graph = self
                    .graph
                    .ok_or(RetrieveError::NoGraphStore(self.index.profile.graph.store))?;
                // A poisoned lock only means another query panicked
                // mid-statement; the connection itself is still usable.
                let mut store = graph.lock().unwrap_or_else(|e| e.into_inner());
                crate::graph::expand::expand(
                    store.as_mut(),
                    self.index,
                    &anchors,
                    spec,
                    self.index.profile.graph.retries(),
                )?
            }
        };
        for j in added {
            if allowed(j) {
                candidates.entry(j).or_default();
            }
        }
        Ok(())
    }

    /// The sentences that define a term, each with the best cosine
    /// similarity of the query to one of its terms.
    fn definitions(&self, q: &[f32], allowed: &dyn Fn(u32) -> bool) -> HashMap<u32, f32> {
        let mut best: HashMap<u32, f32> = HashMap::new();
        for (row, &i) in self.index.term_sentences.iter().enumerate() {
            if allowed(i) {
                let similarity = crate::embed::dot(q, self.index.terms.row(row as u32));
                let e = best.entry(i).or_insert(f32::MIN);
                *e = e.max(similarity);
            }
        }
        best
    }

    /// Mixes each dense hit's similarity with its paragraph's, `mix` of
    /// the way, and re-ranks: a sentence in a paragraph about the query
    /// rises above an equally similar one in an unrelated paragraph.
    fn with_paragraphs(&self, q: &[f32], hits: Vec<(u32, f32)>, mix: f32) -> Vec<(u32, f32)> {
        let mix = mix.clamp(0.0, 1.0);
        if mix == 0.0 {
            return hits;
        }
        let store = &self.index.store;
        sorted(hits.into_iter().map(|(i, score)| {
            let p = store.sentences[i as usize].paragraph;
            let paragraph = crate::embed::dot(q, self.index.paragraphs.row(p));
            (i, (1.0 - mix) * score + mix * paragraph)
        }))
    }

    fn allowed_documents(&self, filter: &Filter) -> Vec<bool> {
        self.index
            .store
            .documents
            .iter()
            .map(|d| {
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
                acl_ok && doc_ok && metadata_ok
            })
            .collect()
    }

    fn hit(&self, i: u32, score: f32, signals: Signals, neighbours: u32) -> Hit {
        let store = &self.index.store;
        let s = &store.sentences[i as usize];
        let doc = &store.documents[s.document as usize];
        let paragraph = &store.paragraphs[s.paragraph as usize];
        // The paragraph, or a window of `neighbours` sentences around the
        // hit when the paragraph is long.
        let [p_start, p_end] = paragraph.sentences;
        let (from, to) = if p_end - p_start <= 2 * neighbours + 1 + 4 {
            (p_start, p_end)
        } else {
            (
                i.saturating_sub(neighbours).max(p_start),
                (i + neighbours + 1).min(p_end),
            )
        };
        let display = (from..to)
            .map(|j| store.sentences[j as usize].text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        Hit {
            sentence: i,
            score,
            signals,
            text: s.text.clone(),
            display,
            citation: Citation {
                document: doc.key.clone(),
                document_id: doc.id.clone(),
                sentence_id: s.id.clone(),
                section_path: store.sections[s.section as usize].path.clone(),
                page: s.page,
                char_span: s.span,
                boxes: s.boxes.clone(),
            },
        }
    }
}

/// Best first; ties broken by sentence number for determinism.
/// Stage 2 on the embedded index: each anchor, its window of `window`
/// sentences either side within its document, its `RELATED_TO` targets
/// (with `related`), and the following sentences of its numbered clause
/// past the window, up to 8 sentences after the anchor (with
/// `sameClause`). [`crate::graph::expand::expand`] finds the same in a
/// graph store.
pub fn expansion(index: &IndexVersion, anchors: &[u32], spec: &ExpansionSpec) -> BTreeSet<u32> {
    let store = &index.store;
    let mut added = BTreeSet::new();
    for &a in anchors {
        let doc = store.sentences[a as usize].document;
        let [start, end] = store.documents[doc as usize].sentences;
        let w = spec.window;
        added.extend(a.saturating_sub(w).max(start)..(a + w + 1).min(end));
        if spec.related {
            added.extend(index.related[a as usize].iter().map(|&(j, _)| j));
        }
        if spec.same_clause
            && let Some(clause) = &store.sentences[a as usize].clause
        {
            // The clause continues past the window: its next sentences
            // up to the next clause, within the document.
            let reach = crate::graph::expand::CLAUSE_REACH;
            let mut j = a + w + 1;
            while j < end && j <= a + reach {
                if store.sentences[j as usize].clause.as_ref() != Some(clause) {
                    break;
                }
                added.insert(j);
                j += 1;
            }
        }
    }
    added
}

fn sorted(items: impl Iterator<Item = (u32, f32)>) -> Vec<(u32, f32)> {
    let mut v: Vec<(u32, f32)> = items.collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

#[cfg(test)]
mod tests {
    use super::section_under;

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
