//! Interop with code we did not write: the official ACP SDKs.
//!
//! The agent is the TypeScript SDK's own example agent
//! (`@agentclientprotocol/sdk@1.9.0`, `dist/examples/agent.js`, installed into
//! `<repo>/.cache/npm` on first use). It streams message chunks and tool calls,
//! then asks `session/request_permission` before a (simulated) edit. The client
//! is built on the official Rust crate `agent-client-protocol` v5: it
//! initializes, opens a session, prompts, grants the first "allow" option, and
//! expects stop reason `end_turn`.
//!
//! The same scenario runs twice, with the client talking (a) directly to
//! `node agent.js` and (b) to `acp-question-bridge -- node agent.js`. Every
//! JSON-RPC line is recorded at the client's side, in both directions. This
//! proves the bridge is transparent to real SDK peers: after replacing what
//! legitimately varies between runs (the agent's random session id and the
//! client's random UUID request ids), the transcripts are identical line for
//! line, byte for byte, except that in the `initialize` request and response
//! the bridge's own `_meta."sandboxagent.dev"` capability blocks are ignored.

use crate::common;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, StopReason, TextContent,
};
use agent_client_protocol::{Client, Error, Lines};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::time::timeout;

const SDK: &str = "@agentclientprotocol/sdk";
const SDK_VERSION: &str = "1.9.0";
/// Per protocol step; the example agent sleeps 1 s between updates (5 s per prompt).
const STEP: Duration = Duration::from_secs(30);
const SCENARIO: Duration = Duration::from_secs(60);
/// How long a child may take to exit once its stdin is closed.
const EXIT: Duration = Duration::from_secs(10);

/// `true`: client -> agent; `false`: agent -> client.
type Transcript = Vec<(bool, String)>;

struct Run {
    transcript: Transcript,
    stop_reason: StopReason,
    /// The option the client's handler chose, per permission request.
    permissions: Vec<String>,
    stderr: String,
}

/// The example agent's path, running `npm install` into the cache if needed.
async fn example_agent() -> PathBuf {
    let agent = common::npm_package(SDK, SDK_VERSION)
        .await
        .join("dist/examples/agent.js");
    assert!(agent.is_file(), "{SDK}@{SDK_VERSION} has no {agent:?}");
    agent
}

/// Bounds one step of the client's script.
async fn step<T>(what: &str, fut: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
    match timeout(STEP, fut).await {
        Ok(result) => result,
        Err(_) => Err(Error::internal_error().data(json!(format!("timed out: {what}")))),
    }
}

/// Runs the SDK client against `program args`, recording every line on its stdio.
async fn run_scenario(program: &Path, args: &[&Path]) -> Run {
    let mut cmd = Command::new(program);
    cmd.args(args).kill_on_drop(true).stdin(Stdio::piped());
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let spawned = cmd.spawn();
    let mut child = spawned.unwrap_or_else(|e| panic!("cannot spawn {program:?}: {e}"));
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let stderr_task = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });

    let log = Arc::new(Mutex::new(Transcript::new()));
    let outgoing = futures::sink::unfold((stdin, log.clone()), |(mut w, log), line: String| {
        log.lock().unwrap().push((true, line.clone()));
        async move {
            w.write_all(format!("{line}\n").as_bytes()).await?;
            w.flush().await.map(|()| (w, log))
        }
    });
    let reader = Some(BufReader::new(stdout).lines());
    let incoming = futures::stream::unfold((reader, log.clone()), |(reader, log)| async move {
        let mut lines = reader?;
        match lines.next_line().await {
            Ok(Some(line)) => {
                log.lock().unwrap().push((false, line.clone()));
                Some((Ok(line), (Some(lines), log)))
            }
            Ok(None) => None,
            Err(e) => Some((Err(e), (None, log))),
        }
    });

    let permissions = Arc::new(Mutex::new(Vec::new()));
    let seen = permissions.clone();
    let cwd = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let client = Client
        .v1()
        .name("interop-sdk-test")
        .on_receive_notification(
            async |_: SessionNotification, _cx| Ok(()),
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest, responder, _cx| {
                let allow = req.options.iter().find(|o| {
                    matches!(
                        o.kind,
                        PermissionOptionKind::AllowOnce | PermissionOptionKind::AllowAlways
                    )
                });
                let Some(allow) = allow else {
                    return Err(Error::invalid_params().data(json!("no allow option offered")));
                };
                seen.lock().unwrap().push(allow.option_id.to_string());
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        allow.option_id.clone(),
                    )),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(Lines::new(Box::pin(outgoing), incoming), async |cx| {
            let init = cx.send_request(InitializeRequest::new(ProtocolVersion::V1));
            step("initialize", init.block_task()).await?;
            let new = cx.send_request(NewSessionRequest::new(cwd));
            let session = step("session/new", new.block_task()).await?;
            let text = ContentBlock::Text(TextContent::new("Please improve the config."));
            let prompt = cx.send_request(PromptRequest::new(session.session_id, vec![text]));
            let response = step("session/prompt", prompt.block_task()).await?;
            Ok(response.stop_reason)
        });
    let result = timeout(SCENARIO, client).await;
    // The client has closed the child's stdin: let it shut down (the bridge reaps its
    // agent), and kill it only if it lingers.
    if timeout(EXIT, child.wait()).await.is_err() {
        let killed = timeout(STEP, child.kill()).await;
        assert!(matches!(killed, Ok(Ok(()))), "kill: {killed:?}");
    }
    let stderr = timeout(STEP, stderr_task).await.expect("stderr");
    let stderr = stderr.unwrap().trim_end().to_owned();
    let transcript = std::mem::take(&mut *log.lock().unwrap());
    let stop_reason = match result {
        Ok(Ok(stop)) => stop,
        Ok(Err(e)) => panic!("client failed: {e:?}\n{transcript:#?}\nstderr:\n{stderr}"),
        Err(_) => panic!("scenario timed out\n{transcript:#?}\nstderr:\n{stderr}"),
    };
    let permissions = std::mem::take(&mut *permissions.lock().unwrap());
    Run {
        transcript,
        stop_reason,
        permissions,
        stderr,
    }
}

/// Removes the bridge's `_meta."sandboxagent.dev"` capability blocks (and a `_meta` left empty).
fn strip_bridge_meta(msg: &mut Value) {
    for caps in ["/params/clientCapabilities", "/result/agentCapabilities"] {
        let Some(caps) = msg.pointer_mut(caps).and_then(Value::as_object_mut) else {
            continue;
        };
        let Some(meta) = caps.get_mut("_meta").and_then(Value::as_object_mut) else {
            continue;
        };
        if meta.shift_remove("sandboxagent.dev").is_some() && meta.is_empty() {
            caps.shift_remove("_meta");
        }
    }
}

fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// Normalized lines: raw text with varying ids replaced by placeholders;
/// `initialize` request/response re-serialized (key order kept) without the bridge's blocks.
fn normalize(transcript: &Transcript) -> Vec<String> {
    let (mut varying, mut init_id) = (Vec::<String>::new(), None);
    for (to_agent, line) in transcript {
        let msg = parse(line);
        if msg["method"] == "initialize" {
            init_id = Some(msg["id"].clone());
        }
        if let (true, Some(_), Some(Value::String(id))) =
            (*to_agent, msg.get("method"), msg.get("id"))
        {
            varying.push(id.clone()); // the Rust SDK's UUID request ids
        }
        if let Some(Value::String(id)) = msg.pointer("/result/sessionId") {
            varying.push(id.clone()); // the example agent's random session id
        }
    }
    let mut out = Vec::new();
    for (to_agent, line) in transcript {
        let mut msg = parse(line);
        let is_init = msg["method"] == "initialize"
            || (!*to_agent && msg.get("method").is_none() && msg.get("id") == init_id.as_ref());
        let mut text = if is_init {
            strip_bridge_meta(&mut msg);
            msg.to_string()
        } else {
            line.clone()
        };
        for (i, id) in varying.iter().enumerate() {
            text = text.replace(&format!("\"{id}\""), &format!("\"<varying-{i}>\""));
        }
        out.push(format!("{} {text}", if *to_agent { "->" } else { "<-" }));
    }
    out
}

/// Asserts the concrete protocol facts of one run, from the transcript and the client's view.
fn check_run(name: &str, run: &Run) {
    let ctx = format!("[{name}]\n{:#?}\nstderr:\n{}", run.transcript, run.stderr);
    assert_eq!(run.stop_reason, StopReason::EndTurn, "{ctx}");
    assert_eq!(run.permissions, ["allow"], "one permission granted {ctx}");
    let msgs: Vec<(bool, Value)> = run.transcript.iter().map(|(d, l)| (*d, parse(l))).collect();
    let count = |method| msgs.iter().filter(|(_, m)| m["method"] == method).count();
    assert_eq!(count("session/update"), 7, "session/update count {ctx}");
    assert_eq!(count("session/request_permission"), 1, "{ctx}");
    let is_ask = |(d, m): &&(bool, Value)| !d && m["method"] == "session/request_permission";
    let (_, ask) = msgs.iter().find(is_ask).expect("permission request");
    assert_eq!(ask["params"]["toolCall"]["toolCallId"], "call_2", "{ctx}");
    let is_answer = |(d, m): &&(bool, Value)| *d && m["id"] == ask["id"];
    let answer = msgs.iter().find(is_answer);
    let (_, answer) = answer.unwrap_or_else(|| panic!("permission not answered {ctx}"));
    let outcome = json!({"outcome": "selected", "optionId": "allow"});
    let expected = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"outcome": outcome}});
    assert_eq!(answer, &expected, "{ctx}");
    let (to_agent, last) = msgs.last().expect("empty transcript");
    let end_turn = json!({"stopReason": "end_turn"});
    assert!(!to_agent && last["result"] == end_turn, "{ctx}");
}

#[test]
fn normalization_ignores_only_the_bridge_capability_blocks() {
    // Adds `I` to the initialize capabilities, `O` to another message's.
    let run = |i: &str, o: &str| {
        let init = r#"{"id":"u","method":"initialize","params":{"clientCapabilities":{"a":1I}}}"#;
        let reply = r#"{"id":"u","result":{"agentCapabilities":{"a":1I}}}"#;
        let other = r#"{"id":1,"method":"x","params":{"clientCapabilities":{"a":1O}}}"#;
        let line = |l: &str| l.replace('I', i).replace('O', o);
        normalize(&vec![
            (true, line(init)),
            (false, line(reply)),
            (false, line(other)),
        ])
    };
    let (plain, ours) = (run("", ""), r#","_meta":{"sandboxagent.dev":{"v":1}}"#);
    assert_eq!(plain, run(ours, ""));
    assert_ne!(plain, run("", ours), "only initialize is exempt");
    let others = [
        r#","_meta":{}"#,
        r#","_meta":{"x":1,"sandboxagent.dev":2}"#,
        r#","x":1"#,
    ];
    for other in others {
        assert_ne!(plain, run(other, ""), "{other}");
    }
}

#[tokio::test]
async fn sdk_client_and_example_agent_see_the_same_conversation_through_the_bridge() {
    let agent = example_agent().await;
    let node = Path::new("node");
    let bridge = Path::new(env!("CARGO_BIN_EXE_acp-question-bridge"));
    let direct_args = [agent.as_path()];
    let bridged_args = [Path::new("--"), node, agent.as_path()];
    // Both runs at once: the example agent mostly sleeps.
    let (direct, bridged) = tokio::join!(
        run_scenario(node, &direct_args),
        run_scenario(bridge, &bridged_args),
    );
    check_run("direct", &direct);
    check_run("bridged", &bridged);
    assert_eq!(
        normalize(&direct.transcript).join("\n"),
        normalize(&bridged.transcript).join("\n"),
        "transcripts differ (left: direct, right: through the bridge)\nbridge stderr:\n{}",
        bridged.stderr
    );
}
