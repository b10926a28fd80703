//! The fake's Anthropic Messages API: `POST /v1/messages`, streamed.

use serde_json::{json, Value};

use super::{Answer, Dialect, Reply};

/// Answers what is not a turn: token counts, probes, and anything else (404).
pub(super) fn route(method: &str, path: &str) -> Option<Answer> {
    Some(match (method, path) {
        ("POST", "/v1/messages") => return None,
        ("POST", "/v1/messages/count_tokens") => {
            Answer::json("200 OK", json!({"input_tokens": 10}))
        }
        ("HEAD", _) | ("GET", "/") => Answer::json("200 OK", json!({})),
        _ => {
            let error = json!({"type": "error", "error": {"type": "not_found_error",
                "message": format!("the fake model has no {path}")}});
            Answer::json("404 Not Found", error)
        }
    })
}

/// The content blocks of every message of `role` in a request body.
fn blocks<'a>(body: &'a Value, role: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |m| m["role"] == role)
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
}

/// Whether the assistant's messages hold `reply`: its `tool_use` by id, its text block.
pub(super) fn in_history(body: &Value, step: usize, reply: &Reply) -> bool {
    let mut said = blocks(body, "assistant");
    match reply {
        Reply::Tool { .. } => {
            let id = Dialect::Anthropic.tool_id(step);
            said.any(|b| b["type"] == "tool_use" && b["id"] == id)
        }
        Reply::Text(text) => said.any(|b| b["type"] == "text" && b["text"] == *text),
    }
}

/// The `tool_result` block of a user message for `id`.
pub(super) fn tool_output(body: &Value, id: &str) -> Option<Value> {
    blocks(body, "user")
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
        .cloned()
}

/// The answer to a side request: the JSON it asks for when it sets an output format (the
/// session title), else a word.
pub(super) fn side(body: &Value) -> Reply {
    let schema = &body["output_config"]["format"]["schema"];
    let Some(required) = schema["required"].as_array() else {
        return Reply::text("OK.");
    };
    let fields = required
        .iter()
        .filter_map(Value::as_str)
        .map(|k| (k.to_owned(), json!("Rig session")));
    Reply::Text(Value::Object(fields.collect()).to_string())
}

/// The events of one streamed message of `model` holding `reply`.
pub(super) fn events(model: &str, step: Option<usize>, reply: &Reply) -> Vec<Value> {
    let (block, delta, stop) = match reply {
        Reply::Tool { name, input } => {
            let id = Dialect::Anthropic.tool_id(step.unwrap_or(usize::MAX));
            (
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                json!({"type": "input_json_delta", "partial_json": input.to_string()}),
                "tool_use",
            )
        }
        Reply::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        ),
    };
    let id = match step {
        Some(step) => format!("msg_rig_{step}"),
        None => "msg_rig_side".to_owned(),
    };
    let usage = json!({"input_tokens": 10, "output_tokens": 1});
    vec![
        json!({"type": "message_start", "message": {"id": id, "type": "message",
            "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null, "usage": usage}}),
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ]
}
