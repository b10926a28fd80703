//! The inbox over the per-user registry, through the real binaries: bridges around the mock
//! agent list themselves, `inbox` finds them (and those that start later), lists every
//! question tagged with its bridge, sends each answer to its own bridge only, and drops a
//! bridge that was killed; the registry is private, and the inbox's server checks tokens,
//! `Host` and `Origin` like a bridge's.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::common::control::{self, list_until, raw_http};
use crate::common::inbox::{registered_bridge, Inbox};
use crate::common::*;
use serde_json::{json, Value};

fn registry(name: &str) -> PathBuf {
    // A folder the registry creates itself (0700).
    temp_dir(name).join("registry")
}

/// The agent's report of how its approval ended, from the bridge's client side.
async fn approval(b: &mut Bridge) -> String {
    let (m, _) = b
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("approve: ")))
        .await;
    chunk_text(&m).unwrap().to_owned()
}

#[tokio::test]
async fn one_inbox_lists_every_bridge_and_answers_each_alone() {
    let reg = registry("inbox");
    let mut bridges = Vec::new();
    for _ in 0..3 {
        bridges.push(registered_bridge(&reg, &[]).await);
    }
    let inbox = Inbox::start(&["--registry", reg.to_str().unwrap()]).await;
    let c = inbox.http();
    // Every mock asks the same thing under the same ids: the inbox keeps them apart.
    for (i, b) in bridges.iter_mut().enumerate() {
        b.prompt(10, "mock-session-1", "approve").await;
        list_until(&c, i + 1).await;
    }
    let list = list_until(&c, 3).await;
    let ids: std::collections::BTreeSet<&str> = list
        .iter()
        .map(|q| q["bridge"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "{list:?}");
    for q in &list {
        assert_eq!(q["questionId"], "permission:0");
        assert_eq!(q["source"], "permission");
        assert_eq!(q["bridge"]["agent"][0], MOCK);
        assert!(q["bridge"]["pid"].as_u64().unwrap() > 0);
        assert!(
            q["bridge"].get("token").is_none(),
            "no token leaves a bridge"
        );
    }
    let bridges_list = control::call(&c, "bridges.list", json!({})).await.unwrap();
    assert_eq!(bridges_list.as_array().unwrap().len(), 3, "{bridges_list}");
    assert!(bridges_list
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["status"] == "connected" && b["pending"] == 1));

    // Without naming the bridge the answer is ambiguous, and refused.
    let err = control::call(
        &c,
        "questions.answer",
        json!({"sessionId":"mock-session-1","questionId":"permission:0","answers":[["allow"]]}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("several bridges"), "{err}");

    // Named, from the CLI pointed at the inbox: it reaches that agent only.
    let target = list[1]["bridge"]["id"].as_str().unwrap().to_owned();
    let (code, out) = control::cli(&[
        "answer",
        "--control",
        &inbox.url(),
        "--bridge",
        &target,
        "mock-session-1",
        "permission:0",
        "reject",
    ])
    .await;
    assert_eq!(code, 0, "{out}");
    let pid_of = |q: &Value| q["bridge"]["pid"].as_u64().unwrap() as u32;
    let answered = bridges
        .iter()
        .position(|b| b.pid() == pid_of(&list[1]))
        .unwrap();
    let report = approval(&mut bridges[answered]).await;
    assert!(report.contains(r#""optionId":"reject""#), "{report}");
    let left = list_until(&c, 2).await;
    assert!(left.iter().all(|q| q["bridge"]["id"] != target.as_str()));
    for (i, b) in bridges.iter_mut().enumerate() {
        if i != answered {
            let nothing = b.try_recv(std::time::Duration::from_millis(300)).await;
            assert!(
                nothing.is_none_or(|m| chunk_text(&m).is_none()),
                "bridge {i} heard nothing"
            );
        }
    }
    // An answer to a question that is no longer pending gets the bridge's own error.
    let err = control::call(
        &c,
        "questions.answer",
        json!({"bridge": target, "sessionId":"mock-session-1","questionId":"permission:0","answers":[["allow"]]}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("not pending"), "{err}");

    // A bridge started after the inbox is picked up.
    let mut late = registered_bridge(&reg, &[]).await;
    late.prompt(10, "mock-session-1", "approve").await;
    let list = list_until(&c, 3).await;
    let late_q = list
        .iter()
        .find(|q| pid_of(q) == late.pid())
        .expect("the late bridge's question is listed");
    control::call(
        &c,
        "questions.answer",
        json!({"bridge": late_q["bridge"]["id"], "sessionId":"mock-session-1",
            "questionId":"permission:0","answers":[["allow"]]}),
    )
    .await
    .unwrap();
    assert!(approval(&mut late).await.contains(r#""optionId":"allow""#));
    list_until(&c, 2).await;

    // A bridge killed outright: its entry is skipped and removed, its question leaves as
    // lost (nobody will answer it).
    let (_ws, mut sub) = control::subscribed(&inbox.base, &inbox.token).await;
    let victim = (answered + 1) % 3;
    let pid = bridges[victim].pid();
    let victim_id = list
        .iter()
        .find(|q| pid_of(q) == pid)
        .map(|q| q["bridge"]["id"].clone())
        .expect("the victim's question is listed");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let lost = resolved_of(&mut sub, &victim_id).await;
    assert_eq!(lost["by"], "lost", "{lost}");
    assert_eq!(lost["result"], json!({"status": "withdrawn"}), "{lost}");
    let left = list_until(&c, 1).await;
    assert_ne!(pid_of(&left[0]), pid);
    let entries = std::fs::read_dir(&reg).unwrap().count();
    let start = std::time::Instant::now();
    let mut now = entries;
    while now != 3 {
        assert!(start.elapsed() < WAIT, "the dead bridge's entry is removed");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        now = std::fs::read_dir(&reg).unwrap().count();
    }

    // A bridge that exits on its own ends its question first (the agent is told), so the
    // inbox reports that ending, not a lost question; and it removes its own entry.
    let mut late = late;
    late.prompt(11, "mock-session-1", "approve").await;
    let late_id = list_until(&c, 2)
        .await
        .into_iter()
        .find(|q| pid_of(q) == late.pid())
        .map(|q| q["bridge"]["id"].clone())
        .expect("the late bridge's question is listed");
    late.close_stdin();
    let ended = resolved_of(&mut sub, &late_id).await;
    assert_eq!(ended["by"], "disconnect", "{ended}");
    assert_eq!(ended["result"]["reason"], "client_disconnected", "{ended}");
    late.drain().await;
    late.wait().await;
    assert_eq!(std::fs::read_dir(&reg).unwrap().count(), 2);
    drop(inbox);
}

/// The next `resolved` event of bridge `bridge` among an inbox's events.
async fn resolved_of(
    sub: &mut jsonrpsee::core::client::Subscription<Value>,
    bridge: &Value,
) -> Value {
    loop {
        let e = tokio::time::timeout(WAIT, sub.next())
            .await
            .expect("an event in time")
            .expect("the subscription goes on")
            .expect("an event");
        if e["event"] == "resolved" && &e["bridge"] == bridge {
            return e;
        }
    }
}

#[tokio::test]
async fn the_registry_is_private_and_the_inbox_checks_like_a_bridge() {
    let reg = registry("inbox-sec");
    let b = registered_bridge(&reg, &[]).await;
    let meta = std::fs::metadata(&reg).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700, "the folder");
    let entries: Vec<_> = std::fs::read_dir(&reg).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1);
    let entry = entries[0].path();
    assert_eq!(
        std::fs::metadata(&entry).unwrap().mode() & 0o777,
        0o600,
        "the entry"
    );
    let e: Value = serde_json::from_str(&std::fs::read_to_string(&entry).unwrap()).unwrap();
    assert_eq!(e["pid"], b.pid());
    let (_, token) = control_of(&b).await;
    assert_eq!(e["token"], token);

    // A folder others may enter is not used.
    let open = temp_dir("inbox-open");
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let refused = registered_bridge(&open, &[]).await;
    refused
        .stderr_contains("cannot list this bridge in the registry")
        .await;
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);

    let inbox = Inbox::start(&["--registry", reg.to_str().unwrap()]).await;
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"questions.list","params":[]}"#;
    let post = |headers: String| {
        format!(
            "POST / HTTP/1.1\r\nHost: {{addr}}\r\nContent-Type: application/json\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n{list}",
            list.len()
        )
    };
    let t = &inbox.token;
    let (status, _) = raw_http(&inbox.base, &post(format!("Authorization: Bearer {t}\r\n"))).await;
    assert!(status.contains(" 200 "), "{status}");
    let (status, _) = raw_http(&inbox.base, &post(String::new())).await;
    assert!(status.contains(" 401 "), "{status}");
    let (status, _) = raw_http(
        &inbox.base,
        &post(format!(
            "Authorization: Bearer {t}\r\nOrigin: http://evil.example\r\n"
        )),
    )
    .await;
    assert!(status.contains(" 403 "), "{status}");
    let (status, _) = raw_http(
        &inbox.base,
        "GET / HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(status.contains(" 403 "), "{status}");
    // Its stderr is no terminal: the token is in its file, never on stderr.
    let said = inbox.stderr.lock().unwrap().clone();
    assert!(
        !said.contains(t.as_str()) && !said.contains("control token"),
        "{said}"
    );
}

/// The control server runs by default: a bridge started with no flags at all is in the
/// user's inbox, and its question can be answered there.
#[tokio::test]
async fn a_bridge_with_no_flags_is_in_the_inbox() {
    let reg = registry("defaults");
    let mut b = Bridge::spawn_env(
        &["--", MOCK],
        &[("ACP_QUESTION_BRIDGE_REGISTRY", reg.to_str().unwrap())],
    );
    control_of(&b).await;
    b.initialize(json!({})).await;
    b.new_session(1).await;
    let inbox = Inbox::start(&["--registry", reg.to_str().unwrap()]).await;
    let c = inbox.http();
    b.prompt(10, "mock-session-1", "approve").await;
    let listed = list_until(&c, 1).await.remove(0);
    control::call(
        &c,
        "questions.answer",
        json!({"bridge": listed["bridge"]["id"], "sessionId": listed["sessionId"],
            "questionId": listed["questionId"], "answers": [["allow"]]}),
    )
    .await
    .expect("answered in the inbox");
    assert!(approval(&mut b).await.contains(r#""optionId":"allow""#));
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

/// "Always allow" through the inbox (as the phone's page sends it): the inbox passes
/// `remember` on to the bridge that has the approval, which writes the rule to its user's
/// policy file and answers.
#[tokio::test]
async fn always_allow_through_the_inbox_reaches_the_bridge() {
    let reg = registry("inbox-always");
    let config = temp_dir("inbox-always-config");
    let mut b = Bridge::spawn_env(
        &["--control", "127.0.0.1:0", "--", MOCK],
        &[
            ("ACP_QUESTION_BRIDGE_REGISTRY", reg.to_str().unwrap()),
            ("XDG_CONFIG_HOME", config.to_str().unwrap()),
        ],
    );
    control_of(&b).await;
    b.initialize(json!({})).await;
    let sid = b.new_session(1).await;
    let inbox = Inbox::start(&["--registry", reg.to_str().unwrap()]).await;
    let c = inbox.http();
    b.prompt(10, &sid, "run make check").await;
    let list = list_until(&c, 1).await;
    let q = &list[0];
    assert_eq!(q["alwaysAllow"]["subject"], "make check", "{q}");
    let rule = q["alwaysAllow"]["rules"]["everyAgentEverywhere"]
        .as_str()
        .unwrap();
    let r = control::call(
        &c,
        "questions.answer",
        json!({"sessionId": sid, "questionId": q["questionId"], "answers": [["allow"]],
               "remember": {"agent": "every", "place": "everywhere"}}),
    )
    .await
    .unwrap();
    assert_eq!(r["status"], "answered", "{r}");
    let (m, _) = b
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("run: ")))
        .await;
    assert!(chunk_text(&m).unwrap().contains(r#""optionId":"allow""#));
    let written = std::fs::read_to_string(config.join("acp-question-bridge/policy.toml")).unwrap();
    assert!(written.contains(rule), "{written}");
}

/// The inbox's token answers every bridge's questions: its `--token-file` is kept only
/// beneath a folder every bridge's wall hides from its agent (the state folder), and refused
/// elsewhere, with where to keep it.
#[tokio::test]
async fn the_inbox_keeps_its_token_file_only_where_walls_hide_it() {
    let dir = temp_dir("inbox-token-file");
    let state = dir.join("state");
    let run = |file: std::path::PathBuf| {
        let mut cmd = tokio::process::Command::new(BRIDGE);
        cmd.args(["inbox", "--listen", "127.0.0.1:0", "--registry"])
            .arg(dir.join("registry"))
            .arg("--token-file")
            .arg(file)
            .env("XDG_STATE_HOME", &state)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        cmd
    };
    let out = tokio::time::timeout(WAIT, run(dir.join("token")).output())
        .await
        .expect("refused in time")
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains(&format!(
            "beneath {}",
            state.join("acp-question-bridge").display()
        )),
        "{said}"
    );
    let kept = state.join("acp-question-bridge/inbox-token");
    std::fs::create_dir_all(kept.parent().unwrap()).unwrap();
    let mut inbox = run(kept.clone()).spawn().unwrap();
    tokio::time::timeout(WAIT, async {
        while std::fs::read_to_string(&kept)
            .unwrap_or_default()
            .trim()
            .len()
            != 64
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the inbox writes its token there");
    let _ = inbox.kill().await;
    let _ = std::fs::remove_dir_all(&dir);
}
