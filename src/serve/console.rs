//! The console: a page at `/` for people tuning a route. It asks
//! `/v1/retrieve` and `/v1/info` like any client and shows the answer as a
//! person reads it: each result's paragraph with its anchor sentence
//! marked, the citation, the per-signal scores, a PDF sentence's page
//! boxes, and two request settings side by side on one query.
//!
//! Its HTML, script and stylesheet are compiled into the binary, so it
//! works offline and matches the server it came with. It is behind the
//! same tokens as `/v1/*`. A browser cannot send an `Authorization`
//! header when it navigates, so the page also takes the token from the
//! `trellis_token` cookie that its sign-in form sets. Without a valid token
//! `/` answers 401 with that form and the reason. The API itself still
//! reads only the header, so the cookie alone never authorizes a
//! retrieval: another site's page cannot make a request that uses it. The
//! stylesheet and the sign-in script say nothing about the corpus and are
//! served to anyone, since the sign-in page needs them.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{Service, bearer_token};

const PAGE: &str = include_str!("console/index.html");
const APP_JS: &str = include_str!("console/app.js");
const STYLESHEET: &str = include_str!("console/console.css");
const SIGNIN_PAGE: &str = include_str!("console/signin.html");
const SIGNIN_JS: &str = include_str!("console/signin.js");

/// The cookie the sign-in form sets, holding the token percent-encoded.
const TOKEN_COOKIE: &str = "trellis_token";

/// Only the console's own files run or style the page: no inline script,
/// no other origin, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self' data:; connect-src 'self'; \
    frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// `GET /`: the console, or the sign-in form with a 401 and its reason.
pub(super) async fn page(State(service): State<Arc<Service>>, headers: HeaderMap) -> Response {
    match signed_in(&service, &headers) {
        Ok(()) => asset(StatusCode::OK, "text/html; charset=utf-8", PAGE.to_string()),
        Err(reason) => asset(
            StatusCode::UNAUTHORIZED,
            "text/html; charset=utf-8",
            SIGNIN_PAGE.replace("{{reason}}", &escape_html(reason)),
        ),
    }
}

/// `GET /console/app.js`, behind the token like the page.
pub(super) async fn app_js(State(service): State<Arc<Service>>, headers: HeaderMap) -> Response {
    match signed_in(&service, &headers) {
        Ok(()) => asset(
            StatusCode::OK,
            "text/javascript; charset=utf-8",
            APP_JS.to_string(),
        ),
        Err(reason) => asset(
            StatusCode::UNAUTHORIZED,
            "text/plain; charset=utf-8",
            reason.to_string(),
        ),
    }
}

/// `GET /console/console.css`.
pub(super) async fn stylesheet() -> Response {
    asset(
        StatusCode::OK,
        "text/css; charset=utf-8",
        STYLESHEET.to_string(),
    )
}

/// `GET /console/signin.js`.
pub(super) async fn signin_js() -> Response {
    asset(
        StatusCode::OK,
        "text/javascript; charset=utf-8",
        SIGNIN_JS.to_string(),
    )
}

/// Whether the request carries a token the service accepts, in its
/// `Authorization` header or the console's cookie; else why not, in the
/// words `/v1/*` uses.
fn signed_in(service: &Service, headers: &HeaderMap) -> Result<(), &'static str> {
    let from_header = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token)
        .map(str::to_string);
    let presented = from_header.or_else(|| cookie_token(headers));
    match service.access(presented.as_deref()) {
        Ok(_) => Ok(()),
        Err(_) if presented.is_none() => Err("a bearer token is required"),
        Err(_) => Err("the bearer token is not valid"),
    }
}

/// The token in the console's cookie, percent-decoded; `None` when there
/// is none or it does not decode.
fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == TOKEN_COOKIE)
        .and_then(|(_, value)| percent_decode(value))
        .filter(|token| !token.is_empty())
}

/// Decodes `%XX` escapes (what the browser's `encodeURIComponent` wrote);
/// `None` for a broken escape or bytes that are not UTF-8.
fn percent_decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A console file with the headers every one of them carries: never
/// cached (a rotated token or a new build shows at once), never sniffed
/// as another type, and the content security policy.
fn asset(status: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_token_is_found_among_others_and_decoded() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("theme=dark; trellis_token=abc%3Bdef%20gh; x=1"),
        );
        assert_eq!(cookie_token(&headers).as_deref(), Some("abc;def gh"));
    }

    #[test]
    fn broken_or_empty_cookies_give_no_token() {
        for value in [
            "trellis_token=",
            "trellis_token=%zz",
            "trellis_token=%e2%28",
            "other=1",
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(header::COOKIE, HeaderValue::from_static(value));
            assert_eq!(cookie_token(&headers), None, "{value}");
        }
    }

    #[test]
    fn the_reason_is_escaped_into_the_sign_in_page() {
        assert_eq!(
            escape_html("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert!(SIGNIN_PAGE.contains("{{reason}}"));
    }
}
