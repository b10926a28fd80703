//! Process tests of the core proxy: the real bridge binary around the real mock agent
//! (or a shell agent), driven as an IDE client would drive it.

use std::time::Duration;

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn full_session_initialize_new_prompt() {
    let mut b = Bridge::mock(&[]);
    let init = b.initialize(json!({"fs":{"readTextFile":true}})).await;
    assert_eq!(init["result"]["protocolVersion"], 1);
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
    let sid = b.new_session(1).await;
    assert_eq!(sid, "mock-session-1");
    b.prompt(2, &sid, "hello from the client side").await;
    let (resp, before) = b.response(json!(2)).await;
    assert_eq!(resp["result"]["stopReason"], "end_turn");
    assert_eq!(chunks(&before), "hello from the client side ");
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
}

#[tokio::test]
async fn agent_crash_mid_prompt_answers_the_prompt_and_exits_with_its_code() {
    let mut b = Bridge::mock(&[]);
    let sid = b.open_session().await;
    b.prompt(7, &sid, "crash 3").await;
    let (resp, before) = b.response(json!(7)).await;
    assert_eq!(chunks(&before), "about to crash");
    assert_eq!(resp["error"]["code"], -32603);
    let msg = resp["error"]["message"].as_str().unwrap();
    assert!(msg.contains("exited with code 3"), "{msg}");
    assert!(msg.contains("session/prompt"), "{msg}");
    assert_eq!(resp["error"]["data"]["exitCode"], 3);
    let tail = resp["error"]["data"]["stderrTail"].as_str().unwrap();
    assert!(tail.contains("crashing with code 3"), "{tail}");
    assert_eq!(b.wait().await, 3);
    // Exactly one answer: nothing else follows.
    assert!(b.drain().await.is_empty());
}

#[tokio::test]
async fn client_eof_is_a_clean_exit() {
    let mut b = Bridge::mock(&[]);
    b.open_session().await;
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
    assert!(b.stderr().contains("client closed stdin"));
}

#[tokio::test]
async fn sigterm_terminates_agent_and_bridge() {
    let mut b = Bridge::mock(&["--shutdown-grace", "5s"]);
    let sid = b.open_session().await;
    b.prompt(5, &sid, "slow 60000").await;
    // The agent reads in order: once it answered this, it has the prompt too.
    b.new_session(6).await;
    let agent_pid = agent_pid_of(b.pid()).expect("agent pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(b.pid() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    // The mock agent dies of the forwarded SIGTERM; the waiting prompt gets its error.
    let (resp, _) = b.response(json!(5)).await;
    assert_eq!(resp["error"]["code"], -32603);
    assert_eq!(b.wait().await, 128 + 15);
    assert!(!std::path::Path::new(&format!("/proc/{agent_pid}")).exists());
}

#[tokio::test]
async fn agent_that_ignores_stdin_eof_is_terminated_after_the_grace() {
    // Like codex-acp: never exits on stdin EOF.
    let argv: Vec<String> = [
        "--shutdown-grace",
        "200ms",
        "--",
        "sh",
        "-c",
        "trap '' HUP; while :; do sleep 1; done",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut b = Bridge::spawn(&argv);
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
    assert!(b.stderr().contains("sending SIGTERM"), "{}", b.stderr());
}

#[tokio::test]
async fn agent_ignoring_sigterm_is_killed() {
    let argv: Vec<String> = [
        "--shutdown-grace",
        "200ms",
        "--",
        "sh",
        "-c",
        "trap '' TERM; while :; do sleep 1; done",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut b = Bridge::spawn(&argv);
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
    assert!(b.stderr().contains("sending SIGKILL"), "{}", b.stderr());
}

#[tokio::test]
async fn agent_garbage_line_is_not_forwarded() {
    let mut b = Bridge::mock(&[]);
    let sid = b.open_session().await;
    b.prompt(3, &sid, "garbage in the pipe").await;
    let (resp, before) = b.response(json!(3)).await;
    assert_eq!(resp["result"]["stopReason"], "end_turn");
    assert_eq!(chunks(&before), "garbage in the pipe ");
    // The log line may still be on its way through the stderr reader: wait for it.
    b.stderr_contains("line is not JSON; not forwarded").await;
    b.stderr_contains("this line is not JSON").await;
}

#[tokio::test]
async fn client_bad_input_is_answered_and_not_forwarded() {
    let mut b = Bridge::mock(&[]);
    b.send_raw(b"not json\n").await;
    let r = b.recv().await;
    assert_eq!(r["id"], serde_json::Value::Null);
    assert_eq!(r["error"]["code"], -32700);
    b.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":7}\n")
        .await;
    let r = b.recv().await;
    assert_eq!(r["id"], "a");
    assert_eq!(r["error"]["code"], -32600);
    // CRLF, a BOM and blank lines are fine; the agent answers normally.
    b.send_raw(
        b"\xEF\xBB\xBF\r\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\r\n",
    )
    .await;
    let r = b.recv().await;
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["protocolVersion"], 1);
}

#[tokio::test]
async fn over_long_line_is_dropped_and_the_stream_goes_on() {
    let mut b = Bridge::mock(&["--max-line-bytes", "1000"]);
    let mut big = b"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"p\":\"".to_vec();
    big.extend(std::iter::repeat_n(b'a', 5000));
    big.extend_from_slice(b"\"}}\n");
    b.send_raw(&big).await;
    b.open_session().await;
    b.stderr_contains("longer than --max-line-bytes").await;
}

#[tokio::test]
async fn missing_agent_and_unspawnable_agent() {
    let out = tokio::time::timeout(WAIT, tokio::process::Command::new(BRIDGE).output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(BRIDGE)
            .args(["--no-control", "--", "/nonexistent/agent-cli"])
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/agent-cli"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[tokio::test]
async fn help_and_version() {
    for flag in ["--help", "--version"] {
        let out = tokio::time::timeout(
            WAIT,
            tokio::process::Command::new(BRIDGE).arg(flag).output(),
        )
        .await
        .unwrap()
        .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("acp-question-bridge"), "{text}");
    }
}

/// A client that stops reading stdout while the agent floods must not stop
/// client->agent traffic, and the bridge's memory stays bounded.
#[tokio::test]
async fn stalled_client_does_not_block_the_other_direction() {
    let mut b = Bridge::mock(&[]);
    b.initialize(json!({})).await;
    let flood = b.new_session(1).await;
    let other = b.new_session(2).await;
    // ~2 GB of chunks: far more than any buffer; we never read them.
    b.prompt(3, &flood, "flood 1000000 2000").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The agent proves it got this request by writing to stderr.
    b.prompt(4, &other, "stderr reached-the-agent").await;
    b.stderr_contains("reached-the-agent").await;
    let rss = rss_kib(b.pid());
    assert!(rss > 0 && rss < 64 * 1024, "bridge RSS {rss} KiB");
    // Let it finish: cancel the flood and read everything.
    b.send(&json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":flood}}))
        .await;
    let (resp, _) = b.response(json!(3)).await;
    assert_eq!(resp["result"]["stopReason"], "cancelled");
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

/// Like gemini-cli re-launching itself: the agent's own child must go with the group.
#[tokio::test]
async fn grandchildren_are_terminated_with_the_agent_group() {
    let dir = temp_dir("grandchild");
    let pidfile = dir.join("pid");
    let script = format!("sleep 1000 & echo $! > {}; wait", pidfile.display());
    let mut b = Bridge::with_args(&["--shutdown-grace", "200ms", "--", "sh", "-c", &script]);
    let grandchild: u32 = tokio::time::timeout(WAIT, async {
        loop {
            if let Some(pid) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("grandchild pid");
    // Its pid in the wall's PID namespace, as the system knows it.
    let grandchild = system_pid(grandchild as u32, b.pid());
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
    // Gone, or a zombie nobody has reaped yet (dead either way).
    let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
    let state = stat.rsplit(") ").next().and_then(|r| r.chars().next());
    assert!(
        matches!(state, None | Some('Z') | Some('X')),
        "grandchild {grandchild} survived: {stat}"
    );
}

#[tokio::test]
async fn log_file_and_json_format_and_cwd() {
    let dir = temp_dir("logs");
    let log = dir.join("bridge.log");
    let mut b = Bridge::with_args(&[
        "--log-file",
        log.to_str().unwrap(),
        "--log-format",
        "json",
        "--cwd",
        dir.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "pwd >&2",
    ]);
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
    // The agent's stderr still reaches ours; the bridge's logs went to the file.
    let stderr = b.stderr();
    assert!(
        stderr.contains(dir.file_name().unwrap().to_str().unwrap()),
        "{stderr}"
    );
    assert!(!stderr.contains("agent started"), "{stderr}");
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(
        logs.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .any(|l| l["fields"]["message"] == "agent started"),
        "{logs}"
    );
}

/// Regression: with a burst of agent requests, a client that answers each one before it
/// reads the next must not deadlock the bridge (the bridge once stopped reading the client
/// while a batch of forwarded lines waited for it, and the client waited for the bridge).
#[tokio::test]
async fn client_answering_while_agent_floods_requests_does_not_deadlock() {
    // (A background job reads /dev/null unless told otherwise, hence fd 3.)
    let script = "exec 3<&0; cat <&3 > /dev/null & i=0; while [ $i -lt 3000 ]; do \
        printf '{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"fs/read_text_file\",\"params\":{\"sessionId\":\"s\",\"path\":\"/tmp/%d\"}}\\n' $i $i; \
        i=$((i+1)); done; wait";
    // The agent's `fs/*` requests are relayed only outside the wall, which refuses them.
    let mut b = Bridge::with_args(&["--sandbox", "off", "--", "sh", "-c", script]);
    let big = "x".repeat(4000);
    for n in 0..3000 {
        let req = b.recv().await;
        assert_eq!(req["id"], n);
        // Large answers fill the pipe to the bridge quickly if the bridge stops reading.
        b.send(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"content":big}}))
            .await;
    }
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

/// A client that writes a lot and hangs up at once (a batch job) while the agent consumes
/// slowly: the agent still gets every line (the hang-up only shuts down an agent that
/// stops reading altogether; see tests/it/regressions.rs f9).
#[tokio::test]
async fn slow_agent_gets_all_input_after_the_client_hangs_up() {
    let script =
        "n=0; while read -r l; do n=$((n+1)); sleep 0.002; done; echo \"read $n lines\" >&2";
    let mut b = Bridge::with_args(&["--shutdown-grace", "300ms", "--", "sh", "-c", script]);
    let mut line = br#"{"jsonrpc":"2.0","method":"_fill","params":{"p":""#.to_vec();
    line.extend(std::iter::repeat_n(b'a', 4000));
    line.extend_from_slice(b"\"}}\n");
    let all: Vec<u8> = line.repeat(400);
    b.send_raw(&all).await;
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
    assert!(b.stderr().contains("read 400 lines"), "{}", b.stderr());
}

/// An agent that reads, however slowly, is never shut down for stalling after the client
/// hangs up: progress is what its stdin accepted, partial writes of a long line included.
/// Here about 500 KB/s of 512 KiB lines against a 500 ms grace (a line takes about a
/// second to read).
#[tokio::test]
async fn an_agent_reading_slowly_gets_every_long_line_and_exits_by_itself() {
    // Reads 32 KiB at a time, with a pause between reads: about 500 KB/s at most.
    let script = "total=0; while :; do n=$(dd bs=32768 count=1 2>/dev/null | wc -c); \
                  [ \"$n\" -eq 0 ] && break; total=$((total+n)); sleep 0.06; done; \
                  echo \"read $total bytes\" >&2";
    let mut b = Bridge::with_args(&["--shutdown-grace", "500ms", "--", "sh", "-c", script]);
    let mut line = br#"{"jsonrpc":"2.0","method":"_fill","params":{"p":""#.to_vec();
    line.resize(512 * 1024 - 3, b'a');
    line.extend_from_slice(b"\"}}\n");
    let lines = 6;
    let all: Vec<u8> = line.repeat(lines);
    b.send_raw(&all).await;
    b.close_stdin();
    assert_eq!(b.wait().await, 0, "{}", b.stderr());
    let expected = format!("read {} bytes", all.len());
    assert!(b.stderr().contains(&expected), "{}", b.stderr());
    assert!(!b.stderr().contains("SIGTERM"), "{}", b.stderr());
}

/// Whether process `pid` is gone, or a zombie nobody has reaped yet (dead either way).
fn dead(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(") ").next().and_then(|r| r.chars().next());
    matches!(state, None | Some('Z') | Some('X'))
}

/// Runs `sh -c <prefix> sleep 1000 & ...; wait` behind the bridge, SIGKILLs the bridge, and
/// returns how long the agent and its child took to be gone.
async fn kill_bridge_with_agent(prefix: &str) -> Duration {
    let dir = temp_dir("killed-bridge");
    let pidfile = dir.join("pids");
    let script = format!(
        "{prefix} sleep 1000 & echo \"$$ $!\" > {}.tmp; mv {0}.tmp {0}; wait",
        pidfile.display()
    );
    let mut b = Bridge::with_args(&["--shutdown-grace", "500ms", "--", "sh", "-c", &script]);
    let pids: Vec<i32> = tokio::time::timeout(WAIT, async {
        loop {
            if let Ok(text) = std::fs::read_to_string(&pidfile) {
                return text
                    .split_whitespace()
                    .map(|p| p.parse().unwrap())
                    .collect();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the agent's pids");
    assert_eq!(pids.len(), 2);
    // Their pids in the wall's PID namespace, as the system knows them.
    let pids: Vec<i32> = pids
        .iter()
        .map(|&p| system_pid(p as u32, b.pid()) as i32)
        .collect();
    // Wait for the guard too, so the kill is not of a bridge still starting up.
    b.stderr_contains("agent guard started").await;
    let killed = std::time::Instant::now();
    b.child.start_kill().expect("SIGKILL the bridge");
    tokio::time::timeout(WAIT, b.child.wait())
        .await
        .expect("bridge killed")
        .expect("status");
    tokio::time::timeout(WAIT, async {
        while !pids.iter().all(|&p| dead(p)) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("agent {pids:?} outlived the SIGKILLed bridge"));
    killed.elapsed()
}

/// SIGKILL to the bridge (nothing to catch) still takes the agent down (a parent-death
/// SIGTERM) and its children with it (the guard's SIGTERM to the group).
#[tokio::test]
async fn a_killed_bridge_takes_its_agent_and_the_agents_children_with_it() {
    let took = kill_bridge_with_agent("").await;
    // Not a timing assertion (the machine may be loaded): a bound an order of magnitude
    // above the ~50 ms this takes, so a guard that waits for nothing still fails.
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// An agent group that ignores SIGTERM is killed by the guard once the grace has passed.
#[tokio::test]
async fn a_killed_bridge_takes_an_agent_that_ignores_sigterm_with_it() {
    let took = kill_bridge_with_agent("trap '' TERM;").await;
    assert!(
        took >= Duration::from_millis(500),
        "SIGKILL only after the grace: {took:?}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// An agent that cannot start says what to do (issue 41): a bare name not on PATH names the
/// PATH searched, a file that is not executable says `chmod +x`, and a registry agent with a
/// program after `--` is a usage error.
#[tokio::test]
async fn an_agent_that_cannot_start_says_what_to_do() {
    let run = |args: Vec<String>, path: Option<String>| async move {
        let mut cmd = tokio::process::Command::new(BRIDGE);
        cmd.args(&args);
        if let Some(p) = path {
            cmd.env("PATH", p);
        }
        let out = tokio::time::timeout(WAIT, cmd.output())
            .await
            .unwrap()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let dir = temp_dir("unspawnable");
    let (code, err) = run(
        vec![
            "--no-control".into(),
            "--".into(),
            "no-such-agent-cli".into(),
        ],
        Some(dir.to_string_lossy().into_owned()),
    )
    .await;
    assert_eq!(code, Some(127));
    assert!(
        err.contains("not found on PATH") && err.contains(&format!("PATH={}", dir.display())),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    // On PATH, but its `#!` interpreter is missing: not "not found on PATH".
    let orphan = dir.join("orphan-agent");
    crate::common::write_executable(&orphan, "#!/nonexistent/interpreter\n");
    let (code, err) = run(
        vec!["--no-control".into(), "--".into(), "orphan-agent".into()],
        Some(dir.to_string_lossy().into_owned()),
    )
    .await;
    assert_eq!(code, Some(127));
    assert!(err.contains("interpreter"), "{err}");

    let script = dir.join("agent.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    let (code, err) = run(
        vec![
            "--no-control".into(),
            "--".into(),
            script.to_string_lossy().into_owned(),
        ],
        None,
    )
    .await;
    assert_eq!(code, Some(126), "{err}");
    assert!(
        err.contains(&format!("not executable (chmod +x {})", script.display())),
        "{err}"
    );

    let (code, err) = run(
        vec![
            "--agent".into(),
            "codex-acp".into(),
            "--".into(),
            "codex-acp".into(),
        ],
        None,
    )
    .await;
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("drop --agent"), "{err}");
}

/// An agent that cannot be started (not found: 127; not executable: 126) leaves no
/// client waiting: its `initialize` gets an error saying why, with the exit code the
/// bridge then exits with, as a client shows an agent that died during `initialize`.
#[tokio::test]
async fn an_agent_that_cannot_start_answers_initialize_with_why() {
    let dir = temp_dir("unstartable-init");
    let script = dir.join("agent.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    for (agent, code) in [
        ("codx-acp-not-anywhere".to_owned(), 127),
        (script.display().to_string(), 126),
    ] {
        let mut b = Bridge::with_args(&["--no-control", "--", &agent]);
        b.send(&json!({"jsonrpc":"2.0","id":0,"method":"initialize",
            "params":{"protocolVersion":1,"clientCapabilities":{}}}))
            .await;
        let (reply, _) = b.recv_until(|m| m["id"] == 0).await;
        assert_eq!(reply["error"]["code"], -32603, "{reply}");
        let message = reply["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains("could not be started") && message.contains(&agent),
            "{reply}"
        );
        assert_eq!(reply["error"]["data"]["exitCode"], code, "{reply}");
        b.close_stdin();
        assert_eq!(b.wait().await, code);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An agent's command without `--` before it: the error says where it goes, with the
/// command line that works, for the bridge and for `setup`.
#[tokio::test]
async fn an_agent_command_without_dashes_gets_the_line_that_works() {
    let (code, _, err) =
        crate::common::run_bridge(&["--no-control", "npx", "@zed-industries/codex-acp"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("acp-question-bridge --no-control -- npx @zed-industries/codex-acp"),
        "{err}"
    );
    let (code, _, err) = crate::common::run_bridge(&["setup", "zed", "npx", "x"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("acp-question-bridge setup zed -- npx x"),
        "{err}"
    );
}

/// A control address another program listens on: the bridge and the inbox say what to do
/// (who may hold it, how to find it, port 0).
#[tokio::test]
async fn a_port_in_use_says_how_to_find_the_holder_and_pick_another() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, _, err) = crate::common::run_bridge(&["--control", &addr, "--", MOCK]).await;
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("another bridge or inbox") && err.contains("127.0.0.1:0"),
        "{err}"
    );
    let (code, _, err) = crate::common::run_bridge(&["inbox", "--listen", &addr]).await;
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("ss -ltnp"), "{err}");
}
