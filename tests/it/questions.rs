//! Process tests of question behaviour that a transcript cannot pin down exactly (times,
//! races); the flows themselves are replayed from `fixtures/` by `tests/it/fixtures.rs`.

use std::time::{Duration, SystemTime};

use crate::common::*;
use serde_json::{json, Value};

const NATIVE: &str =
    r#"{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}"#;

fn expires_in(req: &Value) -> Duration {
    let at = humantime::parse_rfc3339(req["params"]["expiresAt"].as_str().expect("expiresAt"))
        .expect("RFC 3339");
    at.duration_since(SystemTime::now()).unwrap_or_default()
}

/// The smaller of `--question-timeout` and the request's `timeoutMs` wins, and
/// `expiresAt` says when.
#[tokio::test]
async fn smaller_timeout_wins_and_expires_at_tells_when() {
    let mut b = Bridge::mock(&["--question-timeout", "60s"]);
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "question-timeout 30000").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "_sandboxagent/session/request_question")
        .await;
    let left = expires_in(&ask);
    assert!(
        left > Duration::from_secs(25) && left <= Duration::from_secs(30),
        "{left:?}"
    );
    // The flag is smaller than timeoutMs here.
    b.prompt(3, &sid, "question-timeout 600000").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "_sandboxagent/session/request_question")
        .await;
    let left = expires_in(&ask);
    assert!(
        left > Duration::from_secs(55) && left <= Duration::from_secs(60),
        "{left:?}"
    );
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

/// Without a timeout nothing is added to the request.
#[tokio::test]
async fn no_timeout_no_expires_at() {
    let mut b = Bridge::mock(&[]);
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "question").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "_sandboxagent/session/request_question")
        .await;
    assert!(ask["params"].get("expiresAt").is_none());
    b.send(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"status":"answered","answers":[["option-a"]]}}))
        .await;
    let (done, before) = b.response(json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert_eq!(chunks(&before), r#"answered: [["option-a"]]"#);
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
}

/// A hundred sessions each with a question pending, all cancelled: every question is
/// answered exactly once, its client told once in its chat, and every session only sees its
/// own cancel.
#[tokio::test]
async fn many_sessions_cancelled_each_resolved_once() {
    let mut b = Bridge::mock(&[]);
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    let mut sessions = Vec::new();
    for i in 0..100 {
        sessions.push(b.new_session(1000 + i).await);
    }
    for (i, sid) in sessions.iter().enumerate() {
        b.prompt(i as i64 + 1, sid, "question").await;
    }
    let mut asked = 0;
    while asked < 100 {
        if b.recv().await["method"] == "_sandboxagent/session/request_question" {
            asked += 1;
        }
    }
    for sid in &sessions {
        b.send(&json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":sid}}))
            .await;
    }
    let mut cancelled_at_client = 0;
    let mut reports = 0;
    let mut ends = 0;
    while ends < 100 {
        let m = b.recv().await;
        // Never `$/cancel_request` (real clients crash on it): a note in the chat.
        assert_ne!(m["method"], "$/cancel_request");
        if chunk_text(&m).is_some_and(|t| t.contains("[acp-question-bridge]")) {
            cancelled_at_client += 1;
        } else if chunk_text(&m) == Some("rejected: cancelled") {
            reports += 1;
        } else if m["result"]["stopReason"] == "cancelled" {
            ends += 1;
        }
    }
    assert_eq!((cancelled_at_client, reports, ends), (100, 100, 100));
    b.close_stdin();
    assert!(b.drain().await.is_empty());
    assert_eq!(b.wait().await, 0);
}
