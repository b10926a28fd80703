//! What the [`super::Router`] remembers of questions after they end, and of the sessions it
//! saw: who ended a recent question (told to a control answer that came too late), which
//! question a recent client request id showed (named in a late answer's event), what the
//! chat says when a withdrawn prompt is pressed, and how many sessions `bridge.status`
//! counts. Every part is bounded, whatever the traffic.

use std::collections::HashSet;

use crate::envelope::RequestId;
use crate::events::By;
use crate::questions::recent::{RecentMap, RECENTLY_RESOLVED};

/// The longest note kept for a press on a withdrawn prompt, in characters.
const STALE_NOTE_CHARS: usize = 400;

/// The router's memory of ended questions and seen sessions.
#[derive(Debug)]
pub(in crate::router) struct Ledger {
    /// Who resolved recent questions, by (session, questionId) (only with events).
    resolutions: RecentMap<(Box<str>, Box<str>), By>,
    /// The question a recently resolved client request id showed (only with events).
    resolved_keys: RecentMap<RequestId, (String, String)>,
    /// What a press on a recently withdrawn prompt is told in the chat, by the id the
    /// client showed it under: (session, note).
    stale: RecentMap<RequestId, (String, String)>,
    /// Session ids seen in client requests and questions (only with events).
    sessions: HashSet<Box<str>>,
    /// Most sessions counted.
    max_sessions: usize,
}

impl Ledger {
    pub(in crate::router) fn new(max_sessions: usize) -> Self {
        Self {
            resolutions: RecentMap::new(RECENTLY_RESOLVED),
            resolved_keys: RecentMap::new(RECENTLY_RESOLVED),
            stale: RecentMap::new(RECENTLY_RESOLVED),
            sessions: HashSet::new(),
            max_sessions,
        }
    }

    /// Remembers a session id for `bridge.status` (bounded like the requests in flight).
    pub(in crate::router) fn session(&mut self, s: &str) {
        if self.sessions.len() < self.max_sessions && !self.sessions.contains(s) {
            self.sessions.insert(s.into());
        }
    }

    pub(in crate::router) fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// The question (`session`, `question_id`), shown under `client_id`, was resolved by `by`.
    pub(in crate::router) fn resolved(
        &mut self,
        client_id: &RequestId,
        session: &str,
        question_id: &str,
        by: By,
    ) {
        self.resolutions
            .insert((session.into(), question_id.into()), by);
        self.resolved_keys.insert(
            client_id.clone(),
            (session.to_owned(), question_id.to_owned()),
        );
    }

    /// Who resolved the recent question (`session`, `question_id`).
    pub(in crate::router) fn resolved_by(&self, session: &str, question_id: &str) -> Option<By> {
        self.resolutions
            .get(&(session.into(), question_id.into()))
            .copied()
    }

    /// The (session, questionId) a recent client request id showed.
    pub(in crate::router) fn question_shown_as(
        &self,
        client_id: &RequestId,
    ) -> Option<&(String, String)> {
        self.resolved_keys.get(client_id)
    }

    /// A prompt shown under `client_id` was withdrawn: a later press on it is told `note`
    /// (cut to a few hundred characters, whatever the question's size).
    pub(in crate::router) fn withdrawn(
        &mut self,
        client_id: &RequestId,
        session: &str,
        mut note: String,
    ) {
        if let Some((cut, _)) = note.char_indices().nth(STALE_NOTE_CHARS) {
            note.truncate(cut);
            note.push('…');
        }
        self.stale
            .insert(client_id.clone(), (session.to_owned(), note));
    }

    /// The chat note for a press on the withdrawn prompt `client_id`: (session, note).
    pub(in crate::router) fn stale(&self, client_id: &RequestId) -> Option<&(String, String)> {
        self.stale.get(client_id)
    }

    /// `client_id` shows a new question: what was kept of an earlier one shown under the
    /// same id (an agent may reuse its ids) no longer speaks for it.
    pub(in crate::router) fn reused(&mut self, client_id: &RequestId) {
        self.stale.remove(client_id);
        self.resolved_keys.remove(client_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_shown_again_forgets_what_its_earlier_question_left() {
        let mut l = Ledger::new(4);
        let id = RequestId::from_json("7");
        l.withdrawn(&id, "s1", "x".repeat(1000));
        l.resolved(&id, "s1", "q1", By::Control);
        let (session, note) = l.stale(&id).unwrap();
        assert_eq!(session, "s1");
        assert_eq!(
            note.chars().count(),
            STALE_NOTE_CHARS + 1,
            "cut, with an ellipsis"
        );
        l.reused(&id);
        assert!(l.stale(&id).is_none());
        assert!(l.question_shown_as(&id).is_none());
        // Who resolved the question itself is kept: it is keyed by the question.
        assert_eq!(l.resolved_by("s1", "q1"), Some(By::Control));
        // The id is remembered afresh, and kept as long as any other entry.
        l.withdrawn(&id, "s2", "new".into());
        assert_eq!(l.stale(&id).unwrap().1, "new");
    }

    #[test]
    fn sessions_are_counted_once_and_bounded() {
        let mut l = Ledger::new(2);
        for s in ["a", "a", "b", "c"] {
            l.session(s);
        }
        assert_eq!(l.sessions(), 2);
    }
}
