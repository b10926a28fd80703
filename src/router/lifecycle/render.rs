//! A question's prompt in a dialect, as lines for one client: the same for the attached
//! client ([`super::show`]) and for clients that joined the session
//! ([`crate::router::joined`]). Pure: the caller gives the ids and sends the lines.

use bytes::Bytes;
use serde_json::json;

use crate::envelope::RequestId;
use crate::jsonrpc;
use crate::questions::open::{Delivery, Pending};
use crate::questions::prompts::{self, Style};
use crate::questions::{dialect, Dialect};
use crate::rawjson::{self, Existing};
use crate::router::rewrite;

/// One line of a prompt, by what it is to the client.
pub(in crate::router) enum Line {
    /// The agent's own request, as it was sent (forwarded traffic).
    Forwarded(Bytes),
    /// A request of the bridge's.
    Request(Bytes),
    /// A notification of the bridge's.
    Notification(Bytes),
}

impl Line {
    /// The line as it is sent, whatever it is to the client.
    pub(in crate::router) fn into_bytes(self) -> Bytes {
        let (Line::Forwarded(l) | Line::Request(l) | Line::Notification(l)) = self;
        l
    }
}

/// A chat note in `session`, as a `session/update` line.
pub(in crate::router) fn note_line(session: &str, text: &str) -> Bytes {
    jsonrpc::notification(
        crate::methods::SESSION_UPDATE,
        &crate::questions::chat::note(session, text),
    )
}

/// A question's prompt for one client.
pub(in crate::router) enum Rendered {
    Lines(Vec<Line>),
    /// A permission prompt cannot express it (why).
    Obstacle(&'static str),
    /// It cannot be shown in this dialect at all.
    Unsupported,
}

/// Renders `p` in `dialect` (not `Control`), setting `d`'s id, dialect and first prompt;
/// `original` is the agent's request, when the client is to get it as it was sent.
pub(in crate::router) fn render(
    p: &Pending,
    d: &mut Delivery,
    dialect: Dialect,
    original: Option<&Bytes>,
    style: Style,
    next_id: &mut dyn FnMut() -> RequestId,
) -> Rendered {
    let expires = p
        .expires_wall
        .map(|w| humantime::format_rfc3339_millis(w).to_string());
    d.dialect = dialect;
    let line = match dialect {
        Dialect::Control => return Rendered::Unsupported,
        Dialect::Native => {
            // A native request is only ever shown from its own line.
            let Some(line) = original else {
                return Rendered::Unsupported;
            };
            d.client_id = p.agent_id.clone();
            Line::Forwarded(line.clone())
        }
        Dialect::Extension => match (original, p.origin.name()) {
            (Some(line), "question") => {
                d.client_id = p.agent_id.clone();
                // The agent's own request, with `expiresAt`.
                Line::Forwarded(match &expires {
                    Some(at) => rewrite(line.clone(), |l| {
                        rawjson::merge(l, &["params"], "expiresAt", &json!(at), Existing::Replace)
                    }),
                    None => line.clone(),
                })
            }
            _ => {
                d.client_id = next_id();
                let params = dialect::to_extension(&p.question, expires.as_deref());
                Line::Request(jsonrpc::request(
                    &d.client_id,
                    crate::questions::METHOD,
                    &params,
                ))
            }
        },
        Dialect::Elicitation => {
            d.client_id = next_id();
            let mut params = dialect::to_elicitation(&p.question, expires.as_deref());
            if let Some(tc) = &p.agent_tool_call {
                params["toolCallId"] = json!(tc);
            }
            Line::Request(jsonrpc::request(
                &d.client_id,
                crate::methods::ELICITATION_CREATE,
                &params,
            ))
        }
        Dialect::Permission => {
            if let Some(why) = prompts::obstacle(&p.question) {
                return Rendered::Obstacle(why);
            }
            d.at = prompts::At::first(&p.question, style, 0);
            d.collected.clear();
            return match permission_step(p, d, next_id()) {
                Some(lines) => Rendered::Lines(lines),
                None => Rendered::Unsupported,
            };
        }
    };
    Rendered::Lines(vec![line])
}

/// Prompt `d.at` of `p` as a permission prompt under `id` (the first prompt announces the
/// tool call, unless it is the agent's own, which the client has); `None` when it cannot
/// be asked so.
pub(in crate::router) fn permission_step(
    p: &Pending,
    d: &mut Delivery,
    id: RequestId,
) -> Option<Vec<Line>> {
    let first = d.tool_call_id.is_none();
    let tool_call_id = d
        .tool_call_id
        .clone()
        .unwrap_or_else(|| match &p.agent_tool_call {
            Some(tc) => tc.clone(),
            None => format!("question-{}", id.as_json().trim_matches('"')),
        });
    let announce = first && p.agent_tool_call.is_none();
    let (tool_call, request) = prompts::to_permission(&p.question, d.at, &tool_call_id, announce)?;
    d.client_id = id;
    d.tool_call_id = Some(tool_call_id);
    Some(vec![
        Line::Notification(jsonrpc::notification(
            crate::methods::SESSION_UPDATE,
            &tool_call,
        )),
        Line::Request(jsonrpc::request(
            &d.client_id,
            crate::methods::SESSION_REQUEST_PERMISSION,
            &request,
        )),
    ])
}
