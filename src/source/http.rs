//! `http` sources: documents fetched from a list of URLs.
//!
//! Every request is held to the source's limits: only `http`/`https` URLs
//! on an allowed host, a redirect only to the same host (so that an
//! allowed host cannot hand the ingest to one that is not), a timeout per
//! URL and a size limit checked against `Content-Length` and again while
//! reading. Rate limits and server errors are retried twice with backoff.
//! Internal addresses (private, loopback, link-local: cloud metadata) are
//! refused unless the source lists their network (see `network.rs`).

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::blocking::{Client, Response};
use reqwest::{StatusCode, Url, header};

use super::Fetched;
use super::network::{GuardedResolver, InternalAddress, NetworkGuard};
use crate::parse::Format;
use crate::spec::HttpSource;

/// Attempts per URL: the first and two retries.
const ATTEMPTS: u32 = 3;
/// Redirects followed per URL.
const MAX_REDIRECTS: usize = 5;

/// Fetches the URLs of one `http` source.
pub(super) struct HttpFetcher {
    client: Client,
    allowed_hosts: Vec<String>,
    network: std::sync::Arc<NetworkGuard>,
    max_bytes: u64,
    backoff: Duration,
}

impl HttpFetcher {
    /// A fetcher for `spec`, or why the spec cannot be used.
    pub(super) fn new(spec: &HttpSource) -> Result<Self, String> {
        if spec.urls.is_empty() {
            return Err("http source without urls".into());
        }
        let allowed_hosts = if spec.allowed_hosts.is_empty() {
            // Every listed URL's own host, and no other.
            spec.urls
                .iter()
                .filter_map(|u| Url::parse(u).ok())
                .filter_map(|u| u.host_str().map(str::to_ascii_lowercase))
                .collect()
        } else {
            spec.allowed_hosts
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect()
        };
        let network = std::sync::Arc::new(NetworkGuard::new(&spec.allowed_networks)?);
        let timeout = Duration::from_secs(u64::from(spec.timeout_seconds.max(1)));
        let client = Client::builder()
            .dns_resolver(std::sync::Arc::new(GuardedResolver(network.clone())))
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(concat!("trellis/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let first_host = attempt
                    .previous()
                    .first()
                    .and_then(|u| u.host_str())
                    .map(str::to_ascii_lowercase);
                let host = attempt.url().host_str().map(str::to_ascii_lowercase);
                if attempt.previous().len() > MAX_REDIRECTS {
                    attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
                } else if host != first_host {
                    let to = host.unwrap_or_default();
                    attempt.error(format!("redirect to another host ({to}) refused"))
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
        Ok(Self {
            client,
            allowed_hosts,
            network,
            max_bytes: spec.max_bytes,
            backoff: Duration::from_millis(500),
        })
    }

    /// The URL, parsed, if the source may fetch it.
    fn check(&self, url: &str) -> Result<Url, String> {
        let parsed = Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!(
                "scheme {:?} is not fetched (use http or https)",
                parsed.scheme()
            ));
        }
        let host = parsed
            .host_str()
            .map(str::to_ascii_lowercase)
            .ok_or("the URL has no host")?;
        if !self.allowed_hosts.iter().any(|a| host_matches(a, &host)) {
            return Err(format!("host {host} is not in allowedHosts"));
        }
        // An address written in the URL is never resolved, so it is
        // checked here; names are checked as they resolve.
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = literal.parse::<std::net::IpAddr>() {
            self.network.check(ip).map_err(|e| e.to_string())?;
        }
        Ok(parsed)
    }

    /// The body of `url`, named for its format, or why it cannot be had.
    pub(super) fn get(&self, url: &str) -> Result<Fetched, String> {
        let parsed = self.check(url)?;
        let response = self.send(|| self.client.get(parsed.clone()))?;
        let name = format_name(&response);
        let bytes = self.read_limited(response)?;
        Ok(Fetched { bytes, name })
    }

    /// The URL's ETag, else its Last-Modified date, with its length, from
    /// a HEAD request; `None` when the server gives neither (or fails).
    pub(super) fn revision(&self, url: &str) -> Option<String> {
        let parsed = self.check(url).ok()?;
        let response = self.send(|| self.client.head(parsed.clone())).ok()?;
        let headers = response.headers();
        let text = |name: header::HeaderName| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let validator = text(header::ETAG).or_else(|| text(header::LAST_MODIFIED))?;
        let length = text(header::CONTENT_LENGTH).unwrap_or_default();
        Some(format!("{validator}:{length}"))
    }

    /// Sends a request, retrying connection failures, 429 and 5xx; any
    /// other non-success status is an error naming it.
    fn send(
        &self,
        request: impl Fn() -> reqwest::blocking::RequestBuilder,
    ) -> Result<Response, String> {
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(self.backoff * 2u32.pow(attempt - 1));
            }
            match request().send() {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status();
                    last = format!("HTTP {status}");
                    if !retryable(status) {
                        break;
                    }
                }
                // A refused redirect or address is the source's rule, not
                // a hiccup.
                Err(e) if e.is_redirect() || refused_address(&e) => {
                    return Err(crate::error_chain(&e));
                }
                Err(e) if e.is_timeout() || e.is_connect() || e.is_request() => {
                    last = crate::error_chain(&e);
                }
                Err(e) => return Err(crate::error_chain(&e)),
            }
        }
        Err(last)
    }

    fn read_limited(&self, response: Response) -> Result<Vec<u8>, String> {
        let too_large = |size: u64| {
            format!(
                "larger than maxBytes ({size} bytes, limit {})",
                self.max_bytes
            )
        };
        if let Some(length) = response.content_length()
            && length > self.max_bytes
        {
            return Err(too_large(length));
        }
        let mut body = Vec::new();
        response
            .take(self.max_bytes + 1)
            .read_to_end(&mut body)
            .map_err(|e| format!("reading the body: {e}"))?;
        if body.len() as u64 > self.max_bytes {
            return Err(too_large(body.len() as u64));
        }
        Ok(body)
    }
}

/// The path a response ended at, with an extension from its
/// `Content-Type` when the path has no known one (`/docs/page` served as
/// `text/html` is `docs/page.html`).
fn format_name(response: &Response) -> PathBuf {
    let path = PathBuf::from(response.url().path().trim_start_matches('/'));
    if Format::from_extension(&path).is_some() {
        return path;
    }
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let extension = match mime.as_str() {
        "text/html" | "application/xhtml+xml" => "html",
        "text/markdown" | "text/x-markdown" => "md",
        "text/plain" => "txt",
        "application/pdf" => "pdf",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        // Left to content sniffing.
        _ => return path,
    };
    let mut name = path.into_os_string();
    name.push(".");
    name.push(extension);
    PathBuf::from(name)
}

/// Whether the request failed because the guard refused every address.
fn refused_address(error: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<InternalAddress>() {
            return true;
        }
        source = e.source();
    }
    false
}

fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// `allowed` is `host` itself, or `*.domain` and `host` is below it.
fn host_matches(allowed: &str, host: &str) -> bool {
    match allowed.strip_prefix("*.") {
        Some(domain) => host
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1),
        None => allowed == host,
    }
}

/// A URL's path without the leading slash: what include and exclude globs
/// match, and whose extension hints at the format.
pub(super) fn url_path(url: &str) -> String {
    Url::parse(url)
        .map(|u| u.path().trim_start_matches('/').to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_subdomains_only() {
        assert!(host_matches("docs.example.com", "docs.example.com"));
        assert!(host_matches("*.example.com", "docs.example.com"));
        assert!(host_matches("*.example.com", "a.b.example.com"));
        assert!(!host_matches("*.example.com", "example.com"));
        assert!(!host_matches("*.example.com", "badexample.com"));
        assert!(!host_matches("example.com", "docs.example.com"));
    }

    #[test]
    fn only_http_urls_on_allowed_hosts_are_fetched() {
        let spec = HttpSource {
            urls: vec!["https://docs.example.com/a.md".into()],
            allowed_hosts: Vec::new(),
            allowed_networks: Vec::new(),
            max_bytes: 10,
            timeout_seconds: 1,
        };
        let fetcher = HttpFetcher::new(&spec).unwrap();
        assert!(fetcher.check("https://docs.example.com/b.md").is_ok());
        let other = fetcher.check("https://evil.example.net/a.md").unwrap_err();
        assert!(other.contains("evil.example.net"), "{other}");
        let scheme = fetcher.check("file:///etc/passwd").unwrap_err();
        assert!(scheme.contains("file"), "{scheme}");
        assert_eq!(url_path("https://h/docs/a.md?x=1"), "docs/a.md");
    }
}
