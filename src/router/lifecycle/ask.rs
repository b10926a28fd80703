//! The one way a question enters the router. Each source's handler
//! ([`crate::router::handlers`]: the extension, tool approvals, forms, the vendors' methods)
//! only reads its request into an [`Asked`]: the question, its source, what the agent said
//! around it, and how the client is to see it. Everything after that is written once, here:
//! admission against the caps, the pending entry with its context and the agent's tool call,
//! the approval policy ([`super::decide`]), and the delivery ([`super::show`]). A step that concerns every question, whatever its
//! source, belongs in [`Router::ask`].
//!
//! Invariant: a request that reaches [`Router::ask`] is answered exactly once: refused, passed
//! on to the client as the agent's own request, answered by the approval policy, or
//! registered and shown (and then ended by [`super::endings`] or answered).

use serde_json::Value;

use bytes::Bytes;

use crate::envelope;
use crate::questions::open::{Choose, Open, Pending};
use crate::questions::sources::Origin;
use crate::questions::{model, Dialect};
use crate::router::message::Req;
use crate::router::{Outbox, Router, Side};

/// A question a source read from an agent's request, and how the client is to see it.
pub(in crate::router) struct Asked {
    pub question: model::Question,
    pub origin: Origin,
    /// What the agent said around it (its tool call, a message), shown on every surface.
    pub context: Option<Value>,
    /// The agent's own tool call that the question belongs to, if it named one.
    pub agent_tool_call: Option<String>,
    /// How a client's dialect for it is chosen ([`super::super::client::ClientView::pick`]).
    pub choose: Choose,
    /// What becomes of a question the registry does not take (a cap, an id in use).
    pub not_admitted: NotAdmitted,
    /// A plain tool approval's tool call: the approval policy may answer it
    /// ([`super::decide`]).
    pub approval: Option<Value>,
}

/// What becomes of a question the registry does not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::router) enum NotAdmitted {
    /// The agent gets the error (the bridge's own way of asking: the extension, a form the
    /// client could not show anyway).
    Refuse,
    /// The client gets the agent's request as it was, untracked (the agent's own request,
    /// which the client can show: not the bridge's to refuse).
    Pass,
}

/// How a question is asked once it is read: what [`Router::ask`] needs after the approval
/// policy has had its say.
#[derive(Debug)]
pub(in crate::router) struct Rest {
    pub dialect: Dialect,
    pub as_sent: bool,
    pub not_admitted: NotAdmitted,
    /// A plain tool approval's tool call (for "Always allow"'s drafts).
    pub approval: Option<Value>,
    /// The agent's request, as it was read.
    pub line: Bytes,
    pub method: Box<str>,
    pub session: Option<String>,
}

impl Router {
    /// Asks `asked`, read from `req`.
    pub(in crate::router) fn ask(&mut self, req: Req<'_>, asked: Asked, out: &mut Outbox) {
        let (dialect, as_sent) = self.clients.attached().pick(&asked.choose);
        let mut p = self.new_pending(req.id.clone(), asked.question, asked.origin, req.now);
        p.choose = asked.choose;
        if self.cfg.linger {
            p.original = Some(Bytes::copy_from_slice(req.line));
        }
        p.context = asked.context;
        p.agent_tool_call = asked.agent_tool_call;
        let rest = Rest {
            dialect,
            as_sent,
            not_admitted: asked.not_admitted,
            approval: asked.approval,
            line: req.line.clone(),
            method: req.method.into(),
            session: req.params.and_then(envelope::session_id_in),
        };
        // A tool approval goes to the policy first. It takes no slot, so its deny holds at
        // every cap. (An id already in flight is refused or passed below, as any question's.)
        match rest.approval.clone() {
            Some(tool_call) if self.policy.is_some() && !self.id_in_use(&p.agent_id) => {
                self.ask_policy(p, &tool_call, rest, out)
            }
            _ => self.admit_and_show(p, rest, out),
        }
    }

    /// Admits `p` against the caps and shows it; one not admitted is refused or passed on.
    pub(super) fn admit_and_show(&mut self, mut p: Pending, rest: Rest, out: &mut Outbox) {
        if let Err((code, msg)) = self.admit(&p.agent_id, &p.question) {
            return match rest.not_admitted {
                NotAdmitted::Refuse => super::refuse(&p.agent_id, code, msg, out),
                NotAdmitted::Pass => {
                    let now = p.created;
                    self.track_request(
                        Side::Agent,
                        p.agent_id,
                        rest.method,
                        rest.session,
                        rest.line,
                        now,
                        out,
                    )
                }
            };
        }
        p.digest = self.digests.digest(&p.question.session_id);
        if let Some(tool_call) = &rest.approval {
            p.always_allow = self.always_allow_drafts(&p.question.session_id, tool_call);
        }
        self.counters.questions_asked += 1;
        let original = rest.as_sent.then_some(&rest.line);
        self.opened += 1;
        let mut open = Open::new(p);
        open.serial = self.opened;
        self.show(open, rest.dialect, original, out);
    }
}
