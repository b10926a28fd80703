//! The Questions page in a real browser: headless Chromium (Debian's `chromium`) driven by
//! Playwright (`playwright-core` from npm, with `executablePath`), against the real bridge
//! and mock agent. The page shows the pending question, survives a reload, and the agent
//! receives exactly what was clicked and typed; the inbox's page over two bridges groups
//! their questions and sends each answer to its own agent. Screenshots are saved under
//! `target/tmp/browser/` (`docs/images/inbox-page.png` is the inbox's, copied from there).
//!
//! Missing pieces are installed on first use, once per machine under the tests' install lock
//! (`tests/it/common/install.rs`): `playwright-core` into `.cache/npm`, and Chromium with
//! apt-get when running as root (as CI does); otherwise the test fails and says what to
//! install. It is never skipped.

use crate::common;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use crate::common::push_service::{Browser, PushService};
use crate::common::*;
use serde_json::{json, Value};
use tokio::process::Command;

const PLAYWRIGHT: &str = "playwright-core";
const PLAYWRIGHT_VERSION: &str = "1.64.1";
/// The inbox's VAPID public key (base64url), as `GET /push/key` serves it: the one kept in
/// its state folder.
fn inbox_key(state: &std::path::Path) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let text = std::fs::read_to_string(state.join("vapid-key.txt")).unwrap();
    let key = p256::ecdsa::SigningKey::from_slice(&b64.decode(text.trim()).unwrap()).unwrap();
    b64.encode(key.verifying_key().to_encoded_point(false).as_bytes())
}

const BROWSER_RUN: Duration = Duration::from_secs(120);

/// The Chromium binary: $CHROMIUM, else Debian's, installed if missing (once per machine,
/// under the test install lock).
async fn chromium() -> PathBuf {
    if let Ok(p) = std::env::var("CHROMIUM") {
        return PathBuf::from(p);
    }
    install::debian_program("chromium", &["/usr/bin/chromium"]).await
}

/// Runs `tests/it/browser/<script>` against the page at `url` (saving screenshots in `out`,
/// with `more` arguments after); its step lines. `context` goes into the failure message.
async fn run_page_script(
    script: &str,
    url: &str,
    out: &std::path::Path,
    more: &[&str],
    context: &str,
) -> Vec<Value> {
    let browser = chromium().await;
    let playwright = npm_package(PLAYWRIGHT, PLAYWRIGHT_VERSION).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/browser")
        .join(script);
    let mut node = Command::new("node");
    node.arg(&script)
        .arg(url)
        .arg(out)
        .args(more)
        .env("PLAYWRIGHT_CORE", &playwright)
        .env("CHROMIUM", &browser)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let run = tokio::time::timeout(BROWSER_RUN, node.output())
        .await
        .expect("the browser run timed out")
        .expect("cannot run node");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "browser run failed: {}\nstdout:\n{stdout}\nstderr:\n{}\n{context}",
        run.status,
        String::from_utf8_lossy(&run.stderr),
    );
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test]
async fn questions_page_in_headless_chromium() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&out).unwrap();
    for f in ["questions-page.png", "questions-page-answered.png"] {
        let _ = std::fs::remove_file(out.join(f));
    }

    // A client without capabilities: the permission prompt cannot show the three-item
    // form, so the question waits on the page.
    let mut b = Bridge::mock(&["--control", "127.0.0.1:0", "--question-timeout", "10m"]);
    let (base, token) = control_of(&b).await;
    b.initialize(serde_json::json!({})).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "questions").await;
    b.stderr_contains("it waits on the control server").await;

    let steps = run_page_script(
        "questions_page.mjs",
        &format!("{base}#token={token}"),
        &out,
        &[],
        &format!("bridge:\n{}", b.stderr()),
    )
    .await;
    let names: Vec<&str> = steps.iter().filter_map(|s| s["step"].as_str()).collect();
    assert_eq!(
        names,
        ["shown", "reloaded", "filled", "answered", "empty", "done"]
    );
    let state = steps[3]["state"].as_str().unwrap();
    assert!(state.starts_with("Answered here"), "{state}");
    assert_eq!(steps[4]["text"], "No questions right now.");

    // The agent got exactly what was clicked and typed.
    let (m, _) = b
        .recv_until(|m| {
            chunk_text(m).is_some_and(|t| t.starts_with("answered:") || t.starts_with("rejected:"))
        })
        .await;
    assert_eq!(
        chunk_text(&m).unwrap(),
        r#"answered: [["SQLite"],["auth","search"],["Ship it on Friday"]]"#
    );
    for f in ["questions-page.png", "questions-page-answered.png"] {
        let png = std::fs::read(out.join(f)).unwrap_or_default();
        assert!(png.starts_with(b"\x89PNG"), "{f} is not a PNG");
    }
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

/// The inbox's page over two bridges (the Questions page in its grouped form): one agent's
/// approval approved, the other's rejected, and a reload shows the one question left.
#[tokio::test]
async fn inbox_page_in_headless_chromium() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&out).unwrap();
    let registry = temp_dir("browser-inbox").join("registry");
    let reg = registry.to_str().unwrap();
    let start = || {
        Bridge::spawn_env(
            &["--control", "127.0.0.1:0", "--", MOCK],
            &[("ACP_QUESTION_BRIDGE_REGISTRY", reg)],
        )
    };
    let (mut a, mut b) = (start(), start());
    for br in [&mut a, &mut b] {
        control_of(br).await;
        br.initialize(serde_json::json!({})).await;
        br.new_session(1).await;
    }
    b.new_session(2).await;
    a.prompt(10, "mock-session-1", "approve").await;
    b.prompt(10, "mock-session-1", "approve").await;
    b.prompt(11, "mock-session-2", "question").await;
    for (br, n) in [(&mut a, 1), (&mut b, 2)] {
        for _ in 0..n {
            br.recv_until(|m| m["method"] == "session/request_permission")
                .await;
        }
    }

    let inbox = common::inbox::Inbox::start(&["--registry", reg]).await;
    let url = inbox.url();

    let steps = run_page_script("inbox_page.mjs", &url, &out, &[], "").await;
    let names: Vec<&str> = steps.iter().filter_map(|s| s["step"].as_str()).collect();
    assert_eq!(names, ["shown", "approved", "rejected", "reloaded", "done"]);
    assert_eq!(steps[0]["groups"], 3, "one group per agent and session");
    assert_eq!(steps[0]["heading"], "Inbox");
    assert!(steps[0]["title"].as_str().unwrap().starts_with("(3) "));
    assert_eq!(steps[3]["left"], 1);
    assert_eq!(
        steps[3]["text"].as_str().unwrap(),
        "Which option?one tap answers"
    );
    assert!(steps[3]["title"].as_str().unwrap().starts_with("(1) "));

    // Each agent got what was clicked for its own question.
    let approved = steps[1]["bridge"].as_str().unwrap().to_owned();
    let report = |m: &Value| chunk_text(m).is_some_and(|t| t.starts_with("approve: "));
    let (ma, _) = a.recv_until(report).await;
    let (mb, _) = b.recv_until(report).await;
    let (ta, tb) = (chunk_text(&ma).unwrap(), chunk_text(&mb).unwrap());
    let (allowed, rejected) = if ta.contains(r#""optionId":"allow""#) {
        (ta, tb)
    } else {
        (tb, ta)
    };
    assert!(allowed.contains(r#""optionId":"allow""#), "{allowed}");
    assert!(rejected.contains(r#""optionId":"reject""#), "{rejected}");
    assert!(!approved.is_empty());
    for f in ["inbox-page.png", "inbox-page-after.png"] {
        let png = std::fs::read(out.join(f)).unwrap_or_default();
        assert!(png.starts_with(b"\x89PNG"), "{f} is not a PNG");
    }
    drop(inbox);
}

/// The inbox's remote listener on a phone: a touch screen of 390x844 over TLS pairs by the
/// printed link, then answers a Claude form and a tool approval from two agents by taps;
/// the page fits the screen with touch targets of 44 px or more, is installable (manifest,
/// service worker) and opens its shell offline. Screenshots: `phone-page.png`,
/// `phone-page-answered.png` (`docs/images/` has copies).
#[tokio::test]
async fn phone_page_over_tls_in_mobile_chromium() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&out).unwrap();
    let dir = temp_dir("browser-phone");
    let registry = dir.join("registry");
    let journal = dir.join("claude.jsonl");
    let mut claude =
        common::inbox::registered_bridge(&registry, &["--journal", journal.to_str().unwrap()])
            .await;
    let mut tool = common::inbox::registered_bridge(&registry, &[]).await;
    // What an agent does before it asks (a message, a plan, an edit), then a write to approve.
    let mut story = common::inbox::registered_bridge(&registry, &[]).await;
    story.prompt(10, "mock-session-1", "story").await;
    story
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    // Both are shown in the IDE too (Claude's form as yes/no prompts): the phone answers
    // first, and the IDE's copies are withdrawn.
    for (b, word) in [(&mut claude, "ask-claude"), (&mut tool, "approve")] {
        b.prompt(10, "mock-session-1", word).await;
        b.recv_until(|m| m["method"] == "session/request_permission")
            .await;
    }
    // Web Push: a push service of the test's own, which the phone's subscription names.
    let state = dir.join("state");
    let (mut service, inbox, link) = inbox_with_push(&dir, &registry, &state).await;
    let authority = service.authority();
    let keys = Browser::new(3);
    let endpoint = format!("https://{authority}/push/phone");
    let subscription = keys.subscription(&endpoint);

    // Once the page has subscribed, a new question from an agent started now is pushed.
    let pushed = async {
        tokio::time::timeout(BROWSER_RUN, async {
            while !std::fs::read_to_string(state.join("push.json"))
                .unwrap_or_default()
                .contains(&endpoint)
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .expect("the page subscribes");
        let mut late = common::inbox::registered_bridge(&registry, &[]).await;
        late.prompt(2, "mock-session-1", "question").await;
        let push = service.next().await;
        (late, keys.read(&push))
    };
    // Once the page has shown the story's context, its approval is answered from the CLI.
    let _ = std::fs::remove_file(out.join("phone-context.png"));
    let from_cli = async {
        tokio::time::timeout(BROWSER_RUN, async {
            while !out.join("phone-context.png").exists() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .expect("the page shows the story's context");
        let list = common::control::list(&inbox.http()).await;
        let q = list
            .iter()
            .find(|q| q["context"]["toolCall"]["title"] == "Write src/store.rs")
            .expect("the story's approval is listed");
        let (code, said) = common::control::cli(&[
            "answer",
            "--control",
            &inbox.url(),
            "--bridge",
            q["bridge"]["id"].as_str().unwrap(),
            "mock-session-1",
            q["questionId"].as_str().unwrap(),
            "allow",
        ])
        .await;
        assert_eq!(code, 0, "{said}");
    };
    let more = [subscription.as_str()];
    let (steps, (_late, payload), ()) = tokio::join!(
        run_page_script("phone_page.mjs", &link, &out, &more, ""),
        pushed,
        from_cli
    );
    assert_eq!(payload["body"], "Which option?", "{payload}");
    let names: Vec<&str> = steps.iter().filter_map(|s| s["step"].as_str()).collect();
    assert_eq!(
        names,
        [
            "paired",
            "layout",
            "installable",
            "push",
            "notified",
            "context",
            "undone",
            "answered",
            "history",
            "offline",
            "done"
        ]
    );
    assert_eq!(steps[0]["httpOnly"], true);
    assert_eq!(steps[0]["secure"], true);
    assert_eq!(steps[0]["sameSite"], "Strict");
    let layout = &steps[1];
    // The page subscribed with the inbox's VAPID key, for notifications the user sees.
    let (push, notified) = (&steps[3], &steps[4]);
    assert_eq!(push["state"], "push on", "{push}");
    assert_eq!(push["userVisibleOnly"], true, "{push}");
    let key = inbox_key(&state);
    assert_eq!(push["key"], key.as_str(), "{push}");
    // The service worker shows a push as a notification with its title, body and tag.
    assert_eq!(notified["title"], "acp-mock-agent · demo", "{notified}");
    assert_eq!(notified["body"], "Which option?", "{notified}");
    assert_eq!(notified["tag"], "[\"b\",\"s\",\"q\"]", "{notified}");
    assert!(
        layout["scrollWidth"].as_f64() <= layout["width"].as_f64(),
        "no sideways scrolling: {layout}"
    );
    assert!(layout["options"].as_f64().unwrap() >= 44.0, "{layout}");
    assert!(layout["buttons"].as_f64().unwrap() >= 44.0, "{layout}");
    assert_eq!(steps[2]["display"], "standalone");
    assert!(
        steps[2]["worker"]
            .as_str()
            .is_some_and(|w| w.ends_with("/sw.js")),
        "{}",
        steps[2]
    );
    // The story's approval with what the agent was doing, and its diff.
    let context = &steps[5];
    assert_eq!(context["said"], "Now the store itself.", "{context}");
    assert_eq!(context["plan"].as_array().unwrap().len(), 3, "{context}");
    assert!(
        context["files"]
            .as_str()
            .unwrap()
            .contains("/project/schema.sql"),
        "{context}"
    );
    assert_eq!(
        context["added"][0], "+ use rusqlite::Connection;",
        "{context}"
    );
    assert_eq!(
        context["removed"][0], "- use std::collections::HashMap;",
        "{context}"
    );
    // One tap, undone within 3 s: nothing was sent, and the buttons came back.
    assert_eq!(
        steps[6],
        serde_json::json!({"step": "undone", "enabled": true, "pending": true})
    );
    assert!(
        steps[7]["command"]
            .as_str()
            .unwrap()
            .contains("rm -rf build"),
        "the command is readable: {}",
        steps[7]
    );
    // The answer from the CLI is in the history, and says where it came from.
    let history = steps[8]["text"].as_str().unwrap();
    assert!(
        history.contains("Write src/store.rs") && history.contains("on the page or CLI"),
        "{history}"
    );
    // Offline, the page is the cached shell (it says "Inbox" only once the inbox answers).
    assert_eq!(steps[9]["shell"], "Questions");

    // Each agent got what was tapped, and the journal-facing events name the phone.
    let (m, _) = claude
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("ask-claude: ")))
        .await;
    assert_eq!(
        chunk_text(&m).unwrap(),
        r#"ask-claude: {"action":"accept","content":{"question_0":"Postgres"}}"#
    );
    let (m, _) = tool
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("approve: ")))
        .await;
    assert!(
        chunk_text(&m).unwrap().contains(r#""optionId":"allow""#),
        "{m}"
    );
    // Answered over the page's WebSocket, and attributed to the phone.
    let text = std::fs::read_to_string(&journal).unwrap();
    let resolved: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .find(|e: &Value| e["event"] == "resolved")
        .expect("a resolved event in the journal");
    assert_eq!(resolved["by"], "device:Test phone", "{resolved}");
    let (m, _) = story
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("story: ")))
        .await;
    assert!(
        chunk_text(&m).unwrap().contains(r#""optionId":"allow""#),
        "{m}"
    );
    for f in [
        "phone-page.png",
        "phone-page-answered.png",
        "phone-context.png",
        "phone-history.png",
    ] {
        let png = std::fs::read(out.join(f)).unwrap_or_default();
        assert!(png.starts_with(b"\x89PNG"), "{f} is not a PNG");
    }
    drop(inbox);
}

/// The approval policy on the page: the approvals it decided, from `bridge.status` when the
/// page opens and live after, and the warning of a bad edit (its last good rules in force).
#[tokio::test]
async fn policy_decisions_and_a_broken_file_on_the_page() {
    use tokio::io::AsyncBufReadExt;
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&out).unwrap();
    let dir = temp_dir("browser-policy");
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        "[[rule]]\nid = \"tests\"\ndecision = \"allow\"\ncommand = [\"cargo\", \"test\"]\n\n\
         [[rule]]\nid = \"no-push\"\ndecision = \"deny\"\ncommand = [\"git\", \"push\"]\njustification = \"push by hand\"\n",
    )
    .unwrap();
    let mut b = Bridge::mock(&[
        "--control",
        "127.0.0.1:0",
        "--policy",
        policy.to_str().unwrap(),
    ]);
    let (base, token) = control_of(&b).await;
    b.initialize(serde_json::json!({})).await;
    let sid = b.new_session(1).await;
    let decided = |m: &Value| chunk_text(m).is_some_and(|t| t.starts_with("run: "));
    b.prompt(2, &sid, "run cargo test").await;
    b.recv_until(decided).await;

    let browser = chromium().await;
    let playwright = npm_package(PLAYWRIGHT, PLAYWRIGHT_VERSION).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/browser/policy_page.mjs");
    let mut node = Command::new("node")
        .arg(&script)
        .arg(format!("{base}#token={token}"))
        .arg(&out)
        .env("PLAYWRIGHT_CORE", &playwright)
        .env("CHROMIUM", &browser)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node");
    let mut lines = tokio::io::BufReader::new(node.stdout.take().unwrap()).lines();
    let stderr = b.stderr.clone();
    let mut next_step = async || -> Value {
        loop {
            let line = tokio::time::timeout(BROWSER_RUN, lines.next_line())
                .await
                .expect("the page script goes on in time")
                .expect("reads")
                .unwrap_or_else(|| {
                    panic!(
                        "the page script ended early; bridge:\n{}",
                        stderr.lock().unwrap()
                    )
                });
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                return v;
            }
        }
    };
    let s = next_step().await;
    assert_eq!(s["step"], "listed", "{s}");
    assert_eq!(s["n"], 1);
    let text = s["text"].as_str().unwrap();
    assert!(
        text.contains("Allowed") && text.contains("cargo test") && text.contains("tests"),
        "{text}"
    );

    b.prompt(3, &sid, "run git push origin main").await;
    b.recv_until(decided).await;
    let s = next_step().await;
    assert_eq!(s["step"], "live", "{s}");
    let text = s["text"].as_str().unwrap();
    assert!(
        text.contains("Denied")
            && text.contains("git push origin main")
            && text.contains("push by hand"),
        "{text}"
    );
    assert_eq!(s["count"], "2");

    let tmp = dir.join("policy.toml.new");
    std::fs::write(&tmp, "[[rule]]\nid = \"tests\"\ndecision = \"sometimes\"\n").unwrap();
    std::fs::rename(&tmp, &policy).unwrap();
    b.prompt(4, &sid, "run cargo test").await;
    b.recv_until(decided).await;
    let s = next_step().await;
    assert_eq!(s["step"], "alert", "{s}");
    let text = s["text"].as_str().unwrap();
    assert!(
        text.contains("last good rules stay in force") && text.contains("sometimes"),
        "{text}"
    );
    assert_eq!(next_step().await["step"], "done");
    let status = tokio::time::timeout(BROWSER_RUN, node.wait())
        .await
        .expect("node ends")
        .unwrap();
    assert!(status.success());
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

/// "Always allow" from the page: the card shows the rule for the choice made, the button
/// answers and writes that rule to the user's file, and it answers the next approval of
/// another bridge.
#[tokio::test]
async fn always_allow_from_the_page_answers_another_bridges_next_approval() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&out).unwrap();
    let config = temp_dir("browser-always-config");
    let cwd = temp_dir("browser-always-project").canonicalize().unwrap();
    let start = |control: bool| {
        let mut argv: Vec<String> = Vec::new();
        if control {
            argv.extend(["--control".into(), "127.0.0.1:0".into()]);
        }
        argv.extend(["--".into(), MOCK.into()]);
        Bridge::spawn_env(&argv, &[("XDG_CONFIG_HOME", config.to_str().unwrap())])
    };
    let mut b = start(true);
    let (base, token) = control_of(&b).await;
    b.initialize(serde_json::json!({})).await;
    let r = b
        .call(
            1,
            "session/new",
            serde_json::json!({"cwd": cwd, "mcpServers": []}),
        )
        .await;
    let sid = r["result"]["sessionId"].as_str().unwrap().to_owned();
    b.prompt(2, &sid, "run cargo test --workspace").await;
    b.recv_until(|m| m["method"] == "session/request_permission")
        .await;

    let steps = run_page_script(
        "always_allow.mjs",
        &format!("{base}#token={token}"),
        &out,
        &[],
        &format!("bridge:\n{}", b.stderr()),
    )
    .await;
    let names: Vec<&str> = steps.iter().filter_map(|s| s["step"].as_str()).collect();
    assert_eq!(names, ["every", "preview", "answered", "done"]);
    let every = steps[0]["rule"].as_str().unwrap();
    assert!(!every.contains("agent ="), "{every}");
    let rule = steps[1]["rule"].as_str().unwrap();
    assert!(rule.contains("command = [\"cargo\", \"test\"]"), "{rule}");
    assert!(rule.contains("agent = [\"acp-mock-agent\"]"), "{rule}");
    assert!(
        rule.contains(&format!("cwd = [\"{}\"]", cwd.display())),
        "{rule}"
    );
    assert!(
        steps[2]["state"]
            .as_str()
            .unwrap()
            .starts_with("Answered here"),
        "{:?}",
        steps[2]
    );
    let (done, _) = b.response(serde_json::json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let written = std::fs::read_to_string(config.join("acp-question-bridge/policy.toml")).unwrap();
    assert!(
        written.contains(rule),
        "the rule shown is the rule written:\n{written}"
    );

    // Another bridge, in the same project: its next approval is answered by the rule.
    let mut other = start(false);
    other.initialize(serde_json::json!({})).await;
    let r = other
        .call(
            1,
            "session/new",
            serde_json::json!({"cwd": cwd, "mcpServers": []}),
        )
        .await;
    let sid = r["result"]["sessionId"].as_str().unwrap().to_owned();
    other.prompt(2, &sid, "run cargo test").await;
    let (done, seen) = other.response(serde_json::json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert!(
        seen.iter()
            .all(|m| m["method"] != "session/request_permission"),
        "{seen:?}"
    );
    let chat = chunks(&seen);
    assert!(
        chat.contains("Allowed by policy rule `always-cargo-test-"),
        "{chat}"
    );
    assert!(chat.contains("\"optionId\":\"allow\""), "{chat}");
    for mut bridge in [b, other] {
        bridge.close_stdin();
        bridge.drain().await;
        assert_eq!(bridge.wait().await, 0);
    }
}

/// `--linger`: the editor is gone (its front SIGKILLed with its group) while an approval
/// waits; the inbox's page lists it and approves it with one tap; the editor, back, loads the
/// session and the replay says what happened: the agent's report of the answer, where the
/// approval was answered, and how its turn ended. Screenshot: `held-session.png`.
#[tokio::test]
async fn a_held_sessions_approval_is_answered_on_the_inbox_page_with_no_editor() {
    use crate::linger::{
        folders, front, holder_control, is_permission, kill_editor, sessions_stop_all,
        start_session,
    };
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&out).unwrap();
    let (roster, cwd) = folders("browser-held");
    let mut first = front(&roster, &cwd, "5m");
    let (_, sid) = start_session(&mut first).await;
    first.prompt(10, &sid, "approve").await;
    first.recv_until(is_permission).await;
    kill_editor(&mut first).await;

    let inbox = common::inbox::Inbox::start(&["--registry", roster.to_str().unwrap()]).await;
    let (base, token) = holder_control(&roster);
    let holder_page = format!("{base}#token={token}");
    let steps = run_page_script("held_session.mjs", &inbox.url(), &out, &[&holder_page], "").await;
    let names: Vec<&str> = steps.iter().filter_map(|s| s["step"].as_str()).collect();
    assert_eq!(names, ["held", "shown", "approved", "done"], "{steps:?}");
    assert_eq!(
        steps[0]["shown"], "waiting for an editor (none has this session open)",
        "{steps:?}"
    );
    let state = steps[0]["state"].as_str().unwrap_or_default();
    assert!(
        state.starts_with("no editor attached, the agent is kept "),
        "{state}"
    );
    assert_eq!(
        steps[0]["sessions"],
        serde_json::json!([format!(
            "session {sid}: 1 pending · waiting for an editor (2 updates kept)"
        )]),
        "{steps:?}"
    );
    drop(inbox);

    let mut back = front(&roster, &cwd, "5m");
    back.initialize(serde_json::json!({})).await;
    back.send(
        &serde_json::json!({"jsonrpc":"2.0","id":1,"method":"session/load",
        "params":{"sessionId":sid,"cwd":cwd,"mcpServers":[]}}),
    )
    .await;
    let (loaded, replay) = back.response(serde_json::json!(1)).await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let said: Vec<&str> = replay.iter().filter_map(chunk_text).collect();
    assert!(
        said.iter()
            .any(|t| t.starts_with("approve: ") && t.contains(r#""optionId":"allow""#)),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|t| t.contains("While no editor was attached")
                && t.contains("was answered on the Questions page")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|t| t.contains("While no editor was attached, the turn ended: end_turn")),
        "{said:?}"
    );
    back.close_stdin();
    back.wait().await;
    sessions_stop_all(&roster).await;
}

/// An inbox with its remote listener, pushing through a push service of the test's own
/// (which the phone's subscription names): the service, the inbox, its pairing link. It
/// rings at once, whoever is at the desk: what is tested with it is the push.
async fn inbox_with_push(
    dir: &std::path::Path,
    registry: &std::path::Path,
    state: &std::path::Path,
) -> (PushService, common::inbox::Inbox, String) {
    let service = PushService::start("127.0.0.3", dir, false).await;
    let authority = service.authority();
    let (inbox, (base, code, _)) = common::inbox::Inbox::start_remote_with(
        registry,
        state,
        &[
            "--notify-after",
            "0",
            "--quiet-at-desk",
            "0",
            "--push-service",
            &authority,
            "--push-ca",
            service.ca.to_str().unwrap(),
        ],
    )
    .await;
    (service, inbox, format!("{base}pair#code={code}"))
}

/// Web Push with actions: the inbox's push of a tool approval carries "Allow once" and
/// "Deny" (never "Always allow"); a tap on "Allow once" is answered by the service worker,
/// as the paired device, with no page open; the agent gets the answer once, and a second tap
/// is refused politely in a second notification.
#[tokio::test]
async fn a_push_with_actions_is_answered_by_the_service_worker_with_no_page_open() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&out).unwrap();
    let dir = temp_dir("browser-push-actions");
    let registry = dir.join("registry");
    let mut tool = common::inbox::registered_bridge(&registry, &[]).await;
    let state = dir.join("state");
    let (mut service, inbox, link) = inbox_with_push(&dir, &registry, &state).await;
    let authority = service.authority();
    let keys = Browser::new(5);
    let endpoint = format!("https://{authority}/push/actions");
    let subscription = keys.subscription(&endpoint);
    let payload_file = dir.join("payload.json");
    // Once the page has subscribed, the agent asks; the push is handed to the page script.
    let pushed = async {
        tokio::time::timeout(BROWSER_RUN, async {
            while !std::fs::read_to_string(state.join("push.json"))
                .unwrap_or_default()
                .contains(&endpoint)
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .expect("the page subscribes");
        tool.prompt(10, "mock-session-1", "approve").await;
        let payload = keys.read(&service.next().await);
        std::fs::write(&payload_file, payload.to_string()).unwrap();
        payload
    };
    let more = [subscription.as_str(), payload_file.to_str().unwrap()];
    let (steps, payload) = tokio::join!(
        run_page_script("push_actions.mjs", &link, &out, &more, ""),
        pushed
    );
    let names: Vec<&str> = steps.iter().filter_map(|s| s["step"].as_str()).collect();
    assert_eq!(
        names,
        ["subscribed", "notified", "tapped", "refused", "done"],
        "{steps:?}"
    );
    assert_eq!(
        payload["actions"],
        json!([{"action": "a0", "title": "Allow once", "answers": [["allow"]]},
               {"action": "a1", "title": "Deny", "reject": true}]),
        "{payload}"
    );
    assert_eq!(
        steps[1]["actions"],
        json!(["Allow once", "Deny"]),
        "{steps:?}"
    );
    assert!(
        steps[1]["url"]
            .as_str()
            .is_some_and(|u| u.starts_with("/?focus=")),
        "a tap opens the question: {steps:?}"
    );
    assert_eq!(steps[2]["said"], Value::Null, "answered: {steps:?}");
    assert!(
        steps[3]["body"]
            .as_str()
            .is_some_and(|b| b.contains("already answered")),
        "{steps:?}"
    );
    // The agent got the answer once, from the device.
    let (m, _) = tool
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("approve: ")))
        .await;
    assert!(chunk_text(&m).unwrap().contains("allow"), "{m}");
    tool.close_stdin();
    let rest = tool.drain().await;
    assert!(
        !rest.iter().any(|l| l.contains("approve: ")),
        "answered once: {rest:?}"
    );
    drop(inbox);
}
