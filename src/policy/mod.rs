//! The approval policy (docs/POLICY.md): one set of rules for every agent's tool approvals,
//! read from TOML files in tiers ([`file`]), deciding each `allow`, `deny` or `ask`.
//! Invariants:
//! - Never fail open. A policy with a file that could not be read, parsed or checked
//!   ([`Policy::broken`]) decides nothing: every approval is asked.
//! - A higher tier always wins; within a tier `deny` beats `ask` beats `allow`; no rule: `ask`.
//! - `allow` needs every part of a compound command allowed, and a command that cannot be
//!   read safely is never allowed ([`command`]); a `deny` rule covers a call if it covers any
//!   part, even of a command that cannot be read.
//! - Paths are resolved as the OS opens them ([`path`]: links before `..`, `~` the home
//!   folder) before globs see them, and decided on as a tool that cleans `..` first would
//!   open them too; a path that cannot be resolved (over 4,095 bytes, a link loop) is never
//!   allowed. An `allow` with `paths` needs every path inside them, a `deny` or `ask` any one,
//!   and a `deny` or `ask` of `dir/**` covers `dir` too.
//! - A read or search of a folder is never allowed while a deny or ask rule (of the allowing
//!   rule's tier or a higher one) could match something beneath it: it is asked.
//! - The policy's own files ([`Policy::protected`], every `.acp-question-bridge` folder) are
//!   never changed on an allow: a call that may change them, or a command naming them, is
//!   asked (one naming the session's folder may still remove its policy folder: POLICY.md).

pub mod args;
pub mod claude;
pub mod command;
mod decide;
pub mod desk;
pub mod file;
mod fits;
mod forms;
mod gitconfig;
mod gitdir;
mod gitindex;
mod gitlinks;
pub mod gitplaces;
mod gitruns;
pub mod glob;
mod guard;
mod ignores;
mod landings;
mod links;
pub mod live;
mod moves;
mod named;
mod never;
mod npmbins;
mod npmdeclared;
mod npmlocks;
mod npmwork;
mod on_path;
mod parts;
pub mod path;
mod pathglobs;
mod prefixed;
mod rc;
pub mod remember;
pub mod shell;
mod tier;
mod tool_call;
mod wrapped;
pub mod wrappers;
mod writes;

use std::path::{Path, PathBuf};

use command::Command;
pub use moves::{keeps_its_folder, may_move_a_shell, with_its_shell, Shell};
pub use pathglobs::PathGlobs;
pub use tier::Tier;

/// What a rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Ask,
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// One word of a command pattern: any of these.
pub type Alternatives = Vec<String>;

/// One rule, as loaded.
#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub decision: Decision,
    /// Where it is written.
    pub file: PathBuf,
    pub line: usize,
    pub justification: Option<String>,
    /// Globs on the agent's name (or its program).
    pub agent: Option<globset::GlobSet>,
    /// ACP tool kinds.
    pub kind: Vec<String>,
    /// A command prefix, word by word.
    pub command: Option<Vec<Alternatives>>,
    /// Globs on paths: absolute ones, and ones relative to the session's folder.
    pub paths: Option<PathGlobs>,
    /// Globs on the session's folder (absolute, canonical).
    pub cwd: Option<globset::GlobSet>,
    /// Globs on the agent's name of the tool (`Bash`, `mcp__github__*`).
    pub tool: Option<globset::GlobSet>,
    /// Hosts a fetched URL must be on (or under).
    pub domain: Vec<String>,
    /// The command must be exactly `command`, with no more words.
    pub exact: bool,
    /// The Claude Code rule string it was written as, if any.
    pub claude: Option<String>,
    /// A regular expression on the tool call's title.
    pub title: Option<regex::Regex>,
}

/// A tool approval, as the policy reads it.
#[derive(Debug, Clone)]
pub struct Call {
    /// The agent's name (from `initialize`, else its command's).
    pub agent: String,
    /// The agent's name of the tool (`toolCall.name`, or Claude's `_meta.claudeCode.toolName`).
    pub tool: Option<String>,
    /// The URL it fetches (`rawInput.url`).
    pub url: Option<String>,
    /// Its command's name too, when that is not `agent`.
    pub program: Option<String>,
    pub kind: Option<String>,
    pub title: String,
    pub command: Option<Command>,
    /// As the agent gave them (absolute, or relative to `cwd`).
    pub paths: Vec<PathBuf>,
    /// The session's folder.
    pub cwd: PathBuf,
    /// What moved the agent's shell before this call, where its shell keeps its folder.
    pub shell: Shell,
    /// What the tool call may do that none of its fields says (a Codex patch's approval
    /// that names only the files it changes, not where one moves): such a call is never
    /// allowed.
    pub unsaid: Option<String>,
}

/// The policy's answer for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub decision: Decision,
    /// The rule that decided (none: the default `ask`, or a broken policy).
    pub rule: Option<RuleRef>,
    /// Why, in a sentence.
    pub why: String,
}

/// Which rule decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRef {
    pub id: String,
    pub file: PathBuf,
    pub line: usize,
    pub justification: Option<String>,
}

impl From<&Rule> for RuleRef {
    fn from(r: &Rule) -> Self {
        RuleRef {
            id: r.id.clone(),
            file: r.file.clone(),
            line: r.line,
            justification: r.justification.clone(),
        }
    }
}

/// The rules in force, by tier, highest first.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub tiers: Vec<Tier>,
    /// Why it decides nothing: the files that failed, with their errors.
    pub broken: Option<String>,
    /// The policy's own files, resolved (`guard::own_files`): never changed on an allow.
    pub protected: Vec<PathBuf>,
}

/// `path` as the OS opens it from `cwd` ([`path::resolve`]: links before `..`, `~` the home
/// folder, a path that does not exist yet with the rest appended); `None` when it is not
/// resolved (longer than [`path::MAX_PATH_BYTES`], a link loop, `~user`): never an allow.
pub fn resolve(p: &Path, cwd: &Path) -> Option<PathBuf> {
    path::resolve(p, cwd).map(|r| r.path)
}

impl Policy {
    /// Decides `call`.
    pub fn decide(&self, call: &Call) -> Verdict {
        if let Some(why) = &self.broken {
            return Verdict {
                decision: Decision::Ask,
                rule: None,
                why: format!("the policy decides nothing while a file of it is broken: {why}"),
            };
        }
        // The session's folder and the paths as the OS names them ([`guard::Seen`]).
        let seen = guard::Seen::of(call);
        let call = &Call {
            cwd: seen.cwd.clone(),
            ..call.clone()
        };
        let mut refused = None;
        // The folders the agent's shell may be in (an earlier `cd` of Claude's Bash).
        let mut starts = Vec::new();
        let verdict = match &call.command {
            None => self.decide_plain(call, &seen.paths),
            Some(cmd) => self.decide_command(call, &seen.paths, cmd, &mut refused, &mut starts),
        };
        if verdict.decision != Decision::Allow {
            return verdict;
        }
        // An edit of a file in a folder on PATH inside the session plants a program.
        let reads = matches!(
            call.kind.as_deref(),
            Some("read" | "search" | "fetch" | "think")
        );
        let planted = || {
            let at = std::slice::from_ref(&call.cwd);
            (call.command.is_none() && !reads)
                .then(|| {
                    seen.paths
                        .iter()
                        .find_map(|p| on_path::write_refused(p, at, &call.cwd))
                })
                .flatten()
        };
        match self
            .never_allowed(call, &seen, &verdict, &starts)
            .or(refused)
            .or_else(planted)
        {
            Some(why) => Verdict {
                decision: Decision::Ask,
                rule: None,
                why: match &verdict.rule {
                    Some(r) => format!("rule {:?} would allow it, but {why}", r.id),
                    None => why,
                },
            },
            None => verdict,
        }
    }

    /// A call with no command: the highest tier with a rule that fits decides.
    fn decide_plain(&self, call: &Call, paths: &[PathBuf]) -> Verdict {
        for tier in &self.tiers {
            let cover = tier.cover(&call.cwd);
            for d in [Decision::Deny, Decision::Ask, Decision::Allow] {
                // A call that runs something whose command could not be read is never
                // allowed: only a command pattern allows a command.
                if d == Decision::Allow && call.kind.as_deref() == Some("execute") {
                    continue;
                }
                let rule = tier.rules().iter().enumerate().find(|(i, r)| {
                    r.decision == d
                        && r.command.is_none()
                        && r.fits_by(call, paths, |p| cover.covers(*i, p))
                });
                if let Some((_, r)) = rule {
                    return Verdict {
                        decision: d,
                        rule: Some(r.into()),
                        why: format!("rule {:?} in the {} tier", r.id, tier.name),
                    };
                }
            }
        }
        no_rule()
    }

    /// What the policy says of one command of a line: the highest tier with a rule that
    /// covers it decides (deny, then ask, then allow). Deny and ask rules look at every
    /// command seen in it (`seen`: wrappers seen through), and those on paths at the paths
    /// each names (`named`, beside `seen`: [`named`]); an allow needs a command pattern
    /// that covers the plain part itself (`plain`), never a command seen inside it.
    fn decide_part<'a>(
        &'a self,
        call: &Call,
        paths: &[PathBuf],
        seen: &[&[String]],
        named: &[named::Named],
        plain: Option<&[String]>,
    ) -> Option<(Decision, &'a Rule, &'static str, Vec<String>)> {
        // The commands whose words no model places: any of their words may start a command
        // they run (`setarch x86_64 rm …`, a runner no table knows).
        let unplaced: Vec<bool> = seen
            .iter()
            .map(|w| !matches!(args::read(w), args::Reading::Understood(_)))
            .collect();
        // Their words but the first, by name too (`/bin/rm`: `rm`), to pass over at once the
        // rules whose program none of them names.
        let inner_words: std::collections::HashSet<&str> = seen
            .iter()
            .zip(&unplaced)
            .filter(|(_, u)| **u)
            .flat_map(|(w, _)| w.iter().skip(1))
            .flat_map(|w| [w.as_str(), args::base(w)])
            .collect();
        // The programs the commands start, by name too: a rule on another program covers
        // none of them and names no path ([`Rule::covers_named`]), so it is passed over at
        // once, never read: the tier's index gives only the others ([`Tier::may_cover`],
        // benches/policy.rs).
        let programs: Vec<&str> = seen
            .iter()
            .copied()
            .chain(plain)
            .filter_map(|w| w.first())
            .flat_map(|w| [w.as_str(), args::base(w)])
            .collect();
        let may_cover = |r: &Rule| match r.command.as_deref().and_then(|c| c.first()) {
            None => true,
            Some(alts) => alts.iter().any(|a| {
                programs.contains(&a.as_str())
                    || (r.decision != Decision::Allow && inner_words.contains(a.as_str()))
            }),
        };
        for tier in &self.tiers {
            // One pass a tier: the first rule of the strongest decision that covers it.
            let mut best: Option<(Decision, &Rule, &[String])> = None;
            // Each path matched once against all the tier's deny and ask rules on paths.
            let cover = tier.cover(&call.cwd);
            let candidates = tier.may_cover(programs.iter().copied(), inner_words.iter().copied());
            for i in candidates {
                let r = &tier.rules()[i];
                let covers = |p| cover.covers(i, p);
                if best.is_some_and(|(d, ..)| d >= r.decision) || !may_cover(r) {
                    continue;
                }
                let covered = if r.decision == Decision::Allow {
                    plain.filter(|_| r.command.is_some()).and_then(|p| {
                        if r.covers(p) {
                            return Some(p);
                        }
                        // `git --no-pager log` is `git log` to a rule, `cargo +nightly fmt`
                        // `cargo fmt`, when the model reads the options taken off as harmless.
                        seen.iter().copied().find(|w| {
                            w.len() < p.len()
                                && w.first() == p.first()
                                && r.covers(w)
                                && matches!(args::read(p), args::Reading::Understood(_))
                        })
                    })
                } else {
                    seen.iter().copied().find(|w| r.covers(w))
                };
                if let Some(words) = covered {
                    if r.fits_by(call, paths, covers) {
                        best = Some((r.decision, r, words));
                        if r.decision == Decision::Deny {
                            break;
                        }
                        continue;
                    }
                }
                // A deny or ask of a program named inside a command no model reads: asked.
                let names_inside = r.command.as_ref().is_some_and(|c| {
                    c.first()
                        .is_some_and(|alts| alts.iter().any(|a| inner_words.contains(a.as_str())))
                });
                if r.decision != Decision::Allow && names_inside {
                    let inside = seen.iter().zip(&unplaced).find_map(|(w, u)| {
                        // Its global options taken off too (`rustup run stable git -P
                        // push`: `git push`).
                        let fits = |i: usize| {
                            r.prefix_fits(&w[i..])
                                || wrappers::normalized(&w[i..]).is_some_and(|n| r.prefix_fits(&n))
                        };
                        (*u && (1..w.len()).any(fits)).then_some(*w)
                    });
                    if let Some(words) = inside {
                        if r.fits_by(call, paths, covers)
                            && best.is_none_or(|(b, ..)| b < Decision::Ask)
                        {
                            best = Some((Decision::Ask, r, words));
                        }
                    }
                }
                // A rule on paths, and the paths the commands name.
                let by_paths = named
                    .iter()
                    .zip(seen)
                    .find_map(|(n, w)| r.covers_named(call, n, covers).map(|d| (d, *w)));
                if let Some((d, words)) = by_paths {
                    if best.is_none_or(|(b, ..)| d > b) {
                        best = Some((d, r, words));
                        if d == Decision::Deny {
                            break;
                        }
                    }
                }
            }
            if let Some((d, r, words)) = best {
                return Some((d, r, tier.name, words.to_vec()));
            }
        }
        None
    }

    /// Every rule, highest tier first.
    pub fn rules(&self) -> impl Iterator<Item = (&'static str, &Rule)> {
        self.tiers
            .iter()
            .flat_map(|t| t.rules().iter().map(move |r| (t.name, r)))
    }
}

/// Words as shown in a message: escaped, cut at 200 characters.
fn escape_words(words: &[String]) -> String {
    let text = shell::escape(&words.join(" "));
    if text.chars().count() > 200 {
        let cut: String = text.chars().take(200).collect();
        format!("{cut}…")
    } else {
        text
    }
}

fn no_rule() -> Verdict {
    Verdict {
        decision: Decision::Ask,
        rule: None,
        why: "no rule covers it".into(),
    }
}

#[cfg(test)]
mod argument_tests;
#[cfg(test)]
mod path_tests;
#[cfg(test)]
mod tests;
