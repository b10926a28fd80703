//! Arbitrary text through the approval policy's command parser and matcher (docs/POLICY.md),
//! against a fixed policy that allows `echo`, `ls`, `cargo test` and `git status` and denies
//! `rm -rf`, `curl` and `git push`; and the same text as a policy file.
//!
//! Checked, whatever the quoting, spacing or nesting:
//! - nothing panics (the parser, the matcher, the TOML loader);
//! - nothing a deny rule covers is allowed: an allowed command is plain, each part
//!   starting with an allowed prefix, none with a denied one;
//! - nothing a shell could expand is allowed: an allowed command has no `$(`, backtick,
//!   redirection or lone `&` outside single quotes, and no `~` but the home folder's (an
//!   independent scan of the raw text; a quoted commit here-document is literal text);
//! - a command in which any command seen (wrappers seen through) starts with a denied
//!   prefix is denied, never allowed or asked.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use acp_question_bridge::policy::command;
use acp_question_bridge::policy::{file, Call, Decision, Policy, Tier};
use libfuzzer_sys::fuzz_target;

const RULES: &str = r#"
[[rule]]
id = "echo"
decision = "allow"
command = [["echo", "ls"]]
[[rule]]
id = "tests"
decision = "allow"
command = ["cargo", "test"]
[[rule]]
id = "git-status"
decision = "allow"
command = ["git", "status"]
[[rule]]
id = "rm"
decision = "deny"
command = ["rm", "-rf"]
[[rule]]
id = "curl"
decision = "deny"
command = ["curl"]
[[rule]]
id = "push"
decision = "deny"
command = ["git", "push"]
"#;

const ALLOWED: &[&[&str]] = &[&["echo"], &["ls"], &["cargo", "test"], &["git", "status"]];
const DENIED: &[&[&str]] = &[&["rm", "-rf"], &["curl"], &["git", "push"]];

fn policy() -> &'static Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    P.get_or_init(|| Policy {
        tiers: vec![Tier::new("user", file::parse_rules(RULES, Path::new("fuzz.toml")).expect("the fixed rules"))],
        broken: None,
        protected: Vec::new(),
    })
}

fn starts(part: &[String], prefix: &[&str]) -> bool {
    let program = |w: &str| w.rsplit('/').next().unwrap_or(w).to_owned();
    part.len() >= prefix.len()
        && prefix.iter().enumerate().all(|(i, p)| {
            if i == 0 {
                part[0] == *p || program(&part[0]) == *p
            } else {
                part[i] == *p
            }
        })
}

/// Whether the `*` or `?` at byte `i` of `line` stands in an unquoted word the policy reads
/// as a pattern (`src/*.rs`: `shell::glob_word`), whose matched names it decides on.
fn pattern_at(line: &str, i: usize) -> bool {
    let b = line.as_bytes();
    let edge = |c: u8| b" \t\n;&|()<>".contains(&c);
    let start = b[..i].iter().rposition(|&c| edge(c)).map_or(0, |k| k + 1);
    let end = b[i..].iter().position(|&c| edge(c)).map_or(b.len(), |k| i + k);
    line.get(start..end)
        .is_some_and(acp_question_bridge::policy::shell::glob_word)
}

/// An independent scan for what a shell reads as more than literal text outside single
/// quotes: `$`, a backtick, a backslash, `#`, a glob or brace, a lone `&`, a redirection
/// other than to `/dev/null` or between file descriptors (`2>&1`), or a `~` the shells
/// expand other than to the home folder (`~user`, `a=~`, `a:~`). Three forms the policy
/// reads as the shells do are not expansions here: `~` or `~/…` beginning a word (the
/// home folder), a commit message written `"$(cat <<'EOF'` … `EOF` `)"` ([`commit`]), and
/// a pattern the policy puts the matched names in place of ([`pattern_at`]).
fn expands(line: &str) -> bool {
    let b = line.as_bytes();
    let (mut single, mut double) = (false, false);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !single && !double && c == b'"' {
            if let Some(end) = commit(&b[i..]) {
                i += end;
                continue;
            }
        }
        match c {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            _ if single => {}
            b'$' | b'`' | b'\\' => return true,
            _ if double => {}
            b'~' => {
                let before = i.checked_sub(1).map(|k| b[k]);
                let starts_word = before.is_none_or(|p| b" \t\n;&|(".contains(&p));
                let after = b.get(i + 1).copied();
                let home = starts_word
                    && after.is_none_or(|a| a == b'/' || b" \t\n;&|)".contains(&a));
                if !home && (starts_word || matches!(before, Some(b'=' | b':'))) {
                    return true;
                }
            }
            b'*' | b'?' if pattern_at(line, i) => {}
            b'#' | b'*' | b'?' | b'[' | b'{' | b'}' => return true,
            b'<' | b'>' => {
                let skip = |r: &[u8]| -> usize {
                    r.iter().take_while(|c| **c == b' ' || **c == b'\t').count()
                };
                let mut rest = &b[i + 1..];
                if c == b'>' {
                    rest = rest.strip_prefix(b">").unwrap_or(rest);
                }
                if let Some(r) = rest[skip(rest)..].strip_prefix(b"/dev/null") {
                    i = b.len() - r.len();
                    continue;
                }
                if let Some(r) = rest.strip_prefix(b"&") {
                    let r = &r[skip(r)..];
                    if r.first().is_some_and(u8::is_ascii_digit) {
                        i = b.len() - r.len() + 1;
                        continue;
                    }
                }
                return true;
            }
            b'&' => {
                if b.get(i + 1) == Some(&b'&') {
                    i += 1;
                } else {
                    return true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// The length of a commit message written `"$(cat <<'D'` (or `<<"D"`, `<<-'D'`), its lines,
/// a line `D`, then `)"`, at the start of `b`; `None` if `b` does not start with one.
fn commit(b: &[u8]) -> Option<usize> {
    let rest = b.strip_prefix(b"\"$(cat <<".as_slice())?;
    let dash = rest.starts_with(b"-");
    let rest = if dash { &rest[1..] } else { rest };
    let q = *rest.first().filter(|q| **q == b'\'' || **q == b'"')?;
    let rest = &rest[1..];
    let end = rest.iter().position(|c| *c == q)?;
    let delim = &rest[..end];
    if delim.is_empty() || !delim.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') {
        return None;
    }
    let mut body = rest[end + 1..].strip_prefix(b"\n".as_slice())?;
    loop {
        let nl = body.iter().position(|c| *c == b'\n')?;
        let line = &body[..nl];
        body = &body[nl + 1..];
        let trimmed: &[u8] = {
            let k = if dash {
                line.iter().take_while(|c| **c == b'\t').count()
            } else {
                0
            };
            &line[k..]
        };
        if trimmed == delim {
            let tail = body.strip_prefix(b")\"".as_slice())?;
            return Some(b.len() - tail.len());
        }
        // A line that only begins with the delimiter ends the here-document for bash.
        if trimmed.starts_with(delim) {
            return None;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    // As a policy file, and as a Claude Code rule string: never a panic.
    let _ = file::parse_rules(line, Path::new("fuzz.toml"));
    if let Ok(c) = acp_question_bridge::policy::claude::read(line) {
        // A Claude string that reads is never wider than its command: no `*` in it.
        assert!(c.command.iter().flatten().all(|w| !w.contains('*')), "{line:?}: {c:?}");
    }

    let parsed = command::parse(line);
    let call = Call {
        agent: "fuzz".into(),
        program: None,
        tool: None,
        url: None,
        kind: Some("execute".into()),
        title: line.into(),
        command: Some(parsed.clone()),
        paths: vec![],
        cwd: PathBuf::from("/"),
        shell: Default::default(),
        unsaid: None,
    };
    let v = policy().decide(&call);
    let denied_part = parsed
        .seen
        .iter()
        .any(|p| DENIED.iter().any(|d| starts(p, d)));
    if denied_part {
        assert_eq!(v.decision, Decision::Deny, "{line:?}: {v:?}");
    }
    if v.decision == Decision::Allow {
        assert!(parsed.not_allowable().is_none(), "allowed what is not plain: {line:?}");
        let Some(parts) = parsed.parts() else {
            panic!("allowed what cannot be read: {line:?}");
        };
        for p in parts {
            let p = &p.words;
            assert!(ALLOWED.iter().any(|a| starts(p, a)), "{line:?}: {p:?}");
            assert!(!DENIED.iter().any(|d| starts(p, d)), "{line:?}: {p:?}");
        }
        assert!(!expands(line), "allowed what a shell could expand: {line:?}");
    }
});
