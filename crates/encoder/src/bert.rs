//! A BERT encoder forward pass over packed sequences.
//!
//! Sentences in a batch are packed end to end into one token matrix instead
//! of being padded to the longest one: every linear layer is then a single
//! matrix product over all tokens of the batch (no work wasted on padding),
//! and only attention looks at sequence boundaries. The matrix products run
//! on the `matrixmultiply` crate's kernels (runtime-dispatched AVX-512 or
//! AVX2/FMA), the rest is plain loops.
//!
//! One forward pass runs on the calling thread: the embedder runs whole
//! batches side by side, one per core, which keeps every core busy without
//! the fork-join and spin-wait costs of splitting each matrix product and
//! each element-wise pass across threads.
//!
//! Weights are read from a `model.safetensors` in the Hugging Face BERT
//! layout (`embeddings.*`, `encoder.layer.N.*`, optionally prefixed with
//! `bert.` or `roberta.`), in f32, f16 or bf16, or from an ONNX export of
//! the same model, whose graph gives the anonymous dense weights their
//! names back ([`crate::onnx`]). RoBERTa-family encoders
//! (`roberta`, `xlm-roberta`: bge-reranker-base and its kin) are the same
//! network with position ids that start after the padding id; a
//! sequence-classification checkpoint also carries its head
//! ([`ClassificationHead`]), which cross-encoders score pairs with.

use std::path::Path;

use rayon::prelude::*;
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::ModelError;
use crate::files::{ModelFiles, WeightsFormat};
use crate::int8::Int8Matrix;
use crate::onnx::{self, Element};
use crate::packed::PackedMatrix;

/// The fields of a Hugging Face `config.json` the encoder needs.
#[derive(Clone, Debug, Deserialize)]
pub struct BertConfig {
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default)]
    pub model_type: Option<String>,
    /// The padding token's id: RoBERTa-family position ids start after it.
    #[serde(default = "default_pad")]
    pub pad_token_id: usize,
}

fn default_pad() -> usize {
    1
}

fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_act() -> String {
    "gelu".to_string()
}

/// A dense layer, `y = x·Wᵀ + b`. `W` is read in PyTorch's `[out, in]`
/// row-major layout and kept in the form its product runs on
/// ([`Weights`]).
struct Linear {
    weights: Weights,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

/// A dense layer's weights, in the form its product runs on.
enum Weights {
    /// PyTorch's `[out, in]` layout, multiplied through `sgemm` or, for a
    /// few tokens, read where they lie ([`few_rows`]).
    Rows(Vec<f32>),
    /// Packed once for the AVX-512 kernel ([`BertModel::pack`]).
    Packed(PackedMatrix),
    /// Quantized to int8 ([`BertModel::quantize`]).
    Int8(Int8Matrix),
}

impl Weights {
    /// The weights in PyTorch's layout; `None` once quantized.
    fn rows(&self) -> Option<std::borrow::Cow<'_, [f32]>> {
        match self {
            Weights::Rows(w) => Some(std::borrow::Cow::Borrowed(w)),
            Weights::Packed(p) => Some(std::borrow::Cow::Owned(p.unpack())),
            Weights::Int8(_) => None,
        }
    }
}

struct LayerNorm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

struct Layer {
    /// Query, key and value projections fused into one `[3H, H]` matrix.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The loaded encoder.
pub struct BertModel {
    config: BertConfig,
    /// Position id of a sequence's first token: 0 for BERT, the padding
    /// id + 1 for the RoBERTa family.
    position_offset: usize,
    word_embeddings: Vec<f32>,
    position_embeddings: Vec<f32>,
    token_type_embeddings: Vec<f32>,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
    eps: f32,
    activation: Activation,
    /// BLAKE3 of the weights file, in hex.
    weights_hash: String,
}

/// The encoder families this forward pass runs.
#[derive(Clone, Copy)]
enum Family {
    Bert,
    /// `roberta`, `xlm-roberta`: position ids offset by the padding id.
    Roberta,
}

/// A sequence-classification head: the first token's final state through
/// a dense layer and tanh, then a projection to the labels' logits. BERT
/// calls the first layer its pooler (`pooler.dense`, then `classifier`),
/// RoBERTa its classification head (`classifier.dense`, then
/// `classifier.out_proj`); the arithmetic is the same.
pub struct ClassificationHead {
    dense: Linear,
    out: Linear,
}

impl ClassificationHead {
    fn read(reader: &TensorReader<'_>, family: Family, hidden: usize) -> Result<Self, ModelError> {
        let (dense, out) = match family {
            Family::Bert => ("pooler.dense", "classifier"),
            Family::Roberta => ("classifier.dense", "classifier.out_proj"),
        };
        let dense = reader.linear(dense, hidden, hidden)?;
        let labels = reader.rows(&format!("{out}.weight"), hidden)?;
        let out = reader.linear(out, hidden, labels)?;
        Ok(Self { dense, out })
    }

    /// How many logits each sequence gets.
    pub fn labels(&self) -> usize {
        self.out.outputs
    }

    /// The logits of the sequence whose final states are `states`
    /// (`[len, hidden]`, from [`BertModel::forward_typed`]), read off its
    /// first token (`[CLS]`, `<s>`).
    pub fn logits(&self, states: &[f32]) -> Vec<f32> {
        let first = &states[..self.dense.inputs];
        let mut pooled = vec![0f32; self.dense.outputs];
        self.dense.forward(first, 1, &mut pooled);
        for x in &mut pooled {
            *x = x.tanh();
        }
        let mut logits = vec![0f32; self.out.outputs];
        self.out.forward(&pooled, 1, &mut logits);
        logits
    }
}

#[derive(Clone, Copy)]
enum Activation {
    /// The exact, erf-based GELU of BERT's `"gelu"`.
    Gelu,
    /// The tanh approximation (`"gelu_new"`, `"gelu_pytorch_tanh"`).
    GeluTanh,
    Relu,
}

/// One packed sequence: its token ids' offset in the batch and length.
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    pub offset: usize,
    pub len: usize,
}

/// Cuts inputs of `lengths` tokens, in the order given, into consecutive
/// batches of at most `batch_tokens` tokens (an input longer than that
/// makes a batch alone). Batches run side by side, one per thread, so the
/// bound is lowered until there are at least as many batches as threads
/// when the inputs allow.
pub fn pack_batches(lengths: &[usize], batch_tokens: usize) -> Vec<std::ops::Range<usize>> {
    let total: usize = lengths.iter().sum();
    let threads = rayon::current_num_threads().max(1);
    let batch_tokens = batch_tokens.min(total.div_ceil(threads)).max(1);
    let mut batches = Vec::new();
    let mut start = 0;
    while start < lengths.len() {
        let mut end = start;
        let mut tokens = 0;
        while end < lengths.len() && (end == start || tokens + lengths[end] <= batch_tokens) {
            tokens += lengths[end];
            end += 1;
        }
        batches.push(start..end);
        start = end;
    }
    batches
}

impl BertModel {
    /// Loads the model's `config.json` and weights.
    pub fn load(files: &ModelFiles) -> Result<Self, ModelError> {
        Ok(Self::load_parts(files, false)?.0)
    }

    /// Loads a sequence-classification checkpoint
    /// (`BertForSequenceClassification`, `XLMRobertaForSequenceClassification`):
    /// the encoder and its head.
    pub fn load_classifier(files: &ModelFiles) -> Result<(Self, ClassificationHead), ModelError> {
        let (model, head) = Self::load_parts(files, true)?;
        let head = head.ok_or_else(|| ModelError::new(&files.weights, "no classification head"))?;
        Ok((model, head))
    }

    fn load_parts(
        files: &ModelFiles,
        with_head: bool,
    ) -> Result<(Self, Option<ClassificationHead>), ModelError> {
        let config_path = files.config();
        let config_text = std::fs::read_to_string(&config_path)
            .map_err(|e| ModelError::new(&config_path, e.to_string()))?;
        let config: BertConfig = serde_json::from_str(&config_text)
            .map_err(|e| ModelError::new(&config_path, e.to_string()))?;
        let family = match config.model_type.as_deref() {
            None | Some("bert") => Family::Bert,
            Some("roberta" | "xlm-roberta") => Family::Roberta,
            Some(kind) => {
                return Err(ModelError::new(
                    &config_path,
                    format!(
                        "model_type {kind:?} is not supported; only BERT and RoBERTa-family \
                         (roberta, xlm-roberta) encoders are"
                    ),
                ));
            }
        };
        let position_offset = match family {
            Family::Bert => 0,
            Family::Roberta => config.pad_token_id + 1,
        };
        if position_offset >= config.max_position_embeddings {
            return Err(ModelError::new(
                &config_path,
                "pad_token_id leaves no position embeddings",
            ));
        }
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            return Err(ModelError::new(
                &config_path,
                "hidden_size is not a multiple of num_attention_heads".to_string(),
            ));
        }
        let activation = match config.hidden_act.as_str() {
            "gelu" => Activation::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" => Activation::GeluTanh,
            "relu" => Activation::Relu,
            other => {
                return Err(ModelError::new(
                    &config_path,
                    format!("hidden_act {other:?} is not supported"),
                ));
            }
        };

        let weights_path = &files.weights;
        let file = std::fs::File::open(weights_path)
            .map_err(|e| ModelError::new(weights_path, e.to_string()))?;
        // SAFETY: the map is read-only and dropped before this function
        // returns (the ONNX graph that shares it too); every tensor is
        // copied out of it.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|e| ModelError::new(weights_path, e.to_string()))?;
        let weights_hash = blake3::hash(&map).to_hex().to_string();
        let source = match files.format {
            WeightsFormat::Safetensors => Source::Safetensors(
                SafeTensors::deserialize(&map)
                    .map_err(|e| ModelError::new(weights_path, e.to_string()))?,
            ),
            WeightsFormat::Onnx => Source::Onnx(onnx::Graph::decode(
                bytes::Bytes::from_owner(map),
                weights_path,
            )?),
        };
        let prefix = ["bert.", "roberta."]
            .into_iter()
            .find(|p| source.names().any(|n| n.starts_with(p)))
            .unwrap_or("");
        let reader = TensorReader {
            source: &source,
            path: weights_path,
            prefix,
        };

        let h = config.hidden_size;
        let i = config.intermediate_size;
        let word_embeddings = reader.matrix("embeddings.word_embeddings.weight", None, h)?;
        let position_embeddings = reader.matrix(
            "embeddings.position_embeddings.weight",
            Some(config.max_position_embeddings),
            h,
        )?;
        let token_type_embeddings = reader.matrix(
            "embeddings.token_type_embeddings.weight",
            Some(config.type_vocab_size),
            h,
        )?;
        let embeddings_norm = reader.layer_norm("embeddings.LayerNorm", h)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for n in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{n}");
            let q = reader.linear(&format!("{p}.attention.self.query"), h, h)?;
            let k = reader.linear(&format!("{p}.attention.self.key"), h, h)?;
            let v = reader.linear(&format!("{p}.attention.self.value"), h, h)?;
            let rows = |linear: &Linear| linear.weights.rows().map(|w| w.into_owned());
            let (Some(q_rows), Some(k_rows), Some(v_rows)) = (rows(&q), rows(&k), rows(&v)) else {
                unreachable!("layers are read in PyTorch's layout");
            };
            let qkv = Linear {
                weights: Weights::Rows([q_rows, k_rows, v_rows].concat()),
                bias: [q.bias, k.bias, v.bias].concat(),
                inputs: h,
                outputs: 3 * h,
            };
            layers.push(Layer {
                qkv,
                attention_out: reader.linear(&format!("{p}.attention.output.dense"), h, h)?,
                attention_norm: reader.layer_norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                intermediate: reader.linear(&format!("{p}.intermediate.dense"), h, i)?,
                output: reader.linear(&format!("{p}.output.dense"), i, h)?,
                output_norm: reader.layer_norm(&format!("{p}.output.LayerNorm"), h)?,
            });
        }
        let head = match with_head {
            false => None,
            true => Some(ClassificationHead::read(&reader, family, h)?),
        };
        let mut model = Self {
            eps: config.layer_norm_eps as f32,
            position_offset,
            config,
            word_embeddings,
            position_embeddings,
            token_type_embeddings,
            embeddings_norm,
            layers,
            activation,
            weights_hash,
        };
        if crate::packed::available() {
            model.pack();
        }
        Ok((model, head))
    }

    /// The encoder layers' dense layers, for changing their weights' form.
    fn dense_layers(&mut self) -> impl Iterator<Item = &mut Linear> {
        self.layers.iter_mut().flat_map(|layer| {
            [
                &mut layer.qkv,
                &mut layer.attention_out,
                &mut layer.intermediate,
                &mut layer.output,
            ]
        })
    }

    /// Packs the encoder layers' f32 weights for the AVX-512 kernel (see
    /// [`crate::packed`]); done at load on CPUs that have it.
    fn pack(&mut self) {
        for linear in self.dense_layers() {
            if let Weights::Rows(w) = &linear.weights {
                linear.weights =
                    Weights::Packed(PackedMatrix::pack(w, linear.inputs, linear.outputs));
            }
        }
    }

    /// Quantizes the encoder layers' dense weights to int8 (see
    /// [`crate::int8`]); the f32 weights are dropped. Embeddings, layer
    /// norms and any classification head stay f32.
    pub fn quantize(&mut self) {
        for linear in self.dense_layers() {
            if let Some(rows) = linear.weights.rows() {
                let quantized = Int8Matrix::quantize(&rows, linear.inputs, linear.outputs);
                linear.weights = Weights::Int8(quantized);
            }
        }
    }

    /// BLAKE3 of the weights file, in hex: identifies the weights whatever
    /// the directory is called.
    pub fn weights_hash(&self) -> &str {
        &self.weights_hash
    }

    pub fn hidden_size(&self) -> usize {
        self.config.hidden_size
    }

    /// The longest sequence the position embeddings cover.
    pub fn max_positions(&self) -> usize {
        self.config.max_position_embeddings - self.position_offset
    }

    pub fn vocab_size(&self) -> usize {
        self.word_embeddings.len() / self.config.hidden_size
    }

    /// Runs the encoder over packed sequences and returns the last hidden
    /// state, `[ids.len(), hidden]` row-major. Every id must be below
    /// [`Self::vocab_size`] and every segment no longer than
    /// [`Self::max_positions`]; the caller (the tokenizer) guarantees both.
    /// Every token has token type 0.
    pub fn forward(&self, ids: &[u32], segments: &[Segment]) -> Vec<f32> {
        self.forward_typed(ids, None, segments)
    }

    /// [`Self::forward`] with a token type per token (`types`, as long as
    /// `ids`): a cross-encoder's query is type 0, its passage type 1. A
    /// type the model has no embedding for (RoBERTa has one type) counts
    /// as its last.
    pub fn forward_typed(
        &self,
        ids: &[u32],
        types: Option<&[u32]>,
        segments: &[Segment],
    ) -> Vec<f32> {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::cpu::cpu().avx2_fma() {
                // SAFETY: the CPU supports AVX2 and FMA, checked just above.
                return unsafe { self.forward_wide(ids, types, segments) };
            }
        }
        self.forward_steps(ids, types, segments)
    }

    /// [`Self::forward_typed`] built for AVX2 and FMA. The dense layers
    /// pick their own kernels; this is for everything between them (layer
    /// norms, GELU, attention, residuals), which the default target would
    /// build for 128-bit SSE2, at a quarter or half the width.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn forward_wide(
        &self,
        ids: &[u32],
        types: Option<&[u32]>,
        segments: &[Segment],
    ) -> Vec<f32> {
        self.forward_steps(ids, types, segments)
    }

    /// The forward pass; inlined into each build of it.
    #[inline(always)]
    fn forward_steps(&self, ids: &[u32], types: Option<&[u32]>, segments: &[Segment]) -> Vec<f32> {
        let h = self.config.hidden_size;
        let last_type = self.config.type_vocab_size.saturating_sub(1);
        let tokens = ids.len();
        let mut x = vec![0f32; tokens * h];
        for segment in segments {
            for pos in 0..segment.len {
                let t = segment.offset + pos;
                let row = &mut x[t * h..(t + 1) * h];
                let word = ids[t] as usize;
                let w = &self.word_embeddings[word * h..(word + 1) * h];
                let position = pos + self.position_offset;
                let p = &self.position_embeddings[position * h..(position + 1) * h];
                let kind = types.map_or(0, |types| (types[t] as usize).min(last_type));
                let tt = &self.token_type_embeddings[kind * h..(kind + 1) * h];
                for (j, out) in row.iter_mut().enumerate() {
                    *out = w[j] + p[j] + tt[j];
                }
            }
        }
        layer_norm_rows(&mut x, &self.embeddings_norm, self.eps);

        let mut qkv = vec![0f32; tokens * 3 * h];
        let mut context = vec![0f32; tokens * h];
        let mut attended = vec![0f32; tokens * h];
        let mut intermediate = vec![0f32; tokens * self.config.intermediate_size];
        for layer in &self.layers {
            layer.qkv.forward(&x, tokens, &mut qkv);
            attention(
                &qkv,
                &mut context,
                segments,
                h,
                self.config.num_attention_heads,
            );
            layer.attention_out.forward(&context, tokens, &mut attended);
            add_rows(&mut attended, &x);
            layer_norm_rows(&mut attended, &layer.attention_norm, self.eps);

            layer
                .intermediate
                .forward(&attended, tokens, &mut intermediate);
            activate(&mut intermediate, self.activation);
            layer.output.forward(&intermediate, tokens, &mut x);
            add_rows(&mut x, &attended);
            layer_norm_rows(&mut x, &layer.output_norm, self.eps);
        }
        x
    }
}

/// Where the weights are read from.
enum Source<'a> {
    Safetensors(SafeTensors<'a>),
    Onnx(onnx::Graph),
}

impl Source<'_> {
    fn names(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match self {
            Source::Safetensors(tensors) => Box::new(tensors.iter().map(|(name, _)| name)),
            Source::Onnx(graph) => Box::new(graph.names()),
        }
    }

    /// The tensor `name`'s shape and values; `Ok(None)` when missing.
    fn read(&self, name: &str, path: &Path) -> Result<Option<onnx::Tensor>, ModelError> {
        match self {
            Source::Safetensors(tensors) => {
                let Ok(view) = tensors.tensor(name) else {
                    return Ok(None);
                };
                let element = match view.dtype() {
                    Dtype::F32 => Element::F32,
                    Dtype::F16 => Element::F16,
                    Dtype::BF16 => Element::BF16,
                    other => {
                        return Err(ModelError::new(
                            path,
                            format!("tensor {name} has unsupported dtype {other:?}"),
                        ));
                    }
                };
                Ok(Some(onnx::Tensor {
                    shape: view.shape().to_vec(),
                    values: decode(element, view.data()),
                }))
            }
            Source::Onnx(graph) => graph.tensor(name, path),
        }
    }
}

/// Little-endian floats of `element` to f32.
pub(crate) fn decode(element: Element, bytes: &[u8]) -> Vec<f32> {
    match element {
        Element::F32 => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Element::F16 => bytes
            .chunks_exact(2)
            .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
            .collect(),
        Element::BF16 => bytes
            .chunks_exact(2)
            .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
            .collect(),
    }
}

/// Reads named tensors, checking shapes.
struct TensorReader<'a> {
    source: &'a Source<'a>,
    path: &'a Path,
    prefix: &'static str,
}

impl TensorReader<'_> {
    fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>, ModelError> {
        let (shape, data) = self.read(name)?;
        if shape.iter().product::<usize>() != len {
            return Err(self.shape_error(name, &shape, &[len]));
        }
        Ok(data)
    }

    /// The rows of a `[rows, cols]` matrix (a head's label count).
    fn rows(&self, name: &str, cols: usize) -> Result<usize, ModelError> {
        let (shape, _) = self.read(name)?;
        match shape[..] {
            [rows, c] if c == cols && rows > 0 => Ok(rows),
            _ => Err(self.shape_error(name, &shape, &[0, cols])),
        }
    }

    /// A `[rows, cols]` matrix; `rows` unchecked when `None`.
    fn matrix(&self, name: &str, rows: Option<usize>, cols: usize) -> Result<Vec<f32>, ModelError> {
        let (shape, data) = self.read(name)?;
        let ok = shape.len() == 2 && shape[1] == cols && rows.is_none_or(|r| shape[0] >= r);
        if !ok {
            return Err(self.shape_error(name, &shape, &[rows.unwrap_or(0), cols]));
        }
        Ok(data)
    }

    fn linear(&self, name: &str, inputs: usize, outputs: usize) -> Result<Linear, ModelError> {
        let weight = self.matrix(&format!("{name}.weight"), Some(outputs), inputs)?;
        if weight.len() != inputs * outputs {
            return Err(ModelError::new(
                self.path,
                format!(
                    "{name}.weight has {} values, expected {outputs}×{inputs}",
                    weight.len()
                ),
            ));
        }
        Ok(Linear {
            weights: Weights::Rows(weight),
            bias: self.vector(&format!("{name}.bias"), outputs)?,
            inputs,
            outputs,
        })
    }

    fn layer_norm(&self, name: &str, len: usize) -> Result<LayerNorm, ModelError> {
        // Older checkpoints name the parameters gamma/beta.
        let gamma = self
            .vector(&format!("{name}.weight"), len)
            .or_else(|_| self.vector(&format!("{name}.gamma"), len))?;
        let beta = self
            .vector(&format!("{name}.bias"), len)
            .or_else(|_| self.vector(&format!("{name}.beta"), len))?;
        Ok(LayerNorm { gamma, beta })
    }

    fn read(&self, name: &str) -> Result<(Vec<usize>, Vec<f32>), ModelError> {
        let full = format!("{}{name}", self.prefix);
        let tensor = match self.source.read(&full, self.path)? {
            Some(tensor) => tensor,
            None => self
                .source
                .read(name, self.path)?
                .ok_or_else(|| ModelError::new(self.path, format!("tensor {full} is missing")))?,
        };
        Ok((tensor.shape, tensor.values))
    }

    fn shape_error(&self, name: &str, got: &[usize], expected: &[usize]) -> ModelError {
        ModelError::new(
            self.path,
            format!("tensor {name} has shape {got:?}, expected {expected:?}"),
        )
    }
}

fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let value = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise it.
            let shift = m.leading_zeros() - 21;
            let m = (m << shift) & 0x3ff;
            sign | ((127 - 15 + 1 - shift) << 23) | (m << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(value)
}

/// Most tokens a forward pass multiplies by reading the weights directly
/// ([`few_rows`]) instead of through `sgemm`. `sgemm` copies every weight
/// matrix into packed panels on each call: over thousands of tokens that
/// copy is nothing, but for one short query (a dozen tokens) it costs more
/// than the arithmetic, since it reads and writes every weight of the
/// model once more.
const FEW_ROWS: usize = 32;

impl Linear {
    /// `out[tokens, outputs] = x[tokens, inputs] · Wᵀ + b`.
    fn forward(&self, x: &[f32], tokens: usize, out: &mut [f32]) {
        assert_eq!(x.len(), tokens * self.inputs);
        let out = &mut out[..tokens * self.outputs];
        for row in out.chunks_exact_mut(self.outputs) {
            row.copy_from_slice(&self.bias);
        }
        if tokens == 0 {
            return;
        }
        match &self.weights {
            Weights::Int8(weights) => weights.multiply_add(x, tokens, out, FEW_ROWS),
            Weights::Packed(weights) => weights.multiply_add(x, tokens, out),
            Weights::Rows(weights) if tokens <= FEW_ROWS => few_rows(x, weights, self.inputs, out),
            Weights::Rows(weights) => {
                through_sgemm(x, weights, tokens, self.inputs, self.outputs, out)
            }
        }
    }
}

/// `out += x · Wᵀ` through `sgemm` (which packs both operands).
fn through_sgemm(
    x: &[f32],
    weight: &[f32],
    tokens: usize,
    inputs: usize,
    outputs: usize,
    out: &mut [f32],
) {
    assert_eq!(weight.len(), inputs * outputs);
    assert!(x.len() >= tokens * inputs && out.len() >= tokens * outputs);
    // SAFETY: the pointers cover exactly the [m, k], [k, n] and [m, n]
    // matrices described by the strides: x is tokens×inputs row-major,
    // W is outputs×inputs row-major read as its transpose (row stride
    // 1, column stride `inputs`), out is tokens×outputs row-major.
    unsafe {
        matrixmultiply::sgemm(
            tokens,
            inputs,
            outputs,
            1.0,
            x.as_ptr(),
            inputs as isize,
            1,
            weight.as_ptr(),
            1,
            inputs as isize,
            1.0,
            out.as_mut_ptr(),
            outputs as isize,
            1,
        );
    }
}

/// `out[t, o] += x[t, ·] · w[o, ·]` for a few rows of `x`: the weights
/// are read once, from where they lie, each core reading a share of their
/// rows ([`few_rows_here`]).
fn few_rows(x: &[f32], w: &[f32], inputs: usize, out: &mut [f32]) {
    let outputs = w.len() / inputs;
    let tokens = x.len() / inputs;
    let parts = rayon::current_num_threads().min(outputs / LEAST_ROWS_PER_PART);
    if parts <= 1 || tokens == 0 {
        few_rows_here(x, w, inputs, out);
        return;
    }
    // Each core takes a share of the weight rows: one query's pass is
    // bound by reading the weights, and the cores read them side by side.
    let rows_per_part = outputs.div_ceil(parts).next_multiple_of(ROWS_AT_ONCE);
    let shares: Vec<Vec<f32>> = w
        .par_chunks(rows_per_part * inputs)
        .map(|part| {
            let mut share = vec![0f32; tokens * (part.len() / inputs)];
            few_rows_here(x, part, inputs, &mut share);
            share
        })
        .collect();
    for (index, share) in shares.iter().enumerate() {
        let first = index * rows_per_part;
        let width = share.len() / tokens;
        for (t, row) in share.chunks_exact(width).enumerate() {
            let target = &mut out[t * outputs + first..t * outputs + first + width];
            for (o, v) in target.iter_mut().zip(row) {
                *o += v;
            }
        }
    }
}

/// Fewest weight rows worth a core of their own in [`few_rows`].
const LEAST_ROWS_PER_PART: usize = 128;

/// [`few_rows`] on the calling thread: [`ROWS_AT_ONCE`] weight rows at a
/// time, each block dotted with every row of `x` (which stays in cache),
/// built for AVX2 and FMA when the CPU has them.
fn few_rows_here(x: &[f32], w: &[f32], inputs: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::cpu().avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA, checked just above.
            unsafe { few_rows_fma(x, w, inputs, out) };
            return;
        }
    }
    few_rows_portable(x, w, inputs, out);
}

/// [`few_rows`] with AVX2 and FMA: eight multiply-adds per instruction,
/// [`ROWS_AT_ONCE`] weight rows per load of `x`.
///
/// # Safety
///
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn few_rows_fma(x: &[f32], w: &[f32], inputs: usize, out: &mut [f32]) {
    use std::arch::x86_64::{
        __m256, _mm_add_ps, _mm_cvtss_f32, _mm_hadd_ps, _mm256_castps256_ps128,
        _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps,
    };
    let horizontal = |v: __m256| -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_hadd_ps(s, s);
        _mm_cvtss_f32(_mm_hadd_ps(s, s))
    };
    let outputs = w.len() / inputs;
    let tokens = x.len() / inputs;
    assert!(out.len() >= tokens * outputs, "output too short");
    let body = inputs - inputs % LANES;
    let blocked = outputs - outputs % ROWS_AT_ONCE;
    for o in (0..blocked).step_by(ROWS_AT_ONCE) {
        let rows: [&[f32]; ROWS_AT_ONCE] =
            std::array::from_fn(|r| &w[(o + r) * inputs..(o + r + 1) * inputs]);
        for (t, xs) in x.chunks_exact(inputs).enumerate() {
            let mut sums = [_mm256_setzero_ps(); ROWS_AT_ONCE];
            for start in (0..body).step_by(LANES) {
                let lanes = &xs[start..start + LANES];
                // SAFETY: `lanes` holds LANES floats, read unaligned.
                let xv = unsafe { _mm256_loadu_ps(lanes.as_ptr()) };
                for (sum, row) in sums.iter_mut().zip(&rows) {
                    let ws = &row[start..start + LANES];
                    // SAFETY: `ws` holds LANES floats, read unaligned.
                    let wv = unsafe { _mm256_loadu_ps(ws.as_ptr()) };
                    *sum = _mm256_fmadd_ps(xv, wv, *sum);
                }
            }
            for (r, (sum, row)) in sums.iter().zip(&rows).enumerate() {
                let tail: f32 = xs[body..]
                    .iter()
                    .zip(&row[body..])
                    .map(|(a, b)| a * b)
                    .sum();
                out[t * outputs + o + r] += horizontal(*sum) + tail;
            }
        }
    }
    for o in blocked..outputs {
        let row = &w[o * inputs..(o + 1) * inputs];
        for (t, xs) in x.chunks_exact(inputs).enumerate() {
            let dot: f32 = xs.iter().zip(row).map(|(a, b)| a * b).sum();
            out[t * outputs + o] += dot;
        }
    }
}

/// Weight rows dotted with each row of `x` in one pass over it, so that
/// every load of `x` serves several sums.
const ROWS_AT_ONCE: usize = 4;

/// Lanes of each partial sum: 8 × f32 is one AVX register.
const LANES: usize = 8;

/// The loop of [`few_rows`] in plain Rust, for CPUs without AVX2 and FMA.
fn few_rows_portable(x: &[f32], w: &[f32], inputs: usize, out: &mut [f32]) {
    let outputs = w.len() / inputs;
    for (o, row) in w.chunks_exact(inputs).enumerate() {
        for (t, xs) in x.chunks_exact(inputs).enumerate() {
            let mut sums = [0f32; LANES];
            let mut pairs = xs.chunks_exact(LANES).zip(row.chunks_exact(LANES));
            for (a, b) in pairs.by_ref() {
                for lane in 0..LANES {
                    sums[lane] += a[lane] * b[lane];
                }
            }
            let body = inputs - inputs % LANES;
            let tail: f32 = xs[body..]
                .iter()
                .zip(&row[body..])
                .map(|(a, b)| a * b)
                .sum();
            out[t * outputs + o] += sums.iter().sum::<f32>() + tail;
        }
    }
}

#[inline(always)]
fn layer_norm_rows(x: &mut [f32], norm: &LayerNorm, eps: f32) {
    let h = norm.gamma.len();
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().sum::<f32>() / h as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

#[inline(always)]
fn add_rows(x: &mut [f32], residual: &[f32]) {
    for (a, b) in x.iter_mut().zip(residual) {
        *a += b;
    }
}

#[inline(always)]
fn activate(block: &mut [f32], activation: Activation) {
    match activation {
        Activation::Gelu => {
            for v in block {
                *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
        Activation::GeluTanh => {
            const C: f32 = 0.797_884_6; // sqrt(2/π)
            for v in block {
                let u = C * (*v + 0.044_715 * *v * *v * *v);
                *v = 0.5 * *v * (1.0 + u.tanh());
            }
        }
        Activation::Relu => {
            for v in block {
                *v = v.max(0.0);
            }
        }
    }
}

/// The error function as a rational approximation on [-4, 4] (outside it
/// erf is ±1 in f32), within a few ULP of the exact value. Unlike libm's
/// branchy `erff` it vectorises, and GELU calls it for every intermediate
/// activation.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_6e-3;
    p = x2 * p + -1.609_603_3e-2;
    p *= x;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329e-3;
    q = x2 * q + -1.426_474e-2;
    p / q
}

/// Multi-head self-attention within each packed sequence. `qkv` holds, per
/// token, the query, key and value vectors (`3 × hidden`); `context` gets
/// the attended values (`hidden` per token).
#[inline(always)]
fn attention(qkv: &[f32], context: &mut [f32], segments: &[Segment], hidden: usize, heads: usize) {
    let head_dim = hidden / heads;
    let scale = 1.0 / (head_dim as f32).sqrt();
    let stride = 3 * hidden;

    let mut scores = Vec::new();
    for segment in segments {
        let len = segment.len;
        let rows = &qkv[segment.offset * stride..(segment.offset + len) * stride];
        let out = &mut context[segment.offset * hidden..(segment.offset + len) * hidden];
        scores.resize(len, 0f32);
        for head in 0..heads {
            let q_at = head * head_dim;
            let k_at = hidden + head * head_dim;
            let v_at = 2 * hidden + head * head_dim;
            for i in 0..len {
                let q = &rows[i * stride + q_at..i * stride + q_at + head_dim];
                let mut max = f32::NEG_INFINITY;
                for (j, score) in scores.iter_mut().enumerate() {
                    let k = &rows[j * stride + k_at..j * stride + k_at + head_dim];
                    *score = crate::dot(q, k) * scale;
                    max = max.max(*score);
                }
                let mut total = 0.0;
                for score in scores.iter_mut() {
                    *score = (*score - max).exp();
                    total += *score;
                }
                let inv = 1.0 / total;
                let ctx =
                    &mut out[i * hidden + head * head_dim..i * hidden + (head + 1) * head_dim];
                ctx.fill(0.0);
                for (j, score) in scores.iter().enumerate() {
                    let p = score * inv;
                    let v = &rows[j * stride + v_at..j * stride + v_at + head_dim];
                    for (c, v) in ctx.iter_mut().zip(v) {
                        *c += p * v;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn few_rows_agree_with_sgemm() {
        use super::{FEW_ROWS, few_rows, few_rows_portable, through_sgemm};
        // 37 inputs leave a tail after the 8-lane body; 11 outputs leave
        // rows after the blocks of 4; 300 outputs are shared among cores.
        for (inputs, outputs, tokens) in [(37, 11, 5), (37, 300, 5)] {
            // A fixed pseudo-random fill (an LCG), so the test is repeatable.
            let mut state = 12345u32;
            let mut next = move || {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            };
            let weight: Vec<f32> = (0..inputs * outputs).map(|_| next()).collect();
            let x: Vec<f32> = (0..tokens * inputs).map(|_| next()).collect();
            let mut direct = vec![0f32; tokens * outputs];
            let mut portable = vec![0f32; tokens * outputs];
            let mut packed = vec![0f32; tokens * outputs];
            few_rows(&x, &weight, inputs, &mut direct);
            few_rows_portable(&x, &weight, inputs, &mut portable);
            through_sgemm(&x, &weight, tokens, inputs, outputs, &mut packed);
            for ((a, b), c) in direct.iter().zip(&packed).zip(&portable) {
                assert!(
                    (a - b).abs() <= 1e-5 && (c - b).abs() <= 1e-5,
                    "{a}, {c} vs {b}"
                );
            }
            assert!(tokens <= FEW_ROWS);
        }
    }

    use super::*;

    #[test]
    fn f16_conversion_matches_known_values() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0000), 0.0);
        assert!((f16_to_f32(0x0001) - 5.960_464_5e-8).abs() < 1e-12);
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
    }

    #[test]
    fn erf_approximation_is_within_a_few_ulp() {
        let mut worst = 0f32;
        for i in -6000..=6000 {
            let x = i as f32 / 1000.0;
            worst = worst.max((erf(x) - libm::erff(x)).abs());
        }
        assert!(worst < 1e-6, "max error {worst}");
    }

    #[test]
    fn linear_matches_naive_product() {
        let layer = Linear {
            weights: Weights::Rows(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), // 2 outputs × 3 inputs
            bias: vec![0.5, -1.0],
            inputs: 3,
            outputs: 2,
        };
        let x = vec![1.0, 0.0, -1.0, 2.0, 1.0, 0.0];
        let mut out = vec![0.0; 4];
        layer.forward(&x, 2, &mut out);
        assert_eq!(
            out,
            vec![
                1.0 - 3.0 + 0.5,
                4.0 - 6.0 - 1.0,
                2.0 + 2.0 + 0.5,
                8.0 + 5.0 - 1.0
            ]
        );
    }
}
