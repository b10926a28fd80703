//! Web Push (RFC 8030) to paired devices, so a phone hears of a question while its page is
//! closed.
//!
//! Shape:
//! - the page, once notifications are allowed, subscribes with its browser's push service
//!   (`pushManager.subscribe` with this inbox's VAPID key from `GET /push/key`) and hands the
//!   subscription to `POST /push/subscribe`; it is kept per device ([`Store::subscribe`]) and
//!   dropped when the device is revoked, unsubscribes (`POST /push/unsubscribe`), or its
//!   push service says it is gone;
//! - for each new question (`requested` on the inbox's event stream) every subscription of
//!   a paired device gets one push: a small JSON ([`payload`]: the agent, the project and
//!   the question, never a tool call's command or diff) encrypted for that browser per
//!   RFC 8291 (`aes128gcm`, by web-push-native), with a VAPID token (RFC 8292, ES256 by
//!   p256) that names this inbox's key, POSTed to the push service over HTTPS.
//!
//! Invariants: a push never delays anything else: it is sent by a task of its own, at most
//! [`MAX_SENDING`] at once (more are dropped and logged, never queued), each given up after
//! [`SEND_TIMEOUT`]; a push goes only to an `https` endpoint of a known push service or of a
//! host the person named (`--push-service`), so a stolen device token cannot make the inbox
//! call anything else; the VAPID key is made once and kept in the state folder (0600).

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use bytes::Bytes;
use http::header::{AUTHORIZATION, HOST};
use http::{HeaderValue, Method, StatusCode, Uri};
use http_body_util::Full;
use jsonrpsee::core::BoxError;
use jsonrpsee::server::{HttpRequest, HttpResponse};
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{json, Value};
use tokio::sync::{broadcast, Semaphore};

use super::devices::{now_secs, Device, Store, Subscription};
pub use super::payload::payload;

/// The push services browsers use, by host (and their subdomains), on port 443: Google's
/// FCM (Chrome and Chromium-based browsers on Android and desktop, Samsung Internet),
/// Mozilla's autopush (Firefox), Apple's (Safari, and Home Screen apps on iOS 16.4+), and
/// Microsoft's WNS (Edge on Windows).
pub const KNOWN_SERVICES: &[&str] = &[
    "fcm.googleapis.com",
    "push.services.mozilla.com",
    "push.apple.com",
    "notify.windows.com",
];
/// Pushes being sent at once; more are dropped.
pub const MAX_SENDING: usize = 16;
/// How long one push may take, connection and all.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a push service keeps a push for a phone that is offline (the `TTL` header).
const KEEP_FOR: Duration = Duration::from_secs(60 * 60);
/// How long a VAPID token is good for (RFC 8292 allows at most 24 hours).
const TOKEN_LIFE: Duration = Duration::from_secs(12 * 60 * 60);
/// Questions remembered as pushed, so a bridge reconnecting does not push them again.
const REMEMBERED: usize = 4096;
/// The VAPID private key's file in the state folder.
const KEY_FILE: &str = "vapid-key.txt";

/// `--push-contact`, `--push-service`, `--push-ca`.
#[derive(Debug, Clone)]
pub struct PushConfig {
    /// The VAPID `sub`: a `mailto:` or `https:` URL a push service may contact.
    pub contact: String,
    /// More push services, as `HOST` or `HOST:PORT` of their endpoints.
    pub services: Vec<String>,
    /// More root certificates (PEM) to trust for push services.
    pub ca: Option<PathBuf>,
}

impl Default for PushConfig {
    fn default() -> Self {
        Self {
            contact: "mailto:acp-question-bridge@example.com".into(),
            services: Vec::new(),
            ca: None,
        }
    }
}

/// Why pushing cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error("the VAPID key: {0}")]
    Key(std::io::Error),
    #[error("--push-ca {0}: {1}")]
    Ca(String, String),
    #[error("TLS for push services: {0}")]
    Tls(rustls::Error),
}

/// This inbox's VAPID key pair (P-256).
pub struct Vapid {
    key: SigningKey,
    /// The public key, uncompressed, base64url: the browser's `applicationServerKey`.
    public: String,
}

impl Vapid {
    /// The key kept in `store`, made the first time.
    pub fn kept(store: &Store) -> std::io::Result<Vapid> {
        let invalid = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        let text = store.kept_secret(KEY_FILE, || loop {
            let mut raw = [0u8; 32];
            ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut raw)
                .map_err(|_| std::io::Error::other("no randomness"))?;
            // A scalar of zero or past the group's order is no key (about 2^-32 of them).
            if SigningKey::from_slice(&raw).is_ok() {
                return Ok(format!("{}\n", B64.encode(raw)).into_bytes());
            }
        })?;
        let raw = B64
            .decode(String::from_utf8_lossy(&text).trim())
            .map_err(|e| invalid(format!("{KEY_FILE}: {e}")))?;
        let key = SigningKey::from_slice(&raw).map_err(|e| invalid(format!("{KEY_FILE}: {e}")))?;
        let public = B64.encode(key.verifying_key().to_encoded_point(false).as_bytes());
        Ok(Vapid { key, public })
    }

    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header for a push to `endpoint` (RFC 8292: `vapid t=JWT, k=KEY`,
    /// the JWT's audience the endpoint's origin).
    pub fn authorization(&self, endpoint: &Uri, contact: &str, now: SystemTime) -> Option<String> {
        let host = endpoint.host()?;
        let audience = match endpoint.port_u16() {
            Some(p) if p != 443 => format!("https://{host}:{p}"),
            _ => format!("https://{host}"),
        };
        let head = B64.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let exp = now_secs(now) + TOKEN_LIFE.as_secs();
        let claims = json!({"aud": audience, "exp": exp, "sub": contact});
        let input = format!("{head}.{}", B64.encode(claims.to_string()));
        let sig: Signature = self.key.sign(input.as_bytes());
        Some(format!(
            "vapid t={input}.{}, k={}",
            B64.encode(sig.to_bytes()),
            self.public
        ))
    }
}

/// `endpoint` as a URL a push may go to: `https`, and a known push service on port 443 or a
/// host of `--push-service` (`HOST` or `HOST:PORT`, as in the URL).
pub fn allowed(endpoint: &str, services: &[String]) -> Result<Uri, &'static str> {
    let uri: Uri = endpoint.parse().map_err(|_| "the endpoint is not a URL")?;
    if uri.scheme_str() != Some("https") {
        return Err("a push endpoint is an https URL");
    }
    let (Some(host), Some(authority)) = (uri.host(), uri.authority()) else {
        return Err("the endpoint has no host");
    };
    if authority.as_str().contains('@') {
        return Err("the endpoint has a user name");
    }
    let host = host.to_ascii_lowercase();
    let known = uri.port_u16().is_none_or(|p| p == 443)
        && KNOWN_SERVICES
            .iter()
            .any(|k| host == *k || host.ends_with(&format!(".{k}")));
    let named = services
        .iter()
        .any(|s| s.eq_ignore_ascii_case(authority.as_str()));
    if known || named {
        Ok(uri)
    } else {
        Err("the endpoint is not a known push service (see --push-service)")
    }
}

/// Sends the pushes.
pub struct Pusher {
    store: Store,
    vapid: Vapid,
    cfg: PushConfig,
    tls: tokio_rustls::TlsConnector,
    sending: Arc<Semaphore>,
}

impl Pusher {
    /// The VAPID key (made if need be) and a TLS client that trusts the system's roots and
    /// `--push-ca`.
    pub fn new(store: Store, cfg: PushConfig) -> Result<Pusher, PushError> {
        let vapid = Vapid::kept(&store).map_err(PushError::Key)?;
        let mut roots = rustls::RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        let (added, _) = roots.add_parsable_certificates(native.certs);
        if let Some(ca) = &cfg.ca {
            let shown = ca.display().to_string();
            for c in CertificateDer::pem_file_iter(ca)
                .map_err(|e| PushError::Ca(shown.clone(), e.to_string()))?
            {
                let c = c.map_err(|e| PushError::Ca(shown.clone(), e.to_string()))?;
                roots
                    .add(c)
                    .map_err(|e| PushError::Ca(shown.clone(), e.to_string()))?;
            }
        }
        if roots.is_empty() {
            tracing::warn!(
                "push: no root certificates (install ca-certificates); pushes will fail"
            );
        }
        tracing::debug!(system_roots = added, "push: ready");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(PushError::Tls)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Pusher {
            store,
            vapid,
            cfg,
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            sending: Arc::new(Semaphore::new(MAX_SENDING)),
        })
    }

    /// Pushes each new question on `events` until `stop` (or the stream ends). Questions
    /// asked before now are not pushed (a restart does not ring again).
    pub async fn run(
        self: Arc<Self>,
        mut events: broadcast::Receiver<Arc<Value>>,
        stop: tokio_util::sync::CancellationToken,
    ) {
        let started = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        let mut seen: (HashSet<String>, VecDeque<String>) = Default::default();
        loop {
            let event = tokio::select! {
                _ = stop.cancelled() => return,
                e = events.recv() => e,
            };
            let event = match event {
                Ok(e) => e,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(
                        missed = n,
                        "push: fell behind the events; some questions are not pushed"
                    );
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            // A question rings (`crate::ring`): at its delay, then at each reminder.
            if event["event"] != "ring" {
                continue;
            }
            let q = &event["question"];
            if q["createdAt"].as_str().is_none_or(|c| c < started.as_str()) {
                continue;
            }
            let bridge = event["bridge"].as_str().unwrap_or("");
            let body = payload(bridge, q);
            let tag = format!(
                "{}#{}",
                body["tag"].as_str().unwrap_or(""),
                event["reminder"]
            );
            if !seen.0.insert(tag.clone()) {
                continue;
            }
            seen.1.push_back(tag);
            if seen.1.len() > REMEMBERED {
                if let Some(old) = seen.1.pop_front() {
                    seen.0.remove(&old);
                }
            }
            self.push_all(body.to_string().into_bytes());
        }
    }

    /// Starts one push per subscription of a paired device.
    fn push_all(self: &Arc<Self>, body: Vec<u8>) {
        let (devices, subs) = match (self.store.devices(), self.store.subscriptions()) {
            (Ok(d), Ok(s)) => (d, s),
            (Err(e), _) | (_, Err(e)) => {
                tracing::error!(error = %e, "push: cannot read the devices or subscriptions");
                return;
            }
        };
        for sub in subs {
            if !devices.iter().any(|d| d.token_sha256 == sub.device_sha256) {
                continue;
            }
            let Ok(permit) = self.sending.clone().try_acquire_owned() else {
                tracing::warn!(endpoint = %sub.endpoint, "push: too many pushes in flight; this one is dropped");
                continue;
            };
            let (this, body) = (self.clone(), body.clone());
            tokio::spawn(async move {
                let endpoint = sub.endpoint.clone();
                match tokio::time::timeout(SEND_TIMEOUT, this.send(&sub, body)).await {
                    Ok(Ok(status)) => this.sent(&sub, status).await,
                    Ok(Err(e)) => tracing::warn!(%endpoint, error = %e, "push: not sent"),
                    Err(_) => {
                        tracing::warn!(%endpoint, "push: no answer from the push service in time")
                    }
                }
                drop(permit);
            });
        }
    }

    /// What the push service's `status` means for `sub`.
    async fn sent(&self, sub: &Subscription, status: StatusCode) {
        let endpoint = &sub.endpoint;
        if status.is_success() {
            tracing::debug!(%endpoint, %status, "push: sent");
        } else if status == StatusCode::NOT_FOUND || status == StatusCode::GONE {
            tracing::info!(%endpoint, %status, "push: the subscription is gone; forgetting it");
            let (store, gone) = (self.store.clone(), endpoint.clone());
            let _ = tokio::task::spawn_blocking(move || store.unsubscribe(|s| s.endpoint == gone))
                .await;
        } else {
            tracing::warn!(%endpoint, %status, "push: refused by the push service");
        }
    }

    /// Encrypts `body` for `sub` and POSTs it; the push service's status.
    async fn send(&self, sub: &Subscription, body: Vec<u8>) -> Result<StatusCode, BoxError> {
        let uri = allowed(&sub.endpoint, &self.cfg.services)?;
        let ua_public = p256::PublicKey::from_sec1_bytes(&unpadded(&sub.p256dh)?)?;
        let auth = unpadded(&sub.auth)?;
        if auth.len() != 16 {
            return Err("the subscription's auth secret is not 16 bytes".into());
        }
        let mut req = web_push_native::WebPushBuilder::new(
            uri.clone(),
            ua_public,
            web_push_native::Auth::clone_from_slice(&auth),
        )
        .with_valid_duration(KEEP_FOR)
        .build(body)?;
        let vapid = self
            .vapid
            .authorization(&uri, &self.cfg.contact, SystemTime::now())
            .ok_or("the endpoint has no host")?;
        let h = req.headers_mut();
        h.insert(AUTHORIZATION, HeaderValue::from_str(&vapid)?);
        // Delivered at once, even to a phone saving its battery (RFC 8030 section 5.3).
        h.insert("urgency", HeaderValue::from_static("high"));
        post(&self.tls, req).await
    }
}

/// POSTs `req` over one HTTPS connection (HTTP/1.1); the response's status.
async fn post(
    tls: &tokio_rustls::TlsConnector,
    req: http::Request<Vec<u8>>,
) -> Result<StatusCode, BoxError> {
    let uri = req.uri().clone();
    let (Some(host), Some(authority)) = (uri.host(), uri.authority()) else {
        return Err("the endpoint has no host".into());
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let tcp =
        tokio::net::TcpStream::connect((host.as_str(), uri.port_u16().unwrap_or(443))).await?;
    let name = ServerName::try_from(host)?;
    let stream = tls.connect(name, tcp).await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    let (mut parts, body) = req.into_parts();
    parts
        .headers
        .insert(HOST, HeaderValue::from_str(authority.as_str())?);
    parts.uri = uri.path_and_query().map_or("/", |p| p.as_str()).parse()?;
    let send = sender.send_request(http::Request::from_parts(
        parts,
        Full::new(Bytes::from(body)),
    ));
    // The connection is driven here, not by a task of its own: it ends with this push. It
    // may end (`connection: close`) before the response is taken: then the response, or
    // why there is none, is in `send`.
    tokio::pin!(conn);
    tokio::pin!(send);
    let resp = tokio::select! {
        biased;
        r = &mut send => r?,
        r = &mut conn => {
            r?;
            send.await?
        }
    };
    Ok(resp.status())
}

/// `GET /push/key`, `POST /push/subscribe`, `POST /push/unsubscribe` for a paired `device`.
pub async fn route<B>(
    pusher: Option<Arc<Pusher>>,
    device: Device,
    req: HttpRequest<B>,
) -> HttpResponse
where
    B: http_body::Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    use crate::control::gate::json as reply;
    let Some(pusher) = pusher else {
        return reply(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"error": "this inbox cannot send pushes (see its log)"}),
        );
    };
    let store = pusher.store.clone();
    let mine = device.token_sha256.clone();
    match (req.method().clone(), req.uri().path()) {
        (Method::GET, "/push/key") => {
            let subscribed = store
                .subscriptions()
                .map(|s| s.iter().any(|s| s.device_sha256 == mine))
                .unwrap_or(false);
            reply(
                StatusCode::OK,
                &json!({"publicKey": pusher.vapid.public_key(), "subscribed": subscribed}),
            )
        }
        (Method::POST, "/push/subscribe") => {
            let body = match crate::control::gate::body_within(req, 4096).await {
                Ok(b) => b,
                Err(too_large) => return too_large,
            };
            let sub = match subscription(&body, &pusher.cfg.services) {
                Ok((endpoint, p256dh, auth)) => Subscription {
                    device_sha256: mine,
                    endpoint,
                    p256dh,
                    auth,
                    subscribed_at: now_secs(SystemTime::now()),
                },
                Err(e) => return reply(StatusCode::BAD_REQUEST, &json!({"error": e})),
            };
            let endpoint = sub.endpoint.clone();
            match tokio::task::spawn_blocking(move || store.subscribe(sub)).await {
                Ok(Ok(true)) => {
                    tracing::info!(device = %device.name, %endpoint, "push: a device subscribed");
                    reply(StatusCode::OK, &json!({"subscribed": true}))
                }
                Ok(Ok(false)) => reply(
                    StatusCode::UNAUTHORIZED,
                    &json!({"error": "this device was revoked"}),
                ),
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "push: cannot keep a subscription");
                    reply(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        &json!({"error": "the inbox cannot keep the subscription"}),
                    )
                }
                Err(_) => reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &json!({"error": "the inbox cannot keep the subscription"}),
                ),
            }
        }
        (Method::POST, "/push/unsubscribe") => {
            let gone =
                tokio::task::spawn_blocking(move || store.unsubscribe(|s| s.device_sha256 == mine))
                    .await
                    .ok()
                    .and_then(Result::ok);
            match gone {
                Some(_) => reply(StatusCode::OK, &json!({"subscribed": false})),
                None => reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &json!({"error": "the inbox cannot change the subscriptions"}),
                ),
            }
        }
        _ => reply(StatusCode::NOT_FOUND, &json!({"error": "not found"})),
    }
}

/// base64url, with or without its `=` padding.
fn unpadded(s: &str) -> Result<Vec<u8>, base64::DecodeError> {
    B64.decode(s.trim_end_matches('='))
}

/// A `PushSubscription.toJSON()`: `{endpoint, keys: {p256dh, auth}}`, checked.
fn subscription(body: &[u8], services: &[String]) -> Result<(String, String, String), String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let (Some(endpoint), Some(p256dh), Some(auth)) = (
        v["endpoint"].as_str(),
        v["keys"]["p256dh"].as_str(),
        v["keys"]["auth"].as_str(),
    ) else {
        return Err(
            "expected {\"endpoint\": ..., \"keys\": {\"p256dh\": ..., \"auth\": ...}}".into(),
        );
    };
    allowed(endpoint, services).map_err(str::to_owned)?;
    let key = unpadded(p256dh).map_err(|_| "keys.p256dh is not base64url")?;
    p256::PublicKey::from_sec1_bytes(&key).map_err(|_| "keys.p256dh is not a P-256 key")?;
    if unpadded(auth).map_or(true, |a| a.len() != 16) {
        return Err("keys.auth is not 16 bytes of base64url".into());
    }
    Ok((endpoint.to_owned(), p256dh.to_owned(), auth.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::child::agent_name;
    use crate::inbox::remote::payload::MAX_TEXT;

    #[test]
    fn only_https_endpoints_of_push_services_or_named_hosts_are_allowed() {
        let none: &[String] = &[];
        for ok in [
            "https://fcm.googleapis.com/fcm/send/abc",
            "https://updates.push.services.mozilla.com/wpush/v2/abc",
            "https://web.push.apple.com/QGx",
            "https://wns2-by3p.notify.windows.com/w/?token=x",
        ] {
            assert!(allowed(ok, none).is_ok(), "{ok}");
        }
        for bad in [
            "http://fcm.googleapis.com/fcm/send/abc",
            "https://fcm.googleapis.com:8443/x",
            "https://evilfcm.googleapis.com.example/x",
            "https://user@fcm.googleapis.com/x",
            "https://127.0.0.1/x",
            "not a url",
        ] {
            assert!(allowed(bad, none).is_err(), "{bad}");
        }
        // A subscription's keys, with or without base64's padding.
        let key = p256::SecretKey::from_slice(&[7; 32]).unwrap().public_key();
        let key = B64.encode(key.to_sec1_bytes());
        for (p256dh, auth) in [
            (key.clone(), "AAAAAAAAAAAAAAAAAAAAAA".to_owned()),
            (format!("{key}="), "AAAAAAAAAAAAAAAAAAAAAA==".to_owned()),
        ] {
            let body = json!({"endpoint": "https://fcm.googleapis.com/fcm/send/x",
                "keys": {"p256dh": p256dh, "auth": auth}});
            assert!(
                subscription(body.to_string().as_bytes(), none).is_ok(),
                "{body}"
            );
        }
        let named = ["127.0.0.3:4443".to_owned()];
        assert!(allowed("https://127.0.0.3:4443/push/1", &named).is_ok());
        assert!(allowed("https://127.0.0.3:4444/push/1", &named).is_err());
    }

    #[test]
    fn a_payload_names_the_agent_and_the_question_never_a_command() {
        let bridge = json!({"id": "b1", "agent": ["/usr/bin/npx", "API_KEY=sk-1", "-y", "@zed/claude-code-acp", "--secret"], "cwd": "/home/ada/shop/"});
        let q = json!({"bridge": bridge, "sessionId": "s", "questionId": "q", "source": "form",
            "items": [{"prompt": "Which database?"}, {"prompt": "Which port?"}]});
        let p = payload("b1", &q);
        assert_eq!(p["title"], "npx claude-code-acp · shop");
        // Nothing of a command but its program (and what a launcher runs): no flag values.
        assert_eq!(
            agent_name(&["/opt/agent", "--api-key", "sk-1", "run"]),
            "agent"
        );
        assert_eq!(
            agent_name(&["env", "TOKEN=x", "/usr/bin/claude-code-acp"]),
            "env claude-code-acp"
        );
        assert_eq!(agent_name(&["/", "x"]), "agent");
        assert_eq!(agent_name(&[]), "agent");
        // A blank prompt, a bare command, very long ids: still a payload of the schema.
        let odd = json!({"bridge": {"agent": ["/"], "cwd": "/"}, "sessionId": "s".repeat(5000),
            "questionId": "q", "items": [{"prompt": "   "}]});
        let o = payload("b", &odd);
        assert_eq!(
            (o["title"].as_str(), o["body"].as_str()),
            (Some("agent"), Some("A question"))
        );
        assert_eq!(o["tag"].as_str().unwrap().len(), 64);
        assert_eq!(p["body"], "Which database? (+1 more)");
        assert_eq!(p["tag"], r#"["b1","s","q"]"#);
        let approval = json!({"bridge": bridge, "sessionId": "s", "questionId": "t", "source": "permission",
            "items": [{"prompt": "`rm -rf /tmp/build`", "header": "execute"}],
            "context": {"toolCall": {"rawInput": {"command": "rm -rf /tmp/build"}}}});
        let p = payload("b1", &approval);
        assert_eq!(p["body"], "Approve a tool call (execute)");
        assert!(!p.to_string().contains("rm -rf"), "{p}");
        assert_eq!(p["approval"], true);
        assert!(p.get("actions").is_none(), "no options: no actions: {p}");
        // Actions: "Allow once" and "Deny" for a tool approval, never "Always allow"; the
        // two choices of a single choice; none for more, or anything to type.
        let opt =
            |v: &str, kind: &str| json!({"value": v, "label": v.to_uppercase(), "kind": kind});
        let mut approval = approval;
        approval["items"][0]["options"] = json!([
            opt("always", "allow_always"),
            opt("once", "allow_once"),
            opt("no", "reject_once")
        ]);
        let p = payload("b1", &approval);
        assert_eq!(
            p["actions"],
            json!([{"action": "a0", "title": "Allow once", "answers": [["once"]]},
                   {"action": "a1", "title": "Deny", "reject": true}])
        );
        assert_eq!(
            p["question"],
            json!({"bridge": "b1", "sessionId": "s", "questionId": "t"})
        );
        assert_eq!(p["url"], "/?focus=%5B%22b1%22%2C%22s%22%2C%22t%22%5D");
        let two = json!({"bridge": bridge, "sessionId": "s", "questionId": "u", "source": "question",
            "items": [{"prompt": "Which?", "options": [opt("a", ""), opt("b", "")]}]});
        assert_eq!(
            payload("b1", &two)["actions"][1],
            json!({"action": "a1", "title": "B", "answers": [["b"]]})
        );
        let mut three = two.clone();
        three["items"][0]["options"] = json!([opt("a", ""), opt("b", ""), opt("c", "")]);
        assert!(payload("b1", &three).get("actions").is_none());
        let mut typed = two.clone();
        typed["items"][0]["allowFreeText"] = true.into();
        assert!(payload("b1", &typed).get("actions").is_none());
        let long = json!({"items": [{"prompt": "é".repeat(500)}]});
        let body = payload("b", &long)["body"].as_str().unwrap().to_owned();
        assert_eq!(body.chars().count(), MAX_TEXT + 1);
    }

    /// RFC 8292's token, checked as a push service would: ES256 over `header.claims` with
    /// the `k` key, the audience the endpoint's origin.
    #[test]
    fn the_vapid_token_is_signed_by_the_kept_key_for_the_endpoint_origin() {
        use p256::ecdsa::signature::Verifier as _;
        let dir = std::env::temp_dir().join(format!("aqb-vapid-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let vapid = Vapid::kept(&store).unwrap();
        assert_eq!(
            Vapid::kept(&store).unwrap().public_key(),
            vapid.public_key(),
            "kept"
        );
        let now = SystemTime::now();
        let header = vapid
            .authorization(
                &"https://push.example:8443/x".parse().unwrap(),
                "mailto:a@b.c",
                now,
            )
            .unwrap();
        let (t, k) = header
            .strip_prefix("vapid t=")
            .and_then(|r| r.split_once(", k="))
            .unwrap();
        assert_eq!(k, vapid.public_key());
        let (input, sig) = t.rsplit_once('.').unwrap();
        let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&B64.decode(k).unwrap()).unwrap();
        let sig = Signature::from_slice(&B64.decode(sig).unwrap()).unwrap();
        key.verify(input.as_bytes(), &sig).unwrap();
        let claims: Value =
            serde_json::from_slice(&B64.decode(input.split_once('.').unwrap().1).unwrap()).unwrap();
        assert_eq!(claims["aud"], "https://push.example:8443");
        assert_eq!(claims["sub"], "mailto:a@b.c");
        assert!(claims["exp"].as_u64().unwrap() <= now_secs(now) + 24 * 3600);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The decryption the tests use to read a push is RFC 8291's: its example message (section
    /// 5) decrypts with the example's keys.
    #[test]
    fn rfc_8291_example_decrypts() {
        let ua_private = B64
            .decode("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")
            .unwrap();
        let auth = B64.decode("BTBZMqHH6r4Tts7J_aSIgg").unwrap();
        let message = B64
            .decode("DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
            .unwrap();
        let secret = p256::SecretKey::from_slice(&ua_private).unwrap();
        let plain =
            web_push_native::decrypt(message, &secret, web_push_native::Auth::from_slice(&auth))
                .unwrap();
        assert_eq!(plain, b"When I grow up, I want to be a watermelon");
    }
}
