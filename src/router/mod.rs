//! The sans-IO routing core: one message in, lines out.
//!
//! Owns all routing state: the requests in flight in each direction and (through
//! [`crate::questions`]) the pending questions. It performs no I/O: the shell in
//! [`crate::bridge`] feeds it frames, EOFs, exits and timer ticks, and drains the
//! [`Outbox`] it fills.
//!
//! Which methods the bridge acts on, and the one route every valid message takes, is the
//! dispatch table in [`dispatch`]; its handlers are the modules of [`handlers`]; the
//! question lifecycle lives in [`questions`] (an `impl Router` block). Test helpers are in
//! `fixture` (tests and the `test-util` feature only).
//!
//! Invariants:
//! - A message the bridge does not rewrite is pushed to the outbox as the very `Bytes` it
//!   arrived in (byte for byte), and the outbox is a FIFO per direction, so order is kept.
//! - In-flight requests are keyed by direction and exact id: the same id may be in flight
//!   both ways at once, and `1` is not `"1"`.
//! - A message that looks like a response is never answered (no error storms).
//! - Every client request still in flight when the agent is gone gets exactly one error.

mod control_calls;
mod dispatch;
#[cfg(any(test, feature = "test-util"))]
pub mod fixture;
mod handlers;
mod message;
mod questions;
#[cfg(test)]
mod sources_tests;

pub use control_calls::ControlError;

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::capabilities::ClientSupport;
use crate::codec::Frame;
use crate::envelope::{self, IdMap, Kind, RequestId};
use crate::events::{By, Event};
use crate::jsonrpc::{self, code};
use crate::questions::registry::{RecentIds, RecentMap, Registry, RECENTLY_RESOLVED};
use crate::questions::Dialect;
use crate::scan::{Batch, Scanned, Shape};

use dispatch::Msg;

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
}

impl Outbox {
    /// A line the bridge made, for the agent.
    fn agent(&mut self, line: Bytes) {
        self.made_for_agent += 1;
        self.to_agent.push_back(Out::Line(line));
    }
    /// A line the bridge made, for the client.
    fn client(&mut self, line: Bytes) {
        self.made_for_client += 1;
        self.to_client.push_back(Out::Line(line));
    }
    fn reply(&mut self, to: Side, line: Bytes) {
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

/// A request waiting for its response.
#[derive(Debug, Clone)]
pub struct InFlight {
    pub method: Box<str>,
    pub session_id: Option<Box<str>>,
    pub started: Instant,
    /// Arrival order (ties in `started` are common).
    pub seq: u64,
}

/// How the agent ended, as the shell observed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentExit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stderr_tail: String,
}

impl AgentExit {
    pub fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("agent exited with code {c}"),
            (None, Some(s)) => format!("agent was killed by signal {s}"),
            (None, None) => "agent exited".to_owned(),
        }
    }
}

/// Settings of the routing core.
#[derive(Debug, Clone)]
pub struct RouterConfig {
    /// Upper bound on requests in flight per direction, and on pending questions in all
    /// sessions; one more is refused with `-32000`, so memory stays bounded.
    pub max_in_flight: usize,
    /// Deadline for every question (`--question-timeout`); a request's `timeoutMs` may
    /// shorten it.
    pub question_timeout: Option<Duration>,
    /// Most questions one session may have pending (`--max-pending-per-session`).
    pub max_pending_per_session: usize,
    /// `--client-dialect`: `None` chooses from the client's `initialize` (auto).
    pub client_dialect: Option<Dialect>,
    /// Tell the agent the client renders form elicitations even when it does not, and show
    /// them as questions (the default, unless `--no-opt-in form`), where some surface can
    /// take them ([`Router::can_take_questions`]).
    pub advertise_elicitation: bool,
    /// `--advertise-elicitation` given: offer forms even where no surface could take a
    /// question the client cannot show.
    pub force_forms: bool,
    /// The vendors' opt-ins (`crate::questions::sources::OptIn::name`) offered to the agent
    /// when some surface can take their questions; the command line offers all of them but
    /// those named by `--no-opt-in`.
    pub opt_ins: Vec<&'static str>,
    /// Make question lifecycle events ([`Outbox::events`]) for the control server, the
    /// journal and notifications.
    pub events: bool,
    /// A question the client cannot show waits for an answer through the control server
    /// instead of being rejected as `unsupported` (the control server is running).
    pub hold_unsupported: bool,
    /// `--permission-prompts`: how questions are asked as permission prompts; `None`
    /// chooses by the client (`crate::clients`).
    pub permission_prompts: Option<crate::questions::prompts::Style>,
    /// `--client-cancel-requests`: send the client `$/cancel_request` for a request it shows
    /// that is over, whatever is known of the client.
    pub client_cancel_requests: bool,
    /// The control server's page (without its token), named in the chat of a question the
    /// client cannot show.
    pub page_url: Option<String>,
}

impl Default for RouterConfig {
    fn default() -> Self {
        Self {
            max_in_flight: 16_384,
            question_timeout: None,
            max_pending_per_session: 32,
            client_dialect: None,
            advertise_elicitation: false,
            force_forms: false,
            opt_ins: Vec::new(),
            events: false,
            hold_unsupported: false,
            permission_prompts: None,
            client_cancel_requests: false,
            page_url: None,
        }
    }
}

/// Counters for status and benchmarks.
#[derive(Debug, Default, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    pub forwarded_to_agent: u64,
    pub forwarded_to_client: u64,
    pub dropped_from_agent: u64,
    pub rejected_from_client: u64,
    pub questions_asked: u64,
    pub questions_answered: u64,
    pub questions_rejected: u64,
    pub questions_invalid: u64,
    pub late_answers_dropped: u64,
}

/// The routing state machine.
#[derive(Debug)]
pub struct Router {
    cfg: RouterConfig,
    /// Requests from the client waiting for the agent's response.
    client_requests: IdMap<RequestId, InFlight>,
    /// Requests from the agent waiting for the client's response.
    agent_requests: IdMap<RequestId, InFlight>,
    /// Pending questions.
    questions: Registry,
    /// What the client's `initialize` said it can show (None before `initialize`).
    client: Option<ClientSupport>,
    /// The dialect chosen in auto mode (after `initialize`, or after a `-32601` fallback).
    auto_dialect: Option<Dialect>,
    /// Prefix of the ids of requests the bridge sends (random per process).
    id_prefix: String,
    next_bridge_id: u64,
    /// Agent requests already answered (by the client, or by the bridge on its behalf):
    /// a second answer is dropped.
    done_agent_requests: RecentIds,
    /// Client requests already answered by the agent (or the bridge): likewise.
    done_client_requests: RecentIds,
    /// Maps the monotonic clock to wall time (for `expiresAt`), fixed at creation.
    wall_anchor: (Instant, SystemTime),
    agent_gone: bool,
    /// Numbers requests in arrival order.
    seq: u64,
    /// Who resolved recent questions, by (session, questionId) (only with events).
    resolutions: RecentMap<(Box<str>, Box<str>), By>,
    /// The question a recently resolved client request id showed (only with events).
    resolved_keys: RecentMap<RequestId, (String, String)>,
    /// Session ids seen in client requests and questions (only with events; bounded).
    sessions: std::collections::HashSet<Box<str>>,
    /// Tool calls the agent announced, for permission requests that name them by id.
    tool_calls: handlers::tool_call::ToolCalls,
    /// What a press on a recently withdrawn prompt is told in the chat, by the id the
    /// client showed it under: (session, note).
    stale: RecentMap<RequestId, (String, String)>,
    /// Notifications the bridge sent the client that a client may answer as if they were
    /// requests (with an `id: null` error, say): each lets one response from the client to
    /// no request in flight be dropped instead of reaching the agent.
    own_notifications: u32,
    pub counters: Counters,
}

impl Router {
    pub fn new(cfg: RouterConfig) -> Self {
        Self {
            cfg,
            client_requests: IdMap::default(),
            agent_requests: IdMap::default(),
            questions: Registry::default(),
            client: None,
            auto_dialect: None,
            id_prefix: random_prefix(),
            next_bridge_id: 0,
            done_agent_requests: RecentIds::default(),
            done_client_requests: RecentIds::default(),
            wall_anchor: (Instant::now(), SystemTime::now()),
            agent_gone: false,
            seq: 0,
            resolutions: RecentMap::new(RECENTLY_RESOLVED),
            resolved_keys: RecentMap::new(RECENTLY_RESOLVED),
            sessions: Default::default(),
            tool_calls: handlers::tool_call::ToolCalls::default(),
            stale: RecentMap::new(RECENTLY_RESOLVED),
            own_notifications: 0,
            counters: Counters::default(),
        }
    }

    /// Fixes the prefix of the bridge's own request ids (tests compare two routers).
    #[cfg(any(test, feature = "test-util"))]
    pub fn set_id_prefix(&mut self, prefix: &str) {
        self.id_prefix = prefix.to_owned();
    }

    /// Pins the wall clock that `now` corresponds to (tests use a fixed date).
    #[cfg(any(test, feature = "test-util"))]
    pub fn set_wall_anchor(&mut self, now: Instant, wall: SystemTime) {
        self.wall_anchor = (now, wall);
    }

    fn wall(&self, at: Instant) -> SystemTime {
        let (i, w) = self.wall_anchor;
        let wall = match at.checked_duration_since(i) {
            Some(d) => w.checked_add(d),
            None => w.checked_sub(i.duration_since(at)),
        };
        wall.unwrap_or(w)
    }

    /// Remembers a session id for `bridge.status` (bounded like the requests in flight).
    fn note_session(&mut self, s: &str) {
        if self.sessions.len() < self.cfg.max_in_flight && !self.sessions.contains(s) {
            self.sessions.insert(s.into());
        }
    }

    /// The bridge's state for `bridge.status`: dialect, sessions, questions, counters.
    pub fn status(&self) -> Value {
        json!({
            "dialect": self.dialect().as_str(),
            "clientInitialized": self.client.is_some(),
            "sessions": self.sessions.len(),
            "pendingQuestions": self.questions.len(),
            "requestsInFlight": {
                "fromClient": self.client_requests.len(),
                "fromAgent": self.agent_requests.len(),
            },
            "counters": self.counters,
        })
    }

    /// What the client's `initialize` declared, once it has been seen.
    pub fn client_support(&self) -> Option<&ClientSupport> {
        self.client.as_ref()
    }

    /// The pending questions.
    pub fn questions(&self) -> &Registry {
        &self.questions
    }

    /// Requests in flight from `side`.
    /// The session of the newest `session/prompt` still waiting for its result: the one a
    /// request without a `sessionId` (Cursor's) belongs to.
    pub(crate) fn prompting_session(&self) -> Option<&str> {
        self.client_requests
            .values()
            .filter(|r| &*r.method == "session/prompt")
            .max_by_key(|r| r.seq)
            .and_then(|r| r.session_id.as_deref())
    }

    pub fn in_flight(&self, side: Side) -> &IdMap<RequestId, InFlight> {
        match side {
            Side::Client => &self.client_requests,
            Side::Agent => &self.agent_requests,
        }
    }

    /// The earliest moment `on_timer` has work to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.questions.next_deadline()
    }

    /// Runs what is due at `now`: questions past their deadline are rejected.
    pub fn on_timer(&mut self, now: Instant, out: &mut Outbox) {
        self.expire_questions(now, out);
    }

    /// A frame read from the client's stdout (our stdin).
    pub fn on_client_frame(&mut self, frame: Frame, now: Instant, out: &mut Outbox) {
        self.on_scanned(Side::Client, Scanned::new(frame), now, out);
    }

    /// A frame read from the agent's stdout.
    pub fn on_agent_frame(&mut self, frame: Frame, now: Instant, out: &mut Outbox) {
        self.on_scanned(Side::Agent, Scanned::new(frame), now, out);
    }

    /// The lines of one read, scanned where they were read. Runs of neighbouring lines
    /// that are only forwarded (notifications the bridge does not act on, read exactly as
    /// they are written) go out as one [`Out::Run`] slice of the read's chunk: no per-line
    /// buffer handle, and no copy in the writer. Every other line takes
    /// [`Router::on_scanned`]. The bytes written are the same as line by line.
    pub fn on_batch(&mut self, from: Side, batch: Batch, now: Instant, out: &mut Outbox) {
        let data = batch.data;
        // The run being gathered: its range in `data`, and how many lines it holds.
        let mut run: Option<(usize, usize, u64)> = None;
        for (piece, shape) in batch.lines {
            if piece.bare(&data)
                && self.only_forwarded(from, shape.as_ref(), &data[piece.start..piece.end])
            {
                match &mut run {
                    Some((_, end, n)) if *end == piece.start => {
                        *end = piece.end + 1;
                        *n += 1;
                    }
                    _ => {
                        self.forward_run(from, &data, run.take(), out);
                        run = Some((piece.start, piece.end + 1, 1));
                    }
                }
                continue;
            }
            self.forward_run(from, &data, run.take(), out);
            let scanned = Scanned {
                frame: piece.frame(&data),
                shape,
            };
            self.on_scanned(from, scanned, now, out);
        }
        self.forward_run(from, &data, run, out);
    }

    /// Whether the scanned line is a notification the bridge only forwards (no entry in the
    /// dispatch table; logged at trace when it is): the one rule for both
    /// [`Router::on_batch`]'s runs and [`Router::on_scanned`].
    #[inline]
    fn only_forwarded(&self, from: Side, shape: Option<&Shape>, line: &[u8]) -> bool {
        let Some(Shape::Notification { method, .. }) = shape else {
            return false;
        };
        if dispatch::notification(from, method.bytes(line), line).is_some() {
            return false;
        }
        if tracing::enabled!(tracing::Level::TRACE) {
            let span =
                tracing::debug_span!("msg", direction = from.as_str(), method = ?method.text(line));
            let _e = span.enter();
            tracing::trace!(payload = %String::from_utf8_lossy(line), "notification");
        }
        true
    }

    fn forward_run(
        &mut self,
        from: Side,
        data: &Bytes,
        run: Option<(usize, usize, u64)>,
        out: &mut Outbox,
    ) {
        let Some((start, end, n)) = run else { return };
        let run = Out::Run(data.slice(start..end));
        match from {
            Side::Client => {
                self.counters.forwarded_to_agent += n;
                out.to_agent.push_back(run);
            }
            Side::Agent => {
                self.counters.forwarded_to_client += n;
                out.to_client.push_back(run);
            }
        }
    }

    /// A frame already scanned where it was read (the bridge scans on its reader tasks, so
    /// the routing loop does only the lookups). A line the scan decided takes
    /// [`Router::route`] from its offsets; any other is classified first ([`Router::on_kind`]).
    pub fn on_scanned(&mut self, from: Side, scanned: Scanned, now: Instant, out: &mut Outbox) {
        let line = match scanned.frame {
            Frame::Line(line) => line,
            Frame::TooLong { bytes } => {
                tracing::warn!(
                    direction = from.as_str(),
                    bytes,
                    "discarded a line longer than --max-line-bytes"
                );
                self.count_dropped(from);
                return;
            }
        };
        match scanned.shape {
            // The hottest case: no handler, so nothing to build (the same rule as a run's).
            Some(shape) if self.only_forwarded(from, Some(&shape), &line) => {
                self.forward(from, line, out)
            }
            Some(shape) => {
                let msg = Msg::scanned(shape, &line);
                self.route(from, msg, &line, now, out);
            }
            None => self.on_kind(from, line, now, out),
        }
    }

    /// The full path: classifies the line with [`envelope::classify`]; a valid message takes
    /// [`Router::route`] like a scanned one, anything else is forwarded uninspected (a
    /// batch) or refused.
    fn on_kind(&mut self, from: Side, line: Bytes, now: Instant, out: &mut Outbox) {
        // The view borrows a second handle to the same buffer (no copy).
        let view = line.clone();
        let msg = match envelope::classify(&view) {
            Kind::Request { id, method, params } => {
                return self.route(
                    from,
                    Msg::Request {
                        id,
                        method: &method,
                        params: params.map(RawValue::get),
                    },
                    &line,
                    now,
                    out,
                );
            }
            Kind::Notification { method, params } => {
                return self.route(
                    from,
                    Msg::Notification {
                        method: &method,
                        params: params.map(RawValue::get),
                    },
                    &line,
                    now,
                    out,
                );
            }
            Kind::Response { id, outcome } => Msg::Response {
                id,
                ok: outcome.is_ok(),
                outcome: match outcome {
                    Ok(raw) | Err(raw) => raw.get(),
                },
            },
            Kind::Batch => {
                tracing::debug!(direction = from.as_str(), "batch forwarded uninspected");
                return self.forward(from, line, out);
            }
            Kind::Invalid {
                id,
                response_like,
                reason,
            } => {
                self.count_dropped(from);
                tracing::warn!(
                    direction = from.as_str(),
                    reason,
                    preview = %envelope::preview(&line),
                    "not a JSON-RPC message; not forwarded"
                );
                // Never answer something that looks like a response (no error storms).
                // The agent is answered only when it is waiting on an id.
                let answer = !response_like && (from == Side::Client || id.is_some());
                if answer {
                    let msg = format!("Invalid Request: {reason}");
                    out.reply(
                        from,
                        jsonrpc::error(id.as_ref(), code::INVALID_REQUEST, &msg, None),
                    );
                }
                return;
            }
            Kind::NotJson { error } => {
                self.count_dropped(from);
                tracing::warn!(
                    direction = from.as_str(),
                    %error,
                    preview = %envelope::preview(&line),
                    "line is not JSON; not forwarded"
                );
                if from == Side::Client {
                    let msg = format!("Parse error: {error}");
                    out.client(jsonrpc::error(None, code::PARSE_ERROR, &msg, None));
                }
                return;
            }
        };
        self.route(from, msg, &line, now, out);
    }

    /// A request the bridge passes on: refused when its id collides with a bridge request
    /// or too many are in flight, else tracked until its response and forwarded.
    #[allow(clippy::too_many_arguments)]
    fn track_request(
        &mut self,
        from: Side,
        id: RequestId,
        method: Box<str>,
        session_id: Option<String>,
        line: Bytes,
        now: Instant,
        out: &mut Outbox,
    ) {
        if from == Side::Agent && self.questions.has_client_id(&id) {
            // The client could not tell its answer from the bridge's request's.
            tracing::warn!(%id, "agent request id collides with a bridge request in flight; refused");
            let msg = format!("Invalid Request: id {id} is in use by the bridge");
            out.agent(jsonrpc::error(Some(&id), code::INVALID_REQUEST, &msg, None));
            return;
        }
        self.seq += 1;
        let entry = InFlight {
            method,
            session_id: session_id.map(Into::into),
            started: now,
            seq: self.seq,
        };
        if let (true, Some(s)) = (self.cfg.events, &entry.session_id) {
            self.note_session(s);
        }
        let map = match from {
            Side::Client => &mut self.client_requests,
            Side::Agent => &mut self.agent_requests,
        };
        if map.len() >= self.cfg.max_in_flight {
            // Untracked it could never be answered on the sender's behalf: refuse.
            tracing::warn!(
                limit = self.cfg.max_in_flight,
                "too many requests in flight; refused"
            );
            let msg = format!(
                "too many requests in flight through the bridge (limit {})",
                self.cfg.max_in_flight
            );
            out.reply(
                from,
                jsonrpc::error(Some(&id), code::SERVER_ERROR, &msg, None),
            );
            return;
        }
        if map.insert(id.clone(), entry).is_some() {
            tracing::warn!("request id reused while a request with it is still in flight");
        }
        match from {
            Side::Client => self.done_client_requests.remove(&id),
            Side::Agent => self.done_agent_requests.remove(&id),
        }
        self.forward(from, line, out);
    }

    /// A response that is not the client's answer to a question: matched with its request
    /// (a second response to one is dropped) and forwarded.
    fn on_response(
        &mut self,
        from: Side,
        id: RequestId,
        result_ok: bool,
        line: Bytes,
        now: Instant,
        out: &mut Outbox,
    ) {
        // A response travels opposite to its request.
        let (map, done) = match from {
            Side::Client => (&mut self.agent_requests, &mut self.done_agent_requests),
            Side::Agent => (&mut self.client_requests, &mut self.done_client_requests),
        };
        let mut line = line;
        match map.remove(&id) {
            Some(req) => {
                tracing::debug!(
                    method = ?req.method,
                    elapsed_us = now.saturating_duration_since(req.started).as_micros() as u64,
                    "response"
                );
                done.insert(id);
                // The request came from the other peer: its entry may rewrite the result.
                let rewrite_result = dispatch::request(from.peer(), req.method.as_bytes())
                    .and_then(|rule| rule.result);
                if let (true, Some(rewrite_result)) = (result_ok, rewrite_result) {
                    line = rewrite_result(line);
                }
            }
            None if done.contains(&id) => {
                tracing::warn!(%id, "second response to a request already answered; dropped");
                self.count_dropped(from);
                return;
            }
            None if from == Side::Client && self.own_notifications > 0 => {
                // No request of the agent's has this id, and the bridge has sent the client
                // notifications of its own: a client answering one of those (some answer a
                // notification they do not know with an `id: null` error). The agent would
                // take it for an answer to something else. Without such a notification the
                // response is the agent's business, and goes on.
                self.own_notifications -= 1;
                tracing::warn!(%id, "response from the client to no request in flight; dropped");
                tracing::trace!(payload = %String::from_utf8_lossy(&line), "dropped response");
                self.count_dropped(from);
                return;
            }
            None => tracing::debug!("response to an unknown request id; forwarded"),
        }
        self.forward(from, line, out);
    }

    /// A notification of the bridge's own for the client.
    fn notify_client(&mut self, line: Bytes, out: &mut Outbox) {
        self.own_notifications = self.own_notifications.saturating_add(1).min(1024);
        out.client(line);
    }

    fn count_dropped(&mut self, from: Side) {
        match from {
            Side::Client => self.counters.rejected_from_client += 1,
            Side::Agent => self.counters.dropped_from_agent += 1,
        }
    }

    fn forward(&mut self, from: Side, line: Bytes, out: &mut Outbox) {
        match from {
            Side::Client => {
                self.counters.forwarded_to_agent += 1;
                out.to_agent.push_back(Out::Line(line));
            }
            Side::Agent => {
                self.counters.forwarded_to_client += 1;
                out.to_client.push_back(Out::Line(line));
            }
        }
    }

    /// The client closed its output: every pending question is rejected with
    /// `client_disconnected`, then the agent's stdin is closed after what is queued.
    pub fn on_client_eof(&mut self, _now: Instant, out: &mut Outbox) {
        self.reject_all_questions(out);
        self.answer_agent_requests(None, false, out);
        out.to_agent.push_back(Out::Close);
    }

    /// Answers the agent's requests still waiting on the client, on its behalf. For a
    /// `session/cancel` of `session` (`notify_client`): its permission requests get
    /// `{"outcome":{"outcome":"cancelled"}}` and its form elicitations `{"action":"cancel"}`,
    /// as ACP says the client must, and the client gets `$/cancel_request` for each. For the
    /// client's EOF (`session` = `None`): the same for every session, and every other request
    /// gets a `-32603` error, so each has its one response before the agent's stdin closes.
    /// A later answer from the client is dropped.
    fn answer_agent_requests(
        &mut self,
        session: Option<&str>,
        notify_client: bool,
        out: &mut Outbox,
    ) {
        let cancelled = |m: &str| dispatch::request(Side::Agent, m.as_bytes())?.cancelled;
        let mut due: Vec<(RequestId, InFlight)> = self
            .agent_requests
            .iter()
            .filter(|(_, r)| match session {
                Some(s) => cancelled(&r.method).is_some() && r.session_id.as_deref() == Some(s),
                None => true,
            })
            .map(|(id, r)| (id.clone(), r.clone()))
            .collect();
        due.sort_by_key(|(_, r)| r.seq);
        for (id, req) in due {
            self.agent_requests.remove(&id);
            let line = match cancelled(&req.method) {
                Some(result) => jsonrpc::result_text(&id, result),
                None => jsonrpc::error(
                    Some(&id),
                    code::INTERNAL_ERROR,
                    &format!("the client disconnected before answering {}", req.method),
                    None,
                ),
            };
            tracing::info!(%id, method = ?req.method, "answered on the client's behalf");
            out.agent(line);
            if notify_client && self.sends_cancel_requests() {
                self.notify_client(jsonrpc::cancel_request(&id), out);
            }
            self.done_agent_requests.insert(id);
        }
    }

    /// The agent is gone (exited and its stdout drained): every client request still
    /// waiting on it gets one `-32603` error naming the exit.
    pub fn on_agent_gone(&mut self, exit: &AgentExit, out: &mut Outbox) {
        if self.agent_gone {
            return;
        }
        self.agent_gone = true;
        let mut waiting: Vec<(RequestId, InFlight)> = self.client_requests.drain().collect();
        waiting.sort_by_key(|(_, r)| r.seq);
        // The first error carries the whole stderr tail, the others its last KiB, so the
        // burst stays small however many requests were waiting.
        let short_tail = last_chars(&exit.stderr_tail, SHORT_TAIL);
        for (n, (id, req)) in waiting.into_iter().enumerate() {
            let message = format!("{} while handling {}", exit.describe(), req.method);
            let tail = if n == 0 {
                exit.stderr_tail.as_str()
            } else {
                short_tail
            };
            let data = json!({
                "exitCode": exit.code,
                "signal": exit.signal,
                "stderrTail": tail,
            });
            out.client(jsonrpc::error(
                Some(&id),
                code::INTERNAL_ERROR,
                &message,
                Some(data),
            ));
        }
        // Requests the agent sent can no longer be answered usefully: the client closes
        // what it still shows.
        let mut shown: Vec<(RequestId, InFlight)> = self.agent_requests.drain().collect();
        shown.sort_by_key(|(_, r)| r.seq);
        if self.sends_cancel_requests() {
            for (id, _) in shown {
                self.notify_client(jsonrpc::cancel_request(&id), out);
            }
        }
        self.withdraw_all_questions(out);
    }
}

/// How much of the agent's stderr tail the second and later exit errors carry.
const SHORT_TAIL: usize = 1024;

/// The last `max` bytes of `s`, cut at a character boundary.
fn last_chars(s: &str, max: usize) -> &str {
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// A prefix for the bridge's own request ids that no agent can predict.
fn random_prefix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    format!("acp-question-bridge:{:016x}:", h.finish())
}

/// Applies a rewrite to a line; when it cannot be applied, the line goes on unchanged.
fn rewrite(line: Bytes, f: impl Fn(&str) -> Option<String>) -> Bytes {
    match std::str::from_utf8(&line).ok().and_then(f) {
        Some(new) => Bytes::from(new),
        None => {
            tracing::warn!("cannot merge into this message; forwarding it unchanged");
            line
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::fixture::{frame, lines, msg, parse, wire, Fixture};
    use super::*;

    fn fixture() -> Fixture {
        Fixture::new(RouterConfig::default())
    }

    /// A line of a random stream: plain notifications (the run case) mixed with what
    /// breaks a run (requests, responses, cancels, questions, garbage, CRLF, BOM, blank and
    /// over-long lines).
    fn stream_line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            6 => "[a-zé ]{0,12}".prop_map(|t| msg::notification("session/update", json!({"sessionId":"s","t":t}))),
            1 => (0u8..50).prop_map(|i| msg::request(json!(i), "session/prompt", json!({"sessionId":"s"}))),
            1 => (0u8..50).prop_map(|i| msg::result(json!(i), json!({}))),
            1 => (0u8..50).prop_map(|i| msg::result(json!(format!("q{i}")), json!({"outcome":"rejected"}))),
            1 => Just(msg::session_cancel("s")),
            1 => Just(msg::notification("$/cancel_request", json!({"id":3}))),
            1 => (0u8..50).prop_map(|i| msg::ask(
                json!(format!("q{i}")),
                json!({"sessionId":"s","questionId":i.to_string(),"prompt":"ok?"}),
            )),
            1 => "[ -~]{0,20}",
            1 => Just(String::new()),
            1 => Just(msg::notification("session/update", json!({})) + "\r"),
            1 => Just("\u{FEFF}".to_owned() + &msg::notification("session/update", json!({}))),
            1 => Just(msg::notification("x", json!({"p": "x".repeat(300)}))),
        ]
    }

    proptest::proptest! {
        /// Feeding whole reads through `on_batch` writes the same bytes, in the same order,
        /// with the same counters, as feeding the same lines one by one.
        #[test]
        fn batches_write_what_single_lines_write(
            reads in proptest::collection::vec(
                (proptest::bool::ANY, proptest::collection::vec(stream_line(), 0..12)),
                0..12,
            ),
        ) {
            use tokio_util::codec::Decoder;
            // Questions are shown (and then pending), so cancels and answers change state;
            // lines over 256 bytes are too long.
            let new = || Fixture::native(RouterConfig::default()).with_id_prefix("p:").with_max_line(256);
            let (mut single, mut batched) = (new(), new());
            for (from_client, lines) in &reads {
                let side = if *from_client { Side::Client } else { Side::Agent };
                let mut raw = Vec::new();
                for l in lines {
                    raw.extend_from_slice(l.as_bytes());
                    raw.push(b'\n');
                }
                let mut buf = bytes::BytesMut::from(&raw[..]);
                let mut lines = crate::codec::LineCodec::new(256);
                while let Some(frame) = lines.decode(&mut buf).unwrap() {
                    single.feed(side, frame);
                }
                batched.read(side, &raw);
            }
            let (b, s) = (&batched.out, &single.out);
            proptest::prop_assert_eq!(wire(&b.to_agent), wire(&s.to_agent));
            proptest::prop_assert_eq!(wire(&b.to_client), wire(&s.to_client));
            proptest::prop_assert_eq!(b.made_for_agent, s.made_for_agent);
            proptest::prop_assert_eq!(b.made_for_client, s.made_for_client);
            proptest::prop_assert_eq!(batched.r.status()["counters"].clone(), single.r.status()["counters"].clone());
        }
    }

    #[test]
    fn plain_notifications_go_out_as_one_run() {
        let mut t = fixture();
        let note = msg::notification("session/update", json!({"sessionId":"s"}));
        let req = msg::request(json!(1), "session/prompt", json!({"sessionId":"s"}));
        let raw = format!("{note}\n{note}\n{req}\n{note}\r\n{note}\n{note}\n");
        t.read(Side::Client, raw.as_bytes());
        let kinds: Vec<String> = t
            .out
            .to_agent
            .iter()
            .map(|o| match o {
                Out::Line(l) => format!("line {}", l.len()),
                Out::Run(r) => format!("run {}", r.len()),
                Out::Close => "close".into(),
            })
            .collect();
        let (n, q) = (note.len(), req.len());
        // The CRLF line is not bare: it goes out alone, without its `\r`.
        assert_eq!(
            kinds,
            [
                format!("run {}", 2 * (n + 1)),
                format!("line {q}"),
                format!("line {n}"),
                format!("run {}", 2 * (n + 1))
            ]
        );
        assert_eq!(t.r.counters.forwarded_to_agent, 6);
    }

    #[test]
    fn forwards_byte_for_byte_both_ways() {
        let mut t = fixture();
        let req = r#"{ "method" : "session/prompt","id":0, "jsonrpc":"2.0","params":{"n":1e400,"sessionId":"s"}}"#;
        t.client(req);
        let note = r#"{"jsonrpc":"2.0","method":"_vendor/x","params":{"t":"\u00e9🙂"}}"#;
        t.agent(note);
        assert_eq!(t.take_agent(), vec![req]);
        assert_eq!(t.take_client(), vec![note]);
        let inflight = &t.r.in_flight(Side::Client)
            [&RequestId::from_raw(&serde_json::value::RawValue::from_string("0".into()).unwrap())];
        assert_eq!(&*inflight.method, "session/prompt");
        assert_eq!(inflight.session_id.as_deref(), Some("s"));
    }

    #[test]
    fn same_id_in_both_directions_is_tracked_apart() {
        let mut t = fixture();
        t.client(r#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#);
        t.agent(&msg::request(
            json!(0),
            "session/request_permission",
            json!({}),
        ));
        assert_eq!(t.r.in_flight(Side::Client).len(), 1);
        assert_eq!(t.r.in_flight(Side::Agent).len(), 1);
        // The client answers the agent's request 0: only the agent's entry goes.
        t.client(&msg::result(json!(0), json!({})));
        assert_eq!(t.r.in_flight(Side::Client).len(), 1);
        assert_eq!(t.r.in_flight(Side::Agent).len(), 0);
    }

    #[test]
    fn string_and_number_ids_differ() {
        let mut t = fixture();
        t.client(r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#);
        t.client(r#"{"jsonrpc":"2.0","id":"1","method":"b"}"#);
        assert_eq!(t.r.in_flight(Side::Client).len(), 2);
        t.agent(&msg::result(json!("1"), json!(null)));
        let left: Vec<_> =
            t.r.in_flight(Side::Client)
                .values()
                .map(|v| v.method.clone())
                .collect();
        assert_eq!(left, vec!["a".into()]);
    }

    #[test]
    fn client_garbage_gets_parse_error_and_is_not_forwarded() {
        let mut t = fixture();
        t.client("not json");
        assert!(t.out.to_agent.is_empty());
        let reply = parse(&t.take_client()[0]);
        assert_eq!(reply["id"], Value::Null);
        assert_eq!(reply["error"]["code"], -32700);
    }

    #[test]
    fn client_invalid_request_gets_its_id_back() {
        let mut t = fixture();
        t.client(r#"{"jsonrpc":"2.0","id":"x","method":3}"#);
        t.client(r#"{"id":5}"#);
        t.client("[1,2]");
        let replies = t.take_client();
        assert_eq!(replies.len(), 2);
        assert_eq!(parse(&replies[0])["id"], "x");
        assert_eq!(parse(&replies[0])["error"]["code"], -32600);
        assert_eq!(parse(&replies[1])["id"], 5);
        assert_eq!(t.take_agent(), vec!["[1,2]"]);
    }

    #[test]
    fn agent_garbage_and_idless_error_are_dropped_silently() {
        let mut t = fixture();
        t.agent("Loading model...");
        t.agent(r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"}}"#);
        assert!(t.out.to_client.is_empty());
        assert!(t.out.to_agent.is_empty());
        assert_eq!(t.r.counters.dropped_from_agent, 2);
    }

    #[test]
    fn over_long_line_is_dropped() {
        let mut t = fixture();
        t.feed(Side::Client, Frame::TooLong { bytes: 10 });
        assert!(t.out.to_client.is_empty() && t.out.to_agent.is_empty());
    }

    #[test]
    fn agent_gone_answers_each_waiting_request_once() {
        let mut t = fixture();
        t.client(&msg::request(
            json!(7),
            "session/prompt",
            json!({"sessionId":"s"}),
        ));
        t.take_agent();
        let exit = AgentExit {
            code: Some(3),
            signal: None,
            stderr_tail: "boom\n".into(),
        };
        t.agent_gone(&exit);
        t.agent_gone(&exit);
        assert_eq!(
            t.take_client(),
            vec![msg::error_data(
                json!(7),
                -32603,
                "agent exited with code 3 while handling session/prompt",
                json!({"exitCode":3,"signal":null,"stderrTail":"boom\n"}),
            )]
        );
    }

    #[test]
    fn client_eof_closes_agent_stdin_after_queued_lines() {
        let mut t = fixture();
        t.client(r#"{"jsonrpc":"2.0","method":"n"}"#);
        t.client_eof();
        assert_eq!(
            t.take_agent(),
            vec![r#"{"jsonrpc":"2.0","method":"n"}"#, "<close>"]
        );
    }

    /// Every entry of the dispatch table, and every vendor's method, is reached from both
    /// paths: the scanned line and the same line classified do the same.
    #[test]
    fn both_paths_reach_each_table_entry() {
        let mut cases = Vec::new();
        for entry in dispatch::TABLE {
            for name in entry.names {
                let line = match entry.on {
                    dispatch::On::Request(_) => {
                        msg::request(json!(1), name, json!({"sessionId":"s"}))
                    }
                    dispatch::On::Notification(_) => {
                        msg::notification(name, json!({"sessionId":"s","requestId":1}))
                    }
                    dispatch::On::Observe { .. } => msg::notification(
                        name,
                        json!({"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t"}}),
                    ),
                };
                cases.push((entry.from, line));
            }
        }
        for v in crate::questions::sources::VENDORS {
            for name in [v.method.to_owned(), format!("_{}", v.method)] {
                let params = json!({"sessionId":"s","text":"t","questions":[{"question":"q"}]});
                cases.push((Side::Agent, msg::request(json!(1), &name, params)));
            }
        }
        for (from, line) in cases {
            let (mut fast, mut slow) = (fixture(), fixture());
            fast.feed(from, frame(&line));
            slow.feed_unscanned(from, frame(&line));
            assert_eq!(
                lines(&fast.out.to_agent),
                lines(&slow.out.to_agent),
                "{line}"
            );
            assert_eq!(
                lines(&fast.out.to_client),
                lines(&slow.out.to_client),
                "{line}"
            );
        }
    }
}
