//! The HTTP providers: `openai`, `voyage` and `tei`.
//!
//! Three embeddings services, three request and response shapes, one
//! client:
//!
//! * `openai`: any OpenAI-compatible `POST {endpoint}/v1/embeddings`
//!   (OpenAI itself, vLLM, Ollama, LiteLLM, …) with `{"model", "input"}`,
//!   answering `{"data": [{"embedding", "index"}, …]}`;
//! * `voyage`: Voyage AI's `POST {endpoint}/v1/embeddings`, the same shape
//!   plus `"input_type": "document" | "query"`, because Voyage embeds
//!   queries and documents differently;
//! * `tei`: Hugging Face Text Embeddings Inference, `POST {endpoint}/embed`
//!   with `{"inputs", "normalize": true, "truncate": true}`, answering a bare
//!   array of vectors.
//!
//! The [`Embedder`] trait is synchronous and its callers (ingest, query)
//! are plain threads, so this uses reqwest's blocking client rather than
//! bringing an async runtime into every caller. Requests go one at a time.
//!
//! A service is remote and shared, so every request is bounded and checked:
//! a timeout per request; retries with exponential backoff and jitter on
//! 429, 5xx, connection failures and timeouts, honouring a `Retry-After`
//! given in seconds (up to a cap); no retry on any other 4xx, which a retry
//! cannot fix; a bound on the response size; exactly one vector per input,
//! each of the expected length and finite. Vectors are normalised here
//! whatever the service did, since the indexes take the dot product of two
//! vectors as their cosine.
//!
//! [`Embedder::dimensions`] must be known before the first text is
//! embedded (the embedding cache and the index are sized by it). When the
//! profile does not give `dimensions`, building the embedder sends one
//! probe request and learns it from the answer.
//!
//! The model id is `<provider>:<model>@<host>`, such as
//! `openai:text-embedding-3-small@api.openai.com`, so that the embedding
//! cache and index manifests never mix vectors of two providers, or of two
//! servers that serve a model under one name.

use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::blocking::{Client, Response};
use reqwest::header::{AUTHORIZATION, HeaderValue};
use reqwest::{StatusCode, Url};
use serde::{Deserialize, Serialize};

use super::service::{self, BodyError};
use super::{EmbedError, Embedder};
use crate::spec::{EmbeddingProvider, EmbeddingSpec, Quantization};
use crate::vector::normalize;

/// Default first retry delay; doubled on every further retry.
const DEFAULT_BACKOFF_BASE: Duration = Duration::from_millis(500);
/// Default longest wait between two attempts, whether from the backoff or
/// from the service's `Retry-After`.
const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(60);
/// Default largest response body read, in bytes: 64 texts of 3,072
/// dimensions take about 4 MB of JSON.
const DEFAULT_MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;
/// The text sent to learn the dimensions when the profile does not give
/// them.
const PROBE_TEXT: &str = "dimension probe";

/// The three services' request and response shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Provider {
    OpenAi,
    Voyage,
    Tei,
}

/// Whether texts are documents or a query (only Voyage tells the service).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InputKind {
    Document,
    Query,
}

#[derive(Serialize)]
struct OpenAiRequest<'a> {
    model: &'a str,
    input: &'a [String],
}

#[derive(Serialize)]
struct VoyageRequest<'a> {
    model: &'a str,
    input: &'a [String],
    input_type: &'static str,
}

#[derive(Serialize)]
struct TeiRequest<'a> {
    inputs: &'a [String],
    normalize: bool,
    truncate: bool,
}

/// OpenAI's and Voyage's answer.
#[derive(Deserialize)]
struct ListResponse {
    data: Vec<ListItem>,
}

#[derive(Deserialize)]
struct ListItem {
    embedding: Vec<f32>,
    /// Position of the input; some OpenAI-compatible servers leave it out
    /// and answer in input order.
    #[serde(default)]
    index: Option<usize>,
}

impl Provider {
    fn from_spec(provider: EmbeddingProvider) -> Option<Self> {
        match provider {
            EmbeddingProvider::Local => None,
            EmbeddingProvider::Openai => Some(Provider::OpenAi),
            EmbeddingProvider::Voyage => Some(Provider::Voyage),
            EmbeddingProvider::Tei => Some(Provider::Tei),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Voyage => "voyage",
            Provider::Tei => "tei",
        }
    }

    fn default_endpoint(self) -> Option<&'static str> {
        match self {
            Provider::OpenAi => Some("https://api.openai.com"),
            Provider::Voyage => Some("https://api.voyageai.com"),
            Provider::Tei => None,
        }
    }

    fn default_key_env(self) -> Option<&'static str> {
        match self {
            Provider::OpenAi => Some("OPENAI_API_KEY"),
            Provider::Voyage => Some("VOYAGE_API_KEY"),
            Provider::Tei => None,
        }
    }

    /// TEI's default `--max-client-batch-size` is 32.
    fn default_request_batch(self) -> u32 {
        match self {
            Provider::OpenAi | Provider::Voyage => 64,
            Provider::Tei => 32,
        }
    }

    /// The path of the embeddings call under the endpoint's path. An
    /// OpenAI-style endpoint given with its `/v1` (as OpenAI's SDKs take
    /// their base URL) is not given a second one.
    fn call_path(self, base_path: &str) -> String {
        let base = base_path.trim_end_matches('/');
        match self {
            Provider::OpenAi | Provider::Voyage if base.ends_with("/v1") => {
                format!("{base}/embeddings")
            }
            Provider::OpenAi | Provider::Voyage => format!("{base}/v1/embeddings"),
            Provider::Tei => format!("{base}/embed"),
        }
    }

    fn request_body(
        self,
        model: &str,
        texts: &[String],
        kind: InputKind,
    ) -> serde_json::Result<Vec<u8>> {
        match self {
            Provider::OpenAi => serde_json::to_vec(&OpenAiRequest {
                model,
                input: texts,
            }),
            Provider::Voyage => serde_json::to_vec(&VoyageRequest {
                model,
                input: texts,
                input_type: match kind {
                    InputKind::Document => "document",
                    InputKind::Query => "query",
                },
            }),
            Provider::Tei => serde_json::to_vec(&TeiRequest {
                inputs: texts,
                normalize: true,
                truncate: true,
            }),
        }
    }

    /// The vectors of a successful answer, in input order.
    fn parse_vectors(self, body: &[u8], inputs: usize) -> Result<Vec<Vec<f32>>, String> {
        match self {
            Provider::Tei => serde_json::from_slice::<Vec<Vec<f32>>>(body)
                .map_err(|e| format!("unreadable response (expected an array of vectors): {e}")),
            Provider::OpenAi | Provider::Voyage => {
                let response: ListResponse = serde_json::from_slice(body).map_err(|e| {
                    format!("unreadable response (expected `data[].embedding`): {e}")
                })?;
                in_input_order(response.data, inputs)
            }
        }
    }
}

/// Puts list items in input order by their `index`, checking that every
/// input has exactly one. Items without an index are taken in the order
/// given.
fn in_input_order(items: Vec<ListItem>, inputs: usize) -> Result<Vec<Vec<f32>>, String> {
    if items.len() != inputs {
        return Err(format!(
            "{} vectors returned for {inputs} inputs",
            items.len()
        ));
    }
    if items.iter().all(|item| item.index.is_none()) {
        return Ok(items.into_iter().map(|item| item.embedding).collect());
    }
    let mut ordered: Vec<Option<Vec<f32>>> = vec![None; inputs];
    for item in items {
        let Some(index) = item.index else {
            return Err("some vectors have an index and some do not".to_string());
        };
        match ordered.get_mut(index) {
            Some(slot @ None) => *slot = Some(item.embedding),
            Some(Some(_)) => return Err(format!("two vectors for input {index}")),
            None => {
                return Err(format!(
                    "vector index {index} out of range for {inputs} inputs"
                ));
            }
        }
    }
    // Every slot is filled: as many items as inputs, no index twice.
    Ok(ordered.into_iter().flatten().collect())
}

/// What went wrong with one attempt, and whether another may succeed.
enum Failure {
    /// 429, 5xx, connection failure or timeout.
    Transient {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Anything a retry cannot fix.
    Permanent(String),
}

/// An embeddings service reached over HTTP.
pub struct HttpEmbedder {
    provider: Provider,
    client: Client,
    url: Url,
    /// The call's URL, named in errors and logs.
    endpoint: String,
    model: String,
    model_id: String,
    /// `Bearer …`, marked sensitive so that it is never logged.
    authorization: Option<HeaderValue>,
    /// The key itself, scrubbed from any service message quoted in errors.
    api_key: Option<String>,
    /// 0 until the probe has learnt it.
    dimensions: usize,
    /// Where `dimensions` came from, for errors.
    dimensions_source: &'static str,
    request_batch: usize,
    timeout: Duration,
    max_retries: u32,
    backoff_base: Duration,
    max_delay: Duration,
    max_response_bytes: u64,
    query_prefix: String,
    document_prefix: String,
}

/// Settings of an [`HttpEmbedder`] that are not part of the profile:
/// where relative paths start, and the retry timing (tests shorten it).
pub struct HttpEmbedderBuilder<'a> {
    spec: &'a EmbeddingSpec,
    base_dir: Option<&'a Path>,
    backoff_base: Duration,
    max_delay: Duration,
    max_response_bytes: u64,
}

impl<'a> HttpEmbedderBuilder<'a> {
    /// Directory against which a relative `apiKeyFile` is resolved (the
    /// manifest's).
    pub fn with_base_dir(mut self, base_dir: Option<&'a Path>) -> Self {
        self.base_dir = base_dir;
        self
    }

    /// Delay before the first retry; each further retry doubles it, and a
    /// random part of up to half of it is taken off so that many clients
    /// do not retry in step. Default 500 ms.
    pub fn with_backoff_base(mut self, base: Duration) -> Self {
        self.backoff_base = base;
        self
    }

    /// Longest wait between two attempts, capping both the backoff and a
    /// service's `Retry-After`. Default 60 s.
    pub fn with_max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = max_delay;
        self
    }

    /// Largest response body read, in bytes. Default 64 MiB.
    pub fn with_max_response_bytes(mut self, bytes: u64) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Checks the settings, reads the API key and, when the profile does
    /// not give `dimensions`, sends one probe request to learn them.
    pub fn build(self) -> Result<HttpEmbedder, EmbedError> {
        let spec = self.spec;
        let provider = Provider::from_spec(spec.provider).ok_or_else(|| {
            EmbedError::Config(format!(
                "provider {:?} is not an HTTP embeddings service",
                spec.provider
            ))
        })?;
        let name = provider.name();
        if spec.quantization != Quantization::None {
            return Err(EmbedError::Config(format!(
                "embedding.quantization quantizes the local encoder; provider {name} \
                 runs its model in the service"
            )));
        }

        let endpoint = match (&spec.endpoint, provider.default_endpoint()) {
            (Some(endpoint), _) => endpoint.as_str(),
            (None, Some(default)) => default,
            (None, None) => {
                return Err(EmbedError::Config(format!(
                    "provider {name} needs embedding.endpoint (the service's base URL)"
                )));
            }
        };
        let mut url = service::parse_endpoint("embedding", endpoint).map_err(EmbedError::Config)?;
        let path = provider.call_path(url.path());
        url.set_path(&path);
        let endpoint_label = url.to_string();

        let mut model_id = format!("{name}:{}@{}", spec.model, service::host_of(&url));
        // A service serving a known model (`tei` with bge) needs its
        // prefixes as much as the local encoder does.
        let (query_prefix, document_prefix) = spec.prefixes();
        if !document_prefix.is_empty() {
            // A document prefix changes every vector: cached vectors made
            // without it must not be reused.
            let hash = blake3::hash(document_prefix.as_bytes());
            model_id.push_str(&format!("+prefix{}", &hash.to_hex()[..8]));
        }

        let keys = service::KeySource {
            field: "embedding",
            provider: name,
            file: spec.api_key_file.as_deref(),
            secret: spec.api_key_secret_ref.as_ref(),
            env: spec.api_key_env.as_deref(),
            default_env: provider.default_key_env(),
            custom_endpoint: spec.endpoint.is_some(),
        };
        let api_key = service::read_api_key(&keys, self.base_dir).map_err(EmbedError::Config)?;
        let authorization = api_key
            .as_deref()
            .map(service::bearer)
            .transpose()
            .map_err(EmbedError::Config)?;

        let request_batch = spec
            .request_batch
            .unwrap_or_else(|| provider.default_request_batch());
        if request_batch == 0 {
            return Err(EmbedError::Config(
                "embedding.requestBatch must be at least 1".to_string(),
            ));
        }
        if spec.timeout_seconds == 0 {
            return Err(EmbedError::Config(
                "embedding.timeoutSeconds must be at least 1".to_string(),
            ));
        }
        if spec.dimensions == Some(0) {
            return Err(EmbedError::Config(
                "embedding.dimensions must be at least 1".to_string(),
            ));
        }
        let timeout = Duration::from_secs(u64::from(spec.timeout_seconds));
        let client = Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("trellis/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EmbedError::Service {
                endpoint: endpoint_label.clone(),
                reason: format!("cannot set up the HTTP client: {}", service::describe(e)),
            })?;

        let mut embedder = HttpEmbedder {
            provider,
            client,
            url,
            endpoint: endpoint_label,
            model: spec.model.clone(),
            model_id,
            authorization,
            api_key,
            dimensions: spec.dimensions.unwrap_or(0) as usize,
            dimensions_source: if spec.dimensions.is_some() {
                "embedding.dimensions"
            } else {
                "the probe request"
            },
            request_batch: request_batch as usize,
            timeout,
            max_retries: spec.max_retries,
            backoff_base: self.backoff_base,
            max_delay: self.max_delay,
            max_response_bytes: self.max_response_bytes,
            query_prefix,
            document_prefix,
        };
        if embedder.dimensions == 0 {
            let probe = embedder.request(&[PROBE_TEXT.to_string()], InputKind::Document)?;
            embedder.dimensions = probe.first().map_or(0, Vec::len);
            tracing::debug!(
                endpoint = %embedder.endpoint,
                dimensions = embedder.dimensions,
                "learnt the embedding dimensions from a probe request"
            );
        }
        Ok(embedder)
    }
}

impl HttpEmbedder {
    /// Starts building the embedder a profile asks for (`provider` must be
    /// `openai`, `voyage` or `tei`).
    pub fn builder(spec: &EmbeddingSpec) -> HttpEmbedderBuilder<'_> {
        HttpEmbedderBuilder {
            spec,
            base_dir: None,
            backoff_base: DEFAULT_BACKOFF_BASE,
            max_delay: DEFAULT_MAX_DELAY,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// The URL embeddings are posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn error(&self, reason: impl Into<String>) -> EmbedError {
        EmbedError::Service {
            endpoint: self.endpoint.clone(),
            reason: reason.into(),
        }
    }

    /// Embeds `texts` (already prefixed) in requests of at most
    /// `requestBatch` texts.
    fn embed_all(&self, texts: Vec<String>, kind: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.request_batch) {
            out.extend(self.request(batch, kind)?);
        }
        Ok(out)
    }

    /// One request, retried while the failure is transient; checked and
    /// normalised vectors in input order.
    fn request(&self, texts: &[String], kind: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = self
            .provider
            .request_body(&self.model, texts, kind)
            .map_err(|e| self.error(format!("cannot encode the request: {e}")))?;
        let mut attempt: u32 = 0;
        loop {
            let span = tracing::debug_span!(
                "embed_request",
                provider = self.provider.name(),
                endpoint = %self.endpoint,
                texts = texts.len(),
                attempt,
            );
            let _entered = span.enter();
            let started = Instant::now();
            let failure = match self.send(&body) {
                Ok(bytes) => {
                    tracing::debug!(
                        bytes = bytes.len(),
                        ms = started.elapsed().as_millis() as u64,
                        "embeddings received"
                    );
                    return self.check(&bytes, texts.len());
                }
                Err(failure) => failure,
            };
            match failure {
                Failure::Permanent(reason) => return Err(self.error(reason)),
                Failure::Transient {
                    reason,
                    retry_after,
                } => {
                    if attempt >= self.max_retries {
                        let attempts = attempt + 1;
                        return Err(self.error(format!(
                            "gave up after {attempts} attempt{} (maxRetries {}): {reason}",
                            if attempts == 1 { "" } else { "s" },
                            self.max_retries
                        )));
                    }
                    let delay = match retry_after {
                        Some(wait) => wait.min(self.max_delay),
                        None => self.backoff(attempt),
                    };
                    tracing::warn!(
                        endpoint = %self.endpoint,
                        attempt,
                        delay_ms = delay.as_millis() as u64,
                        "embedding request failed, retrying: {reason}"
                    );
                    std::thread::sleep(delay);
                    attempt += 1;
                }
            }
        }
    }

    /// Posts one body and reads the answer.
    fn send(&self, body: &[u8]) -> Result<Vec<u8>, Failure> {
        let mut request = self
            .client
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let response = request.send().map_err(|e| self.transport_failure(e))?;
        let status = response.status();
        let retry_after = service::retry_after(&response);
        let bytes = self.read_body(response)?;
        if status.is_success() {
            return Ok(bytes);
        }
        let message = service::service_message(&bytes, self.api_key.as_deref());
        let reason = format!("HTTP {status}{message}");
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            Err(Failure::Transient {
                reason,
                retry_after,
            })
        } else {
            Err(Failure::Permanent(reason))
        }
    }

    fn read_body(&self, response: Response) -> Result<Vec<u8>, Failure> {
        service::read_body(response, self.max_response_bytes).map_err(|e| match e {
            BodyError::Read(reason) => Failure::Transient {
                reason,
                retry_after: None,
            },
            BodyError::TooLarge(reason) => Failure::Permanent(reason),
        })
    }

    /// Connection failures, timeouts and connections dropped mid-request
    /// are worth another attempt; anything else is not.
    fn transport_failure(&self, error: reqwest::Error) -> Failure {
        let transient = error.is_timeout() || error.is_connect() || error.is_request();
        let reason = if error.is_timeout() {
            format!(
                "no answer within {} s (timeoutSeconds): {}",
                self.timeout.as_secs(),
                service::describe(error)
            )
        } else {
            service::describe(error)
        };
        if transient {
            Failure::Transient {
                reason,
                retry_after: None,
            }
        } else {
            Failure::Permanent(reason)
        }
    }

    /// Parses an answer and checks it holds one finite vector of the
    /// expected length per input, then normalises each.
    fn check(&self, body: &[u8], inputs: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors = self
            .provider
            .parse_vectors(body, inputs)
            .map_err(|reason| self.error(reason))?;
        if vectors.len() != inputs {
            return Err(self.error(format!(
                "{} vectors returned for {inputs} inputs",
                vectors.len()
            )));
        }
        // Before the probe has learnt the dimensions, the first vector sets
        // them.
        let expected = match self.dimensions {
            0 => vectors.first().map_or(0, Vec::len),
            known => known,
        };
        if expected == 0 {
            return Err(self.error("the service returned an empty vector"));
        }
        for (i, v) in vectors.iter_mut().enumerate() {
            if v.len() != expected {
                let source = match self.dimensions {
                    0 => "the first vector",
                    _ => self.dimensions_source,
                };
                return Err(self.error(format!(
                    "vector {i} has {} dimensions, expected {expected} (from {source})",
                    v.len()
                )));
            }
            if v.iter().any(|x| !x.is_finite()) {
                return Err(self.error(format!("vector {i} holds a non-finite value")));
            }
            normalize(v);
        }
        Ok(vectors)
    }

    fn backoff(&self, attempt: u32) -> Duration {
        service::backoff(self.backoff_base, self.max_delay, attempt)
    }
}

impl Embedder for HttpEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The service does the rest of the recipe; what is asked of it here
    /// is the model (in the id), the document prefix (in the id) and the
    /// dimension (a cache file is kept per dimension).
    fn cache_id(&self) -> String {
        self.model_id.clone()
    }

    fn query_cache_id(&self) -> String {
        let prefix = blake3::hash(self.query_prefix.as_bytes());
        format!("{}#query{}", self.model_id, &prefix.to_hex()[..8])
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let prefixed = texts
            .iter()
            .map(|t| format!("{}{t}", self.document_prefix))
            .collect();
        self.embed_all(prefixed, InputKind::Document)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.embed_all(
            vec![format!("{}{text}", self.query_prefix)],
            InputKind::Query,
        )?;
        vectors
            .pop()
            .ok_or_else(|| self.error("no vector returned for the query"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(index: Option<usize>, x: f32) -> ListItem {
        ListItem {
            embedding: vec![x],
            index,
        }
    }

    #[test]
    fn list_items_are_put_in_input_order_by_index() {
        let ordered = in_input_order(
            vec![item(Some(2), 2.0), item(Some(0), 0.0), item(Some(1), 1.0)],
            3,
        )
        .unwrap();
        assert_eq!(ordered, vec![vec![0.0], vec![1.0], vec![2.0]]);
        let unindexed = in_input_order(vec![item(None, 5.0), item(None, 6.0)], 2).unwrap();
        assert_eq!(unindexed, vec![vec![5.0], vec![6.0]]);
    }

    #[test]
    fn list_items_must_cover_every_input_once() {
        assert!(in_input_order(vec![item(Some(0), 0.0)], 2).is_err());
        assert!(in_input_order(vec![item(Some(0), 0.0), item(Some(0), 1.0)], 2).is_err());
        assert!(in_input_order(vec![item(Some(0), 0.0), item(Some(5), 1.0)], 2).is_err());
        assert!(in_input_order(vec![item(Some(0), 0.0), item(None, 1.0)], 2).is_err());
    }

    #[test]
    fn openai_style_paths_get_one_v1() {
        assert_eq!(Provider::OpenAi.call_path("/"), "/v1/embeddings");
        assert_eq!(Provider::OpenAi.call_path("/v1"), "/v1/embeddings");
        assert_eq!(
            Provider::Voyage.call_path("/proxy/v1/"),
            "/proxy/v1/embeddings"
        );
        assert_eq!(Provider::OpenAi.call_path("/proxy"), "/proxy/v1/embeddings");
        assert_eq!(Provider::Tei.call_path("/"), "/embed");
        assert_eq!(Provider::Tei.call_path("/tei"), "/tei/embed");
    }

    #[test]
    fn no_service_is_contacted_to_reject_a_bad_configuration() {
        let spec = |provider, endpoint: Option<&str>| EmbeddingSpec {
            provider,
            endpoint: endpoint.map(str::to_string),
            dimensions: Some(4),
            ..EmbeddingSpec::default()
        };
        let build = |s: &EmbeddingSpec| {
            HttpEmbedder::builder(s)
                .build()
                .err()
                .map(|e| e.to_string())
        };
        let tei_without_endpoint = build(&spec(EmbeddingProvider::Tei, None)).unwrap();
        assert!(
            tei_without_endpoint.contains("embedding.endpoint"),
            "{tei_without_endpoint}"
        );
        let with_credentials = build(&spec(
            EmbeddingProvider::Tei,
            Some("http://user:secret@localhost:8080"),
        ))
        .unwrap();
        assert!(!with_credentials.contains("secret"), "{with_credentials}");
        let not_http = build(&spec(EmbeddingProvider::Tei, Some("ftp://localhost"))).unwrap();
        assert!(not_http.contains("http"), "{not_http}");
        assert!(build(&spec(EmbeddingProvider::Local, Some("http://localhost"))).is_some());
        let zero_batch = EmbeddingSpec {
            request_batch: Some(0),
            ..spec(EmbeddingProvider::Tei, Some("http://localhost:8080"))
        };
        assert!(build(&zero_batch).unwrap().contains("requestBatch"));
    }

    #[test]
    fn model_ids_name_provider_model_and_host() {
        let spec = EmbeddingSpec {
            provider: EmbeddingProvider::Tei,
            model: "bge-small-en-v1.5".into(),
            endpoint: Some("http://tei.search.svc:8080/".into()),
            dimensions: Some(384),
            ..EmbeddingSpec::default()
        };
        let embedder = HttpEmbedder::builder(&spec).build().unwrap();
        assert_eq!(
            embedder.model_id(),
            "tei:bge-small-en-v1.5@tei.search.svc:8080"
        );
        assert_eq!(embedder.endpoint(), "http://tei.search.svc:8080/embed");
        assert_eq!(embedder.dimensions(), 384);
        let prefixed = EmbeddingSpec {
            document_prefix: Some("passage: ".into()),
            ..spec
        };
        let embedder = HttpEmbedder::builder(&prefixed).build().unwrap();
        assert!(
            embedder
                .model_id()
                .starts_with("tei:bge-small-en-v1.5@tei.search.svc:8080+prefix")
        );
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let spec = EmbeddingSpec {
            provider: EmbeddingProvider::Tei,
            endpoint: Some("http://localhost:8080".into()),
            dimensions: Some(4),
            ..EmbeddingSpec::default()
        };
        let embedder = HttpEmbedder::builder(&spec)
            .with_backoff_base(Duration::from_millis(100))
            .with_max_delay(Duration::from_millis(1000))
            .build()
            .unwrap();
        for attempt in 0..4 {
            let full = Duration::from_millis(100 * (1 << attempt));
            let delay = embedder.backoff(attempt);
            assert!(delay <= full && delay >= full / 2, "{attempt}: {delay:?}");
        }
        assert!(embedder.backoff(30) <= Duration::from_millis(1000));
    }
}
