//! The answer without a model: the sentences retrieval selected, verbatim,
//! in reading order, each citing its source. Deterministic, free, and
//! supported by construction: each sentence is its own best source
//! sentence.

use crate::retrieve::Answer;

use super::{AnswerSentence, GeneratedAnswer, NO_ANSWER, Source, Support, Usage};

pub(super) fn answer(retrieved: &Answer, sources: Vec<Source>) -> GeneratedAnswer {
    if retrieved.hits.is_empty() || sources.is_empty() {
        return super::no_answer("extractive", NO_ANSWER.to_string(), 0);
    }
    let mut sentences = Vec::new();
    for source in &sources {
        for s in source
            .sentences
            .iter()
            .filter(|s| source.selected.contains(&s.sentence_id))
        {
            sentences.push(AnswerSentence {
                text: format!("{} [{}]", s.text.trim(), source.number),
                sources: vec![source.number],
                support: Support {
                    supported: true,
                    similarity: 1.0,
                    best_sentence_id: Some(s.sentence_id.clone()),
                    best_source: Some(source.number),
                    missing: Vec::new(),
                    flags: Vec::new(),
                },
            });
        }
    }
    let text = sentences
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    GeneratedAnswer {
        answer: text,
        sentences,
        sources,
        provider: "extractive",
        model: String::new(),
        no_answer: false,
        unsupported: 0,
        dropped_sentences: 0,
        dropped_sources: 0,
        finish_reason: None,
        usage: Usage {
            counted_by: "estimate",
            ..Usage::default()
        },
        generation_seconds: 0.0,
    }
}
