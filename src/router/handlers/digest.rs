//! What the agent was doing when it asked: a small, bounded digest of each session, shown
//! beside its questions on every surface (docs/PROTOCOL.md, `Question.digest`):
//! - `lastMessage`: the tail of the agent's last run of `agent_message_chunk`s (at most
//!   [`MESSAGE`] bytes);
//! - `plan`: the current plan's entries with their status;
//! - `toolCalls`: the tool calls of the current turn (since the client's last
//!   `session/prompt`): title, kind, status, and the paths of their locations.
//!
//! Cost on the relay: nothing per message that is forwarded. Of each read of the agent's
//! output, its last short lines (at most [`RECENT_ONE`] bytes, found from the reader's own
//! line ranges, no parsing) are copied into a ring of [`RECENT`] bytes ([`Digests::keep`]),
//! and read back only when a question is asked. (Not the read's own buffer: it holds the reader's in-flight budget until dropped,
//! and a line longer than the budget waits for all of it.) Plans and tool calls come from
//! the `session/update`s the tool-call handler already picks (by the value of
//! `sessionUpdate`).
//!
//! Bounds: the whole digest is at most [`DIGEST`] bytes of text (what is cut is said in
//! `cut`); at most [`SESSIONS`] sessions and [`TURN_CALLS`] tool calls per turn are kept;
//! a session's digest is dropped with `session/close` (and all of them past the bound).

use std::collections::{HashMap, VecDeque};

use serde_json::{json, Map, Value};

use crate::codec::Piece;
use crate::router::message::Req;
use crate::router::{Outbox, Router, Side};
use crate::scan::Shape;

/// The most bytes of the agent's recent output kept for reading its last message (a 2 KiB
/// message in chunks of a few words is some 30 KiB of lines).
const RECENT: usize = 64 << 10;
/// The most bytes kept of one read (its last lines).
const RECENT_ONE: usize = 16 << 10;
/// A longer line is not kept (a message chunk is much shorter).
const LINE: usize = 4 << 10;
/// The most bytes of the last message shown.
pub const MESSAGE: usize = 2 << 10;
/// The most bytes of text in one session's digest.
pub const DIGEST: usize = 16 << 10;
/// The most bytes of the plan.
const PLAN: usize = 4 << 10;
/// How many tool calls of a turn are kept (the oldest forgotten first).
const TURN_CALLS: usize = 32;
/// How many sessions have a digest.
const SESSIONS: usize = 256;
/// Longer session and tool call ids are not kept.
const ID: usize = 256;
/// How many lines are read back, at most, for the last message.
const LINES_READ: usize = 4096;

/// One session's plan and the tool calls of its turn.
#[derive(Debug, Default)]
struct Session {
    plan: Option<Value>,
    turn: VecDeque<(Box<str>, Map<String, Value>)>,
}

/// The digests of the sessions, and the agent's recent output.
#[derive(Debug, Default)]
pub(in crate::router) struct Digests {
    sessions: HashMap<Box<str>, Session>,
    /// The ends of the agent's last reads, oldest first.
    recent: VecDeque<u8>,
    /// The reads in `recent`: how many bytes each kept, and whether its start was cut (the
    /// output before it is then not contiguous with it).
    reads: VecDeque<(usize, bool)>,
}

impl Digests {
    /// Copies the last short lines of one read of the agent's output (at most
    /// [`RECENT_ONE`] bytes of lines of at most [`LINE`] bytes each) into the ring. `lines`
    /// are the read's lines (ranges in `data` without their newline).
    #[inline]
    pub fn keep(&mut self, data: &[u8], lines: &[(Piece, Option<Shape>)]) {
        // Newest first: the ranges kept, merged where they touch.
        let mut kept: Vec<(usize, usize)> = Vec::new();
        let mut size = 0;
        let mut gap = false;
        for (p, _) in lines.iter().rev() {
            if !p.bare(data) || p.end - p.start > LINE {
                // A long line is not a message chunk worth showing: skipped, not a gap.
                continue;
            }
            let len = p.end + 1 - p.start;
            if size + len > RECENT_ONE {
                gap = true;
                break;
            }
            size += len;
            match kept.last_mut() {
                Some((from, _)) if *from == p.end + 1 => *from = p.start,
                _ => kept.push((p.start, p.end + 1)),
            }
        }
        if size == 0 {
            return;
        }
        if self.recent.capacity() == 0 {
            // Once, whole: a ring that never grows (no copies, no freed halves).
            self.recent.reserve_exact(RECENT);
        }
        while self.recent.len() + size > RECENT {
            let Some((len, _)) = self.reads.pop_front() else {
                break;
            };
            self.recent.drain(..len);
        }
        for (from, to) in kept.iter().rev() {
            self.recent.extend(&data[*from..*to]);
        }
        self.reads.push_back((size, gap));
    }

    fn session(&mut self, id: &str) -> &mut Session {
        if !self.sessions.contains_key(id) && self.sessions.len() >= SESSIONS {
            self.sessions.clear();
        }
        self.sessions.entry(id.into()).or_default()
    }

    /// A `session/update` the tool-call handler picked: a plan, or a tool call of the turn.
    pub fn update(&mut self, session: &str, update: &Value) {
        if session.len() > ID {
            return;
        }
        match update["sessionUpdate"].as_str() {
            Some("plan") => {
                let mut room = PLAN;
                let entries: Vec<Value> = update["entries"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map_while(|e| {
                        let content = e["content"].as_str()?;
                        (room > 0).then(|| {
                            let content = cut(content, room.min(512));
                            room = room.saturating_sub(content.len() + 16);
                            let word = |v: &Value| v.as_str().map(|w| cut(w, 32));
                            json!({"content": content, "status": word(&e["status"]), "priority": word(&e["priority"])})
                        })
                    })
                    .collect();
                self.session(session).plan = Some(Value::Array(entries));
            }
            Some(kind @ ("tool_call" | "tool_call_update")) => {
                let Some(id) = update["toolCallId"].as_str().filter(|id| id.len() <= ID) else {
                    return;
                };
                let turn = &mut self.session(session).turn;
                let at = turn.iter().position(|(t, _)| &**t == id);
                let fields = match at {
                    Some(i) => {
                        if kind == "tool_call" {
                            turn[i].1.clear();
                        }
                        &mut turn[i].1
                    }
                    None => {
                        if turn.len() >= TURN_CALLS {
                            turn.pop_front();
                        }
                        turn.push_back((id.into(), Map::new()));
                        &mut turn.back_mut().expect("pushed").1
                    }
                };
                for k in ["title", "kind", "status"] {
                    if let Some(v) = update[k].as_str() {
                        fields.insert(k.into(), cut(v, 256).into());
                    }
                }
                if let Some(locations) = update["locations"].as_array() {
                    let paths: Vec<Value> = locations
                        .iter()
                        .filter_map(|l| l["path"].as_str())
                        .take(8)
                        .map(|p| cut(p, 512).into())
                        .collect();
                    fields.insert("paths".into(), paths.into());
                }
            }
            _ => {}
        }
    }

    /// The client's `session/prompt`: a new turn.
    pub fn turn_starts(&mut self, session: &str) {
        if let Some(s) = self.sessions.get_mut(session) {
            s.turn.clear();
        }
    }

    /// `session/close`: the session's digest is dropped.
    pub fn session_ends(&mut self, session: &str) {
        self.sessions.remove(session);
    }

    /// The digest of `session` as it stands: `None` when there is nothing to show.
    pub fn digest(&self, session: &str) -> Option<Value> {
        let mut out = Map::new();
        let mut cuts = Vec::new();
        let mut room = DIGEST;
        if let Some((text, whole)) = self.last_message(session) {
            if !whole {
                cuts.push("the start of the last message");
            }
            room = room.saturating_sub(text.len());
            out.insert("lastMessage".into(), text.into());
        }
        if let Some(s) = self.sessions.get(session) {
            if let Some(plan) = &s.plan {
                let size = plan.to_string().len();
                if size <= room {
                    room -= size;
                    out.insert("plan".into(), plan.clone());
                } else {
                    cuts.push("the plan");
                }
            }
            let mut calls = Vec::new();
            for (_, fields) in s.turn.iter().rev() {
                let v = Value::Object(fields.clone());
                let size = v.to_string().len();
                if size > room {
                    cuts.push("older tool calls of the turn");
                    break;
                }
                room -= size;
                calls.push(v);
            }
            calls.reverse();
            if !calls.is_empty() {
                out.insert("toolCalls".into(), calls.into());
            }
        }
        if out.is_empty() {
            return None;
        }
        if !cuts.is_empty() {
            out.insert("cut".into(), cuts.into());
        }
        Some(Value::Object(out))
    }

    /// The tail of the agent's last run of message chunks in `session` (at most
    /// [`MESSAGE`] bytes), and whether it is the whole run; read back from the recent output,
    /// newest line first.
    fn last_message(&self, session: &str) -> Option<(String, bool)> {
        let mut parts: Vec<String> = Vec::new();
        let mut size = 0;
        let mut lines = 0;
        let needle = serde_json::to_string(session).ok()?;
        // The output kept without a gap: from the newest read whose earlier lines were not
        // kept (or the oldest kept) to the end. Whole lines only.
        let mut from = self.recent.len();
        for (len, gap) in self.reads.iter().rev() {
            from -= len;
            if *gap {
                break;
            }
        }
        let (a, b) = self.recent.as_slices();
        let mut output: Vec<u8> = Vec::with_capacity(self.recent.len() - from);
        if from < a.len() {
            output.extend_from_slice(&a[from..]);
            output.extend_from_slice(b);
        } else {
            output.extend_from_slice(&b[from - a.len()..]);
        }
        {
            for line in output.rsplit(|b| *b == b'\n') {
                lines += 1;
                if lines > LINES_READ {
                    return finish(parts, false);
                }
                // Cheap checks first: only this session's updates are parsed.
                if memchr::memmem::find(line, needle.as_bytes()).is_none()
                    || memchr::memmem::find(line, b"sessionUpdate").is_none()
                {
                    continue;
                }
                let Ok(v) = serde_json::from_slice::<Value>(line) else {
                    continue;
                };
                if v["method"] != "session/update" || v["params"]["sessionId"] != session {
                    continue;
                }
                let u = &v["params"]["update"];
                match u["sessionUpdate"].as_str() {
                    Some("agent_message_chunk") => {
                        if let Some(t) = u["content"]["text"].as_str() {
                            size += t.len();
                            parts.push(t.to_owned());
                            if size >= MESSAGE {
                                return finish(parts, false);
                            }
                        }
                    }
                    // Thoughts interleave with the message; they neither end nor join it.
                    Some("agent_thought_chunk") => {}
                    // Anything else before the run (read backwards: after it) ends it.
                    _ if !parts.is_empty() => return finish(parts, true),
                    _ => {}
                }
            }
        }
        // The kept output began inside the run: its start is not known.
        finish(parts, false)
    }
}

/// The parts (newest first) as one text, its tail cut to [`MESSAGE`] bytes.
fn finish(mut parts: Vec<String>, whole: bool) -> Option<(String, bool)> {
    if parts.is_empty() {
        return None;
    }
    parts.reverse();
    let text = parts.concat();
    if text.len() <= MESSAGE {
        return Some((text, whole));
    }
    let mut at = text.len() - MESSAGE;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    Some((format!("…{}", &text[at..]), false))
}

/// `s` within `max` bytes (at a character boundary, `…` added).
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut at = max;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}…", &s[..at])
}

/// The client's `session/prompt` (a new turn) or `session/close` (the digest is dropped):
/// noted, then passed on.
pub(in crate::router) fn client_request(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    if let Some(session) = req.params.and_then(crate::envelope::session_id_in) {
        if req.method == "session/close" {
            r.digests.session_ends(&session);
        } else {
            r.digests.turn_starts(&session);
        }
    }
    let line = req.line.clone();
    r.pass(Side::Client, req, line, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps `text` as one read (its lines found as the reader finds them).
    fn keep(d: &mut Digests, text: &str) {
        let data = text.as_bytes();
        let mut lines = Vec::new();
        let mut start = 0;
        for (i, b) in data.iter().enumerate() {
            if *b == b'\n' {
                lines.push((
                    Piece {
                        start,
                        end: i,
                        too_long: None,
                    },
                    None,
                ));
                start = i + 1;
            }
        }
        d.keep(data, &lines);
    }

    fn chunk(session: &str, text: &str) -> String {
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":session,
            "update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}}}})
        .to_string()
    }

    #[test]
    fn the_last_message_is_the_tail_of_the_last_run_of_its_session() {
        let mut d = Digests::default();
        let lines = [
            chunk("s1", "An old message. "),
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1",
                "update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read"}}})
            .to_string(),
            chunk("s1", "I will add "),
            chunk("s2", "another session "),
            chunk("s1", "SQLite."),
        ];
        keep(&mut d, "an earlier line\n");
        keep(&mut d, &(lines.join("\n") + "\n"));
        let digest = d.digest("s1").unwrap();
        assert_eq!(digest["lastMessage"], "I will add SQLite.");
        assert!(digest.get("cut").is_none());
        assert_eq!(d.digest("s2").unwrap()["lastMessage"], "another session ");
        assert!(d.digest("s3").is_none());
    }

    #[test]
    fn every_part_is_bounded() {
        let mut d = Digests::default();
        for _ in 0..10_000 {
            keep(&mut d, &(chunk("s", "word ") + "\n"));
        }
        assert!(d.recent.len() <= RECENT);
        // A read bigger than a ring's share keeps its end, and the message is read from it.
        let big: String = (0..2000)
            .map(|i| chunk("s", &format!("w{i} ")) + "\n")
            .collect();
        keep(&mut d, &big);
        // A long line after it is skipped, and the message read from before it.
        keep(&mut d, &format!("{{\"x\":\"{}\"}}\n", "y".repeat(1 << 20)));
        assert!(d.recent.len() <= RECENT);
        let entries: Vec<Value> = (0..1000)
            .map(|i| json!({"content": "x".repeat(1000 + i), "status": "pending", "priority": "high"}))
            .collect();
        d.update("s", &json!({"sessionUpdate": "plan", "entries": entries}));
        let diff = "+ line\n".repeat(1_500_000);
        for i in 0..100 {
            d.update(
                "s",
                &json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{i}"),
                "title": diff, "kind": "edit", "status": "completed",
                "locations": vec![json!({"path": "/p"}); 100]}),
            );
        }
        let digest = d.digest("s").unwrap();
        let text = digest.to_string();
        assert!(text.len() <= DIGEST + 1024, "{}", text.len());
        assert!(digest["lastMessage"].as_str().unwrap().len() <= MESSAGE + 4);
        assert!(digest["cut"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "the start of the last message"));
        d.turn_starts("s");
        assert!(d.digest("s").unwrap().get("toolCalls").is_none());
        d.session_ends("s");
        assert!(d.digest("s").unwrap().get("plan").is_none());
    }
}
