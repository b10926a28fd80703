//! The inbox's side of NATS: the follower that watches the buckets and the events and
//! reports what it sees ([`Seen`]), on every (re)connection the whole state again; answers
//! relayed to a bridge by request/reply; what a gone bridge left swept away.

use std::time::Duration;

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{connect, open, own_keys, parse_key, timed, NatsConfig, Telling, OP_TIMEOUT};

/// What NATS being away means for the inbox.
const AWAY: &str =
    "the questions of bridges followed over NATS cannot be listed or answered here until it is back";

/// What the inbox's NATS follower reports.
pub enum Seen {
    /// A bridge's heartbeat (its public description), whether it was put while the watch
    /// ran (`false`: replayed from before, maybe the last one of a bridge that was killed),
    /// and its revision.
    Bridge(Value, bool, u64),
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
    /// What a sweep of a bridge whose heartbeat looked expired found (`sweep`).
    Swept(String, Result<Swept, String>),
}

/// What [`sweep`] found.
#[derive(Debug, PartialEq)]
pub enum Swept {
    /// Its heartbeat was the one the inbox last saw: it is gone, and what it left deleted.
    Gone,
    /// It put a heartbeat since (it came back, or the inbox's watch lags): nothing deleted.
    Alive,
}

/// The inbox's handle on its follower.
#[derive(Clone)]
pub struct Following {
    pub client: async_nats::Client,
    pub cfg: NatsConfig,
    /// Where [`sweep`]s report.
    pub seen: mpsc::Sender<Seen>,
    /// Sets the watches up again (they then replay the whole state).
    pub rewatch: std::sync::Arc<tokio::sync::Notify>,
}

impl Following {
    pub fn connected(&self) -> bool {
        self.client.connection_state() == async_nats::connection::State::Connected
    }
}

/// The inbox's side: follows the buckets and the events until `stop`; the handle (its
/// client for answers) is returned at once.
pub async fn follow(
    cfg: NatsConfig,
    tx: mpsc::Sender<Seen>,
    stop: CancellationToken,
) -> Result<Following, String> {
    let (conn_tx, mut conn) = mpsc::unbounded_channel();
    let client = connect(&cfg, "acp-question-bridge inbox", conn_tx).await?;
    let following = Following {
        client: client.clone(),
        cfg: cfg.clone(),
        seen: tx.clone(),
        rewatch: Default::default(),
    };
    let c = client.clone();
    let rewatch = following.rewatch.clone();
    tokio::spawn(async move {
        let js = jetstream::new(c.clone());
        let mut said = Telling::new(&cfg.url, AWAY);
        loop {
            if stop.is_cancelled() {
                return;
            }
            if c.connection_state() == async_nats::connection::State::Connected {
                let w = Watching {
                    cfg: &cfg,
                    js: &js,
                    client: &c,
                    tx: &tx,
                    stop: &stop,
                    rewatch: &rewatch,
                };
                match w.once(&mut conn, &mut said).await {
                    Ok(()) => continue,
                    Err(e) => tracing::info!(error = %e, "NATS: watching again soon"),
                }
            } else {
                said.not_yet();
            }
            // Wait for a (re)connection, or a second.
            tokio::select! {
                _ = stop.cancelled() => return,
                Some(ev) = conn.recv() => said.event(&ev),
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    });
    Ok(following)
}

/// What watching the buckets takes.
struct Watching<'a> {
    cfg: &'a NatsConfig,
    js: &'a jetstream::Context,
    client: &'a async_nats::Client,
    tx: &'a mpsc::Sender<Seen>,
    stop: &'a CancellationToken,
    rewatch: &'a tokio::sync::Notify,
}

impl Watching<'_> {
    /// Sets the watches up and reports what they show, from the whole state; `Ok` when they
    /// are to be set up again at once (a reconnection, or [`Following::rewatch`]).
    async fn once(
        &self,
        conn: &mut mpsc::UnboundedReceiver<async_nats::Event>,
        said: &mut Telling,
    ) -> Result<(), String> {
        let Watching {
            cfg,
            js,
            client,
            tx,
            stop,
            rewatch,
        } = *self;
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
                // A bridge put a heartbeat the watch did not show.
                _ = rewatch.notified() => return Ok(()),
                Some(ev) = conn.recv() => {
                    said.event(&ev);
                    if matches!(ev, async_nats::Event::Connected) {
                        // What was missed while away comes with the replay.
                        return Ok(());
                    }
                }
                e = bw.next() => {
                    let e = e.ok_or("the bridges watch ended")?.map_err(|e| e.to_string())?;
                    let live = b_current;
                    b_current |= e.delta == 0;
                    match e.operation {
                        kv::Operation::Put => {
                            if let Ok(v) = serde_json::from_slice::<Value>(&e.value) {
                                send(Seen::Bridge(v, live, e.revision)).await?;
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
    let unreachable = |why: String| {
        ErrorObjectOwned::owned(
            crate::control::NO_BRIDGE,
            format!("bridge {id:?} cannot be reached over NATS: {why}"),
            None::<()>,
        )
    };
    // Never kept by the client to be sent on reconnect: what is not sent now is not sent.
    if client.connection_state() != async_nats::connection::State::Connected {
        return Err(unreachable(
            "the inbox is not connected to NATS, so the answer was not sent".into(),
        ));
    }
    let not_after = super::now_ms() + OP_TIMEOUT.as_millis() as u64;
    let body = json!({"method": method, "params": params, "notAfter": not_after}).to_string();
    let late = |why: String| {
        unreachable(format!(
            "{why}; the bridge refuses the answer if it reaches it later than {OP_TIMEOUT:?} after it was sent, so it was either taken before that or never will be (`questions list` shows which)"
        ))
    };
    let msg = tokio::time::timeout(
        OP_TIMEOUT + Duration::from_millis(500),
        client.request(cfg.answer_subject(id), Bytes::from(body)),
    )
    .await
    .map_err(|_| late("no reply".into()))?
    .map_err(|e| late(e.to_string()))?;
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

/// Deletes what bridge `id` left in the buckets, if it is gone: if its heartbeat is still
/// the one at revision `beat` (the last the inbox saw). Every delete is conditional on the
/// revision read before it, so nothing a bridge puts meanwhile is deleted: a bridge that
/// comes back finds its heartbeat gone (its next one, conditional on its last, fails) and
/// puts its questions again, and a question it put after the sweep read the bucket keeps
/// its newer revision.
pub async fn sweep(f: &Following, id: &str, beat: u64) -> Result<Swept, String> {
    let js = jetstream::new(f.client.clone());
    timed("sweep", async {
        let (questions, bridges) = open(&js, &f.cfg).await?;
        let put = |e: &Option<kv::Entry>| {
            e.as_ref()
                .filter(|e| e.operation == kv::Operation::Put)
                .map(|e| e.revision)
        };
        // Its heartbeat: the one seen (swept below), a newer one (alive), or none left
        // (it deleted it as it exited, or the bucket lost it: its questions are swept).
        let now = put(&bridges.entry(id).await.map_err(|e| e.to_string())?);
        if now.is_some_and(|r| r != beat) {
            return Ok::<_, String>(Swept::Alive);
        }
        let mut left = Vec::new();
        for k in own_keys(&questions, id).await? {
            if let Some(rev) = put(&questions.entry(&k).await.map_err(|e| e.to_string())?) {
                left.push((k, rev));
            }
        }
        if now.is_some()
            && bridges
                .delete_expect_revision(id, Some(beat))
                .await
                .is_err()
        {
            // Put since, or NATS failed: nothing of it is deleted now.
            return match put(&bridges.entry(id).await.map_err(|e| e.to_string())?) {
                Some(r) if r != beat => Ok(Swept::Alive),
                _ => Err("its heartbeat could not be deleted".into()),
            };
        }
        for (k, rev) in left {
            let _ = questions.delete_expect_revision(&k, Some(rev)).await;
        }
        Ok(Swept::Gone)
    })
    .await
}
