//! `RELATED_TO` edges: sparse semantic links between similar sentences in
//! different chunks, from k-NN over the sentence vectors.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::hnsw::HnswGraph;
use super::nearest::nearest;
use super::store::SkeletonStore;
use super::vectors::Vectors;
use crate::spec::SemanticLinksSpec;

/// One directed link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelatedEdge {
    pub from: u32,
    pub to: u32,
    pub similarity: f32,
}

/// How far below `threshold` linking goes when nothing reaches it: the
/// design's 0.90 falls back to 0.85. A corpus whose sentences never come
/// that close (prose that does not repeat itself) still gets the links
/// its nearest passages have, instead of none without a word.
pub const FALLBACK_STEP: f32 = 0.05;

/// The share of the edge budget (`maxPerSentence` × indexed sentences)
/// past which linking raises its alarm: nearly every sentence took as
/// many links as it may, so the threshold admits what is merely on the
/// same topic, and the links no longer single out near-copies.
pub const BUDGET_ALARM_SHARE: f64 = 0.9;

/// What linking made, and how it went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Linked {
    pub edges: Vec<RelatedEdge>,
    pub report: LinkReport,
}

/// How the `RELATED_TO` edges of a version were made, for its manifest
/// and the ingest report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkReport {
    /// The similarity the edges were made at: the profile's threshold,
    /// or [`FALLBACK_STEP`] below it when nothing reached it.
    pub threshold: f32,
    /// The most edges the version may hold: `maxPerSentence` × indexed
    /// sentences.
    pub budget: usize,
    /// What the ingest report warns of: a fallback, a budget nearly
    /// spent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Links every indexed sentence to at most `maxPerSentence` others with
/// similarity at or above `threshold`, best first; with `crossChunkOnly`,
/// never to a sentence of the same chunk of the same document. When no
/// pair reaches `threshold`, links at [`FALLBACK_STEP`] below it; when the
/// edges come near their budget ([`BUDGET_ALARM_SHARE`]), warns that the
/// threshold is too low.
pub fn link(
    spec: &SemanticLinksSpec,
    store: &SkeletonStore,
    vectors: &Vectors,
    rows: &[u32],
    graph: &HnswGraph,
) -> Linked {
    let max = spec.max_per_sentence as usize;
    let mut report = LinkReport {
        threshold: spec.threshold,
        budget: max * rows.len(),
        warnings: Vec::new(),
    };
    if !spec.enabled || max == 0 {
        return Linked {
            edges: Vec::new(),
            report,
        };
    }
    let fallback = spec.threshold - FALLBACK_STEP;
    let neighbours = near(spec, store, vectors, rows, graph, fallback);
    let mut edges = within(&neighbours, spec.threshold, max);
    if edges.is_empty() && rows.len() > 1 {
        edges = within(&neighbours, fallback, max);
        report.threshold = fallback;
        report.warnings.push(format!(
            "no two sentences reached semanticLinks.threshold {:.2}; linked at {fallback:.2}: \
             {} RELATED_TO edges",
            spec.threshold,
            edges.len()
        ));
    }
    if report.budget > 0 && edges.len() as f64 >= BUDGET_ALARM_SHARE * report.budget as f64 {
        report.warnings.push(format!(
            "{} RELATED_TO edges of a budget of {} ({} per sentence): nearly every sentence \
             links as far as it may, so semanticLinks.threshold {:.2} links sentences that are \
             merely alike; raise it",
            edges.len(),
            report.budget,
            max,
            report.threshold
        ));
    }
    Linked { edges, report }
}

/// Each indexed sentence's nearest others at `floor` or above, best
/// first, as many as a link may need; with `crossChunkOnly`, none of its
/// own chunk.
fn near(
    spec: &SemanticLinksSpec,
    store: &SkeletonStore,
    vectors: &Vectors,
    rows: &[u32],
    graph: &HnswGraph,
    floor: f32,
) -> Vec<Vec<RelatedEdge>> {
    let max = spec.max_per_sentence as usize;
    // A few extra candidates make up for same-chunk neighbours filtered out.
    let fetch = max * 4 + 1;
    let indexed = |i: u32| store.sentences[i as usize].indexed;
    let same_chunk = |a: u32, b: u32| {
        let (x, y) = (&store.sentences[a as usize], &store.sentences[b as usize]);
        x.document == y.document && x.chunk == y.chunk
    };
    rows.par_iter()
        .map(|&from| {
            let query = vectors.row(from);
            let found = nearest(vectors, graph, None, query, fetch, 64.max(fetch), &indexed);
            found
                .into_iter()
                .filter(|&(to, sim)| {
                    to != from && sim >= floor && !(spec.cross_chunk_only && same_chunk(from, to))
                })
                .map(|(to, similarity)| RelatedEdge {
                    from,
                    to,
                    similarity,
                })
                .collect()
        })
        .collect()
}

/// The first `max` of each sentence's neighbours at `threshold` or above.
fn within(neighbours: &[Vec<RelatedEdge>], threshold: f32, max: usize) -> Vec<RelatedEdge> {
    neighbours
        .iter()
        .flat_map(|found| {
            found
                .iter()
                .filter(|e| e.similarity >= threshold)
                .take(max)
                .copied()
        })
        .collect()
}
