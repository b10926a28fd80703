//! The HTTP gate in front of the control server's JSON-RPC service: serves the Questions
//! page, and lets a request through only with the right bearer token, a same-origin
//! `Origin` (when there is one), and, unless remote access is allowed, a loopback `Host`.
//!
//! Invariant: nothing reaches a control method without the token. The page itself holds no
//! secret (the token reaches it in the URL fragment, which browsers never send), so it is
//! served without one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::FutureExt;
use http::header::{AUTHORIZATION, HOST, ORIGIN, UPGRADE};
use http::{HeaderValue, Method, Response, StatusCode};
use jsonrpsee::core::BoxError;
use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse};
use tower::{Layer, Service};

/// The Questions page, one self-contained file.
pub const PAGE: &str = include_str!("page.html");

/// What the gate checks.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The bearer token (compared in constant time).
    pub token: Arc<str>,
    /// Accept any `Host` (`--control-allow-remote`); otherwise only loopback names.
    pub allow_remote: bool,
    /// Where sandbox-agent's v1 question routes send their calls ([`super::v1`]).
    pub calls: Option<tokio::sync::mpsc::Sender<super::Call>>,
}

/// A `tower` layer applying [`Policy`].
#[derive(Debug, Clone)]
pub struct GateLayer(pub Arc<Policy>);

impl<S> Layer<S> for GateLayer {
    type Service = Gate<S>;
    fn layer(&self, inner: S) -> Gate<S> {
        Gate {
            inner,
            policy: self.0.clone(),
        }
    }
}

/// The service made by [`GateLayer`].
#[derive(Debug, Clone)]
pub struct Gate<S> {
    inner: S,
    policy: Arc<Policy>,
}

/// Why a request is refused; the status and the text the caller gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `Host` is not a loopback name and remote access is off (DNS rebinding).
    Host,
    /// `Origin` is not this server's origin (a cross-site page).
    Origin,
    /// No token, or the wrong one.
    Token,
}

impl Refusal {
    fn response(self) -> HttpResponse {
        let (status, text) = match self {
            Refusal::Host => (
                StatusCode::FORBIDDEN,
                "Host is not a loopback name (start the bridge with --control-allow-remote to allow others)\n",
            ),
            Refusal::Origin => (
                StatusCode::FORBIDDEN,
                "Origin does not match this server\n",
            ),
            Refusal::Token => (
                StatusCode::UNAUTHORIZED,
                "a bearer token is required (Authorization: Bearer <token>, or access_token=<token> in the query)\n",
            ),
        };
        let mut r = Response::new(HttpBody::from(text.to_owned()));
        *r.status_mut() = status;
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        if self == Refusal::Token {
            r.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"acp-question-bridge\""),
            );
        }
        r
    }
}

/// Whether `host` (a `Host` header: name or address, with or without a port) is loopback.
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Byte-wise comparison whose time does not depend on where the inputs differ.
pub(crate) fn same_secret(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token a request carries: `Authorization: Bearer`, or `access_token` in the query
/// (RFC 6750 2.3; browsers cannot set headers on a WebSocket).
fn token_of<B>(req: &HttpRequest<B>) -> Option<String> {
    if let Some(v) = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let (scheme, token) = v.trim().split_once(' ')?;
        return scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim().to_owned());
    }
    req.uri().query().and_then(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == "access_token")
            .map(|(_, v)| v.to_owned())
    })
}

impl Policy {
    /// Checks `Host` and `Origin` (every request, the page included).
    pub fn check_site<B>(&self, req: &HttpRequest<B>) -> Result<(), Refusal> {
        let host = req
            .headers()
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| req.uri().authority().map(|a| a.as_str()))
            .unwrap_or("");
        if !self.allow_remote && !is_loopback_host(host) {
            return Err(Refusal::Host);
        }
        if let Some(origin) = req.headers().get(ORIGIN) {
            let same = origin
                .to_str()
                .ok()
                .and_then(|o| o.strip_prefix("http://"))
                .is_some_and(|o| o.eq_ignore_ascii_case(host));
            if !same {
                return Err(Refusal::Origin);
            }
        }
        Ok(())
    }

    /// Checks the bearer token.
    pub fn check_token<B>(&self, req: &HttpRequest<B>) -> Result<(), Refusal> {
        match token_of(req) {
            Some(t) if same_secret(t.as_bytes(), self.token.as_bytes()) => Ok(()),
            _ => Err(Refusal::Token),
        }
    }
}

/// A fresh nonce for the page's one script (so injected markup could never run script).
fn nonce() -> String {
    super::random_token().unwrap_or_else(|_| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        format!("{:016x}", h.finish())
    })
}

/// A plain-text response.
pub(crate) fn plain(status: StatusCode, body: &str) -> HttpResponse {
    let mut r = Response::new(HttpBody::from(body.to_owned()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// A JSON response.
pub(crate) fn json(status: StatusCode, body: &serde_json::Value) -> HttpResponse {
    let mut r = Response::new(HttpBody::from(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The Questions page.
pub(crate) fn page() -> HttpResponse {
    html_page(PAGE)
}

/// A self-contained page whose first `<script>` gets a fresh nonce, with the headers that
/// keep it from being framed, sniffed or made to run any other script.
pub(crate) fn html_page(html: &str) -> HttpResponse {
    let nonce = nonce();
    let html = html.replacen("<script>", &format!("<script nonce=\"{nonce}\">"), 1);
    let csp = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; \
         connect-src 'self'; img-src data: 'self'; manifest-src 'self'; worker-src 'self'; \
         base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    );
    let mut r = Response::new(HttpBody::from(html));
    let h = r.headers_mut();
    for (k, v) in [
        ("content-type", "text/html; charset=utf-8"),
        ("cache-control", "no-store"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert("content-security-policy", v);
    }
    r
}

/// The body of `req`, read whole up to `max` bytes; `Err` is the `413` to answer.
pub(crate) async fn body_within<B>(
    req: HttpRequest<B>,
    max: usize,
) -> Result<bytes::Bytes, HttpResponse>
where
    B: http_body::Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    use http_body_util::BodyExt;
    match http_body_util::Limited::new(req.into_body(), max)
        .collect()
        .await
    {
        Ok(b) => Ok(b.to_bytes()),
        Err(_) => Err(json(
            StatusCode::PAYLOAD_TOO_LARGE,
            &serde_json::json!({ "error": format!("the body is over {max} bytes") }),
        )),
    }
}

fn not_found() -> HttpResponse {
    let mut r = Response::new(HttpBody::from("not found\n".to_owned()));
    *r.status_mut() = StatusCode::NOT_FOUND;
    r
}

impl<S, B> Service<HttpRequest<B>> for Gate<S>
where
    S: Service<HttpRequest<B>, Response = HttpResponse>,
    S::Error: Into<BoxError> + 'static,
    S::Future: Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = HttpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, BoxError>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: HttpRequest<B>) -> Self::Future {
        if let Err(refusal) = self.policy.check_site(&req) {
            tracing::warn!(?refusal, path = %req.uri().path(), "control request refused");
            return std::future::ready(Ok(refusal.response())).boxed();
        }
        let upgrade = req.headers().contains_key(UPGRADE);
        if req.method() == Method::GET && !upgrade {
            let r = match req.uri().path() {
                "/" | "/index.html" => page(),
                other => super::assets::asset(other).unwrap_or_else(not_found),
            };
            return std::future::ready(Ok(r)).boxed();
        }
        if let Err(refusal) = self.policy.check_token(&req) {
            tracing::warn!(?refusal, "control request refused");
            return std::future::ready(Ok(refusal.response())).boxed();
        }
        if let Some(route) = super::v1::route_of(req.method(), req.uri().path()) {
            let calls = self.policy.calls.clone();
            return async move { Ok(super::v1::serve(calls, route, req).await) }.boxed();
        }
        self.inner.call(req).map(|r| r.map_err(Into::into)).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(&str, &str)], uri: &str) -> HttpRequest<()> {
        let mut b = http::Request::builder().uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    fn policy(remote: bool) -> Policy {
        Policy {
            token: "secret".into(),
            allow_remote: remote,
            calls: None,
        }
    }

    #[test]
    fn loopback_hosts() {
        for h in [
            "localhost",
            "localhost:80",
            "127.0.0.1:9",
            "[::1]:5",
            "127.3.4.5",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "example.com",
            "10.0.0.1:80",
            "[fe80::1]:1",
            "",
            "localhost.evil.com",
        ] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }

    #[test]
    fn site_checks() {
        let p = policy(false);
        assert_eq!(p.check_site(&req(&[("host", "127.0.0.1:5")], "/")), Ok(()));
        assert_eq!(
            p.check_site(&req(&[("host", "evil.example:5")], "/")),
            Err(Refusal::Host)
        );
        assert_eq!(
            p.check_site(&req(
                &[("host", "127.0.0.1:5"), ("origin", "http://127.0.0.1:5")],
                "/"
            )),
            Ok(())
        );
        for origin in [
            "http://evil.example",
            "null",
            "https://127.0.0.1:5",
            "http://127.0.0.1:6",
        ] {
            assert_eq!(
                p.check_site(&req(&[("host", "127.0.0.1:5"), ("origin", origin)], "/")),
                Err(Refusal::Origin),
                "{origin}"
            );
        }
        let remote = policy(true);
        assert_eq!(
            remote.check_site(&req(
                &[("host", "box.lan:5"), ("origin", "http://box.lan:5")],
                "/"
            )),
            Ok(())
        );
    }

    #[test]
    fn token_checks() {
        let p = policy(false);
        assert_eq!(
            p.check_token(&req(&[("authorization", "Bearer secret")], "/")),
            Ok(())
        );
        assert_eq!(
            p.check_token(&req(&[("authorization", "bearer  secret ")], "/")),
            Ok(())
        );
        assert_eq!(p.check_token(&req(&[], "/?access_token=secret")), Ok(()));
        for (h, uri) in [
            (vec![], "/"),
            (vec![("authorization", "Bearer secreT")], "/"),
            (
                vec![("authorization", "Basic secret")],
                "/?access_token=secret",
            ),
            (vec![], "/?access_token=secre"),
            (vec![], "/?token=secret"),
        ] {
            assert_eq!(p.check_token(&req(&h, uri)), Err(Refusal::Token), "{uri}");
        }
    }
}
