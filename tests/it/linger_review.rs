//! `--linger`: the findings of the second review of the router's part, each a failing case
//! before its fix (`r1`..`r7` as reported; the property test in `linger_props.rs` found more
//! of the same kind), and the router's part of a client coming back.

use acp_question_bridge::router::fixture::Fixture;
use acp_question_bridge::router::RouterConfig;
use serde_json::{json, Value};

fn cfg() -> RouterConfig {
    RouterConfig {
        linger: true,
        hold_unsupported: true,
        ..RouterConfig::default()
    }
}

fn parse(l: &str) -> Value {
    serde_json::from_str(l).unwrap()
}

fn attach(f: &mut Fixture) {
    drop(f.take_client());
    f.attach();
}
fn detach(f: &mut Fixture) {
    f.detach();
    drop(f.take_client());
}

/// First client: initialize (id 9), session/new (id 0) -> s0.
fn first(f: &mut Fixture) {
    attach(f);
    f.client(&json!({"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}).to_string());
    let a = f.take_agent();
    let id = parse(&a[0])["id"].clone();
    f.agent(
        &json!({"jsonrpc":"2.0","id":id,"result":{"protocolVersion":1,"agentCapabilities":{}}})
            .to_string(),
    );
    f.client(&json!({"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}).to_string());
    let a = f.take_agent();
    let id = parse(&a[0])["id"].clone();
    f.agent(&json!({"jsonrpc":"2.0","id":id,"result":{"sessionId":"s0"}}).to_string());
    f.take_client();
}

fn later_init(f: &mut Fixture) {
    attach(f);
    f.client(&json!({"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}).to_string());
    f.take_client();
}

fn permission(id: i64, s: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{
        "sessionId":s,"toolCall":{"toolCallId":format!("t{id}"),"title":"Run it","kind":"execute","rawInput":{"command":"rm -rf x"}},
        "options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},
                   {"optionId":"reject","name":"Reject","kind":"reject_once"}]}}).to_string()
}

fn update(s: &str, text: &str) -> String {
    json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":s,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}}}}).to_string()
}

/// A tool approval shown natively, the client leaves, the agent cancels it: the agent must
/// still get its one response (-32800), and a later client must not be left without it.
#[test]
fn r1_native_question_cancelled_by_agent_while_held() {
    let mut f = Fixture::new(cfg());
    first(&mut f);
    f.agent(&permission(1000, "s0"));
    assert_eq!(f.take_client().len(), 1, "shown natively");
    detach(&mut f);
    f.agent(
        &json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1000}})
            .to_string(),
    );
    let to_agent = f.take_agent();
    f.take_client();
    later_init(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s0","cwd":"/p","mcpServers":[]}}).to_string());
    let to_b = f.take_client();
    let answered = to_agent
        .iter()
        .chain(f.take_agent().iter())
        .any(|l| parse(l)["id"] == 1000);
    let shown = to_b.iter().any(|l| parse(l)["id"] == 1000);
    assert!(
        answered || shown,
        "agent request 1000: never answered, never shown again"
    );
}

/// A later client's session/load of a session the bridge does not hold, while another held
/// session is not this client's: the agent's replay must reach the client (before the result).
#[test]
fn r2_load_replay_of_unheld_session_is_swallowed() {
    let mut f = Fixture::new(cfg());
    first(&mut f);
    detach(&mut f);
    later_init(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"old","cwd":"/p","mcpServers":[]}}).to_string());
    let a = f.take_agent();
    assert_eq!(parse(&a[0])["method"], "session/load");
    let id = parse(&a[0])["id"].clone();
    f.agent(&update("old", "history"));
    f.agent(&json!({"jsonrpc":"2.0","id":id,"result":{}}).to_string());
    let got = f.take_client();
    assert!(
        got.iter().any(|l| l.contains("history")),
        "the load's replay was kept, not sent"
    );
}

/// A later client's session/load (of a session the bridge does not hold) under an id that
/// clashes with the old client's: the bridge-id remap loses the session, the client never
/// 'has' it.
#[test]
fn r3_remapped_load_never_takes_session() {
    let mut f = Fixture::new(cfg());
    first(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s0","prompt":[]}}).to_string());
    f.take_agent();
    detach(&mut f);
    later_init(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"old","cwd":"/q","mcpServers":[]}}).to_string());
    let a = f.take_agent();
    let id = parse(&a[0])["id"].clone();
    assert_ne!(id, json!(1), "remapped");
    f.agent(&json!({"jsonrpc":"2.0","id":id,"result":{}}).to_string());
    let got = f.take_client();
    assert!(got.iter().any(|l| parse(l)["id"] == 1));
    f.agent(&update("old", "after"));
    let got = f.take_client();
    assert!(
        got.iter().any(|l| l.contains("after")),
        "update of the loaded session not sent"
    );
}

/// A remapped request refused at --max-in-flight: the error goes out under the bridge id.
#[test]
fn r4_refused_remapped_request_answered_under_bridge_id() {
    let mut f = Fixture::new(RouterConfig {
        max_in_flight: 1,
        ..cfg()
    });
    first(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s0","prompt":[]}}).to_string());
    f.take_agent();
    detach(&mut f);
    later_init(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}).to_string());
    let got = f.take_client();
    assert!(
        got.iter().all(|l| parse(l)["id"] == json!(1)),
        "answered under an id B never sent: {got:?}"
    );
}

/// With a policy, an approval in a session the attached client lacks: its chat note is sent
/// to that client.
#[test]
fn r5_policy_note_to_a_client_without_the_session() {
    let mut f = Fixture::with_policy(
        cfg(),
        "[[rule]]\nid = \"no-rm\"\ndecision = \"deny\"\ncommand = [\"rm\"]\n",
    );
    first(&mut f);
    detach(&mut f);
    later_init(&mut f);
    f.agent(&permission(1000, "s0"));
    let to_agent = f.take_agent();
    assert_eq!(to_agent.len(), 1, "{to_agent:?}");
    let got = f.take_client();
    assert!(
        !got.iter().any(|l| l.contains("\"s0\"")),
        "B was sent something of s0: {got:?}"
    );
    // And what is kept for the next client that loads s0:
    f.client(&json!({"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"s0","cwd":"/p","mcpServers":[]}}).to_string());
    f.take_client();
}

/// The agent's $/cancel_request of a request waiting for a client (never sent to the
/// attached one): the attached client is sent a cancel of an id it never saw, and the
/// request stays waiting.
#[test]
fn r6_agent_cancel_of_an_unsent_waiting_request() {
    let mut f = Fixture::new(cfg());
    first(&mut f);
    detach(&mut f);
    later_init(&mut f);
    f.agent(&json!({"jsonrpc":"2.0","id":1000,"method":"fs/read_text_file","params":{"sessionId":"s0","path":"/x"}}).to_string());
    assert!(f.take_client().is_empty());
    f.agent(
        &json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1000}})
            .to_string(),
    );
    let got = f.take_client();
    f.take_agent();
    assert!(
        got.is_empty(),
        "B was sent a cancel of a request it never saw: {got:?}"
    );
}

/// A later initialize sent to the agent (the first failed) under an id that clashes with an
/// orphan: its result is never recorded, and the next client's initialize waits forever.
#[test]
fn r7_remapped_initialize_never_recorded() {
    let mut f = Fixture::new(cfg());
    attach(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}).to_string());
    let a = f.take_agent();
    let id = parse(&a[0])["id"].clone();
    f.agent(&json!({"jsonrpc":"2.0","id":id,"error":{"code":-32000,"message":"auth"}}).to_string());
    f.client(
        &json!({"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"x"}})
            .to_string(),
    );
    f.take_agent();
    detach(&mut f);
    attach(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}).to_string());
    let a = f.take_agent();
    let id = parse(&a[0])["id"].clone();
    f.agent(
        &json!({"jsonrpc":"2.0","id":id,"result":{"protocolVersion":1,"agentCapabilities":{}}})
            .to_string(),
    );
    f.take_client();
    detach(&mut f);
    attach(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}).to_string());
    let to_c = f.take_client();
    let to_agent = f.take_agent();
    assert!(
        !to_c.is_empty() || !to_agent.is_empty(),
        "C's initialize waits for nothing"
    );
}

/// At the desk means any client that was shown the question: an editor that comes back and
/// loads the session (its approval shown again), or one that joins it, is the user at the
/// desk, as a prompt is (nothing rings for `--quiet-at-desk`).
#[test]
fn a_client_that_comes_back_or_joins_and_is_shown_the_question_is_the_user_at_the_desk() {
    let mut f = Fixture::new(cfg());
    first(&mut f);
    detach(&mut f);
    f.agent(&permission(1000, "s0"));
    f.out.at_desk = false;
    later_init(&mut f);
    assert!(!f.out.at_desk, "an initialize alone is not the user");
    f.client(&json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s0","cwd":"/p","mcpServers":[]}}).to_string());
    let shown = f.take_client();
    assert!(
        shown
            .iter()
            .any(|l| l.contains("session/request_permission")),
        "{shown:?}"
    );
    assert!(f.out.at_desk, "shown again to the editor that came back");

    // A second editor joins the session, and is shown the same question.
    f.out.at_desk = false;
    assert!(f.join(7));
    f.joined(7, &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}).to_string());
    f.take_joined(7);
    f.joined(7, &json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s0","cwd":"/p","mcpServers":[]}}).to_string());
    let shown = f.take_joined(7);
    assert!(shown.iter().any(|l| l.contains("Run it")), "{shown:?}");
    assert!(f.out.at_desk, "shown to the editor that joined");
}

/// The texts of the `session/update`s among `lines`, each with its kind's first word
/// (`user` or `agent`).
fn said(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| parse(l))
        .filter(|m| m["method"] == "session/update")
        .map(|m| {
            let u = &m["params"]["update"];
            let kind = u["sessionUpdate"]
                .as_str()
                .unwrap_or("")
                .split('_')
                .next()
                .unwrap_or("");
            format!("{kind}: {}", u["content"]["text"].as_str().unwrap_or(""))
        })
        .collect()
}

/// A session's conversation, from its start, with a turn that ended while no client was
/// there: the user's prompt (seen), the agent's reply (seen), the agent's words while
/// away, and the bridge's note that the turn ended. The later client is initialized.
fn left_mid_turn() -> Fixture {
    let mut f = Fixture::new(cfg());
    first(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s0","prompt":[{"type":"text","text":"hello"}]}}).to_string());
    let id = parse(&f.take_agent()[0])["id"].clone();
    f.agent(&update("s0", "seen"));
    detach(&mut f);
    f.agent(&update("s0", "away"));
    f.agent(&json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":"end_turn"}}).to_string());
    later_init(&mut f);
    f
}

/// `session/load` replays the whole conversation kept (the user's prompts too) by default,
/// only what no client was sent with `_meta.historyPolicy: "pending_only"`, nothing with
/// `"none"`; `session/resume` replays nothing but is told what happened while away, after
/// its result.
#[test]
fn a_load_replays_the_conversation_its_history_policy_asks_for_and_a_resume_the_away_notes() {
    let ended =
        "agent: \n[acp-question-bridge] While no editor was attached, the turn ended: end_turn.\n";
    for (meta, want) in [
        (
            json!({}),
            vec!["user: hello", "agent: seen", "agent: away", ended],
        ),
        (
            json!({"historyPolicy": "full"}),
            vec!["user: hello", "agent: seen", "agent: away", ended],
        ),
        (
            json!({"historyPolicy": "pending_only"}),
            vec!["agent: away", ended],
        ),
        (json!({"historyPolicy": "none"}), vec![]),
    ] {
        let mut f = left_mid_turn();
        f.client(&json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s0","cwd":"/p","mcpServers":[],"_meta":meta}}).to_string());
        let out = f.take_client();
        assert_eq!(said(&out), want, "{meta}: {out:?}");
        assert!(
            parse(out.last().expect("the result"))["result"].is_object(),
            "{out:?}"
        );
    }
    let mut f = left_mid_turn();
    f.client(&json!({"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s0","cwd":"/p","mcpServers":[]}}).to_string());
    let out = f.take_client();
    assert_eq!(parse(&out[0])["id"], 1, "the result first: {out:?}");
    assert_eq!(said(&out), vec![ended], "{out:?}");
}

/// A prompt naming a session the agent never began makes no held session (it is the
/// agent's to refuse), so nothing phantom is replayed, listed to fronts, or recorded lost.
#[test]
fn a_prompt_in_a_session_the_agent_never_began_is_not_kept() {
    let mut f = Fixture::new(cfg());
    first(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"bogus","prompt":[{"type":"text","text":"hello"}]}}).to_string());
    let (_, _, sessions) = f.r.held_for_fronts();
    assert_eq!(sessions, vec!["s0".to_owned()]);
}

/// What the bridge told a client in a session (a turn begun before it attached ended) is
/// part of the conversation the next load replays; a resume of a session the client has
/// already is answered with its result, whatever the agent can resume.
#[test]
fn the_bridges_notes_to_a_client_are_replayed_and_a_resume_of_a_session_it_has_is_answered() {
    let mut f = Fixture::new(cfg());
    first(&mut f);
    f.client(&json!({"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s0","prompt":[{"type":"text","text":"hello"}]}}).to_string());
    let id = parse(&f.take_agent()[0])["id"].clone();
    detach(&mut f);
    later_init(&mut f);
    let load = json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s0","cwd":"/p","mcpServers":[]}}).to_string();
    f.client(&load);
    f.take_client();
    f.agent(&json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":"end_turn"}}).to_string());
    let told = said(&f.take_client());
    let note = "agent: \n[acp-question-bridge] The turn begun before this editor attached ended: end_turn.\n";
    assert_eq!(told, vec![note]);
    f.client(&json!({"jsonrpc":"2.0","id":2,"method":"session/resume","params":{"sessionId":"s0","cwd":"/p","mcpServers":[]}}).to_string());
    let out = f.take_client();
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(parse(&out[0])["result"].is_object(), "{out:?}");
    assert!(f.take_agent().is_empty(), "answered by the bridge");
    detach(&mut f);
    later_init(&mut f);
    f.client(&load);
    let replay = said(&f.take_client());
    assert_eq!(replay, vec!["user: hello", note], "{replay:?}");
}

/// The agent's updates of a session it never began or loaded through the bridge are the
/// client's, as without `--linger`: sent at once, not kept nor held back (a stream the
/// bridge did not see begin stalled behind them).
#[test]
fn updates_of_a_session_the_bridge_never_saw_begin_go_to_the_client() {
    let mut f = Fixture::new(cfg());
    first(&mut f);
    f.agent(&update("elsewhere", "streamed"));
    assert_eq!(said(&f.take_client()), vec!["agent: streamed"]);
    let (_, _, sessions) = f.r.held_for_fronts();
    assert_eq!(sessions, vec!["s0".to_owned()]);
}
