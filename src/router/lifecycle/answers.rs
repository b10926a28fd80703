//! The client's answers to the questions it was shown: normalized and checked, a native
//! result taken as it is, and a client's error (a refused dialect falls back).

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::render;
use super::Who;
use crate::envelope::RequestId;
use crate::events::{By, Event};
use crate::jsonrpc::{self, code};
use crate::questions::answer::{self, Outcome, Reason};
use crate::questions::open::{Delivery, Open};
use crate::questions::prompts::{self, Next};
use crate::questions::{chat, dialect, Dialect};
use crate::router::{Outbox, Router};

impl Router {
    /// A response from the client: when it answers a question (pending, or already
    /// resolved), handles it and returns true.
    pub(in crate::router) fn on_client_response_to_question(
        &mut self,
        id: &RequestId,
        outcome: Result<&RawValue, &RawValue>,
        line: &Bytes,
        out: &mut Outbox,
    ) -> bool {
        if let Some(mut p) = self.questions.take_by_client_id(id) {
            // The user answered in the editor: they are at the desk (an error, or a client's
            // own cancel, is not the user).
            out.at_desk |= outcome.is_ok_and(|r| !is_cancelled(r));
            let delivery = p.take_attached();
            self.answer_from(Who::Attached, p, delivery, outcome, line, out);
            return true;
        }
        if self.questions.was_resolved(id) && !self.requests.agent_waits_on(id) {
            self.counters.late_answers_dropped += 1;
            tracing::warn!(%id, "answer to a request that is already resolved (late or duplicate); dropped");
            // A press on a prompt that was over before it: the user is told, in the chat,
            // that it had no effect (a client's own `cancelled` needs no word).
            let pressed = outcome.is_ok_and(|r| !is_cancelled(r));
            if let (true, Some((session, note))) = (pressed, self.ledger.stale(id)) {
                let note = chat::note(session, note);
                self.notify_client(
                    jsonrpc::notification(crate::methods::SESSION_UPDATE, &note),
                    out,
                );
            }
            tracing::trace!(payload = %String::from_utf8_lossy(line), "dropped answer");
            if self.cfg.events {
                let key = self.ledger.question_shown_as(id).cloned();
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

    /// The answer of client `who` to `p` (taken from the store), shown to it as `delivery`
    /// says: one path for every client. The first answer wins; each other client shown it
    /// is told it is over (as of an answer elsewhere), the answering one as answered. A
    /// permission prompt's next step is shown to the same client, and `p` stays open.
    pub(in crate::router) fn answer_from(
        &mut self,
        who: Who,
        mut p: Open,
        mut delivery: Delivery,
        outcome: Result<&RawValue, &RawValue>,
        line: &Bytes,
        out: &mut Outbox,
    ) {
        let result = match (outcome, who) {
            (Ok(result), _) => result,
            (Err(error), Who::Attached) => {
                p.show_to(Who::Attached, delivery);
                return self.client_error(p, error, line, out);
            }
            (Err(_), Who::Joined(client)) => {
                // It waits for the others (nothing more is shown to that client).
                tracing::info!(
                    client,
                    "a joined client did not show a question; it waits for the others"
                );
                return self.questions.insert(p);
            }
        };
        let Some(style) = self.clients.view(who).map(|v| v.prompt_style()) else {
            return self.questions.insert(p);
        };
        match read_answer(style, &p.asked, &mut delivery, result) {
            Read::Native => {
                if let Who::Joined(_) = who {
                    // The attached client, shown it too, closes it.
                    let read = p.origin.read(&p.question, result);
                    let ended = read.unwrap_or(Outcome::Rejected(Reason::Cancelled));
                    self.close_at_client(&mut p, &ended, By::Client, true, out);
                }
                // The client's result, under the agent's own id, goes to the agent as it is.
                self.native_answer(p, result, line, out)
            }
            Read::Ask(at) => {
                // The next prompt, on the same tool call, to the same client.
                delivery.at = at;
                let id = self.bridge_id();
                match render::permission_step(&p.asked, &mut delivery, id) {
                    Some(lines) => {
                        self.send_to(who, lines, out);
                        p.show_to(who, delivery);
                        self.register(p);
                    }
                    None if who == Who::Attached => {
                        p.show_to(Who::Attached, delivery);
                        self.unsupported(&mut p, out);
                    }
                    None => self.questions.insert(p),
                }
            }
            Read::Done(o, extras) => {
                if let Who::Joined(_) = who {
                    self.tell_over(who, &p, &delivery, &o, By::Client, false, out);
                } else {
                    p.show_to(Who::Attached, delivery);
                }
                // The attached client is told as the one that answered, or as one shown it
                // that did not.
                let withdraw = who != Who::Attached;
                self.close_at_client(&mut p, &o, By::Client, withdraw, out);
                self.finish(&mut p, o, &extras, By::Client, out);
            }
            Read::Invalid(msg) => match who {
                Who::Attached => {
                    p.show_to(Who::Attached, delivery);
                    self.invalid_answer(p, &msg, result, out)
                }
                Who::Joined(client) => {
                    // Another client may still answer: this one is told, and asked again.
                    tracing::warn!(
                        client,
                        "a joined client's answer is not valid; shown to it again"
                    );
                    let text = format!(
                        "Your answer could not be used ({msg}); the question is asked again."
                    );
                    out.joined(client, render::note_line(&p.question.session_id, &text));
                    let agent_id = p.agent_id.clone();
                    self.questions.insert(p);
                    self.show_open_to_joined(client, &agent_id, out);
                }
            },
        }
    }

    /// The attached client's answer is not valid: the question is over, and the agent gets
    /// `-32603` with what the client said.
    fn invalid_answer(&mut self, mut p: Open, msg: &str, result: &RawValue, out: &mut Outbox) {
        self.counters.questions_invalid += 1;
        tracing::warn!(
            session_id = ?p.question.session_id,
            question_id = ?p.question.question_id,
            dialect = p.attached().dialect.as_str(),
            field = ?super::field_of(msg),
            "invalid answer from the client; the agent gets -32603 with it"
        );
        tracing::trace!(error = %msg, "invalid answer (details)");
        // The question is over: a permission prompt's tool call is closed too.
        let cancelled = Outcome::Rejected(Reason::Cancelled);
        self.close_at_client(&mut p, &cancelled, By::Client, false, out);
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

    /// How client `who` shows permission prompts (`None`: a joined client that left).
    /// The client's result for the agent's own request, shown as it was sent: the agent
    /// gets it unchanged (the two agree on their shape); observers get what it stands for.
    pub(in crate::router) fn native_answer(
        &mut self,
        mut p: Open,
        result: &RawValue,
        line: &Bytes,
        out: &mut Outbox,
    ) {
        let outcome = p.origin.read(&p.question, result);
        let ended = outcome
            .clone()
            .unwrap_or(Outcome::Rejected(Reason::Cancelled));
        self.joined_over(&mut p, &ended, By::Client, out);
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
        out.to_agent
            .push_back(crate::router::Out::Line(line.clone()));
    }

    /// The client answered a question's request with an error.
    pub(super) fn client_error(
        &mut self,
        mut p: Open,
        error: &RawValue,
        line: &Bytes,
        out: &mut Outbox,
    ) {
        #[derive(Deserialize)]
        struct E {
            code: Option<i64>,
        }
        let code = serde_json::from_str::<E>(error.get())
            .ok()
            .and_then(|e| e.code);
        let own_answer = p.attached().dialect == Dialect::Native && p.origin.standard();
        if code == Some(code::METHOD_NOT_FOUND)
            && own_answer
            && self.clients.attached().holds_unsupported()
        {
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
            let failed = p.attached().dialect;
            match self.clients.attached().next_dialect(failed, &p.origin) {
                Some(next) => {
                    tracing::info!(
                        failed = failed.as_str(),
                        next = next.as_str(),
                        "the client does not know this dialect (-32601); falling back for this question and the rest of the connection"
                    );
                    self.clients.attached_mut().fall_back_to(next);
                    self.show(p, next, None, out);
                }
                None if self.clients.attached().holds_unsupported() => {
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
                    self.close_at_client(&mut p, &unsupported, By::Bridge, false, out);
                    self.unsupported(&mut p, out);
                }
            }
            return;
        }
        // The prompt's tool call, if the bridge showed one, is over too.
        let cancelled = Outcome::Rejected(Reason::Cancelled);
        self.close_at_client(&mut p, &cancelled, By::Client, false, out);
        if self.cfg.events {
            let error = serde_json::from_str(error.get()).unwrap_or(Value::Null);
            self.resolved(
                &p,
                By::Client,
                json!({ "status": "error", "error": error }),
                out,
            );
        }
        if p.attached().client_id == p.agent_id {
            self.counters.forwarded_to_agent += 1;
            out.to_agent
                .push_back(crate::router::Out::Line(line.clone()));
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
}

/// What a client's result to a question's prompt says.
enum Read {
    /// The agent's own request, shown as it was sent: its result goes to the agent as it is.
    Native,
    /// A permission prompt's answer, and the next prompt to ask.
    Ask(prompts::At),
    /// The answer.
    Done(Outcome, answer::Extras),
    /// Not a valid answer (why).
    Invalid(String),
}

/// Reads a client's `result` for `p` shown in `d` (a permission prompt's answers so far are
/// collected in `d`): every dialect's answer is checked by the same rules.
fn read_answer(
    style: prompts::Style,
    p: &crate::questions::open::Pending,
    d: &mut crate::questions::open::Delivery,
    result: &RawValue,
) -> Read {
    let normalized = match d.dialect {
        Dialect::Native => return Read::Native,
        Dialect::Extension | Dialect::Control => answer::normalize(&p.question, result),
        Dialect::Elicitation => dialect::from_elicitation(&p.question, result),
        Dialect::Permission => {
            let next =
                prompts::from_permission(&p.question, d.at, result).and_then(|(reply, extras)| {
                    prompts::advance(&p.question, style, d.at, reply, &mut d.collected)
                        .map(|next| (next, extras))
                });
            match next {
                Ok((Next::Ask(at), _)) => return Read::Ask(at),
                Ok((Next::Done(outcome), extras)) => Ok((outcome, extras)),
                Err(e) => Err(e),
            }
        }
    };
    match normalized {
        Ok((o, extras)) => Read::Done(o, extras),
        Err(e) => Read::Invalid(e),
    }
}

/// Whether a client's result says only that it cancelled (a permission prompt's
/// `{"outcome":{"outcome":"cancelled"}}`, a form's `{"action":"cancel"}`, the extension's
/// `cancelled`).
pub(in crate::router) fn is_cancelled(result: &RawValue) -> bool {
    let v: Value = serde_json::from_str(result.get()).unwrap_or(Value::Null);
    v["outcome"]["outcome"] == "cancelled"
        || v["outcome"] == "cancelled"
        || v["action"] == "cancel"
        || v["status"] == "cancelled"
}
