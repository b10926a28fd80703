//! The approval policy in a running bridge (docs/POLICY.md), through the real binaries and
//! the mock agent's approval shapes: Claude's Bash string (`run`), codex-acp's argv (`exec`)
//! and a read with a location (`read`). Each decision is checked where the user looks: the
//! agent's answer, the note in the client's chat, the journal's `decided` event (against
//! the schema), and `bridge.status` on the control server.

use crate::common;
use std::path::{Path, PathBuf};

use crate::common::{chunks, Bridge, MOCK};
use serde_json::{json, Value};

const POLICY: &str = r#"# The user's rules.
[[rule]]
id = "tests"
decision = "allow"
command = ["cargo", "test"]
justification = "tests only build and run"
match = ["cargo test --workspace"]

[[rule]]
id = "no-rm"
decision = "deny"
command = ["rm", ["-rf", "-fr", "-r"]]
justification = "never delete trees"

[[rule]]
id = "git-read"
decision = "allow"
command = ["git", ["status", "diff", "log"]]

[[rule]]
id = "read-src"
decision = "allow"
kind = ["read"]
paths = ["src/**"]
"#;

/// A bridge around the mock agent with `args`, its config folder `config`, and a session
/// in `cwd`; returns it with the session id.
async fn bridge_in(args: &[&str], config: &Path, cwd: &Path) -> (Bridge, String) {
    let mut argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    // The agent runs in the session's folder, as codex-acp does (its `workdir`).
    argv.extend(["--cwd".into(), cwd.display().to_string()]);
    argv.extend(["--".into(), MOCK.into()]);
    let mut b = Bridge::spawn_env(&argv, &[("XDG_CONFIG_HOME", config.to_str().unwrap())]);
    b.initialize(json!({})).await;
    let r = b
        .call(1, "session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let sid = r["result"]["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();
    (b, sid)
}

/// Prompts `text`; when the client is asked, answers `answer` (an optionId). Returns what
/// the agent reported (`<word>: <result>`), the chat's text, and whether the client was
/// asked.
async fn turn(
    b: &mut Bridge,
    id: i64,
    sid: &str,
    text: &str,
    answer: &str,
) -> (String, String, bool) {
    b.prompt(id, sid, text).await;
    let mut seen = Vec::new();
    let mut asked = false;
    loop {
        let m = b.recv().await;
        if m["method"] == "session/request_permission" {
            asked = true;
            b.send(&json!({"jsonrpc":"2.0","id":m["id"],"result":{"outcome":{"outcome":"selected","optionId":answer}}}))
                .await;
            continue;
        }
        if m["id"] == json!(id) && m.get("method").is_none() {
            assert_eq!(m["result"]["stopReason"], "end_turn", "{m}");
            break;
        }
        seen.push(m);
    }
    let chat = chunks(&seen);
    let word = text.split_whitespace().next().unwrap();
    let report = chat
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{word}: ")))
        .unwrap_or_else(|| panic!("no report of {word:?} in {chat:?}"))
        .to_owned();
    (report, chat, asked)
}

fn option_of(report: &str) -> String {
    let v: Value = serde_json::from_str(report).unwrap_or_else(|e| panic!("{report}: {e}"));
    v["outcome"]["optionId"].as_str().unwrap_or("?").to_owned()
}

fn project() -> PathBuf {
    let dir = common::temp_dir("policy-project");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    dir.canonicalize().unwrap()
}

fn event_schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/question-event.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

#[tokio::test]
async fn one_policy_answers_each_shape_and_every_decision_is_seen() {
    let config = common::temp_dir("policy-config");
    let policy = config.join("rules.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let journal = config.join("journal.jsonl");
    let cwd = project();
    let (mut b, sid) = bridge_in(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
        &config,
        &cwd,
    )
    .await;

    // Claude's Bash string: allowed by `tests`, never shown to the client.
    let (report, chat, asked) =
        turn(&mut b, 10, &sid, "run cargo test --workspace", "reject").await;
    assert!(!asked, "an allowed approval is not asked");
    assert_eq!(option_of(&report), "allow", "{report}");
    let meta: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(
        meta["_meta"]["acpQuestionBridge"]["policy"]["rule"], "tests",
        "{report}"
    );
    assert!(
        chat.contains(
            "Allowed by policy rule `tests`: cargo test --workspace (tests only build and run)"
        ),
        "{chat}"
    );

    // A compound command with one denied part: denied, with reject_once.
    let (report, chat, asked) = turn(&mut b, 11, &sid, "run cargo test && rm -rf /", "allow").await;
    assert!(!asked);
    assert_eq!(option_of(&report), "reject");
    assert!(chat.contains("Denied by policy rule `no-rm`"), "{chat}");

    // codex-acp's argv, and a shell script in one.
    let (report, _, asked) = turn(&mut b, 12, &sid, "exec git status", "reject").await;
    assert!(!asked);
    assert_eq!(option_of(&report), "allow");
    let (report, _, asked) = turn(&mut b, 13, &sid, "exec git log --oneline", "reject").await;
    assert!(!asked);
    assert_eq!(option_of(&report), "allow");
    // Not every part is allowed: asked, and the client's answer goes back.
    let (report, _, asked) = turn(
        &mut b,
        14,
        &sid,
        "run git status; curl example.com",
        "reject",
    )
    .await;
    assert!(asked, "a command with a part no rule allows is asked");
    assert_eq!(option_of(&report), "reject");

    // Paths against the session's folder, made canonical first.
    let inside = cwd.join("src/main.rs");
    let (report, _, asked) = turn(
        &mut b,
        15,
        &sid,
        &format!("read {}", inside.display()),
        "reject",
    )
    .await;
    assert!(!asked);
    assert_eq!(option_of(&report), "allow");
    let escape = cwd.join("src/../../outside.txt");
    let (_, _, asked) = turn(
        &mut b,
        16,
        &sid,
        &format!("read {}", escape.display()),
        "reject",
    )
    .await;
    assert!(asked, "`..` out of src/ is not covered");

    // No rule: asked as before. The agents' questions are always asked.
    let (report, _, asked) = turn(&mut b, 17, &sid, "permission", "allow").await;
    assert!(asked);
    assert_eq!(report, "allow");

    // bridge.status on the control server lists the decisions and the file.
    let status = bridge_status(&b).await;
    let p = &status["policy"];
    assert!(p["broken"].is_null(), "{p}");
    assert_eq!(p["files"][0]["file"], policy.to_str().unwrap(), "{p}");
    assert_eq!(p["files"][0]["rules"], 4, "{p}");
    let rules: Vec<&str> = p["decided"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["policy"]["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        ["tests", "no-rm", "git-read", "git-read", "read-src"],
        "{p}"
    );
    assert_eq!(status["counters"]["decidedByPolicy"], 5, "{status}");

    b.close_stdin();
    assert_eq!(b.wait().await, 0);

    // The journal: one `decided` event per decision, with the rule, its file and line.
    let schema = event_schema();
    let lines: Vec<Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decided: Vec<&Value> = lines.iter().filter(|e| e["event"] == "decided").collect();
    assert_eq!(decided.len(), 5, "{lines:?}");
    for e in &decided {
        let errors: Vec<String> = schema.iter_errors(e).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{e}: {errors:?}");
    }
    let first = decided[0];
    assert_eq!(first["policy"]["rule"], "tests");
    assert_eq!(first["policy"]["file"], policy.to_str().unwrap());
    assert_eq!(first["policy"]["line"], 2, "{first}");
    assert_eq!(first["question"]["dialect"], "policy");
    assert_eq!(
        first["question"]["context"]["toolCall"]["rawInput"]["command"],
        "cargo test --workspace"
    );
    assert_eq!(
        first["result"],
        json!({"status": "answered", "answers": [["allow"]]})
    );
    assert_eq!(decided[1]["policy"]["decision"], "deny");
    // The asked ones are ordinary questions, never `decided`.
    let requested = lines.iter().filter(|e| e["event"] == "requested").count();
    assert_eq!(requested, 3, "{lines:?}");
}

#[tokio::test]
async fn a_broken_policy_asks_everything_and_says_why_once_per_session() {
    let config = common::temp_dir("policy-broken");
    let policy = config.join("rules.toml");
    // The example does not come out as the rule says: the file is broken.
    std::fs::write(
        &policy,
        "[[rule]]\nid = \"tests\"\ndecision = \"allow\"\ncommand = [\"cargo\", \"test\"]\nmatch = [\"cargo build\"]\n",
    )
    .unwrap();
    let cwd = project();
    let (mut b, sid) = bridge_in(&["--policy", policy.to_str().unwrap()], &config, &cwd).await;
    let (report, chat, asked) = turn(&mut b, 10, &sid, "run cargo test", "reject").await;
    assert!(asked, "a broken policy allows nothing");
    assert_eq!(option_of(&report), "reject");
    assert!(
        chat.contains("Approval policy broken, so every tool approval is asked"),
        "{chat}"
    );
    assert!(chat.contains("cargo build"), "the chat says why: {chat}");
    let (_, chat, asked) = turn(&mut b, 11, &sid, "run cargo test", "reject").await;
    assert!(asked);
    assert!(
        !chat.contains("Approval policy broken"),
        "once per session: {chat}"
    );
    b.stderr_contains("policy file is broken").await;
    let (url, token) = common::control_of(&b).await;
    let status = common::control::call(
        &common::control::http(&url, &token),
        "bridge.status",
        json!({}),
    )
    .await
    .expect("bridge.status");
    assert!(
        status["policy"]["broken"]
            .as_str()
            .unwrap()
            .contains("cargo build"),
        "{status}"
    );

    // A --policy file that does not exist is broken too.
    let missing = config.join("missing.toml");
    let (mut b, sid) = bridge_in(&["--policy", missing.to_str().unwrap()], &config, &cwd).await;
    // Said at start, before any approval.
    b.stderr_contains("the approval policy is broken").await;
    let (_, chat, asked) = turn(&mut b, 10, &sid, "exec git status", "allow").await;
    assert!(asked);
    assert!(chat.contains("does not exist"), "{chat}");
}

#[tokio::test]
async fn edits_count_from_the_next_approval_and_a_bad_edit_keeps_the_last_good() {
    let config = common::temp_dir("policy-edit");
    let dir = config.join("acp-question-bridge");
    std::fs::create_dir_all(&dir).unwrap();
    // The user's own file, found in the config folder.
    let user = dir.join("policy.toml");
    std::fs::write(&user, "").unwrap();
    let cwd = project();
    let (mut b, sid) = bridge_in(&[], &config, &cwd).await;
    let (_, _, asked) = turn(&mut b, 10, &sid, "run cargo test", "allow").await;
    assert!(asked, "no rule yet");

    // An atomic replace, as editors do.
    let tmp = dir.join("policy.toml.new");
    std::fs::write(&tmp, POLICY).unwrap();
    std::fs::rename(&tmp, &user).unwrap();
    let (report, chat, asked) = turn(&mut b, 11, &sid, "run cargo test", "reject").await;
    assert!(!asked, "the new rule answers the next approval");
    assert_eq!(option_of(&report), "allow");
    assert!(chat.contains("read again; in force"), "{chat}");

    // A bad edit: the last good rules stay, and the chat says so.
    std::fs::write(&tmp, "[[rule]]\nid = \"tests\"\ndecision = \"maybe\"\n").unwrap();
    std::fs::rename(&tmp, &user).unwrap();
    let (report, chat, asked) = turn(&mut b, 12, &sid, "run cargo test", "reject").await;
    assert!(!asked, "the last good policy is still in force");
    assert_eq!(option_of(&report), "allow");
    assert!(chat.contains("last good rules stay in force"), "{chat}");
    assert!(chat.contains("maybe"), "{chat}");
}

#[tokio::test]
async fn a_project_allow_counts_only_once_the_folder_is_trusted() {
    let config = common::temp_dir("policy-trust");
    let cwd = project();
    std::fs::create_dir_all(cwd.join(".acp-question-bridge")).unwrap();
    std::fs::write(
        cwd.join(".acp-question-bridge/policy.toml"),
        "[[rule]]\nid = \"project-tests\"\ndecision = \"allow\"\ncommand = [\"cargo\", \"test\"]\n\n\
         [[rule]]\nid = \"project-no-push\"\ndecision = \"deny\"\ncommand = [\"git\", \"push\"]\n",
    )
    .unwrap();
    let (mut b, sid) = bridge_in(&[], &config, &cwd).await;
    let (_, _, asked) = turn(&mut b, 10, &sid, "run cargo test", "reject").await;
    assert!(asked, "a cloned repository cannot approve its own commands");
    // Its deny counts at once.
    let (report, chat, asked) = turn(&mut b, 11, &sid, "exec git push origin main", "allow").await;
    assert!(!asked);
    assert_eq!(option_of(&report), "reject");
    assert!(
        chat.contains("Denied by policy rule `project-no-push`"),
        "{chat}"
    );

    // Trusted (the CLI writes the user's trusted folders): counts from the next approval.
    let out = std::process::Command::new(common::BRIDGE)
        .args(["policy", "trust", cwd.to_str().unwrap()])
        .env("XDG_CONFIG_HOME", &config)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (report, chat, asked) = turn(&mut b, 12, &sid, "run cargo test", "reject").await;
    assert!(!asked, "{chat}");
    assert_eq!(option_of(&report), "allow");
    assert!(
        chat.contains("Allowed by policy rule `project-tests`"),
        "{chat}"
    );
}

/// "Always allow" from the CLI: the approval lists what it would write, the answer with
/// `--always-allow` writes that rule to the user's file, and the rule answers the next
/// approval of this bridge and of another one.
#[tokio::test]
async fn always_allow_from_the_cli_writes_the_rule_every_bridge_then_follows() {
    let config = common::temp_dir("policy-always");
    let cwd = project();
    let (mut b, sid) = bridge_in(&["--control", "127.0.0.1:0"], &config, &cwd).await;
    let (base, token) = common::control_of(&b).await;
    let url = format!("{base}#token={token}");
    b.prompt(10, &sid, "run cargo test --workspace").await;
    b.recv_until(|m| m["method"] == "session/request_permission")
        .await;
    let (code, out) = common::control::cli(&["list", "--json", "--control", &url]).await;
    assert_eq!(code, 0);
    let list: Vec<Value> = serde_json::from_str(&out).unwrap();
    let always = &list[0]["alwaysAllow"];
    assert_eq!(always["subject"], "cargo test", "{always}");
    assert_eq!(always["project"], cwd.to_str().unwrap());
    let everywhere = always["rules"]["thisAgentEverywhere"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        everywhere.contains("command = [\"cargo\", \"test\"]"),
        "{everywhere}"
    );
    assert!(!everywhere.contains("cwd ="), "{everywhere}");
    let qid = list[0]["questionId"].as_str().unwrap().to_owned();
    let (code, text) = common::control::cli(&["list", "--control", &url]).await;
    assert_eq!(code, 0);
    assert!(text.contains("always allow `cargo test`"), "{text}");

    // Remembering a rejection is refused, and the question stays pending.
    let args = [
        "answer",
        "--control",
        &url,
        &sid,
        &qid,
        "--always-allow",
        "--everywhere",
    ];
    let (code, _) = common::control::cli(&[&args[..], &["reject"]].concat()).await;
    assert_ne!(code, 0);
    let (code, out) = common::control::cli(&[&args[..], &["allow"]].concat()).await;
    assert_eq!(code, 0, "{out}");
    let (done, seen) = b.response(json!(10)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert!(chunks(&seen).contains("\"optionId\":\"allow\""), "{seen:?}");

    let file = config.join("acp-question-bridge/policy.toml");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains(&everywhere),
        "the rule shown is the rule written:\n{written}"
    );
    assert!(
        written.contains("# Always allow `cargo test` for acp-mock-agent everywhere"),
        "{written}"
    );

    // The next approval, in this bridge and in another one in another folder.
    let (report, chat, asked) = turn(&mut b, 11, &sid, "run cargo test -p x", "reject").await;
    assert!(!asked, "{chat}");
    assert_eq!(option_of(&report), "allow");
    let elsewhere = project();
    let (mut other, sid2) = bridge_in(&[], &config, &elsewhere).await;
    let (report, chat, asked) = turn(&mut other, 10, &sid2, "run cargo test", "reject").await;
    assert!(!asked, "{chat}");
    assert_eq!(option_of(&report), "allow");
    assert!(
        chat.contains("Allowed by policy rule `always-cargo-test-"),
        "{chat}"
    );
    // Not what it did not allow.
    let (_, _, asked) = turn(&mut other, 11, &sid2, "run cargo publish", "reject").await;
    assert!(asked);
}

/// `policy trust DIR` with the user's config folder `config`: its stdout.
fn trust(config: &Path, dir: &Path) -> String {
    let out = common::output_within(
        std::process::Command::new(common::BRIDGE)
            .args(["policy", "trust", dir.to_str().unwrap()])
            .env("XDG_CONFIG_HOME", config),
    );
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `bridge.status` from `b`'s control server.
async fn bridge_status(b: &Bridge) -> Value {
    let (url, token) = common::control_of(b).await;
    common::control::call(
        &common::control::http(&url, &token),
        "bridge.status",
        json!({}),
    )
    .await
    .expect("bridge.status")
}

/// The `bridge.status` entry of policy file `file`.
async fn status_of(b: &Bridge, file: &Path) -> Value {
    let status = bridge_status(b).await;
    let p = &status["policy"];
    assert!(p["broken"].is_null(), "{p}");
    p["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"] == file.to_str().unwrap())
        .unwrap_or_else(|| panic!("no {} in {p}", file.display()))
        .clone()
}

/// Finding 5b: trust is for a content, not a folder. A `git pull` that adds an allow rule
/// to a trusted project file makes its allows asked until the user trusts the new content;
/// the chat says why once, its deny keeps counting.
#[tokio::test]
async fn finding_5_a_trusted_project_file_that_changes_is_asked_until_trusted_again() {
    let config = common::temp_dir("policy-trust-hash");
    let cwd = project();
    let file = cwd.join(".acp-question-bridge/policy.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = "[[rule]]\nid = \"project-tests\"\ndecision = \"allow\"\ncommand = [\"cargo\", \"test\"]\n\n\
         [[rule]]\nid = \"project-no-push\"\ndecision = \"deny\"\ncommand = [\"git\", \"push\"]\n";
    std::fs::write(&file, text).unwrap();
    let said = trust(&config, &cwd);
    let hash: String = sha256sum(text.as_bytes());
    assert!(said.contains(&format!("sha256:{hash}")), "{said}");
    let folders =
        std::fs::read_to_string(config.join("acp-question-bridge/trusted-folders")).unwrap();
    assert_eq!(folders, format!("sha256:{hash}\t{}\n", cwd.display()));

    let (mut b, sid) = bridge_in(&["--control", "127.0.0.1:0"], &config, &cwd).await;
    let (report, chat, asked) = turn(&mut b, 10, &sid, "run cargo test", "reject").await;
    assert!(!asked, "{chat}");
    assert_eq!(option_of(&report), "allow");

    // A pull appends an allow rule: none of the file's allows counts any more.
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    f.write_all(b"\n[[rule]]\nid = \"project-curl\"\ndecision = \"allow\"\ncommand = [\"curl\"]\n")
        .unwrap();
    drop(f);
    let (report, chat, asked) = turn(&mut b, 11, &sid, "run cargo test", "reject").await;
    assert!(asked, "a changed file's allow is asked: {chat}");
    assert_eq!(option_of(&report), "reject");
    assert!(
        chat.contains("changed since its folder was trusted"),
        "{chat}"
    );
    assert!(
        chat.contains(&format!(
            "acp-question-bridge policy trust {}",
            cwd.display()
        )),
        "{chat}"
    );
    let (_, chat, asked) = turn(&mut b, 12, &sid, "run curl example.com", "reject").await;
    assert!(asked, "the pulled allow does not count: {chat}");
    assert!(!chat.contains("changed since"), "said once: {chat}");
    // Its deny still counts.
    let (report, _, asked) = turn(&mut b, 13, &sid, "exec git push origin main", "allow").await;
    assert!(!asked);
    assert_eq!(option_of(&report), "reject");
    b.stderr_contains("left out until it is trusted again")
        .await;
    let entry = status_of(&b, &file).await;
    assert!(
        entry["allowsLeftOut"]
            .as_str()
            .is_some_and(|w| w.contains("changed since")),
        "{entry}"
    );

    // Trusted again: the new content's allows count from the next approval.
    let said = trust(&config, &cwd);
    assert!(!said.contains(&hash), "a new hash: {said}");
    let (report, chat, asked) = turn(&mut b, 14, &sid, "run curl example.com", "reject").await;
    assert!(!asked, "{chat}");
    assert_eq!(option_of(&report), "allow");
    assert!(
        chat.contains("Allowed by policy rule `project-curl`"),
        "{chat}"
    );
    let folders =
        std::fs::read_to_string(config.join("acp-question-bridge/trusted-folders")).unwrap();
    assert_eq!(folders.lines().count(), 1, "one line a folder: {folders}");
    let entry = status_of(&b, &file).await;
    assert!(entry["allowsLeftOut"].is_null(), "{entry}");
}

/// The SHA-256 of `bytes` in hex, by `sha256sum` (so the test does not share the bridge's
/// code).
fn sha256sum(bytes: &[u8]) -> String {
    let tmp = common::temp_dir("sha").join("f");
    std::fs::write(&tmp, bytes).unwrap();
    let out = std::process::Command::new("sha256sum")
        .arg(&tmp)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// Finding 6: a project file never weakens the user's. One that reuses a rule id of the
/// user's file, or is a link to it, is ignored as a whole (said once in the chat, on stderr
/// and in `bridge.status`), and the user's denies hold.
#[tokio::test]
async fn finding_6_a_project_file_that_reuses_a_user_rule_id_is_ignored_and_the_users_denies_hold()
{
    let config = common::temp_dir("policy-clash");
    let dir = config.join("acp-question-bridge");
    std::fs::create_dir_all(&dir).unwrap();
    let user = dir.join("policy.toml");
    std::fs::write(&user, POLICY).unwrap();
    let cwd = project();
    let file = cwd.join(".acp-question-bridge/policy.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        "[[rule]]\nid = \"no-rm\"\ndecision = \"ask\"\ncommand = [\"ls\"]\n",
    )
    .unwrap();
    let (mut b, sid) = bridge_in(&["--control", "127.0.0.1:0"], &config, &cwd).await;
    let (report, chat, asked) = turn(&mut b, 10, &sid, "run rm -rf /", "allow").await;
    assert!(!asked, "the user's deny holds: {chat}");
    assert_eq!(option_of(&report), "reject");
    assert!(chat.contains("Denied by policy rule `no-rm`"), "{chat}");
    assert!(chat.contains("is ignored as a whole"), "{chat}");
    assert!(chat.contains("\"no-rm\""), "{chat}");
    let (report, chat, asked) = turn(&mut b, 11, &sid, "run cargo test", "reject").await;
    assert!(!asked, "{chat}");
    assert_eq!(option_of(&report), "allow");
    assert!(!chat.contains("ignored as a whole"), "said once: {chat}");
    b.stderr_contains("project policy file ignored as a whole")
        .await;
    let entry = status_of(&b, &file).await;
    assert_eq!(entry["inForce"], false, "{entry}");
    assert!(
        entry["ignored"]
            .as_str()
            .is_some_and(|w| w.contains("no-rm")),
        "{entry}"
    );
    b.close_stdin();
    assert_eq!(b.wait().await, 0);

    // The project file a link to the user's own: its rules are not read twice.
    let linked = project();
    let file = linked.join(".acp-question-bridge/policy.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&user, &file).unwrap();
    let (mut b, sid) = bridge_in(&[], &config, &linked).await;
    let (report, chat, asked) = turn(&mut b, 10, &sid, "run rm -rf /", "allow").await;
    assert!(!asked, "the user's deny holds: {chat}");
    assert_eq!(option_of(&report), "reject");
    assert!(chat.contains("user's tier"), "{chat}");
    let (report, _, asked) = turn(&mut b, 11, &sid, "run cargo test", "reject").await;
    assert!(!asked);
    assert_eq!(option_of(&report), "allow");
}

/// Findings 1, 3 and 8 of the review of 2f081bd (issue 40), through the real bridge: a
/// comment that hides a line is asked; "Always allow" of a runner remembers it exactly; the
/// chat shows the command as parsed, operators as written and escapes escaped.
#[tokio::test]
async fn findings_1_3_8_a_hidden_line_is_asked_a_runner_is_remembered_exactly_and_the_chat_shows_the_parse(
) {
    let config = common::temp_dir("policy-findings");
    let policy = config.join("rules.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let cwd = project();
    let (mut b, sid) = bridge_in(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--control",
            "127.0.0.1:0",
        ],
        &config,
        &cwd,
    )
    .await;

    // 1: a `#` comment hid the next line from the old reader, which allowed this.
    let (report, _, asked) = turn(
        &mut b,
        10,
        &sid,
        "run cargo test # '\ntouch pwned\n#'",
        "reject",
    )
    .await;
    assert!(asked, "a command with a comment is asked");
    assert_eq!(option_of(&report), "reject");
    // ... and a deny rule sees the hidden line.
    let (report, chat, asked) = turn(
        &mut b,
        11,
        &sid,
        "run cargo test # '\nrm -rf x\n#'",
        "allow",
    )
    .await;
    assert!(!asked);
    assert_eq!(option_of(&report), "reject");
    assert!(chat.contains("Denied by policy rule `no-rm`"), "{chat}");
    assert!(
        chat.contains("cargo test # '\\nrm -rf x\\n#'"),
        "the command as written, its newlines escaped: {chat}"
    );

    // 8: operators as written; escape sequences shown, not obeyed.
    let (_, chat, asked) = turn(&mut b, 12, &sid, "run cargo test && git status", "reject").await;
    assert!(!asked);
    assert!(
        chat.contains("Allowed by policy rule `tests`: cargo test && git status"),
        "{chat}"
    );
    let (_, chat, asked) = turn(
        &mut b,
        13,
        &sid,
        "run cargo test '\u{1b}[2K\rDenied by policy'",
        "reject",
    )
    .await;
    assert!(!asked);
    let line = chat
        .lines()
        .find(|l| l.contains("Allowed by policy rule `tests`"))
        .unwrap_or_else(|| panic!("{chat:?}"));
    assert!(!line.contains(['\u{1b}', '\r']), "{line:?}");
    assert!(line.contains("\\u{1b}[2K\\rDenied by policy"), "{line:?}");

    // 3: Always allow of `poetry run pytest -x` remembers exactly that.
    let (base, token) = common::control_of(&b).await;
    let url = format!("{base}#token={token}");
    b.prompt(14, &sid, "run poetry run pytest -x").await;
    b.recv_until(|m| m["method"] == "session/request_permission")
        .await;
    let (code, out) = common::control::cli(&["list", "--json", "--control", &url]).await;
    assert_eq!(code, 0);
    let list: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(list[0]["alwaysAllow"]["subject"], "poetry run pytest -x");
    let qid = list[0]["questionId"].as_str().unwrap().to_owned();
    let (code, out) = common::control::cli(&[
        "answer",
        "--control",
        &url,
        &sid,
        &qid,
        "--always-allow",
        "--everywhere",
        "allow",
    ])
    .await;
    assert_eq!(code, 0, "{out}");
    let (done, _) = b.response(json!(14)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let written = std::fs::read_to_string(config.join("acp-question-bridge/policy.toml")).unwrap();
    assert!(written.contains("exact = true"), "{written}");
    let (_, _, asked) = turn(&mut b, 15, &sid, "run poetry run pytest -x", "reject").await;
    assert!(!asked, "what was approved is allowed");
    let (_, _, asked) = turn(&mut b, 16, &sid, "run poetry run touch pwned", "reject").await;
    assert!(asked, "never what the runner would run besides");

    b.close_stdin();
    assert_eq!(b.wait().await, 0);
}

/// A policy file that is a FIFO no one writes (the agent could make one where a project's
/// policy goes) is opened without blocking and refused as no regular file: the policy is
/// broken, the approval asked at once, the user's answer goes back, and the bridge's loop
/// goes on.
#[tokio::test]
async fn a_policy_file_that_is_a_fifo_is_refused_at_once_and_the_bridge_goes_on() {
    let config = common::temp_dir("policy-hung");
    let dir = config.join("acp-question-bridge");
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("policy.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let cwd = project();
    let (mut b, sid) = bridge_in(&[], &config, &cwd).await;
    let started = std::time::Instant::now();
    let (report, _, asked) = turn(&mut b, 10, &sid, "run cargo test", "allow").await;
    assert!(asked, "a policy that cannot be read never decides");
    assert_eq!(option_of(&report), "allow", "{report}");
    // Opened without blocking, and no regular file: refused at once, never waited on (the
    // decision's 10 s bound is not what answers it).
    assert!(
        started.elapsed() < std::time::Duration::from_secs(9),
        "asked at once, not when the policy's time was up"
    );
    b.stderr_contains("not a regular file").await;
    // The bridge's loop was never held: the next turn, with no approval, goes through.
    b.prompt(11, &sid, "hello").await;
    let (done, _) = b
        .recv_until(|m| m["id"] == json!(11) && m.get("method").is_none())
        .await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    // And it ends when the client goes.
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
}
