//! Ranking metrics, averaged over queries.
//!
//! Conventions: Recall@k is the share of a query's relevant items in its
//! top k; hit@k whether any is; MRR is the reciprocal rank of the first
//! relevant item within the top 10 (MRR@10, as the peers in the evaluation
//! README report it); nDCG@10 uses graded gains `rel / log2(rank + 1)`
//! against the ideal ordering (the BEIR convention); P@5 divides by 5.

use std::collections::HashMap;
use std::hash::Hash;

use serde::Serialize;

/// Cut-off of MRR and nDCG.
const CUTOFF: usize = 10;

/// Relevant items among the first `k` of a ranking.
pub fn found<T: Eq + Hash>(ranking: &[T], relevant: &HashMap<T, f64>, k: usize) -> usize {
    ranking
        .iter()
        .take(k)
        .filter(|x| relevant.contains_key(x))
        .count()
}

/// Rank (1-based) of the first relevant item within the MRR cut-off.
pub fn first_relevant<T: Eq + Hash>(ranking: &[T], relevant: &HashMap<T, f64>) -> Option<usize> {
    ranking
        .iter()
        .take(CUTOFF)
        .position(|x| relevant.contains_key(x))
        .map(|rank| rank + 1)
}

/// Sums of per-query metrics; divided by the query count at the end.
#[derive(Clone, Debug, Default)]
pub struct Accumulator {
    queries: usize,
    recall_1: f64,
    recall_5: f64,
    recall_10: f64,
    hit_10: f64,
    mrr: f64,
    ndcg_10: f64,
    p_5: f64,
}

/// Averaged metrics of one level (document or sentence).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Metrics {
    #[serde(rename = "ndcg@10")]
    pub ndcg_10: f64,
    #[serde(rename = "recall@1")]
    pub recall_1: f64,
    #[serde(rename = "recall@5")]
    pub recall_5: f64,
    #[serde(rename = "recall@10")]
    pub recall_10: f64,
    #[serde(rename = "hit@10")]
    pub hit_10: f64,
    pub mrr: f64,
    #[serde(rename = "p@5")]
    pub p_5: f64,
    /// Queries averaged over.
    pub queries: usize,
}

impl Accumulator {
    /// Adds one query: its ranking (best first, duplicates already
    /// removed) and its relevant items with their grades (> 0).
    pub fn add<T: Eq + Hash>(&mut self, ranking: &[T], relevant: &HashMap<T, f64>) {
        if relevant.is_empty() {
            return;
        }
        self.queries += 1;
        let n = relevant.len() as f64;
        let found = |k: usize| found(ranking, relevant, k) as f64;
        self.recall_1 += found(1) / n;
        self.recall_5 += found(5) / n;
        self.recall_10 += found(10) / n;
        self.p_5 += found(5) / 5.0;
        self.hit_10 += f64::from(u8::from(found(10) > 0.0));
        if let Some(rank) = first_relevant(ranking, relevant) {
            self.mrr += 1.0 / rank as f64;
        }
        let dcg: f64 = ranking
            .iter()
            .take(CUTOFF)
            .enumerate()
            .filter_map(|(r, x)| relevant.get(x).map(|g| g / (r as f64 + 2.0).log2()))
            .sum();
        let mut ideal: Vec<f64> = relevant.values().copied().collect();
        ideal.sort_by(|a, b| b.total_cmp(a));
        let idcg: f64 = ideal
            .iter()
            .take(CUTOFF)
            .enumerate()
            .map(|(r, g)| g / (r as f64 + 2.0).log2())
            .sum();
        if idcg > 0.0 {
            self.ndcg_10 += dcg / idcg;
        }
    }

    /// The averages, `None` when no query had relevant items at this level.
    pub fn finish(&self) -> Option<Metrics> {
        if self.queries == 0 {
            return None;
        }
        let q = self.queries as f64;
        Some(Metrics {
            ndcg_10: self.ndcg_10 / q,
            recall_1: self.recall_1 / q,
            recall_5: self.recall_5 / q,
            recall_10: self.recall_10 / q,
            hit_10: self.hit_10 / q,
            mrr: self.mrr / q,
            p_5: self.p_5 / q,
            queries: self.queries,
        })
    }
}

/// Keeps the first occurrence of each item, in order.
pub fn first_occurrences<T: Eq + Hash + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    items.filter(|x| seen.insert(x.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(items: &[(u32, f64)]) -> HashMap<u32, f64> {
        items.iter().copied().collect()
    }

    #[test]
    fn perfect_ranking_scores_one() {
        let mut acc = Accumulator::default();
        acc.add(&[1, 2, 3], &rel(&[(1, 1.0), (2, 1.0)]));
        let m = acc.finish().unwrap();
        assert_eq!(m.recall_1, 0.5);
        assert_eq!(m.recall_5, 1.0);
        assert_eq!(m.mrr, 1.0);
        assert!((m.ndcg_10 - 1.0).abs() < 1e-12);
        assert_eq!(m.p_5, 0.4);
    }

    #[test]
    fn second_place_and_misses() {
        let mut acc = Accumulator::default();
        acc.add(&[9, 1], &rel(&[(1, 1.0)]));
        acc.add(&[9, 8], &rel(&[(1, 1.0)]));
        let m = acc.finish().unwrap();
        assert_eq!(m.mrr, 0.25);
        assert_eq!(m.hit_10, 0.5);
        assert_eq!(m.recall_1, 0.0);
        let expected = (1.0 / 3f64.log2()) / 2.0;
        assert!((m.ndcg_10 - expected).abs() < 1e-12);
    }

    #[test]
    fn queries_without_relevant_items_are_not_counted() {
        let mut acc = Accumulator::default();
        acc.add(&[1], &rel(&[]));
        assert!(acc.finish().is_none());
    }

    #[test]
    fn relevance_beyond_the_cutoff_counts_only_for_recall() {
        let ranking: Vec<u32> = (0..20).collect();
        let mut acc = Accumulator::default();
        acc.add(&ranking, &rel(&[(15, 1.0)]));
        let m = acc.finish().unwrap();
        assert_eq!((m.mrr, m.ndcg_10, m.recall_10), (0.0, 0.0, 0.0));
    }

    #[test]
    fn duplicates_are_dropped_in_order() {
        assert_eq!(
            first_occurrences([3, 1, 3, 2, 1].into_iter()),
            vec![3, 1, 2]
        );
    }
}
