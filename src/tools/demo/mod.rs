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

mod typing;
use typing::{parse_answer, typed, Answer, REJECT};

use acp_question_bridge::methods;
use acp_question_bridge::questions::answer::check_answers;
use acp_question_bridge::questions::model::{parse_request, Item, Question};
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

    /// A permission prompt (a tool approval, or a question the bridge asks one option at a
    /// time): its title, content and options, and the user's choice, like any question.
    async fn on_permission(&mut self, id: Value, params: &Value) -> Res<()> {
        let title = params["toolCall"]["title"].as_str().unwrap_or("(untitled)");
        self.say(&format!("<- session/request_permission: {title}"));
        if let Some(command) = params["toolCall"]["rawInput"]["command"].as_str() {
            self.say(&format!("   command: {command}"));
        }
        let (options, reject) = typing::permission_options(&params["options"]);
        let say_no = |demo: &mut Self| {
            let outcome = match &reject {
                Some(r) => json!({"outcome": "selected", "optionId": r}),
                None => json!({"outcome": "cancelled"}),
            };
            demo.say(&format!("-> {}", outcome));
            outcome
        };
        let item = Item {
            prompt: title.to_owned(),
            options,
            ..Item::default()
        };
        if item.options.is_empty() || self.reject {
            let outcome = say_no(self);
            return self.respond(&id, json!({ "outcome": outcome })).await;
        }
        let q = Question {
            session_id: String::new(),
            question_id: String::new(),
            items: vec![item],
            timeout_ms: None,
        };
        self.render_item(&q, 0);
        let item = &q.items[0];
        let outcome = loop {
            let text = match self.next_answer(&id, item).await? {
                Answer::Text(text) => text,
                Answer::Reject(_) => break say_no(self),
                Answer::Withdrawn => return Ok(()),
            };
            match parse_answer(item, &text) {
                Ok(values) => {
                    let oid = values.into_iter().next().unwrap_or_default();
                    self.say(&format!("-> selected: {oid}"));
                    break json!({"outcome": "selected", "optionId": oid});
                }
                Err(e) if self.answers.is_some() => {
                    return bad_answer(format!("--answer for {title:?}: {e}"));
                }
                Err(e) => self.say(&format!("   {e}; try again")),
            }
        };
        self.respond(&id, json!({ "outcome": outcome })).await
    }

    async fn on_question(&mut self, id: Value, params: &Value) -> Res<()> {
        let qid = params["questionId"].as_str().unwrap_or("?");
        self.say(&format!("<- {METHOD} {qid}"));
        if let Some(at) = params.get("expiresAt") {
            self.say(&format!(
                "   expires at {}",
                at.as_str().unwrap_or(&at.to_string())
            ));
        }
        let raw = serde_json::value::to_raw_value(params).ok();
        let q = match parse_request(raw.as_deref()) {
            Ok(q) => q,
            Err(e) => {
                self.say(&format!("   invalid question ({e}): rejecting"));
                return self.resolve(&id, None, "unsupported").await;
            }
        };
        if self.reject {
            (0..q.items.len()).for_each(|i| self.render_item(&q, i));
            self.say("   answer: rejected (--reject)");
            return self.resolve(&id, None, "declined").await;
        }
        let mut answers = Vec::new();
        for (i, item) in q.items.iter().enumerate() {
            self.render_item(&q, i);
            loop {
                let text = match self.next_answer(&id, item).await? {
                    Answer::Text(text) => text,
                    Answer::Reject(reason) => return self.resolve(&id, None, reason).await,
                    Answer::Withdrawn => return Ok(()),
                };
                match parse_answer(item, &text) {
                    Ok(values) => {
                        answers.push(values);
                        break;
                    }
                    Err(e) if self.answers.is_some() => {
                        return bad_answer(format!("--answer for {:?}: {e}", item.prompt));
                    }
                    Err(e) => self.say(&format!("   {e}; try again")),
                }
            }
        }
        let checked = check_answers(&q, &json!(answers))
            .or_else(|e| fail(format!("the demo built an invalid answer: {e}")))?;
        self.resolve(&id, Some(checked), "").await
    }

    /// Answers (`Some`) or rejects with `reason` (`None`) the question `id`.
    async fn resolve(&mut self, id: &Value, answers: Option<Answers>, reason: &str) -> Res<()> {
        let result = match answers {
            Some(answers) => {
                self.say(&format!("-> answered: {}", json!(answers)));
                json!({"status": "answered", "answers": answers})
            }
            None => {
                self.say(&format!("-> rejected: {reason}"));
                json!({"status": "rejected", "reason": reason})
            }
        };
        self.respond(id, result).await
    }

    /// The answer to one item: the next --answer, or a line on stdin (while watching
    /// the bridge for a withdrawal of question `id`).
    async fn next_answer(&mut self, id: &Value, item: &Item) -> Res<Answer> {
        if let Some(queue) = self.answers.as_mut() {
            let Some(text) = queue.pop_front() else {
                let n = item.prompt.as_str();
                return bad_answer(format!("no --answer left for {n:?}: give one per item"));
            };
            self.say(&format!("   answer: {text} (from --answer)"));
            return Ok(Answer::Text(text));
        }
        if self.user_eof {
            self.say("   (end of input: rejecting)");
            return Ok(Answer::Reject("declined"));
        }
        if self.user.is_none() {
            let (tx, rx) = mpsc::channel(16);
            std::thread::spawn(move || {
                for line in std::io::stdin().lines().map_while(Result::ok) {
                    if tx.blocking_send(line).is_err() {
                        break;
                    }
                }
            });
            self.user = Some(rx);
        }
        if self.interactive {
            let hint = typing::hint(item);
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "   answer [{hint}; empty or {REJECT} rejects]> ");
            let _ = out.flush();
        }
        let wait = if self.interactive {
            TERMINAL_WAIT
        } else {
            BRIDGE_WAIT
        };
        let deadline = tokio::time::Instant::now() + wait;
        let nl = if self.interactive { "\n" } else { "" };
        let line = loop {
            let Some(user) = self.user.as_mut() else {
                return fail("no stdin reader");
            };
            let got = tokio::select! {
                line = user.recv() => Ok(line),
                line = self.lines.next_line() => Err(Some(line)),
                _ = tokio::time::sleep_until(deadline) => Err(None),
            };
            match got {
                Ok(line) => break line,
                Err(Some(line)) => {
                    let msg = self.received(line, "an answer")?;
                    if msg["method"] == methods::CANCEL_REQUEST && msg["params"]["requestId"] == *id
                    {
                        self.say(&format!(
                            "{nl}<- $/cancel_request {id}: the question was withdrawn"
                        ));
                        return Ok(Answer::Withdrawn);
                    }
                    self.backlog.push_back(msg);
                }
                Err(None) => {
                    self.say(&format!("{nl}   no answer within {wait:?}: rejecting"));
                    return Ok(Answer::Reject("timeout"));
                }
            }
        };
        let Some(line) = line else {
            self.user_eof = true;
            self.say(&format!("{nl}   (end of input: rejecting)"));
            return Ok(Answer::Reject("declined"));
        };
        let text = line.trim();
        if !self.interactive {
            self.say(&format!("   answer: {text} (from stdin)"));
        }
        Ok(typed(text))
    }
    fn render_item(&mut self, q: &Question, i: usize) {
        for line in typing::render(q, i) {
            self.say(&line);
        }
    }
}
