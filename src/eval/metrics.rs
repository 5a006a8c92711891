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

/// How the top ten spread over sections, averaged over the queries whose
/// relevant sentences are known: whether an answer that spans sections is
/// reached in each of them, which one ranking of sentences can miss by
/// filling its top ten from the best section alone.
#[derive(Clone, Debug, Default)]
pub struct SectionAccumulator {
    queries: usize,
    coverage: f64,
    spanning: usize,
    spanning_coverage: f64,
    distinct: f64,
}

/// Averaged section figures of the top ten.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SectionMetrics {
    /// Share of the sections holding relevant sentences that hold a
    /// relevant sentence among the top ten.
    #[serde(rename = "coverage@10")]
    pub coverage_10: f64,
    /// The same over the queries whose relevant sentences lie in two or
    /// more sections.
    #[serde(rename = "spanning_coverage@10")]
    pub spanning_coverage_10: f64,
    /// Distinct sections among the top ten.
    #[serde(rename = "distinct@10")]
    pub distinct_10: f64,
    pub queries: usize,
    /// Queries whose relevant sentences lie in two or more sections.
    pub spanning: usize,
}

impl SectionAccumulator {
    /// Adds one query: its ranking of sentences, the relevant ones, and
    /// the section of each sentence.
    pub fn add<T: Eq + Hash + Copy, S: Eq + Hash>(
        &mut self,
        ranking: &[T],
        relevant: &HashMap<T, f64>,
        section: impl Fn(T) -> S,
    ) {
        if relevant.is_empty() {
            return;
        }
        let sections = distinct(relevant.keys().map(|&i| section(i)));
        let top = &ranking[..ranking.len().min(CUTOFF)];
        let reached = distinct(
            top.iter()
                .filter(|i| relevant.contains_key(i))
                .map(|&i| section(i)),
        );
        let shown = distinct(top.iter().map(|&i| section(i)));
        let coverage = reached as f64 / sections as f64;
        self.queries += 1;
        self.coverage += coverage;
        self.distinct += shown as f64;
        if sections >= 2 {
            self.spanning += 1;
            self.spanning_coverage += coverage;
        }
    }

    pub fn finish(&self) -> Option<SectionMetrics> {
        (self.queries > 0).then(|| SectionMetrics {
            coverage_10: self.coverage / self.queries as f64,
            spanning_coverage_10: if self.spanning > 0 {
                self.spanning_coverage / self.spanning as f64
            } else {
                0.0
            },
            distinct_10: self.distinct / self.queries as f64,
            queries: self.queries,
            spanning: self.spanning,
        })
    }
}

/// How many distinct values `items` holds.
fn distinct<S: Eq + Hash>(items: impl Iterator<Item = S>) -> usize {
    items.collect::<std::collections::HashSet<S>>().len()
}

/// What the passages a system shows hold, averaged over the queries whose
/// relevant sentences are known: the measure on which a skeleton's
/// paragraphs and plain chunks compare, since a chunk is a passage of many
/// sentences and a ranking of sentences is not.
#[derive(Clone, Debug, Default)]
pub struct PassageAccumulator {
    queries: usize,
    recall_1: f64,
    recall_5: f64,
    recall_10: f64,
    hit_1: f64,
    words_5: f64,
    words_10: f64,
    within_500: f64,
    within_1000: f64,
}

/// Reading budgets, in words, of the passage recall at a budget: about a
/// page, and two.
const BUDGETS: [usize; 2] = [500, 1000];

/// Averaged passage figures.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PassageMetrics {
    /// Share of the relevant sentences that the first passage shows.
    #[serde(rename = "recall@1")]
    pub recall_1: f64,
    /// The same for the first five passages.
    #[serde(rename = "recall@5")]
    pub recall_5: f64,
    /// The same for the first ten.
    #[serde(rename = "recall@10")]
    pub recall_10: f64,
    /// Whether the first passage shows any relevant sentence.
    #[serde(rename = "hit@1")]
    pub hit_1: f64,
    /// Words of the distinct sentences the first five passages show: what
    /// a reader, or a model's context, takes in.
    #[serde(rename = "words@5")]
    pub words_5: f64,
    /// The same for the first ten.
    #[serde(rename = "words@10")]
    pub words_10: f64,
    /// Share of the relevant sentences that start within the first 500
    /// words read, passage by passage, each sentence once: recall at an
    /// equal reading budget, whatever the size of the passages.
    #[serde(rename = "recall@500w")]
    pub within_500: f64,
    /// The same within 1,000 words.
    #[serde(rename = "recall@1000w")]
    pub within_1000: f64,
    pub queries: usize,
}

impl PassageAccumulator {
    /// Adds one query: the sentences each passage shows, best passage
    /// first, the relevant sentences, and each sentence's word count.
    pub fn add<T: Eq + Hash + Copy>(
        &mut self,
        passages: &[Vec<T>],
        relevant: &HashMap<T, f64>,
        words: impl Fn(T) -> usize,
    ) {
        if relevant.is_empty() {
            return;
        }
        let shown = |k: usize| -> std::collections::HashSet<T> {
            passages.iter().take(k).flatten().copied().collect()
        };
        let recall = |shown: &std::collections::HashSet<T>| {
            relevant.keys().filter(|i| shown.contains(i)).count() as f64 / relevant.len() as f64
        };
        let (first, five, ten) = (shown(1), shown(5), shown(10));
        self.queries += 1;
        self.recall_1 += recall(&first);
        self.recall_5 += recall(&five);
        self.recall_10 += recall(&ten);
        self.hit_1 += f64::from(u8::from(relevant.keys().any(|i| first.contains(i))));
        self.words_5 += five.iter().map(|&i| words(i)).sum::<usize>() as f64;
        self.words_10 += ten.iter().map(|&i| words(i)).sum::<usize>() as f64;
        // One reading of the passages serves every budget: a sentence
        // counts for each budget not yet spent when it starts.
        let largest = BUDGETS.iter().copied().max().unwrap_or(0);
        let mut read = 0;
        let mut seen = std::collections::HashSet::new();
        let mut found = [0usize; BUDGETS.len()];
        for &i in passages.iter().flatten() {
            if read >= largest {
                break;
            }
            if seen.insert(i) {
                let hit = usize::from(relevant.contains_key(&i));
                for (found, &budget) in found.iter_mut().zip(&BUDGETS) {
                    if read < budget {
                        *found += hit;
                    }
                }
                read += words(i);
            }
        }
        let [within_500, within_1000] = found.map(|n| n as f64 / relevant.len() as f64);
        self.within_500 += within_500;
        self.within_1000 += within_1000;
    }

    pub fn finish(&self) -> Option<PassageMetrics> {
        let q = self.queries as f64;
        (self.queries > 0).then(|| PassageMetrics {
            recall_1: self.recall_1 / q,
            recall_5: self.recall_5 / q,
            recall_10: self.recall_10 / q,
            hit_1: self.hit_1 / q,
            words_5: self.words_5 / q,
            words_10: self.words_10 / q,
            within_500: self.within_500 / q,
            within_1000: self.within_1000 / q,
            queries: self.queries,
        })
    }
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

    #[test]
    fn section_coverage_counts_the_sections_an_answer_spans() {
        // Sentences 0-1 in section 0, 2-3 in section 1, 4 in section 2.
        let section = |i: u32| [0, 0, 1, 1, 2][i as usize];
        let relevant: HashMap<u32, f64> = [(0, 1.0), (2, 1.0)].into();
        let mut sections = SectionAccumulator::default();
        // Reaches section 0 only: half the answer's sections.
        sections.add(&[1, 0, 4], &relevant, section);
        // Reaches both.
        sections.add(&[2, 0], &relevant, section);
        // An answer in one section, reached.
        sections.add(&[4], &[(4, 1.0)].into(), section);
        let m = sections.finish().unwrap();
        assert_eq!(m.queries, 3);
        assert_eq!(m.spanning, 2);
        assert!((m.coverage_10 - (0.5 + 1.0 + 1.0) / 3.0).abs() < 1e-9);
        assert!((m.spanning_coverage_10 - 0.75).abs() < 1e-9);
        assert!((m.distinct_10 - (2.0 + 2.0 + 1.0) / 3.0).abs() < 1e-9);
    }

    #[test]
    fn passages_count_what_they_show_once() {
        let relevant: HashMap<u32, f64> = [(2, 1.0), (7, 1.0)].into();
        let mut passages = PassageAccumulator::default();
        // Sentence 2 in the first passage, 7 in the third; sentence 3 is
        // shown twice (overlapping passages) and read once.
        passages.add(&[vec![1, 2, 3], vec![3, 4], vec![7]], &relevant, |_| 10);
        let m = passages.finish().unwrap();
        assert_eq!((m.recall_1, m.recall_5, m.hit_1), (0.5, 1.0, 1.0));
        assert_eq!((m.words_5, m.words_10), (50.0, 50.0));
        // 500 words read: all; at 200 words a sentence, the third
        // passage starts after the budget.
        assert_eq!(m.within_500, 1.0);
        let mut long = PassageAccumulator::default();
        long.add(&[vec![1, 2, 3], vec![3, 4], vec![7]], &relevant, |_| 200);
        assert_eq!(long.finish().unwrap().within_500, 0.5);
    }
}
