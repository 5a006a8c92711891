//! Counting a prompt's tokens: with the model's own tokenizer when the
//! route names its `tokenizer.json`, else by a stated estimate that errs
//! on the high side, so that a prompt fitted by it fits the model.

use std::path::Path;

use super::GenerateError;

use crate::retrieve::estimate_tokens as estimate;

/// Tokens a chat message costs beyond its text (role markers and turn
/// delimiters of the chat template), in either count.
pub const MESSAGE_OVERHEAD: usize = 8;

/// How the tokens of a text are counted.
pub enum TokenCounter {
    /// The model's tokenizer.
    Tokenizer(Box<tokenizers::Tokenizer>),
    /// [`crate::retrieve::ESTIMATE_CHARS_PER_TOKEN`] characters to a token,
    /// rounded up.
    Estimate,
}

impl TokenCounter {
    /// The tokenizer in a Hugging Face `tokenizer.json`.
    pub fn from_file(path: &Path) -> Result<Self, GenerateError> {
        let tokenizer = tokenizers::Tokenizer::from_file(path).map_err(|e| {
            GenerateError::Config(format!("generation.tokenizer {}: {e}", path.display()))
        })?;
        Ok(TokenCounter::Tokenizer(Box::new(tokenizer)))
    }

    /// `tokenizer` or `estimate`.
    pub fn kind(&self) -> &'static str {
        match self {
            TokenCounter::Tokenizer(_) => "tokenizer",
            TokenCounter::Estimate => "estimate",
        }
    }

    /// The tokens of `text`, without special tokens. A text the tokenizer
    /// fails on is estimated.
    pub fn count(&self, text: &str) -> usize {
        match self {
            TokenCounter::Tokenizer(tokenizer) => match tokenizer.encode(text, false) {
                Ok(encoding) => encoding.len(),
                Err(_) => estimate(text),
            },
            TokenCounter::Estimate => estimate(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_rounds_up() {
        let counter = TokenCounter::Estimate;
        assert_eq!(counter.count(""), 0);
        assert_eq!(counter.count("ab"), 1);
        assert_eq!(counter.count("abcd"), 2);
        // Characters, not bytes.
        assert_eq!(counter.count("ééé"), 1);
    }
}
