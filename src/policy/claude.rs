//! Claude Code's permission rule strings (`Bash(npm run test:*)`, `Read(./src/**)`,
//! `WebFetch(domain:example.com)`), read into the policy's own conditions, so a rule can be
//! written as `claude = "Bash(git diff:*)"` and `policy import claude` can bring a
//! `settings.json`'s `permissions` lists along.
//!
//! What each string becomes:
//! - `Tool` alone: every call of that tool (`tool = ["Tool"]`); `mcp__server` is every tool
//!   of that MCP server; `Bash` is every shell command (`kind = ["execute"]`).
//! - `Bash(CMD:*)` or `Bash(CMD *)`: the command prefix CMD, word by word; `Bash(CMD)`:
//!   exactly CMD. Of any agent: a command is a command, whatever the agent calls its tool.
//! - `Read(PATH)`, `Edit(PATH)`, `Write(PATH)`: reads (with searches) or edits of PATH,
//!   a gitignore-style glob: `./p` and `p` in the session's folder, `/p` from the project
//!   root (the session's folder too), `//p` the absolute `/p`, `~/p` in the home folder.
//! - `WebFetch(domain:HOST)`: fetches (`kind = ["fetch"]`) from HOST or its subdomains.
//!
//! Invariant: a string this module cannot read exactly (a `*` inside a command, an unknown
//! specifier) is an error, never a wider rule.

/// The conditions a Claude rule string stands for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    pub tool: Vec<String>,
    pub kind: Vec<String>,
    pub command: Option<Vec<String>>,
    /// The command must be exactly `command`, with no more words.
    pub exact: bool,
    pub paths: Vec<String>,
    pub domain: Vec<String>,
}

/// Reads a Claude Code permission rule string.
pub fn read(rule: &str) -> Result<Conditions, String> {
    let rule = rule.trim();
    let bad = |why: &str| Err(format!("Claude rule {rule:?}: {why}"));
    let (tool, spec) = match rule.split_once('(') {
        None => (rule, None),
        Some((tool, rest)) => match rest.strip_suffix(')') {
            Some(spec) => (tool, Some(spec)),
            None => return bad("no closing parenthesis"),
        },
    };
    if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return bad("not a tool name");
    }
    let mut c = Conditions::default();
    let Some(spec) = spec.filter(|s| !s.trim().is_empty() && s.trim() != "*") else {
        if tool == "Bash" {
            // Every shell command, of any agent.
            c.kind = vec!["execute".into()];
            return Ok(c);
        }
        // Every call of the tool (or of an MCP server's tools).
        let name = if tool.starts_with("mcp__") && tool.matches("__").count() == 1 {
            format!("{tool}__*")
        } else {
            globset::escape(tool)
        };
        c.tool = vec![name];
        return Ok(c);
    };
    match tool {
        "Bash" => {
            // Any agent's shell command, as a command pattern (agents name their shell tool
            // differently, or not at all).
            let (cmd, prefix) = match spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *")) {
                Some(p) => (p, true),
                None => (spec, false),
            };
            if cmd.contains('*') {
                return bad("a `*` inside a command is not supported (only a prefix: `CMD:*`)");
            }
            let words = shlex::split(cmd).filter(|w| !w.is_empty());
            let Some(words) = words else {
                return bad("the command cannot be split into words");
            };
            c.command = Some(words);
            c.exact = !prefix;
        }
        "Read" | "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => {
            c.kind = if tool == "Read" {
                vec!["read".into(), "search".into()]
            } else {
                vec!["edit".into()]
            };
            c.paths = vec![path(spec).ok_or_else(|| format!("Claude rule {rule:?}: a path"))?];
        }
        "WebFetch" => {
            let Some(host) = spec.strip_prefix("domain:") else {
                return bad("WebFetch takes `domain:HOST`");
            };
            let host = host.trim().trim_start_matches("*.").to_ascii_lowercase();
            if host.is_empty() || host.contains(['/', '*', ' ']) {
                return bad("not a host name");
            }
            c.kind = vec!["fetch".into()];
            c.domain = vec![host];
        }
        _ => return bad("this tool takes no specifier the bridge can read"),
    }
    Ok(c)
}

/// A Claude path pattern as a glob the policy matches (relative to the session's folder,
/// or absolute).
fn path(spec: &str) -> Option<String> {
    let spec = spec.trim();
    if let Some(abs) = spec.strip_prefix("//") {
        return Some(format!("/{abs}"));
    }
    if let Some(home) = spec.strip_prefix("~/") {
        let h = std::env::var_os("HOME")?;
        return Some(format!(
            "{}/{home}",
            h.to_string_lossy().trim_end_matches('/')
        ));
    }
    // `./p` and `/p` are anchored at the project's root; gitignore-style, so is a pattern
    // with a slash inside. One without any slash matches at any depth of the project.
    let anchored = spec.starts_with("./") || spec.starts_with('/');
    let rel = spec.trim_start_matches("./").trim_start_matches('/');
    Some(if anchored || rel.contains('/') {
        rel.to_owned()
    } else {
        format!("**/{rel}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_strings_read_as_the_policy_conditions() {
        let c = read("Bash(npm run test:*)").unwrap();
        assert_eq!(
            c.command,
            Some(vec!["npm".into(), "run".into(), "test".into()])
        );
        assert!(!c.exact);
        let c = read("Bash(git diff)").unwrap();
        assert!(c.exact);
        assert_eq!(read("Bash(git log *)").unwrap().command.unwrap().len(), 2);
        assert_eq!(read("Bash").unwrap().kind, ["execute"]);
        assert_eq!(read("WebSearch").unwrap().tool, ["WebSearch"]);
        assert_eq!(read("mcp__github").unwrap().tool, ["mcp__github__*"]);
        let r = read("Read(./src/**)").unwrap();
        assert_eq!(
            (r.kind.as_slice(), r.paths.as_slice()),
            (
                &["read".to_owned(), "search".to_owned()][..],
                &["src/**".to_owned()][..]
            )
        );
        assert_eq!(read("Edit(//etc/hosts)").unwrap().paths, ["/etc/hosts"]);
        assert_eq!(read("Read(.env)").unwrap().paths, ["**/.env"]);
        assert_eq!(
            read("Edit(./package.json)").unwrap().paths,
            ["package.json"]
        );
        assert_eq!(read("Edit(/Makefile)").unwrap().paths, ["Makefile"]);
        assert_eq!(
            read("WebFetch(domain:Example.com)").unwrap().domain,
            ["example.com"]
        );
        for bad in [
            "Bash(git * main)",
            "Bash(git",
            "WebFetch(example.com)",
            "Task(x)",
            "Bash(\"unclosed)",
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }
}
