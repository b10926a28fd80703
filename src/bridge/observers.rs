//! Who sees question lifecycle events besides the client: control-server subscribers, the
//! journal and the `--on-question` notifier. Handing them events never waits.

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
}

impl Observers {
    pub(super) fn any(&self) -> bool {
        self.events.is_some() || self.journal.is_some() || self.notifier.is_some()
    }

    /// Hands out (and clears) the router's events, in order. Never waits.
    pub(super) fn publish(&self, events: &mut Vec<Event>) {
        for e in events.drain(..) {
            if let Some(j) = &self.journal {
                j.event(&e);
            }
            if let (Some(n), Event::Requested { question }) = (&self.notifier, &e) {
                if let Ok(q) = serde_json::to_value(question) {
                    n.question(&q);
                }
            }
            if let Some(tx) = &self.events {
                if tx.receiver_count() > 0 {
                    if let Ok(v) = serde_json::to_value(&e) {
                        let _ = tx.send(Arc::new(v));
                    }
                }
            }
        }
    }
}
