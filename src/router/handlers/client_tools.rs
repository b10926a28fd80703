//! The agent's requests for the client's files and terminals (`fs/*`, `terminal/*`): passed
//! on, but while the agent runs inside the wall (docs/SECURITY.md, "The agent itself"),
//! refused with an error: what the client would read, write or run for the agent, it would
//! do outside the wall.

use crate::router::lifecycle;
use crate::router::message::Req;
use crate::router::{Outbox, Router, Side};

pub(in crate::router) fn arrives(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    if !r.walled() {
        let line = req.line.clone();
        return r.pass(Side::Agent, req, line, out);
    }
    lifecycle::refuse(
        &req.id,
        crate::jsonrpc::code::METHOD_NOT_FOUND,
        format!(
            "{}: the agent runs inside the wall (--sandbox), and the client's files and terminals are outside it",
            req.method
        ),
        out,
    );
}
