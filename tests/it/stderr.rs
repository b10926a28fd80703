//! The bridge's stderr is the client's business: some clients close it, some point it at a
//! file that fills, some never read it. Whatever happens to it, no write to stderr may stop
//! the bridge. Through the real binaries, with stderr on a pipe whose reader is gone, on
//! `/dev/full`, and on a pipe nobody reads (it fills, and writes would block), at the trace
//! and warn log levels: the session works, a question's answer
//! reaches the agent, warnings (a non-JSON line from the agent) and the agent's own stderr
//! are written (or lost) without harm, and the bridge exits with the agent's exit code.

use std::process::Stdio;

use crate::common::*;
use serde_json::json;
use tokio::process::Command;

/// Where the bridge's stderr goes.
#[derive(Debug, Clone, Copy)]
enum Sink {
    /// A pipe whose read end is closed (every write fails with EPIPE).
    ClosedPipe,
    /// `/dev/full` (every write fails with ENOSPC).
    Full,
    /// A pipe whose read end the test holds and never reads (writes block once it is full).
    Unread,
}

impl Sink {
    /// Where stderr goes, and what the test must keep open meanwhile.
    fn stdio(self) -> (Stdio, Option<std::os::fd::OwnedFd>) {
        match self {
            Sink::Unread => {
                let (read, write) = pipe();
                (Stdio::from(write), Some(read))
            }
            Sink::ClosedPipe => {
                let (read, write) = pipe();
                drop(read);
                (Stdio::from(write), None)
            }
            Sink::Full => (
                Stdio::from(
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open("/dev/full")
                        .expect("/dev/full"),
                ),
                None,
            ),
        }
    }
}

/// A pipe whose ends are close-on-exec. The tests share one process: a child that another
/// test starts meanwhile would inherit plain ends, and a read end held there leaves the
/// "closed" pipe open (no EPIPE), as a write end held there keeps it from ending.
fn pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).expect("pipe")
}

async fn session_with_stderr(sink: Sink, level: &str) {
    let mut cmd = Command::new(BRIDGE);
    cmd.args(["--log-level", level, "--", MOCK]);
    let (stdio, _reader) = sink.stdio();
    let mut b = Bridge::with_stderr(cmd, Some(stdio));
    let ctx = format!("{sink:?} at {level}");
    let init = b
        .call(
            0,
            "initialize",
            json!({"protocolVersion":1,"clientCapabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}),
        )
        .await;
    assert!(init.get("result").is_some(), "{ctx}: {init}");
    let sid = b.new_session(1).await;
    // A question, answered.
    b.prompt(2, &sid, "question").await;
    let (q, _) = b
        .recv_until(|m| m["method"] == "_sandboxagent/session/request_question")
        .await;
    b.send(&json!({"jsonrpc":"2.0","id":q["id"],"result":{"status":"answered","answers":[["option-b"]]}}))
        .await;
    let (_, before) = b.response(json!(2)).await;
    assert_eq!(chunks(&before), r#"answered: [["option-b"]]"#, "{ctx}");
    // A warning (the agent writes a line that is not JSON), then the agent's own stderr.
    b.prompt(3, &sid, "garbage").await;
    b.response(json!(3)).await;
    // Far more log than a pipe holds (every message at trace), and the agent's stderr too.
    b.prompt(30, &sid, "flood 20000 100").await;
    b.response(json!(30)).await;
    b.prompt(4, &sid, "stderr the agent speaks on stderr").await;
    b.response(json!(4)).await;
    // The bridge exits with the agent's code.
    b.prompt(5, &sid, "crash 3").await;
    assert_eq!(b.wait().await, 3, "{ctx}");
}

#[tokio::test]
async fn a_closed_or_full_stderr_never_stops_the_bridge() {
    for sink in [Sink::ClosedPipe, Sink::Full, Sink::Unread] {
        for level in ["trace", "warn"] {
            session_with_stderr(sink, level).await;
        }
    }
}
