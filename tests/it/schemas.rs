//! The JSON Schemas in `schema/`: each one compiles under draft 2020-12, documents every
//! property, accepts its own examples and the examples of PROTOCOL.md 1.1/1.2, rejects the
//! known-bad shapes, agrees with the bridge's own validation and output, and accepts every
//! relevant message in the transcript fixtures `fixtures/*.jsonl`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use acp_question_bridge::capabilities::{merge_initialize_request, merge_initialize_response};
use acp_question_bridge::questions::answer::{normalize, Outcome, Reason};
use acp_question_bridge::questions::model::{parse_request, parse_request_from, MAX_ITEMS};
use acp_question_bridge::questions::{META_KEY, METHOD};
use jsonschema::Validator;
use serde_json::value::RawValue;
use serde_json::{json, Value};

const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";
/// Stands for "any value" in a fixture's expected message.
const ANY: &str = "<any>";
/// Stands for "a timestamp" in a fixture's expected message.
const TIMESTAMP: &str = "<timestamp>";
const SOME_TIMESTAMP: &str = "2026-01-01T00:00:00.000Z";

/// The six schemas, in the order of the kinds of message they check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Request,
    Result,
    ClientCaps,
    AgentCaps,
    Event,
    Push,
}

const KINDS: [Kind; 6] = [
    Kind::Request,
    Kind::Result,
    Kind::ClientCaps,
    Kind::AgentCaps,
    Kind::Event,
    Kind::Push,
];

impl Kind {
    fn file(self) -> &'static str {
        match self {
            Kind::Request => "request-question.params.schema.json",
            Kind::Result => "question-result.schema.json",
            Kind::ClientCaps => "client-capabilities-meta.schema.json",
            Kind::AgentCaps => "agent-capabilities-meta.schema.json",
            Kind::Event => "question-event.schema.json",
            Kind::Push => "push-payload.schema.json",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Request => "request_question params",
            Kind::Result => "question results",
            Kind::ClientCaps => "client capability blocks",
            Kind::AgentCaps => "agent capability blocks",
            Kind::Event => "question lifecycle events",
            Kind::Push => "Web Push payloads",
        }
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn load(kind: Kind) -> Value {
    let path = root().join("schema").join(kind.file());
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Compiles `schema` as draft 2020-12 (after checking it against the meta-schema), with
/// `format` asserted so `expiresAt` must be an RFC 3339 date-time.
fn compile_schema(name: &str, schema: &Value) -> Validator {
    assert_eq!(
        schema["$schema"], DRAFT_2020_12,
        "{name}: `$schema` must name draft 2020-12"
    );
    if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
        panic!(
            "{name}: not a valid draft 2020-12 schema: {e} (at {})",
            e.instance_path().as_str()
        );
    }
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|e| panic!("{name}: does not compile: {e}"))
}

fn compile(kind: Kind) -> Validator {
    compile_schema(kind.file(), &load(kind))
}

struct Validators([Validator; 6]);

impl Validators {
    fn new() -> Self {
        Validators(KINDS.map(compile))
    }

    fn get(&self, kind: Kind) -> &Validator {
        &self.0[kind as usize]
    }

    /// The errors of `value` under `kind`, each as `pointer: message`.
    fn errors(&self, kind: Kind, value: &Value) -> Vec<String> {
        errors_of(self.get(kind), value, &[])
    }
}

/// The errors of `value`, leaving out those located at or below a path in `excused`.
fn errors_of(v: &Validator, value: &Value, excused: &[String]) -> Vec<String> {
    v.iter_errors(value)
        .filter(|e| {
            let at = e.instance_path().as_str();
            !excused.iter().any(|p| {
                at == p
                    || at
                        .strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            })
        })
        .map(|e| format!("{:?}: {e}", e.instance_path().as_str()))
        .collect()
}

// ---------------------------------------------------------------------------------------
// The schemas themselves.

/// Calls `f(pointer, node)` for every subschema of `node` (which sits at `at`), including
/// `node`; only schema positions are visited, never the inside of `examples`, `enum` etc.
fn walk(node: &Value, at: &str, f: &mut dyn FnMut(&str, &Value)) {
    let Value::Object(obj) = node else { return };
    f(at, node);
    let esc = |k: &str| k.replace('~', "~0").replace('/', "~1");
    for (k, v) in obj {
        match k.as_str() {
            "properties" | "$defs" | "patternProperties" | "dependentSchemas" => {
                for (name, sub) in v.as_object().into_iter().flatten() {
                    walk(sub, &format!("{at}/{k}/{}", esc(name)), f);
                }
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                for (i, sub) in v.as_array().into_iter().flatten().enumerate() {
                    walk(sub, &format!("{at}/{k}/{i}"), f);
                }
            }
            "items"
            | "not"
            | "if"
            | "then"
            | "else"
            | "additionalProperties"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems" => walk(v, &format!("{at}/{k}"), f),
            _ => {}
        }
    }
}

#[test]
fn every_schema_compiles_under_draft_2020_12_and_is_documented() {
    let mut ids = BTreeSet::new();
    for kind in KINDS {
        let name = kind.file();
        let schema = load(kind);
        compile_schema(name, &schema);
        let id = schema["$id"].as_str().unwrap_or_default();
        assert!(!id.is_empty(), "{name}: `$id` is missing");
        assert!(
            ids.insert(id.to_owned()),
            "{name}: `$id` {id} is not unique"
        );
        for key in ["title", "description"] {
            assert!(
                schema[key].as_str().is_some_and(|s| !s.is_empty()),
                "{name}: the root has no {key}"
            );
        }
        assert!(
            schema["examples"].as_array().is_some_and(|e| !e.is_empty()),
            "{name}: the root has no examples"
        );
        walk(&schema, "", &mut |at, node| {
            // Conditions and refinements (`not`, `if`, `then`, `else`) only constrain
            // properties that are declared, and documented, elsewhere.
            let refinement = at
                .split('/')
                .any(|seg| matches!(seg, "not" | "if" | "then" | "else"));
            if refinement {
                return;
            }
            for (prop, sub) in node["properties"].as_object().into_iter().flatten() {
                for key in ["title", "description"] {
                    assert!(
                        sub[key].as_str().is_some_and(|s| !s.is_empty()),
                        "{name}: property {at}/properties/{prop} has no {key}"
                    );
                }
            }
        });
    }
}

/// Every `examples` entry anywhere in a schema is valid against the subschema carrying it.
#[test]
#[allow(clippy::print_stdout)] // the count is the test's report
fn every_schema_example_is_valid() {
    let mut checked = 0;
    for kind in KINDS {
        let schema = load(kind);
        let id = schema["$id"].as_str().expect("$id").to_owned();
        let mut sites = Vec::new();
        walk(&schema, "", &mut |at, node| {
            if let Some(examples) = node.get("examples") {
                sites.push((at.to_owned(), examples.clone()));
            }
        });
        for (at, examples) in sites {
            // The whole schema is embedded as a resource, so `$ref` reaches any subschema
            // with the `$defs` it refers to.
            let wrapper = json!({
                "$schema": DRAFT_2020_12,
                "$defs": {"doc": schema},
                "$ref": format!("{id}#{at}"),
            });
            let v = compile_schema(&format!("{} at {at:?}", kind.file()), &wrapper);
            let examples = examples.as_array().expect("examples must be an array");
            assert!(
                !examples.is_empty(),
                "{}: empty examples at {at:?}",
                kind.file()
            );
            for ex in examples {
                let errors = errors_of(&v, ex, &[]);
                assert!(
                    errors.is_empty(),
                    "{}: example {ex} at {at:?} is invalid: {errors:?}",
                    kind.file()
                );
                checked += 1;
            }
        }
    }
    println!("schema examples validated: {checked}");
    assert!(checked >= 40, "only {checked} schema examples found");
}

// ---------------------------------------------------------------------------------------
// Built-in positive and negative examples.

fn base(extra: Value) -> Value {
    let mut p = json!({"sessionId": "s1", "questionId": "q-7"});
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().expect("object").clone());
    p
}

fn raw(v: &Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string()).unwrap()
}

/// Whether the bridge itself accepts `params` (in a request with id 1, as the router reads
/// it: a missing `questionId` is then named after the id).
fn bridge_accepts(params: &Value) -> bool {
    parse_request_from(Some(raw(params).get()), Some("1")).is_ok()
}

/// `(what, params, schema accepts, bridge accepts)`. The two verdicts differ only where the
/// schema's description says JSON Schema cannot express the rule.
fn request_cases() -> Vec<(&'static str, Value, bool, bool)> {
    let many = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| json!({"question": format!("q{i}")}))
            .collect()
    };
    vec![
        // sandbox-agent's adapter: `question` for `prompt`, no `questionId`.
        (
            "liberal single form",
            json!({"sessionId":"s1","question":"Which database?","options":["SQLite","Postgres"]}),
            true,
            true,
        ),
        (
            "`question` with `questions`",
            json!({"sessionId":"s1","question":"x","questions":[{"question":"a"}]}),
            false,
            false,
        ),
        // PROTOCOL.md 1.1, verbatim.
        (
            "1.1 single form",
            json!({"sessionId":"s1","questionId":"q-7","prompt":"Which option?",
                   "options":[["option-a","Option A"],["option-b","Option B"]]}),
            true,
            true,
        ),
        (
            "1.1 multi form",
            json!({"sessionId":"s1","questionId":"q-7",
                   "questions":[{"question":"Which DB?","header":"DB",
                                 "options":[{"label":"Postgres","description":"..."},{"label":"SQLite"}],
                                 "multiple":false,"custom":true}]}),
            true,
            true,
        ),
        (
            "every option shape and flag",
            base(json!({"questions":[
                {"question":"Pick","options":["x",["v","L"],{"value":"w","label":"W","description":"d","icon":1},
                                              {"value":null,"label":"N","description":null}],
                 "multiSelect":true,"multiple":true,"allowFreeText":false,"custom":false},
                {"question":"Notes?","header":null,"options":null,"multiSelect":null},
                {"question":"Free","options":[],"allowFreeText":true,"extra":{"a":[1]}}],
                "timeoutMs":5000,"_meta":{"k":1},"unknownField":[null]})),
            true,
            true,
        ),
        (
            "single form with the per-question members",
            base(
                json!({"prompt":"p","header":"H","options":["a","b"],"multiSelect":true,
                        "allowFreeText":true,"timeoutMs":null}),
            ),
            true,
            true,
        ),
        (
            "single form without options (free text)",
            base(json!({"prompt":"Anything else?"})),
            true,
            true,
        ),
        (
            "expiresAt added by the bridge",
            base(json!({"prompt":"p","timeoutMs":1500,"expiresAt":"2026-11-20T00:00:01.500Z"})),
            true,
            true,
        ),
        (
            "16 questions",
            base(json!({ "questions": many(MAX_ITEMS) })),
            true,
            true,
        ),
        (
            "multi form ignores top-level single-form members",
            base(json!({"questions":[{"question":"a"}],"options":5,"custom":"x"})),
            true,
            true,
        ),
        // Known gaps, documented in the schema's descriptions.
        (
            "duplicate option values (bridge only)",
            base(json!({"prompt":"p","options":["a",["a","A"]]})),
            true,
            false,
        ),
        (
            "timeoutMs 1.0 (bridge only)",
            base(json!({"prompt":"p","timeoutMs":1.0})),
            true,
            false,
        ),
        (
            "expiresAt not a date-time (schema only; the bridge does not read it)",
            base(json!({"prompt":"p","expiresAt":"tomorrow"})),
            false,
            true,
        ),
        // Rejected by both.
        ("params not an object", json!(["s1", "q-7"]), false, false),
        ("params null", json!(null), false, false),
        (
            "empty sessionId",
            json!({"sessionId":"","questionId":"q","prompt":"p"}),
            false,
            false,
        ),
        (
            "missing sessionId",
            json!({"questionId":"q","prompt":"p"}),
            false,
            false,
        ),
        (
            "empty questionId",
            json!({"sessionId":"s","questionId":"","prompt":"p"}),
            false,
            false,
        ),
        (
            "numeric questionId",
            json!({"sessionId":"s","questionId":7,"prompt":"p"}),
            false,
            false,
        ),
        (
            "both prompt and questions",
            base(json!({"prompt":"p","questions":[{"question":"a"}]})),
            false,
            false,
        ),
        (
            "neither prompt nor questions",
            base(json!({})),
            false,
            false,
        ),
        ("empty prompt", base(json!({"prompt":""})), false, false),
        ("prompt null", base(json!({"prompt":null})), false, false),
        (
            "empty questions",
            base(json!({"questions":[]})),
            false,
            false,
        ),
        (
            "17 questions",
            base(json!({ "questions": many(MAX_ITEMS + 1) })),
            false,
            false,
        ),
        (
            "questions not an array",
            base(json!({"questions":{"question":"a"}})),
            false,
            false,
        ),
        (
            "a question that is not an object",
            base(json!({"questions":["x"]})),
            false,
            false,
        ),
        (
            "a question without text",
            base(json!({"questions":[{"header":"H","options":["a"]}]})),
            false,
            false,
        ),
        (
            "a question with empty text",
            base(json!({"questions":[{"question":""}]})),
            false,
            false,
        ),
        (
            "option [1, \"x\"]",
            base(json!({"prompt":"p","options":[[1,"x"]]})),
            false,
            false,
        ),
        (
            "option [\"a\"]",
            base(json!({"prompt":"p","options":[["a"]]})),
            false,
            false,
        ),
        (
            "option [\"a\",\"b\",\"c\"]",
            base(json!({"prompt":"p","options":[["a","b","c"]]})),
            false,
            false,
        ),
        (
            "option {value: 1}",
            base(
                json!({"questions":[{"question":"a"},{"question":"b","options":[{"value":1,"label":"x"}]}]}),
            ),
            false,
            false,
        ),
        (
            "option without label",
            base(json!({"prompt":"p","options":[{"value":"v"}]})),
            false,
            false,
        ),
        (
            "option with a numeric description",
            base(json!({"prompt":"p","options":[{"label":"l","description":2}]})),
            false,
            false,
        ),
        (
            "option 5",
            base(json!({"prompt":"p","options":[5]})),
            false,
            false,
        ),
        (
            "options not an array",
            base(json!({"prompt":"p","options":"a,b"})),
            false,
            false,
        ),
        (
            "header not a string",
            base(json!({"prompt":"p","header":5})),
            false,
            false,
        ),
        (
            "multiple not a boolean",
            base(json!({"questions":[{"question":"a","multiple":"yes"}]})),
            false,
            false,
        ),
        (
            "multiSelect contradicts multiple",
            base(json!({"prompt":"p","options":["a"],"multiSelect":true,"multiple":false})),
            false,
            false,
        ),
        (
            "allowFreeText contradicts custom",
            base(json!({"questions":[{"question":"a","allowFreeText":false,"custom":true}]})),
            false,
            false,
        ),
        (
            "no options and no free text",
            base(json!({"questions":[{"question":"a","custom":false}]})),
            false,
            false,
        ),
        (
            "empty options and no free text",
            base(json!({"prompt":"p","options":[],"allowFreeText":false})),
            false,
            false,
        ),
        (
            "timeoutMs 0",
            base(json!({"prompt":"p","timeoutMs":0})),
            false,
            false,
        ),
        (
            "timeoutMs -1",
            base(json!({"prompt":"p","timeoutMs":-1})),
            false,
            false,
        ),
        (
            "timeoutMs 1.5",
            base(json!({"prompt":"p","timeoutMs":1.5})),
            false,
            false,
        ),
        (
            "timeoutMs a string",
            base(json!({"prompt":"p","timeoutMs":"100"})),
            false,
            false,
        ),
        (
            "_meta not an object",
            base(json!({"questions":[{"question":"a"}],"_meta":1})),
            false,
            false,
        ),
    ]
}

/// `(what, result, schema accepts)`.
fn result_cases() -> Vec<(&'static str, Value, bool)> {
    let mut cases = vec![
        // PROTOCOL.md 1.2, verbatim.
        (
            "1.2 answered",
            json!({"status":"answered","answers":[["option-a"]]}),
            true,
        ),
        (
            "1.2 rejected",
            json!({"status":"rejected","reason":"declined"}),
            true,
        ),
        (
            "multi-question answer with extras",
            json!({"status":"answered","answers":[["MySQL"],["auth","billing"],[""]],
                   "_meta":{"x":1},"extra":null}),
            true,
        ),
        ("status maybe", json!({"status":"maybe"}), false),
        (
            "reason bored",
            json!({"status":"rejected","reason":"bored"}),
            false,
        ),
        (
            "rejected without a reason",
            json!({"status":"rejected"}),
            false,
        ),
        (
            "answered without answers",
            json!({"status":"answered"}),
            false,
        ),
        ("no status", json!({"answers":[["a"]]}), false),
        ("not an object", json!(null), false),
        (
            "answers empty",
            json!({"status":"answered","answers":[]}),
            false,
        ),
        (
            "answers not array-of-arrays",
            json!({"status":"answered","answers":["option-a"]}),
            false,
        ),
        (
            "answers a string",
            json!({"status":"answered","answers":"a"}),
            false,
        ),
        (
            "answers [[1]]",
            json!({"status":"answered","answers":[[1]]}),
            false,
        ),
        (
            "an empty answer list",
            json!({"status":"answered","answers":[["a"],[]]}),
            false,
        ),
        (
            "answered with a reason",
            json!({"status":"answered","answers":[["a"]],"reason":"declined"}),
            false,
        ),
        (
            "rejected with answers",
            json!({"status":"rejected","reason":"declined","answers":[["a"]]}),
            false,
        ),
        (
            "sandbox-agent outcome (not canonical)",
            json!({"outcome":"answered","status":"answered","answers":[["a"]]}),
            false,
        ),
        (
            "status not a string",
            json!({"status":true,"answers":[["a"]]}),
            false,
        ),
    ];
    for r in Reason::ALL {
        cases.push((
            "every reason",
            json!({"status":"rejected","reason":r.as_str()}),
            true,
        ));
    }
    cases
}

/// `(what, block, schema accepts)`.
fn client_caps_cases() -> Vec<(&'static str, Value, bool)> {
    vec![
        (
            "native support",
            json!({"extensions":{"sessionRequestQuestion":true}}),
            true,
        ),
        (
            "no support",
            json!({"extensions":{"sessionRequestQuestion":false}}),
            true,
        ),
        ("other keys", json!({"extensions":{"x":{}},"y":1}), true),
        ("empty", json!({}), true),
        (
            "flag not a boolean",
            json!({"extensions":{"sessionRequestQuestion":"yes"}}),
            false,
        ),
        (
            "extensions not an object",
            json!({"extensions":true}),
            false,
        ),
        ("not an object", json!(true), false),
    ]
}

/// `(what, block, schema accepts)`.
fn agent_caps_cases() -> Vec<(&'static str, Value, bool)> {
    vec![
        (
            "as the bridge merges it",
            json!({"extensions":{"sessionRequestQuestion":true},"questionBridge":{"version":"0.1.0"}}),
            true,
        ),
        (
            "agent's own values kept",
            json!({"extensions":{"other":1,"sessionRequestQuestion":false},
                   "questionBridge":{"version":"1.2.3-rc.1+x"},"z":"é"}),
            true,
        ),
        (
            "no questionBridge",
            json!({"extensions":{"sessionRequestQuestion":true}}),
            false,
        ),
        (
            "no extensions",
            json!({"questionBridge":{"version":"0.1.0"}}),
            false,
        ),
        (
            "no flag",
            json!({"extensions":{},"questionBridge":{"version":"0.1.0"}}),
            false,
        ),
        (
            "flag not a boolean",
            json!({"extensions":{"sessionRequestQuestion":1},"questionBridge":{"version":"0.1.0"}}),
            false,
        ),
        (
            "version not a string",
            json!({"extensions":{"sessionRequestQuestion":true},"questionBridge":{"version":1}}),
            false,
        ),
        (
            "version empty",
            json!({"extensions":{"sessionRequestQuestion":true},"questionBridge":{"version":""}}),
            false,
        ),
        ("not an object", json!([]), false),
    ]
}

fn check_case(v: &Validators, kind: Kind, what: &str, value: &Value, valid: bool) {
    let errors = v.errors(kind, value);
    if valid {
        assert!(
            errors.is_empty(),
            "{}: {what} must be valid: {value}\n{errors:#?}",
            kind.file()
        );
    } else {
        assert!(
            !errors.is_empty(),
            "{}: {what} must be rejected: {value}",
            kind.file()
        );
    }
}

#[test]
#[allow(clippy::print_stdout)] // the counts are the test's report
fn builtin_examples_are_accepted_or_rejected() {
    let v = Validators::new();
    let (mut positive, mut negative) = (0, 0);
    let mut tally = |valid: bool| {
        if valid {
            positive += 1
        } else {
            negative += 1
        }
    };
    for (what, params, schema_ok, bridge_ok) in request_cases() {
        check_case(&v, Kind::Request, what, &params, schema_ok);
        assert_eq!(
            bridge_accepts(&params),
            bridge_ok,
            "the bridge disagrees about {what}: {params}"
        );
        tally(schema_ok);
    }
    for (what, value, ok) in result_cases() {
        check_case(&v, Kind::Result, what, &value, ok);
        tally(ok);
    }
    for (what, value, ok) in client_caps_cases() {
        check_case(&v, Kind::ClientCaps, what, &value, ok);
        tally(ok);
    }
    for (what, value, ok) in agent_caps_cases() {
        check_case(&v, Kind::AgentCaps, what, &value, ok);
        tally(ok);
    }
    println!("built-in examples: {positive} accepted, {negative} rejected, as expected");
    assert!(positive >= 10 && negative >= 40);
}

/// What the bridge itself produces validates: every canonical result, the answers it
/// normalizes, and both capability merges.
#[test]
fn bridge_output_matches_the_schemas() {
    let v = Validators::new();

    // Push payloads, of a question and of a tool approval, at the longest.
    use acp_question_bridge::inbox::remote::push::payload;
    let long = "x".repeat(500);
    let bridge =
        json!({"id": "b", "agent": [long.clone(), long.clone()], "cwd": format!("/{long}")});
    for q in [
        json!({"bridge": bridge, "sessionId": "s", "questionId": "q", "source": "form",
               "items": [{"prompt": long}, {"prompt": "more"}]}),
        json!({"bridge": bridge, "sessionId": "s", "questionId": "t", "source": "permission",
               "items": [{"prompt": "`rm -rf /`", "header": long}]}),
        json!({"sessionId": "s", "questionId": "bare"}),
    ] {
        check_case(&v, Kind::Push, "a push payload", &payload("b", &q), true);
    }

    // The reason enum is exactly the bridge's list.
    let schema = load(Kind::Result);
    let in_schema: BTreeSet<&str> = schema["properties"]["reason"]["enum"]
        .as_array()
        .expect("reason enum")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let in_code: BTreeSet<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        in_schema, in_code,
        "the schema's reasons differ from the bridge's"
    );

    let mut results: Vec<String> = Reason::ALL
        .iter()
        .map(|r| Outcome::Rejected(*r).to_result(&Vec::new()))
        .collect();
    let q = parse_request(Some(&raw(
        &json!({"sessionId":"s","questionId":"q","questions":[
        {"question":"db","options":[{"label":"Postgres"},{"label":"SQLite"}],"custom":true},
        {"question":"f","options":["auth","billing"],"multiple":true},
        {"question":"notes"}]}),
    )))
    .expect("a valid question");
    for client in [
        json!({"status":"answered","answers":[["MySQL"],["auth","billing","auth"],"none"]}),
        json!({"outcome":"selected","_meta":{"sandboxagent.dev":{"answers":[["SQLite"],["auth"],["x"]]}}}),
        json!({"outcome":"rejected","_meta":{"k":1}}),
        json!({"outcome":"cancelled"}),
        json!({"status":"rejected"}),
        json!({"status":"rejected","reason":"timeout","note":"slow"}),
    ] {
        let (outcome, extras) = normalize(&q, &raw(&client)).expect("a valid answer");
        results.push(outcome.to_result(&extras));
    }
    for text in results {
        let value: Value = serde_json::from_str(&text).expect("the bridge writes JSON");
        let errors = v.errors(Kind::Result, &value);
        assert!(
            errors.is_empty(),
            "bridge result {text} is invalid: {errors:?}"
        );
    }

    for init in [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}"#,
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":false,"x":1},"y":2}}}}}"#,
    ] {
        let merged: Value =
            serde_json::from_str(&merge_initialize_request(init).expect("merges")).unwrap();
        let block = &merged["params"]["clientCapabilities"]["_meta"][META_KEY];
        let errors = v.errors(Kind::ClientCaps, block);
        assert!(
            errors.is_empty(),
            "merged client block {block} is invalid: {errors:?}"
        );
    }
    for response in [
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{"agentCapabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"other":1,"sessionRequestQuestion":false}}}}}}"#,
    ] {
        let merged: Value =
            serde_json::from_str(&merge_initialize_response(response).expect("merges")).unwrap();
        let block = &merged["result"]["agentCapabilities"]["_meta"][META_KEY];
        let errors = v.errors(Kind::AgentCaps, block);
        assert!(
            errors.is_empty(),
            "merged agent block {block} is invalid: {errors:?}"
        );
        assert_eq!(
            block["questionBridge"]["version"],
            env!("CARGO_PKG_VERSION")
        );
    }
}

// ---------------------------------------------------------------------------------------
// The transcript fixtures.

/// A message part prepared for validation: `<timestamp>` replaced by a real timestamp, and
/// the JSON pointers of the `<any>` values, whose errors are ignored. `None` when the part
/// is itself `<any>` (nothing to check).
fn prepare(part: &Value) -> Option<(Value, Vec<String>)> {
    fn go(v: &mut Value, at: &str, anys: &mut Vec<String>) {
        match v {
            Value::String(s) if s == TIMESTAMP => *v = Value::String(SOME_TIMESTAMP.into()),
            Value::String(s) if s == ANY => anys.push(at.to_owned()),
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    go(item, &format!("{at}/{i}"), anys);
                }
            }
            Value::Object(members) => {
                for (k, item) in members.iter_mut() {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    go(item, &format!("{at}/{k}"), anys);
                }
            }
            _ => {}
        }
    }
    if part.as_str() == Some(ANY) {
        return None;
    }
    let mut value = part.clone();
    let mut anys = Vec::new();
    go(&mut value, "", &mut anys);
    Some((value, anys))
}

#[derive(Default)]
struct Scan {
    files: usize,
    messages: usize,
    /// Validated messages per [`Kind`].
    validated: [usize; 6],
    /// Targets that were exactly `<any>`, so not checked.
    unconstrained: usize,
    /// `<any>` values inside checked targets.
    placeholders: usize,
}

impl Scan {
    fn check(&mut self, v: &Validators, kind: Kind, target: &Value, whence: &str) {
        let Some((value, anys)) = prepare(target) else {
            self.unconstrained += 1;
            return;
        };
        let errors = errors_of(v.get(kind), &value, &anys);
        assert!(
            errors.is_empty(),
            "{whence}: {} do not match {}: {target}\n{errors:#?}",
            kind.what(),
            kind.file()
        );
        self.placeholders += anys.len();
        self.validated[kind as usize] += 1;
    }
}

/// The fixture files, sorted.
fn fixture_files() -> Vec<PathBuf> {
    let dir = root().join("fixtures");
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| e.expect("readable fixtures dir").path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

fn scan_fixture(v: &Validators, path: &Path, scan: &mut Scan) {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    scan.files += 1;
    // Ids of the client's `initialize` requests, to recognize their responses.
    let mut init_ids: Vec<Value> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let whence = format!("{name}:{}", n + 1);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let entry: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{whence}: not a JSON fixture line: {e}"));
        let (from_client, msg) = match (entry.get("client"), entry.get("bridge")) {
            (Some(m), None) => (true, m),
            (None, Some(m)) => (false, m),
            (Some(_), Some(_)) => panic!("{whence}: both `client` and `bridge`"),
            (None, None) => continue, // args, close, exit, sleep_ms, comment, ...
        };
        // Raw (non-object) lines and batches carry none of the messages checked here.
        let Value::Object(obj) = msg else { continue };
        scan.messages += 1;
        let method = obj.get("method").and_then(Value::as_str);
        let params = obj.get("params");

        if method == Some(METHOD) {
            let params = params.unwrap_or_else(|| panic!("{whence}: {METHOD} without params"));
            scan.check(v, Kind::Request, params, &whence);
        }

        if method == Some("session/update") {
            let params = params.unwrap_or(&Value::Null);
            let text = params["update"]["content"]["text"]
                .as_str()
                .unwrap_or_default();
            let reported = params["_meta"]["acp-mock-agent"].get("result");
            let is_question = text.starts_with("answered:") || text.starts_with("rejected:");
            if let (true, Some(result)) = (is_question, reported) {
                scan.check(v, Kind::Result, result, &whence);
            }
        }

        if method == Some("initialize") && from_client {
            if let Some(id) = obj.get("id") {
                init_ids.push(id.clone());
            }
            let block = params
                .and_then(|p| p.get("clientCapabilities"))
                .and_then(|c| c.get("_meta"))
                .and_then(|m| m.get(META_KEY));
            if let Some(block) = block {
                scan.check(v, Kind::ClientCaps, block, &whence);
            }
        }

        if !from_client && method.is_none() {
            if let Some(result) = obj.get("result") {
                let is_init = obj.get("id").is_some_and(|id| init_ids.contains(id))
                    || result.get("agentCapabilities").is_some();
                let block = result
                    .get("agentCapabilities")
                    .and_then(|c| c.get("_meta"))
                    .and_then(|m| m.get(META_KEY));
                if let (true, Some(block)) = (is_init, block) {
                    scan.check(v, Kind::AgentCaps, block, &whence);
                }
            }
        }
    }
}

#[test]
fn placeholders_are_handled() {
    let v = Validators::new();
    let mut scan = Scan::default();
    let params = json!({"sessionId":"<any>","questionId":"q","prompt":"p","timeoutMs":"<any>",
                        "expiresAt":"<timestamp>","options":["<any>",["<any>","<any>"]]});
    scan.check(&v, Kind::Request, &params, "placeholders");
    scan.check(
        &v,
        Kind::Result,
        &json!({"status":"rejected","reason":"<any>"}),
        "placeholders",
    );
    scan.check(
        &v,
        Kind::Result,
        &json!({"status":"answered","answers":"<any>"}),
        "placeholders",
    );
    scan.check(&v, Kind::AgentCaps, &json!("<any>"), "placeholders");
    scan.check(
        &v,
        Kind::AgentCaps,
        &json!({"extensions":{"sessionRequestQuestion":true},"questionBridge":{"version":"<any>"}}),
        "placeholders",
    );
    assert_eq!(scan.validated, [1, 2, 0, 1, 0, 0]);
    assert_eq!((scan.unconstrained, scan.placeholders), (1, 8));
    // A placeholder excuses only itself: other errors still count.
    let (value, anys) =
        prepare(&json!({"sessionId":"","questionId":"<any>","prompt":"p"})).unwrap();
    assert_eq!(errors_of(v.get(Kind::Request), &value, &anys).len(), 1);
    let (value, anys) = prepare(&json!({"expiresAt":"<timestamp>","x":"<any>"})).unwrap();
    assert_eq!(value["expiresAt"], SOME_TIMESTAMP);
    assert_eq!(anys, ["/x"]);
}

#[test]
#[allow(clippy::print_stdout)] // the counts are the test's report
fn fixture_messages_match_the_schemas() {
    let v = Validators::new();
    let files = fixture_files();
    let mut scan = Scan::default();
    for path in &files {
        scan_fixture(&v, path, &mut scan);
    }
    println!(
        "fixtures: {} files, {} messages; validated: {}; {} <any> targets skipped, {} <any> values inside",
        scan.files,
        scan.messages,
        KINDS
            .iter()
            .map(|k| format!("{} {}", scan.validated[*k as usize], k.what()))
            .collect::<Vec<_>>()
            .join(", "),
        scan.unconstrained,
        scan.placeholders,
    );
    if files.is_empty() {
        println!("fixtures: none yet, so no kind of message is required");
        return;
    }
    // Events and push payloads are not ACP messages: `router_events_match_the_event_schema`
    // and `bridge_output_matches_the_schemas` (with `tests/it/push.rs`) cover them.
    for kind in KINDS
        .into_iter()
        .filter(|k| !matches!(k, Kind::Event | Kind::Push))
    {
        assert!(
            scan.validated[kind as usize] > 0,
            "no {} found in {} fixture files: is the scan broken, or does no fixture cover them?",
            kind.what(),
            files.len()
        );
    }
}

// ---------------------------------------------------------------------------------------
// Question lifecycle events (control server subscriptions and journal lines).

/// Every kind of event the router makes, through every ending, matches the event schema;
/// and the schema refuses members that do not belong to an event.
#[test]
fn router_events_match_the_event_schema() {
    use acp_question_bridge::router::fixture::Fixture;
    use acp_question_bridge::router::{AgentExit, RouterConfig};
    use std::time::Duration;

    let v = compile(Kind::Event);
    let mut t = Fixture::new(RouterConfig {
        events: true,
        hold_unsupported: true,
        ..RouterConfig::default()
    });
    let ask = |id: i64, q: &str, extra: Value| {
        let mut params = json!({"sessionId":"s","questionId":q,"prompt":"p?","options":["a","b"]});
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"jsonrpc":"2.0","id":id,"method":METHOD,"params":params})
    };
    let native = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,
        "clientCapabilities":{"_meta":{META_KEY:{"extensions":{"sessionRequestQuestion":true}}}}}});
    t.client(&native.to_string());
    // Answered by the client, then answered again (late).
    t.agent(&ask(1, "q1", json!({"header":"H"})).to_string());
    let answer = json!({"jsonrpc":"2.0","id":1,"result":{"status":"answered","answers":[["a"]]}});
    t.client(&answer.to_string());
    t.client(&answer.to_string());
    // Invalid, and an error.
    t.agent(&ask(2, "q2", json!({})).to_string());
    t.client(
        &json!({"jsonrpc":"2.0","id":2,"result":{"status":"answered","answers":[["z"]]}})
            .to_string(),
    );
    t.agent(&ask(3, "q3", json!({})).to_string());
    t.client(&json!({"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}).to_string());
    // Timeout; the control server, then late; a held question; the agent going away.
    t.agent(&ask(4, "q4", json!({"timeoutMs": 1})).to_string());
    t.timer_at(Duration::from_millis(5));
    t.agent(&ask(5, "q5", json!({})).to_string());
    t.control_answer("s", "q5", &json!([["b"]])).unwrap();
    assert!(t.control_answer("s", "q5", &json!([["a"]])).is_err());
    t.agent(&ask(6, "q6", json!({})).to_string());
    t.client(&json!({"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"?"}}).to_string());
    t.agent(&ask(7, "q7", json!({})).to_string());
    t.agent_gone(&AgentExit {
        code: Some(0),
        signal: None,
        stderr_tail: String::new(),
    });

    // Without a control server to hold it, a question a permission-only client cannot
    // show is rejected by the bridge itself.
    let mut plain = Fixture::new(RouterConfig {
        events: true,
        ..RouterConfig::default()
    });
    plain.agent(&ask(8, "q8", json!({"options": []})).to_string());

    let mut seen = BTreeSet::new();
    for e in t.take_events().into_iter().chain(plain.take_events()) {
        let errors = errors_of(&v, &e, &[]);
        assert!(errors.is_empty(), "{e}: {errors:?}");
        let status = e["result"]["status"].as_str().unwrap_or("");
        seen.insert(format!(
            "{} {} {status}",
            e["event"].as_str().unwrap(),
            e["by"]
                .as_str()
                .or(e["dialect"].as_str())
                .or(e["from"].as_str())
                .unwrap_or("")
        ));
    }
    for want in [
        "requested  ",
        "delivered extension ",
        "delivered permission ",
        "resolved client answered",
        "resolved client invalid",
        "resolved client error",
        "resolved bridge rejected",
        "resolved timeout rejected",
        "resolved control answered",
        "resolved disconnect withdrawn",
        "late_answer client ",
        "late_answer control ",
    ] {
        assert!(seen.contains(want), "no {want:?} among {seen:?}");
    }
    for bad in [
        json!({"event":"resolved","sessionId":"s","questionId":"q","by":"client"}),
        json!({"event":"resolved","sessionId":"s","questionId":"q","by":"someone","result":{"status":"answered"}}),
        json!({"event":"delivered","sessionId":"s","questionId":"q","dialect":"control","by":"client"}),
        json!({"event":"requested"}),
        json!({"event":"lagged","missed":0}),
    ] {
        assert!(!errors_of(&v, &bad, &[]).is_empty(), "accepted {bad}");
    }
}
