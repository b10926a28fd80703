//! The requests in flight through the [`super::Router`], each way: who is waiting for whose
//! response, which ids were answered already (a second response is dropped), and how many of
//! the bridge's own notifications a client may answer as if they were requests. It owns this
//! state; what to send when a request ends is the router's.

use std::time::Instant;

use crate::envelope::{IdMap, RequestId};
use crate::questions::recent::RecentIds;

use crate::router::Side;

/// A request waiting for its response.
#[derive(Debug, Clone)]
pub struct InFlight {
    pub method: Box<str>,
    pub session_id: Option<Box<str>>,
    pub started: Instant,
    /// Arrival order (ties in `started` are common).
    pub seq: u64,
}

/// What a response matched.
#[derive(Debug)]
pub(in crate::router) enum Matched {
    /// The request it answers, no longer in flight.
    Request(InFlight),
    /// A request answered already: the response is a second one.
    Again,
    /// A client's response to no request of the agent's, after the bridge sent the client a
    /// notification of its own: the client answering that notification.
    OwnNotification,
    /// No request has this id.
    Unknown,
}

/// The requests in flight both ways.
#[derive(Debug)]
pub(in crate::router) struct Requests {
    /// Requests from the client waiting for the agent's response.
    client: IdMap<RequestId, InFlight>,
    /// Requests from the agent waiting for the client's response.
    agent: IdMap<RequestId, InFlight>,
    /// Agent requests already answered (by the client, or by the bridge on its behalf).
    done_agent: RecentIds,
    /// Client requests already answered by the agent (or the bridge).
    done_client: RecentIds,
    /// Numbers requests in arrival order.
    seq: u64,
    /// Most requests in flight each way.
    limit: usize,
    /// Notifications the bridge sent the client that a client may answer as if they were
    /// requests (with an `id: null` error, say): each lets one response from the client to
    /// no request in flight be dropped instead of reaching the agent.
    own_notifications: u32,
}

/// Most of the bridge's own notifications remembered as answerable.
const OWN_NOTIFICATIONS: u32 = 1024;

impl Requests {
    pub(in crate::router) fn new(limit: usize) -> Self {
        Self {
            client: IdMap::default(),
            agent: IdMap::default(),
            done_agent: RecentIds::default(),
            done_client: RecentIds::default(),
            seq: 0,
            limit,
            own_notifications: 0,
        }
    }

    /// Requests in flight from `side`.
    pub(in crate::router) fn from(&self, side: Side) -> &IdMap<RequestId, InFlight> {
        match side {
            Side::Client => &self.client,
            Side::Agent => &self.agent,
        }
    }

    /// The agent has a request with this id waiting for the client.
    pub(in crate::router) fn agent_waits_on(&self, id: &RequestId) -> bool {
        self.agent.contains_key(id)
    }

    /// Tracks a request from `from` until its response. `Err` is the limit, when that many
    /// are in flight already (the request is not tracked).
    pub(in crate::router) fn track(
        &mut self,
        from: Side,
        id: RequestId,
        method: Box<str>,
        session_id: Option<Box<str>>,
        now: Instant,
    ) -> Result<(), usize> {
        let limit = self.limit;
        let seq = self.seq + 1;
        let (map, done) = self.side(from);
        if map.len() >= limit {
            return Err(limit);
        }
        let entry = InFlight {
            method,
            session_id,
            started: now,
            seq,
        };
        if map.insert(id.clone(), entry).is_some() {
            tracing::warn!("request id reused while a request with it is still in flight");
        }
        done.remove(&id);
        self.seq = seq;
        Ok(())
    }

    /// A response from `from` to the request `id` of its peer.
    pub(in crate::router) fn answered(&mut self, from: Side, id: &RequestId) -> Matched {
        let (map, done) = self.side(from.peer());
        if let Some(req) = map.remove(id) {
            done.insert(id.clone());
            return Matched::Request(req);
        }
        if done.contains(id) {
            return Matched::Again;
        }
        if from == Side::Client && self.own_notifications > 0 {
            self.own_notifications -= 1;
            return Matched::OwnNotification;
        }
        Matched::Unknown
    }

    /// The bridge sent the client a notification of its own.
    pub(in crate::router) fn sent_own_notification(&mut self) {
        self.own_notifications = (self.own_notifications + 1).min(OWN_NOTIFICATIONS);
    }

    /// Ends the agent's requests that `due` picks, in arrival order, each answered (no
    /// later response from the client reaches the agent).
    pub(in crate::router) fn end_agent_requests(
        &mut self,
        due: impl Fn(&InFlight) -> bool,
    ) -> Vec<(RequestId, InFlight)> {
        let ids: Vec<RequestId> = self
            .agent
            .iter()
            .filter(|(_, r)| due(r))
            .map(|(id, _)| id.clone())
            .collect();
        let mut ended: Vec<(RequestId, InFlight)> = ids
            .into_iter()
            .filter_map(|id| self.agent.remove(&id).map(|r| (id, r)))
            .collect();
        ended.sort_by_key(|(_, r)| r.seq);
        for (id, _) in &ended {
            self.done_agent.insert(id.clone());
        }
        ended
    }

    /// Every request from `side` still in flight, in arrival order; none is left.
    pub(in crate::router) fn drain(&mut self, side: Side) -> Vec<(RequestId, InFlight)> {
        let mut all: Vec<(RequestId, InFlight)> = self.side(side).0.drain().collect();
        all.sort_by_key(|(_, r)| r.seq);
        all
    }

    /// A request the client shows as the agent sent it, no longer a question: tracked like
    /// any request the client has to answer (past the limit: it was counted as a question).
    pub(in crate::router) fn shown(
        &mut self,
        id: RequestId,
        method: &str,
        session_id: &str,
        at: Instant,
    ) {
        self.seq += 1;
        let entry = InFlight {
            method: method.into(),
            session_id: Some(session_id.into()),
            started: at,
            seq: self.seq,
        };
        self.agent.insert(id, entry);
    }

    /// The session of the newest `session/prompt` still waiting for its result: the one a
    /// request without a `sessionId` (Cursor's) belongs to.
    pub(in crate::router) fn prompting_session(&self) -> Option<&str> {
        self.client
            .values()
            .filter(|r| &*r.method == crate::methods::SESSION_PROMPT)
            .max_by_key(|r| r.seq)
            .and_then(|r| r.session_id.as_deref())
    }

    fn side(&mut self, side: Side) -> (&mut IdMap<RequestId, InFlight>, &mut RecentIds) {
        match side {
            Side::Client => (&mut self.client, &mut self.done_client),
            Side::Agent => (&mut self.agent, &mut self.done_agent),
        }
    }
}

/// The ids of the requests the bridge sends the client: strings under a per-process random
/// prefix ([`RouterConfig::id_prefix`](crate::router::RouterConfig)), numbered.
#[derive(Debug)]
pub(in crate::router) struct BridgeIds {
    prefix: String,
    next: u64,
}

impl BridgeIds {
    pub(in crate::router) fn with_prefix(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
            next: 0,
        }
    }

    /// The next id (the router skips any that is in use).
    pub(in crate::router) fn next(&mut self) -> RequestId {
        self.next += 1;
        RequestId::string(&format!("{}{}", self.prefix, self.next))
    }
}
