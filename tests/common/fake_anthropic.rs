//! A scripted fake of the Anthropic Messages API, the only "model" a real Claude agent
//! meets in the tests. It owns a loopback HTTP/1.1 server and the log of every request.
//!
//! The answer is a function of the conversation, as a real model's is: a main-loop request
//! (one that offers tools) is answered with the first scripted reply not yet in the
//! request's assistant history; requests with no tools (the session title), or sent after
//! the script is used up (the prompt suggestion after a turn), get a short side answer, so
//! the CLI's housekeeping never consumes the script. Scripted texts must be distinct.
//! The HTTP side is minimal test code: `Content-Length` or chunked bodies, keep-alive.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::WAIT;

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
    addr: SocketAddr,
    log: Arc<Mutex<Vec<Request>>>,
    count: watch::Receiver<usize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeAnthropic {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Shared {
    script: Vec<Reply>,
    log: Arc<Mutex<Vec<Request>>>,
    count: watch::Sender<usize>,
}

impl FakeAnthropic {
    /// Starts a fake on 127.0.0.1 (a free port) that plays `script`.
    pub async fn start(script: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (count_tx, count) = watch::channel(0);
        let shared = Arc::new(Shared {
            script,
            log: log.clone(),
            count: count_tx,
        });
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        Self {
            addr,
            log,
            count,
            task,
        }
    }

    /// The value for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }

    /// Waits (up to [`WAIT`]) for a request that satisfies `pred`, received so far or later.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&Request) -> bool) -> Request {
        let mut count = self.count.clone();
        let found = tokio::time::timeout(WAIT, async {
            loop {
                if let Some(r) = self.log.lock().unwrap().iter().find(|r| pred(r)) {
                    return r.clone();
                }
                count.changed().await.expect("the fake's server stopped");
            }
        })
        .await;
        found.unwrap_or_else(|_| {
            panic!("the fake model never got {what}; paths: {:?}", self.paths())
        })
    }

    /// Waits for the main-loop request of script step `step`.
    pub async fn wait_step(&self, step: usize) -> Request {
        self.wait_for(&format!("the request of step {step}"), |r| {
            r.kind == Kind::Step(step)
        })
        .await
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

    /// `METHOD path (kind)` of every request so far, for failure messages and reports.
    pub fn paths(&self) -> Vec<String> {
        let log = self.log.lock().unwrap();
        log.iter()
            .map(|r| format!("{} {} ({:?})", r.method, r.path, r.kind))
            .collect()
    }
}

/// Serves one connection: requests one after another (keep-alive) until EOF or an error.
async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    while let Some((mut request, close)) = read_request(&mut read).await {
        let (status, content_type, body) = answer(&mut request, &shared.script);
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
             request-id: req_rig\r\nconnection: {}\r\n\r\n",
            body.len(),
            if close { "close" } else { "keep-alive" }
        );
        shared.log.lock().unwrap().push(request.clone());
        shared.count.send_modify(|n| *n += 1);
        let mut out = head.into_bytes();
        if request.method != "HEAD" {
            out.extend_from_slice(body.as_bytes());
        }
        if write.write_all(&out).await.is_err() || write.flush().await.is_err() || close {
            return;
        }
    }
}

/// Reads one request; `None` at EOF or on a malformed request. The flag: close after it.
async fn read_request<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> Option<(Request, bool)> {
    let mut line = String::new();
    if r.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).await.ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let mut body = Vec::new();
    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).await.ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2]; // the data and its CRLF
            r.read_exact(&mut chunk).await.ok()?;
            if size == 0 {
                break; // (no trailers expected)
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = header("content-length") {
        body = vec![0; len.parse().ok()?];
        r.read_exact(&mut body).await.ok()?;
    }
    let close = header("connection").is_some_and(|v| v == "close");
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request = Request {
        method,
        path,
        headers,
        body,
        kind: Kind::Other,
    };
    Some((request, close))
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
