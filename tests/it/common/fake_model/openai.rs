//! The fake's OpenAI Responses API: `POST /v1/responses`, streamed; and the proxy that
//! refuses every `CONNECT`.

use serde_json::{json, Value};

use super::{Answer, Dialect, Reply};

/// Answers what is not a turn: the model list, a `CONNECT` (refused, and the connection
/// closed), and anything else (404).
pub(super) fn route(method: &str, path: &str) -> Option<Answer> {
    Some(match (method, path) {
        ("POST", "/v1/responses") => return None,
        ("GET", "/v1/models") => Answer::json(
            "200 OK",
            json!({"object": "list", "data": [], "models": []}),
        ),
        ("CONNECT", _) => Answer {
            status: "403 Forbidden",
            content_type: "text/plain",
            body: "offline".into(),
            close: true,
        },
        _ => {
            let error = json!({"error": {"type": "not_found", "code": null, "param": null,
                "message": format!("the fake model has no {method} {path}")}});
            Answer::json("404 Not Found", error)
        }
    })
}

/// The items of a request's `input`.
fn input(body: &Value) -> impl Iterator<Item = &Value> {
    body["input"].as_array().into_iter().flatten()
}

/// Whether the request's `input` holds `reply`: its `function_call` by `call_id`, an
/// assistant message with its text.
pub(super) fn in_history(body: &Value, step: usize, reply: &Reply) -> bool {
    let mut items = input(body);
    match reply {
        Reply::Tool { .. } => {
            let id = Dialect::OpenAi.tool_id(step);
            items.any(|i| i["type"] == "function_call" && i["call_id"] == id)
        }
        Reply::Text(text) => items.any(|i| {
            i["role"] == "assistant"
                && i["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["text"] == *text)
        }),
    }
}

/// The `function_call_output` input item for `id`.
pub(super) fn tool_output(body: &Value, id: &str) -> Option<Value> {
    input(body)
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == id)
        .cloned()
}

/// The events of one streamed response of `model` holding `reply`: created, the one output
/// item done, completed.
pub(super) fn events(model: &str, step: Option<usize>, reply: &Reply) -> Vec<Value> {
    let tag = step.map_or_else(|| "side".to_owned(), |s| s.to_string());
    let item = match reply {
        Reply::Tool { name, input } => json!({"type": "function_call",
            "id": format!("fc_rig_{tag}"), "call_id": Dialect::OpenAi.tool_id(step.unwrap_or(usize::MAX)),
            "name": name, "arguments": input.to_string(), "status": "completed"}),
        Reply::Text(text) => json!({"type": "message", "id": format!("msg_rig_{tag}"),
            "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
    };
    let id = format!("resp_rig_{tag}");
    let usage = json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15});
    vec![
        json!({"type": "response.created", "response": {"id": id, "model": model,
            "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": {"id": id, "model": model,
            "status": "completed", "output": [item], "usage": usage}}),
    ]
}
