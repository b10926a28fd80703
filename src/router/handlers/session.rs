//! `session/new`, `session/load`, `session/resume` and `session/fork` from the client: the
//! request's `cwd` is held by its id ([`crate::router::stores::sessions`]) until the agent's
//! result names the session. Nothing of the messages changes.
//!
//! `--linger`: a load or resume of a session this holder does not keep is held back while
//! the shell asks whether another holder of the same agent command and folder keeps it
//! ([`crate::router::Effect::WhoKeeps`]). A session kept elsewhere is refused (`-32000`,
//! naming that holder): this agent loading it too would make two agents of one session.
//! A front checks its client's first request this way itself; this covers the later ones.

use std::path::PathBuf;
use std::time::Instant;

use bytes::Bytes;
use serde_json::Value;

use crate::envelope::RequestId;
use crate::jsonrpc;
use crate::router::message::Req;
use crate::router::stores::sessions::HeldBack;
use crate::router::{Effect, Outbox, Router, Side};

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
            if r.may_be_kept_elsewhere(session) {
                r.sessions().hold_back(HeldBack {
                    id: req.id.clone(),
                    method: req.method.into(),
                    session: session.to_owned(),
                    line: req.line.clone(),
                });
                out.effects.push(Effect::WhoKeeps {
                    id: req.id,
                    session: session.to_owned(),
                });
                return;
            }
        }
    }
    hold_cwd(r, &req.id, params.as_ref());
    let line = req.line.clone();
    r.pass(Side::Client, req, line, out);
}

/// Holds the request's `cwd` until the agent's result names its session.
fn hold_cwd(r: &mut Router, id: &RequestId, params: Option<&Value>) {
    let Some(p) = params else {
        return;
    };
    let cwd = p["cwd"]
        .as_str()
        .map(PathBuf::from)
        .filter(|c| c.is_absolute());
    if let Some(cwd) = cwd {
        let named = p["sessionId"].as_str().map(str::to_owned);
        r.sessions().wait(id.clone(), cwd, named);
    }
}

/// The shell's answer for a request held back: refused when `holder` keeps its session,
/// else on its way to the agent.
pub(in crate::router) fn kept_elsewhere(
    r: &mut Router,
    id: &RequestId,
    holder: Option<u32>,
    now: Instant,
    out: &mut Outbox,
) {
    let Some(h) = r.sessions().release(id) else {
        // Its client left meanwhile.
        return;
    };
    let Some(pid) = holder else {
        let params = serde_json::from_slice::<Value>(&h.line)
            .ok()
            .map(|mut v| v["params"].take());
        hold_cwd(r, &h.id, params.as_ref());
        let session = Some(h.session);
        return r.track_request(Side::Client, h.id, h.method, session, h.line, now, out);
    };
    tracing::info!(session = %h.session, holder = pid, "a load of a session another holder keeps; refused");
    let msg = format!(
        "session {} is kept by another bridge of this agent (holder pid {pid}), with its agent \
         and what waits in it: it cannot be opened here as well (two agents would work on it). \
         Open it in a new window, where it is taken back, or stop that holder with \
         `acp-question-bridge sessions stop {pid}`.",
        h.session
    );
    let data = serde_json::json!({"sessionId": h.session, "keptBy": {"holderPid": pid}});
    out.client(jsonrpc::error(
        Some(&h.id),
        jsonrpc::code::SERVER_ERROR,
        &msg,
        Some(data),
    ));
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

#[cfg(test)]
mod tests {
    use crate::router::fixture::Fixture;
    use crate::router::RouterConfig;

    #[test]
    fn a_load_waits_for_the_holders_and_goes_on_as_it_came_or_is_refused() {
        let cfg = RouterConfig {
            linger: true,
            ..RouterConfig::default()
        };
        let mut f = Fixture::new(cfg).deferred();
        let load = |id: u32, s: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"session/load","params":{{"sessionId":"{s}","cwd":"/p","mcpServers":[]}}}}"#
            )
        };
        // Nobody else keeps it: held back until the shell says so, then sent as it came.
        f.client(&load(1, "free"));
        assert!(
            f.take_agent().is_empty(),
            "held back while the holders are asked"
        );
        f.run_effects();
        assert_eq!(f.take_agent(), [load(1, "free")]);
        // Another holder keeps it: refused, naming that holder; the agent never sees it.
        f.kept_elsewhere.insert("kept".into(), 4242);
        f.client(&load(2, "kept"));
        f.run_effects();
        assert!(f.take_agent().is_empty());
        let told: serde_json::Value =
            serde_json::from_str(&f.take_client().concat()).expect("one response");
        assert_eq!(told["id"], 2);
        assert_eq!(told["error"]["code"], -32000);
        assert_eq!(told["error"]["data"]["keptBy"]["holderPid"], 4242);
        // The client that sent a load left before the answer: nothing is sent for it.
        f.client(&load(3, "kept"));
        f.r.on_client_detached(f.now, &mut f.out);
        f.run_effects();
        assert!(f.take_client().is_empty() && f.take_agent().is_empty());
    }
}
