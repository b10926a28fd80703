//! Every way a question ends, in every dialect, through the real bridge and mock agent:
//! answered, declined, cancelled by the user, timeout, `session/cancel`, client EOF and
//! agent crash, for a native client (the extension), a client that renders forms
//! (`elicitation/create`) and a client with neither (`session/request_permission`, asked one
//! yes/no prompt per option). The client is never sent `$/cancel_request`: a question that
//! ends while it shows it is marked done in its chat.

use crate::common::*;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy)]
enum D {
    Extension,
    Elicitation,
    Permission,
}

const ALL: [D; 3] = [D::Extension, D::Elicitation, D::Permission];

impl D {
    fn caps(self) -> Value {
        match self {
            D::Extension => {
                json!({"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}})
            }
            D::Elicitation => json!({"elicitation":{"form":{}}}),
            D::Permission => json!({}),
        }
    }

    fn method(self) -> &'static str {
        match self {
            D::Extension => "_sandboxagent/session/request_question",
            D::Elicitation => "elicitation/create",
            D::Permission => "session/request_permission",
        }
    }

    /// The client's answer choosing `option-a` (for yes/no prompts: yes to the first).
    fn answer(self) -> Value {
        match self {
            D::Extension => json!({"status":"answered","answers":[["option-a"]]}),
            D::Elicitation => json!({"action":"accept","content":{"q1":"option-a"}}),
            D::Permission => json!({"outcome":{"outcome":"selected","optionId":"allow"}}),
        }
    }

    /// The client's "no" (for yes/no prompts: no to each option).
    fn decline(self) -> Value {
        match self {
            D::Extension => json!({"status":"rejected","reason":"declined"}),
            D::Elicitation => json!({"action":"decline"}),
            D::Permission => json!({"outcome":{"outcome":"selected","optionId":"reject"}}),
        }
    }

    /// The user dismissed the dialog.
    fn dismiss(self) -> Value {
        match self {
            D::Extension => json!({"outcome":"cancelled"}),
            D::Elicitation => json!({"action":"cancel"}),
            D::Permission => json!({"outcome":{"outcome":"cancelled"}}),
        }
    }
}

/// A bridge (with `args`) whose client speaks `d`, one session open.
async fn open(d: D, args: &[&str]) -> (Bridge, String) {
    let mut b = Bridge::mock(args);
    b.initialize(d.caps()).await;
    let sid = b.new_session(1).await;
    (b, sid)
}

/// Sends the prompt and waits for the question in `d`; returns the id the client sees.
async fn ask(b: &mut Bridge, d: D, id: i64, sid: &str, text: &str) -> Value {
    b.prompt(id, sid, text).await;
    let (req, before) = b.recv_until(|m| m["method"] == d.method()).await;
    if let D::Permission = d {
        let tc = before
            .last()
            .expect("a tool_call before the permission request");
        assert_eq!(tc["params"]["update"]["sessionUpdate"], "tool_call");
    }
    req["id"].clone()
}

/// Reads the turn's end; returns the agent's report chunk (the bridge's own notes left
/// out) and the messages before it.
async fn report(b: &mut Bridge, prompt_id: i64) -> (String, String, Vec<Value>) {
    let (done, before) = b.response(json!(prompt_id)).await;
    let stop = done["result"]["stopReason"]
        .as_str()
        .unwrap_or("?")
        .to_owned();
    let agent: Vec<Value> = before
        .iter()
        .filter(|m| !chunk_text(m).is_some_and(|t| t.contains("[acp-question-bridge]")))
        .cloned()
        .collect();
    (chunks(&agent), stop, before)
}

/// Whether the client was told that the question it shows is over: its tool call marked
/// done (permission prompts), or a note in the chat (shown without a tool call); never
/// `$/cancel_request`.
fn told_over(d: D, before: &[Value]) -> bool {
    assert!(
        before.iter().all(|m| m["method"] != "$/cancel_request"),
        "{d:?}: {before:?}"
    );
    before.iter().any(|m| match d {
        D::Permission => {
            m["params"]["update"]["sessionUpdate"] == "tool_call_update"
                && m["params"]["update"]["status"] == "failed"
        }
        _ => chunk_text(m).is_some_and(|t| t.contains("[acp-question-bridge]")),
    })
}

async fn finish(mut b: Bridge) {
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

#[tokio::test]
async fn answered_declined_and_dismissed_in_every_dialect() {
    for d in ALL {
        let (mut b, sid) = open(d, &[]).await;
        for (n, (result, expect)) in [
            (d.answer(), r#"answered: [["option-a"]]"#),
            (d.decline(), "rejected: declined"),
            (d.dismiss(), "rejected: cancelled"),
        ]
        .into_iter()
        .enumerate()
        {
            let pid = 10 + n as i64;
            let id = ask(&mut b, d, pid, &sid, "question").await;
            let decline = result == d.decline();
            b.send(&json!({"jsonrpc":"2.0","id":id,"result":result}))
                .await;
            if let (D::Permission, true) = (d, decline) {
                // No to option A asks about option B; no to that declines.
                let (next, _) = b
                    .recv_until(|m| m["method"] == "session/request_permission")
                    .await;
                b.send(&json!({"jsonrpc":"2.0","id":next["id"],"result":d.decline()}))
                    .await;
            }
            let (text, stop, before) = report(&mut b, pid).await;
            assert_eq!(text, expect, "{d:?}");
            assert_eq!(stop, "end_turn");
            if let D::Permission = d {
                assert!(
                    before
                        .iter()
                        .any(|m| m["params"]["update"]["sessionUpdate"] == "tool_call_update"),
                    "{d:?}: the tool call is closed"
                );
            }
        }
        finish(b).await;
    }
}

#[tokio::test]
async fn timeout_in_every_dialect() {
    for d in ALL {
        let (mut b, sid) = open(d, &[]).await;
        let id = ask(&mut b, d, 2, &sid, "question-timeout 200").await;
        let (text, _, before) = report(&mut b, 2).await;
        assert_eq!(text, "rejected: timeout", "{d:?}");
        assert!(
            told_over(d, &before),
            "{d:?}: the client is told {id} is over"
        );
        // A late answer is dropped: the next turn works and nothing else arrives.
        b.send(&json!({"jsonrpc":"2.0","id":id,"result":d.answer()}))
            .await;
        b.prompt(3, &sid, "still here").await;
        let (text, _, _) = report(&mut b, 3).await;
        assert_eq!(text, "still here ");
        finish(b).await;
    }
}

#[tokio::test]
async fn session_cancel_in_every_dialect() {
    for d in ALL {
        let (mut b, sid) = open(d, &[]).await;
        let other = b.new_session(2).await;
        let id = ask(&mut b, d, 3, &sid, "question").await;
        let kept = ask(&mut b, d, 4, &other, "question").await;
        b.send(&json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":sid}}))
            .await;
        let (text, stop, before) = report(&mut b, 3).await;
        assert_eq!(
            (text.as_str(), stop.as_str()),
            ("rejected: cancelled", "cancelled"),
            "{d:?}"
        );
        assert!(told_over(d, &before), "{d:?}: {id} is over");
        // The other session's question is still open and can be answered.
        b.send(&json!({"jsonrpc":"2.0","id":kept,"result":d.answer()}))
            .await;
        let (text, _, _) = report(&mut b, 4).await;
        assert_eq!(text, r#"answered: [["option-a"]]"#, "{d:?}");
        finish(b).await;
    }
}

#[tokio::test]
async fn client_eof_in_every_dialect() {
    for d in ALL {
        let (mut b, sid) = open(d, &[]).await;
        ask(&mut b, d, 2, &sid, "question").await;
        b.close_stdin();
        let (text, _, _) = report(&mut b, 2).await;
        assert_eq!(text, "rejected: client_disconnected", "{d:?}");
        b.drain().await;
        assert_eq!(b.wait().await, 0);
    }
}

#[tokio::test]
async fn agent_crash_in_every_dialect() {
    for d in ALL {
        let (mut b, sid) = open(d, &[]).await;
        let other = b.new_session(2).await;
        let id = ask(&mut b, d, 3, &sid, "question").await;
        b.prompt(4, &other, "crash 7").await;
        let mut rest = Vec::new();
        while let Some(m) = b.try_recv(WAIT).await {
            rest.push(m);
        }
        assert!(
            rest.iter()
                .any(|m| m["id"] == 3 && m["error"]["code"] == -32603),
            "{d:?}: the waiting prompt gets its error"
        );
        assert!(told_over(d, &rest), "{d:?}: the question {id} is withdrawn");
        assert_eq!(b.wait().await, 7);
    }
}

#[tokio::test]
async fn permission_prompt_rejects_what_it_cannot_express() {
    let (mut b, sid) = open(D::Permission, &["--no-control"]).await;
    b.prompt(2, &sid, "questions").await;
    let (text, _, before) = report(&mut b, 2).await;
    assert_eq!(text, "rejected: unsupported");
    assert!(before
        .iter()
        .all(|m| m["method"] != "session/request_permission"));
    // The log says why (read from the bridge's stderr as it arrives).
    b.stderr_contains("cannot express a question without options (free text)")
        .await;
    finish(b).await;
}

#[tokio::test]
async fn forced_dialect_overrides_the_client() {
    let (mut b, sid) = open(D::Extension, &["--client-dialect", "permission"]).await;
    let id = ask(&mut b, D::Permission, 2, &sid, "question").await;
    b.send(&json!({"jsonrpc":"2.0","id":id,"result":D::Permission.answer()}))
        .await;
    let (text, _, _) = report(&mut b, 2).await;
    assert_eq!(text, r#"answered: [["option-a"]]"#);
    b.stderr_contains("questions will reach the client as permission")
        .await;
    finish(b).await;
}

/// An agent request whose id looks like the bridge's own ids is routed as the agent's, and
/// the bridge's request with the real prefix as the bridge's, through the real binary.
#[tokio::test]
async fn look_alike_agent_ids_route_correctly() {
    let dir = temp_dir("idspace");
    let rec = dir.join("agent-stdin.jsonl");
    let look_alike = "acp-question-bridge:0000000000000000:1";
    let script = format!(
        r#"printf '%s\n' '{{"jsonrpc":"2.0","id":0,"method":"_sandboxagent/session/request_question","params":{{"sessionId":"s1","questionId":"q","prompt":"Which?","options":["a","b"]}}}}' '{{"jsonrpc":"2.0","id":"{look_alike}","method":"fs/read_text_file","params":{{"sessionId":"s1","path":"/x"}}}}'; cat > "{}""#,
        rec.display()
    );
    // The agent's `fs/*` requests are relayed only outside the wall, which refuses them.
    let mut b = Bridge::with_args(&[
        "--sandbox",
        "off",
        "--permission-prompts",
        "list",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let mut permission = None;
    let mut read = None;
    while permission.is_none() || read.is_none() {
        let m = b.recv().await;
        match m["method"].as_str() {
            Some("session/request_permission") => permission = Some(m["id"].clone()),
            Some("fs/read_text_file") => read = Some(m["id"].clone()),
            _ => {}
        }
    }
    let (permission, read) = (permission.unwrap(), read.unwrap());
    assert_eq!(read, look_alike);
    assert_ne!(permission, read);
    assert!(permission
        .as_str()
        .unwrap()
        .starts_with("acp-question-bridge:"));
    b.send(&json!({"jsonrpc":"2.0","id":read,"result":{"content":"file text"}}))
        .await;
    b.send(&json!({"jsonrpc":"2.0","id":permission,"result":{"outcome":{"outcome":"selected","optionId":"b"}}}))
        .await;
    b.close_stdin();
    b.drain().await;
    b.wait().await;
    let got: Vec<Value> = std::fs::read_to_string(&rec)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        got.contains(&json!({"jsonrpc":"2.0","id":look_alike,"result":{"content":"file text"}})),
        "{got:?}"
    );
    assert!(
        got.contains(
            &json!({"jsonrpc":"2.0","id":0,"result":{"status":"answered","answers":[["b"]]}})
        ),
        "{got:?}"
    );
}

/// The agent is offered forms by default when the client lacks them (the bridge can show
/// a form anywhere); `--no-opt-in form` withholds the offer. The client's own view of its
/// capabilities is never changed.
#[tokio::test]
async fn forms_are_offered_to_the_agent_unless_opted_out() {
    // An agent that prints the first line it reads to stderr, then exits.
    let agent = ["--", "sh", "-c", "read -r l; echo \"agent saw: $l\" >&2"];
    for (extra, offered) in [
        (&[][..], [true, true, true]),
        (&["--no-opt-in", "form"][..], [false, true, true]),
        (
            &["--no-opt-in", "gemini,opencode"][..],
            [true, false, false],
        ),
    ] {
        // The agent's `initialize` as the client sent it, but for the offers: outside the
        // wall, which also takes the client's files and terminals off it.
        let args: Vec<&str> = ["--sandbox", "off"]
            .iter()
            .chain(extra.iter())
            .chain(agent.iter())
            .copied()
            .collect();
        let mut b = Bridge::with_args(&args);
        b.send(&json!({"jsonrpc":"2.0","id":0,"method":"initialize",
            "params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}))
            .await;
        b.stderr_contains("agent saw: {").await;
        let seen = b.stderr();
        let has = [
            seen.contains(r#""elicitation":{"form":{}}"#),
            seen.contains(r#""geminiCli.hostInput":{"requestUserInput":true"#),
            seen.contains(r#""opencode/question":{"version":1}"#),
        ];
        assert_eq!(has, offered, "{extra:?}: {seen}");
        assert!(seen.contains(r#""fs":{"readTextFile":true}"#), "{seen}");
        b.close_stdin();
        b.wait().await;
    }
}
