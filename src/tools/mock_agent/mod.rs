//! The scripted ACP agent behind `acp-mock-agent` (and `acp-question-bridge mock-agent`).
//!
//! A real ACP (protocol version 1) agent that behaves deterministically, driven by words in
//! the prompt text. Used by tests, CI, the demo, benchmarks and client authors.
//!
//! Invariants: stdout carries protocol only (one JSON-RPC message per line); every request
//! it receives gets exactly one response; a cancelled turn ends with `stopReason:
//! "cancelled"`. Session ids are `mock-session-1`, `-2`, ... and its own request ids count
//! from 0.
//!
//! This module is the agent's side of ACP (its stdio, sessions, requests and their
//! responses); what a turn does with the prompt's words is the script ([`script`]).

use acp_question_bridge::methods;
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

mod script;
use script::turn;
pub use script::SCRIPT_HELP;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, Value>>>>>;

#[derive(Clone)]
struct Ctx {
    out: mpsc::Sender<String>,
    pending: Pending,
    next_id: Arc<Mutex<u64>>,
    questions: Arc<Mutex<u64>>,
}

impl Ctx {
    async fn send(&self, v: &Value) {
        let _ = self.out.send(v.to_string()).await;
    }

    async fn respond(&self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc":"2.0","id":id,"result":result}))
            .await;
    }

    async fn respond_error(&self, id: &Value, code: i64, message: &str) {
        self.send(&json!({"jsonrpc":"2.0","id":id,"error":{"code":code,"message":message}}))
            .await;
    }

    async fn chunk(&self, session: &str, text: &str) {
        self.send(&json!({"jsonrpc":"2.0","method":methods::SESSION_UPDATE,"params":{
            "sessionId": session,
            "update": {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}}
        }}))
        .await;
    }

    /// A chunk that also carries, in `_meta["acp-mock-agent"]`, the exact response the
    /// agent received (`result` or `error`), so tests and client authors can see it.
    async fn report(&self, session: &str, text: &str, response: &Result<Value, Value>) {
        let (key, v) = match response {
            Ok(r) => ("result", r),
            Err(e) => ("error", e),
        };
        self.send(&json!({"jsonrpc":"2.0","method":methods::SESSION_UPDATE,"params":{
            "sessionId": session,
            "update": {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}},
            "_meta": {"acp-mock-agent": {key: v}}
        }}))
        .await;
    }

    /// A new number for a question id (`mock-q-1`, `mock-q-2`, ...).
    fn next_question(&self) -> u64 {
        let mut n = self.questions.lock().unwrap_or_else(|e| e.into_inner());
        *n += 1;
        *n
    }

    /// Sends a request; the receiver yields its result (`Ok`) or error object (`Err`).
    async fn request(
        &self,
        method: &str,
        params: Value,
    ) -> oneshot::Receiver<Result<Value, Value>> {
        self.request_with_id(method, params).await.1
    }

    /// Like [`Ctx::request`], also returning the request's id.
    async fn request_with_id(
        &self,
        method: &str,
        params: Value,
    ) -> (u64, oneshot::Receiver<Result<Value, Value>>) {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut n = self.next_id.lock().unwrap_or_else(|e| e.into_inner());
            let id = *n;
            *n += 1;
            id
        };
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        (id, rx)
    }
}

/// Entry point of both binaries that run the mock agent.
pub fn main() -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => return ExitCode::from(1),
    };
    let code = rt.block_on(run());
    rt.shutdown_background();
    ExitCode::from(code)
}

async fn run() -> u8 {
    let (out_tx, mut out_rx) = mpsc::channel::<String>(1024);
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = out_rx.recv().await {
            let mut buf = line.into_bytes();
            buf.push(b'\n');
            if stdout.write_all(&buf).await.is_err() {
                return;
            }
            if out_rx.is_empty() && stdout.flush().await.is_err() {
                return;
            }
        }
        let _ = stdout.flush().await;
    });
    let ctx = Ctx {
        out: out_tx,
        pending: Arc::default(),
        next_id: Arc::default(),
        questions: Arc::default(),
    };
    let mut sessions: HashMap<String, CancellationToken> = HashMap::new();
    let mut session_count = 0u64;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = msg.get("id").cloned();
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        match (method.as_deref(), id) {
            (None, Some(Value::Number(n))) => {
                let Some(tx) = n.as_u64().and_then(|n| {
                    ctx.pending
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&n)
                }) else {
                    continue;
                };
                let outcome = match msg.get("error") {
                    Some(err) => Err(err.clone()),
                    None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = tx.send(outcome);
            }
            (None, _) => {}
            (Some(methods::INITIALIZE), Some(id)) => ctx.respond(
                &id,
                json!({
                    "protocolVersion": 1,
                    "agentCapabilities": {
                        "loadSession": true,
                        "promptCapabilities": {"image": false, "audio": false, "embeddedContext": false}
                    },
                    "authMethods": [],
                    "agentInfo": {"name": "acp-mock-agent", "version": env!("CARGO_PKG_VERSION")}
                }),
            )
            .await,
            (Some(methods::AUTHENTICATE), Some(id)) => ctx.respond(&id, json!({})).await,
            (Some(methods::SESSION_NEW), Some(id)) => {
                session_count += 1;
                let sid = format!("mock-session-{session_count}");
                sessions.insert(sid.clone(), CancellationToken::new());
                ctx.respond(&id, json!({ "sessionId": sid })).await;
            }
            (Some(methods::SESSION_LOAD), Some(id)) => {
                let sid = params["sessionId"].as_str().unwrap_or_default().to_owned();
                sessions.entry(sid).or_default();
                ctx.respond(&id, json!({})).await;
            }
            (Some(methods::SESSION_PROMPT), Some(id)) => {
                let sid = params["sessionId"].as_str().unwrap_or_default().to_owned();
                let Some(token) = sessions.get_mut(&sid) else {
                    ctx.respond_error(&id, -32602, &format!("unknown session {sid}")).await;
                    continue;
                };
                if token.is_cancelled() {
                    *token = CancellationToken::new();
                }
                let token = token.clone();
                let text = prompt_text(&params["prompt"]);
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    let stop = turn(&ctx, &sid, &text, &token).await;
                    ctx.respond(&id, json!({ "stopReason": stop })).await;
                });
            }
            (Some(methods::SESSION_CANCEL), None) => {
                if let Some(token) = params["sessionId"].as_str().and_then(|s| sessions.get(s)) {
                    token.cancel();
                }
            }
            (Some(m), Some(id)) => {
                ctx.respond_error(&id, -32601, &format!("Method not found: {m}")).await;
            }
            (Some(_), None) => {}
        }
    }
    drop(ctx);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    0
}

fn prompt_text(prompt: &Value) -> String {
    prompt
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}
