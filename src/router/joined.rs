//! `--linger`: several clients on one session (RFD #533). Beside the attached client, a
//! client may join a session the holder keeps, while another client has it:
//! - its `initialize` is answered with the agent's first result, and its `session/load` or
//!   `session/resume` of a held session by the bridge (a load replays what is kept, and says
//!   that what was said before it joined is not);
//! - the agent's updates of a session go to every client that has it;
//! - each pending question of the session is shown to it in its own dialect; the first
//!   answer, from any client or surface, goes to the agent, and every other client is told
//!   as it is told of an answer from the page ([`super::joined_asks`]);
//! - its requests (a prompt, a cancel) of a session it has go to the agent under bridge ids,
//!   and their results come back to it under its own ids.
//!
//! The agent's own requests to a client (`fs/*`, `terminal/*`) go to the attached client,
//! or, when it does not have their session, to a joined client that has it. Invariant: a
//! joined client is sent nothing of a session it has not loaded, and no response under an
//! id it did not send.

use std::time::Instant;

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::Value;

use super::client::ClientView;
use super::lifecycle::render::note_line;
use super::stores::clients::{Client, Sent};
use super::{Out, Outbox, Router};
use crate::capabilities::ClientSupport;
use crate::codec::Frame;
use crate::envelope::{self, Kind, RequestId};
use crate::jsonrpc::{self, code};
use crate::methods;
use crate::rawjson::{self, Existing};
use crate::scan::Batch;

impl Router {
    /// A client joins the held sessions while another is attached (`--linger`): it is
    /// `client` from now on. False when it may not (no `--linger`, or too many joined).
    pub(in crate::router) fn on_client_joined(
        &mut self,
        client: u32,
        front_answered: bool,
    ) -> bool {
        if !self.cfg.linger || !self.clients.room() {
            return false;
        }
        let view = ClientView::new(&self.cfg);
        self.clients.join(
            client,
            Client {
                view,
                sessions: Default::default(),
                front_answered,
            },
        );
        tracing::info!(client, "a client joined the held sessions");
        true
    }

    /// A joined client left: forgotten, with what it was shown; its requests still at the
    /// agent are answered to nobody.
    pub(in crate::router) fn on_joined_left(&mut self, client: u32) {
        self.clients.leave(client);
        self.questions.forget_client(client);
        tracing::info!(client, "a joined client left");
    }

    /// Whether joined client `client` has `session`.
    fn joined_has(&self, client: u32, session: &str) -> bool {
        self.clients
            .client(client)
            .is_some_and(|c| c.sessions.contains(session))
    }

    /// How many clients joined.
    pub fn joined_clients(&self) -> usize {
        self.clients.len()
    }

    /// Whether the bridge holds `session` (`--linger`): a client may join it.
    pub fn holds_session(&self, session: &str) -> bool {
        self.cfg.linger && self.held.holds(session)
    }

    /// The held sessions no client has now (neither the attached one nor one that joined):
    /// those whose loss nobody was told of when the agent exited.
    pub fn sessions_no_client_has(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .held
            .session_ids()
            .filter(|s| !self.held.client_has(s) && !self.clients.has(s))
            .map(str::to_owned)
            .collect();
        ids.sort();
        ids
    }

    /// The lines of one read from joined client `client`.
    pub(in crate::router) fn on_joined_batch(
        &mut self,
        client: u32,
        batch: Batch,
        now: Instant,
        out: &mut Outbox,
    ) {
        for (piece, _) in batch.lines {
            self.on_joined_frame(client, piece.frame(&batch.data), now, out);
        }
    }

    /// A frame read from joined client `client`.
    pub(in crate::router) fn on_joined_frame(
        &mut self,
        client: u32,
        frame: Frame,
        now: Instant,
        out: &mut Outbox,
    ) {
        match frame {
            Frame::Line(line) => self.on_joined_line(client, line, now, out),
            Frame::TooLong { bytes } => tracing::warn!(
                client,
                bytes,
                "discarded a joined client's line longer than --max-line-bytes"
            ),
        }
    }

    fn on_joined_line(&mut self, client: u32, line: Bytes, now: Instant, out: &mut Outbox) {
        if self.clients.client(client).is_none() {
            return;
        }
        let view = line.clone();
        match envelope::classify(&view) {
            Kind::Request { id, method, params } => {
                let params = params.map(RawValue::get);
                self.joined_request(client, id, &method, params, line, now, out)
            }
            Kind::Notification { method, params } => {
                let params = params.map(RawValue::get);
                self.joined_notification(client, &method, params, line, out)
            }
            Kind::Response { id, outcome } => {
                self.joined_response(client, &id, outcome, &line, now, out)
            }
            Kind::Batch => out.joined(
                client,
                jsonrpc::error(None, code::INVALID_REQUEST, "batches are not taken", None),
            ),
            Kind::Invalid {
                id,
                response_like,
                reason,
            } => {
                if !response_like {
                    let msg = format!("Invalid Request: {reason}");
                    let error = jsonrpc::error(id.as_ref(), code::INVALID_REQUEST, &msg, None);
                    out.joined(client, error);
                }
            }
            Kind::NotJson { error } => {
                let msg = format!("Parse error: {error}");
                out.joined(client, jsonrpc::error(None, code::PARSE_ERROR, &msg, None));
            }
        }
    }

    /// A joined client's request: `initialize` and the load or resume of a held session are
    /// answered by the bridge; anything else goes to the agent under a bridge id.
    #[allow(clippy::too_many_arguments)]
    fn joined_request(
        &mut self,
        client: u32,
        id: RequestId,
        method: &str,
        params: Option<&str>,
        line: Bytes,
        now: Instant,
        out: &mut Outbox,
    ) {
        let session = params.and_then(envelope::session_id_in);
        match method {
            methods::INITIALIZE => {
                let raw = params.and_then(|p| serde_json::from_str::<&RawValue>(p).ok());
                let support = ClientSupport::from_initialize(raw);
                let Some(c) = self.clients.client_mut(client) else {
                    return;
                };
                c.view.initialized(support);
                if std::mem::take(&mut c.front_answered) {
                    return;
                }
                let answer = match self.held.init_result() {
                    Some(result) => jsonrpc::result_text(&id, result),
                    None => jsonrpc::error(
                        Some(&id),
                        code::INTERNAL_ERROR,
                        "the agent is not initialized yet; send initialize again",
                        None,
                    ),
                };
                return out.joined(client, answer);
            }
            methods::SESSION_LOAD | methods::SESSION_RESUME => {
                // A load replays the conversation (as much as it asks for); a resume, none.
                let history =
                    (method == methods::SESSION_LOAD).then(|| super::history::History::of(params));
                return self.join_session(client, &id, session.as_deref(), history, now, out);
            }
            _ => {}
        }
        let begins = matches!(method, methods::SESSION_NEW | methods::SESSION_LIST);
        if let (false, Some(s)) = (begins, session.as_deref()) {
            if !self.joined_has(client, s) {
                // Nothing of a session it has not loaded: not its prompts, not its turns.
                let msg =
                    format!("this client has not loaded session {s:?} (session/load it first)");
                let error = jsonrpc::error(Some(&id), code::INVALID_PARAMS, &msg, None);
                return out.joined(client, error);
            }
        }
        if self.clients.requests_at_agent() >= self.cfg.max_in_flight {
            let msg = format!(
                "too many requests in flight through the bridge (limit {})",
                self.cfg.max_in_flight
            );
            return out.joined(
                client,
                jsonrpc::error(Some(&id), code::SERVER_ERROR, &msg, None),
            );
        }
        let bridge = self.bridge_id();
        let Some(sent) = with_id(&line, &[], "id", &bridge) else {
            return;
        };
        if matches!(method, methods::SESSION_NEW | methods::SESSION_FORK) {
            // The session's folder, for the approval policy (as `handlers::session` holds
            // the attached client's).
            let cwd = params
                .and_then(|p| serde_json::from_str::<Value>(p).ok())
                .and_then(|p| p["cwd"].as_str().map(std::path::PathBuf::from))
                .filter(|c| c.is_absolute());
            if let Some(cwd) = cwd {
                self.sessions.wait(bridge.clone(), cwd, None);
            }
        }
        tracing::debug!(client, %id, %bridge, method, "a joined client's request goes to the agent under a bridge id");
        self.clients.sent(
            bridge,
            Sent {
                client,
                id,
                method: method.into(),
            },
        );
        self.counters.forwarded_to_agent += 1;
        out.to_agent.push_back(Out::Line(sent));
        if method == methods::SESSION_PROMPT {
            out.at_desk = true;
            if let (Some(s), Some(p)) = (session.as_deref(), params) {
                self.keep_prompt(s, p);
            }
        }
    }

    /// A joined client's notification: a `session/cancel` also ends the session's questions
    /// (as the attached client's does); a `$/cancel_request` names the bridge id its request
    /// went under.
    fn joined_notification(
        &mut self,
        client: u32,
        method: &str,
        params: Option<&str>,
        line: Bytes,
        out: &mut Outbox,
    ) {
        let session = params.and_then(envelope::session_id_in);
        if let Some(s) = session.as_deref().filter(|s| !self.joined_has(client, s)) {
            tracing::warn!(
                client,
                method,
                session = s,
                "a joined client's notification of a session it has not loaded; dropped"
            );
            return;
        }
        let line = match method {
            methods::CANCEL_REQUEST => {
                let named = params
                    .and_then(|p| serde_json::from_str::<Value>(p).ok())
                    .and_then(|p| p.get("requestId").map(Value::to_string))
                    .map(|id| RequestId::from_json(&id));
                let bridge = named.and_then(|n| self.clients.bridge_id_of(client, &n));
                match bridge.and_then(|b| with_id(&line, &["params"], "requestId", &b)) {
                    Some(line) => line,
                    None => return,
                }
            }
            _ => line,
        };
        self.counters.forwarded_to_agent += 1;
        out.to_agent.push_back(Out::Line(line));
        if method == methods::SESSION_CANCEL {
            if let Some(session) = params.and_then(envelope::session_id_in) {
                self.cancel_session_questions(&session, out);
                self.answer_agent_requests(Some(&session), true, out);
            }
        }
    }

    /// A joined client takes a session the bridge holds: its conversation as `history`
    /// says (a load), the result, then the session's pending questions in its dialect.
    fn join_session(
        &mut self,
        client: u32,
        id: &RequestId,
        session: Option<&str>,
        history: Option<super::history::History>,
        now: Instant,
        out: &mut Outbox,
    ) {
        let replay = history.is_some();
        let _ = now;
        let Some(session) = session.filter(|s| self.held.holds(s)) else {
            let msg = "this bridge does not hold that session: a client that joined may load only the sessions the bridge holds";
            let error = jsonrpc::error(Some(id), code::INVALID_PARAMS, msg, None);
            return out.joined(client, error);
        };
        tracing::info!(
            client,
            session,
            replay,
            "a joined client takes a held session"
        );
        if let Some(history) = history {
            let shared = self.held.client_has(session) || self.clients.has(session);
            if shared {
                let text = "This session is open in another editor too: from here on, its updates, questions and prompts are shared.";
                out.joined(client, note_line(session, text));
            }
            for line in self.replay(session, history) {
                out.joined(client, line);
            }
        }
        let result = self.held.session_result(session).unwrap_or("{}").to_owned();
        out.joined(client, jsonrpc::result_text(id, &result));
        if let Some(c) = self.clients.client_mut(client) {
            c.sessions.insert(session.into());
        }
        let pending: Vec<RequestId> = self
            .questions
            .iter()
            .filter(|o| o.question.session_id == session)
            .map(|o| o.agent_id.clone())
            .collect();
        // The user opened the session in an editor that shows them its questions: at the
        // desk, as after a prompt (nothing rings for a while).
        out.at_desk |= !pending.is_empty();
        for agent_id in pending {
            self.show_open_to_joined(client, &agent_id, out);
        }
        // The agent's requests of the session that no client was sent (the attached one does
        // not have it): this one's too.
        for (id, line) in self.held.unsent_of(session) {
            if !self.clients.was_asked(&id) {
                out.joined(client, line);
                self.clients.asked(id, client);
            }
        }
    }

    /// The attached client answered the agent's request `id`: a joined client that was sent
    /// it too closes it.
    pub(super) fn joined_agent_request_over(&mut self, id: &RequestId, out: &mut Outbox) {
        let Some(client) = self.clients.untake_asked(id) else {
            return;
        };
        if self
            .clients
            .client(client)
            .is_some_and(|c| c.view.sends_cancel_requests())
        {
            out.joined(client, jsonrpc::cancel_request(id));
        }
    }

    /// The agent's request `id` in `session`, which the attached client does not have: sent
    /// to a joined client that has it, if any (its response goes to the agent). It stays
    /// kept for the next attached client too: the first response is the agent's.
    pub(super) fn agent_request_for_joined(
        &mut self,
        id: &RequestId,
        session: &str,
        line: &Bytes,
        out: &mut Outbox,
    ) {
        if let Some(&client) = self.clients.having(session).first() {
            out.joined(client, line.clone());
            self.clients.asked(id.clone(), client);
        }
    }

    /// The agent's response to `id`, when it is a joined client's request: to that client
    /// under its own id (nobody, when it left). False for anything else.
    pub(super) fn joined_result(
        &mut self,
        id: &RequestId,
        ok: bool,
        line: &Bytes,
        out: &mut Outbox,
    ) -> bool {
        let Some(sent) = self.clients.answered(id) else {
            return false;
        };
        let gone = self.clients.client(sent.client).is_none();
        let folder = self.sessions.answered(id).map(|(cwd, _)| cwd);
        if ok && matches!(&*sent.method, methods::SESSION_NEW | methods::SESSION_FORK) {
            // A session it began: held, and its.
            let v: Option<Value> = serde_json::from_slice(line).ok();
            if let Some(s) = v.as_ref().and_then(|v| v["result"]["sessionId"].as_str()) {
                let mut result = v.as_ref().map(|v| v["result"].clone()).unwrap_or_default();
                if let Some(o) = result.as_object_mut() {
                    o.remove("sessionId");
                }
                // (Held even when its client left: it is nobody's, and no other client
                // is sent its updates.)
                self.held.session_began(s, Some(result.to_string()));
                if let Some(cwd) = folder {
                    self.sessions.insert(s.to_owned(), cwd);
                }
                if let Some(c) = self.clients.client_mut(sent.client) {
                    c.sessions.insert(s.into());
                }
            }
        }
        if gone {
            tracing::info!(%id, method = %sent.method, "the result for a joined client that left goes to nobody");
            return true;
        }
        if let Some(line) = with_id(line, &[], "id", &sent.id) {
            out.joined(sent.client, line);
        }
        true
    }

    /// The agent is gone: each joined client's request still at it gets one error.
    pub(super) fn joined_agent_gone(&mut self, exit: &str, out: &mut Outbox) {
        for sent in self.clients.take_requests() {
            if self.clients.client(sent.client).is_some() {
                let message = format!("{exit} while handling {}", sent.method);
                let error = jsonrpc::error(Some(&sent.id), code::INTERNAL_ERROR, &message, None);
                out.joined(sent.client, error);
            }
        }
    }

    /// An agent's line on its way to the attached client: a copy goes to each joined client
    /// that has its session.
    pub(super) fn fan_out(&mut self, line: &Bytes, out: &mut Outbox) {
        let Some(session) = super::away::update_session(line) else {
            return;
        };
        if self.held.is_loading(&session) {
            // The agent's replay for the attached client's load: that client's, not news.
            return;
        }
        for client in self.clients.having(&session) {
            out.joined(client, line.clone());
        }
    }

    /// [`Router::fan_out`] for each line of a run (`data[start..end]`, lines with their `\n`).
    pub(super) fn fan_out_run(&mut self, data: &Bytes, start: usize, end: usize, out: &mut Outbox) {
        let mut at = start;
        while at < end {
            let stop = memchr::memchr(b'\n', &data[at..end]).map_or(end, |i| at + i);
            self.fan_out(&data.slice(at..stop), out);
            at = stop + 1;
        }
    }
}

/// `line` with the id at `path`/`key` set to `id`.
fn with_id(line: &Bytes, path: &[&str], key: &str, id: &RequestId) -> Option<Bytes> {
    let value = serde_json::from_str::<Value>(id.as_json()).ok()?;
    let text = std::str::from_utf8(line).ok()?;
    rawjson::merge(text, path, key, &value, Existing::Replace).map(Bytes::from)
}
