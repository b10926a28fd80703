//! `elicitation/create` from the agent. Forwarded (and tracked) when the client renders form
//! elicitations or `--advertise-elicitation` is off; else the form is read as a question and
//! shown in the extension or permission dialect, and the answer mapped back into the form's
//! result. A form no question can express (or a URL elicitation) is declined.

use serde_json::{json, Value};

use crate::jsonrpc;
use crate::questions::registry::Origin;
use crate::questions::{dialect, Dialect};
use crate::router::dispatch::Req;
use crate::router::questions::refuse;
use crate::router::{Outbox, Router, Side};

pub(in crate::router) fn arrives(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    if !r.translates_agent_elicitations() {
        let line = req.line.clone();
        return r.pass(Side::Agent, req, line, out);
    }
    let id = req.id;
    let v: Value = req
        .params
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or(Value::Null);
    let (q, fields) = match dialect::from_agent_elicitation(&v, format!("elicitation:{id}")) {
        Ok(x) => x,
        Err(why) => {
            tracing::warn!(%id, why = ?why, "the client cannot show this elicitation; declined");
            out.agent(jsonrpc::result(&id, &json!({ "action": "decline" })));
            return;
        }
    };
    if let Err((code, msg)) = r.admit(&id, &q) {
        return refuse(&id, code, msg, out);
    }
    let p = r.new_pending(id, q, Origin::AgentElicitation(fields), req.now);
    let native = r.dialect() == Dialect::Extension;
    let dialect = if native {
        Dialect::Extension
    } else {
        Dialect::Permission
    };
    r.show(p, dialect, None, out);
}
