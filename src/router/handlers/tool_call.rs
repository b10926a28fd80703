//! The agent's `session/update`: always forwarded as it is. One that announces or updates a
//! tool call, or a plan, is also read: the tool call remembered in
//! [`crate::router::stores::tool_calls`], the session's digest updated.
//!
//! Cost: a `session/update` pays one substring search for `"sessionUpdate"` in at most its
//! first [`LOOK`] bytes (and stays in its run of forwarded lines); only one whose value is a
//! tool call's or a plan's is parsed ([`picked`]).

use std::sync::LazyLock;

use memchr::memmem;
use serde_json::Value;

use super::long_update;
use crate::router::message::Note;
use crate::router::stores::tool_calls::remember;
use crate::router::{Outbox, Router, Side};

/// A longer update is forwarded and its head read ([`long_update`]), not parsed whole.
const MAX_LINE: usize = 256 << 10;
/// How far into a `session/update` line `"tool_call` is looked for.
const LOOK: usize = 4096;

/// Whether a `session/update` line is one the bridge reads (and is not too long to keep): its
/// `sessionUpdate`, within the first [`LOOK`] bytes where agents put it (before a long
/// content), is `tool_call`, `tool_call_update` or `plan`. The search stops at the key, near
/// the start of a message chunk, so the flood of chunks costs a few dozen bytes of search
/// each and stays in its run of forwarded lines.
pub(in crate::router) fn picked(line: &[u8]) -> bool {
    static FINDER: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\"sessionUpdate\""));
    let head = &line[..line.len().min(LOOK)];
    let Some(at) = FINDER.find(head) else {
        return false;
    };
    let mut rest = &head[at + b"\"sessionUpdate\"".len()..];
    while let [b' ' | b'\t' | b'\r' | b'\n' | b':', tail @ ..] = rest {
        rest = tail;
    }
    // A tool call too long to read is picked all the same: [`update`] says what it loses.
    match rest {
        [b'"', value @ ..] => {
            value.starts_with(b"tool_call")
                || (value.starts_with(b"plan\"") && line.len() <= MAX_LINE)
        }
        _ => false,
    }
}

/// The session ids a line names (`"sessionId":"…"`, as a JSON writer writes the key; a
/// string value never holds that sequence unescaped).
fn session_ids(line: &[u8]) -> Vec<String> {
    let key = b"\"sessionId\":\"";
    memmem::find_iter(line, key)
        .filter_map(|at| {
            let rest = &line[at + key.len()..];
            let end = memchr::memchr(b'"', rest)?;
            let id = std::str::from_utf8(&rest[..end]).ok()?;
            (!id.contains('\\')).then(|| id.to_owned())
        })
        .collect()
}

/// A `session/update` the bridge [`picked`]: forwarded, and remembered when it is a tool call
/// (and, with a plan, in the digest).
pub(in crate::router) fn update(r: &mut Router, note: Note<'_>, out: &mut Outbox) {
    r.forward(Side::Agent, note.line.clone(), out);
    // Too long to parse whole: its head is read (the tool call's members, each diff's first
    // lines). Where its command (a `cd`?) was not read whole, where the shell of its
    // session is is not known (Claude puts the model's `description` in twice).
    if note.line.len() > MAX_LINE {
        let Some(h) = note.params.and_then(long_update::head) else {
            r.shells().lost(&session_ids(note.line));
            return;
        };
        remember(r.tool_calls(), &h.update);
        match &h.session {
            Some(session) if h.input_whole => {
                r.shells().seen(session, &h.update);
                r.digests().update(session, &h.update);
            }
            Some(session) => {
                r.shells().lost(std::slice::from_ref(session));
                r.digests().update(session, &h.update);
            }
            None => r.shells().lost(&session_ids(note.line)),
        }
        return;
    }
    let Some(params) = note.params else { return };
    let Ok(v) = serde_json::from_str::<Value>(params) else {
        return;
    };
    remember(r.tool_calls(), &v["update"]);
    if let Some(session) = v["sessionId"].as_str() {
        r.shells().seen(session, &v["update"]);
        r.digests().update(session, &v["update"]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tool_calls_and_plans_are_picked_by_their_session_update() {
        let line = |u: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{u}}}}}"#
            )
        };
        for yes in [
            r#"{"sessionUpdate":"tool_call","toolCallId":"t"}"#,
            r#"{"sessionUpdate" : "tool_call_update","toolCallId":"t"}"#,
            r#"{"sessionUpdate":"plan","entries":[]}"#,
        ] {
            assert!(picked(line(yes).as_bytes()), "{yes}");
        }
        for no in [
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""tool_call"}}"#,
            r#"{"sessionUpdate":"planning"}"#,
            r#"{"content":"no key"}"#,
        ] {
            assert!(!picked(line(no).as_bytes()), "{no}");
        }
        // The key past the first 4 KiB is not looked for.
        let late = format!(
            r#"{{"content":"{}","sessionUpdate":"tool_call"}}"#,
            "x".repeat(LOOK)
        );
        assert!(!picked(line(&late).as_bytes()));
    }
}
