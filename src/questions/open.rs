//! The questions open now: what was asked ([`Pending`]), how it is delivered to the client
//! ([`Delivery`]), and the store of both ([`OpenQuestions`]).
//!
//! What was asked is fixed when the agent asks: the question, its source, what the agent
//! was doing, its deadline. A delivery is how one client is shown it: the dialect, the id
//! of the request the client shows, the permission prompt being asked, or held for the
//! control server. A question has one delivery per client ([`Who`]) shown it, in one list
//! ([`Open::delivery`], [`Open::show_to`], [`Open::take_delivery`]): the attached
//! client's, always there (held: under an id never sent), and, with `--linger`, one per
//! client that joined its session; the policy and every ending read what was asked, the
//! dialects and the clients' prompts work on the deliveries.
//!
//! The store's lookups are O(1) by the agent's exact JSON id, by (client, the id it
//! shows), and by (session, questionId); a session's questions are listed without scanning
//! other sessions; deadlines sit in an ordered set so the next one is found in O(log n).
//!
//! Invariants: a question is in all indexes or in none; taking a question removes it from
//! all of them (its deliveries go with it, so whoever ends it tells each client once) and
//! remembers its client id among the recently resolved ones (bounded), so a late or
//! duplicate answer can be recognized and dropped instead of forwarded; a client is shown a
//! question at most once at a time, and the attached client's delivery is always the first.

use std::collections::BTreeSet;
use std::time::{Instant, SystemTime};

use super::model::Question;
use super::recent::RecentIds;
use super::sources::Origin;
use super::Dialect;
use crate::envelope::{IdMap, RequestId};

/// How the dialect a client is shown a question in is chosen, by its source's rule: each
/// client that is shown it (with `--linger`, several may be) is shown it in its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choose {
    /// The extension's own question: the client's dialect, from the agent's request.
    Question,
    /// A permission request: the agent's own request, unless it asks questions and the
    /// client takes the extension or forms.
    Permission { asks_questions: bool },
    /// A vendor's method: the agent's own request to a client that knows it, else the
    /// client's dialect.
    Vendor { method: Box<str> },
    /// The agent's form: as it was sent, unless the client cannot render forms and the
    /// bridge offered them (then the extension or permission prompts).
    Form,
}

/// What an agent asked, waiting for its one answer: the same whoever is shown it.
#[derive(Debug, Clone)]
pub struct Pending {
    pub question: Question,
    pub origin: Origin,
    /// How a client's dialect for it is chosen.
    pub choose: Choose,
    /// The id of the agent's request (the response to the agent carries it).
    pub agent_id: RequestId,
    /// What to show beside it, display only (the tool call being approved).
    pub context: Option<serde_json::Value>,
    /// The agent's own `toolCallId` for the question (Claude's form, Cursor, Grok): a
    /// translation uses it, so the IDE ties the prompt to the tool call it already shows.
    pub agent_tool_call: Option<String>,
    /// What the agent was doing when it asked (`crate::router` digest).
    pub digest: Option<serde_json::Value>,
    /// The rules "Always allow" would write for this tool approval
    /// ([`crate::policy::remember::drafts`]).
    pub always_allow: Option<serde_json::Value>,
    /// The agent's request as it was read, kept with `--linger` only: a client that
    /// attaches later is shown the question from it, in its own dialect.
    pub original: Option<bytes::Bytes>,
    pub created: Instant,
    pub created_wall: SystemTime,
    pub deadline: Option<Instant>,
    pub expires_wall: Option<SystemTime>,
}

/// How a client is shown a question.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The id of the request the client is showing (the agent's own for a request shown as
    /// it was sent).
    pub client_id: RequestId,
    pub dialect: Dialect,
    /// Shown only through the control server: the client has no way to show it.
    pub held: bool,
    /// The `toolCallId` shown with a permission prompt, or with the pointer of a question
    /// waiting elsewhere.
    pub tool_call_id: Option<String>,
    /// Permission prompts ask one decision at a time: the prompt being asked, and the
    /// answers to the items before it (`crate::questions::prompts::advance`).
    pub at: crate::questions::prompts::At,
    pub collected: Vec<Vec<String>>,
}

impl Delivery {
    /// A delivery not made yet (its dialect and id are set when it is).
    pub fn new(client_id: RequestId) -> Self {
        Delivery {
            client_id,
            dialect: Dialect::Extension,
            held: false,
            tool_call_id: None,
            at: Default::default(),
            collected: Vec::new(),
        }
    }
}

/// Which client a delivery is for: the attached one (whose pipes are the bridge's client
/// side), or one that joined the question's session (`--linger`), by the router's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Who {
    Attached,
    Joined(u32),
}

/// An open question: what was asked, how each client is shown it, and what is known of its
/// life so far.
#[derive(Debug, Clone)]
pub struct Open {
    pub asked: Pending,
    /// One delivery per client shown it: the attached client's first, always; then each
    /// joined client's, at most one each.
    deliveries: Vec<(Who, Delivery)>,
    /// Its `requested` event has been made.
    pub announced: bool,
    /// The paired device that answered or rejected it through the inbox's remote listener
    /// (its `resolved` event says `by: "device:<name>"`).
    pub device: Option<String>,
    /// Which question this is among all a router opened, never reused (its ids may be:
    /// an agent can end a request and ask again under the same id).
    pub serial: u64,
}

impl Open {
    /// `asked`, to be delivered (the attached client's under the agent's id until a
    /// dialect gives it another).
    pub fn new(asked: Pending) -> Self {
        Open {
            deliveries: vec![(Who::Attached, Delivery::new(asked.agent_id.clone()))],
            asked,
            announced: false,
            device: None,
            serial: 0,
        }
    }

    /// How `who` is shown it, if it is.
    pub fn delivery(&self, who: Who) -> Option<&Delivery> {
        self.deliveries
            .iter()
            .find(|(w, _)| *w == who)
            .map(|(_, d)| d)
    }

    /// The attached client's delivery (always there).
    pub fn attached(&self) -> &Delivery {
        &self.deliveries[0].1
    }

    pub fn attached_mut(&mut self) -> &mut Delivery {
        &mut self.deliveries[0].1
    }

    /// Whether `who` is shown it.
    pub fn is_shown_to(&self, who: Who) -> bool {
        self.deliveries.iter().any(|(w, _)| *w == who)
    }

    /// `who` is shown it as `d` says: the attached client's delivery replaced, a joined
    /// client's added (replaced if it had one).
    pub fn show_to(&mut self, who: Who, d: Delivery) {
        match self.deliveries.iter_mut().find(|(w, _)| *w == who) {
            Some((_, old)) => *old = d,
            None => self.deliveries.push((who, d)),
        }
    }

    /// `who`'s delivery, taken (to read its answer; [`Open::show_to`] gives it back). The
    /// attached client's is left as a delivery not made yet.
    pub fn take_delivery(&mut self, who: Who) -> Option<Delivery> {
        let at = self.deliveries.iter().position(|(w, _)| *w == who)?;
        Some(match who {
            Who::Attached => self.take_attached(),
            Who::Joined(_) => self.deliveries.remove(at).1,
        })
    }

    /// The attached client's delivery, taken (left as one not made yet).
    pub fn take_attached(&mut self) -> Delivery {
        let blank = Delivery::new(self.asked.agent_id.clone());
        std::mem::replace(&mut self.deliveries[0].1, blank)
    }

    /// The joined clients' deliveries.
    pub fn joined(&self) -> impl Iterator<Item = (u32, &Delivery)> {
        self.deliveries.iter().filter_map(|(w, d)| match w {
            Who::Joined(c) => Some((*c, d)),
            Who::Attached => None,
        })
    }

    /// The joined clients' deliveries, taken: each is told once, whoever takes them.
    pub fn take_joined(&mut self) -> Vec<(u32, Delivery)> {
        let all = std::mem::take(&mut self.deliveries);
        let mut joined = Vec::new();
        for (w, d) in all {
            match w {
                Who::Joined(c) => joined.push((c, d)),
                Who::Attached => self.deliveries.push((w, d)),
            }
        }
        joined
    }

    /// Every delivery, with whom it is for.
    fn all(&self) -> impl Iterator<Item = (Who, &RequestId)> {
        self.deliveries.iter().map(|(w, d)| (*w, &d.client_id))
    }
}

/// What an open question is read through: what was asked.
impl std::ops::Deref for Open {
    type Target = Pending;
    fn deref(&self) -> &Pending {
        &self.asked
    }
}

/// The open questions of every session.
#[derive(Debug, Default)]
pub struct OpenQuestions {
    /// Each behind its own box: an `Open` is over 500 bytes, and a table of them held a
    /// third of its slots empty at most sizes (`bench pending`).
    by_agent_id: IdMap<RequestId, Box<Open>>,
    /// Each client's prompt: (client, the id it shows) to the agent's id.
    by_delivery: IdMap<(Who, RequestId), RequestId>,
    by_key: IdMap<(Box<str>, Box<str>), RequestId>,
    by_session: IdMap<Box<str>, Vec<RequestId>>,
    deadlines: BTreeSet<(Instant, RequestId)>,
    resolved: RecentIds,
}

impl OpenQuestions {
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
        self.by_delivery.contains_key(&(Who::Attached, id.clone()))
    }

    pub fn get(&self, agent_id: &RequestId) -> Option<&Open> {
        self.by_agent_id.get(agent_id).map(Box::as_ref)
    }

    /// The pending question the client shows under `client_id`.
    pub fn get_by_client_id(&self, client_id: &RequestId) -> Option<&Open> {
        self.by_delivery
            .get(&(Who::Attached, client_id.clone()))
            .and_then(|a| self.get(a))
    }

    /// The pending question `question_id` of `session`.
    pub fn get_by_key(&self, session: &str, question_id: &str) -> Option<&Open> {
        self.by_key
            .get(&(Box::from(session), Box::from(question_id)))
            .and_then(|a| self.get(a))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Open> {
        self.by_agent_id.values().map(Box::as_ref)
    }

    /// Whether the client once showed `client_id` and it has been resolved since.
    pub fn was_resolved(&self, client_id: &RequestId) -> bool {
        self.resolved.contains(client_id)
    }

    /// Adds a question. The caller has checked that its ids and key are free.
    pub fn insert(&mut self, p: Open) {
        let agent_id = p.agent_id.clone();
        let session: Box<str> = p.question.session_id.as_str().into();
        // An id the agent reuses is a new request: it is no longer "resolved".
        self.resolved.remove(&p.attached().client_id);
        for (who, id) in p.all() {
            self.by_delivery.insert((who, id.clone()), agent_id.clone());
        }
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
        self.by_agent_id.insert(agent_id, Box::new(p));
    }

    /// Removes the question the client shows under `client_id`.
    pub fn take_by_client_id(&mut self, client_id: &RequestId) -> Option<Open> {
        let agent_id = self
            .by_delivery
            .get(&(Who::Attached, client_id.clone()))?
            .clone();
        self.take(&agent_id)
    }

    /// Removes the question asked with the agent's request `agent_id`.
    pub fn take(&mut self, agent_id: &RequestId) -> Option<Open> {
        let p = *self.by_agent_id.remove(agent_id)?;
        for (who, id) in p.all() {
            self.by_delivery.remove(&(who, id.clone()));
        }
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
        self.resolved.insert(p.attached().client_id.clone());
        Some(p)
    }

    /// Removes and returns every question of `session`, oldest first.
    pub fn take_session(&mut self, session: &str) -> Vec<Open> {
        let ids = self.by_session.get(session).cloned().unwrap_or_default();
        ids.iter().filter_map(|id| self.take(id)).collect()
    }

    /// Removes and returns every question whose deadline is at or before `now`.
    pub fn take_due(&mut self, now: Instant) -> Vec<Open> {
        let due: Vec<RequestId> = self
            .deadlines
            .iter()
            .take_while(|(d, _)| *d <= now)
            .map(|(_, id)| id.clone())
            .collect();
        due.iter().filter_map(|id| self.take(id)).collect()
    }

    /// Every attached client's delivery, to change how it is shown (not what indexes it).
    pub fn deliveries_mut(&mut self) -> impl Iterator<Item = &mut Delivery> {
        self.by_agent_id.values_mut().map(|o| o.attached_mut())
    }

    /// Removes and returns every question, oldest first.
    pub fn take_all(&mut self) -> Vec<Open> {
        let mut all: Vec<Open> = self.iter().cloned().collect();
        all.sort_by_key(|p| p.created);
        for p in &all {
            self.take(&p.agent_id);
        }
        all
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(d, _)| *d)
    }

    /// Whether joined client `client` is shown the question of `agent_id`.
    pub fn is_shown_to(&self, client: u32, agent_id: &RequestId) -> bool {
        self.by_agent_id
            .get(agent_id)
            .is_some_and(|o| o.is_shown_to(Who::Joined(client)))
    }

    /// Joined client `client` is shown the open question of `agent_id` as `delivery` says
    /// (under `delivery.client_id`); false when it is not open, or already shown to it.
    pub fn show_joined(&mut self, agent_id: &RequestId, client: u32, delivery: Delivery) -> bool {
        let who = Who::Joined(client);
        let Some(open) = self.by_agent_id.get_mut(agent_id) else {
            return false;
        };
        if open.is_shown_to(who) {
            return false;
        }
        self.by_delivery
            .insert((who, delivery.client_id.clone()), agent_id.clone());
        open.show_to(who, delivery);
        true
    }

    /// The prompt joined client `client` answered under `id`: the question's agent id and
    /// how it was shown, taken (the question stays open for the others).
    pub fn take_joined(&mut self, client: u32, id: &RequestId) -> Option<(RequestId, Delivery)> {
        let who = Who::Joined(client);
        let agent_id = self.by_delivery.remove(&(who, id.clone()))?;
        let open = self.by_agent_id.get_mut(&agent_id)?;
        let delivery = open.take_delivery(who)?;
        Some((agent_id, delivery))
    }

    /// Joined client `client` left: nothing is shown to it any more.
    pub fn forget_client(&mut self, client: u32) {
        let who = Who::Joined(client);
        self.by_delivery.retain(|(w, _), _| *w != who);
        for open in self.by_agent_id.values_mut() {
            open.take_delivery(who);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::questions::model::parse_request;
    use serde_json::json;
    use std::time::Duration;

    fn pending(session: &str, qid: &str, id: &str, deadline: Option<Instant>) -> Open {
        Open::new(Pending {
            origin: std::sync::Arc::new(crate::questions::sources::extension::Extension),
            choose: super::Choose::Question,
            context: None,
            agent_tool_call: None,
            question: parse_request(Some(
                &serde_json::value::RawValue::from_string(
                    json!({"sessionId":session,"questionId":qid,"prompt":"p"}).to_string(),
                )
                .unwrap(),
            ))
            .unwrap(),
            agent_id: RequestId::string(id),
            created: Instant::now(),
            created_wall: SystemTime::now(),
            deadline,
            expires_wall: None,
            always_allow: None,
            original: None,
            digest: None,
        })
    }

    #[test]
    fn indexes_stay_consistent() {
        let mut r = OpenQuestions::default();
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
    fn a_joined_clients_delivery_is_the_questions_and_goes_with_it() {
        let mut r = OpenQuestions::default();
        r.insert(pending("s", "q", "1", None));
        let agent = RequestId::string("1");
        let shown = RequestId::string("b-7");
        assert!(r.show_joined(&agent, 4, Delivery::new(shown.clone())));
        assert!(
            !r.show_joined(&agent, 4, Delivery::new(RequestId::string("b-8"))),
            "shown once at a time"
        );
        assert!(!r.show_joined(&RequestId::string("9"), 4, Delivery::new(shown.clone())));
        assert!(r.is_shown_to(4, &agent) && !r.is_shown_to(5, &agent));
        // Answered: taken from the question, which stays open for the others.
        let (of, d) = r.take_joined(4, &shown).expect("shown to 4");
        assert_eq!((of, d.client_id), (agent.clone(), shown.clone()));
        assert!(r.take_joined(4, &shown).is_none() && r.has_agent_id(&agent));
        // Taken whole: its deliveries leave the indexes with it, and come back with it.
        r.show_joined(&agent, 5, Delivery::new(shown.clone()));
        let p = r.take(&agent).expect("open");
        assert_eq!(p.joined().count(), 1);
        assert!(r.take_joined(5, &shown).is_none(), "not open any more");
        r.insert(p);
        assert!(r.is_shown_to(5, &agent));
        r.forget_client(5);
        assert!(!r.is_shown_to(5, &agent) && r.take_joined(5, &shown).is_none());
    }

    #[test]
    fn resolved_ids_are_bounded_and_forgotten_on_reuse() {
        let mut r = OpenQuestions::default();
        for i in 0..crate::questions::recent::RECENTLY_RESOLVED + 10 {
            r.insert(pending("s", "q", &i.to_string(), None));
            r.take_all();
        }
        assert!(!r.was_resolved(&RequestId::string("0")));
        let last = (crate::questions::recent::RECENTLY_RESOLVED + 9).to_string();
        assert!(r.was_resolved(&RequestId::string(&last)));
        r.insert(pending("s", "q", &last, None));
        assert!(!r.was_resolved(&RequestId::string(&last)));
        assert!(r.resolved.len() <= crate::questions::recent::RECENTLY_RESOLVED);
    }
}
