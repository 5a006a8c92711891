//! Cutting text at word boundaries to fit a token budget.
//!
//! The last resort for a sentence (or table row) longer than a chunk, and the
//! source of overlap fragments and of `fixed` window cuts. Words are runs of
//! non-ASCII-whitespace, the same words [`WordCounter`](super::WordCounter)
//! counts, so cutting between them keeps counts additive.
//!
//! Sizes are first estimated by adding the counts of single words, then
//! checked with one count of the whole candidate; a counter whose counts are
//! not additive (a subword tokenizer) only costs a binary search, never a
//! fragment over budget. A single word over budget is returned whole: the
//! final fit check in [`finish`](super::Context::finish) halves it by
//! characters.

use std::ops::Range;

use smallvec::SmallVec;

use super::TokenCounter;

/// The words of a text, as byte ranges.
pub(super) struct Words<'t> {
    text: &'t str,
    ranges: Vec<Range<usize>>,
}

impl<'t> Words<'t> {
    pub fn new(text: &'t str) -> Self {
        let mut ranges = Vec::new();
        let mut start = None;
        for (i, byte) in text.bytes().enumerate() {
            if byte.is_ascii_whitespace() {
                if let Some(s) = start.take() {
                    ranges.push(s..i);
                }
            } else if start.is_none() {
                start = Some(i);
            }
        }
        if let Some(s) = start {
            ranges.push(s..text.len());
        }
        Self { text, ranges }
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Bytes from the start of word `from` to the end of word `to - 1`
    /// (empty when `from >= to`).
    pub fn span(&self, from: usize, to: usize) -> Range<usize> {
        match (
            self.ranges.get(from),
            to.checked_sub(1).and_then(|t| self.ranges.get(t)),
        ) {
            (Some(first), Some(last)) if from < to => first.start..last.end,
            _ => 0..0,
        }
    }

    fn count(&self, range: Range<usize>, counter: &dyn TokenCounter) -> u32 {
        self.text.get(range).map_or(0, |s| counter.count(s) as u32)
    }

    /// How many words from word `from` on fit in `budget` tokens (0 when
    /// not even the first one does).
    pub fn take(&self, from: usize, budget: u32, counter: &dyn TokenCounter) -> usize {
        let mut total = 0u32;
        let mut k = 0;
        for word in self.ranges.iter().skip(from) {
            let tokens = self.count(word.clone(), counter);
            if total.saturating_add(tokens) > budget {
                break;
            }
            total += tokens;
            k += 1;
        }
        largest_fitting(k, |k| {
            self.count(self.span(from, from + k), counter) <= budget
        })
    }
}

/// The last words of `text` that fit in `budget` tokens together, as one
/// byte range (empty when not even the last word fits). The words are read
/// from the end of the text, and no further back than the budget reaches:
/// an overlap takes a few words of a sentence that may be long.
pub(super) fn trailing_words(text: &str, budget: u32, counter: &dyn TokenCounter) -> Range<usize> {
    let bytes = text.as_bytes();
    // The words taken, from the last one back.
    let mut words: SmallVec<[Range<usize>; 16]> = SmallVec::new();
    let mut total = 0u32;
    let mut end = bytes.len();
    loop {
        while end > 0 && bytes[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        if end == 0 {
            break;
        }
        let mut start = end;
        while start > 0 && !bytes[start - 1].is_ascii_whitespace() {
            start -= 1;
        }
        // ASCII whitespace never stands inside a character, so the word
        // lies on character boundaries.
        let tokens = text.get(start..end).map_or(0, |w| counter.count(w) as u32);
        if total.saturating_add(tokens) > budget {
            break;
        }
        total += tokens;
        words.push(start..end);
        end = start;
    }
    let span = |k: usize| match k.checked_sub(1).and_then(|last| words.get(last)) {
        Some(first) => first.start..words[0].end,
        None => 0..0,
    };
    let k = largest_fitting(words.len(), |k| {
        text.get(span(k)).map_or(0, |s| counter.count(s) as u32) <= budget
    });
    span(k)
}

/// The largest `j <= k` with `fits(j)`, where `fits(0)` holds and `k` is an
/// estimate that is usually right: checked once, searched only when wrong.
fn largest_fitting(k: usize, fits: impl Fn(usize) -> bool) -> usize {
    if k == 0 || fits(k) {
        return k;
    }
    let (mut lo, mut hi) = (0, k);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Splits `text` into consecutive word runs of at most `budget` tokens each
/// (a single word over budget stays whole), with their token counts.
pub(super) fn split_to_budget(
    text: &str,
    budget: u32,
    counter: &dyn TokenCounter,
) -> Vec<(Range<usize>, u32)> {
    let words = Words::new(text);
    if words.is_empty() {
        return vec![(0..text.len(), counter.count(text) as u32)];
    }
    let mut out = Vec::new();
    let mut from = 0;
    while from < words.len() {
        let k = words.take(from, budget, counter).max(1);
        let range = words.span(from, from + k);
        let tokens = words.count(range.clone(), counter);
        out.push((range, tokens));
        from += k;
    }
    out
}

/// Two halves of `text`: at the middle word, or inside a single word at its
/// middle character. `None` for a single character (it cannot be cut).
pub(super) fn halves(text: &str) -> Option<(Range<usize>, Range<usize>)> {
    let words = Words::new(text);
    if words.len() >= 2 {
        let mid = words.len() / 2;
        return Some((words.span(0, mid), words.span(mid, words.len())));
    }
    let chars = text.char_indices().count();
    if chars < 2 {
        return None;
    }
    let (cut, _) = text.char_indices().nth(chars / 2)?;
    Some((0..cut, cut..text.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::WordCounter;

    /// Counts characters: not additive over word joins (the space counts).
    struct CharCounter;

    impl TokenCounter for CharCounter {
        fn count(&self, text: &str) -> usize {
            text.chars().count()
        }

        fn describe(&self) -> String {
            "chars".into()
        }
    }

    #[test]
    fn splits_at_word_boundaries_within_budget() {
        let text = "one two  three four\nfive six seven";
        let pieces = split_to_budget(text, 3, &WordCounter);
        let texts: Vec<&str> = pieces.iter().map(|(r, _)| &text[r.clone()]).collect();
        assert_eq!(texts, ["one two  three", "four\nfive six", "seven"]);
        assert!(
            pieces
                .iter()
                .all(|(r, t)| *t == WordCounter.count(&text[r.clone()]) as u32)
        );
    }

    #[test]
    fn non_additive_counters_are_checked_exactly() {
        let text = "aa bb cc dd";
        // Word estimates say "aa bb cc" is 6 chars; with spaces it is 8.
        for (range, tokens) in split_to_budget(text, 6, &CharCounter) {
            assert!(tokens <= 6, "{:?}", &text[range]);
        }
    }

    #[test]
    fn oversized_word_stays_whole_and_halves_by_characters() {
        let pieces = split_to_budget("abcdefgh ij", 3, &CharCounter);
        assert_eq!(pieces[0].0, 0..8);
        assert_eq!(halves("abcdéfgh"), Some((0..4, 4..9)));
        assert_eq!(halves("a b c"), Some((0..1, 2..5)));
        assert_eq!(halves("é"), None);
    }

    #[test]
    fn takes_from_the_back() {
        let words = Words::new("a b c d e");
        assert_eq!(trailing_words("a b c d e", 2, &WordCounter), 6..9);
        assert_eq!(trailing_words("a b c d e  ", 2, &WordCounter), 6..9);
        assert_eq!(trailing_words("aaaa b c", 3, &CharCounter), 5..8);
        // The words' sum says "b c" fits in 2; with its space it does not.
        assert_eq!(trailing_words("aaaa b c", 2, &CharCounter), 7..8);
        assert_eq!(trailing_words("a bbb", 2, &CharCounter), 0..0);
        assert_eq!(trailing_words(" ", 2, &WordCounter), 0..0);
        assert_eq!(words.span(3, 5), 6..9);
        assert_eq!(words.take(1, 10, &WordCounter), 4);
    }
}
