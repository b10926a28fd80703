//! The soak driver behind `bench/soak.sh`: mixed traffic with questions, answers, cancels
//! and agent restarts against the release binaries, for `SOAK_SECS` seconds (default 600).
//!
//! Two drivers run side by side:
//! - a **long-lived** bridge around `acp-mock-agent` with eight sessions, each running one
//!   turn after another, the script word drawn at random: echo, `flood`, `question`,
//!   `questions`, `question-timeout` (the deadline passes), `question-cancel` (the agent
//!   withdraws it), `permission`, `elicit`, `slow` + `session/cancel`. The client answers
//!   what it is shown (valid answers, declines, invalid answers, late and duplicate answers)
//!   or cancels the session. Its RSS is sampled after a warm-up and at the end.
//! - a **churn** driver that starts a fresh bridge + mock pair again and again (an agent
//!   restart), asks one question, and ends the pair by client EOF, an agent crash or SIGTERM,
//!   checking the exit code and that the pending prompt got its one response.
//!
//! Accounting: every prompt gets exactly one response; every question turn reports exactly
//! one outcome (`answered:`, `rejected:` or `error:` from the mock, which shows what reached
//! the agent); nothing else is owed. `lost` counts what never came, `duplicates` what came
//! twice. Exits non-zero when either is not zero, when a restart misbehaves, or when the
//! long-lived bridge's RSS grew by more than 10%.
//!
//! No Python or Node anywhere in the path: `cargo build --release --bins --example soak`.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // denied in src/router/ only (clippy.toml)

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const QUESTION: &str = "_sandboxagent/session/request_question";
const SESSIONS: usize = 8;

fn bin(env: &str, name: &str) -> String {
    std::env::var(env).unwrap_or_else(|_| {
        let exe = std::env::current_exe().expect("current exe");
        let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
        dir.join(name).to_string_lossy().into_owned()
    })
}

fn say(what: &str) {
    let _ = writeln!(std::io::stderr(), "soak: {what}");
}

/// xorshift64*: the same run every time for the same seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A bridge around the mock agent, driven over its stdio.
struct Pair {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    sent: u64,
    received: u64,
}

impl Pair {
    fn start(extra: &[&str]) -> Pair {
        let mut child = Command::new(bin("BRIDGE_BIN", "acp-question-bridge"))
            .args(["--log-level", "error"])
            .args(extra)
            .arg("--")
            .arg(bin("MOCK_BIN", "acp-mock-agent"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the bridge");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) => {
                        if tx.send(v).is_err() {
                            break;
                        }
                    }
                    Err(e) => say(&format!(
                        "bridge wrote a line that is not JSON ({e}): {line}"
                    )),
                }
            }
        });
        Pair {
            stdin: child.stdin.take(),
            child,
            rx,
            sent: 0,
            received: 0,
        }
    }

    fn send(&mut self, v: &Value) {
        if let Some(stdin) = self.stdin.as_mut() {
            let mut line = v.to_string();
            line.push('\n');
            if stdin.write_all(line.as_bytes()).is_ok() {
                self.sent += 1;
            }
        }
    }

    fn recv(&mut self, wait: Duration) -> Option<Value> {
        match self.rx.recv_timeout(wait) {
            Ok(v) => {
                self.received += 1;
                Some(v)
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Sends a request and waits for its response (other messages are dropped).
    fn call(&mut self, id: u64, method: &str, params: Value) -> Option<Value> {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let m = self.recv(Duration::from_secs(10))?;
            if m["id"] == json!(id) && m.get("method").is_none() {
                return Some(m);
            }
        }
        None
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes stdin and waits (bounded) for the exit code.
    fn finish(&mut self, close: bool, limit: Duration) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        if close {
            self.stdin.take();
        }
        let end = Instant::now() + limit;
        loop {
            // Keep draining stdout so the bridge can exit.
            while self.rx.try_recv().is_ok() {
                self.received += 1;
            }
            match self.child.try_wait() {
                Ok(Some(st)) => {
                    return Some(st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)))
                }
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return None;
                }
            }
        }
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

const NATIVE_AND_FORMS: &str = r#"{"elicitation":{"form":{}},"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}"#;

/// A valid answer to a request the client is shown.
fn valid_answer(m: &Value) -> Value {
    let p = &m["params"];
    match m["method"].as_str().unwrap_or_default() {
        QUESTION => {
            let items: Vec<Value> = match p.get("questions").and_then(Value::as_array) {
                Some(list) => list.clone(),
                None => vec![p.clone()],
            };
            let answers: Vec<Value> = items
                .iter()
                .map(|item| {
                    let first = item["options"].get(0).map(|o| match o {
                        Value::String(s) => s.clone(),
                        Value::Array(pair) => pair[0].as_str().unwrap_or_default().to_owned(),
                        o => o
                            .get("value")
                            .or_else(|| o.get("label"))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    });
                    json!([first.unwrap_or_else(|| "free text".to_owned())])
                })
                .collect();
            json!({"status":"answered","answers":answers})
        }
        "session/request_permission" => {
            json!({"outcome":{"outcome":"selected","optionId":p["options"][0]["optionId"]}})
        }
        "elicitation/create" => {
            let mut content = serde_json::Map::new();
            if let Some(props) = p["requestedSchema"]["properties"].as_object() {
                for (k, prop) in props {
                    let v = if let Some(e) = prop["enum"].get(0) {
                        e.clone()
                    } else if let Some(c) = prop["oneOf"].get(0).and_then(|o| o.get("const")) {
                        c.clone()
                    } else if prop["type"] == "boolean" {
                        json!(true)
                    } else {
                        json!("text")
                    };
                    content.insert(k.clone(), v);
                }
            }
            json!({"action":"accept","content":content})
        }
        _ => json!({}),
    }
}

#[derive(Default, Debug)]
struct Tally {
    prompts: u64,
    responses: u64,
    question_turns: u64,
    resolved: u64,
    answered: u64,
    rejected: u64,
    errors: u64,
    shown: u64,
    lost: u64,
    duplicates: u64,
    late_answers: u64,
    cancels: u64,
}

struct Turn {
    id: u64,
    question: bool,
    reports: u64,
    started: Instant,
}

/// The long-lived pair: sessions run turn after turn until `stop`.
/// What the long-lived driver reports: the tally, RSS samples `(seconds, KiB)`, and the
/// number of messages through the client side.
type LongLived = (Tally, Vec<(u64, u64)>, u64);

fn long_lived(secs: u64, stop: Arc<AtomicBool>) -> Result<LongLived, String> {
    let mut p = Pair::start(&["--question-timeout", "30s"]);
    let pid = p.pid();
    let mut rng = Rng(0x5eed_cafe_f00d_d00d);
    let init = p
        .call(0, "initialize", json!({"protocolVersion":1,"clientCapabilities":serde_json::from_str::<Value>(NATIVE_AND_FORMS).unwrap()}))
        .ok_or("initialize failed")?;
    if init.get("result").is_none() {
        return Err(format!("initialize: {init}"));
    }
    let mut sessions = Vec::new();
    for i in 0..SESSIONS as u64 {
        let r = p
            .call(1 + i, "session/new", json!({"cwd":"/tmp","mcpServers":[]}))
            .ok_or("session/new failed")?;
        sessions.push(
            r["result"]["sessionId"]
                .as_str()
                .ok_or("no sessionId")?
                .to_owned(),
        );
    }
    let mut next_id = 100u64;
    let mut turns: HashMap<String, Turn> = HashMap::new();
    let mut by_id: HashMap<u64, String> = HashMap::new();
    let mut answered_ids: Vec<Value> = Vec::new();
    let mut t = Tally::default();
    let started = Instant::now();
    // RSS samples every 1/20 of the run. Growth is measured over the second half: the
    // bridge's bounded memories (4096 recently finished ids per direction, 4096 resolved
    // questions) fill during the first minutes, a leak keeps growing after.
    let every = Duration::from_secs(secs / 20).max(Duration::from_secs(1));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut samples = vec![(0, rss_kib(pid))];
            while sampling.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if start.elapsed() >= every * samples.len() as u32 {
                    samples.push((start.elapsed().as_secs(), rss_kib(pid)));
                }
            }
            samples
        })
    };
    let end = started + Duration::from_secs(secs);
    loop {
        let now = Instant::now();
        let stopping = now >= end || stop.load(Ordering::Relaxed);
        // Start a turn in every idle session.
        if !stopping {
            for sid in &sessions {
                if turns.contains_key(sid) {
                    continue;
                }
                let (text, question) = match rng.below(12) {
                    0 => ("hello from the soak test".to_owned(), false),
                    1 => (format!("flood {} 300", 50 + rng.below(200)), false),
                    2 | 3 => ("question".to_owned(), true),
                    4 => ("questions".to_owned(), true),
                    5 => (format!("question-timeout {}", 20 + rng.below(80)), true),
                    6 => (format!("question-cancel {}", 5 + rng.below(40)), true),
                    7 => ("permission".to_owned(), false),
                    8 => ("elicit".to_owned(), false),
                    9 => (format!("slow {}", 10 + rng.below(50)), false),
                    10 => ("question".to_owned(), true),
                    _ => ("garbage in the pipe".to_owned(), false),
                };
                next_id += 1;
                p.send(
                    &json!({"jsonrpc":"2.0","id":next_id,"method":"session/prompt",
                    "params":{"sessionId":sid,"prompt":[{"type":"text","text":text}]}}),
                );
                t.prompts += 1;
                t.question_turns += u64::from(question);
                by_id.insert(next_id, sid.clone());
                turns.insert(
                    sid.clone(),
                    Turn {
                        id: next_id,
                        question,
                        reports: 0,
                        started: now,
                    },
                );
                // Sometimes cancel a slow turn right away.
                if text.starts_with("slow") && rng.below(2) == 0 {
                    p.send(&json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":sid}}));
                    t.cancels += 1;
                }
            }
        }
        if stopping && turns.is_empty() {
            break;
        }
        let Some(m) = p.recv(Duration::from_secs(5)) else {
            if turns
                .values()
                .any(|turn| turn.started.elapsed() > Duration::from_secs(60))
            {
                let stuck: Vec<u64> = turns.values().map(|turn| turn.id).collect();
                return Err(format!(
                    "no progress: prompts {stuck:?} never answered (lost)"
                ));
            }
            continue;
        };
        if let (Some(id), Some(method)) = (m.get("id"), m["method"].as_str()) {
            // A request the client is shown.
            if method == QUESTION
                || method == "elicitation/create"
                || method == "session/request_permission"
            {
                t.shown += 1;
                let sid = m["params"]["sessionId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let reply = match rng.below(20) {
                    0 | 1 => {
                        // Cancel the session instead of answering.
                        p.send(&json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":sid}}));
                        t.cancels += 1;
                        None
                    }
                    2 => Some(
                        json!({"jsonrpc":"2.0","id":id,"result":{"status":"rejected","reason":"declined","action":"decline","outcome":{"outcome":"cancelled"}}}),
                    ),
                    3 => Some(
                        json!({"jsonrpc":"2.0","id":id,"result":{"status":"answered","answers":"not a list"}}),
                    ),
                    // A question left unanswered: its deadline or the agent's cancel ends it.
                    4 if method == QUESTION => None,
                    _ => Some(json!({"jsonrpc":"2.0","id":id,"result":valid_answer(&m)})),
                };
                if let Some(r) = reply {
                    p.send(&r);
                    answered_ids.push(id.clone());
                    if answered_ids.len() > 64 {
                        answered_ids.remove(0);
                    }
                }
                // Now and then a late or duplicate answer to something already answered.
                if rng.below(10) == 0 && !answered_ids.is_empty() {
                    let old = answered_ids[rng.below(answered_ids.len() as u64) as usize].clone();
                    p.send(&json!({"jsonrpc":"2.0","id":old,"result":{"status":"rejected"}}));
                    t.late_answers += 1;
                }
            } else {
                // Another agent request (none expected from the mock): answer it.
                p.send(&json!({"jsonrpc":"2.0","id":id,"result":{}}));
            }
            continue;
        }
        if m["method"] == "session/update" {
            if let Some(text) = m["params"]["update"]["content"]["text"].as_str() {
                let sid = m["params"]["sessionId"].as_str().unwrap_or_default();
                let kind = ["answered: ", "rejected: ", "error: "]
                    .iter()
                    .position(|p| text.starts_with(p));
                if let (Some(kind), Some(turn)) = (kind, turns.get_mut(sid)) {
                    if turn.question {
                        turn.reports += 1;
                        match kind {
                            0 => t.answered += 1,
                            1 => t.rejected += 1,
                            _ => t.errors += 1,
                        }
                    }
                }
            }
            continue;
        }
        if m["method"] == "$/cancel_request" || m.get("method").is_some() {
            continue;
        }
        // A response: one of our prompts (the others were answered by `call`).
        let Some(id) = m["id"].as_u64() else {
            return Err(format!("a response the client cannot place: {m}"));
        };
        match by_id.remove(&id) {
            Some(sid) => {
                t.responses += 1;
                let turn = turns.remove(&sid).ok_or("a response without its turn")?;
                if m.get("result").is_none() {
                    return Err(format!("prompt {id} failed: {m}"));
                }
                if turn.question {
                    match turn.reports {
                        0 => t.lost += 1,
                        1 => t.resolved += 1,
                        n => t.duplicates += n - 1,
                    }
                }
            }
            None => t.duplicates += 1,
        }
    }
    sampling.store(false, Ordering::Relaxed);
    let mut samples = sampler.join().unwrap_or_default();
    samples.push((started.elapsed().as_secs(), rss_kib(pid)));
    let sent = p.sent;
    let code = p.finish(true, Duration::from_secs(10));
    if code != Some(0) {
        return Err(format!("long-lived bridge exited with {code:?}"));
    }
    Ok((t, samples, sent + p.received))
}

#[derive(Default, Debug)]
struct Churn {
    restarts: u64,
    eof: u64,
    crash: u64,
    signal: u64,
    failures: Vec<String>,
    questions: u64,
}

/// Starts pair after pair until `stop`: one question each, then an ending.
fn churn(stop: Arc<AtomicBool>) -> Churn {
    let mut c = Churn::default();
    let mut rng = Rng(0xdead_beef_1234_5678);
    while !stop.load(Ordering::Relaxed) {
        c.restarts += 1;
        let mut p = Pair::start(&["--shutdown-grace", "500ms"]);
        let caps: Value = serde_json::from_str(NATIVE_AND_FORMS).unwrap();
        let ok = p
            .call(
                0,
                "initialize",
                json!({"protocolVersion":1,"clientCapabilities":caps}),
            )
            .is_some();
        let sid = p
            .call(1, "session/new", json!({"cwd":"/tmp","mcpServers":[]}))
            .and_then(|r| r["result"]["sessionId"].as_str().map(str::to_owned));
        let (true, Some(sid)) = (ok, sid) else {
            c.failures.push("a restarted pair did not start".into());
            p.finish(true, Duration::from_secs(5));
            continue;
        };
        p.send(&json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":sid,"prompt":[{"type":"text","text":"question"}]}}));
        let mut got = None;
        while got.is_none() {
            match p.recv(Duration::from_secs(10)) {
                Some(m) if m["method"] == QUESTION => {
                    p.send(&json!({"jsonrpc":"2.0","id":m["id"],"result":valid_answer(&m)}));
                }
                Some(m) if m["id"] == json!(2) && m.get("method").is_none() => got = Some(m),
                Some(_) => {}
                None => break,
            }
        }
        if got.is_some_and(|m| m["result"]["stopReason"] == "end_turn") {
            c.questions += 1;
        } else {
            c.failures.push("the question turn did not end".into());
        }
        // End it one of three ways, with a turn in flight for the last two.
        let (code, want) = match rng.below(3) {
            0 => {
                c.eof += 1;
                (p.finish(true, Duration::from_secs(5)), 0)
            }
            1 => {
                c.crash += 1;
                p.send(&json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":sid,"prompt":[{"type":"text","text":"crash 3"}]}}));
                let mut answered = false;
                while let Some(m) = p.recv(Duration::from_secs(5)) {
                    if m["id"] == json!(3) && m["error"]["code"] == -32603 {
                        answered = true;
                        break;
                    }
                }
                if !answered {
                    c.failures.push("the crashed turn got no -32603".into());
                }
                (p.finish(false, Duration::from_secs(5)), 3)
            }
            _ => {
                c.signal += 1;
                p.send(&json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":sid,"prompt":[{"type":"text","text":"slow 60000"}]}}));
                std::thread::sleep(Duration::from_millis(20));
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p.pid() as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
                let mut answered = false;
                while let Some(m) = p.recv(Duration::from_secs(5)) {
                    if m["id"] == json!(3) && m.get("method").is_none() {
                        answered = true;
                        break;
                    }
                }
                if !answered {
                    c.failures.push("the signalled turn got no response".into());
                }
                (p.finish(false, Duration::from_secs(5)), 143)
            }
        };
        if code != Some(want) {
            c.failures.push(format!("exit {code:?}, expected {want}"));
        }
    }
    c
}

fn main() -> std::process::ExitCode {
    let secs: u64 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    say(&format!(
        "{secs} s of mixed traffic; binaries {} and {}",
        bin("BRIDGE_BIN", "acp-question-bridge"),
        bin("MOCK_BIN", "acp-mock-agent")
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let churn_stop = stop.clone();
    let churner = std::thread::spawn(move || churn(churn_stop));
    let long = long_lived(secs, stop.clone());
    stop.store(true, Ordering::Relaxed);
    let c = churner.join().unwrap_or_default();
    let mut failed = !c.failures.is_empty();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "soak: {secs} s");
    match long {
        Ok((t, samples, messages)) => {
            let mid = samples
                .iter()
                .find(|(at, _)| *at >= secs / 2)
                .map_or(0, |s| s.1);
            let end = samples.last().map_or(0, |s| s.1);
            let growth = if mid > 0 {
                (end as f64 - mid as f64) * 100.0 / mid as f64
            } else {
                f64::NAN
            };
            let _ = writeln!(out, "long-lived bridge: {messages} messages through the client side ({} prompts, {} responses)", t.prompts, t.responses);
            let _ = writeln!(
                out,
                "  questions resolved: {} of {} question turns (answered {}, rejected {}, errors {}); {} requests shown; {} session cancels; {} late/duplicate answers sent",
                t.resolved, t.question_turns, t.answered, t.rejected, t.errors, t.shown, t.cancels, t.late_answers
            );
            let _ = writeln!(out, "  lost = {}, duplicates = {}", t.lost, t.duplicates);
            let timeline: Vec<String> = samples
                .iter()
                .map(|(at, kib)| format!("{at}s:{kib}"))
                .collect();
            let _ = writeln!(out, "  bridge RSS KiB over time: {}", timeline.join(" "));
            let _ = writeln!(
                out,
                "  bridge RSS: {mid} KiB at half time, {end} KiB at the end: growth {growth:+.1}% over the second half"
            );
            failed |= t.lost > 0
                || t.duplicates > 0
                || t.prompts != t.responses
                || growth.is_nan()
                || growth > 10.0;
        }
        Err(e) => {
            let _ = writeln!(out, "long-lived bridge FAILED: {e}");
            failed = true;
        }
    }
    let _ = writeln!(
        out,
        "restarts: {} pairs (client EOF {}, agent crash {}, SIGTERM {}), {} questions answered, {} failures",
        c.restarts, c.eof, c.crash, c.signal, c.questions, c.failures.len()
    );
    for f in c.failures.iter().take(10) {
        let _ = writeln!(out, "  failure: {f}");
    }
    let _ = writeln!(out, "{}", if failed { "SOAK FAILED" } else { "soak ok" });
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
