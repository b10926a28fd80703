//! The agent's `session/update`: always forwarded as it is. One that announces or updates a
//! tool call (`tool_call`, `tool_call_update`) is also remembered, by `toolCallId`, with what
//! a person needs to judge it (title, kind, raw input, content, locations), so that a
//! permission request naming the tool call by its id alone (the ACP schema requires nothing
//! more) is shown with what it approves.
//!
//! Cost: a `session/update` pays one substring search of at most its first [`LOOK`] bytes
//! (and stays in its run of forwarded lines); only one that mentions a tool call there is
//! parsed. Memory: the last [`REMEMBERED`] tool calls within [`BUDGET`] bytes of the lines
//! they came from, each from a line of at most [`MAX_LINE`] bytes: an agent streaming diffs
//! (a `tool_call_update` each) makes the bridge keep at most about 1 MiB of them.

use std::collections::{HashMap, VecDeque};
use std::sync::LazyLock;

use memchr::memmem;
use serde_json::{Map, Value};

use crate::router::message::Note;
use crate::router::{Outbox, Router, Side};

/// How many tool calls are remembered at most (the oldest is forgotten first).
pub(in crate::router) const REMEMBERED: usize = 256;
/// How many bytes of `session/update` lines the remembered tool calls may come from (the
/// oldest is forgotten first; the newest is always kept).
const BUDGET: usize = 1 << 20;
/// A longer update (a huge diff) is forwarded but not remembered.
const MAX_LINE: usize = 256 << 10;
/// How far into a `session/update` line `"tool_call` is looked for.
const LOOK: usize = 4096;
/// The members of a tool call kept for showing beside its permission prompt.
const KEPT: [&str; 5] = ["title", "kind", "rawInput", "content", "locations"];

/// The tool calls remembered, by `toolCallId`, oldest first.
#[derive(Debug, Default)]
pub(in crate::router) struct ToolCalls {
    order: VecDeque<Box<str>>,
    /// Its members, and the bytes of the lines they came from.
    known: HashMap<Box<str>, (Map<String, Value>, usize)>,
    bytes: usize,
}

impl ToolCalls {
    fn get(&self, id: &str) -> Option<&Map<String, Value>> {
        self.known.get(id).map(|(m, _)| m)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.known.len()
    }

    /// A new tool call (`fresh`: its members replace all known), or an update of one (its
    /// members replace those it names), from a line of `size` bytes.
    fn record(
        &mut self,
        id: &str,
        fresh: bool,
        kept: impl Iterator<Item = (String, Value)>,
        size: usize,
    ) {
        if !self.known.contains_key(id) {
            self.order.push_back(id.into());
            self.known.insert(id.into(), (Map::new(), 0));
        }
        let Some((fields, n)) = self.known.get_mut(id) else {
            return;
        };
        if fresh {
            fields.clear();
            self.bytes -= *n;
            *n = 0;
        }
        fields.extend(kept);
        *n += size;
        self.bytes += size;
        while self.order.len() > REMEMBERED || (self.bytes > BUDGET && self.order.len() > 1) {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some((_, n)) = self.known.remove(&old) {
                self.bytes -= n;
            }
        }
    }
}

/// Whether a `session/update` line may be about a tool call (and is not too long to keep):
/// `"tool_call` within its first [`LOOK`] bytes, where agents put `sessionUpdate` (before a
/// long content), so that a flood of big updates costs a few KiB of search each.
pub(in crate::router) fn mentions_tool_call(line: &[u8]) -> bool {
    static FINDER: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\"tool_call"));
    line.len() <= MAX_LINE && FINDER.find(&line[..line.len().min(LOOK)]).is_some()
}

/// A `session/update` that [`mentions_tool_call`]: forwarded, and remembered when it is one.
pub(in crate::router) fn update(r: &mut Router, note: Note<'_>, out: &mut Outbox) {
    r.forward(Side::Agent, note.line.clone(), out);
    let Some(params) = note.params else { return };
    let Ok(v) = serde_json::from_str::<Value>(params) else {
        return;
    };
    remember(&mut r.tool_calls, &v["update"], params.len());
}

/// Records a `tool_call` or `tool_call_update` (an update's members replace the ones known)
/// from a line of `size` bytes.
fn remember(known: &mut ToolCalls, update: &Value, size: usize) {
    let fresh = match update["sessionUpdate"].as_str() {
        Some("tool_call") => true,
        Some("tool_call_update") => false,
        _ => return,
    };
    let Some(id) = update["toolCallId"].as_str() else {
        return;
    };
    let kept = KEPT.iter().filter_map(|k| {
        Some((
            k.to_string(),
            update.get(*k).filter(|v| !v.is_null())?.clone(),
        ))
    });
    known.record(id, fresh, kept, size);
}

/// Fills in `tool_call` (a permission request's `toolCall`) the members it lacks from the
/// tool call announced under its id.
pub(in crate::router) fn fill(known: &ToolCalls, tool_call: &mut Value) {
    let Some(id) = tool_call["toolCallId"].as_str() else {
        return;
    };
    let Some(fields) = known.get(id) else {
        return;
    };
    let Some(obj) = tool_call.as_object_mut() else {
        return;
    };
    for (k, v) in fields {
        if obj.get(k).is_none_or(Value::is_null) {
            obj.insert(k.clone(), v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_permission_request_naming_a_tool_call_by_id_gets_what_was_announced() {
        let mut known = ToolCalls::default();
        remember(
            &mut known,
            &json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Terminal",
                "kind":"execute","rawInput":{},"status":"pending","content":[]}),
            100,
        );
        remember(
            &mut known,
            &json!({"sessionUpdate":"tool_call_update","toolCallId":"t1",
                "rawInput":{"command":"rm -rf build"},"title":"rm -rf build","status":null}),
            100,
        );
        remember(
            &mut known,
            &json!({"sessionUpdate":"agent_message_chunk","toolCallId":"t1","title":"no"}),
            100,
        );
        let mut tc = json!({"toolCallId":"t1","title":"Run it?"});
        fill(&known, &mut tc);
        assert_eq!(
            tc,
            json!({"toolCallId":"t1","title":"Run it?","kind":"execute",
                "rawInput":{"command":"rm -rf build"},"content":[]})
        );
        // An unknown id, or none, is left as it is.
        let mut other = json!({"toolCallId":"t2"});
        fill(&known, &mut other);
        assert_eq!(other, json!({"toolCallId":"t2"}));
        // A new announcement under the same id starts afresh.
        remember(
            &mut known,
            &json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read"}),
            100,
        );
        let mut tc = json!({"toolCallId":"t1"});
        fill(&known, &mut tc);
        assert_eq!(tc, json!({"toolCallId":"t1","title":"Read"}));
    }

    #[test]
    fn only_the_most_recent_tool_calls_are_kept() {
        let mut known = ToolCalls::default();
        for i in 0..REMEMBERED + 10 {
            remember(
                &mut known,
                &json!({"sessionUpdate":"tool_call","toolCallId":format!("t{i}"),"title":"x"}),
                100,
            );
        }
        assert_eq!(known.len(), REMEMBERED);
        assert!(known.get("t0").is_none());
        assert!(known.get(&format!("t{}", REMEMBERED + 9)).is_some());
    }

    #[test]
    fn big_updates_are_kept_within_the_byte_budget() {
        let mut known = ToolCalls::default();
        // Diffs of 40 KiB, one tool call each: only the last BUDGET bytes' worth stay.
        let big = 40 << 10;
        for i in 0..200 {
            remember(
                &mut known,
                &json!({"sessionUpdate":"tool_call_update","toolCallId":format!("d{i}"),"content":[]}),
                big,
            );
        }
        assert_eq!(known.len(), BUDGET / big);
        assert!(known.bytes <= BUDGET);
        assert!(known.get("d199").is_some() && known.get("d0").is_none());
        // Updates of one tool call count its bytes; a new announcement starts them afresh.
        for _ in 0..3 {
            remember(
                &mut known,
                &json!({"sessionUpdate":"tool_call_update","toolCallId":"d199","title":"t"}),
                big,
            );
        }
        remember(
            &mut known,
            &json!({"sessionUpdate":"tool_call","toolCallId":"d199","title":"again"}),
            10,
        );
        assert_eq!(known.known["d199"].1, 10);
        assert_eq!(
            known.bytes,
            known.known.values().map(|(_, n)| n).sum::<usize>()
        );
        // The newest is kept even when it alone is over the budget.
        remember(
            &mut known,
            &json!({"sessionUpdate":"tool_call","toolCallId":"huge","title":"x"}),
            BUDGET * 2,
        );
        assert_eq!(known.len(), 1);
        assert!(known.get("huge").is_some());
    }
}
