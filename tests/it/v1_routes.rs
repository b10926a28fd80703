//! sandbox-agent's v1 question routes on the control server and the inbox, through the real
//! binaries and plain HTTP (as a tool written for sandbox-agent sends them): reply and
//! reject reach the agent in its own shape with `204`, an unknown question gets `404` with a
//! JSON error, a missing token `401`.

use crate::common::control::raw_http;
use crate::common::inbox::{registered_bridge, Inbox};
use crate::common::*;
use serde_json::{json, Value};

/// `POST path` with `body`, with the bearer token when given: (status code, JSON body).
async fn post(base: &str, token: Option<&str>, path: &str, body: &str) -> (u16, Value) {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {{addr}}\r\nContent-Type: application/json\r\nConnection: close\r\n{auth}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (status, text) = raw_http(base, &req).await;
    let code = status
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.trim())
        .unwrap_or("");
    (code, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// The agent's report of how its question or approval ended.
async fn report(b: &mut Bridge, prefix: &str) -> String {
    let (m, _) = b
        .recv_until(|m| {
            chunk_text(m).is_some_and(|t| t.starts_with(prefix) || t.starts_with("error:"))
        })
        .await;
    chunk_text(&m).unwrap().to_owned()
}

#[tokio::test]
async fn reply_and_reject_reach_the_agent_in_its_own_shape() {
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;
    b.initialize(json!({})).await;
    let sid = b.new_session(1).await;
    let route = |q: &str, what: &str| format!("/v1/sessions/{sid}/questions/{q}/{what}");

    // A question (the extension's): its answers are the values chosen, per item.
    b.prompt(2, &sid, "question").await;
    // (This client is shown it as permission prompts.)
    b.recv_until(|m| m["method"] == "session/request_permission")
        .await;
    let path = route("mock-q-1", "reply");
    // No token: 401, and the question stays.
    let (code, _) = post(&base, None, &path, r#"{"answers":[["option-b"]]}"#).await;
    assert_eq!(code, 401);
    // An answer the question does not take: 400 with the reason, and it stays.
    let (code, body) = post(&base, Some(&token), &path, r#"{"answers":[["nope"]]}"#).await;
    assert_eq!(code, 400, "{body}");
    assert!(body["error"].as_str().is_some(), "{body}");
    let (code, body) = post(&base, Some(&token), &path, r#"{"answers":[["option-b"]]}"#).await;
    assert_eq!(code, 204, "{body}");
    assert_eq!(
        report(&mut b, "answered:").await,
        r#"answered: [["option-b"]]"#
    );
    // Again: no longer pending, 404 saying who resolved it.
    let (code, body) = post(&base, Some(&token), &path, r#"{"answers":[["option-a"]]}"#).await;
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["resolvedBy"], "control", "{body}");
    // Unknown question: 404 with a JSON error.
    let (code, body) = post(
        &base,
        Some(&token),
        &route("no-such-question", "reply"),
        r#"{"answers":[["x"]]}"#,
    )
    .await;
    assert_eq!(code, 404, "{body}");
    assert!(body["error"].as_str().is_some(), "{body}");

    // A tool approval, in the agent's own shape: its optionId.
    b.prompt(3, &sid, "permission").await;
    let (asked, _) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    // (Its question id is the source's and the agent's request id: docs/PROTOCOL.md.)
    let qid = format!("permission:{}", asked["id"]);
    let (code, body) = post(
        &base,
        Some(&token),
        &route(&qid, "reply"),
        r#"{"answers":[["allow"]]}"#,
    )
    .await;
    assert_eq!(code, 204, "{body}");
    assert_eq!(report(&mut b, "permission:").await, "permission: allow");

    // A rejection, with no body (as sandbox-agent's own route takes it).
    b.prompt(4, &sid, "question").await;
    b.recv_until(|m| m["method"] == "session/request_permission")
        .await;
    let (code, body) = post(&base, Some(&token), &route("mock-q-2", "reject"), "").await;
    assert_eq!(code, 204, "{body}");
    assert_eq!(
        report(&mut b, "rejected:").await,
        "rejected: declined",
        "the agent gets its own rejection"
    );
    // Not a route: 404; not POST: 405 is for a route's path only.
    let (code, _) = post(&base, Some(&token), "/v1/sessions/x", "").await;
    assert_eq!(code, 404);
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

#[tokio::test]
async fn the_inbox_takes_the_same_routes_for_every_bridge() {
    let reg = temp_dir("v1-inbox").join("registry");
    let mut b = registered_bridge(&reg, &[]).await;
    let inbox = Inbox::start(&["--registry", reg.to_str().unwrap()]).await;
    b.prompt(10, "mock-session-1", "approve").await;
    crate::common::control::list_until(&inbox.http(), 1).await;
    let path = "/v1/sessions/mock-session-1/questions/permission:0/reply";
    let (code, _) = post(&inbox.base, None, path, r#"{"answers":[["allow"]]}"#).await;
    assert_eq!(code, 401);
    let (code, body) = post(
        &inbox.base,
        Some(&inbox.token),
        path,
        r#"{"answers":[["allow"]]}"#,
    )
    .await;
    assert_eq!(code, 204, "{body}");
    let (m, _) = b
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("approve: ")))
        .await;
    assert!(chunk_text(&m).unwrap().contains("allow"), "{m}");
    let (code, body) = post(
        &inbox.base,
        Some(&inbox.token),
        "/v1/sessions/mock-session-1/questions/nothing/reject",
        "",
    )
    .await;
    assert_eq!(code, 404, "{body}");
    assert!(body["error"].as_str().is_some(), "{body}");
    b.close_stdin();
    b.drain().await;
}
