//! Fault injection through the real binaries: agents that are killed, that close stdout,
//! that never read; clients that close stdout; huge, invalid and deeply nested lines;
//! ten thousand requests in flight each way; mass cancellation in every dialect; and the
//! shutdown deadline. See docs/RELIABILITY.md for the invariants each test checks.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Whether a process is gone (or a zombie nobody reaped yet: dead either way).
fn dead(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(") ").next().and_then(|r| r.chars().next());
    matches!(state, None | Some('Z') | Some('X'))
}

/// Whether any process of process group `pgid` is still alive.
fn group_alive(pgid: u32) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .any(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some(rest) = stat.rsplit(") ").next() else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            // state ppid pgrp ...
            fields.len() > 2 && fields[2] == pgid.to_string() && !matches!(fields[0], "Z" | "X")
        })
}

/// Peak resident memory of a process in KiB (Linux `VmHWM`).
fn hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A measurement for the test log (`cargo test -- --nocapture` shows it).
fn report(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{what}");
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// The bridge with raw access to its pipes (for tests that close or stall one of them).
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<String>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
}

impl Raw {
    fn spawn(argv: &[String]) -> Raw {
        let mut child = Command::new(BRIDGE)
            .args(argv)
            .env("RUST_LOG", "info")
            .env(REGISTRY_ENV, test_registry())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn bridge");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(BufReader::new);
        let (stderr, stderr_task) = collect_stderr(child.stderr.take().expect("stderr"));
        Raw {
            child,
            stdin,
            stdout,
            stderr,
            stderr_task: Some(stderr_task),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    async fn send(&mut self, v: &Value) {
        let mut line = serde_json::to_vec(v).unwrap();
        line.push(b'\n');
        let stdin = self.stdin.as_mut().expect("stdin open");
        tokio::time::timeout(WAIT, stdin.write_all(&line))
            .await
            .expect("timed out writing")
            .expect("write");
    }

    async fn recv(&mut self) -> Value {
        let mut line = String::new();
        let out = self.stdout.as_mut().expect("stdout open");
        let n = match tokio::time::timeout(WAIT, out.read_line(&mut line)).await {
            Ok(r) => r.expect("read"),
            Err(_) => panic!("timed out reading; stderr:\n{}", self.stderr()),
        };
        assert!(n > 0, "stdout closed; stderr:\n{}", self.stderr());
        serde_json::from_str(&line).expect("JSON")
    }

    /// The next message, or `None` when nothing arrives within `wait`.
    async fn try_recv(&mut self, wait: Duration) -> Option<Value> {
        let mut line = String::new();
        let out = self.stdout.as_mut().expect("stdout open");
        match tokio::time::timeout(wait, out.read_line(&mut line)).await {
            Ok(Ok(n)) if n > 0 => Some(serde_json::from_str(&line).expect("JSON")),
            _ => None,
        }
    }

    async fn response(&mut self, id: Value) -> Value {
        loop {
            let m = self.recv().await;
            if m.get("id") == Some(&id) && m.get("method").is_none() {
                return m;
            }
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits at most `limit` for the bridge to exit; returns the code and the time taken.
    async fn wait_within(&mut self, limit: Duration) -> (i32, Duration) {
        use std::os::unix::process::ExitStatusExt;
        let start = Instant::now();
        let st = tokio::time::timeout(limit, self.child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "bridge still running after {limit:?}; stderr:\n{}",
                    self.stderr()
                )
            })
            .expect("wait");
        let took = start.elapsed();
        // Everything it logged is in `stderr` once it has exited.
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(WAIT, task).await;
        }
        let code = st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0));
        (code, took)
    }
}

/// Invariants 2 and 5: the agent is SIGKILLed in the middle of a flood. The client's
/// prompt gets exactly one `-32603` naming signal 9, and the bridge exits 137.
#[tokio::test]
async fn agent_sigkilled_mid_stream() {
    let mut b = Bridge::mock(&[]);
    let sid = b.open_session().await;
    b.prompt(9, &sid, "flood 1000000 200").await;
    for _ in 0..100 {
        assert!(chunk_text(&b.recv().await).is_some());
    }
    let agent = agent_pid_of(b.pid()).expect("agent pid");
    kill(Pid::from_raw(agent as i32), Signal::SIGKILL).unwrap();
    let (resp, _) = b.response(json!(9)).await;
    assert_eq!(resp["error"]["code"], -32603, "{resp}");
    let msg = resp["error"]["message"].as_str().unwrap();
    assert!(msg.contains("signal 9"), "{msg}");
    assert!(msg.contains("session/prompt"), "{msg}");
    assert_eq!(resp["error"]["data"]["signal"], 9);
    assert_eq!(b.wait().await, 137);
    assert!(b.drain().await.is_empty(), "nothing after the one answer");
    assert!(dead(agent));
}

/// Invariant 5: an agent that closes its stdout but keeps running is shut down (stdin
/// closed, SIGTERM after the grace) and the bridge exits within grace x 2 + 1 s. A client
/// request it never answered gets its `-32603`.
#[tokio::test]
async fn agent_closing_stdout_but_running_is_shut_down() {
    let grace = Duration::from_millis(300);
    let mut b = Raw::spawn(&args(&[
        "--shutdown-grace",
        "300ms",
        "--",
        "sh",
        "-c",
        "exec 1>&-; sleep 1000",
    ]));
    let started = Instant::now();
    let agent = wait_agent(b.pid()).await;
    b.send(&json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}))
        .await;
    let resp = b.response(json!(1)).await;
    assert_eq!(resp["error"]["code"], -32603, "{resp}");
    let (code, _) = b.wait_within(WAIT).await;
    let total = started.elapsed();
    // The trigger (stdout closed) is at most the time to start the agent after `started`.
    assert!(
        total <= grace * 2 + Duration::from_secs(1) + Duration::from_secs(2),
        "took {total:?}"
    );
    assert_eq!(code, 128 + 15, "killed by the SIGTERM after the grace");
    assert!(
        b.stderr().contains("agent closed its stdout"),
        "{}",
        b.stderr()
    );
    assert!(!group_alive(agent), "the agent's group survived");
}

/// Invariant 3: an agent that never reads its stdin (while the client writes megabytes
/// to it) does not stop the agent's own output from reaching the client; signals still
/// work while the client's input is back-pressured.
#[tokio::test]
async fn agent_that_never_reads_does_not_block_its_output() {
    let script = r#"i=0; while [ $i -lt 300 ]; do echo "{\"jsonrpc\":\"2.0\",\"method\":\"_n\",\"params\":{\"i\":$i}}"; i=$((i+1)); sleep 0.005; done; exec sleep 1000"#;
    let mut b = Raw::spawn(&args(&[
        "--shutdown-grace",
        "300ms",
        "--",
        "sh",
        "-c",
        script,
    ]));
    let agent = wait_agent(b.pid()).await;
    // The client writes 256 MiB the agent never reads: the bridge holds a few of these 1 MiB
    // lines (its in-flight budget and the pipes), then the write blocks for good.
    let mut stdin = b.stdin.take().unwrap();
    let writer = tokio::spawn(async move {
        let mut line = br#"{"jsonrpc":"2.0","method":"_big","params":{"p":""#.to_vec();
        line.extend(std::iter::repeat_n(b'a', 1 << 20));
        line.extend_from_slice(b"\"}}\n");
        for _ in 0..256 {
            if stdin.write_all(&line).await.is_err() {
                break;
            }
        }
    });
    for i in 0..300 {
        let m = b.recv().await;
        assert_eq!(m["params"]["i"], i, "{m}");
    }
    assert!(
        !writer.is_finished(),
        "the agent should have stalled the client"
    );
    // The stalled direction does not stall the signal path either.
    kill(Pid::from_raw(b.pid() as i32), Signal::SIGTERM).unwrap();
    let (code, took) = b.wait_within(WAIT).await;
    assert_eq!(code, 128 + 15);
    assert!(
        took < Duration::from_millis(300) * 2 + Duration::from_secs(3),
        "{took:?}"
    );
    assert!(!group_alive(agent));
    writer.abort();
}

/// Invariant 3: a client that closes the bridge's stdout (EPIPE) while the agent streams
/// does not crash or hang the bridge; when its stdin closes the bridge shuts down in time.
#[tokio::test]
async fn client_closing_stdout_while_agent_streams() {
    let mut b = Raw::spawn(&args(&["--shutdown-grace", "300ms", "--", MOCK]));
    b.send(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}))
        .await;
    b.response(json!(0)).await;
    b.send(&json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}))
        .await;
    let sid = b.response(json!(1)).await["result"]["sessionId"].clone();
    b.send(&json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":sid,"prompt":[{"type":"text","text":"flood 1000000 300"}]}}))
        .await;
    for _ in 0..20 {
        b.recv().await;
    }
    b.stdout.take(); // EPIPE from now on
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        b.child.try_wait().unwrap().is_none(),
        "the bridge died of EPIPE; stderr:\n{}",
        b.stderr()
    );
    // Still reading the client: a request reaches the agent (it logs to stderr).
    b.send(&json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":sid,"prompt":[{"type":"text","text":"stderr still-reading-the-client"}]}}))
        .await;
    tokio::time::timeout(WAIT, async {
        while !b.stderr().contains("still-reading-the-client") {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the client's request never reached the agent");
    b.stdin.take();
    let (code, took) = b.wait_within(WAIT).await;
    assert_eq!(code, 0, "{}", b.stderr());
    assert!(
        took < Duration::from_millis(600) + Duration::from_secs(3),
        "{took:?}"
    );
    assert!(b.stderr().contains("write failed"), "{}", b.stderr());
}

/// The bytes of a `_big` notification line of `total` bytes (without the newline).
fn big_line(total: usize) -> Vec<u8> {
    let head = br#"{"jsonrpc":"2.0","method":"_big","params":{"p":""#;
    let tail = br#""}}"#;
    let mut line = Vec::with_capacity(total + 1);
    line.extend_from_slice(head);
    line.extend(std::iter::repeat_n(b'x', total - head.len() - tail.len()));
    line.extend_from_slice(tail);
    line
}

/// Sends `input` to a bridge whose agent stores its stdin in a file; returns what the
/// agent received and the bridge's peak RSS in KiB.
async fn through_bridge(max_line: &str, input: Arc<Vec<u8>>) -> (Vec<u8>, u64) {
    let dir = temp_dir("bigline");
    let file = dir.join("got");
    let script = format!("cat > {}", file.display());
    let mut b = Raw::spawn(&args(&[
        "--max-line-bytes",
        max_line,
        "--",
        "sh",
        "-c",
        &script,
    ]));
    let pid = b.pid();
    let mut stdin = b.stdin.take().unwrap();
    let writer = tokio::spawn(async move {
        stdin.write_all(&input).await.expect("write");
        stdin.flush().await.expect("flush");
        // The bridge has read everything once it reports the discarded or relayed line:
        // keep stdin open a moment so its peak RSS can be read while it is alive.
        stdin
    });
    let mut peak = 0;
    let stdin = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            peak = peak.max(hwm_kib(pid));
            if writer.is_finished() {
                break writer.await.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("writing the line took too long");
    tokio::time::sleep(Duration::from_millis(200)).await;
    peak = peak.max(hwm_kib(pid));
    drop(stdin);
    let (code, _) = b.wait_within(Duration::from_secs(60)).await;
    assert_eq!(code, 0, "{}", b.stderr());
    let got = std::fs::read(&file).expect("agent output");
    let _ = std::fs::remove_dir_all(dir);
    (got, peak)
}

/// Invariants 1 and 4: a 200 MiB single line passes byte-identical when `--max-line-bytes`
/// is above it, with memory a small multiple of the line; below the limit it is dropped
/// without being buffered, and the next message passes.
#[tokio::test]
async fn line_of_200_mib_above_and_below_the_limit() {
    const SIZE: usize = 200 << 20;
    let mut input = big_line(SIZE);
    input.push(b'\n');
    let next = br#"{"jsonrpc":"2.0","method":"_after","params":{}}"#;
    input.extend_from_slice(next);
    input.push(b'\n');
    let input = Arc::new(input);

    let (got, peak) = through_bridge("300000000", input.clone()).await;
    assert!(
        got == *input,
        "not byte-identical ({} bytes arrived)",
        got.len()
    );
    report(&format!(
        "200 MiB line relayed: bridge peak RSS {} MiB",
        peak / 1024
    ));
    assert!(peak < 3 * 200 * 1024, "peak RSS {} MiB", peak / 1024);

    let (got, peak) = through_bridge("1048576", input).await;
    let mut want = next.to_vec();
    want.push(b'\n');
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&want)
    );
    report(&format!(
        "200 MiB line dropped: bridge peak RSS {} MiB",
        peak / 1024
    ));
    assert!(peak < 64 * 1024, "peak RSS {} MiB", peak / 1024);
}

/// Invariant 3: invalid UTF-8 from the client is answered `-32700`; from the agent it is
/// dropped and what follows still arrives.
#[tokio::test]
async fn invalid_utf8_from_either_side() {
    let script = r#"printf '\377\376{"jsonrpc":"2.0","method":"_bad"}\n'; printf '{"jsonrpc":"2.0","method":"_bad","params":{"s":"\303\050"}}\n'; printf '{"jsonrpc":"2.0","method":"_ok"}\n'; while read -r l; do :; done"#;
    let mut b = Bridge::spawn(&args(&["--", "sh", "-c", script]));
    let m = b.recv().await;
    assert_eq!(m["method"], "_ok", "{m}");
    b.send_raw(b"\xff\xfe\n").await;
    let r = b.recv().await;
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    b.send_raw(b"\xc3\x28{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n")
        .await;
    let r = b.recv().await;
    assert_eq!(r["error"]["code"], -32700, "{r}");
    // (Invalid UTF-8 *inside* a string is finding F10: tests/it/regressions.rs.)
    b.close_stdin();
    assert!(b.drain().await.is_empty());
    assert_eq!(b.wait().await, 0);
    assert!(b.stderr().contains("line is not JSON; not forwarded"));
}

/// Invariant 3: a million nested brackets (unterminated, balanced, inside params, inside
/// a question) crash nothing: answered `-32700`, forwarded byte-identical both ways
/// through an echoing agent, or refused `-32602`.
#[tokio::test]
async fn a_million_nested_brackets() {
    const N: usize = 1_000_000;
    let mut b = Bridge::spawn(&args(&["--", "cat"]));
    let open = "[".repeat(N);
    let close = "]".repeat(N);
    // Unterminated: not JSON.
    b.send_raw(format!("{open}\n").as_bytes()).await;
    let r = b.recv().await;
    assert_eq!(r["error"]["code"], -32700);
    // Balanced: a batch, relayed untouched (to `cat` and back).
    let batch = format!("{open}{close}");
    b.send_raw(format!("{batch}\n").as_bytes()).await;
    assert!(b.line().await == batch);
    // Deep params of a notification: forwarded both ways untouched.
    let note = format!(r#"{{"jsonrpc":"2.0","method":"_deep","params":{{"x":{open}{close}}}}}"#);
    b.send_raw(format!("{note}\n").as_bytes()).await;
    assert!(b.line().await == note);
    // A deep question (echoed by `cat`, so it comes from the "agent"): refused -32602,
    // which `cat` echoes back as the agent's response to the client's request 5.
    let ask = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"_sandboxagent/session/request_question","params":{{"sessionId":"s","questionId":"q","prompt":"p","options":{open}{close}}}}}"#
    );
    b.send_raw(format!("{ask}\n").as_bytes()).await;
    let r = b.recv().await;
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (json!(5), json!(-32602)),
        "{r}"
    );
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
}

/// An awk agent for the in-flight test: it sends `n` requests to the client at once,
/// collects `n` requests from the client and answers them all only when it has every
/// one, counts the client's responses (each id once), and reports `_done` with the count.
fn counting_agent(n: usize) -> String {
    format!(
        r#"BEGIN {{ for (i = 0; i < {n}; i++) printf "{{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"fs/read_text_file\",\"params\":{{\"sessionId\":\"s\",\"path\":\"/f%d\"}}}}\n", i, i; fflush() }}
/"method"/ {{ match($0, /"id":[0-9]+/); ids[got++] = substr($0, RSTART + 5, RLENGTH - 5);
  if (got == {n}) {{ for (i = 0; i < got; i++) printf "{{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{{}}}}\n", ids[i]; fflush() }} }}
/"result"/ {{ match($0, /"id":[0-9]+/); id = substr($0, RSTART + 5, RLENGTH - 5); if (!(id in seen)) unique++; seen[id] = 1; responses++;
  if (responses == {n}) {{ printf "{{\"jsonrpc\":\"2.0\",\"method\":\"_done\",\"params\":{{\"responses\":%d,\"unique\":%d}}}}\n", responses, unique; fflush() }} }}"#
    )
}

/// Invariant 2 at volume: 10,000 requests in flight at once in each direction, every one
/// answered exactly once, nothing lost or duplicated in either direction.
#[tokio::test]
async fn ten_thousand_requests_in_flight_each_way() {
    const N: usize = 10_000;
    // The agent's `fs/*` requests are relayed only outside the wall, which refuses them.
    let mut b = Raw::spawn(&args(&[
        "--sandbox",
        "off",
        "--",
        "awk",
        &counting_agent(N),
    ]));
    // One writer task owns stdin and writes what it is given, in order.
    let mut stdin = b.stdin.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        // An empty buffer means: close stdin.
        while let Some(buf) = rx.recv().await {
            if buf.is_empty() || stdin.write_all(&buf).await.is_err() {
                break;
            }
        }
    });
    let mut requests = Vec::new();
    for i in 0..N {
        requests.extend_from_slice(
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"_test/echo","params":{{}}}}"#)
                .as_bytes(),
        );
        requests.push(b'\n');
    }
    tx.send(requests).unwrap();
    let mut agent_requests = Vec::new();
    let mut responses: HashMap<i64, usize> = HashMap::new();
    let mut done = None;
    tokio::time::timeout(Duration::from_secs(60), async {
        while done.is_none() || responses.len() < N {
            let Some(m) = b.try_recv(WAIT).await else {
                panic!(
                    "stalled: {} agent requests, {} responses, done {done:?}; stderr:\n{}",
                    agent_requests.len(),
                    responses.len(),
                    b.stderr()
                );
            };
            if m["method"] == "fs/read_text_file" {
                agent_requests.push(m["id"].clone());
                if agent_requests.len() == N {
                    // Every agent request is in flight now: answer them all.
                    let mut buf = Vec::new();
                    for id in &agent_requests {
                        buf.extend_from_slice(
                            json!({"jsonrpc":"2.0","id":id,"result":{"content":"x"}})
                                .to_string()
                                .as_bytes(),
                        );
                        buf.push(b'\n');
                    }
                    tx.send(buf).unwrap();
                    // Then EOF: awk (mawk) reads its input in blocks and counts the last
                    // answers only once its stdin ends.
                    tx.send(Vec::new()).unwrap();
                }
            } else if m["method"] == "_done" {
                done = Some(m["params"].clone());
            } else if m.get("result").is_some() {
                *responses.entry(m["id"].as_i64().unwrap()).or_default() += 1;
            } else {
                panic!("unexpected {m}");
            }
        }
    })
    .await
    .expect("10,000 each way took too long");
    assert_eq!(agent_requests.len(), N);
    assert_eq!(done, Some(json!({"responses":N,"unique":N})));
    assert!(
        responses.values().all(|&c| c == 1),
        "a response arrived twice"
    );
    drop(tx);
    tokio::time::timeout(WAIT, writer).await.unwrap().unwrap();
    let (code, _) = b.wait_within(WAIT).await;
    assert_eq!(code, 0);
}

/// Invariant 2 across dialects: 100 sessions, each with a question pending in the
/// elicitation or the permission dialect, all cancelled: every question is withdrawn at
/// the client exactly once (under the id the client saw), every agent gets exactly one
/// `rejected: cancelled`, and every turn ends. (The extension dialect is
/// `tests/it/questions.rs::many_sessions_cancelled_each_resolved_once`.)
#[tokio::test]
async fn many_sessions_cancelled_in_every_dialect() {
    for dialect in ["elicitation", "permission"] {
        let mut b = Bridge::mock(&["--client-dialect", dialect, "--client-cancel-requests"]);
        b.initialize(json!({})).await;
        let mut sessions = Vec::new();
        for i in 0..100 {
            sessions.push(b.new_session(1000 + i).await);
        }
        for (i, sid) in sessions.iter().enumerate() {
            b.prompt(i as i64 + 1, sid, "question").await;
        }
        let method = match dialect {
            "elicitation" => "elicitation/create",
            _ => "session/request_permission",
        };
        let mut shown: HashMap<String, usize> = HashMap::new();
        while shown.len() < 100 {
            let m = b.recv().await;
            if m["method"] == method {
                shown.insert(m["id"].as_str().expect("a bridge id").to_owned(), 0);
            }
        }
        for sid in &sessions {
            b.send(&json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":sid}}))
                .await;
        }
        let (mut reports, mut ends, mut closed_tool_calls) = (0, 0, 0);
        while ends < 100 {
            let m = b.recv().await;
            if m["method"] == "$/cancel_request" {
                let id = m["params"]["requestId"].as_str().expect("string id");
                *shown.get_mut(id).expect("withdrawn id was shown") += 1;
            } else if chunk_text(&m) == Some("rejected: cancelled") {
                reports += 1;
            } else if m["params"]["update"]["sessionUpdate"] == "tool_call_update" {
                assert_eq!(m["params"]["update"]["status"], "failed", "{m}");
                closed_tool_calls += 1;
            } else if m["result"]["stopReason"] == "cancelled" {
                ends += 1;
            }
        }
        assert_eq!(reports, 100, "{dialect}");
        assert!(shown.values().all(|&n| n == 1), "{dialect}: {shown:?}");
        let expect_tool_calls = if dialect == "permission" { 100 } else { 0 };
        assert_eq!(closed_tool_calls, expect_tool_calls, "{dialect}");
        // A late answer to a withdrawn request goes nowhere (the agent reports nothing).
        let late = shown.keys().next().unwrap().clone();
        b.send(&json!({"jsonrpc":"2.0","id":late,"result":{"action":"decline","outcome":{"outcome":"cancelled"}}}))
            .await;
        b.close_stdin();
        assert!(b.drain().await.is_empty(), "{dialect}");
        assert_eq!(b.wait().await, 0);
        assert!(b
            .stderr()
            .contains("already resolved (late or duplicate); dropped"));
    }
}

/// An agent that ignores stdin EOF, SIGTERM and SIGHUP, with a child of its own (which
/// inherits the ignored signals): only SIGKILL to the whole group ends them.
const STUBBORN: &str =
    "trap '' TERM HUP INT; sleep 1000 & echo stubborn-ready >&2; while :; do sleep 0.05; done";

/// Invariant 5: shutdown ends within grace x 2 + 1 s of the trigger (client EOF, a signal)
/// even when the agent ignores everything but SIGKILL, and its whole process group is gone
/// afterwards; a second signal kills at once.
#[tokio::test]
async fn shutdown_deadline_holds_for_every_trigger() {
    let grace = Duration::from_millis(400);
    let bound = grace * 2 + Duration::from_secs(1);
    // Generous: process start-up and a loaded machine.
    let margin = Duration::from_millis(1500);
    for trigger in ["eof", "sigterm", "sigint-twice"] {
        let mut b = Raw::spawn(&args(&[
            "--shutdown-grace",
            "400ms",
            "--",
            "sh",
            "-c",
            STUBBORN,
        ]));
        let agent = wait_agent(b.pid()).await;
        // The trap and the child are set.
        tokio::time::timeout(WAIT, async {
            while !b.stderr.lock().unwrap().contains("stubborn-ready") {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the agent set its trap");
        let bridge = Pid::from_raw(b.pid() as i32);
        match trigger {
            "eof" => drop(b.stdin.take()),
            "sigterm" => kill(bridge, Signal::SIGTERM).unwrap(),
            _ => {
                kill(bridge, Signal::SIGINT).unwrap();
                tokio::time::sleep(Duration::from_millis(50)).await;
                kill(bridge, Signal::SIGINT).unwrap();
            }
        }
        let (code, took) = b.wait_within(WAIT).await;
        assert!(took <= bound + margin, "{trigger}: {took:?}");
        match trigger {
            "eof" => {
                assert_eq!(code, 0);
                assert!(took >= grace * 2 - Duration::from_millis(50), "{took:?}");
                assert!(b.stderr().contains("sending SIGKILL"), "{}", b.stderr());
            }
            "sigterm" => assert_eq!(code, 128 + 15),
            _ => {
                assert_eq!(code, 128 + 2);
                assert!(took < grace, "a second signal kills at once: {took:?}");
            }
        }
        assert!(!group_alive(agent), "{trigger}: the agent's group survived");
    }
}
