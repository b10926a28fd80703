//! The inbox across machines, through the real binaries and a real NATS server: Debian's
//! `nats-server` (2.9) with JetStream, started by the test on a free loopback port with a
//! temporary store (installed with apt-get when missing and running as root, as CI does;
//! otherwise the test fails and says what to install: it is never skipped).
//!
//! Bridges with `--nats` and an `inbox --nats`: questions listed, answered and streamed;
//! NATS killed: the bridges go on with their IDE and local control servers, and once NATS
//! is back the inbox shows the current state; the inbox restarted shows what is pending;
//! the IDE and the inbox answering at once, 25 times: exactly one answer reaches the agent.

use std::path::Path;
use std::time::Duration;

use crate::common::control::{self, list_until};
use crate::common::inbox::Inbox;
use crate::common::nats::Nats;
use crate::common::*;
use serde_json::{json, Value};

/// A bridge around the mock agent with `--nats`, its client past `session/new`.
pub(crate) async fn bridge(nats: &str, registry: &Path) -> (Bridge, String, String) {
    let mut b = Bridge::spawn_env(
        &["--control", "127.0.0.1:0", "--nats", nats, "--", MOCK],
        &[("ACP_QUESTION_BRIDGE_REGISTRY", registry.to_str().unwrap())],
    );
    let (base, token) = control_of(&b).await;
    b.initialize(json!({})).await;
    b.new_session(1).await;
    (b, base, token)
}

/// A running `inbox --nats` (with a registry of its own that no bridge uses).
pub(crate) async fn nats_inbox(nats: &str, dir: &Path) -> Inbox {
    let reg = dir.join("no-registry");
    Inbox::start(&["--nats", nats, "--registry", reg.to_str().unwrap()]).await
}

/// The agent's report of its approval.
pub(crate) async fn approval(b: &mut Bridge) -> String {
    let (m, _) = b
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("approve: ")))
        .await;
    chunk_text(&m).unwrap().to_owned()
}

/// Asks for an approval in prompt `id`; returns the request the IDE is shown.
pub(crate) async fn ask(b: &mut Bridge, id: i64) -> Value {
    b.prompt(id, "mock-session-1", "approve").await;
    b.recv_until(|m| m["method"] == "session/request_permission")
        .await
        .0
}

pub(crate) fn pid_of(q: &Value) -> u32 {
    q["bridge"]["pid"].as_u64().unwrap() as u32
}

#[tokio::test]
async fn bridges_and_an_inbox_over_nats_and_nats_going_away() {
    let dir = temp_dir("nats");
    let reg = dir.join("registry");
    let mut nats = Nats::start(&dir.join("store"), None).await;
    let url = nats.url();
    let (mut a, a_base, a_token) = bridge(&url, &reg).await;
    let (mut b, _, _) = bridge(&url, &reg).await;
    let inbox = nats_inbox(&url, &dir).await;
    let c = inbox.http();

    // Events stream from every bridge through the inbox.
    let (_ws, mut sub) = control::subscribed(&inbox.base, &inbox.token).await;
    ask(&mut a, 10).await;
    let b_shown = ask(&mut b, 10).await;
    let list = list_until(&c, 2).await;
    assert!(list.iter().any(|q| pid_of(q) == a.pid()));
    assert!(list.iter().any(|q| pid_of(q) == b.pid()));
    let mut requested = 0;
    while requested < 2 {
        let ev = tokio::time::timeout(WAIT, sub.next())
            .await
            .expect("events in time")
            .unwrap()
            .unwrap();
        if ev["event"] == "requested" {
            assert!(ev["bridge"].is_string(), "{ev}");
            requested += 1;
        }
    }

    // Answered from the inbox: over NATS to that bridge only.
    let qa = list.iter().find(|q| pid_of(q) == a.pid()).unwrap();
    let r = control::call(
        &c,
        "questions.answer",
        json!({"bridge": qa["bridge"]["id"], "sessionId": "mock-session-1",
            "questionId": "permission:0", "answers": [["allow"]]}),
    )
    .await
    .unwrap();
    assert_eq!(r["status"], "answered");
    assert!(approval(&mut a).await.contains(r#""optionId":"allow""#));
    a.response(json!(10)).await;
    let left = list_until(&c, 1).await;
    assert_eq!(pid_of(&left[0]), b.pid());
    loop {
        let ev = tokio::time::timeout(WAIT, sub.next())
            .await
            .expect("events in time")
            .unwrap()
            .unwrap();
        if ev["event"] == "resolved" {
            assert_eq!(ev["bridge"], qa["bridge"]["id"]);
            break;
        }
    }
    // A second answer gets the bridge's own error, through NATS.
    let err = control::call(
        &c,
        "questions.answer",
        json!({"bridge": qa["bridge"]["id"], "sessionId": "mock-session-1",
            "questionId": "permission:0", "answers": [["allow"]]}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("not pending"), "{err}");

    // NATS goes away: the bridges go on with their IDE and local control server.
    nats.kill().await;
    let shown = ask(&mut a, 11).await;
    a.send(&json!({"jsonrpc":"2.0","id":shown["id"],
        "result":{"outcome":{"outcome":"selected","optionId":"reject"}}}))
        .await;
    assert!(approval(&mut a).await.contains(r#""optionId":"reject""#));
    a.response(json!(11)).await;
    let local = control::http(&a_base, &a_token);
    ask(&mut a, 12).await;
    control::call(
        &local,
        "questions.answer",
        json!({"sessionId":"mock-session-1","questionId":"permission:2","answers":[["allow"]]}),
    )
    .await
    .unwrap();
    assert!(approval(&mut a).await.contains(r#""optionId":"allow""#));
    a.response(json!(12)).await;
    // b's question is answered by its IDE meanwhile; a asks once more and it stays pending.
    b.send(&json!({"jsonrpc":"2.0","id":b_shown["id"],
        "result":{"outcome":{"outcome":"selected","optionId":"allow"}}}))
        .await;
    assert!(approval(&mut b).await.contains(r#""optionId":"allow""#));
    ask(&mut a, 13).await;

    // NATS back: the inbox shows the current state, a's one pending question.
    nats.restart().await;
    let start = std::time::Instant::now();
    loop {
        let l = control::list(&c).await;
        if l.len() == 1 && pid_of(&l[0]) == a.pid() && l[0]["questionId"] == "permission:3" {
            break;
        }
        assert!(
            start.elapsed() < WAIT * 2,
            "the inbox never showed the current state: {l:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The inbox restarted shows what is pending.
    drop(sub);
    drop(inbox);
    let inbox = nats_inbox(&url, &dir).await;
    let again = list_until(&inbox.http(), 1).await;
    assert_eq!(again[0]["questionId"], "permission:3");
    assert_eq!(pid_of(&again[0]), a.pid());

    // A bridge that exits takes its questions out of the bucket.
    a.close_stdin();
    a.drain().await;
    a.wait().await;
    list_until(&inbox.http(), 0).await;
}

/// The IDE and the inbox answer the same question at once, 25 times: each time exactly one
/// answer reaches the agent, and it is the one whose side was told it won.
#[tokio::test]
async fn the_ide_and_the_inbox_racing_give_the_agent_one_answer() {
    let dir = temp_dir("nats-race");
    let nats = Nats::start(&dir.join("store"), None).await;
    let url = nats.url();
    let (mut b, _, _) = bridge(&url, &dir.join("registry")).await;
    let inbox = nats_inbox(&url, &dir).await;
    let c = inbox.http();
    let (mut inbox_won, mut ide_won) = (0, 0);
    for round in 0..25i64 {
        let pid = 100 + round;
        let shown = ask(&mut b, pid).await;
        let q = list_until(&c, 1).await.remove(0);
        let ide = json!({"jsonrpc":"2.0","id":shown["id"],
            "result":{"outcome":{"outcome":"selected","optionId":"allow"}}});
        let params = json!({"bridge": q["bridge"]["id"], "sessionId": "mock-session-1",
            "questionId": q["questionId"], "answers": [["reject"]]});
        let (_, from_inbox) =
            tokio::join!(b.send(&ide), control::call(&c, "questions.answer", params));
        let report = approval(&mut b).await;
        let (done, between) = b.response(json!(pid)).await;
        assert_eq!(done["result"]["stopReason"], "end_turn");
        assert!(
            !between
                .iter()
                .any(|m| chunk_text(m).is_some_and(|t| t.starts_with("approve: "))),
            "round {round}: a second answer reached the agent: {between:?}"
        );
        match from_inbox {
            Ok(r) => {
                assert_eq!(r["status"], "answered", "round {round}");
                assert!(
                    report.contains(r#""optionId":"reject""#),
                    "round {round}: {report}"
                );
                inbox_won += 1;
            }
            Err(e) => {
                assert!(e.contains("not pending"), "round {round}: {e}");
                assert!(
                    report.contains(r#""optionId":"allow""#),
                    "round {round}: {report}"
                );
                ide_won += 1;
            }
        }
        list_until(&c, 0).await;
    }
    assert_eq!(inbox_won + ide_won, 25);
    drop(nats);
}

/// A bridge killed outright deletes nothing: the inbox drops it once its heartbeat is older
/// than the expiry (10 s), withdraws its question, and sweeps its keys, so an inbox started
/// afterwards does not list it either.
#[tokio::test]
async fn a_killed_bridge_leaves_the_inbox_when_its_heartbeat_stops() {
    let dir = temp_dir("nats-expiry");
    let nats = Nats::start(&dir.join("store"), None).await;
    let url = nats.url();
    let (mut a, _, _) = bridge(&url, &dir.join("registry")).await;
    let (mut b, _, _) = bridge(&url, &dir.join("registry")).await;
    let inbox = nats_inbox(&url, &dir).await;
    let c = inbox.http();
    ask(&mut a, 10).await;
    ask(&mut b, 10).await;
    let listed = list_until(&c, 2).await;
    let a_id = listed.iter().find(|q| pid_of(q) == a.pid()).unwrap()["bridge"]["id"].clone();

    let (_ws, mut sub) = control::subscribed(&inbox.base, &inbox.token).await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(a.pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // The expiry is 10 s: wait for the withdrawal event, with a margin far above it.
    let withdrawn = tokio::time::timeout(Duration::from_secs(90), async {
        loop {
            let ev = sub.next().await.expect("subscribed").expect("an event");
            if ev["event"] == "resolved" && ev["bridge"] == a_id {
                return ev;
            }
        }
    })
    .await
    .expect("the killed bridge's question is withdrawn once its heartbeat expires");
    assert_eq!(withdrawn["by"], "disconnect", "{withdrawn}");
    assert_eq!(withdrawn["result"]["status"], "withdrawn", "{withdrawn}");
    let left = list_until(&c, 1).await;
    assert_eq!(
        pid_of(&left[0]),
        b.pid(),
        "the live bridge's question stays"
    );
    let bridges = control::call(&c, "bridges.list", json!({})).await.unwrap();
    assert!(
        bridges.as_array().unwrap().iter().all(|x| x["id"] != a_id),
        "{bridges}"
    );

    // Swept: a new inbox sees only the live bridge's question.
    drop(sub);
    drop(inbox);
    let again = nats_inbox(&url, &dir).await;
    let c = again.http();
    let start = std::time::Instant::now();
    let listed = loop {
        let l = control::list(&c).await;
        if !l.is_empty() {
            break l;
        }
        assert!(start.elapsed() < WAIT, "the new inbox lists nothing");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        listed.len(),
        1,
        "nothing of the killed bridge is left: {listed:?}"
    );
    assert_eq!(pid_of(&listed[0]), b.pid());
    drop(nats);
}

/// Over NATS, a question carries what the agent was doing (its digest, within its bounds,
/// after 10,000 messages and 10 MiB diffs: the key-value entry stays far below the server's
/// limit), and "Always allow" reaches the bridge, which writes the rule.
#[tokio::test]
async fn the_digest_and_always_allow_cross_nats() {
    let dir = temp_dir("nats-digest");
    let nats = Nats::start(&dir.join("store"), None).await;
    let url = nats.url();
    let config = dir.join("config");
    let mut b = Bridge::spawn_env(
        &["--control", "127.0.0.1:0", "--nats", &url, "--", MOCK],
        &[
            (
                "ACP_QUESTION_BRIDGE_REGISTRY",
                dir.join("registry").to_str().unwrap(),
            ),
            ("XDG_CONFIG_HOME", config.to_str().unwrap()),
        ],
    );
    let (base, token) = control_of(&b).await;
    b.initialize(json!({})).await;
    let sid = b.new_session(1).await;
    let inbox = nats_inbox(&url, &dir).await;
    let c = inbox.http();

    b.prompt(2, &sid, "story-huge").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    let own = list_until(&control::http(&base, &token), 1).await.remove(0);
    let q = list_until(&c, 1).await.remove(0);
    assert_eq!(q["digest"], own["digest"]);
    assert_eq!(q["digest"]["lastMessage"], "Now the store itself.");
    assert!(q.to_string().len() < 64 << 10, "{}", q.to_string().len());
    b.send(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"outcome":{"outcome":"selected","optionId":"allow"}}})).await;
    b.response(json!(2)).await;
    list_until(&c, 0).await;

    b.prompt(3, &sid, "run make check").await;
    let q = list_until(&c, 1).await.remove(0);
    let rule = q["alwaysAllow"]["rules"]["thisAgentEverywhere"]
        .as_str()
        .unwrap()
        .to_owned();
    let params = json!({"bridge": q["bridge"]["id"], "sessionId": sid, "questionId": q["questionId"],
        "answers": [["allow"]], "remember": {"agent": "this", "place": "everywhere"}});
    let r = control::call(&c, "questions.answer", params).await.unwrap();
    assert_eq!(r["status"], "answered", "{r}");
    let (done, seen) = b.response(json!(3)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert!(chunks(&seen).contains(r#""optionId":"allow""#), "{seen:?}");
    let written = std::fs::read_to_string(config.join("acp-question-bridge/policy.toml")).unwrap();
    assert!(written.contains(&rule), "{written}");
    drop(nats);
}

/// An answer is taken exactly once or never: one that reaches the bridge after its
/// deadline, or without one (as a NATS client that kept it through a disconnection sends
/// it on reconnect), is refused and not applied; with NATS down the inbox sends nothing and
/// says so; once NATS is back the question is still pending, and the IDE's answer is the
/// one the agent gets.
#[tokio::test]
async fn an_answer_the_inbox_reports_as_failed_is_never_applied() {
    let dir = temp_dir("nats-late");
    let mut nats = Nats::start(&dir.join("store"), None).await;
    let url = nats.url();
    let (mut b, _, _) = bridge(&url, &dir.join("registry")).await;
    let inbox = nats_inbox(&url, &dir).await;
    let c = inbox.http();
    let shown = ask(&mut b, 10).await;
    let q = list_until(&c, 1).await.remove(0);
    let params = json!({"sessionId": "mock-session-1", "questionId": q["questionId"],
        "answers": [["allow"]]});
    // Straight to the bridge's subject: late, and with no deadline at all.
    let nats_client = tokio::time::timeout(WAIT, async_nats::connect(url.as_str()))
        .await
        .expect("in time")
        .expect("connects");
    let subject = format!("acpqb.answer.{}", q["bridge"]["id"].as_str().unwrap());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    for body in [
        json!({"method": "questions.answer", "params": params, "notAfter": now - 1000}),
        json!({"method": "questions.answer", "params": params}),
    ] {
        let reply = tokio::time::timeout(
            WAIT,
            nats_client.request(subject.clone(), body.to_string().into()),
        )
        .await
        .expect("a reply in time")
        .expect("a reply");
        let v: Value = serde_json::from_slice(&reply.payload).unwrap();
        assert_eq!(v["error"]["code"], -32007, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("not applied")),
            "{v}"
        );
    }
    assert_eq!(list_until(&c, 1).await.len(), 1, "still pending");
    // NATS down: the inbox's answer fails, and is never applied.
    nats.kill().await;
    let params = json!({"bridge": q["bridge"]["id"], "sessionId": "mock-session-1",
        "questionId": q["questionId"], "answers": [["allow"]]});
    let failed = tokio::time::timeout(WAIT, control::call(&c, "questions.answer", params))
        .await
        .expect("the inbox says so in time");
    let e = failed.expect_err("not delivered");
    assert!(e.contains("NATS") || e.contains("bridge"), "{e}");
    nats.restart().await;
    // The bridge puts its question again; the inbox lists it: still pending.
    let q2 = list_until(&c, 1).await.remove(0);
    assert_eq!(q2["questionId"], q["questionId"]);
    // The IDE's answer is the one the agent gets, the only one.
    b.send(&json!({"jsonrpc":"2.0","id":shown["id"],
        "result":{"outcome":{"outcome":"selected","optionId":"reject"}}}))
        .await;
    let report = approval(&mut b).await;
    assert!(report.contains(r#""optionId":"reject""#), "{report}");
    let (done, between) = b.response(json!(10)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert!(
        !between
            .iter()
            .any(|m| chunk_text(m).is_some_and(|t| t.starts_with("approve: "))),
        "a second answer reached the agent: {between:?}"
    );
    // Answered without naming the bridge, once it left the inbox: the inbox says who ended
    // it, as the bridge would.
    list_until(&c, 0).await;
    let err = control::call(
        &c,
        "questions.answer",
        json!({"sessionId": "mock-session-1", "questionId": q["questionId"],
            "answers": [["allow"]]}),
    )
    .await
    .unwrap_err();
    assert!(
        err.contains("not pending") && err.contains(r#""resolvedBy":"client""#),
        "{err}\n{}\nBRIDGE\n{}",
        inbox.stderr.lock().unwrap(),
        b.stderr()
    );
    drop(nats);
}

/// `--nats` takes a cluster's nodes as a comma-separated list: with the first one down the
/// bridge and the inbox reach the live one, and an answer goes through. A list that cannot
/// be used (an empty entry, credentials in a URL, another scheme) is said at start, exit 2,
/// never a bridge that is silently local only.
#[tokio::test]
async fn a_list_of_servers_with_the_first_one_down_is_used_and_a_bad_one_is_said() {
    let dir = temp_dir("nats-list");
    let nats = Nats::start(&dir.join("store"), None).await;
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let list = format!("nats://127.0.0.1:{down}, {}", nats.url());
    let (mut b, _, _) = bridge(&list, &dir.join("registry")).await;
    let inbox = nats_inbox(&list, &dir).await;
    let c = inbox.http();
    ask(&mut b, 10).await;
    let q = list_until(&c, 1).await.remove(0);
    let params = json!({"bridge": q["bridge"]["id"], "sessionId": "mock-session-1",
        "questionId": q["questionId"], "answers": [["allow"]]});
    let r = control::call(&c, "questions.answer", params).await.unwrap();
    assert_eq!(r["status"], "answered", "{r}");
    assert!(approval(&mut b).await.contains(r#""optionId":"allow""#));
    for bad in [
        "nats://127.0.0.1:4222,,nats://127.0.0.1:4223",
        "nats://127.0.0.1:4222,nats://user:pass@127.0.0.1:4223",
        "http://127.0.0.1:4222",
    ] {
        let (code, _, err) = run_bridge(&["--nats", bad, "--", MOCK]).await;
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("--nats"), "{bad}: {err}");
        let (code, _, err) = run_bridge(&["inbox", "--nats", bad]).await;
        assert_eq!(code, 2, "inbox {bad}: {err}");
    }
    drop(nats);
}

/// NATS killed for 8 s with questions pending, then back: the bridges put their questions
/// again and the inbox lists them within 5 s, and keeps listing them past the expiry of the
/// heartbeats it missed (its sweep of a bridge it took as silent deletes nothing a bridge
/// put after it; a bridge whose heartbeat was swept puts its questions again).
#[tokio::test]
async fn after_nats_comes_back_the_inbox_converges_and_stays() {
    let dir = temp_dir("nats-converge");
    let reg = dir.join("registry");
    let mut nats = Nats::start(&dir.join("store"), None).await;
    let url = nats.url();
    let (mut a, _, _) = bridge(&url, &reg).await;
    let (mut b, _, _) = bridge(&url, &reg).await;
    let inbox = nats_inbox(&url, &dir).await;
    let c = inbox.http();
    let shown = ask(&mut a, 10).await;
    ask(&mut b, 10).await;
    list_until(&c, 2).await;
    let down = std::time::Instant::now();
    nats.kill().await;
    // Meanwhile a's question is answered in its IDE, and a asks another.
    a.send(&json!({"jsonrpc":"2.0","id":shown["id"],
        "result":{"outcome":{"outcome":"selected","optionId":"reject"}}}))
        .await;
    assert!(approval(&mut a).await.contains(r#""optionId":"reject""#));
    a.response(json!(10)).await;
    ask(&mut a, 11).await;
    // Down long enough for the inbox's last heartbeats to be nearly expired when it is back.
    tokio::time::sleep(Duration::from_secs(8).saturating_sub(down.elapsed())).await;
    nats.restart().await;
    let back = std::time::Instant::now();
    let pids = |l: &[Value]| {
        let mut p: Vec<(u32, String)> = l
            .iter()
            .map(|q| (pid_of(q), q["questionId"].as_str().unwrap_or("").to_owned()))
            .collect();
        p.sort();
        p
    };
    let mut both = vec![
        (a.pid(), "permission:1".to_owned()),
        (b.pid(), "permission:0".to_owned()),
    ];
    both.sort();
    loop {
        let l = control::list(&c).await;
        if pids(&l) == both {
            break;
        }
        assert!(
            back.elapsed() < CONVERGED,
            "not converged {:?} after NATS came back: {l:?}",
            back.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // And stays: past any expiry decided from before.
    while back.elapsed() < Duration::from_secs(15) {
        let l = control::list(&c).await;
        assert_eq!(
            pids(&l),
            both,
            "a question left the inbox: {l:?}\n{}\nBRIDGE\n{}",
            inbox.stderr.lock().unwrap(),
            a.stderr()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(nats);
}

/// How soon the inbox shows the bridges' state once NATS is back: 5 s is the promise
/// (docs/RELIABILITY.md; measured about 1-2 s), with room for a busy machine.
const CONVERGED: Duration = Duration::from_secs(10);
