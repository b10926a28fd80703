//! Every way an agent asks, through the real binaries: the mock agent asks in each agent's
//! own shape (`src/tools/shapes.rs`) behind the real bridge; the question is listed on the
//! control server with its source, answered from there (with the same checks as an answer
//! from the IDE), and the agent gets its one reply in its own shape, while the IDE's copy is
//! withdrawn.

use crate::common::control::cli;
use crate::common::*;
use serde_json::{json, Value};

/// (script word, source on the control server, the answer given there, a JSON fragment the
/// agent's result must contain).
const CASES: &[(&str, &str, &str, &str)] = &[
    (
        "ask-claude",
        "form",
        r#"[["SQLite"]]"#,
        r#"{"action":"accept","content":{"question_0":"SQLite"}}"#,
    ),
    (
        "ask-claude",
        "form",
        r#"[["DuckDB"]]"#,
        r#"{"content":{"question_0_custom":"DuckDB"}}"#,
    ),
    (
        "ask-claude-two",
        "form",
        r#"[["Postgres"],["auth"]]"#,
        r#"{"content":{"question_0":"Postgres","question_1":["auth"]}}"#,
    ),
    (
        "ask-codex",
        "form",
        r#"[["DuckDB"]]"#,
        r#"{"content":{"database":"None of the above","database_note":"DuckDB"}}"#,
    ),
    (
        "ask-kimi",
        "form",
        r#"[["SQLite"],["auth","billing"]]"#,
        r#"{"content":{"q0":"SQLite","q1":["auth","billing"]}}"#,
    ),
    (
        "approve",
        "permission",
        r#"[["allow"]]"#,
        r#"{"outcome":{"outcome":"selected","optionId":"allow"}}"#,
    ),
    (
        "ask-qwen",
        "qwen",
        r#"[["SQLite"]]"#,
        r#"{"outcome":{"optionId":"proceed_once"},"answers":{"0":"SQLite"}}"#,
    ),
    (
        "ask-cursor",
        "cursor",
        r#"[["Postgres"]]"#,
        r#"{"outcome":{"outcome":"answered","answers":[{"questionId":"db","selectedOptionIds":["postgres"]}]}}"#,
    ),
    (
        "plan-cursor",
        "cursor_plan",
        r#"[["Keep it simple"]]"#,
        r#"{"outcome":{"outcome":"rejected","reason":"Keep it simple"}}"#,
    ),
    (
        "ask-grok",
        "grok",
        r#"[["Postgres"]]"#,
        r#"{"outcome":"accepted","answers":{"Which database?":["Postgres"]}}"#,
    ),
    (
        "ask-gemini",
        "gemini",
        r#"[["SQLite"]]"#,
        r#"{"outcome":"submitted","answers":{"0":"SQLite"}}"#,
    ),
    (
        "plan-gemini",
        "gemini_plan",
        r#"[["Yes, start coding"]]"#,
        r#"{"outcome":"submitted","answers":{"0":"Yes, start coding"}}"#,
    ),
    (
        "ask-opencode",
        "opencode",
        r#"[["Postgres"]]"#,
        r#"{"answers":[["Postgres"]]}"#,
    ),
    (
        "ask-extension-liberal",
        "question",
        r#"[["SQLite"]]"#,
        r#"{"status":"answered","answers":[["SQLite"]]}"#,
    ),
];

#[tokio::test]
async fn every_shape_is_listed_and_answered_from_the_control_server_in_the_agents_own_shape() {
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0"]);
    let (base, token) = control_of(&b).await;
    let url = format!("{base}#token={token}");
    // A client that advertises the extension: vendor shapes are translated to it, forms
    // and permissions go as sent.
    b.initialize(
        json!({"_meta": {"sandboxagent.dev": {"extensions": {"sessionRequestQuestion": true}}}}),
    )
    .await;
    let sid = b.new_session(1).await;
    for (i, (word, source, answer, expected)) in CASES.iter().enumerate() {
        let prompt_id = 10 + i as i64;
        b.prompt(prompt_id, &sid, word).await;
        // Wait until the client is shown something for it.
        b.recv_until(|m| m.get("method").is_some() && m.get("id").is_some())
            .await;
        let (code, out) = cli(&["list", "--json", "--control", &url]).await;
        assert_eq!(code, 0, "{word}");
        let list: Vec<Value> = serde_json::from_str(&out).unwrap();
        assert_eq!(list.len(), 1, "{word}: {list:?}");
        assert_eq!(list[0]["source"], *source, "{word}");
        let qid = list[0]["questionId"].as_str().unwrap().to_owned();
        let qsid = list[0]["sessionId"].as_str().unwrap().to_owned();
        let (code, out) = cli(&["answer", "--json", answer, "--control", &url, &qsid, &qid]).await;
        assert_eq!(code, 0, "{word}: {out}");
        let prefix = format!("{word}: ");
        let (report, before) = b
            .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with(&prefix)))
            .await;
        assert!(
            told_over(&before),
            "{word}: the IDE's copy is marked done: {before:?}"
        );
        let text = chunk_text(&report).unwrap().to_owned();
        let got: Value = serde_json::from_str(&text[prefix.len()..]).unwrap();
        let expected: Value = serde_json::from_str(expected).unwrap();
        assert!(contains(&got, &expected), "{word}: the agent got {got}");
        b.response(json!(prompt_id)).await;
    }
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}
