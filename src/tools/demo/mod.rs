//! `acp-question-bridge demo`: a terminal IDE around the bridge and the built-in mock agent.
//!
//! Owns the demo subcommand: it runs this executable as the bridge around
//! `<exe> mock-agent`, plays the ACP client over the bridge's stdio (initialize,
//! session/new, session/prompt), renders `_sandboxagent/session/request_question` requests,
//! reads answers (from `--answer`, `--reject`, or stdin lines) and prints the agent's reply.
//!
//! Invariants: every wait is bounded by a timeout; stdout carries the friendly transcript
//! only, a failure is one line on stderr; the bridge child is always reaped or killed, also
//! on Ctrl-C (the demo exits only once its bridge has, so no bridge log line follows it).
//!
//! Here: the process, the client's side of the session and the messages from the bridge;
//! answering what the agent asks is [`answering`], what an item looks like and what a typed
//! line means [`typing`].

use acp_question_bridge::methods;
use std::collections::VecDeque;
use std::io::{IsTerminal as _, Write as _};
use std::process::{ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc;

mod answering;
mod typing;

use acp_question_bridge::questions::{META_KEY, METHOD};

/// Longest wait for the next message from the bridge.
const BRIDGE_WAIT: Duration = Duration::from_secs(30);
/// Longest wait for an answer typed at a terminal (piped input gets `BRIDGE_WAIT`).
const TERMINAL_WAIT: Duration = Duration::from_secs(300);
/// Longest wait for the bridge to exit once its stdin is closed.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Flags of `acp-question-bridge demo`.
#[derive(Debug, clap::Args)]
#[command(after_help = super::mock_agent::SCRIPT_HELP)]
pub struct DemoArgs {
    /// The prompt text sent to the mock agent; its first word picks the script (below),
    /// e.g. `--script questions` (single-select, multi-select and free-text items) or
    /// `--script 'question-timeout 2000'` (quote a text with spaces).
    #[arg(long, value_name = "TEXT", default_value = "question")]
    pub script: String,
    /// Answer without a terminal: the Nth --answer answers question item N. A value is an
    /// option number, an option value or label, or free text (where allowed); a
    /// multi-select item takes a comma-separated list. An --answer that does not fit its
    /// item is an error (exit status 2). Without --answer/--reject, answers are read from
    /// stdin, one line per item (an empty line or `:r` rejects, EOF rejects, an invalid
    /// line is re-prompted; a line starting with `\` is taken as the text after it).
    #[arg(long, value_name = "VALUE", conflicts_with = "reject")]
    pub answer: Vec<String>,
    /// Reject every question (`{"status":"rejected","reason":"declined"}`).
    #[arg(long)]
    pub reject: bool,
    /// Passed to the bridge: reject a question not answered within this time.
    #[arg(long, value_name = "DURATION", value_parser = acp_question_bridge::cli::parse_duration)]
    pub question_timeout: Option<Duration>,
    /// Show the raw JSON-RPC lines both ways (`->` sent, `<-` received) and the bridge's
    /// info logs.
    #[arg(long)]
    pub verbose: bool,
}

/// A one-line failure and the exit status that goes with it.
struct Failure(u8, String);

/// The exit status after Ctrl-C (128 + SIGINT), like the bridge's.
const INTERRUPTED: u8 = 130;

type Res<T> = Result<T, Failure>;

fn fail<T>(msg: impl Into<String>) -> Res<T> {
    Err(Failure(1, msg.into()))
}

/// A bad `--answer`: exit status 2.
fn bad_answer<T>(msg: String) -> Res<T> {
    Err(Failure(2, msg))
}

/// The answers to a question's items, in order.
type Answers = Vec<Vec<String>>;

pub fn main(args: DemoArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return report(Failure(1, format!("cannot start runtime: {e}"))),
    };
    let result = rt.block_on(run(args));
    // The stdin reader thread may sit in a blocking read: do not wait for it.
    rt.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => report(f),
    }
}

fn report(Failure(code, msg): Failure) -> ExitCode {
    acp_question_bridge::logging::fail("acp-question-bridge demo", code, &msg)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

async fn run(args: DemoArgs) -> Res<()> {
    let exe =
        std::env::current_exe().or_else(|e| fail(format!("cannot find this executable: {e}")))?;
    let mut cmd = Command::new(&exe);
    if !args.verbose {
        cmd.args(["--log-level", "warn"]).env_remove("RUST_LOG");
    }
    if let Some(t) = args.question_timeout {
        cmd.arg("--question-timeout")
            .arg(format!("{}ms", t.as_millis()));
    }
    // The demo is the client that shows every question, in this terminal: no control server.
    cmd.arg("--no-control");
    cmd.arg("--").arg(&exe).arg("mock-agent");
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .or_else(|e| fail(format!("cannot start the bridge: {e}")))?;
    let quiet = Arc::new(AtomicBool::new(false));
    let relay = child
        .stderr
        .take()
        .map(|err| tokio::spawn(relay_stderr(err, quiet.clone())));
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return fail("the bridge's stdio is not piped");
    };
    let mut demo = Demo {
        answers: (!args.answer.is_empty()).then(|| args.answer.into()),
        reject: args.reject,
        verbose: args.verbose,
        interactive: std::io::stdin().is_terminal(),
        stdin: Some(stdin),
        lines: BufReader::new(stdout).lines(),
        backlog: VecDeque::new(),
        next_id: 0,
        agent_text: String::new(),
        user: None,
        user_eof: false,
    };
    // Ctrl-C reaches the bridge too (one process group); the demo then ends the bridge the
    // usual way and exits only after it, so none of the bridge's log lines follows the demo.
    let mut interrupt = signal(SignalKind::interrupt())
        .or_else(|e| fail(format!("cannot install the Ctrl-C handler: {e}")))?;
    say("acp-question-bridge demo: the bridge around the built-in mock agent");
    let played = tokio::select! {
        played = demo.play(&args.script) => played,
        // Dropping `play` loses only the rest of the turn: the session ends with the bridge.
        _ = interrupt.recv() => {
            // The bridge is ending too, and what it logs about that is no news.
            quiet.store(true, Ordering::Relaxed);
            if demo.interactive {
                say(""); // leave the line with the prompt and the terminal's ^C
            }
            Err(Failure(INTERRUPTED, "interrupted".into()))
        }
    };
    demo.flush_agent();
    let status = demo.finish(&mut child, &mut interrupt).await;
    if let Some(relay) = relay {
        // Every log line of the bridge comes before the demo's own last line.
        let _ = tokio::time::timeout(EXIT_WAIT, relay).await;
    }
    // The turn's outcome decides the exit status; a bridge that exits badly afterwards
    // is only worth a warning.
    let note = match status {
        Some(st) if st.success() => return played,
        // The bridge got the Ctrl-C too and says so by its exit status.
        Some(_) if matches!(played, Err(Failure(INTERRUPTED, _))) => return played,
        Some(st) => format!("the bridge exited: {st}"),
        None => {
            format!("killed the bridge: it did not exit within {EXIT_WAIT:?}, or Ctrl-C came again")
        }
    };
    match played {
        Err(Failure(code, msg)) => Err(Failure(code, format!("{msg} ({note})"))),
        Ok(()) => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "acp-question-bridge demo: warning: {note}"
            );
            Ok(())
        }
    }
}

/// Copies the bridge's stderr (its logs, and the agent's stderr) to ours, line by line,
/// until it closes; drops it from the moment `quiet` is set.
async fn relay_stderr(from: ChildStderr, quiet: Arc<AtomicBool>) {
    let mut from = BufReader::new(from);
    let mut line = Vec::new();
    while let Ok(n @ 1..) = from.read_until(b'\n', &mut line).await {
        if !quiet.load(Ordering::Relaxed) {
            let _ = std::io::stderr().lock().write_all(&line[..n]);
        }
        line.clear();
    }
}

struct Demo {
    /// `Some` when answers come from `--answer` (the Nth answers item N).
    answers: Option<VecDeque<String>>,
    reject: bool,
    verbose: bool,
    interactive: bool,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    /// Messages that arrived while the user was typing, handled after the question.
    backlog: VecDeque<Value>,
    next_id: i64,
    /// Agent message chunks not yet printed (consecutive chunks share one line).
    agent_text: String,
    /// Lines typed on stdin (read by a thread, started at the first question).
    user: Option<mpsc::Receiver<String>>,
    user_eof: bool,
}

impl Demo {
    async fn play(&mut self, script: &str) -> Res<()> {
        self.say("-> initialize (the client advertises _sandboxagent/session/request_question)");
        let caps = json!({"fs": {"readTextFile": false, "writeTextFile": false}, "_meta": {
            META_KEY: {"extensions": {"sessionRequestQuestion": true}}}});
        let info =
            json!({"name": "acp-question-bridge-demo", "version": env!("CARGO_PKG_VERSION")});
        let init = json!({"protocolVersion": 1, "clientCapabilities": caps, "clientInfo": info});
        let init = self.call(methods::INITIALIZE, init).await?;
        let Some(v) =
            init["agentCapabilities"]["_meta"][META_KEY]["questionBridge"]["version"].as_str()
        else {
            return fail("the agent capabilities lack _meta.questionBridge (not the bridge?)");
        };
        self.say(&format!("<- agent capabilities: questionBridge {v}"));
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|_| "/".into());
        let session = self
            .call(methods::SESSION_NEW, json!({"cwd": cwd, "mcpServers": []}))
            .await?;
        let Some(sid) = session["sessionId"].as_str().map(str::to_owned) else {
            return fail(format!("session/new returned no sessionId: {session}"));
        };
        self.say(&format!("-> session/new: {sid}"));
        self.say(&format!("-> session/prompt: {}", json!(script)));
        let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": script}]});
        let done = self.call(methods::SESSION_PROMPT, prompt).await?;
        let stop = done["stopReason"].as_str().unwrap_or("(none)");
        self.say(&format!("<- stopReason: {stop}"));
        Ok(())
    }

    /// Closes the bridge's stdin and waits (bounded, and until another Ctrl-C) for it to
    /// exit, reading its stdout to the end; `None` if it was killed.
    async fn finish(&mut self, child: &mut Child, interrupt: &mut Signal) -> Option<ExitStatus> {
        self.stdin = None;
        let lines = &mut self.lines;
        let exited = tokio::time::timeout(EXIT_WAIT, async {
            while let Ok(Some(_)) = lines.next_line().await {}
            child.wait().await.ok()
        });
        let status = tokio::select! {
            status = exited => status.ok().flatten(),
            _ = interrupt.recv() => None,
        };
        if status.is_none() {
            let _ = child.kill().await;
        }
        status
    }

    fn flush_agent(&mut self) {
        if !self.agent_text.is_empty() {
            say(&format!("<- agent: {}", self.agent_text.trim_end()));
            self.agent_text.clear();
        }
    }

    fn say(&mut self, line: &str) {
        self.flush_agent();
        say(line);
    }

    async fn send(&mut self, msg: &Value) -> Res<()> {
        let line = msg.to_string();
        if self.verbose {
            self.say(&format!("-> {line}"));
        }
        let Some(stdin) = self.stdin.as_mut() else {
            return fail("the bridge's stdin is closed");
        };
        let write = async {
            stdin.write_all(format!("{line}\n").as_bytes()).await?;
            stdin.flush().await
        };
        match tokio::time::timeout(BRIDGE_WAIT, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => fail(format!("cannot write to the bridge: {e}")),
            Err(_) => fail("timed out writing to the bridge"),
        }
    }

    async fn respond(&mut self, id: &Value, result: Value) -> Res<()> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await
    }

    /// Sends a request and handles everything the bridge sends until its response.
    async fn call(&mut self, method: &str, params: Value) -> Res<Value> {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        loop {
            let msg = match self.backlog.pop_front() {
                Some(msg) => msg,
                None => {
                    let line = tokio::time::timeout(BRIDGE_WAIT, self.lines.next_line()).await;
                    let Ok(line) = line else {
                        return fail(format!(
                            "timed out after {BRIDGE_WAIT:?} waiting for the bridge ({method})"
                        ));
                    };
                    self.received(line, method)?
                }
            };
            if msg.get("method").is_some() || msg.get("id") != Some(&id) {
                self.handle(msg).await?;
            } else if let Some(e) = msg.get("error") {
                return fail(format!(
                    "{method} failed: {} {}",
                    e["code"],
                    e["message"].as_str().unwrap_or("")
                ));
            } else {
                return Ok(msg.get("result").cloned().unwrap_or(Value::Null));
            }
        }
    }

    /// Parses (and in verbose mode shows) a line read from the bridge.
    fn received(&mut self, line: std::io::Result<Option<String>>, waiting_for: &str) -> Res<Value> {
        match line {
            Ok(Some(line)) => {
                if self.verbose {
                    self.say(&format!("<- {line}"));
                }
                serde_json::from_str(&line)
                    .or_else(|_| fail(format!("the bridge sent a line that is not JSON: {line}")))
            }
            Ok(None) => fail(format!(
                "the bridge closed its stdout while waiting for {waiting_for}"
            )),
            Err(e) => fail(format!("cannot read from the bridge: {e}")),
        }
    }

    /// A request or notification from the bridge (the agent's, passed through).
    async fn handle(&mut self, msg: Value) -> Res<()> {
        let method = msg["method"].as_str().unwrap_or_default().to_owned();
        let params = &msg["params"];
        if method.is_empty() {
            return Ok(()); // a response to no request of ours
        }
        let Some(id) = msg.get("id").cloned() else {
            let update = &params["update"];
            match (method.as_str(), update["sessionUpdate"].as_str()) {
                (methods::SESSION_UPDATE, Some("agent_message_chunk")) => {
                    self.agent_text
                        .push_str(update["content"]["text"].as_str().unwrap_or_default());
                }
                (methods::SESSION_UPDATE, kind) => {
                    self.say(&format!("<- session/update: {}", kind.unwrap_or("?")))
                }
                (methods::CANCEL_REQUEST, _) => {
                    self.say(&format!("<- $/cancel_request {}", params["requestId"]))
                }
                (other, _) => self.say(&format!("<- {other}")),
            }
            return Ok(());
        };
        match method.as_str() {
            METHOD => self.on_question(id, params).await,
            methods::SESSION_REQUEST_PERMISSION => self.on_permission(id, params).await,
            other => {
                self.say(&format!("<- {other}: not supported by the demo (-32601)"));
                let error =
                    json!({"code": -32601, "message": format!("Method not found: {other}")});
                self.send(&json!({"jsonrpc": "2.0", "id": id, "error": error}))
                    .await
            }
        }
    }
}
