//! The context budget: the results' passages cut down, whole sentences at
//! a time, to what a budget of tokens holds ("compress when the LLM
//! context is limited"). Selection fills `selection.contextTokens` with
//! it, and the generation stage fills `generation.maxContextTokens` the
//! same way, so both keep the same sentences first:
//!
//! 1. each result's own sentence, best result first (a result whose
//!    sentence does not fit is left out);
//! 2. then, result by result, the rest of its paragraph;
//! 3. then what the display adds past the paragraph (the clause it
//!    continues);
//! 4. then its parent chunk or section (`expansion.parent`).
//!
//! Each step grows a passage one sentence after and one before it in
//! turn, nearest first, and stops on a side when the next sentence there
//! does not fit: a passage stays one run of whole sentences around its
//! result's sentence.

use serde::Serialize;

use crate::index::SentenceNumber;

/// Characters per token of the estimate that counts a text without its
/// model's tokenizer. English text runs at about four characters per
/// token in the tokenizers of current models (GPT-4o, Llama 3, Gemma 3,
/// Claude); three over-counts it by about a third, which leaves room for
/// numbers, names and other scripts that tokenize worse.
pub const ESTIMATE_CHARS_PER_TOKEN: usize = 3;

/// The estimated tokens of `text`: [`ESTIMATE_CHARS_PER_TOKEN`]
/// characters to a token, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(ESTIMATE_CHARS_PER_TOKEN)
}

/// What one result may show, from the least to the most: each range
/// `[from, to)` of sentence numbers holds the one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reach {
    /// The result's own sentence.
    pub lead: SentenceNumber,
    /// Its paragraph, as far as the display shows it.
    pub paragraph: [SentenceNumber; 2],
    /// The display without a budget (paragraph, window or clause).
    pub display: [SentenceNumber; 2],
    /// The display and the parent's sentences around it.
    pub parent: [SentenceNumber; 2],
}

impl Reach {
    /// The range of step `n` (0: the lead alone).
    fn step(&self, n: usize) -> [SentenceNumber; 2] {
        match n {
            0 => [self.lead, self.lead.after(1)],
            1 => self.paragraph,
            2 => self.display,
            _ => self.parent,
        }
    }

    /// The same reach, shown no further than `[from, to)` (which holds the
    /// lead).
    pub fn within(self, [from, to]: [SentenceNumber; 2]) -> Self {
        let clamp = |[a, b]: [SentenceNumber; 2]| [a.max(from), b.min(to)];
        Reach {
            lead: self.lead,
            paragraph: clamp(self.paragraph),
            display: clamp(self.display),
            parent: clamp(self.parent),
        }
    }

    /// The widest range: what shows with no budget.
    pub fn full(&self) -> [SentenceNumber; 2] {
        self.parent
    }
}

/// How a budget was spent on one answer's results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BudgetUse {
    /// The budget, in tokens.
    pub budget: usize,
    /// Tokens the kept passages take, as counted.
    pub used: usize,
    /// Results shown shorter than their display.
    pub shortened: usize,
    /// Results left out: not even their own sentence fitted.
    pub dropped: usize,
}

/// Fills `budget` tokens with the passages of `reaches` (best result
/// first), by the module's priorities. `cost` counts a sentence's tokens;
/// `frame` a result's tokens beyond its sentences (a source's delimiters).
/// Returns each result's range, `None` for one left out.
pub fn fill(
    reaches: &[Reach],
    budget: usize,
    cost: &dyn Fn(SentenceNumber) -> usize,
    frame: &dyn Fn(usize) -> usize,
) -> (Vec<Option<[SentenceNumber; 2]>>, BudgetUse) {
    let mut used = 0;
    let mut ranges: Vec<Option<[SentenceNumber; 2]>> = Vec::with_capacity(reaches.len());
    for (n, reach) in reaches.iter().enumerate() {
        let first = frame(n) + cost(reach.lead);
        if used + first <= budget {
            used += first;
            ranges.push(Some([reach.lead, reach.lead.after(1)]));
        } else {
            ranges.push(None);
        }
    }
    for step in 1..=3 {
        for (reach, range) in reaches.iter().zip(ranges.iter_mut()) {
            let Some([from, to]) = range.as_mut() else {
                continue;
            };
            let [low, high] = reach.step(step);
            let (mut after, mut before) = (true, true);
            while after || before {
                if after {
                    after = *to < high && used + cost(*to) <= budget;
                    if after {
                        used += cost(*to);
                        *to = to.after(1);
                    }
                }
                if before {
                    before = *from > low && used + cost(from.before(1)) <= budget;
                    if before {
                        *from = from.before(1);
                        used += cost(*from);
                    }
                }
            }
        }
    }
    let shortened = reaches
        .iter()
        .zip(&ranges)
        .filter(|(reach, range)| range.is_some_and(|r| r != reach.full()))
        .count();
    let dropped = ranges.iter().filter(|r| r.is_none()).count();
    let spent = BudgetUse {
        budget,
        used,
        shortened,
        dropped,
    };
    (ranges, spent)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sentences 0..10, one paragraph 2..6 holding the lead 4, a display
    /// to 7 and a parent 0..10; every sentence costs its number + 1.
    fn reach() -> Reach {
        Reach {
            lead: SentenceNumber(4),
            paragraph: span(2, 6),
            display: span(2, 7),
            parent: span(0, 10),
        }
    }

    fn cost(i: SentenceNumber) -> usize {
        i.index() + 1
    }

    fn span(from: u32, to: u32) -> [SentenceNumber; 2] {
        [SentenceNumber(from), SentenceNumber(to)]
    }

    #[test]
    fn without_a_limit_a_passage_shows_its_whole_reach() {
        let (ranges, spent) = fill(&[reach()], usize::MAX, &cost, &|_| 0);
        assert_eq!(ranges, vec![Some(span(0, 10))]);
        assert_eq!(spent.used, 55);
        assert_eq!((spent.shortened, spent.dropped), (0, 0));
    }

    #[test]
    fn the_lead_comes_first_then_its_paragraph_nearest_first() {
        // 5 for the lead, then 6 (sentence 5) and 4 (sentence 3).
        let (ranges, _) = fill(&[reach()], 15, &cost, &|_| 0);
        assert_eq!(ranges, vec![Some(span(3, 6))]);
        // A sentence that does not fit stops its side; the other goes on.
        let (ranges, spent) = fill(&[reach()], 9, &cost, &|_| 0);
        assert_eq!(ranges, vec![Some(span(3, 5))]);
        assert_eq!((spent.used, spent.shortened), (9, 1));
    }

    #[test]
    fn every_lead_before_any_paragraph_and_a_lead_that_does_not_fit_is_left_out() {
        let second = Reach {
            lead: SentenceNumber(8),
            paragraph: span(8, 9),
            display: span(8, 9),
            parent: span(8, 9),
        };
        let big = Reach {
            lead: SentenceNumber(9),
            paragraph: span(9, 10),
            display: span(9, 10),
            parent: span(9, 10),
        };
        // With a frame of 1 each, leads 4 and 8 take 6 + 10; lead 9 (11)
        // would pass 20; the paragraph of the first takes what is left
        // (sentence 5, cost 6, does not fit; sentence 3, cost 4, does).
        let (ranges, spent) = fill(&[reach(), second, big], 20, &cost, &|_| 1);
        assert_eq!(ranges, vec![Some(span(3, 5)), Some(span(8, 9)), None]);
        assert_eq!(spent.used, 20);
        assert_eq!(spent.dropped, 1);
        let (ranges, _) = fill(&[reach(), second], 20, &cost, &|_| 0);
        assert_eq!(ranges, vec![Some(span(4, 6)), Some(span(8, 9))]);
    }
}
