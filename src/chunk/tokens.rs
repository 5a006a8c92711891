//! Token counting for chunk sizes: the embedding model's tokenizer when one
//! is configured, whitespace-separated words otherwise.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use crate::byteset::{BLOCK, bits_within, scan_blocks};

/// Counts tokens in a piece of text.
pub trait TokenCounter: Send + Sync {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> usize;
    /// A short description for reports ("words", "tokenizer:/path").
    fn describe(&self) -> String;
    /// Whether texts joined by ASCII whitespace count exactly the sum of
    /// their counts. The chunker then sums its pieces' counts for a
    /// chunk instead of counting the rendered chunk again.
    fn is_additive(&self) -> bool {
        false
    }
}

/// Words separated by ASCII whitespace: exactly
/// `text.split_ascii_whitespace().count()`, additive over whitespace joins.
#[derive(Clone, Copy, Debug, Default)]
pub struct WordCounter;

impl TokenCounter for WordCounter {
    fn count(&self, text: &str) -> usize {
        count_words(text.as_bytes())
    }

    fn describe(&self) -> String {
        "words".into()
    }

    fn is_additive(&self) -> bool {
        true
    }
}

/// The bytes `split_ascii_whitespace` splits at: space, tab, newline,
/// carriage return and form feed (not vertical tab).
const ASCII_WHITESPACE: [u8; 5] = *b" \t\n\r\x0c";

/// Words in `bytes`: a word starts at the first byte if that is no space,
/// and wherever a word byte follows a space byte. This runs over every
/// sentence, the chunker's hottest loop, so the text is read 64 bytes at a
/// time, a bit per byte for its spaces (see [`scan_blocks`]), and the word
/// starts of a block are counted in one go. ASCII whitespace bytes never
/// occur inside a multi-byte UTF-8 sequence, so bytes are enough.
fn count_words(bytes: &[u8]) -> usize {
    let mut words = 0;
    // Bit 0 set when the byte before the block is a space; the text
    // opens as if after one.
    let mut space_before = 1u64;
    let _ = scan_blocks(
        bytes,
        (&ASCII_WHITESPACE, 0),
        (&[], 0),
        |start, spaces, _| -> ControlFlow<()> {
            // The bits past the text's end are no space, and start no word.
            let within = bits_within(bytes.len() - start);
            let starts = !spaces & ((spaces << 1) | space_before) & within;
            words += starts.count_ones() as usize;
            space_before = spaces >> (BLOCK - 1);
            ControlFlow::Continue(())
        },
    );
    words
}

/// A Hugging Face `tokenizer.json`, without special tokens, padding or
/// truncation.
pub struct HfTokenCounter {
    tokenizer: tokenizers::Tokenizer,
    path: PathBuf,
}

impl TokenCounter for HfTokenCounter {
    fn count(&self, text: &str) -> usize {
        // Encoding fails only on internal tokenizer errors; fall back to
        // words rather than lose the chunk.
        self.tokenizer
            .encode_fast(text, false)
            .map(|e| e.len())
            .unwrap_or_else(|_| WordCounter.count(text))
    }

    fn describe(&self) -> String {
        format!("tokenizer:{}", self.path.display())
    }
}

/// Why a configured tokenizer could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("tokenizer {name:?} not found (looked for {searched})")]
    NotFound { name: String, searched: String },
    #[error("{path}: cannot load tokenizer: {detail}")]
    Load { path: PathBuf, detail: String },
}

/// Finds a `tokenizer.json` from a setting that is a file, a model
/// directory, or a model name in the cache. `base` resolves relative paths
/// (the manifest's directory).
pub fn resolve_tokenizer(setting: &str, base: Option<&Path>) -> Result<PathBuf, TokenizerError> {
    let mut candidates = Vec::new();
    let given = PathBuf::from(setting);
    if given.is_absolute() {
        candidates.push(given.clone());
    } else {
        if let Some(base) = base {
            candidates.push(base.join(&given));
        }
        candidates.push(given.clone());
        candidates.push(crate::locations::model_cache_dir().join(&given));
    }
    for candidate in &candidates {
        if candidate.is_file() {
            return Ok(candidate.clone());
        }
        let inside = candidate.join("tokenizer.json");
        if inside.is_file() {
            return Ok(inside);
        }
    }
    Err(TokenizerError::NotFound {
        name: setting.to_string(),
        searched: candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Loads the counter a chunking spec asks for.
pub fn load_counter(
    tokenizer: Option<&str>,
    base: Option<&Path>,
) -> Result<Box<dyn TokenCounter>, TokenizerError> {
    let Some(setting) = tokenizer else {
        return Ok(Box::new(WordCounter));
    };
    let path = resolve_tokenizer(setting, base)?;
    let mut tokenizer =
        tokenizers::Tokenizer::from_file(&path).map_err(|e| TokenizerError::Load {
            path: path.clone(),
            detail: e.to_string(),
        })?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| TokenizerError::Load {
            path: path.clone(),
            detail: e.to_string(),
        })?;
    Ok(Box::new(HfTokenCounter { tokenizer, path }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_counter_counts_like_split_ascii_whitespace() {
        for text in [
            "",
            " ",
            "one",
            " one  two\tthree\n\nfour\x0cfive\r",
            "non\u{a0}breaking space é ü",
            "- item\n  - nested",
            "vertical\x0btab",
            &"word ".repeat(40),
            &"ab\n".repeat(50),
            &"x".repeat(130),
        ] {
            assert_eq!(
                WordCounter.count(text),
                text.split_ascii_whitespace().count(),
                "{text:?}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn word_counter_counts_any_text_like_split_ascii_whitespace(
            pieces in proptest::collection::vec(
                proptest::sample::select(&[
                    "a", "word", " ", "  ", "\t", "\n", "\r", "\x0b", "\x0c", "\u{a0}", "\u{e9}",
                    "\u{2003}", "-",
                ][..]),
                0..600,
            )
        ) {
            let text = pieces.concat();
            let words = text.split_ascii_whitespace().count();
            proptest::prop_assert_eq!(WordCounter.count(&text), words);
        }
    }
}
