//! `session/request_permission` from the agent: a tool approval (or Qwen's permission with
//! questions). Every ACP client shows a tool approval, so it goes to the client as it was
//! sent and the client's result goes back unchanged; the bridge tracks it so every other
//! surface (the control server, the page, the CLI, the journal, `--on-question`) sees it and
//! may answer it first. Qwen's questions are a real question that no client but Qwen's own
//! reads from the request: a client that shows questions (the extension, forms) is asked
//! one, and only a permission-only client gets the request as sent; Qwen gets its own
//! answer shape either way. One the bridge cannot read is only forwarded.

use std::sync::Arc;

use crate::questions::open::Choose;
use crate::questions::sources::permission;
use crate::questions::sources::Origin;
use crate::router::lifecycle::{Asked, NotAdmitted};
use crate::router::message::Req;
use crate::router::stores::{fit, tool_calls};
use crate::router::{Outbox, Router, Side};

pub(in crate::router) fn arrives(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    let id = req.id.clone();
    // The tool call as this request gives it: what the approval policy reads. Never the
    // remembered announcement (cut to its digest, or stale), which is for showing only.
    let mut requested = None;
    let mut left_out = Vec::new();
    let parsed = req
        .params
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
        .and_then(|mut v| {
            requested = Some(v["toolCall"].clone());
            // What the agent announced of the tool call, where the request names it only.
            if let Some(tc) = v.get_mut("toolCall") {
                left_out = tool_calls::fill(r.tool_calls(), tc);
            }
            permission::parse(&v, format!("permission:{id}"))
        });
    let Some((question, source, context)) = parsed else {
        let line = req.line.clone();
        return r.pass(Side::Agent, req, line, out);
    };
    let choose = Choose::Permission {
        asks_questions: source.asks_questions(),
    };
    // The policy reads the request's own tool call, whole; every surface is shown it, with
    // what was announced, within its bound, and told what was left out of it.
    let approval = requested.filter(|_| !source.asks_questions());
    let (shown, cut) = tool_calls::shown(&context["toolCall"]);
    fit::merge(&mut left_out, cut);
    let mut context = context;
    context["toolCall"] = shown;
    if !left_out.is_empty() {
        let mut said = vec!["the tool call (its text past 16 KiB)".to_owned()];
        said.extend(left_out.iter().map(|l| l.say("/toolCall")));
        context["cut"] = said.into();
        let left: Vec<_> = left_out.iter().map(|l| l.to_json("/toolCall")).collect();
        context["leftOut"] = left.into();
    }
    // The tool call asked about is one of the turn's, however long the line that announced it.
    r.digests()
        .asked(&question.session_id, &context["toolCall"]);
    let asked = Asked {
        question,
        origin: Arc::new(source) as Origin,
        agent_tool_call: context["toolCall"]["toolCallId"]
            .as_str()
            .map(str::to_owned),
        approval,
        context: Some(context),
        choose,
        not_admitted: NotAdmitted::Pass,
    };
    r.ask(req, asked, out);
}
