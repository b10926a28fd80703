//! A model-free checker for the sans-IO [`Router`]: it plays both peers, feeds the router one
//! message (or timer tick, EOF, exit) at a time, drains the [`Outbox`] after every step and
//! checks the reliability invariants of `docs/RELIABILITY.md` on what came out.
//!
//! Shared by `tests/it/router_props.rs` (proptest generates the [`Script`]),
//! `tests/it/regressions.rs` and `fuzz/fuzz_targets/router.rs` (libFuzzer bytes decoded by
//! [`Script::decode`]).
//!
//! What is checked, after every step:
//! - every output line is valid JSON; nothing but the agent's stdin ever gets `Close`;
//! - a message the bridge must not rewrite comes out byte-identical, once, in the right
//!   direction (and `session/cancel` before the rejections it causes);
//! - a response the bridge makes names a request that is waiting for one, in the exact id
//!   text the requester used: no request gets two responses, no response is invented;
//! - `$/cancel_request` made by the bridge names a request the client is showing, once;
//! - the client never sees two open requests under one id;
//! - the router's bookkeeping matches what is open on the wire (pending questions plus
//!   tracked agent requests = agent requests without a response; tracked client requests =
//!   client requests without a response) and no deadline is left in the past;
//!
//! and at the end:
//! - client EOF: every question and every permission/elicitation request of the agent has
//!   its one response before the agent's stdin is closed, and the registry is empty;
//! - agent exit: every client request has exactly one response, every request the client
//!   still shows is withdrawn, and the registry and both in-flight maps are empty.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use acp_question_bridge::codec::Frame;
use acp_question_bridge::envelope::{classify, Kind};
use acp_question_bridge::questions::Dialect;
use acp_question_bridge::router::fixture::{lines, Fixture};
use acp_question_bridge::router::{AgentExit, Out, Outbox, RouterConfig, Side};
use bytes::Bytes;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// The question method.
pub const QUESTION: &str = "_sandboxagent/session/request_question";

/// Router settings drawn by the generator.
#[derive(Debug, Clone)]
pub struct Setup {
    /// 0 = auto, 1 = extension, 2 = elicitation, 3 = permission.
    pub dialect: u8,
    pub advertise_elicitation: bool,
    /// `--question-timeout` in ms (None = no flag).
    pub question_timeout_ms: Option<u32>,
    pub max_pending_per_session: usize,
}

/// One step of a script.
#[derive(Debug, Clone)]
pub enum Op {
    /// The client's `initialize`: 0 plain, 1 forms, 2 native extension, 3 native + forms.
    Init { caps: u8, id: u8 },
    /// The agent asks a question (`form` picks valid/invalid shapes).
    Ask {
        session: u8,
        qid: u8,
        form: u8,
        timeout_ms: Option<u64>,
        id: u8,
    },
    /// The agent's own `session/request_permission`.
    AgentPermission { session: u8, id: u8 },
    /// The agent's own `elicitation/create` (form with one choice, several fields, or URL).
    AgentElicit { session: u8, form: u8, id: u8 },
    /// Any other agent request (`fs/read_text_file`).
    AgentPlain { session: u8, id: u8 },
    /// A `session/update` notification.
    AgentNote,
    /// The agent's `$/cancel_request` for one of its open requests (or an unknown id).
    AgentCancel { pick: u8 },
    /// The agent answers a request it received (result or error).
    AgentRespond { pick: u8, error: bool },
    /// Garbage from the agent.
    AgentBad { kind: u8 },
    /// A client request (`session/prompt`, ...).
    ClientRequest { session: u8, id: u8 },
    /// A client notification.
    ClientNote,
    /// `session/cancel`.
    ClientCancel { session: u8 },
    /// The client answers a request it was shown (open, or already over: late/duplicate).
    ClientAnswer { pick: u8, kind: u8 },
    /// Garbage from the client.
    ClientBad { kind: u8 },
    /// Time passes; the timer runs.
    Tick { ms: u32 },
    /// Time moves exactly to the next deadline (if any); the timer runs.
    TickToDeadline,
}

/// How a script ends.
#[derive(Debug, Clone, Copy)]
pub enum End {
    ClientEof,
    AgentGone,
    ClientEofThenAgentGone,
}

#[derive(Debug, Clone)]
pub struct Script {
    pub setup: Setup,
    pub ops: Vec<Op>,
    pub end: End,
}

/// Reads bytes as a script (the fuzz target's decoder). Any input is a valid script.
struct Bytes_<'a>(&'a [u8]);

impl Bytes_<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), 0, 0])
    }
}

impl Script {
    pub fn decode(data: &[u8]) -> Script {
        let mut b = Bytes_(data);
        let flags = b.u8();
        let setup = Setup {
            dialect: flags & 3,
            advertise_elicitation: flags & 4 != 0,
            question_timeout_ms: (flags & 8 != 0).then(|| 1 + b.u32() % 5000),
            max_pending_per_session: 1 + usize::from(b.u8() % 4),
        };
        let end = match b.u8() % 3 {
            0 => End::ClientEof,
            1 => End::AgentGone,
            _ => End::ClientEofThenAgentGone,
        };
        let mut ops = Vec::new();
        while !b.0.is_empty() && ops.len() < 150 {
            let op = match b.u8() % 16 {
                0 => Op::Init {
                    caps: b.u8(),
                    id: b.u8(),
                },
                1 => Op::Ask {
                    session: b.u8(),
                    qid: b.u8(),
                    form: b.u8(),
                    timeout_ms: {
                        let t = b.u32();
                        match t % 8 {
                            0 | 1 => None,
                            // Any positive integer the agent may send.
                            7 => Some(u64::from(t) << (b.u8() % 40)),
                            _ => Some(1 + u64::from(t) % 4000),
                        }
                    },
                    id: b.u8(),
                },
                2 => Op::AgentPermission {
                    session: b.u8(),
                    id: b.u8(),
                },
                3 => Op::AgentElicit {
                    session: b.u8(),
                    form: b.u8(),
                    id: b.u8(),
                },
                4 => Op::AgentPlain {
                    session: b.u8(),
                    id: b.u8(),
                },
                5 => Op::AgentNote,
                6 => Op::AgentCancel { pick: b.u8() },
                7 => Op::AgentRespond {
                    pick: b.u8(),
                    error: b.u8() & 1 == 1,
                },
                8 => Op::AgentBad { kind: b.u8() },
                9 => Op::ClientRequest {
                    session: b.u8(),
                    id: b.u8(),
                },
                10 => Op::ClientNote,
                11 => Op::ClientCancel { session: b.u8() },
                12 => Op::ClientAnswer {
                    pick: b.u8(),
                    kind: b.u8(),
                },
                13 => Op::ClientBad { kind: b.u8() },
                14 => Op::Tick { ms: b.u32() % 3000 },
                _ => Op::TickToDeadline,
            };
            ops.push(op);
        }
        Script { setup, ops, end }
    }

    /// Runs the script; `Err` describes the first violated invariant and the steps so far.
    pub fn run(&self, strict: Strictness) -> Result<(), String> {
        let mut h = Harness::new(&self.setup, strict);
        for op in &self.ops {
            if h.agent_gone {
                break;
            }
            h.apply(op).map_err(|e| h.report(&e))?;
        }
        match self.end {
            End::ClientEof => h.client_eof().map_err(|e| h.report(&e))?,
            End::AgentGone => h.agent_gone_now().map_err(|e| h.report(&e))?,
            End::ClientEofThenAgentGone => {
                h.client_eof().map_err(|e| h.report(&e))?;
                h.agent_gone_now().map_err(|e| h.report(&e))?;
            }
        }
        Ok(())
    }
}

/// Which of the stricter checks to apply (see `docs/RELIABILITY.md`, "Findings"): each
/// flag is an invariant the router did not keep before the fix of a finding. The tests
/// and the fuzz target run with [`Strictness::ALL`]; [`Strictness::KEPT`] is what held
/// before the fixes (it let the campaign go on exploring while they were open).
#[derive(Debug, Clone, Copy)]
pub struct Strictness {
    /// Ids such as `1e2`, `-0` or `18446744073709551616` must keep their exact text in
    /// the responses the bridge makes.
    pub odd_ids: bool,
    /// On client EOF every request of the agent (not only questions, permission requests
    /// and elicitations) gets a response before its stdin closes.
    pub plain_requests_on_eof: bool,
    /// A duplicate response from the client to a plain agent request is not forwarded a
    /// second time.
    pub duplicate_plain_answers: bool,
    /// Questions may carry any positive `timeoutMs` (up to `u64::MAX`), not only sane ones.
    pub huge_timeouts: bool,
    /// Invalid UTF-8 inside a string makes a line "not JSON" (`-32700`, never forwarded).
    pub invalid_utf8: bool,
}

impl Strictness {
    /// Every invariant as written in `docs/RELIABILITY.md`.
    pub const ALL: Strictness = Strictness {
        odd_ids: true,
        plain_requests_on_eof: true,
        duplicate_plain_answers: true,
        huge_timeouts: true,
        invalid_utf8: true,
    };
    /// The invariants the router kept before the fixes (the findings excluded).
    pub const KEPT: Strictness = Strictness {
        odd_ids: false,
        plain_requests_on_eof: false,
        duplicate_plain_answers: false,
        huge_timeouts: false,
        invalid_utf8: false,
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AgentKind {
    Question,
    Permission,
    Elicitation,
    Plain,
    /// An invalid message carrying an id: the bridge answers it `-32600`.
    Bad,
}

#[derive(Debug, Clone)]
struct Shown {
    method: String,
    params: Value,
    /// The agent's request reached the client verbatim (not a question): the client's
    /// answer must then be forwarded verbatim too.
    verbatim: bool,
    /// The agent withdrew it with its own `$/cancel_request`.
    agent_cancelled: bool,
}

/// What a peer sees of the conversation, and the checks.
pub struct Harness {
    /// The router under test, fed every frame scanned (as the bridge's readers do).
    pub fx: Fixture,
    /// The same router fed every frame unscanned (the full classification path): its
    /// output must be identical, so the fast path changes nothing.
    twin: Fixture,
    strict: Strictness,
    /// Agent requests (exact id text) waiting for their one response.
    agent_open: HashMap<String, AgentKind>,
    /// Agent requests that got their response.
    agent_done: HashSet<String>,
    /// Client requests waiting for their one response (method).
    client_open: HashMap<String, String>,
    client_done: HashSet<String>,
    /// Requests forwarded to the agent that it has not answered yet (id, method).
    agent_inbox: Vec<(String, String)>,
    /// Requests the client is showing (exact id text as the client sees it).
    shown: BTreeMap<String, Shown>,
    /// Every id the client was ever shown, for late and duplicate answers.
    shown_ever: Vec<(String, Shown)>,
    client_eof: bool,
    pub agent_gone: bool,
    agent_stdin_closed: bool,
    fresh: u64,
    /// What happened so far (kept cheap: formatted only for a report).
    steps: Vec<Step>,
}

/// One entry of the step log.
enum Step {
    In(Side, Frame),
    Out(&'static str, Out),
    Note(String),
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::In(side, Frame::Line(b)) => {
                let who = if *side == Side::Client {
                    "client>"
                } else {
                    "agent> "
                };
                write!(f, "{who} {}", String::from_utf8_lossy(b))
            }
            Step::In(_, Frame::TooLong { bytes }) => write!(f, "<too long: {bytes}>"),
            Step::Out(to, Out::Line(l)) => write!(f, "  ->{to} {}", String::from_utf8_lossy(l)),
            Step::Out(to, Out::Run(r)) => {
                write!(f, "  ->{to} <run> {}", String::from_utf8_lossy(r))
            }
            Step::Out(to, Out::Close) => write!(f, "  ->{to} <close>"),
            Step::Note(n) => f.write_str(n),
        }
    }
}

fn agent_id_text(id: u8, fresh: &mut u64) -> String {
    match id % 16 {
        0..=5 => (id % 6).to_string(),
        6..=9 => format!("\"a{}\"", id % 4),
        10 => "1e2".into(),
        11 => "-0".into(),
        12 => "18446744073709551616".into(),
        13 => "\"acp-question-bridge:0000000000000000:1\"".into(),
        _ => {
            *fresh += 1;
            format!("{}", 1000 + *fresh)
        }
    }
}

/// JSON text: UTF-8 (serde_json does not check strings it skips) and well-formed.
fn is_json(l: &[u8]) -> bool {
    std::str::from_utf8(l).is_ok_and(|s| serde_json::from_str::<IgnoredAny>(s).is_ok())
}

fn is_odd_id(id: &str) -> bool {
    serde_json::from_str::<Value>(id).is_ok_and(|v| {
        let canonical = v.to_string();
        canonical != id
    })
}

impl Harness {
    pub fn new(s: &Setup, strict: Strictness) -> Self {
        let cfg = RouterConfig {
            question_timeout: s
                .question_timeout_ms
                .map(|ms| Duration::from_millis(ms.into())),
            max_pending_per_session: s.max_pending_per_session,
            client_dialect: match s.dialect & 3 {
                0 => None,
                1 => Some(Dialect::Extension),
                2 => Some(Dialect::Elicitation),
                _ => Some(Dialect::Permission),
            },
            advertise_elicitation: s.advertise_elicitation,
            // The checker pairs every withdrawal with the id the client was shown, which
            // `$/cancel_request` names; the default (the chat is told instead, as real
            // clients need) is checked by the router's and the process tests.
            client_cancel_requests: true,
            ..RouterConfig::default()
        };
        let fx = Fixture::new(cfg.clone()).with_id_prefix("bridge:");
        let twin = Fixture::new(cfg).with_id_prefix("bridge:");
        Harness {
            fx,
            twin,
            strict,
            agent_open: HashMap::new(),
            agent_done: HashSet::new(),
            client_open: HashMap::new(),
            client_done: HashSet::new(),
            agent_inbox: Vec::new(),
            shown: BTreeMap::new(),
            shown_ever: Vec::new(),
            client_eof: false,
            agent_gone: false,
            agent_stdin_closed: false,
            fresh: 0,
            steps: Vec::new(),
        }
    }

    /// Runs `f` on the router and on its twin; their outputs must agree.
    fn both(&mut self, f: impl Fn(&mut Fixture)) -> Result<Outbox, String> {
        f(&mut self.fx);
        f(&mut self.twin);
        let (out, twin) = self.take_both();
        same(&out, &twin)?;
        Ok(out)
    }

    /// What the router and its twin wrote since the last step.
    fn take_both(&mut self) -> (Outbox, Outbox) {
        (
            std::mem::take(&mut self.fx.out),
            std::mem::take(&mut self.twin.out),
        )
    }

    fn report(&self, e: &str) -> String {
        let skip = self.steps.len().saturating_sub(60);
        let mut s = format!("{e}\n--- last steps ---\n");
        for l in &self.steps[skip..] {
            s.push_str(&l.to_string());
            s.push('\n');
        }
        s
    }

    /// An agent id that is not waiting for a response (the agent never reuses an id in
    /// flight: that would be its own protocol error).
    fn agent_id(&mut self, id: u8) -> String {
        let mut text = agent_id_text(id, &mut self.fresh);
        if !self.strict.odd_ids && is_odd_id(&text) {
            text = agent_id_text(255, &mut self.fresh);
        }
        while self.agent_open.contains_key(&text) {
            text = agent_id_text(255, &mut self.fresh);
        }
        text
    }

    fn client_id(&mut self, id: u8) -> String {
        let mut text = match id % 8 {
            0..=3 => (id % 4).to_string(),
            4 | 5 => format!("\"c{}\"", id % 2),
            6 if self.strict.odd_ids => "1e2".into(),
            _ => {
                self.fresh += 1;
                format!("{}", 5000 + self.fresh)
            }
        };
        while self.client_open.contains_key(&text) {
            self.fresh += 1;
            text = format!("{}", 5000 + self.fresh);
        }
        text
    }

    fn line(v: &str) -> Bytes {
        Bytes::copy_from_slice(v.as_bytes())
    }

    pub fn apply(&mut self, op: &Op) -> Result<(), String> {
        if self.agent_gone {
            return Ok(());
        }
        let client_op = matches!(
            op,
            Op::Init { .. }
                | Op::ClientRequest { .. }
                | Op::ClientNote
                | Op::ClientCancel { .. }
                | Op::ClientAnswer { .. }
                | Op::ClientBad { .. }
        );
        if client_op && self.client_eof {
            return Ok(()); // the shell reads nothing from the client after EOF
        }
        let mut expect: Option<(Side, Bytes)> = None;
        let mut first_to_agent = false;
        let mut client_bad_parse = false;
        let input: (Side, Frame);
        match op {
            Op::Init { caps, id } => {
                let id = self.client_id(*id);
                let caps = match caps % 4 {
                    0 => json!({}),
                    1 => json!({"elicitation":{"form":{}}}),
                    2 => {
                        json!({"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}})
                    }
                    _ => {
                        json!({"elicitation":{"form":{}},"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}})
                    }
                };
                let l = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":1,"clientCapabilities":{caps}}}}}"#
                );
                self.client_open.insert(id, "initialize".into());
                input = (Side::Client, Frame::Line(Self::line(&l)));
            }
            Op::Ask {
                session,
                qid,
                form,
                timeout_ms,
                id,
            } => {
                let id = self.agent_id(*id);
                let s = format!("s{}", session % 4);
                let q = format!("q{}", qid % 3);
                let mut params = match form % 8 {
                    0 | 1 => {
                        json!({"sessionId":s,"questionId":q,"prompt":"Which?","options":[["a","A"],["b","B"]]})
                    }
                    2 => {
                        json!({"sessionId":s,"questionId":q,"prompt":"Pick","options":["x","y","z"]})
                    }
                    3 => json!({"sessionId":s,"questionId":q,"questions":[
                        {"question":"DB?","header":"DB","options":[{"label":"Postgres"},{"label":"SQLite"}],"custom":true},
                        {"question":"Features?","options":["auth","billing"],"multiple":true},
                        {"question":"Notes?"}]}),
                    4 => json!({"sessionId":s,"questionId":q,"prompt":"Free text?"}),
                    5 => {
                        json!({"sessionId":s,"questionId":q,"questions":[{"question":"One","options":[{"value":"v","label":"L","description":"d"}]}]})
                    }
                    6 => {
                        json!({"sessionId":s,"questionId":q,"prompt":"bad","options":[{"value":1,"label":"x"}]})
                    }
                    _ => json!({"questionId":q,"prompt":"no session"}),
                };
                if let Some(t) = timeout_ms {
                    let t = if self.strict.huge_timeouts {
                        (*t).max(1)
                    } else {
                        1 + *t % 3_600_000
                    };
                    params["timeoutMs"] = json!(t);
                }
                let l = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"{QUESTION}","params":{params}}}"#
                );
                self.agent_open.insert(id, AgentKind::Question);
                input = (Side::Agent, Frame::Line(Self::line(&l)));
            }
            Op::AgentPermission { session, id } => {
                let id = self.agent_id(*id);
                let l = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"session/request_permission","params":{{"sessionId":"s{}","toolCall":{{"toolCallId":"t-{}"}},"options":[{{"optionId":"allow","name":"Allow","kind":"allow_once"}},{{"optionId":"reject","name":"Reject","kind":"reject_once"}}]}}}}"#,
                    session % 4,
                    id.trim_matches('"')
                );
                self.agent_open.insert(id, AgentKind::Permission);
                let b = Self::line(&l);
                expect = Some((Side::Client, b.clone()));
                input = (Side::Agent, Frame::Line(b));
            }
            Op::AgentElicit { session, form, id } => {
                let id = self.agent_id(*id);
                let s = format!("s{}", session % 4);
                let params = match form % 4 {
                    0 => json!({"sessionId":s,"mode":"form","message":"Pick a color",
                        "requestedSchema":{"type":"object","properties":{"color":{"type":"string","enum":["red","green"]}}}}),
                    1 => json!({"sessionId":s,"mode":"form","message":"Configure",
                        "requestedSchema":{"type":"object","properties":{"name":{"type":"string"},"ok":{"type":"boolean"},"n":{"type":"integer"}}}}),
                    2 => {
                        json!({"sessionId":s,"mode":"url","message":"Open","url":"https://example.com"})
                    }
                    _ => {
                        json!({"mode":"form","message":"no session","requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}})
                    }
                };
                let l = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"elicitation/create","params":{params}}}"#
                );
                self.agent_open.insert(id, AgentKind::Elicitation);
                input = (Side::Agent, Frame::Line(Self::line(&l)));
            }
            Op::AgentPlain { session, id } => {
                let id = self.agent_id(*id);
                let l = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"fs/read_text_file","params":{{"sessionId":"s{}","path":"/x","n":1e400}}}}"#,
                    session % 4
                );
                self.agent_open.insert(id, AgentKind::Plain);
                let b = Self::line(&l);
                expect = Some((Side::Client, b.clone()));
                input = (Side::Agent, Frame::Line(b));
            }
            Op::AgentNote => {
                self.fresh += 1;
                let l = format!(
                    r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s0","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"n{} \u00e9"}}}}}}}}"#,
                    self.fresh
                );
                let b = Self::line(&l);
                expect = Some((Side::Client, b.clone()));
                input = (Side::Agent, Frame::Line(b));
            }
            Op::AgentCancel { pick } => {
                let mut open: Vec<&String> = self.agent_open.keys().collect();
                open.sort();
                let rid = if open.is_empty() || pick % 5 == 4 {
                    "424242".to_owned()
                } else {
                    open[usize::from(*pick) % open.len()].clone()
                };
                let l = format!(
                    r#"{{"jsonrpc":"2.0","method":"$/cancel_request","params":{{"requestId":{rid}}}}}"#
                );
                input = (Side::Agent, Frame::Line(Self::line(&l)));
            }
            Op::AgentRespond { pick, error } => {
                if self.agent_inbox.is_empty() {
                    return Ok(());
                }
                let (id, method) = self
                    .agent_inbox
                    .remove(usize::from(*pick) % self.agent_inbox.len());
                let l = if *error {
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32000,"message":"nope"}}}}"#
                    )
                } else if method == "initialize" {
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":1,"agentCapabilities":{{"loadSession":true}}}}}}"#
                    )
                } else {
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn","big":123456789012345678901234567890}}}}"#
                    )
                };
                let b = Self::line(&l);
                if method != "initialize" || *error {
                    expect = Some((Side::Client, b.clone()));
                }
                input = (Side::Agent, Frame::Line(b));
            }
            Op::AgentBad { kind } => {
                let frame = match kind % 6 {
                    0 => Frame::Line(Self::line("Loading model...")),
                    1 => {
                        let id = self.agent_id(255);
                        self.agent_open.insert(id.clone(), AgentKind::Bad);
                        Frame::Line(Self::line(&format!(
                            r#"{{"jsonrpc":"1.0","id":{id},"method":"x"}}"#
                        )))
                    }
                    2 => Frame::Line(Self::line(
                        r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"}}"#,
                    )),
                    3 => {
                        let b = Self::line("[1,2]");
                        expect = Some((Side::Client, b.clone()));
                        Frame::Line(b)
                    }
                    4 => Frame::TooLong { bytes: 1 << 30 },
                    _ => Frame::Line(Bytes::from_static(b"\xff\xfe{\"a\":1}")),
                };
                input = (Side::Agent, frame);
            }
            Op::ClientRequest { session, id } => {
                let id = self.client_id(*id);
                let l = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s{}","prompt":[{{"type":"text","text":"hi"}}],"x":1e400}}}}"#,
                    session % 4
                );
                self.client_open.insert(id, "session/prompt".into());
                let b = Self::line(&l);
                expect = Some((Side::Agent, b.clone()));
                input = (Side::Client, Frame::Line(b));
            }
            Op::ClientNote => {
                let b = Self::line(
                    r#"{"jsonrpc":"2.0","method":"_vendor/ping","params":{"t":"\u00e9🙂"}}"#,
                );
                expect = Some((Side::Agent, b.clone()));
                input = (Side::Client, Frame::Line(b));
            }
            Op::ClientCancel { session } => {
                let b = Self::line(&format!(
                    r#"{{"jsonrpc":"2.0","method":"session/cancel","params":{{"sessionId":"s{}"}}}}"#,
                    session % 4
                ));
                expect = Some((Side::Agent, b.clone()));
                first_to_agent = true;
                input = (Side::Client, Frame::Line(b));
            }
            Op::ClientAnswer { pick, kind } => {
                let late = kind & 0x80 != 0 || self.shown.is_empty();
                let (id, shown) = if late {
                    // A second answer to a request forwarded verbatim is forwarded again
                    // (finding `duplicate_plain_answers`); only the strict run sends one.
                    let past: Vec<&(String, Shown)> = self
                        .shown_ever
                        .iter()
                        .filter(|(_, s)| self.strict.duplicate_plain_answers || !s.verbatim)
                        .collect();
                    if past.is_empty() {
                        return Ok(());
                    }
                    past[usize::from(*pick) % past.len()].clone()
                } else {
                    let n = usize::from(*pick) % self.shown.len();
                    let (id, s) = self.shown.iter().nth(n).expect("n < len");
                    (id.clone(), s.clone())
                };
                // An id in use again names the request open under it now.
                let (still_open, shown) = match self.shown.remove(&id) {
                    Some(current) => (true, current),
                    None => (false, shown),
                };
                let result = answer(&shown, kind % 8);
                let l = match result {
                    Ok(r) => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{r}}}"#),
                    Err((code, msg)) => format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":"{msg}"}}}}"#
                    ),
                };
                let b = Self::line(&l);
                // An answer to a request the agent sent verbatim goes back verbatim.
                if still_open && shown.verbatim && self.agent_open.contains_key(&id) {
                    expect = Some((Side::Agent, b.clone()));
                }
                input = (Side::Client, Frame::Line(b));
            }
            Op::ClientBad { kind } => {
                let kind = if self.strict.invalid_utf8 {
                    kind % 7
                } else {
                    kind % 6
                };
                let frame = match kind {
                    0 => {
                        client_bad_parse = true;
                        Frame::Line(Self::line("not json at all"))
                    }
                    6 => {
                        // Invalid UTF-8 in a member the envelope does not read.
                        client_bad_parse = true;
                        Frame::Line(Bytes::from_static(
                            b"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{},\"extra\":\"\xff\"}",
                        ))
                    }
                    1 => {
                        let id = self.client_id(255);
                        self.client_open.insert(id.clone(), "bad".into());
                        Frame::Line(Self::line(&format!(
                            r#"{{"jsonrpc":"2.0","id":{id},"method":7}}"#
                        )))
                    }
                    2 => Frame::Line(Self::line(
                        r#"{"jsonrpc":"2.0","error":{"code":1,"message":"no id"}}"#,
                    )),
                    3 => {
                        let b = Self::line(r#"[{"jsonrpc":"2.0","method":"x"}]"#);
                        expect = Some((Side::Agent, b.clone()));
                        Frame::Line(b)
                    }
                    4 => Frame::TooLong { bytes: 7 },
                    _ => {
                        client_bad_parse = true;
                        Frame::Line(Bytes::from_static(
                            b"{\"jsonrpc\":\"2.0\",\"x\":\"\xc3\x28\"}",
                        ))
                    }
                };
                input = (Side::Client, frame);
            }
            Op::TickToDeadline => {
                let Some(d) = self.fx.r.next_deadline() else {
                    return Ok(());
                };
                let by = d.saturating_duration_since(self.fx.now);
                self.steps
                    .push(Step::Note("tick to the next deadline".into()));
                let out = self.both(|f| f.tick(by))?;
                return self.check(out, None, None, false, false);
            }
            Op::Tick { ms } => {
                self.steps.push(Step::Note(format!("tick +{ms}ms")));
                let out = self.both(|f| f.tick(Duration::from_millis((*ms).into())))?;
                return self.check(out, None, None, false, false);
            }
        }
        let (side, frame) = input;
        self.steps.push(Step::In(side, frame.clone()));
        let input_line = match &frame {
            Frame::Line(b) => Some((side, b.clone())),
            Frame::TooLong { .. } => None,
        };
        self.fx.feed(side, frame.clone());
        self.twin.feed_unscanned(side, frame);
        let (out, twin) = self.take_both();
        same(&out, &twin)?;
        let (a, b) = (&self.fx.r.counters, &self.twin.r.counters);
        if format!("{a:?}") != format!("{b:?}") {
            return Err(format!("counters differ: {a:?} vs {b:?}"));
        }
        self.check(out, input_line, expect, first_to_agent, client_bad_parse)
    }

    /// Drains `out` and checks it; `input` is the line just handled.
    fn check(
        &mut self,
        out: Outbox,
        input: Option<(Side, Bytes)>,
        expect: Option<(Side, Bytes)>,
        first_to_agent: bool,
        client_bad_parse: bool,
    ) -> Result<(), String> {
        let (to_agent, to_client) = (out.to_agent, out.to_client);
        for o in &to_agent {
            self.steps.push(Step::Out("agent ", o.clone()));
        }
        for o in &to_client {
            self.steps.push(Step::Out("client", o.clone()));
        }
        // Invariant 1: verbatim forwarding.
        if let Some((side, bytes)) = &expect {
            let q = if *side == Side::Agent {
                &to_agent
            } else {
                &to_client
            };
            let n = q
                .iter()
                .filter(|o| matches!(o, Out::Line(l) if l == bytes))
                .count();
            if n != 1 {
                return Err(format!(
                    "message not forwarded byte-identical exactly once ({n} copies)"
                ));
            }
            if first_to_agent && !matches!(to_agent.front(), Some(Out::Line(l)) if l == bytes) {
                return Err("session/cancel is not the first message to the agent".into());
            }
        }
        let forwarded =
            |side: Side, l: &Bytes| input.as_ref().is_some_and(|(s, b)| *s == side && b == l);
        let mut parse_errors = 0;
        for o in to_agent.iter() {
            let l = match o {
                Out::Close => {
                    if !self.client_eof {
                        return Err("agent stdin closed before client EOF".into());
                    }
                    self.agent_stdin_closed = true;
                    continue;
                }
                Out::Line(l) => l,
                Out::Run(_) => return Err("a run from a single frame".into()),
            };
            if self.agent_stdin_closed {
                continue; // after Close nothing reaches the agent; nothing is owed either
            }
            if !is_json(l) {
                return Err(format!("invalid JSON to the agent: {l:?}"));
            }
            let fwd = forwarded(Side::Client, l);
            match classify(l) {
                Kind::Response { id, .. } => {
                    let id = id.as_json().to_owned();
                    if self.agent_open.remove(&id).is_some() {
                        self.agent_done.insert(id);
                    } else if !fwd {
                        return Err(format!(
                            "bridge-made response to the agent for id {id}, which has no request waiting (duplicate or wrong id text)"
                        ));
                    } else if self.agent_done.contains(&id) && self.strict.duplicate_plain_answers {
                        return Err(format!(
                            "the agent got a second response for its request {id} (a duplicate client answer was forwarded)"
                        ));
                    }
                }
                Kind::Request { id, method, .. } => {
                    // Only the client's `initialize` is rewritten (capability merge).
                    let merged_init = method == "initialize"
                        && input.as_ref().is_some_and(|(s, b)| {
                            *s == Side::Client
                                && matches!(classify(b), Kind::Request { id: i, method: m, .. } if i == id && m == "initialize")
                        });
                    if !fwd && !merged_init {
                        return Err("the bridge made a request to the agent".into());
                    }
                    self.agent_inbox
                        .push((id.as_json().to_owned(), method.into_owned()));
                }
                _ => {
                    if !fwd {
                        return Err(format!(
                            "the bridge made a non-response message for the agent: {}",
                            String::from_utf8_lossy(l)
                        ));
                    }
                }
            }
        }
        for o in to_client.iter() {
            let Out::Line(l) = o else {
                return Err(format!("not a line queued for the client: {o:?}"));
            };
            if !is_json(l) {
                return Err(format!("invalid JSON to the client: {l:?}"));
            }
            let fwd = forwarded(Side::Agent, l);
            let kind = classify(l);
            match kind {
                Kind::Response { id, .. } => {
                    let id = id.as_json().to_owned();
                    if id == "null" && !fwd {
                        if !client_bad_parse || parse_errors > 0 {
                            return Err("unexpected response with id null".into());
                        }
                        let code = serde_json::from_slice::<Value>(l)
                            .ok()
                            .and_then(|v| v.pointer("/error/code").and_then(Value::as_i64));
                        if self.strict.invalid_utf8 && code != Some(-32700) {
                            return Err(format!(
                                "bytes that are not JSON answered {code:?}, not -32700"
                            ));
                        }
                        parse_errors += 1;
                        continue;
                    }
                    if self.client_open.remove(&id).is_some() {
                        self.client_done.insert(id);
                    } else if !fwd {
                        return Err(format!(
                            "bridge-made response to the client for id {id}, which has no request waiting (duplicate or wrong id text)"
                        ));
                    }
                }
                Kind::Request { id, method, params } => {
                    let id = id.as_json().to_owned();
                    let params: Value = params
                        .and_then(|p| serde_json::from_str(p.get()).ok())
                        .unwrap_or(Value::Null);
                    let shown = Shown {
                        agent_cancelled: false,
                        verbatim: fwd && method != QUESTION,
                        method: method.into_owned(),
                        params,
                    };
                    let before = self.shown.insert(id.clone(), shown.clone());
                    if before.is_some_and(|b| !b.agent_cancelled) && !self.client_eof {
                        return Err(format!(
                            "the client was shown a second request under id {id} while the first is open"
                        ));
                    }
                    self.shown_ever.push((id, shown));
                    if self.shown_ever.len() > 64 {
                        self.shown_ever.remove(0);
                    }
                }
                Kind::Notification { method, params } if method == "$/cancel_request" => {
                    let rid = params
                        .and_then(|p| {
                            serde_json::from_str::<HashMap<String, Box<RawValue>>>(p.get()).ok()
                        })
                        .and_then(|m| m.get("requestId").map(|r| r.get().to_owned()))
                        .unwrap_or_default();
                    if fwd {
                        // The agent's own cancel, forwarded: the client closes the request,
                        // though the bridge may still withdraw it once more later.
                        if let Some(s) = self.shown.get_mut(&rid) {
                            s.agent_cancelled = true;
                        }
                        continue;
                    }
                    if self.shown.remove(&rid).is_none() {
                        return Err(format!(
                            "bridge-made $/cancel_request for {rid}, which the client is not showing (never shown, answered or already withdrawn)"
                        ));
                    }
                }
                Kind::Notification { .. } | Kind::Batch => {}
                other => {
                    if !fwd {
                        return Err(format!("the bridge made an invalid message: {other:?}"));
                    }
                }
            }
        }
        if client_bad_parse && parse_errors != 1 {
            return Err("client garbage did not get exactly one -32700".into());
        }
        self.check_state()
    }

    fn check_state(&self) -> Result<(), String> {
        if self.agent_gone {
            return Ok(());
        }
        if let Some(d) = self.fx.r.next_deadline() {
            if d <= self.fx.now {
                return Err("a deadline in the past is still pending after the timer ran".into());
            }
        }
        if !self.agent_stdin_closed {
            let tracked = self.fx.r.questions().len() + self.fx.r.in_flight(Side::Agent).len();
            if tracked != self.agent_open.len() {
                return Err(format!(
                    "router tracks {tracked} agent requests ({} questions + {} in flight), but {} are waiting for a response: {:?}",
                    self.fx.r.questions().len(),
                    self.fx.r.in_flight(Side::Agent).len(),
                    self.agent_open.len(),
                    self.agent_open
                ));
            }
        }
        if self.fx.r.in_flight(Side::Client).len() != self.client_open.len() {
            return Err(format!(
                "router tracks {} client requests, {} are waiting",
                self.fx.r.in_flight(Side::Client).len(),
                self.client_open.len()
            ));
        }
        Ok(())
    }

    pub fn client_eof(&mut self) -> Result<(), String> {
        if self.client_eof || self.agent_gone {
            return Ok(());
        }
        self.client_eof = true;
        self.steps.push(Step::Note("client EOF".into()));
        let out = self.both(Fixture::client_eof)?;
        if !matches!(out.to_agent.back(), Some(Out::Close)) {
            return Err("client EOF did not end with Close for the agent".into());
        }
        self.check(out, None, None, false, false)?;
        if !self.fx.r.questions().is_empty() {
            return Err("questions still pending after client EOF".into());
        }
        let owed: Vec<(&String, &AgentKind)> = self
            .agent_open
            .iter()
            .filter(|(_, k)| self.strict.plain_requests_on_eof || **k != AgentKind::Plain)
            .collect();
        if !owed.is_empty() {
            return Err(format!(
                "agent requests without a response when its stdin closed: {owed:?}"
            ));
        }
        Ok(())
    }

    pub fn agent_gone_now(&mut self) -> Result<(), String> {
        self.steps.push(Step::Note("agent gone".into()));
        let exit = AgentExit {
            code: None,
            signal: Some(9),
            stderr_tail: "tail\n".into(),
        };
        let out = self.both(|f| f.agent_gone(&exit))?;
        if !out.to_agent.is_empty() {
            return Err("lines for a gone agent".into());
        }
        self.agent_stdin_closed = true; // nothing can reach it any more
        self.check(out, None, None, false, false)?;
        // A second call changes nothing.
        self.fx.agent_gone(&exit);
        let again = std::mem::take(&mut self.fx.out);
        if !again.to_client.is_empty() || !again.to_agent.is_empty() {
            return Err("on_agent_gone twice produced output twice".into());
        }
        self.agent_gone = true;
        if !self.client_open.is_empty() {
            return Err(format!(
                "client requests without a response after agent exit: {:?}",
                self.client_open
            ));
        }
        if !self.fx.r.questions().is_empty()
            || !self.fx.r.in_flight(Side::Client).is_empty()
            || !self.fx.r.in_flight(Side::Agent).is_empty()
        {
            return Err("router state not empty after agent exit".into());
        }
        let left: Vec<&String> = self
            .shown
            .iter()
            .filter(|(_, s)| !s.agent_cancelled)
            .map(|(id, _)| id)
            .collect();
        if !self.client_eof && !left.is_empty() {
            return Err(format!(
                "requests the client still shows after agent exit (never withdrawn): {left:?}"
            ));
        }
        Ok(())
    }
}

/// The client's response to a request it was shown: `kind` 0-2 a valid answer, 3 a
/// rejection, 4 an invalid answer, 5 `-32601`, 6 another error, 7 an odd but valid shape.
fn answer(s: &Shown, kind: u8) -> Result<Value, (i64, &'static str)> {
    match kind {
        5 => return Err((-32601, "Method not found")),
        6 => return Err((-32000, "busy")),
        _ => {}
    }
    let p = &s.params;
    Ok(match s.method.as_str() {
        QUESTION => match kind {
            3 => json!({"status":"rejected","reason":"declined"}),
            4 => json!({"status":"answered","answers":"nope"}),
            7 => json!({"outcome":"cancelled","_meta":{"x":1}}),
            _ => {
                let items: Vec<Value> = match p.get("questions").and_then(Value::as_array) {
                    Some(list) => list.clone(),
                    None => vec![p.clone()],
                };
                let answers: Vec<Value> = items
                    .iter()
                    .map(|item| {
                        let first = item
                            .get("options")
                            .and_then(Value::as_array)
                            .and_then(|o| o.first())
                            .map(|o| match o {
                                Value::String(s) => s.clone(),
                                Value::Array(pair) => {
                                    pair[0].as_str().unwrap_or_default().to_owned()
                                }
                                Value::Object(m) => m
                                    .get("value")
                                    .or_else(|| m.get("label"))
                                    .and_then(Value::as_str)
                                    .unwrap_or_default()
                                    .to_owned(),
                                _ => String::new(),
                            });
                        json!([first.unwrap_or_else(|| "free text".into())])
                    })
                    .collect();
                if kind == 1 {
                    json!({"outcome":"selected","_meta":{"sandboxagent.dev":{"answers":answers}}})
                } else {
                    json!({"status":"answered","answers":answers})
                }
            }
        },
        "elicitation/create" => match kind {
            3 => json!({"action":"decline"}),
            7 => json!({"action":"cancel"}),
            4 => json!({"action":"accept","content":{"q1":5}}),
            _ => {
                let mut content = serde_json::Map::new();
                if let Some(props) = p
                    .pointer("/requestedSchema/properties")
                    .and_then(Value::as_object)
                {
                    for (k, prop) in props {
                        if k.ends_with("_other") {
                            continue;
                        }
                        let v = if let Some(c) = prop.pointer("/oneOf/0/const") {
                            c.clone()
                        } else if let Some(c) = prop.pointer("/items/anyOf/0/const") {
                            json!([c])
                        } else if let Some(c) = prop.pointer("/enum/0") {
                            c.clone()
                        } else {
                            match prop.get("type").and_then(Value::as_str) {
                                Some("boolean") => json!(true),
                                Some("integer") | Some("number") => json!(3),
                                _ => json!("text"),
                            }
                        };
                        content.insert(k.clone(), v);
                    }
                }
                json!({"action":"accept","content":content})
            }
        },
        "session/request_permission" => match kind {
            3 => json!({"outcome":{"outcome":"cancelled"}}),
            4 => json!({"outcome":{"outcome":"selected","optionId":"no-such-option"}}),
            7 => {
                let last = p
                    .get("options")
                    .and_then(Value::as_array)
                    .and_then(|o| o.last())
                    .and_then(|o| o.get("optionId"))
                    .cloned()
                    .unwrap_or(json!("dismiss"));
                json!({"outcome":{"outcome":"selected","optionId":last}})
            }
            _ => {
                let first = p
                    .pointer("/options/0/optionId")
                    .cloned()
                    .unwrap_or(json!("x"));
                json!({"outcome":{"outcome":"selected","optionId":first}})
            }
        },
        _ => json!({"content":"file text"}),
    })
}

/// The scanned router's output equals its unscanned twin's, line for line (sorted: bursts
/// for questions created at the same instant come in hash order, which differs between
/// two routers).
fn same(out: &Outbox, twin: &Outbox) -> Result<(), String> {
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let pair = |o: &Outbox| {
        (
            sorted(lines(&o.to_agent)),
            sorted(lines(&o.to_client)),
            o.made_for_agent,
            o.made_for_client,
        )
    };
    if pair(out) != pair(twin) {
        return Err(format!(
            "the scanned fast path and the full path differ: {:?} vs {:?}",
            pair(out),
            pair(twin)
        ));
    }
    Ok(())
}
