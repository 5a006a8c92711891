//! A ranking of sentences: what each stage of retrieval hands the next.

use std::ops::{Deref, DerefMut};

use super::numbers::SentenceNumber;

/// Sentences with their scores, best first; ties go to the lower
/// sentence number, so the same scores always rank the same way. It
/// derefs to a slice, not a `Vec`: its entries can be read and rescored
/// in place (then [`sort`](Ranking::sort)), not appended out of order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ranking(Vec<(SentenceNumber, f32)>);

impl Ranking {
    /// Ranks `scored`, best first.
    pub fn best_first(scored: impl IntoIterator<Item = (SentenceNumber, f32)>) -> Self {
        let mut ranking = Self(scored.into_iter().collect());
        ranking.sort();
        ranking
    }

    /// Takes a list a search ranked already, best first, in its order
    /// (a search breaks its own ties).
    pub fn as_ranked(ranked: impl IntoIterator<Item = (SentenceNumber, f32)>) -> Self {
        Self(ranked.into_iter().collect())
    }

    /// [`as_ranked`](Self::as_ranked) for a search over rows (the vector
    /// file's, the BM25 index's), which are sentence numbers.
    pub fn from_rows(rows: Vec<(u32, f32)>) -> Self {
        Self::as_ranked(rows.into_iter().map(|(i, s)| (SentenceNumber(i), s)))
    }

    /// Keeps the best `n`.
    pub fn truncate(&mut self, n: usize) {
        self.0.truncate(n);
    }

    /// Sorts again after scores changed.
    pub fn sort(&mut self) {
        self.0
            .sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    }

    /// The sentences, best first.
    pub fn sentences(&self) -> impl Iterator<Item = SentenceNumber> + '_ {
        self.0.iter().map(|&(i, _)| i)
    }

    /// The best score, if any sentence is ranked.
    pub fn best_score(&self) -> Option<f32> {
        self.0.first().map(|&(_, s)| s)
    }
}

impl Deref for Ranking {
    type Target = [(SentenceNumber, f32)];

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Ranking {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl IntoIterator for Ranking {
    type Item = (SentenceNumber, f32);
    type IntoIter = std::vec::IntoIter<(SentenceNumber, f32)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Ranking {
    type Item = &'a (SentenceNumber, f32);
    type IntoIter = std::slice::Iter<'a, (SentenceNumber, f32)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
