//! `_sandboxagent/session/request_question` from the agent: the extension's own question.
//! Parsed and validated into the question model; an invalid one is refused and never
//! reaches the client. It does not know how the question is shown.

use crate::questions::model;
use crate::questions::registry::Origin;
use crate::questions::sources::extension::Extension;
use crate::router::message::Req;
use crate::router::questions::refuse;
use crate::router::{Outbox, Router};

/// The agent asks a question: validate, register, deliver to the client.
pub(in crate::router) fn arrives(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    let q = match model::parse_request_from(req.params, Some(req.id.as_json())) {
        Ok(q) => q,
        Err(e) => return r.refuse_invalid(&req.id, &e, out),
    };
    if let Err((code, msg)) = r.admit(&req.id, &q) {
        return refuse(&req.id, code, msg, out);
    }
    let source: Origin = std::sync::Arc::new(Extension);
    let p = r.new_pending(req.id, q, source, req.now);
    let dialect = r.dialect();
    r.show(p, dialect, Some(req.line), out);
}
