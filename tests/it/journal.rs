//! `--journal` and `--on-question` through the real binaries: what the journal holds for an
//! answered, a timed-out and a late-answered question (and across restarts); what the
//! notification command receives, and that it can neither block nor outlive its 10 s.

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use serde_json::{json, Value};

const NATIVE: &str =
    r#"{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}"#;
const ASK: &str = "_sandboxagent/session/request_question";

fn journal(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn of<'a>(lines: &'a [Value], question: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["questionId"] == question || l["question"]["questionId"] == question)
        .collect()
}

async fn wait_for_file(path: &Path) -> String {
    tokio::time::timeout(WAIT, async {
        loop {
            if let Ok(s) = std::fs::read_to_string(path) {
                if !s.is_empty() {
                    return s;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{} never appeared", path.display()))
}

async fn reported(b: &mut Bridge) -> String {
    let (m, _) = b
        .recv_until(|m| {
            chunk_text(m).is_some_and(|t| t.starts_with("answered:") || t.starts_with("rejected:"))
        })
        .await;
    chunk_text(&m).unwrap().to_owned()
}

/// A question the client cannot show is rejected by the bridge itself, and the journal and
/// the log say so (`by: "bridge"`), not that the client ended it.
#[tokio::test]
async fn the_bridges_own_unsupported_rejection_is_by_the_bridge() {
    let dir = temp_dir("journal-unsupported");
    let path = dir.join("questions.jsonl");
    let mut b = Bridge::mock(&["--no-control", "--journal", path.to_str().unwrap()]);
    // A client with neither the extension nor forms: permission prompts only, which cannot
    // show the multi-question form's free-text item; and no control server to wait on.
    b.initialize(json!({})).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "questions j-unsupported").await;
    assert_eq!(reported(&mut b).await, "rejected: unsupported");
    b.stderr_contains(r#"by="bridge""#).await;
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
    let lines = journal(&path);
    let resolved: Vec<&Value> = of(&lines, "j-unsupported")
        .into_iter()
        .filter(|l| l["event"] == "resolved")
        .collect();
    assert_eq!(resolved.len(), 1, "{lines:?}");
    assert_eq!(resolved[0]["by"], "bridge");
    assert_eq!(
        resolved[0]["result"],
        json!({"status":"rejected","reason":"unsupported"})
    );
}

#[tokio::test]
async fn journal_keeps_answered_timed_out_and_late_answers() {
    let dir = temp_dir("journal");
    let path = dir.join("questions.jsonl");
    let p = path.to_str().unwrap();
    let mut b = Bridge::mock(&["--journal", p]);
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    let sid = b.new_session(1).await;

    // Answered by the client.
    b.prompt(2, &sid, "question j-answered").await;
    let (asked, _) = b.recv_until(|m| m["method"] == ASK).await;
    b.send(&json!({"jsonrpc":"2.0","id":asked["id"],"result":{"status":"answered","answers":[["option-a"]]}}))
        .await;
    assert_eq!(reported(&mut b).await, r#"answered: [["option-a"]]"#);

    // Timed out, then answered late: the late answer is dropped, and kept in the journal.
    b.prompt(3, &sid, "question-timeout 100 j-late").await;
    let (asked, _) = b.recv_until(|m| m["method"] == ASK).await;
    assert_eq!(reported(&mut b).await, "rejected: timeout");
    b.send(&json!({"jsonrpc":"2.0","id":asked["id"],"result":{"status":"answered","answers":[["option-b"]]}}))
        .await;
    b.stderr_contains("already resolved").await;
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);

    let lines = journal(&path);
    // Every line matches schema/question-event.schema.json.
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/question-event.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    for l in &lines {
        let errors: Vec<String> = v.iter_errors(l).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{l}: {errors:?}");
    }
    assert_eq!(lines[0]["event"], "bridge_started");
    assert_eq!(lines.last().unwrap()["event"], "bridge_stopped");
    assert!(lines.iter().all(|l| l["ts"].as_str().is_some()));

    let answered = of(&lines, "j-answered");
    let kinds: Vec<&str> = answered
        .iter()
        .map(|l| l["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["requested", "delivered", "resolved"]);
    assert_eq!(answered[0]["question"]["sessionId"], sid.as_str());
    assert_eq!(
        answered[0]["question"]["items"][0]["options"][0]["value"],
        "option-a"
    );
    assert_eq!(answered[1]["dialect"], "extension");
    assert_eq!(answered[2]["by"], "client");
    assert_eq!(
        answered[2]["result"],
        json!({"status":"answered","answers":[["option-a"]]})
    );

    let late = of(&lines, "j-late");
    let kinds: Vec<&str> = late.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["requested", "delivered", "resolved", "late_answer"]);
    assert!(late[0]["question"]["expiresAt"].is_string());
    assert_eq!(late[2]["by"], "timeout");
    assert_eq!(
        late[2]["result"],
        json!({"status":"rejected","reason":"timeout"})
    );
    assert_eq!(late[3]["from"], "client");
    assert_eq!(late[3]["sessionId"], sid.as_str());
    assert_eq!(
        late[3]["content"]["result"]["answers"],
        json!([["option-b"]]),
        "the late answer's content is kept"
    );

    // A restart appends to the same journal.
    let mut again = Bridge::mock(&["--journal", p]);
    again.close_stdin();
    assert_eq!(again.wait().await, 0);
    let after = journal(&path);
    assert_eq!(after[..lines.len()], lines[..]);
    let starts = after
        .iter()
        .filter(|l| l["event"] == "bridge_started")
        .count();
    assert_eq!(starts, 2);
    let _ = std::fs::remove_dir_all(dir);
}

/// The command gets the question on stdin and the page's address without its token; the
/// token only with `--on-question-token`. It runs inside the agent's wall (the agent can
/// make it run, and what it runs may be what the agent wrote): the bridge's own process is
/// out of its reach there (`/proc/<bridge>/environ`).
#[tokio::test]
async fn on_question_gets_the_question_and_the_page_inside_the_wall_and_the_token_if_asked() {
    for with_token in [false, true] {
        let dir = temp_dir("onq");
        let out = dir.join("question.json");
        let cmd = format!(
            r#"sh -c 'printf %s "$ACP_QUESTION_URL" > "$0.url"; printf %s "$ACP_QUESTION_TOKEN" > "$0.token"; cat /proc/$(cat "$0.bpid")/environ > "$0.environ" 2>/dev/null; (: < /dev/tty) 2>/dev/null || echo own > "$0.session"; cat > "$0.tmp" && mv "$0.tmp" "$0"' {}"#,
            out.display()
        );
        let mut args = vec![
            "--control",
            "127.0.0.1:0",
            "--notify-after",
            "0",
            "--quiet-at-desk",
            "0",
            "--on-question",
            &cmd,
        ];
        if with_token {
            args.push("--on-question-token");
        }
        let mut b = Bridge::mock(&args);
        // The bridge's pid as the system knows it (inside the wall the command's parent
        // is not the bridge).
        std::fs::write(dir.join("question.json.bpid"), b.pid().to_string()).unwrap();
        let (base, token) = control_of(&b).await;
        b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
        let sid = b.new_session(1).await;
        b.prompt(2, &sid, "question n-1").await;
        let (asked, _) = b.recv_until(|m| m["method"] == ASK).await;
        let q: Value = serde_json::from_str(&wait_for_file(&out).await).unwrap();
        assert_eq!(q["sessionId"], sid.as_str());
        assert_eq!(q["questionId"], "n-1");
        assert_eq!(q["items"][0]["prompt"], asked["params"]["prompt"]);
        // The page without its token: a command that passes the URL on (to a browser)
        // puts it on a command line, which the agent could read.
        let url = std::fs::read_to_string(dir.join("question.json.url")).unwrap();
        assert_eq!(url, base);
        let given = std::fs::read_to_string(dir.join("question.json.token")).unwrap();
        assert_eq!(given, if with_token { token.as_str() } else { "" });
        let environ = std::fs::read(dir.join("question.json.environ")).unwrap_or_default();
        assert!(
            environ.is_empty(),
            "the command read the bridge's environment"
        );
        // A session of its own: no terminal of the bridge's to type into (`/dev/tty` does
        // not open).
        let session = std::fs::read_to_string(dir.join("question.json.session"));
        assert_eq!(session.unwrap_or_default(), "own\n");
        // The question itself is untouched by the notification.
        b.send(&json!({"jsonrpc":"2.0","id":asked["id"],"result":{"status":"answered","answers":[["option-b"]]}}))
            .await;
        assert_eq!(reported(&mut b).await, r#"answered: [["option-b"]]"#);
        b.close_stdin();
        b.drain().await;
        assert_eq!(b.wait().await, 0);
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[tokio::test]
async fn a_failing_or_hanging_notifier_never_affects_the_question() {
    let dir = temp_dir("onq-hang");
    let pidfile = dir.join("pid");
    // Hangs without reading its stdin; must be killed after 10 s. Inside the wall it knows
    // only its pid there: it names itself.
    let cmd = format!(
        r#"bash -c 'echo started > "$0"; exec -a "acpqb-notifier-$0" sleep 600' {}"#,
        pidfile.display()
    );
    let mut b = Bridge::mock(&[
        "--notify-after",
        "0",
        "--quiet-at-desk",
        "0",
        "--on-question",
        &cmd,
    ]);
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "question").await;
    let (asked, _) = b.recv_until(|m| m["method"] == ASK).await;
    b.send(&json!({"jsonrpc":"2.0","id":asked["id"],"result":{"status":"answered","answers":[["option-a"]]}}))
        .await;
    assert_eq!(reported(&mut b).await, r#"answered: [["option-a"]]"#);
    wait_for_file(&pidfile).await;
    let name = format!("acpqb-notifier-{}", pidfile.display());
    let pid = tokio::time::timeout(WAIT, async {
        loop {
            if let Some(pid) = pids_named(&name).first() {
                return *pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the notification command runs");
    b.stderr_contains("killed").await;
    let gone = tokio::time::timeout(WAIT, async {
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next();
            if matches!(state, None | Some("Z")) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "the notification command outlived its 10 s");
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);

    // A command that cannot start is logged; the bridge goes on.
    let mut b = Bridge::mock(&[
        "--notify-after",
        "0",
        "--quiet-at-desk",
        "0",
        "--on-question",
        "/nonexistent/notifier --flag",
    ]);
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "question").await;
    let (asked, _) = b.recv_until(|m| m["method"] == ASK).await;
    b.stderr_contains("cannot start the command").await;
    b.send(&json!({"jsonrpc":"2.0","id":asked["id"],"result":{"status":"rejected","reason":"declined"}}))
        .await;
    assert_eq!(reported(&mut b).await, "rejected: declined");
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
    let _ = std::fs::remove_dir_all(dir);
}

/// What an `--on-question` command starts (it may be the agent's code: a program earlier
/// on PATH, `xdg-open`'s handler) ends with the bridge, however the bridge ends, even when
/// it left its group and ignores SIGTERM: the command's wall is a PID namespace whose init
/// dies with the launcher, and a bridge gone leaves it a grace (a seventh review of the
/// wall).
#[tokio::test]
async fn what_a_notification_command_starts_ends_with_the_bridge() {
    for end in ["eof", "sigkill"] {
        let dir = temp_dir(&format!("onq-escapee-{end}"));
        let started = dir.join("started");
        let name = format!("acpqb-notified-{}", dir.display());
        let cmd = format!(
            r#"bash -c 'setsid bash -c "trap \"\" TERM HUP INT; exec -a \"$1\" sleep 1000" x "$1" </dev/null >/dev/null 2>&1 & echo started > "$0"' {} {}"#,
            started.display(),
            name
        );
        let mut b = Bridge::mock(&[
            "--notify-after",
            "0",
            "--quiet-at-desk",
            "0",
            "--shutdown-grace",
            "500ms",
            "--on-question",
            &cmd,
        ]);
        b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
        let sid = b.new_session(1).await;
        b.prompt(2, &sid, "question").await;
        b.recv_until(|m| m["method"] == ASK).await;
        wait_for_file(&started).await;
        let running = tokio::time::timeout(WAIT, async {
            while pids_named(&name).is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(running.is_ok(), "the command's escapee runs");
        match end {
            "eof" => {
                b.close_stdin();
                b.drain().await;
                b.wait().await;
            }
            _ => {
                b.child.start_kill().unwrap();
                let _ = tokio::time::timeout(WAIT, b.child.wait()).await;
            }
        }
        let gone = tokio::time::timeout(WAIT, async {
            while !pids_named(&name).is_empty() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        let left = pids_named(&name);
        for pid in &left {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        assert!(gone.is_ok(), "{end}: {left:?} outlived the bridge");
        let _ = std::fs::remove_dir_all(dir);
    }
}
