//! `acp-question-bridge doctor`: with a bridge, an inbox with its remote listener, a paired
//! phone and a NATS server that answers, every line says what it finds; the certificate the
//! inbox made is called out as one a phone does not trust, with what to do; and on a bare
//! setting (nothing on PATH, nothing running) the failing lines say how to fix them.

use std::path::Path;
use std::process::Stdio;

use crate::common::inbox::{registered_bridge, Inbox};
use crate::common::phone::Phone;
use crate::common::*;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// `doctor ARGS` with this registry and PATH: exit code and stdout.
async fn doctor(registry: &Path, path: &str, args: &[&str]) -> (i32, String) {
    let out = tokio::time::timeout(
        WAIT,
        Command::new(BRIDGE)
            .arg("doctor")
            .args(args)
            .env(REGISTRY_ENV, registry)
            .env("PATH", path)
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("doctor ran too long")
    .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

/// The line of `out` that starts with `mark` and holds `what`.
fn line<'a>(out: &'a str, mark: &str, what: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(mark) && l.contains(what))
        .unwrap_or_else(|| panic!("no {mark} line with {what:?} in:\n{out}"))
}

#[tokio::test]
async fn doctor_reports_what_runs_and_what_to_fix() {
    let dir = temp_dir("doctor");
    let reg = dir.join("registry");
    let state = dir.join("state");
    // An agent command on PATH (a stand-in), and the system's tools.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    crate::common::write_executable(&bin.join("codex-acp"), "#!/bin/sh\n");
    let path = format!("{}:/usr/bin:/bin", bin.display());

    let mut bridge = registered_bridge(&reg, &[]).await;
    let (inbox, (base, code, fingerprint)) = Inbox::start_remote(&reg, &state).await;
    let mut phone = Phone::new(&base, &fingerprint);
    assert_eq!(phone.pair(&code, "pixel").await.status, 200);
    // A NATS server's greeting, on a port of the test's.
    let nats = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nats_url = format!("nats://{}", nats.local_addr().unwrap());
    let greeter = tokio::spawn(async move {
        while let Ok((mut c, _)) = nats.accept().await {
            let _ = c.write_all(b"INFO {\"server_id\":\"test\"}\r\n").await;
        }
    });

    let (code, out) = doctor(
        &reg,
        &path,
        &["--state-dir", state.to_str().unwrap(), "--nats", &nats_url],
    )
    .await;
    line(
        &out,
        "[ok]",
        &format!("acp-question-bridge {}", env!("CARGO_PKG_VERSION")),
    );
    line(&out, "[ok]", "agents on PATH: codex-acp");
    line(&out, "[ok]", "1 running bridge");
    assert!(
        out.contains(&format!("pid {}: acp-mock-agent", bridge.pid())),
        "{out}"
    );
    // Every inbox running on the machine is listed, so ours among those of the tests that
    // run beside this one.
    let running = line(&out, "[ok]", "inbox: running (pid ");
    let pids = running
        .split_once("(pid ")
        .and_then(|(_, p)| p.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{running}"));
    let ours = inbox.child.id().unwrap().to_string();
    assert!(pids.split(", ").any(|p| p == ours), "{out}");
    line(&out, "[ok]", &format!("remote listener: {base} answers"));
    line(&out, "[ok]", "paired devices: pixel");
    line(&out, "[!!]", "push:");
    assert!(
        out.contains("fix: give the inbox a certificate a phone trusts"),
        "{out}"
    );
    line(&out, "[ok]", &format!("NATS: {nats_url} answers"));
    assert_eq!(code, 1, "the push check failed:\n{out}");

    // NATS gone, the inbox gone: said so, with what to do.
    greeter.abort();
    drop(inbox);
    tokio::time::timeout(WAIT, async {
        while reachable(&base) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the inbox stopped");
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (code, out) = doctor(
        &reg,
        &path,
        &[
            "--state-dir",
            state.to_str().unwrap(),
            "--nats",
            &format!("nats://{closed}"),
        ],
    )
    .await;
    assert_eq!(code, 1);
    line(&out, "[!!]", "NATS:");
    assert!(out.contains("fix: start the server"), "{out}");
    bridge.close_stdin();
    bridge.wait().await;

    // A bare setting: nothing on PATH, no registry, no state.
    let bare = dir.join("bare");
    let (code, out) = doctor(
        &bare.join("registry"),
        bare.join("empty-bin").to_str().unwrap(),
        &["--state-dir", bare.join("state").to_str().unwrap()],
    )
    .await;
    assert_eq!(code, 1);
    line(&out, "[!!]", "agents on PATH: none");
    line(&out, "[--]", "not made yet");
    line(&out, "[--]", "paired devices: none");
    line(&out, "[--]", "NATS: not checked");
    assert!(!bare.join("state").exists(), "doctor made the state folder");
    assert!(
        !bare.join("registry").exists(),
        "doctor made the registry folder"
    );
}

/// Whether `https://HOST:PORT/`'s port accepts a connection.
fn reachable(base: &str) -> bool {
    let authority = base.trim_start_matches("https://").trim_end_matches('/');
    std::net::TcpStream::connect(authority).is_ok()
}

/// A broken policy file (given with `--policy`, as a bridge would read it) fails the
/// checklist with its file and line; a good one is listed.
#[tokio::test]
async fn doctor_checks_the_policy_files_a_bridge_would_read() {
    let dir = temp_dir("doctor-policy");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[[rule]]\nid = 1\n").unwrap();
    let good = dir.join("good.toml");
    std::fs::write(
        &good,
        "[[rule]]\nid = \"git\"\ndecision = \"allow\"\ncommand = [\"git\", \"status\"]\n",
    )
    .unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    let reg = dir.join("registry");
    let (code, out) = doctor(&reg, &path, &["--policy", bad.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{out}");
    let l = line(&out, "[!!]", "approval policy is broken");
    assert!(l.contains(&format!("{}:2", bad.display())), "{l}");
    let (_, out) = doctor(&reg, &path, &["--policy", good.to_str().unwrap()]).await;
    line(&out, "[ok]", &good.display().to_string());
    let _ = std::fs::remove_dir_all(&dir);
}

/// An inbox that reads another folder of bridges (`--registry`), or follows NATS, is not
/// the inbox of this registry: `doctor` does not report it as running.
#[tokio::test]
async fn doctor_reports_only_an_inbox_of_its_own_registry() {
    let dir = temp_dir("doctor-inbox-registry");
    let (mine, other) = (dir.join("mine"), dir.join("other"));
    for d in [&mine, &other] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let elsewhere = Inbox::start(&["--registry", other.to_str().unwrap()]).await;
    let pid = elsewhere.child.id().unwrap();
    // The pids on the checklist's inbox line.
    let inboxes = |out: &str| -> Vec<u32> {
        let l = out.lines().find(|l| l.contains("] inbox: ")).unwrap_or("");
        l.split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect()
    };
    let (_, out) = doctor(&mine, &path, &[]).await;
    assert!(inboxes(&out).is_empty(), "{out}");
    let here = Inbox::start(&["--registry", mine.to_str().unwrap()]).await;
    let (_, out) = doctor(&mine, &path, &[]).await;
    assert_eq!(inboxes(&out), [here.child.id().unwrap()], "{out}");
    assert_ne!(pid, here.child.id().unwrap());
    drop((elsewhere, here));
    let _ = std::fs::remove_dir_all(&dir);
}

/// With no agent installed and `npx` on PATH, agents would run by package (`--agent ID`):
/// `doctor` checks the agent registry, and says so when it cannot be reached and nothing
/// of it is cached; a registry given as a file is read.
#[tokio::test]
async fn doctor_checks_the_agent_registry_when_agents_would_run_by_package() {
    let dir = temp_dir("doctor-agent-registry");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    crate::common::write_executable(&bin.join("npx"), "#!/bin/sh\n");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/registry.json", closed.local_addr().unwrap());
    drop(closed);
    let reg = dir.join("registry");
    let (code, out) = doctor(&reg, &path, &["--agent-registry", &url]).await;
    line(&out, "[ok]", "can run agents by package");
    let said = line(&out, "[!!]", "agent registry (--agent ID)");
    assert!(said.contains("cannot be reached"), "{said}");
    assert!(out.contains("--agent-registry FILE"), "{out}");
    assert_eq!(code, 1, "{out}");
    // The same, given as a file.
    let file = dir.join("registry.json");
    std::fs::write(&file, r#"{"version":"1.0.0","agents":[]}"#).unwrap();
    let (_, out) = doctor(&reg, &path, &["--agent-registry", file.to_str().unwrap()]).await;
    line(
        &out,
        "[ok]",
        &format!("agent registry (--agent ID): {}: 0 agents", file.display()),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `doctor` reads the entries `setup` writes into the clients' configurations (Zed's
/// settings, JetBrains' `acp.json`), comments and all: the program each runs, and its agent.
#[tokio::test]
async fn doctor_checks_the_bridges_entries_in_the_clients_configurations() {
    let dir = temp_dir("doctor-clients");
    let home = dir.join("home");
    let bin = dir.join("bin");
    std::fs::create_dir_all(home.join(".config/zed")).unwrap();
    std::fs::create_dir_all(home.join(".jetbrains")).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    crate::common::write_executable(&bin.join("codex-acp"), "#!/bin/sh\n");
    let bridge = std::fs::canonicalize(BRIDGE).unwrap();
    let b = bridge.display();
    std::fs::write(
        home.join(".config/zed/settings.json"),
        format!(
            r#"{{
  // the user's own comment
  "agent_servers": {{
    "good": {{"type": "custom", "command": "{b}", "args": ["--", "codex-acp"], "env": {{}}}},
    "gone": {{"type": "custom", "command": "/nowhere/acp-question-bridge", "args": ["--", "codex-acp"]}},
    "no-agent": {{"type": "custom", "command": "{b}", "args": []}},
    "other": {{"type": "custom", "command": "codex-acp", "args": []}},
  }},
}}"#
        ),
    )
    .unwrap();
    std::fs::write(
        home.join(".jetbrains/acp.json"),
        format!(
            r#"{{"agent_servers": {{"jb": {{"command": "{b}", "args": ["--", "missing-acp"]}}}}}}"#
        ),
    )
    .unwrap();
    let out = tokio::time::timeout(
        WAIT,
        Command::new(BRIDGE)
            .arg("doctor")
            .env(REGISTRY_ENV, dir.join("registry"))
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("doctor ran too long")
    .unwrap();
    let out = String::from_utf8(out.stdout).unwrap();
    line(&out, "[ok]", &format!("agent \"good\": {b} -- codex-acp"));
    line(
        &out,
        "[!!]",
        "agent \"gone\": /nowhere/acp-question-bridge is not there",
    );
    line(
        &out,
        "[!!]",
        "agent \"no-agent\": no agent after -- and no --agent",
    );
    line(&out, "[!!]", "agent \"jb\": runs");
    assert!(!out.contains("\"other\""), "not the bridge's: {out}");
    let _ = std::fs::remove_dir_all(&dir);
}
