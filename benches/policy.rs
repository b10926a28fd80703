//! The approval policy's decision for one tool approval with 1,000 rules in force (the
//! target: at most 50 us; docs/POLICY.md): a command no rule covers (every rule tried), a
//! compound command allowed part by part, a denied one, and a read with paths. Run with
//! `cargo bench --bench policy`.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // denied in src/router/ only (clippy.toml)

use std::path::{Path, PathBuf};

use acp_question_bridge::policy::{command, file, Call, Policy, Tier};

fn main() {
    divan::main();
}

/// 1,000 rules: commands of many programs and subcommands, path rules, agent and kind
/// conditions, in both tiers.
fn policy() -> Policy {
    let mut user = String::new();
    let mut project = String::new();
    for i in 0..1000 {
        let out = if i % 4 == 0 { &mut project } else { &mut user };
        let decision = ["allow", "ask", "deny"][i % 3];
        let body = match i % 5 {
            0 => format!("command = [\"tool{i}\", [\"run\", \"test\", \"check\"]]"),
            1 => format!("command = [\"git\", \"sub{i}\"]\nkind = [\"execute\"]"),
            2 => format!("paths = [\"dir{i}/**\", \"**/*.x{i}\"]"),
            3 => format!("command = [\"npm\", \"run\", \"script{i}\"]\nagent = [\"agent{i}*\"]"),
            _ => format!("title = \"^Title {i}\"\nkind = [\"fetch\"]"),
        };
        // Only allow and deny rules in the project tier (as an untrusted folder would load
        // them, allow rules dropped, is the common case; here they stay for the load).
        out.push_str(&format!(
            "[[rule]]\nid = \"r{i}\"\ndecision = \"{decision}\"\n{body}\n\n"
        ));
    }
    user.push_str("[[rule]]\nid = \"tests\"\ndecision = \"allow\"\ncommand = [\"cargo\", [\"test\", \"nextest\"]]\n\n");
    user.push_str("[[rule]]\nid = \"git-read\"\ndecision = \"allow\"\ncommand = [\"git\", [\"status\", \"diff\"]]\n\n");
    user.push_str("[[rule]]\nid = \"no-rm\"\ndecision = \"deny\"\ncommand = [\"rm\", \"-rf\"]\n\n");
    user.push_str("[[rule]]\nid = \"read-src\"\ndecision = \"allow\"\nkind = [\"read\"]\npaths = [\"src/**\"]\n");
    Policy {
        tiers: vec![
            Tier::new(
                "user",
                file::parse_rules(&user, Path::new("user.toml")).unwrap(),
            ),
            Tier::new(
                "project",
                file::parse_rules(&project, Path::new("project.toml")).unwrap(),
            ),
        ],
        broken: None,
        protected: Vec::new(),
    }
}

fn exec(cmd: &str) -> Call {
    Call {
        agent: "claude-agent-acp".into(),
        program: None,
        tool: None,
        url: None,
        kind: Some("execute".into()),
        title: cmd.into(),
        command: Some(command::parse(cmd)),
        paths: vec![],
        cwd: std::env::temp_dir(),
        shell: Default::default(),
        unsaid: None,
    }
}

/// A read of `path`, by codex-acp.
fn read(path: &str) -> Call {
    Call {
        agent: "codex-acp".into(),
        program: None,
        tool: None,
        url: None,
        kind: Some("read".into()),
        title: "Read".into(),
        command: None,
        paths: vec![PathBuf::from(path)],
        cwd: std::env::temp_dir(),
        shell: Default::default(),
        unsaid: None,
    }
}

#[divan::bench(args = ["make build", "cargo test && git status", "ls; rm -rf /tmp/x"])]
fn decide_a_command(bencher: divan::Bencher, cmd: &str) {
    let p = policy();
    assert!(p.rules().count() > 1000);
    bencher.bench_local(|| p.decide(divan::black_box(&exec(cmd))));
}

#[divan::bench]
fn decide_a_read_with_paths(bencher: divan::Bencher) {
    let p = policy();
    let call = read("src/main.rs");
    bencher.bench_local(|| p.decide(divan::black_box(&call)));
}

/// The bound (docs/POLICY.md, target 10 ms): a 1 MiB command (not read: asked), and the
/// largest lines that are read: 8 KiB of one plain command, 256 plain commands, and 256
/// commands in a line that is not plain (each looked up in every deny and ask rule).
#[divan::bench(args = ["1 MiB", "8 KiB plain", "256 plain commands", "256 commands, not plain"])]
fn decide_a_long_command(bencher: divan::Bencher, what: &str) {
    let p = policy();
    let cmd = match what {
        "1 MiB" => format!("cargo test {}", "a".repeat(1 << 20)),
        "8 KiB plain" => format!("cargo test {}", "ab ".repeat(2_700)),
        "256 plain commands" => {
            let mut s = String::from("cargo test");
            for _ in 0..255 {
                s.push_str(" && git status --short");
            }
            s
        }
        _ => {
            let mut s = String::from("cargo test");
            for _ in 0..127 {
                s.push_str(" && tool7 run $(x)");
            }
            s
        }
    };
    bencher.bench_local(|| p.decide(divan::black_box(&exec(&cmd))));
}

/// A read of a path past the bound (1 MiB, 512k components): not resolved, asked at once
/// (docs/POLICY.md, "Paths"; it took 40 s when paths were cleaned and made canonical).
#[divan::bench]
fn decide_a_read_with_a_1_mib_path(bencher: divan::Bencher) {
    let p = policy();
    let call = read(&"a/".repeat(1 << 19));
    bencher.bench_local(|| p.decide(divan::black_box(&call)));
}
