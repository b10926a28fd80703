//! `--linger`: clients that leave and come back. The router keeps, for the next client,
//! what the agent does while none is attached ([`super::stores::held`]), and gives the next
//! one the session it left:
//! - a later client's `initialize` is answered by the bridge with the result the first one
//!   got (the agent was initialized once);
//! - `session/load` of a session the bridge holds attaches the client to it: the kept
//!   updates are replayed, then the result; `session/resume` gives the result alone; then
//!   the session's pending questions are shown to the new client in its dialect, and the
//!   agent's requests waiting for a client are sent to it;
//! - a result for a request of a client that left goes to nobody (a `session/prompt`'s
//!   stop reason is kept as a chat note), and a later client's request whose id is still at
//!   the agent for the client that left goes to the agent under a bridge id.
//!
//! Invariants: a response is never sent to a client under an id that client did not send;
//! the agent is initialized once; a question is answered once, whoever shows it.

use std::time::Instant;

use bytes::Bytes;
use serde_json::{json, Value};

use super::message::Req;
use super::{Out, Outbox, Router, Side};
use crate::envelope::RequestId;
use crate::jsonrpc;
use crate::rawjson::{self, Existing};
use crate::router::stores::requests::InFlight;

impl Router {
    /// The client left (its front died, or its input ended) and the agent is kept: its
    /// questions wait on the other surfaces, the agent's requests wait for the next client,
    /// and its requests still at the agent are answered to nobody.
    pub(in crate::router) fn on_client_detached(&mut self, _now: Instant, out: &mut Outbox) {
        let in_flight: Vec<(RequestId, Box<str>, Option<Box<str>>)> = self
            .requests
            .from(Side::Client)
            .iter()
            .map(|(id, r)| (id.clone(), r.method.clone(), r.session_id.clone()))
            .collect();
        tracing::info!(
            requests = in_flight.len(),
            questions = self.questions.len(),
            "the client left; its questions wait for another client or another surface"
        );
        self.held.detach(in_flight.into_iter());
        // Its loads held back are its own: never answered to the next client.
        self.sessions.drop_held_back();
        // A request the client showed as the agent sent it, which the agent then cancelled,
        // waits only for the client's -32800: it is given on the client's behalf (no later
        // client is shown a request already cancelled).
        let cancelled: Vec<RequestId> = self
            .requests
            .from(Side::Agent)
            .keys()
            .filter(|id| !self.held.waits(id))
            .cloned()
            .collect();
        for id in cancelled {
            self.cancelled_for_client(&id, out);
        }
        // Its questions are now shown nowhere but on the other surfaces.
        for delivery in self.questions.deliveries_mut() {
            delivery.held = true;
            // Its tool call was the client's that left: the next is shown one of its own.
            delivery.tool_call_id = None;
        }
    }

    /// `--linger`: whether `session`, which this holder does not keep, may be another
    /// holder's.
    pub(in crate::router) fn may_be_kept_elsewhere(&self, session: &str) -> bool {
        self.cfg.linger && !self.held.holds(session)
    }

    /// The shell's answer to [`super::Effect::WhoKeeps`]: the pid of the other holder that
    /// keeps the session the client's request `id` loads, or `None`.
    pub(in crate::router) fn on_kept_elsewhere(
        &mut self,
        id: &RequestId,
        holder: Option<u32>,
        now: Instant,
        out: &mut Outbox,
    ) {
        super::handlers::session::kept_elsewhere(self, id, holder, now, out);
    }

    /// A client attached: it is initialized and given sessions as it asks.
    pub(in crate::router) fn on_client_attached(&mut self, _now: Instant, _out: &mut Outbox) {
        self.held.attach();
        *self.clients.attached_mut() = super::client::ClientView::new(&self.cfg);
        tracing::info!(generation = self.held.generation, "a client attached");
    }

    /// The id the client sent for what went to the agent as `id`.
    pub(in crate::router) fn original_id(&self, id: &RequestId) -> RequestId {
        self.held.original(id).clone()
    }

    /// For `bridge.status` (`--linger`): the sessions kept, each with its pending questions
    /// and whether the attached client has it.
    pub(super) fn held_status(&self) -> Value {
        let mut held = self.held.status();
        // The clients there now: the attached one and those that joined.
        held["clients"] = (usize::from(self.held.attached) + self.clients.len()).into();
        for s in held["sessions"].as_array_mut().into_iter().flatten() {
            let id = s["sessionId"].as_str().unwrap_or_default().to_owned();
            s["pendingQuestions"] = self.questions.session_len(&id).into();
            s["clientHasIt"] = self.held.client_has(&id).into();
            s["clients"] =
                (usize::from(self.held.client_has(&id)) + self.clients.having(&id).len()).into();
        }
        held
    }

    /// What fronts are told of this holder (`--linger`) changes with this number: the
    /// `initialize` result a later client gets, the sessions kept.
    pub fn held_version(&self) -> u64 {
        self.held.version
    }

    /// What fronts are told, with its version ([`Router::held_version`]).
    pub fn held_for_fronts(&self) -> (u64, Option<&str>, Vec<String>) {
        let mut sessions: Vec<String> = self.held.session_ids().map(str::to_owned).collect();
        sessions.sort();
        (self.held.version, self.held.init_result(), sessions)
    }

    /// The `initialize` result a later client gets, once the agent gave one.
    pub fn held_init(&self) -> Option<&str> {
        self.held.init_result()
    }

    /// The attached client's `initialize` was answered by its front with this holder's
    /// result (as the holder would have): the holder sets the client view from it when it
    /// reads it, and does not answer it again.
    pub(in crate::router) fn front_answered_initialize(&mut self) {
        self.held.front_answered = true;
    }

    /// Whether the attached client may be shown what concerns `session`.
    pub(in crate::router) fn client_sees(&self, session: &str) -> bool {
        !self.cfg.linger || self.held.client_has(session)
    }

    /// A client request whose id is still at the agent for a client that left goes to the
    /// agent under a bridge id (its response is given back the client's).
    pub(super) fn unclash(&mut self, id: RequestId, line: Bytes) -> (RequestId, Bytes) {
        if !self.held.is_orphan(&id) && !self.requests.from(Side::Client).contains_key(&id) {
            return (id, line);
        }
        let bridge = self.bridge_id();
        let Some(value) = serde_json::from_str::<Value>(bridge.as_json()).ok() else {
            return (id, line);
        };
        let Some(new) = std::str::from_utf8(&line)
            .ok()
            .and_then(|l| rawjson::merge(l, &[], "id", &value, Existing::Replace))
        else {
            return (id, line);
        };
        tracing::debug!(client = %id, bridge = %bridge, "a client id still at the agent for the client that left; sent under a bridge id");
        self.held.remap(bridge.clone(), id);
        (bridge, Bytes::from(new))
    }

    /// A client request on its way to the agent under `id` (`--linger`): a load or resume
    /// (the agent's replay of that session is the client's), or the `initialize` later
    /// clients are answered with (one its front answered already goes to nobody).
    pub(super) fn client_request_at_agent(
        &mut self,
        id: &RequestId,
        method: &str,
        session: Option<&str>,
    ) {
        let loads = matches!(
            method,
            crate::methods::SESSION_LOAD | crate::methods::SESSION_RESUME
        );
        if let (true, Some(s)) = (loads, session) {
            self.held.loading(id.clone(), s);
        }
        if method == crate::methods::INITIALIZE {
            self.held.initializing(id);
            if std::mem::take(&mut self.held.init_unanswered) {
                self.held.orphan(id.clone(), method);
            }
        }
    }

    /// A client request refused at `--max-in-flight` after [`Router::client_request_at_agent`]:
    /// forgotten there; the id to refuse it under (the client's own).
    pub(super) fn client_request_refused(&mut self, id: RequestId) -> RequestId {
        self.held.loaded(&id);
        self.held.init_failed(&id);
        self.held.unmap(&id).unwrap_or(id)
    }

    /// An agent's request to the client, tracked: sent to the attached client when it has
    /// the request's session, else kept until one does.
    pub(super) fn agent_request_for_client(
        &mut self,
        id: RequestId,
        session: Option<&str>,
        line: Bytes,
        out: &mut Outbox,
    ) {
        let show = match session {
            Some(s) => self.held.client_has(s),
            None => self.held.attached && self.held.init_result().is_some(),
        };
        self.held.agent_asks(id.clone(), session, &line, show);
        if show {
            self.forward(Side::Agent, line, out);
        } else {
            tracing::info!(session = ?session, "the agent's request waits for a client");
            if let Some(s) = session {
                self.agent_request_for_joined(&id, s, &line, out);
            }
        }
    }

    /// The agent's response to a client request: `None` when it goes to nobody (the client
    /// that sent it left), else the line with the client's own id.
    pub(super) fn for_which_client(
        &mut self,
        id: &RequestId,
        req: &InFlight,
        line: Bytes,
        out: &mut Outbox,
    ) -> Option<Bytes> {
        if &*req.method == crate::methods::INITIALIZE {
            self.initialize_answered(id, out);
        }
        if let Some((method, session)) = self.held.orphan_answered(id) {
            tracing::info!(%id, method = %method, "the result for a client that left goes to nobody");
            if &*method == crate::methods::SESSION_PROMPT {
                if let Some(s) = session.as_deref() {
                    let reason = serde_json::from_slice::<Value>(&line)
                        .ok()
                        .and_then(|v| v["result"]["stopReason"].as_str().map(str::to_owned));
                    let ended = match reason {
                        Some(r) => format!("ended: {r}."),
                        None => "ended with an error.".into(),
                    };
                    if self.held.client_has(s) {
                        // The client that took the session is told now (and the note is
                        // part of the session's conversation).
                        let said = format!("The turn begun before this editor attached {ended}");
                        self.session_note(s, &said, out);
                    } else {
                        let said = format!("While no editor was attached, the turn {ended}");
                        self.away_note(s, &said);
                    }
                }
            }
            return None;
        }
        match self.held.unmap(id) {
            None => Some(line),
            Some(client) => {
                let value = serde_json::from_str::<Value>(client.as_json()).ok()?;
                let text = std::str::from_utf8(&line).ok()?;
                rawjson::merge(text, &[], "id", &value, Existing::Replace).map(Bytes::from)
            }
        }
    }

    /// Shows `open` again, to the client attached now, in its dialect: rendered from the
    /// question as the first delivery was (what it can choose among, the agent's request
    /// as it was for a dialect that sends it as sent), with a delivery of its own.
    fn show_again(&mut self, mut open: crate::questions::open::Open, out: &mut Outbox) {
        let (dialect, as_sent) = self.clients.attached().pick(&open.choose);
        let blank = crate::questions::open::Delivery::new(open.agent_id.clone());
        open.show_to(crate::questions::open::Who::Attached, blank);
        let original = open.original.clone().filter(|_| as_sent);
        self.show(open, dialect, original.as_ref(), out);
    }

    /// The first `initialize` has its result: the later clients' waiting for it get it (or
    /// an error, and theirs goes to the agent next time); what waits outside any session is
    /// sent after the result ([`Router::after_response`]).
    fn initialize_answered(&mut self, id: &RequestId, out: &mut Outbox) {
        let result = self.held.init_result().map(str::to_owned);
        if result.is_none() {
            self.held.init_failed(id);
        }
        for waiter in self.held.take_init_waiters() {
            out.client(match &result {
                Some(r) => jsonrpc::result_text(&waiter, r),
                None => jsonrpc::error(
                    Some(&waiter),
                    crate::jsonrpc::code::INTERNAL_ERROR,
                    "the agent's initialize failed; send initialize again",
                    None,
                ),
            });
        }
        self.held.sessionless_due = result.is_some();
    }

    /// After a response went to the client: what waits outside any session goes next, once
    /// the client has its `initialize` result.
    pub(super) fn after_response(&mut self, out: &mut Outbox) {
        if std::mem::take(&mut self.held.sessionless_due) && self.held.attached {
            for waiting in self.held.unsent(None) {
                self.forward(Side::Agent, waiting, out);
            }
        }
    }

    /// The agent's `$/cancel_request` of a request of its that waits for a client and was
    /// not sent to the one attached (`--linger`): answered on the client's behalf with
    /// -32800, and forgotten. False for anything else.
    pub(in crate::router) fn cancel_unsent(
        &mut self,
        params: Option<&str>,
        out: &mut Outbox,
    ) -> bool {
        if !self.cfg.linger {
            return false;
        }
        let named = params
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
            .and_then(|p| p.get("requestId").cloned())
            .map(|v| RequestId::from_json(&v.to_string()));
        let Some(id) = named else { return false };
        if !self.held.waits_unsent(&id) {
            return false;
        }
        self.cancelled_for_client(&id, out);
        true
    }

    /// The agent's request `id`, cancelled, answered -32800 on the client's behalf.
    fn cancelled_for_client(&mut self, id: &RequestId, out: &mut Outbox) {
        self.held.agent_answered(id);
        self.joined_agent_request_over(id, out);
        let _ = self.requests.answered(Side::Client, id);
        out.agent(jsonrpc::error(
            Some(id),
            crate::jsonrpc::code::REQUEST_CANCELLED,
            "Request cancelled",
            None,
        ));
    }

    /// The client's `$/cancel_request` as the agent is to see it: the bridge id its request
    /// went under, or `None` for one naming a request of a client that left.
    pub(in crate::router) fn cancel_for_this_client(
        &mut self,
        params: Option<&str>,
        line: &Bytes,
    ) -> Option<Bytes> {
        if !self.cfg.linger {
            return Some(line.clone());
        }
        let named = params
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
            .and_then(|p| p.get("requestId").cloned())
            .map(|v| RequestId::from_json(&v.to_string()));
        let Some(named) = named else {
            return Some(line.clone());
        };
        if let Some(bridge) = self.held.remapped_to(&named) {
            let value = serde_json::from_str::<Value>(bridge.as_json()).ok()?;
            let text = std::str::from_utf8(line).ok()?;
            return rawjson::merge(text, &["params"], "requestId", &value, Existing::Replace)
                .map(Bytes::from);
        }
        if self.held.is_orphan(&named) {
            tracing::info!(%named, "a cancel of a request of the client that left; dropped");
            return None;
        }
        Some(line.clone())
    }

    /// A later client's `initialize`: answered by the bridge with what the first client
    /// got. False when the agent was not initialized yet (it goes to the agent).
    pub(in crate::router) fn initialize_again(&mut self, req: &Req<'_>, out: &mut Outbox) -> bool {
        if !self.cfg.linger {
            return false;
        }
        if std::mem::take(&mut self.held.front_answered) {
            if self.held.init_result().is_none() {
                // A holder just started (the one the front read it for was taken): the agent
                // is initialized with it, and its result goes to nobody.
                self.held.init_unanswered = true;
                return false;
            }
            tracing::info!("the front answered this client's initialize with this holder's result");
            for line in self.held.unsent(None) {
                self.forward(Side::Agent, line, out);
            }
            return true;
        }
        let Some(result) = self.held.init_result().map(str::to_owned) else {
            if self.held.init_in_flight() {
                // The first client left before the agent answered: this one waits for it.
                self.held.wait_for_init(req.id.clone());
                return true;
            }
            // It goes to the agent ([`Router::track_request`] notes the id it goes under).
            return false;
        };
        tracing::info!(
            "the agent was initialized before: the bridge answers this client's initialize"
        );
        out.client(jsonrpc::result_text(&req.id, &result));
        // What waits for a client outside any session is this one's now.
        for line in self.held.unsent(None) {
            self.forward(Side::Agent, line, out);
        }
        true
    }

    /// The agent's `initialize` result, as the client gets it: kept for later clients,
    /// with `loadSession` and `sessionCapabilities.resume` (the bridge answers both for the
    /// sessions it holds).
    pub(in crate::router) fn initialized(&mut self, id: &RequestId, line: Bytes) -> Bytes {
        if !self.cfg.linger {
            return line;
        }
        let line = super::rewrite(line, |l| {
            rawjson::merge(
                l,
                &["result", "agentCapabilities"],
                "loadSession",
                &json!(true),
                Existing::Replace,
            )
        });
        let line = super::rewrite(line, |l| {
            rawjson::merge(
                l,
                &["result", "agentCapabilities", "sessionCapabilities"],
                "resume",
                &json!({}),
                Existing::Keep,
            )
        });
        // An agent that cannot list its sessions: the bridge lists those it holds.
        let lists = serde_json::from_slice::<Value>(&line).is_ok_and(|v| {
            v["result"]["agentCapabilities"]["sessionCapabilities"]
                .get("list")
                .is_some_and(|l| !l.is_null())
        });
        let line = if lists {
            line
        } else {
            self.held.answer_list = true;
            super::rewrite(line, |l| {
                rawjson::merge(
                    l,
                    &["result", "agentCapabilities", "sessionCapabilities"],
                    "list",
                    &json!({}),
                    Existing::Keep,
                )
            })
        };
        if let Some(result) = serde_json::from_slice::<Value>(&line)
            .ok()
            .and_then(|v| v.get("result").map(Value::to_string))
        {
            self.held.initialized(id, &result);
        }
        line
    }

    /// `session/list` for an agent that cannot list its sessions: the sessions the bridge
    /// holds (in `cwd` when given), all in one page. False: the agent answers.
    pub(in crate::router) fn list_held_sessions(
        &mut self,
        req: &Req<'_>,
        cwd: Option<&str>,
        out: &mut Outbox,
    ) -> bool {
        if !self.cfg.linger || !self.held.answer_list {
            return false;
        }
        let sessions: Vec<Value> = self
            .held
            .session_ids_recent()
            .into_iter()
            .filter_map(|s| {
                let dir = self.sessions.cwd(s).or(self.cfg.cwd.as_deref())?;
                let dir = dir.to_string_lossy();
                if cwd.is_some_and(|c| c != dir) {
                    return None;
                }
                Some(json!({ "sessionId": s, "cwd": dir }))
            })
            .collect();
        out.client(jsonrpc::result_text(
            &req.id,
            &json!({ "sessions": sessions }).to_string(),
        ));
        true
    }

    /// A session began or was loaded through the bridge: it is held, and the attached
    /// client has it.
    pub(in crate::router) fn session_seen(&mut self, session: &str, line: &[u8]) {
        if !self.cfg.linger {
            return;
        }
        let result = serde_json::from_slice::<Value>(line).ok().and_then(|v| {
            let mut r = v.get("result")?.clone();
            r.as_object_mut()?.remove("sessionId");
            Some(r.to_string())
        });
        self.held.session_began(session, result);
        if !self.held.for_orphan {
            self.held.client_takes(session);
        }
    }

    /// `session/load` or `session/resume` of a session the bridge holds: answered by the
    /// bridge (the replay first, for a load), then the session's questions and the agent's
    /// requests are shown to this client. False for a session it does not hold.
    pub(in crate::router) fn attach_session(
        &mut self,
        req: &Req<'_>,
        session: &str,
        replay: bool,
        out: &mut Outbox,
    ) -> bool {
        if !self.cfg.linger || !self.held.holds(session) {
            return false;
        }
        if self.held.client_has(session) {
            if replay {
                // A load of a session it has goes to the agent, as without `--linger`.
                return false;
            }
            // A resume of a session it has (the bridge advertises resume, which the agent
            // may not have): its result, nothing more.
            let result = self.held.session_result(session).unwrap_or("{}").to_owned();
            out.client(jsonrpc::result_text(&req.id, &result));
            return true;
        }
        tracing::info!(
            session,
            replay,
            "the client takes a session the bridge holds"
        );
        // A resume replays nothing, but is told what happened while no client had it.
        let away = match replay {
            true => Vec::new(),
            false => self.held.away_notes(session),
        };
        if replay {
            let history = super::history::History::of(req.params);
            for line in self.replay(session, history) {
                self.counters.forwarded_to_client += 1;
                out.to_client.push_back(Out::Line(line));
            }
        }
        if let (true, Some(note)) = (replay, self.waiting_note(session)) {
            // In the replay, which every client that loads shows (codecompanion.nvim shows
            // nothing else outside its own prompt: docs/CLIENTS.md).
            self.notify_client(note, out);
        }
        self.held.replayed(session);
        let result = self.held.session_result(session).unwrap_or("{}").to_owned();
        out.client(jsonrpc::result_text(&req.id, &result));
        self.held.client_takes(session);
        for note in away {
            self.notify_client(note, out);
        }
        self.redeliver(session, out);
        true
    }

    /// Shows the attached client what of `session` waits: its questions, in its dialect,
    /// and the agent's requests.
    fn redeliver(&mut self, session: &str, out: &mut Outbox) {
        for open in self.questions.take_session(session) {
            // The user came back to an editor that shows them the question: at the desk,
            // as after a prompt (nothing rings for a while).
            out.at_desk = true;
            self.show_again(open, out);
        }
        for line in self.held.unsent(Some(session)) {
            self.forward(Side::Agent, line, out);
        }
    }
}
