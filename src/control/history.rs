//! The questions answered in the last 24 hours (`questions.history`), kept from the events the
//! control server publishes (a bridge's own, or every bridge's on an inbox): who ended each
//! one (the IDE, the page or CLI, a paired device, the policy, a timeout...), when, and what.
//!
//! Shape: a task subscribed to the server's event channel keeps a slim record of each pending
//! question (its ids, source, first prompt and tool call title, each cut short), and moves it
//! to the history when its `resolved` event comes; a `decided` event (the approval policy)
//! goes there directly.
//!
//! Bounds: at most [`PENDING`] pending records and [`KEPT`] answered ones, none older than
//! [`AGE`]; every text in a record is at most [`TEXT`] characters, and a result's answers at
//! most [`ANSWERS`] bytes. A subscriber that lags loses the events it missed, not its memory.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};
use tokio::sync::broadcast;

/// How long an answered question stays in the history.
pub const AGE: Duration = Duration::from_secs(24 * 3600);
/// How many answered questions are kept at most.
pub const KEPT: usize = 500;
const PENDING: usize = 4096;
const TEXT: usize = 200;
const ANSWERS: usize = 1024;

/// What is kept.
#[derive(Debug, Default)]
pub struct History {
    pending: HashMap<String, Value>,
    done: VecDeque<(SystemTime, Value)>,
}

impl History {
    /// Takes one event.
    pub fn event(&mut self, ev: &Value, now: SystemTime) {
        match ev["event"].as_str() {
            Some("requested") => {
                let q = &ev["question"];
                let bridge = q["bridge"]["id"].as_str().unwrap_or("");
                let key = key(bridge, &q["sessionId"], &q["questionId"]);
                if self.pending.len() >= PENDING && !self.pending.contains_key(&key) {
                    self.pending.clear();
                }
                self.pending.insert(key, slim(q));
            }
            Some("resolved") => {
                let bridge = ev["bridge"].as_str().unwrap_or("");
                let key = key(bridge, &ev["sessionId"], &ev["questionId"]);
                let Some(mut record) = self.pending.remove(&key) else {
                    return;
                };
                record["by"] = ev["by"].as_str().map(|b| cut(b, TEXT)).into();
                record["result"] = short_result(&ev["result"]);
                self.push(now, record);
            }
            Some("decided") => {
                let mut record = slim(&ev["question"]);
                if let (Some(b), None) = (ev["bridge"].as_str(), record.get("bridge")) {
                    record["bridge"] = json!({"id": cut(b, TEXT)});
                }
                let rule = ev["policy"]["rule"].as_str().unwrap_or("");
                record["by"] = format!("policy:{}", cut(rule, TEXT)).into();
                record["result"] = short_result(&ev["result"]);
                record["policy"] = json!({
                    "decision": ev["policy"]["decision"].as_str().map(|d| cut(d, 16)),
                    "rule": cut(rule, TEXT),
                });
                self.push(now, record);
            }
            _ => {}
        }
    }

    fn push(&mut self, now: SystemTime, mut record: Value) {
        record["at"] = humantime::format_rfc3339_millis(now).to_string().into();
        self.done.push_back((now, record));
        while self.done.len() > KEPT {
            self.done.pop_front();
        }
    }

    /// The answered questions of the last [`AGE`], newest first.
    pub fn list(&mut self, now: SystemTime) -> Vec<Value> {
        while self
            .done
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at).unwrap_or_default() > AGE)
        {
            self.done.pop_front();
        }
        self.done.iter().rev().map(|(_, r)| r.clone()).collect()
    }
}

fn key(bridge: &str, session: &Value, question: &Value) -> String {
    json!([bridge, session, question]).to_string()
}

/// A question, as the history keeps it.
fn slim(q: &Value) -> Value {
    let text = |v: &Value| v.as_str().map(|s| cut(s, TEXT));
    let mut r = json!({
        "sessionId": text(&q["sessionId"]),
        "questionId": text(&q["questionId"]),
        "source": text(&q["source"]),
        "prompt": text(&q["items"][0]["prompt"]),
    });
    if let Some(b) = q["bridge"].as_object() {
        // The agent's command, as words (a bridge's `agent` is its argv).
        let agent: Vec<&str> = b
            .get("agent")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        r["bridge"] = json!({
            "id": b.get("id").and_then(Value::as_str).map(|s| cut(s, TEXT)),
            "agent": cut(&agent.join(" "), TEXT),
            "cwd": b.get("cwd").and_then(Value::as_str).map(|s| cut(s, TEXT)),
        });
    }
    if let Some(t) = text(&q["context"]["toolCall"]["title"]) {
        r["tool"] = t.into();
    }
    r
}

/// A result with its answers within [`ANSWERS`] bytes.
fn short_result(result: &Value) -> Value {
    if result.to_string().len() <= ANSWERS {
        return result.clone();
    }
    json!({"status": result["status"], "cut": true})
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// Keeps the history of the events sent on `events`, until the channel closes.
pub fn spawn(events: &broadcast::Sender<Arc<Value>>) -> Arc<Mutex<History>> {
    let history = Arc::new(Mutex::new(History::default()));
    let mut rx = events.subscribe();
    let kept = history.clone();
    tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(ev) => {
                    let mut h = kept.lock().unwrap_or_else(|e| e.into_inner());
                    h.event(&ev, SystemTime::now());
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::debug!(missed = n, "question history: events missed");
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    history
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requested(id: &str) -> Value {
        json!({"event": "requested", "question": {"sessionId": "s", "questionId": id, "source": "permission",
            "items": [{"prompt": "x".repeat(5000)}], "context": {"toolCall": {"title": "Run cargo test"}}}})
    }

    #[test]
    fn answered_questions_move_to_a_bounded_history_of_a_day() {
        let mut h = History::default();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        h.event(&requested("q1"), t0);
        h.event(
            &json!({"event": "resolved", "sessionId": "s", "questionId": "q1", "by": "device:phone",
            "result": {"status": "answered", "answers": [["allow"]]}}),
            t0,
        );
        h.event(&json!({"event": "decided", "question": requested("q2")["question"],
            "policy": {"rule": "tests", "decision": "allow"}, "result": {"status": "answered", "answers": [["allow"]]}}), t0);
        let list = h.list(t0);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0]["by"], "policy:tests");
        assert_eq!(list[1]["by"], "device:phone");
        assert_eq!(list[1]["tool"], "Run cargo test");
        assert!(list[1]["prompt"].as_str().unwrap().chars().count() <= TEXT + 1);
        // A resolution of nothing pending is not history.
        h.event(&json!({"event": "resolved", "sessionId": "s", "questionId": "q9", "by": "client", "result": {}}), t0);
        assert_eq!(h.list(t0).len(), 2);
        // A day later it is gone; and never more than KEPT.
        assert!(h.list(t0 + AGE + Duration::from_secs(1)).is_empty());
        for i in 0..KEPT + 10 {
            h.event(&requested(&format!("n{i}")), t0);
            h.event(&json!({"event": "resolved", "sessionId": "s", "questionId": format!("n{i}"), "by": "client",
                "result": {"status": "answered", "answers": [["a".repeat(5000)]]}}), t0);
        }
        let list = h.list(t0);
        assert_eq!(list.len(), KEPT);
        assert_eq!(list[0]["result"]["cut"], true);
    }
}
