//! Stage 1, anchors: the query's vector against the sentence vectors
//! (HNSW, or exact search on small indexes, each hit mixed with its
//! paragraph's similarity) and the query's terms against BM25, each taking
//! the top `candidates` sentences, fused by Reciprocal Rank Fusion. A route
//! that takes chunk candidates (`anchors.chunks`) adds a third list: the
//! chunks nearest the query (exact search over the chunk vectors), each of
//! whose sentences takes its chunk's rank. In full mode, definitions of
//! terms close to the query join the anchors.
//!
//! With `anchors.source: graph` the two lists come from the graph store's
//! vector and full-text indexes instead, and are fused the same way: both
//! sources answer the two questions of [`AnchorSearch`].

use std::collections::{HashMap, HashSet};

use crate::index::{IndexVersion, Ranking, SearchFiles, SentenceNumber, nearest};
use crate::spec::{AnchorMode, AnchorSource, RetrievalRouteSpec, Signal};

use super::vectors::QueryVectors;
use super::{Candidates, GraphAccess, RetrieveError, Retriever};

/// How many times `candidates` sentences (and paragraphs) a route
/// anchored in a graph store asks its full-text index for. The store's
/// engine ranks by its own formula (RediSearch's TF-IDF, Lucene's BM25 on
/// its own fields); the version's statistics then rank what it found, and
/// a sentence the BM25 index puts near the top can sit lower in the
/// store's order.
const STORE_RECALL: usize = 4;

/// What stage 1 found.
pub(super) struct Anchors {
    /// Every anchor with its fused score and the signals known so far.
    pub candidates: Candidates,
    /// The dense list, best first (paragraph-mixed similarities).
    pub dense: Ranking,
    /// The BM25 list, best first.
    pub lexical: Ranking,
    /// Full mode: each defining sentence's best similarity to the query.
    pub definitions: HashMap<SentenceNumber, f32>,
}

/// Where stage 1's two lists come from. The version's own indexes and a
/// graph store answer the same two questions; fusion, chunk candidates
/// and definitions do not depend on which one answers.
trait AnchorSearch {
    /// The `c` admitted sentences nearest the query's vector, with their
    /// cosine similarities, best first.
    fn nearest(
        &self,
        q: &[f32],
        c: usize,
        allowed: &dyn Fn(SentenceNumber) -> bool,
    ) -> Result<Ranking, RetrieveError>;

    /// The `c` admitted sentences the version's BM25 statistics rank best
    /// for the query, best first.
    fn lexical(
        &self,
        query: &str,
        c: usize,
        allowed: &dyn Fn(SentenceNumber) -> bool,
    ) -> Result<Ranking, RetrieveError>;
}

/// `anchors.source: embedded`: the version's HNSW graph (or exact search)
/// and its BM25 index.
struct EmbeddedSearch<'a> {
    search: &'a SearchFiles,
    route: &'a RetrievalRouteSpec,
}

impl AnchorSearch for EmbeddedSearch<'_> {
    fn nearest(
        &self,
        q: &[f32],
        c: usize,
        allowed: &dyn Fn(SentenceNumber) -> bool,
    ) -> Result<Ranking, RetrieveError> {
        let search = self.search;
        // The vector file's rows are sentence numbers.
        let rows = |i: u32| allowed(SentenceNumber(i));
        Ok(Ranking::from_rows(nearest::nearest(
            &search.vectors,
            &search.graph,
            search.quantized.as_ref(),
            q,
            c,
            self.route.anchors.ef_search as usize,
            &rows,
        )))
    }

    fn lexical(
        &self,
        query: &str,
        c: usize,
        allowed: &dyn Fn(SentenceNumber) -> bool,
    ) -> Result<Ranking, RetrieveError> {
        let anchors = &self.route.anchors;
        // The BM25 index's documents are sentences, by number.
        let rows = |i: u32| allowed(SentenceNumber(i));
        Ok(Ranking::from_rows(self.search.bm25.search_phrases(
            query,
            c,
            anchors.paragraph_boost,
            anchors.phrase_boost,
            &rows,
        )?))
    }
}

/// `anchors.source: graph`: the graph store's vector and full-text
/// indexes, each call on a connection of its own.
struct StoreSearch<'a> {
    graph: &'a GraphAccess<'a>,
    index: &'a IndexVersion,
    route: &'a RetrievalRouteSpec,
}

impl AnchorSearch for StoreSearch<'_> {
    fn nearest(
        &self,
        q: &[f32],
        c: usize,
        allowed: &dyn Fn(SentenceNumber) -> bool,
    ) -> Result<Ranking, RetrieveError> {
        let mut store = self.graph.connection()?;
        Ok(self.graph.search.nearest(&mut *store, q, c, allowed)?)
    }

    /// The store finds the candidates; the version's BM25 statistics rank
    /// them, as the embedded index would, with the store free for other
    /// queries.
    fn lexical(
        &self,
        query: &str,
        c: usize,
        allowed: &dyn Fn(SentenceNumber) -> bool,
    ) -> Result<Ranking, RetrieveError> {
        let boost = self.route.anchors.paragraph_boost;
        let with_paragraphs = boost > 0.0 && self.index.profile.index.bm25_paragraph;
        let found = {
            let mut store = self.graph.connection()?;
            let recall = c * STORE_RECALL;
            (self.graph.search).matching(&mut *store, query, recall, with_paragraphs, allowed)?
        };
        let stats = self.index.lexical()?;
        let mut ranked = stats.score(&self.index.store, query, &found, boost);
        ranked.truncate(c);
        Ok(ranked)
    }
}

impl Retriever<'_> {
    /// Stage 1 for `query` (and its vector, unless the mode is `bm25`)
    /// over the sentences `allowed` admits.
    pub(super) fn anchors(
        &self,
        route: &RetrievalRouteSpec,
        query: &str,
        query_vector: Option<&[f32]>,
        allowed: &dyn Fn(SentenceNumber) -> bool,
        vectors: &mut QueryVectors<'_>,
    ) -> Result<Anchors, RetrieveError> {
        let mode = route.anchors.mode;
        let c = route.anchors.candidates.max(1) as usize;
        let wants_lexical = mode != AnchorMode::Dense;
        let source: Box<dyn AnchorSearch + '_> = match route.anchors.source {
            AnchorSource::Embedded => Box::new(EmbeddedSearch {
                search: self.index.search()?,
                route,
            }),
            AnchorSource::Graph => Box::new(StoreSearch {
                graph: self.graph_store()?,
                index: self.index,
                route,
            }),
        };
        let dense = match query_vector {
            Some(q) => source.nearest(q, c, allowed)?,
            None => Ranking::default(),
        };
        let lexical = match wants_lexical {
            true => source.lexical(query, c, allowed)?,
            false => Ranking::default(),
        };
        let dense = match query_vector {
            Some(q) => {
                self.read_vectors(vectors, dense.iter().map(|&(i, _)| i))?;
                self.with_paragraphs(q, dense, route.anchors.paragraph_mix, vectors)
            }
            None => dense,
        };

        let mut candidates = Candidates::new();
        let rrf_k = route.fusion.k as f32;
        // Chunk candidates: every admitted sentence of each chunk near the
        // query, at its chunk's rank (the best one, for a sentence two
        // overlapping chunks hold).
        match query_vector {
            Some(q)
                if route.anchors.chunks > 0
                    && matches!(mode, AnchorMode::Hybrid | AnchorMode::Full) =>
            {
                let chunks = self.index.chunk_index()?;
                let found = chunks.nearest(q, route.anchors.chunks as usize, allowed);
                let mut seen: HashSet<SentenceNumber> = HashSet::new();
                for (rank, &(c, _)) in found.iter().enumerate() {
                    for &i in &chunks.sentences[c as usize] {
                        if allowed(i) && seen.insert(i) {
                            let e = candidates.entry(i).or_default();
                            e.fused += route.fusion.chunk_weight / (rrf_k + rank as f32 + 1.0);
                            e.anchor = true;
                        }
                    }
                }
            }
            _ => {}
        }
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
                if route.scoring.weights.of(Signal::Definition) > 0.0
                    || route.anchors.definition_similarity <= 1.0 =>
            {
                let found = self.definitions(q, allowed);
                for (&i, &similarity) in &found {
                    if similarity >= route.anchors.definition_similarity {
                        candidates.entry(i).or_default().anchor = true;
                    }
                }
                found
            }
            _ => HashMap::new(),
        };
        Ok(Anchors {
            candidates,
            dense,
            lexical,
            definitions,
        })
    }

    /// The sentences that define a term, each with the best cosine
    /// similarity of the query to one of its terms.
    fn definitions(
        &self,
        q: &[f32],
        allowed: &dyn Fn(SentenceNumber) -> bool,
    ) -> HashMap<SentenceNumber, f32> {
        let mut best: HashMap<SentenceNumber, f32> = HashMap::new();
        for (row, &i) in self.index.term_sentences.iter().enumerate() {
            if allowed(i) {
                let similarity = crate::vector::dot(q, self.index.terms.row(row as u32));
                let e = best.entry(i).or_insert(f32::MIN);
                *e = e.max(similarity);
            }
        }
        best
    }

    /// Mixes each dense hit's similarity with its paragraph's, `mix` of
    /// the way, and re-ranks: a sentence in a paragraph about the query
    /// rises above an equally similar one in an unrelated paragraph.
    fn with_paragraphs(
        &self,
        q: &[f32],
        hits: Ranking,
        mix: f32,
        vectors: &QueryVectors<'_>,
    ) -> Ranking {
        let mix = mix.clamp(0.0, 1.0);
        if mix == 0.0 {
            return hits;
        }
        let store = &self.index.store;
        Ranking::best_first(hits.into_iter().map(|(i, score)| {
            let p = store.sentences[i].paragraph;
            let paragraph = vectors
                .paragraph(p)
                .map_or(0.0, |centroid| crate::vector::dot(q, centroid));
            (i, (1.0 - mix) * score + mix * paragraph)
        }))
    }
}
