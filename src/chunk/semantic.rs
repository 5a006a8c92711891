//! The `semantic` strategy: chunks that follow the document's sections, as
//! `structure`'s do, closed where the topic shifts rather than where a
//! paragraph ends.
//!
//! A topic shift is a drop in the similarity of consecutive sentence
//! vectors ([`TopicShifts`]): between two sentences whose similarity is
//! among the lowest `100 − semantic.breakpointPercentile` percent of the
//! document's consecutive pairs. A chunk closes at the first shift after
//! it holds `semantic.minTokens` tokens, and always before `maxTokens`
//! would be exceeded; overlap, tables and heading paths are `structure`'s.
//! The vectors are the ones the ingest computes for the index, so the
//! strategy costs no encoder call of its own.

use super::draft::Drafts;
use super::{Context, structure};
use crate::skeleton::Skeleton;

/// Where a document's topic shifts: per sentence, whether a new topic
/// starts at it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicShifts {
    before: Vec<bool>,
}

impl TopicShifts {
    /// The shifts of `skeleton`, from `vector(i)`, sentence `i`'s unit
    /// vector (`None` for a sentence without one: not indexed). A pair
    /// with a sentence without a vector is never a shift; a document with
    /// fewer than two pairs has none.
    pub fn from_vectors<'v>(
        skeleton: &Skeleton,
        vector: impl Fn(usize) -> Option<&'v [f32]>,
        percentile: f64,
    ) -> Self {
        let n = skeleton.sentences.len();
        // The similarity of each sentence to the one before it.
        let similarity: Vec<Option<f32>> = (0..n)
            .map(|i| {
                let previous = vector(i.checked_sub(1)?)?;
                let current = vector(i)?;
                Some(previous.iter().zip(current).map(|(a, b)| a * b).sum())
            })
            .collect();
        let mut sorted: Vec<f32> = similarity.iter().flatten().copied().collect();
        if sorted.len() < 2 {
            return TopicShifts {
                before: vec![false; n],
            };
        }
        sorted.sort_by(f32::total_cmp);
        // The pairs at or under the threshold are the lowest share.
        let share = (100.0 - percentile.clamp(0.0, 100.0)) / 100.0;
        let count = (sorted.len() as f64 * share).round() as usize;
        let Some(threshold) = count.checked_sub(1).map(|k| sorted[k]) else {
            return TopicShifts {
                before: vec![false; n],
            };
        };
        TopicShifts {
            before: similarity
                .iter()
                .map(|s| s.is_some_and(|s| s <= threshold))
                .collect(),
        }
    }

    /// Shifts given outright: `before[i]` when a new topic starts at
    /// sentence `i`.
    pub fn at(before: Vec<bool>) -> Self {
        TopicShifts { before }
    }

    /// No shift anywhere: `semantic` then closes chunks at `maxTokens`
    /// only.
    pub fn none(sentences: usize) -> Self {
        TopicShifts {
            before: vec![false; sentences],
        }
    }

    /// Whether a new topic starts at sentence `i`.
    pub fn before(&self, i: usize) -> bool {
        self.before.get(i).copied().unwrap_or(false)
    }

    /// How many shifts the document has.
    pub fn count(&self) -> usize {
        self.before.iter().filter(|&&b| b).count()
    }
}

pub(super) fn build<'c>(ctx: &'c Context<'c>, shifts: &TopicShifts, drafts: &mut Drafts<'c>) {
    structure::walk(
        ctx,
        ctx.spec.semantic.min_tokens,
        |piece, _| piece.sentence.is_some_and(|s| shifts.before(s.index())),
        drafts,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{Format, TreeBuilder};

    fn skeleton(sentences: usize) -> Skeleton {
        let mut builder = TreeBuilder::new(Format::Markdown);
        let text: Vec<String> = (0..sentences).map(|i| format!("Sentence {i}.")).collect();
        builder.paragraph(&text.join(" "));
        Skeleton::from_builder("t.md", builder)
    }

    #[test]
    fn the_lowest_similarities_of_the_document_are_its_shifts() {
        let skeleton = skeleton(10);
        assert_eq!(skeleton.sentences.len(), 10);
        // Two topics, 0–4 and 5–9, the second drifting a little; sentence
        // 7 has no vector.
        let topic = |i: usize| -> Vec<f32> {
            match i {
                0..5 => vec![1.0, 0.0],
                8 => vec![0.0, 1.0],
                _ => vec![0.6, 0.8],
            }
        };
        let vectors: Vec<Vec<f32>> = (0..10).map(topic).collect();
        let vector = |i: usize| (i != 7).then(|| vectors[i].as_slice());
        // Seven pairs have both vectors; at 90, the lowest one (rounded)
        // is a shift: 4 → 5 at 0.6.
        let shifts = TopicShifts::from_vectors(&skeleton, vector, 90.0);
        assert_eq!(shifts.count(), 1);
        assert!(shifts.before(5));
        // At 70, the lowest two: 4 → 5 (0.6) and 8 → 9 (0.8) and … the
        // pairs with 7 never count.
        let shifts = TopicShifts::from_vectors(&skeleton, vector, 70.0);
        assert!(shifts.before(5) && shifts.before(9) && !shifts.before(7) && !shifts.before(8));
        // One pair is too few to tell a shift from the rest.
        let shifts =
            TopicShifts::from_vectors(&skeleton, |i| (i < 2).then(|| vectors[i].as_slice()), 50.0);
        assert_eq!(shifts.count(), 0);
    }
}
