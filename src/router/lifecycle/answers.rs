//! The client's answers to the questions it was shown: normalized and checked, a native
//! result taken as it is, and a client's error (a refused dialect falls back).

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::envelope::RequestId;
use crate::events::{By, Event};
use crate::jsonrpc::{self, code};
use crate::questions::answer::{self, Outcome, Reason};
use crate::questions::open::Open;
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
        if let Some(p) = self.questions.take_by_client_id(id) {
            // The user answered in the editor: they are at the desk (an error, or a client's
            // own cancel, is not the user).
            out.at_desk |= outcome.is_ok_and(|r| !is_cancelled(r));
            self.answer_from_client(p, outcome, line, out);
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

    pub(super) fn answer_from_client(
        &mut self,
        p: Open,
        outcome: Result<&RawValue, &RawValue>,
        line: &Bytes,
        out: &mut Outbox,
    ) {
        let result = match outcome {
            Ok(result) => result,
            Err(error) => return self.client_error(p, error, line, out),
        };
        let mut p = p;
        let style = self.client.prompt_style();
        let normalized = match read_answer(style, &p.asked, &mut p.delivery, result) {
            Read::Native => return self.native_answer(p, result, line, out),
            Read::Ask(at) => {
                // The next prompt, on the same tool call.
                p.delivery.at = at;
                if self.ask_permission_step(&mut p, out) {
                    self.register(p);
                } else {
                    self.unsupported(&mut p, out);
                }
                return;
            }
            Read::Done(outcome, extras) => Ok((outcome, extras)),
            Read::Invalid(e) => Err(e),
        };
        match normalized {
            Ok((o, extras)) => {
                self.close_at_client(&mut p, &o, By::Client, false, out);
                self.finish(&mut p, o, &extras, By::Client, out);
            }
            Err(msg) => {
                self.counters.questions_invalid += 1;
                tracing::warn!(
                    session_id = ?p.question.session_id,
                    question_id = ?p.question.question_id,
                    dialect = p.delivery.dialect.as_str(),
                    field = ?super::field_of(&msg),
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
        }
    }

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
        let own_answer = p.delivery.dialect == Dialect::Native && p.origin.standard();
        if code == Some(code::METHOD_NOT_FOUND) && own_answer && self.client.holds_unsupported() {
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
            let failed = p.delivery.dialect;
            match self.client.next_dialect(failed, &p.origin) {
                Some(next) => {
                    tracing::info!(
                        failed = failed.as_str(),
                        next = next.as_str(),
                        "the client does not know this dialect (-32601); falling back for this question and the rest of the connection"
                    );
                    self.client.fall_back_to(next);
                    self.show(p, next, None, out);
                }
                None if self.client.holds_unsupported() => {
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
        if p.delivery.client_id == p.agent_id {
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
pub(in crate::router) enum Read {
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
pub(in crate::router) fn read_answer(
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
