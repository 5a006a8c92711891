//! Sentence embeddings.
//!
//! An [`Embedder`] turns texts into unit-length vectors. The `local`
//! provider runs a BERT-family sentence-transformers directory in process
//! ([`local::LocalEmbedder`]); the HTTP providers `openai` (any
//! OpenAI-compatible `/v1/embeddings`), `voyage` (Voyage AI) and `tei`
//! (Hugging Face Text Embeddings Inference) call an embeddings service
//! ([`http::HttpEmbedder`]), with timeouts, retries of transient failures
//! and checks on every answer. [`cache::EmbeddingCache`] sits in front of
//! either, keyed by model id and text hash, so that re-ingesting a corpus
//! embeds only new or changed sentences; model ids name the provider and,
//! for a service, its host, so vectors of different origins never mix.

pub mod batch;
pub mod cache;
pub mod http;
pub mod local;
pub(crate) mod service;

use std::path::{Path, PathBuf};

use thiserror::Error;
use trellis_encoder::files::ModelFiles;

use crate::spec::{EmbeddingProvider, EmbeddingSpec};

pub use batch::QueryBatcher;
// The encoder's forward pass is a crate of its own (crates/encoder), so
// that the test build optimises it fully; see its documentation.
pub use cache::EmbeddingCache;
pub use http::HttpEmbedder;
pub use local::LocalEmbedder;
pub use trellis_encoder::{bert, files, int8};

/// Why embedding failed.
#[derive(Clone, Debug, Error)]
pub enum EmbedError {
    /// The model directory is missing, incomplete or of an unsupported kind.
    #[error("model {path}: {reason}")]
    Model { path: PathBuf, reason: String },
    /// The tokenizer rejected a text.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// An embeddings service failed (after retries where they apply).
    #[error("embedding service {endpoint}: {reason}")]
    Service { endpoint: String, reason: String },
    /// The embedding cache could not be read or written.
    #[error("embedding cache {path}: {reason}")]
    Cache { path: PathBuf, reason: String },
    /// The profile asks for something this build cannot do.
    #[error("embedding configuration: {0}")]
    Config(String),
}

impl From<trellis_encoder::ModelError> for EmbedError {
    fn from(e: trellis_encoder::ModelError) -> Self {
        EmbedError::Model {
            path: e.path,
            reason: e.reason,
        }
    }
}

impl EmbedError {
    pub(crate) fn model(path: &Path, reason: impl Into<String>) -> Self {
        EmbedError::Model {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

/// Turns texts into L2-normalised vectors of a fixed dimension.
///
/// Documents and queries are separate calls because some models prefix
/// them differently ("query: …", "Represent this sentence for searching
/// relevant passages: …").
pub trait Embedder: Send + Sync {
    /// Identifies the model and its weights; part of the embedding cache
    /// key and recorded in every index manifest.
    fn model_id(&self) -> &str;

    /// Keys this embedder's cached document vectors: the model id and
    /// everything else that changes a vector without changing the model
    /// (the input length, pooling, the tokenizer, a requested dimension).
    /// Two embedders whose vectors for one text can differ never share an
    /// id, so a cached vector is only ever reused for the recipe that made
    /// it. Default: the model id.
    fn cache_id(&self) -> String {
        self.model_id().to_string()
    }

    /// Keys cached query vectors ([`cache_id`](Embedder::cache_id) for
    /// the query side, which has a prefix of its own). Default: the model
    /// id, marked as the query side.
    fn query_cache_id(&self) -> String {
        format!("{}#query", self.cache_id())
    }

    /// Length of every vector.
    fn dimensions(&self) -> usize;

    /// Embeds document sentences; one vector per text, in order.
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// Embeds one query.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError>;

    /// Embeds many queries at once (evaluation runs, benchmarks); one
    /// vector per text, in order, each equal to [`embed_query`]'s.
    ///
    /// [`embed_query`]: Embedder::embed_query
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts.iter().map(|t| self.embed_query(t)).collect()
    }

    /// Embeds sentences inside the passages they stand in ("late
    /// chunking", `embedding.context`): one vector per span of each
    /// passage, in order, each made from the span's own tokens of the
    /// passage's encoding. Providers that cannot say so.
    fn embed_in_context(&self, passages: &[Passage]) -> Result<Vec<SpanVectors>, EmbedError> {
        let _ = passages;
        Err(EmbedError::Config(format!(
            "{} cannot embed sentences in their context (embedding.context); \
             the local provider can",
            self.model_id()
        )))
    }
}

/// The vectors of one passage's spans, in order.
pub type SpanVectors = Vec<Vec<f32>>;

/// A passage and the sentences in it to embed in its context.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Passage {
    /// The passage's text: its sentences, joined.
    pub text: String,
    /// Byte ranges of the sentences to embed, in order, not overlapping.
    pub spans: Vec<std::ops::Range<usize>>,
}

/// Builds the embedder a profile asks for. `base_dir` resolves relative
/// model paths and API key files (the manifest's directory).
///
/// An HTTP provider whose profile does not give `dimensions` sends one
/// probe request here to learn them.
pub fn from_spec(
    spec: &EmbeddingSpec,
    base_dir: Option<&Path>,
) -> Result<Box<dyn Embedder>, EmbedError> {
    match spec.provider {
        EmbeddingProvider::Local => {
            let dir = resolve_model_dir(spec, base_dir)?;
            Ok(Box::new(LocalEmbedder::load(&dir, spec)?))
        }
        EmbeddingProvider::Openai | EmbeddingProvider::Voyage | EmbeddingProvider::Tei => {
            Ok(Box::new(
                HttpEmbedder::builder(spec)
                    .with_base_dir(base_dir)
                    .build()?,
            ))
        }
    }
}

/// The spec with a relative `path` and `apiKeyFile` made absolute against
/// `base_dir` (the manifest's directory), so that it can be recorded with
/// an index version and loaded again from anywhere.
pub fn with_resolved_path(spec: &EmbeddingSpec, base_dir: Option<&Path>) -> EmbeddingSpec {
    let mut spec = spec.clone();
    if let Some(base) = base_dir {
        for field in [&mut spec.path, &mut spec.api_key_file] {
            if let Some(path) = field.as_deref()
                && Path::new(path).is_relative()
            {
                *field = Some(base.join(path).display().to_string());
            }
        }
    }
    spec
}

/// Where a local model lives: `spec.path` when set (relative to the
/// manifest; a model directory or an ONNX file), else `spec.model` as a
/// directory name in the model cache. The path is checked to hold a
/// model ([`ModelFiles::locate`]).
pub fn resolve_model_dir(
    spec: &EmbeddingSpec,
    base_dir: Option<&Path>,
) -> Result<PathBuf, EmbedError> {
    let candidate = match &spec.path {
        Some(path) => {
            let path = PathBuf::from(path);
            match base_dir {
                Some(base) if path.is_relative() => base.join(path),
                _ => path,
            }
        }
        None => crate::locations::model_cache_dir().join(&spec.model),
    };
    let files = ModelFiles::locate(&candidate).map_err(|e| {
        EmbedError::model(
            &e.path,
            format!(
                "{}; fetch the model with scripts/fetch-model.sh {} or set embedding.path \
                 to a model directory or ONNX file",
                e.reason, spec.model
            ),
        )
    })?;
    if !files.config().is_file() {
        return Err(EmbedError::model(
            &files.config(),
            "no config.json: the architecture (layers, heads, sizes) is read from it",
        ));
    }
    Ok(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_model_paths_resolve_against_the_manifest_only() {
        let relative = EmbeddingSpec {
            path: Some("models/minilm".into()),
            ..EmbeddingSpec::default()
        };
        let base = Path::new("/etc/trellis");
        let resolved = with_resolved_path(&relative, Some(base));
        assert_eq!(resolved.path.as_deref(), Some("/etc/trellis/models/minilm"));
        assert_eq!(
            with_resolved_path(&resolved, Some(Path::new("/x"))),
            resolved
        );
        let cached = EmbeddingSpec::default();
        assert_eq!(with_resolved_path(&cached, Some(base)), cached);
        let key_file = EmbeddingSpec {
            api_key_file: Some("secrets/openai.key".into()),
            ..EmbeddingSpec::default()
        };
        assert_eq!(
            with_resolved_path(&key_file, Some(base))
                .api_key_file
                .as_deref(),
            Some("/etc/trellis/secrets/openai.key")
        );
    }

    /// The embedding spec is part of every profile's canonical hash: the
    /// HTTP providers' fields must not change the JSON (and so the index
    /// version) of an existing `local` profile.
    #[test]
    fn default_embedding_spec_serialises_as_it_did_before_the_http_fields() {
        let json = serde_json::to_string(&EmbeddingSpec::default()).unwrap();
        assert_eq!(
            json,
            r#"{"provider":"local","model":"all-MiniLM-L6-v2","queryPrefix":"","documentPrefix":"","batchTokens":4096}"#
        );
    }
}
