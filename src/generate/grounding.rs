//! Does a sentence say what its sources say? Two checks, each with a
//! reason:
//!
//! * **Similarity**: the sentence (its markers stripped) is embedded with
//!   the route's embedder, as is every sentence of the passages it cites;
//!   the best cosine must reach `generation.supportSimilarity`. A sentence
//!   that restates a source is close to the sentence it restates; one the
//!   model made up is close to none.
//! * **Values**: every number and every name (a capitalised word not at
//!   the sentence's start) it states must appear in those passages. A
//!   sentence can be close to its source and still change the figure or
//!   the party, which is the hallucination that costs most.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::embed::Embedder;
use crate::vector::dot;

use super::citations::strip_markers;
use super::{AnswerSentence, Flag, GenerateError, Source};

static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\d+(?:[.,]\d+)*").expect("a valid pattern"));
static WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\p{Lu}[\p{L}\p{M}'’-]+").expect("a valid pattern"));

/// Capitalised words that are not names wherever they stand.
const NOT_NAMES: &[&str] = &[
    "I",
    "The",
    "This",
    "That",
    "These",
    "Those",
    "It",
    "Its",
    "They",
    "A",
    "An",
    "In",
    "On",
    "According",
    "Source",
    "Sources",
    "However",
    "Both",
    "Yes",
    "No",
];

/// Fills in each sentence's support: its best similarity to a sentence of
/// the sources it cites, the values missing from them, and whether it is
/// supported (cited, similar enough, nothing missing).
pub(super) fn check(
    sentences: &mut [AnswerSentence],
    sources: &[Source],
    embedder: &dyn Embedder,
    threshold: f32,
) -> Result<(), GenerateError> {
    let cited_any = sentences.iter().any(|s| !s.sources.is_empty());
    if !cited_any {
        return Ok(());
    }
    // Every text embedded once: the answer's sentences, then the cited
    // passages' sentences.
    let mut texts: Vec<String> = Vec::new();
    let mut slot: HashMap<String, usize> = HashMap::new();
    let mut index_of = |text: &str, texts: &mut Vec<String>| -> usize {
        *slot.entry(text.to_string()).or_insert_with(|| {
            texts.push(text.to_string());
            texts.len() - 1
        })
    };
    let prose: Vec<usize> = sentences
        .iter()
        .map(|s| index_of(&strip_markers(&s.text), &mut texts))
        .collect();
    let mut passage: HashMap<(usize, usize), usize> = HashMap::new();
    for sentence in sentences.iter() {
        for &n in &sentence.sources {
            let Some(source) = sources.get(n - 1) else {
                continue;
            };
            for (j, s) in source.sentences.iter().enumerate() {
                let at = index_of(&s.text, &mut texts);
                passage.insert((n, j), at);
            }
        }
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed_documents(&refs)?;
    for (sentence, &own) in sentences.iter_mut().zip(&prose) {
        if sentence.sources.is_empty() {
            continue;
        }
        let mut best = (f32::NEG_INFINITY, None);
        let mut cited_text = String::new();
        for &n in &sentence.sources {
            let Some(source) = sources.get(n - 1) else {
                continue;
            };
            cited_text.push_str(&source.text);
            cited_text.push('\n');
            for (j, s) in source.sentences.iter().enumerate() {
                let Some(&at) = passage.get(&(n, j)) else {
                    continue;
                };
                let similarity = dot(&vectors[own], &vectors[at]);
                if similarity > best.0 {
                    best = (similarity, Some((n, s.sentence_id.clone())));
                }
            }
        }
        let support = &mut sentence.support;
        if let (similarity, Some((n, id))) = best {
            support.similarity = similarity;
            support.best_source = Some(n);
            support.best_sentence_id = Some(id);
        }
        support.missing = missing_values(&texts[own], &cited_text);
        if support.similarity < threshold {
            support.flags.push(Flag::LowSimilarity);
        }
        if !support.missing.is_empty() {
            support.flags.push(Flag::MissingValues);
        }
        support.supported = support.flags.is_empty();
    }
    Ok(())
}

/// The numbers and names of `sentence` that `sources` do not hold. A
/// number matches with or without its thousands separators; a name
/// matches as a word, ignoring case.
pub(super) fn missing_values(sentence: &str, sources: &str) -> Vec<String> {
    let plain = |s: &str| s.replace(',', "");
    let sources_numbers: Vec<String> = NUMBER
        .find_iter(sources)
        .map(|m| plain(m.as_str()))
        .collect();
    let source_words: std::collections::HashSet<String> = sources
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’' || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut missing = Vec::new();
    for m in NUMBER.find_iter(sentence) {
        let number = plain(m.as_str().trim_end_matches(['.', ',']));
        if !sources_numbers.iter().any(|n| n == &number) && !missing.contains(&number) {
            missing.push(number);
        }
    }
    // The first word is capitalised because it opens the sentence.
    let opening = sentence.find(char::is_alphabetic);
    for m in WORD.find_iter(sentence) {
        let word = m.as_str();
        if Some(m.start()) == opening || NOT_NAMES.contains(&word) {
            continue;
        }
        let lower = word.to_lowercase();
        let trimmed = lower.trim_end_matches(['\'', '’']);
        let possessive = trimmed.strip_suffix("'s").or(trimmed.strip_suffix("’s"));
        let known =
            source_words.contains(trimmed) || possessive.is_some_and(|w| source_words.contains(w));
        if !known
            && !missing
                .iter()
                .any(|m: &String| m.eq_ignore_ascii_case(word))
        {
            missing.push(word.to_string());
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_must_be_in_the_sources() {
        let source = "This Agreement shall be governed by the laws of the State of California. \
                      The fee is $1,200,000 per year.";
        assert!(missing_values("It is governed by California law.", source).is_empty());
        assert!(missing_values("The fee is 1200000 dollars a year.", source).is_empty());
        assert_eq!(
            missing_values("It is governed by Delaware law.", source),
            ["Delaware"]
        );
        assert_eq!(
            missing_values("The fee is $1,500,000 per year.", source),
            ["1500000"]
        );
        // The first word is capitalised because it starts the sentence.
        assert!(missing_values("Governed by California law.", source).is_empty());
        assert!(missing_values("California's law governs it.", source).is_empty());
    }
}
