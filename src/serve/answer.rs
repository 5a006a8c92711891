//! `POST /v1/answer`: the route's generation stage over a retrieval, as
//! JSON or, when the caller accepts `text/event-stream`, as server-sent
//! events: the answer's text as the model writes it (`text` events), then
//! the whole answer with its citations and grounding (`answer`), or an
//! `error`.
//!
//! The request, its auth, ACL and limits are `/v1/retrieve`'s: the model
//! reads only what the caller's token may see, because it reads only what
//! retrieval selected under that token's ACL. Answers have a concurrency
//! limit of their own, since each holds a model call for seconds.
//!
//! A generator that cannot be reached fails the answer with 503 and says
//! why; retrieval goes on being served.

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tokio::sync::mpsc;

use crate::generate::GenerateError;

use super::api::{AnswerResponse, ErrorBody, ErrorDetail};
use super::{ApiError, Retrieval, Service, run_retrieval};

/// What the generating thread hands the response.
enum Piece {
    /// Text as the model wrote it.
    Text(String),
    /// The end: the answer, or why there is none.
    Done(Box<Result<AnswerResponse, ApiError>>),
}

pub(super) async fn answer(
    State(service): State<Arc<Service>>,
    headers: HeaderMap,
    body: Result<Json<serde_json::Value>, JsonRejection>,
) -> Response {
    let started = Instant::now();
    let streaming = accepts_events(&headers);
    let result = start(&service, &headers, body, streaming).await;
    let mut pieces = match result {
        Ok(pieces) => pieces,
        Err(e) => {
            tracing::info!(route = %service.route_name, code = e.code, "answer failed");
            return e.into_response();
        }
    };
    if !streaming {
        // Text pieces are only sent to a stream.
        while let Some(piece) = pieces.recv().await {
            if let Piece::Done(done) = piece {
                return finish(&service, *done, started).map_or_else(
                    |e| e.into_response(),
                    |response| Json(response).into_response(),
                );
            }
        }
        return lost().into_response();
    }
    // The first piece decides the status: an answer that fails before its
    // first word is an error response, not a stream holding one.
    let first = match pieces.recv().await {
        Some(Piece::Done(done)) => match finish(&service, *done, started) {
            Ok(response) => {
                let only = outcome_event(Ok(response));
                return event_stream(futures::stream::iter([Ok(only)]));
            }
            Err(e) => return e.into_response(),
        },
        Some(Piece::Text(text)) => text,
        None => return lost().into_response(),
    };
    let service = Arc::clone(&service);
    let events = futures::stream::unfold(
        (Some(first), pieces, false),
        move |(first, mut pieces, ended)| {
            let service = Arc::clone(&service);
            async move {
                if ended {
                    return None;
                }
                let piece = match first {
                    Some(text) => Some(Piece::Text(text)),
                    None => pieces.recv().await,
                };
                let (event, ended) = match piece {
                    Some(Piece::Text(text)) => (event("text", &TextEvent { text }), false),
                    Some(Piece::Done(done)) => {
                        (outcome_event(finish(&service, *done, started)), true)
                    }
                    None => (outcome_event(Err(lost())), true),
                };
                Some((Ok(event), (None, pieces, ended)))
            }
        },
    );
    event_stream(events)
}

/// A `text/event-stream` response of `events`.
fn event_stream(
    events: impl futures::Stream<Item = Result<String, std::convert::Infallible>> + Send + 'static,
) -> Response {
    let mut response = Response::new(Body::from_stream(events));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Proxies that buffer responses would hold the text back.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Checks the caller, takes an answer permit, runs the retrieval and
/// starts the generation on a thread of its own; its pieces come through
/// the returned channel.
async fn start(
    service: &Arc<Service>,
    headers: &HeaderMap,
    body: Result<Json<serde_json::Value>, JsonRejection>,
    streaming: bool,
) -> Result<mpsc::Receiver<Piece>, ApiError> {
    let acl = service.authorize(headers)?;
    let generator = service.generator.clone().map_err(|reason| {
        ApiError::unavailable(
            "generator_unavailable",
            &format!("the generation stage cannot run: {reason}"),
        )
    })?;
    let Ok(permit) = Arc::clone(&service.answer_permits).try_acquire_owned() else {
        return Err(ApiError::unavailable(
            "overloaded",
            "too many answers being written; retry shortly",
        ));
    };
    let Retrieval {
        answer,
        query,
        loaded,
    } = run_retrieval(service, acl, body).await?;
    let (sender, receiver) = mpsc::channel(256);
    let metrics = service.metrics.clone();
    let route = service.route_name.clone();
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let _span = span.entered();
        let mut on_text = |text: &str| {
            if streaming {
                // A caller that left drops the receiver; the answer is
                // still finished and counted.
                let _ = sender.blocking_send(Piece::Text(text.to_string()));
            }
        };
        let written = generator.answer(
            &query,
            &answer,
            &loaded.index,
            loaded.embedder.as_ref(),
            &mut on_text,
        );
        let done = match written {
            Ok(written) => {
                metrics.answered(&written);
                Ok(AnswerResponse {
                    route,
                    index_version: loaded.index.manifest.version.clone(),
                    common_query: answer.common_query,
                    answer: written,
                })
            }
            Err(e) => {
                metrics.generation_failed(e.reason());
                tracing::warn!(error = %e, "generation failed");
                Err(generation_error(&e))
            }
        };
        let _ = sender.blocking_send(Piece::Done(Box::new(done)));
    });
    Ok(receiver)
}

/// Logs the outcome once, and passes it on.
fn finish(
    service: &Service,
    done: Result<AnswerResponse, ApiError>,
    started: Instant,
) -> Result<AnswerResponse, ApiError> {
    match &done {
        Ok(response) => tracing::info!(
            route = %service.route_name,
            provider = response.answer.provider,
            sentences = response.answer.sentences.len(),
            unsupported = response.answer.unsupported,
            ms = started.elapsed().as_millis() as u64,
            "answer"
        ),
        Err(e) => tracing::info!(route = %service.route_name, code = e.code, "answer failed"),
    }
    done
}

/// The API error of a failed generation: the generator's trouble is 503
/// (retrieval is unaffected), a request the service refused is 502.
fn generation_error(error: &GenerateError) -> ApiError {
    match error {
        GenerateError::Embed(_) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "checking the answer against its sources failed",
        ),
        GenerateError::Refused { .. } if !error.generator_unavailable() => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "generator_refused",
            error.to_string(),
        ),
        _ => ApiError::unavailable("generator_unavailable", &error.to_string()),
    }
}

/// The generating thread ended without a word: it panicked.
fn lost() -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "the answer was lost",
    )
}

/// Whether the caller asked for server-sent events.
fn accepts_events(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|media| {
            media
                .split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/event-stream"))
        })
}

#[derive(Serialize)]
struct TextEvent {
    text: String,
}

/// The last event: `answer` or `error`.
fn outcome_event(outcome: Result<AnswerResponse, ApiError>) -> String {
    match outcome {
        Ok(response) => event("answer", &response),
        Err(e) => event(
            "error",
            &ErrorBody {
                error: ErrorDetail {
                    code: e.code.to_string(),
                    message: e.message,
                },
            },
        ),
    }
}

/// One server-sent event; JSON holds no raw newline, so the data is one
/// line.
fn event(name: &str, data: &impl Serialize) -> String {
    let json = serde_json::to_string(data).unwrap_or_else(|_| "{}".to_string());
    format!("event: {name}\ndata: {json}\n\n")
}
