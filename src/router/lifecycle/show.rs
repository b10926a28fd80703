//! Showing a question: in the client's dialect, step by step as permission prompts, or
//! held for the control server when the client cannot show it.

use bytes::Bytes;

use super::render;
use crate::events::{By, Event};
use crate::jsonrpc::{self};
use crate::questions::answer::{Outcome, Reason};
use crate::questions::open::Open;
use crate::questions::{chat, Dialect};
use crate::router::{Outbox, Router};

impl Router {
    /// Shows `p` to the client in `dialect` and registers it; when the dialect cannot
    /// express it, it waits on the control server when one runs, else the agent gets
    /// `unsupported` in its source's own shape (a cancelled form for an elicitation).
    pub(in crate::router) fn show(
        &mut self,
        mut p: Open,
        dialect: Dialect,
        original: Option<&Bytes>,
        out: &mut Outbox,
    ) {
        if self.client.forced() == Some(Dialect::Control) {
            // `--client-dialect control`: whatever the source, the client is not shown it.
            p.delivery.dialect = Dialect::Control;
            return self.hold(p, out);
        }
        if !self.client_sees(&p.question.session_id) {
            // `--linger`: no client has its session now; it waits on the other surfaces,
            // and is shown to the client that takes the session.
            return self.hold(p, out);
        }
        if dialect == Dialect::Control {
            // Only ever chosen by the flag, handled above.
            return self.hold(p, out);
        }
        let style = self.client.prompt_style();
        let rendered = render::render(
            &p.asked,
            &mut p.delivery,
            dialect,
            original,
            style,
            &mut || self.bridge_id(),
        );
        match rendered {
            render::Rendered::Lines(lines) => self.send_lines(lines, out),
            render::Rendered::Unsupported => return self.unsupported(&mut p, out),
            render::Rendered::Obstacle(why) => {
                if !self.client.holds_unsupported() {
                    self.announce(&mut p, out);
                }
                if self.client.holds_unsupported() {
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
                self.unsupported(&mut p, out);
                return;
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
        self.register(p);
    }

    /// Sends the attached client a prompt's lines.
    pub(super) fn send_lines(&mut self, lines: Vec<render::Line>, out: &mut Outbox) {
        for line in lines {
            match line {
                render::Line::Forwarded(l) => {
                    self.counters.forwarded_to_client += 1;
                    out.to_client.push_back(crate::router::Out::Line(l));
                }
                render::Line::Request(l) => out.client(l),
                render::Line::Notification(l) => self.notify_client(l, out),
            }
        }
    }

    /// The client has no way to show `p`: the agent gets `rejected` / `unsupported`, the
    /// bridge's decision.
    pub(super) fn unsupported(&mut self, p: &mut Open, out: &mut Outbox) {
        let outcome = Outcome::Rejected(Reason::Unsupported);
        self.finish(p, outcome, &Vec::new(), By::Bridge, out);
    }

    /// Registers `p` without showing it to the client (it cannot): it waits for an answer
    /// through the control server, or its deadline, cancel, or disconnect.
    pub(in crate::router) fn hold(&mut self, mut p: Open, out: &mut Outbox) {
        // Never sent: it only keeps the registry's client-id index whole.
        p.delivery.client_id = self.bridge_id();
        p.delivery.held = true;
        if self.client.forced() == Some(Dialect::Control)
            || !self.client_sees(&p.question.session_id)
        {
            // `--client-dialect control`: the client is shown nothing at all (nor, with
            // `--linger`, one that does not have the session).
            p.delivery.tool_call_id = None;
        } else {
            // No invisible waits: the chat says that the agent waits, and where to answer.
            // The tool call is the prompt's shown before a `-32601`, else the agent's own,
            // else a new one; it is marked done when the question ends.
            // (A tool approval's tool call is the tool's own: never the pointer.)
            let agent_tool_call = p
                .agent_tool_call
                .as_ref()
                .filter(|_| !p.origin.approves_a_tool());
            let (tool_call_id, announce) = match (&p.delivery.tool_call_id, agent_tool_call) {
                (Some(tc), _) | (None, Some(tc)) => (tc.clone(), false),
                (None, None) => (
                    format!(
                        "question-{}",
                        p.delivery.client_id.as_json().trim_matches('"')
                    ),
                    true,
                ),
            };
            let page = self.cfg.page_url.as_deref();
            let waiting = chat::waiting(&p.question, &tool_call_id, announce, page);
            // And in words: some clients show no pending tool call (codecompanion.nvim).
            let said = chat::waiting_text(&p.question, page).replace('\n', " ");
            self.notify_client(
                jsonrpc::notification(crate::methods::SESSION_UPDATE, &waiting),
                out,
            );
            let note = chat::note(&p.question.session_id, &said);
            self.notify_client(
                jsonrpc::notification(crate::methods::SESSION_UPDATE, &note),
                out,
            );
            p.delivery.tool_call_id = Some(tool_call_id);
        }
        self.announce(&mut p, out);
        if self.cfg.events {
            out.events.push(Event::Delivered {
                session_id: p.question.session_id.clone(),
                question_id: p.question.question_id.clone(),
                dialect: "control",
            });
        }
        self.register(p);
    }
}
