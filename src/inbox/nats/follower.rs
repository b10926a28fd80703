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

use super::{connect, open, own_keys, parse_key, timed, NatsConfig, OP_TIMEOUT};

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
