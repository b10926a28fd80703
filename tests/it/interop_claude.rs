//! A real agent, offline (issue 16): claude-agent-acp 0.100 (npm, running its native Claude
//! Code CLI) behind the real bridge, its model the scripted fake of the Anthropic Messages
//! API in `tests/it/common/fake_model/`. Nothing leaves the machine but the npm install.
//!
//! Claude's `AskUserQuestion` reaches the model's `tool_result` whoever answers it: a client
//! that renders forms (Claude's own `elicitation/create`, as sent), a client that shows the
//! extension (one item, answered with one value), a permission-only client (a prompt on
//! Claude's own tool call), or the `questions` CLI; a `Bash` tool use is asked as sent, and
//! is listed on the control server with its command and approved from there. The two
//! pass-through runs also check the recorded traffic in `fixtures/real-agents/` against the
//! live one (`ACP_QB_RECORD=1` rewrites it). When npm cannot install the agent, the tests
//! say so loudly on stderr and pass without running.

use crate::common;
use crate::common::chunks;
use crate::common::fake_model::{output_text, Dialect, Kind, Reply};
use crate::common::real_agent::{form_client, record_or_load, Agent, Rig, CLAUDE_VERSION};
use serde_json::{json, Value};

const QUESTION: &str = "Which database?";
const ASK_FINAL: &str = "SQLite it is, then.";
const COMMAND: &str = "echo rig-bash-ran > marker.txt && cat marker.txt";
const BASH_FINAL: &str = "The marker file is written.";

/// The messages a fixture pins: the agent's requests, and its updates about the tool call
/// once it has run. How the call is announced races the request: the `tool_call` comes
/// either with `rawInput: {}` and a generic title, refined later by an update with the
/// `rawInput` (sometimes after the answer, sometimes never), or complete at once.
fn pinned(steps: &[Value]) -> Vec<&Value> {
    let tool = Dialect::Anthropic.tool_id(0);
    let is_pinned = |m: &Value| {
        let update = &m["params"]["update"];
        let announcing = update["sessionUpdate"] == "tool_call" || update.get("rawInput").is_some();
        matches!(
            m["method"].as_str(),
            Some("elicitation/create" | "session/request_permission")
        ) || (update["toolCallId"] == tool.as_str() && !announcing)
    };
    steps
        .iter()
        .filter_map(|s| s.get("bridge"))
        .filter(|m| is_pinned(m))
        .collect()
}

/// Answers the agent's request `ask` with `result`, then checks the turn (prompt id 2) ends
/// with `final_text`; returns the `tool_result` the model got for the scripted tool use.
async fn answer(claude: &mut Rig, ask: &Value, result: Value, final_text: &str) -> Value {
    let b = &mut claude.bridge;
    b.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": result}))
        .await;
    let (done, after) = b.response(json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(chunks(&after), final_text);
    claude.model.tool_output(0).await
}

/// Checks the end of a run: the bridge exits cleanly, the CLI called only the Messages API,
/// and the fixture `name` holds the same pinned messages as this run (`scenario` goes into
/// the fixture's comment line when recording).
async fn finish(mut claude: Rig, session: &str, name: &str, scenario: &str) {
    let comment = format!(
        "claude-agent-acp {CLAUDE_VERSION} behind the bridge (pass-through), a client with \
         elicitation.form; {scenario}. Recorded at the client by tests/it/interop_claude.rs \
         (ACP_QB_RECORD=1); <session> and <cwd> stand for the run's session id and working \
         directory, <timestamp> for a time. Not replayed."
    );
    assert_eq!(claude.finish().await, 0, "{}", claude.bridge.stderr());
    let other = claude
        .model
        .requests()
        .into_iter()
        .any(|r| r.kind == Kind::Other);
    assert!(
        !other,
        "unexpected model API calls: {:?}",
        claude.model.paths()
    );
    let live = claude.transcript(session);
    let asks = pinned(&live).into_iter().filter(|m| m.get("id").is_some());
    assert_eq!(asks.count(), 1, "one request from the agent: {live:#?}");
    let stored = record_or_load(name, &comment, &live);
    assert_eq!(
        pinned(&stored),
        pinned(&live),
        "fixtures/real-agents/{name}.jsonl is stale: rerun with ACP_QB_RECORD=1 and review"
    );
}

#[tokio::test]
async fn claude_asks_a_form_client_and_the_model_gets_the_answer() {
    let question = json!({"question": QUESTION, "header": "Database", "multiSelect": false,
        "options": [{"label": "SQLite", "description": "One file, no server"},
            {"label": "Postgres", "description": "A server"}]});
    let script = vec![
        Reply::tool("AskUserQuestion", json!({ "questions": [question] })),
        Reply::text(ASK_FINAL),
    ];
    let Some(mut claude) = Rig::start(Agent::Claude, "claude-ask", script, &[]).await else {
        return;
    };
    let session = claude.open(form_client()).await;
    let b = &mut claude.bridge;
    b.prompt(2, &session, "pick a database").await;

    let (ask, before) = b.recv_until(|m| m["method"] == "elicitation/create").await;
    // Claude offers the tool only to a client that renders forms.
    let offered = claude.model.wait_step(0).await;
    let tools = offered.tool_names();
    assert!(tools.contains(&"AskUserQuestion"), "offered: {tools:?}");
    let tool = Dialect::Anthropic.tool_id(0);
    let announced = before.iter().find(|m| {
        m["params"]["update"]["sessionUpdate"] == "tool_call"
            && m["params"]["update"]["toolCallId"] == tool.as_str()
    });
    let announced = announced.unwrap_or_else(|| panic!("no tool_call before {ask}"));
    let title = &announced["params"]["update"]["title"];
    assert!(
        title == "Asking for your input" || title == QUESTION,
        "{announced}"
    );
    let other = json!({"type": "string", "title": "Other", "description":
        "Type your own answer, or add a note to the option you chose above (optional)."});
    let expected = json!({"mode": "form", "sessionId": session, "toolCallId": tool,
        "message": QUESTION, "requestedSchema": {"type": "object", "properties": {
            "question_0": {"type": "string", "title": "Database", "oneOf": [
                {"const": "SQLite", "title": "SQLite", "description": "One file, no server"},
                {"const": "Postgres", "title": "Postgres", "description": "A server"}]},
            "question_0_custom": other}}});
    assert_eq!(ask["params"], expected);

    let accept = json!({"action": "accept", "content": {"question_0": "SQLite"}});
    let result = answer(&mut claude, &ask, accept, ASK_FINAL).await;
    let text = output_text(&result);
    assert!(text.contains(r#""Which database?"="SQLite""#), "{result}");

    let scenario = "the fake model asks AskUserQuestion, the client accepts SQLite";
    finish(claude, &session, "claude-agent-acp-0.100-ask", scenario).await;
}

#[tokio::test]
async fn claude_asks_permission_for_bash_and_the_model_gets_its_output() {
    let input = json!({"command": COMMAND, "description": "Write a marker file"});
    let script = vec![Reply::tool("Bash", input.clone()), Reply::text(BASH_FINAL)];
    let Some(mut claude) = Rig::start(Agent::Claude, "claude-bash", script, &[]).await else {
        return;
    };
    let session = claude.open(form_client()).await;
    let b = &mut claude.bridge;
    b.prompt(2, &session, "write a marker file").await;

    let is_ask = |m: &Value| m["method"] == "session/request_permission";
    let (ask, _) = b.recv_until(is_ask).await;
    let cwd = claude.cwd.to_string_lossy().into_owned();
    let text =
        json!({"type": "content", "content": {"type": "text", "text": "Write a marker file"}});
    let expected = json!({
        "toolCall": {"toolCallId": Dialect::Anthropic.tool_id(0), "name": "Bash", "status": "pending",
            "rawInput": input, "title": COMMAND, "kind": "execute", "content": [text],
            "locations": [{"path": format!("{cwd}/marker.txt")}]},
        "options": [
            {"optionId": "allow-once", "name": "Yes", "kind": "allow_once"},
            {"optionId": "allow-with-updates", "kind": "allow_always",
                "name": "Yes, and allow access to project/ and echo rig-bash-ran * commands"},
            {"optionId": "reject", "name": "No", "kind": "reject_once"}],
        "sessionId": session});
    assert_eq!(ask["params"], expected);

    let options = ask["params"]["options"].as_array().expect("options");
    let once = options.iter().find(|o| o["kind"] == "allow_once");
    let once = &once.expect("an allow_once option")["optionId"];
    let outcome = json!({"outcome": {"outcome": "selected", "optionId": once}});
    let result = answer(&mut claude, &ask, outcome, BASH_FINAL).await;
    assert_eq!(output_text(&result), "rig-bash-ran", "{result}");
    assert_eq!(result["is_error"], false, "{result}");
    let marker = std::fs::read_to_string(claude.cwd.join("marker.txt"));
    assert_eq!(marker.expect("marker.txt"), "rig-bash-ran\n");

    let scenario = "the fake model runs Bash (a write, so Claude asks), the client allows once";
    finish(claude, &session, "claude-agent-acp-0.100-bash", scenario).await;
}

/// The one-question script every "who answers" case below plays.
fn ask_script() -> Vec<Reply> {
    let question = json!({"question": QUESTION, "header": "Database", "multiSelect": false,
        "options": [{"label": "SQLite", "description": "One file, no server"},
            {"label": "Postgres", "description": "A server"}]});
    vec![
        Reply::tool("AskUserQuestion", json!({ "questions": [question] })),
        Reply::text(ASK_FINAL),
    ]
}

/// (a) A client that shows the extension but no forms: the bridge offers Claude forms,
/// shows its question as one extension item, and the natural one-value answer reaches the
/// model.
#[tokio::test]
async fn claude_asks_an_extension_client_and_one_value_answers_it() {
    let Some(mut claude) = Rig::start(Agent::Claude, "claude-ext", ask_script(), &[]).await else {
        return;
    };
    let caps =
        json!({"_meta": {"sandboxagent.dev": {"extensions": {"sessionRequestQuestion": true}}}});
    let session = claude.open(caps).await;
    let b = &mut claude.bridge;
    b.prompt(2, &session, "pick a database").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "_sandboxagent/session/request_question")
        .await;
    let questions = ask["params"]["questions"].as_array().expect("questions");
    assert_eq!(questions.len(), 1, "the Other box is no question: {ask}");
    assert_eq!(questions[0]["question"], QUESTION);
    let answered = json!({"status": "answered", "answers": [["SQLite"]]});
    let result = answer(&mut claude, &ask, answered, ASK_FINAL).await;
    assert!(
        output_text(&result).contains(r#""Which database?"="SQLite""#),
        "{result}"
    );
    assert_eq!(claude.finish().await, 0);
}

/// (b) A permission-only client: a prompt on Claude's own tool call, its pick reaching the
/// model.
#[tokio::test]
async fn claude_asks_a_permission_only_client_and_the_pick_reaches_the_model() {
    let Some(mut claude) = Rig::start(Agent::Claude, "claude-perm", ask_script(), &[]).await else {
        return;
    };
    let session = claude.open(json!({})).await;
    let b = &mut claude.bridge;
    b.prompt(2, &session, "pick a database").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    assert_eq!(
        ask["params"]["toolCall"]["toolCallId"],
        Dialect::Anthropic.tool_id(0),
        "{ask}"
    );
    // An unknown client gets yes/no prompts, one option at a time: no to SQLite, yes to
    // Postgres (the second option, which a client keyed by kind could never reach in one
    // prompt).
    let title = ask["params"]["toolCall"]["title"].as_str().unwrap_or("");
    assert!(title.contains("→ SQLite (option 1 of 2)"), "{ask}");
    let no = json!({"outcome": {"outcome": "selected", "optionId": "reject"}});
    b.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": no}))
        .await;
    let (next, _) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    assert_eq!(
        next["params"]["toolCall"]["toolCallId"],
        Dialect::Anthropic.tool_id(0)
    );
    let title = next["params"]["toolCall"]["title"].as_str().unwrap_or("");
    assert!(title.contains("→ Postgres (option 2 of 2)"), "{next}");
    let outcome = json!({"outcome": {"outcome": "selected", "optionId": "allow"}});
    let result = answer(&mut claude, &next, outcome, ASK_FINAL).await;
    assert!(
        output_text(&result).contains(r#""Which database?"="Postgres""#),
        "{result}"
    );
    assert_eq!(claude.finish().await, 0);
}

/// (c) Answered from the control CLI while the IDE shows the form; and a Bash tool use is
/// listed with its command and approved from there.
#[tokio::test]
async fn claude_is_answered_and_approved_from_the_questions_cli() {
    let input = json!({"command": COMMAND, "description": "Write a marker file"});
    // The question, then the Bash tool use, then the final text.
    let mut script = ask_script();
    script[1] = Reply::tool("Bash", input);
    script.push(Reply::text(BASH_FINAL));
    let Some(mut claude) = Rig::start(
        Agent::Claude,
        "claude-cli",
        script,
        &["--control", "127.0.0.1:0"],
    )
    .await
    else {
        return;
    };
    let (base, token) = common::control_of(&claude.bridge).await;
    let url = format!("{base}#token={token}");
    let session = claude.open(form_client()).await;
    let b = &mut claude.bridge;
    b.prompt(2, &session, "pick a database, then write a marker")
        .await;
    b.recv_until(|m| m["method"] == "elicitation/create").await;
    let (code, out) = common::control::cli(&["list", "--json", "--control", &url]).await;
    assert_eq!(code, 0);
    let list: Vec<Value> = serde_json::from_str(&out).expect("JSON");
    assert_eq!(list[0]["source"], "form");
    let qid = list[0]["questionId"].as_str().expect("id").to_owned();
    let (code, _) =
        common::control::cli(&["answer", "--control", &url, &session, &qid, "SQLite"]).await;
    assert_eq!(code, 0);
    let first = claude.model.tool_output(0).await;
    assert!(
        output_text(&first).contains(r#""Which database?"="SQLite""#),
        "{first}"
    );
    // Then the Bash approval, listed with its command.
    let b = &mut claude.bridge;
    b.recv_until(|m| m["method"] == "session/request_permission")
        .await;
    let (_, out) = common::control::cli(&["list", "--json", "--control", &url]).await;
    let list: Vec<Value> = serde_json::from_str(&out).expect("JSON");
    let approval = list
        .iter()
        .find(|q| q["source"] == "permission")
        .unwrap_or_else(|| panic!("no approval listed: {list:?}"));
    assert_eq!(
        approval["context"]["toolCall"]["rawInput"]["command"],
        COMMAND
    );
    let qid = approval["questionId"].as_str().expect("id").to_owned();
    let (code, _) =
        common::control::cli(&["answer", "--control", &url, &session, &qid, "allow-once"]).await;
    assert_eq!(code, 0);
    let (done, _) = b.response(json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let second = claude.model.tool_output(1).await;
    assert_eq!(output_text(&second), "rig-bash-ran", "{second}");
    assert_eq!(claude.finish().await, 0);
}

/// One approval policy for the real agent (issue 34): the fake model runs `cargo test`, which
/// a rule allows, then `rm -rf build`, which a rule denies. Neither reaches the client; each
/// is a note in its chat, and the model gets each result: the command's output, then
/// Claude's refusal.
#[tokio::test]
async fn a_policy_allows_and_denies_claudes_bash_and_the_model_gets_each_result() {
    const FINAL: &str = "Tests ran; the build stays.";
    let root = common::temp_dir("claude-policy");
    let policy = root.join("policy.toml");
    std::fs::write(
        &policy,
        "[[rule]]\nid = \"tests\"\ndecision = \"allow\"\ncommand = [\"cargo\", \"test\"]\n\n\
         [[rule]]\nid = \"no-rm\"\ndecision = \"deny\"\ncommand = [\"rm\", [\"-rf\", \"-fr\", \"-r\"]]\n\
         justification = \"delete by hand\"\n",
    )
    .unwrap();
    let script = vec![
        Reply::tool(
            "Bash",
            json!({"command": "cargo test --offline", "description": "Run the tests"}),
        ),
        Reply::tool(
            "Bash",
            json!({"command": "rm -rf build", "description": "Remove the build"}),
        ),
        Reply::text(FINAL),
    ];
    let args = ["--policy", policy.to_str().unwrap()];
    let Some(mut claude) = Rig::start(Agent::Claude, "claude-policy", script, &args).await else {
        return;
    };
    std::fs::create_dir_all(claude.cwd.join("build")).unwrap();
    let session = claude.open(form_client()).await;
    let b = &mut claude.bridge;
    b.prompt(2, &session, "test, then clean").await;
    let (done, seen) = b.response(json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(
        seen.iter()
            .all(|m| m["method"] != "session/request_permission"),
        "the policy answered both: {seen:#?}"
    );
    let chat = chunks(&seen);
    assert!(
        chat.contains("Allowed by policy rule `tests`: cargo test --offline"),
        "{chat}"
    );
    assert!(
        chat.contains("Denied by policy rule `no-rm`: rm -rf build (delete by hand)"),
        "{chat}"
    );
    assert!(chat.ends_with(FINAL), "{chat}");

    let ran = claude.model.tool_output(0).await;
    let ran_text = output_text(&ran);
    // cargo ran (in a folder with no Cargo.toml): its own words, not a refusal.
    assert!(ran_text.contains("Cargo.toml"), "{ran}");
    let refused = claude.model.tool_output(1).await;
    assert_eq!(refused["is_error"], true, "{refused}");
    assert!(claude.cwd.join("build").is_dir(), "rm -rf never ran");
    let refused_text = output_text(&refused);
    // claude-agent-acp 0.100 says "User refused permission to run tool".
    assert!(refused_text.contains("refused permission"), "{refused}");
    assert_eq!(claude.finish().await, 0, "{}", claude.bridge.stderr());
}

/// Know what you answer (issue 35): Claude's Write, asked as it sent it, is listed on the
/// control server (what the page and the phone show) with its diff and what the agent was
/// doing: its message before the tool use, and the tool call of this turn.
#[tokio::test]
async fn claudes_write_approval_carries_its_diff_and_the_agents_context() {
    const FINAL: &str = "The notes are written.";
    let script = vec![
        Reply::tool(
            "Write",
            json!({"file_path": "NOTES.md", "content": "# Notes\n\nSQLite first.\n"}),
        ),
        Reply::text(FINAL),
    ];
    let Some(mut claude) = Rig::start(
        Agent::Claude,
        "claude-write",
        script,
        &["--control", "127.0.0.1:0"],
    )
    .await
    else {
        return;
    };
    let (base, token) = common::control_of(&claude.bridge).await;
    let session = claude.open(form_client()).await;
    let b = &mut claude.bridge;
    b.prompt(2, &session, "write the notes").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    let c = common::control::http(&base, &token);
    let list = common::control::list_until(&c, 1).await;
    let q = &list[0];
    let diff = q["context"]["toolCall"]["content"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "diff"))
        .unwrap_or_else(|| panic!("no diff in {q}"));
    assert!(
        diff["path"].as_str().unwrap().ends_with("NOTES.md"),
        "{diff}"
    );
    assert_eq!(diff["newText"], "# Notes\n\nSQLite first.\n", "{diff}");
    let calls = q["digest"]["toolCalls"]
        .as_array()
        .unwrap_or_else(|| panic!("no digest in {q}"));
    assert!(calls.iter().any(|t| t["kind"] == "edit"), "{calls:?}");
    // Allowed from the control server, as the page does; the file is written.
    let once = ask["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "allow_once")
        .expect("allow_once")["optionId"]
        .clone();
    let r = common::control::call(
        &c,
        "questions.answer",
        json!({"sessionId": session, "questionId": q["questionId"], "answers": [[once]]}),
    )
    .await
    .unwrap();
    assert_eq!(r["status"], "answered", "{r}");
    let (done, after) = claude.bridge.response(json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(chunks(&after).ends_with(FINAL), "{after:?}");
    let written = std::fs::read_to_string(claude.cwd.join("NOTES.md")).unwrap();
    assert_eq!(written, "# Notes\n\nSQLite first.\n");
    assert_eq!(claude.finish().await, 0, "{}", claude.bridge.stderr());
}
