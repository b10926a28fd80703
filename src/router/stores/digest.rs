//! What the agent was doing when it asked: a small, bounded digest of each session, shown
//! beside its questions on every surface (docs/PROTOCOL.md, `Question.digest`):
//! - `lastMessage`: the tail of the agent's last run of `agent_message_chunk`s (at most
//!   [`MESSAGE`] bytes);
//! - `plan`: the current plan's entries with their status;
//! - `toolCalls`: the tool calls of the current turn (since the client's last
//!   `session/prompt`): title, kind, status, and the paths of their locations, the one a
//!   permission request asks about included ([`Digests::asked`]).
//!
//! Cost on the relay: nothing per message that is forwarded. Of each read of the agent's
//! output, its last short lines (at most [`RECENT_ONE`] bytes, found from the reader's own
//! line ranges, no parsing) are copied into a ring of [`RECENT`] bytes ([`Digests::keep`]),
//! and read back only when a question is asked. (Not the read's own buffer: it holds the
//! reader's in-flight budget until dropped, and a line longer than the budget waits for all
//! of it.) A longer line (a 10 MiB diff) leaves a stand-in of a few bytes instead, from a
//! look at its first [`HEAD`] bytes: which update of which session it is, so that it still
//! ends a run of message chunks (and, for a message chunk, its last [`TAIL`] bytes, whose
//! text is read at question time). Plans and tool calls come from the `session/update`s the
//! tool-call handler already picks (by the value of `sessionUpdate`).
//!
//! Bounds: the whole digest is at most [`DIGEST`] bytes of text (what is cut is said in
//! `cut`); the message and the plan always fit, whatever the size of any other line; at most
//! [`SESSIONS`] sessions and [`TURN_CALLS`] tool calls per turn are kept; a session's digest
//! is dropped with `session/close` (and all of them past the bound).

use std::collections::{HashMap, VecDeque};

use serde_json::{json, Map, Value};

use crate::codec::Piece;
use crate::scan::Shape;

/// The most bytes of the agent's recent output kept for reading its last message (a 2 KiB
/// message in chunks of a few words is some 30 KiB of lines).
const RECENT: usize = 64 << 10;
/// The most bytes kept of one read (its last lines).
const RECENT_ONE: usize = 16 << 10;
/// A longer line is not kept (a message chunk is much shorter): a stand-in is.
const LINE: usize = 4 << 10;
/// How far into a longer line its update and session are looked for.
const HEAD: usize = 1 << 10;
/// How much of the end of a longer message chunk is kept, for its text.
const TAIL: usize = 4 << 10;
/// The first byte of a stand-in, and its separator: never in a line of JSON.
const MARK: u8 = 0x01;
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
// The last message and the plan (its entries up to PLAN, and one more) always fit.
const _: () = assert!(MESSAGE + 4 + PLAN + 1024 <= DIGEST);

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
    /// Whether any of the output was not kept (a read dropped from the ring, or cut): until
    /// then, the ring holds all of it, and a run that starts at its start is whole.
    lost: bool,
}

/// What [`Digests::keep`] copies of one line.
enum Kept {
    /// `data[from..to]`, then a newline when `nl` (a line that ended with `\r\n`).
    Line { from: usize, to: usize, nl: bool },
    /// A stand-in built in the read's scratch buffer, `[from..to]`.
    Stand { from: usize, to: usize },
}

impl Digests {
    /// Copies the last short lines of one read of the agent's output (at most
    /// [`RECENT_ONE`] bytes of lines of at most [`LINE`] bytes each, and stand-ins of longer
    /// ones) into the ring. `lines` are the read's lines (ranges in `data` without their
    /// newline).
    #[inline]
    pub fn keep(&mut self, data: &[u8], lines: &[(Piece, Option<Shape>)]) {
        // Newest first: what is kept of each line, neighbours merged where they touch.
        let mut kept: Vec<Kept> = Vec::new();
        let mut stand_ins: Vec<u8> = Vec::new();
        let mut size = 0;
        let mut gap = false;
        for (p, _) in lines.iter().rev() {
            let short = p.end - p.start <= LINE;
            let (piece, len) = match data.get(p.end) {
                _ if p.too_long.is_some() => continue, // dropped, never relayed
                // The common case: a short line and its newline, one range of `data`.
                Some(b'\n') if short => {
                    let len = p.end + 1 - p.start;
                    if size + len > RECENT_ONE {
                        gap = true;
                        break;
                    }
                    size += len;
                    match kept.last_mut() {
                        // The newer line starts where this one's newline ends.
                        Some(Kept::Line { from, .. }) if *from == p.end + 1 => *from = p.start,
                        _ => kept.push(Kept::Line {
                            from: p.start,
                            to: p.end + 1,
                            nl: false,
                        }),
                    }
                    continue;
                }
                Some(b'\r') if short && data.get(p.end + 1) == Some(&b'\n') => {
                    let (from, to) = (p.start, p.end);
                    (Kept::Line { from, to, nl: true }, to - from + 1)
                }
                Some(b'\n' | b'\r') if !short => {
                    let from = stand_ins.len();
                    if !stand_in(&data[p.start..p.end], &mut stand_ins) {
                        // Not an update a digest reads (a response, a thought): skipped.
                        continue;
                    }
                    let to = stand_ins.len();
                    (Kept::Stand { from, to }, to - from + 1)
                }
                _ => continue,
            };
            if size + len > RECENT_ONE {
                gap = true;
                break;
            }
            size += len;
            kept.push(piece);
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
            self.lost = true;
        }
        for piece in kept.iter().rev() {
            match *piece {
                Kept::Line { from, to, nl } => {
                    self.recent.extend(&data[from..to]);
                    if nl {
                        self.recent.push_back(b'\n');
                    }
                }
                Kept::Stand { from, to } => {
                    self.recent.extend(&stand_ins[from..to]);
                    self.recent.push_back(b'\n');
                }
            }
        }
        self.reads.push_back((size, gap));
        self.lost |= gap;
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
                            let word = |v: &Value| v.as_str().map(|w| cut(w, 32));
                            let (status, priority) = (word(&e["status"]), word(&e["priority"]));
                            let words = status.as_ref().map_or(0, String::len)
                                + priority.as_ref().map_or(0, String::len);
                            room = room.saturating_sub(content.len() + words + 32);
                            json!({"content": content, "status": status, "priority": priority})
                        })
                    })
                    .collect();
                self.session(session).plan = Some(Value::Array(entries));
            }
            Some(kind @ ("tool_call" | "tool_call_update")) => {
                self.tool_call(session, update, kind == "tool_call");
            }
            _ => {}
        }
    }

    /// The tool call a permission request asks about (as it is shown): one of the turn's,
    /// even when the line that announced it was too long to read.
    pub fn asked(&mut self, session: &str, tool_call: &Value) {
        if session.len() <= ID {
            self.tool_call(session, tool_call, false);
        }
    }

    /// A tool call of the turn: a new one (`fresh`: what was known of it is forgotten), or
    /// what an update says of it.
    fn tool_call(&mut self, session: &str, update: &Value, fresh: bool) {
        let Some(id) = update["toolCallId"].as_str().filter(|id| id.len() <= ID) else {
            return;
        };
        let turn = &mut self.session(session).turn;
        let at = turn.iter().position(|(t, _)| &**t == id);
        let fields = match at {
            Some(i) => {
                if fresh {
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
            if text.is_empty() {
                cuts.push("the last message (a line too long to keep)");
            } else {
                if !whole {
                    cuts.push("the start of the last message");
                }
                room -= text.len();
                out.insert("lastMessage".into(), text.into());
            }
        }
        if let Some(s) = self.sessions.get(session) {
            if let Some(plan) = &s.plan {
                // Always room for it (see the bound above): no other line takes it.
                room = room.saturating_sub(text(plan));
                out.insert("plan".into(), plan.clone());
            }
            let mut calls = Vec::new();
            for (_, fields) in s.turn.iter().rev() {
                let v = Value::Object(fields.clone());
                let size = text(&v);
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
        if out.is_empty() && cuts.is_empty() {
            return None;
        }
        if !cuts.is_empty() {
            out.insert("cut".into(), cuts.into());
        }
        Some(Value::Object(out))
    }

    /// The tail of the agent's last run of message chunks in `session` (at most
    /// [`MESSAGE`] bytes), and whether it is the whole run; read back from the recent output,
    /// newest line first. An empty text: the run's last chunk was too long to keep, and its
    /// text could not be read from its stand-in.
    fn last_message(&self, session: &str) -> Option<(String, bool)> {
        let mut parts: Vec<String> = Vec::new();
        let mut size = 0;
        let mut lines = 0;
        let needle = serde_json::to_string(session).ok()?;
        // The output kept without a gap: from the newest read whose earlier lines were not
        // kept (or the oldest kept) to the end. Whole lines only.
        let mut from = self.recent.len();
        let mut gap = false;
        for (len, cut) in self.reads.iter().rev() {
            from -= len;
            if *cut {
                gap = true;
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
        for line in output.rsplit(|b| *b == b'\n') {
            lines += 1;
            if lines > LINES_READ {
                return finish(parts, false);
            }
            if let Some(stand) = line.strip_prefix(&[MARK]) {
                let mut fields = stand.splitn(3, |b| *b == MARK);
                let (Some(kind), Some(id)) = (fields.next(), fields.next()) else {
                    continue;
                };
                if id != session.as_bytes() {
                    continue;
                }
                if kind == b"agent_message_chunk" {
                    // Its start is not kept: the run is known no further back.
                    if let Some(t) = fields.next().and_then(tail_text) {
                        parts.push(t);
                    }
                    return finish(parts, false).or(Some((String::new(), false)));
                }
            } else {
                // Cheap checks first: only this session's updates are parsed.
                if memchr::memmem::find(line, needle.as_bytes()).is_none()
                    || memchr::memmem::find(line, b"sessionUpdate").is_none()
                {
                    continue;
                }
                let Ok(v) = serde_json::from_slice::<Value>(line) else {
                    continue;
                };
                if v["method"] != crate::methods::SESSION_UPDATE
                    || v["params"]["sessionId"] != session
                {
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
                        continue;
                    }
                    // Thoughts interleave with the message; they neither end nor join it.
                    Some("agent_thought_chunk") => continue,
                    _ => {}
                }
            }
            // Anything else before the run (read backwards: after it) ends it.
            if !parts.is_empty() {
                return finish(parts, true);
            }
        }
        // The kept output began inside the run: its start is known only if nothing before
        // it was lost.
        finish(parts, !gap && !self.lost)
    }
}

/// The parts (newest first) as one text, its tail cut to [`MESSAGE`] bytes; a text whose
/// start is not shown begins with `…`.
fn finish(mut parts: Vec<String>, whole: bool) -> Option<(String, bool)> {
    if parts.is_empty() {
        return None;
    }
    parts.reverse();
    let text = parts.concat();
    if text.len() <= MESSAGE {
        return Some(if whole {
            (text, true)
        } else {
            (format!("…{text}"), false)
        });
    }
    let mut at = text.len() - MESSAGE;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    Some((format!("…{}", &text[at..]), false))
}

/// The text a digest counts in `v`: its strings and keys, 8 bytes for any other scalar.
fn text(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(text).sum(),
        Value::Object(o) => o.iter().map(|(k, v)| k.len() + text(v)).sum(),
        _ => 8,
    }
}

/// Appends to `out` the stand-in of a line too long to keep, if it is a `session/update`
/// that a digest reads: `MARK kind MARK session`, and for a message chunk of text `MARK`
/// and its last [`TAIL`] bytes. Looks at its first [`HEAD`] bytes only, and parses nothing.
fn stand_in(line: &[u8], out: &mut Vec<u8>) -> bool {
    let head = &line[..line.len().min(HEAD)];
    if memchr::memmem::find(head, crate::methods::SESSION_UPDATE_QUOTED).is_none() {
        return false;
    }
    let (Some(kind), Some(session)) = (
        string_at(head, b"\"sessionUpdate\""),
        string_at(head, b"\"sessionId\""),
    ) else {
        return false;
    };
    if kind == b"agent_thought_chunk" || session.len() > ID {
        return false;
    }
    out.push(MARK);
    out.extend_from_slice(kind);
    out.push(MARK);
    out.extend_from_slice(session);
    if kind == b"agent_message_chunk" && memchr::memmem::find(head, b"\"text\"").is_some() {
        out.push(MARK);
        out.extend_from_slice(&line[line.len() - TAIL.min(line.len())..]);
    }
    true
}

/// The plain string (no escapes) after `key` and a colon in `head`, without its quotes.
fn string_at<'a>(head: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = memchr::memmem::find(head, key)? + key.len();
    let mut rest = &head[at..];
    while let [b' ' | b'\t' | b'\r' | b':', tail @ ..] = rest {
        rest = tail;
    }
    let rest = rest.strip_prefix(b"\"")?;
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    (rest[end] == b'"' && !rest[..end].contains(&MARK)).then_some(&rest[..end])
}

/// The text of a message chunk from the end of its line (`…text"}}}}`): the string that
/// closes it, from where it can be read (the start of the tail may fall inside an escape or
/// a character). `None` when the line does not end with the text (a `_meta` after it).
fn tail_text(tail: &[u8]) -> Option<String> {
    let mut end = tail.len();
    while end > 0 && matches!(tail[end - 1], b'}' | b' ' | b'\t' | b'\r') {
        end -= 1;
    }
    if end == tail.len() || end == 0 || tail[end - 1] != b'"' || escaped(tail, end - 1) {
        return None;
    }
    let close = end - 1;
    // Where the string opens, if in the tail: then it must be `"text"`'s.
    let open = memchr::memrchr_iter(b'"', &tail[..close]).find(|&q| !escaped(tail, q));
    let from = match open {
        Some(q) => {
            let mut key = &tail[..q];
            while let [rest @ .., b' ' | b'\t' | b':'] = key {
                key = rest;
            }
            if !key.ends_with(b"\"text\"") {
                return None;
            }
            q + 1
        }
        None => 0,
    };
    // Where the string opens before the tail, the tail's first bytes may be the end of an
    // escape (`n` of `\n`, `0041` of `\u0041`: not to be read as text) or of a character:
    // it is read from the first place past an escape's length in that is neither.
    let outside = |at: usize| {
        open.is_some()
            || (at >= 6
                && tail[at - 1] != b'\\'
                && !(at - 5..at).any(|q| tail[q] == b'\\' && tail[q + 1] == b'u'))
    };
    let tries = if open.is_some() { 1 } else { 6 + 14 };
    // Never past the closing quote: a short line the agent wrote can look like a stand-in.
    (0..tries)
        .take_while(|skip| from + skip <= close)
        .filter(|skip| outside(from + skip))
        .find_map(|skip| {
            let body = tail.get(from + skip..close)?;
            let mut quoted = Vec::with_capacity(body.len() + 2);
            quoted.push(b'"');
            quoted.extend_from_slice(body);
            quoted.push(b'"');
            serde_json::from_slice::<String>(&quoted).ok()
        })
}

/// Whether the byte at `at` follows an odd number of backslashes.
fn escaped(s: &[u8], at: usize) -> bool {
    s[..at].iter().rev().take_while(|b| **b == b'\\').count() % 2 == 1
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by review: a short line the agent wrote, looking like a stand-in's tail of
    /// backslashes, made the reading run past its closing quote.
    #[test]
    fn a_tail_of_backslashes_is_read_without_a_panic() {
        for n in 0..24 {
            let tail = format!("{}\"}}", "\\".repeat(n));
            let _ = tail_text(tail.as_bytes());
            let tail = format!("x{}\"}}", "\\".repeat(n));
            let _ = tail_text(tail.as_bytes());
        }
    }

    /// Keeps `text` as one read (its lines found as the reader finds them).
    fn keep(d: &mut Digests, text: &str) {
        let data = text.as_bytes();
        let mut lines = Vec::new();
        let mut start = 0;
        for (i, b) in data.iter().enumerate() {
            if *b == b'\n' {
                let end = if i > start && data[i - 1] == b'\r' {
                    i - 1
                } else {
                    i
                };
                lines.push((
                    Piece {
                        start,
                        end,
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

    fn update(session: &str, u: Value) -> String {
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":session,"update":u}})
            .to_string()
    }

    #[test]
    fn a_long_line_between_two_runs_still_ends_the_first() {
        let mut d = Digests::default();
        let output = 1 << 20;
        let lines = [
            chunk("s", "The first run. "),
            update(
                "s",
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t",
                "content": [{"type": "content", "content": {"type": "text", "text": "o\n".repeat(output)}}]}),
            ),
            // A long thought neither ends nor joins it.
            update(
                "s",
                json!({"sessionUpdate": "agent_thought_chunk",
                "content": {"type": "text", "text": "hmm ".repeat(output)}}),
            ),
            chunk("s", "The second."),
            // Nor does a long line of another session, or that is no update.
            update(
                "other",
                json!({"sessionUpdate": "tool_call", "toolCallId": "u", "title": "x".repeat(output)}),
            ),
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":\"{}\"}}",
                "r".repeat(output)
            ),
        ];
        for line in &lines {
            keep(&mut d, &(line.clone() + "\n"));
        }
        let digest = d.digest("s").unwrap();
        assert_eq!(digest["lastMessage"], "The second.", "{digest}");
        assert!(digest.get("cut").is_none(), "{digest}");
        // Each long line left a few bytes.
        assert!(d.recent.len() < 1024, "{}", d.recent.len());
    }

    #[test]
    fn a_long_message_chunk_shows_its_tail() {
        let mut d = Digests::default();
        // Escapes and characters of several bytes where the tail is cut, in turn.
        for (i, unit) in ["é\n\"", "\u{1F600}\\", "ab\u{1}"].iter().enumerate() {
            let text = unit.repeat(5000) + "The end.";
            keep(&mut d, &(chunk("s", "Before. ") + "\n"));
            keep(&mut d, &(chunk("s", &text) + "\n"));
            keep(&mut d, &(chunk("s", " After.") + "\n"));
            let digest = d.digest("s").unwrap();
            let shown = digest["lastMessage"].as_str().unwrap();
            assert!(
                shown.starts_with('…') && shown.ends_with("The end. After."),
                "{i}: {shown:?}"
            );
            assert!(
                shown.len() > MESSAGE / 2 && shown.len() <= MESSAGE + 4,
                "{i}: {}",
                shown.len()
            );
            let read = shown.trim_start_matches('…').trim_end_matches(" After.");
            assert!(text.ends_with(read), "{i}: {read:?}");
            assert_eq!(digest["cut"], json!(["the start of the last message"]));
        }
        // A chunk whose line does not end with its text is said to be there, not shown.
        let meta = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s",
            "update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x".repeat(10_000)},
            "_meta":{"k":"v"}}}});
        keep(&mut d, &(meta.to_string() + "\n"));
        let digest = d.digest("s").unwrap();
        assert!(digest.get("lastMessage").is_none(), "{digest}");
        assert_eq!(
            digest["cut"],
            json!(["the last message (a line too long to keep)"])
        );
    }

    #[test]
    fn crlf_lines_are_read_and_a_ring_that_lost_nothing_knows_where_a_run_starts() {
        let mut d = Digests::default();
        keep(&mut d, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n");
        keep(
            &mut d,
            &(chunk("s", "All ") + "\r\n" + &chunk("s", "of it.") + "\r\n"),
        );
        let digest = d.digest("s").unwrap();
        assert_eq!(digest, json!({"lastMessage": "All of it."}));
        // Once the ring dropped some output, a run reaching its start may have begun before.
        for _ in 0..(RECENT / 100) {
            keep(&mut d, &(chunk("s", &"w".repeat(20)) + "\n"));
        }
        let shown = d.digest("s").unwrap()["lastMessage"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(shown.starts_with("…www"), "{shown}");
    }

    #[test]
    fn the_tool_call_asked_about_is_one_of_the_turns() {
        let mut d = Digests::default();
        d.update("s", &json!({"sessionUpdate": "tool_call", "toolCallId": "w", "title": "Write", "kind": "edit"}));
        d.asked(
            "s",
            &json!({"toolCallId": "w", "title": "Write big.rs", "status": "pending",
            "locations": [{"path": "/p/big.rs"}], "content": [{"newText": "x".repeat(100_000)}]}),
        );
        d.asked(
            "s",
            &json!({"toolCallId": "r", "title": "Read a.rs", "kind": "read"}),
        );
        assert_eq!(
            d.digest("s").unwrap()["toolCalls"],
            json!([{"title": "Write big.rs", "kind": "edit", "status": "pending", "paths": ["/p/big.rs"]},
                   {"title": "Read a.rs", "kind": "read"}])
        );
    }

    #[test]
    fn the_plan_always_fits_whatever_its_characters() {
        let mut d = Digests::default();
        keep(&mut d, &(chunk("s", &"m".repeat(10_000)) + "\n"));
        // 4 KiB of control characters is six times as much JSON.
        let entries: Vec<Value> = (0..64)
            .map(|_| json!({"content": "\u{1}".repeat(100), "status": "s".repeat(40), "priority": "p".repeat(40)}))
            .collect();
        d.update("s", &json!({"sessionUpdate": "plan", "entries": entries}));
        for i in 0..TURN_CALLS {
            d.update("s", &json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{i}"),
                "title": "t".repeat(1000), "locations": vec![json!({"path": "p".repeat(1000)}); 8]}));
        }
        let digest = d.digest("s").unwrap();
        let plan = digest["plan"].as_array().unwrap();
        assert!(
            !plan.is_empty() && text(&digest["plan"]) <= PLAN + 1024,
            "{}",
            text(&digest["plan"])
        );
        assert_eq!(plan[0]["status"], format!("{}…", "s".repeat(32)));
        assert!(digest["lastMessage"].as_str().unwrap().len() <= MESSAGE + 4);
        assert!(text(&digest) <= DIGEST, "{}", text(&digest));
        assert!(digest["toolCalls"].as_array().unwrap().len() < TURN_CALLS);
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
        assert!(text(&digest) <= DIGEST, "{}", text(&digest));
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
