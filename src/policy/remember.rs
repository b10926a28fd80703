//! "Always allow": the rule an approval would be remembered by, and its writing to the
//! user's policy file (docs/POLICY.md, "Remember from any surface").
//!
//! The bridge drafts the rules when it shows an approval ([`drafts`]): one for each choice of
//! [this agent | every agent] × [this project | everywhere], as the exact TOML it will write.
//! Every surface shows that text, and [`append`] writes the chosen one unchanged.
//!
//! Invariants:
//! - A draft never allows more than the approval showed: a command's own prefix (the program
//!   and its subcommands, never a bare program that had arguments), or a read or edit of the
//!   exact paths. A compound command, or one that is not plain, gets no draft; runners and
//!   programs whose arguments could name another program or file are remembered exactly
//!   ([`PREFIXES`], [`super::never::NEVER_UNDER_A_PREFIX`]).
//! - Writing is read-check-write under an exclusive lock, by rename: the file is never left
//!   half written, two writers never lose a rule, and a file that is broken (or that the new
//!   rule would break) is not touched.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::Call;

/// Who a remembered rule is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ForAgent {
    This,
    Every,
}

/// Where a remembered rule counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Place {
    Project,
    Everywhere,
}

/// The choice made with "Always allow".
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Remember {
    pub agent: ForAgent,
    pub place: Place,
}

impl Remember {
    /// The key of its draft in [`drafts`]' `rules`.
    pub fn key(self) -> &'static str {
        match (self.agent, self.place) {
            (ForAgent::This, Place::Project) => "thisAgentThisProject",
            (ForAgent::This, Place::Everywhere) => "thisAgentEverywhere",
            (ForAgent::Every, Place::Project) => "everyAgentThisProject",
            (ForAgent::Every, Place::Everywhere) => "everyAgentEverywhere",
        }
    }

    pub const ALL: [Remember; 4] = [
        Remember {
            agent: ForAgent::This,
            place: Place::Project,
        },
        Remember {
            agent: ForAgent::This,
            place: Place::Everywhere,
        },
        Remember {
            agent: ForAgent::Every,
            place: Place::Project,
        },
        Remember {
            agent: ForAgent::Every,
            place: Place::Everywhere,
        },
    ];
}

/// What an approval would be remembered as: `{"subject", "agent", "project", "rules":
/// {"thisAgentThisProject": TOML, ...}}`; `None` when it cannot be remembered safely.
pub fn drafts(call: &Call) -> Option<Value> {
    let cwd = super::resolve(&call.cwd, Path::new("/"))?;
    let (subject, condition) = match &call.command {
        Some(cmd) if cmd.not_allowable().is_none() && cmd.parts().is_some_and(|p| p.len() == 1) => {
            let (words, exact) = prefix(&cmd.parts()?[0].words)?;
            // A prefix never allows a command left running in the background (its model
            // decides paths as they are when it starts): remembered exactly, it is.
            let (words, exact) = match cmd.background {
                true => (cmd.parts()?[0].words.clone(), true),
                false => (words, exact),
            };
            let toml_words: Vec<String> = words.iter().map(|w| quote(w)).collect();
            let mut condition = format!("command = [{}]\n", toml_words.join(", "));
            if exact {
                condition.push_str("exact = true\n");
            }
            (words.join(" "), condition)
        }
        Some(_) => return None,
        None => {
            let kind = call
                .kind
                .as_deref()
                .filter(|k| matches!(*k, "read" | "edit" | "search" | "delete" | "move"))?;
            if call.paths.is_empty() {
                return None;
            }
            let mut rel = Vec::new();
            for p in &call.paths {
                let p = super::resolve(p, &call.cwd)?;
                let r = p.strip_prefix(&cwd).ok()?;
                rel.push(glob_literal(&r.to_string_lossy()));
            }
            let shown: Vec<&str> = rel.iter().map(String::as_str).collect();
            let quoted: Vec<String> = rel.iter().map(|r| quote(r)).collect();
            (
                format!("{kind} {}", shown.join(" ")),
                format!(
                    "kind = [{}]\npaths = [{}]\n",
                    quote(kind),
                    quoted.join(", ")
                ),
            )
        }
    };
    let project = cwd.to_string_lossy().into_owned();
    let mut rules = serde_json::Map::new();
    for r in Remember::ALL {
        let mut text = String::new();
        let slug: String = subject
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect::<String>()
            .split('-')
            .filter(|w| !w.is_empty())
            .take(4)
            .collect::<Vec<_>>()
            .join("-");
        let mut body = String::from("decision = \"allow\"\n");
        body.push_str(&condition);
        if r.agent == ForAgent::This {
            body.push_str(&format!(
                "agent = [{}]\n",
                quote(&glob_literal(&call.agent))
            ));
        }
        if r.place == Place::Project {
            body.push_str(&format!("cwd = [{}]\n", quote(&glob_literal(&project))));
        }
        let id = format!("always-{slug}-{:08x}", fnv(&body));
        text.push_str(&format!("\n[[rule]]\nid = {}\n{body}", quote(&id)));
        rules.insert(r.key().into(), text.into());
    }
    Some(json!({
        "subject": subject,
        "agent": call.agent,
        "project": project,
        "rules": rules,
    }))
}

/// The subcommands that "Always allow" remembers as a prefix (with any further arguments),
/// each of a program with a model ([`super::args`]): the model, not the prefix, decides which
/// further words a later command may have (never one that names another program to run, or
/// a file to write outside the project). `NAME` stands for one more plain word (a script's
/// name: `npm run test`). Every other command is remembered exactly as it was approved,
/// arguments and all: the runners (`npm exec`, `npx`, `uv run`, `poetry run`, `bundle
/// exec`, `docker run`, `go run`, `cargo run`, `gh api`, `kubectl exec`), `make` and `just`
/// (any recipe), programs without a model (`docker ps`, `gh pr list`), and the rest.
///
/// What a prefix allows still runs the project's own code where that is the subcommand's
/// job (`cargo test` builds and runs the tests; `npm run test` runs the script the project
/// names): approving the subcommand is approving that.
pub const PREFIXES: &[(&str, &[&str])] = &[
    (
        "cargo",
        &[
            "build", "check", "test", "clippy", "fmt", "doc", "bench", "tree", "metadata",
        ],
    ),
    ("git", &["status", "diff", "log", "show"]),
    ("npm", &["test", "run NAME", "run-script NAME"]),
    ("pnpm", &["test", "run NAME"]),
    ("yarn", &["test", "run NAME"]),
    ("go", &["build", "test", "vet"]),
    ("uv", &["sync", "lock", "tree"]),
];

/// Programs that run another command, or code, given in their arguments: what they run is
/// not what a rule for them could name, so they are never remembered.
const RUNS_OTHERS: &[&str] = &[
    "sudo", "doas", "su", "env", "xargs", "timeout", "nice", "nohup", "time", "command", "exec",
    "eval", "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "find", "watch", "strace",
    "ltrace", "parallel", "ssh", "script", "chroot", "unshare", "setsid", "stdbuf", "flock", "npx",
    "pnpx", "bunx", "uvx", "pipx", "python", "python3", "node", "perl", "ruby", "php", "lua",
    "awk", "gawk", "sed",
];

/// What a rule for one command part allows, and whether exactly (no more words): a
/// subcommand of [`PREFIXES`] with any further arguments (`cargo test`), else the whole
/// command, exactly as it was (`rm -rf build`, `poetry run pytest -x`). `None` for a
/// program that runs what its arguments say.
fn prefix(words: &[String]) -> Option<(Vec<String>, bool)> {
    let program = words.first()?;
    let name = program.rsplit('/').next().unwrap_or(program);
    // Every wrapper whose command the deny rules follow, and the interpreters besides.
    if RUNS_OTHERS.contains(&name) || super::wrappers::is_wrapper(words) {
        return None;
    }
    let exact = Some((words.to_vec(), true));
    // Only a program whose model reads every word of what was approved is widened: the
    // model, not the prefix, then decides what a later command may add.
    if program.contains('/')
        || super::never::names_more(words, 1)
        || !matches!(
            super::args::read(words),
            super::args::Reading::Understood(_)
        )
    {
        return exact;
    }
    let Some((_, subcommands)) = PREFIXES.iter().find(|(p, _)| *p == name) else {
        return exact;
    };
    let plain = |w: &str| {
        !w.is_empty()
            && !w.starts_with('-')
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_:-.".contains(c))
    };
    // The longest pattern the command's next words fit.
    let mut best: Option<usize> = None;
    for pattern in subcommands.iter() {
        let pat: Vec<&str> = pattern.split(' ').collect();
        let fits = pat.len() < words.len()
            && pat.iter().zip(&words[1..]).all(
                |(p, w)| {
                    if *p == "NAME" {
                        plain(w)
                    } else {
                        p == w
                    }
                },
            );
        if fits && best.is_none_or(|b| pat.len() > b) {
            best = Some(pat.len());
        }
    }
    match best {
        Some(n) => Some((words[..=n].to_vec(), false)),
        None => exact,
    }
}

/// A glob that matches `s` only: its metacharacters, and backslashes, escaped.
fn glob_literal(s: &str) -> String {
    globset::escape(&s.replace('\\', "\\\\"))
}

/// A TOML basic string: JSON's string escapes (`\"`, `\\`, `\n`, `\u00XX`) are all TOML's.
fn quote(s: &str) -> String {
    // JSON leaves DEL as it is; TOML wants it escaped.
    serde_json::to_string(s)
        .unwrap_or_else(|_| "\"\"".into())
        .replace('\u{7f}', "\\u007f")
}

/// A stable short hash (FNV-1a), so the same rule gets the same id.
fn fnv(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Appends `rule` (a draft's TOML) to the policy file `file`, unless a rule with its id is
/// there already. The file is read, checked with the rule added, and replaced by a rename,
/// under an exclusive lock beside it. Returns whether it was written.
pub fn append(file: &Path, rule: &str, comment: &str) -> Result<bool, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = file.parent().ok_or("the policy file has no folder")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let lock_path: PathBuf = dir.join(".policy.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| format!("{}: {e}", lock_path.display()))?;
    let old = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    let existing = super::file::parse_rules(&old, file).map_err(|e| {
        format!("the policy file is broken, so nothing was added to it; fix it first: {e}")
    })?;
    let added =
        super::file::parse_rules(rule, file).map_err(|e| format!("the rule is not valid: {e}"))?;
    if added.iter().all(|a| existing.iter().any(|r| r.id == a.id)) {
        return Ok(false);
    }
    let mut text = old;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let comment: String = comment
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    text.push_str(&format!("\n# {comment}"));
    text.push_str(rule);
    super::file::parse_rules(&text, file)
        .map_err(|e| format!("the rule would break the file: {e}"))?;
    crate::agents::fetch::keep(file, text.as_bytes())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{command, Decision};

    fn call(cmd: &str) -> Call {
        Call {
            agent: "codex-acp".into(),
            program: None,
            tool: None,
            url: None,
            kind: Some("execute".into()),
            title: cmd.into(),
            command: Some(command::parse(cmd)),
            paths: vec![],
            cwd: PathBuf::from("/"),
            shell: Default::default(),
            unsaid: None,
        }
    }

    #[test]
    fn a_draft_allows_the_commands_own_prefix_and_no_more() {
        let d = drafts(&call("cargo test --workspace")).unwrap();
        assert_eq!(d["subject"], "cargo test");
        let rule = d["rules"]["everyAgentEverywhere"].as_str().unwrap();
        let rules = crate::policy::file::parse_rules(rule, Path::new("p.toml")).unwrap();
        assert_eq!(rules[0].decision, Decision::Allow);
        let p = crate::policy::Policy {
            tiers: vec![crate::policy::Tier::new("user", rules)],
            broken: None,
            protected: Vec::new(),
        };
        assert_eq!(p.decide(&call("cargo test -p x")).decision, Decision::Allow);
        assert_eq!(p.decide(&call("cargo publish")).decision, Decision::Ask);
        // Not a subcommand program: the whole command, exactly.
        let rm = drafts(&call("rm -rf build")).unwrap();
        assert_eq!(rm["subject"], "rm -rf build");
        let rule = rm["rules"]["everyAgentEverywhere"].as_str().unwrap();
        assert!(rule.contains("exact = true"), "{rule}");
        let rules = crate::policy::file::parse_rules(rule, Path::new("p.toml")).unwrap();
        let p = crate::policy::Policy {
            tiers: vec![crate::policy::Tier::new("user", rules)],
            broken: None,
            protected: Vec::new(),
        };
        assert_eq!(p.decide(&call("rm -rf build")).decision, Decision::Allow);
        assert_eq!(p.decide(&call("rm -rf build ~")).decision, Decision::Ask);
        assert_eq!(
            drafts(&call("npm run test:unit --watch")).unwrap()["subject"],
            "npm run test:unit"
        );
        // A subcommand whose arguments could do more: exactly.
        assert_eq!(
            drafts(&call("git push origin main")).unwrap()["subject"],
            "git push origin main"
        );
        // One whose arguments cannot: the subcommand, never its arguments.
        assert_eq!(
            drafts(&call("git status --short src")).unwrap()["subject"],
            "git status"
        );
        // What runs other commands is never remembered.
        for never in [
            "sudo rm -rf x",
            "env A=1 make",
            "xargs rm",
            "bash -c ls",
            "npx foo",
        ] {
            assert!(drafts(&call(never)).is_none(), "{never}");
        }
        // Compound or unreadable: nothing to remember.
        assert!(drafts(&call("cargo test && git push")).is_none());
        assert!(drafts(&call("echo $(id)")).is_none());
    }

    #[test]
    fn a_command_run_in_the_background_is_remembered_exactly() {
        let mut bg = call("npm run dev --port 3000");
        bg.command.as_mut().unwrap().background = true;
        let d = drafts(&bg).unwrap();
        assert_eq!(d["subject"], "npm run dev --port 3000");
        let rule = d["rules"]["everyAgentEverywhere"].as_str().unwrap();
        let p = crate::policy::Policy {
            tiers: vec![crate::policy::Tier::new(
                "user",
                crate::policy::file::parse_rules(rule, Path::new("p.toml")).unwrap(),
            )],
            broken: None,
            protected: Vec::new(),
        };
        // The same command, again in the background, is allowed by what was remembered.
        assert_eq!(p.decide(&bg).decision, Decision::Allow);
    }

    #[test]
    fn this_agent_and_this_project_narrow_the_rule() {
        let mut c = call("make check");
        c.cwd = std::env::temp_dir();
        let d = drafts(&c).unwrap();
        let narrow = d["rules"]["thisAgentThisProject"].as_str().unwrap();
        assert!(narrow.contains("agent = [\"codex-acp\"]"), "{narrow}");
        assert!(narrow.contains("cwd = ["), "{narrow}");
        let rules = crate::policy::file::parse_rules(narrow, Path::new("p.toml")).unwrap();
        let p = crate::policy::Policy {
            tiers: vec![crate::policy::Tier::new("user", rules)],
            broken: None,
            protected: Vec::new(),
        };
        assert_eq!(p.decide(&c).decision, Decision::Allow);
        let mut other = c.clone();
        other.agent = "claude-agent-acp".into();
        assert_eq!(p.decide(&other).decision, Decision::Ask);
        let mut elsewhere = c.clone();
        elsewhere.cwd = PathBuf::from("/");
        assert_eq!(p.decide(&elsewhere).decision, Decision::Ask);
    }

    #[test]
    fn append_adds_once_and_never_touches_a_broken_file() {
        let dir = std::env::temp_dir().join(format!("acp-qb-remember-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let file = dir.join("policy.toml");
        let d = drafts(&call("cargo test")).unwrap();
        let rule = d["rules"]["everyAgentEverywhere"].as_str().unwrap();
        assert_eq!(append(&file, rule, "from a test"), Ok(true));
        assert_eq!(
            append(&file, rule, "from a test"),
            Ok(false),
            "the same rule once"
        );
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.matches("[[rule]]").count(), 1, "{text}");
        assert!(text.contains("# from a test"));
        std::fs::write(&file, "[[rule]]\nid = 1\n").unwrap();
        let e = append(&file, rule, "x").unwrap_err();
        assert!(e.contains("fix it first"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "[[rule]]\nid = 1\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
