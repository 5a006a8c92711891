//! The HTTP rerankers: `tei` and `cohere`.
//!
//! * `tei`: Hugging Face Text Embeddings Inference serving a
//!   sequence-classification model, `POST {endpoint}/rerank` with
//!   `{"query", "texts", "truncate": true, "raw_scores": false}`,
//!   answering `[{"index", "score"}, …]` with scores through the logistic
//!   function already;
//! * `cohere`: `POST {endpoint}/v1/rerank` with `{"model", "query",
//!   "documents"}`, answering `{"results": [{"index", "relevance_score"},
//!   …]}` (Cohere, Jina, vLLM, Infinity) or the same list under `"data"`
//!   (Voyage). An endpoint already ending in `/v1` gets no second one.
//!
//! Every passage must come back exactly once with a finite score; scores
//! are taken as probabilities and held to [0, 1]. The query's budget
//! bounds the whole call: each attempt's timeout is what is left of it,
//! and a transient failure (429, 5xx, a refused or dropped connection) is
//! retried only while some is left.

use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use reqwest::{StatusCode, Url};
use serde::{Deserialize, Serialize};

use super::{RerankError, Reranker};
use crate::embed::service::{self, BodyError};
use crate::spec::{RerankerKind, RerankerSpec};

/// Largest response body read, in bytes.
const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;
/// Wait before a retry, doubled for each further one (within the budget).
const RETRY_DELAY: Duration = Duration::from_millis(50);

/// The two wire formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    Tei,
    Cohere,
}

#[derive(Serialize)]
struct TeiRequest<'a> {
    query: &'a str,
    texts: &'a [&'a str],
    truncate: bool,
    raw_scores: bool,
}

#[derive(Serialize)]
struct CohereRequest<'a> {
    model: &'a str,
    query: &'a str,
    documents: &'a [&'a str],
}

#[derive(Deserialize)]
struct TeiItem {
    index: usize,
    score: f32,
}

#[derive(Deserialize)]
struct CohereResponse {
    #[serde(alias = "data")]
    results: Vec<CohereItem>,
}

#[derive(Deserialize)]
struct CohereItem {
    index: usize,
    relevance_score: f32,
}

/// A reranking service reached over HTTP.
pub struct HttpReranker {
    protocol: Protocol,
    client: Client,
    url: Url,
    /// The call's URL, named in errors and logs.
    endpoint: String,
    model: String,
    name: String,
    authorization: Option<HeaderValue>,
    /// Scrubbed from any service message quoted in errors.
    api_key: Option<String>,
}

impl HttpReranker {
    /// Checks a `tei` or `cohere` reranker's settings and reads its key;
    /// contacts nothing.
    pub fn new(
        spec: &RerankerSpec,
        base_dir: Option<&std::path::Path>,
    ) -> Result<Self, RerankError> {
        let (protocol, kind) = match spec.kind {
            RerankerKind::Tei => (Protocol::Tei, "tei"),
            RerankerKind::Cohere => (Protocol::Cohere, "cohere"),
            other => {
                return Err(RerankError::Config(format!(
                    "reranker kind {other:?} is not a reranking service"
                )));
            }
        };
        let endpoint = spec.endpoint.as_deref().ok_or_else(|| {
            RerankError::Config(format!(
                "reranker kind {kind} needs reranker.endpoint (the service's base URL)"
            ))
        })?;
        if protocol == Protocol::Cohere && spec.model.is_empty() {
            return Err(RerankError::Config(
                "reranker kind cohere needs reranker.model (the model the service is asked for)"
                    .into(),
            ));
        }
        let mut url = service::parse_endpoint("reranker", endpoint).map_err(RerankError::Config)?;
        let base = url.path().trim_end_matches('/').to_string();
        let path = match protocol {
            Protocol::Tei => format!("{base}/rerank"),
            Protocol::Cohere if base.ends_with("/v1") => format!("{base}/rerank"),
            Protocol::Cohere => format!("{base}/v1/rerank"),
        };
        url.set_path(&path);
        let keys = service::KeySource {
            field: "reranker",
            provider: kind,
            file: spec.api_key_file.as_deref(),
            secret: spec.api_key_secret_ref.as_ref(),
            env: spec.api_key_env.as_deref(),
            default_env: None,
            custom_endpoint: true,
        };
        let api_key = service::read_api_key(&keys, base_dir).map_err(RerankError::Config)?;
        let authorization = api_key
            .as_deref()
            .map(service::bearer)
            .transpose()
            .map_err(RerankError::Config)?;
        let endpoint = url.to_string();
        let client = Client::builder()
            .user_agent(concat!("trellis/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| RerankError::Service {
                endpoint: endpoint.clone(),
                reason: format!("cannot set up the HTTP client: {}", service::describe(e)),
            })?;
        let model = match spec.model.as_str() {
            "" => "served".to_string(),
            m => m.to_string(),
        };
        Ok(Self {
            protocol,
            client,
            name: format!("{kind}:{model}@{}", service::host_of(&url)),
            url,
            endpoint,
            model: spec.model.clone(),
            authorization,
            api_key,
        })
    }

    /// The URL passages are posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn error(&self, reason: impl Into<String>) -> RerankError {
        RerankError::Service {
            endpoint: self.endpoint.clone(),
            reason: reason.into(),
        }
    }

    fn body(&self, query: &str, passages: &[&str]) -> Result<Vec<u8>, serde_json::Error> {
        match self.protocol {
            Protocol::Tei => serde_json::to_vec(&TeiRequest {
                query,
                texts: passages,
                truncate: true,
                raw_scores: false,
            }),
            Protocol::Cohere => serde_json::to_vec(&CohereRequest {
                model: &self.model,
                query,
                documents: passages,
            }),
        }
    }

    /// Posts one body until it is answered, it fails for good or the
    /// deadline passes.
    fn post(&self, body: Vec<u8>, deadline: Instant) -> Result<Vec<u8>, RerankError> {
        let mut attempt: u32 = 0;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RerankError::OverBudget);
            }
            let mut request = self
                .client
                .post(self.url.clone())
                .timeout(left)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            if let Some(authorization) = &self.authorization {
                request = request.header(AUTHORIZATION, authorization.clone());
            }
            let reason = match request.send() {
                Err(e) if e.is_timeout() => return Err(RerankError::OverBudget),
                Err(e) if e.is_connect() || e.is_request() => service::describe(e),
                Err(e) => return Err(self.error(service::describe(e))),
                Ok(response) => {
                    let status = response.status();
                    match service::read_body(response, MAX_RESPONSE_BYTES) {
                        Err(BodyError::TooLarge(reason)) => return Err(self.error(reason)),
                        Err(BodyError::Read(reason)) => reason,
                        Ok(bytes) if status.is_success() => return Ok(bytes),
                        Ok(bytes) => {
                            let message = service::service_message(&bytes, self.api_key.as_deref());
                            let reason = format!("HTTP {status}{message}");
                            if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error()
                            {
                                return Err(self.error(reason));
                            }
                            reason
                        }
                    }
                }
            };
            let delay = RETRY_DELAY.saturating_mul(2u32.saturating_pow(attempt));
            if Instant::now() + delay >= deadline {
                return Err(self.error(format!(
                    "{reason} (no time left in the budget for attempt {})",
                    attempt + 2
                )));
            }
            tracing::debug!(endpoint = %self.endpoint, attempt, "rerank request failed, retrying: {reason}");
            std::thread::sleep(delay);
            attempt += 1;
        }
    }

    /// The scores in passage order, each passage exactly once.
    fn parse(&self, body: &[u8], passages: usize) -> Result<Vec<f32>, RerankError> {
        let items: Vec<(usize, f32)> = match self.protocol {
            Protocol::Tei => serde_json::from_slice::<Vec<TeiItem>>(body)
                .map(|items| items.into_iter().map(|i| (i.index, i.score)).collect()),
            Protocol::Cohere => serde_json::from_slice::<CohereResponse>(body).map(|r| {
                r.results
                    .into_iter()
                    .map(|i| (i.index, i.relevance_score))
                    .collect()
            }),
        }
        .map_err(|e| self.error(format!("unexpected answer: {e}")))?;
        let mut scores = vec![None; passages];
        for (index, score) in items {
            let Some(slot) = scores.get_mut(index) else {
                return Err(self.error(format!("a result names passage {index} of {passages}")));
            };
            if slot.replace(score).is_some() {
                return Err(self.error(format!("passage {index} is scored twice")));
            }
            if !score.is_finite() {
                return Err(self.error(format!("passage {index} has a non-finite score")));
            }
        }
        scores
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                s.map(|s| s.clamp(0.0, 1.0))
                    .ok_or_else(|| self.error(format!("passage {i} was not scored")))
            })
            .collect()
    }
}

impl Reranker for HttpReranker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(
        &self,
        query: &str,
        passages: &[&str],
        deadline: Instant,
    ) -> Result<Vec<f32>, RerankError> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let body = self
            .body(query, passages)
            .map_err(|e| self.error(format!("cannot encode the request: {e}")))?;
        let answer = self.post(body, deadline)?;
        self.parse(&answer, passages.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reranker(kind: RerankerKind, endpoint: &str) -> HttpReranker {
        let spec = RerankerSpec {
            kind,
            model: "rerank-v3.5".into(),
            endpoint: Some(endpoint.into()),
            ..RerankerSpec::default()
        };
        HttpReranker::new(&spec, None).unwrap()
    }

    #[test]
    fn paths_follow_each_wire_format() {
        let tei = reranker(RerankerKind::Tei, "http://tei.search:8080");
        assert_eq!(tei.endpoint(), "http://tei.search:8080/rerank");
        let cohere = reranker(RerankerKind::Cohere, "https://api.cohere.com");
        assert_eq!(cohere.endpoint(), "https://api.cohere.com/v1/rerank");
        let jina = reranker(RerankerKind::Cohere, "https://api.jina.ai/v1/");
        assert_eq!(jina.endpoint(), "https://api.jina.ai/v1/rerank");
        assert_eq!(jina.name(), "cohere:rerank-v3.5@api.jina.ai");
    }

    #[test]
    fn answers_must_score_every_passage_once() {
        let cohere = reranker(RerankerKind::Cohere, "http://localhost:9");
        let parse = |body: &str| cohere.parse(body.as_bytes(), 2).map_err(|e| e.to_string());
        let scores = parse(
            r#"{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":1.5}]}"#,
        );
        assert_eq!(scores.unwrap(), [1.0, 0.9]);
        let voyage = parse(
            r#"{"data":[{"index":0,"relevance_score":0.2},{"index":1,"relevance_score":0.1}]}"#,
        );
        assert_eq!(voyage.unwrap(), [0.2, 0.1]);
        let missing = parse(r#"{"results":[{"index":0,"relevance_score":0.2}]}"#).unwrap_err();
        assert!(missing.contains("passage 1 was not scored"), "{missing}");
        let twice = parse(
            r#"{"results":[{"index":0,"relevance_score":0.2},{"index":0,"relevance_score":0.3}]}"#,
        )
        .unwrap_err();
        assert!(twice.contains("scored twice"), "{twice}");
        let beyond = parse(r#"{"results":[{"index":2,"relevance_score":0.2}]}"#).unwrap_err();
        assert!(beyond.contains("passage 2 of 2"), "{beyond}");
    }

    #[test]
    fn a_bad_configuration_contacts_nothing() {
        let spec = |kind, endpoint: Option<&str>, model: &str| RerankerSpec {
            kind,
            model: model.into(),
            endpoint: endpoint.map(str::to_string),
            ..RerankerSpec::default()
        };
        let error = |s: RerankerSpec| HttpReranker::new(&s, None).err().unwrap().to_string();
        assert!(error(spec(RerankerKind::Tei, None, "")).contains("reranker.endpoint"));
        assert!(error(spec(RerankerKind::Cohere, Some("http://x"), "")).contains("reranker.model"));
        let credentials = error(spec(RerankerKind::Tei, Some("http://u:secret@x"), ""));
        assert!(!credentials.contains("secret") && credentials.contains("credentials"));
    }
}
