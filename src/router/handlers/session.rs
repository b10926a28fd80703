//! `session/new`, `session/load`, `session/resume` and `session/fork` from the client: the
//! request's `cwd` is held by its id ([`crate::router::stores::sessions`]) until the agent's
//! result names the session. Nothing of the messages changes.

use std::path::PathBuf;

use bytes::Bytes;
use serde_json::Value;

use crate::envelope::RequestId;
use crate::router::message::Req;
use crate::router::{Outbox, Router, Side};

/// The request: its `cwd` (an absolute path, as ACP requires) is held by its id.
pub(in crate::router) fn arrives(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    let params = req
        .params
        .and_then(|p| serde_json::from_str::<Value>(p).ok());
    if let Some(p) = &params {
        let load = req.method == crate::methods::SESSION_LOAD;
        let resume = req.method == crate::methods::SESSION_RESUME;
        if let (true, Some(session)) = (load || resume, p["sessionId"].as_str()) {
            if r.attach_session(&req, session, load, out) {
                return;
            }
        }
        let cwd = p["cwd"]
            .as_str()
            .map(PathBuf::from)
            .filter(|c| c.is_absolute());
        if let Some(cwd) = cwd {
            let named = p["sessionId"].as_str().map(str::to_owned);
            r.sessions().wait(req.id.clone(), cwd, named);
        }
    }
    let line = req.line.clone();
    r.pass(Side::Client, req, line, out);
}

/// `session/list`: answered by the bridge from the sessions it holds when the agent cannot
/// list its own (`--linger`); else the agent's.
pub(in crate::router) fn list(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    let cwd = req
        .params
        .and_then(|p| serde_json::from_str::<Value>(p).ok())
        .and_then(|p| p["cwd"].as_str().map(str::to_owned));
    if r.list_held_sessions(&req, cwd.as_deref(), out) {
        return;
    }
    let line = req.line.clone();
    r.pass(Side::Client, req, line, out);
}

/// The agent's successful result: the session it names gets the folder.
pub(in crate::router) fn result(r: &mut Router, id: &RequestId, line: Bytes) -> Bytes {
    // (Held under the id the client sent: `--linger` may have sent it under another.)
    let id = r.original_id(id);
    let waited = r.sessions().answered(&id);
    let session = serde_json::from_slice::<Value>(&line)
        .ok()
        .and_then(|v| v["result"]["sessionId"].as_str().map(str::to_owned))
        .or_else(|| waited.as_ref().and_then(|(_, named)| named.clone()));
    if let Some(session) = &session {
        r.session_seen(session, &line);
    }
    if let (Some((cwd, _)), Some(session)) = (waited, session) {
        r.sessions().insert(session, cwd);
    }
    line
}
