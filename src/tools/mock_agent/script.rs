//! The mock agent's script: what a prompt turn does, picked by the first word of the prompt
//! text ([`SCRIPT_HELP`] lists them; docs/MOCK_AGENT.md says more), and how it reports the
//! outcome of what it asked back into the chat.

use acp_question_bridge::methods;
use std::io::Write as _;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Ctx;

/// The script words, shown by `--help` and in docs/MOCK_AGENT.md.
pub const SCRIPT_HELP: &str = "\
Script words (the first word of the prompt text picks the behaviour):
  <anything else>        stream the prompt text back as agent_message_chunks, end_turn
  permission             session/request_permission (allow/reject); streams
                         `permission: <optionId|cancelled>`, end_turn
  question [<QID>]       _sandboxagent/session/request_question, one single-select question
                         (option-a / option-b); questionId QID or mock-q-<N>; streams
                         `answered: <answers json>` or `rejected: <reason>` (the exact
                         response received is in the chunk's _meta[\"acp-mock-agent\"]),
                         end_turn
  questions [<QID>]      the multi-question form: one single-select, one multi-select, one
                         free-text item; streams the outcome as above
  question-timeout <MS> [<QID>]   like `question`, with timeoutMs = MS
  question-cancel <MS> [<QID>]    like `question`, then withdraws it with $/cancel_request
                         after MS unless answered first
  elicit                 elicitation/create (form: an enum, a string, a boolean); streams
                         `elicitation: <action> <content json>`, end_turn
  elicit-choice          elicitation/create with one single-select field (red / green)
  run <COMMAND>          a tool approval of COMMAND in Claude's Bash shape (a string);
                         streams `run: <result json>`, end_turn
  exec <WORDS>           a tool approval in codex-acp's exec shape (an argv of WORDS)
  read <PATH>            a tool approval of reading PATH (kind read, a location)
  ask-claude, ask-claude-two, ask-claude-steps, ask-codex, ask-kimi, approve, ask-qwen, ask-cursor,
  plan-cursor, ask-grok, ask-gemini, plan-gemini, ask-opencode, ask-extension-liberal
                         ask in that agent's own shape (docs/MOCK_AGENT.md says which);
                         streams `<word>: <result json>` (or `<word>: error <error json>`)
  story                  stream a message, a plan and an edit with its diff, then ask to
                         approve a write with its diff; streams `story: <result json>`
  story-huge             the same after 10,000 message chunks, with 10 MiB diffs
  story-big new|replace|line|by-id|by-id-1   the story, then a 10 MiB write asked as
                         Claude Code asks: a new file, a file replaced (old and new
                         10 MiB), or a new file after a 10 MiB message chunk and a 10 MiB
                         tool output; `by-id`: one tool_call update with all of it, asked
                         by its id and title alone (`by-id-1`: 1 MiB)
  flood <N> [<BYTES> [<MS>]]   N agent_message_chunks of about BYTES bytes (default 100)
                         (after MS milliseconds, said first in a chunk `flood: in <MS> ms`),
                         end_turn
  pid [<MS>]             stream `pid: <its process id>@<its PID namespace's inode>` (after MS
                         milliseconds, said first in a chunk `pid: in <MS> ms`), end_turn
  fs-read <PATH> [<MS>]  fs/read_text_file of PATH (after MS milliseconds, said first in a
                         chunk `fs-read: asking in <MS> ms`); streams `fs-read: <result
                         json>` (or `fs-read: error <error json>`), end_turn
  slow <MS>              wait MS milliseconds, then end_turn (stopReason cancelled if cancelled)
  garbage                write a non-JSON line to stdout, then behave as the default
  stderr <TEXT>          write TEXT to stderr, then end_turn
  crash <CODE>           stream one chunk, then exit with CODE without answering the prompt
A session/cancel ends a waiting turn with stopReason \"cancelled\" (after reporting the
outcome of a question or permission that the client resolves within one second).";

/// Runs one prompt turn; returns the stop reason.
pub(super) async fn turn(
    ctx: &Ctx,
    sid: &str,
    text: &str,
    cancel: &CancellationToken,
) -> &'static str {
    let mut words = text.split_whitespace();
    let first = words.next().unwrap_or_default();
    let arg = |w: Option<&str>, default: u64| w.and_then(|s| s.parse().ok()).unwrap_or(default);
    match first {
        "permission" => {
            let rx = ctx.request(
                methods::SESSION_REQUEST_PERMISSION,
                json!({
                    "sessionId": sid,
                    "toolCall": {"toolCallId": "mock-tool-1", "title": "Run the mock tool", "kind": "execute", "status": "pending"},
                    "options": [
                        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}
                    ]
                }),
            )
            .await;
            let report = |outcome: Result<Value, Value>| match outcome {
                Ok(r) => match r["outcome"]["outcome"].as_str() {
                    Some("selected") => format!(
                        "permission: {}",
                        r["outcome"]["optionId"].as_str().unwrap_or("?")
                    ),
                    _ => "permission: cancelled".to_owned(),
                },
                Err(e) => format!("permission: error {e}"),
            };
            wait_and_report(ctx, sid, rx, cancel, report).await
        }
        "question" | "questions" | "question-timeout" | "question-cancel" => {
            let ms = match first {
                "question-timeout" | "question-cancel" => Some(arg(words.next(), 1000)),
                _ => None,
            };
            let question_id = match words.next() {
                Some(id) => id.to_owned(),
                None => format!("mock-q-{}", ctx.next_question()),
            };
            let mut params = match first {
                "questions" => json!({
                    "sessionId": sid,
                    "questionId": question_id,
                    "questions": [
                        {"question": "Which database?", "header": "Database",
                         "options": [{"label": "Postgres", "description": "Relational, networked"}, {"label": "SQLite"}]},
                        {"question": "Which features?", "header": "Features", "multiple": true,
                         "options": [{"value": "auth", "label": "Auth"}, {"value": "billing", "label": "Billing"}, {"value": "search", "label": "Search"}]},
                        {"question": "Anything else?", "header": "Notes"}
                    ]
                }),
                _ => json!({
                    "sessionId": sid,
                    "questionId": question_id,
                    "prompt": "Which option?",
                    "options": [["option-a", "Option A"], ["option-b", "Option B"]]
                }),
            };
            if first == "question-timeout" {
                params["timeoutMs"] = json!(ms);
            }
            let (id, mut rx) = ctx
                .request_with_id(methods::SESSION_REQUEST_QUESTION, params)
                .await;
            if let Some(ms) = ms.filter(|_| first == "question-cancel") {
                // Withdraw the question after `ms` unless it is answered first.
                tokio::select! {
                    outcome = &mut rx => {
                        if let Ok(outcome) = outcome {
                            ctx.report(sid, &report_question(outcome.clone()), &outcome).await;
                        }
                        return "end_turn";
                    }
                    _ = tokio::time::sleep(Duration::from_millis(ms)) => {
                        ctx.send(&json!({"jsonrpc":"2.0","method":methods::CANCEL_REQUEST,"params":{"requestId":id}})).await;
                    }
                }
            }
            wait_and_report(ctx, sid, rx, cancel, report_question).await
        }
        "elicit" | "elicit-choice" => {
            let schema = if first == "elicit" {
                json!({
                    "type": "object",
                    "properties": {
                        "color": {"type": "string", "title": "Color", "enum": ["red", "green"]},
                        "name": {"type": "string", "title": "Name"},
                        "confirm": {"type": "boolean", "title": "Confirm"}
                    },
                    "required": ["color"]
                })
            } else {
                json!({
                    "type": "object",
                    "properties": {
                        "color": {"type": "string", "title": "Color", "oneOf": [
                            {"const": "red", "title": "Red"}, {"const": "green", "title": "Green"}]}
                    },
                    "required": ["color"]
                })
            };
            let message = if first == "elicit" {
                "Configure the mock run"
            } else {
                "Pick a color"
            };
            let rx = ctx
                .request(
                    methods::ELICITATION_CREATE,
                    json!({ "sessionId": sid, "mode": "form", "message": message, "requestedSchema": schema }),
                )
                .await;
            let report = |outcome: Result<Value, Value>| match outcome {
                Ok(r) => format!(
                    "elicitation: {} {}",
                    r["action"].as_str().unwrap_or("?"),
                    r.get("content").cloned().unwrap_or(Value::Null)
                ),
                Err(e) => format!("elicitation: error {e}"),
            };
            wait_and_report(ctx, sid, rx, cancel, report).await
        }
        word if super::super::shapes::for_text(text, sid, 0).is_some() => {
            let n = {
                let mut q = ctx.questions.lock().unwrap_or_else(|e| e.into_inner());
                *q += 1;
                *q
            };
            let Some(shape) = super::super::shapes::for_text(text, sid, n) else {
                return "end_turn";
            };
            if let Some(update) = &shape.announce {
                ctx.send(
                    &json!({"jsonrpc": "2.0", "method": methods::SESSION_UPDATE, "params": update}),
                )
                .await;
            }
            let rx = ctx.request(shape.method, shape.params).await;
            let word = word.to_owned();
            let report = move |outcome: Result<Value, Value>| match outcome {
                Ok(r) => format!("{word}: {r}"),
                Err(e) => format!("{word}: error {e}"),
            };
            wait_and_report(ctx, sid, rx, cancel, report).await
        }
        "story" | "story-huge" | "story-big" => {
            // What an agent does before it asks: a message, a plan, an edit with its diff,
            // then an approval of a write with its diff (docs/MOCK_AGENT.md).
            let huge = first == "story-huge";
            let big = if first == "story-big" {
                words.next().unwrap_or("new")
            } else {
                ""
            };
            let update = |u: Value| json!({"jsonrpc":"2.0","method":methods::SESSION_UPDATE,"params":{"sessionId": sid, "update": u}});
            if huge {
                for i in 0..10_000 {
                    ctx.chunk(sid, &format!("word{i} ")).await;
                    if i % 256 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            }
            for part in [
                "I'll switch the store ",
                "to SQLite: ",
                "first the schema, then the code.",
            ] {
                ctx.chunk(sid, part).await;
            }
            ctx.send(&update(json!({"sessionUpdate": "plan", "entries": [
                {"content": "Add the SQLite schema", "status": "completed", "priority": "high"},
                {"content": "Port the store to SQLite", "status": "in_progress", "priority": "high"},
                {"content": "Run the tests", "status": "pending", "priority": "medium"}]}))).await;
            let old = if huge {
                "- old line\n".repeat(1 << 20)
            } else {
                "CREATE TABLE kv (k, v);\n".into()
            };
            ctx.send(&update(
                json!({"sessionUpdate": "tool_call", "toolCallId": "story-edit",
                "title": "Edit schema.sql", "kind": "edit", "status": "completed",
                "locations": [{"path": "/project/schema.sql"}],
                "content": [{"type": "diff", "path": "/project/schema.sql", "oldText": old,
                    "newText": "CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB);\n"}]}),
            ))
            .await;
            ctx.chunk(sid, "Now the store itself.").await;
            let tool_call = if big.is_empty() {
                let old_store: Value = if huge {
                    "// old.\n".repeat(10 << 17).into()
                } else {
                    "use std::collections::HashMap;\n\npub struct Store(HashMap<String, Vec<u8>>);\n"
                        .into()
                };
                let tool_call = json!({"toolCallId": "story-write", "title": "Write src/store.rs", "kind": "edit",
                    "status": "pending", "locations": [{"path": "/project/src/store.rs"}],
                    "rawInput": {"file_path": "/project/src/store.rs"},
                    "content": [{"type": "diff", "path": "/project/src/store.rs",
                        "oldText": old_store,
                        "newText": "use rusqlite::Connection;\n\npub struct Store(Connection);\n"}]});
                let mut announce = tool_call.clone();
                announce["sessionUpdate"] = json!("tool_call");
                ctx.send(&update(announce)).await;
                tool_call
            } else {
                big_write(ctx, big, update).await
            };
            let rx = ctx
                .request(
                    methods::SESSION_REQUEST_PERMISSION,
                    json!({"sessionId": sid, "toolCall": tool_call, "options": [
                        {"optionId": "allow", "name": "Yes", "kind": "allow_once"},
                        {"optionId": "reject", "name": "No", "kind": "reject_once"}]}),
                )
                .await;
            let word = first.to_owned();
            let report = move |outcome: Result<Value, Value>| match outcome {
                Ok(r) => format!("{word}: {r}"),
                Err(e) => format!("{word}: error {e}"),
            };
            wait_and_report(ctx, sid, rx, cancel, report).await
        }
        "flood" => {
            let n = arg(words.next(), 10);
            let bytes = arg(words.next(), 100) as usize;
            let text = "x".repeat(bytes.saturating_sub(120).max(1));
            if let Some(ms) = words.next().and_then(|w| w.parse::<u64>().ok()) {
                ctx.chunk(sid, &format!("flood: in {ms} ms")).await;
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            for _ in 0..n {
                if cancel.is_cancelled() {
                    return "cancelled";
                }
                ctx.chunk(sid, &text).await;
                // Yield so a flood of millions never starves the reader.
                tokio::task::yield_now().await;
            }
            "end_turn"
        }
        "slow" => {
            let ms = arg(words.next(), 1000);
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(ms)) => "end_turn",
                _ = cancel.cancelled() => "cancelled",
            }
        }
        "garbage" => {
            let _ = ctx.out.send("this line is not JSON".to_owned()).await;
            echo(ctx, sid, text).await;
            "end_turn"
        }
        "pid" => {
            if let Some(ms) = words.next().and_then(|w| w.parse::<u64>().ok()) {
                ctx.chunk(sid, &format!("pid: in {ms} ms")).await;
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            // Inside a wall (a PID namespace) the pid is the namespace's: its inode tells
            // which one, for a test to find the process as the system knows it.
            let ns = std::fs::metadata("/proc/self/ns/pid")
                .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
                .unwrap_or(0);
            ctx.chunk(sid, &format!("pid: {}@{ns}", std::process::id()))
                .await;
            "end_turn"
        }
        "fs-read" => {
            let path = words.next().unwrap_or("/dev/null");
            if let Some(ms) = words.next().and_then(|w| w.parse::<u64>().ok()) {
                ctx.chunk(sid, &format!("fs-read: asking in {ms} ms")).await;
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            let rx = ctx
                .request(
                    methods::FS_READ_TEXT_FILE,
                    json!({ "sessionId": sid, "path": path }),
                )
                .await;
            let report = |outcome: Result<Value, Value>| match outcome {
                Ok(r) => format!("fs-read: {r}"),
                Err(e) => format!("fs-read: error {e}"),
            };
            wait_and_report(ctx, sid, rx, cancel, report).await
        }
        "stderr" => {
            let rest: Vec<&str> = words.collect();
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{}", rest.join(" "));
            let _ = err.flush();
            "end_turn"
        }
        "crash" => {
            let code = arg(words.next(), 1);
            ctx.chunk(sid, "about to crash").await;
            let _ = writeln!(
                std::io::stderr(),
                "acp-mock-agent: crashing with code {code}"
            );
            // Let the writer flush the chunk, then die without answering.
            tokio::time::sleep(Duration::from_millis(50)).await;
            std::process::exit(i32::try_from(code).unwrap_or(1));
        }
        _ => {
            echo(ctx, sid, text).await;
            "end_turn"
        }
    }
}

async fn echo(ctx: &Ctx, sid: &str, text: &str) {
    let words: Vec<&str> = text.split_whitespace().collect();
    for part in words.chunks(3) {
        ctx.chunk(sid, &format!("{} ", part.join(" "))).await;
    }
}

fn report_question(outcome: Result<Value, Value>) -> String {
    match outcome {
        Ok(r) if r["status"] == "answered" => format!("answered: {}", r["answers"]),
        Ok(r) if r["status"] == "rejected" => {
            format!(
                "rejected: {}",
                r["reason"].as_str().unwrap_or("unspecified")
            )
        }
        Ok(r) => format!("unexpected result: {r}"),
        Err(e) => format!(
            "error: {} {}",
            e["code"],
            e["message"].as_str().unwrap_or_default()
        ),
    }
}

/// `story-big VARIANT` ([`super::super::shapes::big_write`]): its updates sent, then the request's
/// tool call returned.
async fn big_write(ctx: &Ctx, variant: &str, update: impl Fn(Value) -> Value) -> Value {
    let (updates, tool_call) = super::super::shapes::big_write(variant);
    for u in updates {
        ctx.send(&update(u)).await;
    }
    tool_call
}

/// Waits for the answer to a request; a cancel ends the turn as `cancelled`, after giving
/// the client one second to resolve the request (the outcome is still reported).
async fn wait_and_report(
    ctx: &Ctx,
    sid: &str,
    mut rx: oneshot::Receiver<Result<Value, Value>>,
    cancel: &CancellationToken,
    report: impl Fn(Result<Value, Value>) -> String,
) -> &'static str {
    let cancelled = tokio::select! {
        outcome = &mut rx => {
            if let Ok(outcome) = outcome { ctx.report(sid, &report(outcome.clone()), &outcome).await; }
            false
        }
        _ = cancel.cancelled() => true,
    };
    if cancelled {
        if let Ok(Ok(outcome)) = tokio::time::timeout(Duration::from_secs(1), rx).await {
            ctx.report(sid, &report(outcome.clone()), &outcome).await;
        }
        return "cancelled";
    }
    if cancel.is_cancelled() {
        "cancelled"
    } else {
        "end_turn"
    }
}
