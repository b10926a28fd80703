//! `acp-question-bridge policy`: the approval policy's files loaded as the bridge loads them
//! (the user's file, `--policy`, the project's in its folder), checked, listed, and asked
//! which rule decides a tool call; a project's `allow` counts only once its folder is
//! trusted; a broken file decides nothing.

use crate::common;
use std::path::Path;
use std::process::Command;

use crate::common::{temp_dir, BRIDGE};

/// `policy ARGS` with the user's config folder `config`, in `cwd`: code and stdout.
fn policy(config: &Path, cwd: &Path, args: &[&str]) -> (i32, String) {
    let out = crate::common::output_within(
        Command::new(BRIDGE)
            .arg("policy")
            .args(args)
            .current_dir(cwd)
            .env("XDG_CONFIG_HOME", config),
    );
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

/// Trust is for a content (finding 5b), and a project file never weakens the user's
/// (finding 6): `trust` prints the hash it keeps; after a change `check`, `list` and
/// `explain` say the project's allows are left out and why; a project file that reuses a
/// user rule id is ignored, `check` exits 1, and the user's deny still decides.
#[test]
fn policy_says_what_of_a_project_file_is_left_out_and_why() {
    let dir = temp_dir("policy-cli-left");
    let config = dir.join("config");
    std::fs::create_dir_all(config.join("acp-question-bridge")).unwrap();
    std::fs::write(config.join("acp-question-bridge/policy.toml"), USER).unwrap();
    let project = dir.join("project");
    let file = project.join(".acp-question-bridge/policy.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, PROJECT).unwrap();
    let canonical = project.canonicalize().unwrap();

    // Nothing to trust: no project file.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, out) = policy(&config, &project, &["trust", empty.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");

    let (code, out) = policy(&config, &project, &["trust", project.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let folders =
        std::fs::read_to_string(config.join("acp-question-bridge/trusted-folders")).unwrap();
    let hash = folders
        .strip_prefix("sha256:")
        .and_then(|l| l.split_once('\t'))
        .map(|(h, d)| {
            assert_eq!(d, format!("{}\n", canonical.display()));
            h.to_owned()
        })
        .unwrap_or_else(|| panic!("{folders:?}"));
    assert_eq!(hash.len(), 64);
    assert!(out.contains(&format!("sha256:{hash}")), "{out}");
    assert!(out.contains("1 allow rules"), "{out}");
    let (_, out) = policy(&config, &project, &["check"]);
    assert!(out.contains("ok: 4 rules"), "{out}");
    assert!(!out.contains("left out"), "{out}");

    // Changed (a pull): its allow is left out, and each command says why.
    std::fs::write(&file, format!("{PROJECT}\n# pulled\n")).unwrap();
    let (code, out) = policy(&config, &project, &["check"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok: 3 rules"), "{out}");
    assert!(
        out.contains("project allow rules left out:") && out.contains("changed since"),
        "{out}"
    );
    let (_, out) = policy(&config, &project, &["list"]);
    assert!(
        out.contains("changed since its folder was trusted"),
        "{out}"
    );
    let (_, out) = policy(&config, &project, &["explain", "--command", "make"]);
    assert!(out.starts_with("ask:"), "{out}");
    assert!(out.contains("policy trust"), "{out}");

    // An old line, with only the folder: trusted again, it counts.
    std::fs::write(
        config.join("acp-question-bridge/trusted-folders"),
        format!("{}\n", canonical.display()),
    )
    .unwrap();
    let (_, out) = policy(&config, &project, &["check"]);
    assert!(
        out.contains("ok: 3 rules") && out.contains("no hash"),
        "{out}"
    );
    let (code, _) = policy(&config, &project, &["trust", project.to_str().unwrap()]);
    assert_eq!(code, 0);
    let (_, out) = policy(&config, &project, &["check"]);
    assert!(out.contains("ok: 4 rules"), "{out}");

    // A user rule id reused: the project file is ignored, the user's deny decides.
    std::fs::write(
        &file,
        "[[rule]]\nid = \"no-force-push\"\ndecision = \"allow\"\ncommand = [\"git\", \"push\"]\n",
    )
    .unwrap();
    let (code, out) = policy(&config, &project, &["check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("project file ignored:"), "{out}");
    assert!(
        out.contains("ok: 2 rules"),
        "the user's rules are in force: {out}"
    );
    let (_, out) = policy(&config, &project, &["explain", "--command", "git push -f"]);
    assert!(
        out.starts_with("deny: rule \"no-force-push\" in the user tier"),
        "{out}"
    );
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

/// Findings 1 and 2 of the review of 2f081bd (issue 40), as `policy explain` shows them: a
/// comment that hides a line and `$(…)` inside `${…}` are not plain, so they are asked, and
/// the command is shown as written, escaped.
#[test]
fn finding_1_and_2_explain_asks_for_a_hidden_line_and_a_nested_substitution() {
    let dir = temp_dir("policy-cli-findings");
    let config = dir.join("config");
    std::fs::create_dir_all(config.join("acp-question-bridge")).unwrap();
    std::fs::write(config.join("acp-question-bridge/policy.toml"), USER).unwrap();
    for (cmd, why) in [
        ("cargo test # '\ntouch x\n#'", "a comment"),
        ("cargo test #\\\ntouch x", "a comment"),
        ("cargo test ${PATH:'a[$(touch x)]'}", "not plain"),
    ] {
        let (code, out) = policy(&config, &dir, &["explain", "--command", cmd]);
        assert_eq!(code, 0, "{out}");
        assert!(out.starts_with("ask: "), "{cmd:?}: {out}");
        assert!(out.contains(why), "{cmd:?}: {out}");
        let read_as = out
            .lines()
            .find_map(|l| l.strip_prefix("command read as: "))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(!read_as.contains('\n'), "{read_as:?}");
        assert!(read_as.contains("touch x"), "{read_as:?}");
    }
    // A plain command is still allowed, and shown as parsed.
    let (_, out) = policy(
        &config,
        &dir,
        &[
            "explain",
            "--command",
            "cargo test -p 'a b' && cargo nextest run",
        ],
    );
    assert!(out.starts_with("allow: "), "{out}");
    assert!(
        out.contains("command read as: cargo test -p 'a b' && cargo nextest run"),
        "{out}"
    );
}

/// Finding 4: a link before `..` is followed as the OS follows it. With `src/lnk ->
/// ../secrets/sub`, `src/lnk/../key` is `secrets/key` (which `cat` shows), so a deny of
/// `secrets/**` denies it, through the real binary: `explain --json TOOLCALL --cwd DIR
/// --policy FILE`.
#[test]
fn finding_4_explain_follows_a_link_before_dotdot_as_the_os_does() {
    let dir = temp_dir("policy-link").canonicalize().unwrap();
    let config = dir.join("config");
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::create_dir_all(project.join("secrets/sub")).unwrap();
    std::fs::write(project.join("secrets/key"), "the secret\n").unwrap();
    std::fs::write(project.join("src/key"), "not the secret\n").unwrap();
    std::os::unix::fs::symlink("../secrets/sub", project.join("src/lnk")).unwrap();
    let file = dir.join("policy.toml");
    std::fs::write(
        &file,
        "[[rule]]\nid = \"read-project\"\ndecision = \"allow\"\nkind = [\"read\", \"search\"]\npaths = [\"**\"]\n\n\
         [[rule]]\nid = \"no-secrets\"\ndecision = \"deny\"\npaths = [\"secrets/**\"]\n",
    )
    .unwrap();
    // What the OS opens.
    let cat = Command::new("cat")
        .arg("src/lnk/../key")
        .current_dir(&project)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&cat.stdout), "the secret\n");
    let explain = |path: &str| {
        let tool_call = format!(
            r#"{{"name":"Read","kind":"read","title":"Read {path}","rawInput":{{"file_path":"{path}"}}}}"#
        );
        policy(
            &config,
            &dir,
            &[
                "explain",
                "--json",
                &tool_call,
                "--cwd",
                project.to_str().unwrap(),
                "--policy",
                file.to_str().unwrap(),
            ],
        )
    };
    let (code, out) = explain("src/lnk/../key");
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("deny: rule \"no-secrets\""), "{out}");
    let (_, out) = explain("src/key");
    assert!(out.starts_with("allow: rule \"read-project\""), "{out}");
    // A Grep of the denied folder itself, and a search above it.
    let search = |path: &str| {
        let tool_call = format!(
            r#"{{"name":"Grep","kind":"search","title":"Grep","rawInput":{{"path":"{path}","pattern":"x"}}}}"#
        );
        policy(
            &config,
            &dir,
            &[
                "--cwd",
                project.to_str().unwrap(),
                "--policy",
                file.to_str().unwrap(),
                "explain",
                "--json",
                &tool_call,
            ],
        )
        .1
    };
    let out = search("secrets");
    assert!(out.starts_with("deny: rule \"no-secrets\""), "{out}");
    let out = search(".");
    assert!(
        out.starts_with("ask:") && out.contains("no-secrets"),
        "{out}"
    );
}

/// Finding 5: in a trusted project whose own file allows `Edit(./**)`, an edit of that file
/// is asked; an edit of the project's code is allowed.
#[test]
fn finding_5_explain_asks_for_an_edit_of_a_trusted_projects_own_policy() {
    let dir = temp_dir("policy-own").canonicalize().unwrap();
    let config = dir.join("config");
    let project = dir.join("project");
    std::fs::create_dir_all(project.join(".acp-question-bridge")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join(".acp-question-bridge/policy.toml"),
        "[[rule]]\nid = \"edit-project\"\ndecision = \"allow\"\nclaude = \"Edit(./**)\"\n",
    )
    .unwrap();
    let (code, out) = policy(&config, &project, &["trust", project.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let edit = |path: &str| {
        let tool_call = format!(
            r#"{{"name":"Edit","kind":"edit","title":"Edit {path}","rawInput":{{"file_path":"{path}"}}}}"#
        );
        policy(&config, &project, &["explain", "--json", &tool_call]).1
    };
    let out = edit("src/main.rs");
    assert!(out.starts_with("allow: rule \"edit-project\""), "{out}");
    for path in [
        ".acp-question-bridge/policy.toml",
        &project
            .join(".acp-question-bridge/policy.toml")
            .display()
            .to_string(),
        "src/../.acp-question-bridge/policy.toml",
    ] {
        let out = edit(path);
        assert!(
            out.starts_with("ask:") && out.contains("own files"),
            "{path}: {out}"
        );
    }
}

/// `policy explain` says why a prefix rule does not allow what a modelled program's arguments
/// would do, and says so when a program has no model (docs/POLICY.md, "Programs read by
/// their arguments").
#[test]
fn explain_says_what_a_programs_model_refuses_and_when_there_is_none() {
    let dir = temp_dir("policy-cli-models");
    let config = dir.join("config");
    std::fs::create_dir_all(config.join("acp-question-bridge")).unwrap();
    std::fs::write(
        config.join("acp-question-bridge/policy.toml"),
        "[[rule]]\nid = \"sed-print\"\ndecision = \"allow\"\nclaude = \"Bash(sed -n:*)\"\n\n\
         [[rule]]\nid = \"mytool\"\ndecision = \"allow\"\nclaude = \"Bash(mytool:*)\"\n\n\
         [[rule]]\nid = \"no-env\"\ndecision = \"deny\"\nclaude = \"Read(.env)\"\n",
    )
    .unwrap();
    let (code, out) = policy(
        &config,
        &dir,
        &["explain", "--command", "sed -n 'w ~/.bashrc' notes.txt"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("ask: "), "{out}");
    assert!(
        out.contains("sed-print")
            && out.contains("model of `sed`")
            && out.contains("writes a file"),
        "{out}"
    );
    let (_, out) = policy(
        &config,
        &dir,
        &["explain", "--command", "sed -n 1,5p notes.txt"],
    );
    assert!(out.starts_with("allow: "), "{out}");
    let (_, out) = policy(&config, &dir, &["explain", "--command", "mytool --fast x"]);
    assert!(out.starts_with("allow: "), "{out}");
    assert!(
        out.contains("no model of `mytool`: the rule allows any arguments"),
        "{out}"
    );
    let (_, out) = policy(&config, &dir, &["explain", "--command", "sed -n 1p .env"]);
    assert!(out.starts_with("deny: "), "{out}");
}

/// What curl and zsh read beyond a command's words, as the real programs do it, and the
/// policy asking for it: curl takes its `.curlrc` (an output file no word names), and zsh
/// with `magicequalsubst` reads `--output==sh` as `--output=/usr/bin/sh`.
#[tokio::test]
async fn what_curl_and_zsh_read_beyond_the_words_is_asked() {
    let curl = common::install::debian_program("curl", &["/usr/bin/curl"]).await;
    let zsh = common::install::debian_program("zsh", &["/usr/bin/zsh", "/bin/zsh"]).await;
    let dir = temp_dir("policy-beyond-words");
    let (config, home) = (dir.join("config"), dir.join("home"));
    std::fs::create_dir_all(config.join("acp-question-bridge")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        config.join("acp-question-bridge/policy.toml"),
        "[[rule]]\nid = \"curl\"\ndecision = \"allow\"\nclaude = \"Bash(curl:*)\"\n\n[[rule]]\nid = \"sort\"\ndecision = \"allow\"\nclaude = \"Bash(sort:*)\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("page.txt"), "page\n").unwrap();
    let explain = |command: &str| {
        let out = common::output_within(
            Command::new(BRIDGE)
                .args(["policy", "explain", "--command", command])
                .current_dir(&dir)
                .env("XDG_CONFIG_HOME", &config)
                .env("HOME", &home),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let url = format!("file://{}", dir.join("page.txt").display());
    let fetch = format!("curl -s {url}");
    assert!(explain(&fetch).starts_with("allow"), "{}", explain(&fetch));
    let written = dir.join("written-by-curlrc");
    std::fs::write(
        home.join(".curlrc"),
        format!("output = \"{}\"\n", written.display()),
    )
    .unwrap();
    let asked = explain(&fetch);
    assert!(
        asked.starts_with("ask") && asked.contains(".curlrc"),
        "{asked}"
    );
    let ran = common::output_within(Command::new(&curl).args(["-s", &url]).env("HOME", &home));
    assert!(ran.status.success());
    assert!(written.exists(), "real curl wrote where its .curlrc says");
    let asked = explain("sort --output==sh page.txt");
    assert!(
        asked.starts_with("ask") && asked.contains("magicequalsubst"),
        "{asked}"
    );
    let said = common::output_within(
        Command::new(&zsh).args(["-fc", "setopt magicequalsubst; print -r -- --output==sh"]),
    );
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(
        said.trim().starts_with("--output=/") && said.trim().ends_with("/sh"),
        "{said}"
    );
}

/// A session at the home folder: under prefix rules for `tee`, `cp` and `mkdir`, nothing
/// of the user's own configuration is written, named or not: rustup's settings (which make
/// `cargo tree` run another cargo), the version managers', the login's, programs' settings
/// that name a program, and `~/bin` (Debian's `~/.profile` puts it on `PATH` for the next
/// `bash -lc`). What is the project's is still allowed.
#[test]
fn a_session_at_home_never_writes_the_users_configuration_under_a_prefix() {
    let home = temp_dir("policy-home-config");
    let config = home.join(".config");
    std::fs::create_dir_all(config.join("acp-question-bridge")).unwrap();
    std::fs::create_dir_all(home.join("bin")).unwrap();
    std::fs::create_dir_all(home.join("notes")).unwrap();
    let rules: String = ["tee", "cp", "mkdir", "echo", "cargo tree"]
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!("[[rule]]\nid = \"r{i}\"\ndecision = \"allow\"\nclaude = \"Bash({r}:*)\"\n\n")
        })
        .collect();
    std::fs::write(config.join("acp-question-bridge/policy.toml"), rules).unwrap();
    // `~/bin` not on `PATH` yet: the login shell puts it there once it exists.
    let path = std::env::var("PATH").unwrap_or_default();
    let explain = |command: &str| {
        let out = common::output_within(
            Command::new(BRIDGE)
                .args(["policy", "explain", "--command", command])
                .current_dir(&home)
                .env("XDG_CONFIG_HOME", &config)
                .env("HOME", &home)
                .env("PATH", &path),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for command in [
        "mkdir -p .rustup/toolchains/evil/bin",
        "cp /bin/sh .rustup/toolchains/evil/bin/cargo",
        "echo 'default_toolchain = \"evil\"' | tee -a .rustup/settings.toml",
        "echo GOFLAGS=-toolexec=sh | tee .config/go/env",
        "echo evil | tee .pyenv/version",
        "echo 'import os' | tee .local/lib/python3.11/site-packages/x.pth",
        "echo sh | tee .xsessionrc",
        "echo x | tee .pam_environment",
        "echo x | tee .kube/config",
        "echo x | tee -a .gitconfig.local",
        "cp /bin/sh bin/ls",
    ] {
        let said = explain(command);
        assert!(said.starts_with("ask"), "{command}: {said}");
    }
    let said = explain("echo hi | tee notes/today.txt");
    assert!(said.starts_with("allow"), "{said}");
    let said = explain("cargo tree");
    assert!(said.starts_with("allow"), "{said}");
    // A session inside a hidden folder of the home folder (Codex's worktrees) writes its
    // own files as any project does.
    let worktree = home.join(".codex/worktrees/w1/repo");
    std::fs::create_dir_all(&worktree).unwrap();
    let out = common::output_within(
        Command::new(BRIDGE)
            .args(["policy", "explain", "--command", "echo hi | tee notes.txt"])
            .current_dir(&worktree)
            .env("XDG_CONFIG_HOME", &config)
            .env("HOME", &home)
            .env("PATH", &path),
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("allow"), "{said}");
}
