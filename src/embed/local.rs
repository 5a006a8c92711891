//! The `local` provider: a sentence-transformers directory run in process.
//!
//! A directory holds `config.json` and `model.safetensors` (the BERT
//! encoder), `tokenizer.json`, `1_Pooling/config.json` (mean or CLS
//! pooling) and optionally `sentence_bert_config.json` (the maximum
//! sequence length). Texts are tokenized in parallel, packed into batches
//! of at most `batchTokens` tokens, encoded, pooled and normalised.

use std::path::Path;

use rayon::prelude::*;
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationParams};

use super::bert::{BertModel, Segment};
use super::{EmbedError, Embedder, normalize};
use crate::spec::EmbeddingSpec;

/// How token vectors become one sentence vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    Mean,
    Cls,
    MeanSqrtLen,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

/// A BERT sentence encoder loaded from a directory.
pub struct LocalEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    pooling: Pooling,
    model_id: String,
    query_prefix: String,
    document_prefix: String,
    batch_tokens: usize,
}

impl LocalEmbedder {
    /// Loads a sentence-transformers directory.
    pub fn load(dir: &Path, spec: &EmbeddingSpec) -> Result<Self, EmbedError> {
        let model = BertModel::load(dir)?;
        let pooling = read_pooling(dir)?;

        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| EmbedError::model(&tokenizer_path, e.to_string()))?;
        let configured = read_max_seq_length(dir)?;
        let max_len = spec
            .max_seq_length
            .map(|n| n as usize)
            .or(configured)
            .unwrap_or(512)
            .min(model.max_positions());
        // The tokenizer file may carry padding and truncation settings of
        // its own (all-MiniLM-L6-v2's pads to 128): sequences are packed
        // here, so padding is off, and truncation follows the model.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_len,
                ..Default::default()
            }))
            .map_err(|e| EmbedError::model(&tokenizer_path, e.to_string()))?;
        if tokenizer.get_vocab_size(true) > model.vocab_size() {
            return Err(EmbedError::model(
                &tokenizer_path,
                format!(
                    "tokenizer has {} tokens but the model's vocabulary has {}",
                    tokenizer.get_vocab_size(true),
                    model.vocab_size()
                ),
            ));
        }

        let mut model_id = model_id(&model, &spec.model);
        if !spec.document_prefix.is_empty() {
            // A document prefix changes every vector: cached vectors made
            // without it must not be reused.
            let hash = blake3::hash(spec.document_prefix.as_bytes());
            model_id.push_str(&format!("+prefix{}", &hash.to_hex()[..8]));
        }
        Ok(Self {
            model,
            tokenizer,
            pooling,
            model_id,
            query_prefix: spec.query_prefix.clone(),
            document_prefix: spec.document_prefix.clone(),
            batch_tokens: spec.batch_tokens.max(1) as usize,
        })
    }

    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Embeds `texts`, each with `prefix` put before it.
    fn encode(&self, prefix: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings: Vec<Vec<u32>> = texts
            .par_iter()
            .map(|text| {
                self.tokenizer
                    .encode(format!("{prefix}{text}"), true)
                    .map(|e| e.get_ids().to_vec())
                    .map_err(|e| EmbedError::Tokenizer(e.to_string()))
            })
            .collect::<Result<_, _>>()?;

        // Longest first, so that batches hold similar lengths and the
        // attention work per batch is even; packing means no padding.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].len()));

        // Batches run side by side, one per thread, so a call splits into
        // at least as many batches as there are threads when it can.
        let total: usize = encodings.iter().map(Vec::len).sum();
        let threads = rayon::current_num_threads().max(1);
        let batch_tokens = self.batch_tokens.min(total.div_ceil(threads)).max(1);
        let mut batches: Vec<&[usize]> = Vec::new();
        let mut start = 0;
        while start < order.len() {
            let mut end = start;
            let mut tokens = 0;
            while end < order.len()
                && (end == start || tokens + encodings[order[end]].len() <= batch_tokens)
            {
                tokens += encodings[order[end]].len();
                end += 1;
            }
            batches.push(&order[start..end]);
            start = end;
        }

        let hidden = self.model.hidden_size();
        let encoded: Vec<Vec<(usize, Vec<f32>)>> = batches
            .par_iter()
            .map(|batch| {
                let mut ids = Vec::new();
                let mut segments = Vec::with_capacity(batch.len());
                for &i in batch.iter() {
                    segments.push(Segment {
                        offset: ids.len(),
                        len: encodings[i].len(),
                    });
                    ids.extend_from_slice(&encodings[i]);
                }
                let states = self.model.forward(&ids, &segments);
                batch
                    .iter()
                    .zip(&segments)
                    .map(|(&i, segment)| {
                        let mut v = pool(&states, *segment, hidden, self.pooling);
                        normalize(&mut v);
                        (i, v)
                    })
                    .collect()
            })
            .collect();
        let mut out = vec![Vec::new(); texts.len()];
        for (i, v) in encoded.into_iter().flatten() {
            out[i] = v;
        }
        Ok(out)
    }
}

impl Embedder for LocalEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.model.hidden_size()
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.encode(&self.document_prefix, texts)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.encode(&self.query_prefix, &[text])?;
        Ok(vectors.pop().unwrap_or_default())
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.encode(&self.query_prefix, texts)
    }
}

fn pool(states: &[f32], segment: Segment, hidden: usize, pooling: Pooling) -> Vec<f32> {
    let rows = &states[segment.offset * hidden..(segment.offset + segment.len) * hidden];
    match pooling {
        Pooling::Cls => rows[..hidden].to_vec(),
        Pooling::Mean | Pooling::MeanSqrtLen => {
            let mut v = vec![0f32; hidden];
            for row in rows.chunks_exact(hidden) {
                for (a, b) in v.iter_mut().zip(row) {
                    *a += b;
                }
            }
            let divisor = match pooling {
                Pooling::Mean => segment.len as f32,
                _ => (segment.len as f32).sqrt(),
            };
            for a in &mut v {
                *a /= divisor.max(1.0);
            }
            v
        }
    }
}

fn read_pooling(dir: &Path) -> Result<Pooling, EmbedError> {
    let path = dir.join("1_Pooling").join("config.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        // Plain BERT checkpoints without a pooling module: sentence-
        // transformers defaults to mean pooling for them too.
        return Ok(Pooling::Mean);
    };
    let config: PoolingConfig =
        serde_json::from_str(&text).map_err(|e| EmbedError::model(&path, e.to_string()))?;
    if config.pooling_mode_max_tokens {
        return Err(EmbedError::model(&path, "max pooling is not supported"));
    }
    match (
        config.pooling_mode_cls_token,
        config.pooling_mode_mean_tokens,
        config.pooling_mode_mean_sqrt_len_tokens,
    ) {
        (true, false, false) => Ok(Pooling::Cls),
        (false, true, false) => Ok(Pooling::Mean),
        (false, false, true) => Ok(Pooling::MeanSqrtLen),
        _ => Err(EmbedError::model(
            &path,
            "exactly one of CLS, mean or mean-sqrt-len pooling must be set",
        )),
    }
}

fn read_max_seq_length(dir: &Path) -> Result<Option<usize>, EmbedError> {
    let path = dir.join("sentence_bert_config.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str::<SentenceBertConfig>(&text)
            .map(|c| c.max_seq_length)
            .map_err(|e| EmbedError::model(&path, e.to_string())),
        Err(_) => Ok(None),
    }
}

/// `<name>@<hash>`: the configured model name and the first 12 hex digits
/// of the BLAKE3 hash of its weights, so that different weights under one
/// name never share cached vectors.
fn model_id(model: &BertModel, name: &str) -> String {
    format!("{name}@{}", &model.weights_hash()[..12])
}
