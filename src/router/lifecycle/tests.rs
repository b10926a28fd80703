use std::time::Duration;

use serde_json::{json, Value};

use crate::events::By;
use crate::router::fixture::{msg, parse, Fixture};
use crate::router::{ControlError, RouterConfig};

const ASK: &str = r#"{"jsonrpc":"2.0","id":5,"method":"_sandboxagent/session/request_question","params":{"sessionId":"s1","questionId":"q-7","prompt":"Which option?","options":[["option-a","Option A"],["option-b","Option B"]],"x":1e400}}"#;

fn ask(session: &str, qid: &str, id: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"_sandboxagent/session/request_question",
        "params":{"sessionId":session,"questionId":qid,"prompt":"p","options":["a","b"]}})
    .to_string()
}

#[test]
fn question_is_forwarded_unchanged_and_answer_normalized() {
    let mut t = Fixture::native(RouterConfig::default());
    t.agent(ASK);
    assert_eq!(t.take_client(), vec![ASK]);
    assert_eq!(t.r.questions().len(), 1);
    t.client(
        r#"{"jsonrpc":"2.0","id":5,"result":{"outcome":"answered","answers":[["Option B"]]}}"#,
    );
    assert_eq!(
        t.take_agent(),
        vec![msg::answered(json!(5), json!([["option-b"]]))]
    );
    assert!(t.r.questions().is_empty());
    // A duplicate answer is dropped, not forwarded twice.
    t.client(r#"{"jsonrpc":"2.0","id":5,"result":{"status":"answered","answers":[["option-a"]]}}"#);
    assert!(t.take_agent().is_empty());
    assert_eq!(t.r.counters.late_answers_dropped, 1);
}

#[test]
fn invalid_params_never_reach_the_client() {
    let mut t = Fixture::native(RouterConfig::default());
    t.agent(&msg::ask(json!("x"), json!({"sessionId":"s","questionId":"q","questions":[{"question":"a","options":[{"value":1,"label":"l"}]}]})));
    assert!(t.take_client().is_empty());
    assert_eq!(
        t.take_agent(),
        vec![msg::error(
            json!("x"),
            -32602,
            "Invalid params: questions[0].options[0]: value must be a string"
        )]
    );
}

#[test]
fn duplicate_question_id_and_pending_cap() {
    let mut t = Fixture::native(RouterConfig {
        max_pending_per_session: 2,
        ..RouterConfig::default()
    });
    t.agent(&ask("s", "a", json!(1)));
    t.agent(&ask("s", "a", json!(2)));
    let dup = parse(&t.take_agent()[0]);
    assert_eq!(dup["id"], 2);
    assert_eq!(dup["error"]["code"], -32602);
    t.agent(&ask("s", "b", json!(3)));
    t.agent(&ask("s", "c", json!(4)));
    let cap = parse(&t.take_agent()[0]);
    assert_eq!(cap["error"]["code"], -32000);
    assert!(cap["error"]["message"]
        .as_str()
        .unwrap()
        .contains("limit 2"));
    // Another session is not affected by the cap.
    t.agent(&ask("other", "c", json!(5)));
    assert!(t.take_agent().is_empty());
    assert_eq!(t.take_client().len(), 3);
}

#[test]
fn invalid_answer_carries_the_original() {
    let mut t = Fixture::native(RouterConfig::default());
    t.agent(ASK);
    t.client(&msg::answered(json!(5), json!([["zzz"]])));
    let e = parse(&t.take_agent()[0]);
    assert_eq!(e["error"]["code"], -32603);
    assert_eq!(
        e["error"]["data"]["clientResult"],
        json!({"status":"answered","answers":[["zzz"]]})
    );
}

#[test]
fn client_errors() {
    let mut t = Fixture::native(RouterConfig::default());
    t.agent(ASK);
    t.client(r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found"}}"#);
    assert_eq!(t.take_agent(), vec![msg::rejected(json!(5), "unsupported")]);
    t.agent(ASK);
    let other = msg::error(json!(5), -32000, "busy");
    t.client(&other);
    assert_eq!(t.take_agent(), vec![other]);
}

#[test]
fn session_cancel_rejects_only_that_session() {
    let mut t = Fixture::native(cancels());
    t.agent(&ask("s1", "a", json!(1)));
    t.agent(&ask("s2", "a", json!(2)));
    t.take_client();
    let cancel = msg::session_cancel("s1");
    t.client(&cancel);
    assert_eq!(
        t.take_agent(),
        vec![
            cancel.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"result":{"status":"rejected","reason":"cancelled"}}"#
                .to_owned()
        ]
    );
    assert_eq!(
        t.take_client(),
        vec![r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}"#]
    );
    assert_eq!(t.r.questions().len(), 1);
}

#[test]
fn agent_cancel_request() {
    let mut t = Fixture::native(RouterConfig::default());
    t.agent(ASK);
    t.take_client();
    let cancel = msg::cancel_request(json!(5));
    t.agent(&cancel);
    assert_eq!(t.take_client(), vec![cancel]);
    assert_eq!(
        t.take_agent(),
        vec![msg::error(json!(5), -32800, "Request cancelled")]
    );
    t.client(r#"{"jsonrpc":"2.0","id":5,"result":{"status":"answered","answers":[["option-a"]]}}"#);
    assert!(t.take_agent().is_empty());
    // A cancel for something else is just forwarded.
    let other = msg::cancel_request(json!("5"));
    t.agent(&other);
    assert_eq!(t.take_client(), vec![other]);
}

#[test]
fn timeout_adds_expires_at_and_rejects() {
    let mut t = Fixture::native(RouterConfig {
        client_cancel_requests: true,
        question_timeout: Some(Duration::from_secs(60)),
        ..RouterConfig::default()
    });
    let ask_short = ASK.replace("\"x\":1e400", "\"x\":1e400,\"timeoutMs\":1500");
    t.agent(&ask_short);
    let sent = t.take_client();
    assert!(
        sent[0].ends_with(r#""x":1e400,"timeoutMs":1500,"expiresAt":"2026-11-20T00:00:01.500Z"}}"#),
        "{}",
        sent[0]
    );
    assert_eq!(
        t.r.next_deadline(),
        Some(t.start + Duration::from_millis(1500))
    );
    t.timer_at(Duration::from_millis(1499));
    assert!(t.take_agent().is_empty());
    t.timer_at(Duration::from_millis(1500));
    assert_eq!(t.take_agent(), vec![msg::rejected(json!(5), "timeout")]);
    assert_eq!(t.take_client(), vec![msg::cancel_request(json!(5))]);
    assert_eq!(t.r.next_deadline(), None);
}

#[test]
fn client_eof_rejects_before_closing_and_agent_exit_withdraws() {
    let mut t = Fixture::native(cancels());
    t.agent(&ask("s", "a", json!(1)));
    t.take_client();
    t.client_eof();
    assert_eq!(
        t.take_agent(),
        vec![
            msg::rejected(json!(1), "client_disconnected"),
            "<close>".into()
        ]
    );
    let mut t = Fixture::native(RouterConfig::default());
    t.agent(&ask("s", "a", json!("1")));
    t.take_client();
    t.agent_gone(&crate::router::AgentExit {
        code: Some(1),
        signal: None,
        stderr_tail: String::new(),
    });
    // No `$/cancel_request` by default: a question shown without a tool call gets a
    // note in the chat.
    let note = parse(&t.take_client()[0]);
    assert_eq!(
        note["params"]["update"]["sessionUpdate"],
        "agent_message_chunk"
    );
    assert_eq!(
        note["params"]["update"]["content"]["text"],
        "\n[acp-question-bridge] The question \"p\" was withdrawn (cancelled).\n"
    );
}

#[test]
fn ids_one_and_string_one_are_different_questions() {
    let mut t = Fixture::native(RouterConfig::default());
    t.agent(&ask("s", "a", json!(1)));
    t.agent(&ask("s", "b", json!("1")));
    t.client(&msg::answered(json!("1"), json!([["b"]])));
    t.client(&msg::answered(json!(1), json!([["a"]])));
    assert_eq!(
        t.take_agent(),
        vec![
            msg::answered(json!("1"), json!([["b"]])),
            msg::answered(json!(1), json!([["a"]])),
        ]
    );
}

#[test]
fn initialize_is_merged_both_ways() {
    let mut t = Fixture::native(RouterConfig::default());
    t.client(&msg::request(
        json!(0),
        "initialize",
        json!({"protocolVersion":1,"clientCapabilities":{"fs":{}}}),
    ));
    assert_eq!(
        t.take_agent(),
        vec![msg::request(
            json!(0),
            "initialize",
            json!({"protocolVersion":1,"clientCapabilities":{"fs":{},"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}})
        )]
    );
    assert_eq!(
        t.r.client_support().map(|c| c.native_questions),
        Some(false)
    );
    t.agent(&msg::result(
        json!(0),
        json!({"protocolVersion":1,"agentCapabilities":{"loadSession":true}}),
    ));
    let resp = parse(&t.take_client()[0]);
    assert_eq!(
        resp["result"]["agentCapabilities"],
        json!({"loadSession":true,"_meta":{"sandboxagent.dev":{
            "extensions":{"sessionRequestQuestion":true},
            "questionBridge":{"version":env!("CARGO_PKG_VERSION")}}}})
    );
}

/// The client's `initialize` without a capability that shows questions.
fn init_plain() -> String {
    msg::initialize(json!({}))
}
/// The client's `initialize` with form elicitations.
fn init_forms() -> String {
    msg::initialize(json!({"elicitation":{"form":{}}}))
}
/// The client's `initialize` with the extension.
fn init_native() -> String {
    msg::initialize(
        json!({"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}),
    )
}
/// A question of two items (a multi-select and a free text).
fn multi() -> String {
    msg::ask(
        json!(9),
        json!({"sessionId":"s1","questionId":"m","questions":[
            {"question":"A?","options":["x","y"],"multiple":true},{"question":"Notes?"}]}),
    )
}

fn auto(init: &str) -> Fixture {
    auto_with(RouterConfig::default(), init)
}

fn auto_with(cfg: RouterConfig, init: &str) -> Fixture {
    let mut t = Fixture::new(cfg);
    t.client(init);
    t.take_agent();
    t
}

/// `--client-cancel-requests`: the client is sent `$/cancel_request` for what it shows.
fn cancels() -> RouterConfig {
    RouterConfig {
        client_cancel_requests: true,
        ..RouterConfig::default()
    }
}

/// `--permission-prompts list`.
fn lists() -> RouterConfig {
    RouterConfig {
        permission_prompts: Some(crate::questions::prompts::Style::List),
        ..RouterConfig::default()
    }
}

#[test]
fn auto_dialect_follows_initialize() {
    use crate::questions::Dialect;
    assert_eq!(auto(&init_native()).r.dialect(), Dialect::Extension);
    assert_eq!(auto(&init_forms()).r.dialect(), Dialect::Elicitation);
    assert_eq!(auto(&init_plain()).r.dialect(), Dialect::Permission);
    let forced = Fixture::new(RouterConfig {
        client_dialect: Some(Dialect::Elicitation),
        ..RouterConfig::default()
    });
    assert_eq!(forced.r.dialect(), Dialect::Elicitation);
}

#[test]
fn elicitation_dialect_round_trip() {
    let mut t = auto(&init_forms());
    t.agent(ASK);
    let sent = parse(&t.take_client()[0]);
    assert_eq!(sent["method"], "elicitation/create");
    let bridge_id = sent["id"].as_str().unwrap().to_owned();
    assert!(bridge_id.starts_with("acp-question-bridge:"), "{bridge_id}");
    assert_eq!(sent["params"]["mode"], "form");
    assert_eq!(sent["params"]["sessionId"], "s1");
    assert_eq!(sent["params"]["requestedSchema"]["required"], json!(["q1"]));
    t.client(&json!({"jsonrpc":"2.0","id":bridge_id,"result":{"action":"accept","content":{"q1":"option-b"}}}).to_string());
    assert_eq!(
        t.take_agent(),
        vec![msg::answered(json!(5), json!([["option-b"]]))]
    );
    // decline / cancel / invalid content
    for (result, expect) in [
        (
            json!({"action":"decline"}),
            json!({"status":"rejected","reason":"declined"}),
        ),
        (
            json!({"action":"cancel"}),
            json!({"status":"rejected","reason":"cancelled"}),
        ),
    ] {
        t.agent(ASK);
        let id = parse(&t.take_client()[0])["id"].clone();
        t.client(&json!({"jsonrpc":"2.0","id":id,"result":result}).to_string());
        assert_eq!(parse(&t.take_agent()[0])["result"], expect);
    }
    t.agent(ASK);
    let id = parse(&t.take_client()[0])["id"].clone();
    t.client(
        &json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":{"q1":"nope"}}})
            .to_string(),
    );
    let e = parse(&t.take_agent()[0]);
    assert_eq!(e["error"]["code"], -32603);
    assert_eq!(e["error"]["data"]["clientResult"]["content"]["q1"], "nope");
}

#[test]
fn permission_dialect_round_trip_and_limits() {
    let mut t = auto_with(lists(), &init_plain());
    t.agent(ASK);
    let sent = t.take_client();
    assert_eq!(sent.len(), 2);
    let tool_call = parse(&sent[0]);
    assert_eq!(tool_call["params"]["update"]["sessionUpdate"], "tool_call");
    let req = parse(&sent[1]);
    assert_eq!(req["method"], "session/request_permission");
    let tc = tool_call["params"]["update"]["toolCallId"].clone();
    assert_eq!(req["params"]["toolCall"]["toolCallId"], tc);
    t.client(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"outcome":{"outcome":"selected","optionId":"option-a"}}}).to_string());
    assert_eq!(
        parse(&t.take_agent()[0])["result"],
        json!({"status":"answered","answers":[["option-a"]]})
    );
    let done = parse(&t.take_client()[0]);
    assert_eq!(
        done["params"]["update"]["sessionUpdate"],
        "tool_call_update"
    );
    assert_eq!(done["params"]["update"]["toolCallId"], tc);
    assert_eq!(done["params"]["update"]["status"], "completed");
    // An invalid answer (an option never offered) still closes the tool call.
    t.agent(ASK);
    let sent = t.take_client();
    let tc = parse(&sent[0])["params"]["update"]["toolCallId"].clone();
    let req = parse(&sent[1]);
    t.client(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"outcome":{"outcome":"selected","optionId":"nope"}}}).to_string());
    assert_eq!(parse(&t.take_agent()[0])["error"]["code"], -32603);
    let done = parse(&t.take_client()[0]);
    assert_eq!(done["params"]["update"]["toolCallId"], tc);
    assert_eq!(done["params"]["update"]["status"], "failed");
    // Dismiss -> declined.
    t.agent(ASK);
    let req = parse(&t.take_client()[1]);
    t.client(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"outcome":{"outcome":"selected","optionId":"dismiss"}}}).to_string());
    assert_eq!(parse(&t.take_agent()[0])["result"]["reason"], "declined");
    t.take_client();
    // A multi-select question cannot be a permission prompt.
    t.agent(&multi());
    assert!(t.take_client().is_empty());
    assert_eq!(t.take_agent(), vec![msg::rejected(json!(9), "unsupported")]);
}

#[test]
fn timeout_in_permission_dialect_closes_the_tool_call() {
    let mut t = Fixture::new(RouterConfig {
        question_timeout: Some(Duration::from_secs(1)),
        client_cancel_requests: true,
        ..RouterConfig::default()
    });
    t.client(&init_plain());
    t.take_agent();
    t.agent(ASK);
    let req = parse(&t.take_client()[1]);
    t.timer_at(Duration::from_secs(1));
    assert_eq!(parse(&t.take_agent()[0])["result"]["reason"], "timeout");
    let sent = t.take_client();
    assert_eq!(
        parse(&sent[0]),
        json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":req["id"]}})
    );
    assert_eq!(parse(&sent[1])["params"]["update"]["status"], "failed");
}

#[test]
fn unknown_extension_falls_back_for_the_rest_of_the_connection() {
    use crate::questions::Dialect;
    let native_forms = msg::request(
        json!(0),
        "initialize",
        json!({"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}},"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}),
    );
    let mut t = auto(&native_forms);
    t.agent(ASK);
    t.take_client();
    t.client(r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found"}}"#);
    assert!(t.take_agent().is_empty(), "the question is still open");
    let again = parse(&t.take_client()[0]);
    assert_eq!(again["method"], "elicitation/create");
    assert_eq!(t.r.dialect(), Dialect::Elicitation);
    // The elicitation is not understood either: permission is next.
    t.client(
        &json!({"jsonrpc":"2.0","id":again["id"],"error":{"code":-32601,"message":"no"}})
            .to_string(),
    );
    let sent = t.take_client();
    assert_eq!(parse(&sent[1])["method"], "session/request_permission");
    assert_eq!(t.r.dialect(), Dialect::Permission);
    // Forced dialects do not fall back.
    let mut f = Fixture::native(RouterConfig::default());
    f.agent(ASK);
    f.client(r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found"}}"#);
    assert_eq!(parse(&f.take_agent()[0])["result"]["reason"], "unsupported");
}

#[test]
fn agent_id_that_looks_like_a_bridge_id_routes_correctly() {
    let mut t = auto(&init_forms());
    t.agent(ASK);
    let bridge_id = parse(&t.take_client()[0])["id"].clone();
    // The agent sends its own request under the very same id: refused, not confused.
    let clash = json!({"jsonrpc":"2.0","id":bridge_id,"method":"_sandboxagent/session/request_question",
        "params":{"sessionId":"s1","questionId":"other","prompt":"p"}});
    t.agent(&clash.to_string());
    assert_eq!(parse(&t.take_agent()[0])["error"]["code"], -32600);
    // Nor for any other request.
    let clash = json!({"jsonrpc":"2.0","id":bridge_id,"method":"fs/read_text_file","params":{"sessionId":"s1"}});
    t.agent(&clash.to_string());
    assert_eq!(parse(&t.take_agent()[0])["error"]["code"], -32600);
    assert!(t.take_client().is_empty());
    // A look-alike id of a normal request is just forwarded, and its answer too.
    let look_alike = msg::request(
        json!("acp-question-bridge:0000000000000000:1"),
        "fs/read_text_file",
        json!({"sessionId":"s1"}),
    );
    t.agent(&look_alike);
    assert_eq!(t.take_client(), vec![look_alike]);
    let answer = msg::result(
        json!("acp-question-bridge:0000000000000000:1"),
        json!({"content":""}),
    );
    t.client(&answer);
    assert_eq!(t.take_agent(), vec![answer]);
    t.client(&json!({"jsonrpc":"2.0","id":bridge_id,"result":{"action":"accept","content":{"q1":"option-a"}}}).to_string());
    assert_eq!(parse(&t.take_agent()[0])["id"], 5);
}

#[test]
fn agent_permission_and_elicitation_are_answered_on_cancel_and_eof() {
    let mut t = auto_with(cancels(), &init_forms());
    let perm = msg::request(
        json!(1),
        "session/request_permission",
        json!({"sessionId":"s1","toolCall":{"toolCallId":"t"},"options":[]}),
    );
    let elic = msg::request(
        json!(2),
        "elicitation/create",
        json!({"sessionId":"s2","mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}}}),
    );
    t.agent(&perm);
    t.agent(&elic);
    assert_eq!(t.take_client(), vec![perm, elic]);
    t.client(&msg::session_cancel("s1"));
    let to_agent = t.take_agent();
    assert_eq!(
        to_agent[1],
        msg::result(json!(1), json!({"outcome":{"outcome":"cancelled"}}))
    );
    assert_eq!(t.take_client(), vec![msg::cancel_request(json!(1))]);
    // The client's own (late) cancelled answer is dropped.
    t.client(&msg::result(
        json!(1),
        json!({"outcome":{"outcome":"cancelled"}}),
    ));
    assert!(t.take_agent().is_empty());
    t.client_eof();
    assert_eq!(
        t.take_agent(),
        vec![
            r#"{"jsonrpc":"2.0","id":2,"result":{"action":"cancel"}}"#.to_owned(),
            "<close>".to_owned()
        ]
    );
}

#[test]
fn agent_exit_withdraws_every_request_the_client_shows() {
    let mut t = auto_with(cancels(), &init_forms());
    t.agent(r#"{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s1"}}"#);
    t.agent(ASK);
    let bridge_id = parse(&t.take_client()[1])["id"].clone();
    t.agent_gone(&crate::router::AgentExit {
        code: Some(1),
        signal: None,
        stderr_tail: String::new(),
    });
    let ids: Vec<Value> = t
        .take_client()
        .iter()
        .map(|l| parse(l))
        .filter(|m| m["method"] == "$/cancel_request")
        .map(|m| m["params"]["requestId"].clone())
        .collect();
    assert_eq!(ids, vec![json!(1), bridge_id]);
}

#[test]
fn advertised_elicitation_becomes_a_permission_prompt_and_back() {
    let mut t = Fixture::new(RouterConfig {
        advertise_elicitation: true,
        // Forms are offered only where a question can wait when the client cannot
        // show it.
        hold_unsupported: true,
        ..RouterConfig::default()
    });
    t.client(&init_plain());
    let init = parse(&t.take_agent()[0]);
    assert_eq!(
        init["params"]["clientCapabilities"]["elicitation"]["form"],
        json!({})
    );
    let elic = json!({"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"sessionId":"s1","mode":"form",
        "message":"Pick a color","requestedSchema":{"type":"object","properties":{"color":{"type":"string","enum":["red","green"]}}}}});
    t.agent(&elic.to_string());
    // An unknown client gets yes/no prompts: "red"? No. "green"? Yes.
    let sent = t.take_client();
    let req = parse(&sent[1]);
    assert_eq!(req["method"], "session/request_permission");
    assert_eq!(req["params"]["options"][0]["optionId"], "allow");
    assert_eq!(req["params"]["options"][1]["optionId"], "reject");
    assert_eq!(
        req["params"]["toolCall"]["title"],
        "Pick a color → red (option 1 of 2)"
    );
    t.client(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}).to_string());
    assert!(t.take_agent().is_empty());
    let sent = t.take_client();
    assert_eq!(
        parse(&sent[0])["params"]["update"]["sessionUpdate"],
        "tool_call_update"
    );
    let req = parse(&sent[1]);
    assert_eq!(
        req["params"]["toolCall"]["title"],
        "Pick a color → green (option 2 of 2)"
    );
    t.client(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}).to_string());
    assert_eq!(
        t.take_agent(),
        vec![msg::result(
            json!(3),
            json!({"action":"accept","content":{"color":"green"}})
        )]
    );
    // A form the permission prompt cannot express (free text) waits on the control
    // server, pointed to in the chat.
    t.take_client();
    let wide = json!({"jsonrpc":"2.0","id":4,"method":"elicitation/create","params":{"sessionId":"s1","mode":"form",
        "message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"boolean"}}}}});
    t.agent(&wide.to_string());
    assert!(t.take_agent().is_empty());
    let pointer = parse(&t.take_client()[0]);
    assert_eq!(pointer["params"]["update"]["status"], "pending");
}

#[test]
fn advertised_elicitation_goes_to_a_native_client_as_the_extension() {
    let mut t = Fixture::new(RouterConfig {
        advertise_elicitation: true,
        ..RouterConfig::default()
    });
    t.client(&init_native());
    t.take_agent();
    let elic = json!({"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"sessionId":"s1","mode":"form",
        "message":"Configure","requestedSchema":{"type":"object","properties":{
            "name":{"type":"string","title":"Name"},"ok":{"type":"boolean","title":"OK"}}}}});
    t.agent(&elic.to_string());
    let q = parse(&t.take_client()[0]);
    assert_eq!(q["method"], "_sandboxagent/session/request_question");
    assert_eq!(q["params"]["questions"].as_array().unwrap().len(), 2);
    t.client(&json!({"jsonrpc":"2.0","id":q["id"],"result":{"status":"answered","answers":[["Ada"],["Yes"]]}}).to_string());
    assert_eq!(
        t.take_agent(),
        vec![msg::result(
            json!(3),
            json!({"action":"accept","content":{"name":"Ada","ok":true}})
        )]
    );
}

fn observed(cfg: RouterConfig) -> Fixture {
    Fixture::native(RouterConfig {
        events: true,
        hold_unsupported: true,
        ..cfg
    })
}

#[test]
fn control_answer_resolves_once_and_withdraws_the_client_request() {
    let mut t = observed(cancels());
    t.agent(&ask("s", "q", json!(7)));
    t.take_client();
    let ev = t.take_events();
    assert_eq!(ev[0]["event"], "requested");
    assert_eq!(ev[0]["question"]["dialect"], "extension");
    assert_eq!(ev[1]["event"], "delivered");
    assert_eq!(t.r.question_views().len(), 1);
    let r =
        t.r.control_answer("s", "q", &json!([["b"]]), None, &mut t.out)
            .unwrap();
    assert_eq!(r, json!({"status":"answered","answers":[["b"]]}));
    assert_eq!(
        t.take_agent(),
        vec![msg::answered(json!(7), json!([["b"]]))]
    );
    assert_eq!(t.take_client(), vec![msg::cancel_request(json!(7))]);
    let ev = t.take_events();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["by"], "control");
    // The client's answer comes second: dropped, reported with what it answered.
    t.client(&msg::answered(json!(7), json!([["a"]])));
    assert!(t.take_agent().is_empty());
    let ev = t.take_events();
    assert_eq!(ev[0]["event"], "late_answer");
    assert_eq!(ev[0]["from"], "client");
    assert_eq!(ev[0]["questionId"], "q");
    assert_eq!(ev[0]["content"]["result"]["answers"], json!([["a"]]));
    assert_eq!(t.r.counters.late_answers_dropped, 1);
    assert!(t.r.question_views().is_empty());
}

#[test]
fn a_control_answer_after_the_client_is_refused_and_kept() {
    let mut t = observed(RouterConfig::default());
    t.agent(&ask("s", "q", json!(1)));
    t.client(&msg::answered(json!(1), json!([["a"]])));
    assert_eq!(t.take_agent().len(), 1);
    t.take_events();
    let e =
        t.r.control_answer("s", "q", &json!([["b"]]), None, &mut t.out);
    assert_eq!(
        e,
        Err(ControlError::NotPending {
            resolved_by: Some(By::Client)
        })
    );
    assert!(t.take_agent().is_empty());
    let ev = t.take_events();
    assert_eq!(ev[0]["event"], "late_answer");
    assert_eq!(ev[0]["from"], "control");
    assert_eq!(ev[0]["content"], json!({"answers":[["b"]]}));
    // Never asked at all: not pending, and nobody to name.
    assert_eq!(
        t.r.control_reject("s", "nope", None, None, &mut t.out),
        Err(ControlError::NotPending { resolved_by: None })
    );
}

#[test]
fn control_answers_are_checked_like_client_answers() {
    let mut t = observed(RouterConfig::default());
    t.agent(&ask("s", "q", json!(1)));
    t.take_client();
    for bad in [json!([["c"]]), json!([["a", "b"]]), json!([]), json!("a")] {
        match t.r.control_answer("s", "q", &bad, None, &mut t.out) {
            Err(ControlError::Invalid(msg)) => assert!(msg.starts_with("answers"), "{msg}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert!(matches!(
        t.r.control_reject("s", "q", Some("bored"), None, &mut t.out),
        Err(ControlError::Invalid(_))
    ));
    assert_eq!(t.r.questions().len(), 1);
    // A label stands for its value, as from a client.
    let r =
        t.r.control_reject("s", "q", None, None, &mut t.out)
            .unwrap();
    assert_eq!(r, json!({"status":"rejected","reason":"declined"}));
    assert_eq!(t.take_agent(), vec![msg::rejected(json!(1), "declined")]);
}

#[test]
fn unsupported_questions_wait_for_the_control_server() {
    let mut t = Fixture::new(RouterConfig {
        events: true,
        hold_unsupported: true,
        client_dialect: Some(crate::questions::Dialect::Permission),
        ..RouterConfig::default()
    });
    let multi = json!({"jsonrpc":"2.0","id":"m","method":"_sandboxagent/session/request_question",
        "params":{"sessionId":"s","questionId":"q","questions":[
            {"question":"one","options":["a","b"]},{"question":"two"}]}});
    t.agent(&multi.to_string());
    // Not the question (free text cannot be a permission prompt), but a tool call in
    // the chat that says the agent waits, and where to answer, and the same in words.
    let pointer = t.take_client();
    assert_eq!(pointer.len(), 2);
    let note = parse(&pointer[1]);
    assert!(note["params"]["update"]["content"]["text"]
        .as_str()
        .unwrap()
        .contains("The agent is waiting for your answer to: Please answer 2 questions"));
    let update = &parse(&pointer[0])["params"]["update"];
    assert_eq!(update["sessionUpdate"], "tool_call");
    assert_eq!(update["status"], "pending");
    assert_eq!(
        update["title"],
        "Waiting for your answer: Please answer 2 questions: one, two"
    );
    assert!(
        t.take_agent().is_empty(),
        "nor is the agent told it is unsupported"
    );
    let ev = t.take_events();
    assert_eq!(ev[0]["question"]["dialect"], "control");
    assert_eq!(ev[1]["dialect"], "control");
    assert_eq!(t.r.question_views()[0].dialect, "control");
    t.r.control_answer("s", "q", &json!([["b"], ["notes"]]), None, &mut t.out)
        .unwrap();
    let done = parse(&t.take_client()[0]);
    assert_eq!(done["params"]["update"]["toolCallId"], update["toolCallId"]);
    assert_eq!(done["params"]["update"]["status"], "completed");
    assert_eq!(
        t.take_agent(),
        vec![msg::answered(json!("m"), json!([["b"], ["notes"]]))]
    );
    // Without a control server it is rejected at once, as before.
    let mut t = Fixture::new(RouterConfig {
        client_dialect: Some(crate::questions::Dialect::Permission),
        ..RouterConfig::default()
    });
    t.agent(&multi.to_string());
    assert_eq!(parse(&t.take_agent()[0])["result"]["reason"], "unsupported");
    assert!(t.out.events.is_empty(), "no events unless asked for");
}

#[test]
fn the_control_dialect_shows_the_client_nothing_not_even_the_agents_own_requests() {
    let mut t = Fixture::new(RouterConfig {
        events: true,
        hold_unsupported: true,
        client_dialect: Some(crate::questions::Dialect::Control),
        ..RouterConfig::default()
    });
    let approve = json!({"jsonrpc":"2.0","id":7,"method":"session/request_permission",
        "params":{"sessionId":"s","toolCall":{"toolCallId":"tc","title":"rm -rf build"},
            "options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},
                       {"optionId":"reject","name":"Reject","kind":"reject_once"}]}});
    t.agent(&approve.to_string());
    t.agent(&ask("s", "q", json!(1)));
    assert!(t.take_client().is_empty(), "the client is shown nothing");
    let views = t.r.question_views();
    assert_eq!(views.len(), 2);
    assert!(views.iter().all(|v| v.dialect == "control"));
    let permission = views
        .iter()
        .find(|v| v.source == "permission")
        .unwrap()
        .question_id
        .clone();
    t.r.control_answer("s", &permission, &json!([["reject"]]), None, &mut t.out)
        .unwrap();
    assert_eq!(
        parse(&t.take_agent()[0]),
        json!({"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}})
    );
    // Its endings tell the client nothing either.
    t.client(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#);
    assert!(
        t.take_agent()
            .contains(&msg::rejected(json!(1), "cancelled")),
        "the agent hears its question was cancelled"
    );
    let to_client = t.take_client();
    assert!(
        to_client.iter().all(|m| !m.contains("$/cancel_request")),
        "{to_client:?}"
    );
}

#[test]
fn a_control_answer_closes_a_permission_prompt() {
    let mut t = Fixture::new(RouterConfig {
        events: true,
        client_dialect: Some(crate::questions::Dialect::Permission),
        ..RouterConfig::default()
    });
    t.agent(&ask("s", "q", json!(1)));
    let shown = t.take_client();
    assert_eq!(shown.len(), 2);
    let request = parse(&shown[1]);
    let tool_call = request["params"]["toolCall"]["toolCallId"].clone();
    t.r.control_answer("s", "q", &json!([["a"]]), None, &mut t.out)
        .unwrap();
    assert_eq!(t.take_agent(), [msg::answered(json!(1), json!([["a"]]))]);
    // No `$/cancel_request` (no client handles it): the tool call says what was
    // answered, and where, in as many lines as the prompt still on screen below it.
    let closed = t.take_client();
    assert_eq!(
        closed,
        [msg::notification(
            "session/update",
            json!({"sessionId":"s","update":{"sessionUpdate":"tool_call_update",
                "toolCallId":tool_call,"title":"p → a","status":"completed","content":[{"type":"content",
                "content":{"type":"text","text":"Answered on the Questions page or CLI: a\n- a\n- b\n(this prompt is over)"}}]}})
        )]
    );
    // A later press on the prompt is told it had no effect; the agent hears nothing.
    t.client(&msg::result(
        request["id"].clone(),
        json!({"outcome":{"outcome":"selected","optionId":"allow"}}),
    ));
    assert!(t.take_agent().is_empty());
    let note = parse(&t.take_client()[0]);
    assert_eq!(
        note["params"]["update"]["content"]["text"],
        "\n[acp-question-bridge] The question \"p\" was already answered on the Questions page or CLI: a. Your choice in this prompt was not used.\n"
    );
    // The client's own `cancelled` for it (at the end of a turn) needs no word.
    t.client(&msg::result(
        request["id"].clone(),
        json!({"outcome":{"outcome":"cancelled"}}),
    ));
    assert!(t.take_client().is_empty());
    let ev = t.take_events();
    let kinds: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "requested",
            "delivered",
            "resolved",
            "late_answer",
            "late_answer"
        ]
    );
    assert_eq!(
        ev[2]["result"],
        json!({"status":"answered","answers":[["a"]]})
    );
}

#[test]
fn every_ending_names_who_ended_it() {
    let mut t = observed(RouterConfig::default());
    t.agent(
        &json!({"jsonrpc":"2.0","id":1,"method":"_sandboxagent/session/request_question",
        "params":{"sessionId":"s","questionId":"t","prompt":"p","timeoutMs":5}})
        .to_string(),
    );
    t.agent(&ask("s", "c", json!(2)));
    t.agent(&ask("s2", "d", json!(3)));
    t.timer_at(Duration::from_millis(10));
    t.client(&msg::session_cancel("s"));
    t.client_eof();
    let by: Vec<(String, String)> = t
        .take_events()
        .into_iter()
        .filter(|e| e["event"] == "resolved")
        .map(|e| {
            (
                e["questionId"].as_str().unwrap().into(),
                e["by"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        by,
        [
            ("t".to_owned(), "timeout".to_owned()),
            ("c".into(), "cancel".into()),
            ("d".into(), "disconnect".into())
        ]
    );
}

#[test]
fn a_permission_prompt_the_client_does_not_know_hands_over_to_the_control_server() {
    let mut t = Fixture::new(RouterConfig {
        events: true,
        hold_unsupported: true,
        ..RouterConfig::default()
    });
    t.agent(&ask("s", "q", json!(1)));
    let shown = t.take_client();
    let request = parse(&shown[1]);
    assert_eq!(request["method"], "session/request_permission");
    t.client(
        &json!({"jsonrpc":"2.0","id":request["id"],"error":{"code":-32601,"message":"?"}})
            .to_string(),
    );
    // The tool call it showed now says where the question waits; the agent hears
    // nothing yet.
    let tool_call = request["params"]["toolCall"]["toolCallId"].clone();
    let waiting = t.take_client();
    assert_eq!(waiting.len(), 2, "the pointer, and a note");
    let update = &parse(&waiting[0])["params"]["update"];
    assert_eq!(update["toolCallId"], tool_call);
    assert_eq!(update["status"], "pending");
    assert_eq!(update["title"], "Waiting for your answer: p");
    assert!(t.take_agent().is_empty());
    assert_eq!(t.r.question_views()[0].dialect, "control");
    t.r.control_answer("s", "q", &json!(["a"]), None, &mut t.out)
        .unwrap();
    let done = t.take_client();
    assert_eq!(done.len(), 1, "only the tool call is marked done");
    assert_eq!(parse(&done[0])["params"]["update"]["status"], "completed");
    assert_eq!(
        parse(&t.take_agent()[0])["result"]["answers"],
        json!([["a"]])
    );
}

/// Review: an editor that cannot show a question answers `-32601` by itself, at once; the
/// question then waits on the control server (the Questions page, the inbox, the phone),
/// where ringing is the only way the user learns of it. The editor's automatic error is
/// not the user at the desk, yet it sets `at_desk`: nothing rings for `--quiet-at-desk`
/// (60 s by default, longer than `--notify-after`).
#[test]
fn review_an_editor_error_is_not_the_user_at_the_desk() {
    let mut t = Fixture::native(RouterConfig {
        hold_unsupported: true,
        ..RouterConfig::default()
    });
    t.agent(ASK);
    t.take_client();
    t.out.at_desk = false;
    t.client(r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found"}}"#);
    assert_eq!(t.r.questions().len(), 1, "it waits on the control server");
    assert!(
        !t.out.at_desk,
        "an editor's automatic -32601 counts as the user answering at the desk"
    );
}
