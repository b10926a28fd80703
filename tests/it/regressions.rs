//! Regression tests for the findings of the hardening work (docs/RELIABILITY.md,
//! "Findings"), each through the public API or the real binaries. Each test states the
//! invariant it pins; each failed before its fix.

use crate::common;
use std::time::Duration;

use acp_question_bridge::codec::{Frame, LineCodec};
use acp_question_bridge::questions::Dialect;
use acp_question_bridge::router::fixture::{msg, parse, Fixture};
use acp_question_bridge::router::{AgentExit, RouterConfig, Side};
use bytes::{Bytes, BytesMut};
use serde_json::{json, Value};
use tokio_util::codec::Decoder;

/// The client's `initialize` with the extension.
fn native_init_line() -> String {
    msg::initialize(
        json!({"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}),
    )
}

/// The fixture with a client that shows questions natively (the extension dialect).
fn native() -> Fixture {
    Fixture::native(RouterConfig::default())
}

/// The agent killed by SIGKILL, with nothing on stderr.
fn killed() -> AgentExit {
    AgentExit {
        code: None,
        signal: Some(9),
        stderr_tail: String::new(),
    }
}

fn ask(id: &str, session: &str, extra: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"_sandboxagent/session/request_question","params":{{"sessionId":"{session}","questionId":"q","prompt":"p","options":["a","b"]{extra}}}}}"#
    )
}

/// The `"id":` text of a line (exact, as written).
fn id_text(line: &str) -> &str {
    let start = line.find("\"id\":").expect("an id") + 5;
    let rest = &line[start..];
    let end = rest.find([',', '}']).expect("end of id");
    &rest[..end]
}

/// F1, invariant 3: a question whose deadline lies beyond the year 9999 (`timeoutMs` is
/// any positive integer, e.g. 300000000000000 ms) must not panic the router. It did:
/// `humantime::format_rfc3339_millis(..).to_string()` in `Router::show` panicked ("a
/// Display implementation returned an error unexpectedly"), which killed the bridge.
#[test]
fn f1_huge_timeout_ms_does_not_panic() {
    for (cfg, extra) in [
        (RouterConfig::default(), r#","timeoutMs":300000000000000"#),
        (
            RouterConfig::default(),
            r#","timeoutMs":18446744073709551615"#,
        ),
        (
            RouterConfig {
                // `--question-timeout 10000years` is accepted by the command line.
                question_timeout: Some(Duration::from_secs(10_000 * 366 * 86_400)),
                ..RouterConfig::default()
            },
            "",
        ),
    ] {
        let mut t = Fixture::new(RouterConfig {
            client_dialect: Some(Dialect::Extension),
            ..cfg
        });
        let line = ask("7", "s", extra);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            t.agent(&line);
        }));
        assert!(result.is_ok(), "the router panicked on {line}");
        // Either shown to the client or refused: the agent is not left without an answer.
        assert!(
            t.r.questions().len() == 1 || t.take_agent().len() == 1,
            "{line}"
        );
    }
}

/// F2, invariants 1 and 2: the responses the bridge makes carry the requester's id in its
/// exact text (PROTOCOL.md section 0: "Ids keep their exact JSON"). `jsonrpc::error` used
/// to re-serialize the id through `serde_json::Value`, so `1e2` came back as `100.0`,
/// `-0` as `-0.0`, `18446744073709551616` as `1.8446744073709552e19` and `1e400` as
/// `null`: the requester could not match its response.
#[test]
fn f2_bridge_made_errors_keep_the_exact_id_text() {
    for id in ["1e2", "-0", "18446744073709551616", "1e400", "1.50"] {
        // Agent side: an invalid question is refused with -32602 under its id.
        let mut t = native();
        t.agent(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"_sandboxagent/session/request_question","params":{{}}}}"#
        ));
        let refusal = t.take_agent();
        assert_eq!(refusal.len(), 1);
        assert_eq!(id_text(&refusal[0]), id, "{}", refusal[0]);
        // Client side: a request still waiting when the agent exits gets -32603 under its id.
        let mut t = native();
        t.client(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s"}}}}"#
        ));
        t.take_agent();
        t.agent_gone(&killed());
        let errors = t.take_client();
        assert_eq!(errors.len(), 1);
        assert_eq!(id_text(&errors[0]), id, "{}", errors[0]);
    }
}

/// F3, invariant 2: when the client's stdin ends, every request the agent still waits on
/// gets its one response before the agent's stdin is closed. Questions, permission
/// requests and elicitations did; any other request (`fs/read_text_file`,
/// `terminal/create`, ...) got nothing.
#[test]
fn f3_client_eof_answers_every_agent_request() {
    let mut t = native();
    t.client(&native_init_line());
    t.agent(&msg::request(
        json!(4),
        "fs/read_text_file",
        json!({"sessionId":"s","path":"/etc/hosts"}),
    ));
    t.agent(&msg::request(
        json!(5),
        "terminal/create",
        json!({"sessionId":"s","command":"ls"}),
    ));
    t.take_agent();
    t.client_eof();
    let to_agent = t.take_agent();
    assert_eq!(to_agent.last().map(String::as_str), Some("<close>"));
    let answered: Vec<Value> = to_agent[..to_agent.len() - 1]
        .iter()
        .map(|l| parse(l)["id"].clone())
        .collect();
    assert_eq!(answered, vec![json!(4), json!(5)], "{to_agent:?}");
}

/// F4, invariant 2: a client that answers the same agent request twice must not make the
/// agent receive two responses. The bridge dropped duplicates for questions, but forwarded
/// a second response to any other request ("response to an unknown request id").
#[test]
fn f4_duplicate_client_response_is_not_forwarded_twice() {
    let mut t = native();
    let req = msg::request(
        json!(3),
        "session/request_permission",
        json!({"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}),
    );
    t.agent(&req);
    assert_eq!(t.take_client(), vec![req]);
    let answer = msg::result(json!(3), json!({"outcome":{"outcome":"cancelled"}}));
    t.client(&answer);
    t.client(&answer);
    assert_eq!(t.take_agent(), vec![answer], "forwarded twice");
}

/// F5, invariants 2 and 4: past `max_in_flight` requests were forwarded untracked, so when
/// the agent exited they got no response at all. Each needs exactly one (an error at once,
/// or the -32603 on agent exit).
#[test]
fn f5_requests_past_the_in_flight_cap_still_get_one_response() {
    let mut t = Fixture::new(RouterConfig {
        max_in_flight: 2,
        ..RouterConfig::default()
    });
    for id in 1..=3 {
        t.client(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s"}}}}"#
        ));
    }
    t.take_agent();
    let mut answered: Vec<Value> = t
        .take_client()
        .iter()
        .map(|l| parse(l)["id"].clone())
        .collect();
    t.agent_gone(&killed());
    answered.extend(t.take_client().iter().map(|l| parse(l)["id"].clone()));
    answered.sort_by_key(|v| v.as_i64());
    assert_eq!(answered, vec![json!(1), json!(2), json!(3)]);
}

/// F6, invariant 4: pending questions were capped per session only, and an agent chooses
/// any number of session ids, so the registry grew with what the agent sent. Expected: a
/// global bound from configuration (here `max_in_flight`), past which questions are
/// refused (`-32000`) like past the per-session cap.
#[test]
fn f6_pending_questions_are_bounded_across_sessions() {
    let mut t = Fixture::new(RouterConfig {
        client_dialect: Some(Dialect::Extension),
        max_pending_per_session: 1,
        max_in_flight: 100,
        ..RouterConfig::default()
    });
    for i in 0..1000 {
        t.agent(&ask(&i.to_string(), &format!("session-{i}"), ""));
    }
    let refused = t.take_agent();
    assert!(
        t.r.questions().len() <= 100,
        "{} questions pending (agent-chosen sessions), {} refused",
        t.r.questions().len(),
        refused.len()
    );
    assert_eq!(t.r.questions().len() + refused.len(), 1000);
}

/// F7 (cosmetic): an over-long last line without a newline that ends in `\r` was reported
/// one byte too long when the codec was already discarding it (the `\r` was counted; with
/// a newline, or when not yet discarding, it was not). Found by the `codec` fuzz target.
#[test]
fn f7_codec_over_long_last_line_at_eof_does_not_count_its_cr() {
    for chunks in [
        &[&b"12345\r"[..]][..],
        &[b"123", b"45\r"],
        &[b"12345", b"\r"],
    ] {
        let mut codec = LineCodec::new(2);
        let mut buf = BytesMut::new();
        let mut frames = Vec::new();
        for c in chunks {
            buf.extend_from_slice(c);
            while let Some(f) = codec.decode(&mut buf).expect("no error") {
                frames.push(f);
            }
        }
        while let Some(f) = codec.decode_eof(&mut buf).expect("no error") {
            frames.push(f);
        }
        assert_eq!(frames, vec![Frame::TooLong { bytes: 5 }], "{chunks:?}");
    }
}

/// Short scripts of the router checker for F2-F4: with every check on
/// (`Strictness::ALL`, what `tests/it/router_props.rs` runs) they failed before the fixes,
/// which shows the checker catches them.
#[test]
fn strict_checker_passes_the_f2_to_f4_scripts() {
    use crate::router_check::{End, Op, Script, Setup, Strictness};
    let setup = Setup {
        dialect: 1,
        advertise_elicitation: false,
        question_timeout_ms: None,
        max_pending_per_session: 4,
    };
    // F3: a plain agent request pending at client EOF.
    let f3 = Script {
        setup: setup.clone(),
        ops: vec![Op::AgentPlain { session: 0, id: 0 }],
        end: End::ClientEof,
    };
    // F4: the client answers a permission request twice.
    let f4 = Script {
        setup: setup.clone(),
        ops: vec![
            Op::AgentPermission { session: 0, id: 0 },
            Op::ClientAnswer { pick: 0, kind: 0 },
            Op::ClientAnswer {
                pick: 0,
                kind: 0x80,
            },
        ],
        end: End::AgentGone,
    };
    // F2: an invalid question under the id 1e2.
    let f2 = Script {
        setup,
        ops: vec![Op::Ask {
            session: 0,
            qid: 0,
            form: 6,
            timeout_ms: None,
            id: 10,
        }],
        end: End::AgentGone,
    };
    for (name, s) in [("F2", &f2), ("F3", &f3), ("F4", &f4)] {
        assert!(
            s.run(Strictness::KEPT).is_ok(),
            "{name} is excluded from KEPT"
        );
        let strict = s.run(Strictness::ALL);
        assert!(strict.is_ok(), "{name}: {}", strict.unwrap_err());
    }
}

/// F10, invariant 3 (and PROTOCOL.md section 5): bytes that are not UTF-8 are not JSON.
/// Inside a member the envelope borrows (`params`, `id`, ...) they were refused `-32600`
/// "duplicate member in JSON-RPC envelope" with `"id":null` instead of `-32700`; inside a
/// member it skips (serde_json does not check skipped strings) the line was classified as
/// a valid message and forwarded, invalid UTF-8 and all, to the other peer.
#[test]
fn f10_invalid_utf8_inside_strings_is_not_json() {
    for line in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"s\":\"\xc3\x28\"}}"[..],
        b"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{},\"extra\":\"\xff\"}",
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\",\"\xff\":0}",
    ] {
        let mut t = native();
        t.feed(Side::Client, Frame::Line(Bytes::copy_from_slice(line)));
        let shown = String::from_utf8_lossy(line).into_owned();
        assert!(t.take_agent().is_empty(), "forwarded: {shown}");
        let reply = t.take_client();
        assert_eq!(reply.len(), 1, "{shown}");
        assert_eq!(
            parse(&reply[0])["error"]["code"],
            -32700,
            "{shown}: {}",
            reply[0]
        );
    }
}

/// F8, invariant 4: when the agent exits, every client request still waiting gets a
/// `-32603`; its `data.stderrTail` used to repeat the whole 64 KiB stderr tail, all queued
/// at once: 1,000 waiting requests made 64 MiB of output in memory (10,000 made the bridge
/// peak at 678 MiB RSS; the 65,536 then allowed in flight would have been 4 GiB).
/// Expected: the burst does not grow with the tail size times the request count.
#[test]
fn f8_agent_exit_error_burst_is_bounded() {
    let mut t = native();
    for id in 0..1000 {
        t.client(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s"}}}}"#
        ));
    }
    t.take_agent();
    let exit = AgentExit {
        code: Some(1),
        signal: None,
        stderr_tail: "x".repeat(64 * 1024),
    };
    t.agent_gone(&exit);
    let errors = t.take_client();
    assert_eq!(errors.len(), 1000);
    let bytes: usize = errors.iter().map(String::len).sum();
    assert!(
        bytes <= 16 << 20,
        "{} MiB queued for the client at once",
        bytes >> 20
    );
}

/// F1 through the real binaries: the mock agent asks with `timeoutMs` 300000000000000.
/// The bridge panicked (exit 101): the client's prompt never got a response and the
/// agent was killed with the bridge.
#[tokio::test]
async fn f1_bridge_survives_a_deadline_after_the_year_9999() {
    let mut b = common::Bridge::mock(&[]);
    b.initialize(
        json!({"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}),
    )
    .await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "question-timeout 300000000000000").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "_sandboxagent/session/request_question")
        .await;
    b.send(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"status":"answered","answers":[["option-a"]]}}))
        .await;
    let (done, _) = b.response(json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
}

/// Kills a process group when dropped (cleanup for tests that may leave an agent behind).
struct KillGroup(i32);

impl Drop for KillGroup {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.0),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// F9, invariant 5: an agent that stopped reading its stdin (hung) back-pressures the
/// client's input; the loop then stopped reading stdin altogether, so the client's EOF
/// was never seen: the bridge never closed the agent's stdin, never sent SIGTERM/SIGKILL
/// and never exited. Expected: shut down within grace x 2 + 1 s of the EOF like any other.
#[tokio::test]
async fn f9_client_eof_is_seen_while_the_agent_does_not_read() {
    use std::process::Stdio;
    use std::time::Instant;
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(common::BRIDGE)
        .args([
            "--shutdown-grace",
            "300ms",
            "--",
            "sh",
            "-c",
            "exec sleep 1000",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn bridge");
    let bridge = child.id().expect("pid");
    let agent = common::wait_agent(bridge).await as i32;
    let _cleanup = KillGroup(agent);
    // 400 lines of 4 KiB: far more than the agent pipe and the bridge's queues hold, so
    // the loop stops reading the client and the writer blocks.
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = tokio::spawn(async move {
        let mut line = br#"{"jsonrpc":"2.0","method":"_fill","params":{"p":""#.to_vec();
        line.extend(std::iter::repeat_n(b'a', 4000));
        line.extend_from_slice(b"\"}}\n");
        for _ in 0..400 {
            if stdin.write_all(&line).await.is_err() {
                return;
            }
        }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!writer.is_finished(), "the agent should stall the client");
    // The client gives up: its end of the pipe closes (EOF after what is buffered).
    writer.abort();
    let _ = writer.await;
    let eof = Instant::now();
    let limit = Duration::from_millis(300) * 2 + Duration::from_secs(1) + Duration::from_secs(2);
    let exited = tokio::time::timeout(limit, child.wait()).await;
    assert!(
        exited.is_ok(),
        "bridge and agent still running {:?} after the client closed stdin",
        eof.elapsed()
    );
}

/// Runs the bridge (`RUST_LOG=debug`) around an agent that, after the client's first
/// line, writes `agent_lines`; the client sends each message after waiting its delay, then
/// closes stdin after `hold`. Returns the bridge's stderr.
async fn logs_of(agent_lines: &str, client: &[(u64, Value)], hold: Duration) -> String {
    use std::process::Stdio;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // The agent's lines come from a file, so they are not in its (logged) command line.
    let dir = common::temp_dir("logs");
    let file = dir.join("agent.jsonl");
    std::fs::write(&file, agent_lines).unwrap();
    let script = format!("read l; cat {}; cat >/dev/null", file.display());
    let mut child = tokio::process::Command::new(common::BRIDGE)
        // The agent's `fs/*` requests are relayed only outside the wall, which refuses them.
        .args(["--sandbox", "off", "--", "sh", "-c", &script])
        .env("RUST_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let stderr = tokio::spawn(async move {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s).await;
        s
    });
    for (delay, m) in client {
        tokio::time::sleep(Duration::from_millis(*delay)).await;
        stdin.write_all(format!("{m}\n").as_bytes()).await.unwrap();
    }
    tokio::time::sleep(hold).await;
    drop(stdin);
    tokio::time::timeout(common::WAIT, child.wait())
        .await
        .expect("exit")
        .unwrap();
    String::from_utf8_lossy(&stderr.await.unwrap()).into_owned()
}

fn native_init() -> Value {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,
        "clientCapabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}})
}

/// F11 (docs/GUIDE.md: "Question contents and answers are logged only at `trace`"): an invalid
/// answer was logged at warn with the client's answer and the question's option values in
/// the error text, and a refused question at warn with the offending option value.
#[tokio::test]
async fn f11_no_answers_or_options_in_logs_below_trace() {
    // The agent asks a valid question (answered invalidly below) and one with a duplicate
    // option value (refused).
    let script = format!(
        "{}\n{}\n",
        msg::ask(
            json!(7),
            json!({"sessionId":"s","questionId":"q","prompt":"p","options":["SECRET-OPTION-1","b"]})
        ),
        msg::ask(
            json!(8),
            json!({"sessionId":"s","questionId":"r","prompt":"p","options":["SECRET-OPTION-2","SECRET-OPTION-2"]})
        ),
    );
    let answer = json!({"jsonrpc":"2.0","id":7,"result":{"status":"answered","answers":[["SECRET-ANSWER-3"]]}});
    let logs = logs_of(
        &script,
        &[(0, native_init()), (300, answer)],
        Duration::from_millis(200),
    )
    .await;
    assert!(logs.contains("invalid answer from the client"), "{logs}");
    for secret in ["SECRET-OPTION-1", "SECRET-OPTION-2", "SECRET-ANSWER-3"] {
        assert!(
            !logs.contains(secret),
            "{secret} in the debug logs:\n{logs}"
        );
    }
}

/// F12: text the agent controls reached the text logs unescaped: a `questionId` with a
/// newline forged a whole log line, and an ANSI escape reached the operator's terminal.
/// (`--log-format json` escapes both; the text format logged `question_id`/`session_id`
/// with `%`.)
#[tokio::test]
async fn f12_agent_text_cannot_forge_log_lines() {
    let script = concat!(
        r#"{"jsonrpc":"2.0","id":7,"method":"_sandboxagent/session/request_question","params":{"sessionId":"s\u001b[31m","questionId":"q\n2026-01-01T00:00:00.000000Z ERROR forged by the agent","prompt":"p","options":["a"]}}"#,
        "\n"
    );
    let logs = logs_of(script, &[(0, native_init())], Duration::from_millis(300)).await;
    assert!(logs.contains("question delivered"), "{logs}");
    assert!(
        !logs
            .lines()
            .any(|l| l.starts_with("2026-01-01T00:00:00.000000Z ERROR forged")),
        "a forged log line:\n{logs}"
    );
    assert!(
        !logs.contains('\u{1b}'),
        "a raw escape sequence in the logs"
    );
}

/// F13 (what F12 left): at `debug`, the `msg` span prints the method name with `%`, so a
/// method name the agent (or client) writes with a `\n` forges a log line and an ESC
/// sequence reaches the terminal, on every event inside the span (here the warning about
/// an id reused while in flight).
#[tokio::test]
async fn f13_method_names_in_log_spans_cannot_forge_log_lines() {
    let agent = concat!(
        r#"{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":{}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":5,"method":"x\n2026-01-01T00:00:00.000000Z ERROR forged by the agent \u001b[31m","params":{}}"#,
        "\n"
    );
    let logs = logs_of(agent, &[(0, native_init())], Duration::from_millis(300)).await;
    assert!(logs.contains("request id reused"), "{logs}");
    assert!(
        !logs
            .lines()
            .any(|l| l.starts_with("2026-01-01T00:00:00.000000Z ERROR forged")),
        "a forged log line:\n{logs}"
    );
    assert!(
        !logs.contains('\u{1b}'),
        "a raw escape sequence in the logs"
    );
}
