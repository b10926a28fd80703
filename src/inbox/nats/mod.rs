//! The inbox across machines, over NATS JetStream (`--nats`).
//!
//! Names (`P` is `--nats-prefix`, default `acpqb`):
//! - bucket `P_questions`: one key per pending question, `<bridge id>.<hex session id>.<hex
//!   question id>`, its value the question view with `bridge`; deleted when it resolves;
//! - bucket `P_bridges`: one key per bridge, `<bridge id>`, its public description with
//!   `heartbeatAt`, put every [`HEARTBEAT`]; a bridge not heard of for [`EXPIRY`] is gone;
//! - stream `P_events` on `P.events.>`: every lifecycle event, on `P.events.<bridge id>`;
//! - subject `P.answer.<bridge id>`: requests `{"method": "questions.answer" |
//!   "questions.reject", "params": {...}, "notAfter": MS}`; the reply is `{"result": ...}` or
//!   `{"error": {"code", "message", "data"}}`, exactly what the bridge's control server would
//!   return. An answer is taken exactly once or never: the inbox sends one only while
//!   connected and gives up on it at `notAfter` (its clock, [`OP_TIMEOUT`] after sending),
//!   and the bridge refuses one that reaches it past `notAfter` (its clock), or without one,
//!   so an answer the client kept through a disconnection and sent on reconnect is never
//!   applied after the user was told it failed.
//!
//! Only features of JetStream 2.9 are used (no per-key TTL: expiry is the heartbeat's).
//!
//! The bridge side ([`publish`]) is an observer of the control server like any subscriber:
//! it reads the same event broadcast and sends answers into the loop as `Call`s, so NATS is
//! never in the routing path. When NATS is down or slow its operations fail after a timeout
//! and it marks itself out of step; once connected again it puts the current pending
//! questions (from `questions.list`) and deletes its keys that are no longer pending.
//!
//! Here: the names, the keys, the connection and the buckets both sides share; the bridge's
//! publisher is `nats/publisher.rs`, the inbox's follower `nats/follower.rs`.

use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use futures::StreamExt;
use tokio::sync::mpsc;

mod follower;
mod publisher;
pub use follower::{follow, relay, sweep, Following, Seen, Swept};
pub use publisher::{publish, Publisher};

/// How often a bridge says it is alive.
pub const HEARTBEAT: Duration = Duration::from_secs(2);
/// A bridge not heard of for this long is gone.
pub const EXPIRY: Duration = Duration::from_secs(10);
/// How long one NATS operation may take before the state is taken as unknown; also how
/// long an answer sent over NATS may take to reach its bridge (its `notAfter`).
const OP_TIMEOUT: Duration = Duration::from_secs(2);

/// Now, in milliseconds since the Unix epoch (an answer's `notAfter`).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `--nats` and friends.
#[derive(Debug, Clone)]
pub struct NatsConfig {
    pub url: String,
    pub creds: Option<PathBuf>,
    pub prefix: String,
    /// `--nats-replicas`: `None` is 3 on a cluster, 1 on a single server.
    pub replicas: Option<usize>,
}

impl NatsConfig {
    fn questions(&self) -> String {
        format!("{}_questions", self.prefix)
    }
    fn bridges(&self) -> String {
        format!("{}_bridges", self.prefix)
    }
    fn stream(&self) -> String {
        format!("{}_events", self.prefix)
    }
    pub fn events_subject(&self, bridge: &str) -> String {
        format!("{}.events.{bridge}", self.prefix)
    }
    pub fn answer_subject(&self, bridge: &str) -> String {
        format!("{}.answer.{bridge}", self.prefix)
    }
}

/// The servers of `--nats`: one URL, or a comma-separated list of a cluster's nodes (the
/// client connects to any live one, and moves to another when it goes). `Err`: the one
/// that is not a NATS URL (`nats://`, `tls://`, `ws://`, `wss://`, or `HOST:PORT`), or a URL
/// with credentials in it: a command line is read by every process of the user, the
/// agent's too (`--nats-creds FILE`).
pub fn parse_servers(list: &str) -> Result<Vec<async_nats::ServerAddr>, String> {
    let urls: Vec<&str> = list.split(',').map(str::trim).collect();
    if urls.iter().any(|u| u.is_empty()) {
        return Err(format!("--nats {list:?}: an empty server in the list"));
    }
    urls.iter()
        .map(|u| {
            let authority = u.split("://").nth(1).unwrap_or(u).split('/').next();
            if authority.is_some_and(|a| a.contains('@')) {
                return Err("--nats: give the credentials with --nats-creds FILE, not in the URL (every process of yours, the agent's too, can read a command line)".to_owned());
            }
            u.parse::<async_nats::ServerAddr>()
                .map_err(|e| format!("--nats {u:?}: not a NATS server URL ({e})"))
        })
        .collect()
}

/// Checks `--nats-prefix`: it names buckets and subjects, so letters, digits, `-` and `_`.
pub fn check_prefix(p: &str) -> Result<(), String> {
    if !p.is_empty()
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        Ok(())
    } else {
        Err(format!(
            "--nats-prefix {p:?}: use letters, digits, '-' and '_' only"
        ))
    }
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = b
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// The key of a question in the questions bucket.
pub fn question_key(bridge: &str, session_id: &str, question_id: &str) -> String {
    format!("{bridge}.{}.{}", hex(session_id), hex(question_id))
}

/// (bridge, sessionId, questionId) of a questions-bucket key.
pub fn parse_key(key: &str) -> Option<(String, String, String)> {
    let mut parts = key.split('.');
    let (b, s, q) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    Some((b.to_owned(), unhex(s)?, unhex(q)?))
}

/// Connects (in the background: the client retries for ever), reporting connection changes
/// on `events`.
pub async fn connect(
    cfg: &NatsConfig,
    name: &str,
    events: mpsc::UnboundedSender<async_nats::Event>,
) -> Result<async_nats::Client, String> {
    let mut o = async_nats::ConnectOptions::new()
        .name(name)
        .retry_on_initial_connect()
        .connection_timeout(OP_TIMEOUT)
        .request_timeout(Some(OP_TIMEOUT))
        .max_reconnects(None)
        .reconnect_delay_callback(|n| Duration::from_millis((100 * n as u64).min(1000)))
        .event_callback(move |ev| {
            let events = events.clone();
            async move {
                let _ = events.send(ev);
            }
        });
    if let Some(c) = &cfg.creds {
        o = o
            .credentials_file(c)
            .await
            .map_err(|e| format!("--nats-creds {}: {e}", c.display()))?;
    }
    o.connect(parse_servers(&cfg.url)?.as_slice())
        .await
        .map_err(|e| format!("--nats {}: {e}", cfg.url))
}

/// The two buckets and the event stream, created when missing, with the replicas asked
/// (`--nats-replicas`; by default 3, or 1 where the server says it is not a cluster); one
/// that exists with fewer is raised to that count, or said once when it cannot be.
///
/// A bucket's stream is made here with the key-value conventions (`KV_<bucket>` on
/// `$KV.<bucket>.>`, one message per subject, roll-ups allowed, deletes as markers, direct
/// gets) rather than with `create_key_value`, which first reads the account's JetStream info
/// in a shape servers before 2.10 do not send.
pub async fn open(
    js: &jetstream::Context,
    cfg: &NatsConfig,
) -> Result<(kv::Store, kv::Store), String> {
    let bucket = |name: String, max_age: Duration| async move {
        ensure(
            js,
            cfg,
            jetstream::stream::Config {
                name: format!("KV_{name}"),
                subjects: vec![format!("$KV.{name}.>")],
                max_messages_per_subject: 1,
                max_age,
                discard: jetstream::stream::DiscardPolicy::New,
                allow_rollup: true,
                deny_delete: true,
                allow_direct: true,
                duplicate_window: if max_age.is_zero() {
                    Duration::from_secs(120)
                } else {
                    max_age.min(Duration::from_secs(120))
                },
                ..Default::default()
            },
        )
        .await?;
        js.get_key_value(name.clone())
            .await
            .map_err(|e| format!("cannot open the bucket {name}: {e}"))
    };
    let questions = bucket(cfg.questions(), Duration::ZERO).await?;
    let bridges = bucket(cfg.bridges(), EXPIRY * 6).await?;
    ensure(
        js,
        cfg,
        jetstream::stream::Config {
            name: cfg.stream(),
            subjects: vec![format!("{}.events.>", cfg.prefix)],
            max_age: Duration::from_secs(24 * 3600),
            max_messages: 100_000,
            ..Default::default()
        },
    )
    .await?;
    Ok((questions, bridges))
}

/// Set once a server said it is not a cluster: the default is then one replica.
static SINGLE_SERVER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Streams already said to have fewer replicas than asked (said once per process).
static SAID_FEWER: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Creates stream `c` with the replicas asked, or raises an existing one to them.
async fn ensure(
    js: &jetstream::Context,
    cfg: &NatsConfig,
    mut c: jetstream::stream::Config,
) -> Result<(), String> {
    use std::sync::atomic::Ordering::Relaxed;
    let not_clustered = |e: &jetstream::context::CreateStreamError| {
        matches!(e.kind(), jetstream::context::CreateStreamErrorKind::JetStream(j)
            if j.error_code() == jetstream::ErrorCode::STREAM_REPLICAS_NOT_SUPPORTED)
    };
    let name = c.name.clone();
    let want = || match cfg.replicas {
        Some(n) => n,
        None if SINGLE_SERVER.load(Relaxed) => 1,
        None => 3,
    };
    c.num_replicas = want();
    let stream = match js.get_or_create_stream(c.clone()).await {
        Err(e) if cfg.replicas.is_none() && not_clustered(&e) => {
            SINGLE_SERVER.store(true, Relaxed);
            c.num_replicas = 1;
            js.get_or_create_stream(c).await
        }
        other => other,
    }
    .map_err(|e| match cfg.replicas {
        Some(n) => {
            format!("cannot create the stream {name} with {n} replicas (--nats-replicas): {e}")
        }
        None => format!("cannot create the stream {name}: {e}"),
    })?;
    let info = stream.cached_info();
    let mut have = info.config.clone();
    // A server alone answers a stream update with more replicas as if it took it.
    if info.cluster.as_ref().is_none_or(|c| c.name.is_none()) {
        if cfg.replicas.is_none() {
            SINGLE_SERVER.store(true, Relaxed);
        }
        return Ok(());
    }
    let want = want();
    if have.num_replicas.max(1) >= want {
        return Ok(());
    }
    let had = have.num_replicas.max(1);
    have.num_replicas = want;
    match js.update_stream(&have).await {
        Ok(_) => {
            tracing::info!(stream = %name, from = had, to = want, "NATS: replicas raised");
            Ok(())
        }
        Err(e) if cfg.replicas.is_none() && not_clustered(&e) => {
            SINGLE_SERVER.store(true, Relaxed);
            Ok(())
        }
        Err(e) => {
            let mut said = SAID_FEWER.lock().unwrap_or_else(|p| p.into_inner());
            if !said.contains(&name) {
                said.push(name.clone());
                tracing::warn!(stream = %name, replicas = had, asked = want, error = %e,
                    "NATS: the stream has fewer replicas than asked and cannot be raised; a node that holds it going down stops the inbox across machines (raise it with `nats stream edit {name} --replicas {want}`, or give --nats-replicas {had})");
            }
            Ok(())
        }
    }
}

/// Says what becomes of the connection, each change once: a NATS client reports every
/// failed attempt of a reconnection (every 1-3 s of an outage), and says none at start.
pub(super) struct Telling {
    url: String,
    /// What NATS being away means here.
    away: &'static str,
    started: std::time::Instant,
    said: Said,
}

#[derive(PartialEq)]
enum Said {
    Nothing,
    Ready,
    Away,
    NotReady,
}

impl Telling {
    pub(super) fn new(url: &str, away: &'static str) -> Telling {
        Telling {
            url: url.to_owned(),
            away,
            started: std::time::Instant::now(),
            said: Said::Nothing,
        }
    }

    pub(super) fn event(&mut self, ev: &async_nats::Event) {
        match ev {
            async_nats::Event::Connected if self.said == Said::Away => {
                tracing::info!(url = %self.url, "NATS: connected again");
                self.said = Said::Ready;
            }
            async_nats::Event::Disconnected if self.said != Said::Away => {
                tracing::warn!(url = %self.url, "NATS: disconnected; {} (retrying in the background)", self.away);
                self.said = Said::Away;
            }
            other => tracing::debug!(event = %other, "NATS"),
        }
    }

    /// Not connected (yet): said once, a little after the start.
    pub(super) fn not_yet(&mut self) {
        if self.said == Said::Nothing && self.started.elapsed() >= OP_TIMEOUT * 2 {
            tracing::warn!(url = %self.url, "NATS: cannot be reached yet; {} (retrying in the background)", self.away);
            self.said = Said::Away;
        }
    }

    /// Connected, but the buckets cannot be used.
    pub(super) fn not_ready(&mut self, e: &str) {
        if self.said != Said::NotReady {
            tracing::warn!(url = %self.url, error = %e, "NATS: connected, but its buckets cannot be used yet; {} (retrying)", self.away);
            self.said = Said::NotReady;
        }
    }

    /// In step again.
    pub(super) fn ready(&mut self) {
        if self.said == Said::NotReady {
            tracing::info!(url = %self.url, "NATS: its buckets are ready");
        }
        self.said = Said::Ready;
    }
}

async fn timed<T, E: std::fmt::Display>(
    what: &str,
    f: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(OP_TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("{what}: {e}")),
        Err(_) => Err(format!("{what}: no answer within {OP_TIMEOUT:?}")),
    }
}

/// Bridge `id`'s keys in the questions bucket.
async fn own_keys(questions: &kv::Store, id: &str) -> Result<Vec<String>, String> {
    let prefix = format!("{id}.");
    let keys = timed("keys", questions.keys()).await?;
    let all: Vec<String> = timed("keys", async {
        Ok::<_, String>(keys.filter_map(|k| async move { k.ok() }).collect().await)
    })
    .await?;
    Ok(all.into_iter().filter(|k| k.starts_with(&prefix)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_any_ids_and_read_back() {
        let k = question_key("0123abcd", "sess/1 ü", "q.7");
        assert!(k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.'));
        assert_eq!(
            parse_key(&k),
            Some(("0123abcd".into(), "sess/1 ü".into(), "q.7".into()))
        );
        assert_eq!(parse_key("a.b"), None);
        assert_eq!(parse_key("a.zz.00"), None);
        assert!(check_prefix("acpqb").is_ok());
        assert!(check_prefix("a.b").is_err());
        assert!(check_prefix("").is_err());
    }
}
