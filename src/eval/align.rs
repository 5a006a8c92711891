//! Finding indexed sentences in a dataset's own text.
//!
//! Datasets state relevance in their own coordinates (SciFact's sentence
//! indices, SQuAD's `answer_start`), while the index holds Trellis'
//! sentences of the parsed, cleaned document. Alignment maps each of
//! Trellis' sentences, in document order, to the character range it came
//! from in the dataset's text, comparing letters and digits only so that
//! whitespace, quote and escape differences do not matter.

use std::ops::Range;

/// A dataset text reduced to lower-cased letters and digits, with each
/// kept character's byte offset in the original.
pub struct FoldedText {
    chars: Vec<char>,
    /// Byte offset of each folded character's source character.
    offsets: Vec<usize>,
    /// Byte offset just past it.
    ends: Vec<usize>,
}

impl FoldedText {
    pub fn new(text: &str) -> Self {
        let mut chars = Vec::with_capacity(text.len());
        let mut offsets = Vec::with_capacity(text.len());
        let mut ends = Vec::with_capacity(text.len());
        for (at, c) in text.char_indices() {
            if c.is_alphanumeric() {
                for lower in c.to_lowercase() {
                    chars.push(lower);
                    offsets.push(at);
                    ends.push(at + c.len_utf8());
                }
            }
        }
        Self {
            chars,
            offsets,
            ends,
        }
    }

    /// The byte range of every sentence, `None` for a sentence that cannot
    /// be found. Sentences are searched for in order, each after the
    /// previous one's start; a sentence whose whole text is not found is
    /// placed by its first 24 folded characters.
    pub fn align(&self, sentences: &[&str]) -> Vec<Option<Range<usize>>> {
        let mut cursor = 0usize;
        sentences
            .iter()
            .map(|sentence| {
                let needle = folded_chars(sentence);
                if needle.is_empty() {
                    return None;
                }
                let (start, len) = match find(&self.chars, &needle, cursor) {
                    Some(at) => (at, needle.len()),
                    None => {
                        let head = &needle[..needle.len().min(24)];
                        let at = find(&self.chars, head, cursor)?;
                        (at, head.len())
                    }
                };
                cursor = start + 1;
                Some(self.byte_range(start, len))
            })
            .collect()
    }

    /// The byte ranges of every occurrence of `needle` (compared folded).
    pub fn occurrences(&self, needle: &str) -> Vec<Range<usize>> {
        let needle = folded_chars(needle);
        let mut found = Vec::new();
        let mut from = 0;
        while let Some(at) = find(&self.chars, &needle, from) {
            found.push(self.byte_range(at, needle.len()));
            from = at + 1;
        }
        found
    }

    /// From the first byte of folded character `start` to the end of
    /// character `start + len - 1`.
    fn byte_range(&self, start: usize, len: usize) -> Range<usize> {
        self.offsets[start]..self.ends[start + len - 1]
    }
}

fn folded_chars(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn find(haystack: &[char], needle: &[char], from: usize) -> Option<usize> {
    if needle.is_empty() || from >= haystack.len() {
        return None;
    }
    haystack[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn align(text: &str, sentences: &[&str]) -> Vec<Option<Range<usize>>> {
        FoldedText::new(text).align(sentences)
    }

    #[test]
    fn sentences_map_back_to_their_ranges() {
        let text = "First one here.  Second “one”, too!\n\nThird.";
        let ranges = align(text, &["First one here.", "Second \"one\", too!", "Third."]);
        let got: Vec<&str> = ranges.iter().map(|r| &text[r.clone().unwrap()]).collect();
        // Ranges run from the first to the last letter or digit.
        assert_eq!(got, ["First one here", "Second “one”, too", "Third"]);
    }

    #[test]
    fn repeated_sentences_take_successive_places() {
        let text = "Yes. No. Yes.";
        let ranges = align(text, &["Yes.", "No.", "Yes."]);
        assert_eq!(ranges[0], Some(0..3));
        assert_eq!(ranges[2], Some(9..12));
    }

    #[test]
    fn a_changed_sentence_is_placed_by_its_start() {
        let text = "The quick brown fox jumps over the lazy dog. Next.";
        let ranges = align(
            text,
            &["The quick brown fox jumps over the lazy cat.", "Next."],
        );
        assert_eq!(ranges[0].as_ref().map(|r| r.start), Some(0));
        assert!(ranges[1].is_some());
        assert_eq!(align(text, &["Absent entirely"]), vec![None]);
    }

    #[test]
    fn occurrences_are_found_across_case_and_spacing() {
        let text = "Governing LAW.  governing\nlaw again";
        let found = FoldedText::new(text).occurrences("governing law");
        assert_eq!(found.len(), 2);
        assert_eq!(&text[found[0].clone()], "Governing LAW");
    }
}
