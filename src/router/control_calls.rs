//! The control server's calls inside the [`Router`]: `questions.answer` and
//! `questions.reject`. An answer from the control server is checked exactly like one from
//! the IDE (a bad one is refused and the question stays pending); the first answer wins,
//! and the IDE's copy is withdrawn.

use serde_json::{json, Value};

use super::{Outbox, Router};
use crate::events::{By, Event};
use crate::questions::answer::ControlError;
use crate::questions::answer::{self, Outcome, Reason};

impl Router {
    /// `questions.answer` through the control server: `answers` is checked exactly like a
    /// client's; the agent gets the canonical result and the client is told to close the
    /// request it still shows. Returns the result the agent got.
    pub(in crate::router) fn control_answer(
        &mut self,
        session: &str,
        question_id: &str,
        answers: &Value,
        device: Option<&str>,
        out: &mut Outbox,
    ) -> Result<Value, ControlError> {
        let Some(p) = self.questions.get_by_key(session, question_id) else {
            let content = json!({ "answers": answers });
            return Err(self.control_too_late(session, question_id, content, out));
        };
        let checked = answer::check_answers(&p.question, answers).map_err(ControlError::Invalid)?;
        self.control_resolve(
            session,
            question_id,
            Outcome::Answered(checked),
            device,
            out,
        )
    }

    /// `questions.reject` through the control server (`reason` defaults to `declined`).
    pub(in crate::router) fn control_reject(
        &mut self,
        session: &str,
        question_id: &str,
        reason: Option<&str>,
        device: Option<&str>,
        out: &mut Outbox,
    ) -> Result<Value, ControlError> {
        let reason = match reason {
            None => Reason::Declined,
            Some(r) => Reason::parse(r).ok_or_else(|| {
                let all: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
                ControlError::Invalid(format!("reason: {r:?} is not one of {}", all.join(", ")))
            })?,
        };
        if !self.questions.has_question(session, question_id) {
            let content = json!({ "reason": reason.as_str() });
            return Err(self.control_too_late(session, question_id, content, out));
        }
        self.control_resolve(session, question_id, Outcome::Rejected(reason), device, out)
    }

    fn control_resolve(
        &mut self,
        session: &str,
        question_id: &str,
        outcome: Outcome,
        device: Option<&str>,
        out: &mut Outbox,
    ) -> Result<Value, ControlError> {
        let agent_id = self
            .questions
            .get_by_key(session, question_id)
            .map(|p| p.agent_id.clone())
            .ok_or(ControlError::NotPending { resolved_by: None })?;
        let Some(mut p) = self.questions.take(&agent_id) else {
            return Err(ControlError::NotPending { resolved_by: None });
        };
        p.device = device.map(str::to_owned);
        let result: Value =
            serde_json::from_str(&outcome.to_result(&Vec::new())).unwrap_or(Value::Null);
        self.close_at_client(&mut p, &outcome, By::Control, true, out);
        self.finish(&mut p, outcome, &Vec::new(), By::Control, out);
        Ok(result)
    }

    /// A control answer for a question that is not pending: dropped, reported to the
    /// caller with who resolved it, and kept as a `late_answer` event.
    fn control_too_late(
        &mut self,
        session: &str,
        question_id: &str,
        content: Value,
        out: &mut Outbox,
    ) -> ControlError {
        let resolved_by = self.ledger.resolved_by(session, question_id);
        if resolved_by.is_some() {
            self.counters.late_answers_dropped += 1;
            tracing::warn!(
                session_id = ?session,
                question_id = ?question_id,
                "control answer to a question that is already resolved; dropped"
            );
            if self.cfg.events {
                out.events.push(Event::LateAnswer {
                    session_id: Some(session.to_owned()),
                    question_id: Some(question_id.to_owned()),
                    from: By::Control,
                    content,
                });
            }
        }
        ControlError::NotPending { resolved_by }
    }
}
