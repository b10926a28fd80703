//! Showing a question: in the client's dialect, step by step as permission prompts, or
//! held for the control server when the client cannot show it.

use bytes::Bytes;

use super::render;
use crate::events::{By, Event};
use crate::jsonrpc::{self};
use crate::questions::answer::{Outcome, Reason};
use crate::questions::open::{Delivery, Open};
use crate::questions::{chat, Dialect};
use crate::router::lifecycle::Who;
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
        if self.clients.attached().forced() == Some(Dialect::Control) {
            // `--client-dialect control`: whatever the source, the client is not shown it.
            p.attached_mut().dialect = Dialect::Control;
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
        let mut d = p.take_attached();
        let shown = self.deliver(Who::Attached, &p, &mut d, dialect, original, out);
        p.show_to(Who::Attached, d);
        match shown {
            Ok(()) => {}
            Err(None) => return self.unsupported(&mut p, out),
            Err(Some(why)) => {
                if !self.clients.attached().holds_unsupported() {
                    self.announce(&mut p, out);
                }
                if self.clients.attached().holds_unsupported() {
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
        p.attached_mut().client_id = self.bridge_id();
        p.attached_mut().held = true;
        if self.clients.attached().forced() == Some(Dialect::Control)
            || !self.client_sees(&p.question.session_id)
        {
            // `--client-dialect control`: the client is shown nothing at all (nor, with
            // `--linger`, one that does not have the session).
            p.attached_mut().tool_call_id = None;
        } else {
            // No invisible waits: the chat says that the agent waits, and where to answer.
            // The tool call is the prompt's shown before a `-32601`, else the agent's own,
            // else a new one; it is marked done when the question ends.
            // (A tool approval's tool call is the tool's own: never the pointer.)
            let agent_tool_call = p
                .agent_tool_call
                .as_ref()
                .filter(|_| !p.origin.approves_a_tool());
            let (tool_call_id, announce) = match (&p.attached().tool_call_id, agent_tool_call) {
                (Some(tc), _) | (None, Some(tc)) => (tc.clone(), false),
                (None, None) => (
                    format!(
                        "question-{}",
                        p.attached().client_id.as_json().trim_matches('"')
                    ),
                    true,
                ),
            };
            self.point_elsewhere(Who::Attached, &p, &tool_call_id, announce, out);
            p.attached_mut().tool_call_id = Some(tool_call_id);
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

    /// Shows `p` to `who`: rendered from the question (not from a line the agent sent
    /// earlier) in `dialect`, into `d`, and sent to `who`. The one rendering of a question,
    /// for any client at any time: its first showing, a reattach, a join, a fallback after
    /// a `-32601`. `original` is the agent's request, for a client that gets it as sent.
    /// `Err(Some(why))`: a permission prompt cannot express it; `Err(None)`: the dialect
    /// cannot show it at all. What then happens is the caller's (the attached client's
    /// question is held or rejected; a joined client is pointed at the other surfaces).
    pub(in crate::router) fn deliver(
        &mut self,
        who: Who,
        p: &Open,
        d: &mut Delivery,
        dialect: Dialect,
        original: Option<&Bytes>,
        out: &mut Outbox,
    ) -> Result<(), Option<&'static str>> {
        let Some(view) = self.clients.view(who) else {
            return Err(None);
        };
        let style = view.prompt_style();
        let rendered = match dialect {
            Dialect::Control => render::Rendered::Unsupported,
            _ => render::render(&p.asked, d, dialect, original, style, &mut || {
                self.bridge_id()
            }),
        };
        match rendered {
            render::Rendered::Lines(lines) => {
                self.send_to(who, lines, out);
                Ok(())
            }
            render::Rendered::Obstacle(why) => Err(Some(why)),
            render::Rendered::Unsupported => Err(None),
        }
    }

    /// Tells `who` in its chat that the agent waits on `p` and where to answer it (no
    /// invisible waits): the tool call `tool_call_id` pending (`announce`: a new one), and
    /// the same in words, as some clients show no pending tool call (codecompanion.nvim).
    pub(in crate::router) fn point_elsewhere(
        &mut self,
        who: Who,
        p: &Open,
        tool_call_id: &str,
        announce: bool,
        out: &mut Outbox,
    ) {
        let page = self.cfg.page_url.as_deref();
        let waiting = chat::waiting(&p.question, tool_call_id, announce, page);
        let said = chat::waiting_text(&p.question, page).replace('\n', " ");
        let lines = vec![
            render::Line::Notification(jsonrpc::notification(
                crate::methods::SESSION_UPDATE,
                &waiting,
            )),
            render::Line::Notification(render::note_line(&p.question.session_id, &said)),
        ];
        self.send_to(who, lines, out);
    }

    /// Sends `who` a prompt's lines.
    pub(in crate::router) fn send_to(
        &mut self,
        who: Who,
        lines: Vec<render::Line>,
        out: &mut Outbox,
    ) {
        match who {
            Who::Attached => self.send_lines(lines, out),
            Who::Joined(c) => out.joined_lines(c, lines.into_iter().map(render::Line::into_bytes)),
        }
    }
}
