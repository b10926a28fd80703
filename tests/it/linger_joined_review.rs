//! Hostile review of d00814b (several clients on one session, RFD #533): each test is a
//! failing case of an invariant the commit claims.

use acp_question_bridge::router::fixture::{msg, Fixture};
use acp_question_bridge::router::RouterConfig;
use serde_json::{json, Value};

use crate::linger_joined::attach_with_session;

fn cfg() -> RouterConfig {
    RouterConfig {
        linger: true,
        hold_unsupported: true,
        events: true,
        ..RouterConfig::default()
    }
}

fn parse(l: &str) -> Value {
    serde_json::from_str(l).unwrap()
}

fn texts(lines: &[String]) -> String {
    lines.join("\n")
}

/// The attached client (capabilities `caps`) with session `s0`.
fn attached_with(caps: Value) -> Fixture {
    let mut f = Fixture::new(cfg());
    attach_with_session(&mut f, caps);
    f
}

fn attached() -> Fixture {
    attached_with(json!({}))
}

/// Client `c` joins and loads `s0` with capabilities `caps`; what it was sent.
fn join_with(f: &mut Fixture, c: u32, caps: Value) -> Vec<Value> {
    assert!(f.join(c));
    f.joined(
        c,
        &msg::request(
            json!(0),
            "initialize",
            json!({"protocolVersion":1,"clientCapabilities":caps}),
        ),
    );
    f.take_joined(c);
    f.joined(
        c,
        &msg::request(
            json!(1),
            "session/load",
            json!({"sessionId":"s0","cwd":"/p","mcpServers":[]}),
        ),
    );
    f.take_joined(c).iter().map(|l| parse(l)).collect()
}

fn permission(id: i64, s: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{
        "sessionId":s,"toolCall":{"toolCallId":format!("t{id}"),"title":"Run it","kind":"execute","rawInput":{"command":"ls"}},
        "options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},
                   {"optionId":"reject","name":"Reject","kind":"reject_once"}]}})
    .to_string()
}

/// j1: the agent's `$/cancel_request` of a tool approval the attached client shows as the
/// agent sent it (native): the joined client that was shown it is never told, and its
/// prompt stays registered as shown for ever.
#[test]
fn j1_agent_cancel_of_a_native_approval_tells_the_joined_client() {
    let mut f = attached();
    join_with(&mut f, 7, json!({}));
    f.agent(&permission(90, "s0"));
    let to_a = f.take_client();
    assert!(
        texts(&to_a).contains("session/request_permission"),
        "{to_a:?}"
    );
    let to_b: Vec<Value> = f.take_joined(7).iter().map(|l| parse(l)).collect();
    let shown = to_b
        .iter()
        .find(|m| m["method"] == "session/request_permission")
        .expect("shown to the joined client")
        .clone();
    f.agent(&msg::notification(
        "$/cancel_request",
        json!({"requestId":90}),
    ));
    // The attached client gets the cancel (native: it answers it itself).
    assert!(texts(&f.take_client()).contains("$/cancel_request"));
    let told = f.take_joined(7);
    assert!(
        !told.is_empty(),
        "the joined client shown the approval is told it is over (it is not)"
    );
    // And its late press is refused with a note, not dropped in silence.
    f.joined(
        7,
        &msg::result(
            shown["id"].clone(),
            json!({"outcome":{"outcome":"selected","optionId":"allow"}}),
        ),
    );
    assert!(f.take_agent().is_empty());
    let late = texts(&f.take_joined(7));
    assert!(
        late.contains("no effect") || late.contains("already"),
        "a late press is told it had no effect: {late}"
    );
}

/// j1b: the same stale entry, after the attached client gave the agent its -32800 and the
/// agent asks again under the same id (ids of ended requests may be reused): the joined
/// client is still "shown" the old one (`is_shown` by agent id), so the new approval is
/// never shown to it.
#[test]
fn j1b_after_an_agent_cancel_the_next_approval_under_the_same_id_is_shown_to_the_joined_client() {
    let mut f = attached();
    join_with(&mut f, 7, json!({}));
    f.agent(&permission(90, "s0"));
    f.take_client();
    assert!(texts(&f.take_joined(7)).contains("session/request_permission"));
    f.agent(&msg::notification(
        "$/cancel_request",
        json!({"requestId":90}),
    ));
    f.take_client();
    f.take_joined(7);
    // The attached client answers the cancelled request as ACP says: -32800.
    f.client(&msg::error(json!(90), -32800, "cancelled"));
    assert_eq!(
        f.take_agent().len(),
        1,
        "the agent has its one response for 90"
    );
    // The agent asks again, under the same id.
    f.agent(&permission(90, "s0"));
    assert!(texts(&f.take_client()).contains("session/request_permission"));
    let again = f.take_joined(7);
    assert!(
        texts(&again).contains("session/request_permission"),
        "the new approval is shown to the joined client: {again:?}"
    );
}

fn update(s: &str, text: &str) -> String {
    msg::notification(
        "session/update",
        json!({"sessionId":s,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}}}),
    )
}

/// j3: a joined client's `session/new` whose result comes after it left: the session is not
/// held, so the agent's updates of it go to the attached client, which never began, loaded
/// or resumed it.
#[test]
fn j3_a_session_begun_by_a_joined_client_that_left_is_not_sent_to_the_attached_client() {
    let mut f = attached();
    join_with(&mut f, 7, json!({}));
    f.joined(
        7,
        &msg::request(json!(2), "session/new", json!({"cwd":"/p","mcpServers":[]})),
    );
    let sent = parse(&f.take_agent()[0]);
    assert_eq!(sent["method"], "session/new");
    f.leave(7);
    f.agent(&msg::result(
        sent["id"].clone(),
        json!({"sessionId":"s-guest"}),
    ));
    f.agent(&update("s-guest", "private to the editor that left"));
    let to_a = f.take_client();
    assert!(
        !texts(&to_a).contains("s-guest"),
        "the attached client was sent the updates of a session it never had: {to_a:?}"
    );
    // And the session is held, for the next client that loads it.
    assert!(f.r.holds_session("s-guest"));
}

/// j2: a joined client that loads (or resumes) again a session it has (an editor reopening
/// the thread) is shown each pending question a second time: a tool approval shown as the
/// agent sent it arrives twice under the same id while the first is still open at the
/// client, and the store's "shown at most once at a time" invariant breaks.
#[test]
fn j2_loading_again_a_session_it_has_does_not_show_its_questions_twice() {
    let mut f = attached();
    join_with(&mut f, 7, json!({}));
    f.agent(&permission(90, "s0"));
    f.take_client();
    let first: Vec<Value> = f.take_joined(7).iter().map(|l| parse(l)).collect();
    assert_eq!(
        first
            .iter()
            .filter(|m| m["method"] == "session/request_permission")
            .count(),
        1
    );
    f.joined(
        7,
        &msg::request(
            json!(2),
            "session/resume",
            json!({"sessionId":"s0","cwd":"/p","mcpServers":[]}),
        ),
    );
    let again: Vec<Value> = f.take_joined(7).iter().map(|l| parse(l)).collect();
    assert!(again
        .iter()
        .any(|m| m["id"] == 2 && m.get("result").is_some()));
    let dup: Vec<&Value> = again
        .iter()
        .filter(|m| m["method"] == "session/request_permission")
        .collect();
    assert!(
        dup.is_empty(),
        "request 90 is still open at the client, yet it is sent again: {dup:?}"
    );
}

/// j4: the attached client loads again a session it shares with a joined client (an editor
/// reopening the thread): the load goes to the agent, whose replay of the whole history is
/// the loading client's (`kept_instead` knows it: `is_loading`), yet every line of it is
/// copied to the joined client, which was told "What was said before you joined is not
/// replayed here" and now gets the transcript again, mid-conversation.
#[test]
fn j4_the_agents_replay_of_the_attached_clients_load_is_not_copied_to_a_joined_client() {
    let mut f = attached();
    join_with(&mut f, 7, json!({}));
    f.client(&msg::request(
        json!(5),
        "session/load",
        json!({"sessionId":"s0","cwd":"/p","mcpServers":[]}),
    ));
    let sent = parse(&f.take_agent()[0]);
    assert_eq!(
        sent["method"], "session/load",
        "a load of a session it has goes to the agent"
    );
    f.agent(&update("s0", "history: the first thing ever said"));
    f.agent(&msg::result(sent["id"].clone(), json!({})));
    assert!(texts(&f.take_client()).contains("history"));
    let to_b = f.take_joined(7);
    assert!(
        !texts(&to_b).contains("history"),
        "the replay of another client's load was copied to the joined client: {to_b:?}"
    );
}

// ---- Real binaries ----

mod binaries {
    use std::time::Duration;

    use serde_json::json;

    use crate::common::{chunk_text, mock_pid, rss_kib, Bridge};
    use crate::linger::{folders, front, holders, sessions_stop_all, start_session};

    async fn agent_pid(b: &mut Bridge, id: i64, session: &str) -> u32 {
        b.prompt(id, session, "pid").await;
        let (_, seen) = b.response(json!(id)).await;
        seen.iter()
            .filter_map(chunk_text)
            .find_map(mock_pid)
            .expect("the mock agent's pid")
    }

    /// A second editor joins `sid` beside `first` (attached).
    async fn join(second: &mut Bridge, sid: &str, cwd: &std::path::Path) {
        second.initialize(json!({})).await;
        second
            .send(&json!({"jsonrpc":"2.0","id":1,"method":"session/load",
                "params":{"sessionId":sid,"cwd":cwd,"mcpServers":[]}}))
            .await;
        let (result, _) = second.response(json!(1)).await;
        assert!(result.get("result").is_some(), "{result}");
    }

    /// With the agent stopped, the joined client (`from_joined`) or the attached one writes
    /// 96 MiB of prompts: the holder must stop reading it long before (less than 32 MiB
    /// more memory).
    async fn flood_with_the_agent_stopped(from_joined: bool, name: &str) {
        let (roster, cwd) = folders(name);
        let mut first = front(&roster, &cwd, "5m");
        let (_, sid) = start_session(&mut first).await;
        let pid = agent_pid(&mut first, 2, &sid).await;
        let mut second = front(&roster, &cwd, "5m");
        join(&mut second, &sid, &cwd).await;
        assert_eq!(holders(&roster).len(), 1, "joined, not an agent of its own");
        let holder = holders(&roster)[0]["pid"].as_u64().expect("pid") as u32;
        // The agent stops reading (a long tool call, a stuck process).
        let agent = nix::unistd::Pid::from_raw(pid as i32);
        nix::sys::signal::kill(agent, nix::sys::signal::Signal::SIGSTOP).expect("SIGSTOP");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = rss_kib(holder);
        // Prompts of 8 KiB (a pasted file), under ids of its own: 96 MiB in all, well under
        // `--max-in-flight` (16,384 requests).
        let text = "x".repeat(8 << 10);
        let mut written = 0usize;
        let mut id = 100u64;
        for _ in 0..96 {
            let mut chunk = String::new();
            for _ in 0..128 {
                id += 1;
                chunk.push_str(
                    &json!({"jsonrpc":"2.0","id":id,"method":"session/prompt",
                    "params":{"sessionId":sid,"prompt":[{"type":"text","text":text}]}})
                    .to_string(),
                );
                chunk.push('\n');
            }
            let writer = if from_joined { &mut second } else { &mut first };
            let sent =
                tokio::time::timeout(Duration::from_secs(5), writer.send_raw(chunk.as_bytes()))
                    .await;
            if sent.is_err() {
                break; // the holder stopped reading it: backpressure
            }
            written += chunk.len();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = rss_kib(holder);
        nix::sys::signal::kill(agent, nix::sys::signal::Signal::SIGCONT).expect("SIGCONT");
        let grew_mib = after.saturating_sub(before) / 1024;
        let (mut stays, leaves) = if from_joined {
            (first, second)
        } else {
            (second, first)
        };
        drop(leaves);
        stays.close_stdin();
        let _ = stays.wait().await;
        sessions_stop_all(&roster).await;
        assert!(
            grew_mib < 32,
            "with the agent not reading, the holder took {} MiB from {} client and grew {grew_mib} MiB",
            written >> 20,
            if from_joined { "a joined" } else { "the attached" }
        );
    }

    /// j5: a joined client's input was read whatever the agent's input queue held: the
    /// attached client is read only once what it fed the agent has drained (`read_client`
    /// needs `outbox.to_agent` empty), a joined one was always. With the agent not reading,
    /// a joined editor that wrote made the holder's memory grow without bound (96 MiB of
    /// prompts, each copied under its bridge id, so the reader's 3 MiB budget did not hold
    /// them).
    #[tokio::test]
    async fn j5_a_joined_client_is_not_read_faster_than_the_agent_reads() {
        flood_with_the_agent_stopped(true, "joined-backpressure").await;
    }

    /// (Passes: the same from the attached client stops at the reader's budget.)
    #[tokio::test]
    async fn j5_control_the_attached_client_is_read_only_as_fast_as_the_agent_reads() {
        flood_with_the_agent_stopped(false, "joined-backpressure-ctrl").await;
    }

    /// CPU time (ticks) `pid` used so far.
    fn cpu_ticks(pid: u32) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
            + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
    }

    /// (Passes: a probe of the shell.) The attached editor leaves while one joined: no
    /// linger yet, no busy loop, the joined one goes on; when it leaves too the linger runs
    /// and ends the agent. Each front exits 0.
    #[tokio::test]
    async fn shell_the_linger_starts_when_the_last_client_leaves() {
        let (roster, cwd) = folders("joined-linger");
        let mut first = front(&roster, &cwd, "2s");
        let (_, sid) = start_session(&mut first).await;
        let pid = agent_pid(&mut first, 2, &sid).await;
        let mut second = front(&roster, &cwd, "2s");
        join(&mut second, &sid, &cwd).await;
        let holder = holders(&roster)[0]["pid"].as_u64().expect("pid") as u32;
        first.close_stdin();
        assert_eq!(first.wait().await, 0);
        let before = cpu_ticks(holder);
        tokio::time::sleep(Duration::from_secs(4)).await;
        let used = cpu_ticks(holder) - before;
        assert!(
            used < 100,
            "the holder used {used} ticks in 4 s with only a joined client"
        );
        assert!(
            crate::linger::alive(pid),
            "no linger while a joined client is there"
        );
        assert_eq!(agent_pid(&mut second, 3, &sid).await, pid);
        second.close_stdin();
        assert_eq!(second.wait().await, 0);
        crate::linger::gone(pid, crate::common::WAIT).await;
    }
}

/// (Passes: a probe.) A question asked as several yes/no prompts, answered by a joined
/// client step by step.
#[test]
fn probe_a_joined_client_answers_a_multi_step_permission_question() {
    let mut f = attached_with(json!({"elicitation":{"form":{}}}));
    join_with(&mut f, 7, json!({}));
    f.agent(&msg::ask(
        json!(50),
        json!({"sessionId":"s0","questionId":"q50","prompt":"Which database?",
            "options":[{"value":"sqlite","label":"SQLite"},{"value":"pg","label":"Postgres"}]}),
    ));
    f.take_client();
    let mut answered = None;
    for step in 0..4 {
        let to_b: Vec<Value> = f.take_joined(7).iter().map(|l| parse(l)).collect();
        let Some(ask) = to_b
            .iter()
            .find(|m| m["method"] == "session/request_permission")
        else {
            panic!("step {step}: no prompt: {to_b:?}");
        };
        let options = ask["params"]["options"].as_array().unwrap();
        let text = ask.to_string();
        // Yes to Postgres, no to anything else.
        let pick = if text.contains("Postgres") && !text.contains("SQLite") {
            options
                .iter()
                .find(|o| o["kind"] == "allow_once")
                .unwrap_or(&options[0])
        } else {
            options
                .iter()
                .find(|o| o["kind"].as_str().is_some_and(|k| k.starts_with("reject")))
                .unwrap_or(options.last().unwrap())
        };
        f.joined(
            7,
            &msg::result(
                ask["id"].clone(),
                json!({"outcome":{"outcome":"selected","optionId":pick["optionId"]}}),
            ),
        );
        let to_agent = f.take_agent();
        if !to_agent.is_empty() {
            answered = Some(to_agent);
            break;
        }
    }
    let to_agent = answered.expect("answered within 4 prompts");
    assert_eq!(to_agent, [msg::answered(json!(50), json!([["pg"]]))]);
    assert!(texts(&f.take_client()).contains("Postgres"));
}

/// j6: a question a joined client cannot show (free text, to a client of permission
/// prompts) is pointed at the other surfaces in its chat ("The agent is waiting for your
/// answer ... it waits outside it"), but is not registered as shown to it: when the question
/// ends (here the attached client answers it) the joined client is never told, and its
/// chat keeps saying the agent waits. (The attached client, in the same case, gets a
/// pending tool call that `close_at_client` marks done.) And every `show_to_joined` of it
/// (the attached client falling back, taking the session again) says it again.
#[test]
fn j6_a_joined_client_pointed_elsewhere_is_told_when_the_question_ends() {
    let mut f = attached_with(json!({"elicitation":{"form":{}}}));
    join_with(&mut f, 7, json!({}));
    f.agent(&msg::ask(
        json!(60),
        json!({"sessionId":"s0","questionId":"q60","prompt":"Name the branch"}),
    ));
    let to_a: Vec<Value> = f.take_client().iter().map(|l| parse(l)).collect();
    let form = to_a
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .expect("a form for the attached client")
        .clone();
    let pointed = f.take_joined(7);
    assert!(
        texts(&pointed).contains("waiting for your answer"),
        "{pointed:?}"
    );
    let props = form["params"]["requestedSchema"]["properties"]
        .as_object()
        .unwrap();
    let field = props.keys().next().unwrap().clone();
    f.client(&msg::result(
        form["id"].clone(),
        json!({"action":"accept","content":{field: "main"}}),
    ));
    assert_eq!(f.take_agent().len(), 1, "answered");
    let told = f.take_joined(7);
    assert!(
        !told.is_empty(),
        "the joined client was told the agent waits for its answer elsewhere, and never that it is over"
    );
}

/// j7: a joined client's `session/new` goes to the agent without the session handler
/// (`handlers/session.rs`), so its `cwd` is never tied to the session it begins: the
/// approval policy then decides that session's tool approvals in the holder's folder (or
/// none), not in the session's: the session's project policy is not read and its relative
/// paths are resolved against another folder. (The attached client's session gets its own
/// folder.)
#[test]
fn j7_the_policy_decides_a_joined_clients_new_session_in_that_sessions_folder() {
    use acp_question_bridge::router::Effect;
    let mut f = Fixture::with_policy(
        cfg(),
        "[[rule]]\nid = \"no-rm\"\ndecision = \"deny\"\ncommand = [\"rm\"]\n",
    )
    .deferred();
    attach_with_session(&mut f, json!({}));
    join_with(&mut f, 7, json!({}));
    f.joined(
        7,
        &msg::request(
            json!(2),
            "session/new",
            json!({"cwd":"/elsewhere/project","mcpServers":[]}),
        ),
    );
    let sent = parse(&f.take_agent()[0]);
    f.agent(&msg::result(sent["id"].clone(), json!({"sessionId":"s-j"})));
    f.take_joined(7);
    let cwd_of_decision = |f: &mut Fixture, id: i64, s: &str| {
        f.agent(&permission(id, s));
        let cwd = f.out.effects.iter().find_map(|e| match e {
            Effect::Decide { cwd, .. } => Some(cwd.clone()),
            _ => None,
        });
        f.run_effects();
        cwd.expect("a decision asked")
    };
    assert_eq!(cwd_of_decision(&mut f, 80, "s0"), Some("/p".into()));
    assert_eq!(
        cwd_of_decision(&mut f, 81, "s-j"),
        Some("/elsewhere/project".into()),
        "the joined client's session is decided in another folder"
    );
}

/// j3b: a joined client's `session/fork` (the attached client's is held, by
/// `handlers::session`): the session it begins is not held nor the joined client's, so the
/// agent's updates of it go to the attached client, which never had it, and not to the
/// client that forked it (nor are its questions shown to it).
#[test]
fn j3b_a_session_a_joined_client_forks_is_its_own_not_the_attached_clients() {
    let mut f = attached();
    join_with(&mut f, 7, json!({}));
    f.joined(
        7,
        &msg::request(
            json!(2),
            "session/fork",
            json!({"sessionId":"s0","cwd":"/p","mcpServers":[]}),
        ),
    );
    let sent = parse(&f.take_agent()[0]);
    assert_eq!(sent["method"], "session/fork");
    f.agent(&msg::result(
        sent["id"].clone(),
        json!({"sessionId":"s-fork"}),
    ));
    assert_eq!(parse(&f.take_joined(7)[0])["id"], 2);
    f.agent(&update("s-fork", "forked reply"));
    let to_a = f.take_client();
    let to_b = f.take_joined(7);
    assert!(
        !texts(&to_a).contains("s-fork"),
        "the attached client was sent a session it never had: {to_a:?}"
    );
    assert!(
        texts(&to_b).contains("forked reply"),
        "the client that forked it is not sent its updates: {to_b:?}"
    );
}
