//! The reranker: a second pass over the best candidates of stage 3.
//!
//! A cross-encoder reads the query and a candidate's passage together,
//! which a bi-encoder's two separate vectors cannot, and says how likely
//! the passage answers the query. Its score, in [0, 1], joins the
//! composite with `scoring.weights.rerank` for the route's `topN` best
//! candidates; only their order changes.
//!
//! Three kinds: a cross-encoder run in process ([`local::CrossEncoder`],
//! on the same encoder as the embeddings), and two wire formats of
//! reranking services ([`http::HttpReranker`]): Text Embeddings
//! Inference's `/rerank` and the Cohere-style `/v1/rerank`.
//!
//! A reranker works under a per-query budget (`budgetMs`). When it does
//! not finish in time, or its service fails, the query is answered in
//! stage 3's order and says so ([`RerankOutcome::reranked`]): a slow
//! reranker costs quality, never the answer.

pub mod http;
pub mod local;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use thiserror::Error;

use super::selection::Display;
use crate::index::{IndexVersion, Ranking, SentenceNumber};
use crate::spec::{RerankPassage, RerankerKind, RerankerSpec, RetrievalRouteSpec, Signal};

pub use http::HttpReranker;
pub use local::CrossEncoder;

/// Why reranking failed.
#[derive(Debug, Error)]
pub enum RerankError {
    /// The model directory is missing, incomplete or of an unsupported kind.
    #[error("reranker model {path}: {reason}")]
    Model { path: PathBuf, reason: String },
    /// The route asks for something this build cannot do.
    #[error("reranker configuration: {0}")]
    Config(String),
    /// The tokenizer rejected a text.
    #[error("reranker tokenizer: {0}")]
    Tokenizer(String),
    /// The reranking service failed.
    #[error("reranking service {endpoint}: {reason}")]
    Service { endpoint: String, reason: String },
    /// The budget ran out before every passage was scored.
    #[error("the reranker did not finish within its time budget (budgetMs)")]
    OverBudget,
}

impl From<crate::embed::EmbedError> for RerankError {
    fn from(e: crate::embed::EmbedError) -> Self {
        match e {
            crate::embed::EmbedError::Model { path, reason } => RerankError::Model { path, reason },
            other => RerankError::Config(other.to_string()),
        }
    }
}

impl From<trellis_encoder::ModelError> for RerankError {
    fn from(e: trellis_encoder::ModelError) -> Self {
        RerankError::Model {
            path: e.path,
            reason: e.reason,
        }
    }
}

/// Scores passages against a query.
pub trait Reranker: Send + Sync {
    /// Names the reranker (kind and model) in logs.
    fn name(&self) -> &str;

    /// Each passage's relevance to `query`, in [0, 1], in order; gives up
    /// with [`RerankError::OverBudget`] once `deadline` has passed.
    fn score(
        &self,
        query: &str,
        passages: &[&str],
        deadline: Instant,
    ) -> Result<Vec<f32>, RerankError>;
}

/// What reranking did for one query.
#[derive(Clone, Copy, Debug)]
pub struct RerankOutcome {
    /// The candidates were reranked; false when the reranker missed its
    /// budget or failed, and stage 3's order stands.
    pub reranked: bool,
    /// How long the reranker took (or was given).
    pub took: Duration,
}

/// A ranking after the reranker's pass.
pub(super) struct Reranked {
    pub ranking: Ranking,
    /// The reranker's score of each candidate it read.
    pub scores: HashMap<SentenceNumber, f32>,
    pub outcome: RerankOutcome,
}

/// Adds `scoring.weights.rerank` × the reranker's score to the best
/// `reranker.topN` of `ranking` and puts them in their new order. They
/// stay ahead of the rest: their scores only rise. Candidates that show
/// the same passage are scored once. When the reranker fails or misses
/// its budget, `ranking` comes back as it was.
pub(super) fn rerank(
    reranker: &dyn Reranker,
    index: &IndexVersion,
    route: &RetrievalRouteSpec,
    query: &str,
    mut ranking: Ranking,
) -> Reranked {
    let spec = &route.reranker;
    let _span = tracing::info_span!("rerank", reranker = reranker.name()).entered();
    let started = Instant::now();
    let deadline = started + Duration::from_millis(u64::from(spec.budget_ms));
    let top = ranking.len().min(spec.top_n as usize);
    let mut passages: Vec<String> = Vec::new();
    let mut passage_of: Vec<usize> = Vec::with_capacity(top);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for &(i, _) in &ranking[..top] {
        let text = match spec.passage {
            RerankPassage::Sentence => index.store.sentences[i].text.clone(),
            RerankPassage::Paragraph => Display::of(route).text(index, i),
        };
        let n = *seen.entry(text).or_insert_with_key(|text| {
            passages.push(text.clone());
            passages.len() - 1
        });
        passage_of.push(n);
    }
    let texts: Vec<&str> = passages.iter().map(String::as_str).collect();
    let scored = reranker.score(query, &texts, deadline).and_then(|scores| {
        match scores.len() == texts.len() {
            true => Ok(scores),
            false => Err(RerankError::Config(format!(
                "{} scores for {} passages",
                scores.len(),
                texts.len()
            ))),
        }
    });
    let took = started.elapsed();
    let mut scores = HashMap::new();
    let reranked = match scored {
        Ok(passage_scores) => {
            let weight = route.scoring.weights.of(Signal::Rerank);
            for ((i, score), &n) in ranking[..top].iter_mut().zip(&passage_of) {
                let r = passage_scores[n];
                *score += weight * r;
                scores.insert(*i, r);
            }
            ranking[..top].sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            tracing::debug!(
                passages = texts.len(),
                ms = took.as_millis() as u64,
                "reranked"
            );
            true
        }
        Err(e) => {
            tracing::warn!(
                error = %e,
                ms = took.as_millis() as u64,
                "reranking skipped for this query; stage 3's order stands"
            );
            false
        }
    };
    Reranked {
        ranking,
        scores,
        outcome: RerankOutcome { reranked, took },
    }
}

/// Builds the reranker a route asks for; `None` for `kind: none`.
/// `base_dir` resolves a relative model path and API key file (the
/// manifest's directory).
pub fn from_spec(
    spec: &RerankerSpec,
    base_dir: Option<&Path>,
) -> Result<Option<Box<dyn Reranker>>, RerankError> {
    if spec.top_n == 0 {
        return Err(RerankError::Config(
            "reranker.topN must be at least 1".into(),
        ));
    }
    if spec.budget_ms == 0 {
        return Err(RerankError::Config(
            "reranker.budgetMs must be at least 1".into(),
        ));
    }
    Ok(match spec.kind {
        RerankerKind::None => None,
        RerankerKind::Local => {
            let dir = model_dir(spec, base_dir)?;
            Some(Box::new(CrossEncoder::load(&dir, spec)?))
        }
        RerankerKind::Tei | RerankerKind::Cohere => {
            Some(Box::new(HttpReranker::new(spec, base_dir)?))
        }
    })
}

/// Where a local cross-encoder lives: `path` (relative to the manifest),
/// else `model` as a directory name in the model cache.
fn model_dir(spec: &RerankerSpec, base_dir: Option<&Path>) -> Result<PathBuf, RerankError> {
    let dir = match (&spec.path, spec.model.as_str()) {
        (Some(path), _) => {
            let path = PathBuf::from(path);
            match base_dir {
                Some(base) if path.is_relative() => base.join(path),
                _ => path,
            }
        }
        (None, "") => {
            return Err(RerankError::Config(
                "reranker kind local needs reranker.model (a directory in the model cache) \
                 or reranker.path"
                    .into(),
            ));
        }
        (None, name) => crate::locations::model_cache_dir().join(name),
    };
    let files =
        trellis_encoder::files::ModelFiles::locate(&dir).map_err(|e| RerankError::Model {
            path: e.path,
            reason: format!(
                "{}; set reranker.path to a sequence-classification model: a directory \
             (config.json, model.safetensors or onnx/model.onnx, tokenizer.json) or an \
             ONNX file",
                e.reason
            ),
        })?;
    if files.config().is_file() {
        Ok(dir)
    } else {
        Err(RerankError::Model {
            path: files.config(),
            reason: "no config.json: the architecture (layers, heads, sizes) is read from it"
                .into(),
        })
    }
}

/// The logistic function: a single logit as a probability.
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}
