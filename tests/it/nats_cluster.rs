//! The inbox across machines on a JetStream cluster: three real `nats-server`s (Debian's
//! 2.9) on loopback, bridges and an inbox given all three as `--nats` lists.
//!
//! The buckets and the stream are made with three replicas (one made before with one is
//! raised); the leader of the questions'
//! stream SIGKILLed with questions pending loses nothing (still listed past the expiry, an
//! answer taken once); every node down while an answer is sent: reported failed, and never
//! applied, even when the bridge is back before the inbox (the inbox paused with SIGSTOP);
//! the first node of the list down at start: the others are used.

use std::time::{Duration, Instant};

use crate::common::control::{self, list_until};
use crate::common::nats::Cluster;
use crate::common::*;
use crate::nats::{approval, ask, bridge, nats_inbox, pid_of};
use async_nats::jetstream;
use futures::StreamExt;
use serde_json::{json, Value};

/// How long a bridge's silence takes to expire (`src/inbox/nats/mod.rs`'s `EXPIRY`), with
/// a margin.
const PAST_EXPIRY: Duration = Duration::from_secs(10 + 5);

/// A JetStream context on the cluster.
async fn jetstream_of(urls: &str) -> jetstream::Context {
    let servers: Vec<async_nats::ServerAddr> =
        urls.split(',').map(|u| u.parse().unwrap()).collect();
    let client = tokio::time::timeout(WAIT, async_nats::connect(servers.as_slice()))
        .await
        .expect("connects in time")
        .expect("connects");
    jetstream::new(client)
}

/// The stream's info, once the cluster has one.
async fn stream_info(js: &jetstream::Context, name: &str) -> jetstream::stream::Info {
    tokio::time::timeout(WAIT, async {
        loop {
            if let Ok(mut s) = js.get_stream(name).await {
                if let Ok(i) = s.info().await {
                    if i.cluster.as_ref().is_some_and(|c| c.leader.is_some()) {
                        return i.clone();
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the stream has a leader in time")
}

/// The inbox's answer to question `q`, tried again while it says it could not be sent (a
/// failed answer is never applied, so trying again is safe); the bridge's reply once sent.
async fn answer_once_sent(
    c: &jsonrpsee_http_client::HttpClient,
    q: &Value,
    option: &str,
) -> Result<Value, String> {
    let params = json!({"bridge": q["bridge"]["id"], "sessionId": q["sessionId"],
        "questionId": q["questionId"], "answers": [[option]]});
    let start = Instant::now();
    loop {
        match control::call(c, "questions.answer", params.clone()).await {
            Err(e) if e.contains("cannot be reached") && start.elapsed() < WAIT => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            other => return other,
        }
    }
}

/// As [`answer_once_sent`], taken.
async fn answer_until_sent(
    c: &jsonrpsee_http_client::HttpClient,
    q: &Value,
    option: &str,
) -> Value {
    answer_once_sent(c, q, option)
        .await
        .unwrap_or_else(|e| panic!("the answer was refused: {e}"))
}

/// The agent's reply to prompt `id` and the messages before it; fails if a second approval
/// report came among them.
async fn one_approval_only(b: &mut Bridge, id: i64) {
    let (done, between) = b.response(json!(id)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(
        !between
            .iter()
            .any(|m| chunk_text(m).is_some_and(|t| t.starts_with("approve: "))),
        "a second answer reached the agent: {between:?}"
    );
}

#[tokio::test]
async fn on_a_cluster_the_streams_have_three_replicas_and_a_killed_leader_loses_nothing() {
    let dir = temp_dir("nats-cluster");
    let mut cluster = Cluster::start(&dir).await;
    let urls = cluster.urls();
    let reg = dir.join("registry");
    // The event stream made earlier with one replica (as a bridge before this version
    // made it): raised to three.
    let js = jetstream_of(&urls).await;
    tokio::time::timeout(
        WAIT,
        js.get_or_create_stream(jetstream::stream::Config {
            name: "acpqb_events".into(),
            subjects: vec!["acpqb.events.>".into()],
            max_age: Duration::from_secs(24 * 3600),
            max_messages: 100_000,
            num_replicas: 1,
            ..Default::default()
        }),
    )
    .await
    .expect("in time")
    .expect("made");
    let (mut a, _, _) = bridge(&urls, &reg).await;
    let (mut b, _, _) = bridge(&urls, &reg).await;
    let inbox = nats_inbox(&urls, &dir).await;
    let c = inbox.http();
    ask(&mut a, 10).await;
    ask(&mut b, 10).await;
    let listed = list_until(&c, 2).await;

    for name in ["KV_acpqb_questions", "KV_acpqb_bridges", "acpqb_events"] {
        let info = stream_info(&js, name).await;
        assert_eq!(info.config.num_replicas, 3, "{name}: {:?}", info.config);
    }
    // The leader of the questions' stream dies with both questions pending.
    let leader = stream_info(&js, "KV_acpqb_questions")
        .await
        .cluster
        .and_then(|c| c.leader)
        .expect("a leader");
    cluster.node(&leader).kill().await;
    let killed_at = Instant::now();

    // An answer through the inbox is taken, once.
    let qa = listed.iter().find(|q| pid_of(q) == a.pid()).unwrap();
    let r = answer_until_sent(&c, qa, "allow").await;
    assert_eq!(r["status"], "answered", "{r}");
    assert!(approval(&mut a).await.contains(r#""optionId":"allow""#));
    one_approval_only(&mut a, 10).await;
    let again = answer_once_sent(&c, qa, "allow").await;
    let e = again.expect_err("a second answer is refused");
    assert!(e.contains("not pending"), "{e}");

    // A new question is listed; past the expiry nothing has left.
    ask(&mut a, 11).await;
    let now = list_until(&c, 2).await;
    assert!(now.iter().any(|q| pid_of(q) == b.pid()), "{now:?}");
    tokio::time::sleep(PAST_EXPIRY.saturating_sub(killed_at.elapsed())).await;
    let later = control::list(&c).await;
    assert_eq!(later.len(), 2, "questions left the inbox: {later:?}");
    assert!(!inbox.stderr.lock().unwrap().contains("heartbeat expired"));

    // The node comes back: the inbox stays as it is.
    cluster.node(&leader).restart().await;
    let r = answer_until_sent(
        &c,
        &later.iter().find(|q| pid_of(q) == b.pid()).unwrap().clone(),
        "reject",
    )
    .await;
    assert_eq!(r["status"], "answered", "{r}");
    assert!(approval(&mut b).await.contains(r#""optionId":"reject""#));
    one_approval_only(&mut b, 10).await;
    let last = list_until(&c, 1).await;
    assert_eq!(pid_of(&last[0]), a.pid());
    drop(cluster);
}

/// Every node down while the inbox sends an answer: the inbox says it failed, and the
/// answer is never applied, even when the bridge reconnects before the inbox does (the
/// inbox is paused with SIGSTOP until the bridge is back and the answer's deadline has
/// passed): the question is still pending, and the IDE's answer is the one the agent gets.
#[tokio::test]
async fn an_answer_sent_while_every_node_is_down_is_never_applied_even_when_the_bridge_is_back_first(
) {
    let dir = temp_dir("nats-cluster-down");
    let mut cluster = Cluster::start(&dir).await;
    let urls = cluster.urls();
    let (mut a, base, token) = bridge(&urls, &dir.join("registry")).await;
    let inbox = nats_inbox(&urls, &dir).await;
    let c = inbox.http();
    let shown = ask(&mut a, 10).await;
    let q = list_until(&c, 1).await.remove(0);
    let bridge_id = q["bridge"]["id"].as_str().unwrap().to_owned();

    for n in &mut cluster.nodes {
        n.kill().await;
    }
    let sent = Instant::now();
    let params = json!({"bridge": bridge_id, "sessionId": q["sessionId"],
        "questionId": q["questionId"], "answers": [["allow"]]});
    let failed = tokio::time::timeout(WAIT, control::call(&c, "questions.answer", params))
        .await
        .expect("the inbox says so in time")
        .expect_err("not delivered");
    assert!(failed.contains("cannot be reached"), "{failed}");

    // The inbox paused; the cluster back; the bridge puts a heartbeat again.
    let inbox_pid = inbox.child.id().expect("running") as i32;
    signal(inbox_pid, nix::sys::signal::Signal::SIGSTOP);
    for n in &mut cluster.nodes {
        n.restart().await;
    }
    cluster.until_leader().await;
    let js = jetstream_of(&urls).await;
    let beats = tokio::time::timeout(WAIT, async {
        loop {
            if let Ok(kv) = js.get_key_value("acpqb_bridges").await {
                if let Ok(w) = kv.watch(&bridge_id).await {
                    return w;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the bucket is back in time");
    let mut beats = beats;
    tokio::time::timeout(WAIT, beats.next())
        .await
        .expect("the bridge beats again in time")
        .expect("a heartbeat")
        .expect("a heartbeat");
    // Past the answer's deadline (2 s after it was sent), the inbox goes on.
    tokio::time::sleep(Duration::from_secs(3).saturating_sub(sent.elapsed())).await;
    signal(inbox_pid, nix::sys::signal::Signal::SIGCONT);
    let relisted = list_until(&c, 1).await;
    assert_eq!(relisted[0]["questionId"], q["questionId"]);
    // Still pending at the bridge itself, and the IDE's answer is the one the agent gets.
    let local = control::http(&base, &token);
    assert_eq!(control::list(&local).await.len(), 1);
    a.send(&json!({"jsonrpc":"2.0","id":shown["id"],
        "result":{"outcome":{"outcome":"selected","optionId":"reject"}}}))
        .await;
    assert!(approval(&mut a).await.contains(r#""optionId":"reject""#));
    one_approval_only(&mut a, 10).await;
    drop(cluster);
}

/// The first node of `--nats` is down when a bridge and an inbox start: both use the
/// others, and the streams are still made with three replicas (two of three nodes hold a
/// quorum).
#[tokio::test]
async fn with_the_first_node_of_the_list_down_the_bridge_and_inbox_use_the_others() {
    let dir = temp_dir("nats-cluster-first-down");
    let mut cluster = Cluster::start(&dir).await;
    let urls = cluster.urls();
    cluster.node("n0").kill().await;
    let (mut a, _, _) = bridge(&urls, &dir.join("registry")).await;
    let inbox = nats_inbox(&urls, &dir).await;
    let c = inbox.http();
    ask(&mut a, 10).await;
    // The survivors may elect a new metadata leader first (n0 may have been it), and the
    // bridge puts its questions again at its next heartbeat: 13-25 s alone, and once more
    // than 60 s under a whole suite's load with a build beside it.
    let q = control::list_until_within(&c, 1, WAIT * 6).await.remove(0);
    let r = answer_until_sent(&c, &q, "allow").await;
    assert_eq!(r["status"], "answered", "{r}");
    assert!(approval(&mut a).await.contains(r#""optionId":"allow""#));
    one_approval_only(&mut a, 10).await;
    let js = jetstream_of(&urls).await;
    assert_eq!(
        stream_info(&js, "KV_acpqb_questions")
            .await
            .config
            .num_replicas,
        3
    );
    drop(cluster);
}

fn signal(pid: i32, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).expect("a signal to the inbox");
}
