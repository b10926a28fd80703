//! `--linger`: several clients on one session (RFD #533). Beside the attached client, a
//! client may join a session the holder keeps, while another client has it:
//! - its `initialize` is answered with the agent's first result, and its `session/load` or
//!   `session/resume` of a held session by the bridge (a load replays what is kept, and says
//!   that what was said before it joined is not);
//! - the agent's updates of a session go to every client that has it;
//! - each pending question of the session is shown to it in its own dialect; the first
//!   answer, from any client or surface, goes to the agent, and every other client is told
//!   as it is told of an answer from the page;
//! - its requests (a prompt, a cancel) go to the agent under bridge ids, and their results
//!   come back to it under its own ids.
//!
//! The agent's own requests to a client (`fs/*`, `terminal/*`) go to the attached client
//! only. Invariant: a joined client is sent nothing of a session it has not loaded, and no
//! response under an id it did not send.

use std::time::Instant;

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::Value;

use super::client::ClientView;
use super::lifecycle::render::{self, Line, Rendered};
use super::lifecycle::{closing, read_answer, Read};
use super::stores::joined::{Client, Sent};
use super::{Out, Outbox, Router};
use crate::capabilities::ClientSupport;
use crate::codec::Frame;
use crate::envelope::{self, Kind, RequestId};
use crate::events::By;
use crate::jsonrpc::{self, code};
use crate::methods;
use crate::questions::answer::{Outcome, Reason};
use crate::questions::chat;
use crate::questions::open::{Delivery, Open};
use crate::questions::Dialect;
use crate::rawjson::{self, Existing};
use crate::scan::Batch;

impl Router {
    /// A client joins the held sessions while another is attached (`--linger`): it is
    /// `client` from now on. False when it may not (no `--linger`, or too many joined).
    pub fn on_client_joined(&mut self, client: u32, front_answered: bool) -> bool {
        if !self.cfg.linger || !self.joined.room() {
            return false;
        }
        let view = ClientView::new(&self.cfg);
        self.joined.join(
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
    pub fn on_joined_left(&mut self, client: u32) {
        self.joined.leave(client);
        tracing::info!(client, "a joined client left");
    }

    /// How many clients joined.
    pub fn joined_clients(&self) -> usize {
        self.joined.len()
    }

    /// Whether the bridge holds `session` (`--linger`): a client may join it.
    pub fn holds_session(&self, session: &str) -> bool {
        self.cfg.linger && self.held.holds(session)
    }

    /// The lines of one read from joined client `client`.
    pub fn on_joined_batch(&mut self, client: u32, batch: Batch, now: Instant, out: &mut Outbox) {
        for (piece, _) in batch.lines {
            self.on_joined_frame(client, piece.frame(&batch.data), now, out);
        }
    }

    /// A frame read from joined client `client`.
    pub fn on_joined_frame(&mut self, client: u32, frame: Frame, now: Instant, out: &mut Outbox) {
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
        if self.joined.client(client).is_none() {
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
                self.joined_response(client, &id, outcome, &line, out)
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
                let Some(c) = self.joined.client_mut(client) else {
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
                let replay = method == methods::SESSION_LOAD;
                return self.join_session(client, &id, session.as_deref(), replay, now, out);
            }
            _ => {}
        }
        if self.joined.requests_at_agent() >= self.cfg.max_in_flight {
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
        tracing::debug!(client, %id, %bridge, method, "a joined client's request goes to the agent under a bridge id");
        self.joined.sent(
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
        let line = match method {
            methods::CANCEL_REQUEST => {
                let named = params
                    .and_then(|p| serde_json::from_str::<Value>(p).ok())
                    .and_then(|p| p.get("requestId").map(Value::to_string))
                    .map(|id| RequestId::from_json(&id));
                let bridge = named.and_then(|n| self.joined.bridge_id_of(client, &n));
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

    /// A joined client takes a session the bridge holds: the kept updates (a load), the
    /// result, then the session's pending questions in its dialect.
    fn join_session(
        &mut self,
        client: u32,
        id: &RequestId,
        session: Option<&str>,
        replay: bool,
        now: Instant,
        out: &mut Outbox,
    ) {
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
        if replay {
            let (updates, dropped) = self.held.updates(session);
            let updates: Vec<Bytes> = updates.cloned().collect();
            let shared = self.held.client_has(session) || self.joined.has(session);
            let mut said = Vec::new();
            if shared {
                said.push("This session is open in another editor too: from here on, its updates, questions and prompts are shared. What was said before you joined is not replayed here.".to_owned());
            }
            if dropped > 0 {
                said.push(format!(
                    "{dropped} earlier updates of this session were not kept; what follows is the rest."
                ));
            }
            for text in said {
                out.joined(client, session_note(session, &text));
            }
            for line in updates {
                out.joined(client, line);
            }
        }
        let result = self.held.session_result(session).unwrap_or("{}").to_owned();
        out.joined(client, jsonrpc::result_text(id, &result));
        if let Some(c) = self.joined.client_mut(client) {
            c.sessions.insert(session.into());
        }
        let pending: Vec<Open> = self
            .questions
            .iter()
            .filter(|o| o.question.session_id == session)
            .cloned()
            .collect();
        for open in pending {
            if !self.joined.is_shown(client, &open.agent_id) {
                self.show_joined(client, &open, out);
            }
        }
    }

    /// A joined client's response: its answer to a question it was shown (the first answer
    /// wins), or a late press (told it had no effect).
    fn joined_response(
        &mut self,
        client: u32,
        id: &RequestId,
        outcome: Result<&RawValue, &RawValue>,
        line: &Bytes,
        out: &mut Outbox,
    ) {
        let Some(mut shown) = self.joined.take_shown(client, id) else {
            let pressed = outcome.is_ok_and(|r| !super::lifecycle::is_cancelled(r));
            match self.joined.stale(client, id) {
                Some((session, note)) if pressed => {
                    out.joined(client, session_note(&session, &note))
                }
                Some(_) => {}
                None => {
                    tracing::warn!(client, %id, "a joined client's response to nothing it was asked; dropped")
                }
            }
            return;
        };
        let Some(open) = self.questions.get(&shown.agent_id).cloned() else {
            return;
        };
        out.at_desk = true;
        let result = match outcome {
            Ok(result) => result,
            Err(_) => {
                tracing::info!(client, %id, "a joined client did not show a question; it waits for the others");
                return;
            }
        };
        let Some(style) = self.joined.client(client).map(|c| c.view.prompt_style()) else {
            return;
        };
        match read_answer(style, &open.asked, &mut shown.delivery, result) {
            Read::Native => {
                let Some(p) = self.questions.take(&open.agent_id) else {
                    return;
                };
                let read = p.origin.read(&p.question, result);
                let ended = read.unwrap_or(Outcome::Rejected(Reason::Cancelled));
                self.close_at_client(&p, &ended, By::Client, true, out);
                // The client's result, under the agent's own id, goes to the agent as it is.
                self.native_answer(p, result, line, out);
            }
            Read::Ask(at) => {
                shown.delivery.at = at;
                let id = self.bridge_id();
                if let Some(lines) =
                    render::permission_step(&open.asked, &mut shown.delivery, id.clone())
                {
                    send(out, client, lines);
                    self.joined
                        .show(client, id, open.agent_id.clone(), shown.delivery);
                }
            }
            Read::Done(outcome, extras) => {
                let Some(p) = self.questions.take(&open.agent_id) else {
                    return;
                };
                if let Some(c) = self.joined.client(client) {
                    let own = closing(&c.view, &p, &shown.delivery, &outcome, By::Client, false);
                    send(
                        out,
                        client,
                        own.lines.into_iter().map(Line::Notification).collect(),
                    );
                }
                self.close_at_client(&p, &outcome, By::Client, true, out);
                self.finish(&p, outcome, &extras, By::Client, out);
            }
            Read::Invalid(why) => {
                tracing::warn!(client, %id, "a joined client's answer is not valid; shown to it again");
                let text =
                    format!("Your answer could not be used ({why}); the question is asked again.");
                out.joined(client, session_note(&open.question.session_id, &text));
                self.show_joined(client, &open, out);
            }
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
        let Some(sent) = self.joined.answered(id) else {
            return false;
        };
        if self.joined.client(sent.client).is_none() {
            tracing::info!(%id, method = %sent.method, "the result for a joined client that left goes to nobody");
            return true;
        }
        if ok && &*sent.method == methods::SESSION_NEW {
            // A session it began: held, and its.
            let v: Option<Value> = serde_json::from_slice(line).ok();
            if let Some(s) = v.as_ref().and_then(|v| v["result"]["sessionId"].as_str()) {
                let mut result = v.as_ref().map(|v| v["result"].clone()).unwrap_or_default();
                if let Some(o) = result.as_object_mut() {
                    o.remove("sessionId");
                }
                self.held.session_began(s, Some(result.to_string()));
                if let Some(c) = self.joined.client_mut(sent.client) {
                    c.sessions.insert(s.into());
                }
            }
        }
        if let Some(line) = with_id(line, &[], "id", &sent.id) {
            out.joined(sent.client, line);
        }
        true
    }

    /// The agent is gone: each joined client's request still at it gets one error.
    pub(super) fn joined_agent_gone(&mut self, exit: &str, out: &mut Outbox) {
        for sent in self.joined.take_requests() {
            if self.joined.client(sent.client).is_some() {
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
        for client in self.joined.having(&session) {
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

    /// A question is shown (or held): each joined client that has its session and is not
    /// shown it yet is shown it in its dialect.
    pub(in crate::router) fn show_to_joined(&mut self, p: &Open, out: &mut Outbox) {
        if !self.joined.any() {
            return;
        }
        for client in self.joined.having(&p.question.session_id) {
            if !self.joined.is_shown(client, &p.agent_id) {
                self.show_joined(client, p, out);
            }
        }
    }

    /// Shows `p` to joined client `client` in its dialect; one it cannot show is pointed at
    /// the other surfaces in its chat.
    fn show_joined(&mut self, client: u32, p: &Open, out: &mut Outbox) {
        let Some(c) = self.joined.client(client) else {
            return;
        };
        if c.view.support().is_none() {
            return;
        }
        let (dialect, as_sent) = c.view.pick(&p.choose);
        let style = c.view.prompt_style();
        let original = p.original.as_ref().filter(|_| as_sent);
        let mut d = Delivery::new(p.agent_id.clone());
        let rendered = match dialect {
            Dialect::Control => Rendered::Unsupported,
            _ => render::render(&p.asked, &mut d, dialect, original, style, &mut || {
                self.bridge_id()
            }),
        };
        match rendered {
            Rendered::Lines(lines) => {
                send(out, client, lines);
                self.joined
                    .show(client, d.client_id.clone(), p.agent_id.clone(), d);
            }
            Rendered::Obstacle(_) | Rendered::Unsupported => {
                let page = self.cfg.page_url.as_deref();
                let said = chat::waiting_text(&p.question, page).replace('\n', " ");
                out.joined(client, session_note(&p.question.session_id, &said));
            }
        }
    }

    /// `p` is over: each joined client shown it is told, as of an answer from the page, and
    /// a later press there is told it had no effect.
    pub(in crate::router) fn joined_over(
        &mut self,
        p: &Open,
        outcome: &Outcome,
        by: By,
        out: &mut Outbox,
    ) {
        for (client, id, shown) in self.joined.take_question(&p.agent_id) {
            let Some(c) = self.joined.client(client) else {
                continue;
            };
            let told = closing(&c.view, p, &shown.delivery, outcome, by, true);
            send(
                out,
                client,
                told.lines.into_iter().map(Line::Notification).collect(),
            );
            if let Some(note) = told.stale {
                self.joined.ended(client, id, &p.question.session_id, note);
            }
        }
    }
}

/// Sends joined client `client` a prompt's lines.
fn send(out: &mut Outbox, client: u32, lines: Vec<Line>) {
    for line in lines {
        let (Line::Forwarded(l) | Line::Request(l) | Line::Notification(l)) = line;
        out.joined(client, l);
    }
}

/// A chat note in `session`, as a `session/update`.
fn session_note(session: &str, text: &str) -> Bytes {
    jsonrpc::notification(methods::SESSION_UPDATE, &chat::note(session, text))
}

/// `line` with the id at `path`/`key` set to `id`.
fn with_id(line: &Bytes, path: &[&str], key: &str, id: &RequestId) -> Option<Bytes> {
    let value = serde_json::from_str::<Value>(id.as_json()).ok()?;
    let text = std::str::from_utf8(line).ok()?;
    rawjson::merge(text, path, key, &value, Existing::Replace).map(Bytes::from)
}
