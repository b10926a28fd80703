//! The policy's files, in tiers (docs/POLICY.md):
//! - the user's: `--policy FILE`, and `$XDG_CONFIG_HOME/acp-question-bridge/policy.toml`
//!   (else `~/.config/...`);
//! - the project's: `.acp-question-bridge/policy.toml` in the session's folder. Its `allow`
//!   rules count only while its content is the one the user trusted (`acp-question-bridge
//!   policy trust DIR` keeps the file's SHA-256 in the user's config folder): a cloned
//!   repository, or a `git pull`, must never approve its own commands.
//!
//! Invariants:
//! - A user-tier file that cannot be read or parsed, a rule that is not valid, and an
//!   example that does not come out as the rule says make the whole policy broken, with
//!   every reason ([`super::Policy::broken`]). Each rule knows its file and line.
//! - A project file never weakens the user's: one with an error, a rule id a user-tier file
//!   uses, or that is a user-tier file (a link to it) is ignored as a whole ([`Left`]), and
//!   the user's rules stay in force.
//!
//! A file's text becomes rules in `file/rules.rs` ([`parse_rules`]).

use std::path::{Path, PathBuf};

use super::{Decision, Policy, Rule, Tier};

pub(crate) mod bounded;
mod rules;
pub use rules::{parse_rules, read_rules};

/// The config folder this process reads, once fixed ([`fix_config_dir`]).
static FIXED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Fixes the user's config folder this process reads to `dir` (the path the wall around the
/// agent keeps read-only, its links resolved): a link on the way there, which the agent may
/// replace, is then never followed again. Once per process; later calls change nothing.
pub fn fix_config_dir(dir: PathBuf) {
    let _ = FIXED.set(dir);
}

/// The user's config folder: `$XDG_CONFIG_HOME/acp-question-bridge`, else
/// `~/.config/acp-question-bridge` (or the one fixed by [`fix_config_dir`]).
pub fn config_dir() -> Option<PathBuf> {
    if let Some(d) = FIXED.get() {
        return Some(d.clone());
    }
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

/// The file of trusted folders, one a line: `sha256:HEX<TAB>/canonical/dir`, the SHA-256 of
/// the folder's project file as the user trusted it. A line with only a path (as older
/// versions wrote) trusts no content: its allow rules wait until the folder is trusted again.
pub fn trusted_file() -> Option<PathBuf> {
    config_dir().map(|d| d.join("trusted-folders"))
}

/// One line of the trusted folders' file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trusted {
    /// The folder, canonical.
    pub dir: PathBuf,
    /// The SHA-256 (lower-case hex) of its project file when it was trusted; `None`: an old
    /// line, no content trusted.
    pub sha256: Option<String>,
}

/// The lines of the trusted folders' file `text` (a line that is neither form is skipped).
pub fn parse_trusted(text: &str) -> Vec<Trusted> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_end_matches('\r');
            if let Some(rest) = l.strip_prefix("sha256:") {
                let (hex, dir) = rest.split_once('\t')?;
                let ok = hex.len() == 64
                    && hex
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
                return (ok && dir.starts_with('/')).then(|| Trusted {
                    dir: PathBuf::from(dir),
                    sha256: Some(hex.to_owned()),
                });
            }
            let l = l.trim();
            l.starts_with('/').then(|| Trusted {
                dir: PathBuf::from(l),
                sha256: None,
            })
        })
        .collect()
}

pub use bounded::{read_file, MAX_FILE};

/// [`read_file`] as text.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_file(path)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"))
}

/// The trusted folders, as their file says now (none if it cannot be read).
pub fn trusted_folders() -> Vec<Trusted> {
    trusted_file()
        .and_then(|f| read_text(&f).ok())
        .map(|t| parse_trusted(&t))
        .unwrap_or_default()
}

/// The SHA-256 of `bytes`, lower-case hex.
pub fn sha256(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether a project's `allow` rules count: trust is for a content, not a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// Its folder is trusted with this very content.
    Trusted,
    /// Its folder was never trusted.
    Untrusted,
    /// Its folder was trusted with another content (`trusted`): the file changed since.
    Changed { trusted: String, now: String },
    /// Its folder was trusted by an old line, with no content.
    NoContent,
}

impl Trust {
    /// The trust of the project file of folder `dir` whose content has SHA-256 `now`.
    pub fn of(dir: &Path, now: &str, folders: &[Trusted]) -> Trust {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
        let mine: Vec<&Trusted> = folders.iter().filter(|t| t.dir == dir).collect();
        if mine.iter().any(|t| t.sha256.as_deref() == Some(now)) {
            return Trust::Trusted;
        }
        if let Some(trusted) = mine.iter().rev().find_map(|t| t.sha256.clone()) {
            return Trust::Changed {
                trusted,
                now: now.to_owned(),
            };
        }
        if mine.is_empty() {
            Trust::Untrusted
        } else {
            Trust::NoContent
        }
    }

    /// Why the allow rules of `file` (in folder `dir`) do not count; `None`: they do.
    pub fn why_not(&self, dir: &Path, file: &Path) -> Option<String> {
        let again = format!(
            "its allow rules are left out (asked) until you trust it again: acp-question-bridge policy trust {}",
            dir.display()
        );
        match self {
            Trust::Trusted => None,
            Trust::Untrusted => Some(format!(
                "{} is not trusted, so its allow rules are left out (asked); to trust this content: acp-question-bridge policy trust {}",
                dir.display(),
                dir.display()
            )),
            Trust::Changed { trusted, now } => Some(format!(
                "{} changed since its folder was trusted (trusted sha256:{}..., now sha256:{}...), so {again}",
                file.display(),
                &trusted[..12.min(trusted.len())],
                &now[..12.min(now.len())]
            )),
            Trust::NoContent => Some(format!(
                "{} was trusted as a folder, before trust was kept for a content (its line in the trusted folders has no hash), so {again}",
                dir.display()
            )),
        }
    }
}

/// Trusts the current content of `dir`'s project policy: its `allow` rules count while the
/// file has this content. Returns the canonical folder, the file, its SHA-256 and its rules.
pub fn trust(dir: &Path) -> Result<(PathBuf, PathBuf, String, Vec<Rule>), String> {
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if !dir.is_dir() {
        return Err(format!("{} is not a folder", dir.display()));
    }
    let line_safe = |s: &str| !s.contains(['\n', '\r']);
    if !line_safe(&dir.to_string_lossy()) || dir.to_str().is_none() {
        return Err(format!(
            "{:?}: a folder whose name is not UTF-8 or has a line break cannot be trusted",
            dir
        ));
    }
    let project = project_file(&dir);
    let bytes = read_file(&project).map_err(|e| {
        format!(
            "{}: {e} (trust is for a project policy's content: there is none to trust)",
            project.display()
        )
    })?;
    let text = String::from_utf8(bytes.clone())
        .map_err(|_| format!("{}: not UTF-8", project.display()))?;
    let rules =
        parse_rules(&text, &project).map_err(|e| format!("{e} (fix the file, then trust it)"))?;
    let hash = sha256(&bytes);
    let file = trusted_file().ok_or("no HOME or XDG_CONFIG_HOME for the user's config folder")?;
    let old = read_text(&file).unwrap_or_default();
    // The folder's earlier lines (any content, or none) give way to this one.
    let mut text: String = old
        .lines()
        .filter(|l| parse_trusted(l).first().is_none_or(|t| t.dir != dir))
        .map(|l| format!("{l}\n"))
        .collect();
    text.push_str(&format!("sha256:{hash}\t{}\n", dir.display()));
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    crate::agents::fetch::keep(&file, text.as_bytes())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok((dir, project, hash, rules))
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

/// Loads the policy; what could not be loaded in the user's tier makes it broken. A project
/// file with an error, or that clashes with the user's files, is ignored ([`Left::Ignored`]);
/// its allow rules wait for trust in its content ([`Left::Untrusted`]).
pub fn load(src: &Sources) -> (Policy, Option<Left>) {
    let mut errors = Vec::new();
    let mut user = Vec::new();
    let mut ids = Vec::new();
    let mut read = |f: &Path, user: &mut Vec<Rule>| {
        ids.extend(file_id(f));
        match read_rules(f) {
            Ok(r) => user.extend(r),
            Err(e) => errors.push(e),
        }
    };
    for f in &src.given {
        read(f, &mut user);
    }
    if let Some(f) = src.user.as_ref().filter(|f| f.exists()) {
        read(f, &mut user);
    }
    let project = src.project.as_ref().and_then(|dir| {
        let f = project_file(dir);
        let read = match read_file(&f) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => Err(format!("{}: {e}", f.display())),
            Ok(bytes) => Ok(bytes),
        };
        let sha256 = read.as_deref().map(sha256).unwrap_or_default();
        let rules = read.and_then(|b| {
            let text = String::from_utf8(b).map_err(|_| format!("{}: not UTF-8", f.display()))?;
            parse_rules(&text, &f)
        });
        let same = file_id(&f).is_some_and(|id| ids.contains(&id));
        Some(Project {
            dir: dir.clone(),
            file: f,
            rules,
            trust: Trust::of(dir, &sha256, &trusted_folders()),
            same_as_user: same,
        })
    });
    let (mut policy, left) = compose(user, project, errors);
    let own = src.given.iter().chain(&src.user).cloned();
    let own = own.chain(user_file()).chain(trusted_file());
    policy.protected = super::guard::own_files(own, src.project.as_deref());
    (policy, left)
}

/// A file's device and inode (a link's target's).
pub fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// A project's policy file, as read.
#[derive(Debug, Clone)]
pub struct Project {
    /// The session's folder.
    pub dir: PathBuf,
    pub file: PathBuf,
    /// Its rules, or why it could not be read.
    pub rules: Result<Vec<Rule>, String>,
    /// Whether its content is trusted.
    pub trust: Trust,
    /// Whether it is a user-tier file (the same device and inode: a link to it, or it).
    pub same_as_user: bool,
}

/// Why a project's file, or its allow rules, are not in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Left {
    /// The file is ignored as a whole: it has an error, or it clashes with a user-tier file
    /// (a rule id the user's files use, or it is one of them). The user's rules stay in force.
    Ignored { file: PathBuf, why: String },
    /// Its `allow` rules are left out (asked); its `deny` and `ask` rules count. `trust` says
    /// why: never trusted, or trusted with another content.
    Untrusted {
        file: PathBuf,
        why: String,
        trust: Trust,
    },
}

impl Left {
    /// The sentence for the user: what is left out, and why.
    pub fn said(&self) -> String {
        match self {
            Left::Ignored { file, why } => format!(
                "the project file {} is ignored as a whole (your own rules stay in force): {why}",
                file.display()
            ),
            Left::Untrusted { why, .. } => why.clone(),
        }
    }
}

/// The policy of the user's rules and a project's; `errors` (of the user's files) and rule
/// ids used twice in the user's files make it broken. A project file never weakens the
/// user's: one with an error or a clash is left out as a whole, and its allow rules count
/// only when its content is trusted.
pub fn compose(
    user: Vec<Rule>,
    project: Option<Project>,
    mut errors: Vec<String>,
) -> (Policy, Option<Left>) {
    let mut seen = std::collections::HashMap::new();
    for r in &user {
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
    let (project, left) = match project {
        None => (Vec::new(), None),
        Some(p) => project_rules(p, &seen),
    };
    let policy = Policy {
        tiers: vec![Tier::new("user", user), Tier::new("project", project)],
        broken: (!errors.is_empty()).then(|| errors.join("; ")),
        // Filled by the caller, who knows the files ([`load`], [`super::live`]).
        protected: Vec::new(),
    };
    (policy, left)
}

/// The rules of project file `p` in force beside the user's (`user_ids`: their ids, with
/// where), and what is left out.
fn project_rules(
    p: Project,
    user_ids: &std::collections::HashMap<String, (PathBuf, usize)>,
) -> (Vec<Rule>, Option<Left>) {
    let ignored = |why: String| {
        (
            Vec::new(),
            Some(Left::Ignored {
                file: p.file.clone(),
                why,
            }),
        )
    };
    let rules = match p.rules {
        Err(e) => return ignored(e),
        Ok(r) => r,
    };
    if p.same_as_user {
        return ignored(format!(
            "{} is a file of the user's tier (a link to it, or it)",
            p.file.display()
        ));
    }
    let mut own = std::collections::HashMap::new();
    for r in &rules {
        if let Some((file, line)) = user_ids.get(&r.id) {
            return ignored(format!(
                "{}:{}: rule id {:?} is already used by the user's {}:{line}",
                r.file.display(),
                r.line,
                r.id,
                file.display()
            ));
        }
        if let Some(line) = own.insert(r.id.clone(), r.line) {
            return ignored(format!(
                "{}:{}: rule id {:?} is already used at line {line}",
                r.file.display(),
                r.line,
                r.id
            ));
        }
    }
    let why = p.trust.why_not(&p.dir, &p.file);
    let before = rules.len();
    let rules: Vec<Rule> = rules
        .into_iter()
        .filter(|r| why.is_none() || r.decision != Decision::Allow)
        .collect();
    let left = match why {
        Some(why) if rules.len() < before => Some(Left::Untrusted {
            file: p.file,
            why,
            trust: p.trust,
        }),
        _ => None,
    };
    (rules, left)
}
