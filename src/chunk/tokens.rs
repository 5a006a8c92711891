//! Token counting for chunk sizes: the embedding model's tokenizer when one
//! is configured, whitespace-separated words otherwise.

use std::path::{Path, PathBuf};

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
        // This runs over every sentence and every chunk: it is the
        // chunker's hottest loop. Word starts (a word byte after a space
        // byte) are counted per 64-byte block in two branch-free passes the
        // compiler vectorises; padding counts as space, so a short last
        // block needs no special case. ASCII whitespace bytes never occur
        // inside a multi-byte UTF-8 sequence, so bytes are enough.
        const BLOCK: usize = 64;
        fn is_space(byte: u8) -> u8 {
            // ' ', '\t', '\n', '\r' and form feed; not vertical tab (11).
            u8::from((byte == b' ') | ((byte.wrapping_sub(9) < 5) & (byte != 11)))
        }
        let mut words = 0;
        let mut prev_space = 1u8;
        for block in text.as_bytes().chunks(BLOCK) {
            let mut spaces = [1u8; BLOCK];
            for (space, &byte) in spaces.iter_mut().zip(block) {
                *space = is_space(byte);
            }
            // At most 33 starts in a block: fits a u8.
            let mut starts = prev_space & (spaces[0] ^ 1);
            for (prev, next) in spaces.iter().zip(&spaces[1..]) {
                starts += prev & (next ^ 1);
            }
            words += usize::from(starts);
            prev_space = spaces
                .get(block.len().wrapping_sub(1))
                .copied()
                .unwrap_or(1);
        }
        words
    }

    fn describe(&self) -> String {
        "words".into()
    }

    fn is_additive(&self) -> bool {
        true
    }
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
}
