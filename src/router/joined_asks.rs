//! `--linger`, several clients on one session: the questions shown to the clients that
//! joined a session, each in its own dialect, their answers (the first from any client or
//! surface wins) and how each is told a question is over. The clients themselves, their
//! requests and sessions are [`super::joined`].

use std::time::Instant;

use bytes::Bytes;
use serde_json::value::RawValue;

use super::lifecycle::render::note_line;
use super::lifecycle::Who;
use super::{Outbox, Router, Side};
use crate::envelope::RequestId;
use crate::events::By;
use crate::jsonrpc;
use crate::questions::answer::Outcome;
use crate::questions::open::{Delivery, Open};

impl Router {
    /// A joined client's response: its answer to a question it was shown (the first answer
    /// wins), or a late press (told it had no effect).
    pub(super) fn joined_response(
        &mut self,
        client: u32,
        id: &RequestId,
        outcome: Result<&RawValue, &RawValue>,
        line: &Bytes,
        now: Instant,
        out: &mut Outbox,
    ) {
        if self.clients.take_asked(client, id) {
            // Its response to the agent's request sent to it: the agent's, as the attached
            // client's would be; an attached client that was sent it too closes it.
            let attached_has_it = self.held.waits(id) && self.held.sent(id);
            if attached_has_it && self.clients.attached().sends_cancel_requests() {
                self.notify_client(jsonrpc::cancel_request(id), out);
            }
            return self.on_response(
                Side::Client,
                id.clone(),
                outcome.is_ok(),
                line.clone(),
                now,
                out,
            );
        }
        let Some((agent_id, delivery)) = self.questions.take_joined(client, id) else {
            let pressed = outcome.is_ok_and(|r| !super::lifecycle::is_cancelled(r));
            match self.clients.stale(client, id) {
                Some((session, note)) if pressed => out.joined(client, note_line(&session, &note)),
                Some(_) => {}
                None => {
                    tracing::warn!(client, %id, "a joined client's response to nothing it was asked; dropped")
                }
            }
            return;
        };
        let Some(p) = self.questions.take(&agent_id) else {
            return;
        };
        // The user answered in that editor: at the desk (its own cancel is not the user).
        out.at_desk |= outcome.is_ok_and(|r| !super::lifecycle::is_cancelled(r));
        self.answer_from(Who::Joined(client), p, delivery, outcome, line, out);
    }

    /// A question is shown (or held): each joined client that has its session and is not
    /// shown it yet is shown it in its dialect.
    pub(in crate::router) fn show_to_joined(&mut self, p: &mut Open, out: &mut Outbox) {
        if !self.clients.any() {
            return;
        }
        for client in self.clients.having(&p.question.session_id) {
            if p.is_shown_to(Who::Joined(client)) {
                continue;
            }
            if let Some(d) = self.render_for_joined(client, p, out) {
                p.show_to(Who::Joined(client), d);
            }
        }
    }

    /// Shows the open question of `agent_id` to joined client `client`, unless it is shown
    /// it already.
    pub(super) fn show_open_to_joined(
        &mut self,
        client: u32,
        agent_id: &RequestId,
        out: &mut Outbox,
    ) {
        if self.questions.is_shown_to(client, agent_id) {
            return;
        }
        let Some(open) = self.questions.get(agent_id).cloned() else {
            return;
        };
        if let Some(d) = self.render_for_joined(client, &open, out) {
            self.questions.show_joined(agent_id, client, d);
        }
    }

    /// Shows `p` to joined client `client` in its dialect ([`Router::deliver`]), and
    /// returns how it was shown; one it cannot show is pointed at the other surfaces in its
    /// chat ([`Router::point_elsewhere`]), as the attached client's held question is.
    fn render_for_joined(&mut self, client: u32, p: &Open, out: &mut Outbox) -> Option<Delivery> {
        let who = Who::Joined(client);
        let view = self.clients.view(who)?;
        view.support()?;
        let (dialect, as_sent) = view.pick(&p.choose);
        let original = p.original.as_ref().filter(|_| as_sent).cloned();
        let mut d = Delivery::new(p.agent_id.clone());
        if self
            .deliver(who, p, &mut d, dialect, original.as_ref(), out)
            .is_ok()
        {
            return Some(d);
        }
        // Registered, so that the question's ending marks the pointer done (and it is
        // said once). A tool approval's tool call is the tool's own: never the pointer.
        let id = self.bridge_id();
        let agent_tool_call = p
            .agent_tool_call
            .as_ref()
            .filter(|_| !p.origin.approves_a_tool());
        let (tool_call_id, announce) = match agent_tool_call {
            Some(tc) => (tc.clone(), false),
            None => (format!("question-{}", id.as_json().trim_matches('"')), true),
        };
        self.point_elsewhere(who, p, &tool_call_id, announce, out);
        let mut d = Delivery::new(id);
        d.held = true;
        d.tool_call_id = Some(tool_call_id);
        Some(d)
    }

    /// `p` is over: each joined client shown it is told ([`Router::tell_over`]), as of an
    /// answer elsewhere. Its deliveries are taken: told once, whichever ending calls this
    /// first.
    pub(in crate::router) fn joined_over(
        &mut self,
        p: &mut Open,
        outcome: &Outcome,
        by: By,
        out: &mut Outbox,
    ) {
        for (client, delivery) in p.take_joined() {
            self.tell_over(Who::Joined(client), p, &delivery, outcome, by, true, out);
        }
    }
}
