//! `_sandboxagent/session/request_question` from the agent: the extension's own question.
//! Parsed and validated into the question model; an invalid one is refused and never
//! reaches the client. It does not know how the question is shown.

use crate::questions::model;
use crate::questions::open::Choose;
use crate::questions::sources::extension::Extension;
use crate::router::lifecycle::{Asked, NotAdmitted};
use crate::router::message::Req;
use crate::router::{Outbox, Router};

/// The agent asks a question: validate, then ask it in the client's dialect.
pub(in crate::router) fn arrives(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    let question = match model::parse_request_from(req.params, Some(req.id.as_json())) {
        Ok(q) => q,
        Err(e) => return r.refuse_invalid(&req.id, &e, out),
    };
    let asked = Asked {
        question,
        origin: std::sync::Arc::new(Extension),
        context: None,
        agent_tool_call: None,
        choose: Choose::Question,
        not_admitted: NotAdmitted::Refuse,
        approval: None,
    };
    r.ask(req, asked, out);
}
