//! The question lifecycle inside the [`Router`], whatever the question's source (the
//! handlers in [`super::handlers`] parse each source's request): its delivery in the
//! client's dialect, the client's answers, and every way a question can end.
//!
//! Invariant: every question that enters the registry leaves it exactly once, and the agent
//! receives exactly one response for it: the client's normalized answer, an error for an
//! invalid answer, or a bridge-made rejection (`cancelled`, `timeout`,
//! `client_disconnected`, `unsupported`). Late and duplicate answers are dropped. Requests
//! the bridge sends itself use string ids with a per-process random prefix.
//!
//! The lifecycle's parts: [`ask`] (the one way in: admission and registration, whatever the
//! source), [`show`] (delivery in a dialect, or holding for the control
//! server), [`answers`] (the client's answers and errors), [`endings`] (every way a
//! question ends, and what the client and the agent are sent then).

mod answers;
mod ask;
mod decide;
mod endings;
pub(in crate::router) mod render;
mod show;

pub(in crate::router) use answers::is_cancelled;
pub(in crate::router) use ask::{Asked, NotAdmitted};
pub(in crate::router) use decide::PolicyState;

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Outbox, Router, Side};
use crate::envelope::RequestId;
use crate::events::{By, Event, QuestionView, Resolver};
use crate::jsonrpc::{self, code};
use crate::questions::open::{Open, Pending};
use crate::questions::sources::Origin;
use crate::questions::{model, Dialect};

/// The longest deadline a question gets (a longer `timeoutMs` or `--question-timeout` is
/// cut to this), so deadlines and `expiresAt` stay representable.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// Which client a question is shown to or answered by: the attached one (whose pipes are
/// the bridge's client side), or one that joined its session (`--linger`).
pub(in crate::router) use crate::router::stores::clients::Who;

impl Router {
    /// The dialect new questions are shown in on this connection.
    pub fn dialect(&self) -> Dialect {
        self.clients.attached().dialect()
    }

    /// Refuses a question that is not valid (`-32602`); it never reaches the client.
    pub(super) fn refuse_invalid(
        &mut self,
        id: &RequestId,
        e: &dyn std::fmt::Display,
        out: &mut Outbox,
    ) {
        self.counters.questions_invalid += 1;
        refuse(
            id,
            code::INVALID_PARAMS,
            format!("Invalid params: {e}"),
            out,
        );
    }

    /// Registers `p` as open under its client id.
    fn register(&mut self, p: Open) {
        self.ledger.reused(&p.attached().client_id);
        self.questions.insert(p);
    }

    /// A fresh id for a request the bridge sends; never one the agent has in flight.
    pub(in crate::router) fn bridge_id(&mut self) -> RequestId {
        loop {
            let id = self.bridge_ids.next();
            if !self.requests.agent_waits_on(&id) && !self.questions.has_client_id(&id) {
                return id;
            }
        }
    }

    /// Whether `id` is the id of a request in flight (a question's, or one the agent waits on).
    pub(super) fn id_in_use(&self, id: &RequestId) -> bool {
        self.questions.has_agent_id(id)
            || self.deciding(id)
            || self.requests.agent_waits_on(id)
            || self.questions.has_client_id(id)
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
        if self.id_in_use(id) {
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

    /// What the agent asked with its request `id`: pending from `now`, with its deadline.
    pub(super) fn new_pending(
        &mut self,
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
            choose: crate::questions::open::Choose::Question,
            agent_id: id,
            context: None,
            agent_tool_call: None,
            digest: None,
            always_allow: None,
            original: None,
            created: now,
            created_wall: self.wall(now),
            deadline,
            expires_wall: deadline.map(|d| self.wall(d)),
        }
    }

    /// A question as observers (control server, journal, notifier) see it, delivered in
    /// `dialect`.
    fn view_as(&self, p: &Pending, dialect: &'static str) -> QuestionView {
        QuestionView {
            session_id: p.question.session_id.clone(),
            question_id: p.question.question_id.clone(),
            items: p.question.items.clone(),
            created_at: rfc3339(p.created_wall),
            expires_at: p.expires_wall.map(rfc3339),
            dialect,
            source: p.origin.name(),
            context: p.context.clone(),
            always_allow: p.always_allow.clone(),
            digest: p.digest.clone(),
        }
    }

    /// An open question as observers see it.
    fn view(&self, p: &Open) -> QuestionView {
        let d = p.attached();
        self.view_as(
            p,
            if !self.client_sees(&p.question.session_id) {
                // `--linger`: no client has its session now.
                "away"
            } else if d.held {
                "control"
            } else {
                d.dialect.as_str()
            },
        )
    }

    /// Every pending question, oldest first (`questions.list`).
    pub fn question_views(&self) -> Vec<QuestionView> {
        let mut all: Vec<&Open> = self.questions.iter().collect();
        all.sort_by_key(|p| p.created);
        all.into_iter().map(|p| self.view(p)).collect()
    }

    /// The `requested` event, once per question, when its first dialect is known.
    fn announce(&mut self, p: &mut Open, out: &mut Outbox) {
        if self.cfg.events && !p.announced {
            p.announced = true;
            self.ledger.session(&p.question.session_id);
            out.events.push(Event::Requested {
                question: self.view(p),
            });
        }
        // Clients that joined its session are shown it too, each in its dialect.
        self.show_to_joined(p, out);
    }

    /// Records how `p` ended, for observers and for reporting a later answer.
    fn resolved(&mut self, p: &Open, by: By, result: Value, out: &mut Outbox) {
        if !self.cfg.events {
            return;
        }
        let (s, q) = (&p.question.session_id, &p.question.question_id);
        self.ledger.resolved(&p.attached().client_id, s, q, by);
        out.events.push(Event::Resolved {
            session_id: s.clone(),
            question_id: q.clone(),
            by: Resolver {
                by,
                device: p.device.clone(),
            },
            result,
        });
    }
}

fn rfc3339(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
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
mod tests;
