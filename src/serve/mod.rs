//! The retrieval service: one RetrievalRoute over one index version, over
//! HTTP. It is what every retrieval pod runs, so it starts listening at
//! once (liveness), loads the index and warms the query embedder in the
//! background (readiness), bounds every request and drains in-flight ones
//! on shutdown.
//!
//! Endpoints: `POST /v1/retrieve`, `GET /v1/info`, `GET /healthz`,
//! `GET /readyz`, `GET /metrics` (Prometheus text) and `GET /openapi.json`
//! (see [`api`]), and a console for people at `GET /` ([`console`]).
//! Every response carries an `x-request-id`, the caller's when it sent a
//! usable one, and every request runs in a tracing span with that id.

mod answer;
pub mod api;
pub mod auth;
pub mod connections;
mod console;
mod metrics;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use thiserror::Error;
use tokio::sync::Semaphore;

use crate::embed::batch::{MOST_QUERIES_PER_BATCH, QueryBatcher};
use crate::generate::Generator;
use crate::retrieve::{Filter, LoadedRoute, RetrieveError};
use crate::spec::{AnchorMode, RetrievalRouteSpec};
use api::{DocumentsFilter, ErrorBody, ErrorDetail};

pub use api::{
    AnswerResponse, Info, RequestFilters, RetrieveRequest, RetrieveResponse, SelectionOverrides,
};
pub use auth::{Access, Tokens};
pub use metrics::Metrics;

/// Bounds on what one request may ask for, and on the connections that
/// carry requests ([`connections`]).
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest request body, in bytes.
    pub body_bytes: usize,
    /// Longest query, in characters.
    pub query_chars: usize,
    /// Largest `k`.
    pub max_k: usize,
    /// Time one retrieval may take before the request fails with 504.
    pub timeout: Duration,
    /// Retrievals running at once; more get 503 with `Retry-After`.
    pub concurrency: usize,
    /// Answers (`/v1/answer`) being written at once, each holding a call
    /// to the model service; more get 503 with `Retry-After`.
    pub answer_concurrency: usize,
    /// Connections served at once, lowered to fit the descriptor limit
    /// ([`connections::connection_cap`]).
    pub max_connections: usize,
    /// Time a client has to send a request head, counted from when the
    /// server starts waiting for it: on a keep-alive connection, also how
    /// long it may sit idle between requests.
    pub header_timeout: Duration,
    /// Time a client has to send a whole request body (then 408).
    pub body_timeout: Duration,
    /// After shutdown, time in-flight requests have to finish before the
    /// connections still open are closed.
    pub drain_timeout: Duration,
    /// Largest retrieval response, in bytes of JSON: past it, results'
    /// passages are cut to a window around their sentence, then the
    /// lowest results are left out, and the response says `truncated`
    /// ([`api::fit_response`]).
    pub response_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            body_bytes: 64 * 1024,
            query_chars: 2_000,
            max_k: 50,
            timeout: Duration::from_secs(10),
            concurrency: 16,
            answer_concurrency: 4,
            max_connections: 1_024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            drain_timeout: Duration::from_secs(10),
            response_bytes: 2 * 1024 * 1024,
        }
    }
}

/// Why the service could not start.
#[derive(Debug, Error)]
pub enum ServeError {
    #[error("{addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}

/// The shared state of every request.
pub struct Service {
    route_name: String,
    route: RetrievalRouteSpec,
    limits: Limits,
    /// Bearer tokens and what each may see; `None` serves everyone
    /// everything. Replaced whole when the token file changes
    /// ([`Service::reload_tokens`]): a rotated Secret takes effect without
    /// a restart.
    tokens: Option<RwLock<Arc<Tokens>>>,
    loaded: OnceLock<Arc<LoadedRoute>>,
    /// Held by a retrieval until its work ends, even past its timeout, so
    /// that abandoned work still counts against the limit.
    permits: Arc<Semaphore>,
    /// Held by an answer from before its retrieval until its last token.
    answer_permits: Arc<Semaphore>,
    /// The route's generation stage, or why it could not be built (a
    /// missing key): then `/v1/answer` fails with 503 and retrieval is
    /// served as ever.
    generator: Result<Arc<Generator>, String>,
    metrics: Metrics,
    /// Set once the process is told to stop: `/readyz` fails so that
    /// load balancers take the pod out, while retrievals are still served.
    draining: std::sync::atomic::AtomicBool,
}

impl Service {
    pub fn new(
        route_name: &str,
        route: RetrievalRouteSpec,
        limits: Limits,
        tokens: Option<Tokens>,
    ) -> Self {
        let generator = Generator::from_spec(&route.generation)
            .map(Arc::new)
            .map_err(|e| {
                tracing::error!(error = %e, "the generation stage cannot run; /v1/answer fails");
                e.to_string()
            });
        Self {
            tokens: tokens.map(|t| RwLock::new(Arc::new(t))),
            route_name: route_name.to_string(),
            permits: Arc::new(Semaphore::new(limits.concurrency.max(1))),
            answer_permits: Arc::new(Semaphore::new(limits.answer_concurrency.max(1))),
            generator,
            metrics: Metrics::new(),
            route,
            limits,
            loaded: OnceLock::new(),
            draining: Default::default(),
        }
    }

    /// Makes the service ready: checks that the embedder matches the index
    /// and embeds one query, so that the first request does not pay for
    /// loading the model.
    pub fn set_loaded(&self, loaded: LoadedRoute) -> Result<(), RetrieveError> {
        // Requests' queries are embedded in batches: those that arrive
        // while the encoder is busy share its next pass.
        let metrics = self.metrics.clone();
        let batcher = QueryBatcher::new(loaded.embedder, MOST_QUERIES_PER_BATCH)
            .observed_by(Box::new(move |queries| metrics.query_batch(queries)));
        let loaded = LoadedRoute {
            embedder: Box::new(batcher),
            ..loaded
        };
        loaded.retriever()?;
        if self.route.anchors.mode != AnchorMode::Bm25 {
            loaded.embedder.embed_query("warm-up")?;
        }
        self.metrics.index_loaded(
            &loaded.index.manifest.corpus,
            &loaded.index.manifest.version,
            &loaded.index.manifest.model_id,
        );
        // A second load is a programming error; the first one stays.
        let _ = self.loaded.set(Arc::new(loaded));
        Ok(())
    }

    /// Loaded and not draining: what `/readyz` says.
    pub fn is_ready(&self) -> bool {
        self.loaded.get().is_some() && !self.is_draining()
    }

    /// From now on `/readyz` fails; retrievals are still answered. The
    /// start of a graceful stop: endpoints lists learn of it before the
    /// listener closes.
    pub fn start_draining(&self) {
        self.draining
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Reads the token file again and, when its tokens differ from the
    /// ones in use, puts them in place; `Ok(true)` when they changed. A
    /// file that no longer parses is an error and the tokens in use stay
    /// (a half-written or broken Secret never locks everyone out or lets
    /// everyone in). A service started without tokens stays open.
    ///
    /// A file emptied of tokens revokes them all: every request is refused
    /// (401) until tokens return. Emptying the file is how an operator
    /// withdraws every token at once, and a mounted Secret changes
    /// atomically, so an empty file is never a rotation half done. A file
    /// that cannot be read or holds a malformed line keeps the previous
    /// tokens (an error, not a decision), with a warning.
    pub fn reload_tokens(&self, path: &std::path::Path) -> Result<bool, auth::TokenFileError> {
        let Some(current) = &self.tokens else {
            return Ok(false);
        };
        let fresh = match Tokens::load(path) {
            Err(auth::TokenFileError::Empty(_)) => Tokens::none(),
            other => other?,
        };
        let mut current = current.write().unwrap_or_else(|e| e.into_inner());
        if **current == fresh {
            return Ok(false);
        }
        *current = Arc::new(fresh);
        Ok(true)
    }

    /// The ACL tags a request may see (`None`: all), from its bearer
    /// token when the service has a token file.
    fn authorize(&self, headers: &HeaderMap) -> Result<Option<Vec<String>>, ApiError> {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token);
        self.access(presented)
    }

    /// The ACL tags a presented token may see (`None`: all); wherever the
    /// token came from, it is checked the same way.
    fn access(&self, presented: Option<&str>) -> Result<Option<Vec<String>>, ApiError> {
        let Some(tokens) = &self.tokens else {
            return Ok(None);
        };
        let tokens = Arc::clone(&tokens.read().unwrap_or_else(|e| e.into_inner()));
        let Some(presented) = presented else {
            return Err(ApiError::unauthorized("a bearer token is required"));
        };
        match tokens.check(presented) {
            Some(Access::All) => Ok(None),
            Some(Access::Tags(tags)) => Ok(Some(tags.clone())),
            None => Err(ApiError::unauthorized("the bearer token is not valid")),
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` value. The scheme is
/// matched without regard to case (RFC 9110, 11.1): `bearer` and `BEARER`
/// are the same scheme.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The service's routes.
pub fn router(service: Arc<Service>) -> Router {
    let body_limit = service.limits.body_bytes;
    let openapi = Arc::new(api::openapi_json(
        &service.limits,
        env!("CARGO_PKG_VERSION"),
    ));
    Router::new()
        .route("/v1/retrieve", post(retrieve))
        .route("/v1/answer", post(answer::answer))
        .route("/v1/info", get(info))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .route("/", get(console::page))
        .route("/console/app.js", get(console::app_js))
        .route("/console/console.css", get(console::stylesheet))
        .route("/console/signin.js", get(console::signin_js))
        .route(
            "/openapi.json",
            get(move || {
                let openapi = Arc::clone(&openapi);
                async move { Json(openapi.as_ref().clone()) }
            }),
        )
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
        })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this endpoint does not take that method",
            )
        })
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&service),
            read_body,
        ))
        .layer(axum::middleware::from_fn(probe_lane_only))
        .layer(axum::middleware::from_fn(no_sniffing))
        .layer(axum::middleware::from_fn(request_span))
        .with_state(service)
}

/// Every response says its content type is the one to use: a browser
/// must not guess another for an answer (a document's text inside JSON
/// read as HTML would run as the console's page).
async fn no_sniffing(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let mut response = next.run(request).await;
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// On a connection admitted past the connection limit, answers only the
/// probe and metrics endpoints (see [`connections`]).
async fn probe_lane_only(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let lane = request.extensions().get::<connections::Lane>().copied();
    if lane == Some(connections::Lane::Probe)
        && !connections::PROBE_PATHS.contains(&request.uri().path())
    {
        return ApiError::unavailable(
            "too_many_connections",
            "the service holds as many connections as it may; retry",
        )
        .into_response();
    }
    next.run(request).await
}

/// Reads the whole request body within the body timeout and the size
/// limit, so that a client trickling its body cannot hold a connection
/// and a retrieval slot for as long as it likes.
async fn read_body(
    State(service): State<Arc<Service>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let limits = &service.limits;
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, limits.body_bytes);
    let bytes = match tokio::time::timeout(limits.body_timeout, read).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            return if too_large {
                ApiError::body_too_large(limits.body_bytes).into_response()
            } else {
                ApiError::bad_request("body_unreadable", "the request body could not be read")
                    .into_response()
            };
        }
        Err(_) => {
            let mut response = ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "body_timeout",
                format!(
                    "the request body did not arrive within {} ms",
                    limits.body_timeout.as_millis()
                ),
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
    };
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
    .await
}

const REQUEST_ID: &str = "x-request-id";

/// Runs each request in a span named by its request id (the caller's
/// `x-request-id` when it is short printable ASCII, else a new one) and
/// returns the id in the response.
async fn request_span(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    use tracing::Instrument;
    let id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_string)
        .unwrap_or_else(new_request_id);
    let span = tracing::info_span!(
        "request",
        id = %id,
        method = %request.method(),
        path = %request.uri().path(),
    );
    let mut response = next.run(request).instrument(span).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    response
}

/// A request id unique within the process and unlikely to repeat across
/// processes: a hash of the process id, its start and a counter.
fn new_request_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static START: OnceLock<u128> = OnceLock::new();
    let start = START.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut hasher = blake3::Hasher::new();
    hasher.update(&std::process::id().to_le_bytes());
    hasher.update(&start.to_le_bytes());
    hasher.update(&n.to_le_bytes());
    hasher.finalize().to_hex()[..16].to_string()
}

/// Serves `service` on `listener` until `shutdown` completes, then stops
/// accepting connections and lets in-flight requests finish within the
/// drain timeout (see [`connections`]).
pub async fn run(
    listener: tokio::net::TcpListener,
    service: Arc<Service>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let limits = service.limits.clone();
    let metrics = service.metrics.clone();
    connections::serve(listener, router(service), &limits, &metrics, shutdown).await
}

/// Binds `addr`, naming it in the error.
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, ServeError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// A JSON error with a stable code; never an internal path or a trace.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    retry_after: Option<u32>,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    fn body_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("request body over {limit} bytes"),
        )
    }

    fn unauthorized(message: &str) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    fn unavailable(code: &'static str, message: &str) -> Self {
        Self {
            retry_after: Some(1),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

async fn retrieve(
    State(service): State<Arc<Service>>,
    headers: HeaderMap,
    body: Result<Json<serde_json::Value>, JsonRejection>,
) -> Response {
    let started = Instant::now();
    let result = match service.authorize(&headers) {
        Ok(acl) => run_retrieval(&service, acl, body).await.map(|retrieval| {
            let answer = retrieval.answer;
            let mut response = RetrieveResponse {
                route: service.route_name.clone(),
                index_version: retrieval.loaded.index.manifest.version.clone(),
                hits: answer.hits,
                context: answer.context,
                common_query: answer.common_query,
                named_documents: answer.named_documents,
                context_budget: answer.context_budget,
                routing: answer.routing,
                reranked: answer.rerank.map(|r| r.reranked),
                truncated: false,
            };
            api::fit_response(&mut response, service.limits.response_bytes);
            response
        }),
        Err(e) => Err(e),
    };
    let outcome = match &result {
        Ok(_) => "ok",
        Err(e) => e.code,
    };
    service
        .metrics
        .request(&service.route_name, outcome, started.elapsed());
    match result {
        Ok(response) => {
            tracing::info!(
                route = %service.route_name,
                results = response.hits.len(),
                sentences = response
                    .hits
                    .iter()
                    .map(|h| 1 + h.highlights.len())
                    .sum::<usize>(),
                ms = started.elapsed().as_millis() as u64,
                "retrieve"
            );
            Json(response).into_response()
        }
        Err(e) => {
            tracing::info!(route = %service.route_name, code = e.code, "retrieve failed");
            e.into_response()
        }
    }
}

/// What one request's retrieval selected, and from what.
struct Retrieval {
    answer: crate::retrieve::Answer,
    query: String,
    loaded: Arc<LoadedRoute>,
}

/// Reads a retrieval request (`/v1/retrieve` and `/v1/answer` take the
/// same), checks it against the limits and runs the route's three stages
/// under the caller's ACL, within the retrieval timeout.
async fn run_retrieval(
    service: &Arc<Service>,
    acl: Option<Vec<String>>,
    body: Result<Json<serde_json::Value>, JsonRejection>,
) -> Result<Retrieval, ApiError> {
    let Json(request) = body.map_err(|rejection| match rejection {
        JsonRejection::BytesRejection(_) => ApiError::body_too_large(service.limits.body_bytes),
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the body must be JSON, sent with content-type: application/json",
        ),
        other => ApiError::bad_request("invalid_request", other.body_text()),
    })?;
    let request = RetrieveRequest::from_json(request)
        .map_err(|reason| ApiError::bad_request("invalid_request", reason))?;
    let query = request.query.trim();
    if query.is_empty() {
        return Err(ApiError::bad_request("empty_query", "the query is empty"));
    }
    let chars = query.chars().count();
    if chars > service.limits.query_chars {
        return Err(ApiError::bad_request(
            "query_too_long",
            format!(
                "the query has {chars} characters; at most {} are accepted",
                service.limits.query_chars
            ),
        ));
    }
    let k = request
        .k
        .map_or(service.route.selection.top_k as usize, |k| k as usize);
    if k == 0 || k > service.limits.max_k {
        return Err(ApiError::bad_request(
            "invalid_k",
            format!("k must be between 1 and {}", service.limits.max_k),
        ));
    }
    let mut route = service.route.clone();
    if let Some(mode) = request.mode {
        route.anchors.mode = mode;
    }
    route.selection = request
        .selection
        .apply(&route.selection, service.limits.max_k as u32)
        .map_err(|reason| ApiError::bad_request("invalid_selection", reason))?;
    let Some(loaded) = service.loaded.get().cloned() else {
        return Err(ApiError::unavailable(
            "not_ready",
            "the index is still loading",
        ));
    };
    let Ok(permit) = Arc::clone(&service.permits).try_acquire_owned() else {
        return Err(ApiError::unavailable(
            "overloaded",
            "too many requests in flight; retry shortly",
        ));
    };
    let mut filter = Filter {
        acl,
        section_prefix: request.filters.section_prefix,
        metadata: request.filters.metadata,
        values: request.filters.values.map(Into::into),
        ..Filter::default()
    };
    match request.filters.documents {
        None => {}
        Some(DocumentsFilter::Ids(ids)) => filter.documents = Some(ids),
        Some(DocumentsFilter::Where(conditions)) => {
            filter.documents = conditions.ids;
            filter.path_prefix = conditions.path_prefix;
            filter.author = conditions.author;
            filter.dated = conditions.date;
            filter.language = conditions.language;
            filter.fields = conditions.fields;
        }
    }
    let query = query.to_string();
    let asked = query.clone();
    let metrics = service.metrics.clone();
    // The request's span, so that the query span nests under it.
    let span = tracing::Span::current();
    let work = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let _span = span.entered();
        let retriever = loaded.retriever()?;
        let vector = if route.anchors.mode == AnchorMode::Bm25 {
            None
        } else {
            let started = Instant::now();
            let vector = loaded.embedder.embed_query(&query)?;
            metrics.query_embedded(started.elapsed());
            Some(vector)
        };
        let answer =
            retriever.retrieve_embedded(&route, &query, vector.as_deref(), Some(k), &filter)?;
        if let Some(outcome) = answer.rerank {
            metrics.reranked(outcome);
        }
        Ok::<_, RetrieveError>((answer, loaded))
    });
    let outcome = tokio::time::timeout(service.limits.timeout, work).await;
    let (answer, loaded) = match outcome {
        Err(_) => {
            return Err(ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "timeout",
                format!(
                    "retrieval took longer than {} ms",
                    service.limits.timeout.as_millis()
                ),
            ));
        }
        Ok(Err(join)) => {
            tracing::error!(error = %join, "retrieval task failed");
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "retrieval failed",
            ));
        }
        Ok(Ok(Err(e))) => {
            tracing::error!(error = %e, "retrieval failed");
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "retrieval failed",
            ));
        }
        Ok(Ok(Ok(done))) => done,
    };
    Ok(Retrieval {
        answer,
        query: asked,
        loaded,
    })
}

async fn info(State(service): State<Arc<Service>>, headers: HeaderMap) -> Response {
    let acl = match service.authorize(&headers) {
        Ok(acl) => acl,
        Err(e) => return e.into_response(),
    };
    let Some(loaded) = service.loaded.get() else {
        return ApiError::unavailable("not_ready", "the index is still loading").into_response();
    };
    let m = &loaded.index.manifest;
    Json(Info {
        route: service.route_name.clone(),
        corpus: m.corpus.clone(),
        mode: service.route.anchors.mode,
        index_version: m.version.clone(),
        model: m.model_id.clone(),
        dimensions: m.dims,
        counts: acl.is_none().then(|| m.counts.clone()),
    })
    .into_response()
}

async fn readyz(State(service): State<Arc<Service>>) -> Response {
    if service.is_ready() {
        "ready".into_response()
    } else if service.is_draining() {
        ApiError::unavailable("shutting_down", "the service is stopping").into_response()
    } else {
        ApiError::unavailable("not_ready", "the index is still loading").into_response()
    }
}

async fn metrics_text(State(service): State<Arc<Service>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        service.metrics.encode(),
    )
        .into_response()
}
