//! What the [`super::Router`] reads from and writes to: the two peers ([`Side`]), and the
//! [`Outbox`] of lines it fills for the shell's writers, in order, per direction, with the
//! [`Effect`]s it asks the shell to carry out (the router itself does no I/O).

use std::collections::VecDeque;

use bytes::Bytes;

use crate::envelope::RequestId;
use crate::events::Event;
use crate::policy::Call;
use std::path::PathBuf;

/// Which peer a message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Agent,
}

impl Side {
    /// The other peer.
    pub fn peer(self) -> Side {
        match self {
            Side::Client => Side::Agent,
            Side::Agent => Side::Client,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Side::Client => "client->agent",
            Side::Agent => "agent->client",
        }
    }
}

/// Work with the disk that the router asks of the shell; its result comes back as a call
/// ([`super::Router::on_ruling`], [`super::Router::control_answer`]).
#[derive(Debug, Clone)]
pub enum Effect {
    /// Decide the tool approval the agent asked with request `id` by the approval policy:
    /// read the policy's files for a session in `cwd`, decide `call` (its paths resolved as
    /// the OS opens them), and hand the [`crate::policy::desk::Ruling`] back to
    /// [`super::Router::on_ruling`] with `id` and `ticket`. The ticket is new for every
    /// decision: an agent that reuses `id` after the first approval ended never gets the
    /// first one's ruling for the second.
    Decide {
        id: RequestId,
        ticket: u64,
        call: Box<Call>,
        cwd: Option<PathBuf>,
    },
    /// "Always allow": append `rule` to the user's policy file (`said` is what it does, for
    /// its comment), then answer the question as [`super::Router::control_remember`] was
    /// asked. `token` names the answer waiting for the write.
    Remember {
        token: u64,
        rule: String,
        said: String,
    },
    /// `--linger`: whether another holder of this agent command and folder keeps
    /// `session`, which the client's request `id` loads or resumes; the answer goes to
    /// [`super::Router::on_kept_elsewhere`] (the holder's pid, or `None`).
    WhoKeeps { id: RequestId, session: String },
}

/// One item for a writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// A line's content; the writer adds the `\n`.
    Line(Bytes),
    /// Forwarded lines exactly as read, each with its `\n` (one slice of a read's chunk).
    Run(Bytes),
    /// Flush and close the output (only used for the agent's stdin).
    Close,
}

/// What the router wants written, per direction, in order.
#[derive(Debug, Default)]
pub struct Outbox {
    pub to_agent: VecDeque<Out>,
    pub to_client: VecDeque<Out>,
    /// How many lines in `to_agent` the bridge made itself (not forwarded from the client).
    pub made_for_agent: usize,
    /// How many lines in `to_client` the bridge made itself (not forwarded from the agent).
    pub made_for_client: usize,
    /// Question lifecycle events, in order (only with [`RouterConfig::events`]).
    pub events: Vec<Event>,
    /// What the shell is to do with the disk, in order.
    pub effects: Vec<Effect>,
    /// Lines for the clients that joined a session (`--linger`), each to its client, in
    /// order.
    pub to_joined: Vec<(u32, Bytes)>,
    /// The user is at the desk: a client answered a question or sent a prompt (the shell
    /// keeps the phone quiet for a while: `crate::ring`).
    pub at_desk: bool,
}

impl Outbox {
    /// A line the bridge made, for the agent.
    pub(super) fn agent(&mut self, line: Bytes) {
        self.made_for_agent += 1;
        self.to_agent.push_back(Out::Line(line));
    }
    /// A line the bridge made, for the client.
    pub(super) fn client(&mut self, line: Bytes) {
        self.made_for_client += 1;
        self.to_client.push_back(Out::Line(line));
    }
    /// A line for joined client `client`.
    pub(super) fn joined(&mut self, client: u32, line: Bytes) {
        self.to_joined.push((client, line));
    }
    /// Lines for joined client `client`, in order.
    pub(super) fn joined_lines(&mut self, client: u32, lines: impl IntoIterator<Item = Bytes>) {
        self.to_joined
            .extend(lines.into_iter().map(|line| (client, line)));
    }
    pub(super) fn reply(&mut self, to: Side, line: Bytes) {
        match to {
            Side::Client => self.client(line),
            Side::Agent => self.agent(line),
        }
    }
    /// Takes everything queued for the agent.
    pub fn take_agent(&mut self) -> Vec<Out> {
        self.made_for_agent = 0;
        self.to_agent.drain(..).collect()
    }
    /// Takes everything queued for the client.
    pub fn take_client(&mut self) -> Vec<Out> {
        self.made_for_client = 0;
        self.to_client.drain(..).collect()
    }
}
