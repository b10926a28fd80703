//! Over NATS: when a bridge is gone. Its silence counts from its last heartbeat or the
//! inbox's last (re)connection; while connected, a sweep decides by the bucket, deleting
//! only what it read (docs/PROTOCOL.md).

use std::time::Instant;

use super::{nats, Inbox};

impl Inbox {
    /// Over NATS: a bridge whose heartbeat stopped is gone: one not heard for [`nats::EXPIRY`]
    /// since its last heartbeat or since the watches were last set up, whichever is later
    /// (a bridge is never taken as gone for what the inbox could not hear). While connected,
    /// that is decided by the bucket, not by what the watch showed: a sweep deletes its
    /// heartbeat and questions only if that heartbeat is still the last one seen, so a
    /// bridge that came back (or that a lagging watch did not show) is never deleted, and
    /// the watches are set up again to show it. While the inbox is not connected it can
    /// tell nothing: its bridges leave its view (nothing is deleted over there), and come
    /// back with the watches' replay once it is connected again.
    pub(super) fn expire(&mut self) {
        let now = Instant::now();
        let silent: Vec<String> = self
            .bridges
            .values()
            .filter(|b| b.entry.is_none() && !b.sweeping)
            .filter(|b| {
                let since = b.heard.unwrap_or(b.first_seen).max(self.watched_at);
                now.duration_since(since) > nats::EXPIRY
            })
            .map(|b| b.id.clone())
            .collect();
        let Some(f) = self.nats.clone() else {
            return;
        };
        for id in silent {
            let b = self.bridges.get_mut(&id).expect("listed above");
            match b.beat.filter(|_| f.connected()) {
                Some(beat) => {
                    b.sweeping = true;
                    let f = f.clone();
                    tokio::spawn(async move {
                        let found = nats::sweep(&f, &id, beat).await;
                        let _ = f.seen.send(nats::Seen::Swept(id, found)).await;
                    });
                }
                None => self.gone(&id),
            }
        }
    }

    /// What a sweep of bridge `id` found.
    pub(super) fn swept(&mut self, id: &str, found: Result<nats::Swept, String>) {
        let Some(b) = self.bridges.get_mut(id) else {
            return;
        };
        b.sweeping = false;
        match found {
            Ok(nats::Swept::Gone) => self.gone(id),
            Ok(nats::Swept::Alive) => {
                tracing::info!(%id, "inbox: a bridge's heartbeat is newer over there than the watch showed; watching again");
                b.heard = Some(Instant::now());
                if let Some(f) = &self.nats {
                    f.rewatch.notify_one();
                }
            }
            // Tried again at the next tick.
            Err(e) => tracing::debug!(%id, error = %e, "inbox: cannot sweep a silent bridge now"),
        }
    }

    /// Bridge `id` leaves the inbox's view.
    fn gone(&mut self, id: &str) {
        tracing::info!(%id, "inbox: a bridge's heartbeat expired");
        if self.bridges.get(id).is_some_and(|b| b.heard.is_none()) {
            // Never heard: its questions were never shown.
            self.bridges.remove(id);
        } else {
            self.drop_bridge(id);
        }
    }
}
