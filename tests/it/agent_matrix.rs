//! Every source in every client, through the real binaries: the mock agent asks in each
//! agent's own shape (`src/tools/shapes.rs`), behind the real bridge, to a client that shows
//! the extension, one that renders forms, one that only shows permission prompts, and one
//! that is shown nothing (`--client-dialect control`: answered on the control server). The
//! permission-only client behaves like the weakest real one (docs/CLIENTS.md): it reaches
//! one option per kind (the last of each, as codecompanion.nvim's keys do) and reads only
//! the tool call's title. Each question ends every way it can (answered, declined,
//! `session/cancel`, timeout, client EOF, agent exit), and the agent gets exactly one reply,
//! in its own shape, as docs/AGENT-DIALECTS.md section 4 says; the client is told in its
//! chat when what it shows is over, and is never sent `$/cancel_request`; the control server
//! lists the question with its source while it waits, and the journal records how it
//! ended.

use crate::common::control::{self, list_until};
use crate::common::*;
use acp_question_bridge::questions::sources::{vendor, VENDORS};
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Client {
    Extension,
    Forms,
    Permission,
    Control,
}

impl Client {
    fn caps(self) -> Value {
        match self {
            Client::Extension => {
                json!({"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}})
            }
            Client::Forms => json!({"elicitation":{"form":{}}}),
            Client::Permission | Client::Control => json!({}),
        }
    }
}

/// One way of asking: the mock's script word, the source the control server names, and
/// what the agent's reply must contain when the first choice of every item is taken, when
/// the user declines, and for every other ending.
struct Case {
    word: &'static str,
    source: &'static str,
    answered: &'static str,
    declined: &'static str,
    ended: &'static str,
    /// Where the bridge builds the reply to a decline (the question waited on the control
    /// server, or the client was shown a translation) and it differs from the client's own
    /// "no" shown as sent.
    declined_by_bridge: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        word: "ask-claude",
        source: "form",
        answered: r#"{"action":"accept","content":{"question_0":"SQLite"}}"#,
        declined: r#"{"action":"decline"}"#,
        ended: r#"{"action":"cancel"}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "ask-claude-two",
        source: "form",
        answered: r#"{"action":"accept","content":{"question_0":"SQLite","question_1":["auth"]}}"#,
        declined: r#"{"action":"decline"}"#,
        ended: r#"{"action":"cancel"}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "ask-claude-steps",
        source: "form",
        answered: r#"{"action":"accept","content":{"question_0":"SQLite","question_1":"nextest"}}"#,
        declined: r#"{"action":"decline"}"#,
        ended: r#"{"action":"cancel"}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "ask-codex",
        source: "form",
        answered: r#"{"action":"accept","content":{"database":"SQLite"}}"#,
        declined: r#"{"action":"decline"}"#,
        ended: r#"{"action":"cancel"}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "ask-kimi",
        source: "form",
        answered: r#"{"action":"accept","content":{"q0":"SQLite","q1":["auth"]}}"#,
        declined: r#"{"action":"decline"}"#,
        ended: r#"{"action":"cancel"}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "approve",
        source: "permission",
        answered: r#"{"outcome":{"outcome":"selected","optionId":"allow"}}"#,
        declined: r#"{"outcome":{"outcome":"selected","optionId":"reject"}}"#,
        ended: r#"{"outcome":{"outcome":"cancelled"}}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "ask-qwen",
        source: "qwen",
        answered: r#"{"outcome":{"outcome":"selected","optionId":"proceed_once"}}"#,
        declined: r#"{"outcome":{"outcome":"selected","optionId":"cancel"}}"#,
        ended: r#"{"outcome":{"outcome":"cancelled"}}"#,
        declined_by_bridge: Some(r#"{"outcome":{"outcome":"cancelled"}}"#),
    },
    Case {
        word: "ask-cursor",
        source: "cursor",
        answered: r#"{"outcome":{"outcome":"answered","answers":[{"questionId":"db","selectedOptionIds":["sqlite"]}]}}"#,
        declined: r#"{"outcome":{"outcome":"skipped"}}"#,
        ended: r#"{"outcome":{"outcome":"cancelled"}}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "plan-cursor",
        source: "cursor_plan",
        answered: r#"{"outcome":{"outcome":"accepted"}}"#,
        declined: r#"{"outcome":{"outcome":"rejected"}}"#,
        ended: r#"{"outcome":{"outcome":"cancelled"}}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "ask-grok",
        source: "grok",
        answered: r#"{"outcome":"accepted","answers":{"Which database?":["SQLite"]}}"#,
        declined: r#"{"outcome":"cancelled"}"#,
        ended: r#"{"outcome":"cancelled"}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "ask-gemini",
        source: "gemini",
        answered: r#"{"outcome":"submitted","answers":{"0":"PostgreSQL"}}"#,
        declined: r#"{"outcome":"cancelled"}"#,
        ended: r#"{"outcome":"cancelled"}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "plan-gemini",
        source: "gemini_plan",
        answered: r#"{"outcome":"submitted","answers":{"0":"Yes, start coding"}}"#,
        declined: r#"{"outcome":"cancelled"}"#,
        ended: r#"{"outcome":"cancelled"}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "ask-opencode",
        source: "opencode",
        answered: r#"{"answers":[["SQLite"]]}"#,
        declined: r#"{"rejected":true}"#,
        ended: r#"{"rejected":true}"#,
        declined_by_bridge: None,
    },
    Case {
        word: "ask-extension-liberal",
        source: "question",
        answered: r#"{"status":"answered","answers":[["SQLite"]]}"#,
        declined: r#"{"status":"rejected","reason":"declined"}"#,
        ended: r#"{"status":"rejected"}"#,
        declined_by_bridge: None,
    },
];

/// The first choice of an item (as the control server lists it): its first option that is
/// not a rejection.
fn first_choice(item: &Value) -> String {
    let options = item["options"].as_array().expect("options");
    options
        .iter()
        .find(|o| !o["kind"].as_str().unwrap_or("").starts_with("reject"))
        .unwrap_or(&options[0])["value"]
        .as_str()
        .expect("a value")
        .to_owned()
}

/// The value of the first of an extension request's `options` (a string, a `[value,
/// label]` pair or an object).
fn first_option(options: &Value) -> Value {
    let o = &options[0];
    match o {
        Value::Array(pair) => pair[0].clone(),
        Value::Object(_) => o.get("value").or_else(|| o.get("id")).unwrap().clone(),
        _ => o.clone(),
    }
}

/// The IDE's answer taking the first choice of every item of `req`, in `req`'s own shape.
fn ide_answer(req: &Value) -> Value {
    let p = &req["params"];
    match req["method"].as_str().unwrap() {
        "_sandboxagent/session/request_question" => {
            let answers: Vec<Value> = match p["questions"].as_array() {
                Some(qs) => qs.iter().map(|q| json!([first_choice(q)])).collect(),
                // One question at the top level, as the agent sent it.
                None => vec![json!([first_option(&p["options"])])],
            };
            json!({"status":"answered","answers":answers})
        }
        "elicitation/create" => {
            let schema = &p["requestedSchema"];
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut content = serde_json::Map::new();
            for (k, prop) in schema["properties"].as_object().expect("properties") {
                let first = |v: &Value| -> Option<Value> {
                    v["oneOf"]
                        .get(0)
                        .map(|o| o["const"].clone())
                        .or_else(|| v["anyOf"].get(0).map(|o| o["const"].clone()))
                        .or_else(|| v["enum"].get(0).cloned())
                };
                let value = match prop["type"].as_str() {
                    Some("array") => first(&prop["items"]).map(|v| json!([v])),
                    Some("boolean") => Some(json!(true)),
                    _ => first(prop),
                };
                match value {
                    Some(v) => {
                        content.insert(k.clone(), v);
                    }
                    None if required.contains(&k.as_str()) => {
                        content.insert(k.clone(), json!("typed"));
                    }
                    None => {}
                }
            }
            json!({"action":"accept","content":content})
        }
        "session/request_permission" => {
            // The weakest client reads the title: a yes/no prompt of the bridge's offers the
            // first option as "(option 1 of n", and the first choice is a yes to it only.
            let title = p["toolCall"]["title"].as_str().unwrap_or("");
            let yes = !title.contains("(option ") || title.contains("(option 1 of ");
            by_kind(req, if yes { "allow" } else { "reject" })
        }
        m => panic!("the client was shown {m}"),
    }
}

/// What a client that reaches one option per kind sends for "yes" (`allow`) or "no"
/// (`reject`): the last option of the first kind it has of `allow_once`, `allow_always`
/// (resp. `reject_once`, `reject_always`), as codecompanion.nvim's keys do; `cancelled`
/// when it has none.
fn by_kind(req: &Value, answer: &str) -> Value {
    let options = req["params"]["options"].as_array().expect("options");
    let kinds = [format!("{answer}_once"), format!("{answer}_always")];
    let pick = kinds
        .iter()
        .find_map(|k| options.iter().rfind(|o| o["kind"] == k.as_str()));
    match pick {
        Some(o) => json!({"outcome":{"outcome":"selected","optionId":o["optionId"]}}),
        None => json!({"outcome":{"outcome":"cancelled"}}),
    }
}

/// The IDE's "no" to `req`.
fn ide_decline(req: &Value) -> Value {
    match req["method"].as_str().unwrap() {
        "_sandboxagent/session/request_question" => {
            json!({"status":"rejected","reason":"declined"})
        }
        "elicitation/create" => json!({"action":"decline"}),
        // No to every prompt (a question asked yes/no per option is declined by a no to
        // each).
        "session/request_permission" => by_kind(req, "reject"),
        m => panic!("the client was shown {m}"),
    }
}

/// A bridge around the mock agent for `client`, with its control server and journal, one
/// session open.
struct Rig {
    b: Bridge,
    http: jsonrpsee_http_client::HttpClient,
    journal: std::path::PathBuf,
    sid: String,
    client: Client,
}

impl Rig {
    async fn start(client: Client, extra: &[&str]) -> Rig {
        let dir = temp_dir("matrix");
        let journal = dir.join("journal.jsonl");
        let journal_arg = journal.to_str().unwrap().to_owned();
        let mut args = vec!["--control", "127.0.0.1:0", "--journal", &journal_arg];
        if client == Client::Control {
            args.extend(["--client-dialect", "control"]);
        }
        args.extend(extra);
        let mut b = Bridge::mock(&args);
        let (base, token) = control_of(&b).await;
        let http = control::http(&base, &token);
        b.initialize(client.caps()).await;
        let sid = b.new_session(1).await;
        Rig {
            b,
            http,
            journal,
            sid,
            client,
        }
    }

    /// Prompts `word` and waits until the question is shown (to the client, or on the
    /// control server alone when the client cannot show it).
    async fn ask(&mut self, id: i64, word: &str, source: &str) -> Asked {
        let sid = self.sid.clone();
        self.b.prompt(id, &sid, word).await;
        // Listed once it is registered, which is after it was sent to the client.
        let listed = list_until(&self.http, 1).await.remove(0);
        assert_eq!(listed["source"], source, "{word}: {listed}");
        let held = listed["dialect"] == "control";
        if self.client == Client::Control {
            assert!(held, "{word}: {listed}");
        }
        let shown = if held {
            Value::Null
        } else {
            let (req, _) = self
                .b
                .recv_until(|m| m.get("method").is_some() && m.get("id").is_some())
                .await;
            req
        };
        Asked { shown, listed }
    }

    /// Reads until the mock's report for `word`; returns the reply the agent got and the
    /// messages before it.
    async fn report(&mut self, word: &str) -> (Value, Vec<Value>) {
        let prefix = format!("{word}: ");
        let (m, before) = self
            .b
            .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with(&prefix)))
            .await;
        let text = chunk_text(&m).unwrap()[prefix.len()..].to_owned();
        let got = serde_json::from_str(text.trim_start_matches("error "))
            .unwrap_or_else(|e| panic!("{word}: {text}: {e}"));
        (got, before)
    }

    /// The journal's `resolved` records, in order.
    fn resolutions(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.journal)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["event"] == "resolved")
            .collect()
    }
}

/// A question asked: what the client was shown (`Null`: nothing, it waits on the control
/// server) and the control server's entry.
struct Asked {
    shown: Value,
    listed: Value,
}

impl Asked {
    fn held(&self) -> bool {
        self.shown.is_null()
    }

    /// The client was shown a request of the bridge's own (a translation), not the
    /// agent's.
    fn translated(&self) -> bool {
        self.shown["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("acp-question-bridge:"))
    }
}

/// Whether `msgs` tell the client that the request it saw as `shown` is over, through what
/// every client renders: the tool call that shows it marked done (failed or completed), or,
/// for a request shown without a tool call, a note in the chat. No `$/cancel_request`: real
/// clients crash or exit on it.
fn withdrawn(msgs: &[Value], shown: &Value) -> bool {
    assert!(
        msgs.iter().all(|m| m["method"] != "$/cancel_request"),
        "the client was sent $/cancel_request: {msgs:?}"
    );
    let p = &shown["params"];
    let tool_call = p["toolCall"]["toolCallId"]
        .as_str()
        .or(p["toolCallId"].as_str());
    msgs.iter().any(|m| {
        let u = &m["params"]["update"];
        let done = u["sessionUpdate"] == "tool_call_update"
            && (u["status"] == "failed" || u["status"] == "completed");
        // A note in the chat: for a request shown without a tool call, and for a tool
        // approval, whose tool call is the tool's own (the agent reports its status).
        let note = chunk_text(m).is_some_and(|t| t.contains("[acp-question-bridge]"));
        match tool_call {
            Some(tc) => (done && u["toolCallId"] == tc) || note,
            // Shown without a tool call: the agent's own tool call for it (Claude's
            // "Asking for your input"), or a note.
            None => done || note,
        }
    })
}

/// Checks the agent's reply for `case` against `expected` (one of the case's fragments);
/// an extension reply's `reason` must be `reason`'s.
fn check(client: Client, case: &Case, ending: &str, got: &Value, expected: &str, reason: &str) {
    let expected: Value = serde_json::from_str(expected).unwrap();
    assert!(
        contains(got, &expected),
        "{client:?} {} {ending}: the agent got {got}, not {expected}",
        case.word
    );
    if got["status"] == "rejected" {
        assert_eq!(got["reason"], reason, "{client:?} {} {ending}", case.word);
    }
}

/// Answers `asked` with the first choice of every item: on the control server when the
/// client was not shown it, else as the IDE (a sequence of permission prompts gets an
/// answer for each). Returns the agent's reply and how many requests the client answered.
async fn answer_first(r: &mut Rig, w: &str, asked: Asked) -> (Value, usize) {
    if asked.held() {
        let l = &asked.listed;
        let answers: Vec<Value> = l["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| json!([first_choice(i)]))
            .collect();
        control::call(
            &r.http,
            "questions.answer",
            json!({"sessionId": l["sessionId"], "questionId": l["questionId"], "answers": answers}),
        )
        .await
        .unwrap_or_else(|e| panic!("{w}: {e}"));
        return (r.report(w).await.0, 0);
    }
    let (got, shown) = respond_until_report(r, w, asked.shown, ide_answer).await;
    (got, shown)
}

/// Answers `req` with `answer`, and each permission prompt that follows it (a question asked
/// prompt by prompt), until the mock's report for `w`: the reply the agent got, and how many
/// requests the client answered.
async fn respond_until_report(
    r: &mut Rig,
    w: &str,
    first: Value,
    answer: fn(&Value) -> Value,
) -> (Value, usize) {
    let prefix = format!("{w}: ");
    let mut req = first;
    let mut shown = 0;
    loop {
        shown += 1;
        let answer = answer(&req);
        r.b.send(&json!({"jsonrpc":"2.0","id":req["id"],"result":answer}))
            .await;
        let (next, _) =
            r.b.recv_until(|m| {
                m["method"] == "session/request_permission"
                    || chunk_text(m).is_some_and(|t| t.starts_with(&prefix))
            })
            .await;
        if next["method"] == "session/request_permission" {
            req = next;
            continue;
        }
        let text = &chunk_text(&next).unwrap()[prefix.len()..];
        return (serde_json::from_str(text).unwrap(), shown);
    }
}

async fn answered_declined_cancelled_and_eof(client: Client) {
    for case in CASES {
        let w = case.word;
        let mut r = Rig::start(client, &[]).await;
        let mut by = Vec::new();
        let mut answerer = |asked: &Asked| {
            by.push(if asked.held() { "control" } else { "client" });
        };

        // Answered: the first choice of every item.
        let asked = r.ask(10, w, case.source).await;
        answerer(&asked);
        let held = asked.held();
        let items = asked.listed["items"].as_array().map_or(1, Vec::len);
        let translated = asked.shown["params"]["_meta"]["sandboxagent.dev"].is_object();
        let (got, prompts) = answer_first(&mut r, w, asked).await;
        check(client, case, "answered", &got, case.answered, "");
        if client == Client::Permission && translated {
            // At least a prompt per item (a multi-select item takes one per option).
            assert!(prompts >= items, "{client:?} {w}: {prompts} prompts");
        } else if !held {
            assert_eq!(prompts, 1, "{client:?} {w}");
        }
        r.b.response(json!(10)).await;
        assert!(control::list(&r.http).await.is_empty(), "{w}");

        // Declined by the user.
        let asked = r.ask(11, w, case.source).await;
        answerer(&asked);
        let got = if asked.held() {
            let l = &asked.listed;
            control::call(
                &r.http,
                "questions.reject",
                json!({"sessionId": l["sessionId"], "questionId": l["questionId"]}),
            )
            .await
            .unwrap_or_else(|e| panic!("{w}: {e}"));
            r.report(w).await.0
        } else {
            respond_until_report(&mut r, w, asked.shown.clone(), ide_decline)
                .await
                .0
        };
        let declined = match case.declined_by_bridge {
            Some(d) if asked.held() || asked.translated() => d,
            _ => case.declined,
        };
        check(client, case, "declined", &got, declined, "declined");
        r.b.response(json!(11)).await;

        // session/cancel: the client is told to close what it shows.
        let asked = r.ask(12, w, case.source).await;
        let sid = r.sid.clone();
        r.b.send(&json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":sid}}))
            .await;
        let (got, before) = r.report(w).await;
        check(client, case, "cancelled", &got, case.ended, "cancelled");
        if !asked.held() {
            assert!(
                withdrawn(&before, &asked.shown),
                "{client:?} {w}: {before:?}"
            );
        }
        let (done, _) = r.b.response(json!(12)).await;
        assert_eq!(done["result"]["stopReason"], "cancelled", "{w}");

        // The client's EOF.
        let _ = r.ask(13, w, case.source).await;
        r.b.close_stdin();
        let (got, _) = r.report(w).await;
        check(client, case, "eof", &got, case.ended, "client_disconnected");
        r.b.drain().await;
        assert_eq!(r.b.wait().await, 0, "{w}");

        by.extend(["cancel", "disconnect"]);
        let journal: Vec<String> = r
            .resolutions()
            .iter()
            .map(|e| e["by"].as_str().unwrap_or("?").to_owned())
            .collect();
        assert_eq!(
            journal, by,
            "{client:?} {w}: how the journal says each ended"
        );
    }
}

async fn timeout(client: Client) {
    for case in CASES {
        let w = case.word;
        let mut r = Rig::start(client, &["--question-timeout", "1s"]).await;
        let asked = r.ask(10, w, case.source).await;
        let (got, before) = r.report(w).await;
        check(client, case, "timeout", &got, case.ended, "timeout");
        if !asked.held() {
            assert!(
                withdrawn(&before, &asked.shown),
                "{client:?} {w}: {before:?}"
            );
        }
        r.b.close_stdin();
        r.b.drain().await;
        assert_eq!(r.b.wait().await, 0, "{w}");
        assert_eq!(r.resolutions()[0]["by"], "timeout", "{client:?} {w}");
    }
}

async fn agent_exit(client: Client) {
    for case in CASES {
        let w = case.word;
        let mut r = Rig::start(client, &[]).await;
        let other = r.b.new_session(2).await;
        let asked = r.ask(10, w, case.source).await;
        r.b.prompt(11, &other, "crash 3").await;
        let mut rest = Vec::new();
        while let Some(m) = r.b.try_recv(WAIT).await {
            rest.push(m);
        }
        assert!(
            rest.iter()
                .any(|m| m["id"] == 10 && m["error"]["code"] == -32603),
            "{client:?} {w}: the waiting prompt gets its error: {rest:?}"
        );
        if !asked.held() {
            assert!(withdrawn(&rest, &asked.shown), "{client:?} {w}: {rest:?}");
        }
        assert_eq!(r.b.wait().await, 3, "{w}");
        let ends = r.resolutions();
        assert_eq!(ends.len(), 1, "{client:?} {w}: {ends:?}");
        assert_eq!(
            (&ends[0]["by"], &ends[0]["result"]["status"]),
            (&json!("disconnect"), &json!("withdrawn")),
            "{client:?} {w}: {ends:?}"
        );
    }
}

macro_rules! matrix {
    ($name:ident, $client:expr) => {
        mod $name {
            use super::*;

            #[tokio::test]
            async fn answered_declined_cancelled_and_client_eof() {
                answered_declined_cancelled_and_eof($client).await;
            }

            #[tokio::test]
            async fn timeout() {
                super::timeout($client).await;
            }

            #[tokio::test]
            async fn agent_exit() {
                super::agent_exit($client).await;
            }
        }
    };
}

matrix!(extension_client, Client::Extension);
matrix!(forms_client, Client::Forms);
matrix!(permission_client, Client::Permission);
matrix!(control_only, Client::Control);

/// A client that says it knows every vendor's method (every method of
/// [`VENDORS`]), but answers `-32601`: each vendor question is shown again in the client's
/// best standard shape (here the extension), and the answer reaches the agent in its own
/// shape. Which cases are a vendor's is what the client is shown: a case whose request comes
/// in a method of [`VENDORS`]. Every vendor must have one: a vendor added without its case
/// fails here.
#[tokio::test]
async fn a_vendor_method_the_client_claims_but_lacks_falls_back_to_its_standard_shape() {
    let mut b = Bridge::mock(&[]);
    let mut caps = Client::Extension.caps();
    for v in VENDORS {
        caps["_meta"][v.method] = json!(true);
    }
    b.initialize(caps).await;
    let sid = b.new_session(1).await;
    let mut asked_in = std::collections::BTreeSet::new();
    for (i, case) in CASES.iter().enumerate() {
        let w = case.word;
        let pid = 10 + i as i64;
        b.prompt(pid, &sid, w).await;
        let (mut req, _) = b
            .recv_until(|m| m.get("method").is_some() && m.get("id").is_some())
            .await;
        let method = req["method"].as_str().unwrap().to_owned();
        if let Some(v) = vendor(&method) {
            // A vendor's question, shown as sent first; refused, it comes again.
            asked_in.insert(v.method);
            b.send(&json!({"jsonrpc":"2.0","id":req["id"],
                "error":{"code":-32601,"message":"Method not found"}}))
                .await;
            (req, _) = b
                .recv_until(|m| m.get("method").is_some() && m.get("id").is_some())
                .await;
            assert_eq!(
                req["method"], "_sandboxagent/session/request_question",
                "{w}"
            );
        }
        b.send(&json!({"jsonrpc":"2.0","id":req["id"],"result":ide_answer(&req)}))
            .await;
        // A standard shape's first prompt may not be all it asks.
        let prefix = format!("{w}: ");
        let (m, _) = loop {
            let (m, before) = b
                .recv_until(|m| {
                    chunk_text(m).is_some_and(|t| t.starts_with(&prefix))
                        || (m.get("method").is_some() && m.get("id").is_some())
                })
                .await;
            if chunk_text(&m).is_some() {
                break (m, before);
            }
            b.send(&json!({"jsonrpc":"2.0","id":m["id"],"result":ide_answer(&m)}))
                .await;
        };
        let got: Value = serde_json::from_str(&chunk_text(&m).unwrap()[prefix.len()..]).unwrap();
        check(Client::Extension, case, "answered", &got, case.answered, "");
        b.response(json!(pid)).await;
    }
    let vendors: std::collections::BTreeSet<&str> = VENDORS.iter().map(|v| v.method).collect();
    assert_eq!(
        asked_in, vendors,
        "every vendor asks in one of CASES (a vendor without its case has none)"
    );
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}
