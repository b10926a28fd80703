//! The bridge in front of test clients that behave like the clients people run
//! (docs/CLIENTS.md), through the real binaries. Each model does what a real client was seen
//! doing on the wire:
//! - [`Model::KindKeyed`] (codecompanion.nvim, acpx): it reaches one option per `kind` (the
//!   last of each, as codecompanion's keys do) and reads only the tool call's title;
//! - [`Model::Agentic`] (agentic.nvim): it names itself inside `clientCapabilities`, shows
//!   every option by name, and throws on a notification it does not know (here: the test
//!   fails);
//! - [`Model::NullIds`]: it answers a notification it does not know with an `id: null` error;
//! - [`Model::NoPermissions`] (the Python SDK's example client): it answers
//!   `session/request_permission` with `-32601`;
//! - [`Model::AllowOnly`] (another Neovim client): it takes only options whose id starts
//!   with `allow`; any other choice comes back as `dismiss`.
//!
//! Every model must be able to choose the second option of a single-select question and
//! give a multi-select answer, in every source; a question answered elsewhere is marked done
//! in its chat, nothing of the agent's output after it is lost, and a press on the stale
//! prompt is told it had no effect; a question the client cannot show is pointed to in its
//! chat.

use crate::common::control;
use crate::common::*;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Model {
    KindKeyed,
    Agentic,
    NullIds,
    NoPermissions,
    AllowOnly,
}

const MODELS: [Model; 5] = [
    Model::KindKeyed,
    Model::Agentic,
    Model::NullIds,
    Model::NoPermissions,
    Model::AllowOnly,
];

impl Model {
    /// The `initialize` params it sends (none advertises forms or the extension).
    fn initialize(self) -> Value {
        match self {
            Model::KindKeyed => json!({"protocolVersion":1,"clientCapabilities":{},
                "clientInfo":{"name":"CodeCompanion.nvim","version":"1.0.0"}}),
            Model::Agentic => json!({"protocolVersion":1,"clientCapabilities":{
                "clientInfo":{"name":"Agentic.nvim","version":"0.0.1"}}}),
            Model::NullIds => json!({"protocolVersion":1,"clientCapabilities":{},
                "clientInfo":{"name":"some-other-client","version":"0.1.0"}}),
            Model::NoPermissions => json!({"protocolVersion":1,"clientCapabilities":{},
                "clientInfo":{"name":"python-sdk-example","version":"0.1.0"}}),
            Model::AllowOnly => json!({"protocolVersion":1,"clientCapabilities":{},
                "clientInfo":{"name":"allow-only","version":"0.1.0"}}),
        }
    }
}

/// A model client in front of the bridge (with its control server) around the mock agent.
struct Client {
    model: Model,
    b: Bridge,
    http: jsonrpsee_http_client::HttpClient,
    sid: String,
    /// Every message received, in order.
    seen: Vec<Value>,
}

impl Client {
    async fn start(model: Model, extra: &[&str]) -> Client {
        let mut args = vec!["--control", "127.0.0.1:0"];
        args.extend(extra);
        let mut b = Bridge::mock(&args);
        let (base, token) = control_of(&b).await;
        let http = control::http(&base, &token);
        let init = b.call(0, "initialize", model.initialize()).await;
        assert!(init.get("result").is_some(), "{init}");
        let sid = b.new_session(1).await;
        Client {
            model,
            b,
            http,
            sid,
            seen: Vec::new(),
        }
    }

    /// The next message, after the model's reaction to it.
    async fn next(&mut self) -> Value {
        let m = self.b.recv().await;
        self.seen.push(m.clone());
        let method = m["method"].as_str().unwrap_or("");
        if m.get("id").is_none() && !method.is_empty() && method != "session/update" {
            match self.model {
                Model::Agentic => {
                    panic!("agentic.nvim throws on {method} and loses the rest of that output: {m}")
                }
                Model::NullIds => {
                    self.b
                        .send(&json!({"jsonrpc":"2.0","id":null,
                        "error":{"code":-32601,"message":format!("Unknown method {method}")}}))
                        .await
                }
                _ => {}
            }
        }
        m
    }

    /// Reads until `pred`; the message that matched.
    async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let m = self.next().await;
            if pred(&m) {
                return m;
            }
        }
    }

    /// Reads until a request of the bridge's or the agent's, or the report of `word`.
    async fn request_or_report(&mut self, word: &str) -> Value {
        let prefix = report_prefix(word);
        self.until(|m| {
            (m.get("id").is_some() && m.get("method").is_some())
                || chunk_text(m).is_some_and(|t| t.starts_with(&prefix))
        })
        .await
    }

    async fn prompt(&mut self, id: i64, word: &str) {
        let sid = self.sid.clone();
        self.b.prompt(id, &sid, word).await;
    }

    /// The model's answer to a permission request, wanting the options labelled `want` (one
    /// for each prompt it is asked, in order): by title for a yes/no prompt; by name for a
    /// client that shows names; by kind (the last allow option) for one that does not.
    fn choose(&self, req: &Value, want: &[&str]) -> Value {
        let p = &req["params"];
        let options = p["options"].as_array().expect("options");
        let title = p["toolCall"]["title"].as_str().unwrap_or("");
        let binary = options.len() == 2 && options[0]["optionId"] == "allow";
        let by_kind = |kind: &str| {
            let o = options
                .iter()
                .rfind(|o| o["kind"] == kind)
                .unwrap_or_else(|| panic!("no {kind} option in {req}"));
            json!({"outcome":{"outcome":"selected","optionId":o["optionId"]}})
        };
        if binary {
            // "Which database? → Postgres (option 2 of 2)": yes to a wanted label.
            let yes = want.iter().any(|w| {
                title.contains(&format!("→ {w} (")) || title.contains(&format!("include {w}?"))
            });
            if self.model == Model::AllowOnly && !yes {
                return json!({"outcome":{"outcome":"selected","optionId":"dismiss"}});
            }
            return by_kind(if yes { "allow_once" } else { "reject_once" });
        }
        match self.model {
            Model::KindKeyed => by_kind("allow_once"),
            _ => {
                let o = options
                    .iter()
                    .find(|o| want.contains(&o["name"].as_str().unwrap_or("")))
                    .unwrap_or_else(|| panic!("none of {want:?} in {req}"));
                json!({"outcome":{"outcome":"selected","optionId":o["optionId"]}})
            }
        }
    }

    /// Answers what the agent asks for `word`, wanting `want`, until the agent's report;
    /// the reply the agent got. A question the client cannot take (or answered `-32601`)
    /// waits on the control server and is answered there with `answers`.
    async fn answer(&mut self, word: &str, want: &[&str], answers: Value) -> Value {
        let prefix = report_prefix(word);
        let mut prompts = 0;
        loop {
            let m = self.request_or_report(word).await;
            if let Some(text) = chunk_text(&m) {
                let got: Value = serde_json::from_str(&text[prefix.len()..]).expect("a report");
                // The extension's `question` reports `answered: <answers>`.
                return match word {
                    "question" => json!({"status":"answered","answers":got}),
                    _ => got,
                };
            }
            let method = m["method"].as_str().unwrap();
            assert_eq!(
                method, "session/request_permission",
                "{:?} {word}: a client without forms is shown {m}",
                self.model
            );
            prompts += 1;
            assert!(prompts < 20, "{word}: too many prompts");
            if self.model == Model::NoPermissions {
                self.b
                    .send(&json!({"jsonrpc":"2.0","id":m["id"],
                        "error":{"code":-32601,"message":"Method not found"}}))
                    .await;
                self.answer_on_the_page(word, &answers).await;
                continue;
            }
            let choice = self.choose(&m, want);
            self.b
                .send(&json!({"jsonrpc":"2.0","id":m["id"],"result":choice}))
                .await;
        }
    }

    /// Waits until the chat says the question waits elsewhere, then answers it on the
    /// control server.
    async fn answer_on_the_page(&mut self, word: &str, answers: &Value) {
        let pointer = self
            .until(|m| {
                m["params"]["update"]["title"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Waiting for your answer"))
            })
            .await;
        let text = pointer["params"]["update"]["content"][0]["content"]["text"]
            .as_str()
            .unwrap_or("");
        assert!(text.contains("http://127.0.0.1:"), "{word}: {text}");
        assert!(
            !text.contains('#'),
            "{word}: the token is not in the chat: {text}"
        );
        let listed = control::list_until(&self.http, 1).await.remove(0);
        control::call(
            &self.http,
            "questions.answer",
            json!({"sessionId": listed["sessionId"], "questionId": listed["questionId"], "answers": answers}),
        )
        .await
        .unwrap_or_else(|e| panic!("{word}: {e}"));
    }

    async fn end(mut self) {
        self.b.close_stdin();
        self.b.drain().await;
        assert_eq!(self.b.wait().await, 0);
    }
}

/// How the mock agent's report for `word` starts.
fn report_prefix(word: &str) -> String {
    match word {
        "question" => "answered: ".to_owned(),
        _ => format!("{word}: "),
    }
}

/// A question of each source whose second option (or several options) a user wants: the
/// mock's word, the labels to choose, the same answer for the control server, and what the
/// agent's reply must contain.
struct Want {
    word: &'static str,
    labels: &'static [&'static str],
    answers: Value,
    reply: Value,
}

fn second_options() -> Vec<Want> {
    vec![
        Want {
            word: "ask-claude",
            labels: &["Postgres"],
            answers: json!([["Postgres"]]),
            reply: json!({"action":"accept","content":{"question_0":"Postgres"}}),
        },
        Want {
            word: "ask-codex",
            labels: &["Postgres"],
            answers: json!([["Postgres"]]),
            reply: json!({"action":"accept","content":{"database":"Postgres"}}),
        },
        Want {
            word: "ask-cursor",
            labels: &["Postgres"],
            answers: json!([["postgres"]]),
            reply: json!({"outcome":{"outcome":"answered","answers":[{"questionId":"db","selectedOptionIds":["postgres"]}]}}),
        },
        Want {
            word: "ask-grok",
            labels: &["Postgres"],
            answers: json!([["Postgres"]]),
            reply: json!({"outcome":"accepted","answers":{"Which database?":["Postgres"]}}),
        },
        Want {
            word: "ask-gemini",
            labels: &["SQLite"],
            answers: json!([["SQLite"]]),
            reply: json!({"outcome":"submitted","answers":{"0":"SQLite"}}),
        },
        Want {
            word: "ask-opencode",
            labels: &["Postgres"],
            answers: json!([["Postgres"]]),
            reply: json!({"answers":[["Postgres"]]}),
        },
        Want {
            word: "ask-extension-liberal",
            labels: &["Postgres"],
            answers: json!([["Postgres"]]),
            reply: json!({"status":"answered","answers":[["Postgres"]]}),
        },
        Want {
            word: "question",
            labels: &["Option B"],
            answers: json!([["option-b"]]),
            reply: json!({"status":"answered","answers":[["option-b"]]}),
        },
        Want {
            word: "plan-cursor",
            labels: &["Reject"],
            answers: json!([["reject"]]),
            reply: json!({"outcome":{"outcome":"rejected"}}),
        },
    ]
}

fn multi_selects() -> Vec<Want> {
    vec![
        Want {
            word: "ask-claude-two",
            labels: &["SQLite", "Auth", "Billing"],
            answers: json!([["SQLite"], ["auth", "billing"]]),
            reply: json!({"action":"accept","content":{"question_0":"SQLite","question_1":["auth","billing"]}}),
        },
        Want {
            word: "ask-kimi",
            labels: &["Postgres", "billing"],
            answers: json!([["Postgres"], ["billing"]]),
            reply: json!({"action":"accept","content":{"q0":"Postgres","q1":["billing"]}}),
        },
    ]
}

async fn every_model_answers(wants: Vec<Want>) {
    for model in MODELS {
        for w in &wants {
            let mut c = Client::start(model, &[]).await;
            c.prompt(10, w.word).await;
            let got = c.answer(w.word, w.labels, w.answers.clone()).await;
            assert!(
                contains(&got, &w.reply),
                "{model:?} {}: the agent got {got}, not {}",
                w.word,
                w.reply
            );
            c.until(|m| m["id"] == 10 && m.get("result").is_some())
                .await;
            c.end().await;
        }
    }
}

#[tokio::test]
async fn every_model_chooses_the_second_option_of_every_source() {
    every_model_answers(second_options()).await;
}

#[tokio::test]
async fn every_model_gives_a_multi_select_answer() {
    every_model_answers(multi_selects()).await;
}

/// A question shown in the client and answered on the control server: no
/// `$/cancel_request` (agentic.nvim would throw), the client's tool call says what was
/// answered and where, the agent's output after it all arrives, and pressing the stale
/// prompt later tells the user it had no effect.
#[tokio::test]
async fn a_question_answered_elsewhere_is_marked_done_and_nothing_is_lost() {
    for model in [Model::KindKeyed, Model::Agentic, Model::NullIds] {
        let mut c = Client::start(model, &[]).await;
        c.prompt(10, "ask-claude").await;
        let shown = c.request_or_report("ask-claude").await;
        assert_eq!(shown["method"], "session/request_permission", "{model:?}");
        let tool_call = shown["params"]["toolCall"]["toolCallId"].clone();
        let listed = control::list_until(&c.http, 1).await.remove(0);
        control::call(
            &c.http,
            "questions.answer",
            json!({"sessionId": listed["sessionId"], "questionId": listed["questionId"], "answers": [["Postgres"]]}),
        )
        .await
        .expect("answered on the control server");
        let done = c
            .until(|m| {
                m["params"]["update"]["sessionUpdate"] == "tool_call_update"
                    && m["params"]["update"]["status"] == "completed"
            })
            .await;
        assert_eq!(
            done["params"]["update"]["toolCallId"], tool_call,
            "{model:?}"
        );
        let text = |m: &Value| {
            m["params"]["update"]["content"][0]["content"]["text"]
                .as_str()
                .map(str::to_owned)
        };
        let done_text = text(&done).expect("content");
        assert!(
            done_text.starts_with("Answered on the Questions page or CLI: Postgres"),
            "{model:?}: {done_text}"
        );
        // The prompt is still on screen below the tool call: agentic.nvim removes it by the
        // rows it drew it at, so the tool call's content keeps its line count.
        let shown_text = c
            .seen
            .iter()
            .filter(|m| m["params"]["update"]["toolCallId"] == tool_call)
            .filter_map(text)
            .rev()
            .nth(1)
            .expect("the prompt's content");
        assert_eq!(
            done_text.lines().count(),
            shown_text.lines().count(),
            "{model:?}: {shown_text:?} -> {done_text:?}"
        );
        assert!(done["params"]["update"]["title"]
            .as_str()
            .is_some_and(|t| t.ends_with("→ Postgres") && !t.contains(':')));
        // Nothing lost after it: the agent's report and the end of the turn.
        let report = c
            .until(|m| chunk_text(m).is_some_and(|t| t.starts_with("ask-claude: ")))
            .await;
        assert!(chunk_text(&report).unwrap().contains("Postgres"));
        let end = c.until(|m| m["id"] == 10).await;
        assert_eq!(end["result"]["stopReason"], "end_turn", "{model:?}");
        // The user presses the stale prompt.
        let press = c.choose(&shown, &["SQLite"]);
        c.b.send(&json!({"jsonrpc":"2.0","id":shown["id"],"result":press}))
            .await;
        let note = c.until(|m| chunk_text(m).is_some()).await;
        let text = chunk_text(&note).unwrap();
        assert!(
            text.contains("already answered on the Questions page or CLI: Postgres"),
            "{model:?}: {text}"
        );
        assert!(
            c.seen.iter().all(|m| m["method"] != "$/cancel_request"),
            "{model:?}"
        );
        c.end().await;
    }
}

/// With `--client-cancel-requests` a client is sent `$/cancel_request`; one that answers it
/// with an `id: null` error does not reach the agent with it.
#[tokio::test]
async fn a_null_id_error_from_the_client_is_not_forwarded_to_the_agent() {
    let mut c = Client::start(Model::NullIds, &["--client-cancel-requests"]).await;
    c.prompt(10, "ask-claude").await;
    let shown = c.request_or_report("ask-claude").await;
    assert_eq!(shown["method"], "session/request_permission");
    let listed = control::list_until(&c.http, 1).await.remove(0);
    control::call(
        &c.http,
        "questions.answer",
        json!({"sessionId": listed["sessionId"], "questionId": listed["questionId"], "answers": [["SQLite"]]}),
    )
    .await
    .expect("answered on the control server");
    c.until(|m| m["method"] == "$/cancel_request").await;
    let report = c
        .until(|m| chunk_text(m).is_some_and(|t| t.starts_with("ask-claude: ")))
        .await;
    assert!(chunk_text(&report).unwrap().contains("SQLite"));
    c.until(|m| m["id"] == 10).await;
    c.b.stderr_contains("response from the client to no request in flight; dropped")
        .await;
    c.end().await;
}

/// `session/request_permission` answered `-32601` (a tool approval, as sent): with a control
/// server it waits there, pointed to in the chat, instead of failing the agent's tool; the
/// agent gets the page's answer in its own shape.
#[tokio::test]
async fn a_tool_approval_the_client_refuses_waits_on_the_page() {
    let mut c = Client::start(Model::NoPermissions, &[]).await;
    c.prompt(10, "approve").await;
    let got = c.answer("approve", &[], json!([["allow"]])).await;
    assert_eq!(
        got,
        json!({"outcome":{"outcome":"selected","optionId":"allow"}})
    );
    // The pointer is a tool call of its own: the tool's (which has not run) is left alone.
    let tool = c
        .seen
        .iter()
        .find(|m| m["method"] == "session/request_permission")
        .map(|m| m["params"]["toolCall"]["toolCallId"].clone())
        .expect("the approval was shown");
    assert!(
        c.seen.iter().all(
            |m| !(m["params"]["update"]["sessionUpdate"] == "tool_call_update"
                && m["params"]["update"]["toolCallId"] == tool)
        ),
        "the tool's own tool call was changed: {:?}",
        c.seen
    );
    c.end().await;
    // Without a control server the agent gets the client's error, as ACP says.
    let mut b = Bridge::mock(&["--no-control"]);
    b.call(0, "initialize", Model::NoPermissions.initialize())
        .await;
    let sid = b.new_session(1).await;
    b.prompt(10, &sid, "approve").await;
    let (req, _) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    b.send(&json!({"jsonrpc":"2.0","id":req["id"],"error":{"code":-32601,"message":"Method not found"}}))
        .await;
    let (report, _) = b
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("approve: ")))
        .await;
    assert!(chunk_text(&report).unwrap().contains("-32601"));
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

/// A question no permission prompt can show (free text): the chat says the agent waits and
/// where to answer, and the same tool call is marked done when it is answered there.
#[tokio::test]
async fn a_question_the_client_cannot_show_is_pointed_to_in_its_chat() {
    for model in [Model::KindKeyed, Model::Agentic] {
        let mut c = Client::start(model, &[]).await;
        c.prompt(10, "questions").await;
        let pointer = c
            .until(|m| m["params"]["update"]["sessionUpdate"] == "tool_call")
            .await;
        let u = &pointer["params"]["update"];
        assert_eq!(u["status"], "pending", "{model:?}");
        assert!(
            u["title"]
                .as_str()
                .unwrap()
                .starts_with("Waiting for your answer"),
            "{model:?}: {u}"
        );
        let tool_call = u["toolCallId"].clone();
        let listed = control::list_until(&c.http, 1).await.remove(0);
        control::call(
            &c.http,
            "questions.answer",
            json!({"sessionId": listed["sessionId"], "questionId": listed["questionId"],
                "answers": [["SQLite"], ["auth"], ["nothing else"]]}),
        )
        .await
        .expect("answered on the control server");
        let done = c
            .until(|m| m["params"]["update"]["sessionUpdate"] == "tool_call_update")
            .await;
        assert_eq!(done["params"]["update"]["toolCallId"], tool_call);
        assert_eq!(done["params"]["update"]["status"], "completed");
        let end = c.until(|m| m["id"] == 10).await;
        assert_eq!(end["result"]["stopReason"], "end_turn");
        c.end().await;
    }
}

/// Qwen's questions inside a permission request: a real question to a client that shows
/// one (a form), the request as sent to a permission-only client; Qwen gets its own shape.
#[tokio::test]
async fn qwen_questions_are_a_real_question_where_the_client_can_show_one() {
    let mut b = Bridge::mock(&[]);
    b.initialize(json!({"elicitation":{"form":{}}})).await;
    let sid = b.new_session(1).await;
    b.prompt(10, &sid, "ask-qwen").await;
    let (req, _) = b
        .recv_until(|m| m.get("id").is_some() && m.get("method").is_some())
        .await;
    assert_eq!(req["method"], "elicitation/create", "{req}");
    let props = req["params"]["requestedSchema"]["properties"]
        .as_object()
        .unwrap();
    let (key, prop) = props.iter().next().unwrap();
    let second = prop["oneOf"][1]["const"].clone();
    b.send(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"action":"accept","content":{key.as_str(): second}}}))
        .await;
    let (report, _) = b
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("ask-qwen: ")))
        .await;
    let got: Value =
        serde_json::from_str(&chunk_text(&report).unwrap()["ask-qwen: ".len()..]).unwrap();
    assert_eq!(
        got["outcome"],
        json!({"outcome":"selected","optionId":"proceed_once"})
    );
    assert_eq!(got["answers"]["0"], second);
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
    // A permission-only client: the request as Qwen sent it.
    let mut c = Client::start(Model::KindKeyed, &[]).await;
    c.prompt(10, "ask-qwen").await;
    let req = c.request_or_report("ask-qwen").await;
    assert_eq!(req["method"], "session/request_permission");
    assert_eq!(
        req["params"]["toolCall"]["_meta"]["qwenInteractionKind"],
        "user_question"
    );
    c.end().await;
}

/// With `--no-control` a question the client cannot show has nowhere to wait: the agent gets
/// its source's "unsupported" ending (never the user's "decline": nobody saw it), and the
/// journal says the bridge ended it. Every source, to a client that answers `-32601` to
/// what it is shown.
#[tokio::test]
async fn a_question_no_surface_can_take_is_never_declined_for_the_user() {
    for (word, ending) in [
        ("ask-claude", json!({"action":"cancel"})),
        ("ask-codex", json!({"action":"cancel"})),
        ("ask-kimi", json!({"action":"cancel"})),
        ("ask-cursor", json!({"outcome":{"outcome":"cancelled"}})),
        ("plan-cursor", json!({"outcome":{"outcome":"cancelled"}})),
        ("ask-grok", json!({"outcome":"cancelled"})),
        ("ask-gemini", json!({"outcome":"cancelled"})),
        ("plan-gemini", json!({"outcome":"cancelled"})),
        ("ask-opencode", json!({"rejected":true})),
        (
            "ask-extension-liberal",
            json!({"status":"rejected","reason":"unsupported"}),
        ),
    ] {
        let dir = temp_dir("no-control");
        let journal = dir.join("journal.jsonl");
        let mut b = Bridge::mock(&[
            "--no-control",
            "--advertise-elicitation",
            "--journal",
            journal.to_str().unwrap(),
        ]);
        b.call(0, "initialize", Model::NoPermissions.initialize())
            .await;
        let sid = b.new_session(1).await;
        b.prompt(10, &sid, word).await;
        let prefix = format!("{word}: ");
        let report = loop {
            let m = b.recv().await;
            if m["method"] == "session/request_permission" {
                b.send(&json!({"jsonrpc":"2.0","id":m["id"],
                    "error":{"code":-32601,"message":"Method not found"}}))
                    .await;
            } else if chunk_text(&m).is_some_and(|t| t.starts_with(&prefix)) {
                break m;
            }
        };
        let got: Value =
            serde_json::from_str(&chunk_text(&report).unwrap()[prefix.len()..]).expect("a report");
        assert!(contains(&got, &ending), "{word}: the agent got {got}");
        b.response(json!(10)).await;
        b.close_stdin();
        b.drain().await;
        assert_eq!(b.wait().await, 0, "{word}");
        let resolved: Vec<Value> = std::fs::read_to_string(&journal)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["event"] == "resolved")
            .collect();
        assert_eq!(resolved.len(), 1, "{word}: {resolved:?}");
        assert_eq!(resolved[0]["by"], "bridge", "{word}");
        assert_eq!(resolved[0]["result"]["reason"], "unsupported", "{word}");
    }
}

/// A question asked prompt by prompt, its first step answered in the client, then the whole
/// question answered on the control server: the first complete answer wins (the control
/// server's, all of it), the client's step answer is not used, and its chat says so.
#[tokio::test]
async fn a_step_answered_in_the_client_then_the_whole_question_elsewhere() {
    let mut c = Client::start(Model::KindKeyed, &[]).await;
    c.prompt(10, "ask-claude-steps").await;
    let first = c.request_or_report("ask-claude-steps").await;
    let yes = c.choose(&first, &["SQLite"]);
    c.b.send(&json!({"jsonrpc":"2.0","id":first["id"],"result":yes}))
        .await;
    // The second question's first prompt: the first step is taken, the question pending.
    let second = c.request_or_report("ask-claude-steps").await;
    assert!(second["params"]["toolCall"]["title"]
        .as_str()
        .unwrap()
        .starts_with("(2/2)"));
    let listed = control::list_until(&c.http, 1).await.remove(0);
    control::call(
        &c.http,
        "questions.answer",
        json!({"sessionId": listed["sessionId"], "questionId": listed["questionId"],
            "answers": [["Postgres"], ["cargo test"]]}),
    )
    .await
    .expect("answered on the control server");
    let report = c
        .until(|m| chunk_text(m).is_some_and(|t| t.starts_with("ask-claude-steps: ")))
        .await;
    let got: Value =
        serde_json::from_str(&chunk_text(&report).unwrap()["ask-claude-steps: ".len()..]).unwrap();
    assert_eq!(
        got,
        json!({"action":"accept","content":{"question_0":"Postgres","question_1":"cargo test"}})
    );
    assert!(c.seen.iter().any(|m| {
        m["params"]["update"]["status"] == "completed"
            && m["params"]["update"]["content"][0]["content"]["text"]
                .as_str()
                .is_some_and(|t| {
                    t.starts_with("Answered on the Questions page or CLI: Postgres, cargo test")
                })
    }));
    c.until(|m| m["id"] == 10).await;
    c.end().await;
}
