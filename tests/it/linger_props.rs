//! Property test of the router with `--linger`: random interleavings of the agent's requests
//! and updates, clients that leave and attach (with small ids, so a later client's ids clash
//! with those the one that left still has at the agent), their answers, answers from the
//! control server, and the agent's results; cancels both ways (`$/cancel_request`,
//! `session/cancel`), forms, extension questions, control rejections, timeouts, an approval
//! policy that denies `rm`, three kinds of client; then the linger's end, the agent's exit,
//! or a sweep (a last client loads every session and answers everything, after which every
//! agent request has had its one response). Checked after every step:
//! - the agent gets at most one response per request it sent, and never one for an id it
//!   did not send; at the end, exactly one for each;
//! - an attached client is sent responses only under ids it sent and has in flight, each at
//!   most once; nothing it is sent names a session it has not begun, loaded or resumed (a
//!   load's replay excepted); a `$/cancel_request` names only a request it was sent.
//!
//! What is queued for the client while none is attached is dropped, as the shell drops it.

use std::collections::{BTreeMap, BTreeSet};

use acp_question_bridge::router::fixture::Fixture;
use acp_question_bridge::router::RouterConfig;
use proptest::prelude::*;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
enum Op {
    /// The agent asks the client: 0 a tool approval, 1 a file read, in session `s`.
    AgentAsks {
        kind: u8,
        s: u8,
    },
    /// The agent streams an update of session `s`.
    AgentUpdate {
        s: u8,
    },
    /// The agent answers one of the client requests it has.
    AgentResponds {
        pick: u8,
    },
    /// The client: `initialize`, `session/new`, `session/load` or `session/resume` of a
    /// session, `session/prompt` in one (ids 0..4, to clash), answering what it was shown.
    ClientInit,
    ClientNew {
        id: u8,
    },
    ClientLoad {
        s: u8,
        resume: bool,
        id: u8,
    },
    ClientPrompt {
        s: u8,
        id: u8,
    },
    ClientAnswers,
    /// A pending question answered on the control server.
    ControlAnswer {
        pick: u8,
    },
    Detach,
    Attach,
    AgentCancel {
        pick: u8,
    },
    ClientSessionCancel {
        s: u8,
    },
    ClientCancelRequest {
        id: u8,
    },
    ControlReject {
        pick: u8,
    },
    Tick,
    RunEffects,
    /// (Joined clients, RFD #533.) A client joins beside the attached one (`caps` as the
    /// attached client's), loads or resumes a session, begins one, prompts, answers what it
    /// was shown (`how`: 0 the first option, 1 the last one, 2 an error, 3 an answer that is not valid), leaves, cancels.
    Join {
        caps: u8,
    },
    GuestLoad {
        g: u8,
        s: u8,
        resume: bool,
        id: u8,
    },
    GuestNew {
        g: u8,
        id: u8,
    },
    GuestPrompt {
        g: u8,
        s: u8,
        id: u8,
    },
    GuestAnswers {
        g: u8,
        how: u8,
    },
    GuestLeave {
        g: u8,
    },
    GuestSessionCancel {
        g: u8,
        s: u8,
    },
    GuestCancelRequest {
        g: u8,
        id: u8,
    },
    /// The joined client presses the prompts it was told are over.
    GuestLate {
        g: u8,
    },
}

/// [`op`], with joined clients.
fn op_joined() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => op(),
        1 => (0u8..3).prop_map(|s| Op::AgentAsks { kind: 5, s }),
        2 => (0u8..3).prop_map(|caps| Op::Join { caps }),
        4 => (0u8..4, 0u8..3, any::<bool>(), 0u8..4).prop_map(|(g, s, resume, id)| Op::GuestLoad { g, s, resume, id }),
        1 => (0u8..4, 0u8..4).prop_map(|(g, id)| Op::GuestNew { g, id }),
        2 => (0u8..4, 0u8..3, 0u8..4).prop_map(|(g, s, id)| Op::GuestPrompt { g, s, id }),
        4 => (0u8..4, 0u8..4).prop_map(|(g, how)| Op::GuestAnswers { g, how }),
        1 => (0u8..4).prop_map(|g| Op::GuestLeave { g }),
        1 => (0u8..4, 0u8..3).prop_map(|(g, s)| Op::GuestSessionCancel { g, s }),
        1 => (0u8..4, 0u8..4).prop_map(|(g, id)| Op::GuestCancelRequest { g, id }),
        1 => (0u8..4).prop_map(|g| Op::GuestLate { g }),
    ]
}

/// A joined client: what it has in flight (its ids, with the session a load or resume
/// takes), its sessions, the prompts it was shown and not answered (and those of them not
/// over yet: each must end once, by its answer or a `$/cancel_request`).
#[derive(Default)]
struct Guest {
    in_flight: BTreeMap<String, Option<String>>,
    sessions: BTreeSet<String>,
    shown: Vec<Value>,
    open: BTreeSet<String>,
    sent_ids: BTreeSet<String>,
    /// The agent's own requests (`fs/*`, `terminal/*`) it was sent and has not answered: one
    /// another client answered is closed with a `$/cancel_request`.
    agents: BTreeSet<String>,
    /// Prompts it was told are over (a press on one is refused, with a note).
    over: Vec<Value>,
}

fn op() -> impl Strategy<Value = Op> {
    let b = any::<u8>;
    prop_oneof![
        4 => (0u8..5, 0u8..3).prop_map(|(kind, s)| Op::AgentAsks { kind, s }),
        2 => b().prop_map(|pick| Op::AgentCancel { pick }),
        1 => (0u8..3).prop_map(|s| Op::ClientSessionCancel { s }),
        1 => (0u8..4).prop_map(|id| Op::ClientCancelRequest { id }),
        1 => b().prop_map(|pick| Op::ControlReject { pick }),
        1 => Just(Op::Tick),
        2 => Just(Op::RunEffects),
        3 => (0u8..3).prop_map(|s| Op::AgentUpdate { s }),
        4 => b().prop_map(|pick| Op::AgentResponds { pick }),
        2 => Just(Op::ClientInit),
        2 => (0u8..4).prop_map(|id| Op::ClientNew { id }),
        3 => (0u8..3, any::<bool>(), 0u8..4).prop_map(|(s, resume, id)| Op::ClientLoad { s, resume, id }),
        3 => (0u8..3, 0u8..4).prop_map(|(s, id)| Op::ClientPrompt { s, id }),
        4 => Just(Op::ClientAnswers),
        2 => b().prop_map(|pick| Op::ControlAnswer { pick }),
        2 => Just(Op::Detach),
        2 => Just(Op::Attach),
    ]
}

/// The agent, the client attached now, and what each was sent.
struct World {
    f: Fixture,
    attached: bool,
    /// The agent's requests to the client: id -> responses the agent got.
    agent_asked: BTreeMap<i64, u32>,
    next_agent_id: i64,
    /// Client requests the agent has (its id for them, method), in order.
    at_agent: Vec<(Value, String)>,
    /// The sessions the agent has made.
    made: u32,
    /// The attached client: requests in flight (its ids), sessions it has, what it was
    /// shown and not answered yet.
    /// (With the session a load or resume asks for.)
    in_flight: BTreeMap<String, Option<String>>,
    sessions: BTreeSet<String>,
    shown: Vec<Value>,
    initialized: bool,
    /// Request ids the attached client was sent (for `$/cancel_request`).
    sent_ids: BTreeSet<String>,
    caps: u8,
    /// Joined clients by number, and the numbers of those that left.
    guests: BTreeMap<u32, Guest>,
    left: BTreeSet<u32>,
    next_guest: u32,
    /// (With joined clients.) The attached client's prompts not answered nor told over.
    track_open: bool,
    open: BTreeSet<String>,
}

impl World {
    fn new(policy: bool, caps: u8) -> Self {
        Self::with(policy, caps, false)
    }

    fn with(policy: bool, caps: u8, cancel_requests: bool) -> Self {
        let cfg = RouterConfig {
            linger: true,
            hold_unsupported: true,
            question_timeout: Some(std::time::Duration::from_secs(5)),
            client_cancel_requests: cancel_requests,
            ..RouterConfig::default()
        };
        let f = if policy {
            Fixture::with_policy(
                cfg,
                "[[rule]]\nid = \"no-rm\"\ndecision = \"deny\"\ncommand = [\"rm\"]\n",
            )
            .deferred()
        } else {
            Fixture::new(cfg)
        };
        let mut w = World {
            f,
            attached: false,
            agent_asked: BTreeMap::new(),
            next_agent_id: 1000,
            at_agent: Vec::new(),
            made: 0,
            in_flight: BTreeMap::new(),
            sessions: BTreeSet::new(),
            shown: Vec::new(),
            initialized: false,
            sent_ids: BTreeSet::new(),
            caps,
            guests: BTreeMap::new(),
            left: BTreeSet::new(),
            next_guest: 0,
            track_open: cancel_requests,
            open: BTreeSet::new(),
        };
        w.attach();
        w
    }

    fn attach(&mut self) {
        drop(self.f.take_client());
        self.f.attach();
        self.attached = true;
        self.in_flight.clear();
        self.sessions.clear();
        self.shown.clear();
        self.initialized = false;
        self.sent_ids.clear();
        self.open.clear();
    }

    fn detach(&mut self) -> Result<(), String> {
        self.settle()?;
        self.f.detach();
        self.attached = false;
        Ok(())
    }

    fn caps_json(caps: u8) -> Value {
        match caps % 3 {
            0 => json!({"protocolVersion":1,"clientCapabilities":{}}),
            1 => json!({"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}}}}),
            _ => {
                json!({"protocolVersion":1,"clientCapabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}})
            }
        }
    }

    /// The joined client `g` picks (`None`: none joined).
    fn guest(&self, g: u8) -> Option<u32> {
        let ids: Vec<u32> = self.guests.keys().copied().collect();
        ids.get(g as usize % ids.len().max(1)).copied()
    }

    fn guest_sends(&mut self, c: u32, id: u8, method: &str, params: Value) {
        let key = json!(id).to_string();
        let Some(guest) = self.guests.get_mut(&c) else {
            return;
        };
        if guest.in_flight.contains_key(&key) {
            return;
        }
        let taking = matches!(method, "session/load" | "session/resume")
            .then(|| params["sessionId"].as_str().unwrap_or_default().to_owned());
        guest.in_flight.insert(key, taking);
        self.f.joined(
            c,
            &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string(),
        );
    }

    fn session(&self, s: u8) -> String {
        format!("s{}", s as u32 % self.made.max(1))
    }

    fn client_sends(&mut self, id: u8, method: &str, params: Value) {
        let key = json!(id).to_string();
        if self.in_flight.contains_key(&key) {
            return; // a client does not reuse an id it has in flight
        }
        let taking = matches!(method, "session/load" | "session/resume")
            .then(|| params["sessionId"].as_str().unwrap_or_default().to_owned());
        self.in_flight.insert(key, taking);
        self.f
            .client(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string());
    }

    /// A pending question (its session and question id), picked by `pick`.
    fn pending(&self, pick: u8) -> Option<(String, String)> {
        let views = self.f.r.question_views();
        let v = serde_json::to_value(views.get(pick as usize % views.len().max(1))?).ok()?;
        Some((
            v["sessionId"].as_str()?.to_owned(),
            v["questionId"].as_str()?.to_owned(),
        ))
    }

    fn apply(&mut self, op: &Op) -> Result<(), String> {
        match *op {
            Op::AgentAsks { kind, s } => {
                if self.made == 0 {
                    return Ok(());
                }
                let id = self.next_agent_id;
                self.next_agent_id += 1;
                let session = self.session(s);
                let line = match kind {
                    0 | 4 => {
                        json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{
                        "sessionId":session,"toolCall":{"toolCallId":format!("t{id}"),"title":"Run it","kind":"execute",
                            "rawInput":{"command": if kind == 4 {"rm -rf x"} else {"ls"}}},
                        "options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},
                                   {"optionId":"reject","name":"Reject","kind":"reject_once"}]}})
                    }
                    1 => {
                        json!({"jsonrpc":"2.0","id":id,"method":"fs/read_text_file","params":{"sessionId":session,"path":"/x"}})
                    }
                    2 => {
                        json!({"jsonrpc":"2.0","id":id,"method":"elicitation/create","params":{"sessionId":session,"mode":"form","message":"Which?",
                        "requestedSchema":{"type":"object","properties":{"q":{"type":"string","title":"Q","oneOf":[{"const":"allow","title":"A"},{"const":"b","title":"B"}]}}}}})
                    }
                    5 => {
                        json!({"jsonrpc":"2.0","id":id,"method":"_sandboxagent/session/request_question","params":{"sessionId":session,"questionId":format!("q{id}"),"prompt":"Name it"}})
                    }
                    _ => {
                        json!({"jsonrpc":"2.0","id":id,"method":"_sandboxagent/session/request_question","params":{"sessionId":session,"questionId":format!("q{id}"),"prompt":"ok?",
                        "options":[{"id":"allow","label":"Allow"},{"id":"no","label":"No"}]}})
                    }
                };
                self.agent_asked.insert(id, 0);
                self.f.agent(&line.to_string());
            }
            Op::AgentUpdate { s } => {
                if self.made > 0 {
                    let session = self.session(s);
                    self.f.agent(
                        &json!({"jsonrpc":"2.0","method":"session/update","params":{
                        "sessionId":session,"update":{"sessionUpdate":"agent_message_chunk",
                        "content":{"type":"text","text":"hi"}}}})
                        .to_string(),
                    );
                }
            }
            Op::AgentResponds { pick } => {
                if self.at_agent.is_empty() {
                    return Ok(());
                }
                let (id, method) = self.at_agent.remove(pick as usize % self.at_agent.len());
                let result = match method.as_str() {
                    "initialize" => json!({"protocolVersion":1,"agentCapabilities":{}}),
                    "session/new" | "session/fork" => {
                        let s = format!("s{}", self.made);
                        self.made += 1;
                        json!({"sessionId": s})
                    }
                    "session/prompt" => json!({"stopReason":"end_turn"}),
                    _ => json!({}),
                };
                self.f
                    .agent(&json!({"jsonrpc":"2.0","id":id,"result":result}).to_string());
            }
            Op::ClientInit => {
                if self.attached && !self.initialized {
                    self.initialized = true;
                    self.client_sends(
                        9,
                        "initialize",
                        match self.caps % 3 {
                            0 => json!({"protocolVersion":1,"clientCapabilities":{}}),
                            1 => json!({"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}}}}),
                            _ => json!({"protocolVersion":1,"clientCapabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}),
                        },
                    );
                }
            }
            Op::ClientNew { id } => {
                if self.attached && self.initialized {
                    self.client_sends(id, "session/new", json!({"cwd":"/p","mcpServers":[]}));
                }
            }
            Op::ClientLoad { s, resume, id } => {
                if self.attached && self.initialized && self.made > 0 {
                    let session = self.session(s);
                    let method = if resume {
                        "session/resume"
                    } else {
                        "session/load"
                    };
                    self.client_sends(
                        id,
                        method,
                        json!({"sessionId":session,"cwd":"/p","mcpServers":[]}),
                    );
                }
            }
            Op::ClientPrompt { s, id } => {
                if self.attached && self.initialized && self.made > 0 {
                    let session = self.session(s);
                    if self.sessions.contains(&session) {
                        self.client_sends(
                            id,
                            "session/prompt",
                            json!({"sessionId":session,"prompt":[{"type":"text","text":"go"}]}),
                        );
                    }
                }
            }
            Op::ClientAnswers => {
                if self.attached {
                    for req in std::mem::take(&mut self.shown) {
                        self.open.remove(&req["id"].to_string());
                        let result = match req["method"].as_str() {
                            Some("session/request_permission") => {
                                let first = req["params"]["options"][0]["optionId"].clone();
                                json!({"outcome":{"outcome":"selected","optionId":first}})
                            }
                            Some("fs/read_text_file") => json!({"content":"x"}),
                            Some("elicitation/create") => json!({"action":"decline"}),
                            _ => json!({}),
                        };
                        self.f.client(
                            &json!({"jsonrpc":"2.0","id":req["id"],"result":result}).to_string(),
                        );
                    }
                }
            }
            Op::ControlAnswer { pick } => {
                if let Some((s, q)) = self.pending(pick) {
                    let _ = self.f.control_answer(&s, &q, &json!([["allow"]]));
                }
            }
            Op::AgentCancel { pick } => {
                let open: Vec<i64> = self
                    .agent_asked
                    .iter()
                    .filter(|(_, n)| **n == 0)
                    .map(|(i, _)| *i)
                    .collect();
                if !open.is_empty() {
                    let id = open[pick as usize % open.len()];
                    self.f.agent(&json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":id}}).to_string());
                }
            }
            Op::ClientSessionCancel { s } => {
                if self.attached && self.made > 0 {
                    let session = self.session(s);
                    if self.sessions.contains(&session) {
                        self.f.client(&json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":session}}).to_string());
                    }
                }
            }
            Op::ClientCancelRequest { id } => {
                if self.attached && self.in_flight.contains_key(&json!(id).to_string()) {
                    self.f.client(&json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":id}}).to_string());
                }
            }
            Op::ControlReject { pick } => {
                if let Some((s, q)) = self.pending(pick) {
                    let _ = self.f.control_reject(&s, &q);
                }
            }
            Op::Tick => self.f.tick(std::time::Duration::from_secs(3)),
            Op::RunEffects => self.f.run_effects(),
            Op::Detach => {
                if self.attached {
                    self.detach()?;
                }
            }
            Op::Attach => {
                if !self.attached {
                    self.attach();
                }
            }
            Op::Join { caps } => {
                // (The shell lets a client join only beside an attached one.)
                if self.attached && self.guests.len() < 8 {
                    let c = self.next_guest;
                    self.next_guest += 1;
                    if !self.f.join(c) {
                        return Err("a client could not join".into());
                    }
                    self.guests.insert(c, Guest::default());
                    self.guest_sends(c, 0, "initialize", Self::caps_json(caps));
                }
            }
            Op::GuestLoad { g, s, resume, id } => {
                if let (Some(c), true) = (self.guest(g), self.made > 0) {
                    let session = self.session(s);
                    let method = if resume {
                        "session/resume"
                    } else {
                        "session/load"
                    };
                    self.guest_sends(
                        c,
                        id + 1,
                        method,
                        json!({"sessionId":session,"cwd":"/p","mcpServers":[]}),
                    );
                }
            }
            Op::GuestNew { g, id } => {
                if let Some(c) = self.guest(g) {
                    // (Ids 3 and 4: a fork of a session it has.)
                    let fork = self.guests[&c]
                        .sessions
                        .iter()
                        .next()
                        .cloned()
                        .filter(|_| id >= 2);
                    match fork {
                        Some(s) => self.guest_sends(
                            c,
                            id + 1,
                            "session/fork",
                            json!({"sessionId":s,"cwd":"/p","mcpServers":[]}),
                        ),
                        None => self.guest_sends(
                            c,
                            id + 1,
                            "session/new",
                            json!({"cwd":"/p","mcpServers":[]}),
                        ),
                    }
                }
            }
            Op::GuestPrompt { g, s, id } => {
                if let (Some(c), true) = (self.guest(g), self.made > 0) {
                    let session = self.session(s);
                    if self.guests[&c].sessions.contains(&session) {
                        self.guest_sends(
                            c,
                            id + 1,
                            "session/prompt",
                            json!({"sessionId":session,"prompt":[{"type":"text","text":"go"}]}),
                        );
                    }
                }
            }
            Op::GuestAnswers { g, how } => {
                if let Some(c) = self.guest(g) {
                    let guest = self.guests.get_mut(&c).expect("picked");
                    let shown = std::mem::take(&mut guest.shown);
                    for req in shown {
                        guest.open.remove(&req["id"].to_string());
                        guest.agents.remove(&req["id"].to_string());
                        let line = if how == 2 {
                            json!({"jsonrpc":"2.0","id":req["id"],"error":{"code":-32603,"message":"no"}})
                        } else if how == 3 {
                            // Not a valid answer in any dialect.
                            json!({"jsonrpc":"2.0","id":req["id"],"result":{"outcome":{"outcome":"selected","optionId":"no-such-option"},"action":"accept","content":{"zz":1}}})
                        } else {
                            let result = match req["method"].as_str() {
                                Some("session/request_permission") => {
                                    let options = req["params"]["options"]
                                        .as_array()
                                        .cloned()
                                        .unwrap_or_default();
                                    let pick = if how == 0 {
                                        options.first()
                                    } else {
                                        options.last()
                                    };
                                    json!({"outcome":{"outcome":"selected","optionId":pick.map(|o| o["optionId"].clone())}})
                                }
                                Some("elicitation/create") => json!({"action":"decline"}),
                                _ => json!({"outcome":"cancelled"}),
                            };
                            json!({"jsonrpc":"2.0","id":req["id"],"result":result})
                        };
                        self.f.joined(c, &line.to_string());
                    }
                }
            }
            Op::GuestLeave { g } => {
                if let Some(c) = self.guest(g) {
                    self.settle()?;
                    self.f.leave(c);
                    self.guests.remove(&c);
                    self.left.insert(c);
                }
            }
            Op::GuestSessionCancel { g, s } => {
                if let (Some(c), true) = (self.guest(g), self.made > 0) {
                    let session = self.session(s);
                    if self.guests[&c].sessions.contains(&session) {
                        self.f.joined(c, &json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":session}}).to_string());
                    }
                }
            }
            Op::GuestLate { g } => {
                if let Some(c) = self.guest(g) {
                    let over = std::mem::take(&mut self.guests.get_mut(&c).expect("picked").over);
                    for req in over {
                        let result = match req["method"].as_str() {
                            Some("session/request_permission") => {
                                json!({"outcome":{"outcome":"selected","optionId":req["params"]["options"][0]["optionId"]}})
                            }
                            Some("elicitation/create") => {
                                json!({"action":"accept","content":{"q":"allow"}})
                            }
                            _ => json!({"outcome":"answered","answers":[["allow"]]}),
                        };
                        self.f.joined(
                            c,
                            &json!({"jsonrpc":"2.0","id":req["id"],"result":result}).to_string(),
                        );
                        let told = self.f.take_joined(c);
                        if !told.iter().any(|l| l.contains("session/update")) {
                            return Err(format!("joined client {c}: a late press on {} was not told it had no effect: {told:?}", req["id"]));
                        }
                        for l in told {
                            self.f.out.to_joined.push((c, bytes::Bytes::from(l)));
                        }
                    }
                }
            }
            Op::GuestCancelRequest { g, id } => {
                if let Some(c) = self.guest(g) {
                    if self.guests[&c]
                        .in_flight
                        .contains_key(&json!(id + 1).to_string())
                    {
                        self.f.joined(c, &json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":id + 1}}).to_string());
                    }
                }
            }
        }
        self.settle()
    }

    /// What was queued for the joined clients: checked as the attached client's is; none
    /// is queued for one that left; a `$/cancel_request` ends a prompt still open, once.
    fn settle_guests(&mut self) -> Result<(), String> {
        let queued = std::mem::take(&mut self.f.out.to_joined);
        for (c, line) in queued {
            let line = String::from_utf8_lossy(&line).into_owned();
            if self.left.contains(&c) {
                return Err(format!("joined client {c} that left was sent: {line}"));
            }
            let Some(guest) = self.guests.get_mut(&c) else {
                return Err(format!("a client that never joined ({c}) was sent: {line}"));
            };
            let m: Value = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
            let lacks = |s: &str| {
                !guest.sessions.contains(s)
                    && !guest.in_flight.values().any(|t| t.as_deref() == Some(s))
            };
            if let Some(s) = m["params"]["sessionId"].as_str() {
                if lacks(s) {
                    return Err(format!(
                        "joined client {c} was sent something of a session it lacks: {line}"
                    ));
                }
            }
            if m["method"] == "session/update" {
                continue;
            }
            if m["method"] == "$/cancel_request" {
                let named = m["params"]["requestId"].to_string();
                if !guest.sent_ids.contains(&named) {
                    return Err(format!(
                        "joined client {c} was sent a cancel of a request it was never sent: {line}"
                    ));
                }
                if guest.agents.remove(&named) {
                    guest.shown.retain(|r| r["id"] != m["params"]["requestId"]);
                    continue;
                }
                if !guest.open.remove(&named) {
                    return Err(format!(
                        "joined client {c} was sent a cancel of a prompt it answered or was told of already: {line}"
                    ));
                }
                if let Some(at) = guest
                    .shown
                    .iter()
                    .position(|r| r["id"] == m["params"]["requestId"])
                {
                    let r = guest.shown.remove(at);
                    guest.over.push(r);
                }
                continue;
            }
            if m.get("method").is_some() {
                if m.get("id").is_some() {
                    let id = m["id"].to_string();
                    guest.sent_ids.insert(id.clone());
                    // The agent's own requests (`fs/*`, `terminal/*`) of a session only a
                    // joined client has go to it: they are the client's to answer, not
                    // prompts the bridge must close.
                    let method = m["method"].as_str().unwrap_or_default();
                    if method.starts_with("fs/") || method.starts_with("terminal/") {
                        guest.agents.insert(id);
                        guest.shown.push(m);
                        continue;
                    }
                    if !guest.open.insert(id.clone()) {
                        return Err(format!("joined client {c} was sent a second request under {id}, which it still shows: {line}"));
                    }
                    guest.shown.push(m);
                }
                continue;
            }
            let key = m["id"].to_string();
            let Some(taking) = guest.in_flight.remove(&key) else {
                return Err(format!(
                    "joined client {c} got a response under an id it has not in flight: {line}"
                ));
            };
            if m.get("result").is_some() {
                if let Some(s) = m["result"]["sessionId"].as_str() {
                    guest.sessions.insert(s.to_owned());
                }
                if let Some(s) = taking {
                    guest.sessions.insert(s);
                }
            }
        }
        Ok(())
    }

    /// No question is pending: every prompt a joined client was shown has ended, by its
    /// answer or by a `$/cancel_request`; and when every request of the agent has its
    /// response, every prompt any client was shown has.
    fn guests_told(&self) -> Result<(), String> {
        if self.track_open
            && self.attached
            && self.agent_asked.values().all(|n| *n == 1)
            && !self.open.is_empty()
        {
            return Err(format!(
                "every agent request has its response, yet the attached client was never told these prompts are over: {:?}",
                self.shown.iter().filter(|r| self.open.contains(&r["id"].to_string())).collect::<Vec<_>>()
            ));
        }
        if !self.f.r.question_views().is_empty() && !self.agent_asked.values().all(|n| *n == 1) {
            return Ok(());
        }
        for (c, g) in &self.guests {
            if !g.open.is_empty() {
                return Err(format!(
                    "no question is pending, yet joined client {c} was never told these prompts are over: {:?}",
                    g.shown.iter().filter(|r| g.open.contains(&r["id"].to_string())).collect::<Vec<_>>()
                ));
            }
        }
        Ok(())
    }

    /// Reads what the router queued for each side, and checks it.
    fn settle(&mut self) -> Result<(), String> {
        self.settle_guests()?;
        for line in self.f.take_agent() {
            if line == "<close>" {
                continue;
            }
            let m: Value = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
            if m.get("method").is_some() {
                if m.get("id").is_some() {
                    self.at_agent.push((
                        m["id"].clone(),
                        m["method"].as_str().unwrap_or_default().to_owned(),
                    ));
                }
                continue;
            }
            let Some(id) = m["id"].as_i64() else {
                return Err(format!(
                    "the agent got a response to an id it did not send: {line}"
                ));
            };
            let n = self.agent_asked.get_mut(&id).ok_or_else(|| {
                format!("the agent got a response to an id it did not send: {line}")
            })?;
            *n += 1;
            if *n > 1 {
                return Err(format!("the agent got a second response to {id}: {line}"));
            }
        }
        let for_client = self.f.take_client();
        if !self.attached {
            return Ok(()); // for nobody, as the shell drops it
        }
        for line in for_client {
            let m: Value = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
            // (A load's replay comes before its result.)
            let lacks = |s: &str| {
                !self.sessions.contains(s)
                    && !self.in_flight.values().any(|t| t.as_deref() == Some(s))
            };
            if let Some(s) = m["params"]["sessionId"].as_str() {
                if lacks(s) {
                    return Err(format!(
                        "the client was sent something of a session it lacks: {line}"
                    ));
                }
            }
            if m["method"] == "session/update" {
                continue;
            }
            if m["method"] == "$/cancel_request" {
                let named = m["params"]["requestId"].to_string();
                if !self.sent_ids.contains(&named) {
                    return Err(format!(
                        "the client was sent a cancel of a request it was never sent: {line}"
                    ));
                }
                // (A request of the agent's, not a question, may be cancelled twice: by the
                // agent, then as the agent is gone.)
                self.open.remove(&named);
                continue;
            }
            if m.get("method").is_some() {
                if m.get("id").is_some() {
                    self.sent_ids.insert(m["id"].to_string());
                    if self.track_open {
                        self.open.insert(m["id"].to_string());
                    }
                    self.shown.push(m);
                }
                continue;
            }
            let key = m["id"].to_string();
            let Some(taking) = self.in_flight.remove(&key) else {
                return Err(format!(
                    "the client got a response under an id it has not in flight: {line}"
                ));
            };
            // What the response began or took is the client's now.
            if m.get("result").is_some() {
                if let Some(s) = m["result"]["sessionId"].as_str() {
                    self.sessions.insert(s.to_owned());
                }
                if let Some(s) = taking {
                    self.sessions.insert(s);
                }
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, max_shrink_iters: 100000, ..ProptestConfig::default() })]
    #[test]
    fn with_linger_every_request_has_one_response_and_each_client_only_its_own(
        ops in proptest::collection::vec(op(), 0..60),
        agent_dies in any::<bool>(),
        policy in any::<bool>(),
        caps in 0u8..3,
        sweep in any::<bool>(),
    ) {
        let mut w = World::new(policy, caps);
        for (n, op) in ops.iter().enumerate() {
            if let Err(e) = w.apply(op) {
                prop_assert!(false, "step {n} {op:?}: {e}");
            }
        }
        if agent_dies && !sweep && w.attached {
            // The agent exits with a client attached: each of its requests still waiting
            // gets one error, under its own id.
            w.f.agent_gone(&acp_question_bridge::router::AgentExit {
                code: Some(1),
                signal: None,
                stderr_tail: String::new(),
            });
            let r = w.settle();
            prop_assert!(r.is_ok(), "{r:?}");
            prop_assert!(w.in_flight.is_empty(), "requests left without a response: {:?}", w.in_flight);
            return Ok(());
        }
        // Liveness: a fresh client takes every session and answers everything, the
        // control server rejects what is left: every agent request has its one response
        // before the linger's end.
        if sweep {
            for _ in 0..6 {
                let mut ops = vec![Op::RunEffects];
                for _ in 0..8 { ops.push(Op::AgentResponds { pick: 0 }); }
                ops.push(Op::Attach);
                ops.push(Op::ClientInit);
                for _ in 0..8 { ops.push(Op::AgentResponds { pick: 0 }); }
                for s in 0..w.made.min(200) as u8 {
                    for id in 0..4 { ops.push(Op::ClientLoad { s, resume: false, id }); }
                    for _ in 0..8 { ops.push(Op::AgentResponds { pick: 0 }); }
                }
                ops.push(Op::ClientAnswers);
                for _ in 0..10 { ops.push(Op::ControlReject { pick: 0 }); }
                ops.push(Op::ClientAnswers);
                for op in &ops {
                    let r = w.apply(op);
                    prop_assert!(r.is_ok(), "sweep {op:?}: {r:?}");
                }
            }
            let unanswered: Vec<_> = w.agent_asked.iter().filter(|(_, n)| **n != 1).collect();
            prop_assert!(unanswered.is_empty(), "after the sweep, agent requests without their one response: {unanswered:?}");
        }
        // The client leaves, and the linger ends: the client's EOF.
        if w.attached {
            let r = w.detach();
            prop_assert!(r.is_ok(), "{r:?}");
        }
        w.f.client_eof();
        let r = w.settle();
        prop_assert!(r.is_ok(), "{r:?}");
        let unanswered: Vec<_> = w.agent_asked.iter().filter(|(_, n)| **n != 1).collect();
        prop_assert!(unanswered.is_empty(), "agent requests without their one response: {unanswered:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, max_shrink_iters: 100000, ..ProptestConfig::default() })]
    /// The same, with clients that join a session beside the attached one (RFD #533): each
    /// joined client is checked as the attached one is, nothing is sent to one that left,
    /// and each prompt it was shown ends once (its answer, or a `$/cancel_request`).
    #[test]
    fn with_joined_clients_every_request_has_one_response_and_each_client_only_its_own(
        ops in proptest::collection::vec(op_joined(), 0..120),
        agent_dies in any::<bool>(),
        policy in any::<bool>(),
        caps in 0u8..3,
        sweep in any::<bool>(),
        guests_leave_first in any::<bool>(),
    ) {
        let mut w = World::with(policy, caps, true);
        for (n, op) in ops.iter().enumerate() {
            if let Err(e) = w.apply(op).and_then(|()| w.guests_told()) {
                prop_assert!(false, "step {n} {op:?}: {e}");
            }
        }
        let r = w.guests_told();
        prop_assert!(r.is_ok(), "after the steps: {r:?}");
        if agent_dies && !sweep && w.attached {
            w.f.agent_gone(&acp_question_bridge::router::AgentExit {
                code: Some(1),
                signal: None,
                stderr_tail: String::new(),
            });
            let r = w.settle();
            prop_assert!(r.is_ok(), "{r:?}");
            prop_assert!(w.in_flight.is_empty(), "requests left without a response: {:?}", w.in_flight);
            for (c, g) in &w.guests {
                prop_assert!(g.in_flight.is_empty(), "joined client {c}: requests left without a response: {:?}", g.in_flight);
            }
            let r = w.guests_told();
            prop_assert!(r.is_ok(), "{r:?}");
            return Ok(());
        }
        if sweep {
            for _ in 0..6 {
                let mut ops = vec![Op::RunEffects];
                for _ in 0..8 { ops.push(Op::AgentResponds { pick: 0 }); }
                ops.push(Op::Attach);
                ops.push(Op::ClientInit);
                for _ in 0..8 { ops.push(Op::AgentResponds { pick: 0 }); }
                for s in 0..w.made.min(200) as u8 {
                    for id in 0..4 { ops.push(Op::ClientLoad { s, resume: false, id }); }
                    for _ in 0..8 { ops.push(Op::AgentResponds { pick: 0 }); }
                }
                ops.push(Op::ClientAnswers);
                for g in 0..8 { ops.push(Op::GuestAnswers { g, how: 0 }); }
                for _ in 0..10 { ops.push(Op::ControlReject { pick: 0 }); }
                ops.push(Op::ClientAnswers);
                for g in 0..8 { ops.push(Op::GuestAnswers { g, how: 0 }); }
                for op in &ops {
                    let r = w.apply(op);
                    prop_assert!(r.is_ok(), "sweep {op:?}: {r:?}");
                }
            }
            let unanswered: Vec<_> = w.agent_asked.iter().filter(|(_, n)| **n != 1).collect();
            prop_assert!(unanswered.is_empty(), "after the sweep, agent requests without their one response: {unanswered:?}");
            let r = w.guests_told();
            prop_assert!(r.is_ok(), "after the sweep: {r:?}");
        }
        if guests_leave_first {
            // (The shell's linger starts only when the joined clients left too.)
            for g in 0..8u8 {
                if !w.guests.is_empty() {
                    let r = w.apply(&Op::GuestLeave { g });
                    prop_assert!(r.is_ok(), "{r:?}");
                }
            }
        }
        if w.attached {
            let r = w.detach();
            prop_assert!(r.is_ok(), "{r:?}");
        }
        w.f.client_eof();
        let r = w.settle();
        prop_assert!(r.is_ok(), "{r:?}");
        let unanswered: Vec<_> = w.agent_asked.iter().filter(|(_, n)| **n != 1).collect();
        prop_assert!(unanswered.is_empty(), "agent requests without their one response: {unanswered:?}");
        let r = w.guests_told();
        prop_assert!(r.is_ok(), "at the end: {r:?}");
    }
}
