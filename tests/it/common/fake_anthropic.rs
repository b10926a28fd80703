//! A scripted fake of the Anthropic Messages API, the only "model" a real Claude agent
//! meets in the tests. It owns a loopback HTTP/1.1 server and the log of every request.
//!
//! The answer is a function of the conversation, as a real model's is: a main-loop request
//! (one that offers tools) is answered with the first scripted reply not yet in the
//! request's assistant history; requests with no tools (the session title), or sent after
//! the script is used up (the prompt suggestion after a turn), get a short side answer, so
//! the CLI's housekeeping never consumes the script. Scripted texts must be distinct.
//! The HTTP side is [`super::fake_http`], shared with the OpenAI fake.

use serde_json::{json, Value};

use super::fake_http::{Answer, FakeServer, Http, Logged};

/// One scripted model turn.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A `tool_use` block (stop reason `tool_use`); its id is [`tool_use_id`] of its step.
    ToolUse { name: String, input: Value },
    /// A text block (stop reason `end_turn`).
    Text(String),
}

impl Reply {
    pub fn tool(name: &str, input: Value) -> Self {
        Reply::ToolUse {
            name: name.to_owned(),
            input,
        }
    }

    pub fn text(text: &str) -> Self {
        Reply::Text(text.to_owned())
    }
}

/// The id of the `tool_use` the fake sends at script step `step`.
pub fn tool_use_id(step: usize) -> String {
    format!("toolu_rig_{step}")
}

/// How the fake classified a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A main-loop request, answered with this script step.
    Step(usize),
    /// A `/v1/messages` request outside the script (title, suggestion), answered briefly.
    Side,
    /// Any other path (answered `{}` or 404).
    Other,
}

/// One request the fake received.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
    pub kind: Kind,
}

impl Request {
    /// The names of the tools the request offers the model.
    pub fn tool_names(&self) -> Vec<&str> {
        let tools = self.body["tools"].as_array().into_iter().flatten();
        tools.filter_map(|t| t["name"].as_str()).collect()
    }

    /// The `tool_result` blocks of the request's messages, in order.
    pub fn tool_results(&self) -> Vec<&Value> {
        blocks(&self.body, "user")
            .filter(|b| b["type"] == "tool_result")
            .collect()
    }
}

/// The text of a `tool_result` block (its `content` is a string or a list of text blocks).
pub fn tool_result_text(block: &Value) -> String {
    match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// The content blocks of every message of `role` in a Messages API request body.
fn blocks<'a>(body: &'a Value, role: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |m| m["role"] == role)
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
}

/// A running fake; the server stops when this is dropped.
pub struct FakeAnthropic {
    server: FakeServer<Request>,
}

impl Logged for Request {
    fn line(&self) -> String {
        format!("{} {} ({:?})", self.method, self.path, self.kind)
    }
}

impl FakeAnthropic {
    /// Starts a fake on 127.0.0.1 (a free port) that plays `script`.
    pub async fn start(script: Vec<Reply>) -> Self {
        let server = FakeServer::start(move |http: Http| {
            let mut request = Request {
                method: http.method,
                path: http.path,
                headers: http.headers,
                body: http.body,
                kind: Kind::Other,
            };
            let (status, content_type, body) = answer(&mut request, &script);
            let close = false;
            let a = Answer {
                status,
                content_type,
                body,
                close,
            };
            (request, a)
        })
        .await;
        Self { server }
    }

    /// The value for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// The `tool_result` the CLI sent back for the tool use of script step `step`: waits for
    /// the next step's request and returns the block.
    pub async fn tool_result(&self, step: usize) -> Value {
        let id = tool_use_id(step);
        let request = self.wait_step(step + 1).await;
        let found = request
            .tool_results()
            .into_iter()
            .find(|b| b["tool_use_id"] == id);
        found.cloned().unwrap_or_else(|| {
            panic!(
                "step {} carries no tool_result for {id}: {}",
                step + 1,
                request.body
            )
        })
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.server.requests()
    }

    /// Waits (up to [`super::WAIT`]) for a request that satisfies `pred`, received so far or
    /// later.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&Request) -> bool) -> Request {
        self.server.wait_for(what, pred).await
    }

    /// Waits for the main-loop request of script step `step`.
    pub async fn wait_step(&self, step: usize) -> Request {
        self.wait_for(&format!("the request of step {step}"), |r| {
            r.kind == Kind::Step(step)
        })
        .await
    }

    /// `METHOD path (kind)` of every request so far, for failure messages and reports.
    pub fn paths(&self) -> Vec<String> {
        self.server.paths()
    }
}

/// Classifies `request` (sets its `kind`) and returns status, content type and body.
fn answer(request: &mut Request, script: &[Reply]) -> (&'static str, &'static str, String) {
    let path = request.path.split('?').next().unwrap_or_default();
    match (request.method.as_str(), path) {
        ("POST", "/v1/messages") => {}
        ("POST", "/v1/messages/count_tokens") => {
            return (
                "200 OK",
                "application/json",
                json!({"input_tokens": 10}).to_string(),
            );
        }
        ("HEAD", _) | ("GET", "/") => return ("200 OK", "application/json", "{}".into()),
        _ => {
            let error = json!({"type": "error", "error": {"type": "not_found_error",
                "message": format!("the fake model has no {path}")}});
            return ("404 Not Found", "application/json", error.to_string());
        }
    }
    let body = &request.body;
    let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let said: Vec<&Value> = blocks(body, "assistant").collect();
    let in_history = |step: usize, reply: &Reply| match reply {
        Reply::ToolUse { .. } => said
            .iter()
            .any(|b| b["type"] == "tool_use" && b["id"] == tool_use_id(step)),
        Reply::Text(text) => said
            .iter()
            .any(|b| b["type"] == "text" && b["text"] == *text),
    };
    let next = script
        .iter()
        .enumerate()
        .find(|(step, reply)| !in_history(*step, reply));
    let model = body["model"].as_str().unwrap_or("claude-sonnet-4-5");
    let (kind, events) = match next {
        Some((step, reply)) if has_tools => (Kind::Step(step), message(model, step, reply)),
        _ => {
            let side = Reply::Text(side_text(body));
            (Kind::Side, message(model, usize::MAX, &side))
        }
    };
    request.kind = kind;
    ("200 OK", "text/event-stream", events)
}

/// The answer to a side request: the JSON it asks for when it sets an output format (the
/// session title), else a word.
fn side_text(body: &Value) -> String {
    let schema = &body["output_config"]["format"]["schema"];
    let Some(required) = schema["required"].as_array() else {
        return "OK.".into();
    };
    let fields = required
        .iter()
        .filter_map(Value::as_str)
        .map(|k| (k.to_owned(), json!("Rig session")));
    Value::Object(fields.collect()).to_string()
}

/// The server-sent events of one streamed message of `model` holding `reply`.
fn message(model: &str, step: usize, reply: &Reply) -> String {
    let (block, delta, stop) = match reply {
        Reply::ToolUse { name, input } => (
            json!({"type": "tool_use", "id": tool_use_id(step), "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            "tool_use",
        ),
        Reply::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        ),
    };
    let id = if step == usize::MAX {
        "msg_rig_side".to_owned()
    } else {
        format!("msg_rig_{step}")
    };
    let usage = json!({"input_tokens": 10, "output_tokens": 1});
    let events = [
        json!({"type": "message_start", "message": {"id": id, "type": "message",
            "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null, "usage": usage}}),
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ];
    events
        .iter()
        .map(|e| {
            format!(
                "event: {}\ndata: {e}\n\n",
                e["type"].as_str().unwrap_or_default()
            )
        })
        .collect()
}
