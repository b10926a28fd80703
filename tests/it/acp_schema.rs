//! Every ACP message the bridge builds validates against the official ACP JSON Schema: the
//! schema of the `agent-client-protocol-schema` crate (1.15.1, the version of the
//! `agent-client-protocol` crate the interop test uses), derived with `schemars` from its
//! types.
//!
//! The messages are made by the real router (through its test fixture), in every dialect
//! and for every source that answers in a standard shape: the `elicitation/create` and
//! `session/request_permission` requests the bridge sends the client, its `session/update`
//! tool calls, its `$/cancel_request`s, and its results to the agent's own elicitations
//! and permission requests.

use agent_client_protocol_schema::v1::{
    CancelRequestNotification, CreateElicitationRequest, CreateElicitationResponse,
    RequestPermissionRequest, RequestPermissionResponse, SessionNotification,
};
use jsonschema::Validator;
use serde_json::{json, Value};

use acp_question_bridge::router::fixture::{msg, parse, Fixture};
use acp_question_bridge::router::RouterConfig;

fn validator<T: schemars::JsonSchema>() -> Validator {
    let schema = serde_json::to_value(schemars::schema_for!(T)).expect("a schema");
    jsonschema::draft202012::options()
        .build(&schema)
        .expect("the official schema compiles")
}

/// Checks `value` against the schema of `T`, naming what failed.
fn check<T: schemars::JsonSchema>(what: &str, value: &Value) {
    let v = validator::<T>();
    let errors: Vec<String> = v
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path().as_str()))
        .collect();
    assert!(errors.is_empty(), "{what}: {value}\n{errors:#?}");
}

/// Sorts what the client got into the schema each message must fit.
fn check_client_messages(lines: &[String]) -> usize {
    let mut checked = 0;
    for line in lines {
        let m = parse(line);
        let Some(method) = m["method"].as_str() else {
            continue;
        };
        let params = &m["params"];
        match method {
            "elicitation/create" => check::<CreateElicitationRequest>(method, params),
            "session/request_permission" => check::<RequestPermissionRequest>(method, params),
            "session/update" => check::<SessionNotification>(method, params),
            "$/cancel_request" => check::<CancelRequestNotification>(method, params),
            _ => continue,
        }
        checked += 1;
    }
    checked
}

fn ask(id: i64, q: &str, extra: Value) -> String {
    let mut params = json!({"sessionId": "s1", "questionId": q, "prompt": "Which option?",
        "options": [["a", "Option A"], ["b", "Option B"]]});
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    msg::ask(json!(id), params)
}

#[test]
fn what_the_bridge_sends_the_client_fits_the_official_schema() {
    let mut checked = 0;
    // A form client: the question as an elicitation form; answered, then one withdrawn by
    // session/cancel and one by its deadline.
    let mut t = Fixture::new(RouterConfig::default());
    t.client(&msg::initialize(json!({"elicitation": {"form": {}}})));
    t.agent(&ask(1, "q1", json!({})));
    t.agent(&msg::ask(
        json!(2),
        json!({"sessionId": "s1", "questionId": "q2", "questions": [
            {"question": "DB?", "header": "DB", "options": [{"label": "Postgres"}, {"label": "SQLite"}], "custom": true},
            {"question": "Features?", "options": ["auth", "billing"], "multiple": true},
            {"question": "Notes?"}
        ]}),
    ));
    t.agent(&ask(3, "q3", json!({"timeoutMs": 1})));
    checked += check_client_messages(&t.take_client());
    t.client(&msg::session_cancel("s1"));
    t.timer_at(std::time::Duration::from_millis(5));
    checked += check_client_messages(&t.take_client());

    // A permission-only client: a tool call, the prompt, the closing update; a withdrawn one.
    let mut t = Fixture::new(RouterConfig::default());
    t.client(&msg::initialize(json!({})));
    t.agent(&ask(4, "q4", json!({})));
    let shown = t.take_client();
    checked += check_client_messages(&shown);
    let id = shown
        .iter()
        .map(|l| parse(l))
        .find(|m| m["method"] == "session/request_permission")
        .map(|m| m["id"].clone())
        .unwrap();
    t.client(&msg::result(
        id,
        json!({"outcome": {"outcome": "selected", "optionId": "a"}}),
    ));
    t.agent(&ask(5, "q5", json!({})));
    t.client(&msg::session_cancel("s1"));
    checked += check_client_messages(&t.take_client());
    assert!(checked >= 10, "only {checked} messages checked");
}

#[test]
fn what_the_agent_gets_for_its_own_requests_fits_the_official_schema() {
    let form = |id: i64| {
        msg::request(
            json!(id),
            "elicitation/create",
            json!({"sessionId": "s1", "mode": "form", "message": "Which database?",
                "requestedSchema": {"type": "object", "properties": {
                    "question_0": {"type": "string", "title": "Database",
                        "oneOf": [{"const": "SQLite", "title": "SQLite"}, {"const": "Postgres", "title": "Postgres"}]},
                    "question_0_custom": {"type": "string", "title": "Other"}}}}),
        )
    };
    let permission = |id: i64| {
        msg::request(
            json!(id),
            "session/request_permission",
            json!({"sessionId": "s1",
                "toolCall": {"toolCallId": "tc", "title": "ls", "kind": "execute", "rawInput": {"command": "ls"}},
                "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                            {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}),
        )
    };
    // The agent's forms and permission requests, answered by the control server, declined,
    // cancelled, and at the client's EOF; a form shown as the extension, answered there.
    let mut t = Fixture::native(RouterConfig {
        advertise_elicitation: true,
        ..RouterConfig::default()
    });
    for id in 1..=3 {
        t.agent(&form(id));
    }
    t.agent(&permission(4));
    t.agent(&permission(5));
    let shown = t.take_client();
    let ext_id = parse(&shown[0])["id"].clone();
    t.client(&msg::answered(ext_id, json!([["DuckDB"]])));
    t.control_reject("s1", "elicitation:2").unwrap();
    t.control_answer("s1", "permission:4", &json!([["allow"]]))
        .unwrap();
    t.control_reject("s1", "permission:5").unwrap();
    t.agent(&permission(6));
    t.client_eof();
    let mut results = 0;
    for line in t.take_agent() {
        let m = parse(&line);
        let Some(result) = m.get("result") else {
            continue;
        };
        let id = m["id"].as_i64().unwrap_or(0);
        if id <= 3 {
            check::<CreateElicitationResponse>("elicitation result", result);
        } else {
            check::<RequestPermissionResponse>("permission result", result);
        }
        results += 1;
    }
    assert_eq!(results, 6, "every request got its result");
    checked_withdrawals(&mut t);
}

/// What the client was told when the control server answered the agent's own requests.
fn checked_withdrawals(t: &mut Fixture) {
    let n = check_client_messages(&t.take_client());
    assert!(n >= 2, "the client's copies were withdrawn ({n})");
}

/// The schemas bite: messages one step off the standard shapes are refused.
#[test]
fn the_official_schemas_refuse_what_is_off() {
    let refused = |v: &Validator, value: Value| assert!(!v.is_valid(&value), "accepted {value}");
    let permission = validator::<RequestPermissionResponse>();
    refused(&permission, json!({"outcome": "cancelled"}));
    refused(&permission, json!({"outcome": {"outcome": "selected"}}));
    let elicitation = validator::<CreateElicitationResponse>();
    // (An unknown `action` is admitted on purpose, for extensions; a missing one is not.)
    refused(&elicitation, json!({"content": {"a": 1}}));
    refused(
        &elicitation,
        json!({"action": "accept", "content": "SQLite"}),
    );
    let cancel = validator::<CancelRequestNotification>();
    refused(&cancel, json!({}));
    let request = validator::<RequestPermissionRequest>();
    refused(&request, json!({"sessionId": "s", "options": []}));
    assert!(permission.is_valid(&json!({"outcome": {"outcome": "cancelled"}})));
}
