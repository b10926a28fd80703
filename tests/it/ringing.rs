//! When a question rings (`--notify-after`, `--remind-every`, quiet at the desk), through the
//! real binaries with the mock agent and an `--on-question` command that logs each ring: a
//! question answered before the delay never rings, one left pending rings once after it and
//! once more per reminder, a user at the desk is not rung until they leave; the same through
//! the inbox.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::control::{call, http, list_until};
use crate::common::inbox::{registered_bridge, Inbox};
use crate::common::*;
use jsonrpsee_http_client::HttpClient;
use serde_json::{json, Value};

const NATIVE: &str =
    r#"{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}"#;
const ASK: &str = "_sandboxagent/session/request_question";

/// An `--on-question` command that appends one line per ring to `log`: the ring's number
/// (`ACP_QUESTION_RING`) and the question's JSON.
pub(crate) fn ring_logger(log: &Path) -> String {
    format!(
        r#"sh -c '{{ printf "%s " "$ACP_QUESTION_RING"; tr -d "\n"; printf "\n"; }} >> "$0"' {}"#,
        log.display()
    )
}

/// The rings logged so far: (ring number, question id), with when each was first seen.
pub(crate) fn rings(log: &Path) -> Vec<(u32, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (n, q) = l.split_once(' ')?;
            let q: Value = serde_json::from_str(q).ok()?;
            Some((n.parse().ok()?, q["questionId"].as_str()?.to_owned()))
        })
        .collect()
}

/// Waits until `log` holds `n` rings; when the last of them was seen.
async fn until_rings(log: &Path, n: usize) -> (Vec<(u32, String)>, Instant) {
    tokio::time::timeout(COMMAND_WAIT, async {
        loop {
            let r = rings(log);
            if r.len() >= n {
                return (r, Instant::now());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{n} rings in time: {:?}", rings(log)))
}

fn log_in(name: &str) -> PathBuf {
    temp_dir(name).join("rings.log")
}

/// A bridge with its control server around the mock agent, ringing `ring_logger(log)` with
/// `ring` flags, its client (the extension's) past `session/new`: the bridge, a control
/// client, the session.
async fn ring_bridge(log: &Path, ring: &[&str]) -> (Bridge, HttpClient, String) {
    let cmd = ring_logger(log);
    let mut args = vec!["--control", "127.0.0.1:0", "--on-question", &cmd];
    args.extend_from_slice(ring);
    let mut b = Bridge::mock(&args);
    let (base, token) = control_of(&b).await;
    let c = http(&base, &token);
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    let sid = b.new_session(1).await;
    (b, c, sid)
}

async fn answer(b: &mut Bridge, asked: &Value, value: &str) {
    b.send(&json!({"jsonrpc":"2.0","id":asked["id"],"result":{"status":"answered","answers":[[value]]}}))
        .await;
    b.recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("answered:")))
        .await;
}

#[tokio::test]
async fn a_question_answered_in_time_never_rings_and_one_left_pending_rings_after_the_delay_and_per_reminder(
) {
    let log = log_in("ring-delay");
    let (mut b, c, sid) = ring_bridge(
        &log,
        &[
            "--notify-after",
            "2s",
            "--remind-every",
            "2s",
            "--quiet-at-desk",
            "0",
        ],
    )
    .await;
    // Answered half a second after it was asked: it never rings.
    b.prompt(2, &sid, "question n-1").await;
    let (asked, _) = b.recv_until(|m| m["method"] == ASK).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    answer(&mut b, &asked, "option-a").await;
    // Left pending: it rings after the delay, and says why it has not yet.
    b.prompt(3, &sid, "question n-2").await;
    b.recv_until(|m| m["method"] == ASK).await;
    let asked_at = Instant::now();
    let status = call(&c, "bridge.status", json!({})).await.unwrap();
    let ringing = &status["ringing"];
    assert_eq!(ringing["notifyAfterMs"], 2000, "{ringing}");
    let waiting: Vec<&Value> = ringing["questions"].as_array().unwrap().iter().collect();
    assert_eq!(
        waiting.len(),
        1,
        "the answered one is not waiting: {ringing}"
    );
    assert_eq!(waiting[0]["questionId"], "n-2");
    assert_eq!(waiting[0]["notRungBecause"], "waiting for --notify-after");
    let (first, rang_at) = until_rings(&log, 1).await;
    assert_eq!(first, [(0, "n-2".to_owned())], "only the pending one rang");
    assert!(
        rang_at - asked_at >= Duration::from_millis(1900),
        "not before the delay"
    );
    // Once more per --remind-every.
    let (two, again_at) = until_rings(&log, 2).await;
    assert_eq!(two[1], (1, "n-2".to_owned()));
    assert!(again_at - rang_at >= Duration::from_millis(1900));
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
    // (n-1 never rang, and nothing rang after the bridge ended.)
    assert!(rings(&log).iter().all(|(_, q)| q == "n-2"));
}

#[tokio::test]
async fn a_user_at_the_desk_is_not_rung_until_they_have_left() {
    let log = log_in("ring-desk");
    let (mut b, c, sid) =
        ring_bridge(&log, &["--notify-after", "0", "--quiet-at-desk", "3s"]).await;
    b.prompt(2, &sid, "question d-1").await;
    let (asked, _) = b.recv_until(|m| m["method"] == ASK).await;
    answer(&mut b, &asked, "option-a").await;
    // The user just answered (and prompts again): the next question does not ring yet.
    let desk = Instant::now();
    b.prompt(3, &sid, "question d-2").await;
    b.recv_until(|m| m["method"] == ASK).await;
    let status = call(&c, "bridge.status", json!({})).await.unwrap();
    let why = &status["ringing"]["questions"][0]["notRungBecause"];
    assert!(
        why.as_str().is_some_and(|w| w.contains("a moment ago")),
        "{status}"
    );
    // Then it is, once they have been away for the quiet time.
    let (rung, rang_at) = until_rings(&log, 1).await;
    assert!(
        rung.iter().all(|(_, q)| q == "d-2"),
        "d-1 never rang: {rung:?}"
    );
    assert!(
        rang_at - desk >= Duration::from_millis(2900),
        "not while at the desk"
    );
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

#[tokio::test]
async fn the_inbox_rings_by_its_own_delay_and_reminders() {
    let log = log_in("ring-inbox");
    let reg = temp_dir("ring-inbox-reg").join("registry");
    let mut b = registered_bridge(&reg, &[]).await;
    let cmd = ring_logger(&log);
    let inbox = Inbox::start(&[
        "--registry",
        reg.to_str().unwrap(),
        "--notify-after",
        "2s",
        "--remind-every",
        "2s",
        "--quiet-at-desk",
        "0",
        "--on-question",
        &cmd,
    ])
    .await;
    let c = inbox.http();
    // Answered on the inbox at once: never rung.
    b.prompt(10, "mock-session-1", "approve").await;
    let first = list_until(&c, 1).await;
    let qid = first[0]["questionId"].as_str().unwrap().to_owned();
    call(
        &c,
        "questions.answer",
        json!({"sessionId": "mock-session-1", "questionId": qid, "answers": [["allow"]]}),
    )
    .await
    .unwrap();
    b.recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("approve: ")))
        .await;
    // (The inbox has seen it end.)
    list_until(&c, 0).await;
    // Left pending: rung after the delay, then per reminder.
    b.prompt(11, "mock-session-1", "approve").await;
    let pending = list_until(&c, 1).await;
    let second = pending[0]["questionId"].as_str().unwrap().to_owned();
    let asked_at = Instant::now();
    let status = call(&c, "bridge.status", json!({})).await.unwrap();
    assert_eq!(
        status["ringing"]["questions"][0]["notRungBecause"], "waiting for --notify-after",
        "{status}"
    );
    let (r, rang_at) = until_rings(&log, 2).await;
    assert_eq!(r, [(0, second.clone()), (1, second.clone())], "{r:?}");
    assert!(rang_at - asked_at >= Duration::from_millis(3900));
    b.close_stdin();
    b.drain().await;
}

#[tokio::test]
async fn the_page_open_on_this_machine_keeps_it_quiet_until_it_is_hidden() {
    let log = log_in("ring-page");
    let (mut b, c, sid) = ring_bridge(&log, &["--notify-after", "0", "--quiet-at-desk", "0"]).await;
    // The page says it is visible (as it does every 20 s while it is).
    assert_eq!(
        call(&c, "page.visible", json!({"visible": true})).await,
        Ok(json!(true))
    );
    b.prompt(2, &sid, "question p-1").await;
    b.recv_until(|m| m["method"] == ASK).await;
    let status = call(&c, "bridge.status", json!({})).await.unwrap();
    assert_eq!(
        status["ringing"]["quiet"], "quiet: the Questions page is open on this machine",
        "{status}"
    );
    assert!(rings(&log).is_empty());
    // Hidden (the user left it): it rings.
    call(&c, "page.visible", json!({"visible": false}))
        .await
        .unwrap();
    let (rung, _) = until_rings(&log, 1).await;
    assert_eq!(rung, [(0, "p-1".to_owned())]);
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}
