//! A scripted fake of the OpenAI Responses API, the only "model" a real Codex meets in the
//! tests. It owns a loopback HTTP/1.1 server and the log of every request.
//!
//! The answer is a function of the conversation, as a real model's is: a `POST
//! /v1/responses` that offers tools is answered with the first scripted step not yet in
//! the request's `input` (a function call whose `call_id` is not there, a text that no
//! assistant message holds); a request without tools, or one sent after the script is used
//! up, gets a short side answer. Scripted texts must be distinct.
//!
//! The fake is also the agent's HTTP(S) proxy: a `CONNECT` (anything that would leave the
//! machine) is refused and logged as [`Kind::Other`], so a test sees that it was tried.
//! The HTTP side is [`super::fake_http`], shared with the Anthropic fake.

use serde_json::{json, Value};

use super::fake_http::{Answer, FakeServer, Http, Logged};

/// One scripted model turn.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A `function_call` output item; its `call_id` is [`call_id`] of its step.
    Call { name: String, arguments: Value },
    /// An assistant message with this text.
    Text(String),
}

impl Reply {
    pub fn call(name: &str, arguments: Value) -> Self {
        Reply::Call {
            name: name.to_owned(),
            arguments,
        }
    }

    pub fn text(text: &str) -> Self {
        Reply::Text(text.to_owned())
    }
}

/// The `call_id` of the function call the fake sends at script step `step`.
pub fn call_id(step: usize) -> String {
    format!("call_rig_{step}")
}

/// How the fake classified a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A main-loop request, answered with this script step.
    Step(usize),
    /// A `/v1/responses` request outside the script, answered briefly.
    Side,
    /// Anything else: another path, or a `CONNECT` to a host outside (refused).
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
    /// The names of the tools the request offers the model (a built-in tool by its type).
    pub fn tool_names(&self) -> Vec<&str> {
        let tools = self.body["tools"].as_array().into_iter().flatten();
        tools
            .filter_map(|t| t["name"].as_str().or_else(|| t["type"].as_str()))
            .collect()
    }

    /// The tool offered by `name`, as offered.
    pub fn tool(&self, name: &str) -> Option<&Value> {
        let mut tools = self.body["tools"].as_array().into_iter().flatten();
        tools.find(|t| t["name"] == name)
    }

    /// The text of the `function_call_output` the request carries for `call`, if any (its
    /// `output` is a string or a list of text parts).
    pub fn call_output(&self, call: &str) -> Option<String> {
        let mut items = self.body["input"].as_array().into_iter().flatten();
        let item = items.find(|i| i["type"] == "function_call_output" && i["call_id"] == call)?;
        Some(match &item["output"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
            other => other.to_string(),
        })
    }
}

/// A running fake; the server stops when this is dropped.
pub struct FakeOpenAi {
    server: FakeServer<Request>,
}

impl Logged for Request {
    fn line(&self) -> String {
        format!("{} {} ({:?})", self.method, self.path, self.kind)
    }
}

impl FakeOpenAi {
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
            let close = request.method == "CONNECT";
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

    /// The model provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.server.addr())
    }

    /// The value for `HTTPS_PROXY` and its kin: this fake, which refuses every `CONNECT`.
    pub fn proxy_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// The output Codex sent back for the function call of script step `step`: waits for
    /// the first request that carries it (the next step's, or the next turn's when the call
    /// ended the turn).
    pub async fn call_output(&self, step: usize) -> String {
        let id = call_id(step);
        let what = format!("a function_call_output for {id}");
        let request = self.wait_for(&what, |r| r.call_output(&id).is_some()).await;
        request.call_output(&id).unwrap_or_default()
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
        ("POST", "/v1/responses") => {}
        ("GET", "/v1/models") => {
            let models = json!({"object": "list", "data": [], "models": []});
            return ("200 OK", "application/json", models.to_string());
        }
        ("CONNECT", _) => return ("403 Forbidden", "text/plain", "offline".into()),
        _ => {
            let error = json!({"error": {"type": "not_found", "code": null, "param": null,
                "message": format!("the fake model has no {} {path}", request.method)}});
            return ("404 Not Found", "application/json", error.to_string());
        }
    }
    let body = &request.body;
    let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let input: Vec<&Value> = body["input"].as_array().into_iter().flatten().collect();
    let said = |text: &str| {
        input.iter().any(|i| {
            i["role"] == "assistant"
                && i["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["text"] == text)
        })
    };
    let in_history = |step: usize, reply: &Reply| match reply {
        Reply::Call { .. } => input
            .iter()
            .any(|i| i["type"] == "function_call" && i["call_id"] == call_id(step)),
        Reply::Text(text) => said(text),
    };
    let next = script
        .iter()
        .enumerate()
        .find(|(step, reply)| !in_history(*step, reply));
    let model = body["model"].as_str().unwrap_or("gpt-5.5");
    let (kind, events) = match next {
        Some((step, reply)) if has_tools => (Kind::Step(step), response(model, step, reply)),
        _ => (Kind::Side, response(model, usize::MAX, &Reply::text("OK."))),
    };
    request.kind = kind;
    ("200 OK", "text/event-stream", events)
}

/// The server-sent events of one streamed response of `model` holding `reply`: created,
/// the one output item done, completed.
fn response(model: &str, step: usize, reply: &Reply) -> String {
    let tag = if step == usize::MAX {
        "side".to_owned()
    } else {
        step.to_string()
    };
    let item = match reply {
        Reply::Call { name, arguments } => json!({"type": "function_call",
            "id": format!("fc_rig_{tag}"), "call_id": call_id(step), "name": name,
            "arguments": arguments.to_string(), "status": "completed"}),
        Reply::Text(text) => json!({"type": "message", "id": format!("msg_rig_{tag}"),
            "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
    };
    let id = format!("resp_rig_{tag}");
    let usage = json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15});
    let events = [
        json!({"type": "response.created", "response": {"id": id, "model": model,
            "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": {"id": id, "model": model,
            "status": "completed", "output": [item], "usage": usage}}),
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
