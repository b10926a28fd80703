//! The exact shapes in which the agents people run ask their user (docs/AGENT-DIALECTS.md
//! section 1), for the mock agent's script words, the demo and tests. Each function returns
//! what the agent sends: an optional `session/update` announcing its tool call first, then
//! the request's method and params.

use serde_json::{json, Value};

/// One way of asking: the tool call announced before it (if the agent announces one), the
/// method and the params.
pub struct Shape {
    pub announce: Option<Value>,
    pub method: &'static str,
    pub params: Value,
}

/// `story-big VARIANT`: the approval of a 10 MiB write as Claude Code (claude-agent-acp)
/// sends it: a `tool_call` with an empty input, a `tool_call_update` with the whole input and
/// its diff, then `session/request_permission` with the same, the input first (so a bound
/// met in order would spend itself on `rawInput`). `new`: a Write of a new file (`oldText:
/// null`); `replace`: an Edit of a 10 MiB file into another; `line`: a new file, after a
/// 10 MiB message chunk and a 10 MiB tool output. Returns the updates to send, in order, and
/// the request's tool call.
pub fn big_write(variant: &str) -> (Vec<Value>, Value) {
    let mut updates = Vec::new();
    const PATH: &str = "/project/src/store.rs";
    if variant == "line" {
        let text = "word ".repeat(2 << 20) + "That is all of it.";
        updates.push(json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text}}));
        updates.push(json!({"sessionUpdate": "tool_call_update",
            "toolCallId": "story-edit", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text",
                "text": "   Compiling store\n".repeat(10 << 16)}}]}));
    }
    // 10 MiB of a new store (1 MiB for `by-id-1`): its first lines, then many more.
    let mib = if variant == "by-id-1" { 1 } else { 10 };
    let new = "use rusqlite::Connection;\n\npub struct Store(Connection);\n".to_owned()
        + &"// new.\n".repeat(mib << 17);
    if variant.starts_with("by-id") {
        // One `tool_call` with all of it, then a request that names it by its id (and a
        // title): what the agent said of it is in the update alone.
        let input = json!({"file_path": PATH, "content": new});
        let diff = json!([{"type": "diff", "path": PATH, "oldText": null, "newText": new}]);
        updates.push(
            json!({"toolCallId": "story-write", "sessionUpdate": "tool_call",
            "rawInput": input, "status": "pending", "title": "Write src/store.rs",
            "kind": "edit", "content": diff, "locations": [{"path": PATH}]}),
        );
        return (
            updates,
            json!({"toolCallId": "story-write", "title": "Write src/store.rs"}),
        );
    }
    let (name, input, old) = if variant == "replace" {
        let old = "// old.\n".repeat(10 << 17);
        let input = json!({"file_path": PATH, "old_string": old, "new_string": new});
        ("Edit", input, Value::from(old))
    } else {
        (
            "Write",
            json!({"file_path": PATH, "content": new}),
            Value::Null,
        )
    };
    let diff = json!([{"type": "diff", "path": PATH, "oldText": old, "newText": new}]);
    updates.push(
        json!({"toolCallId": "story-write", "sessionUpdate": "tool_call",
        "rawInput": {}, "status": "pending", "title": name, "kind": "edit", "content": []}),
    );
    updates.push(
        json!({"toolCallId": "story-write", "sessionUpdate": "tool_call_update",
        "rawInput": input, "title": "Write src/store.rs", "content": diff}),
    );
    let tool_call = json!({"toolCallId": "story-write", "name": name, "status": "pending",
        "rawInput": input, "title": "Write src/store.rs", "kind": "edit", "content": diff,
        "locations": [{"path": PATH}]});
    (updates, tool_call)
}

/// The script words that ask in an agent's shape, with what each mimics (checked against
/// [`for_word`] and docs/MOCK_AGENT.md by the tests).
#[cfg(test)]
pub const WORDS: &[(&str, &str)] = &[
    (
        "ask-claude",
        "claude-agent-acp 0.100 AskUserQuestion, one question (elicitation/create)",
    ),
    (
        "ask-claude-two",
        "claude-agent-acp 0.100 AskUserQuestion, two questions, one multi-select",
    ),
    (
        "ask-claude-steps",
        "claude-agent-acp 0.100 AskUserQuestion, two single-select questions (a permission-only client gets two prompts)",
    ),
    (
        "ask-codex",
        "codex-acp 2.6 request_user_input (elicitation/create)",
    ),
    (
        "ask-kimi",
        "Kimi Code (elicitation/create, q0/q1, required)",
    ),
    (
        "approve",
        "any agent's tool approval: a Bash command (session/request_permission)",
    ),
    (
        "ask-qwen",
        "Qwen Code's permission with questions (session/request_permission)",
    ),
    ("ask-cursor", "Cursor CLI cursor/ask_question"),
    ("plan-cursor", "Cursor CLI cursor/create_plan"),
    ("ask-grok", "Grok Build _x.ai/ask_user_question"),
    ("ask-gemini", "gemini-cli gemini/requestUserInput, ask_user"),
    (
        "plan-gemini",
        "gemini-cli gemini/requestUserInput, exit_plan_mode",
    ),
    ("ask-opencode", "OpenCode opencode/question"),
    (
        "ask-extension-liberal",
        "sandbox-agent's adapter: the extension without questionId",
    ),
];

fn db_options_claude() -> Value {
    json!([
        {"const": "SQLite", "title": "SQLite", "description": "One file, no server",
         "_meta": {"_claude/askUserQuestionOption": {"preview": "sqlite3 app.db"}}},
        {"const": "Postgres", "title": "Postgres", "description": "A server, for many writers"}
    ])
}

/// The shape a script word asks in (`sid`: the session; `n`: a number for unique ids).
pub fn for_word(word: &str, sid: &str, n: u64) -> Option<Shape> {
    let tool_call = format!("toolu_mock_{n}");
    let claude_announce = |questions: Value| {
        Some(
            json!({"sessionId": sid, "update": {"sessionUpdate": "tool_call",
            "toolCallId": tool_call, "title": "Asking for your input", "kind": "other",
            "status": "pending", "rawInput": {"questions": questions}}}),
        )
    };
    // Claude's form of two questions: the database, then `second` (its announced item and
    // its schema property).
    let claude_two = |second: Value, property: Value| Shape {
        announce: claude_announce(json!([{"question": "Which database?"}, second])),
        method: "elicitation/create",
        params: json!({"sessionId": sid, "toolCallId": tool_call, "mode": "form",
            "message": "Answer the questions below.",
            "requestedSchema": {"type": "object", "properties": {
                "question_0": {"type": "string", "title": "Database", "description": "Which database?", "oneOf": db_options_claude()},
                "question_0_custom": {"type": "string", "title": "Other"},
                "question_1": property,
                "question_1_custom": {"type": "string", "title": "Other"}}}}),
    };
    let shape = match word {
        "ask-claude" => Shape {
            announce: claude_announce(
                json!([{"question": "Which database?", "header": "Database"}]),
            ),
            method: "elicitation/create",
            params: json!({"sessionId": sid, "toolCallId": tool_call, "mode": "form",
                "message": "Which database?",
                "requestedSchema": {"type": "object", "properties": {
                    "question_0": {"type": "string", "title": "Database", "oneOf": db_options_claude()},
                    "question_0_custom": {"type": "string", "title": "Other", "description": "Type your own answer"}}}}),
        },
        "ask-claude-two" => claude_two(
            json!({"question": "Which features?"}),
            json!({"type": "array", "title": "Features", "description": "Which features?",
                "items": {"anyOf": [{"const": "auth", "title": "Auth"}, {"const": "billing", "title": "Billing"}]}}),
        ),
        "ask-claude-steps" => claude_two(
            json!({"question": "Which test runner?"}),
            json!({"type": "string", "title": "Tests", "description": "Which test runner?",
                "oneOf": [{"const": "nextest", "title": "nextest"}, {"const": "cargo test", "title": "cargo test"}]}),
        ),
        "ask-codex" => Shape {
            announce: None,
            method: "elicitation/create",
            params: json!({"sessionId": sid, "toolCallId": tool_call, "mode": "form",
                "message": "Codex needs your input to continue.",
                "_meta": {"codex": {"autoResolutionMs": null}},
                "requestedSchema": {"type": "object", "required": ["database"], "properties": {
                    "database": {"type": "string", "title": "Which database?", "description": "Database",
                        "_meta": {"codex": {"isOther": true}},
                        "oneOf": [{"const": "SQLite", "title": "SQLite"}, {"const": "Postgres", "title": "Postgres"},
                                  {"const": "None of the above", "title": "None of the above"}]},
                    "database_note": {"type": "string", "title": "Other",
                        "_meta": {"codex": {"role": "user_note", "questionId": "database"}}}}}}),
        },
        "ask-kimi" => Shape {
            announce: None,
            method: "elicitation/create",
            params: json!({"sessionId": sid, "mode": "form", "message": "Kimi has questions",
                "requestedSchema": {"type": "object", "required": ["q0", "q1"], "properties": {
                    "q0": {"type": "string", "title": "Which database?",
                        "oneOf": [{"const": "SQLite", "title": "SQLite"}, {"const": "Postgres", "title": "Postgres"}]},
                    "q1": {"type": "array", "title": "Which features?", "minItems": 1,
                        "items": {"enum": ["auth", "billing"]}}}}}),
        },
        "approve" => Shape {
            announce: Some(
                json!({"sessionId": sid, "update": {"sessionUpdate": "tool_call",
                "toolCallId": tool_call, "title": "Bash", "kind": "execute", "status": "pending",
                "rawInput": {"command": "rm -rf build", "description": "Remove the build directory"}}}),
            ),
            method: "session/request_permission",
            params: json!({"sessionId": sid,
                "toolCall": {"toolCallId": tool_call, "title": "Bash", "kind": "execute", "status": "pending",
                    "rawInput": {"command": "rm -rf build", "description": "Remove the build directory"},
                    "content": [{"type": "content", "content": {"type": "text", "text": "rm -rf build"}}]},
                "options": [
                    {"optionId": "allow", "name": "Yes", "kind": "allow_once"},
                    {"optionId": "allow_always", "name": "Yes, always", "kind": "allow_always"},
                    {"optionId": "reject", "name": "No", "kind": "reject_once"}]}),
        },
        "ask-qwen" => Shape {
            announce: None,
            method: "session/request_permission",
            params: json!({"sessionId": sid,
                "toolCall": {"toolCallId": tool_call, "title": "Ask user", "kind": "other",
                    "rawInput": {"questions": [
                        {"question": "Which database?", "header": "Database",
                         "options": [{"label": "Postgres", "description": "A server"}, {"label": "SQLite", "description": "A file"}],
                         "multiSelect": false}]},
                    "_meta": {"qwenInteractionKind": "user_question"}},
                "options": [
                    {"optionId": "proceed_once", "name": "Submit", "kind": "allow_once"},
                    {"optionId": "cancel", "name": "Cancel", "kind": "reject_once"}]}),
        },
        "ask-cursor" => Shape {
            announce: None,
            method: "cursor/ask_question",
            params: json!({"toolCallId": tool_call, "title": "A quick question",
                "questions": [{"id": "db", "prompt": "Which database?",
                    "options": [{"id": "sqlite", "label": "SQLite"}, {"id": "postgres", "label": "Postgres"}],
                    "allowMultiple": false}]}),
        },
        "plan-cursor" => Shape {
            announce: None,
            method: "cursor/create_plan",
            params: json!({"toolCallId": tool_call, "name": "Add a database", "overview": "SQLite first",
                "plan": "# Plan\n1. Add sqlx\n2. Write the schema\n3. Migrate",
                "todos": [{"id": "t1", "content": "Add sqlx", "status": "pending"}], "isProject": false}),
        },
        "ask-grok" => Shape {
            announce: None,
            method: "_x.ai/ask_user_question",
            params: json!({"sessionId": sid, "toolCallId": tool_call, "mode": "default",
                "questions": [{"question": "Which database?", "multiSelect": false,
                    "options": [{"label": "SQLite", "description": "A file"}, {"label": "Postgres"}]}]}),
        },
        "ask-gemini" | "plan-gemini" => {
            let plan = word == "plan-gemini";
            Shape {
                announce: None,
                method: "gemini/requestUserInput",
                params: if plan {
                    json!({"sessionId": sid, "requestId": format!("req-{n}"), "kind": "exit_plan_mode",
                        "title": "Ready to code?", "questions": [{"question": "Approve the plan?", "header": "Plan",
                            "type": "choice", "options": [{"label": "Yes, start coding", "description": "Leave plan mode"},
                                                          {"label": "No, keep planning", "description": "Stay in plan mode"}]}]})
                } else {
                    json!({"sessionId": sid, "requestId": format!("req-{n}"), "kind": "ask_user", "title": "Setup",
                        "questions": [{"question": "Which database?", "header": "Database", "type": "choice",
                            "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}], "multiSelect": false}]})
                },
            }
        }
        "ask-opencode" => Shape {
            announce: None,
            method: "opencode/question",
            params: json!({"requestId": format!("req-{n}"), "sessionId": sid,
                "questions": [{"header": "Database", "question": "Which database?",
                    "options": [{"label": "SQLite", "description": "A file"}, {"label": "Postgres", "description": "A server"}],
                    "multiple": false, "custom": true}]}),
        },
        "ask-extension-liberal" => Shape {
            announce: None,
            method: acp_question_bridge::questions::METHOD,
            params: json!({"sessionId": sid, "question": "Which database?", "options": ["SQLite", "Postgres"]}),
        },
        _ => return None,
    };
    Some(shape)
}

/// The tool approvals that take the rest of the prompt (`run cargo test`), besides the
/// words of [`for_word`]: `run COMMAND` (Claude's Bash: a command string), `exec WORDS`
/// (codex-acp's exec: an argv, cut at spaces) and `read PATH` (Claude's Read: a location).
pub fn for_text(text: &str, sid: &str, n: u64) -> Option<Shape> {
    let text = text.trim();
    let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let rest = rest.trim();
    let tool_call = format!("toolu_mock_{n}");
    let approval = |title: String, kind: &str, raw: Value, locations: Value| {
        let tc = json!({"toolCallId": tool_call, "title": title, "kind": kind,
            "status": "pending", "rawInput": raw, "locations": locations});
        let mut announce = tc.clone();
        announce["sessionUpdate"] = json!("tool_call");
        Shape {
            announce: Some(json!({"sessionId": sid, "update": announce})),
            method: "session/request_permission",
            params: json!({"sessionId": sid, "toolCall": tc, "options": [
                {"optionId": "allow", "name": "Yes", "kind": "allow_once"},
                {"optionId": "allow_always", "name": "Yes, always", "kind": "allow_always"},
                {"optionId": "reject", "name": "No", "kind": "reject_once"}]}),
        }
    };
    let shape = match word {
        "run" if !rest.is_empty() => approval(
            format!("`{rest}`"),
            "execute",
            json!({"command": rest, "description": "Run it"}),
            json!([]),
        ),
        "exec" if !rest.is_empty() => {
            let argv: Vec<&str> = rest.split_whitespace().collect();
            approval(
                rest.to_owned(),
                "execute",
                // Codex's `workdir`: where the agent runs (its own folder, here).
                json!({"command": argv, "cwd": std::env::current_dir().unwrap_or_default(), "reason": "to check"}),
                json!([]),
            )
        }
        "read" if !rest.is_empty() => approval(
            format!("Read {rest}"),
            "read",
            json!({"file_path": rest}),
            json!([{"path": rest}]),
        ),
        _ => return for_word(word, sid, n),
    };
    Some(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_asks_and_is_documented() {
        let doc = include_str!("../../docs/MOCK_AGENT.md");
        for (word, _) in WORDS {
            assert!(for_word(word, "s1", 1).is_some(), "{word}");
            assert!(
                doc.contains(&format!("`{word}")),
                "docs/MOCK_AGENT.md: {word}"
            );
        }
    }
}
