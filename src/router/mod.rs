//! The sans-IO routing core: one message in, lines out.
//!
//! It performs no I/O: the shell in [`crate::bridge`] feeds it frames, EOFs, exits, timer
//! ticks and the results of the disk work it asked for ([`Effect`]), and drains the
//! [`Outbox`] it fills. Its parts:
//! - [`stores`]: what it remembers (requests in flight, ended questions, tool calls, session
//!   folders, digests), each behind a narrow API; the open questions are
//!   [`crate::questions::open::OpenQuestions`];
//! - [`client`]: what the client can show, and so the dialect questions reach it in;
//! - [`dispatch`]: which methods it acts on, and the one route every valid message takes;
//!   [`handlers`]: one module per method;
//! - [`lifecycle`]: a question from the one way in ([`Router`]'s `ask`) through the approval
//!   policy, its delivery, the client's answers, to every ending; [`control_calls`]: answers
//!   from the control server; [`gone`]: a peer gone.
//!
//! Test helpers are in `fixture` (tests and the `test-util` feature only).
//!
//! Invariants:
//! - A message the bridge does not rewrite is pushed to the outbox as the very `Bytes` it
//!   arrived in (byte for byte), and the outbox is a FIFO per direction, so order is kept.
//! - In-flight requests are keyed by direction and exact id: the same id may be in flight
//!   both ways at once, and `1` is not `"1"`.
//! - A message that looks like a response is never answered (no error storms).
//! - Every client request still in flight when the agent is gone gets exactly one error.
//! - No I/O, checked by the compiler: what would reach files, processes, sockets, the
//!   environment, the runtime, the clock or the policy's file writes is denied here
//!   (`clippy.toml`; `cargo clippy -D warnings` fails on it). The time comes in as `now`.
#![cfg_attr(not(test), deny(clippy::disallowed_methods, clippy::disallowed_types))]

mod attach;
mod away;
mod client;
mod config;
mod control_calls;
mod dispatch;
#[cfg(any(test, feature = "test-util"))]
#[allow(clippy::disallowed_methods, clippy::disallowed_types)] // a test's clock and files
pub mod fixture;
mod gone;
mod handlers;
mod history;
mod input;
mod joined;
mod joined_asks;
mod lifecycle;
mod message;
mod outbox;
mod relay;
#[cfg(test)]
mod sources_tests;
mod stores;

pub use crate::questions::answer::ControlError;
pub use config::{Counters, PolicyFiles, RouterConfig};
pub use gone::AgentExit;
pub use input::{Control, Handled, Input};
pub use outbox::{Effect, Out, Outbox, Side};
pub use stores::clients::MAX_JOINED;
pub use stores::requests::InFlight;

use std::time::{Instant, SystemTime};

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::capabilities::ClientSupport;
use crate::codec::Frame;
use crate::envelope::{self, IdMap, Kind, RequestId};
use crate::jsonrpc::{self, code};
use crate::questions::open::OpenQuestions;
use crate::scan::{Batch, Scanned, Shape};

use dispatch::Msg;
use stores::requests::Matched;

/// The routing state machine.
#[derive(Debug)]
pub struct Router {
    cfg: RouterConfig,
    /// The requests in flight each way.
    requests: stores::requests::Requests,
    /// Pending questions.
    questions: OpenQuestions,
    /// The ids of the requests the bridge sends.
    bridge_ids: stores::requests::BridgeIds,
    /// Maps the monotonic clock to wall time (for `expiresAt`), fixed at creation.
    wall_anchor: (Instant, SystemTime),
    agent_gone: bool,
    /// How many questions were opened ([`crate::questions::open::Open::serial`]).
    opened: u64,
    /// What is remembered of ended questions and seen sessions.
    ledger: stores::ledger::Ledger,
    /// Tool calls the agent announced, for permission requests that name them by id.
    tool_calls: stores::tool_calls::ToolCalls,
    shells: stores::shells::Shells,
    /// The sessions' folders.
    sessions: stores::sessions::Sessions,
    /// What each session's agent was doing, for its questions.
    digests: stores::digest::Digests,
    /// The name the agent gave in `initialize` (`agentInfo.name`).
    agent_info_name: Option<String>,
    /// The approval policy in force, and what the bridge told of it.
    policy: Option<lifecycle::PolicyState>,
    /// `--linger`: what is kept for the next client.
    held: stores::held::Held,
    /// Every client: what each can show, and so how questions reach it; with `--linger`
    /// the clients that joined a session another has.
    clients: stores::clients::Clients,
    pub counters: Counters,
}

impl Router {
    /// A router at `now`, which is the wall clock's `wall` (the router reads no clock: the
    /// shell gives it the time).
    pub fn new(cfg: RouterConfig, now: Instant, wall: SystemTime) -> Self {
        let policy = cfg
            .policy
            .as_ref()
            .map(|_| lifecycle::PolicyState::default());
        let linger = cfg.linger;
        let attached = client::ClientView::new(&cfg);
        Self {
            requests: stores::requests::Requests::new(cfg.max_in_flight),
            ledger: stores::ledger::Ledger::new(cfg.max_in_flight),
            bridge_ids: stores::requests::BridgeIds::with_prefix(&cfg.id_prefix),
            cfg,
            questions: OpenQuestions::default(),
            wall_anchor: (now, wall),
            agent_gone: false,
            opened: 0,
            tool_calls: stores::tool_calls::ToolCalls::default(),
            shells: stores::shells::Shells::default(),
            sessions: stores::sessions::Sessions::default(),
            digests: stores::digest::Digests::default(),
            agent_info_name: None,
            policy,
            held: stores::held::Held::new(!linger),
            clients: stores::clients::Clients::new(attached),
            counters: Counters::default(),
        }
    }

    /// Fixes the prefix of the bridge's own request ids (tests compare two routers).
    #[cfg(any(test, feature = "test-util"))]
    pub fn set_id_prefix(&mut self, prefix: &str) {
        self.bridge_ids = stores::requests::BridgeIds::with_prefix(prefix);
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

    /// The bridge's state for `bridge.status`: dialect, sessions, questions, counters.
    pub fn status(&self) -> Value {
        let mut v = json!({
            "dialect": self.dialect().as_str(),
            "clientInitialized": self.clients.attached().support().is_some(),
            "sessions": self.ledger.sessions(),
            "pendingQuestions": self.questions.len(),
            "requestsInFlight": {
                "fromClient": self.requests.from(Side::Client).len(),
                "fromAgent": self.requests.from(Side::Agent).len(),
            },
            "counters": self.counters,
        });
        if self.cfg.linger {
            v["held"] = self.held_status();
        }
        v
    }

    /// The agent's folder (the session folder of a session the bridge did not see begin).
    pub fn cwd(&self) -> Option<&std::path::Path> {
        self.cfg.cwd.as_deref()
    }

    /// What the client's `initialize` declared, once it has been seen.
    pub fn client_support(&self) -> Option<&ClientSupport> {
        self.clients.attached().support()
    }

    /// What the client can show (a handler's one way to it).
    pub(in crate::router) fn client_view(&mut self) -> &mut client::ClientView {
        self.clients.attached_mut()
    }

    /// The tool calls the agent announced (a handler's one way to them).
    pub(in crate::router) fn tool_calls(&mut self) -> &mut stores::tool_calls::ToolCalls {
        &mut self.tool_calls
    }

    /// The commands that may have moved the sessions' shells (a handler's one way to them).
    pub(in crate::router) fn shells(&mut self) -> &mut stores::shells::Shells {
        &mut self.shells
    }

    /// The sessions' folders (a handler's one way to them).
    pub(in crate::router) fn sessions(&mut self) -> &mut stores::sessions::Sessions {
        &mut self.sessions
    }

    /// What each session's agent was doing (a handler's one way to it).
    pub(in crate::router) fn digests(&mut self) -> &mut stores::digest::Digests {
        &mut self.digests
    }

    /// The name the agent gave in `initialize` (`agentInfo.name`), for the policy's rules.
    pub(in crate::router) fn set_agent_name(&mut self, name: String) {
        self.agent_info_name = Some(name);
    }

    /// The pending questions.
    pub fn questions(&self) -> &OpenQuestions {
        &self.questions
    }

    /// The session of the newest `session/prompt` still waiting for its result: the one a
    /// request without a `sessionId` (Cursor's) belongs to.
    pub(crate) fn prompting_session(&self) -> Option<&str> {
        self.requests.prompting_session()
    }

    /// Requests in flight from `side`.
    pub fn in_flight(&self, side: Side) -> &IdMap<RequestId, InFlight> {
        self.requests.from(side)
    }

    /// The earliest moment `on_timer` has work to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.questions.next_deadline()
    }

    /// Runs what is due at `now`: questions past their deadline are rejected.
    pub(in crate::router) fn on_timer(&mut self, now: Instant, out: &mut Outbox) {
        self.expire_questions(now, out);
    }

    /// The lines of one read, scanned where they were read. Runs of neighbouring lines
    /// that are only forwarded (notifications the bridge does not act on, read exactly as
    /// they are written) go out as one [`Out::Run`] slice of the read's chunk: no per-line
    /// buffer handle, and no copy in the writer. Every other line takes
    /// [`Router::on_scanned`]. The bytes written are the same as line by line.
    pub(in crate::router) fn on_batch(
        &mut self,
        from: Side,
        batch: Batch,
        now: Instant,
        out: &mut Outbox,
    ) {
        let data = batch.data;
        if from == Side::Agent {
            // The end of each read, read back only when a question is asked.
            self.digests.keep(&data, &batch.lines);
        }
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

    /// A frame already scanned where it was read (the bridge scans on its reader tasks, so
    /// the routing loop does only the lookups). A line the scan decided takes
    /// [`Router::route`] from its offsets; any other is classified first ([`Router::on_kind`]).
    pub(in crate::router) fn on_scanned(
        &mut self,
        from: Side,
        scanned: Scanned,
        now: Instant,
        out: &mut Outbox,
    ) {
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
        if let (true, Some(s)) = (self.cfg.events, &session_id) {
            self.ledger.session(s);
        }
        let (id, line) = match (self.cfg.linger, from) {
            (true, Side::Client) => self.unclash(id, line),
            _ => (id, line),
        };
        let session_id: Option<Box<str>> = session_id.map(Into::into);
        let wait = from == Side::Agent && self.cfg.linger;
        let kept = wait.then(|| (id.clone(), session_id.clone()));
        if self.cfg.linger && from == Side::Client {
            self.client_request_at_agent(&id, &method, session_id.as_deref());
        }
        if let Err(limit) = self
            .requests
            .track(from, id.clone(), method, session_id, now)
        {
            // Untracked it could never be answered on the sender's behalf: refuse (under
            // the id the sender gave).
            tracing::warn!(limit, "too many requests in flight; refused");
            let id = match self.cfg.linger {
                true => self.client_request_refused(id),
                false => id,
            };
            let msg = format!("too many requests in flight through the bridge (limit {limit})");
            out.reply(
                from,
                jsonrpc::error(Some(&id), code::SERVER_ERROR, &msg, None),
            );
            return;
        }
        if let Some((id, session)) = kept {
            // Shown to the attached client when it has the session, else kept for one.
            return self.agent_request_for_client(id, session.as_deref(), line, out);
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
        let mut line = line;
        if from == Side::Agent
            && self.clients.requests_at_agent() > 0
            && self.joined_result(&id, result_ok, &line, out)
        {
            return;
        }
        match self.requests.answered(from, &id) {
            Matched::Request(req) => {
                tracing::debug!(
                    method = ?req.method,
                    elapsed_us = now.saturating_duration_since(req.started).as_micros() as u64,
                    "response"
                );
                // The request came from the other peer: its entry may rewrite the result.
                let rewrite_result = dispatch::request(from.peer(), req.method.as_bytes())
                    .and_then(|rule| rule.result);
                // (With `--linger`, a result for a client that left begins nothing of the
                // attached client's.)
                self.held.for_orphan =
                    self.cfg.linger && from == Side::Agent && self.held.is_orphan(&id);
                if let (true, Some(rewrite_result)) = (result_ok, rewrite_result) {
                    line = rewrite_result(self, &id, line);
                }
                self.held.for_orphan = false;
                if self.cfg.linger {
                    self.held.loaded(&id);
                    match from {
                        Side::Client => {
                            self.held.agent_answered(&id);
                            self.joined_agent_request_over(&id, out);
                        }
                        Side::Agent => match self.for_which_client(&id, &req, line, out) {
                            Some(l) => line = l,
                            None => return self.after_response(out),
                        },
                    }
                }
            }
            Matched::Again => {
                tracing::warn!(%id, "second response to a request already answered; dropped");
                self.count_dropped(from);
                return;
            }
            Matched::OwnNotification => {
                // No request of the agent's has this id, and the bridge has sent the client
                // notifications of its own: a client answering one of those (some answer a
                // notification they do not know with an `id: null` error). The agent would
                // take it for an answer to something else. Without such a notification the
                // response is the agent's business, and goes on.
                tracing::warn!(%id, "response from the client to no request in flight; dropped");
                tracing::trace!(payload = %String::from_utf8_lossy(&line), "dropped response");
                self.count_dropped(from);
                return;
            }
            Matched::Unknown => tracing::debug!("response to an unknown request id; forwarded"),
        }
        self.forward(from, line, out);
        if self.cfg.linger {
            self.after_response(out);
        }
    }
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
