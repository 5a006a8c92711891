//! The `local` provider: a BERT-family embedding model run in process.
//!
//! A model directory holds `config.json`, the weights (`model.safetensors`
//! or an ONNX export, see [`ModelFiles`]) and `tokenizer.json`; a
//! sentence-transformers directory adds `1_Pooling/config.json` (mean or
//! CLS pooling) and `sentence_bert_config.json` (the maximum sequence
//! length). What the directory does not say comes from the model's preset
//! ([`crate::spec::presets`]). Texts are tokenized in parallel, packed into
//! batches of at most `batchTokens` tokens, encoded, pooled and
//! normalised.

use std::ops::Range;
use std::path::Path;

use rayon::prelude::*;
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationParams};

use trellis_encoder::files::ModelFiles;

use super::bert::{BertModel, Segment, pack_batches};
use super::{EmbedError, Embedder, Passage, SpanVectors};
use crate::spec::presets::Preset;
use crate::spec::{EmbeddingPooling, EmbeddingSpec, Quantization};
use crate::vector::normalize;

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

impl From<EmbeddingPooling> for Pooling {
    fn from(pooling: EmbeddingPooling) -> Self {
        match pooling {
            EmbeddingPooling::Mean => Pooling::Mean,
            EmbeddingPooling::Cls => Pooling::Cls,
            EmbeddingPooling::MeanSqrtLen => Pooling::MeanSqrtLen,
        }
    }
}

/// A BERT sentence encoder loaded from a model directory or ONNX file.
pub struct LocalEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    /// The tokenizer without truncation or special tokens' budget: a
    /// passage embedded in context is tokenized whole, then cut into
    /// windows here.
    whole: Tokenizer,
    /// The ids the tokenizer puts before and after a sequence (`[CLS]`,
    /// `[SEP]`).
    specials: (Vec<u32>, Vec<u32>),
    /// Longest sequence encoded, special tokens included.
    max_len: usize,
    pooling: Pooling,
    model_id: String,
    /// [`Embedder::cache_id`]: the model id and the [`Recipe`].
    cache_id: String,
    query_cache_id: String,
    query_prefix: String,
    document_prefix: String,
    batch_tokens: usize,
}

impl LocalEmbedder {
    /// Loads the model at `path`: a model directory or an ONNX file (see
    /// [`ModelFiles::locate`]).
    pub fn load(path: &Path, spec: &EmbeddingSpec) -> Result<Self, EmbedError> {
        let files = ModelFiles::locate(path)?;
        let dir = files.dir.as_path();
        let mut model = BertModel::load(&files)?;
        if spec.quantization == Quantization::Int8 {
            if !super::int8::accelerated() {
                tracing::warn!(
                    model = %path.display(),
                    "embedding.quantization int8: this CPU has no AVX-512 VNNI, \
                     so the int8 encoder runs without its vector kernel, slower than f32"
                );
            }
            model.quantize();
        }
        let preset = Preset::for_model(&spec.model);
        let pooling = match spec.pooling {
            Some(pooling) => pooling.into(),
            None => read_pooling(dir)?
                .or(preset.map(|p| p.pooling.into()))
                // What sentence-transformers does for a plain checkpoint
                // without a pooling module too.
                .unwrap_or(Pooling::Mean),
        };
        let (query_prefix, document_prefix) = spec.prefixes();

        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| EmbedError::model(&tokenizer_path, e.to_string()))?;
        let configured = read_max_seq_length(dir)?;
        let max_len = spec
            .max_seq_length
            .map(|n| n as usize)
            .or(configured)
            .or(preset.map(|p| p.max_seq_length as usize))
            .unwrap_or(512)
            .min(model.max_positions());
        // The tokenizer file may carry padding and truncation settings of
        // its own (all-MiniLM-L6-v2's pads to 128): sequences are packed
        // here, so padding is off, and truncation follows the model.
        tokenizer.with_padding(None);
        let mut whole = tokenizer.clone();
        whole
            .with_truncation(None)
            .map_err(|e| EmbedError::model(&tokenizer_path, e.to_string()))?;
        let specials = tokenizer
            .encode("", true)
            .map(|e| {
                let ids = e.get_ids();
                let front = ids.len().min(1);
                (ids[..front].to_vec(), ids[front..].to_vec())
            })
            .map_err(|e| EmbedError::model(&tokenizer_path, e.to_string()))?;
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
        if spec.quantization == Quantization::Int8 {
            // Int8 vectors are not f32 vectors: they must not share a
            // cache entry or an index with them.
            model_id.push_str("+int8");
        }
        if !document_prefix.is_empty() {
            // A document prefix changes every vector: cached vectors made
            // without it must not be reused.
            let hash = blake3::hash(document_prefix.as_bytes());
            model_id.push_str(&format!("+prefix{}", &hash.to_hex()[..8]));
        }
        let recipe = Recipe {
            max_len,
            pooling,
            tokenizer: hash_file(&tokenizer_path)?,
            config: hash_file(&files.config())?,
        };
        let cache_id = format!("{model_id}~{}", recipe.digest());
        let query_cache_id = format!(
            "{cache_id}#query{}",
            &blake3::hash(query_prefix.as_bytes()).to_hex()[..8]
        );
        Ok(Self {
            model,
            tokenizer,
            whole,
            specials,
            max_len,
            pooling,
            model_id,
            cache_id,
            query_cache_id,
            query_prefix,
            document_prefix,
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
        let lengths: Vec<usize> = order.iter().map(|&i| encodings[i].len()).collect();
        let batches: Vec<&[usize]> = pack_batches(&lengths, self.batch_tokens)
            .into_iter()
            .map(|range| &order[range])
            .collect();

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

impl LocalEmbedder {
    /// Embeds each passage's spans in the passage's context: the passage
    /// is tokenized whole, cut into windows the model can read
    /// ([`plan_windows`]), the windows are encoded in packed batches, and
    /// each span's vector pools its own tokens' states in the window it
    /// stands most central in.
    fn encode_in_context(&self, passages: &[Passage]) -> Result<Vec<SpanVectors>, EmbedError> {
        if self.pooling == Pooling::Cls {
            return Err(EmbedError::Config(format!(
                "{} pools the [CLS] token; embedding sentences in context \
                 (embedding.context) needs a mean-pooling model",
                self.model_id
            )));
        }
        let (front, back) = &self.specials;
        let limit = self.max_len.saturating_sub(front.len() + back.len()).max(1);
        let prefix = self.document_prefix.len();
        let planned: Vec<Planned> = passages
            .par_iter()
            .map(|passage| {
                let encoding = self
                    .whole
                    .encode(format!("{}{}", self.document_prefix, passage.text), false)
                    .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
                let starts: Vec<usize> = encoding.get_offsets().iter().map(|o| o.0).collect();
                let tokens = |byte: usize| starts.partition_point(|&s| s < byte + prefix);
                let spans: Vec<Range<usize>> = passage
                    .spans
                    .iter()
                    .map(|span| tokens(span.start)..tokens(span.end))
                    .collect();
                let windows = plan_windows(starts.len(), &spans, limit);
                Ok(Planned {
                    ids: encoding.get_ids().to_vec(),
                    spans,
                    windows,
                })
            })
            .collect::<Result<_, EmbedError>>()?;

        // Every window of every passage, as (passage, window) in run order.
        let mut sequences: Vec<(usize, usize)> = planned
            .iter()
            .enumerate()
            .flat_map(|(p, planned)| (0..planned.windows.len()).map(move |w| (p, w)))
            .collect();
        let length = |&(p, w): &(usize, usize)| planned[p].windows[w].tokens.len();
        sequences.sort_by_key(|s| std::cmp::Reverse(length(s)));
        let lengths: Vec<usize> = sequences
            .iter()
            .map(|s| length(s) + front.len() + back.len())
            .collect();
        let hidden = self.model.hidden_size();
        let pooled: Vec<Vec<(usize, usize, Vec<f32>)>> = pack_batches(&lengths, self.batch_tokens)
            .par_iter()
            .map(|batch| -> Result<_, EmbedError> {
                let mut ids = Vec::new();
                let mut segments = Vec::with_capacity(batch.len());
                for &(p, w) in &sequences[batch.clone()] {
                    let window = &planned[p].windows[w];
                    let offset = ids.len();
                    ids.extend_from_slice(front);
                    ids.extend_from_slice(&planned[p].ids[window.tokens.clone()]);
                    ids.extend_from_slice(back);
                    segments.push(Segment {
                        offset,
                        len: ids.len() - offset,
                    });
                }
                let states = self.model.forward(&ids, &segments);
                let mut out = Vec::new();
                for (&(p, w), segment) in sequences[batch.clone()].iter().zip(&segments) {
                    let window = &planned[p].windows[w];
                    for &span in &window.owns {
                        let tokens = &planned[p].spans[span];
                        let start = tokens.start.max(window.tokens.start);
                        let end = tokens.end.min(window.tokens.end);
                        // A span without tokens of its own (nothing the
                        // tokenizer keeps) takes its window's mean.
                        if segment.len == 0 {
                            return Err(EmbedError::Tokenizer(
                                "a passage gave no tokens and the tokenizer adds none".into(),
                            ));
                        }
                        let rows = if start < end {
                            // The passage's opening and closing special
                            // tokens go with its first and last sentence,
                            // as they go with a sentence embedded alone:
                            // a passage of one sentence embeds as that
                            // sentence does.
                            let opening = if start == 0 { front.len() } else { 0 };
                            let closing = if end == planned[p].ids.len() {
                                back.len()
                            } else {
                                0
                            };
                            Segment {
                                offset: segment.offset + front.len() + start
                                    - window.tokens.start
                                    - opening,
                                len: end - start + opening + closing,
                            }
                        } else {
                            // The whole sequence, specials included, so
                            // that even an empty passage pools something.
                            *segment
                        };
                        let mut v = pool(&states, rows, hidden, self.pooling);
                        normalize(&mut v);
                        out.push((p, span, v));
                    }
                }
                Ok(out)
            })
            .collect::<Result<_, _>>()?;
        let mut out: Vec<Vec<Vec<f32>>> = passages
            .iter()
            .map(|p| vec![Vec::new(); p.spans.len()])
            .collect();
        for (p, span, v) in pooled.into_iter().flatten() {
            out[p][span] = v;
        }
        Ok(out)
    }
}

/// A passage tokenized: its token ids, each span's token range, and the
/// windows it is encoded in.
struct Planned {
    ids: Vec<u32>,
    spans: Vec<Range<usize>>,
    windows: Vec<Window>,
}

/// A run of a passage's tokens encoded as one sequence, and the spans
/// whose vectors are taken from it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Window {
    tokens: Range<usize>,
    owns: Vec<usize>,
}

/// Cuts a passage of `total` tokens, whose spans cover the token ranges
/// `spans` (in order), into windows of at most `limit` tokens.
///
/// A passage that fits is one window. A longer one gets windows of whole
/// spans, each starting at the first span past the middle of the one
/// before, so that they overlap by about half; a span longer than `limit`
/// is a window alone, cut at `limit`. Each span is owned by the window
/// in which it has the most tokens on its narrower side: the one where it
/// stands most central, with the most context around it.
fn plan_windows(total: usize, spans: &[Range<usize>], limit: usize) -> Vec<Window> {
    if total <= limit || spans.is_empty() {
        return vec![Window {
            tokens: 0..total.min(limit),
            owns: (0..spans.len()).collect(),
        }];
    }
    let mut windows: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let mut first = 0;
    loop {
        let start = if first == 0 { 0 } else { spans[first].start };
        let mut end_span = first;
        while end_span < spans.len() && spans[end_span].end.saturating_sub(start) <= limit {
            end_span += 1;
        }
        end_span = end_span.max(first + 1);
        let end = if end_span == spans.len() {
            total
        } else {
            spans[end_span - 1].end
        }
        .min(start + limit);
        windows.push((start..end, first..end_span));
        if end_span >= spans.len() {
            break;
        }
        let middle = start + (end - start) / 2;
        first = (first + 1..end_span)
            .find(|&s| spans[s].start >= middle)
            .unwrap_or(end_span);
    }
    let mut owner: Vec<Option<(usize, usize)>> = vec![None; spans.len()];
    for (w, (tokens, covered)) in windows.iter().enumerate() {
        for s in covered.clone() {
            let margin = spans[s]
                .start
                .saturating_sub(tokens.start)
                .min(tokens.end.saturating_sub(spans[s].end));
            if owner[s].is_none_or(|(_, best)| margin > best) {
                owner[s] = Some((w, margin));
            }
        }
    }
    let mut planned: Vec<Window> = windows
        .into_iter()
        .map(|(tokens, _)| Window {
            tokens,
            owns: Vec::new(),
        })
        .collect();
    for (s, owner) in owner.into_iter().enumerate() {
        if let Some((w, _)) = owner {
            planned[w].owns.push(s);
        }
    }
    planned.retain(|w| !w.owns.is_empty());
    planned
}

impl Embedder for LocalEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn cache_id(&self) -> String {
        self.cache_id.clone()
    }

    fn query_cache_id(&self) -> String {
        self.query_cache_id.clone()
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

    fn embed_in_context(&self, passages: &[Passage]) -> Result<Vec<SpanVectors>, EmbedError> {
        self.encode_in_context(passages)
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

/// The pooling a sentence-transformers directory names; `None` without a
/// pooling module (plain checkpoints, ONNX exports).
fn read_pooling(dir: &Path) -> Result<Option<Pooling>, EmbedError> {
    let path = dir.join("1_Pooling").join("config.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
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
        (true, false, false) => Ok(Some(Pooling::Cls)),
        (false, true, false) => Ok(Some(Pooling::Mean)),
        (false, false, true) => Ok(Some(Pooling::MeanSqrtLen)),
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

/// What turns a text into a vector besides the weights (which the model
/// id names) and the document prefix and quantization (which it marks):
/// the input length (`embedding.maxSeqLength`, or the directory's), the
/// pooling (`1_Pooling/config.json`), the tokenizer (`tokenizer.json`) and
/// the architecture's settings (`config.json`). Every vector is
/// L2-normalised, the same in every recipe; a change to that would change
/// [`Recipe::VERSION`]. The context mode (`embedding.context`) keys each
/// cached span itself ([`super::cache::EmbeddingCache::embed_in_context`]).
struct Recipe {
    max_len: usize,
    pooling: Pooling,
    tokenizer: blake3::Hash,
    config: blake3::Hash,
}

impl Recipe {
    /// Bumped when the encoding itself changes (normalisation, how a long
    /// input is cut), so that no vector made the old way is reused.
    const VERSION: u32 = 1;

    /// 12 hex digits of the BLAKE3 hash of every part.
    fn digest(&self) -> String {
        let mut hash = blake3::Hasher::new();
        hash.update(&Self::VERSION.to_le_bytes());
        hash.update(&(self.max_len as u64).to_le_bytes());
        hash.update(format!("{:?}", self.pooling).as_bytes());
        hash.update(b"l2-normalised");
        hash.update(self.tokenizer.as_bytes());
        hash.update(self.config.as_bytes());
        hash.finalize().to_hex()[..12].to_string()
    }
}

fn hash_file(path: &Path) -> Result<blake3::Hash, EmbedError> {
    std::fs::read(path)
        .map(|bytes| blake3::hash(&bytes))
        .map_err(|e| EmbedError::model(path, e.to_string()))
}

/// `<name>@<hash>`: the configured model name and the first 12 hex digits
/// of the BLAKE3 hash of its weights, so that different weights under one
/// name never share cached vectors.
fn model_id(model: &BertModel, name: &str) -> String {
    format!("{name}@{}", &model.weights_hash()[..12])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` spans of `len` tokens with one token between them.
    fn spans(n: usize, len: usize) -> Vec<Range<usize>> {
        (0..n).map(|i| i * (len + 1)..i * (len + 1) + len).collect()
    }

    #[test]
    fn a_passage_that_fits_is_one_window() {
        let spans = spans(3, 10);
        let windows = plan_windows(32, &spans, 50);
        assert_eq!(
            windows,
            vec![Window {
                tokens: 0..32,
                owns: vec![0, 1, 2]
            }]
        );
    }

    #[test]
    fn long_passages_get_overlapping_windows_owning_each_span_once() {
        let spans = spans(20, 10);
        let total = spans.last().map_or(0, |s| s.end);
        let windows = plan_windows(total, &spans, 50);
        assert!(windows.len() > 4 && windows.len() < 12, "{windows:?}");
        let mut owned: Vec<usize> = windows.iter().flat_map(|w| w.owns.clone()).collect();
        owned.sort_unstable();
        assert_eq!(owned, (0..20).collect::<Vec<_>>());
        for window in &windows {
            assert!(window.tokens.len() <= 50, "{window:?}");
            for &s in &window.owns {
                assert!(window.tokens.start <= spans[s].start && spans[s].end <= window.tokens.end);
            }
        }
        // Windows overlap: consecutive ones share tokens.
        for pair in windows.windows(2) {
            assert!(pair[1].tokens.start < pair[0].tokens.end, "{pair:?}");
        }
        // A span in the middle has context on both sides.
        let middle = windows.iter().find(|w| w.owns.contains(&10)).unwrap();
        assert!(middle.tokens.start < spans[9].start && spans[11].end <= middle.tokens.end);
    }

    #[test]
    fn a_span_longer_than_the_limit_is_cut() {
        let spans = vec![0..10, 11..91, 92..100];
        let windows = plan_windows(100, &spans, 50);
        let long = windows.iter().find(|w| w.owns.contains(&1)).unwrap();
        assert_eq!(long.tokens, 11..61);
        let mut owned: Vec<usize> = windows.iter().flat_map(|w| w.owns.clone()).collect();
        owned.sort_unstable();
        assert_eq!(owned, vec![0, 1, 2]);
    }
}
