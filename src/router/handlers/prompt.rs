//! The client's `session/prompt` (a new turn of the session's digest) and `session/close`
//! (its digest dropped): noted in [`crate::router::stores::digest`], then passed on as they
//! are.

use crate::router::message::Req;
use crate::router::{Outbox, Router, Side};

/// The client's `session/prompt` (a new turn) or `session/close` (the digest is dropped):
/// noted, then passed on.
pub(in crate::router) fn client_request(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    if let Some(session) = req.params.and_then(crate::envelope::session_id_in) {
        if req.method == crate::methods::SESSION_CLOSE {
            r.digests().session_ends(&session);
        } else {
            r.digests().turn_starts(&session);
        }
        if req.method == crate::methods::SESSION_PROMPT {
            // The user typed it: they are at the desk.
            out.at_desk = true;
            // And it is part of the conversation a later client's load replays.
            r.keep_prompt(&session, req.params.unwrap_or_default());
        }
    }
    let line = req.line.clone();
    r.pass(Side::Client, req, line, out);
}
