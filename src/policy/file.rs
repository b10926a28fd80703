//! The policy's files, in tiers (docs/POLICY.md):
//! - the user's: `--policy FILE`, and `$XDG_CONFIG_HOME/acp-question-bridge/policy.toml`
//!   (else `~/.config/...`);
//! - the project's: `.acp-question-bridge/policy.toml` in the session's folder. Its `allow`
//!   rules count only in a folder the user trusted (`acp-question-bridge policy trust DIR`,
//!   kept in the user's config folder): a cloned repository must never approve its own
//!   commands.
//!
//! Invariants: a file that cannot be read or parsed, a rule that is not valid, and an example
//! that does not come out as the rule says make the whole policy broken, with every reason
//! ([`super::Policy::broken`]). Each rule knows its file and line.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::command::{self, Command};
use super::{Decision, Policy, Rule, Tier};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    rule: Vec<toml::Spanned<RawRule>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: String,
    decision: Decision,
    justification: Option<String>,
    agent: Option<Vec<String>>,
    kind: Option<Vec<String>>,
    command: Option<Vec<Word>>,
    paths: Option<Vec<String>>,
    cwd: Option<Vec<String>>,
    tool: Option<Vec<String>>,
    domain: Option<Vec<String>>,
    exact: Option<bool>,
    claude: Option<String>,
    title: Option<String>,
    #[serde(default, rename = "match")]
    matches: Vec<String>,
    #[serde(default)]
    not_match: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Word {
    One(String),
    Any(Vec<String>),
}

/// The user's config folder: `$XDG_CONFIG_HOME/acp-question-bridge`, else
/// `~/.config/acp-question-bridge`.
pub fn config_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("XDG_CONFIG_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".config")))
        .map(|d| d.join("acp-question-bridge"))
}

/// The user's policy file.
pub fn user_file() -> Option<PathBuf> {
    config_dir().map(|d| d.join("policy.toml"))
}

/// The project's policy file in `cwd`.
pub fn project_file(cwd: &Path) -> PathBuf {
    cwd.join(".acp-question-bridge/policy.toml")
}

/// The file of trusted folders (one canonical path a line).
pub fn trusted_file() -> Option<PathBuf> {
    config_dir().map(|d| d.join("trusted-folders"))
}

/// Whether the user trusted folder `dir`.
pub fn is_trusted(dir: &Path) -> bool {
    let Some(list) = trusted_file().and_then(|f| std::fs::read_to_string(f).ok()) else {
        return false;
    };
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    list.lines().any(|l| Path::new(l.trim()) == dir)
}

/// Trusts `dir`: the `allow` rules of its project policy count. Returns the canonical path.
pub fn trust(dir: &Path) -> Result<PathBuf, String> {
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if !dir.is_dir() {
        return Err(format!("{} is not a folder", dir.display()));
    }
    let file = trusted_file().ok_or("no HOME or XDG_CONFIG_HOME for the user's config folder")?;
    if is_trusted(&dir) {
        return Ok(dir);
    }
    let mut text = std::fs::read_to_string(&file).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("{}\n", dir.display()));
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    crate::agents::fetch::keep(&file, text.as_bytes())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(dir)
}

/// Where the policy comes from.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `--policy FILE`: must exist.
    pub given: Vec<PathBuf>,
    /// The user's own file (read if it exists).
    pub user: Option<PathBuf>,
    /// The session's folder, for the project's file.
    pub project: Option<PathBuf>,
}

impl Sources {
    /// The defaults: the user's file, and the project's in `cwd`.
    pub fn defaults(given: Vec<PathBuf>, cwd: Option<PathBuf>) -> Self {
        let (given, user) = once(given, user_file());
        Sources {
            given,
            user,
            project: cwd,
        }
    }
}

/// The files given and the user's own, each once: a file given twice (the user's own file
/// also given with --policy) is read once, since its rules twice would be ids used twice,
/// a broken policy.
pub fn once(given: Vec<PathBuf>, user: Option<PathBuf>) -> (Vec<PathBuf>, Option<PathBuf>) {
    let same = |a: &PathBuf, b: &PathBuf| {
        a == b
            || a.canonicalize()
                .ok()
                .is_some_and(|a| b.canonicalize().ok() == Some(a))
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for g in given {
        if !files.iter().any(|o| same(o, &g)) {
            files.push(g);
        }
    }
    let user = user.filter(|u| !files.iter().any(|g| same(g, u)));
    (files, user)
}

/// Loads the policy; what could not be loaded makes it broken. Notes (project `allow`
/// rules left out in an untrusted folder) go to the log.
pub fn load(src: &Sources) -> Policy {
    let mut errors = Vec::new();
    let mut user = Vec::new();
    let mut read = |f: &Path, user: &mut Vec<Rule>| match read_rules(f) {
        Ok(r) => user.extend(r),
        Err(e) => errors.push(e),
    };
    for f in &src.given {
        read(f, &mut user);
    }
    if let Some(f) = src.user.as_ref().filter(|f| f.exists()) {
        read(f, &mut user);
    }
    let mut project = Vec::new();
    let mut trusted = false;
    if let Some(dir) = &src.project {
        let f = project_file(dir);
        if f.exists() {
            read(&f, &mut project);
            trusted = is_trusted(dir);
        }
    }
    compose(user, project, trusted, errors)
}

/// The policy of the user's rules and a project's (its `allow` rules only when `trusted`);
/// `errors` (and rule ids used twice) make it broken.
pub fn compose(
    user: Vec<Rule>,
    project: Vec<Rule>,
    trusted: bool,
    mut errors: Vec<String>,
) -> Policy {
    let project: Vec<Rule> = project
        .into_iter()
        .filter(|r| {
            let counts = trusted || r.decision != Decision::Allow;
            if !counts {
                tracing::warn!(rule = %r.id, file = %r.file.display(), "a project policy's allow rule counts only in a trusted folder (acp-question-bridge policy trust DIR); left out");
            }
            counts
        })
        .collect();
    let mut seen = std::collections::HashMap::new();
    for r in user.iter().chain(&project) {
        if let Some((file, line)) = seen.insert(r.id.clone(), (r.file.clone(), r.line)) {
            errors.push(format!(
                "{}:{}: rule id {:?} is already used at {}:{line}",
                r.file.display(),
                r.line,
                r.id,
                file.display()
            ));
        }
    }
    Policy {
        tiers: vec![
            Tier {
                name: "user",
                rules: user,
            },
            Tier {
                name: "project",
                rules: project,
            },
        ],
        broken: (!errors.is_empty()).then(|| errors.join("; ")),
    }
}

/// The rules of one file.
pub fn read_rules(path: &Path) -> Result<Vec<Rule>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_rules(&text, path)
}

/// The rules of a file's text.
pub fn parse_rules(text: &str, path: &Path) -> Result<Vec<Rule>, String> {
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_of(text, s.start));
        format!("{}:{line}: {}", path.display(), e.message())
    })?;
    let mut rules = Vec::new();
    for spanned in raw.rule {
        let line = line_of(text, spanned.span().start);
        let at = |msg: String| format!("{}:{line}: {msg}", path.display());
        let r = spanned.into_inner();
        rules.push(rule(r, path, line).map_err(at)?);
    }
    Ok(rules)
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

fn globs(patterns: &[String], what: &str) -> Result<globset::GlobSet, String> {
    let mut set = globset::GlobSetBuilder::new();
    for p in patterns {
        let glob = globset::GlobBuilder::new(p.trim_start_matches("./"))
            .literal_separator(true)
            .build()
            .map_err(|e| format!("{what} {p:?}: {e}"))?;
        set.add(glob);
    }
    set.build().map_err(|e| format!("{what}: {e}"))
}

/// Path patterns, split into absolute and relative ones.
fn path_globs(patterns: &[String]) -> Result<super::PathGlobs, String> {
    let (abs, rel): (Vec<String>, Vec<String>) =
        patterns.iter().cloned().partition(|p| p.starts_with('/'));
    Ok(super::PathGlobs {
        absolute: globs(&abs, "paths")?,
        relative: globs(&rel, "paths")?,
    })
}

fn rule(mut r: RawRule, path: &Path, line: usize) -> Result<Rule, String> {
    if r.id.trim().is_empty() || r.id.chars().any(char::is_control) {
        return Err("a rule needs an id (printable, not empty)".into());
    }
    if let Some(text) = &r.claude {
        let alone = r.command.is_none()
            && r.kind.is_none()
            && r.paths.is_none()
            && r.tool.is_none()
            && r.domain.is_none()
            && r.exact.is_none()
            && r.title.is_none();
        if !alone {
            return Err(format!(
                "rule {:?}: claude = \"...\" stands for command, kind, paths, tool, domain, exact and title; give none of them beside it",
                r.id
            ));
        }
        let mut c = super::claude::read(text).map_err(|e| format!("rule {:?}: {e}", r.id))?;
        // Claude's Edit covers every tool that changes a file. Other agents also delete and
        // move with tools of their own: a deny or ask covers those too (an allow stays
        // Claude's own meaning).
        if r.decision != Decision::Allow && c.kind == ["edit"] {
            c.kind.extend(["delete".to_owned(), "move".to_owned()]);
        }
        let some = |v: Vec<String>| (!v.is_empty()).then_some(v);
        r.tool = some(c.tool);
        r.kind = some(c.kind);
        r.paths = some(c.paths);
        r.domain = some(c.domain);
        r.command = c.command.map(|w| w.into_iter().map(Word::One).collect());
        r.exact = Some(c.exact);
    }
    let command = match r.command {
        None => None,
        Some(words) if words.is_empty() => {
            return Err(format!("rule {:?}: an empty command", r.id))
        }
        Some(words) => Some(
            words
                .into_iter()
                .map(|w| match w {
                    Word::One(s) => Ok(vec![s]),
                    Word::Any(v) if v.is_empty() => {
                        Err(format!("rule {:?}: an empty list of alternatives", r.id))
                    }
                    Word::Any(v) => Ok(v),
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let rule = Rule {
        id: r.id.clone(),
        decision: r.decision,
        file: path.to_owned(),
        line,
        justification: r.justification,
        agent: r.agent.as_deref().map(|a| globs(a, "agent")).transpose()?,
        kind: r.kind.unwrap_or_default(),
        command,
        paths: r.paths.as_deref().map(path_globs).transpose()?,
        cwd: r.cwd.as_deref().map(|p| globs(p, "cwd")).transpose()?,
        tool: r.tool.as_deref().map(|p| globs(p, "tool")).transpose()?,
        domain: r
            .domain
            .unwrap_or_default()
            .into_iter()
            .map(|d| d.trim().trim_start_matches("*.").to_ascii_lowercase())
            .collect(),
        exact: r.exact.unwrap_or(false),
        claude: r.claude.clone(),
        title: r
            .title
            .as_deref()
            .map(|t| regex::Regex::new(t).map_err(|e| format!("rule {:?}: title: {e}", r.id)))
            .transpose()?,
    };
    if (!r.matches.is_empty() || !r.not_match.is_empty()) && rule.command.is_none() {
        return Err(format!(
            "rule {:?}: match and not_match are commands; the rule has none",
            r.id
        ));
    }
    for example in &r.matches {
        if !example_fits(&rule, example) {
            return Err(format!(
                "rule {:?}: its example {example:?} is not covered by it",
                r.id
            ));
        }
    }
    for example in &r.not_match {
        if example_fits(&rule, example) {
            return Err(format!(
                "rule {:?}: its not_match example {example:?} is covered by it",
                r.id
            ));
        }
    }
    Ok(rule)
}

/// Whether a command example comes out as the rule says: an `allow` covers every part, a
/// `deny` or `ask` any part.
fn example_fits(rule: &Rule, example: &str) -> bool {
    match command::parse(example) {
        Command::Parts(parts) if rule.decision == Decision::Allow => {
            parts.iter().all(|p| rule.covers(p))
        }
        Command::Unparseable { .. } if rule.decision == Decision::Allow => false,
        cmd => cmd.any_parts().iter().any(|p| rule.covers(p)),
    }
}
