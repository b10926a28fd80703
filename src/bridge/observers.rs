//! Who sees question lifecycle events besides the client: control-server subscribers, the
//! journal and the `--on-question` notifier; and when a question rings ([`crate::ring`]):
//! the notifier runs and subscribers (the page's notifications) get a `ring` event.
//! Handing them events never waits.

use std::sync::Arc;

use crate::events::Event;
use crate::journal::Journal;
use crate::notify::Notifier;

/// Who sees question lifecycle events: control-server subscribers, the journal, the
/// `--on-question` notifier.
pub(super) struct Observers {
    pub(super) events: Option<tokio::sync::broadcast::Sender<Arc<serde_json::Value>>>,
    pub(super) journal: Option<Journal>,
    pub(super) notifier: Option<Notifier>,
    /// When each pending question rings.
    pub(super) ringer: crate::ring::Ringer,
    /// When subscribers were last told the user is at the desk.
    pub(super) desk_said: Option<std::time::Instant>,
}

impl Observers {
    pub(super) fn any(&self) -> bool {
        self.events.is_some() || self.journal.is_some() || self.notifier.is_some()
    }

    /// Hands out (and clears) the router's events, in order. Never waits.
    pub(super) fn publish(&mut self, events: &mut Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let now = std::time::Instant::now();
        for e in events.drain(..) {
            if let Some(j) = &self.journal {
                j.event(&e);
            }
            match &e {
                Event::Requested { question } => {
                    if let Ok(q) = serde_json::to_value(question) {
                        let key = (
                            String::new(),
                            q["sessionId"].as_str().unwrap_or_default().to_owned(),
                            q["questionId"].as_str().unwrap_or_default().to_owned(),
                        );
                        self.ringer.asked(key, q, now);
                    }
                }
                Event::Resolved {
                    session_id,
                    question_id,
                    ..
                } => self
                    .ringer
                    .ended(&(String::new(), session_id.clone(), question_id.clone())),
                _ => {}
            }
            self.send(|| serde_json::to_value(&e).ok());
        }
        self.ring(now);
    }

    /// To control-server subscribers, when there are any.
    fn send(&self, event: impl FnOnce() -> Option<serde_json::Value>) {
        if let Some(tx) = &self.events {
            if tx.receiver_count() > 0 {
                if let Some(v) = event() {
                    let _ = tx.send(Arc::new(v));
                }
            }
        }
    }

    /// The user answered or prompted in the editor at `now`: nothing rings for a while, and
    /// subscribers (an inbox) are told (`desk`, at most every 5 s).
    pub(super) fn at_desk(&mut self, now: std::time::Instant) {
        self.ringer.at_desk(now);
        let due = self
            .desk_said
            .is_none_or(|t| now.saturating_duration_since(t) >= std::time::Duration::from_secs(5));
        if due {
            self.desk_said = Some(now);
            self.send(|| Some(serde_json::json!({ "event": "desk" })));
        }
    }

    /// Rings what is due at `now`: the notifier runs, subscribers get `ring`.
    pub(super) fn ring(&mut self, now: std::time::Instant) {
        for ring in self.ringer.due(now) {
            if let Some(n) = &self.notifier {
                n.question(&ring.question, ring.reminder);
            }
            self.send(|| {
                Some(serde_json::json!({
                    "event": "ring",
                    "question": ring.question,
                    "reminder": ring.reminder,
                }))
            });
        }
    }
}
