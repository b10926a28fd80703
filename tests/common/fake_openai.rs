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
//! The HTTP side is minimal test code: `Content-Length` bodies, keep-alive.

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
    addr: SocketAddr,
    log: Arc<Mutex<Vec<Request>>>,
    count: watch::Receiver<usize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Shared {
    script: Vec<Reply>,
    log: Arc<Mutex<Vec<Request>>>,
    count: watch::Sender<usize>,
}

impl FakeOpenAi {
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

    /// The model provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The value for `HTTPS_PROXY` and its kin: this fake, which refuses every `CONNECT`.
    pub fn proxy_url(&self) -> String {
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

    /// The output Codex sent back for the function call of script step `step`: waits for
    /// the first request that carries it (the next step's, or the next turn's when the call
    /// ended the turn).
    pub async fn call_output(&self, step: usize) -> String {
        let id = call_id(step);
        let what = format!("a function_call_output for {id}");
        let request = self.wait_for(&what, |r| r.call_output(&id).is_some()).await;
        request.call_output(&id).unwrap_or_default()
    }

    /// `METHOD path (kind)` of every request so far, for failure messages and reports.
    pub fn paths(&self) -> Vec<String> {
        let log = self.log.lock().unwrap();
        log.iter()
            .map(|r| format!("{} {} ({:?})", r.method, r.path, r.kind))
            .collect()
    }
}

/// Serves one connection: requests one after another (keep-alive) until EOF, an error, or
/// a `CONNECT` (refused, then closed).
async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    while let Some((mut request, close)) = read_request(&mut read).await {
        let (status, content_type, body) = answer(&mut request, &shared.script);
        let close = close || request.method == "CONNECT";
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
             x-request-id: req_rig\r\nconnection: {}\r\n\r\n",
            body.len(),
            if close { "close" } else { "keep-alive" }
        );
        shared.log.lock().unwrap().push(request);
        shared.count.send_modify(|n| *n += 1);
        let out = [head.into_bytes(), body.into_bytes()].concat();
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
    let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    // Codex sends its bodies whole; a chunked one is not expected.
    if header("transfer-encoding").is_some() {
        return None;
    }
    let mut body = vec![0; header("content-length").map_or(Ok(0), |l| l.parse()).ok()?];
    r.read_exact(&mut body).await.ok()?;
    let close = header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    let request = Request {
        method,
        path,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        headers,
        kind: Kind::Other,
    };
    Some((request, close))
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
