//! What the inbox keeps of each bridge: how it is reached, and its pending questions as
//! JSON text.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee_ws_client::WsClient;
use serde_json::{json, Value};

use super::roster::Entry;
use crate::control;

/// One bridge as the inbox knows it.
pub(super) struct Bridge {
    /// Its roster entry (a bridge seen over NATS has none).
    pub(super) entry: Option<Entry>,
    pub(super) id: String,
    pub(super) started_at: String,
    /// Over NATS: when its heartbeat was last seen (`None`: never, its questions are held
    /// back), and when the inbox first heard of it.
    pub(super) heard: Option<Instant>,
    pub(super) first_seen: Instant,
    /// Over NATS: the revision of its last heartbeat seen (a sweep deletes it only if it is
    /// still that one), and whether a sweep of it is under way.
    pub(super) beat: Option<u64>,
    pub(super) sweeping: bool,
    /// Its public description (no token), as questions carry it.
    pub(super) public: Value,
    /// Counts connections, so reports of an old one are ignored.
    pub(super) generation: u64,
    pub(super) task: Option<tokio::task::JoinHandle<()>>,
    pub(super) client: Option<Arc<WsClient>>,
    /// Its pending questions, by (sessionId, questionId).
    pub(super) pending: HashMap<(String, String), Held>,
    /// When to try again after a failed connection.
    pub(super) retry_at: Option<Instant>,
    pub(super) failures: u32,
    pub(super) last_error: Option<String>,
}

/// A pending question as the inbox keeps it: its view as JSON text without `bridge` (which
/// is added when it is listed), and when it was asked. Text rather than a `Value`: an inbox
/// over 10,000 questions keeps about what their JSON takes, and lists them by copying.
pub(super) struct Held {
    pub(super) json: Box<str>,
    pub(super) created_at: Box<str>,
}

impl Held {
    pub(super) fn of(q: &Value) -> Held {
        /// An object's members but `bridge`.
        struct Without<'a>(&'a serde_json::Map<String, Value>);
        impl serde::Serialize for Without<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_map(self.0.iter().filter(|(k, _)| k.as_str() != "bridge"))
            }
        }
        let json = q
            .as_object()
            .and_then(|o| serde_json::to_string(&Without(o)).ok())
            .unwrap_or_else(|| "{}".to_owned());
        Held {
            json: json.into(),
            created_at: q["createdAt"].as_str().unwrap_or("").into(),
        }
    }

    /// The view, with `bridge`.
    pub(super) fn view(&self, bridge: &Value) -> Value {
        let mut q: Value = serde_json::from_str(&self.json).unwrap_or_else(|_| json!({}));
        q["bridge"] = bridge.clone();
        q
    }

    /// Sets one member of the view.
    pub(super) fn set(&mut self, key: &str, value: Value) {
        let mut q = self.view(&Value::Null);
        q[key] = value;
        *self = Held::of(&q);
    }

    /// Appends the view with `bridge` (JSON text) to `out`.
    pub(super) fn write(&self, bridge: &str, out: &mut String) {
        let open = self.json.strip_suffix('}').unwrap_or("{");
        out.push_str(open);
        if open.len() > 1 {
            out.push(',');
        }
        out.push_str("\"bridge\":");
        out.push_str(bridge);
        out.push('}');
    }
}

impl Bridge {
    /// A bridge just heard of: from its roster entry, or over NATS (`entry` none).
    pub(super) fn new(id: &str, public: Value, entry: Option<Entry>) -> Bridge {
        Bridge {
            started_at: public["startedAt"].as_str().unwrap_or("").to_owned(),
            public,
            id: id.to_owned(),
            heard: None,
            first_seen: Instant::now(),
            beat: None,
            sweeping: false,
            entry,
            generation: 0,
            task: None,
            client: None,
            pending: HashMap::new(),
            retry_at: None,
            failures: 0,
            last_error: None,
        }
    }

    /// Whether it is listed: a bridge of the roster, or a NATS bridge whose heartbeat was
    /// heard (a NATS bridge never heard has its questions held back).
    pub(super) fn shown(&self) -> bool {
        self.entry.is_some() || self.heard.is_some()
    }

    pub(super) fn status(&self) -> &'static str {
        if self.entry.is_none() {
            return if self.heard.is_some() {
                "connected"
            } else {
                "connecting"
            };
        }
        if self.client.is_some() {
            "connected"
        } else if self.failures > 0 {
            "unreachable"
        } else {
            "connecting"
        }
    }
}

/// Every bridge's pending questions, oldest first, as JSON text: each question's text
/// with its bridge's description spliced in.
pub(super) fn questions(bridges: &HashMap<String, Bridge>) -> Box<serde_json::value::RawValue> {
    let mut publics: Vec<String> = Vec::new();
    let mut all: Vec<(&Held, usize)> = Vec::new();
    for b in bridges.values() {
        if b.pending.is_empty() || !b.shown() {
            continue;
        }
        all.extend(b.pending.values().map(|h| (h, publics.len())));
        publics.push(b.public.to_string());
    }
    all.sort_by(|a, b| a.0.created_at.cmp(&b.0.created_at));
    let size: usize = all
        .iter()
        .map(|(h, i)| h.json.len() + publics[*i].len() + 12)
        .sum();
    let mut out = String::with_capacity(size + 2);
    out.push('[');
    for (n, (h, i)) in all.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        h.write(&publics[*i], &mut out);
    }
    out.push(']');
    serde_json::value::RawValue::from_string(out).expect("JSON made of JSON")
}

/// The bridges shown (`bridges.list`), oldest first, with their status and count of pending
/// questions.
pub(super) fn listing(bridges: &HashMap<String, Bridge>) -> Value {
    let mut all: Vec<&Bridge> = bridges.values().filter(|b| b.shown()).collect();
    all.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    let list: Vec<Value> = all
        .into_iter()
        .map(|b| {
            let mut v = b.public.clone();
            v["status"] = b.status().into();
            v["pending"] = b.pending.len().into();
            if let Some(e) = &b.last_error {
                v["error"] = e.clone().into();
            }
            v
        })
        .collect();
    Value::Array(list)
}

/// The bridge an answer to question `key` goes to: the one named, or else the one bridge
/// that has it pending.
pub(super) fn holder<'a>(
    bridges: &'a HashMap<String, Bridge>,
    named: Option<String>,
    key: &(String, String),
) -> Result<&'a Bridge, ErrorObjectOwned> {
    if let Some(id) = named {
        return bridges.get(&id).ok_or_else(|| {
            ErrorObjectOwned::owned(
                control::NO_BRIDGE,
                format!("no bridge {id:?} in this inbox"),
                None::<()>,
            )
        });
    }
    let having: Vec<&Bridge> = bridges
        .values()
        .filter(|b| b.pending.contains_key(key))
        .collect();
    match having.as_slice() {
        [one] => Ok(*one),
        [] => Err(control::control_error(
            crate::questions::answer::ControlError::NotPending { resolved_by: None },
        )),
        _ => Err(control::invalid_params(format!(
            "bridge: several bridges have session {:?} question {:?} pending; name one",
            key.0, key.1
        ))),
    }
}
