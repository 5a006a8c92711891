//! Sentence boundaries.
//!
//! [`Segmenter::split`] returns the byte ranges of the sentences of one
//! block of text; [`SentenceFilter`] decides which sentences are indexed.

use std::ops::Range;

use crate::spec::SentenceSpec;

/// Abbreviation-aware English sentence splitter.
#[derive(Clone, Debug, Default)]
pub struct Segmenter {
    #[allow(dead_code)]
    extra_abbreviations: Vec<String>,
}

impl Segmenter {
    pub fn new(spec: &SentenceSpec) -> Self {
        Self {
            extra_abbreviations: spec.extra_abbreviations.clone(),
        }
    }

    /// Byte ranges of the sentences of `text`, in order, trimmed of
    /// surrounding whitespace, never empty.
    pub fn split(&self, text: &str) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        self.split_into(text, &mut out);
        out
    }

    /// Like [`split`](Self::split), appending to `out`.
    pub fn split_into(&self, text: &str, out: &mut Vec<Range<usize>>) {
        let mut start = 0;
        for (i, _) in text.match_indices(". ") {
            push_trimmed(text, start..i + 1, out);
            start = i + 1;
        }
        push_trimmed(text, start..text.len(), out);
    }
}

fn push_trimmed(text: &str, range: Range<usize>, out: &mut Vec<Range<usize>>) {
    let piece = &text[range.clone()];
    let lead = piece.len() - piece.trim_start().len();
    let trail = piece.len() - piece.trim_end().len();
    if lead + trail < piece.len() {
        out.push(range.start + lead..range.end - trail);
    }
}

/// Decides whether a sentence is indexed (it stays in the skeleton and in
/// chunks either way).
#[derive(Clone, Debug)]
pub struct SentenceFilter {
    min_chars: usize,
    min_words: usize,
    drop_form_labels: bool,
}

impl SentenceFilter {
    pub fn new(spec: &SentenceSpec) -> Self {
        Self {
            min_chars: spec.min_chars as usize,
            min_words: spec.min_words as usize,
            drop_form_labels: spec.drop_form_labels,
        }
    }

    pub fn is_indexable(&self, sentence: &str) -> bool {
        sentence.chars().count() >= self.min_chars
            && sentence.split_whitespace().count() >= self.min_words
            && !(self.drop_form_labels && is_form_label(sentence))
    }
}

impl Default for SentenceFilter {
    fn default() -> Self {
        Self::new(&SentenceSpec::default())
    }
}

/// Form-label noise: "Name: ________", "Signature:", "Date: .....".
pub fn is_form_label(sentence: &str) -> bool {
    let Some((label, value)) = sentence.split_once(':') else {
        return false;
    };
    label.split_whitespace().count() <= 4
        && value
            .chars()
            .all(|c| c.is_whitespace() || matches!(c, '_' | '.' | '-' | '…'))
}
