//! The router test fixture (rust-analyzer's `fixture.rs` pattern), shared by the router's
//! unit tests, `tests/it/regressions.rs` and the property checker in `tests/it/router_check`: build
//! a router, feed it lines or whole reads from a side, read what came out per direction,
//! move its clock. Plus named builders for the JSON-RPC lines tests compare exactly.
//!
//! The fixture plays the shell's part for the router's [`Effect`]s, with no files: a
//! decision is made by the policy the test gives as text ([`Fixture::with_policy`]; none:
//! every approval is asked), and an "Always allow" write is only recorded
//! ([`Fixture::remembered`]).
//!
//! Test-only: compiled for the crate's own tests and, for integration tests and fuzz targets,
//! behind the `test-util` feature; it is not part of the library's API. It does no I/O.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime};

use bytes::{Bytes, BytesMut};
use serde_json::Value;

use super::{
    AgentExit, Control, ControlError, Effect, Input, Out, Outbox, Router, RouterConfig, Side,
};
use crate::codec::{Frame, LineCodec};
use crate::events::Event;
use crate::policy::desk::Ruling;
use crate::policy::Policy;
use crate::questions::Dialect;
use crate::scan::{Batch, Memo, Scanned};

/// The wall clock when a fixture's clock starts: 2026-11-20T00:00:00Z.
pub const WALL_START: Duration = Duration::from_secs(1_795_132_800);

/// Longest line a fixture's codecs take before a line is too long ([`Fixture::read`]).
pub const MAX_LINE: usize = 1024;

/// A router with its outbox and a clock it controls.
pub struct Fixture {
    pub r: Router,
    pub out: Outbox,
    /// Where the clock started (the wall clock reads [`WALL_START`] then).
    pub start: Instant,
    /// The clock: what the router is told `now` is.
    pub now: Instant,
    /// One codec and skeleton memo per side, for whole reads ([`Fixture::read`]).
    codecs: [LineCodec; 2],
    memos: [Memo; 2],
    /// The policy the shell would have read (none: every approval is asked).
    policy: Option<Policy>,
    /// The "Always allow" rules written, with what each does.
    pub remembered: Vec<(String, String)>,
    /// Effects wait in the outbox until [`Fixture::run_effects`] (a shell that is slow).
    defer: bool,
    /// `--linger`: the sessions other holders keep, by the holder's pid.
    pub kept_elsewhere: std::collections::HashMap<String, u32>,
}

impl Fixture {
    pub fn new(cfg: RouterConfig) -> Self {
        let now = Instant::now();
        let mut r = Router::new(cfg, Instant::now(), SystemTime::now());
        r.set_wall_anchor(now, SystemTime::UNIX_EPOCH + WALL_START);
        Fixture {
            r,
            out: Outbox::default(),
            start: now,
            now,
            codecs: [LineCodec::new(MAX_LINE), LineCodec::new(MAX_LINE)],
            memos: Default::default(),
            policy: None,
            remembered: Vec::new(),
            defer: false,
            kept_elsewhere: Default::default(),
        }
    }

    /// A router with an approval policy in force, made of the rules in `toml` (a policy
    /// file's text, read as if from `policy.toml`).
    pub fn with_policy(cfg: RouterConfig, toml: &str) -> Self {
        let path = std::path::Path::new("policy.toml");
        let rules = crate::policy::file::parse_rules(toml, path).expect("the test's policy parses");
        let (policy, _) = crate::policy::file::compose(rules, None, Vec::new());
        let mut t = Fixture::new(RouterConfig {
            policy: Some(Default::default()),
            ..cfg
        });
        t.policy = Some(policy);
        t
    }

    /// Effects wait in the outbox until [`Fixture::run_effects`]: the test decides when the
    /// shell's work comes back.
    pub fn deferred(mut self) -> Self {
        self.defer = true;
        self
    }

    /// Carries out the effects the router asked for at once, unless they are deferred.
    fn settle(&mut self) {
        if !self.defer {
            self.run_effects();
        }
    }

    /// Carries out the effects the router asked for, as the shell would, until none is left.
    pub fn run_effects(&mut self) {
        while !self.out.effects.is_empty() {
            for effect in std::mem::take(&mut self.out.effects) {
                match effect {
                    Effect::Decide {
                        id, ticket, call, ..
                    } => {
                        let ruling = match &self.policy {
                            Some(policy) => Ruling {
                                verdict: policy.decide(&call),
                                changes: Vec::new(),
                                broken: policy.broken.clone(),
                            },
                            None => Ruling::ask("no approval policy in the fixture"),
                        };
                        let ruled = Input::Ruling { id, ticket, ruling };
                        self.r.handle(ruled, self.now, &mut self.out);
                    }
                    Effect::Remember { rule, said, .. } => self.remembered.push((rule, said)),
                    Effect::WhoKeeps { id, session } => {
                        let holder = self.kept_elsewhere.get(&session).copied();
                        let kept = Input::KeptElsewhere { id, holder };
                        self.r.handle(kept, self.now, &mut self.out);
                    }
                }
            }
        }
    }

    /// A router that shows every question as the extension (as a native client would).
    pub fn native(cfg: RouterConfig) -> Self {
        Fixture::new(RouterConfig {
            client_dialect: Some(Dialect::Extension),
            ..cfg
        })
    }

    /// Fixes the prefix of the bridge's own request ids (two routers then agree).
    pub fn with_id_prefix(mut self, prefix: &str) -> Self {
        self.r.set_id_prefix(prefix);
        self
    }

    /// Whole reads ([`Fixture::read`]) take lines of at most `max` bytes.
    pub fn with_max_line(mut self, max: usize) -> Self {
        self.codecs = [LineCodec::new(max), LineCodec::new(max)];
        self
    }

    /// One line from the agent (scanned, as the bridge's reader does).
    pub fn agent(&mut self, line: &str) {
        self.feed(Side::Agent, frame(line));
    }

    /// One line from the client (scanned, as the bridge's reader does).
    pub fn client(&mut self, line: &str) {
        self.feed(Side::Client, frame(line));
    }

    /// One frame from `from`, scanned first (the fast path where the scan decides).
    pub fn feed(&mut self, from: Side, frame: Frame) {
        self.r
            .handle(Input::Frame(from, frame), self.now, &mut self.out);
        self.settle();
    }

    /// One frame from `from`, not scanned: the router classifies it (the slow path).
    pub fn feed_unscanned(&mut self, from: Side, frame: Frame) {
        let scanned = Scanned { frame, shape: None };
        self.r
            .handle(Input::Scanned(from, scanned), self.now, &mut self.out);
        self.settle();
    }

    /// One read's bytes from `from`, framed into a chunk and scanned as the bridge's reader
    /// does, then routed as a batch (runs of forwarded lines go out as one slice).
    pub fn read(&mut self, from: Side, raw: &[u8]) {
        let i = usize::from(from == Side::Client);
        let mut buf = BytesMut::from(raw);
        let mut pieces = Vec::new();
        let data = self.codecs[i].decode_chunk(&mut buf, raw.len(), false, &mut pieces);
        let batch = Batch::scan(data, &pieces, &mut self.memos[i]);
        self.r
            .handle(Input::Batch(from, batch), self.now, &mut self.out);
        self.settle();
    }

    /// Moves the clock by `by` and runs the timer.
    pub fn tick(&mut self, by: Duration) {
        self.now += by;
        self.r.handle(Input::Timer, self.now, &mut self.out);
    }

    /// Sets the clock to `since_start` after the start and runs the timer.
    pub fn timer_at(&mut self, since_start: Duration) {
        self.now = self.start + since_start;
        self.r.handle(Input::Timer, self.now, &mut self.out);
    }

    /// One line from joined client `client` (`--linger`).
    pub fn joined(&mut self, client: u32, line: &str) {
        let input = Input::JoinedFrame(client, frame(line));
        self.r.handle(input, self.now, &mut self.out);
        self.settle();
    }

    /// Everything queued for joined client `client`, as lines (what is queued for others
    /// stays).
    pub fn take_joined(&mut self, client: u32) -> Vec<String> {
        let (mine, rest) = std::mem::take(&mut self.out.to_joined)
            .into_iter()
            .partition(|(c, _)| *c == client);
        self.out.to_joined = rest;
        mine.into_iter()
            .map(|(_, l): (u32, bytes::Bytes)| String::from_utf8_lossy(&l).into_owned())
            .collect()
    }

    /// The client's stdin ends.
    pub fn client_eof(&mut self) {
        self.r.handle(Input::ClientEof, self.now, &mut self.out);
    }

    /// `--linger`: the client leaves, and the agent is kept.
    pub fn detach(&mut self) {
        self.r
            .handle(Input::ClientDetached, self.now, &mut self.out);
    }

    /// `--linger`: a client attaches (its front did not answer its `initialize`).
    pub fn attach(&mut self) {
        let attached = Input::ClientAttached {
            front_answered: false,
        };
        self.r.handle(attached, self.now, &mut self.out);
    }

    /// `--linger`: a client joins as `client`; whether it was taken.
    pub fn join(&mut self, client: u32) -> bool {
        let joined = Input::ClientJoined {
            client,
            front_answered: false,
        };
        self.r.handle(joined, self.now, &mut self.out).taken()
    }

    /// `--linger`: joined client `client` leaves.
    pub fn leave(&mut self, client: u32) {
        self.r
            .handle(Input::JoinedLeft(client), self.now, &mut self.out);
    }

    /// `questions.answer` through the control server.
    pub fn control_answer(
        &mut self,
        session: &str,
        question_id: &str,
        answers: &Value,
    ) -> Result<Value, ControlError> {
        let call = Control::Answer {
            session,
            question_id,
            answers,
            device: None,
        };
        let input = Input::Control(call);
        self.r.handle(input, self.now, &mut self.out).answered()
    }

    /// `questions.reject` through the control server, with the default reason.
    pub fn control_reject(
        &mut self,
        session: &str,
        question_id: &str,
    ) -> Result<Value, ControlError> {
        let call = Control::Reject {
            session,
            question_id,
            reason: None,
            device: None,
        };
        let input = Input::Control(call);
        self.r.handle(input, self.now, &mut self.out).answered()
    }

    /// The agent is gone, the way `exit` says.
    pub fn agent_gone(&mut self, exit: &AgentExit) {
        let gone = Input::AgentGone {
            exit,
            stopped: None,
        };
        self.r.handle(gone, self.now, &mut self.out);
    }

    /// Everything queued for the agent, as lines (`<close>` for the close).
    pub fn take_agent(&mut self) -> Vec<String> {
        lines(&std::mem::take(&mut self.out.to_agent))
    }

    /// Everything queued for the client, as lines.
    pub fn take_client(&mut self) -> Vec<String> {
        lines(&std::mem::take(&mut self.out.to_client))
    }

    /// The lifecycle events so far, as JSON.
    pub fn take_events(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.out.events)
            .iter()
            .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
            .collect()
    }

    /// The lifecycle events so far.
    pub fn events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.out.events)
    }
}

/// A line as a frame.
pub fn frame(line: &str) -> Frame {
    Frame::Line(Bytes::copy_from_slice(line.as_bytes()))
}

/// The lines in one direction of an outbox, as strings (`<close>` for the close).
pub fn lines(queue: &VecDeque<Out>) -> Vec<String> {
    queue
        .iter()
        .flat_map(|o| match o {
            Out::Line(b) => vec![String::from_utf8_lossy(b).into_owned()],
            Out::Run(b) => String::from_utf8_lossy(b)
                .split_terminator('\n')
                .map(str::to_owned)
                .collect(),
            Out::Close => vec!["<close>".to_owned()],
        })
        .collect()
}

/// Everything queued for one side, as the bytes the writer puts on the wire.
pub fn wire(queue: &VecDeque<Out>) -> Vec<u8> {
    let mut w = Vec::new();
    for o in queue {
        match o {
            Out::Line(l) => {
                w.extend_from_slice(l);
                w.push(b'\n');
            }
            Out::Run(r) => w.extend_from_slice(r),
            Out::Close => w.extend_from_slice(b"<close>"),
        }
    }
    w
}

/// A line parsed (`null` when it is not JSON).
pub fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or(Value::Null)
}

/// Named builders of JSON-RPC lines, compact and in the order written (as the bridge writes
/// them), so an exact comparison reads as what it means. Ids whose exact text matters
/// (`1e2`, `-0`) are written as literals instead.
pub mod msg {
    use serde_json::{json, Value};

    /// A request.
    pub fn request(id: Value, method: &str, params: Value) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    }

    /// The client's `initialize` (id 0) with these `clientCapabilities`.
    pub fn initialize(client_capabilities: Value) -> String {
        let params = json!({"protocolVersion": 1, "clientCapabilities": client_capabilities});
        request(json!(0), "initialize", params)
    }

    /// A notification.
    pub fn notification(method: &str, params: Value) -> String {
        json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
    }

    /// A success response.
    pub fn result(id: Value, result: Value) -> String {
        json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
    }

    /// An error response (no `data`).
    pub fn error(id: Value, code: i64, message: &str) -> String {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
    }

    /// An error response with `data`.
    pub fn error_data(id: Value, code: i64, message: &str, data: Value) -> String {
        json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": code, "message": message, "data": data}})
        .to_string()
    }

    /// `$/cancel_request` for `id`.
    pub fn cancel_request(id: Value) -> String {
        notification("$/cancel_request", json!({ "requestId": id }))
    }

    /// `session/cancel` of `session`.
    pub fn session_cancel(session: &str) -> String {
        notification("session/cancel", json!({ "sessionId": session }))
    }

    /// The agent's question (`_sandboxagent/session/request_question`).
    pub fn ask(id: Value, params: Value) -> String {
        request(id, crate::questions::METHOD, params)
    }

    /// A question's result as the agent gets it: answered with `answers`.
    pub fn answered(id: Value, answers: Value) -> String {
        result(id, json!({"status": "answered", "answers": answers}))
    }

    /// A question's result as the agent gets it: rejected for `reason`.
    pub fn rejected(id: Value, reason: &str) -> String {
        result(id, json!({"status": "rejected", "reason": reason}))
    }
}
