//! The approval policy on a corpus of ordinary agent commands under rules users really write
//! (`fixtures/policy-corpus/`): at most 3% of the harmless ones are asked, and none of the
//! risky ones (each runs, reads or writes more than its rule says) is allowed
//! (docs/POLICY.md, "Programs read by their arguments").

use std::path::{Path, PathBuf};

use acp_question_bridge::policy::{command, file, Call, Decision, Policy, Tier};

/// A project folder as agents find one: sources, tests, a repository, a secret, and the
/// programs of its installed node packages (npx runs a name the project has not installed
/// from npm's global bin folder, so such a name is asked).
fn project() -> PathBuf {
    let d = std::env::temp_dir().join(format!("acp-qb-corpus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    for sub in ["src", "tests", "templates"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    // A repository made by the real git (`.env` untracked, as usual).
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&d)
        .status()
        .unwrap();
    assert!(init.success());
    for f in [
        ".env",
        "src/main.rs",
        "src/lib.rs",
        "Cargo.toml",
        "build.log",
    ] {
        std::fs::write(d.join(f), "x\n").unwrap();
    }
    std::fs::create_dir_all(d.join("node_modules/.bin")).unwrap();
    for bin in ["prettier", "tsc", "eslint", "vitest"] {
        std::fs::write(d.join("node_modules/.bin").join(bin), "").unwrap();
    }
    d
}

fn corpus() -> Vec<(String, String)> {
    let text = include_str!("../../fixtures/policy-corpus/commands.txt");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (label, cmd) = l.split_once('\t').expect("a label and a tab");
            (label.to_owned(), cmd.replace("\\n", "\n"))
        })
        .collect()
}

fn policy() -> Policy {
    let text = include_str!("../../fixtures/policy-corpus/rules.toml");
    Policy {
        tiers: vec![Tier::new(
            "user",
            file::parse_rules(text, Path::new("rules.toml")).unwrap(),
        )],
        broken: None,
        protected: Vec::new(),
    }
}

#[test]
fn ordinary_commands_are_allowed_and_risky_ones_never_are() {
    let cwd = project();
    let p = policy();
    let mut asked = Vec::new();
    let mut allowed_risky = Vec::new();
    let all = corpus();
    let harmless = all.iter().filter(|(l, _)| l == "harmless").count();
    assert!(
        harmless >= 200,
        "the corpus has {harmless} harmless commands"
    );
    for (label, cmd) in &all {
        let call = Call {
            agent: "claude-agent-acp".into(),
            program: None,
            tool: Some("Bash".into()),
            url: None,
            kind: Some("execute".into()),
            title: cmd.clone(),
            command: Some(command::parse(cmd)),
            paths: vec![],
            cwd: cwd.clone(),
            shell: Default::default(),
            unsaid: None,
        };
        let v = p.decide(&call);
        match label.as_str() {
            "harmless" if v.decision != Decision::Allow => {
                asked.push(format!("{cmd:?}: {}", v.why))
            }
            "risky" if v.decision == Decision::Allow => {
                allowed_risky.push(format!("{cmd:?}: {}", v.why))
            }
            "harmless" | "risky" => {}
            other => panic!("unknown label {other:?}"),
        }
    }
    let _ = std::fs::remove_dir_all(&cwd);
    assert!(
        allowed_risky.is_empty(),
        "risky commands allowed:\n{}",
        allowed_risky.join("\n")
    );
    // 3%, rounded up. An unquoted `^` (`git diff HEAD^`) is asked since zsh with
    // `extendedglob` reads it as a pattern of names (docs/POLICY.md).
    let budget = (harmless * 3).div_ceil(100);
    assert!(
        asked.len() <= budget,
        "{} of {harmless} harmless commands asked (at most {budget}):\n{}",
        asked.len(),
        asked.join("\n")
    );
}
