//! The control server through the real binaries, with `jsonrpsee`'s own HTTP and WebSocket
//! clients: list, answer, reject, subscribe, status; tokens, Host and Origin refused; the
//! race between the IDE client and the control server resolves each question once.

use std::time::Duration;

use crate::common::control::{http, params, raw_http, subscribed};
use crate::common::*;
use acp_question_bridge::control::client::ws_client;
use jsonrpsee::core::client::{ClientT, Error as RpcError, Subscription};
use jsonrpsee::rpc_params;
use serde_json::{json, Value};

const NATIVE: &str =
    r#"{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}"#;
const ASK: &str = "_sandboxagent/session/request_question";

fn ws_url(base: &str) -> String {
    base.replacen("http://", "ws://", 1)
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f).await.expect("timed out")
}

/// The next question lifecycle event (`desk` and `ring`, which say when to ring, are
/// tested in `ringing.rs`).
async fn next_event(sub: &mut Subscription<Value>) -> Value {
    loop {
        let e = within(sub.next())
            .await
            .expect("subscription ended")
            .expect("event");
        if e["event"] != "desk" && e["event"] != "ring" {
            return e;
        }
    }
}

/// Reads the client side until the agent's report of the question's outcome.
async fn report(b: &mut Bridge) -> (String, Vec<Value>) {
    let (m, before) = b
        .recv_until(|m| {
            chunk_text(m).is_some_and(|t| {
                t.starts_with("answered:") || t.starts_with("rejected:") || t.starts_with("error:")
            })
        })
        .await;
    (chunk_text(&m).unwrap().to_owned(), before)
}

#[tokio::test]
async fn list_answer_subscribe_and_status() {
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    let sid = b.new_session(1).await;

    let (ws, mut sub) = subscribed(&base, &token).await;
    let c = http(&base, &token);
    let empty: Vec<Value> = within(c.request("questions.list", rpc_params![]))
        .await
        .unwrap();
    assert!(empty.is_empty());

    b.prompt(2, &sid, "question").await;
    let (asked, _) = b.recv_until(|m| m["method"] == ASK).await;
    let requested = next_event(&mut sub).await;
    assert_eq!(requested["event"], "requested");
    assert_eq!(requested["question"]["questionId"], "mock-q-1");
    assert_eq!(next_event(&mut sub).await["event"], "delivered");

    let list: Vec<Value> = within(c.request("questions.list", rpc_params![]))
        .await
        .unwrap();
    assert_eq!(list.len(), 1);
    let q = &list[0];
    assert_eq!(q["sessionId"], sid.as_str());
    assert_eq!(q["dialect"], "extension");
    assert_eq!(q["items"][0]["options"][1]["value"], "option-b");
    assert!(q["createdAt"].as_str().unwrap().ends_with('Z'));

    let result: Value = within(c.request(
        "questions.answer",
        params(json!({"sessionId": sid, "questionId": "mock-q-1", "answers": [["Option B"]]})),
    ))
    .await
    .unwrap();
    assert_eq!(
        result,
        json!({"status":"answered","answers":[["option-b"]]})
    );
    // The client is told to close the request it shows, and the agent got the answer.
    let (text, before) = report(&mut b).await;
    assert_eq!(text, r#"answered: [["option-b"]]"#);
    assert!(told_over(&before), "{before:?}");
    let resolved = next_event(&mut sub).await;
    assert_eq!(resolved["event"], "resolved");
    assert_eq!(resolved["by"], "control");
    assert_eq!(resolved["result"]["answers"], json!([["option-b"]]));

    // The IDE's own answer, after the control server's, is dropped and reported.
    b.send(&json!({"jsonrpc":"2.0","id":asked["id"],"result":{"status":"answered","answers":[["option-a"]]}}))
        .await;
    let late = next_event(&mut sub).await;
    assert_eq!(late["event"], "late_answer");
    assert_eq!(late["from"], "client");
    assert_eq!(late["questionId"], "mock-q-1");

    let status: Value = within(ws.request("bridge.status", rpc_params![]))
        .await
        .unwrap();
    assert!(status["agentPid"].as_u64().unwrap() > 0);
    assert_eq!(
        status["wall"],
        serde_json::json!({"mode": "own-files", "on": true}),
        "the agent runs inside the wall by default"
    );
    assert_eq!(status["dialect"], "extension");
    assert_eq!(status["pendingQuestions"], 0);
    assert_eq!(status["sessions"], 1);
    assert_eq!(status["counters"]["questionsAnswered"], 1);
    assert_eq!(status["counters"]["lateAnswersDropped"], 1);

    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

#[tokio::test]
async fn reject_a_question_the_client_cannot_show() {
    // No capabilities: the permission prompt cannot show three items at once, so the
    // question waits on the control server instead of being rejected as unsupported.
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;
    b.initialize(json!({})).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "questions").await;
    let c = http(&base, &token);
    let list = within(async {
        loop {
            let l: Vec<Value> = c.request("questions.list", rpc_params![]).await.unwrap();
            if !l.is_empty() {
                return l;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(list[0]["dialect"], "control");
    assert_eq!(list[0]["items"].as_array().unwrap().len(), 3);
    // A bad answer is refused with the field, and the question stays.
    let bad = within(c.request::<Value, _>(
        "questions.answer",
        params(json!({"sessionId": sid, "questionId": "mock-q-1", "answers": [["MySQL"],["auth"],["x"]]})),
    ))
    .await;
    match bad {
        Err(RpcError::Call(e)) => {
            assert_eq!(e.code(), -32602);
            assert!(e.message().contains("answers[0][0]"), "{}", e.message());
        }
        other => panic!("{other:?}"),
    }
    let r: Value = within(c.request(
        "questions.reject",
        params(json!({"sessionId": sid, "questionId": "mock-q-1", "reason": "cancelled"})),
    ))
    .await
    .unwrap();
    assert_eq!(r, json!({"status":"rejected","reason":"cancelled"}));
    let (text, before) = report(&mut b).await;
    assert_eq!(text, "rejected: cancelled");
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "session/request_permission"),
        "the client was never shown it: {before:?}"
    );
    // Again: not pending any more, and who resolved it is named.
    let again = within(c.request::<Value, _>(
        "questions.reject",
        params(json!({"sessionId": sid, "questionId": "mock-q-1"})),
    ))
    .await;
    match again {
        Err(RpcError::Call(e)) => {
            assert_eq!(e.code(), -32004);
            assert_eq!(e.data().unwrap().get(), r#"{"resolvedBy":"control"}"#);
        }
        other => panic!("{other:?}"),
    }
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"questions.list","params":[]}"#;

fn post(headers: &str) -> String {
    format!(
        "POST / HTTP/1.1\r\nHost: {{addr}}\r\nContent-Type: application/json\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n{LIST}",
        LIST.len()
    )
}

#[tokio::test]
async fn tokens_hosts_and_origins_are_checked() {
    let b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;

    // The right token works, over HTTP and WebSocket.
    let ok: Vec<Value> = within(http(&base, &token).request("questions.list", rpc_params![]))
        .await
        .unwrap();
    assert!(ok.is_empty());
    let (status, _) = raw_http(&base, &post(&format!("Authorization: Bearer {token}\r\n"))).await;
    assert!(status.contains(" 200 "), "{status}");

    // Missing or wrong: 401, over both.
    let (status, body) = raw_http(&base, &post("")).await;
    assert!(status.contains(" 401 "), "{status}");
    assert!(body.contains("bearer token"), "{body}");
    // The token with its last character changed (to one it surely is not).
    let last = if token.ends_with('0') { '1' } else { '0' };
    let wrong = format!("{}{last}", &token[..token.len() - 1]);
    let (status, _) = raw_http(&base, &post(&format!("Authorization: Bearer {wrong}\r\n"))).await;
    assert!(status.contains(" 401 "), "{status}");
    assert!(
        within(http(&base, &wrong).request::<Vec<Value>, _>("questions.list", rpc_params![]))
            .await
            .is_err()
    );
    assert!(within(ws_client(&ws_url(&base), &wrong)).await.is_err());
    assert!(within(ws_client(&ws_url(&base), "")).await.is_err());

    // Another site's page, or a rebound host name, is refused even with the token.
    let (status, _) = raw_http(
        &base,
        &post(&format!(
            "Authorization: Bearer {token}\r\nOrigin: http://evil.example\r\n"
        )),
    )
    .await;
    assert!(status.contains(" 403 "), "{status}");
    let (status, _) = raw_http(
        &base,
        &format!(
            "GET /?access_token={token} HTTP/1.1\r\nHost: {{addr}}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: http://evil.example:1\r\n\r\n"
        ),
    )
    .await;
    assert!(status.contains(" 403 "), "{status}");
    let (status, _) = raw_http(
        &base,
        "GET / HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(status.contains(" 403 "), "{status}");

    // The page needs no token (it holds none) and keeps to itself.
    let (status, page) = raw_http(
        &base,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(status.contains(" 200 "), "{status}");
    assert!(page.contains("No questions right now."));
    assert!(page
        .to_ascii_lowercase()
        .contains("content-security-policy"));
    // Only the page's own script may run (a fresh nonce per load), so markup an agent
    // managed to inject could not.
    let nonce = page
        .split_once("script-src 'nonce-")
        .and_then(|(_, rest)| rest.split_once('\''))
        .map(|(n, _)| n.to_owned())
        .expect("a script nonce in the CSP");
    assert!(page.contains(&format!("<script nonce=\"{nonce}\">")));
    assert!(!page.contains("script-src 'unsafe-inline'"));
    assert!(!page.contains(&token));
}

#[tokio::test]
async fn client_and_control_racing_resolve_each_question_once() {
    const ROUNDS: usize = 25;
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    let sid = b.new_session(1).await;
    let c = http(&base, &token);
    let (mut control_won, mut client_won) = (0, 0);
    for round in 0..ROUNDS {
        let qid = format!("race-{round}");
        b.prompt(10 + round as i64, &sid, &format!("question {qid}"))
            .await;
        let (asked, _) = b.recv_until(|m| m["method"] == ASK).await;
        // Both answer at once: the IDE picks A, the control server B.
        let client_answer = json!({"jsonrpc":"2.0","id":asked["id"],"result":{"status":"answered","answers":[["option-a"]]}});
        let control = c.request::<Value, _>(
            "questions.answer",
            params(json!({"sessionId": sid, "questionId": qid, "answers": [["option-b"]]})),
        );
        let (r, ()) = within(async { tokio::join!(control, b.send(&client_answer)) }).await;
        let (text, _) = report(&mut b).await;
        match r {
            Ok(_) => {
                control_won += 1;
                assert_eq!(text, r#"answered: [["option-b"]]"#);
            }
            Err(RpcError::Call(e)) => {
                client_won += 1;
                assert_eq!(e.code(), -32004);
                assert_eq!(e.data().unwrap().get(), r#"{"resolvedBy":"client"}"#);
                assert_eq!(text, r#"answered: [["option-a"]]"#);
            }
            Err(e) => panic!("{e}"),
        }
    }
    // The last round's losing answer may still sit in the bridge's stdin: a prompt's round
    // trip after it, read in order, means the bridge has handled it.
    b.prompt(99, &sid, "hello").await;
    b.recv_until(|m| m["id"] == json!(99) && m.get("method").is_none())
        .await;
    let status: Value = within(c.request("bridge.status", rpc_params![]))
        .await
        .unwrap();
    // One answer per question reached the agent; the other of each pair was dropped.
    assert_eq!(status["counters"]["questionsAnswered"], ROUNDS);
    assert_eq!(status["counters"]["lateAnswersDropped"], ROUNDS);
    assert_eq!(control_won + client_won, ROUNDS);
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

#[tokio::test]
async fn token_from_the_environment_and_the_token_file() {
    let dir = temp_dir("token");
    // A token file is kept where every bridge's wall hides it: beneath the state folder.
    let state = dir.join("state");
    let file = state.join("acp-question-bridge/token");
    let mut b = Bridge::spawn_env(
        &[
            "--control",
            "localhost:0",
            "--control-token-file",
            file.to_str().unwrap(),
            "--",
            MOCK,
        ],
        &[
            ("ACP_QUESTION_BRIDGE_TOKEN", "a-token-chosen-by-the-user"),
            ("XDG_STATE_HOME", state.to_str().unwrap()),
        ],
    );
    let (base, token) = control_of(&b).await;
    assert_eq!(token, "a-token-chosen-by-the-user");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().trim(),
        "a-token-chosen-by-the-user"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let ok: Vec<Value> = within(http(&base, &token).request("questions.list", rpc_params![]))
        .await
        .unwrap();
    assert!(ok.is_empty());
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
    // Anywhere else the agent of another bridge, whose wall does not hide it, could read
    // it: refused, with where to keep it; without the wall it is the user's choice.
    let elsewhere = dir.join("token");
    let args = [
        "--control-token-file",
        elsewhere.to_str().unwrap(),
        "--",
        MOCK,
    ];
    let mut refused = Bridge::spawn_env(&args, &[("XDG_STATE_HOME", state.to_str().unwrap())]);
    assert_eq!(refused.wait().await, 1);
    let said = refused.stderr();
    assert!(
        said.contains("--control-token-file")
            && said.contains(&format!(
                "beneath {}",
                state.join("acp-question-bridge").display()
            )),
        "{said}"
    );
    let mut off = Bridge::spawn_env(
        &[&["--sandbox", "off"][..], &args[..]].concat(),
        &[("XDG_STATE_HOME", state.to_str().unwrap())],
    );
    control_of(&off).await;
    off.close_stdin();
    assert_eq!(off.wait().await, 0);
    let _ = std::fs::remove_dir_all(dir);
}

/// The token goes to stderr only when it is a terminal. An editor keeps its agent servers'
/// stderr in a log, which the agent (running as the user) could read, and then answer its
/// own questions: there the bridge names the page without its token, and where the token is.
#[tokio::test]
async fn the_token_is_printed_only_to_a_terminal() {
    // Piped, as an editor starts it: no token, and what to do instead.
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;
    b.stderr_contains("questions page: ").await;
    let said = b.stderr();
    assert!(!said.contains(&token), "{said}");
    assert!(!said.contains("#token="), "{said}");
    assert!(
        said.contains(&format!("questions page: {base} ("))
            && said.contains("acp-question-bridge inbox"),
        "{said}"
    );
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
    // With a token file, that is where it says the token is.
    let dir = temp_dir("token-hint");
    let file = dir.join("acp-question-bridge/token");
    let mut b = Bridge::spawn_env(
        &["--control-token-file", file.to_str().unwrap(), "--", MOCK],
        &[("XDG_STATE_HOME", dir.to_str().unwrap())],
    );
    let (_, token) = control_of(&b).await;
    b.stderr_contains(&format!("it is in {}", file.display()))
        .await;
    assert!(!b.stderr().contains(&token));
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
    // On a terminal (util-linux's `script` gives it one), the page's URL with its token.
    let registry = temp_dir("token-tty-registry");
    std::fs::set_permissions(
        &registry,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let mut child = tokio::process::Command::new("script")
        .args(["-qec", &format!("{BRIDGE} -- {MOCK}"), "/dev/null"])
        .env(REGISTRY_ENV, &registry)
        .env("XDG_CONFIG_HOME", test_config_home())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("script runs");
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let token = within(async {
        use tokio::io::AsyncBufReadExt as _;
        loop {
            let mut line = String::new();
            if out.read_line(&mut line).await.unwrap_or(0) == 0 {
                panic!("the terminal closed:\n{seen}");
            }
            seen.push_str(&line);
            if let Some((_, t)) = line.split_once("control token: ") {
                return t.trim().to_owned();
            }
        }
    })
    .await;
    assert!(seen.contains(&format!("#token={token}")), "{seen}");
    // The token printed is the bridge's own, as its entry in the registry says.
    within(async {
        while !std::fs::read_dir(&registry)
            .unwrap()
            .flatten()
            .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(&token)))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let _ = child.kill().await;
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(registry);
}

#[tokio::test]
async fn a_random_token_is_256_bits_and_remote_addresses_need_consent() {
    let b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (_, token) = control_of(&b).await;
    assert_eq!(token.len(), 64);
    assert!(token.bytes().all(|c| c.is_ascii_hexdigit()));

    let mut refused = Bridge::mock(&["--control", "0.0.0.0:0"]);
    assert_eq!(refused.wait().await, 2);
    assert!(refused.stderr().contains("--control-allow-remote"));
}

/// Runs `acp-question-bridge questions ARGS`; returns (exit code, stdout, stderr).
async fn cli(args: &[&str]) -> (i32, String, String) {
    let args: Vec<&str> = ["questions"]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    run_bridge(&args).await
}

/// Usage errors exit 2 (like clap's own); a failed call exits 1 and names the address.
#[tokio::test]
async fn the_questions_cli_exit_codes_and_messages() {
    let (code, _, err) = cli(&["list"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--control <URL> is required"), "{err}");
    let (code, _, err) = cli(&["list", "--control", "127.0.0.1:9", "--token", "t"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("must be an http:// URL"), "{err}");
    // A port nothing listens on (just released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let (code, _, err) = cli(&["list", "--control", &url, "--token", "t"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("cannot reach the control server at {url}/")),
        "{err}"
    );
    let (code, _, err) = cli(&["watch", "--control", &url, "--token", "t"]).await;
    assert_eq!(code, 1, "{err}");
    let ws = format!("ws://127.0.0.1:{port}/");
    assert!(
        err.contains(&format!("cannot reach the control server at {ws}")),
        "{err}"
    );
}

#[tokio::test]
async fn the_questions_cli_lists_answers_and_watches() {
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;
    let page_url = format!("{base}#token={token}");
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    let sid = b.new_session(1).await;

    // `watch` prints every event as a JSON line.
    let mut watch = tokio::process::Command::new(BRIDGE)
        .args(["questions", "watch", "--control", &page_url])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut watched = tokio::io::BufReader::new(watch.stdout.take().unwrap());
    // It says on stderr once it is subscribed.
    let mut watch_err = tokio::io::BufReader::new(watch.stderr.take().unwrap());
    let mut said = String::new();
    use tokio::io::AsyncBufReadExt as _;
    within(watch_err.read_line(&mut said)).await.unwrap();
    assert!(said.contains("watching ws://"), "{said}");

    let (code, out, _) = cli(&["list", "--control", &page_url]).await;
    assert_eq!((code, out.as_str()), (0, "No questions right now.\n"));
    b.prompt(2, &sid, "question cli-1").await;
    b.recv_until(|m| m["method"] == ASK).await;
    let (code, out, _) = cli(&["list", "--json", "--control", &base, "--token", &token]).await;
    assert_eq!(code, 0);
    let list: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(list[0]["questionId"], "cli-1");
    let (code, out, _) = cli(&["list", "--control", &page_url]).await;
    assert_eq!(code, 0);
    assert!(
        out.contains("question cli-1") && out.contains("option-b: Option B"),
        "{out}"
    );

    // A wrong value is refused with the reason; a label is accepted.
    let (code, _, err) = cli(&["answer", "--control", &page_url, &sid, "cli-1", "option-z"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("not one of the options"), "{err}");
    let (code, out, _) = cli(&["answer", "--control", &page_url, &sid, "cli-1", "Option A"]).await;
    assert_eq!(
        (code, out.trim()),
        (0, r#"{"status":"answered","answers":[["option-a"]]}"#)
    );
    let (text, _) = report(&mut b).await;
    assert_eq!(text, r#"answered: [["option-a"]]"#);
    let (code, _, err) = cli(&["reject", "--control", &page_url, &sid, "cli-1"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("already resolved by control"), "{err}");
    // No token at all: a usage error, before anything is sent.
    let (code, _, err) = cli(&["list", "--control", &base]).await;
    assert_eq!(code, 2);
    assert!(err.contains("no token"), "{err}");

    // Until the resolution; `watch` was subscribed before the question was asked.
    let mut events = Vec::new();
    while events.last().map(String::as_str) != Some("resolved") {
        let mut line = String::new();
        use tokio::io::AsyncBufReadExt;
        within(watched.read_line(&mut line)).await.unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if v["event"] != "desk" && v["event"] != "ring" {
            events.push(v["event"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(events, ["requested", "delivered", "resolved"]);
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
    // `watch` ends when the bridge does.
    let st = within(watch.wait()).await.unwrap();
    assert!(st.code().is_some(), "{st:?}");
}

#[tokio::test]
async fn subscribers_see_questions_withdrawn_when_the_agent_dies() {
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    let sid = b.new_session(1).await;
    let (ws, mut sub) = subscribed(&base, &token).await;
    b.prompt(2, &sid, "question doomed").await;
    b.recv_until(|m| m["method"] == ASK).await;
    let status: Value = within(ws.request("bridge.status", rpc_params![]))
        .await
        .unwrap();
    let pid = status["agentPid"].as_u64().unwrap().to_string();
    let killed = within(
        tokio::process::Command::new("kill")
            .args(["-9", &pid])
            .status(),
    )
    .await
    .unwrap();
    assert!(killed.success());
    let resolved = loop {
        let ev = next_event(&mut sub).await;
        if ev["event"] == "resolved" {
            break ev;
        }
    };
    assert_eq!(resolved["questionId"], "doomed");
    assert_eq!(resolved["by"], "disconnect");
    assert_eq!(resolved["result"], json!({"status":"withdrawn"}));
    b.drain().await;
    assert_eq!(b.wait().await, 137);
}

/// The agent's own tool approval (`session/request_permission`) is on the control server
/// with its tool call, the CLI shows it, and an answer from the CLI reaches the agent in
/// the permission shape while the IDE's copy is withdrawn; the IDE's late answer is
/// dropped.
#[tokio::test]
async fn a_tool_approval_is_listed_and_answered_from_the_cli() {
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;
    let page_url = format!("{base}#token={token}");
    b.initialize(json!({})).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "permission").await;
    let (asked, _) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    let c = http(&base, &token);
    let list: Vec<Value> = within(c.request("questions.list", rpc_params![]))
        .await
        .unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["source"], "permission");
    assert_eq!(list[0]["dialect"], "native");
    assert_eq!(list[0]["context"]["toolCall"]["title"], "Run the mock tool");
    let qid = list[0]["questionId"].as_str().unwrap().to_owned();
    let (code, out, _) = cli(&["list", "--control", &page_url]).await;
    assert_eq!(code, 0);
    assert!(
        out.contains("a tool approval") && out.contains("tool call: Run the mock tool"),
        "{out}"
    );
    // A value that is no option is refused, and the question stays.
    let (code, _, err) = cli(&["answer", "--control", &page_url, &sid, &qid, "maybe"]).await;
    assert_eq!(code, 1, "{err}");
    let (code, out, err) = cli(&["answer", "--control", &page_url, &sid, &qid, "Reject"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("reject"), "{out}");
    let (m, before) = b
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("permission:")))
        .await;
    assert_eq!(chunk_text(&m), Some("permission: reject"));
    assert!(
        told_over(&before),
        "the IDE's copy is marked done: {before:?}"
    );
    // The IDE answers anyway: dropped, the agent has its one answer.
    b.send(&json!({"jsonrpc":"2.0","id":asked["id"],"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}))
        .await;
    b.close_stdin();
    let rest = b.drain().await;
    assert!(
        !rest.iter().any(|l| l.contains("permission: allow")),
        "{rest:?}"
    );
    assert_eq!(b.wait().await, 0);
}
