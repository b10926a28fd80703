//! `elicitation/create` (and its older name `session/elicitation`) from the agent: a form.
//!
//! A form the bridge can read as a question is tracked on every surface. A client that
//! renders forms is shown it as it was sent (native) and its result goes back unchanged;
//! when the bridge offered forms and the client does not render them, it is shown as the
//! extension or a permission prompt (or waits on the control server) and the answer mapped
//! back into the form's result (`cancel` when nothing can show it: only the user declines). A
//! form the bridge cannot read (URL mode, a new property type) is only forwarded.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::jsonrpc;
use crate::questions::open::Choose;
use crate::questions::sources::form::{self, FormSource};
use crate::questions::sources::Origin;
use crate::router::lifecycle::{Asked, NotAdmitted};
use crate::router::message::Req;
use crate::router::{Outbox, Router, Side};

pub(in crate::router) fn arrives(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    let translate = r.client_view().translates_agent_elicitations();
    let id = req.id.clone();
    let v: Value = req
        .params
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or(Value::Null);
    let parsed = form::parse(&v, format!("elicitation:{id}"));
    let (question, form) = match parsed {
        Ok(x) => x,
        Err(why) if translate => {
            tracing::warn!(%id, why = ?why, "the client cannot show this elicitation; cancelled (not seen by the user)");
            out.agent(jsonrpc::result(&id, &json!({ "action": "cancel" })));
            return;
        }
        Err(why) => {
            tracing::debug!(%id, why = ?why, "an elicitation the bridge cannot read; forwarded");
            let line = req.line.clone();
            return r.pass(Side::Agent, req, line, out);
        }
    };
    let asked = Asked {
        question,
        origin: Arc::new(FormSource { form }) as Origin,
        context: v.get("message").map(|m| json!({ "message": m })),
        agent_tool_call: v
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        choose: Choose::Form,
        approval: None,
        // The agent's own request, which the client can show, is not the bridge's to
        // refuse; one it cannot show gets the error.
        not_admitted: if translate {
            NotAdmitted::Refuse
        } else {
            NotAdmitted::Pass
        },
    };
    r.ask(req, asked, out);
}
