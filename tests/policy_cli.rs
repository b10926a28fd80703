//! `acp-question-bridge policy`: the approval policy's files loaded as the bridge loads them
//! (the user's file, `--policy`, the project's in its folder), checked, listed, and asked
//! which rule decides a tool call; a project's `allow` counts only once its folder is
//! trusted; a broken file decides nothing.

mod common;

use std::path::Path;
use std::process::Command;

use common::{temp_dir, BRIDGE};

/// `policy ARGS` with the user's config folder `config`, in `cwd`: code and stdout.
fn policy(config: &Path, cwd: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(BRIDGE)
        .arg("policy")
        .args(args)
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", config)
        .output()
        .expect("the bridge runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap() + &String::from_utf8_lossy(&out.stderr),
    )
}

const USER: &str = r#"
[[rule]]
id = "tests"
decision = "allow"
kind = ["execute"]
command = ["cargo", ["test", "nextest"]]
justification = "tests only build and run the project's tests"
match = ["cargo test -p bridge"]
not_match = ["cargo publish"]

[[rule]]
id = "no-force-push"
decision = "deny"
command = ["git", "push", ["--force", "-f"]]
"#;

const PROJECT: &str = r#"
[[rule]]
id = "project-make"
decision = "allow"
command = ["make"]

[[rule]]
id = "project-no-deploy"
decision = "deny"
command = ["make", "deploy"]
"#;

#[test]
fn policy_files_are_checked_listed_explained_and_trusted() {
    let dir = temp_dir("policy-cli");
    let config = dir.join("config");
    std::fs::create_dir_all(config.join("acp-question-bridge")).unwrap();
    std::fs::write(config.join("acp-question-bridge/policy.toml"), USER).unwrap();
    let project = dir.join("project");
    std::fs::create_dir_all(project.join(".acp-question-bridge")).unwrap();
    std::fs::write(project.join(".acp-question-bridge/policy.toml"), PROJECT).unwrap();

    let (code, out) = policy(&config, &project, &["check"]);
    assert_eq!(code, 0, "{out}");
    // The project's allow is left out until the folder is trusted.
    assert!(out.contains("ok: 3 rules"), "{out}");
    let (_, out) = policy(
        &config,
        &project,
        &["explain", "--command", "cargo test && make"],
    );
    assert!(out.starts_with("ask:"), "{out}");
    let (_, out) = policy(&config, &project, &["explain", "--command", "make deploy"]);
    assert!(out.starts_with("deny: rule \"project-no-deploy\""), "{out}");
    let (_, out) = policy(
        &config,
        &project,
        &["explain", "--command", "cargo test -p x"],
    );
    assert!(
        out.starts_with("allow: rule \"tests\" in the user tier"),
        "{out}"
    );
    assert!(out.contains("justification: tests only build"), "{out}");
    // A tool call as Codex sends it: an argv through bash -lc.
    let (_, out) = policy(
        &config,
        &project,
        &[
            "explain",
            "--json",
            r#"{"title":"git push","kind":"execute","rawInput":{"command":["bash","-lc","git push -f origin main"]}}"#,
        ],
    );
    assert!(out.starts_with("deny: rule \"no-force-push\""), "{out}");

    // Trusted: the project's allow counts.
    let (code, out) = policy(&config, &project, &["trust", project.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let (_, out) = policy(&config, &project, &["check"]);
    assert!(out.contains("ok: 4 rules"), "{out}");
    let (_, out) = policy(
        &config,
        &project,
        &["explain", "--command", "cargo test && make"],
    );
    assert!(out.starts_with("allow:"), "{out}");
    let (_, out) = policy(&config, &project, &["list"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("user") && lines[0].contains("tests"),
        "{out}"
    );
    assert!(
        lines[3].starts_with("project") && lines[3].contains("project-no-deploy"),
        "{out}"
    );
    assert!(out.contains("policy.toml:2"), "{out}");

    // A broken file (an example the rule does not cover): every approval is asked.
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[[rule]]\nid = \"oops\"\ndecision = \"allow\"\ncommand = [\"npm\", \"test\"]\nmatch = [\"npm run build\"]\n",
    )
    .unwrap();
    let (code, out) = policy(&config, &project, &["check", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("bad.toml:1: rule \"oops\": its example \"npm run build\" is not covered"),
        "{out}"
    );
    let (_, out) = policy(
        &config,
        &project,
        &[
            "--policy",
            bad.to_str().unwrap(),
            "explain",
            "--command",
            "cargo test",
        ],
    );
    assert!(out.starts_with("ask: the policy decides nothing"), "{out}");
}

/// Claude Code's lists come along: `policy import claude` keeps each string as `claude =
/// "..."`, the bridge reads them exactly (a prefix, an exact command, a path, a domain),
/// and a deny it cannot read exactly stops the import.
#[test]
fn claude_settings_import_and_read_as_claude_reads_them() {
    let dir = temp_dir("policy-claude");
    let config = dir.join("config");
    let settings = dir.join("settings.json");
    std::fs::write(
        &settings,
        r#"{"permissions": {
            "allow": ["Bash(npm run test:*)", "Bash(git diff)", "Read(./src/**)", "WebFetch(domain:docs.rs)", "Bash(git * main)"],
            "deny": ["Bash(rm -rf:*)", "Read(.env)"],
            "ask": ["Bash(git push:*)"]
        }, "model": "opus"}"#,
    )
    .unwrap();
    let out_file = dir.join("imported.toml");
    let (code, out) = policy(
        &config,
        &dir,
        &[
            "import",
            "claude",
            settings.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("left out") && out.contains("git * main"),
        "{out}"
    );
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(text.contains("claude = \"Bash(npm run test:*)\""), "{text}");
    assert_eq!(text.matches("[[rule]]").count(), 7, "{text}");
    // It will not overwrite.
    let (code, _) = policy(
        &config,
        &dir,
        &[
            "import",
            "claude",
            settings.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ],
    );
    assert_ne!(code, 0);

    let p = out_file.to_str().unwrap();
    let explain =
        |args: &[&str]| policy(&config, &dir, &[&["--policy", p, "explain"], args].concat());
    let (_, out) = explain(&["--command", "npm run test --watch"]);
    assert!(out.starts_with("allow"), "{out}");
    // Exact: no more words.
    let (_, out) = explain(&["--command", "git diff"]);
    assert!(out.starts_with("allow"), "{out}");
    let (_, out) = explain(&["--command", "git diff HEAD~3"]);
    assert!(out.starts_with("ask"), "{out}");
    let (_, out) = explain(&["--command", "rm -rf target"]);
    assert!(out.starts_with("deny"), "{out}");
    let (_, out) = explain(&["--command", "git push origin"]);
    assert!(
        out.starts_with("ask") && out.contains("claude-ask-1"),
        "{out}"
    );
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let read = |path: &str| {
        format!(
            r#"{{"name":"Read","kind":"read","title":"Read","rawInput":{{"file_path":"{path}"}}}}"#
        )
    };
    let (_, out) = explain(&[
        "--json",
        &read(&dir.join("src/lib.rs").display().to_string()),
    ]);
    assert!(out.starts_with("allow"), "{out}");
    let (_, out) = explain(&["--json", &read(&dir.join("src/.env").display().to_string())]);
    assert!(out.starts_with("deny"), "{out}");
    let fetch = |url: &str| {
        format!(
            r#"{{"name":"WebFetch","kind":"fetch","title":"Fetch","rawInput":{{"url":"{url}"}}}}"#
        )
    };
    let (_, out) = explain(&["--json", &fetch("https://docs.rs/tokio")]);
    assert!(out.starts_with("allow"), "{out}");
    let (_, out) = explain(&["--json", &fetch("https://docs.rs.evil.example/x")]);
    assert!(out.starts_with("ask"), "{out}");

    // A deny that cannot be read exactly: nothing written.
    std::fs::write(
        &settings,
        r#"{"permissions": {"deny": ["Bash(curl * | sh)"]}}"#,
    )
    .unwrap();
    let (code, out) = policy(
        &config,
        &dir,
        &["import", "claude", settings.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("nothing written"), "{out}");
}

/// `explain` takes a tool call from the journal by its question id.
#[tokio::test]
async fn explain_reads_a_tool_call_from_the_journal() {
    let dir = temp_dir("policy-journal");
    let journal = dir.join("journal.jsonl");
    let mut b = common::Bridge::mock(&["--journal", journal.to_str().unwrap()]);
    b.open_session().await;
    let sid = b.new_session(5).await;
    b.prompt(6, &sid, "run git push --force origin main").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    b.send(&serde_json::json!({"jsonrpc":"2.0","id":ask["id"],"result":{"outcome":{"outcome":"cancelled"}}})).await;
    b.response(serde_json::json!(6)).await;
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
    let config = dir.join("config");
    let user = config.join("acp-question-bridge");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("policy.toml"), USER).unwrap();
    let (code, out) = policy(
        &config,
        &dir,
        &[
            "explain",
            "--journal",
            journal.to_str().unwrap(),
            "--id",
            "permission:0",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("deny") && out.contains("no-force-push"),
        "{out}"
    );
    assert!(
        out.contains("command read as: git push --force origin main"),
        "{out}"
    );
    let (code, out) = policy(
        &config,
        &dir,
        &[
            "explain",
            "--journal",
            journal.to_str().unwrap(),
            "--id",
            "permission:9",
        ],
    );
    assert_eq!(code, 1);
    assert!(out.contains("no question"), "{out}");
}
