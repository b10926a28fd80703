//! The HTTP gate of the remote listener: what a phone may do before and after pairing.
//!
//! - `GET /pair`: the pairing page; `POST /pair` `{code, name}` trades a pairing code for a
//!   device token, set as a `Secure; HttpOnly; SameSite=Strict` cookie.
//! - `GET /`: the Questions page (it holds no secret; the cookie authenticates its calls).
//! - Anything else (the JSON-RPC calls, the WebSocket, `/push/*`) only with a paired
//!   device's cookie; the device is recorded on the connection, so that revoking it closes
//!   the connection.
//!
//! Invariants: a request whose `Origin` is not this listener's own is refused (CSRF); every
//! failed pairing or authentication is logged and counted per source address, and an
//! address with [`MAX_FAILURES`] within [`WINDOW`] is refused before anything is checked.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use futures::FutureExt;
use http::header::{COOKIE, HOST, ORIGIN, SET_COOKIE, UPGRADE};
use http::{HeaderValue, Method, StatusCode};
use http_body_util::BodyExt;
use jsonrpsee::core::BoxError;
use jsonrpsee::server::{HttpRequest, HttpResponse};
use tower::{Layer, Service};

use super::devices::{device_of, Device, PairError, Store};
use crate::control::gate::{json, plain as text};

/// Failed attempts an address may make within [`WINDOW`].
pub const MAX_FAILURES: usize = 5;
/// The window over which failures are counted.
pub const WINDOW: Duration = Duration::from_secs(60);
/// The cookie that carries a device's token.
pub const COOKIE_NAME: &str = "aqb_device";
/// The pairing page.
const PAIR_PAGE: &str = include_str!("pair.html");
/// Addresses remembered by the limiter at most (the quietest are forgotten first).
const MAX_ADDRESSES: usize = 4096;

/// The address failures are counted for: an IPv6 address's /64 (one host usually has a
/// whole /64 to pick from), an IPv4 address as it is.
fn counted(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

/// Failed attempts per source address.
#[derive(Debug, Default)]
pub struct Limiter {
    failures: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

impl Limiter {
    /// Whether `ip` has used up its failures.
    pub fn blocked(&self, ip: IpAddr, now: Instant) -> bool {
        let ip = counted(ip);
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let Some(times) = map.get_mut(&ip) else {
            return false;
        };
        while times
            .front()
            .is_some_and(|t| now.duration_since(*t) > WINDOW)
        {
            times.pop_front();
        }
        times.len() >= MAX_FAILURES
    }

    /// Counts (and logs) a failed attempt from `ip`.
    pub fn failed(&self, ip: IpAddr, now: Instant, what: &str) {
        tracing::warn!(%ip, what, "remote: a failed attempt");
        let ip = counted(ip);
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_ADDRESSES && !map.contains_key(&ip) {
            map.retain(|_, t| t.back().is_some_and(|t| now.duration_since(*t) <= WINDOW));
            if map.len() >= MAX_ADDRESSES {
                // The quietest address that is not blocked: eviction never lifts a block.
                let quietest = map
                    .iter()
                    .filter(|(_, t)| t.len() < MAX_FAILURES)
                    .min_by_key(|(_, t)| t.back().copied())
                    .map(|(ip, _)| *ip);
                if let Some(q) = quietest {
                    map.remove(&q);
                }
            }
        }
        let times = map.entry(ip).or_default();
        times.push_back(now);
        while times.len() > MAX_FAILURES {
            times.pop_front();
        }
    }
}

/// What every connection of the listener shares.
pub struct Shared {
    pub store: Store,
    pub limiter: Limiter,
    /// Web Push, unless it could not be set up.
    pub push: Option<Arc<super::push::Pusher>>,
    /// The devices as last read.
    devices: Mutex<Arc<Vec<Device>>>,
    /// Bumped whenever the devices change, so connections check theirs.
    pub changed: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    pub fn new(store: Store, push: Option<Arc<super::push::Pusher>>) -> Self {
        Self {
            store,
            push,
            limiter: Limiter::default(),
            devices: Mutex::new(Arc::new(Vec::new())),
            changed: tokio::sync::watch::channel(0).0,
        }
    }

    /// The paired devices, read again at every call (the file is small; a modification time
    /// can miss a change made within its tick), so a revoked device is refused at its next
    /// request. A file that cannot be read pairs no device. A change wakes the connections.
    pub fn devices(&self) -> Arc<Vec<Device>> {
        let now = match self.store.devices() {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %e, "remote: cannot read the devices; refusing every device");
                Vec::new()
            }
        };
        let mut held = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        if **held != now {
            *held = Arc::new(now);
            self.changed.send_modify(|n| *n += 1);
        }
        held.clone()
    }
}

/// One connection's device, once a request has authenticated it: (name, token hash).
pub type Who = Arc<Mutex<Option<(String, String)>>>;

/// A `tower` layer for one connection from `peer`.
#[derive(Clone)]
pub struct RemoteLayer {
    pub shared: Arc<Shared>,
    pub peer: IpAddr,
    pub who: Who,
}

impl<S> Layer<S> for RemoteLayer {
    type Service = RemoteGate<S>;
    fn layer(&self, inner: S) -> RemoteGate<S> {
        RemoteGate {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service made by [`RemoteLayer`].
#[derive(Clone)]
pub struct RemoteGate<S> {
    inner: S,
    layer: RemoteLayer,
}

/// The token in the request's device cookie.
fn cookie_token<B>(req: &HttpRequest<B>) -> Option<String> {
    req.headers()
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE_NAME)
        .map(|(_, v)| v.to_owned())
}

/// Whether the request's `Origin`, when it has one, is this listener (`https://` + `Host`).
fn same_origin<B>(req: &HttpRequest<B>) -> bool {
    let Some(origin) = req.headers().get(ORIGIN) else {
        return true;
    };
    let host = req
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    origin
        .to_str()
        .ok()
        .and_then(|o| o.strip_prefix("https://"))
        .is_some_and(|o| !host.is_empty() && o.eq_ignore_ascii_case(host))
}

/// `POST /pair`: `{code, name}` for a device cookie.
async fn pair<B>(shared: Arc<Shared>, peer: IpAddr, req: HttpRequest<B>) -> HttpResponse
where
    B: http_body::Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let body = match http_body_util::Limited::new(req.into_body(), 4096)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => return text(StatusCode::PAYLOAD_TOO_LARGE, "too large\n"),
    };
    #[derive(serde::Deserialize)]
    struct Pair {
        code: String,
        name: String,
    }
    let Ok(p) = serde_json::from_slice::<Pair>(&body) else {
        return json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({"error": "expected {\"code\": ..., \"name\": ...}"}),
        );
    };
    let store = shared.store.clone();
    let name = p.name.trim().to_owned();
    let paired = tokio::task::spawn_blocking(move || store.pair(&p.code, &name, SystemTime::now()))
        .await
        .unwrap_or_else(|e| Err(PairError::Io(e.to_string())));
    match paired {
        Ok(token) => {
            let name = p.name.trim().to_owned();
            tracing::info!(%peer, device = %name, "remote: a device paired");
            let mut r = json(StatusCode::OK, &serde_json::json!({ "device": name }));
            let cookie = format!(
                "{COOKIE_NAME}={token}; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=31536000"
            );
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                r.headers_mut().insert(SET_COOKIE, v);
            }
            r
        }
        Err(PairError::BadCode) => {
            shared.limiter.failed(peer, Instant::now(), "pairing code");
            let e = PairError::BadCode.to_string();
            json(StatusCode::FORBIDDEN, &serde_json::json!({ "error": e }))
        }
        Err(e @ (PairError::BadName | PairError::NameTaken(_))) => json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({ "error": e.to_string() }),
        ),
        Err(e) => {
            tracing::error!(error = %e, "remote: cannot pair");
            json(
                StatusCode::INTERNAL_SERVER_ERROR,
                &serde_json::json!({ "error": "the inbox cannot keep the device" }),
            )
        }
    }
}

impl<S, B> Service<HttpRequest<B>> for RemoteGate<S>
where
    S: Service<HttpRequest<B>, Response = HttpResponse> + Send + Clone + 'static,
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

    fn call(&mut self, mut req: HttpRequest<B>) -> Self::Future {
        let RemoteLayer { shared, peer, who } = self.layer.clone();
        let now = Instant::now();
        let ready = |r: HttpResponse| std::future::ready(Ok(r)).boxed();
        // A paired device's own token guesses nothing: it is never held back by its
        // address's failures (a shared NAT, a tab still trying a revoked cookie).
        let devices = shared.devices();
        let token = cookie_token(&req);
        let device = token
            .as_deref()
            .and_then(|t| device_of(&devices, t).cloned());
        if device.is_none() && shared.limiter.blocked(peer, now) {
            tracing::warn!(%peer, "remote: refused, too many failed attempts");
            return ready(text(
                StatusCode::TOO_MANY_REQUESTS,
                "too many failed attempts from this address; try again in a minute\n",
            ));
        }
        if !same_origin(&req) {
            tracing::warn!(%peer, path = %req.uri().path(), "remote: refused a cross-origin request");
            return ready(text(
                StatusCode::FORBIDDEN,
                "Origin does not match this server\n",
            ));
        }
        let upgrade = req.headers().contains_key(UPGRADE);
        let push = req.uri().path().starts_with("/push/");
        match (req.method(), req.uri().path(), upgrade) {
            (&Method::GET, "/pair", false) => {
                return ready(crate::control::gate::html_page(PAIR_PAGE))
            }
            (&Method::POST, "/pair", false) => {
                return async move { Ok(pair(shared, peer, req).await) }.boxed()
            }
            (&Method::GET, "/" | "/index.html", false) => {
                return ready(crate::control::gate::page())
            }
            (&Method::GET, path, false) if !push => {
                let asset = crate::control::assets::asset(path);
                return ready(asset.unwrap_or_else(|| text(StatusCode::NOT_FOUND, "not found\n")));
            }
            _ => {}
        }
        let Some(device) = device else {
            // A guess is a wrong token; no cookie at all (a browser not paired yet, opening
            // the page) guesses nothing and is not counted.
            if token.is_some() {
                shared.limiter.failed(peer, now, "device token");
            }
            return ready(text(
                StatusCode::UNAUTHORIZED,
                "this device is not paired, or was revoked: pair it with `acp-question-bridge inbox pair`\n",
            ));
        };
        *who.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((device.name.clone(), device.token_sha256.clone()));
        // Revoked between the read above and now? The connection's watcher may have looked
        // before `who` was set: look again, so no WebSocket is opened for a revoked device.
        if !shared
            .devices()
            .iter()
            .any(|d| d.token_sha256 == device.token_sha256)
        {
            return ready(text(StatusCode::UNAUTHORIZED, "this device was revoked\n"));
        }
        if push {
            let pusher = shared.push.clone();
            return async move { Ok(super::push::route(pusher, device, req).await) }.boxed();
        }
        req.extensions_mut()
            .insert(crate::control::Device(device.name));
        self.inner.call(req).map(|r| r.map_err(Into::into)).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_refused_after_its_failures_until_the_window_passes() {
        let l = Limiter::default();
        let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let t0 = Instant::now();
        for _ in 0..MAX_FAILURES {
            assert!(!l.blocked(a, t0));
            l.failed(a, t0, "test");
        }
        assert!(l.blocked(a, t0));
        assert!(!l.blocked(b, t0), "other addresses are not affected");
        assert!(!l.blocked(a, t0 + WINDOW + Duration::from_secs(1)));
        // IPv6 is counted by /64: another address of the same host's prefix is blocked too.
        let (v6, same_prefix): (IpAddr, IpAddr) = (
            "2001:db8:1:2::1".parse().unwrap(),
            "2001:db8:1:2::ffff".parse().unwrap(),
        );
        for _ in 0..MAX_FAILURES {
            l.failed(v6, t0, "test");
        }
        assert!(l.blocked(same_prefix, t0));
        assert!(!l.blocked("2001:db8:1:3::1".parse().unwrap(), t0));
    }

    #[test]
    fn origin_must_be_this_listener_over_https() {
        let req = |origin: Option<&str>| {
            let mut r = http::Request::builder().header(HOST, "192.168.1.5:8443");
            if let Some(o) = origin {
                r = r.header(ORIGIN, o);
            }
            r.body(()).unwrap()
        };
        assert!(same_origin(&req(None)));
        assert!(same_origin(&req(Some("https://192.168.1.5:8443"))));
        assert!(!same_origin(&req(Some("http://192.168.1.5:8443"))));
        assert!(!same_origin(&req(Some("https://evil.example"))));
    }
}
