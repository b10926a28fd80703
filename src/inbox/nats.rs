//! The inbox across machines, over NATS JetStream (`--nats`).
//!
//! Names (`P` is `--nats-prefix`, default `acpqb`):
//! - bucket `P_questions`: one key per pending question, `<bridge id>.<hex session id>.<hex
//!   question id>`, its value the question view with `bridge`; deleted when it resolves;
//! - bucket `P_bridges`: one key per bridge, `<bridge id>`, its public description with
//!   `heartbeatAt`, put every [`HEARTBEAT`]; a bridge not heard of for [`EXPIRY`] is gone;
//! - stream `P_events` on `P.events.>`: every lifecycle event, on `P.events.<bridge id>`;
//! - subject `P.answer.<bridge id>`: requests `{"method": "questions.answer" |
//!   "questions.reject", "params": {...}}`; the reply is `{"result": ...}` or `{"error":
//!   {"code", "message", "data"}}`, exactly what the bridge's control server would return.
//!
//! Only features of JetStream 2.9 are used (no per-key TTL: expiry is the heartbeat's).
//!
//! The bridge side ([`publish`]) is an observer of the control server like any subscriber:
//! it reads the same event broadcast and sends answers into the loop as `Call`s, so NATS is
//! never in the routing path. When NATS is down or slow its operations fail after a timeout
//! and it marks itself out of step; once connected again it puts the current pending
//! questions (from `questions.list`) and deletes its keys that are no longer pending.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::control::{AnswerParams, Call, RejectParams};
use crate::methods;

/// How often a bridge says it is alive.
pub const HEARTBEAT: Duration = Duration::from_secs(2);
/// A bridge not heard of for this long is gone.
pub const EXPIRY: Duration = Duration::from_secs(10);
/// How long one NATS operation may take before the state is taken as unknown.
const OP_TIMEOUT: Duration = Duration::from_secs(2);

/// `--nats` and friends.
#[derive(Debug, Clone)]
pub struct NatsConfig {
    pub url: String,
    pub creds: Option<PathBuf>,
    pub prefix: String,
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
    o.connect(cfg.url.as_str())
        .await
        .map_err(|e| format!("--nats {}: {e}", cfg.url))
}

/// The two buckets and the event stream, created when missing.
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
        js.get_or_create_stream(jetstream::stream::Config {
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
        })
        .await
        .map_err(|e| format!("cannot create the bucket {name}: {e}"))?;
        js.get_key_value(name.clone())
            .await
            .map_err(|e| format!("cannot open the bucket {name}: {e}"))
    };
    let questions = bucket(cfg.questions(), Duration::ZERO).await?;
    let bridges = bucket(cfg.bridges(), EXPIRY * 6).await?;
    js.get_or_create_stream(jetstream::stream::Config {
        name: cfg.stream(),
        subjects: vec![format!("{}.events.>", cfg.prefix)],
        max_age: Duration::from_secs(24 * 3600),
        max_messages: 100_000,
        ..Default::default()
    })
    .await
    .map_err(|e| format!("cannot create the stream {}: {e}", cfg.stream()))?;
    Ok((questions, bridges))
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

/// What the bridge publishes, and how it answers.
pub struct Publisher {
    pub cfg: NatsConfig,
    /// The bridge's public description (with `id`).
    pub identity: Value,
    pub calls: mpsc::Sender<Call>,
    pub events: broadcast::Receiver<Arc<Value>>,
    pub stop: CancellationToken,
}

/// The bridge's side: runs until `stop`, then removes what it published.
pub async fn publish(mut p: Publisher) {
    let id = p.identity["id"].as_str().unwrap_or("").to_owned();
    let (conn_tx, mut conn) = mpsc::unbounded_channel();
    let client = match connect(&p.cfg, &format!("acp-question-bridge {id}"), conn_tx).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "NATS: cannot start; questions stay local");
            return;
        }
    };
    let js = jetstream::new(client.clone());
    let answers = client.subscribe(p.cfg.answer_subject(&id)).await;
    let mut answers = match answers {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "NATS: cannot serve answers; questions stay local");
            return;
        }
    };
    let mut stores: Option<(kv::Store, kv::Store)> = None;
    // Whether NATS may differ from the bridge (at start, after a failure or a lag).
    let mut out_of_step = true;
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = p.stop.cancelled() => break,
            Some(ev) = conn.recv() => {
                tracing::info!(event = %ev, "NATS");
                if matches!(ev, async_nats::Event::Connected) {
                    // Put the current state at once, not at the next heartbeat.
                    out_of_step = true;
                    heartbeat.reset_immediately();
                }
            }
            ev = p.events.recv() => match ev {
                Ok(ev) => {
                    let _ = client.publish(p.cfg.events_subject(&id), Bytes::from(ev.to_string())).await;
                    if !out_of_step {
                        if let Some((questions, _)) = &stores {
                            if let Err(e) = mirror(questions, &id, &p.identity, &ev).await {
                                tracing::info!(error = %e, "NATS: out of step; will put the pending questions again");
                                out_of_step = true;
                            }
                        }
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => out_of_step = true,
                Err(broadcast::error::RecvError::Closed) => break,
            },
            Some(msg) = answers.next() => {
                let reply = answer(&p.calls, &msg.payload).await;
                if let Some(to) = msg.reply {
                    let _ = client.publish(to, Bytes::from(reply.to_string())).await;
                }
            }
            _ = heartbeat.tick() => {
                if stores.is_none() && client.connection_state() == async_nats::connection::State::Connected {
                    match open(&js, &p.cfg).await {
                        Ok(s) => stores = Some(s),
                        Err(e) => tracing::info!(error = %e, "NATS: not ready"),
                    }
                }
                if let Some((questions, bridges)) = &stores {
                    let mut beat = p.identity.clone();
                    beat["heartbeatAt"] = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string().into();
                    if timed("heartbeat", bridges.put(&id, Bytes::from(beat.to_string()))).await.is_err() {
                        out_of_step = true;
                    } else if out_of_step {
                        match resync(questions, &id, &p.identity, &p.calls).await {
                            Ok(n) => {
                                tracing::info!(pending = n, "NATS: in step");
                                out_of_step = false;
                            }
                            Err(e) => tracing::info!(error = %e, "NATS: still out of step"),
                        }
                    }
                }
            }
        }
    }
    // Leaving: nothing of this bridge stays pending over there.
    if let Some((questions, bridges)) = &stores {
        let _ = timed("leave", async {
            for k in own_keys(questions, &id).await? {
                let _ = questions.delete(&k).await;
            }
            bridges.delete(&id).await.map_err(|e| e.to_string())
        })
        .await;
    }
    let _ = tokio::time::timeout(OP_TIMEOUT, client.flush()).await;
}

/// Applies one event to the questions bucket.
async fn mirror(
    questions: &kv::Store,
    id: &str,
    identity: &Value,
    ev: &Value,
) -> Result<(), String> {
    match ev["event"].as_str() {
        Some("requested") => {
            let mut q = ev["question"].clone();
            q["bridge"] = identity.clone();
            let k = question_key(id, str_of(&q, "sessionId"), str_of(&q, "questionId"));
            timed("put", questions.put(k, Bytes::from(q.to_string()))).await?;
        }
        Some("delivered") => {}
        Some("resolved") => {
            let k = question_key(id, str_of(ev, "sessionId"), str_of(ev, "questionId"));
            timed("delete", questions.delete(k)).await?;
        }
        _ => {}
    }
    Ok(())
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

/// This bridge's keys in the questions bucket.
async fn own_keys(questions: &kv::Store, id: &str) -> Result<Vec<String>, String> {
    let prefix = format!("{id}.");
    let keys = timed("keys", questions.keys()).await?;
    let all: Vec<String> = timed("keys", async {
        Ok::<_, String>(keys.filter_map(|k| async move { k.ok() }).collect().await)
    })
    .await?;
    Ok(all.into_iter().filter(|k| k.starts_with(&prefix)).collect())
}

/// Puts every pending question of the bridge and deletes its other keys; how many are
/// pending.
async fn resync(
    questions: &kv::Store,
    id: &str,
    identity: &Value,
    calls: &mpsc::Sender<Call>,
) -> Result<usize, String> {
    let (tx, rx) = oneshot::channel();
    calls
        .send(Call::List(tx))
        .await
        .map_err(|_| "the bridge is stopping")?;
    let list = rx.await.map_err(|_| "the bridge is stopping")?;
    let list: Vec<Value> = serde_json::from_str(list.get()).map_err(|e| e.to_string())?;
    let mut pending = HashSet::new();
    for mut q in list {
        q["bridge"] = identity.clone();
        let k = question_key(id, str_of(&q, "sessionId"), str_of(&q, "questionId"));
        timed("put", questions.put(&k, Bytes::from(q.to_string()))).await?;
        pending.insert(k);
    }
    for k in own_keys(questions, id).await? {
        if !pending.contains(&k) {
            timed("delete", questions.delete(&k)).await?;
        }
    }
    Ok(pending.len())
}

/// Runs one answer request from NATS through the bridge's loop.
async fn answer(calls: &mpsc::Sender<Call>, payload: &[u8]) -> Value {
    let error = |code: i32, message: String| json!({"error": {"code": code, "message": message}});
    let Ok(req) = serde_json::from_slice::<Value>(payload) else {
        return error(-32700, "Parse error".into());
    };
    let p = &req["params"];
    let s = |k: &str| p[k].as_str().map(str::to_owned);
    let (Some(session_id), Some(question_id)) = (s("sessionId"), s("questionId")) else {
        return error(
            -32602,
            "Invalid params: sessionId and questionId are required".into(),
        );
    };
    let (tx, rx) = oneshot::channel();
    let call = match req["method"].as_str() {
        Some(methods::QUESTIONS_ANSWER) => Call::Answer(
            AnswerParams {
                bridge: s("bridge"),
                session_id,
                question_id,
                answers: p["answers"].clone(),
                device: s("device"),
                remember: serde_json::from_value(p["remember"].clone()).ok(),
            },
            tx,
        ),
        Some(methods::QUESTIONS_REJECT) => Call::Reject(
            RejectParams {
                bridge: s("bridge"),
                session_id,
                question_id,
                reason: s("reason"),
                device: s("device"),
            },
            tx,
        ),
        other => return error(-32601, format!("Method not found: {other:?}")),
    };
    if calls.send(call).await.is_err() {
        return error(
            crate::control::SHUTTING_DOWN,
            "the bridge is shutting down".into(),
        );
    }
    match rx.await {
        Ok(Ok(result)) => json!({ "result": result }),
        Ok(Err(e)) => {
            json!({"error": {"code": e.code(), "message": e.message(), "data": e.data()}})
        }
        Err(_) => error(
            crate::control::SHUTTING_DOWN,
            "the bridge is shutting down".into(),
        ),
    }
}

/// What the inbox's NATS follower reports.
pub enum Seen {
    /// A bridge's heartbeat (its public description), and whether it was put while the
    /// watch ran (`false`: replayed from before, maybe the last one of a bridge that was
    /// killed).
    Bridge(Value, bool),
    /// A bridge's heartbeat key was deleted (it left).
    BridgeLeft(String),
    /// A question was put (with `bridge`).
    Question(String, Value),
    /// A question's key was deleted.
    QuestionGone(String, String, String),
    /// One of a bridge's events.
    Event(String, Value),
    /// The watches were set up again: what they replay is the whole state (the follower
    /// then sends `Synced`).
    Resyncing,
    Synced,
}

/// The inbox's side: follows the buckets and the events until `stop`; the client it uses
/// (for answers) is returned at once.
pub async fn follow(
    cfg: NatsConfig,
    tx: mpsc::Sender<Seen>,
    stop: CancellationToken,
) -> Result<async_nats::Client, String> {
    let (conn_tx, mut conn) = mpsc::unbounded_channel();
    let client = connect(&cfg, "acp-question-bridge inbox", conn_tx).await?;
    let c = client.clone();
    tokio::spawn(async move {
        let js = jetstream::new(c.clone());
        loop {
            if stop.is_cancelled() {
                return;
            }
            if let Err(e) = watch_once(&cfg, &js, &c, &tx, &stop).await {
                tracing::info!(error = %e, "NATS: watching again soon");
            }
            // Wait for a (re)connection, or a second.
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = conn.recv() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    });
    Ok(client)
}

async fn watch_once(
    cfg: &NatsConfig,
    js: &jetstream::Context,
    client: &async_nats::Client,
    tx: &mpsc::Sender<Seen>,
    stop: &CancellationToken,
) -> Result<(), String> {
    let (questions, bridges) = timed("open", open(js, cfg)).await?;
    let mut events = timed(
        "subscribe",
        client.subscribe(format!("{}.events.>", cfg.prefix)),
    )
    .await?;
    let mut qw = timed("watch", questions.watch_with_history(">")).await?;
    let mut bw = timed("watch", bridges.watch_with_history(">")).await?;
    let q_empty = timed("status", questions.status()).await?.values() == 0;
    let b_empty = timed("status", bridges.status()).await?.values() == 0;
    let send = |s: Seen| async move { tx.send(s).await.map_err(|_| "stopping".to_owned()) };
    send(Seen::Resyncing).await?;
    let (mut q_current, mut b_current) = (q_empty, b_empty);
    let mut synced = false;
    if q_current && b_current {
        send(Seen::Synced).await?;
        synced = true;
    }
    let events_prefix = format!("{}.events.", cfg.prefix);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            e = bw.next() => {
                let e = e.ok_or("the bridges watch ended")?.map_err(|e| e.to_string())?;
                let live = b_current;
                b_current |= e.delta == 0;
                match e.operation {
                    kv::Operation::Put => {
                        if let Ok(v) = serde_json::from_slice::<Value>(&e.value) {
                            send(Seen::Bridge(v, live)).await?;
                        }
                    }
                    kv::Operation::Delete | kv::Operation::Purge => send(Seen::BridgeLeft(e.key)).await?,
                }
            }
            e = qw.next() => {
                let e = e.ok_or("the questions watch ended")?.map_err(|e| e.to_string())?;
                q_current |= e.delta == 0;
                match e.operation {
                    kv::Operation::Put => {
                        if let Ok(v) = serde_json::from_slice::<Value>(&e.value) {
                            send(Seen::Question(e.key, v)).await?;
                        }
                    }
                    kv::Operation::Delete | kv::Operation::Purge => {
                        if let Some((b, s, q)) = parse_key(&e.key) {
                            let _ = b;
                            send(Seen::QuestionGone(e.key.clone(), s, q)).await?;
                        }
                    }
                }
            }
            m = events.next() => {
                let m = m.ok_or("the events subscription ended")?;
                let bridge = m.subject.as_str().strip_prefix(&events_prefix).unwrap_or("").to_owned();
                if let Ok(v) = serde_json::from_slice::<Value>(&m.payload) {
                    send(Seen::Event(bridge, v)).await?;
                }
            }
        }
        if !synced && q_current && b_current {
            send(Seen::Synced).await?;
            synced = true;
        }
    }
}

/// Asks bridge `id` over NATS; its reply as the control server would give it.
pub async fn relay(
    client: &async_nats::Client,
    cfg: &NatsConfig,
    id: &str,
    method: &str,
    params: Value,
) -> Result<Value, jsonrpsee::types::ErrorObjectOwned> {
    use jsonrpsee::types::ErrorObjectOwned;
    let body = json!({"method": method, "params": params}).to_string();
    let unreachable = |why: String| {
        ErrorObjectOwned::owned(
            crate::control::NO_BRIDGE,
            format!("bridge {id:?} cannot be reached over NATS: {why}"),
            None::<()>,
        )
    };
    let msg = tokio::time::timeout(
        OP_TIMEOUT * 2,
        client.request(cfg.answer_subject(id), Bytes::from(body)),
    )
    .await
    .map_err(|_| unreachable("no reply".into()))?
    .map_err(|e| unreachable(e.to_string()))?;
    let v: Value = serde_json::from_slice(&msg.payload).map_err(|e| unreachable(e.to_string()))?;
    if let Some(e) = v.get("error") {
        return Err(ErrorObjectOwned::owned(
            e["code"].as_i64().unwrap_or(-32603) as i32,
            e["message"].as_str().unwrap_or("error").to_owned(),
            e.get("data").filter(|d| !d.is_null()).cloned(),
        ));
    }
    Ok(v["result"].clone())
}

/// Deletes what a gone bridge left in the buckets (by the inbox that saw it expire).
pub async fn sweep(client: &async_nats::Client, cfg: &NatsConfig, id: &str) {
    let js = jetstream::new(client.clone());
    let _ = timed("sweep", async {
        let (questions, bridges) = open(&js, cfg).await?;
        for k in own_keys(&questions, id).await? {
            let _ = questions.delete(&k).await;
        }
        bridges.delete(id).await.map_err(|e| e.to_string())
    })
    .await;
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
