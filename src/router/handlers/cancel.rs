//! Cancellations: the client's `session/cancel` (forwarded; the session's questions are
//! rejected `cancelled` and its prompts still open at the client answered on its behalf) and
//! the agent's `$/cancel_request` (for a pending question: the agent gets `-32800` and the
//! client is told; for anything else, forwarded).

use crate::envelope;
use crate::router::message::Note;
use crate::router::{Outbox, Router, Side};

pub(in crate::router) fn session_cancel(r: &mut Router, note: Note<'_>, out: &mut Outbox) {
    r.forward(Side::Client, note.line.clone(), out);
    if let Some(session) = note.params.and_then(envelope::session_id_in) {
        r.cancel_session_questions(&session, out);
        r.answer_agent_requests(Some(&session), true, out);
    }
}

/// The client's `$/cancel_request`: with `--linger`, of a request sent under a bridge id, the
/// agent is sent that id; one naming a request of a client that left is dropped.
pub(in crate::router) fn client_cancel_request(r: &mut Router, note: Note<'_>, out: &mut Outbox) {
    if let Some(line) = r.cancel_for_this_client(note.params, note.line) {
        r.forward(Side::Client, line, out);
    }
}

pub(in crate::router) fn cancel_request(r: &mut Router, note: Note<'_>, out: &mut Outbox) {
    if r.on_agent_cancel_request(note.params, note.line, out) {
        return;
    }
    if r.cancel_unsent(note.params, out) {
        return;
    }
    r.forward(Side::Agent, note.line.clone(), out);
}
