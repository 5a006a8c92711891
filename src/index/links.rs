//! `RELATED_TO` edges: sparse semantic links between similar sentences in
//! different chunks, from k-NN over the sentence vectors.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::hnsw::HnswGraph;
use super::store::SkeletonStore;
use super::vectors::{self, Vectors};
use crate::spec::SemanticLinksSpec;

/// One directed link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelatedEdge {
    pub from: u32,
    pub to: u32,
    pub similarity: f32,
}

/// Links every indexed sentence to at most `maxPerSentence` others with
/// similarity at or above `threshold`, best first; with `crossChunkOnly`,
/// never to a sentence of the same chunk of the same document.
pub fn build(
    spec: &SemanticLinksSpec,
    store: &SkeletonStore,
    vectors: &Vectors,
    rows: &[u32],
    graph: &HnswGraph,
) -> Vec<RelatedEdge> {
    if !spec.enabled || spec.max_per_sentence == 0 {
        return Vec::new();
    }
    let max = spec.max_per_sentence as usize;
    // A few extra candidates make up for same-chunk neighbours filtered out.
    let fetch = max * 4 + 1;
    let indexed = |i: u32| store.sentences[i as usize].indexed;
    let same_chunk = |a: u32, b: u32| {
        let (x, y) = (&store.sentences[a as usize], &store.sentences[b as usize]);
        x.document == y.document && x.chunk == y.chunk
    };
    let per_sentence: Vec<Vec<RelatedEdge>> = rows
        .par_iter()
        .map(|&from| {
            let query = vectors.row(from);
            let found =
                vectors::nearest(vectors, graph, None, query, fetch, 64.max(fetch), &indexed);
            found
                .into_iter()
                .filter(|&(to, sim)| {
                    to != from
                        && sim >= spec.threshold
                        && !(spec.cross_chunk_only && same_chunk(from, to))
                })
                .take(max)
                .map(|(to, similarity)| RelatedEdge {
                    from,
                    to,
                    similarity,
                })
                .collect()
        })
        .collect();
    per_sentence.into_iter().flatten().collect()
}
