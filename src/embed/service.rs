//! What the HTTP model services share, embeddings and rerankers alike:
//! the endpoint's checks, where the API key comes from, and how a
//! service's answers and failures are read and quoted.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;
use reqwest::blocking::Response;
use reqwest::header::{HeaderValue, RETRY_AFTER};

use crate::spec::SecretKeyRef;

/// Longest service error message quoted in an error, in characters.
const MAX_MESSAGE_CHARS: usize = 300;

/// Parses a service's base URL, given as `{field}.endpoint`: http or https
/// with a host, and no credentials (endpoints are named in errors, logs
/// and index manifests; keys have their own settings).
pub(crate) fn parse_endpoint(field: &str, endpoint: &str) -> Result<Url, String> {
    let url = Url::parse(endpoint)
        .map_err(|e| format!("{field}.endpoint {endpoint:?} is not a URL: {e}"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{field}.endpoint must not carry credentials; use {field}.apiKeyEnv or \
             {field}.apiKeyFile"
        ));
    }
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!(
            "{field}.endpoint {endpoint:?} must be an http:// or https:// URL with a host"
        ));
    }
    Ok(url)
}

/// `host` or `host:port` of a checked endpoint.
pub(crate) fn host_of(url: &Url) -> String {
    match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    }
}

/// The places an API key may be read from, as one section of a spec
/// names them.
pub(crate) struct KeySource<'a> {
    /// The spec section, for errors: `embedding`, `reranker`.
    pub field: &'static str,
    /// The provider, for errors.
    pub provider: &'a str,
    pub file: Option<&'a str>,
    pub secret: Option<&'a SecretKeyRef>,
    /// The variable the spec names (`apiKeyEnv`).
    pub env: Option<&'a str>,
    /// The provider's usual variable, read when the spec names none.
    pub default_env: Option<&'static str>,
    /// The spec gave its own endpoint (a self-hosted service may need no
    /// key; a provider's public API does).
    pub custom_endpoint: bool,
}

/// The API key: `apiKeyFile`'s trimmed content (relative to `base_dir`),
/// else the Secret key `apiKeySecretRef` names (mounted under the secret
/// root), else the variable named by `apiKeyEnv` (or the provider's usual
/// one). No key at all is fine for a self-hosted endpoint, but an error
/// for the provider's public API or when `apiKeyEnv` was named and is
/// unset.
pub(crate) fn read_api_key(
    source: &KeySource<'_>,
    base_dir: Option<&Path>,
) -> Result<Option<String>, String> {
    let field = source.field;
    if let Some(file) = source.file {
        let mut path = PathBuf::from(file);
        if let Some(base) = base_dir
            && path.is_relative()
        {
            path = base.join(path);
        }
        let content = std::fs::read_to_string(&path)
            .map_err(|e| format!("{field}.apiKeyFile {}: {e}", path.display()))?;
        let key = content.trim();
        if key.is_empty() {
            return Err(format!("{field}.apiKeyFile {} is empty", path.display()));
        }
        return Ok(Some(key.to_string()));
    }
    if let Some(secret) = source.secret {
        let path = crate::locations::secret_root()
            .join(&secret.name)
            .join(&secret.key);
        let described = format!(
            "{field}.apiKeySecretRef (Secret {:?}, key {:?}) at {}",
            secret.name,
            secret.key,
            path.display()
        );
        let content = std::fs::read_to_string(&path).map_err(|e| format!("{described}: {e}"))?;
        let key = content.trim();
        if key.is_empty() {
            return Err(format!("{described} is empty"));
        }
        return Ok(Some(key.to_string()));
    }
    let Some(var) = source.env.or(source.default_env) else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_string())),
        _ if source.env.is_some() => {
            Err(format!("{field}.apiKeyEnv names {var}, which is not set"))
        }
        _ if !source.custom_endpoint => Err(format!(
            "provider {} needs an API key: set {var} or {field}.apiKeyFile",
            source.provider
        )),
        _ => Ok(None),
    }
}

/// `Bearer <key>`, marked sensitive so that it is never logged.
pub(crate) fn bearer(key: &str) -> Result<HeaderValue, String> {
    let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
        .map_err(|_| "the API key holds characters an HTTP header cannot carry".to_string())?;
    value.set_sensitive(true);
    Ok(value)
}

/// Reads a response body of at most `max_bytes`.
pub(crate) fn read_body(response: Response, max_bytes: u64) -> Result<Vec<u8>, BodyError> {
    let mut bytes = Vec::new();
    response
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| BodyError::Read(format!("reading the response failed: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(BodyError::TooLarge(format!(
            "response larger than {max_bytes} bytes"
        )));
    }
    Ok(bytes)
}

/// Why a body could not be read: a broken connection (worth another
/// attempt) or a body over the bound (not).
pub(crate) enum BodyError {
    Read(String),
    TooLarge(String),
}

/// `": <message>"` from an error body: OpenAI's `error.message`, Voyage's
/// `detail`, TEI's `error`, Cohere's `message`, else the body itself; on
/// one line, truncated, with the API key scrubbed.
pub(crate) fn service_message(body: &[u8], api_key: Option<&str>) -> String {
    let text = String::from_utf8_lossy(body);
    let message = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|value| {
            let candidates = [
                value.pointer("/error/message"),
                value.get("detail"),
                value.get("error"),
                value.get("message"),
            ];
            candidates.into_iter().flatten().find_map(|v| match v {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Null => None,
                other => Some(other.to_string()),
            })
        })
        .unwrap_or_else(|| text.into_owned());
    let mut message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(key) = api_key {
        message = message.replace(key, "***");
    }
    if message.is_empty() {
        return String::new();
    }
    if message.chars().count() > MAX_MESSAGE_CHARS {
        let cut: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
        format!(": {cut}…")
    } else {
        format!(": {message}")
    }
}

/// `Retry-After` in seconds, when the service sent one (an HTTP date is
/// ignored and the backoff applies).
pub(crate) fn retry_after(response: &Response) -> Option<Duration> {
    let value = response.headers().get(RETRY_AFTER)?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(86_400.0)))
}

/// A transport error and its causes, without the URL (the caller names the
/// endpoint once).
pub(crate) fn describe(error: reqwest::Error) -> String {
    crate::error_chain(&error.without_url())
}

/// Exponential backoff with jitter: `base × 2^attempt`, capped at
/// `max_delay`, less a random part of up to half of it, so that many
/// clients do not retry in step.
pub(crate) fn backoff(base: Duration, max_delay: Duration, attempt: u32) -> Duration {
    use std::hash::BuildHasher;
    let full = base
        .saturating_mul(2u32.saturating_pow(attempt))
        .min(max_delay);
    // A process-random hash is enough randomness to spread retries.
    let random = std::hash::RandomState::new().hash_one((attempt, std::time::Instant::now()));
    let fraction = (random % 1024) as f64 / 1024.0;
    full.mul_f64(1.0 - fraction / 2.0)
}
