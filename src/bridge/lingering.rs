//! The holder's side of the loop (`--linger`): a client that leaves is detached (its
//! questions and the agent's requests kept for the next), a front that comes is attached,
//! and the linger's end is the client's EOF.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::event_loop::Shell;
use crate::router::{Input, Side};

/// What the clients of a holder stopped with `sessions stop` are told.
const STOPPED: &str = "the session was stopped with `acp-question-bridge sessions stop`";

impl Shell {
    /// Whether a client that leaves is waited for (`--linger`, the linger not over, the
    /// agent running).
    pub(super) fn lingers(&self) -> bool {
        self.client_open
            && self.status.is_none()
            && !self.ladder.is_started()
            && self.holding.as_ref().is_some_and(|h| h.open())
    }

    /// The attached client left: the router keeps its questions and the agent's requests
    /// for the next one, and the linger starts.
    pub(super) fn detach(&mut self, now: Instant) {
        if !self.attached {
            return;
        }
        self.attached = false;
        // What the client wrote and the reader read before it left is the client's last
        // word: handled before it goes (a `session/cancel` sent just before the editor quit).
        while let Ok(batch) = self.ends.client_frames.try_recv() {
            let input = Input::Batch(Side::Client, batch);
            self.router.handle(input, now, &mut self.outbox);
        }
        self.ends.detach();
        if let Some(h) = &mut self.holding {
            h.detach(now, 0);
            if self.guests.any() {
                // Clients that joined are still there: no linger yet.
                h.pause();
            }
        }
        self.router
            .handle(Input::ClientDetached, now, &mut self.outbox);
    }

    /// A front attaches its client, unless one is attached or the bridge is ending.
    pub(super) fn attach(&mut self, a: crate::linger::holder::Attachment, now: Instant) {
        let Some(h) = &mut self.holding else {
            return;
        };
        if a.stop {
            tracing::info!(front = a.front_pid, "stopped with `sessions stop`");
            h.stop_asked(&a, STOPPED);
            return self.handle(
                super::event_loop::Event::Signal(nix::sys::signal::Signal::SIGTERM),
                now,
            );
        }
        // Whether this holder keeps the session is decided here, on the loop, from the
        // router's state: a front asks for the holder that keeps it first.
        if a.kept_only && !self.may_join(&a) {
            return super::hold::Holding::busy(a, self.router.held_init());
        }
        if self.attached && self.lingers() && self.may_join(&a) {
            return self.join(a, now);
        }
        if self.attached || !self.lingers() {
            return super::hold::Holding::busy(a, self.router.held_init());
        }
        let h = self.holding.as_mut().expect("checked");
        let Some(got) = h.attach(a) else {
            return;
        };
        let max = h.max_line_bytes;
        // What was queued for no client is not the new one's.
        drop(self.outbox.take_client());
        let mut client = super::client_of(got.input, got.output);
        if !got.prefix.is_empty() {
            // What the front read first comes first.
            use tokio::io::AsyncReadExt;
            client.input = Box::new(std::io::Cursor::new(got.prefix).chain(client.input));
        }
        self.ends.attach(max, client);
        self.attached = true;
        // The way back to the page, in the new editor's log (the first one's had it at start).
        if let Some(c) = self.surfaces.control.as_ref().filter(|_| h.reattached()) {
            c.announce_again();
        }
        let attached = Input::ClientAttached {
            front_answered: got.initialized,
        };
        self.router.handle(attached, now, &mut self.outbox);
    }

    /// Whether `a`'s client may join a session beside the attached client: it loads or
    /// resumes a session this holder keeps.
    fn may_join(&self, a: &crate::linger::holder::Attachment) -> bool {
        a.join
            .as_deref()
            .is_some_and(|s| self.router.holds_session(s))
    }

    /// `a`'s client joins a held session beside the attached one.
    fn join(&mut self, a: crate::linger::holder::Attachment, now: Instant) {
        let id = self.guests.next_id();
        let joined = Input::ClientJoined {
            client: id,
            front_answered: a.initialized,
        };
        if !self.router.handle(joined, now, &mut self.outbox).taken() {
            tracing::info!(
                front = a.front_pid,
                "a front's client would join a session, and there is no room"
            );
            let why = format!(
                "{} editors have it open already beside the first, the most that may join one",
                crate::router::MAX_JOINED
            );
            return super::hold::Holding::reply(&a, crate::linger::Reply::Full(why));
        }
        let max = self.holding.as_ref().map_or(0, |h| h.max_line_bytes);
        // The bridge's log goes to the attached client's editor; a joined one's stderr is
        // not held open.
        drop(a.stderr);
        let client = super::client_of(a.input, a.output);
        let front = super::joined::Front {
            conn: a.conn,
            pid: a.front_pid,
            prefix: a.prefix,
        };
        if !self.guests.join(front, client.input, client.output, max) {
            self.router
                .handle(Input::JoinedLeft(id), now, &mut self.outbox);
            self.alone(now);
        }
    }

    /// What a joined client's tasks report: its lines, or its end.
    pub(super) fn on_joined(&mut self, (id, batch): super::joined::JoinedEvent, now: Instant) {
        match batch {
            Some(batch) => {
                let input = Input::JoinedBatch(id, batch);
                self.router.handle(input, now, &mut self.outbox);
            }
            None => {
                if self.guests.leave(id, 0) {
                    self.router
                        .handle(Input::JoinedLeft(id), now, &mut self.outbox);
                    self.alone(now);
                }
            }
        }
    }

    /// Hands the joined clients what the router queued for them.
    pub(super) fn flush_joined(&mut self, now: Instant) {
        if self.outbox.to_joined.is_empty() {
            return;
        }
        let queued = std::mem::take(&mut self.outbox.to_joined);
        let gone = self.guests.send(queued);
        for id in &gone {
            self.router
                .handle(Input::JoinedLeft(*id), now, &mut self.outbox);
        }
        if !gone.is_empty() {
            self.alone(now);
        }
    }

    /// A joined client left: with no client left at all, the linger runs from `now`.
    fn alone(&mut self, now: Instant) {
        if self.attached || self.guests.any() {
            return;
        }
        if let Some(h) = &mut self.holding {
            if h.open() {
                h.detached_at(now);
            }
        }
    }

    /// No client came back within the linger: what is pending ends as at the client's EOF,
    /// and the agent gets the shutdown ladder.
    pub(super) fn linger_over(&mut self, now: Instant) {
        let Some(h) = &mut self.holding else { return };
        if self.attached || self.guests.any() || h.deadline().is_none_or(|d| d > now) {
            return;
        }
        tracing::info!("no client came back within the linger; ending");
        h.close();
        if self.client_open && !self.ladder.is_started() {
            self.client_open = false;
            self.router.handle(Input::ClientEof, now, &mut self.outbox);
            self.ladder
                .client_eof(now, self.ends.agent_taken.load(Ordering::Relaxed));
        }
    }
}
