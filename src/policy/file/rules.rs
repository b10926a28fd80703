//! One policy file's text into rules (docs/POLICY.md): the TOML shape, each rule checked as
//! it is read (its id, its globs, a Claude permission string in its stead, its command's
//! words) and its `match` / `not_match` examples tried against it. An error names the file
//! and the rule's line.

use std::path::Path;

use serde::Deserialize;

use crate::policy::{claude, command, Decision, PathGlobs, Rule};

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

/// The rules of one file.
pub fn read_rules(path: &Path) -> Result<Vec<Rule>, String> {
    let text = super::read_text(path).map_err(|e| format!("{}: {e}", path.display()))?;
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

/// Path patterns, split into absolute and relative ones; a deny's or an ask's match in
/// either case (a file system that ignores case opens `.ENV` for `.env`), an allow's only
/// as written.
fn path_globs(patterns: &[String], decision: Decision) -> Result<PathGlobs, String> {
    PathGlobs::new(patterns, decision != Decision::Allow)
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
        let mut c = claude::read(text).map_err(|e| format!("rule {:?}: {e}", r.id))?;
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
        paths: r
            .paths
            .as_deref()
            .map(|p| path_globs(p, r.decision))
            .transpose()?,
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
    let cmd = command::parse(example);
    if rule.decision == Decision::Allow {
        return match (cmd.parts(), cmd.not_allowable()) {
            (Some(parts), None) => parts.iter().all(|p| rule.covers(&p.words)),
            _ => false,
        };
    }
    cmd.seen.iter().any(|p| rule.covers(p))
}
