//! Every client of the router, in one store: the attached one (whose pipes are the
//! bridge's client side) and, with `--linger`, those that joined a session another client
//! has (RFD #533's shared sessions). What each can show is one [`ClientView`], found by
//! [`Who`]; for the joined ones also the sessions each has, the requests it sent to the
//! agent (under bridge ids), and the agent's requests sent to it. How each is shown a
//! question is the question's own (`Open::delivery(who)`).
//!
//! Bounds: at most [`MAX_JOINED`] clients; the ended prompts remembered for a late press
//! are the last [`RECENT`].
//!
//! Invariants: a request a joined client sent is in `requests` until the agent answers it,
//! and is answered to that client only, under its own id.

use std::collections::{BTreeMap, VecDeque};

use crate::envelope::{IdMap, IdSet, RequestId};
use crate::router::client::ClientView;

pub use crate::questions::open::Who;

/// How many clients may join sessions of one holder at once, beside the attached one.
pub const MAX_JOINED: usize = 8;
/// How many ended prompts of joined clients are remembered, for a press that comes late.
const RECENT: usize = 256;

/// A joined client.
#[derive(Debug)]
pub struct Client {
    pub view: ClientView,
    pub sessions: IdSet<Box<str>>,
    /// Its front answered its `initialize` with this holder's result.
    pub front_answered: bool,
}

/// A request of a joined client at the agent.
#[derive(Debug)]
pub struct Sent {
    pub client: u32,
    /// The id the client gave it.
    pub id: RequestId,
    pub method: Box<str>,
}

#[derive(Debug)]
pub struct Clients {
    /// What the attached client can show.
    attached: ClientView,
    /// The clients that joined, by their number.
    clients: BTreeMap<u32, Client>,
    requests: IdMap<RequestId, Sent>,
    /// The agent's requests (`fs/*`, `terminal/*`, ...) sent to a joined client, because the
    /// attached client does not have their session: by the agent's id.
    asked: IdMap<RequestId, u32>,
    /// Prompts that ended before their client answered: (client, id) and what a late press
    /// is told, with its session.
    recent: VecDeque<((u32, RequestId), Box<str>, String)>,
}

impl Clients {
    pub fn new(attached: ClientView) -> Self {
        Self {
            attached,
            clients: BTreeMap::new(),
            requests: IdMap::default(),
            asked: IdMap::default(),
            recent: VecDeque::new(),
        }
    }

    /// What `who` can show (`None`: a joined client that left).
    pub fn view(&self, who: Who) -> Option<&ClientView> {
        match who {
            Who::Attached => Some(&self.attached),
            Who::Joined(c) => self.clients.get(&c).map(|c| &c.view),
        }
    }

    /// What the attached client can show.
    pub fn attached(&self) -> &ClientView {
        &self.attached
    }

    pub fn attached_mut(&mut self) -> &mut ClientView {
        &mut self.attached
    }

    /// Whether any client joined (the relay's one check).
    #[inline]
    pub fn any(&self) -> bool {
        !self.clients.is_empty()
    }

    pub fn len(&self) -> usize {
        self.clients.len()
    }

    /// Room for one more.
    pub fn room(&self) -> bool {
        self.clients.len() < MAX_JOINED
    }

    pub fn join(&mut self, id: u32, client: Client) {
        self.clients.insert(id, client);
    }

    pub fn client(&self, id: u32) -> Option<&Client> {
        self.clients.get(&id)
    }

    pub fn client_mut(&mut self, id: u32) -> Option<&mut Client> {
        self.clients.get_mut(&id)
    }

    /// The joined clients that have `session`.
    pub fn having(&self, session: &str) -> Vec<u32> {
        self.clients
            .iter()
            .filter(|(_, c)| c.sessions.contains(session))
            .map(|(id, _)| *id)
            .collect()
    }

    /// Whether a joined client has `session`.
    pub fn has(&self, session: &str) -> bool {
        self.clients.values().any(|c| c.sessions.contains(session))
    }

    /// Client `id` left: it is forgotten, with its late prompts; its requests at the agent
    /// are answered to nobody.
    pub fn leave(&mut self, id: u32) {
        self.clients.remove(&id);
        self.recent.retain(|((c, _), _, _)| *c != id);
        self.asked.retain(|_, c| *c != id);
    }

    /// The agent's request `id` was sent to joined client `client`.
    pub fn asked(&mut self, id: RequestId, client: u32) {
        self.asked.insert(id, client);
    }

    /// Whether the agent's request `id` was sent to a joined client.
    pub fn was_asked(&self, id: &RequestId) -> bool {
        self.asked.contains_key(id)
    }

    /// The agent's request `id` was answered by another client: the joined client it was
    /// sent to, if any.
    pub fn untake_asked(&mut self, id: &RequestId) -> Option<u32> {
        self.asked.remove(id)
    }

    /// Joined client `client` answers the agent's request `id` sent to it: forgotten, and
    /// true; false when it was not sent it.
    pub fn take_asked(&mut self, client: u32, id: &RequestId) -> bool {
        if self.asked.get(id) == Some(&client) {
            self.asked.remove(id);
            return true;
        }
        false
    }

    /// A request of client `client` goes to the agent under `bridge`.
    pub fn sent(&mut self, bridge: RequestId, sent: Sent) {
        self.requests.insert(bridge, sent);
    }

    /// The agent answered `bridge`: whose request it was (`None`: not a joined client's).
    /// A request of a client that left is taken too, and answered to nobody.
    pub fn answered(&mut self, bridge: &RequestId) -> Option<Sent> {
        self.requests.remove(bridge)
    }

    /// How many requests of joined clients are at the agent.
    #[inline]
    pub fn requests_at_agent(&self) -> usize {
        self.requests.len()
    }

    /// The bridge id client `client`'s request `id` went under.
    pub fn bridge_id_of(&self, client: u32, id: &RequestId) -> Option<RequestId> {
        self.requests
            .iter()
            .find(|(_, s)| s.client == client && &s.id == id)
            .map(|(b, _)| b.clone())
    }

    /// Every request of joined clients at the agent (the agent is gone).
    pub fn take_requests(&mut self) -> Vec<Sent> {
        self.requests.drain().map(|(_, s)| s).collect()
    }

    /// A prompt that ended unanswered: a late press on it is told `note`.
    pub fn ended(&mut self, client: u32, id: RequestId, session: &str, note: String) {
        if self.recent.len() >= RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(((client, id), session.into(), note));
    }

    /// What a late press on client `client`'s prompt `id` is told, with its session.
    pub fn stale(&mut self, client: u32, id: &RequestId) -> Option<(Box<str>, String)> {
        let at = self
            .recent
            .iter()
            .position(|((c, i), _, _)| *c == client && i == id)?;
        self.recent.remove(at).map(|(_, s, n)| (s, n))
    }
}
