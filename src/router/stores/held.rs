//! What a holder (`--linger`) keeps for the next client: each session's conversation from
//! its start (the agent's updates, the user's prompts, the bridge's notes; bounded, the
//! oldest go first), and which of it no client was sent (kept instead of sent while no
//! client had the session), the agent's `initialize` result as the client saw it, each
//! session's own result, the agent's requests still waiting for a client, the requests of
//! a client that left (their results go to nobody), and a later client's ids given to the
//! agent under the bridge's (so they never meet a request of the client that left).
//!
//! Bounds: [`SESSION_BYTES`] of updates per session, [`SESSIONS`] sessions kept (the one
//! updated longest ago goes first), an update over [`UPDATE_BYTES`] is not kept (counted).
//! The waiting requests are bounded by `--max-in-flight`, as the requests in flight are.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::envelope::{IdMap, RequestId};

/// The most bytes of updates kept per session.
pub const SESSION_BYTES: usize = 2 << 20;
/// The most sessions whose updates are kept.
pub const SESSIONS: usize = 16;
/// The longest update kept (a longer one is counted as dropped).
pub const UPDATE_BYTES: usize = 256 << 10;

/// One line of a session's conversation: a `session/update` (without its newline).
#[derive(Debug)]
struct Said {
    line: Bytes,
    /// The bridge's note of what happened while no client had the session.
    note: bool,
}

/// One session's conversation and its result.
#[derive(Debug, Default)]
struct Kept {
    /// The result of the request that began it (`session/new`, ...), JSON text, without
    /// `sessionId`: what `session/load` and `session/resume` of it answer.
    result: Option<Box<str>>,
    updates: VecDeque<Said>,
    bytes: usize,
    /// Updates that went (the oldest, or too long).
    dropped: u64,
    /// How many of the last updates the attached client was not sent (kept instead).
    unseen: usize,
    /// Of those, how many went (the oldest, or too long).
    unseen_dropped: u64,
    /// When it was last updated (a counter), for choosing which session goes.
    touched: u64,
}

/// An agent's request still waiting for a client.
#[derive(Debug)]
struct Waiting {
    session: Option<Box<str>>,
    line: Bytes,
    /// Sent to the client attached now.
    sent: bool,
}

#[derive(Debug, Default)]
pub(in crate::router) struct Held {
    /// A client is attached.
    pub attached: bool,
    /// How many clients have attached.
    pub generation: u64,
    /// The sessions the attached client began, loaded or resumed: only those are shown
    /// its questions and the agent's requests.
    client_sessions: IdMap<Box<str>, ()>,
    /// The `initialize` result the first client got (JSON text of `result`).
    init_result: Option<Box<str>>,
    /// The id of the first client's `initialize`, until its result.
    init_id: Option<RequestId>,
    sessions: IdMap<Box<str>, Kept>,
    clock: u64,
    waiting: IdMap<RequestId, Waiting>,
    /// Requests of a client that left, still at the agent: (method, session).
    orphans: IdMap<RequestId, (Box<str>, Option<Box<str>>)>,
    /// A later client's request ids, given to the agent as bridge ids: bridge -> client's.
    remapped: IdMap<RequestId, RequestId>,
    /// The attached client's `session/load`s and `session/resume`s at the agent (the id
    /// sent to it -> the session): the agent's replay of the session is the client's.
    loading: IdMap<RequestId, Box<str>>,
    /// The agent cannot list its sessions: the bridge answers `session/list`.
    pub answer_list: bool,
    /// The attached client's front answered its `initialize` (with this holder's result).
    pub front_answered: bool,
    /// The `initialize` on its way to the agent was answered by the client's front already:
    /// its result goes to nobody.
    pub init_unanswered: bool,
    /// Counts changes of what fronts are told (the sessions kept, the `initialize` result).
    pub version: u64,
    /// A result for a client that left is being read: what it begins is not the attached
    /// client's.
    pub for_orphan: bool,
    /// The first `initialize` result just came: the agent's requests outside any session go
    /// to the client after it.
    pub sessionless_due: bool,
    /// Later clients' `initialize`s waiting for the first one's result (its client left
    /// before it came).
    init_waiters: Vec<RequestId>,
}

impl Held {
    /// `attached`: a client is there from the start (always, without `--linger`).
    pub fn new(attached: bool) -> Self {
        Self {
            attached,
            ..Self::default()
        }
    }

    /// What the attached client was not sent of `session` was given to it.
    pub fn replayed(&mut self, session: &str) {
        if let Some(kept) = self.sessions.get_mut(session) {
            kept.unseen = 0;
            kept.unseen_dropped = 0;
        }
    }

    /// The client's `initialize` is on its way to the agent under `id` (the first one is).
    pub fn initializing(&mut self, id: &RequestId) {
        if self.init_result.is_none() {
            self.init_id = Some(id.clone());
        }
    }

    /// The agent's `initialize` result, as the client got it (`id`: the one the agent saw).
    pub fn initialized(&mut self, id: &RequestId, result: &str) {
        if self.init_id.as_ref() == Some(id) {
            self.init_id = None;
            self.init_result = Some(result.into());
            self.version += 1;
        }
    }

    /// Whether the first `initialize` is at the agent still.
    pub fn init_in_flight(&self) -> bool {
        self.init_result.is_none() && self.init_id.is_some()
    }

    /// A later client's `initialize` waits for the first one's result.
    pub fn wait_for_init(&mut self, id: RequestId) {
        self.init_waiters.push(id);
    }

    /// The `initialize`s waiting for a result, once it came (or failed).
    pub fn take_init_waiters(&mut self) -> Vec<RequestId> {
        std::mem::take(&mut self.init_waiters)
    }

    /// The first `initialize` failed: the next client's goes to the agent.
    pub fn init_failed(&mut self, id: &RequestId) {
        if self.init_id.as_ref() == Some(id) {
            self.init_id = None;
        }
    }

    /// What a later client's `initialize` is answered with.
    pub fn init_result(&self) -> Option<&str> {
        self.init_result.as_deref()
    }

    /// A client attached: it has no session yet, and nothing waiting was sent to it.
    pub fn attach(&mut self) {
        self.attached = true;
        self.generation += 1;
        self.front_answered = false;
        self.client_sessions.clear();
        for w in self.waiting.values_mut() {
            w.sent = false;
        }
    }

    /// The client left: its requests still at the agent are orphans from now on.
    pub fn detach(
        &mut self,
        in_flight: impl Iterator<Item = (RequestId, Box<str>, Option<Box<str>>)>,
    ) {
        self.attached = false;
        self.client_sessions.clear();
        for (id, method, session) in in_flight {
            // Its requests sent under bridge ids are orphans under those ids.
            self.remapped.remove(&id);
            self.orphans.insert(id, (method, session));
        }
        // Its `initialize` waiting for the first one's result is nobody's now, and what it
        // was sent is sent to no client.
        self.init_waiters.clear();
        for w in self.waiting.values_mut() {
            w.sent = false;
        }
        self.loading.clear();
    }

    /// Whether the attached client has `session` (began, loaded or resumed it).
    pub fn client_has(&self, session: &str) -> bool {
        self.attached && self.client_sessions.contains_key(session)
    }

    /// The attached client has `session` now.
    pub fn client_takes(&mut self, session: &str) {
        if self.attached {
            self.client_sessions.insert(session.into(), ());
        }
    }

    /// Whether the bridge keeps `session` (it saw it begin, or be loaded).
    pub fn holds(&self, session: &str) -> bool {
        self.sessions.contains_key(session)
    }

    /// `session` began (or was loaded) with `result` (the JSON text of `result`).
    pub fn session_began(&mut self, session: &str, result: Option<String>) {
        let result = result.map(Into::into);
        self.clock += 1;
        let touched = self.clock;
        if !self.sessions.contains_key(session) {
            self.version += 1;
        }
        let kept = self.sessions.entry(session.into()).or_default();
        if result.is_some() {
            kept.result = result;
        }
        kept.touched = touched;
        self.evict();
    }

    /// The sessions kept, in no order.
    pub fn session_ids(&self) -> impl Iterator<Item = &str> {
        self.sessions.keys().map(|s| &**s)
    }

    /// The ids of the sessions kept, the one begun or kept an update of last first (a
    /// listing's order, stable from one call to the next).
    pub fn session_ids_recent(&self) -> Vec<&str> {
        let mut ids: Vec<(&str, u64)> = self
            .sessions
            .iter()
            .map(|(s, k)| (&**s, k.touched))
            .collect();
        ids.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        ids.into_iter().map(|(s, _)| s).collect()
    }

    /// What `session/load` or `session/resume` of `session` is answered with.
    pub fn session_result(&self, session: &str) -> Option<&str> {
        self.sessions.get(session).and_then(|k| k.result.as_deref())
    }

    /// Keeps an update of `session` (its whole line): `seen`, the attached client was sent
    /// it; `note`, the bridge's note of what happened while no client had it.
    pub fn keep_update(&mut self, session: &str, line: &[u8], seen: bool, note: bool) {
        self.clock += 1;
        let touched = self.clock;
        if !self.sessions.contains_key(session) {
            let kept = Kept {
                touched,
                ..Kept::default()
            };
            self.sessions.insert(session.into(), kept);
            self.version += 1;
            self.evict();
        }
        let Some(kept) = self.sessions.get_mut(session) else {
            return;
        };
        kept.touched = touched;
        if line.len() > UPDATE_BYTES {
            kept.dropped += 1;
            if !seen {
                kept.unseen_dropped += 1;
            }
            return;
        }
        kept.updates.push_back(Said {
            line: Bytes::copy_from_slice(line),
            note,
        });
        kept.bytes += line.len();
        if !seen {
            kept.unseen += 1;
        }
        while kept.bytes > SESSION_BYTES {
            let Some(old) = kept.updates.pop_front() else {
                break;
            };
            kept.bytes -= old.line.len();
            kept.dropped += 1;
            if kept.unseen > kept.updates.len() {
                kept.unseen -= 1;
                kept.unseen_dropped += 1;
            }
        }
    }

    /// The conversation of `session` (what is kept of it, from its start) and how many of
    /// its updates went, for a load's replay.
    pub fn updates(&self, session: &str) -> (impl Iterator<Item = &Bytes>, u64) {
        let kept = self.sessions.get(session);
        (
            kept.into_iter()
                .flat_map(|k| k.updates.iter().map(|s| &s.line)),
            kept.map_or(0, |k| k.dropped),
        )
    }

    /// What the attached client was not sent of `session` and how many of those went.
    pub fn unseen_updates(&self, session: &str) -> (impl Iterator<Item = &Bytes>, u64) {
        let kept = self.sessions.get(session);
        let skip = kept.map_or(0, |k| k.updates.len() - k.unseen);
        (
            kept.into_iter()
                .flat_map(move |k| k.updates.iter().skip(skip).map(|s| &s.line)),
            kept.map_or(0, |k| k.unseen_dropped),
        )
    }

    /// The bridge's notes of what happened in `session` while the attached client did not
    /// have it (for a `session/resume`, which replays nothing else).
    pub fn away_notes(&self, session: &str) -> Vec<Bytes> {
        let Some(k) = self.sessions.get(session) else {
            return Vec::new();
        };
        k.updates
            .iter()
            .skip(k.updates.len() - k.unseen)
            .filter(|s| s.note)
            .map(|s| s.line.clone())
            .collect()
    }

    /// Bytes of updates kept for `session`.
    #[cfg(test)]
    pub fn kept_bytes(&self, session: &str) -> usize {
        self.sessions.get(session).map_or(0, |k| k.bytes)
    }

    /// The session updated longest ago goes, past [`SESSIONS`].
    /// (A session the agent's requests wait in stays: they are re-sent when it is taken.)
    fn evict(&mut self) {
        while self.sessions.len() > SESSIONS {
            let waits = |s: &str| {
                self.waiting
                    .values()
                    .any(|w| w.session.as_deref() == Some(s))
            };
            let Some(oldest) = self
                .sessions
                .iter()
                .filter(|(s, _)| !waits(s))
                .min_by_key(|(_, k)| k.touched)
                .map(|(s, _)| s.clone())
            else {
                break;
            };
            self.sessions.remove(&oldest);
            self.version += 1;
        }
    }

    /// An agent's request to the client, tracked: kept until answered. `sent`: it went to
    /// the attached client.
    pub fn agent_asks(&mut self, id: RequestId, session: Option<&str>, line: &[u8], sent: bool) {
        self.waiting.insert(
            id,
            Waiting {
                session: session.map(Into::into),
                line: Bytes::copy_from_slice(line),
                sent,
            },
        );
    }

    /// Whether the agent's request `id` was sent to the attached client (true for one not
    /// kept: without `--linger`, every request goes to the client).
    pub fn sent(&self, id: &RequestId) -> bool {
        self.attached && self.waiting.get(id).is_none_or(|w| w.sent)
    }

    /// Whether the agent's request `id` is kept for a client.
    pub fn waits(&self, id: &RequestId) -> bool {
        self.waiting.contains_key(id)
    }

    /// Whether the agent's request `id` waits for a client and the attached one (if any)
    /// was not sent it.
    pub fn waits_unsent(&self, id: &RequestId) -> bool {
        self.waiting.get(id).is_some_and(|w| !w.sent)
    }

    /// The agent's request `id` was answered (or ended).
    pub fn agent_answered(&mut self, id: &RequestId) {
        self.waiting.remove(id);
    }

    /// Every waiting request ended (the client's EOF at the linger's end).
    pub fn agent_requests_ended(&mut self) {
        self.waiting.clear();
    }

    /// The waiting requests of `session` (`None`: those of no session) not sent to the
    /// attached client yet; they count as sent from now on.
    pub fn unsent(&mut self, session: Option<&str>) -> Vec<Bytes> {
        let mut lines: Vec<(RequestId, Bytes)> = self
            .waiting
            .iter_mut()
            .filter(|(_, w)| !w.sent && w.session.as_deref() == session)
            .map(|(id, w)| {
                w.sent = true;
                (id.clone(), w.line.clone())
            })
            .collect();
        // In the order the agent asked (its ids, as text, are as good an order as any).
        lines.sort_by(|a, b| a.0.as_json().cmp(b.0.as_json()));
        lines.into_iter().map(|(_, l)| l).collect()
    }

    /// The waiting requests of `session` the attached client was not sent, as they are (a
    /// client that joined the session is sent them too; they stay the next attached one's).
    pub fn unsent_of(&self, session: &str) -> Vec<(RequestId, Bytes)> {
        let mut lines: Vec<(RequestId, Bytes)> = self
            .waiting
            .iter()
            .filter(|(_, w)| !w.sent && w.session.as_deref() == Some(session))
            .map(|(id, w)| (id.clone(), w.line.clone()))
            .collect();
        lines.sort_by(|a, b| a.0.as_json().cmp(b.0.as_json()));
        lines
    }

    /// The request `id` at the agent is answered to nobody (its client has its answer).
    pub fn orphan(&mut self, id: RequestId, method: &str) {
        self.orphans.insert(id, (method.into(), None));
    }

    /// Whether `id` is a request of a client that left, still at the agent.
    pub fn is_orphan(&self, id: &RequestId) -> bool {
        self.orphans.contains_key(id)
    }

    /// The agent answered the orphan `id`: its method and session.
    pub fn orphan_answered(&mut self, id: &RequestId) -> Option<(Box<str>, Option<Box<str>>)> {
        self.orphans.remove(id)
    }

    /// A later client's request `client` goes to the agent as `bridge`.
    pub fn remap(&mut self, bridge: RequestId, client: RequestId) {
        self.remapped.insert(bridge, client);
    }

    /// The bridge id a client's request `client` went under, if it was remapped.
    pub fn remapped_to(&self, client: &RequestId) -> Option<RequestId> {
        self.remapped
            .iter()
            .find(|(_, c)| *c == client)
            .map(|(b, _)| b.clone())
    }

    /// The attached client asked the agent to load or resume `session` under `id`.
    pub fn loading(&mut self, id: RequestId, session: &str) {
        self.loading.insert(id, session.into());
    }

    /// The agent answered request `id` (a load's end, if it was one).
    pub fn loaded(&mut self, id: &RequestId) {
        self.loading.remove(id);
    }

    /// Whether the attached client is loading `session` from the agent.
    pub fn is_loading(&self, session: &str) -> bool {
        self.loading.values().any(|s| &**s == session)
    }

    /// The id the client sent for what went to the agent as `id` (the same, unless remapped).
    pub fn original<'a>(&'a self, id: &'a RequestId) -> &'a RequestId {
        self.remapped.get(id).unwrap_or(id)
    }

    /// The client's own id for the agent's response to `bridge`, if it was remapped.
    pub fn unmap(&mut self, bridge: &RequestId) -> Option<RequestId> {
        self.remapped.remove(bridge)
    }

    /// For `bridge.status` and `sessions`: the sessions kept, with their updates.
    pub fn status(&self) -> serde_json::Value {
        let sessions: Vec<serde_json::Value> = self
            .sessions
            .iter()
            .map(|(s, k)| {
                serde_json::json!({
                    "sessionId": &**s,
                    "updatesKept": k.updates.len(),
                    "bytesKept": k.bytes,
                    "updatesDropped": k.dropped,
                    "updatesUnseen": k.unseen,
                })
            })
            .collect();
        serde_json::json!({
            "attached": self.attached,
            "attaches": self.generation,
            "sessions": sessions,
            "agentRequestsWaiting": self.waiting.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_thousand_updates_stay_within_the_bound_and_the_oldest_go() {
        let mut h = Held::default();
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{}"}}}}}}}}"#,
            "x".repeat(400)
        );
        for n in 0..10_000 {
            // The last 3,000 no client was sent.
            h.keep_update("s", line.as_bytes(), n < 7_000, false);
        }
        assert!(h.kept_bytes("s") <= SESSION_BYTES);
        let (updates, dropped) = h.updates("s");
        let kept = updates.count() as u64;
        assert_eq!(kept + dropped, 10_000);
        assert!(dropped > 0);
        let (unseen, unseen_dropped) = h.unseen_updates("s");
        let unseen = unseen.count() as u64;
        assert_eq!(unseen + unseen_dropped, 3_000);
        assert!(unseen <= kept);
        // One too long to keep is counted, not kept.
        h.keep_update("s", &vec![b'x'; UPDATE_BYTES + 1], false, false);
        assert_eq!(h.updates("s").1, dropped + 1);
        assert_eq!(h.unseen_updates("s").1, unseen_dropped + 1);
        // Given to a client: nothing is unseen, the conversation stays.
        h.replayed("s");
        assert_eq!(h.unseen_updates("s").0.count(), 0);
        assert_eq!(h.updates("s").0.count() as u64, kept);
    }

    #[test]
    fn a_resume_gets_the_notes_of_what_happened_while_away_only() {
        let mut h = Held::default();
        h.keep_update("s", b"seen", true, false);
        h.keep_update("s", b"note before", true, true);
        h.keep_update("s", b"unseen", false, false);
        h.keep_update("s", b"note away", false, true);
        assert_eq!(h.away_notes("s"), vec![Bytes::from_static(b"note away")]);
        assert_eq!(h.updates("s").0.count(), 4);
    }

    #[test]
    fn past_the_sessions_bound_the_one_updated_longest_ago_goes() {
        let mut h = Held::default();
        for n in 0..=SESSIONS {
            h.keep_update(&format!("s{n}"), b"{}", false, false);
        }
        assert!(!h.holds("s0"));
        assert!(h.holds(&format!("s{SESSIONS}")));
    }
}
