//! `inbox --remote ADDR:PORT`: the inbox's page and control API for paired devices (a phone),
//! over TLS only, beside the loopback listener, which stays as it is.
//!
//! Shape: the same JSON-RPC methods as the loopback listener (so the same loop answers
//! them), served per connection behind the [`gate::RemoteGate`] instead of the bearer-token
//! gate: a connection is TLS 1.3 ([`tls`]), or, when its first byte is not a TLS handshake,
//! a plain-text refusal; its device is whatever paired cookie its requests carry
//! ([`devices`]). A connection whose device is revoked is closed.
//!
//! Invariants: nothing on this port answers without TLS; nothing past the pairing page and
//! the page itself answers without a paired device; the listener stops with the inbox.

pub mod devices;
pub mod gate;
mod killable;
pub mod pairing;
mod payload;
pub mod push;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::server::{stop_channel, Methods, ServerConfig, ServerHandle, StopHandle};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use devices::Store;
use gate::{RemoteLayer, Shared, Who};

/// Connections the listener serves at once.
const MAX_CONNECTIONS: usize = 64;
/// How long a connection may take to send its first byte and finish its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// How often the devices file is checked for a revoked device.
const DEVICES_POLL: Duration = Duration::from_millis(500);
/// Connections one address may hold at once.
const PER_ADDRESS: usize = 8;
/// How long a connection may stay open without a paired device's request (the pairing
/// page, the app's files): then it is closed, so idle connections cannot fill the listener.
const UNPAIRED_IDLE: Duration = Duration::from_secs(60);
/// jsonrpsee's connection ids of this listener's connections (subscriptions are keyed by
/// them): counted apart from the loopback server's, which start at 0.
static CONNECTION_IDS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1 << 31);

/// `--remote` and friends.
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    pub addr: SocketAddr,
    /// The name or address the pairing link uses (default: this machine's first
    /// non-loopback address, or the listener's own).
    pub host: Option<String>,
    /// `--tls-cert` and `--tls-key`.
    pub own_cert: Option<(PathBuf, PathBuf)>,
    /// Where the devices, pairing codes and the made certificate are kept.
    pub state: PathBuf,
    /// Web Push to subscribed devices.
    pub push: push::PushConfig,
}

/// The state folder of `--remote` ([`RemoteConfig::state`], `--state-dir`): its paired
/// devices, pairing codes and made certificate.
pub fn state_dir(given: Option<PathBuf>) -> PathBuf {
    given.unwrap_or_else(|| {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        var("XDG_STATE_HOME")
            .or_else(|| var("HOME").map(|h| h.join(".local/state")))
            .unwrap_or_else(std::env::temp_dir)
            .join("acp-question-bridge")
            .join("inbox")
    })
}

/// Why the remote listener cannot start.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("the state folder {0}: {1}")]
    State(PathBuf, std::io::Error),
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
}

/// What the remote listener tells the person, and how it is stopped.
pub struct Remote {
    pub addr: SocketAddr,
    /// `https://HOST:PORT/`.
    pub base: String,
    pub fingerprint: String,
    handle: ServerHandle,
    /// Stops the pushes.
    pushing: tokio_util::sync::CancellationToken,
    /// `remote.json` in the state folder, for `inbox pair`: removed when the listener stops.
    announced: PathBuf,
}

impl Remote {
    /// Stops accepting and ends the connections (each finishes the call it is in).
    pub async fn stop(&self) {
        let _ = std::fs::remove_file(&self.announced);
        self.pushing.cancel();
        let _ = self.handle.stop();
        let _ = tokio::time::timeout(Duration::from_secs(1), self.handle.clone().stopped()).await;
    }
}

/// This machine's first non-loopback IPv4 address (what a phone on the same network dials).
fn lan_address() -> Option<std::net::IpAddr> {
    nix::ifaddrs::getifaddrs()
        .ok()?
        .filter_map(|i| i.address?.as_sockaddr_in().map(|a| a.ip()))
        .find(|ip| !ip.is_loopback() && !ip.is_link_local() && !ip.is_unspecified())
        .map(std::net::IpAddr::V4)
}

/// Binds, loads or makes the certificate, serves `methods` to paired devices, and pushes the
/// new questions of `events` to those subscribed.
pub async fn start(
    cfg: &RemoteConfig,
    methods: Methods,
    events: &tokio::sync::broadcast::Sender<Arc<serde_json::Value>>,
) -> Result<Remote, RemoteError> {
    let store = Store::open(&cfg.state).map_err(|e| RemoteError::State(cfg.state.clone(), e))?;
    let listener = TcpListener::bind(cfg.addr)
        .await
        .map_err(|e| RemoteError::Bind(cfg.addr, e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| RemoteError::Bind(cfg.addr, e))?;
    let host = match &cfg.host {
        Some(h) => h.clone(),
        None if addr.ip().is_unspecified() => lan_address()
            .unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]))
            .to_string(),
        None => addr.ip().to_string(),
    };
    let mut names = vec!["localhost".to_owned(), host.clone()];
    if !addr.ip().is_unspecified() {
        names.push(addr.ip().to_string());
    }
    names.dedup();
    let own = cfg
        .own_cert
        .as_ref()
        .map(|(c, k)| (c.as_path(), k.as_path()));
    let identity = tls::identity(own, &store, &names)?;
    let authority = match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => format!("[{v6}]:{}", addr.port()),
        _ => format!("{host}:{}", addr.port()),
    };
    let base = format!("https://{authority}/");
    let remote_json = serde_json::json!({"base": base, "fingerprint": identity.fingerprint});
    store
        .write("remote.json", remote_json.to_string().as_bytes())
        .map_err(|e| RemoteError::State(cfg.state.clone(), e))?;
    let announced = store.dir().join("remote.json");
    let pushing = tokio_util::sync::CancellationToken::new();
    let pusher = match push::Pusher::new(store.clone(), cfg.push.clone()) {
        Ok(p) => {
            let p = Arc::new(p);
            tokio::spawn(p.clone().run(events.subscribe(), pushing.clone()));
            Some(p)
        }
        Err(e) => {
            tracing::error!(error = %e, "remote: no Web Push; the page works without it");
            None
        }
    };
    let shared = Arc::new(Shared::new(store, pusher));
    let (stop, handle) = stop_channel();
    let acceptor = tokio_rustls::TlsAcceptor::from(identity.config);
    tokio::spawn(accept(
        listener,
        acceptor,
        shared.clone(),
        methods,
        stop.clone(),
    ));
    tokio::spawn(watch_devices(shared, stop));
    tracing::info!(%addr, "remote listener (TLS) for paired devices");
    Ok(Remote {
        addr,
        base,
        fingerprint: identity.fingerprint,
        handle,
        pushing,
        announced,
    })
}

/// Reads the devices file again every [`DEVICES_POLL`], so a revocation reaches the
/// connections even when the device makes no request.
async fn watch_devices(shared: Arc<Shared>, stop: StopHandle) {
    let stopped = stop.shutdown();
    tokio::pin!(stopped);
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            _ = tokio::time::sleep(DEVICES_POLL) => { shared.devices(); }
        }
    }
}

async fn accept(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    shared: Arc<Shared>,
    methods: Methods,
    stop: StopHandle,
) {
    let room = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let per_address: Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>> =
        Arc::default();
    let stopped = stop.clone().shutdown();
    tokio::pin!(stopped);
    loop {
        let (tcp, peer) = tokio::select! {
            _ = &mut stopped => return,
            got = listener.accept() => match got {
                Ok(got) => got,
                Err(e) => {
                    tracing::warn!(error = %e, "remote: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = room.clone().try_acquire_owned() else {
            tracing::warn!(%peer, "remote: too many connections; closing this one");
            continue;
        };
        {
            let mut held = per_address.lock().unwrap_or_else(|e| e.into_inner());
            let n = held.entry(peer.ip()).or_default();
            if *n >= PER_ADDRESS {
                tracing::warn!(%peer, "remote: too many connections from this address; closing this one");
                continue;
            }
            *n += 1;
        }
        let per_address = per_address.clone();
        let conn = Connection {
            acceptor: acceptor.clone(),
            shared: shared.clone(),
            methods: methods.clone(),
            stop: stop.clone(),
        };
        tokio::spawn(async move {
            // Held until the stream is gone: a WebSocket outlives `serve`.
            conn.serve(tcp, peer).await;
            drop(permit);
            let mut held = per_address.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(n) = held.get_mut(&peer.ip()) {
                *n -= 1;
                if *n == 0 {
                    held.remove(&peer.ip());
                }
            }
        });
    }
}

struct Connection {
    acceptor: tokio_rustls::TlsAcceptor,
    shared: Arc<Shared>,
    methods: Methods,
    stop: StopHandle,
}

impl Connection {
    async fn serve(self, tcp: TcpStream, peer: SocketAddr) {
        // A TLS connection opens with a handshake record (0x16); anything else is refused in
        // plain text, so a person who typed http:// learns why.
        let mut first = [0u8; 1];
        match tokio::time::timeout(HANDSHAKE, tcp.peek(&mut first)).await {
            Ok(Ok(1)) if first[0] == 0x16 => {}
            Ok(Ok(1)) => return refuse_plain(tcp, peer).await,
            _ => return,
        }
        // A WebSocket outlives the HTTP connection that upgraded it (a task of its own
        // serves it): the connection's stream itself can be killed when its device is
        // revoked, and a watcher lives as long as the stream does.
        let kill = tokio_util::sync::CancellationToken::new();
        let alive = tokio_util::sync::CancellationToken::new();
        let tcp = killable::Killable::new(tcp, kill.clone(), alive.clone());
        let tls = match tokio::time::timeout(HANDSHAKE, self.acceptor.accept(tcp)).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                tracing::info!(%peer, error = %e, "remote: TLS handshake failed");
                return;
            }
            Err(_) => return,
        };
        let who: Who = Arc::default();
        let layer = RemoteLayer {
            shared: self.shared.clone(),
            peer: peer.ip(),
            who: who.clone(),
        };
        let service = jsonrpsee::server::Server::builder()
            .set_config(
                ServerConfig::builder()
                    .max_request_body_size(1 << 20)
                    .max_response_body_size(crate::control::MAX_RESPONSE)
                    .build(),
            )
            .set_http_middleware(tower::ServiceBuilder::new().layer(layer))
            .to_service_builder()
            .connection_id(CONNECTION_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
            .build(self.methods, self.stop.clone());
        tokio::spawn(watch_revocation(
            self.shared.clone(),
            who,
            peer,
            kill,
            alive.clone(),
        ));
        let _ = jsonrpsee::server::serve_with_graceful_shutdown(tls, service, self.stop.shutdown())
            .await;
        // An upgraded WebSocket is served by a task of its own: wait for its stream to go.
        alive.cancelled().await;
    }
}

/// Kills the connection once the device it authenticated is no longer paired; ends when the
/// connection's stream is gone.
async fn watch_revocation(
    shared: Arc<Shared>,
    who: Who,
    peer: SocketAddr,
    kill: tokio_util::sync::CancellationToken,
    alive: tokio_util::sync::CancellationToken,
) {
    let mut changed = shared.changed.subscribe();
    // Closes a connection that made no paired request within UNPAIRED_IDLE; then disarmed.
    let mut unpaired = Some(Box::pin(tokio::time::sleep(UNPAIRED_IDLE)));
    loop {
        tokio::select! {
            _ = alive.cancelled() => return,
            r = changed.changed() => if r.is_err() { return },
            _ = async { unpaired.as_mut().expect("guarded").await }, if unpaired.is_some() => {
                unpaired = None;
                if who.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
                    tracing::debug!(%peer, "remote: no paired request within a minute; closing");
                    kill.cancel();
                    return;
                }
                continue;
            }
        }
        let mine = who.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some((name, hash)) = mine {
            if !shared.devices().iter().any(|d| d.token_sha256 == hash) {
                tracing::info!(%peer, device = %name, "remote: the device was revoked; its connection is closed");
                kill.cancel();
                return;
            }
        }
    }
}

/// The answer to plain HTTP on the TLS port: a 400 that says to use https, then close.
async fn refuse_plain(mut tcp: TcpStream, peer: SocketAddr) {
    tracing::warn!(%peer, "remote: refused a request without TLS");
    let body = "this port speaks https only\n";
    let reply = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(HANDSHAKE, tcp.write_all(reply.as_bytes())).await;
    let _ = tcp.shutdown().await;
}
