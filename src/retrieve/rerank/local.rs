//! The `local` reranker: a cross-encoder run in process.
//!
//! A sequence-classification model (`config.json`, `model.safetensors` or
//! an ONNX export such as Xenova's `onnx/model.onnx`, `tokenizer.json`)
//! of the BERT family
//! (ms-marco-MiniLM-L-6-v2: one logit, read through the logistic
//! function) or the RoBERTa family (bge-reranker-base: one logit; or two,
//! read through softmax as the second label's probability). Query and
//! passage are encoded as one pair, as the model was trained: the
//! tokenizer's pair template (`[CLS] q [SEP] p [SEP]`, token types 0 and
//! 1; `<s> q </s></s> p </s>`), and the passage is cut to fit
//! `maxLength`, never the query. Pairs are packed into batches of at most
//! `batchTokens` tokens without padding and the batches run side by side,
//! as the embedder's do.

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;
use tokenizers::{Tokenizer, TruncationParams, TruncationStrategy};

use trellis_encoder::files::ModelFiles;

use super::{RerankError, Reranker, sigmoid};
use crate::embed::bert::{BertModel, ClassificationHead, Segment, pack_batches};
use crate::spec::RerankerSpec;

/// A cross-encoder loaded from a directory.
pub struct CrossEncoder {
    model: BertModel,
    head: ClassificationHead,
    /// Cuts the passage only.
    pairs: Tokenizer,
    /// Cuts the longer of the two, for a query that alone fills
    /// `maxLength`.
    long_query: Tokenizer,
    batch_tokens: usize,
    name: String,
}

/// One tokenized pair.
struct Pair {
    ids: Vec<u32>,
    types: Vec<u32>,
}

impl CrossEncoder {
    /// Loads a sequence-classification model: a directory or an ONNX file
    /// (see [`ModelFiles::locate`]).
    pub fn load(path: &Path, spec: &RerankerSpec) -> Result<Self, RerankError> {
        let files = ModelFiles::locate(path)?;
        let dir = files.dir.as_path();
        let (model, head) = BertModel::load_classifier(&files)?;
        if !(1..=2).contains(&head.labels()) {
            return Err(RerankError::Model {
                path: files.weights.clone(),
                reason: format!(
                    "the classification head has {} labels; a reranker has one (a relevance \
                     logit) or two (irrelevant, relevant)",
                    head.labels()
                ),
            });
        }
        let tokenizer_path = dir.join("tokenizer.json");
        let model_error = |reason: String| RerankError::Model {
            path: tokenizer_path.clone(),
            reason,
        };
        let mut pairs =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| model_error(e.to_string()))?;
        if pairs.get_vocab_size(true) > model.vocab_size() {
            return Err(model_error(format!(
                "tokenizer has {} tokens but the model's vocabulary has {}",
                pairs.get_vocab_size(true),
                model.vocab_size()
            )));
        }
        let max_length = (spec.max_length as usize).min(model.max_positions());
        // Pairs are packed, not padded; truncation follows the route.
        pairs.with_padding(None);
        let mut long_query = pairs.clone();
        for (tokenizer, strategy) in [
            (&mut pairs, TruncationStrategy::OnlySecond),
            (&mut long_query, TruncationStrategy::LongestFirst),
        ] {
            tokenizer
                .with_truncation(Some(TruncationParams {
                    max_length,
                    strategy,
                    ..Default::default()
                }))
                .map_err(|e| model_error(e.to_string()))?;
        }
        let label = match spec.model.as_str() {
            "" => dir.file_name().map_or_else(
                || dir.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            name => name.to_string(),
        };
        Ok(Self {
            model,
            head,
            pairs,
            long_query,
            batch_tokens: spec.batch_tokens.max(1) as usize,
            name: format!("local:{label}"),
        })
    }

    /// The head's logits for each (query, passage) pair, in order.
    pub fn logits(&self, query: &str, passages: &[&str]) -> Result<Vec<Vec<f32>>, RerankError> {
        self.run(query, passages, None)
    }

    /// The token ids and types of one pair, as the encoder reads them.
    pub fn encode(&self, query: &str, passage: &str) -> Result<(Vec<u32>, Vec<u32>), RerankError> {
        self.pair(query, passage).map(|p| (p.ids, p.types))
    }

    fn pair(&self, query: &str, passage: &str) -> Result<Pair, RerankError> {
        let encoding = match self.pairs.encode((query, passage), true) {
            Ok(encoding) => encoding,
            // The query alone fills maxLength: nothing of the passage could
            // be kept by cutting the passage only.
            Err(_) => self
                .long_query
                .encode((query, passage), true)
                .map_err(|e| RerankError::Tokenizer(e.to_string()))?,
        };
        Ok(Pair {
            ids: encoding.get_ids().to_vec(),
            types: encoding.get_type_ids().to_vec(),
        })
    }

    /// Runs the pairs in batches; with a deadline, a batch that would
    /// start after it is not run and the call gives up.
    fn run(
        &self,
        query: &str,
        passages: &[&str],
        deadline: Option<Instant>,
    ) -> Result<Vec<Vec<f32>>, RerankError> {
        let pairs: Vec<Pair> = passages
            .par_iter()
            .map(|p| self.pair(query, p))
            .collect::<Result<_, _>>()?;
        let lengths: Vec<usize> = pairs.iter().map(|p| p.ids.len()).collect();
        let batches = pack_batches(&lengths, self.batch_tokens);
        let hidden = self.model.hidden_size();
        let scored: Vec<Option<Vec<Vec<f32>>>> = batches
            .par_iter()
            .map(|batch| {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return None;
                }
                let mut ids = Vec::new();
                let mut types = Vec::new();
                let mut segments = Vec::with_capacity(batch.len());
                for pair in &pairs[batch.clone()] {
                    segments.push(Segment {
                        offset: ids.len(),
                        len: pair.ids.len(),
                    });
                    ids.extend_from_slice(&pair.ids);
                    types.extend_from_slice(&pair.types);
                }
                let states = self.model.forward_typed(&ids, Some(&types), &segments);
                Some(
                    segments
                        .iter()
                        .map(|s| {
                            self.head
                                .logits(&states[s.offset * hidden..(s.offset + s.len) * hidden])
                        })
                        .collect(),
                )
            })
            .collect();
        let mut out = Vec::with_capacity(passages.len());
        for batch in scored {
            match batch {
                Some(logits) => out.extend(logits),
                None => return Err(RerankError::OverBudget),
            }
        }
        Ok(out)
    }
}

impl Reranker for CrossEncoder {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(
        &self,
        query: &str,
        passages: &[&str],
        deadline: Instant,
    ) -> Result<Vec<f32>, RerankError> {
        let logits = self.run(query, passages, Some(deadline))?;
        Ok(logits.iter().map(|l| probability(l)).collect())
    }
}

/// One logit through the logistic function; two through softmax, as the
/// second (relevant) label's probability.
fn probability(logits: &[f32]) -> f32 {
    match logits {
        [relevant] => sigmoid(*relevant),
        [irrelevant, relevant] => sigmoid(relevant - irrelevant),
        _ => 0.0,
    }
}
