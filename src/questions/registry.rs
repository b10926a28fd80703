//! The registry of pending questions.
//!
//! Owns every question between its request and its one answer. Lookups are O(1) by the
//! agent's exact JSON id, by the id the client sees, and by (session, questionId); a
//! session's questions are listed without scanning other sessions; deadlines sit in an
//! ordered set so the next one is found in O(log n).
//!
//! Invariants: a question is in all indexes or in none; taking a question removes it from
//! all of them and remembers its client id among the recently resolved ones (bounded), so
//! a late or duplicate answer can be recognized and dropped instead of forwarded.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::{Instant, SystemTime};

use super::model::Question;
pub use super::sources::Origin;
use super::Dialect;
use crate::envelope::{IdMap, IdSet, RequestId};

/// How many resolved client ids are remembered to recognize late answers.
pub const RECENTLY_RESOLVED: usize = 4096;

/// A question waiting for its answer.
#[derive(Debug, Clone)]
pub struct Pending {
    pub question: Question,
    pub origin: Origin,
    /// What to show beside it, display only (the tool call being approved).
    pub context: Option<serde_json::Value>,
    /// The `toolCallId` shown with a permission-prompt question.
    pub tool_call_id: Option<String>,
    /// The agent's own `toolCallId` for the question (Claude's form, Cursor, Grok): a
    /// translation uses it, so the IDE ties the prompt to the tool call it already shows.
    pub agent_tool_call: Option<String>,
    /// Permission prompts ask one decision at a time: the prompt being asked, and the
    /// answers to the items before it (`crate::questions::prompts::advance`).
    pub at: crate::questions::prompts::At,
    pub collected: Vec<Vec<String>>,
    /// The id of the agent's request (the response to the agent carries it).
    pub agent_id: RequestId,
    /// The id of the request the client is showing (equal to `agent_id` for the extension).
    pub client_id: RequestId,
    pub dialect: Dialect,
    pub created: Instant,
    pub created_wall: SystemTime,
    pub deadline: Option<Instant>,
    pub expires_wall: Option<SystemTime>,
    /// Shown only through the control server: the client has no way to show it.
    pub held: bool,
    /// Its `requested` event has been made.
    pub announced: bool,
    /// The paired device that answered or rejected it through the inbox's remote listener
    /// (its `resolved` event says `by: "device:<name>"`).
    pub device: Option<String>,
    /// The rules "Always allow" would write for this tool approval
    /// ([`crate::policy::remember::drafts`]).
    pub always_allow: Option<serde_json::Value>,
    /// What the agent was doing when it asked (`crate::router` digest).
    pub digest: Option<serde_json::Value>,
}

/// A bounded set of recently finished request ids (oldest forgotten first), to recognize a
/// late or duplicate response instead of forwarding it.
#[derive(Debug, Default)]
pub struct RecentIds {
    order: VecDeque<RequestId>,
    set: IdSet<RequestId>,
}

impl RecentIds {
    pub fn contains(&self, id: &RequestId) -> bool {
        self.set.contains(id)
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    pub fn insert(&mut self, id: RequestId) {
        if self.set.insert(id.clone()) {
            self.order.push_back(id);
            if self.order.len() > RECENTLY_RESOLVED {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }

    /// Forgets `id` (it is in use again).
    pub fn remove(&mut self, id: &RequestId) {
        if self.set.remove(id) {
            self.order.retain(|x| x != id);
        }
    }
}

/// A bounded map of recent facts (oldest forgotten first), e.g. who resolved a question, so
/// a late answer can be reported with what it was late for.
#[derive(Debug)]
pub struct RecentMap<K, V> {
    order: VecDeque<K>,
    map: HashMap<K, V>,
    limit: usize,
}

impl<K: std::hash::Hash + Eq + Clone, V> RecentMap<K, V> {
    pub fn new(limit: usize) -> Self {
        Self {
            order: VecDeque::new(),
            map: HashMap::new(),
            limit,
        }
    }

    pub fn get(&self, k: &K) -> Option<&V> {
        self.map.get(k)
    }

    pub fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.map.get_mut(k)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn insert(&mut self, k: K, v: V) {
        if self.map.insert(k.clone(), v).is_none() {
            self.order.push_back(k);
            if self.order.len() > self.limit {
                if let Some(old) = self.order.pop_front() {
                    self.map.remove(&old);
                }
            }
        }
    }

    /// Forgets `k` (a scan of the order only when it is there).
    pub fn remove(&mut self, k: &K) {
        if self.map.remove(k).is_some() {
            self.order.retain(|o| o != k);
        }
    }

    /// Like [`RecentMap::insert`], but a key already there gets the new value.
    pub fn insert_or_replace(&mut self, k: K, v: V) {
        match self.map.get_mut(&k) {
            Some(old) => *old = v,
            None => self.insert(k, v),
        }
    }
}

/// Pending questions of every session.
#[derive(Debug, Default)]
pub struct Registry {
    by_agent_id: IdMap<RequestId, Pending>,
    client_to_agent: IdMap<RequestId, RequestId>,
    by_key: IdMap<(Box<str>, Box<str>), RequestId>,
    by_session: IdMap<Box<str>, Vec<RequestId>>,
    deadlines: BTreeSet<(Instant, RequestId)>,
    resolved: RecentIds,
}

impl Registry {
    pub fn len(&self) -> usize {
        self.by_agent_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_agent_id.is_empty()
    }

    /// Pending questions of `session`.
    pub fn session_len(&self, session: &str) -> usize {
        self.by_session.get(session).map_or(0, Vec::len)
    }

    pub fn has_question(&self, session: &str, question_id: &str) -> bool {
        self.by_key
            .contains_key(&(Box::from(session), Box::from(question_id)))
    }

    pub fn has_agent_id(&self, id: &RequestId) -> bool {
        self.by_agent_id.contains_key(id)
    }

    pub fn has_client_id(&self, id: &RequestId) -> bool {
        self.client_to_agent.contains_key(id)
    }

    pub fn get(&self, agent_id: &RequestId) -> Option<&Pending> {
        self.by_agent_id.get(agent_id)
    }

    /// The pending question the client shows under `client_id`.
    pub fn get_by_client_id(&self, client_id: &RequestId) -> Option<&Pending> {
        self.client_to_agent
            .get(client_id)
            .and_then(|a| self.by_agent_id.get(a))
    }

    /// The pending question `question_id` of `session`.
    pub fn get_by_key(&self, session: &str, question_id: &str) -> Option<&Pending> {
        self.by_key
            .get(&(Box::from(session), Box::from(question_id)))
            .and_then(|a| self.by_agent_id.get(a))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Pending> {
        self.by_agent_id.values()
    }

    /// Whether the client once showed `client_id` and it has been resolved since.
    pub fn was_resolved(&self, client_id: &RequestId) -> bool {
        self.resolved.contains(client_id)
    }

    /// Adds a question. The caller has checked that its ids and key are free.
    pub fn insert(&mut self, p: Pending) {
        let agent_id = p.agent_id.clone();
        let session: Box<str> = p.question.session_id.as_str().into();
        // An id the agent reuses is a new request: it is no longer "resolved".
        self.resolved.remove(&p.client_id);
        self.client_to_agent
            .insert(p.client_id.clone(), agent_id.clone());
        self.by_key.insert(
            (session.clone(), p.question.question_id.as_str().into()),
            agent_id.clone(),
        );
        self.by_session
            .entry(session)
            .or_default()
            .push(agent_id.clone());
        if let Some(d) = p.deadline {
            self.deadlines.insert((d, agent_id.clone()));
        }
        self.by_agent_id.insert(agent_id, p);
    }

    /// Removes the question the client shows under `client_id`.
    pub fn take_by_client_id(&mut self, client_id: &RequestId) -> Option<Pending> {
        let agent_id = self.client_to_agent.get(client_id)?.clone();
        self.take(&agent_id)
    }

    /// Removes the question asked with the agent's request `agent_id`.
    pub fn take(&mut self, agent_id: &RequestId) -> Option<Pending> {
        let p = self.by_agent_id.remove(agent_id)?;
        self.client_to_agent.remove(&p.client_id);
        let session: &str = &p.question.session_id;
        self.by_key.remove(&(
            Box::from(session),
            Box::from(p.question.question_id.as_str()),
        ));
        if let Some(list) = self.by_session.get_mut(session) {
            list.retain(|id| id != agent_id);
            if list.is_empty() {
                self.by_session.remove(session);
            }
        }
        if let Some(d) = p.deadline {
            self.deadlines.remove(&(d, agent_id.clone()));
        }
        self.resolved.insert(p.client_id.clone());
        Some(p)
    }

    /// Removes and returns every question of `session`, oldest first.
    pub fn take_session(&mut self, session: &str) -> Vec<Pending> {
        let ids = self.by_session.get(session).cloned().unwrap_or_default();
        ids.iter().filter_map(|id| self.take(id)).collect()
    }

    /// Removes and returns every question whose deadline is at or before `now`.
    pub fn take_due(&mut self, now: Instant) -> Vec<Pending> {
        let due: Vec<RequestId> = self
            .deadlines
            .iter()
            .take_while(|(d, _)| *d <= now)
            .map(|(_, id)| id.clone())
            .collect();
        due.iter().filter_map(|id| self.take(id)).collect()
    }

    /// Removes and returns every question, oldest first.
    pub fn take_all(&mut self) -> Vec<Pending> {
        let mut all: Vec<Pending> = self.by_agent_id.values().cloned().collect();
        all.sort_by_key(|p| p.created);
        for p in &all {
            self.take(&p.agent_id);
        }
        all
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(d, _)| *d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::questions::model::parse_request;
    use serde_json::json;
    use std::time::Duration;

    fn pending(session: &str, qid: &str, id: &str, deadline: Option<Instant>) -> Pending {
        Pending {
            origin: std::sync::Arc::new(crate::questions::sources::extension::Extension),
            context: None,
            agent_tool_call: None,
            at: Default::default(),
            collected: Vec::new(),
            tool_call_id: None,
            question: parse_request(Some(
                &serde_json::value::RawValue::from_string(
                    json!({"sessionId":session,"questionId":qid,"prompt":"p"}).to_string(),
                )
                .unwrap(),
            ))
            .unwrap(),
            agent_id: RequestId::string(id),
            client_id: RequestId::string(id),
            dialect: Dialect::Extension,
            created: Instant::now(),
            created_wall: SystemTime::now(),
            deadline,
            expires_wall: None,
            held: false,
            announced: false,
            device: None,
            always_allow: None,
            digest: None,
        }
    }

    #[test]
    fn indexes_stay_consistent() {
        let mut r = Registry::default();
        let now = Instant::now();
        r.insert(pending("s1", "a", "1", Some(now + Duration::from_secs(5))));
        r.insert(pending("s1", "b", "2", None));
        r.insert(pending("s2", "a", "3", Some(now + Duration::from_secs(1))));
        assert_eq!(r.len(), 3);
        assert_eq!(r.session_len("s1"), 2);
        assert!(r.has_question("s2", "a"));
        assert_eq!(r.next_deadline(), Some(now + Duration::from_secs(1)));
        let s1 = r.take_session("s1");
        assert_eq!(s1.len(), 2);
        assert_eq!(r.session_len("s1"), 0);
        assert!(!r.has_question("s1", "a"));
        assert!(r.was_resolved(&RequestId::string("1")));
        assert_eq!(r.next_deadline(), Some(now + Duration::from_secs(1)));
        let due = r.take_due(now + Duration::from_secs(2));
        assert_eq!(due.len(), 1);
        assert!(r.is_empty());
        assert_eq!(r.next_deadline(), None);
    }

    #[test]
    fn resolved_ids_are_bounded_and_forgotten_on_reuse() {
        let mut r = Registry::default();
        for i in 0..RECENTLY_RESOLVED + 10 {
            r.insert(pending("s", "q", &i.to_string(), None));
            r.take_all();
        }
        assert!(!r.was_resolved(&RequestId::string("0")));
        let last = (RECENTLY_RESOLVED + 9).to_string();
        assert!(r.was_resolved(&RequestId::string(&last)));
        r.insert(pending("s", "q", &last, None));
        assert!(!r.was_resolved(&RequestId::string(&last)));
        assert!(r.resolved.len() <= RECENTLY_RESOLVED);
    }

    #[test]
    fn recent_map_forgets_the_oldest() {
        let mut m = RecentMap::new(2);
        m.insert(1, "a");
        m.insert(2, "b");
        m.insert(1, "c");
        assert_eq!(m.get(&1), Some(&"c"));
        m.insert(3, "d");
        assert_eq!(m.get(&1), None);
        assert_eq!((m.get(&2), m.get(&3), m.len()), (Some(&"b"), Some(&"d"), 2));
    }
}
