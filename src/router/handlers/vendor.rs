//! The vendors' own ways of asking (Cursor, Grok Build, gemini-cli, OpenCode): methods an
//! ACP client does not know unless it says so.
//!
//! A request the bridge can read is tracked on every surface. A client that advertised the
//! method (a `_meta` key named after it, or the vendor's own opt-in) gets it as it was sent,
//! and its result goes back unchanged; if it answers `-32601` after all, or never said so,
//! the question is shown in the best standard shape the client has (the extension, a form,
//! a permission prompt) and the answer is mapped back into the vendor's shape. One the
//! bridge cannot read is tracked and forwarded.

use serde_json::Value;

use crate::questions::open::Choose;
use crate::questions::sources;
use crate::router::lifecycle::{Asked, NotAdmitted};
use crate::router::message::Req;
use crate::router::{Outbox, Router, Side};

/// The request of a vendor method ([`sources::VENDORS`]) arrives.
pub(in crate::router) fn arrives(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    let Some(vendor) = sources::vendor(req.method) else {
        let line = req.line.clone();
        return r.pass(Side::Agent, req, line, out);
    };
    let id = req.id.clone();
    let method = req.method.trim_start_matches('_');
    let prompting = r.prompting_session().unwrap_or_default().to_owned();
    let params: Value = req
        .params
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or(Value::Null);
    let parsed = (vendor.parse)(&params, format!("{method}:{id}"), &prompting);
    let Some((question, origin, context)) = parsed else {
        let line = req.line.clone();
        return r.pass(Side::Agent, req, line, out);
    };
    let asked = Asked {
        question,
        origin,
        context: Some(context),
        agent_tool_call: params
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        choose: Choose::Vendor {
            method: req.method.into(),
        },
        not_admitted: NotAdmitted::Pass,
        approval: None,
    };
    r.ask(req, asked, out);
}
