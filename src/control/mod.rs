//! The control server (`--control <ADDR>`): answer questions from anywhere.
//!
//! A `jsonrpsee` server (HTTP and WebSocket on one port) behind the [`gate`], with the
//! methods `questions.list`, `questions.answer`, `questions.reject`, `questions.subscribe`,
//! `bridge.status` and `bridges.list`, and the Questions page at `GET /`. The same server
//! fronts `inbox`, whose loop answers the calls over every bridge (`crate::inbox`).
//!
//! Shape: the server never touches routing state. Each method sends a [`Call`] to the
//! bridge's loop (which owns the [`crate::router::Router`]) and awaits the reply, so an
//! answer from the control server and one from the IDE client are ordered by that one loop,
//! and the first one wins. Lifecycle events reach subscribers through a broadcast channel.

pub mod assets;
pub mod client;
pub mod gate;
pub mod history;
pub mod v1;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use jsonrpsee::server::{
    Methods, RpcModule, Server, ServerConfig, ServerHandle, SubscriptionMessage,
};
use jsonrpsee::types::{ErrorObjectOwned, Params};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::events::By;
use crate::methods;
use crate::questions::answer::ControlError;

/// The environment variable a token can be given in.
pub const TOKEN_ENV: &str = "ACP_QUESTION_BRIDGE_TOKEN";
/// Events buffered per subscriber; a subscriber further behind is told it missed some.
const EVENT_BUFFER: usize = 1024;
/// The largest response the control server sends and its clients (the CLI, the inbox) take:
/// `questions.list` of an inbox over 10,000 questions is about 10 MiB, jsonrpsee's default
/// limit; the list is what is pending, which the bridges bound, so no tighter limit here.
pub const MAX_RESPONSE: u32 = 1 << 30;
/// Error code: the question is not pending (already resolved, or unknown).
pub const NOT_PENDING: i32 = -32004;
/// Error code: the bridge is shutting down (its loop no longer takes calls).
pub const SHUTTING_DOWN: i32 = -32005;
/// Error code (inbox): the bridge named is not known, or cannot be reached.
pub const NO_BRIDGE: i32 = -32006;
/// Error code (a bridge, over NATS): the answer came after its deadline (`notAfter`), or
/// without one, and was not applied.
pub const ANSWER_TOO_LATE: i32 = -32007;

/// Where a bridge's token is, for a user whose bridge's stderr is not a terminal.
pub const BRIDGE_TOKEN_HINT: &str = "`acp-question-bridge inbox` shows this bridge's questions, \
     or --control-token-file FILE writes the token";
/// Where the inbox's token is, likewise.
pub const INBOX_TOKEN_HINT: &str =
    "--token-file FILE writes it, or set it with $ACP_QUESTION_BRIDGE_TOKEN";

/// `--control` and friends.
#[derive(Debug, Clone)]
pub struct ControlConfig {
    pub addr: SocketAddr,
    pub allow_remote: bool,
    pub token: String,
    pub token_file: Option<PathBuf>,
    /// Where else the token can be had, said where stderr is not a terminal and the token is
    /// not printed (a bridge: the inbox, `--control-token-file`; the inbox: `--token-file`).
    pub token_hint: &'static str,
    /// Started by default, not asked for (no `--control`): when it cannot start, the bridge
    /// warns and runs without it instead of failing.
    pub implicit: bool,
}

/// What to do when the address is taken: another bridge or inbox listens there.
fn in_use_hint(addr: SocketAddr, e: &std::io::Error) -> String {
    if e.kind() != std::io::ErrorKind::AddrInUse {
        return String::new();
    }
    format!(
        " (another bridge or inbox, or another program, listens on port {port}: `ss -ltnp 'sport = :{port}'` names it; pick another port, or port 0 for a free one: {ip}:0)",
        port = addr.port(),
        ip = addr.ip()
    )
}

/// Why the control server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ControlSetupError {
    #[error("--control {0}: not a loopback address; pass --control-allow-remote to listen on it")]
    NotLoopback(SocketAddr),
    #[error("--control {0}: expected IP:PORT or localhost:PORT")]
    BadAddr(String),
    #[error("cannot listen on {0}: {1}{hint}", hint = in_use_hint(*.0, .1))]
    Bind(SocketAddr, std::io::Error),
    #[error("cannot write the token file {0}: {1}")]
    TokenFile(PathBuf, std::io::Error),
    #[error("cannot read random bytes for the token: {0}")]
    Random(std::io::Error),
}

/// Parses `--control`: `IP:PORT`, `[IPv6]:PORT` or `localhost:PORT`, refusing a
/// non-loopback address unless `allow_remote`.
pub fn parse_addr(s: &str, allow_remote: bool) -> Result<SocketAddr, ControlSetupError> {
    let addr = match s.strip_prefix("localhost:") {
        Some(port) => port
            .parse::<u16>()
            .map(|p| SocketAddr::new(IpAddr::from([127, 0, 0, 1]), p))
            .map_err(|_| ControlSetupError::BadAddr(s.to_owned()))?,
        None => s
            .parse::<SocketAddr>()
            .map_err(|_| ControlSetupError::BadAddr(s.to_owned()))?,
    };
    if !allow_remote && !addr.ip().is_loopback() {
        return Err(ControlSetupError::NotLoopback(addr));
    }
    Ok(addr)
}

/// A fresh random 256-bit token, as 64 hex digits.
pub fn random_token() -> Result<String, ControlSetupError> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(ControlSetupError::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes the token to `path`, readable by its owner only.
fn write_token_file(path: &std::path::Path, token: &str) -> std::io::Result<()> {
    crate::private_file::write(path, format!("{token}\n").as_bytes())
}

/// What a call answers: its result, or the JSON-RPC error for the caller.
pub type Reply = oneshot::Sender<Result<Value, ErrorObjectOwned>>;

/// A call from the control server into the loop that owns the questions (the bridge's, or
/// the inbox's).
#[derive(Debug)]
pub enum Call {
    /// `questions.list`: a JSON array of question views (as JSON text: an inbox over
    /// thousands of questions writes it from what it keeps, without building a `Value`).
    List(oneshot::Sender<Box<serde_json::value::RawValue>>),
    /// `questions.answer`.
    Answer(AnswerParams, Reply),
    /// `questions.reject`.
    Reject(RejectParams, Reply),
    Status(oneshot::Sender<Value>),
    /// `bridges.list`: a JSON array.
    Bridges(oneshot::Sender<Value>),
    /// `page.visible`: the Questions page is visible (or hidden) on this machine; from a
    /// paired device (`Some`) it says nothing of the desk.
    Page {
        visible: bool,
        device: Option<String>,
        reply: oneshot::Sender<Value>,
    },
}

/// The running control server.
pub struct Control {
    /// Calls for the bridge's loop.
    pub calls: mpsc::Receiver<Call>,
    /// Makes calls like the server's methods do (for another front end: NATS).
    pub caller: mpsc::Sender<Call>,
    /// Lifecycle events for subscribers (JSON of [`crate::events::Event`]).
    pub events: broadcast::Sender<Arc<Value>>,
    /// The bound address.
    pub addr: SocketAddr,
    /// The page's URL with the token in its fragment.
    pub page_url: String,
    /// Where the token is, for a log that must not show it.
    token_where: String,
    /// The JSON-RPC methods, for another listener of the same loop (the inbox's `--remote`).
    pub methods: Methods,
    handle: ServerHandle,
    stopping: CancellationToken,
    subscriptions: TaskTracker,
}

impl Control {
    /// Says again where the Questions page is, on the bridge's stderr as it is now (a
    /// holder's, once a later front attached: the way back after an editor's crash). The
    /// token only to a terminal, as at start.
    pub fn announce_again(&self) {
        announce(&self.page_url, &self.token_where);
    }

    /// Stops the server and waits until its connections are closed, with every event
    /// published before written to every subscriber (or until `within` has passed).
    ///
    /// A connection, once the server stops, writes what it was given and closes: so each
    /// subscription is first told to hand over the events it has not yet read, and end; the
    /// server is stopped when they all have; and the bridge does not exit (which would drop
    /// the connections mid-write) until the server has stopped.
    pub async fn stop(&self, within: std::time::Duration) {
        let done = async {
            self.stopping.cancel();
            self.subscriptions.close();
            self.subscriptions.wait().await;
            let _ = self.handle.stop();
            self.handle.clone().stopped().await;
        };
        if tokio::time::timeout(within, done).await.is_err() {
            tracing::warn!("a subscriber is not reading; stopping the control server anyway");
            let _ = self.handle.stop();
        }
    }
}

struct Ctx {
    calls: mpsc::Sender<Call>,
    events: broadcast::Sender<Arc<Value>>,
    history: Arc<std::sync::Mutex<history::History>>,
    stopping: CancellationToken,
    subscriptions: TaskTracker,
}

/// The params of `questions.answer`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerParams {
    /// The bridge the question belongs to (the inbox needs it when several have the same
    /// ids); a bridge checks that it is its own.
    #[serde(default)]
    pub bridge: Option<String>,
    pub session_id: String,
    pub question_id: String,
    pub answers: Value,
    /// The paired device that answers, through the inbox's remote listener (which sets it
    /// from the device's cookie, whatever the device sent) and on from the inbox to the
    /// bridge: the `resolved` event then says `by: "device:<name>"`.
    #[serde(default)]
    pub device: Option<String>,
    /// "Always allow": with an answer that allows a tool approval, also write the rule the
    /// question's `alwaysAllow` shows for this choice to the user's policy file (docs/POLICY.md).
    #[serde(default)]
    pub remember: Option<crate::policy::remember::Remember>,
}

/// The params of `questions.reject`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RejectParams {
    #[serde(default)]
    pub bridge: Option<String>,
    pub session_id: String,
    pub question_id: String,
    #[serde(default)]
    pub reason: Option<String>,
    /// As [`AnswerParams::device`].
    #[serde(default)]
    pub device: Option<String>,
}

/// The paired device a call comes from: a request extension the inbox's remote listener
/// sets on every call of an authenticated device.
#[derive(Debug, Clone, PartialEq)]
pub struct Device(pub String);

/// The device of a call, when it came through the remote listener.
fn device_of(ext: &http::Extensions) -> Option<String> {
    ext.get::<Device>().map(|d| d.0.clone())
}

fn shutting_down() -> ErrorObjectOwned {
    ErrorObjectOwned::owned(SHUTTING_DOWN, "the bridge is shutting down", None::<()>)
}

/// The JSON-RPC error for a control call the router did not take.
pub fn control_error(e: ControlError) -> ErrorObjectOwned {
    match e {
        ControlError::NotPending { resolved_by } => ErrorObjectOwned::owned(
            NOT_PENDING,
            e.to_string(),
            Some(serde_json::json!({ "resolvedBy": resolved_by.map(By::as_str) })),
        ),
        ControlError::Invalid(msg) => {
            ErrorObjectOwned::owned(-32602, format!("Invalid params: {msg}"), None::<()>)
        }
    }
}

/// `-32602` with `e`.
pub fn invalid_params(e: impl std::fmt::Display) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(-32602, format!("Invalid params: {e}"), None::<()>)
}

async fn ask<T>(
    ctx: &Ctx,
    make: impl FnOnce(oneshot::Sender<T>) -> Call,
) -> Result<T, ErrorObjectOwned> {
    let (tx, rx) = oneshot::channel();
    ctx.calls
        .send(make(tx))
        .await
        .map_err(|_| shutting_down())?;
    rx.await.map_err(|_| shutting_down())
}

fn module(ctx: Ctx) -> RpcModule<Ctx> {
    let mut m = RpcModule::new(ctx);
    m.register_async_method(methods::QUESTIONS_LIST, |_p, ctx, _| async move {
        ask(&ctx, Call::List).await
    })
    .expect("unique method name");
    m.register_async_method(
        methods::QUESTIONS_ANSWER,
        |p: Params<'static>, ctx, ext| async move {
            let mut a: AnswerParams = p.parse().map_err(|e| invalid_params(e.message()))?;
            if let Some(d) = device_of(&ext) {
                a.device = Some(d);
            }
            ask(&ctx, |reply| Call::Answer(a, reply)).await?
        },
    )
    .expect("unique method name");
    m.register_async_method(
        methods::QUESTIONS_REJECT,
        |p: Params<'static>, ctx, ext| async move {
            let mut r: RejectParams = p.parse().map_err(|e| invalid_params(e.message()))?;
            if let Some(d) = device_of(&ext) {
                r.device = Some(d);
            }
            ask(&ctx, |reply| Call::Reject(r, reply)).await?
        },
    )
    .expect("unique method name");
    m.register_method(methods::QUESTIONS_HISTORY, |_p, ctx, _| {
        let mut h = ctx.history.lock().unwrap_or_else(|e| e.into_inner());
        Value::Array(h.list(std::time::SystemTime::now()))
    })
    .expect("unique method name");
    m.register_async_method(methods::BRIDGES_LIST, |_p, ctx, _| async move {
        ask(&ctx, Call::Bridges).await
    })
    .expect("unique method name");
    m.register_async_method(
        methods::PAGE_VISIBLE,
        |p: Params<'static>, ctx, ext| async move {
            #[derive(Deserialize)]
            struct P {
                visible: bool,
            }
            let P { visible } = p.parse().map_err(|e| invalid_params(e.message()))?;
            let device = device_of(&ext);
            ask(&ctx, |reply| Call::Page {
                visible,
                device,
                reply,
            })
            .await
        },
    )
    .expect("unique method name");
    m.register_async_method(methods::BRIDGE_STATUS, |_p, ctx, _| async move {
        ask(&ctx, Call::Status).await
    })
    .expect("unique method name");
    m.register_subscription(
        methods::QUESTIONS_SUBSCRIBE,
        methods::QUESTIONS_EVENT,
        methods::QUESTIONS_UNSUBSCRIBE,
        |_p, pending, ctx, _| async move {
            // Subscribe before accepting, so no event after the caller's next list is missed.
            let mut rx = ctx.events.subscribe();
            // Counted until it ends: the server is stopped when every subscription has.
            let _running = ctx.subscriptions.token();
            let sink = pending.accept().await?;
            loop {
                tokio::select! {
                    // Events first: when the bridge stops, what was published is handed over
                    // before the subscription ends.
                    biased;
                    ev = rx.recv() => match ev {
                        Ok(ev) => {
                            let raw = serde_json::value::to_raw_value(&*ev)?;
                            sink.send(SubscriptionMessage::from(raw)).await?;
                        }
                        Err(broadcast::error::RecvError::Lagged(n)) => {
                            let missed = serde_json::json!({ "event": "lagged", "missed": n });
                            let raw = serde_json::value::to_raw_value(&missed)?;
                            sink.send(SubscriptionMessage::from(raw)).await?;
                        }
                        Err(broadcast::error::RecvError::Closed) => return Ok(()),
                    },
                    _ = sink.closed() => return Ok(()),
                    _ = ctx.stopping.cancelled() => return Ok(()),
                }
            }
        },
    )
    .expect("unique method name");
    m
}

/// Starts the control server: binds, writes the token file, and prints the address, URL
/// and token on stderr (once).
pub async fn start(cfg: &ControlConfig) -> Result<Control, ControlSetupError> {
    let (calls_tx, calls) = mpsc::channel(64);
    let (events, _) = broadcast::channel(EVENT_BUFFER);
    let policy = gate::Policy {
        token: cfg.token.as_str().into(),
        allow_remote: cfg.allow_remote,
        calls: Some(calls_tx.clone()),
    };
    let server = Server::builder()
        .set_config(
            ServerConfig::builder()
                .max_connections(64)
                .max_request_body_size(1 << 20)
                .max_response_body_size(MAX_RESPONSE)
                .build(),
        )
        .set_http_middleware(tower::ServiceBuilder::new().layer(gate::GateLayer(Arc::new(policy))))
        .build(cfg.addr)
        .await
        .map_err(|e| ControlSetupError::Bind(cfg.addr, e))?;
    let addr = server
        .local_addr()
        .map_err(|e| ControlSetupError::Bind(cfg.addr, e))?;
    if let Some(path) = &cfg.token_file {
        write_token_file(path, &cfg.token)
            .map_err(|e| ControlSetupError::TokenFile(path.clone(), e))?;
    }
    let stopping = CancellationToken::new();
    let subscriptions = TaskTracker::new();
    let history = history::spawn(&events);
    let methods: Methods = module(Ctx {
        calls: calls_tx.clone(),
        events: events.clone(),
        history,
        stopping: stopping.clone(),
        subscriptions: subscriptions.clone(),
    })
    .into();
    let handle = server.start(methods.clone());
    let base = format!("http://{addr}/");
    let page_url = format!("{base}#token={}", cfg.token);
    let token_where = match &cfg.token_file {
        Some(f) => format!("it is in {}", f.display()),
        None => cfg.token_hint.to_owned(),
    };
    announce(&page_url, &token_where);
    tracing::info!(%addr, "control server listening");
    Ok(Control {
        calls,
        caller: calls_tx,
        events,
        addr,
        page_url,
        token_where,
        methods,
        handle,
        stopping,
        subscriptions,
    })
}

/// The one place the token is shown: stderr, not the log (whose level may hide it), and only
/// when stderr is a terminal. An editor keeps its agent servers' stderr in a log file, and a
/// service's goes to the journal: both are the user's, so the agent could read them there
/// and answer its own questions (docs/SECURITY.md, "The agent itself"). Elsewhere the page's
/// address is printed without its token, and where to find it.
fn announce(page_url: &str, token_where: &str) {
    use std::io::{IsTerminal as _, Write};
    let (base, token) = page_url.split_once("#token=").unwrap_or((page_url, ""));
    let mut err = std::io::stderr().lock();
    if err.is_terminal() {
        let _ = writeln!(
            err,
            "acp-question-bridge: control server on {base}\n\
             acp-question-bridge: questions page: {page_url}\n\
             acp-question-bridge: control token: {token}"
        );
        return;
    }
    let _ = writeln!(
        err,
        "acp-question-bridge: control server on {base}\n\
         acp-question-bridge: questions page: {base} (its token is printed only to a terminal, \
         never to a log the agent could read: {token_where})"
    );
}

/// The error for a call that names another bridge than this one, whose id is `me`
/// (`None`: it is for us).
pub fn not_me(me: Option<&str>, named: Option<&str>) -> Option<ErrorObjectOwned> {
    let named = named?;
    if me == Some(named) {
        return None;
    }
    Some(invalid_params(format!(
        "bridge: {named:?} is not this bridge ({})",
        me.unwrap_or("unnamed")
    )))
}
