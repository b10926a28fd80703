//! `--linger`: several clients on one session (RFD #533), at the router: a client that joins
//! a session the attached client has gets its updates and its questions in its own dialect,
//! the first answer wins and the others are told, and its requests go to the agent and come
//! back to it under its own ids.

use acp_question_bridge::router::fixture::{msg, Fixture};
use acp_question_bridge::router::{AgentExit, RouterConfig};
use serde_json::{json, Value};

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

/// The attached client (no capabilities: permission prompts) with session `s0`.
fn attached() -> Fixture {
    let mut f = Fixture::new(cfg());
    attach_with_session(&mut f, json!({}));
    f
}

/// A client with capabilities `caps` attaches to `f`, and the agent gives it session `s0`
/// (in `/p`); what it was sent is taken.
pub(crate) fn attach_with_session(f: &mut Fixture, caps: Value) {
    f.attach();
    f.client(&msg::initialize(caps));
    let id = parse(&f.take_agent()[0])["id"].clone();
    f.agent(&msg::result(
        id,
        json!({"protocolVersion":1,"agentCapabilities":{}}),
    ));
    f.client(&msg::request(
        json!(1),
        "session/new",
        json!({"cwd":"/p","mcpServers":[]}),
    ));
    let id = parse(&f.take_agent()[0])["id"].clone();
    f.agent(&msg::result(id, json!({"sessionId":"s0"})));
    f.take_client();
}

/// Client 7 joins and loads `s0`: it renders forms.
fn join(f: &mut Fixture) -> Vec<Value> {
    assert!(f.join(7));
    f.joined(
        7,
        &msg::request(
            json!(0),
            "initialize",
            json!({"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}}}}),
        ),
    );
    let init = f.take_joined(7);
    assert_eq!(parse(&init[0])["id"], 0);
    assert_eq!(
        parse(&init[0])["result"]["agentCapabilities"]["loadSession"],
        true
    );
    f.joined(
        7,
        &msg::request(
            json!(1),
            "session/load",
            json!({"sessionId":"s0","cwd":"/p","mcpServers":[]}),
        ),
    );
    f.take_joined(7).iter().map(|l| parse(l)).collect()
}

fn question(id: i64) -> String {
    msg::ask(
        json!(id),
        json!({"sessionId":"s0","questionId":format!("q{id}"),"prompt":"Which database?",
            "options":[{"value":"sqlite","label":"SQLite"},{"value":"pg","label":"Postgres"}]}),
    )
}

fn update(text: &str) -> String {
    msg::notification(
        "session/update",
        json!({"sessionId":"s0","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}}}),
    )
}

fn requests<'a>(lines: &'a [Value], method: &str) -> Vec<&'a Value> {
    lines.iter().filter(|m| m["method"] == method).collect()
}

fn texts(lines: &[String]) -> String {
    lines.join("\n")
}

#[test]
fn a_joined_client_is_shown_the_question_in_its_dialect_and_the_first_answer_wins() {
    let mut f = attached();
    f.agent(&question(50));
    let to_a: Vec<Value> = f.take_client().iter().map(|l| parse(l)).collect();
    let prompt_a = requests(&to_a, "session/request_permission")[0].clone();
    let to_b = join(&mut f);
    // The load's result, after the note that the session is shared, then the question as
    // a form (this client's dialect), under an id of the bridge's.
    let result_at = to_b
        .iter()
        .position(|m| m["id"] == 1)
        .expect("the load's result");
    assert!(to_b[..result_at]
        .iter()
        .any(|m| m.to_string().contains("open in another editor too")));
    let form = requests(&to_b, "elicitation/create")[0].clone();
    assert_ne!(form["id"], 1, "under a bridge id: {form}");
    // The agent's updates of s0 reach both.
    f.agent(&update("working"));
    assert!(texts(&f.take_client()).contains("working"));
    assert!(texts(&f.take_joined(7)).contains("working"));
    // The joined client answers first: the agent gets one answer, in its own shape.
    f.joined(
        7,
        &msg::result(
            form["id"].clone(),
            json!({"action":"accept","content":{"q1":"pg"}}),
        ),
    );
    let to_agent = f.take_agent();
    assert_eq!(to_agent.len(), 1, "{to_agent:?}");
    assert_eq!(to_agent[0], msg::answered(json!(50), json!([["pg"]])));
    // The attached client is told, as of an answer from the page; its late press does
    // nothing but say so.
    let told = f.take_client();
    assert!(texts(&told).contains("Answered: Postgres"), "{told:?}");
    f.client(&msg::result(
        prompt_a["id"].clone(),
        json!({"outcome":{"outcome":"selected","optionId":"option-0"}}),
    ));
    assert!(f.take_agent().is_empty(), "answered once");
    assert!(texts(&f.take_client()).contains("already answered"));
    let resolved: Vec<Value> = f
        .take_events()
        .into_iter()
        .filter(|e| e["event"] == "resolved")
        .collect();
    assert_eq!(resolved.len(), 1, "{resolved:?}");
}

#[test]
fn when_the_attached_client_answers_first_the_joined_one_is_told_and_its_late_press_is_refused() {
    let mut f = attached();
    join(&mut f);
    f.agent(&question(60));
    let to_a: Vec<Value> = f.take_client().iter().map(|l| parse(l)).collect();
    let to_b: Vec<Value> = f.take_joined(7).iter().map(|l| parse(l)).collect();
    let prompt_a = requests(&to_a, "session/request_permission")[0].clone();
    let form = requests(&to_b, "elicitation/create")[0].clone();
    // SQLite is the first option: the attached client's yes to it answers.
    f.client(&msg::result(
        prompt_a["id"].clone(),
        json!({"outcome":{"outcome":"selected","optionId":"allow"}}),
    ));
    let to_agent = f.take_agent();
    assert_eq!(to_agent.len(), 1, "{to_agent:?}");
    let told = f.take_joined(7);
    assert!(texts(&told).contains("was answered"), "{told:?}");
    f.joined(
        7,
        &msg::result(
            form["id"].clone(),
            json!({"action":"accept","content":{"q1":"pg"}}),
        ),
    );
    assert!(f.take_agent().is_empty(), "answered once");
    assert!(texts(&f.take_joined(7)).contains("already answered"));
}

#[test]
fn a_joined_clients_prompt_goes_to_the_agent_and_its_result_comes_back_under_its_own_id() {
    let mut f = attached();
    join(&mut f);
    // Id 1 is the attached client's too.
    f.joined(
        7,
        &msg::request(
            json!(1),
            "session/prompt",
            json!({"sessionId":"s0","prompt":[{"type":"text","text":"hi"}]}),
        ),
    );
    let sent = parse(&f.take_agent()[0]);
    assert_eq!(sent["method"], "session/prompt");
    assert_ne!(sent["id"], 1, "under a bridge id");
    // Its cancel names the bridge id.
    f.joined(7, &msg::cancel_request(json!(1)));
    let cancel = parse(&f.take_agent()[0]);
    assert_eq!(cancel["params"]["requestId"], sent["id"]);
    f.agent(&update("hello"));
    f.agent(&msg::result(
        sent["id"].clone(),
        json!({"stopReason":"end_turn"}),
    ));
    let to_b = f.take_joined(7);
    assert!(texts(&to_b).contains("hello"));
    assert_eq!(
        parse(to_b.last().unwrap()),
        parse(&msg::result(json!(1), json!({"stopReason":"end_turn"})))
    );
    let to_a = f.take_client();
    assert!(
        texts(&to_a).contains("hello"),
        "the attached client sees the turn"
    );
    assert!(
        to_a.iter().all(|l| parse(l).get("result").is_none()),
        "and no result it did not ask for: {to_a:?}"
    );
}

#[test]
fn a_joined_client_that_left_is_sent_nothing_and_the_agent_still_gets_its_answers() {
    let mut f = attached();
    join(&mut f);
    f.joined(
        7,
        &msg::request(
            json!(5),
            "session/prompt",
            json!({"sessionId":"s0","prompt":[{"type":"text","text":"hi"}]}),
        ),
    );
    let sent = parse(&f.take_agent()[0]);
    f.agent(&question(70));
    f.leave(7);
    f.out.to_joined.clear();
    f.agent(&update("more"));
    f.agent(&msg::result(
        sent["id"].clone(),
        json!({"stopReason":"end_turn"}),
    ));
    assert!(f.out.to_joined.is_empty(), "{:?}", f.out.to_joined);
    assert!(
        f.take_client().iter().all(|l| parse(l)["id"] != sent["id"]),
        "its result goes to nobody"
    );
    // The question is the attached client's still.
    f.control_answer("s0", "q70", &json!([["pg"]]))
        .expect("answered");
    assert_eq!(f.take_agent(), [msg::answered(json!(70), json!([["pg"]]))]);
    assert!(f.out.to_joined.is_empty());
}

#[test]
fn when_the_agent_is_gone_a_joined_clients_requests_get_one_error_each() {
    let mut f = attached();
    join(&mut f);
    f.joined(
        7,
        &msg::request(
            json!("p"),
            "session/prompt",
            json!({"sessionId":"s0","prompt":[]}),
        ),
    );
    f.take_agent();
    f.agent_gone(&AgentExit {
        code: Some(3),
        signal: None,
        stderr_tail: String::new(),
    });
    let to_b = f.take_joined(7);
    let errors: Vec<Value> = to_b
        .iter()
        .map(|l| parse(l))
        .filter(|m| m.get("error").is_some())
        .collect();
    assert_eq!(errors.len(), 1, "{to_b:?}");
    assert_eq!(errors[0]["id"], "p");
}

#[test]
fn a_joined_client_may_load_only_a_held_session_and_sees_nothing_of_others() {
    let mut f = attached();
    assert!(f.join(7));
    f.joined(7, &msg::initialize(json!({})));
    f.take_joined(7);
    f.joined(
        7,
        &msg::request(
            json!(1),
            "session/load",
            json!({"sessionId":"elsewhere","cwd":"/p","mcpServers":[]}),
        ),
    );
    let said = parse(&f.take_joined(7)[0]);
    assert_eq!(said["id"], 1);
    assert_eq!(said["error"]["code"], -32602);
    // Nothing of s0 until it loads it.
    f.agent(&update("private"));
    f.agent(&question(80));
    assert!(f.take_joined(7).is_empty());
    assert!(
        f.take_agent().is_empty(),
        "the agent was not asked anything"
    );
}

#[test]
fn the_agents_requests_of_a_session_only_a_joined_client_has_go_to_that_client() {
    let mut f = attached();
    // The first editor leaves; another attaches and has not loaded s0.
    f.detach();
    f.take_client();
    f.attach();
    f.client(&msg::initialize(json!({})));
    f.take_client();
    // A request that waits for a client, then one asked after the joined client has s0.
    let read = |id: i64| {
        msg::request(
            json!(id),
            "fs/read_text_file",
            json!({"sessionId":"s0","path":"/p/a"}),
        )
    };
    f.agent(&read(77));
    assert!(f.take_client().is_empty(), "the attached client lacks s0");
    let to_b = join(&mut f);
    assert!(
        to_b.iter()
            .any(|m| m["id"] == 77 && m["method"] == "fs/read_text_file"),
        "{to_b:?}"
    );
    f.agent(&read(78));
    assert!(f.take_client().is_empty());
    let more: Vec<Value> = f.take_joined(7).iter().map(|l| parse(l)).collect();
    assert_eq!(more.len(), 1, "{more:?}");
    assert_eq!(more[0]["id"], 78);
    // Its answers are the agent's, under the agent's ids.
    for id in [77, 78] {
        f.joined(7, &msg::result(json!(id), json!({"content": "hi"})));
    }
    let got: Vec<Value> = f.take_agent().iter().map(|l| parse(l)).collect();
    assert_eq!(
        got.iter().map(|m| m["id"].clone()).collect::<Vec<_>>(),
        [json!(77), json!(78)]
    );
    // A second answer (the attached client, once it loads s0) is not the agent's.
    f.client(&msg::request(
        json!(5),
        "session/load",
        json!({"sessionId":"s0","cwd":"/p","mcpServers":[]}),
    ));
    let to_a: Vec<Value> = f.take_client().iter().map(|l| parse(l)).collect();
    assert!(
        !to_a.iter().any(|m| m["method"] == "fs/read_text_file"),
        "answered already: {to_a:?}"
    );
}

#[test]
fn a_joined_client_may_not_prompt_or_cancel_a_session_it_has_not_loaded() {
    let mut f = attached();
    assert!(f.join(7));
    f.joined(7, &msg::initialize(json!({})));
    f.take_joined(7);
    f.agent(&question(90));
    f.take_client();
    f.joined(
        7,
        &msg::request(
            json!(3),
            "session/prompt",
            json!({"sessionId":"s0","prompt":[{"type":"text","text":"hi"}]}),
        ),
    );
    let said = parse(&f.take_joined(7)[0]);
    assert_eq!(
        (said["id"].clone(), said["error"]["code"].clone()),
        (json!(3), json!(-32602))
    );
    f.joined(7, &msg::session_cancel("s0"));
    assert!(f.take_agent().is_empty(), "nothing reaches the agent");
    assert_eq!(
        f.r.questions().len(),
        1,
        "the attached client's question stays"
    );
}

#[test]
fn held_sessions_are_listed_the_latest_first_in_a_stable_order() {
    let mut f = attached();
    f.client(&msg::request(
        json!(2),
        "session/new",
        json!({"cwd":"/p","mcpServers":[]}),
    ));
    let id = parse(&f.take_agent()[0])["id"].clone();
    f.agent(&msg::result(id, json!({"sessionId":"s1"})));
    f.take_client();
    for n in 3..6 {
        f.client(&msg::request(json!(n), "session/list", json!({})));
        let listed = parse(&f.take_client()[0]);
        let ids: Vec<&str> = listed["result"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["s1", "s0"], "{listed}");
    }
}
