//! Answer metrics: how well the generation stage's answer matches the
//! gold answers (SQuAD's exact match and token F1, after SQuAD's own
//! normalisation), and whether the sentences it cites hold a gold answer.

use serde::Serialize;

use crate::generate::{GeneratedAnswer, strip_markers};

/// Averaged answer metrics of one provider.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AnswerMetrics {
    /// `extractive`, `openai` or `anthropic`.
    pub provider: String,
    /// Share of answers equal to a gold answer after normalisation.
    pub exact_match: f64,
    /// Mean of the best token F1 against the gold answers.
    pub f1: f64,
    /// Share of answers one of whose cited sentences (the source sentence
    /// that best supports an answer sentence) holds a gold answer.
    pub cited_gold: f64,
    /// Share of answer sentences not supported by their sources.
    pub unsupported_sentences: f64,
    /// Answers scored.
    pub queries: usize,
    /// Queries the generator failed on (left out of the averages).
    pub failed: usize,
}

/// Sums of the answer metrics, one answer at a time.
#[derive(Default)]
pub struct AnswerAccumulator {
    exact: f64,
    f1: f64,
    cited_gold: f64,
    sentences: usize,
    unsupported: usize,
    queries: usize,
    failed: usize,
}

impl AnswerAccumulator {
    /// Adds one answer, judged against `gold`; `cited` is the text of the
    /// sentences it cites.
    pub fn add(&mut self, answer: &GeneratedAnswer, cited: &[&str], gold: &[String]) {
        if gold.is_empty() {
            return;
        }
        let prose = strip_markers(&answer.answer);
        let normal = normalize(&prose);
        self.exact += f64::from(u8::from(gold.iter().any(|g| normalize(g) == normal)));
        self.f1 += gold.iter().map(|g| f1(&prose, g)).fold(0.0, f64::max);
        let cited: Vec<String> = cited.iter().map(|c| normalize(c)).collect();
        let holds = gold.iter().any(|g| {
            let g = normalize(g);
            !g.is_empty() && cited.iter().any(|c| contains_words(c, &g))
        });
        self.cited_gold += f64::from(u8::from(holds));
        self.sentences += answer.sentences.len();
        self.unsupported += answer.unsupported;
        self.queries += 1;
    }

    /// Counts a query the generator failed on.
    pub fn failed(&mut self) {
        self.failed += 1;
    }

    pub fn finish(&self, provider: &str) -> Option<AnswerMetrics> {
        let n = self.queries as f64;
        (self.queries > 0).then(|| AnswerMetrics {
            provider: provider.to_string(),
            exact_match: self.exact / n,
            f1: self.f1 / n,
            cited_gold: self.cited_gold / n,
            unsupported_sentences: match self.sentences {
                0 => 0.0,
                s => self.unsupported as f64 / s as f64,
            },
            queries: self.queries,
            failed: self.failed,
        })
    }
}

/// SQuAD's normalisation: lower case, ASCII punctuation deleted (so
/// "U.S." is "us"), the articles a, an and the removed, whitespace
/// collapsed.
pub fn normalize(text: &str) -> String {
    let plain: String = text
        .to_lowercase()
        .chars()
        .filter(|c| !c.is_ascii_punctuation())
        .collect();
    plain
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// SQuAD's token F1 of `answer` against one gold answer.
pub fn f1(answer: &str, gold: &str) -> f64 {
    let answer = normalize(answer);
    let gold = normalize(gold);
    let a: Vec<&str> = answer.split_whitespace().collect();
    let g: Vec<&str> = gold.split_whitespace().collect();
    if a.is_empty() || g.is_empty() {
        return f64::from(u8::from(a == g));
    }
    let mut counts: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
    for w in &g {
        *counts.entry(w).or_default() += 1;
    }
    let mut common = 0;
    for w in &a {
        if let Some(n) = counts.get_mut(w)
            && *n > 0
        {
            *n -= 1;
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = f64::from(common) / a.len() as f64;
    let recall = f64::from(common) / g.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// Whether `needle`'s words occur in `haystack` as a run of whole words.
fn contains_words(haystack: &str, needle: &str) -> bool {
    format!(" {haystack} ").contains(&format!(" {needle} "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squad_normalisation_and_f1() {
        assert_eq!(normalize("The  U.S. Army!"), "us army");
        assert_eq!(normalize("an Apple, a day"), "apple day");
        assert!((f1("the Denver Broncos", "Denver Broncos") - 1.0).abs() < 1e-9);
        // Two of three answer words, both gold words: P 2/3, R 1.
        assert!((f1("Denver Broncos won", "Denver Broncos") - 0.8).abs() < 1e-9);
        assert_eq!(f1("Carolina", "Denver"), 0.0);
        assert!(contains_words(
            "won by denver broncos in 2016",
            "denver broncos"
        ));
        assert!(!contains_words("won by denverbroncos", "denver broncos"));
    }
}
