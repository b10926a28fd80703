//! `--linger`, several clients on one session: the questions shown to the clients that
//! joined a session, each in its own dialect, their answers (the first from any client or
//! surface wins) and how each is told a question is over. The clients themselves, their
//! requests and sessions are [`super::joined`].

use std::time::Instant;

use bytes::Bytes;
use serde_json::value::RawValue;

use super::joined::{send, session_note};
use super::lifecycle::render::{self, Line, Rendered};
use super::lifecycle::{closing, read_answer, Read};
use super::{Outbox, Router, Side};
use crate::envelope::RequestId;
use crate::events::By;
use crate::jsonrpc;
use crate::methods;
use crate::questions::answer::{Outcome, Reason};
use crate::questions::chat;
use crate::questions::open::{Delivery, Open};
use crate::questions::Dialect;

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
        if self.joined.take_asked(client, id) {
            // Its response to the agent's request sent to it: the agent's, as the attached
            // client's would be; an attached client that was sent it too closes it.
            let attached_has_it = self.held.waits(id) && self.held.sent(id);
            if attached_has_it && self.client.sends_cancel_requests() {
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
        let result = match outcome {
            Ok(result) => result,
            Err(_) => {
                tracing::info!(client, %id, "a joined client did not show a question; it waits for the others");
                return;
            }
        };
        // The user answered in that editor: at the desk (its own cancel is not the user).
        out.at_desk |= !super::lifecycle::is_cancelled(result);
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
    pub(super) fn show_joined(&mut self, client: u32, p: &Open, out: &mut Outbox) {
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
                // As the attached client's `hold`: a pending tool call that points at the
                // other surfaces, and the same in words; registered, so that the question's
                // ending marks it done (and it is said once).
                let id = self.bridge_id();
                let page = self.cfg.page_url.as_deref();
                let agent_tool_call = p
                    .agent_tool_call
                    .as_ref()
                    .filter(|_| !p.origin.approves_a_tool());
                let (tool_call_id, announce) = match agent_tool_call {
                    Some(tc) => (tc.clone(), false),
                    None => (format!("question-{}", id.as_json().trim_matches('"')), true),
                };
                let waiting = chat::waiting(&p.question, &tool_call_id, announce, page);
                out.joined(
                    client,
                    jsonrpc::notification(methods::SESSION_UPDATE, &waiting),
                );
                let said = chat::waiting_text(&p.question, page).replace('\n', " ");
                out.joined(client, session_note(&p.question.session_id, &said));
                let mut d = Delivery::new(id.clone());
                d.held = true;
                d.tool_call_id = Some(tool_call_id);
                self.joined.show(client, id, p.agent_id.clone(), d);
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
