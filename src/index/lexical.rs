//! What the BM25 index knows, counted from the skeleton: for a version
//! opened without its BM25 index (a route that searches anchors in a
//! graph store), the statistics that score a sentence as the index would
//! and that tell a common query.
//!
//! The graph store's full-text engine finds the candidates; their scores
//! come from here, so that the lexical list ranks by the same fields,
//! analyzers, boosts and BM25 formula (k1 = 1.2, b = 0.75, tantivy's idf)
//! as the embedded index, whichever engine found them. The one
//! difference: tantivy stores a field's length in one byte, exact up to
//! 40 tokens and coarser beyond, where this counts it exactly.
//!
//! Everything here is per distinct word of the corpus, not per sentence.

use std::collections::{HashMap, HashSet};

use tantivy::tokenizer::TextAnalyzer;

use super::bm25::{
    ID_BOOST, ID_TOKENIZER, SECTION_BOOST, TEXT_TOKENIZER, TOPIC_TOKENIZER, analyzer,
    distinct_words, mean_share,
};
use super::numbers::{ParagraphNumber, SectionNumber, SentenceNumber};
use super::ranking::Ranking;
use super::{IndexError, SkeletonStore};
use crate::spec::IndexProfileSpec;

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// One field of the BM25 index, as counted over the indexed sentences.
#[derive(Default)]
struct FieldStats {
    /// Indexed sentences whose field holds each word.
    used_by: HashMap<String, u32>,
    /// Tokens of the field over all indexed sentences.
    tokens: u64,
}

impl FieldStats {
    /// Counts one field value, held by `sentences` indexed sentences.
    fn add(&mut self, analyzer: &mut TextAnalyzer, text: &str, sentences: u32) {
        let mut seen: HashSet<String> = HashSet::new();
        let mut stream = analyzer.token_stream(text);
        while let Some(token) = stream.next() {
            self.tokens += u64::from(sentences);
            if seen.insert(token.text.clone()) {
                *self.used_by.entry(token.text.clone()).or_default() += sentences;
            }
        }
    }

    /// The BM25 score of a field value of `length` tokens holding the
    /// `words` with these `frequencies`, over `documents` sentences.
    fn score(&self, words: &[String], frequencies: &[u32], length: u32, documents: u32) -> f32 {
        if documents == 0 {
            return 0.0;
        }
        let average = (self.tokens as f32 / documents as f32).max(f32::EPSILON);
        let norm = K1 * (1.0 - B + B * length as f32 / average);
        words
            .iter()
            .zip(frequencies)
            .filter(|&(_, &tf)| tf > 0)
            .map(|(word, &tf)| {
                let used_by = self.used_by.get(word).copied().unwrap_or(0);
                let idf =
                    (1.0 + (documents as f32 - used_by as f32 + 0.5) / (used_by as f32 + 0.5)).ln();
                let tf = tf as f32;
                idf * (1.0 + K1) * tf / (tf + norm)
            })
            .sum()
    }
}

/// How often each of `words` occurs in `text`, and how many tokens it
/// has.
fn frequencies(analyzer: &mut TextAnalyzer, text: &str, words: &[String]) -> (Vec<u32>, u32) {
    let mut counts = vec![0u32; words.len()];
    let mut length = 0;
    let mut stream = analyzer.token_stream(text);
    while let Some(token) = stream.next() {
        length += 1;
        if let Some(n) = words.iter().position(|w| *w == token.text) {
            counts[n] += 1;
        }
    }
    (counts, length)
}

/// The BM25 index's statistics, counted from a version's skeleton.
pub struct LexicalStats {
    text: FieldStats,
    section: FieldStats,
    paragraph: FieldStats,
    ids: FieldStats,
    /// Indexed documents using each word (the index's document field).
    document_words: HashMap<String, u32>,
    sentences: u32,
    /// The profile's `index.bm25SectionPath` and `index.bm25Paragraph`.
    with_section: bool,
    with_paragraph: bool,
    english: TextAnalyzer,
    ids_analyzer: TextAnalyzer,
    topic: TextAnalyzer,
}

impl LexicalStats {
    /// Counts the fields of the indexed sentences of `store` as the
    /// ingest wrote them into the BM25 index under `profile`.
    pub fn count(store: &SkeletonStore, profile: &IndexProfileSpec) -> Result<Self, IndexError> {
        let mut english = analyzer(TEXT_TOKENIZER)?;
        let mut ids_analyzer = analyzer(ID_TOKENIZER)?;
        let mut stats = Self {
            text: FieldStats::default(),
            section: FieldStats::default(),
            paragraph: FieldStats::default(),
            ids: FieldStats::default(),
            document_words: HashMap::new(),
            sentences: 0,
            with_section: profile.index.bm25_section_path,
            with_paragraph: profile.index.bm25_paragraph,
            english: english.clone(),
            ids_analyzer: ids_analyzer.clone(),
            topic: analyzer(TOPIC_TOKENIZER)?,
        };
        let indexed = |[start, end]: [SentenceNumber; 2]| {
            store.sentences[start.index()..end.index()]
                .iter()
                .filter(|s| s.indexed)
                .count() as u32
        };
        for s in store.sentences.iter().filter(|s| s.indexed) {
            stats.sentences += 1;
            stats.text.add(&mut english, &s.text, 1);
            stats.ids.add(&mut ids_analyzer, &s.text, 1);
        }
        if stats.with_paragraph {
            for p in &store.paragraphs {
                let held = indexed(p.sentences);
                if held > 0 {
                    stats
                        .paragraph
                        .add(&mut english, &store.paragraph_text(p), held);
                }
            }
        }
        if stats.with_section {
            let mut per_section = vec![0u32; store.sections.len()];
            for s in store.sentences.iter().filter(|s| s.indexed) {
                per_section[s.section.index()] += 1;
            }
            for (section, &held) in store.sections.iter().zip(&per_section) {
                if held > 0 {
                    stats
                        .section
                        .add(&mut english, &section.path.join(" "), held);
                }
            }
        }
        // The document field as the ingest writes it: the words of each
        // document with a sentence in the index, none of the others'.
        let mut documents = FieldStats::default();
        for d in store
            .documents
            .iter()
            .filter(|d| store.has_indexed_sentence(d))
        {
            documents.add(&mut english, &store.document_text(d), 1);
        }
        stats.document_words = documents.used_by;
        for field in [
            &mut stats.text,
            &mut stats.section,
            &mut stats.paragraph,
            &mut stats.ids,
        ] {
            field.used_by.shrink_to_fit();
        }
        stats.document_words.shrink_to_fit();
        Ok(stats)
    }

    /// As [`super::bm25::Bm25Index::document_share`].
    pub fn document_share(&self, query: &str, documents: usize) -> Result<f32, IndexError> {
        let words = distinct_words(&mut self.topic.clone(), query);
        mean_share(words, documents, |word| {
            Ok(u64::from(
                self.document_words.get(word).copied().unwrap_or(0),
            ))
        })
    }

    /// The words of `query` a full-text engine that ignores how rare a
    /// word is should be asked for, so that what it finds holds the
    /// sentences BM25 ranks first: the words that weigh most (the fewest
    /// indexed sentences use them), rarest first, while the sentences
    /// using them add up to at most `budget`, and at least the rarest.
    /// A word BM25 ignores (a stop word) is never asked for. Words are
    /// the query's own ([`query_words`]), as the engine reads them.
    pub fn rarest_words(&self, query: &str, budget: usize) -> Vec<String> {
        let mut english = self.english.clone();
        let mut weighed: Vec<(u32, usize, String)> = Vec::new();
        for (order, word) in query_words(query).into_iter().enumerate() {
            let mut used_by = None;
            let mut stream = english.token_stream(&word);
            while let Some(token) = stream.next() {
                let n = self.text.used_by.get(&token.text).copied().unwrap_or(0);
                used_by = Some(used_by.map_or(n, |m: u32| m.max(n)));
            }
            drop(stream);
            if let Some(used_by) = used_by {
                weighed.push((used_by, order, word));
            }
        }
        weighed.sort_unstable();
        let mut total = 0usize;
        let mut chosen = Vec::new();
        for (used_by, _, word) in weighed {
            total += used_by as usize;
            if total > budget && !chosen.is_empty() {
                break;
            }
            chosen.push(word);
        }
        chosen
    }

    /// The scores the BM25 index gives `sentences` of `store` for `query`
    /// (with `paragraph_boost`, as [`super::bm25::Bm25Index::search`]),
    /// best first, ties by sentence; sentences that match nothing are
    /// left out.
    pub fn score(
        &self,
        store: &SkeletonStore,
        query: &str,
        sentences: &[SentenceNumber],
        paragraph_boost: f32,
    ) -> Ranking {
        let mut english = self.english.clone();
        let mut ids = self.ids_analyzer.clone();
        let words = distinct_words(&mut english, query);
        let id_words = distinct_words(&mut ids, query);
        let n = self.sentences;
        let mut paragraphs: HashMap<ParagraphNumber, f32> = HashMap::new();
        let mut sections: HashMap<SectionNumber, f32> = HashMap::new();
        let mut scored: Vec<(SentenceNumber, f32)> = Vec::with_capacity(sentences.len());
        for &i in sentences {
            let s = &store.sentences[i];
            let (tf, length) = frequencies(&mut english, &s.text, &words);
            let mut score = self.text.score(&words, &tf, length, n);
            let (tf, length) = frequencies(&mut ids, &s.text, &id_words);
            score += ID_BOOST * self.ids.score(&id_words, &tf, length, n);
            if self.with_section {
                score += SECTION_BOOST
                    * *sections.entry(s.section).or_insert_with(|| {
                        let path = store.sections[s.section].path.join(" ");
                        let (tf, length) = frequencies(&mut english, &path, &words);
                        self.section.score(&words, &tf, length, n)
                    });
            }
            if self.with_paragraph && paragraph_boost > 0.0 {
                score += paragraph_boost
                    * *paragraphs.entry(s.paragraph).or_insert_with(|| {
                        let text = store.paragraph_text(&store.paragraphs[s.paragraph]);
                        let (tf, length) = frequencies(&mut english, &text, &words);
                        self.paragraph.score(&words, &tf, length, n)
                    });
            }
            if score > 0.0 {
                scored.push((i, score));
            }
        }
        Ranking::best_first(scored)
    }
}

/// The words of `text` as a full-text engine is asked for them: runs of
/// letters and digits, lower-cased (Lucene's `AND`, `OR` and `NOT` are
/// operators only in capitals, and nothing else needs escaping), each
/// once, in order.
pub fn query_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        if !words.contains(&word) {
            words.push(word);
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_words_are_lower_case_runs_of_letters_and_digits_once_each() {
        assert_eq!(
            query_words("What did the Seller OR \"buyer\" pay in 2019? pay-out: AND"),
            [
                "what", "did", "the", "seller", "or", "buyer", "pay", "in", "2019", "out", "and"
            ]
        );
        assert!(query_words("?! …").is_empty());
    }
}
