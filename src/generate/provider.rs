//! The model services: any OpenAI-compatible `/v1/chat/completions`
//! (OpenAI, Azure OpenAI's `/openai/v1`, vLLM, llama.cpp's server,
//! Ollama, TGI) and Anthropic's `/v1/messages`.
//!
//! Every call streams (server-sent events), whether or not the caller
//! wants the text as it comes: one code path for both, and an answer that
//! breaks off shows as broken (no end event), never as a short answer.
//!
//! Failures are bounded and named as the embedding providers' are: one
//! deadline for the whole answer (`timeoutSeconds`); retries on 429, 5xx
//! and connection failures, after `Retry-After` when the service gives
//! one, but only before any of the answer arrived (a retried answer
//! would repeat what the caller already has); the API key is never
//! logged and is scrubbed from quoted messages.

use std::io::{BufRead, BufReader, Read};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::Url;
use reqwest::blocking::Client;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::embed::service::{self, KeySource};
use crate::spec::{GenerationProvider, GenerationSpec};

use super::{GenerateError, Prompt};

/// Longest wait before a retry, from the backoff or a `Retry-After`.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);
/// First retry delay; doubled on every further retry.
const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// Largest streamed answer read, in bytes of events: far above any
/// `maxAnswerTokens`' worth, a bound on a service that never stops.
const MAX_STREAM_BYTES: u64 = 16 * 1024 * 1024;
/// Largest error body read.
const MAX_ERROR_BYTES: u64 = 64 * 1024;
/// Time a reachability check waits for a connection.
const REACHABLE_TIMEOUT: Duration = Duration::from_secs(3);
/// The Messages API version Trellis speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The model's answer to one call.
#[derive(Clone, Debug, Default)]
pub struct Completion {
    pub text: String,
    /// The model as the service named it (else the route's).
    pub model: String,
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
    pub finish_reason: Option<String>,
}

/// What went wrong with one attempt.
enum Failure {
    /// 429, 5xx or no connection: another attempt may succeed.
    Transient {
        status: Option<u16>,
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Anything a retry cannot fix, or that came too late to retry.
    Final(GenerateError),
}

/// A model service reached over HTTP.
pub(super) struct ChatClient {
    provider: GenerationProvider,
    client: Client,
    url: Url,
    /// The call's URL, named in errors.
    endpoint: String,
    model: String,
    headers: HeaderMap,
    /// Scrubbed from any service message quoted in errors.
    api_key: Option<String>,
    max_answer_tokens: u32,
    temperature: f32,
    timeout: Duration,
    max_retries: u32,
}

impl ChatClient {
    pub(super) fn new(spec: &GenerationSpec) -> Result<Self, GenerateError> {
        let (name, default_endpoint, default_env, call) = match spec.provider {
            GenerationProvider::Openai => (
                "openai",
                "https://api.openai.com",
                "OPENAI_API_KEY",
                "chat/completions",
            ),
            GenerationProvider::Anthropic => (
                "anthropic",
                "https://api.anthropic.com",
                "ANTHROPIC_API_KEY",
                "messages",
            ),
            GenerationProvider::Extractive => {
                return Err(GenerateError::Config(
                    "provider extractive calls no model service".to_string(),
                ));
            }
        };
        let base = spec.endpoint.as_deref().unwrap_or(default_endpoint);
        let mut url = service::parse_endpoint("generation", base).map_err(GenerateError::Config)?;
        let path = url.path().trim_end_matches('/').to_string();
        let path = match path.ends_with("/v1") {
            true => format!("{path}/{call}"),
            false => format!("{path}/v1/{call}"),
        };
        url.set_path(&path);
        let api_key = service::read_api_key(
            &KeySource {
                field: "generation",
                provider: name,
                file: spec.api_key_file.as_deref(),
                secret: spec.api_key_secret_ref.as_ref(),
                env: spec.api_key_env.as_deref(),
                default_env: Some(default_env),
                custom_endpoint: spec.endpoint.is_some(),
            },
            None::<&Path>,
        )
        .map_err(GenerateError::Config)?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = &api_key {
            match spec.provider {
                GenerationProvider::Anthropic => {
                    let mut value = HeaderValue::from_str(key).map_err(|_| {
                        GenerateError::Config(
                            "the API key holds characters an HTTP header cannot carry".into(),
                        )
                    })?;
                    value.set_sensitive(true);
                    headers.insert("x-api-key", value);
                }
                _ => {
                    let value = service::bearer(key).map_err(GenerateError::Config)?;
                    headers.insert(AUTHORIZATION, value);
                }
            }
        }
        if spec.provider == GenerationProvider::Anthropic {
            headers.insert(
                "anthropic-version",
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
        }
        let timeout = Duration::from_secs(u64::from(spec.timeout_seconds.max(1)));
        // No idle connections are kept: a server that closes an idle one
        // (llama.cpp's does after a few seconds) would fail the next answer
        // on it, and a new connection costs little beside an answer's
        // seconds.
        let client = Client::builder()
            .pool_max_idle_per_host(0)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| GenerateError::Config(format!("HTTP client: {e}")))?;
        Ok(Self {
            provider: spec.provider,
            client,
            endpoint: url.to_string(),
            url,
            model: spec.model.clone(),
            headers,
            api_key,
            max_answer_tokens: spec.max_answer_tokens,
            temperature: spec.temperature,
            timeout,
            max_retries: spec.max_retries,
        })
    }

    pub(super) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// A TCP connection to the service's host and port.
    pub(super) fn reachable(&self) -> Result<(), GenerateError> {
        connect(&self.url).map_err(|reason| GenerateError::Unreachable {
            endpoint: self.endpoint.clone(),
            reason,
        })
    }

    /// The model's answer to `prompt`; `on_text` gets each piece as it
    /// arrives.
    pub(super) fn complete(
        &self,
        prompt: &Prompt,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Completion, GenerateError> {
        let body = self.request_body(prompt);
        let mut attempt = 0;
        loop {
            match self.attempt(&body, on_text) {
                Ok(completion) => return Ok(completion),
                Err(Failure::Final(error)) => return Err(error),
                Err(Failure::Transient {
                    status,
                    reason,
                    retry_after,
                }) => {
                    if attempt >= self.max_retries {
                        return Err(match status {
                            Some(status) => GenerateError::Refused {
                                endpoint: self.endpoint.clone(),
                                status,
                                reason,
                            },
                            None => GenerateError::Unreachable {
                                endpoint: self.endpoint.clone(),
                                reason,
                            },
                        });
                    }
                    let delay = retry_after.map_or_else(
                        || service::backoff(BACKOFF_BASE, MAX_RETRY_DELAY, attempt),
                        |d| d.min(MAX_RETRY_DELAY),
                    );
                    tracing::warn!(
                        endpoint = %self.endpoint,
                        attempt = attempt + 1,
                        delay_ms = delay.as_millis() as u64,
                        %reason,
                        "generator call failed; retrying"
                    );
                    std::thread::sleep(delay);
                    attempt += 1;
                }
            }
        }
    }

    fn request_body(&self, prompt: &Prompt) -> Vec<u8> {
        let body = match self.provider {
            GenerationProvider::Anthropic => json!({
                "model": self.model,
                "max_tokens": self.max_answer_tokens,
                "temperature": self.temperature,
                "system": prompt.system,
                "messages": [{"role": "user", "content": prompt.user}],
                "stream": true,
            }),
            _ => json!({
                "model": self.model,
                "messages": [
                    {"role": "system", "content": prompt.system},
                    {"role": "user", "content": prompt.user},
                ],
                "max_tokens": self.max_answer_tokens,
                "temperature": self.temperature,
                "stream": true,
                "stream_options": {"include_usage": true},
            }),
        };
        body.to_string().into_bytes()
    }

    fn attempt(&self, body: &[u8], on_text: &mut dyn FnMut(&str)) -> Result<Completion, Failure> {
        let deadline = Instant::now() + self.timeout;
        let response = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .timeout(self.timeout)
            .body(body.to_vec())
            .send();
        let response = match response {
            Ok(response) => response,
            Err(e) if e.is_timeout() => return Err(Failure::Final(self.timed_out())),
            Err(e) => {
                return Err(Failure::Transient {
                    status: None,
                    reason: service::describe(e),
                    retry_after: None,
                });
            }
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = service::retry_after(&response);
            let mut bytes = Vec::new();
            // An unreadable error body still leaves its status to report.
            let _ = response.take(MAX_ERROR_BYTES).read_to_end(&mut bytes);
            let reason = format!(
                "HTTP {status}{}",
                service::service_message(&bytes, self.api_key.as_deref())
            );
            if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
                return Err(Failure::Transient {
                    status: Some(status.as_u16()),
                    reason,
                    retry_after,
                });
            }
            return Err(Failure::Final(GenerateError::Refused {
                endpoint: self.endpoint.clone(),
                status: status.as_u16(),
                reason,
            }));
        }
        let mut stream = Stream {
            completion: Completion {
                model: self.model.clone(),
                ..Completion::default()
            },
            done: false,
        };
        let mut reader = BufReader::new(response.take(MAX_STREAM_BYTES));
        let mut event = Event::default();
        let mut line = String::new();
        loop {
            line.clear();
            let read = reader.read_line(&mut line);
            match read {
                Ok(0) => break,
                Ok(_) => {}
                Err(_) if Instant::now() >= deadline => {
                    return Err(Failure::Final(self.timed_out()));
                }
                Err(e) => {
                    return Err(Failure::Final(self.interrupted(&stream, e.to_string())));
                }
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                let finished = std::mem::take(&mut event);
                if !finished.data.is_empty() {
                    self.handle(&finished, &mut stream, on_text)
                        .map_err(Failure::Final)?;
                }
                if stream.done {
                    break;
                }
                continue;
            }
            if let Some(data) = field(line, "data") {
                if !event.data.is_empty() {
                    event.data.push('\n');
                }
                event.data.push_str(data);
            } else if let Some(name) = field(line, "event") {
                event.name = name.to_string();
            }
            // Comments (`:`) and other fields are ignored, as the
            // event-stream format says.
        }
        if !stream.done && !event.data.is_empty() {
            self.handle(&event, &mut stream, on_text)
                .map_err(Failure::Final)?;
        }
        if !stream.done {
            let reason = if reader.get_ref().limit() == 0 {
                format!("the answer passed {MAX_STREAM_BYTES} bytes")
            } else {
                "the stream ended before the service said the answer was complete".to_string()
            };
            return Err(Failure::Final(self.interrupted(&stream, reason)));
        }
        Ok(stream.completion)
    }

    /// Reads one event into the answer.
    fn handle(
        &self,
        event: &Event,
        stream: &mut Stream,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(), GenerateError> {
        if event.data == "[DONE]" {
            stream.done = true;
            return Ok(());
        }
        let value: Value = serde_json::from_str(&event.data).map_err(|e| {
            self.protocol(format!(
                "an event that is not JSON ({e}): {:.200}",
                event.data
            ))
        })?;
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_string);
            let message = match &self.api_key {
                Some(key) => message.replace(key.as_str(), "***"),
                None => message,
            };
            return Err(self.interrupted(stream, format!("the service sent an error: {message}")));
        }
        match self.provider {
            GenerationProvider::Anthropic => self.anthropic_event(&value, stream, on_text),
            _ => self.openai_chunk(value, stream, on_text),
        }
    }

    fn openai_chunk(
        &self,
        value: Value,
        stream: &mut Stream,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(), GenerateError> {
        let chunk: OpenAiChunk = serde_json::from_value(value)
            .map_err(|e| self.protocol(format!("a chunk without its fields: {e}")))?;
        let completion = &mut stream.completion;
        if let Some(model) = chunk.model.filter(|m| !m.is_empty()) {
            completion.model = model;
        }
        if let Some(usage) = chunk.usage {
            completion.prompt_tokens = usage.prompt_tokens.or(completion.prompt_tokens);
            completion.completion_tokens = usage.completion_tokens.or(completion.completion_tokens);
        }
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(text) = choice.delta.and_then(|d| d.content)
                && !text.is_empty()
            {
                on_text(&text);
                completion.text.push_str(&text);
            }
            if let Some(reason) = choice.finish_reason {
                completion.finish_reason = Some(reason);
            }
        }
        Ok(())
    }

    fn anthropic_event(
        &self,
        value: &Value,
        stream: &mut Stream,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(), GenerateError> {
        let completion = &mut stream.completion;
        let number = |v: Option<&Value>| v.and_then(Value::as_u64).map(|n| n as u32);
        match value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "message_start" => {
                let message = &value["message"];
                if let Some(model) = message.get("model").and_then(Value::as_str) {
                    completion.model = model.to_string();
                }
                completion.prompt_tokens = number(message.pointer("/usage/input_tokens"));
            }
            "content_block_delta" => {
                if value.pointer("/delta/type").and_then(Value::as_str) == Some("text_delta")
                    && let Some(text) = value.pointer("/delta/text").and_then(Value::as_str)
                {
                    on_text(text);
                    completion.text.push_str(text);
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    completion.finish_reason = Some(reason.to_string());
                }
                if let Some(n) = number(value.pointer("/usage/output_tokens")) {
                    completion.completion_tokens = Some(n);
                }
            }
            "message_stop" => stream.done = true,
            // ping, content_block_start, content_block_stop
            _ => {}
        }
        Ok(())
    }

    fn timed_out(&self) -> GenerateError {
        GenerateError::Timeout {
            endpoint: self.endpoint.clone(),
            seconds: self.timeout.as_secs(),
        }
    }

    fn interrupted(&self, stream: &Stream, reason: String) -> GenerateError {
        GenerateError::Interrupted {
            endpoint: self.endpoint.clone(),
            reason: format!(
                "{reason} (after {} characters of the answer)",
                stream.completion.text.chars().count()
            ),
        }
    }

    fn protocol(&self, reason: String) -> GenerateError {
        GenerateError::Protocol {
            endpoint: self.endpoint.clone(),
            reason,
        }
    }
}

/// Opens (and closes) a TCP connection to `url`'s host and port, within
/// a few seconds per address.
pub(super) fn connect(url: &Url) -> Result<(), String> {
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or(443);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addresses = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let mut last = String::from("no address");
    for address in addresses {
        match TcpStream::connect_timeout(&address, REACHABLE_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("{address}: {e}"),
        }
    }
    Err(last)
}

/// The answer as it streams in.
struct Stream {
    completion: Completion,
    /// The service said the answer is complete.
    done: bool,
}

/// One server-sent event.
#[derive(Default)]
struct Event {
    name: String,
    data: String,
}

/// The value of `name: value` (one optional space after the colon).
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(name)?.strip_prefix(':')?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

#[derive(Deserialize)]
struct OpenAiChunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<OpenAiChoice>,
    #[serde(default)]
    usage: Option<OpenAiUsage>,
}

#[derive(Deserialize)]
struct OpenAiChoice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<OpenAiDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct OpenAiDelta {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct OpenAiUsage {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_fields_take_one_optional_space() {
        assert_eq!(field("data: {}", "data"), Some("{}"));
        assert_eq!(field("data:{}", "data"), Some("{}"));
        assert_eq!(field("data:  x", "data"), Some(" x"));
        assert_eq!(field("event: ping", "data"), None);
        assert_eq!(field("database: x", "data"), None);
    }

    #[test]
    fn endpoints_get_their_call_path_once() {
        let spec = |endpoint: &str| GenerationSpec {
            provider: GenerationProvider::Openai,
            model: "m".into(),
            endpoint: Some(endpoint.into()),
            ..GenerationSpec::default()
        };
        for (endpoint, url) in [
            (
                "http://127.0.0.1:8080",
                "http://127.0.0.1:8080/v1/chat/completions",
            ),
            (
                "http://127.0.0.1:8080/v1/",
                "http://127.0.0.1:8080/v1/chat/completions",
            ),
            (
                "https://x.openai.azure.com/openai/v1",
                "https://x.openai.azure.com/openai/v1/chat/completions",
            ),
        ] {
            let client = ChatClient::new(&spec(endpoint)).expect("a client");
            assert_eq!(client.endpoint(), url);
        }
        let anthropic = GenerationSpec {
            provider: GenerationProvider::Anthropic,
            api_key_env: Some("TRELLIS_TEST_UNSET_KEY".into()),
            ..spec("http://127.0.0.1:9")
        };
        let error = ChatClient::new(&anthropic).err().expect("no key");
        assert!(
            error.to_string().contains("TRELLIS_TEST_UNSET_KEY"),
            "{error}"
        );
    }
}
