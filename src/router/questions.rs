//! The question lifecycle inside the [`Router`], whatever the question's source (the
//! handlers in [`super::handlers`] parse each source's request): its delivery in the
//! client's dialect, the client's answers, and every way a question can end.
//!
//! Invariant: every question that enters the registry leaves it exactly once, and the agent
//! receives exactly one response for it: the client's normalized answer, an error for an
//! invalid answer, or a bridge-made rejection (`cancelled`, `timeout`,
//! `client_disconnected`, `unsupported`). Late and duplicate answers are dropped. Requests
//! the bridge sends itself use string ids with a per-process random prefix.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{rewrite, Outbox, Router, Side};
use crate::envelope::RequestId;
use crate::events::{By, Event, QuestionView};
use crate::jsonrpc::{self, code};
use crate::questions::answer::{self, Extras, Outcome, Reason};
use crate::questions::prompts::{self, Next, Style};
use crate::questions::registry::{Origin, Pending};
use crate::questions::sources::Reply;
use crate::questions::{chat, dialect, model, Dialect};
use crate::rawjson::{self, Existing};

/// The longest deadline a question gets (a longer `timeoutMs` or `--question-timeout` is
/// cut to this), so deadlines and `expiresAt` stay representable.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

impl Router {
    /// The dialect new questions are shown in on this connection.
    pub fn dialect(&self) -> Dialect {
        if let Some(forced) = self.cfg.client_dialect {
            return forced;
        }
        self.auto_dialect.unwrap_or_else(|| self.client_dialect())
    }

    /// The best standard dialect the client's `initialize` advertised.
    fn client_dialect(&self) -> Dialect {
        let c = self.client.clone().unwrap_or_default();
        if c.native_questions {
            Dialect::Extension
        } else if c.elicitation_form {
            Dialect::Elicitation
        } else {
            Dialect::Permission
        }
    }

    /// How questions are asked as permission prompts on this connection: `--permission-prompts`,
    /// else every option in one prompt for a client known to show them all by name, else
    /// yes/no prompts (`crate::clients`).
    pub(super) fn prompt_style(&self) -> Style {
        self.cfg.permission_prompts.unwrap_or_else(|| {
            match self.client.as_ref().and_then(|c| c.known) {
                Some(k) if k.shows_option_names => Style::List,
                _ => Style::Binary,
            }
        })
    }

    /// Whether the client is sent `$/cancel_request` for a request it shows that is over:
    /// only when `--client-cancel-requests` says so or it is known to handle it; else the
    /// chat says so (`crate::questions::chat`).
    pub(super) fn sends_cancel_requests(&self) -> bool {
        self.cfg.client_cancel_requests
            || self
                .client
                .as_ref()
                .and_then(|c| c.known)
                .is_some_and(|k| k.handles_cancel_request)
    }

    /// Whether the agent's form elicitations are shown as questions (the client cannot
    /// render them, and the bridge told the agent it may send them).
    pub(super) fn translates_agent_elicitations(&self) -> bool {
        self.cfg.advertise_elicitation
            && !self.client_renders_forms()
            && (self.can_take_questions() || self.cfg.force_forms)
    }

    fn client_renders_forms(&self) -> bool {
        match self.cfg.client_dialect {
            Some(forced) => forced == Dialect::Elicitation,
            None => self.client.as_ref().is_some_and(|c| c.elicitation_form),
        }
    }

    /// Whether some surface can take any question an agent asks: the client shows forms or
    /// the extension itself (a translation loses nothing), or the control server runs (a
    /// question the client cannot show waits there, and in the inbox). Only then are agents
    /// offered forms and the vendors' opt-ins: without one, an agent that asked would have
    /// its question ended unseen, where without the offer it knows not to ask.
    pub(super) fn can_take_questions(&self) -> bool {
        let client = self.client.clone().unwrap_or_default();
        self.cfg.hold_unsupported
            || client.native_questions
            || self.client_renders_forms()
            || matches!(
                self.cfg.client_dialect,
                Some(Dialect::Extension | Dialect::Elicitation)
            )
    }

    /// The dialect to try after `failed` answered `-32601` (auto mode only).
    fn next_dialect(&self, failed: Dialect, origin: &Origin) -> Option<Dialect> {
        if self.cfg.client_dialect.is_some() {
            return None;
        }
        let elicitation = self.client.as_ref().is_some_and(|c| c.elicitation_form);
        match (failed, origin.name()) {
            (Dialect::Extension, "question") if elicitation => Some(Dialect::Elicitation),
            (Dialect::Extension | Dialect::Elicitation, _) => Some(Dialect::Permission),
            // A vendor's method the client said it knows, but does not: the client's own
            // standard shape.
            (Dialect::Native, _) if !origin.standard() => Some(self.client_dialect()),
            // A standard request shown as it was sent: the client's error is its answer.
            (Dialect::Permission | Dialect::Native | Dialect::Control, _) => None,
        }
    }

    /// A fresh id for a request the bridge sends; never one the agent has in flight.
    fn bridge_id(&mut self) -> RequestId {
        loop {
            self.next_bridge_id += 1;
            let id = RequestId::string(&format!("{}{}", self.id_prefix, self.next_bridge_id));
            if !self.agent_requests.contains_key(&id) && !self.questions.has_client_id(&id) {
                return id;
            }
        }
    }

    /// Checks a new question against the registry; `Err` is the error for the agent.
    pub(super) fn admit(&self, id: &RequestId, q: &model::Question) -> Result<(), (i64, String)> {
        if self.questions.has_question(&q.session_id, &q.question_id) {
            return Err((
                code::INVALID_PARAMS,
                format!(
                    "Invalid params: questionId: {:?} is already pending in session {:?}",
                    q.question_id, q.session_id
                ),
            ));
        }
        if self.questions.has_agent_id(id)
            || self.agent_requests.contains_key(id)
            || self.questions.has_client_id(id)
        {
            return Err((
                code::INVALID_REQUEST,
                format!("Invalid Request: id {id} is already used by a request in flight"),
            ));
        }
        if self.questions.len() >= self.cfg.max_in_flight {
            return Err((
                code::SERVER_ERROR,
                format!(
                    "too many pending questions in all sessions (limit {})",
                    self.cfg.max_in_flight
                ),
            ));
        }
        let limit = self.cfg.max_pending_per_session;
        if self.questions.session_len(&q.session_id) >= limit {
            return Err((
                code::SERVER_ERROR,
                format!(
                    "too many pending questions in session {:?} (limit {limit}, \
                     --max-pending-per-session); answer or cancel some first",
                    q.session_id
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn new_pending(
        &self,
        id: RequestId,
        q: model::Question,
        origin: Origin,
        now: Instant,
    ) -> Pending {
        let timeout = [
            self.cfg.question_timeout,
            q.timeout_ms.map(Duration::from_millis),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(|t| t.min(MAX_TIMEOUT));
        let deadline = timeout.and_then(|t| now.checked_add(t));
        Pending {
            question: q,
            origin,
            context: None,
            tool_call_id: None,
            agent_tool_call: None,
            at: prompts::At::default(),
            collected: Vec::new(),
            agent_id: id.clone(),
            client_id: id,
            dialect: Dialect::Extension,
            created: now,
            created_wall: self.wall(now),
            deadline,
            expires_wall: deadline.map(|d| self.wall(d)),
            held: false,
            announced: false,
        }
    }

    /// A pending question as observers (control server, journal, notifier) see it.
    fn view(&self, p: &Pending) -> QuestionView {
        QuestionView {
            session_id: p.question.session_id.clone(),
            question_id: p.question.question_id.clone(),
            items: p.question.items.clone(),
            created_at: rfc3339(p.created_wall),
            expires_at: p.expires_wall.map(rfc3339),
            dialect: if p.held {
                "control"
            } else {
                p.dialect.as_str()
            },
            source: p.origin.name(),
            context: p.context.clone(),
        }
    }

    /// Every pending question, oldest first (`questions.list`).
    pub fn question_views(&self) -> Vec<QuestionView> {
        let mut all: Vec<&Pending> = self.questions.iter().collect();
        all.sort_by_key(|p| p.created);
        all.into_iter().map(|p| self.view(p)).collect()
    }

    /// The `requested` event, once per question, when its first dialect is known.
    fn announce(&mut self, p: &mut Pending, out: &mut Outbox) {
        if self.cfg.events && !p.announced {
            p.announced = true;
            self.note_session(&p.question.session_id.clone());
            out.events.push(Event::Requested {
                question: self.view(p),
            });
        }
    }

    /// Records how `p` ended, for observers and for reporting a later answer.
    fn resolved(&mut self, p: &Pending, by: By, result: Value, out: &mut Outbox) {
        if !self.cfg.events {
            return;
        }
        let (s, q) = (&p.question.session_id, &p.question.question_id);
        self.resolutions
            .insert((s.as_str().into(), q.as_str().into()), by);
        self.resolved_keys
            .insert(p.client_id.clone(), (s.clone(), q.clone()));
        out.events.push(Event::Resolved {
            session_id: s.clone(),
            question_id: q.clone(),
            by,
            result,
        });
    }

    /// Shows `p` to the client in `dialect` and registers it; when the dialect cannot
    /// express it, it waits on the control server when one runs, else the agent gets
    /// `unsupported` in its source's own shape (a cancelled form for an elicitation).
    pub(super) fn show(
        &mut self,
        mut p: Pending,
        dialect: Dialect,
        original: Option<&Bytes>,
        out: &mut Outbox,
    ) {
        if self.cfg.client_dialect == Some(Dialect::Control) {
            // `--client-dialect control`: whatever the source, the client is not shown it.
            p.dialect = Dialect::Control;
            return self.hold(p, out);
        }
        let expires = p
            .expires_wall
            .map(|w| humantime::format_rfc3339_millis(w).to_string());
        p.dialect = dialect;
        match dialect {
            // Only ever chosen by the flag, handled above.
            Dialect::Control => return self.hold(p, out),
            Dialect::Native => {
                let Some(line) = original else {
                    // A native request is only ever shown from its own line.
                    return self.unsupported(&p, out);
                };
                p.client_id = p.agent_id.clone();
                // The agent's own request: forwarded traffic.
                self.counters.forwarded_to_client += 1;
                out.to_client.push_back(super::Out::Line(line.clone()));
            }
            Dialect::Extension => match (original, p.origin.name()) {
                (Some(line), "question") => {
                    p.client_id = p.agent_id.clone();
                    let line = match &expires {
                        Some(at) => rewrite(line.clone(), |l| {
                            rawjson::merge(
                                l,
                                &["params"],
                                "expiresAt",
                                &json!(at),
                                Existing::Replace,
                            )
                        }),
                        None => line.clone(),
                    };
                    // The agent's own request (with `expiresAt`): forwarded traffic.
                    self.counters.forwarded_to_client += 1;
                    out.to_client.push_back(super::Out::Line(line));
                }
                _ => {
                    p.client_id = self.bridge_id();
                    let params = dialect::to_extension(&p.question, expires.as_deref());
                    out.client(jsonrpc::request(
                        &p.client_id,
                        crate::questions::METHOD,
                        &params,
                    ));
                }
            },
            Dialect::Elicitation => {
                p.client_id = self.bridge_id();
                let mut params = dialect::to_elicitation(&p.question, expires.as_deref());
                if let Some(tc) = &p.agent_tool_call {
                    params["toolCallId"] = json!(tc);
                }
                out.client(jsonrpc::request(
                    &p.client_id,
                    "elicitation/create",
                    &params,
                ));
            }
            Dialect::Permission => {
                if let Some(why) = prompts::obstacle(&p.question) {
                    if !self.cfg.hold_unsupported {
                        self.announce(&mut p, out);
                    }
                    if self.cfg.hold_unsupported {
                        tracing::info!(
                            session_id = ?p.question.session_id,
                            question_id = ?p.question.question_id,
                            "the client can only show a permission prompt, which cannot express {why}; it waits on the control server"
                        );
                        return self.hold(p, out);
                    }
                    tracing::warn!(
                        session_id = ?p.question.session_id,
                        question_id = ?p.question.question_id,
                        "the client can only show a permission prompt, which cannot express {why}; rejected as unsupported"
                    );
                    self.unsupported(&p, out);
                    return;
                }
                p.at = prompts::At::first(&p.question, self.prompt_style(), 0);
                p.collected.clear();
                if !self.ask_permission_step(&mut p, out) {
                    // Never dropped without its one response.
                    return self.unsupported(&p, out);
                }
            }
        }
        tracing::info!(
            session_id = ?p.question.session_id,
            question_id = ?p.question.question_id,
            items = p.question.items.len(),
            timeout_ms = p.deadline.map(|d| d.saturating_duration_since(p.created).as_millis() as u64),
            dialect = dialect.as_str(),
            "question delivered"
        );
        tracing::trace!(question = ?p.question, "question content");
        self.announce(&mut p, out);
        if self.cfg.events {
            out.events.push(Event::Delivered {
                session_id: p.question.session_id.clone(),
                question_id: p.question.question_id.clone(),
                dialect: dialect.as_str(),
            });
        }
        self.questions.insert(p);
    }

    /// Asks prompt `p.at` of `p` as a permission prompt under a new bridge id (the first
    /// prompt announces the tool call, unless it is the agent's own, which the client has);
    /// false when it cannot be asked so.
    fn ask_permission_step(&mut self, p: &mut Pending, out: &mut Outbox) -> bool {
        let id = self.bridge_id();
        let first = p.tool_call_id.is_none();
        let tool_call_id = p
            .tool_call_id
            .clone()
            .unwrap_or_else(|| match &p.agent_tool_call {
                Some(tc) => tc.clone(),
                None => format!("question-{}", id.as_json().trim_matches('"')),
            });
        let announce = first && p.agent_tool_call.is_none();
        let Some((tool_call, request)) =
            prompts::to_permission(&p.question, p.at, &tool_call_id, announce)
        else {
            return false;
        };
        p.client_id = id;
        p.tool_call_id = Some(tool_call_id);
        self.notify_client(jsonrpc::notification("session/update", &tool_call), out);
        out.client(jsonrpc::request(
            &p.client_id,
            "session/request_permission",
            &request,
        ));
        true
    }

    /// The client has no way to show `p`: the agent gets `rejected` / `unsupported`, the
    /// bridge's decision.
    fn unsupported(&mut self, p: &Pending, out: &mut Outbox) {
        let outcome = Outcome::Rejected(Reason::Unsupported);
        self.finish(p, outcome, &Vec::new(), By::Bridge, out);
    }

    /// Registers `p` without showing it to the client (it cannot): it waits for an answer
    /// through the control server, or its deadline, cancel, or disconnect.
    fn hold(&mut self, mut p: Pending, out: &mut Outbox) {
        // Never sent: it only keeps the registry's client-id index whole.
        p.client_id = self.bridge_id();
        p.held = true;
        if self.cfg.client_dialect == Some(Dialect::Control) {
            // `--client-dialect control`: the client is shown nothing at all.
            p.tool_call_id = None;
        } else {
            // No invisible waits: the chat says that the agent waits, and where to answer.
            // The tool call is the prompt's shown before a `-32601`, else the agent's own,
            // else a new one; it is marked done when the question ends.
            // (A tool approval's tool call is the tool's own: never the pointer.)
            let agent_tool_call = p
                .agent_tool_call
                .as_ref()
                .filter(|_| !p.origin.approves_a_tool());
            let (tool_call_id, announce) = match (&p.tool_call_id, agent_tool_call) {
                (Some(tc), _) | (None, Some(tc)) => (tc.clone(), false),
                (None, None) => (
                    format!("question-{}", p.client_id.as_json().trim_matches('"')),
                    true,
                ),
            };
            let page = self.cfg.page_url.as_deref();
            let waiting = chat::waiting(&p.question, &tool_call_id, announce, page);
            // And in words: some clients show no pending tool call (codecompanion.nvim).
            let said = chat::waiting_text(&p.question, page).replace('\n', " ");
            self.notify_client(jsonrpc::notification("session/update", &waiting), out);
            let note = chat::note(&p.question.session_id, &said);
            self.notify_client(jsonrpc::notification("session/update", &note), out);
            p.tool_call_id = Some(tool_call_id);
        }
        self.announce(&mut p, out);
        if self.cfg.events {
            out.events.push(Event::Delivered {
                session_id: p.question.session_id.clone(),
                question_id: p.question.question_id.clone(),
                dialect: "control",
            });
        }
        self.questions.insert(p);
    }

    /// A response from the client: when it answers a question (pending, or already
    /// resolved), handles it and returns true.
    pub(super) fn on_client_response_to_question(
        &mut self,
        id: &RequestId,
        outcome: Result<&RawValue, &RawValue>,
        line: &Bytes,
        out: &mut Outbox,
    ) -> bool {
        if let Some(p) = self.questions.take_by_client_id(id) {
            self.answer_from_client(p, outcome, line, out);
            return true;
        }
        if self.questions.was_resolved(id) && !self.agent_requests.contains_key(id) {
            self.counters.late_answers_dropped += 1;
            tracing::warn!(%id, "answer to a request that is already resolved (late or duplicate); dropped");
            // A press on a prompt that was over before it: the user is told, in the chat,
            // that it had no effect (a client's own `cancelled` needs no word).
            let pressed = outcome.is_ok_and(|r| !is_cancelled(r));
            if let (true, Some((session, note))) = (pressed, self.stale.get(id)) {
                let note = chat::note(session, note);
                self.notify_client(jsonrpc::notification("session/update", &note), out);
            }
            tracing::trace!(payload = %String::from_utf8_lossy(line), "dropped answer");
            if self.cfg.events {
                let key = self.resolved_keys.get(id).cloned();
                let content = serde_json::from_slice(line).unwrap_or(Value::Null);
                out.events.push(Event::LateAnswer {
                    session_id: key.as_ref().map(|k| k.0.clone()),
                    question_id: key.map(|k| k.1),
                    from: By::Client,
                    content,
                });
            }
            return true;
        }
        false
    }

    fn answer_from_client(
        &mut self,
        p: Pending,
        outcome: Result<&RawValue, &RawValue>,
        line: &Bytes,
        out: &mut Outbox,
    ) {
        let result = match outcome {
            Ok(result) => result,
            Err(error) => return self.client_error(p, error, line, out),
        };
        let mut p = p;
        let normalized = match p.dialect {
            Dialect::Native => return self.native_answer(p, result, line, out),
            Dialect::Extension | Dialect::Control => answer::normalize(&p.question, result),
            Dialect::Elicitation => dialect::from_elicitation(&p.question, result),
            Dialect::Permission => {
                let style = self.prompt_style();
                let next = prompts::from_permission(&p.question, p.at, result).and_then(
                    |(reply, extras)| {
                        prompts::advance(&p.question, style, p.at, reply, &mut p.collected)
                            .map(|next| (next, extras))
                    },
                );
                match next {
                    Ok((Next::Ask(at), _)) => {
                        // The next prompt, on the same tool call.
                        p.at = at;
                        if self.ask_permission_step(&mut p, out) {
                            self.questions.insert(p);
                        } else {
                            self.unsupported(&p, out);
                        }
                        return;
                    }
                    Ok((Next::Done(outcome), extras)) => Ok((outcome, extras)),
                    Err(e) => Err(e),
                }
            }
        };
        match normalized {
            Ok((o, extras)) => {
                self.close_at_client(&p, &o, By::Client, false, out);
                self.finish(&p, o, &extras, By::Client, out);
            }
            Err(msg) => {
                self.counters.questions_invalid += 1;
                tracing::warn!(
                    session_id = ?p.question.session_id,
                    question_id = ?p.question.question_id,
                    dialect = p.dialect.as_str(),
                    field = ?field_of(&msg),
                    "invalid answer from the client; the agent gets -32603 with it"
                );
                tracing::trace!(error = %msg, "invalid answer (details)");
                // The question is over: a permission prompt's tool call is closed too.
                let cancelled = Outcome::Rejected(Reason::Cancelled);
                self.close_at_client(&p, &cancelled, By::Client, false, out);
                self.resolved(
                    &p,
                    By::Client,
                    json!({ "status": "invalid", "error": msg }),
                    out,
                );
                out.agent(jsonrpc::error_with_raw_data(
                    &p.agent_id,
                    code::INTERNAL_ERROR,
                    &format!("Invalid answer from the client: {msg}"),
                    &format!("{{\"clientResult\":{}}}", result.get()),
                ));
            }
        }
    }

    /// The client's result for the agent's own request, shown as it was sent: the agent
    /// gets it unchanged (the two agree on their shape); observers get what it stands for.
    fn native_answer(&mut self, p: Pending, result: &RawValue, line: &Bytes, out: &mut Outbox) {
        let outcome = p.origin.read(&p.question, result);
        self.count_outcome(&p, outcome.as_ref().ok(), By::Client);
        if self.cfg.events {
            let event = match &outcome {
                Ok(o) => o.to_event(),
                Err(msg) => {
                    tracing::warn!(
                        session_id = ?p.question.session_id,
                        question_id = ?p.question.question_id,
                        source = p.origin.name(),
                        "the client's result cannot be read; forwarded as it is"
                    );
                    json!({ "status": "invalid", "error": msg })
                }
            };
            self.resolved(&p, By::Client, event, out);
        }
        self.counters.forwarded_to_agent += 1;
        out.to_agent.push_back(super::Out::Line(line.clone()));
    }

    /// The client answered a question's request with an error.
    fn client_error(&mut self, p: Pending, error: &RawValue, line: &Bytes, out: &mut Outbox) {
        #[derive(Deserialize)]
        struct E {
            code: Option<i64>,
        }
        let code = serde_json::from_str::<E>(error.get())
            .ok()
            .and_then(|e| e.code);
        let own_answer = p.dialect == Dialect::Native && p.origin.standard();
        if code == Some(code::METHOD_NOT_FOUND) && own_answer && self.cfg.hold_unsupported {
            // A standard request (a tool approval, a form) the client says it cannot show:
            // another surface can take it, so the error is not the user's answer.
            tracing::info!(
                question_id = ?p.question.question_id,
                source = p.origin.name(),
                "the client cannot show this request (-32601); it waits on the control server"
            );
            return self.hold(p, out);
        }
        if code == Some(code::METHOD_NOT_FOUND) && !own_answer {
            let failed = p.dialect;
            match self.next_dialect(failed, &p.origin) {
                Some(next) => {
                    tracing::info!(
                        failed = failed.as_str(),
                        next = next.as_str(),
                        "the client does not know this dialect (-32601); falling back for this question and the rest of the connection"
                    );
                    self.auto_dialect = Some(next);
                    self.show(p, next, None, out);
                }
                None if self.cfg.hold_unsupported => {
                    tracing::info!(
                        question_id = ?p.question.question_id,
                        dialect = failed.as_str(),
                        "the client cannot show questions (-32601); it waits on the control server"
                    );
                    self.hold(p, out);
                }
                None => {
                    tracing::warn!(
                        question_id = ?p.question.question_id,
                        dialect = failed.as_str(),
                        "the client cannot show questions (-32601); rejected as unsupported"
                    );
                    let unsupported = Outcome::Rejected(Reason::Unsupported);
                    self.close_at_client(&p, &unsupported, By::Bridge, false, out);
                    self.unsupported(&p, out);
                }
            }
            return;
        }
        // The prompt's tool call, if the bridge showed one, is over too.
        let cancelled = Outcome::Rejected(Reason::Cancelled);
        self.close_at_client(&p, &cancelled, By::Client, false, out);
        if self.cfg.events {
            let error = serde_json::from_str(error.get()).unwrap_or(Value::Null);
            self.resolved(
                &p,
                By::Client,
                json!({ "status": "error", "error": error }),
                out,
            );
        }
        if p.client_id == p.agent_id {
            self.counters.forwarded_to_agent += 1;
            out.to_agent.push_back(super::Out::Line(line.clone()));
        } else {
            // Same error, under the agent's id.
            let mut v: Value = serde_json::from_str(error.get()).unwrap_or(Value::Null);
            let message = v["message"].as_str().unwrap_or("error").to_owned();
            out.agent(jsonrpc::error(
                Some(&p.agent_id),
                code.unwrap_or(code::INTERNAL_ERROR),
                &message,
                v.get_mut("data").map(Value::take),
            ));
        }
    }

    /// Tells the client a question is over. The tool call that shows it (a permission
    /// prompt's, the pointer of a question waiting elsewhere, or, when it is withdrawn, the
    /// agent's own) is marked done with what was answered and where. When the question is
    /// `withdraw`n while the client still shows it (answered elsewhere, expired, cancelled),
    /// a later press there is told it had no effect; the client gets `$/cancel_request` only
    /// when it is known to handle it, and a question shown without a tool call gets a note
    /// in the chat instead.
    pub(super) fn close_at_client(
        &mut self,
        p: &Pending,
        outcome: &Outcome,
        by: By,
        withdraw: bool,
        out: &mut Outbox,
    ) {
        let shown = withdraw && !p.held;
        let cancel_request = shown && self.sends_cancel_requests();
        if cancel_request {
            self.notify_client(jsonrpc::cancel_request(&p.client_id), out);
        }
        if shown {
            // Kept for a while (the last 4,096): a few hundred bytes each, whatever the
            // question's size.
            let mut note = chat::stale(&p.question, outcome, by);
            if let Some((cut, _)) = note.char_indices().nth(400) {
                note.truncate(cut);
                note.push('…');
            }
            self.stale
                .insert(p.client_id.clone(), (p.question.session_id.clone(), note));
        }
        let tool_call = match (&p.tool_call_id, &p.agent_tool_call) {
            (Some(tc), _) => Some(tc),
            (None, Some(tc)) if shown => Some(tc),
            _ => None,
        };
        let over = || {
            chat::note(
                &p.question.session_id,
                &chat::over(&p.question, outcome, by),
            )
        };
        let Some(tc) = tool_call else {
            if shown && !cancel_request {
                self.notify_client(jsonrpc::notification("session/update", &over()), out);
            }
            return;
        };
        // While the client still shows a prompt of the bridge's below the tool call, its
        // content keeps its line count; a tool call whose content is the agent's is left as
        // it is, and the chat gets the sentence.
        let prompt = match (shown, p.dialect) {
            (true, Dialect::Permission) => {
                prompts::to_permission(&p.question, p.at, tc, false).map(|(update, _)| update)
            }
            _ => None,
        };
        let prompt_text = prompt
            .as_ref()
            .and_then(|u| u["update"]["content"][0]["content"]["text"].as_str());
        let content = match (shown, prompt_text) {
            (false, _) => chat::Content::Replace,
            (true, Some(text)) => chat::Content::KeepLines(text),
            (true, None) => chat::Content::Unchanged,
        };
        // A tool approval's tool call is the tool's own: the tool has not run yet, and the
        // agent reports its status; the chat alone is told.
        if !(matches!(content, chat::Content::Unchanged) && p.origin.approves_a_tool()) {
            let update = chat::done(&p.question, tc, outcome, by, content);
            self.notify_client(jsonrpc::notification("session/update", &update), out);
        }
        if let chat::Content::Unchanged = content {
            self.notify_client(jsonrpc::notification("session/update", &over()), out);
        }
    }

    /// Sends the agent its one response for `p`.
    pub(super) fn finish(
        &mut self,
        p: &Pending,
        outcome: Outcome,
        extras: &Extras,
        by: By,
        out: &mut Outbox,
    ) {
        if self.cfg.events {
            self.resolved(p, by, outcome.to_event(), out);
        }
        self.count_outcome(p, Some(&outcome), by);
        match p.origin.reply(&p.question, &outcome, extras) {
            Reply::Result(result) => {
                tracing::trace!(%result, "question result");
                out.agent(jsonrpc::result_text(&p.agent_id, &result));
            }
            Reply::Error { code, message } => {
                out.agent(jsonrpc::error(Some(&p.agent_id), code, &message, None))
            }
        }
    }

    /// Counts and logs how `p` ended (`None`: a result the bridge could not read).
    fn count_outcome(&mut self, p: &Pending, outcome: Option<&Outcome>, by: By) {
        let reason = match outcome {
            Some(Outcome::Rejected(r)) => {
                self.counters.questions_rejected += 1;
                Some(r.as_str())
            }
            _ => {
                self.counters.questions_answered += 1;
                None
            }
        };
        tracing::info!(
            session_id = ?p.question.session_id,
            question_id = ?p.question.question_id,
            source = p.origin.name(),
            answered = reason.is_none(),
            reason,
            by = by.as_str(),
            "question resolved"
        );
    }

    /// Ends `p` with a bridge-made rejection, closing it at the client when asked.
    fn end(&mut self, p: &Pending, reason: Reason, by: By, withdraw: bool, out: &mut Outbox) {
        let outcome = Outcome::Rejected(reason);
        if withdraw {
            self.close_at_client(p, &outcome, by, true, out);
        }
        self.finish(p, outcome, &Vec::new(), by, out);
    }

    /// `session/cancel`: the session's questions are rejected (`cancelled`) and the client
    /// is told to close them.
    pub(super) fn cancel_session_questions(&mut self, session: &str, out: &mut Outbox) {
        for p in self.questions.take_session(session) {
            self.end(&p, Reason::Cancelled, By::Cancel, true, out);
        }
    }

    /// The agent's `$/cancel_request`: when it names a pending question, the client is told,
    /// the agent gets `-32800`, and true is returned.
    pub(super) fn on_agent_cancel_request(
        &mut self,
        params: Option<&str>,
        line: &Bytes,
        out: &mut Outbox,
    ) -> bool {
        let Some(rid) = cancelled_request_id(params) else {
            return false;
        };
        let Some(p) = self.questions.take(&rid) else {
            return false;
        };
        tracing::info!(question_id = ?p.question.question_id, "agent cancelled its question");
        if p.dialect == Dialect::Native {
            // The agent's own request, which the client shows as it was sent: the
            // cancellation is between the two (the client still answers the request, with
            // -32800 or a result), and the bridge steps back to tracking it as a request.
            self.counters.forwarded_to_client += 1;
            out.to_client.push_back(super::Out::Line(line.clone()));
            self.resolved(
                &p,
                By::Cancel,
                json!({ "status": "rejected", "reason": "cancelled" }),
                out,
            );
            self.track_shown(&p);
            return true;
        }
        if p.client_id == p.agent_id {
            self.counters.forwarded_to_client += 1;
            out.to_client.push_back(super::Out::Line(line.clone()));
            let cancelled = Outcome::Rejected(Reason::Cancelled);
            self.close_at_client(&p, &cancelled, By::Cancel, false, out);
        } else {
            let cancelled = Outcome::Rejected(Reason::Cancelled);
            self.close_at_client(&p, &cancelled, By::Cancel, true, out);
        }
        self.resolved(
            &p,
            By::Cancel,
            json!({ "status": "rejected", "reason": "cancelled" }),
            out,
        );
        out.agent(jsonrpc::error(
            Some(&p.agent_id),
            code::REQUEST_CANCELLED,
            "Request cancelled",
            None,
        ));
        true
    }

    /// A request the client shows as the agent sent it, no longer a question: tracked like
    /// any request the client has to answer.
    fn track_shown(&mut self, p: &Pending) {
        self.seq += 1;
        let entry = super::InFlight {
            method: p.origin.method().into(),
            session_id: Some(p.question.session_id.as_str().into()),
            started: p.created,
            seq: self.seq,
        };
        self.agent_requests.insert(p.agent_id.clone(), entry);
    }

    /// Questions past their deadline: rejected (`timeout`), and the client closes them.
    pub(super) fn expire_questions(&mut self, now: Instant, out: &mut Outbox) {
        for p in self.questions.take_due(now) {
            self.end(&p, Reason::Timeout, By::Timeout, true, out);
        }
    }

    /// The client is gone: every question is rejected (`client_disconnected`).
    pub(super) fn reject_all_questions(&mut self, out: &mut Outbox) {
        for p in self.questions.take_all() {
            self.end(&p, Reason::ClientDisconnected, By::Disconnect, false, out);
        }
    }

    /// The agent is gone: the client closes every question it still shows.
    pub(super) fn withdraw_all_questions(&mut self, out: &mut Outbox) {
        for p in self.questions.take_all() {
            let cancelled = Outcome::Rejected(Reason::Cancelled);
            self.close_at_client(&p, &cancelled, By::Disconnect, true, out);
            self.resolved(&p, By::Disconnect, json!({ "status": "withdrawn" }), out);
        }
    }
}

fn rfc3339(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// Whether a client's result says only that it cancelled (a permission prompt's
/// `{"outcome":{"outcome":"cancelled"}}`, a form's `{"action":"cancel"}`, the extension's
/// `cancelled`).
fn is_cancelled(result: &RawValue) -> bool {
    let v: Value = serde_json::from_str(result.get()).unwrap_or(Value::Null);
    v["outcome"]["outcome"] == "cancelled"
        || v["outcome"] == "cancelled"
        || v["action"] == "cancel"
        || v["status"] == "cancelled"
}

/// The `requestId` a `$/cancel_request` names (`params` is its JSON text).
fn cancelled_request_id(params: Option<&str>) -> Option<RequestId> {
    #[derive(Deserialize)]
    struct P<'a> {
        #[serde(rename = "requestId", borrow)]
        request_id: Option<&'a RawValue>,
    }
    params
        .and_then(|p| serde_json::from_str::<P<'_>>(p).ok())
        .and_then(|p| p.request_id)
        .map(RequestId::from_raw)
}

/// The field path a validation message starts with (`questions[1].options[0]`), without
/// the values it may quote.
fn field_of(msg: &str) -> &str {
    let msg = msg.strip_prefix("Invalid params: ").unwrap_or(msg);
    let msg = msg
        .strip_prefix("Invalid answer from the client: ")
        .unwrap_or(msg);
    msg.split_once(':').map_or("", |(f, _)| f)
}

/// Refuses an agent's request with an error (it never reaches the client).
pub(super) fn refuse(id: &RequestId, code: i64, msg: String, out: &mut Outbox) {
    // The message may quote the agent's question (option values): details only at trace.
    tracing::warn!(%id, code, field = ?field_of(&msg), "question refused");
    tracing::trace!(error = %msg, "question refused (details)");
    out.reply(Side::Agent, jsonrpc::error(Some(id), code, &msg, None));
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{json, Value};

    use crate::events::By;
    use crate::router::fixture::{msg, parse, Fixture};
    use crate::router::{ControlError, RouterConfig};

    const ASK: &str = r#"{"jsonrpc":"2.0","id":5,"method":"_sandboxagent/session/request_question","params":{"sessionId":"s1","questionId":"q-7","prompt":"Which option?","options":[["option-a","Option A"],["option-b","Option B"]],"x":1e400}}"#;

    fn ask(session: &str, qid: &str, id: Value) -> String {
        json!({"jsonrpc":"2.0","id":id,"method":"_sandboxagent/session/request_question",
            "params":{"sessionId":session,"questionId":qid,"prompt":"p","options":["a","b"]}})
        .to_string()
    }

    #[test]
    fn question_is_forwarded_unchanged_and_answer_normalized() {
        let mut t = Fixture::native(RouterConfig::default());
        t.agent(ASK);
        assert_eq!(t.take_client(), vec![ASK]);
        assert_eq!(t.r.questions().len(), 1);
        t.client(
            r#"{"jsonrpc":"2.0","id":5,"result":{"outcome":"answered","answers":[["Option B"]]}}"#,
        );
        assert_eq!(
            t.take_agent(),
            vec![msg::answered(json!(5), json!([["option-b"]]))]
        );
        assert!(t.r.questions().is_empty());
        // A duplicate answer is dropped, not forwarded twice.
        t.client(
            r#"{"jsonrpc":"2.0","id":5,"result":{"status":"answered","answers":[["option-a"]]}}"#,
        );
        assert!(t.take_agent().is_empty());
        assert_eq!(t.r.counters.late_answers_dropped, 1);
    }

    #[test]
    fn invalid_params_never_reach_the_client() {
        let mut t = Fixture::native(RouterConfig::default());
        t.agent(&msg::ask(json!("x"), json!({"sessionId":"s","questionId":"q","questions":[{"question":"a","options":[{"value":1,"label":"l"}]}]})));
        assert!(t.take_client().is_empty());
        assert_eq!(
            t.take_agent(),
            vec![msg::error(
                json!("x"),
                -32602,
                "Invalid params: questions[0].options[0]: value must be a string"
            )]
        );
    }

    #[test]
    fn duplicate_question_id_and_pending_cap() {
        let mut t = Fixture::native(RouterConfig {
            max_pending_per_session: 2,
            ..RouterConfig::default()
        });
        t.agent(&ask("s", "a", json!(1)));
        t.agent(&ask("s", "a", json!(2)));
        let dup = parse(&t.take_agent()[0]);
        assert_eq!(dup["id"], 2);
        assert_eq!(dup["error"]["code"], -32602);
        t.agent(&ask("s", "b", json!(3)));
        t.agent(&ask("s", "c", json!(4)));
        let cap = parse(&t.take_agent()[0]);
        assert_eq!(cap["error"]["code"], -32000);
        assert!(cap["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit 2"));
        // Another session is not affected by the cap.
        t.agent(&ask("other", "c", json!(5)));
        assert!(t.take_agent().is_empty());
        assert_eq!(t.take_client().len(), 3);
    }

    #[test]
    fn invalid_answer_carries_the_original() {
        let mut t = Fixture::native(RouterConfig::default());
        t.agent(ASK);
        t.client(&msg::answered(json!(5), json!([["zzz"]])));
        let e = parse(&t.take_agent()[0]);
        assert_eq!(e["error"]["code"], -32603);
        assert_eq!(
            e["error"]["data"]["clientResult"],
            json!({"status":"answered","answers":[["zzz"]]})
        );
    }

    #[test]
    fn client_errors() {
        let mut t = Fixture::native(RouterConfig::default());
        t.agent(ASK);
        t.client(
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found"}}"#,
        );
        assert_eq!(t.take_agent(), vec![msg::rejected(json!(5), "unsupported")]);
        t.agent(ASK);
        let other = msg::error(json!(5), -32000, "busy");
        t.client(&other);
        assert_eq!(t.take_agent(), vec![other]);
    }

    #[test]
    fn session_cancel_rejects_only_that_session() {
        let mut t = Fixture::native(cancels());
        t.agent(&ask("s1", "a", json!(1)));
        t.agent(&ask("s2", "a", json!(2)));
        t.take_client();
        let cancel = msg::session_cancel("s1");
        t.client(&cancel);
        assert_eq!(
            t.take_agent(),
            vec![
                cancel.to_owned(),
                r#"{"jsonrpc":"2.0","id":1,"result":{"status":"rejected","reason":"cancelled"}}"#
                    .to_owned()
            ]
        );
        assert_eq!(
            t.take_client(),
            vec![r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}"#]
        );
        assert_eq!(t.r.questions().len(), 1);
    }

    #[test]
    fn agent_cancel_request() {
        let mut t = Fixture::native(RouterConfig::default());
        t.agent(ASK);
        t.take_client();
        let cancel = msg::cancel_request(json!(5));
        t.agent(&cancel);
        assert_eq!(t.take_client(), vec![cancel]);
        assert_eq!(
            t.take_agent(),
            vec![msg::error(json!(5), -32800, "Request cancelled")]
        );
        t.client(
            r#"{"jsonrpc":"2.0","id":5,"result":{"status":"answered","answers":[["option-a"]]}}"#,
        );
        assert!(t.take_agent().is_empty());
        // A cancel for something else is just forwarded.
        let other = msg::cancel_request(json!("5"));
        t.agent(&other);
        assert_eq!(t.take_client(), vec![other]);
    }

    #[test]
    fn timeout_adds_expires_at_and_rejects() {
        let mut t = Fixture::native(RouterConfig {
            client_cancel_requests: true,
            question_timeout: Some(Duration::from_secs(60)),
            ..RouterConfig::default()
        });
        let ask_short = ASK.replace("\"x\":1e400", "\"x\":1e400,\"timeoutMs\":1500");
        t.agent(&ask_short);
        let sent = t.take_client();
        assert!(
            sent[0].ends_with(
                r#""x":1e400,"timeoutMs":1500,"expiresAt":"2026-11-20T00:00:01.500Z"}}"#
            ),
            "{}",
            sent[0]
        );
        assert_eq!(
            t.r.next_deadline(),
            Some(t.start + Duration::from_millis(1500))
        );
        t.timer_at(Duration::from_millis(1499));
        assert!(t.take_agent().is_empty());
        t.timer_at(Duration::from_millis(1500));
        assert_eq!(t.take_agent(), vec![msg::rejected(json!(5), "timeout")]);
        assert_eq!(t.take_client(), vec![msg::cancel_request(json!(5))]);
        assert_eq!(t.r.next_deadline(), None);
    }

    #[test]
    fn client_eof_rejects_before_closing_and_agent_exit_withdraws() {
        let mut t = Fixture::native(cancels());
        t.agent(&ask("s", "a", json!(1)));
        t.take_client();
        t.client_eof();
        assert_eq!(
            t.take_agent(),
            vec![
                msg::rejected(json!(1), "client_disconnected"),
                "<close>".into()
            ]
        );
        let mut t = Fixture::native(RouterConfig::default());
        t.agent(&ask("s", "a", json!("1")));
        t.take_client();
        t.agent_gone(&crate::router::AgentExit {
            code: Some(1),
            signal: None,
            stderr_tail: String::new(),
        });
        // No `$/cancel_request` by default: a question shown without a tool call gets a
        // note in the chat.
        let note = parse(&t.take_client()[0]);
        assert_eq!(
            note["params"]["update"]["sessionUpdate"],
            "agent_message_chunk"
        );
        assert_eq!(
            note["params"]["update"]["content"]["text"],
            "\n[acp-question-bridge] The question \"p\" was withdrawn (cancelled).\n"
        );
    }

    #[test]
    fn ids_one_and_string_one_are_different_questions() {
        let mut t = Fixture::native(RouterConfig::default());
        t.agent(&ask("s", "a", json!(1)));
        t.agent(&ask("s", "b", json!("1")));
        t.client(&msg::answered(json!("1"), json!([["b"]])));
        t.client(&msg::answered(json!(1), json!([["a"]])));
        assert_eq!(
            t.take_agent(),
            vec![
                msg::answered(json!("1"), json!([["b"]])),
                msg::answered(json!(1), json!([["a"]])),
            ]
        );
    }

    #[test]
    fn initialize_is_merged_both_ways() {
        let mut t = Fixture::native(RouterConfig::default());
        t.client(&msg::request(
            json!(0),
            "initialize",
            json!({"protocolVersion":1,"clientCapabilities":{"fs":{}}}),
        ));
        assert_eq!(
            t.take_agent(),
            vec![msg::request(
                json!(0),
                "initialize",
                json!({"protocolVersion":1,"clientCapabilities":{"fs":{},"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}})
            )]
        );
        assert_eq!(
            t.r.client_support().map(|c| c.native_questions),
            Some(false)
        );
        t.agent(&msg::result(
            json!(0),
            json!({"protocolVersion":1,"agentCapabilities":{"loadSession":true}}),
        ));
        let resp = parse(&t.take_client()[0]);
        assert_eq!(
            resp["result"]["agentCapabilities"],
            json!({"loadSession":true,"_meta":{"sandboxagent.dev":{
                "extensions":{"sessionRequestQuestion":true},
                "questionBridge":{"version":env!("CARGO_PKG_VERSION")}}}})
        );
    }

    /// The client's `initialize` without a capability that shows questions.
    fn init_plain() -> String {
        msg::initialize(json!({}))
    }
    /// The client's `initialize` with form elicitations.
    fn init_forms() -> String {
        msg::initialize(json!({"elicitation":{"form":{}}}))
    }
    /// The client's `initialize` with the extension.
    fn init_native() -> String {
        msg::initialize(
            json!({"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}),
        )
    }
    /// A question of two items (a multi-select and a free text).
    fn multi() -> String {
        msg::ask(
            json!(9),
            json!({"sessionId":"s1","questionId":"m","questions":[
                {"question":"A?","options":["x","y"],"multiple":true},{"question":"Notes?"}]}),
        )
    }

    fn auto(init: &str) -> Fixture {
        auto_with(RouterConfig::default(), init)
    }

    fn auto_with(cfg: RouterConfig, init: &str) -> Fixture {
        let mut t = Fixture::new(cfg);
        t.client(init);
        t.take_agent();
        t
    }

    /// `--client-cancel-requests`: the client is sent `$/cancel_request` for what it shows.
    fn cancels() -> RouterConfig {
        RouterConfig {
            client_cancel_requests: true,
            ..RouterConfig::default()
        }
    }

    /// `--permission-prompts list`.
    fn lists() -> RouterConfig {
        RouterConfig {
            permission_prompts: Some(crate::questions::prompts::Style::List),
            ..RouterConfig::default()
        }
    }

    #[test]
    fn auto_dialect_follows_initialize() {
        use crate::questions::Dialect;
        assert_eq!(auto(&init_native()).r.dialect(), Dialect::Extension);
        assert_eq!(auto(&init_forms()).r.dialect(), Dialect::Elicitation);
        assert_eq!(auto(&init_plain()).r.dialect(), Dialect::Permission);
        let forced = Fixture::new(RouterConfig {
            client_dialect: Some(Dialect::Elicitation),
            ..RouterConfig::default()
        });
        assert_eq!(forced.r.dialect(), Dialect::Elicitation);
    }

    #[test]
    fn elicitation_dialect_round_trip() {
        let mut t = auto(&init_forms());
        t.agent(ASK);
        let sent = parse(&t.take_client()[0]);
        assert_eq!(sent["method"], "elicitation/create");
        let bridge_id = sent["id"].as_str().unwrap().to_owned();
        assert!(bridge_id.starts_with("acp-question-bridge:"), "{bridge_id}");
        assert_eq!(sent["params"]["mode"], "form");
        assert_eq!(sent["params"]["sessionId"], "s1");
        assert_eq!(sent["params"]["requestedSchema"]["required"], json!(["q1"]));
        t.client(&json!({"jsonrpc":"2.0","id":bridge_id,"result":{"action":"accept","content":{"q1":"option-b"}}}).to_string());
        assert_eq!(
            t.take_agent(),
            vec![msg::answered(json!(5), json!([["option-b"]]))]
        );
        // decline / cancel / invalid content
        for (result, expect) in [
            (
                json!({"action":"decline"}),
                json!({"status":"rejected","reason":"declined"}),
            ),
            (
                json!({"action":"cancel"}),
                json!({"status":"rejected","reason":"cancelled"}),
            ),
        ] {
            t.agent(ASK);
            let id = parse(&t.take_client()[0])["id"].clone();
            t.client(&json!({"jsonrpc":"2.0","id":id,"result":result}).to_string());
            assert_eq!(parse(&t.take_agent()[0])["result"], expect);
        }
        t.agent(ASK);
        let id = parse(&t.take_client()[0])["id"].clone();
        t.client(
            &json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":{"q1":"nope"}}})
                .to_string(),
        );
        let e = parse(&t.take_agent()[0]);
        assert_eq!(e["error"]["code"], -32603);
        assert_eq!(e["error"]["data"]["clientResult"]["content"]["q1"], "nope");
    }

    #[test]
    fn permission_dialect_round_trip_and_limits() {
        let mut t = auto_with(lists(), &init_plain());
        t.agent(ASK);
        let sent = t.take_client();
        assert_eq!(sent.len(), 2);
        let tool_call = parse(&sent[0]);
        assert_eq!(tool_call["params"]["update"]["sessionUpdate"], "tool_call");
        let req = parse(&sent[1]);
        assert_eq!(req["method"], "session/request_permission");
        let tc = tool_call["params"]["update"]["toolCallId"].clone();
        assert_eq!(req["params"]["toolCall"]["toolCallId"], tc);
        t.client(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"outcome":{"outcome":"selected","optionId":"option-a"}}}).to_string());
        assert_eq!(
            parse(&t.take_agent()[0])["result"],
            json!({"status":"answered","answers":[["option-a"]]})
        );
        let done = parse(&t.take_client()[0]);
        assert_eq!(
            done["params"]["update"]["sessionUpdate"],
            "tool_call_update"
        );
        assert_eq!(done["params"]["update"]["toolCallId"], tc);
        assert_eq!(done["params"]["update"]["status"], "completed");
        // An invalid answer (an option never offered) still closes the tool call.
        t.agent(ASK);
        let sent = t.take_client();
        let tc = parse(&sent[0])["params"]["update"]["toolCallId"].clone();
        let req = parse(&sent[1]);
        t.client(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"outcome":{"outcome":"selected","optionId":"nope"}}}).to_string());
        assert_eq!(parse(&t.take_agent()[0])["error"]["code"], -32603);
        let done = parse(&t.take_client()[0]);
        assert_eq!(done["params"]["update"]["toolCallId"], tc);
        assert_eq!(done["params"]["update"]["status"], "failed");
        // Dismiss -> declined.
        t.agent(ASK);
        let req = parse(&t.take_client()[1]);
        t.client(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"outcome":{"outcome":"selected","optionId":"dismiss"}}}).to_string());
        assert_eq!(parse(&t.take_agent()[0])["result"]["reason"], "declined");
        t.take_client();
        // A multi-select question cannot be a permission prompt.
        t.agent(&multi());
        assert!(t.take_client().is_empty());
        assert_eq!(t.take_agent(), vec![msg::rejected(json!(9), "unsupported")]);
    }

    #[test]
    fn timeout_in_permission_dialect_closes_the_tool_call() {
        let mut t = Fixture::new(RouterConfig {
            question_timeout: Some(Duration::from_secs(1)),
            client_cancel_requests: true,
            ..RouterConfig::default()
        });
        t.client(&init_plain());
        t.take_agent();
        t.agent(ASK);
        let req = parse(&t.take_client()[1]);
        t.timer_at(Duration::from_secs(1));
        assert_eq!(parse(&t.take_agent()[0])["result"]["reason"], "timeout");
        let sent = t.take_client();
        assert_eq!(
            parse(&sent[0]),
            json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":req["id"]}})
        );
        assert_eq!(parse(&sent[1])["params"]["update"]["status"], "failed");
    }

    #[test]
    fn unknown_extension_falls_back_for_the_rest_of_the_connection() {
        use crate::questions::Dialect;
        let native_forms = msg::request(
            json!(0),
            "initialize",
            json!({"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}},"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}),
        );
        let mut t = auto(&native_forms);
        t.agent(ASK);
        t.take_client();
        t.client(
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found"}}"#,
        );
        assert!(t.take_agent().is_empty(), "the question is still open");
        let again = parse(&t.take_client()[0]);
        assert_eq!(again["method"], "elicitation/create");
        assert_eq!(t.r.dialect(), Dialect::Elicitation);
        // The elicitation is not understood either: permission is next.
        t.client(
            &json!({"jsonrpc":"2.0","id":again["id"],"error":{"code":-32601,"message":"no"}})
                .to_string(),
        );
        let sent = t.take_client();
        assert_eq!(parse(&sent[1])["method"], "session/request_permission");
        assert_eq!(t.r.dialect(), Dialect::Permission);
        // Forced dialects do not fall back.
        let mut f = Fixture::native(RouterConfig::default());
        f.agent(ASK);
        f.client(
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found"}}"#,
        );
        assert_eq!(parse(&f.take_agent()[0])["result"]["reason"], "unsupported");
    }

    #[test]
    fn agent_id_that_looks_like_a_bridge_id_routes_correctly() {
        let mut t = auto(&init_forms());
        t.agent(ASK);
        let bridge_id = parse(&t.take_client()[0])["id"].clone();
        // The agent sends its own request under the very same id: refused, not confused.
        let clash = json!({"jsonrpc":"2.0","id":bridge_id,"method":"_sandboxagent/session/request_question",
            "params":{"sessionId":"s1","questionId":"other","prompt":"p"}});
        t.agent(&clash.to_string());
        assert_eq!(parse(&t.take_agent()[0])["error"]["code"], -32600);
        // Nor for any other request.
        let clash = json!({"jsonrpc":"2.0","id":bridge_id,"method":"fs/read_text_file","params":{"sessionId":"s1"}});
        t.agent(&clash.to_string());
        assert_eq!(parse(&t.take_agent()[0])["error"]["code"], -32600);
        assert!(t.take_client().is_empty());
        // A look-alike id of a normal request is just forwarded, and its answer too.
        let look_alike = msg::request(
            json!("acp-question-bridge:0000000000000000:1"),
            "fs/read_text_file",
            json!({"sessionId":"s1"}),
        );
        t.agent(&look_alike);
        assert_eq!(t.take_client(), vec![look_alike]);
        let answer = msg::result(
            json!("acp-question-bridge:0000000000000000:1"),
            json!({"content":""}),
        );
        t.client(&answer);
        assert_eq!(t.take_agent(), vec![answer]);
        t.client(&json!({"jsonrpc":"2.0","id":bridge_id,"result":{"action":"accept","content":{"q1":"option-a"}}}).to_string());
        assert_eq!(parse(&t.take_agent()[0])["id"], 5);
    }

    #[test]
    fn agent_permission_and_elicitation_are_answered_on_cancel_and_eof() {
        let mut t = auto_with(cancels(), &init_forms());
        let perm = msg::request(
            json!(1),
            "session/request_permission",
            json!({"sessionId":"s1","toolCall":{"toolCallId":"t"},"options":[]}),
        );
        let elic = msg::request(
            json!(2),
            "elicitation/create",
            json!({"sessionId":"s2","mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}}}),
        );
        t.agent(&perm);
        t.agent(&elic);
        assert_eq!(t.take_client(), vec![perm, elic]);
        t.client(&msg::session_cancel("s1"));
        let to_agent = t.take_agent();
        assert_eq!(
            to_agent[1],
            msg::result(json!(1), json!({"outcome":{"outcome":"cancelled"}}))
        );
        assert_eq!(t.take_client(), vec![msg::cancel_request(json!(1))]);
        // The client's own (late) cancelled answer is dropped.
        t.client(&msg::result(
            json!(1),
            json!({"outcome":{"outcome":"cancelled"}}),
        ));
        assert!(t.take_agent().is_empty());
        t.client_eof();
        assert_eq!(
            t.take_agent(),
            vec![
                r#"{"jsonrpc":"2.0","id":2,"result":{"action":"cancel"}}"#.to_owned(),
                "<close>".to_owned()
            ]
        );
    }

    #[test]
    fn agent_exit_withdraws_every_request_the_client_shows() {
        let mut t = auto_with(cancels(), &init_forms());
        t.agent(r#"{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s1"}}"#);
        t.agent(ASK);
        let bridge_id = parse(&t.take_client()[1])["id"].clone();
        t.agent_gone(&crate::router::AgentExit {
            code: Some(1),
            signal: None,
            stderr_tail: String::new(),
        });
        let ids: Vec<Value> = t
            .take_client()
            .iter()
            .map(|l| parse(l))
            .filter(|m| m["method"] == "$/cancel_request")
            .map(|m| m["params"]["requestId"].clone())
            .collect();
        assert_eq!(ids, vec![json!(1), bridge_id]);
    }

    #[test]
    fn advertised_elicitation_becomes_a_permission_prompt_and_back() {
        let mut t = Fixture::new(RouterConfig {
            advertise_elicitation: true,
            // Forms are offered only where a question can wait when the client cannot
            // show it.
            hold_unsupported: true,
            ..RouterConfig::default()
        });
        t.client(&init_plain());
        let init = parse(&t.take_agent()[0]);
        assert_eq!(
            init["params"]["clientCapabilities"]["elicitation"]["form"],
            json!({})
        );
        let elic = json!({"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"sessionId":"s1","mode":"form",
            "message":"Pick a color","requestedSchema":{"type":"object","properties":{"color":{"type":"string","enum":["red","green"]}}}}});
        t.agent(&elic.to_string());
        // An unknown client gets yes/no prompts: "red"? No. "green"? Yes.
        let sent = t.take_client();
        let req = parse(&sent[1]);
        assert_eq!(req["method"], "session/request_permission");
        assert_eq!(req["params"]["options"][0]["optionId"], "allow");
        assert_eq!(req["params"]["options"][1]["optionId"], "reject");
        assert_eq!(
            req["params"]["toolCall"]["title"],
            "Pick a color → red (option 1 of 2)"
        );
        t.client(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}).to_string());
        assert!(t.take_agent().is_empty());
        let sent = t.take_client();
        assert_eq!(
            parse(&sent[0])["params"]["update"]["sessionUpdate"],
            "tool_call_update"
        );
        let req = parse(&sent[1]);
        assert_eq!(
            req["params"]["toolCall"]["title"],
            "Pick a color → green (option 2 of 2)"
        );
        t.client(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}).to_string());
        assert_eq!(
            t.take_agent(),
            vec![msg::result(
                json!(3),
                json!({"action":"accept","content":{"color":"green"}})
            )]
        );
        // A form the permission prompt cannot express (free text) waits on the control
        // server, pointed to in the chat.
        t.take_client();
        let wide = json!({"jsonrpc":"2.0","id":4,"method":"elicitation/create","params":{"sessionId":"s1","mode":"form",
            "message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"boolean"}}}}});
        t.agent(&wide.to_string());
        assert!(t.take_agent().is_empty());
        let pointer = parse(&t.take_client()[0]);
        assert_eq!(pointer["params"]["update"]["status"], "pending");
    }

    #[test]
    fn advertised_elicitation_goes_to_a_native_client_as_the_extension() {
        let mut t = Fixture::new(RouterConfig {
            advertise_elicitation: true,
            ..RouterConfig::default()
        });
        t.client(&init_native());
        t.take_agent();
        let elic = json!({"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"sessionId":"s1","mode":"form",
            "message":"Configure","requestedSchema":{"type":"object","properties":{
                "name":{"type":"string","title":"Name"},"ok":{"type":"boolean","title":"OK"}}}}});
        t.agent(&elic.to_string());
        let q = parse(&t.take_client()[0]);
        assert_eq!(q["method"], "_sandboxagent/session/request_question");
        assert_eq!(q["params"]["questions"].as_array().unwrap().len(), 2);
        t.client(&json!({"jsonrpc":"2.0","id":q["id"],"result":{"status":"answered","answers":[["Ada"],["Yes"]]}}).to_string());
        assert_eq!(
            t.take_agent(),
            vec![msg::result(
                json!(3),
                json!({"action":"accept","content":{"name":"Ada","ok":true}})
            )]
        );
    }

    fn observed(cfg: RouterConfig) -> Fixture {
        Fixture::native(RouterConfig {
            events: true,
            hold_unsupported: true,
            ..cfg
        })
    }

    #[test]
    fn control_answer_resolves_once_and_withdraws_the_client_request() {
        let mut t = observed(cancels());
        t.agent(&ask("s", "q", json!(7)));
        t.take_client();
        let ev = t.take_events();
        assert_eq!(ev[0]["event"], "requested");
        assert_eq!(ev[0]["question"]["dialect"], "extension");
        assert_eq!(ev[1]["event"], "delivered");
        assert_eq!(t.r.question_views().len(), 1);
        let r =
            t.r.control_answer("s", "q", &json!([["b"]]), &mut t.out)
                .unwrap();
        assert_eq!(r, json!({"status":"answered","answers":[["b"]]}));
        assert_eq!(
            t.take_agent(),
            vec![msg::answered(json!(7), json!([["b"]]))]
        );
        assert_eq!(t.take_client(), vec![msg::cancel_request(json!(7))]);
        let ev = t.take_events();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0]["by"], "control");
        // The client's answer comes second: dropped, reported with what it answered.
        t.client(&msg::answered(json!(7), json!([["a"]])));
        assert!(t.take_agent().is_empty());
        let ev = t.take_events();
        assert_eq!(ev[0]["event"], "late_answer");
        assert_eq!(ev[0]["from"], "client");
        assert_eq!(ev[0]["questionId"], "q");
        assert_eq!(ev[0]["content"]["result"]["answers"], json!([["a"]]));
        assert_eq!(t.r.counters.late_answers_dropped, 1);
        assert!(t.r.question_views().is_empty());
    }

    #[test]
    fn a_control_answer_after_the_client_is_refused_and_kept() {
        let mut t = observed(RouterConfig::default());
        t.agent(&ask("s", "q", json!(1)));
        t.client(&msg::answered(json!(1), json!([["a"]])));
        assert_eq!(t.take_agent().len(), 1);
        t.take_events();
        let e = t.r.control_answer("s", "q", &json!([["b"]]), &mut t.out);
        assert_eq!(
            e,
            Err(ControlError::NotPending {
                resolved_by: Some(By::Client)
            })
        );
        assert!(t.take_agent().is_empty());
        let ev = t.take_events();
        assert_eq!(ev[0]["event"], "late_answer");
        assert_eq!(ev[0]["from"], "control");
        assert_eq!(ev[0]["content"], json!({"answers":[["b"]]}));
        // Never asked at all: not pending, and nobody to name.
        assert_eq!(
            t.r.control_reject("s", "nope", None, &mut t.out),
            Err(ControlError::NotPending { resolved_by: None })
        );
    }

    #[test]
    fn control_answers_are_checked_like_client_answers() {
        let mut t = observed(RouterConfig::default());
        t.agent(&ask("s", "q", json!(1)));
        t.take_client();
        for bad in [json!([["c"]]), json!([["a", "b"]]), json!([]), json!("a")] {
            match t.r.control_answer("s", "q", &bad, &mut t.out) {
                Err(ControlError::Invalid(msg)) => assert!(msg.starts_with("answers"), "{msg}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(matches!(
            t.r.control_reject("s", "q", Some("bored"), &mut t.out),
            Err(ControlError::Invalid(_))
        ));
        assert_eq!(t.r.questions().len(), 1);
        // A label stands for its value, as from a client.
        let r = t.r.control_reject("s", "q", None, &mut t.out).unwrap();
        assert_eq!(r, json!({"status":"rejected","reason":"declined"}));
        assert_eq!(t.take_agent(), vec![msg::rejected(json!(1), "declined")]);
    }

    #[test]
    fn unsupported_questions_wait_for_the_control_server() {
        let mut t = Fixture::new(RouterConfig {
            events: true,
            hold_unsupported: true,
            client_dialect: Some(crate::questions::Dialect::Permission),
            ..RouterConfig::default()
        });
        let multi = json!({"jsonrpc":"2.0","id":"m","method":"_sandboxagent/session/request_question",
            "params":{"sessionId":"s","questionId":"q","questions":[
                {"question":"one","options":["a","b"]},{"question":"two"}]}});
        t.agent(&multi.to_string());
        // Not the question (free text cannot be a permission prompt), but a tool call in
        // the chat that says the agent waits, and where to answer, and the same in words.
        let pointer = t.take_client();
        assert_eq!(pointer.len(), 2);
        let note = parse(&pointer[1]);
        assert!(note["params"]["update"]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("The agent is waiting for your answer to: Please answer 2 questions"));
        let update = &parse(&pointer[0])["params"]["update"];
        assert_eq!(update["sessionUpdate"], "tool_call");
        assert_eq!(update["status"], "pending");
        assert_eq!(
            update["title"],
            "Waiting for your answer: Please answer 2 questions: one, two"
        );
        assert!(
            t.take_agent().is_empty(),
            "nor is the agent told it is unsupported"
        );
        let ev = t.take_events();
        assert_eq!(ev[0]["question"]["dialect"], "control");
        assert_eq!(ev[1]["dialect"], "control");
        assert_eq!(t.r.question_views()[0].dialect, "control");
        t.r.control_answer("s", "q", &json!([["b"], ["notes"]]), &mut t.out)
            .unwrap();
        let done = parse(&t.take_client()[0]);
        assert_eq!(done["params"]["update"]["toolCallId"], update["toolCallId"]);
        assert_eq!(done["params"]["update"]["status"], "completed");
        assert_eq!(
            t.take_agent(),
            vec![msg::answered(json!("m"), json!([["b"], ["notes"]]))]
        );
        // Without a control server it is rejected at once, as before.
        let mut t = Fixture::new(RouterConfig {
            client_dialect: Some(crate::questions::Dialect::Permission),
            ..RouterConfig::default()
        });
        t.agent(&multi.to_string());
        assert_eq!(parse(&t.take_agent()[0])["result"]["reason"], "unsupported");
        assert!(t.out.events.is_empty(), "no events unless asked for");
    }

    #[test]
    fn the_control_dialect_shows_the_client_nothing_not_even_the_agents_own_requests() {
        let mut t = Fixture::new(RouterConfig {
            events: true,
            hold_unsupported: true,
            client_dialect: Some(crate::questions::Dialect::Control),
            ..RouterConfig::default()
        });
        let approve = json!({"jsonrpc":"2.0","id":7,"method":"session/request_permission",
            "params":{"sessionId":"s","toolCall":{"toolCallId":"tc","title":"rm -rf build"},
                "options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},
                           {"optionId":"reject","name":"Reject","kind":"reject_once"}]}});
        t.agent(&approve.to_string());
        t.agent(&ask("s", "q", json!(1)));
        assert!(t.take_client().is_empty(), "the client is shown nothing");
        let views = t.r.question_views();
        assert_eq!(views.len(), 2);
        assert!(views.iter().all(|v| v.dialect == "control"));
        let permission = views
            .iter()
            .find(|v| v.source == "permission")
            .unwrap()
            .question_id
            .clone();
        t.r.control_answer("s", &permission, &json!([["reject"]]), &mut t.out)
            .unwrap();
        assert_eq!(
            parse(&t.take_agent()[0]),
            json!({"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}})
        );
        // Its endings tell the client nothing either.
        t.client(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#);
        assert!(
            t.take_agent()
                .contains(&msg::rejected(json!(1), "cancelled")),
            "the agent hears its question was cancelled"
        );
        let to_client = t.take_client();
        assert!(
            to_client.iter().all(|m| !m.contains("$/cancel_request")),
            "{to_client:?}"
        );
    }

    #[test]
    fn a_control_answer_closes_a_permission_prompt() {
        let mut t = Fixture::new(RouterConfig {
            events: true,
            client_dialect: Some(crate::questions::Dialect::Permission),
            ..RouterConfig::default()
        });
        t.agent(&ask("s", "q", json!(1)));
        let shown = t.take_client();
        assert_eq!(shown.len(), 2);
        let request = parse(&shown[1]);
        let tool_call = request["params"]["toolCall"]["toolCallId"].clone();
        t.r.control_answer("s", "q", &json!([["a"]]), &mut t.out)
            .unwrap();
        assert_eq!(t.take_agent(), [msg::answered(json!(1), json!([["a"]]))]);
        // No `$/cancel_request` (no client handles it): the tool call says what was
        // answered, and where, in as many lines as the prompt still on screen below it.
        let closed = t.take_client();
        assert_eq!(
            closed,
            [msg::notification(
                "session/update",
                json!({"sessionId":"s","update":{"sessionUpdate":"tool_call_update",
                    "toolCallId":tool_call,"title":"p → a","status":"completed","content":[{"type":"content",
                    "content":{"type":"text","text":"Answered on the Questions page or CLI: a\n- a\n- b\n(this prompt is over)"}}]}})
            )]
        );
        // A later press on the prompt is told it had no effect; the agent hears nothing.
        t.client(&msg::result(
            request["id"].clone(),
            json!({"outcome":{"outcome":"selected","optionId":"allow"}}),
        ));
        assert!(t.take_agent().is_empty());
        let note = parse(&t.take_client()[0]);
        assert_eq!(
            note["params"]["update"]["content"]["text"],
            "\n[acp-question-bridge] The question \"p\" was already answered on the Questions page or CLI: a. Your choice in this prompt was not used.\n"
        );
        // The client's own `cancelled` for it (at the end of a turn) needs no word.
        t.client(&msg::result(
            request["id"].clone(),
            json!({"outcome":{"outcome":"cancelled"}}),
        ));
        assert!(t.take_client().is_empty());
        let ev = t.take_events();
        let kinds: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "requested",
                "delivered",
                "resolved",
                "late_answer",
                "late_answer"
            ]
        );
        assert_eq!(
            ev[2]["result"],
            json!({"status":"answered","answers":[["a"]]})
        );
    }

    #[test]
    fn every_ending_names_who_ended_it() {
        let mut t = observed(RouterConfig::default());
        t.agent(
            &json!({"jsonrpc":"2.0","id":1,"method":"_sandboxagent/session/request_question",
            "params":{"sessionId":"s","questionId":"t","prompt":"p","timeoutMs":5}})
            .to_string(),
        );
        t.agent(&ask("s", "c", json!(2)));
        t.agent(&ask("s2", "d", json!(3)));
        t.timer_at(Duration::from_millis(10));
        t.client(&msg::session_cancel("s"));
        t.client_eof();
        let by: Vec<(String, String)> = t
            .take_events()
            .into_iter()
            .filter(|e| e["event"] == "resolved")
            .map(|e| {
                (
                    e["questionId"].as_str().unwrap().into(),
                    e["by"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert_eq!(
            by,
            [
                ("t".to_owned(), "timeout".to_owned()),
                ("c".into(), "cancel".into()),
                ("d".into(), "disconnect".into())
            ]
        );
    }

    #[test]
    fn a_permission_prompt_the_client_does_not_know_hands_over_to_the_control_server() {
        let mut t = Fixture::new(RouterConfig {
            events: true,
            hold_unsupported: true,
            ..RouterConfig::default()
        });
        t.agent(&ask("s", "q", json!(1)));
        let shown = t.take_client();
        let request = parse(&shown[1]);
        assert_eq!(request["method"], "session/request_permission");
        t.client(
            &json!({"jsonrpc":"2.0","id":request["id"],"error":{"code":-32601,"message":"?"}})
                .to_string(),
        );
        // The tool call it showed now says where the question waits; the agent hears
        // nothing yet.
        let tool_call = request["params"]["toolCall"]["toolCallId"].clone();
        let waiting = t.take_client();
        assert_eq!(waiting.len(), 2, "the pointer, and a note");
        let update = &parse(&waiting[0])["params"]["update"];
        assert_eq!(update["toolCallId"], tool_call);
        assert_eq!(update["status"], "pending");
        assert_eq!(update["title"], "Waiting for your answer: p");
        assert!(t.take_agent().is_empty());
        assert_eq!(t.r.question_views()[0].dialect, "control");
        t.r.control_answer("s", "q", &json!(["a"]), &mut t.out)
            .unwrap();
        let done = t.take_client();
        assert_eq!(done.len(), 1, "only the tool call is marked done");
        assert_eq!(parse(&done[0])["params"]["update"]["status"], "completed");
        assert_eq!(
            parse(&t.take_agent()[0])["result"]["answers"],
            json!([["a"]])
        );
    }
}
