//! `initialize` from the client: records what the client can show (and so the dialect of
//! questions), merges the extension's capability into the request the agent sees (and
//! `elicitation.form` with `--advertise-elicitation`), and into the agent's result.
//! A message that cannot be merged into goes on unchanged.

use bytes::Bytes;
use serde_json::value::RawValue;

use crate::capabilities::{self, ClientSupport};
use crate::envelope::RequestId;
use crate::router::message::Req;
use crate::router::{rewrite, Outbox, Router, Side};

pub(in crate::router) fn arrives(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    // The text was checked; `RawValue` only wraps it again.
    let params = req
        .params
        .and_then(|p| serde_json::from_str::<&RawValue>(p).ok());
    let support = ClientSupport::from_initialize(params);
    r.client_view().initialized(support.clone());
    let dialect = r.dialect();
    tracing::info!(
        dialect = dialect.as_str(),
        forced = r.client_view().forced().is_some(),
        native_questions = support.native_questions,
        elicitation_form = support.elicitation_form,
        "questions will reach the client as {}",
        dialect.as_str()
    );
    if r.initialize_again(&req, out) {
        return;
    }
    let mut line = rewrite(req.line.clone(), capabilities::merge_initialize_request);
    if r.walled() {
        line = rewrite(line, capabilities::withhold_client_tools);
    }
    if r.client_view().translates_agent_elicitations() {
        line = rewrite(line, capabilities::advertise_elicitation);
    }
    for opt_in in r.client_view().opt_ins() {
        line = rewrite(line, |l| capabilities::offer_opt_in(l, opt_in));
    }
    r.pass(Side::Client, req, line, out);
}

/// The agent's successful `initialize` result: the name it gives (`agentInfo.name`) is kept
/// for the approval policy's rules.
pub(in crate::router) fn result(r: &mut Router, id: &RequestId, line: Bytes) -> Bytes {
    #[derive(serde::Deserialize)]
    struct Info<'a> {
        #[serde(borrow)]
        result: Option<Result<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Result<'a> {
        #[serde(rename = "agentInfo", borrow)]
        agent_info: Option<AgentInfo<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct AgentInfo<'a> {
        #[serde(borrow)]
        name: Option<std::borrow::Cow<'a, str>>,
    }
    if let Ok(Info {
        result:
            Some(Result {
                agent_info: Some(AgentInfo { name: Some(name) }),
            }),
    }) = serde_json::from_slice::<Info>(&line)
    {
        r.set_agent_name(name.chars().take(200).collect());
    }
    let line = rewrite(line, capabilities::merge_initialize_response);
    r.initialized(id, line)
}
