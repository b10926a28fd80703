//! Small tests behind docs/SECURITY.md: what the logs hold, how the agent is started, the
//! bridge's own id space, and the in-flight cap. The other limits it lists are checked by
//! tests named there. `policy_shell`: the approval policy's allowed commands run under the
//! real bash and dash, doing only what their rule allows (tests/it/policy_shell/).

use std::process::Stdio;

use crate::common::*;
use acp_question_bridge::router::fixture::{msg, Fixture};
use acp_question_bridge::router::{Out, RouterConfig, Side};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const NATIVE: &str =
    r#"{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}"#;

/// Runs the bridge around the mock agent with `RUST_LOG=<level>`, asks the multi-question
/// form (prompts "Which database?", description "Relational, networked"), answers it with
/// a free-text marker, and returns the bridge's stderr.
async fn question_round_trip_logs(level: &str) -> String {
    let mut child = tokio::process::Command::new(BRIDGE)
        .args(["--", MOCK])
        .env("RUST_LOG", level)
        .env(REGISTRY_ENV, test_registry())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut err = child.stderr.take().unwrap();
    let stderr = tokio::spawn(async move {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s).await;
        s
    });
    let caps: Value = serde_json::from_str(NATIVE).unwrap();
    for m in [
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":caps}}),
        json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}),
        json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"mock-session-1","prompt":[{"type":"text","text":"questions"}]}}),
    ] {
        stdin.write_all(format!("{m}\n").as_bytes()).await.unwrap();
    }
    let done = tokio::time::timeout(WAIT, async {
        while let Ok(Some(line)) = out.next_line().await {
            let m: Value = serde_json::from_str(&line).unwrap();
            if m["method"] == "_sandboxagent/session/request_question" {
                let answer = json!({"jsonrpc":"2.0","id":m["id"],"result":{"status":"answered",
                    "answers":[["Postgres"],["auth"],["SECRET-FREE-TEXT-42"]]}});
                stdin
                    .write_all(format!("{answer}\n").as_bytes())
                    .await
                    .unwrap();
            }
            if m["id"] == 2 && m.get("result").is_some() {
                return m;
            }
        }
        panic!("no end of the turn");
    })
    .await
    .expect("turn");
    assert_eq!(done["result"]["stopReason"], "end_turn");
    drop(stdin);
    tokio::time::timeout(WAIT, child.wait())
        .await
        .unwrap()
        .unwrap();
    stderr.await.unwrap()
}

/// Logs below `trace` hold neither the question's content nor the client's answer; at
/// `trace` both are there (so the markers are real).
#[tokio::test]
async fn logs_below_trace_hold_no_question_content_nor_answers() {
    let debug = question_round_trip_logs("debug").await;
    let trace = question_round_trip_logs("trace").await;
    assert!(
        debug.contains("question resolved"),
        "debug logs are on: {debug}"
    );
    for secret in [
        "Which database?",
        "Relational, networked",
        "SECRET-FREE-TEXT-42",
    ] {
        assert!(
            !debug.contains(secret),
            "{secret:?} logged at debug:\n{debug}"
        );
        assert!(trace.contains(secret), "{secret:?} not even at trace");
    }
}

/// The agent command is executed directly (argv), never through a shell: shell syntax in
/// it is a file name that does not exist.
#[tokio::test]
async fn agent_command_is_never_run_by_a_shell() {
    let dir = temp_dir("noshell");
    let marker = dir.join("created");
    let cmd = format!("true; touch {}", marker.display());
    let out = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(BRIDGE)
            .args(["--no-control", "--", &cmd])
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(!marker.exists(), "the command line went through a shell");
    // Arguments are passed as they are, one each.
    let out = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(BRIDGE)
            .args([
                "--no-control",
                "--",
                "sh",
                "-c",
                "printf '%s|' \"$@\" >&2",
                "argv0",
                "a b",
                "$HOME",
                ";",
            ])
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a b|$HOME|;|"), "{err}");
}

/// The ids of the requests the bridge makes carry a random per-process prefix: two
/// bridges never share it, so an agent cannot predict (and pre-empt) them.
#[tokio::test]
async fn bridge_request_ids_are_unpredictable() {
    let mut prefixes = Vec::new();
    for _ in 0..2 {
        let mut b = Bridge::mock(&["--client-dialect", "elicitation"]);
        let sid = b.open_session().await;
        b.prompt(5, &sid, "question").await;
        let (req, _) = b.recv_until(|m| m["method"] == "elicitation/create").await;
        let id = req["id"].as_str().expect("string id").to_owned();
        let parts: Vec<&str> = id.split(':').collect();
        assert_eq!(parts.len(), 3, "{id}");
        assert_eq!(parts[0], "acp-question-bridge");
        assert!(
            parts[1].len() == 16 && parts[1].bytes().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        prefixes.push(parts[1].to_owned());
        b.close_stdin();
        b.drain().await;
        assert_eq!(b.wait().await, 0);
    }
    assert_ne!(prefixes[0], prefixes[1]);
}

/// The requests in flight per direction are capped by `max_in_flight`, however many a
/// peer sends: one more is refused `-32000` at once (F5), never forwarded untracked.
#[test]
fn in_flight_tracking_is_capped() {
    let mut t = Fixture::new(RouterConfig {
        max_in_flight: 10,
        ..RouterConfig::default()
    });
    for id in 0..100 {
        let line = msg::request(json!(id), "x", json!({}));
        t.client(&line);
        t.agent(&line);
    }
    assert_eq!(t.r.in_flight(Side::Client).len(), 10);
    assert_eq!(t.r.in_flight(Side::Agent).len(), 10);
    let refused = |q: &std::collections::VecDeque<Out>| {
        q.iter()
            .filter(
                |o| matches!(o, Out::Line(l) if l.windows(14).any(|w| w == b"\"code\":-32000,")),
            )
            .count()
    };
    assert_eq!(refused(&t.out.to_client), 90, "the client's extra requests");
    assert_eq!(refused(&t.out.to_agent), 90, "the agent's extra requests");
}

/// `--max-in-flight` sets the cap: with 2, the client's third request the agent has not
/// answered is refused at once with `-32000`, naming the limit.
#[tokio::test]
async fn max_in_flight_flag_sets_the_cap() {
    // An agent that reads everything and answers nothing.
    let mut b = Bridge::with_args(&["--max-in-flight", "2", "--", "sh", "-c", "cat > /dev/null"]);
    for id in 1..=3 {
        b.send(&json!({"jsonrpc":"2.0","id":id,"method":"x/y","params":{}}))
            .await;
    }
    let (refused, before) = b.response(json!(3)).await;
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("limit 2")),
        "{refused}"
    );
}
