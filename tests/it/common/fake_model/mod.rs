//! A scripted fake of a model's HTTP API, the only "model" a real agent meets in the tests
//! ([`super::real_agent`]): a loopback HTTP/1.1 server ([`http`]) that keeps the log of
//! every request and speaks one wire dialect, the Anthropic Messages API ([`anthropic`],
//! for Claude) or the OpenAI Responses API ([`openai`], for Codex).
//!
//! The answer is a function of the conversation, as a real model's is: a main-loop request
//! (one that offers tools) is answered with the first scripted step not yet in the
//! request's history (a tool call whose id is not there, a text that no assistant message
//! holds); requests with no tools (the session title), or sent after the script is used up
//! (the prompt suggestion after a turn), get a short side answer, so the agent's
//! housekeeping never consumes the script. Scripted texts must be distinct.

mod anthropic;
mod http;
mod openai;

use serde_json::Value;

/// One scripted model turn.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A call of the tool `name` (Anthropic: a `tool_use` block, stop reason `tool_use`;
    /// OpenAI: a `function_call` output item); its id is [`Dialect::tool_id`] of its step.
    Tool { name: String, input: Value },
    /// A text (Anthropic: a text block, stop reason `end_turn`; OpenAI: an assistant
    /// message).
    Text(String),
}

impl Reply {
    pub fn tool(name: &str, input: Value) -> Self {
        Reply::Tool {
            name: name.to_owned(),
            input,
        }
    }

    pub fn text(text: &str) -> Self {
        Reply::Text(text.to_owned())
    }
}

/// The API the fake speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// The Anthropic Messages API (`POST /v1/messages`).
    Anthropic,
    /// The OpenAI Responses API (`POST /v1/responses`); also the agent's HTTP(S) proxy,
    /// which refuses every `CONNECT` (anything that would leave the machine) and logs it as
    /// [`Kind::Other`], so a test sees that it was tried.
    OpenAi,
}

impl Dialect {
    /// The id of the tool call the fake sends at script step `step`.
    pub fn tool_id(self, step: usize) -> String {
        match self {
            Dialect::Anthropic => format!("toolu_rig_{step}"),
            Dialect::OpenAi => format!("call_rig_{step}"),
        }
    }

    /// The model a request names when it names none.
    fn default_model(self) -> &'static str {
        match self {
            Dialect::Anthropic => "claude-sonnet-4-5",
            Dialect::OpenAi => "gpt-5.5",
        }
    }

    /// The answer to a request that is not a turn of the model (another path, a token
    /// count, a `CONNECT`); `None` for a turn.
    fn route(self, method: &str, path: &str) -> Option<Answer> {
        match self {
            Dialect::Anthropic => anthropic::route(method, path),
            Dialect::OpenAi => openai::route(method, path),
        }
    }

    /// Whether the conversation in `body` already holds `reply` of script step `step`.
    fn in_history(self, body: &Value, step: usize, reply: &Reply) -> bool {
        match self {
            Dialect::Anthropic => anthropic::in_history(body, step, reply),
            Dialect::OpenAi => openai::in_history(body, step, reply),
        }
    }

    /// The reply to a request outside the script.
    fn side(self, body: &Value) -> Reply {
        match self {
            Dialect::Anthropic => anthropic::side(body),
            Dialect::OpenAi => Reply::text("OK."),
        }
    }

    /// The server-sent events of one streamed turn of `model` holding `reply`, of script
    /// step `step` (`None`: a side answer).
    fn stream(self, model: &str, step: Option<usize>, reply: &Reply) -> String {
        let events = match self {
            Dialect::Anthropic => anthropic::events(model, step, reply),
            Dialect::OpenAi => openai::events(model, step, reply),
        };
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

    /// What the agent sent back in `body` for the tool call `id`, as sent (Anthropic: a
    /// `tool_result` block of a user message; OpenAI: a `function_call_output` input item).
    fn tool_output(self, body: &Value, id: &str) -> Option<Value> {
        match self {
            Dialect::Anthropic => anthropic::tool_output(body, id),
            Dialect::OpenAi => openai::tool_output(body, id),
        }
    }
}

/// The text of a tool's output as [`FakeModel::tool_output`] returns it (its `content` or
/// `output` is a string or a list of text parts).
pub fn output_text(item: &Value) -> String {
    match item.get("content").or_else(|| item.get("output")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// How the fake classified a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A main-loop request, answered with this script step.
    Step(usize),
    /// A turn outside the script (title, suggestion), answered briefly.
    Side,
    /// Anything else: another path, or a `CONNECT` to a host outside (refused).
    Other,
}

/// One request the fake received.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
    pub kind: Kind,
    dialect: Dialect,
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

    /// What the request carries back for the tool call `id`, if anything.
    pub fn tool_output(&self, id: &str) -> Option<Value> {
        self.dialect.tool_output(&self.body, id)
    }

    /// `METHOD path (kind)`, for failure messages.
    fn line(&self) -> String {
        format!("{} {} ({:?})", self.method, self.path, self.kind)
    }
}

/// What the fake answers to one request.
struct Answer {
    status: &'static str,
    content_type: &'static str,
    body: String,
    /// Close the connection after it (else as the client asked).
    close: bool,
}

impl Answer {
    fn json(status: &'static str, body: Value) -> Self {
        Answer {
            status,
            content_type: "application/json",
            body: body.to_string(),
            close: false,
        }
    }
}

/// A running fake; the server stops when this is dropped.
pub struct FakeModel {
    server: http::Server,
    pub dialect: Dialect,
}

impl FakeModel {
    /// Starts a fake on 127.0.0.1 (a free port) that speaks `dialect` and plays `script`.
    pub async fn start(dialect: Dialect, script: Vec<Reply>) -> Self {
        let server =
            http::Server::start(dialect, move |request| answer(dialect, request, &script)).await;
        Self { server, dialect }
    }

    /// The API's base URL, for the agent's settings (`ANTHROPIC_BASE_URL`, a Codex model
    /// provider's `base_url`).
    pub fn base_url(&self) -> String {
        match self.dialect {
            Dialect::Anthropic => format!("http://{}", self.server.addr()),
            Dialect::OpenAi => format!("http://{}/v1", self.server.addr()),
        }
    }

    /// The value for `HTTPS_PROXY` and its kin: this fake, which refuses every `CONNECT`.
    pub fn proxy_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// The id of the tool call the fake sends at script step `step`.
    pub fn tool_id(&self, step: usize) -> String {
        self.dialect.tool_id(step)
    }

    /// What the agent sent back for the tool call of script step `step` (see
    /// [`output_text`]): waits for the first request that carries it (the next step's, or
    /// the next turn's when the call ended the turn).
    pub async fn tool_output(&self, step: usize) -> Value {
        let id = self.tool_id(step);
        let what = format!("the output of the tool call {id}");
        let request = self.wait_for(&what, |r| r.tool_output(&id).is_some()).await;
        request.tool_output(&id).unwrap_or_default()
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
        self.server.requests().iter().map(Request::line).collect()
    }
}

/// Classifies `request` (sets its `kind`) and answers it: a turn of the model with the next
/// step of `script`, or a side answer.
fn answer(dialect: Dialect, request: &mut Request, script: &[Reply]) -> Answer {
    let path = request.path.split('?').next().unwrap_or_default();
    if let Some(other) = dialect.route(&request.method, path) {
        return other;
    }
    let body = &request.body;
    let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let next = script
        .iter()
        .enumerate()
        .find(|(step, reply)| !dialect.in_history(body, *step, reply));
    let model = body["model"].as_str().unwrap_or(dialect.default_model());
    let (kind, events) = match next {
        Some((step, reply)) if has_tools => {
            (Kind::Step(step), dialect.stream(model, Some(step), reply))
        }
        _ => (Kind::Side, dialect.stream(model, None, &dialect.side(body))),
    };
    request.kind = kind;
    Answer {
        status: "200 OK",
        content_type: "text/event-stream",
        body: events,
        close: false,
    }
}
