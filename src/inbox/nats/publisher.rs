//! The bridge's side of NATS: the publisher, one more observer of the bridge's events and
//! one more source of its `Call`s. It puts and deletes the bridge's pending questions,
//! publishes its events, beats its heartbeat and serves answers by request/reply; after a
//! failure it is out of step until it has put the whole pending list again.

use crate::methods;
use std::collections::HashSet;
use std::sync::Arc;

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{
    connect, open, own_keys, question_key, timed, NatsConfig, Telling, HEARTBEAT, OP_TIMEOUT,
};
use crate::control::{AnswerParams, Call, RejectParams};

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
    // Answers are served apart from the buckets: a put or a resync waiting on a slow or
    // failing node never holds an answer past its deadline.
    let serving = tokio::spawn({
        let (calls, client) = (p.calls.clone(), client.clone());
        async move {
            while let Some(msg) = answers.next().await {
                let reply = answer(&calls, &msg.payload).await;
                if let Some(to) = msg.reply {
                    let _ = client.publish(to, Bytes::from(reply.to_string())).await;
                }
            }
        }
    });
    let mut stores: Option<(kv::Store, kv::Store)> = None;
    // Whether NATS may differ from the bridge (at start, after a failure or a lag).
    let mut out_of_step = true;
    // The revision of this bridge's last heartbeat: the next one is put only over it, so a
    // heartbeat deleted meanwhile (an inbox took the bridge as gone and swept its
    // questions, or the bucket lost it) is noticed, and the questions are put again.
    let mut beat: Option<u64> = None;
    let mut said = Telling::new(&p.cfg.url, AWAY);
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = p.stop.cancelled() => break,
            Some(ev) = conn.recv() => {
                said.event(&ev);
                if matches!(ev, async_nats::Event::Connected | async_nats::Event::Disconnected) {
                    out_of_step = true;
                }
                if matches!(ev, async_nats::Event::Connected) {
                    // Put the current state at once, not at the next heartbeat.
                    heartbeat.reset_immediately();
                }
            }
            ev = p.events.recv() => match ev {
                Ok(ev) => {
                    if client.connection_state() != async_nats::connection::State::Connected {
                        // Nothing is queued to be sent late: the state is put again on
                        // reconnection.
                        out_of_step = true;
                        continue;
                    }
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
            _ = heartbeat.tick() => {
                if client.connection_state() != async_nats::connection::State::Connected {
                    out_of_step = true;
                    said.not_yet();
                    continue;
                }
                if stores.is_none() {
                    match open(&js, &p.cfg).await {
                        Ok(s) => stores = Some(s),
                        Err(e) => {
                            said.not_ready(&e);
                            continue;
                        }
                    }
                }
                let Some((questions, bridges)) = &stores else { continue };
                let mut body = p.identity.clone();
                body["heartbeatAt"] = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string().into();
                let body = Bytes::from(body.to_string());
                beat = match beat.take() {
                    Some(rev) => match tokio::time::timeout(OP_TIMEOUT, bridges.update(&id, body.clone(), rev)).await {
                        Ok(Ok(r)) => Some(r),
                        Ok(Err(e)) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                            tracing::info!("NATS: this bridge's heartbeat over there is not its last one (taken as gone by an inbox, or lost by the bucket); putting its questions again");
                            out_of_step = true;
                            None
                        }
                        // Not known whether it is there: put it, and everything again.
                        _ => {
                            out_of_step = true;
                            None
                        }
                    },
                    None => None,
                };
                if beat.is_none() {
                    match timed("heartbeat", bridges.put(&id, body)).await {
                        Ok(r) => beat = Some(r),
                        Err(e) => {
                            // A server just back may not serve its streams yet, or may have
                            // lost them: they are opened (made again) at the next try, soon.
                            tracing::debug!(error = %e, "NATS: heartbeat failed");
                            out_of_step = true;
                            stores = None;
                            heartbeat.reset_after(RETRY);
                            continue;
                        }
                    }
                }
                if out_of_step {
                    match resync(questions, &id, &p.identity, &p.calls).await {
                        Ok(n) => {
                            tracing::info!(pending = n, "NATS: in step");
                            out_of_step = false;
                            said.ready();
                        }
                        Err(e) => tracing::info!(error = %e, "NATS: still out of step"),
                    }
                }
            }
        }
    }
    serving.abort();
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

/// How soon a heartbeat that failed while connected is tried again.
const RETRY: std::time::Duration = std::time::Duration::from_millis(250);

/// What NATS being away means for a bridge.
const AWAY: &str = "questions are asked and answered here as ever, and put there once it is back";

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
    // An answer that took longer to come than the inbox waited for it, or kept by a NATS
    // client through a disconnection, is never applied: the inbox told its user it failed.
    let now = super::now_ms();
    match req["notAfter"].as_u64() {
        Some(t) if now <= t => {}
        Some(t) => {
            return error(
                crate::control::ANSWER_TOO_LATE,
                format!(
                    "the answer came {} ms after its deadline, when the inbox had given up on it: not applied",
                    now - t
                ),
            )
        }
        None => {
            return error(
                crate::control::ANSWER_TOO_LATE,
                "an answer over NATS needs its deadline (`notAfter`; an inbox of an older version sends none): not applied".into(),
            )
        }
    }
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
