//! The load tool behind `bench/run.sh`: generates deterministic ACP traffic, plays the agent
//! and the client, and measures the bridge side by side with a `cat` relay.
//!
//! Roles (all over stdio, newline-delimited JSON-RPC):
//! - `emit <small|mixed> <BYTES>`: an agent that writes a pre-generated workload to stdout,
//!   then waits for stdin EOF;
//! - `echo`: an agent that answers every request with `{"ok":true}` under its id;
//! - `ask <QUESTIONS> <SESSIONS> [hold]`: an agent that asks questions as fast as it can and
//!   reports `_bench/done` with the elapsed time once all are answered;
//! - `ask-timed <QUESTIONS> <FILE>`: an agent that asks one question at a time, its send time
//!   (Unix ns) in the prompt as `bench-t=<ns>`, and writes `<i> <ns>` to FILE when the answer
//!   to question i reaches its stdin (for the inbox's latency, `examples/inbox_bench.rs`);
//! - `naive AGENT...`: the naive line proxy, for comparison: what a first version of the
//!   bridge would be (each line parsed into a `serde_json::Value`, written and flushed on
//!   its own, one thread per direction);
//! - `run [--quick] [--out FILE]`: the driver: runs every workload through the bridge and
//!   through `cat` (or directly, for latency) and prints the table;
//! - `counts [SMALL_MIB] [MIXED_MIB] [RUNS]`: the system calls by kind and the context
//!   switches of the bridge and of a `cat` relay, per MiB ([`counts`]);
//! - `pending [N] [SESSIONS]`: the memory the bridge holds per pending question beyond its
//!   payload, with N pending at once (the figure `run` reports).
//!
//! No Python or Node anywhere in the measuring path.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // denied in src/router/ only (clippy.toml)

#[path = "bench/counts.rs"]
mod counts;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The bridge binary: `$BRIDGE_BIN`, or the one built beside this example.
fn bridge() -> String {
    std::env::var("BRIDGE_BIN").unwrap_or_else(|_| {
        let exe = std::env::current_exe().expect("current exe");
        let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
        dir.join("acp-question-bridge")
            .to_string_lossy()
            .into_owned()
    })
}

/// A small deterministic PRNG (xorshift64*), so every run sends the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "the",
    "agent",
    "reads",
    "src/main.rs",
    "and",
    "finds",
    "a",
    "bug",
    "in",
    "parse()",
    "—",
    "fixing",
    "it",
    "now",
    "über",
    "naïve",
    "tests",
    "pass",
    "✓",
    "refactor",
];

fn text(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        s.push_str(WORDS[rng.range(0, WORDS.len() - 1)]);
        s.push(' ');
    }
    s
}

fn chunk_line(rng: &mut Rng, session: usize, size: usize) -> String {
    let head = format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s{session}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":""#
    );
    let body = text(rng, size.saturating_sub(head.len() + 6));
    format!("{head}{}\"}}}}}}}}\n", body.trim_end())
}

fn diff_line(rng: &mut Rng, size: usize) -> String {
    let mut diff = String::with_capacity(size);
    while diff.len() < size {
        diff.push_str("-    let x = old();\\n+    let x = new();\\n");
        diff.push_str(&text(rng, 40));
    }
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s0","update":{{"sessionUpdate":"tool_call_update","toolCallId":"t{}","status":"completed","content":[{{"type":"diff","path":"src/lib.rs","oldText":null,"newText":"{diff}"}}]}}}}}}"#,
        rng.next() % 1000
    ) + "\n"
}

fn image_line(rng: &mut Rng, size: usize) -> String {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let data: String = (0..size)
        .map(|_| B64[(rng.next() % 64) as usize] as char)
        .collect();
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s0","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"image","mimeType":"image/png","data":"{data}"}}}}}}}}"#
    ) + "\n"
}

/// The workload bytes: `small` (80-400 byte chunks) or `mixed` (90% chunks, 8% diffs of
/// 2-40 KiB, 2% images of 0.2-2 MiB), about `total` bytes, over `sessions` sessions. With
/// more than one session, each session first gets one question that stays pending, so the
/// bridge holds that much state while it relays.
fn workload(kind: &str, total: usize, sessions: usize) -> Vec<u8> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = question_prefix(sessions);
    let total = total + out.len();
    out.reserve(total + (2 << 20));
    let mut n = 0usize;
    while out.len() < total {
        let line = match (kind, rng.range(0, 99)) {
            ("mixed", 0..=1) => {
                let size = rng.range(200 << 10, 2 << 20);
                image_line(&mut rng, size)
            }
            ("mixed", 2..=9) => {
                let size = rng.range(2 << 10, 40 << 10);
                diff_line(&mut rng, size)
            }
            _ => {
                let size = rng.range(80, 400);
                chunk_line(&mut rng, n % sessions.max(1), size)
            }
        };
        out.extend_from_slice(line.as_bytes());
        n += 1;
    }
    out
}

/// One pending question per session (none for a single session): the state the bridge
/// holds while the rest of the workload streams.
fn question_prefix(sessions: usize) -> Vec<u8> {
    let mut out = Vec::new();
    if sessions > 1 {
        for s in 0..sessions {
            out.extend_from_slice(format!(
                r#"{{"jsonrpc":"2.0","id":{s},"method":"_sandboxagent/session/request_question","params":{{"sessionId":"s{s}","questionId":"q","prompt":"Keep going?","options":["yes","no"]}}}}"#
            ).as_bytes());
            out.push(b'\n');
        }
    }
    out
}

fn emit(kind: &str, total: usize, sessions: usize) {
    let data = workload(kind, total, sessions);
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&data);
    let _ = out.flush();
    drop(out);
    // Stay alive until the client side is done (stdin EOF), like a real agent.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

fn echo() {
    let stdin = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    for line in stdin.lines() {
        let Ok(line) = line else { break };
        let Some(start) = line.find("\"id\":") else {
            continue;
        };
        let rest = &line[start + 5..];
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        let _ = writeln!(
            out,
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"ok":true}}}}"#,
            &rest[..end]
        );
        let _ = out.flush();
    }
}

fn ask(questions: usize, sessions: usize, hold: bool) {
    // Answers are read on their own thread, as a real agent does: an agent that writes
    // without reading would deadlock against any peer, bridge or not.
    let (tx, rx) = std::sync::mpsc::channel();
    // Like a real agent, ask only after the client's initialize.
    let mut first = String::new();
    let _ = std::io::stdin().read_line(&mut first);
    std::thread::spawn(move || {
        let mut answered = 0;
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line.contains("\"answered\"") {
                answered += 1;
                if answered == questions {
                    let _ = tx.send(Instant::now());
                }
            }
        }
    });
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let start = Instant::now();
    for i in 0..questions {
        let _ = writeln!(
            out,
            r#"{{"jsonrpc":"2.0","id":{i},"method":"_sandboxagent/session/request_question","params":{{"sessionId":"s{}","questionId":"q{i}","prompt":"Which option should the agent use for step {i}?","options":[["option-a","Option A"],["option-b","Option B"]]}}}}"#,
            i % sessions
        );
    }
    let _ = out.flush();
    let end = rx.recv().unwrap_or_else(|_| Instant::now());
    let _ = writeln!(
        out,
        r#"{{"jsonrpc":"2.0","method":"_bench/done","params":{{"answered":{questions},"elapsed_us":{}}}}}"#,
        end.duration_since(start).as_micros()
    );
    let _ = out.flush();
    if hold {
        // Stay until the client goes away.
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

/// Nanoseconds since the Unix epoch: one clock for several processes.
fn unix_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn ask_timed(questions: usize, file: &str) {
    let mut log = std::io::BufWriter::new(std::fs::File::create(file).expect("the times file"));
    let mut lines = std::io::stdin().lock().lines();
    // Ask only after the client's initialize.
    let _ = lines.next();
    let mut out = std::io::stdout().lock();
    for i in 0..questions {
        let _ = writeln!(
            out,
            r#"{{"jsonrpc":"2.0","id":{i},"method":"_sandboxagent/session/request_question","params":{{"sessionId":"s1","questionId":"q{i}","prompt":"bench-t={} Which option?","options":[["option-a","Option A"],["option-b","Option B"]]}}}}"#,
            unix_ns()
        );
        let _ = out.flush();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.contains("\"result\"") || line.contains("\"error\"") => {
                    let _ = writeln!(log, "{i} {}", unix_ns());
                    break;
                }
                Some(Ok(_)) => {}
                _ => return,
            }
        }
    }
    let _ = log.flush();
    // Stay until the client goes away.
    for _ in lines {}
}

/// Relays `input` to `output` line by line, dropping lines that are not JSON.
fn naive_pump(input: impl Read, mut output: impl Write) {
    for line in BufReader::new(input).lines() {
        let Ok(line) = line else { break };
        if serde_json::from_str::<serde_json::Value>(&line).is_err() {
            continue;
        }
        if writeln!(output, "{line}")
            .and_then(|()| output.flush())
            .is_err()
        {
            break;
        }
    }
}

fn naive(agent: &[String]) {
    let mut child = Command::new(&agent[0])
        .args(&agent[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("agent");
    let to_agent = child.stdin.take().expect("stdin");
    let from_agent = child.stdout.take().expect("stdout");
    std::thread::spawn(move || naive_pump(std::io::stdin(), to_agent));
    naive_pump(from_agent, std::io::stdout());
    let _ = child.wait();
}

/// Peak and current resident memory of `pid` in KiB.
fn rss(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

fn me() -> String {
    std::env::current_exe()
        .expect("current exe")
        .to_string_lossy()
        .into_owned()
}

/// Reads `expect` bytes from `r`; returns the time from the first byte after `skip` bytes
/// (the set-up part of a workload) to the last.
fn sink(mut r: impl Read, expect: usize, skip: usize) -> Duration {
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0;
    let mut first = None;
    while got < expect {
        let n = r.read(&mut buf).expect("read");
        assert!(n > 0, "stream ended after {got} of {expect} bytes");
        got += n;
        if got > skip {
            first.get_or_insert_with(Instant::now);
        }
    }
    first.map_or(Duration::ZERO, |f| f.elapsed())
}

/// What sits between the emitter and the sink.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    Bridge,
    Cat,
    Naive,
}

/// More bridge options for the relay (`$BENCH_BRIDGE_ARGS`, split at spaces): to measure the
/// relay with `--control 127.0.0.1:0` or `--nats` on. Without any, `--no-control`.
fn extra_bridge_args() -> Vec<String> {
    std::env::var("BENCH_BRIDGE_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// The bridge's options for the relay: [`extra_bridge_args`], or `--no-control` (the relay
/// alone, as the guards were set: the control server's own cost is measured by
/// bench/defaults.sh, and with BENCH_BRIDGE_ARGS=--control=...).
fn bridge_args() -> Vec<String> {
    let mut extra = extra_bridge_args();
    if extra.is_empty() {
        extra.push("--no-control".into());
    }
    extra
}

/// One throughput run: the emitter behind the bridge, `cat` or the naive proxy. Returns the
/// time and the middle process's peak RSS in KiB.
fn relay(kind: &str, bytes: usize, sessions: usize, via: Via) -> (Duration, u64) {
    let expect = workload(kind, bytes, sessions).len();
    // With several sessions the workload opens with one pending question per session.
    let skip = question_prefix(sessions).len();
    let emitter = [
        me(),
        "emit".into(),
        kind.into(),
        bytes.to_string(),
        sessions.to_string(),
    ];
    let (mut mid, mut emit_child): (Child, Option<Child>) = if via == Via::Naive {
        let child = Command::new(me())
            .arg("naive")
            .args(&emitter)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("naive");
        (child, None)
    } else if via == Via::Bridge {
        let extra = bridge_args();
        let quiet = extra
            .iter()
            .any(|a| a.starts_with("--control") || a == "--nats");
        let child = Command::new(bridge())
            .args(["--log-level", "error", "--client-dialect", "extension"])
            .args(&extra)
            .arg("--")
            .args(&emitter)
            // With the control server the bridge prints its page URL; keep the table clean.
            .stderr(if quiet {
                Stdio::null()
            } else {
                Stdio::inherit()
            })
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("bridge");
        (child, None)
    } else {
        let mut e = Command::new(&emitter[0])
            .args(&emitter[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("emitter");
        let cat = Command::new("cat")
            .stdin(Stdio::from(e.stdout.take().expect("stdout")))
            .stdout(Stdio::piped())
            .spawn()
            .expect("cat");
        (cat, Some(e))
    };
    let t = sink(mid.stdout.take().expect("stdout"), expect, skip);
    let (peak, _) = rss(mid.id());
    drop(mid.stdin.take());
    if let Some(e) = emit_child.as_mut() {
        drop(e.stdin.take());
        let _ = e.wait();
    }
    let _ = mid.wait();
    (t, peak)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Request/response round trips to the echo agent, through the bridge or directly.
fn latency(n: usize, through_bridge: bool) -> Vec<Duration> {
    let mut child = if through_bridge {
        Command::new(bridge())
            .args(["--log-level", "error", "--no-control", "--", &me(), "echo"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("bridge")
    } else {
        Command::new(me())
            .arg("echo")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("echo")
    };
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let mut times = Vec::with_capacity(n);
    let mut line = String::new();
    for i in 0..n + 1000 {
        let req = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"session/prompt","params":{{"sessionId":"s1","prompt":[{{"type":"text","text":"ping"}}]}}}}"#
        ) + "\n";
        let t = Instant::now();
        input.write_all(req.as_bytes()).expect("write");
        input.flush().expect("flush");
        line.clear();
        output.read_line(&mut line).expect("read");
        // The first 1000 round trips warm up.
        if i >= 1000 {
            times.push(t.elapsed());
        }
    }
    drop(input);
    let _ = child.wait();
    times.sort();
    times
}

/// Questions answered as fast as a client can; returns (questions/s, bytes per pending
/// question beyond the baseline, or 0 when not held).
fn questions(n: usize, sessions: usize, hold: bool) -> (f64, f64) {
    let mut args = vec![
        "--log-level".to_owned(),
        "error".to_owned(),
        "--shutdown-grace".to_owned(),
        "100ms".to_owned(),
        "--max-pending-per-session".to_owned(),
        "1000".to_owned(),
        "--client-dialect".to_owned(),
        "extension".to_owned(),
        // The figures were set without the control server (on by default since issue 25),
        // like the relay's.
        "--no-control".to_owned(),
        "--".to_owned(),
        me(),
        "ask".to_owned(),
        n.to_string(),
        sessions.to_string(),
    ];
    if hold {
        args.push("hold".into());
    }
    let mut child = Command::new(bridge())
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("bridge");
    let pid = child.id();
    let mut input = std::io::BufWriter::new(child.stdin.take().expect("stdin"));
    let mut output = BufReader::with_capacity(1 << 16, child.stdout.take().expect("stdout"));
    let native = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}}"#;
    // Settle and take the baseline before the initialize: the agent starts its clock (and
    // its questions) as soon as it reads it, so a pause after it would be timed too.
    std::thread::sleep(Duration::from_millis(200));
    let base = rss(pid).1;
    writeln!(input, "{native}").expect("write");
    input.flush().expect("flush");
    // The ask agent does not answer initialize; the bridge has recorded the capability.
    let mut ids = Vec::with_capacity(n);
    let mut line = String::new();
    let mut per_pending = 0.0;
    while ids.len() < n {
        line.clear();
        if output.read_line(&mut line).expect("read") == 0 {
            break;
        }
        if let Some(start) = line.find("\"id\":") {
            let rest = &line[start + 5..];
            let end = rest.find(',').unwrap_or(rest.len());
            ids.push(rest[..end].to_owned());
            if !hold {
                writeln!(
                    input,
                    r#"{{"jsonrpc":"2.0","id":{},"result":{{"status":"answered","answers":[["option-a"]]}}}}"#,
                    &rest[..end]
                )
                .expect("write");
                // Flush when no further question is already waiting to be read.
                if output.buffer().is_empty() {
                    input.flush().expect("flush");
                }
            }
        }
    }
    if hold {
        // All pending at once: measure, then answer them.
        std::thread::sleep(Duration::from_millis(200));
        let payload = 230.0; // bytes of one question's params, as the agent sends them
        per_pending = (rss(pid).1.saturating_sub(base) as f64 * 1024.0) / n as f64 - payload;
        for id in &ids {
            writeln!(
                input,
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"status":"answered","answers":[["option-a"]]}}}}"#
            )
            .expect("write");
        }
        input.flush().expect("flush");
    }
    let mut rate = 0.0;
    loop {
        line.clear();
        if output.read_line(&mut line).expect("read") == 0 {
            break;
        }
        if line.contains("_bench/done") {
            let us: f64 = line
                .split("\"elapsed_us\":")
                .nth(1)
                .and_then(|s| s.trim_end_matches(['}', '\n']).parse().ok())
                .unwrap_or(f64::NAN);
            rate = n as f64 / (us / 1e6);
            break;
        }
    }
    drop(input);
    let _ = child.wait();
    (rate, per_pending)
}

fn best_of(runs: usize, mut f: impl FnMut() -> (Duration, u64)) -> (Duration, u64) {
    let mut best = (Duration::MAX, 0);
    for _ in 0..runs {
        let (t, peak) = f();
        best.0 = best.0.min(t);
        best.1 = best.1.max(peak);
    }
    best
}

fn run(quick: bool, out_file: Option<String>) {
    let mib = 1usize << 20;
    let (small, mixed, rounds, runs) = if quick {
        (16 * mib, 64 * mib, 20_000, 1)
    } else {
        (64 * mib, 256 * mib, 20_000, 3)
    };
    let mut rows: Vec<[String; 4]> = Vec::new();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    let progress = |what: &str| {
        let _ = writeln!(std::io::stderr(), "bench: {what}");
    };

    progress("small");
    let (b, _) = best_of(runs, || relay("small", small, 1, Via::Bridge));
    let (c, _) = best_of(runs, || relay("small", small, 1, Via::Cat));
    rows.push([
        format!("small: {} MiB of 80-400 B chunks, wall time", small / mib),
        ms(b),
        ms(c),
        format!("{:.2}", b.as_secs_f64() / c.as_secs_f64()),
    ]);
    // The naive proxy once, for scale (it is slow, and only a reference).
    let (n, _) = relay("small", small, 1, Via::Naive);
    rows.push([
        "small: the naive line proxy instead of the bridge (`bench naive`)".into(),
        ms(n),
        ms(c),
        format!("{:.2}", n.as_secs_f64() / c.as_secs_f64()),
    ]);
    progress("mixed");
    let (b, peak) = best_of(runs, || relay("mixed", mixed, 1, Via::Bridge));
    let (c, _) = best_of(runs, || relay("mixed", mixed, 1, Via::Cat));
    rows.push([
        format!(
            "mixed: {} MiB (chunks, diffs, 2 MiB images), wall time",
            mixed / mib
        ),
        ms(b),
        ms(c),
        format!("{:.2}", b.as_secs_f64() / c.as_secs_f64()),
    ]);
    rows.push([
        "mixed: peak RSS of the bridge".into(),
        format!("{:.1} MiB", peak as f64 / 1024.0),
        "-".into(),
        "-".into(),
    ]);
    progress("latency");
    let through = latency(rounds, true);
    let direct = latency(rounds, false);
    for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (b, d) = (percentile(&through, p), percentile(&direct, p));
        rows.push([
            format!("latency {name}, {rounds} round trips (direct = no bridge)"),
            format!("{:.1} us", b.as_secs_f64() * 1e6),
            format!("{:.1} us", d.as_secs_f64() * 1e6),
            format!("+{:.1} us", (b.as_secs_f64() - d.as_secs_f64()) * 1e6),
        ]);
    }
    progress("questions");
    let (rate, _) = questions(10_000, 1_000, false);
    rows.push([
        "questions: 10,000 over 1,000 sessions, round trips/s".into(),
        format!("{rate:.0}/s"),
        "-".into(),
        "-".into(),
    ]);
    let (_, per) = questions(10_000, 1_000, true);
    rows.push([
        "questions: memory per pending question beyond its payload (10,000 pending)".into(),
        format!("{per:.0} B"),
        "-".into(),
        "-".into(),
    ]);
    progress("sessions");
    // Cost per message as the number of sessions with pending state grows: the small
    // workload over 1, 100 and 10,000 sessions, taken in turn in every round (a slow spell
    // of the machine then falls on all three, not on one), best of each over twice the runs
    // of the other figures (a 10% target needs the steadier figure).
    let counts = [1, 100, 10_000];
    let mut best = [Duration::MAX; 3];
    for _ in 0..runs * 2 {
        for (b, &sessions) in best.iter_mut().zip(&counts) {
            let (t, _) = relay("small", small, sessions, Via::Bridge);
            *b = (*b).min(t);
        }
    }
    for (&t, sessions) in best.iter().zip(counts).skip(1) {
        rows.push([
            format!("small over {sessions} sessions vs 1 session"),
            ms(t),
            ms(best[0]),
            format!("{:.2}", t.as_secs_f64() / best[0].as_secs_f64()),
        ]);
    }

    let mut table = String::from(
        "| figure | bridge | cat relay / direct / baseline | ratio |\n|---|---|---|---|\n",
    );
    for r in &rows {
        table.push_str(&format!("| {} | {} | {} | {} |\n", r[0], r[1], r[2], r[3]));
    }
    // What the relay costs in the kernel (needs perf with tracepoints: said, not failed).
    progress("counts");
    match std::panic::catch_unwind(|| counts::table(small, mixed, runs)) {
        Ok(counts) => {
            table.push('\n');
            table.push_str(&counts);
        }
        Err(_) => {
            table.push_str("\n(counts not measured: `perf stat` with tracepoints is needed)\n")
        }
    }
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{table}");
    if let Some(path) = out_file {
        let _ = std::fs::write(path, table);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_default();
    let num = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    match arg(0) {
        "emit" => emit(arg(1), num(2, 1 << 20), num(3, 1)),
        "echo" => echo(),
        "naive" => naive(&args[1..]),
        "ask" => ask(num(1, 10_000), num(2, 1_000), arg(3) == "hold"),
        "ask-timed" => ask_timed(num(1, 1_000), arg(2)),
        "relay" => {
            // One throughput figure alone: `relay KIND BYTES [RUNS] [SESSIONS]`, bridge vs
            // `cat` (lines spread over SESSIONS sessions, each with a pending question).
            let (kind, bytes, runs, sessions) = (arg(1), num(2, 64 << 20), num(3, 3), num(4, 1));
            let (b, peak) = best_of(runs, || relay(kind, bytes, sessions, Via::Bridge));
            let (c, _) = best_of(runs, || relay(kind, bytes, sessions, Via::Cat));
            let _ = writeln!(
                std::io::stdout(),
                "{kind} {bytes}: bridge {:.1} ms, cat {:.1} ms, ratio {:.2}, peak RSS {:.1} MiB",
                b.as_secs_f64() * 1e3,
                c.as_secs_f64() * 1e3,
                b.as_secs_f64() / c.as_secs_f64(),
                peak as f64 / 1024.0
            );
            if args.iter().any(|a| a == "--naive") {
                let (n, _) = relay(kind, bytes, 1, Via::Naive);
                let _ = writeln!(
                    std::io::stdout(),
                    "{kind} {bytes}: naive proxy {:.1} ms, ratio {:.2}",
                    n.as_secs_f64() * 1e3,
                    n.as_secs_f64() / c.as_secs_f64()
                );
            }
        }
        "counts" => {
            // The counts alone: `counts [SMALL_MIB] [MIXED_MIB] [RUNS]`.
            let mib = 1usize << 20;
            let table = counts::table(num(1, 64) * mib, num(2, 256) * mib, num(3, 3));
            let _ = writeln!(std::io::stdout(), "{table}");
        }
        "latency" => {
            // The latency figures alone: `latency [ROUNDS]`, through the bridge and direct.
            let rounds = num(1, 20_000);
            let (through, direct) = (latency(rounds, true), latency(rounds, false));
            for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
                let (b, d) = (percentile(&through, p), percentile(&direct, p));
                let _ = writeln!(
                    std::io::stdout(),
                    "latency {name}: bridge {:.1} us, direct {:.1} us, added {:.1} us",
                    b.as_secs_f64() * 1e6,
                    d.as_secs_f64() * 1e6,
                    (b.as_secs_f64() - d.as_secs_f64()) * 1e6
                );
            }
        }
        "questions" => {
            let (rate, _) = questions(num(1, 10_000), num(2, 1_000), false);
            let _ = writeln!(std::io::stdout(), "{rate:.0} questions/s");
        }
        "pending" => {
            // The memory figure alone: N questions pending at once over SESSIONS sessions.
            let (_, per) = questions(num(1, 10_000), num(2, 1_000), true);
            let _ = writeln!(
                std::io::stdout(),
                "{per:.0} B per pending question beyond its payload"
            );
        }
        "run" => {
            let quick = args.iter().any(|a| a == "--quick");
            let out = args
                .iter()
                .position(|a| a == "--out")
                .and_then(|i| args.get(i + 1).cloned());
            run(quick, out);
        }
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "usage: bench run [--quick] [--out FILE] | relay KIND BYTES [RUNS] [SESSIONS] [--naive] | counts [SMALL_MIB] [MIXED_MIB] [RUNS] | naive AGENT... | latency [ROUNDS] | questions N SESSIONS | pending N SESSIONS | emit KIND BYTES [SESSIONS] | echo | ask N SESSIONS [hold] | ask-timed N FILE"
            );
            std::process::exit(2);
        }
    }
}
