//! What the agent was doing, beside every question (issue 35), through the real binaries:
//! the mock agent streams a message, a plan and an edit with its diff, then asks to approve
//! a write with its diff. The control API, the CLI and the inbox show the digest; every
//! bound holds when the agent streams 10,000 messages and 10 MiB diffs first. A 10 MiB write
//! (issue 41), asked as Claude Code asks it, is shown with the message, the plan, and its
//! diff's start with what was left out, whatever else is long.

use crate::common::control::{self, list_until};
use crate::common::inbox::Inbox;
use crate::common::*;
use serde_json::{json, Value};

fn event_schema() -> jsonschema::Validator {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/question-event.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

/// The question of the `requested` event `q` is valid against the schema.
fn valid(q: &Value) {
    let errors: Vec<String> = event_schema()
        .iter_errors(&json!({"event": "requested", "question": q}))
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[tokio::test]
async fn the_digest_is_beside_the_question_on_the_api_the_cli_and_the_inbox() {
    let reg = temp_dir("digest").join("registry");
    let mut b = Bridge::spawn_env(
        &["--control", "127.0.0.1:0", "--", MOCK],
        &[("ACP_QUESTION_BRIDGE_REGISTRY", reg.to_str().unwrap())],
    );
    let (base, token) = control_of(&b).await;
    b.initialize(json!({})).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "story").await;
    b.recv_until(|m| m["method"] == "session/request_permission")
        .await;

    let c = control::http(&base, &token);
    let list = list_until(&c, 1).await;
    let q = &list[0];
    valid(q);
    let d = &q["digest"];
    assert_eq!(d["lastMessage"], "Now the store itself.", "{d}");
    let plan: Vec<&str> = d["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(plan, ["completed", "in_progress", "pending"]);
    assert_eq!(
        d["toolCalls"][0],
        json!({"title": "Edit schema.sql", "kind": "edit", "status": "completed", "paths": ["/project/schema.sql"]})
    );
    assert_eq!(d["toolCalls"][1]["title"], "Write src/store.rs");
    assert!(d.get("cut").is_none());
    let diff = &q["context"]["toolCall"]["content"][0];
    assert_eq!(diff["type"], "diff");
    assert!(diff["newText"].as_str().unwrap().contains("rusqlite"));

    // The CLI prints the same, as text.
    let url = format!("{base}#token={token}");
    let (code, out) = control::cli(&["list", "--control", &url]).await;
    assert_eq!(code, 0);
    for expected in [
        "agent said: Now the store itself.",
        "plan: [done] Add the SQLite schema",
        "[now] Port the store to SQLite",
        "this turn: Edit schema.sql (edit, completed) /project/schema.sql",
        "diff /project/src/store.rs",
        "+use rusqlite::Connection;",
        "-use std::collections::HashMap;",
    ] {
        assert!(out.contains(expected), "{expected:?} in:\n{out}");
    }
    let qid = q["questionId"].as_str().unwrap();
    let (code, shown) = control::cli(&["show", "--control", &url, &sid, qid]).await;
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains("agent said: Now the store itself."),
        "{shown}"
    );

    // The inbox passes it on.
    let inbox = Inbox::start(&["--registry", reg.to_str().unwrap()]).await;
    let via = list_until(&inbox.http(), 1).await;
    assert_eq!(via[0]["digest"], *d);

    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

#[tokio::test]
async fn every_bound_holds_after_10000_messages_and_10_mib_diffs() {
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;
    b.initialize(json!({})).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "story-huge").await;
    let (ask, before) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    // Every message crossed, whole.
    let chunks = before.iter().filter(|m| chunk_text(m).is_some()).count();
    assert_eq!(chunks, 10_000 + 4);
    let asked = ask["params"]["toolCall"]["content"][0]["oldText"]
        .as_str()
        .unwrap()
        .len();
    assert_eq!(asked, 10 << 20, "the client gets the agent's request whole");

    let list = list_until(&control::http(&base, &token), 1).await;
    let q = &list[0];
    valid(q);
    let d = &q["digest"];
    assert!(d.to_string().len() <= 16 << 10, "{}", d.to_string().len());
    assert_eq!(d["lastMessage"], "Now the store itself.");
    // 16 KiB of text; as JSON its newlines are escaped (`\n`), so a little more.
    let shown = q["context"].to_string().len();
    assert!(shown <= 20 << 10, "{shown}");
    assert!(
        q["context"]["cut"][0].as_str().unwrap().contains("16 KiB"),
        "{}",
        q["context"]["cut"]
    );
    let old = q["context"]["toolCall"]["content"][0]["oldText"]
        .as_str()
        .unwrap();
    assert!(old.ends_with('…'), "a cut diff says so");
    assert_eq!(q["context"]["toolCall"]["title"], "Write src/store.rs");
    assert!(
        rss_kib(b.pid()) < 200 << 10,
        "the bridge holds no copy of the diffs"
    );

    allow_and_end(b, &ask).await;
}

/// The store the mock agent writes in `story-big`: its first lines, then 10 MiB more.
const NEW_START: &str = "use rusqlite::Connection;\n\npub struct Store(Connection);\n// new.\n";
const NEW_BYTES: usize = 57 + (10 << 20);
const NEW_LINES: usize = 3 + (10 << 17);

/// A mock agent's `story-big VARIANT` asked: the bridge, the request, the control server.
async fn asked_big(variant: &str) -> (Bridge, Value, String, String) {
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;
    b.initialize(json!({})).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, &format!("story-big {variant}")).await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    (b, ask, base, token)
}

/// `story-big VARIANT`: the question listed on the control server, and the CLI's text of it;
/// the agent's request reached the client whole.
async fn big_write(variant: &str) -> (Value, String) {
    let (b, ask, base, token) = asked_big(variant).await;
    let asked = &ask["params"]["toolCall"]["content"][0]["newText"];
    assert_eq!(
        asked.as_str().unwrap().len(),
        NEW_BYTES,
        "the client gets it whole"
    );
    let list = list_until(&control::http(&base, &token), 1).await;
    let url = format!("{base}#token={token}");
    let (code, text) = control::cli(&["list", "--control", &url]).await;
    assert_eq!(code, 0, "{text}");
    allow_and_end(b, &ask).await;
    (list[0].clone(), text)
}

/// What every 10 MiB write shows: the plan, the tool call asked about among the turn's, and
/// the tool call itself within its bound, its new text's start, and what was left out of it.
fn shows_the_write(q: &Value, cli: &str) {
    valid(q);
    let d = &q["digest"];
    let plan: Vec<&str> = d["plan"]
        .as_array()
        .unwrap_or_else(|| panic!("no plan in {d}"))
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(plan, ["completed", "in_progress", "pending"]);
    let calls = d["toolCalls"].as_array().unwrap();
    assert_eq!(
        calls.last().unwrap(),
        &json!({"title": "Write src/store.rs", "kind": "edit", "status": "pending", "paths": ["/project/src/store.rs"]}),
        "{d}"
    );
    let context = &q["context"];
    assert!(
        context.to_string().len() <= 20 << 10,
        "{}",
        context.to_string().len()
    );
    let tc = &context["toolCall"];
    assert_eq!(
        tc["title"], "Write src/store.rs",
        "what the question asks is shown"
    );
    assert_eq!(tc["kind"], "edit");
    assert_eq!(tc["locations"], json!([{"path": "/project/src/store.rs"}]));
    let diff = &tc["content"][0];
    assert_eq!(diff["path"], "/project/src/store.rs", "{tc}");
    let new = diff["newText"].as_str().unwrap();
    assert!(
        new.starts_with(NEW_START) && new.ends_with("// new.\n…"),
        "{new:?}"
    );
    assert!(
        new.len() > 3 << 10,
        "the new text has its share: {}",
        new.len()
    );
    // What was left out, exactly.
    let shown = new.len() - '…'.len_utf8();
    let (bytes, lines) = (NEW_BYTES - shown, NEW_LINES - new.matches('\n').count());
    let left = context["leftOut"].as_array().unwrap();
    assert!(
        left.contains(
            &json!({"at": "/toolCall/content/0/newText", "bytes": bytes, "lines": lines})
        ),
        "{left:?}"
    );
    let said = format!("toolCall.content[0].newText: {bytes} bytes, {lines} lines");
    assert!(
        context["cut"].as_array().unwrap().contains(&json!(said)),
        "{}",
        context["cut"]
    );
    // The CLI says it too.
    for expected in [
        "plan: [done] Add the SQLite schema",
        "this turn: Write src/store.rs (edit, pending) /project/src/store.rs",
        "diff /project/src/store.rs",
        "+use rusqlite::Connection;",
        &format!("left out: {said}"),
    ] {
        assert!(cli.contains(expected), "{expected:?} in:\n{cli}");
    }
}

#[tokio::test]
async fn a_new_file_of_10_mib_shows_the_message_the_plan_and_its_start() {
    let (q, cli) = big_write("new").await;
    shows_the_write(&q, &cli);
    assert_eq!(q["digest"]["lastMessage"], "Now the store itself.");
    assert!(q["digest"].get("cut").is_none(), "{}", q["digest"]);
    assert_eq!(
        q["context"]["toolCall"]["content"][0]["oldText"],
        Value::Null
    );
    // The input (the same 10 MiB) has a share too, beside the diff.
    let input = q["context"]["toolCall"]["rawInput"]["content"]
        .as_str()
        .unwrap();
    assert!(
        input.starts_with(NEW_START) && input.ends_with('…'),
        "{input:?}"
    );
    assert!(cli.contains("agent said: Now the store itself."), "{cli}");
}

#[tokio::test]
async fn a_replaced_file_of_10_mib_shows_both_texts_starts() {
    let (q, cli) = big_write("replace").await;
    shows_the_write(&q, &cli);
    assert_eq!(q["digest"]["lastMessage"], "Now the store itself.");
    let diff = &q["context"]["toolCall"]["content"][0];
    let old = diff["oldText"].as_str().unwrap();
    assert!(
        old.starts_with("// old.\n// old.\n") && old.ends_with("\n…"),
        "{old:?}"
    );
    let left = q["context"]["leftOut"].as_array().unwrap();
    let old_left = left
        .iter()
        .find(|l| l["at"] == "/toolCall/content/0/oldText")
        .unwrap_or_else(|| panic!("{left:?}"));
    let shown = old.len() - '…'.len_utf8();
    assert_eq!(old_left["bytes"], (10 << 20) - shown);
    assert_eq!(old_left["lines"], (10 << 17) - old.matches('\n').count());
    assert!(cli.contains("-// old."), "{cli}");
}

#[tokio::test]
async fn a_10_mib_message_and_a_10_mib_output_before_the_write_take_nothing_from_it() {
    let (q, cli) = big_write("line").await;
    shows_the_write(&q, &cli);
    // The last message is the 10 MiB chunk's: its tail, said to be cut.
    let d = &q["digest"];
    let said = d["lastMessage"].as_str().unwrap();
    assert!(
        said.starts_with("…word word ") && said.ends_with(" That is all of it."),
        "{said:?}"
    );
    assert!(said.len() <= (2 << 10) + 3, "{}", said.len());
    assert_eq!(d["cut"], json!(["the start of the last message"]));
    assert!(cli.contains("That is all of it."), "{cli}");
}

/// Allows the approval `ask` (the prompt of id 2), and ends the bridge: the turn ends as
/// `end_turn`, the bridge with 0.
async fn allow_and_end(mut b: Bridge, ask: &Value) {
    b.send(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"outcome":{"outcome":"selected","optionId":"allow"}}})).await;
    let (done, _) = b.response(json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

/// A write of 1 MiB and one of 10 MiB that only a `tool_call` update over 256 KiB describes,
/// asked by its id and title alone: the question still shows its kind, its path and the
/// diff's first lines, and stays small.
#[tokio::test]
async fn a_long_tool_call_update_gives_the_question_its_diffs_first_lines() {
    for variant in ["by-id-1", "by-id"] {
        let (b, ask, base, token) = asked_big(variant).await;
        assert!(ask["params"]["toolCall"].get("content").is_none());
        let list = list_until(&control::http(&base, &token), 1).await;
        let q = &list[0];
        valid(q);
        assert!(q.to_string().len() < 64 << 10, "{}", q.to_string().len());
        let tc = &q["context"]["toolCall"];
        assert_eq!(tc["title"], "Write src/store.rs", "{variant}: {tc}");
        assert_eq!(tc["kind"], "edit", "{variant}: {tc}");
        assert_eq!(tc["locations"], json!([{"path": "/project/src/store.rs"}]));
        let diff = &tc["content"][0];
        assert_eq!(diff["path"], "/project/src/store.rs", "{tc}");
        let new = diff["newText"].as_str().unwrap_or_default();
        assert!(
            new.starts_with(NEW_START) && new.ends_with("// new.\n…"),
            "{variant}: {new:?}"
        );
        allow_and_end(b, &ask).await;
    }
}
