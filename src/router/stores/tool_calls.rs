//! The agent's `session/update`: always forwarded as it is. One that announces or updates a
//! tool call (`tool_call`, `tool_call_update`) is also remembered, by `toolCallId`, with what
//! a person needs to judge it (title, kind, raw input, content, locations), so that a
//! permission request naming the tool call by its id alone (the ACP schema requires nothing
//! more) is shown with what it approves.
//!
//! Cost: a `session/update` pays one substring search for `"sessionUpdate"` in at most its
//! first [`LOOK`] bytes (and stays in its run of forwarded lines); only one whose value is a
//! tool call's or a plan's is parsed ([`picked`]). Memory is bounded by what is open, not by traffic: a tool call is forgotten as
//! soon as it is `completed` or `failed` (nothing asks to approve it then), at most
//! [`REMEMBERED`] open ones are kept (the oldest forgotten first), and each keeps a digest of
//! at most [`DIGEST`] bytes of its members, whatever the size of its lines (fitted by
//! [`super::fit`]: long strings share the room, and what was left out is kept beside it):
//! an agent streaming finished diffs makes the bridge keep nothing.

use std::collections::{HashMap, VecDeque};

use serde_json::{Map, Value};

use super::fit::{fit, merge, LeftOut};

/// How many open tool calls are remembered at most (the oldest is forgotten first).
pub(in crate::router) const REMEMBERED: usize = 64;
/// The most bytes of text one remembered tool call keeps, and one shown beside its question:
/// longer strings (a big diff, a long command output) are cut, with `…` at the cut.
pub(in crate::router) const DIGEST: usize = 16 << 10;
/// The members of a tool call kept for showing beside its permission prompt, in the order
/// they get room in the digest.
const KEPT: [&str; 5] = ["title", "kind", "rawInput", "locations", "content"];

/// The open tool calls remembered, by `toolCallId`, oldest first.
#[derive(Debug, Default)]
pub(in crate::router) struct ToolCalls {
    order: VecDeque<Box<str>>,
    known: HashMap<Box<str>, Known>,
}

/// What is kept of one tool call: its members within [`DIGEST`], and what was left out of
/// them.
#[derive(Debug, Default)]
struct Known {
    fields: Map<String, Value>,
    left_out: Vec<LeftOut>,
}

impl ToolCalls {
    #[cfg(test)]
    fn get(&self, id: &str) -> Option<&Map<String, Value>> {
        self.known.get(id).map(|k| &k.fields)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.known.len()
    }

    /// A new tool call (`fresh`: its members replace all known), or an update of one (its
    /// members replace those it names); its digest is made again within [`DIGEST`].
    fn record(&mut self, id: &str, fresh: bool, kept: impl Iterator<Item = (String, Value)>) {
        if !self.known.contains_key(id) {
            self.order.push_back(id.into());
            self.known.insert(id.into(), Known::default());
        }
        let Some(known) = self.known.get_mut(id) else {
            return;
        };
        if fresh {
            *known = Known::default();
        }
        for (k, v) in kept {
            // What was left out of a member it replaces no longer applies.
            known.left_out.retain(|l| l.member() != k);
            known.fields.insert(k, v);
        }
        // In the order members get room.
        let fields: Map<String, Value> = KEPT
            .iter()
            .filter_map(|k| Some((k.to_string(), known.fields.remove(*k)?)))
            .collect();
        let (fields, left_out) = fit(Value::Object(fields), DIGEST);
        known.fields = match fields {
            Value::Object(fields) => fields,
            _ => Map::new(),
        };
        merge(&mut known.left_out, left_out);
        while self.order.len() > REMEMBERED {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.known.remove(&old);
        }
    }

    /// The tool call is over: nothing will ask to approve it.
    fn forget(&mut self, id: &str) {
        if self.known.remove(id).is_some() {
            self.order.retain(|k| &**k != id);
        }
    }
}

/// Records a `tool_call` or `tool_call_update` (an update's members replace the ones
/// known), or forgets the tool call when it says it is `completed` or `failed`.
pub(in crate::router) fn remember(known: &mut ToolCalls, update: &Value) {
    let fresh = match update["sessionUpdate"].as_str() {
        Some("tool_call") => true,
        Some("tool_call_update") => false,
        _ => return,
    };
    let Some(id) = update["toolCallId"].as_str() else {
        return;
    };
    if matches!(update["status"].as_str(), Some("completed" | "failed")) {
        known.forget(id);
        return;
    }
    let kept = KEPT.iter().filter_map(|k| {
        Some((
            k.to_string(),
            update.get(*k).filter(|v| !v.is_null())?.clone(),
        ))
    });
    known.record(id, fresh, kept);
}

/// `tool_call` as it is shown beside a question: within [`DIGEST`] bytes of text (long
/// strings share the room and are cut, with `…`), and what was left out (pointers into the
/// tool call). What decides (the approval policy) reads the tool call as the agent sent it,
/// never this.
pub(in crate::router) fn shown(tool_call: &Value) -> (Value, Vec<LeftOut>) {
    fit(tool_call.clone(), DIGEST)
}

/// Fills in `tool_call` (a permission request's `toolCall`) the members it lacks from the
/// tool call announced under its id; returns what was left out of the members filled in.
pub(in crate::router) fn fill(known: &ToolCalls, tool_call: &mut Value) -> Vec<LeftOut> {
    let Some(id) = tool_call["toolCallId"].as_str() else {
        return Vec::new();
    };
    let Some(known) = known.known.get(id) else {
        return Vec::new();
    };
    let Some(obj) = tool_call.as_object_mut() else {
        return Vec::new();
    };
    let mut left_out = Vec::new();
    for (k, v) in &known.fields {
        if obj.get(k).is_none_or(Value::is_null) {
            obj.insert(k.clone(), v.clone());
            left_out.extend(known.left_out.iter().filter(|l| l.member() == k).cloned());
        }
    }
    left_out
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
        );
        remember(
            &mut known,
            &json!({"sessionUpdate":"tool_call_update","toolCallId":"t1",
                "rawInput":{"command":"rm -rf build"},"title":"rm -rf build","status":null}),
        );
        remember(
            &mut known,
            &json!({"sessionUpdate":"agent_message_chunk","toolCallId":"t1","title":"no"}),
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
        );
        let mut tc = json!({"toolCallId":"t1"});
        fill(&known, &mut tc);
        assert_eq!(tc, json!({"toolCallId":"t1","title":"Read"}));
    }

    #[test]
    fn only_the_most_recent_open_tool_calls_are_kept() {
        let mut known = ToolCalls::default();
        for i in 0..REMEMBERED + 10 {
            remember(
                &mut known,
                &json!({"sessionUpdate":"tool_call","toolCallId":format!("t{i}"),"title":"x"}),
            );
        }
        assert_eq!(known.len(), REMEMBERED);
        assert!(known.get("t0").is_none());
        assert!(known.get(&format!("t{}", REMEMBERED + 9)).is_some());
    }

    #[test]
    fn finished_tool_calls_are_forgotten_and_big_ones_keep_a_bounded_digest() {
        let mut known = ToolCalls::default();
        // Finished diffs, however many and however big, are not kept.
        let diff = "+ x\n".repeat(10_000);
        for i in 0..200 {
            remember(
                &mut known,
                &json!({"sessionUpdate":"tool_call_update","toolCallId":format!("d{i}"),
                    "status":"completed","content":[{"type":"diff","newText":diff}]}),
            );
        }
        assert_eq!(known.len(), 0);
        // An open one keeps its title whole and at most DIGEST bytes of its content.
        remember(
            &mut known,
            &json!({"sessionUpdate":"tool_call","toolCallId":"e1","title":"Edit lib.rs",
                "kind":"edit","status":"pending",
                "content":[{"type":"diff","path":"src/lib.rs","newText":diff},
                           {"type":"diff","path":"src/main.rs","newText":diff}]}),
        );
        let kept = known.get("e1").expect("kept");
        assert_eq!(kept["title"], "Edit lib.rs");
        fn text(v: &Value) -> usize {
            match v {
                Value::String(s) => s.len(),
                Value::Array(a) => a.iter().map(text).sum(),
                Value::Object(o) => o.iter().map(|(k, v)| k.len() + text(v)).sum(),
                _ => 0,
            }
        }
        let kept_text = text(&Value::Object(kept.clone()));
        assert!(kept_text <= DIGEST, "{kept_text}");
        // The two diffs share the room: each keeps its start, cut at a line's end.
        for (i, path) in ["src/lib.rs", "src/main.rs"].iter().enumerate() {
            let shown = kept["content"][i]["newText"].as_str().unwrap();
            assert!(
                shown.ends_with("\n…") && shown.starts_with("+ x\n"),
                "{shown:?}"
            );
            assert!(shown.len() > DIGEST / 3, "{}", shown.len());
            assert_eq!(kept["content"][i]["path"], *path);
        }
        let left = &known.known["e1"].left_out;
        assert_eq!(left.len(), 2, "{left:?}");
        // It is forgotten when it ends, and a failed one likewise.
        remember(
            &mut known,
            &json!({"sessionUpdate":"tool_call_update","toolCallId":"e1","status":"failed"}),
        );
        assert!(known.get("e1").is_none() && known.order.is_empty());
    }

    #[test]
    fn a_filled_in_member_brings_what_was_left_out_of_it() {
        let mut known = ToolCalls::default();
        let new = "+ x\n".repeat(10_000);
        remember(
            &mut known,
            &json!({"sessionUpdate":"tool_call","toolCallId":"w","title":"Write a.rs",
                "kind":"edit","status":"pending",
                "content":[{"type":"diff","path":"a.rs","oldText":null,"newText":new}]}),
        );
        let mut tc = json!({"toolCallId":"w","title":"Write a.rs?"});
        let left = fill(&known, &mut tc);
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(left[0].at, "/content/0/newText");
        let shown = tc["content"][0]["newText"].as_str().unwrap();
        assert_eq!(left[0].bytes, new.len() - (shown.len() - '…'.len_utf8()));
        assert_eq!(left[0].lines, left[0].bytes / 4);
        // An update that replaces the content takes what was left out of it away.
        remember(
            &mut known,
            &json!({"sessionUpdate":"tool_call_update","toolCallId":"w",
                "content":[{"type":"diff","path":"a.rs","oldText":null,"newText":"small"}]}),
        );
        let mut tc = json!({"toolCallId":"w"});
        assert!(fill(&known, &mut tc).is_empty());
        assert_eq!(tc["content"][0]["newText"], "small");
        // One the request has itself is not filled in, nor its cuts reported.
        let mut tc = json!({"toolCallId":"w","content":[]});
        assert!(fill(&known, &mut tc).is_empty());
    }
}
