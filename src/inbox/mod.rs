//! `acp-question-bridge inbox`: one Questions page and one control API over every bridge
//! this user runs on this machine.
//!
//! Shape: the inbox runs the same control server as a bridge ([`crate::control`]: the gate,
//! the JSON-RPC methods, the page), but its loop answers the calls from what it gathered:
//! - it reads the [`roster`] of running bridges every [`RESCAN`] and connects to each live
//!   bridge's control server over WebSocket (`questions.subscribe`, then `questions.list`);
//! - each bridge's pending questions are kept here, tagged with the bridge (`bridge`:
//!   its id, agent command, cwd, host, pid), and its events are passed on to the inbox's
//!   subscribers with `bridge` (the bridge's id) added;
//! - `questions.answer` and `questions.reject` go to the bridge that has the question, whose
//!   own loop decides between this answer and the IDE's as it always does, and its reply
//!   (result or error) is returned as it is;
//! - a bridge whose entry disappears (it exited, or was killed and its entry cleaned) is
//!   dropped; a bridge that cannot be reached is tried again with a growing delay. The
//!   questions it still had leave the inbox (`resolved`, `result: {"status": "withdrawn"}`):
//!   `by: "lost"` when its process is gone (it was killed or crashed, so nobody will ever
//!   answer them), `by: "disconnect"` while it lives and only its connection went.
//!
//! Invariant: the inbox never decides a question itself: every answer is the bridge's call.

mod bridges;
mod calls;
mod expiry;
mod follow;
pub mod nats;
pub mod remote;
pub mod roster;

use bridges::{Bridge, Held};
use follow::{connect, FromBridge};
pub use remote::state_dir;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::control::{self, ControlConfig};
use crate::notify::Notifier;

/// How many ended questions the inbox remembers (`Inbox::ended`).
const ENDED_KEPT: usize = 1024;
/// How often the roster is read for bridges that started or exited.
pub const RESCAN: Duration = Duration::from_millis(500);
/// Longest wait before a bridge that cannot be reached is tried again.
const MAX_RETRY: Duration = Duration::from_secs(5);
/// What `inbox` runs with.
#[derive(Debug, Clone)]
pub struct InboxConfig {
    pub control: ControlConfig,
    /// The roster's folder to read (`--registry`).
    pub roster: PathBuf,
    /// `--on-question`: run for every new question of any bridge (when it rings).
    pub on_question: Option<Vec<String>>,
    /// `--on-question-token`: the command gets the inbox's token too.
    pub on_question_token: bool,
    /// `--notify-after`, `--remind-every`, `--quiet-at-desk`.
    pub ring: crate::ring::RingConfig,
    /// `--nats`: follow the bridges over NATS instead of the roster.
    pub nats: Option<nats::NatsConfig>,
    /// `--remote`: the TLS listener for paired devices.
    pub remote: Option<remote::RemoteConfig>,
}

/// The inbox's state and loop.
struct Inbox {
    cfg: InboxConfig,
    bridges: HashMap<String, Bridge>,
    events: tokio::sync::broadcast::Sender<Arc<Value>>,
    notifier: Option<Notifier>,
    /// When each pending question rings (`--notify-after`, ...): the notifier, the page's
    /// notifications and Web Push ring then.
    ringer: std::cell::RefCell<crate::ring::Ringer>,
    tx: mpsc::Sender<FromBridge>,
    started: Instant,
    started_wall: String,
    /// `--nats`: the client answers go through, and the follower's handle.
    nats: Option<nats::Following>,
    /// When the NATS watches were last set up: a bridge is silent only from then on (the
    /// inbox hears nothing while it is not connected).
    watched_at: Instant,
    /// The last questions that ended, with the bridge that had them: an answer to one goes
    /// to that bridge, whose `not pending` says who ended it (`resolvedBy`).
    ended: std::collections::VecDeque<((String, String), String)>,
    /// Questions not yet seen again since the NATS watches were set up again.
    unconfirmed: Option<std::collections::HashSet<(String, (String, String))>>,
}

/// Runs the inbox until SIGINT or SIGTERM; the exit code.
pub async fn run(cfg: InboxConfig) -> Result<i32, control::ControlSetupError> {
    let mut server = control::start(&cfg.control).await?;
    tracing::info!(registry = %cfg.roster.display(), "inbox: reading bridges from the registry");
    let notifier = cfg.on_question.clone().map(|argv| {
        Notifier::new(
            argv,
            Some(server.page_url.clone()),
            cfg.on_question_token,
            None,
        )
    });
    let (tx, mut rx) = mpsc::channel(1024);
    let (seen_tx, mut seen) = mpsc::channel(4096);
    let stop = tokio_util::sync::CancellationToken::new();
    let nats = match &cfg.nats {
        Some(n) => match nats::follow(n.clone(), seen_tx, stop.clone()).await {
            Ok(following) => {
                tracing::info!(url = %n.url, prefix = %n.prefix, "inbox: following bridges over NATS");
                Some(following)
            }
            Err(e) => {
                tracing::error!(error = %e, "inbox: cannot use NATS");
                server.stop(Duration::from_secs(1)).await;
                return Ok(1);
            }
        },
        None => {
            drop(seen_tx);
            None
        }
    };
    let remote = match &cfg.remote {
        Some(r) => match start_remote(r, &server).await {
            Ok(remote) => Some(remote),
            Err(e) => {
                tracing::error!(error = %e, "inbox: cannot serve --remote");
                server.stop(Duration::from_secs(1)).await;
                return Ok(1);
            }
        },
        None => None,
    };
    let mut inbox = Inbox {
        ringer: std::cell::RefCell::new(crate::ring::Ringer::new(cfg.ring)),
        nats,
        unconfirmed: None,
        ended: Default::default(),
        watched_at: Instant::now(),
        cfg,
        bridges: HashMap::new(),
        events: server.events.clone(),
        notifier,
        tx,
        started: Instant::now(),
        started_wall: rfc3339(SystemTime::now()),
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| control::ControlSetupError::Bind(server.addr, e))?;
    let mut tick = tokio::time::interval(RESCAN);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let ring = inbox.ringer.borrow().next_deadline(Instant::now());
        tokio::select! {
            _ = async {
                match ring {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            } => inbox.ring(Instant::now()),
            _ = tick.tick() => {
                if inbox.nats.is_some() { inbox.expire() } else { inbox.rescan() }
            }
            Some(msg) = rx.recv() => inbox.on_bridge(msg),
            Some(s) = seen.recv() => inbox.on_nats(s),
            Some(call) = server.calls.recv() => inbox.on_call(call),
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        }
    }
    tracing::info!("inbox stopping");
    stop.cancel();
    for b in inbox.bridges.values() {
        if let Some(t) = &b.task {
            t.abort();
        }
    }
    if let Some(r) = &remote {
        r.stop().await;
    }
    server.stop(Duration::from_secs(1)).await;
    Ok(0)
}

/// Starts `--remote` and says where (the pairing link too, on a terminal).
async fn start_remote(
    cfg: &remote::RemoteConfig,
    server: &control::Control,
) -> Result<remote::Remote, Box<dyn std::error::Error>> {
    let r = remote::start(cfg, server.methods.clone(), &server.events).await?;
    let store = remote::devices::Store::open(&cfg.state)?;
    remote::pairing::announce_at_start(&store, &r.base, &r.fingerprint, remote::devices::PAIR_TTL)?;
    Ok(r)
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

impl Inbox {
    fn publish(&self, event: Value) {
        if event["event"] == "resolved" {
            let bridge = event["bridge"].as_str().unwrap_or_default().to_owned();
            let (s, q) = key_of(&event);
            self.ringer.borrow_mut().ended(&(bridge, s, q));
        }
        let _ = self.events.send(Arc::new(event));
    }

    /// Rings what is due at `now`: the notifier runs, and subscribers (the page, Web Push)
    /// get `ring`.
    fn ring(&self, now: Instant) {
        let due = self.ringer.borrow_mut().due(now);
        for ring in due {
            if let Some(n) = &self.notifier {
                n.question(&ring.question, ring.reminder);
            }
            self.publish(json!({"event": "ring", "bridge": ring.key.0,
                "question": ring.question, "reminder": ring.reminder}));
        }
    }

    /// Reads the roster: connects to new bridges, drops those gone, retries those due.
    fn rescan(&mut self) {
        let live = roster::scan(&self.cfg.roster);
        let now = Instant::now();
        let gone: Vec<String> = self
            .bridges
            .keys()
            .filter(|id| !live.iter().any(|e| &e.id == *id))
            .cloned()
            .collect();
        for id in gone {
            self.drop_bridge(&id);
        }
        for entry in live {
            let id = entry.id.clone();
            let b = self.bridges.entry(id.clone()).or_insert_with(|| {
                tracing::info!(%id, agent = ?entry.agent, pid = entry.pid, "inbox: a bridge joined");
                Bridge::new(&id, entry.public(), Some(entry))
            });
            if let (None, Some(entry)) = (&b.task, &b.entry) {
                if b.retry_at.is_some_and(|t| t > now) {
                    continue;
                }
                b.generation += 1;
                b.retry_at = None;
                b.task = Some(tokio::spawn(connect(
                    entry.clone(),
                    b.generation,
                    self.tx.clone(),
                )));
            }
        }
    }

    /// Forgets a bridge; its questions leave the inbox.
    fn drop_bridge(&mut self, id: &str) {
        let Some(b) = self.bridges.remove(id) else {
            return;
        };
        tracing::info!(%id, "inbox: a bridge left");
        let by = gone_by(&b);
        if let Some(t) = b.task {
            t.abort();
        }
        for (sid, qid) in b.pending.into_keys() {
            self.publish(withdrawn(id, &sid, &qid, by));
        }
        self.ringer.borrow_mut().ended_bridge(id);
    }

    fn on_bridge(&mut self, msg: FromBridge) {
        match msg {
            FromBridge::Connected {
                id,
                generation,
                client,
                list,
            } => {
                let Some(b) = self.bridges.get_mut(&id) else {
                    return;
                };
                if b.generation != generation {
                    return;
                }
                tracing::info!(%id, pending = list.len(), "inbox: connected to a bridge");
                b.client = Some(client);
                b.failures = 0;
                b.last_error = None;
                // The list is the truth: what the inbox held and the bridge no longer has
                // was resolved meanwhile.
                let mut fresh = HashMap::new();
                for mut q in list {
                    q["bridge"] = b.public.clone();
                    fresh.insert(key_of(&q), q);
                }
                let old = std::mem::take(&mut b.pending);
                let public = b.public.clone();
                // What rings keeps its count across the reconnection; what ended meanwhile
                // rings no more.
                let pending: std::collections::HashSet<(String, String)> =
                    fresh.keys().cloned().collect();
                self.ringer.borrow_mut().keep_only(&id, &pending);
                b.pending = fresh
                    .iter()
                    .map(|(k, q)| (k.clone(), Held::of(q)))
                    .collect();
                for k in old.keys().filter(|k| !fresh.contains_key(*k)) {
                    self.publish(withdrawn(&id, &k.0, &k.1, DISCONNECT));
                }
                for (k, q) in fresh {
                    if !old.contains_key(&k) {
                        self.requested(&id, &public, q);
                    }
                }
            }
            FromBridge::Event {
                id,
                generation,
                event,
            } => {
                if self
                    .bridges
                    .get(&id)
                    .is_some_and(|b| b.generation == generation)
                {
                    self.bridge_event(&id, event);
                }
            }
            FromBridge::Lost {
                id,
                generation,
                why,
            } => {
                let Some(b) = self.bridges.get_mut(&id) else {
                    return;
                };
                if b.generation != generation {
                    return;
                }
                b.task = None;
                b.client = None;
                b.failures += 1;
                let delay = (RESCAN * 2u32.saturating_pow(b.failures.min(8))).min(MAX_RETRY);
                b.retry_at = Some(Instant::now() + delay);
                tracing::info!(%id, why = %why, retry_in = ?delay, "inbox: lost a bridge");
                b.last_error = Some(why);
                // What cannot be answered from here leaves the inbox until the bridge is
                // reached again (its list then says what is pending). Its ring schedule
                // stays: a question still pending then keeps its count.
                let by = gone_by(b);
                let gone = std::mem::take(&mut b.pending);
                for (sid, qid) in gone.into_keys() {
                    let _ = self.events.send(Arc::new(withdrawn(&id, &sid, &qid, by)));
                }
            }
        }
    }

    /// A new question of bridge `id`: announced to subscribers, and rung when its time comes.
    fn requested(&self, id: &str, _public: &Value, q: Value) {
        // Only questions asked since the inbox started: a restart does not ring again.
        if q["createdAt"]
            .as_str()
            .is_some_and(|c| c >= self.started_wall.as_str())
        {
            let (s, qid) = key_of(&q);
            self.ringer
                .borrow_mut()
                .asked((id.to_owned(), s, qid), q.clone(), Instant::now());
        }
        self.publish(json!({"event": "requested", "bridge": id, "question": q}));
    }

    /// One of bridge `id`'s own events.
    fn bridge_event(&mut self, id: &str, mut event: Value) {
        let Some(b) = self.bridges.get_mut(id) else {
            return;
        };
        match event["event"].as_str() {
            // The inbox rings by its own schedule; a bridge's user at the desk is this
            // user at the desk.
            Some("ring") => return,
            Some("desk") => {
                self.ringer.borrow_mut().at_desk(Instant::now());
                return;
            }
            Some("requested") => {
                let mut q = event["question"].take();
                q["bridge"] = b.public.clone();
                let k = key_of(&q);
                if b.pending.contains_key(&k) {
                    return;
                }
                b.pending.insert(k, Held::of(&q));
                if b.shown() {
                    let public = b.public.clone();
                    self.requested(id, &public, q);
                }
                return;
            }
            Some("resolved") => {
                let k = key_of(&event);
                if b.pending.remove(&k).is_none() {
                    return;
                }
                self.ended(k, id);
            }
            Some("delivered") => {
                if let Some(q) = b.pending.get_mut(&key_of(&event)) {
                    q.set("dialect", event["dialect"].clone());
                }
            }
            Some("lagged") => {
                // Events were missed: reconnect for a fresh list.
                if let Some(t) = b.task.take() {
                    t.abort();
                }
                b.client = None;
                b.retry_at = None;
                return;
            }
            _ => {}
        }
        event["bridge"] = json!(id);
        self.publish(event);
    }

    /// Question `key` of bridge `id` ended: kept among the last [`ENDED_KEPT`].
    fn ended(&mut self, key: (String, String), id: &str) {
        if self.ended.len() == ENDED_KEPT {
            self.ended.pop_front();
        }
        self.ended.push_back((key, id.to_owned()));
    }

    /// The bridge `id` as seen over NATS, created when first heard of.
    fn nats_bridge(&mut self, id: &str, public: Option<&Value>) -> &mut Bridge {
        self.bridges.entry(id.to_owned()).or_insert_with(|| {
            tracing::info!(%id, "inbox: a bridge joined (NATS)");
            let public = public.cloned().unwrap_or_else(|| json!({ "id": id }));
            Bridge::new(id, public, None)
        })
    }

    /// What the NATS follower saw.
    fn on_nats(&mut self, seen: nats::Seen) {
        use nats::Seen;
        match seen {
            Seen::Bridge(mut v, live, rev) => {
                let Some(id) = v["id"].as_str().map(str::to_owned) else {
                    return;
                };
                if let Some(o) = v.as_object_mut() {
                    o.remove("heartbeatAt");
                }
                let b = self.nats_bridge(&id, Some(&v));
                b.public = v;
                b.beat = Some(rev);
                if !live {
                    // A heartbeat put before the inbox watched may be the last of a bridge
                    // that was killed: its questions wait for one put while it watches
                    // (within a heartbeat), or leave unseen when none comes (`expire`).
                    return;
                }
                let first = b.heard.is_none();
                b.heard = Some(Instant::now());
                if first {
                    // Its questions, held until now, are announced.
                    let public = b.public.clone();
                    let held: Vec<Value> = b.pending.values().map(|h| h.view(&public)).collect();
                    for q in held {
                        self.requested(&id, &public, q);
                    }
                }
            }
            Seen::BridgeLeft(id) => self.drop_bridge(&id),
            Seen::Question(key, mut q) => {
                let Some((id, s, qid)) = nats::parse_key(&key) else {
                    return;
                };
                let public = q["bridge"].clone();
                let b = self.nats_bridge(&id, Some(&public));
                q["bridge"] = b.public.clone();
                let k = (s, qid);
                if let Some(u) = &mut self.unconfirmed {
                    u.remove(&(id.clone(), k.clone()));
                }
                let b = self.bridges.get_mut(&id).expect("just made");
                let fresh = !b.pending.contains_key(&k);
                b.pending.insert(k, Held::of(&q));
                if fresh && b.heard.is_some() {
                    let public = b.public.clone();
                    self.requested(&id, &public, q);
                }
            }
            Seen::QuestionGone(key, s, qid) => {
                let Some((id, _, _)) = nats::parse_key(&key) else {
                    return;
                };
                if let Some(b) = self.bridges.get_mut(&id) {
                    if b.pending.remove(&(s.clone(), qid.clone())).is_some() {
                        let shown = b.heard.is_some();
                        self.ended((s.clone(), qid.clone()), &id);
                        if shown {
                            self.publish(withdrawn(&id, &s, &qid, DISCONNECT));
                        }
                    }
                }
            }
            Seen::Event(id, ev) => {
                self.nats_bridge(&id, None);
                self.bridge_event(&id, ev);
            }
            Seen::Resyncing => {
                // Nothing could be heard before: every bridge has a whole expiry from now.
                self.watched_at = Instant::now();
                let all = self
                    .bridges
                    .iter()
                    .filter(|(_, b)| b.entry.is_none())
                    .flat_map(|(id, b)| b.pending.keys().map(move |k| (id.clone(), k.clone())))
                    .collect();
                self.unconfirmed = Some(all);
            }
            Seen::Swept(id, found) => self.swept(&id, found),
            Seen::Synced => {
                for (id, (s, q)) in self.unconfirmed.take().into_iter().flatten() {
                    if let Some(b) = self.bridges.get_mut(&id) {
                        if b.pending.remove(&(s.clone(), q.clone())).is_some() {
                            self.publish(withdrawn(&id, &s, &q, DISCONNECT));
                        }
                    }
                }
            }
        }
    }
}

/// (sessionId, questionId) of a question view or event.
fn key_of(v: &Value) -> (String, String) {
    let s = |k: &str| v[k].as_str().unwrap_or("").to_owned();
    (s("sessionId"), s("questionId"))
}

/// Who ended a question that left the inbox with its bridge: its connection went (it may
/// come back, and its list then says what is pending).
const DISCONNECT: &str = "disconnect";
/// ... or its process is gone (killed or crashed): nobody will answer it.
const LOST: &str = "lost";

/// How the questions of bridge `b`, which the inbox no longer hears, ended: `lost` when
/// its process is gone. A bridge that exits on its own ends its questions first, and their
/// events come before its connection closes; what is still pending then was lost with it.
fn gone_by(b: &Bridge) -> &'static str {
    match &b.entry {
        Some(e) if !roster::alive(e.pid) => LOST,
        _ => DISCONNECT,
    }
}

/// The event for a question that left the inbox with its bridge (`by`: [`DISCONNECT`] or
/// [`LOST`]).
fn withdrawn(bridge: &str, session_id: &str, question_id: &str, by: &str) -> Value {
    json!({"event": "resolved", "bridge": bridge, "sessionId": session_id,
        "questionId": question_id, "by": by, "result": {"status": "withdrawn"}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_question_lists_with_its_bridge_and_reads_back() {
        let bridge = json!({"id": "b1", "agent": ["claude-agent-acp"], "cwd": "/w \"x\""});
        let q = json!({"sessionId": "s1", "questionId": "q\u{1}\"", "createdAt": "2026-11-22T10:00:00Z",
            "items": [{"prompt": "Which?", "options": []}], "bridge": {"id": "old"}});
        let mut h = Held::of(&q);
        assert_eq!(&*h.created_at, "2026-11-22T10:00:00Z");
        assert!(
            !h.json.contains("\"bridge\""),
            "kept without its bridge: {}",
            h.json
        );
        let mut out = String::new();
        h.write(&bridge.to_string(), &mut out);
        let listed: Value = serde_json::from_str(&out).expect("valid JSON");
        let mut expect = q.clone();
        expect["bridge"] = bridge.clone();
        assert_eq!(listed, expect);
        assert_eq!(h.view(&bridge), expect);
        h.set("dialect", "permission".into());
        expect["dialect"] = "permission".into();
        assert_eq!(h.view(&bridge), expect);
        // An empty view still lists as an object.
        let mut out = String::new();
        Held::of(&json!({})).write("{}", &mut out);
        assert_eq!(out, r#"{"bridge":{}}"#);
    }
}
