//! The policy in force in a running bridge: its files read again whenever they change.
//!
//! Before each decision every file the policy is made of is looked at again (a `stat`: its
//! device, inode, size and times), so an edit, an atomic replace (a new inode) or a rule
//! that another bridge or the page wrote counts from the next approval on, with no watcher
//! and no delay. Each file keeps its last good rules:
//! - a file that is broken from the start (cannot be read or parsed, or an example fails)
//!   makes the policy broken: it decides nothing, every approval is asked;
//! - a bad edit of a file that was good keeps its last good rules in force, and says so.
//!
//! A missing user file is no rules; a missing `--policy FILE` is an error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::file::{self, compose, read_rules};
use super::{Policy, Rule};

/// How many files are remembered before the projects' are forgotten.
const MAX_FILES: usize = 256;

/// What identifies one version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
    })
}

/// One file of the policy, as last read.
#[derive(Debug, Default)]
struct Watched {
    /// `None`: missing (or never looked at).
    stamp: Option<Option<Stamp>>,
    /// The last rules read from it that were good.
    good: Option<Vec<Rule>>,
    /// Why its current version is not in force.
    error: Option<String>,
}

/// A change in the policy's files, to be said where the user looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A file was read again and is in force.
    Reloaded(PathBuf),
    /// A file changed and is broken now; its last good rules stay in force.
    KeptLastGood { file: PathBuf, error: String },
}

/// A policy made of files, and their stamps when it was made.
type Composed = (Vec<Option<Stamp>>, Arc<Policy>);

/// The policy's files and what was read from them.
#[derive(Debug)]
pub struct Live {
    given: Vec<PathBuf>,
    user: Option<PathBuf>,
    files: HashMap<PathBuf, Watched>,
    /// The trusted folders' file, by its stamp.
    trusted: Option<(Option<Stamp>, Vec<PathBuf>)>,
    /// The policy for each session folder (`None`: no project), and the stamps it was made
    /// from.
    composed: HashMap<Option<PathBuf>, Composed>,
}

impl Live {
    /// `--policy FILE`s (must exist) and the user's own file (read if it exists).
    pub fn new(given: Vec<PathBuf>, user: Option<PathBuf>) -> Self {
        let (given, user) = file::once(given, user);
        Live {
            given,
            user,
            files: HashMap::new(),
            trusted: None,
            composed: HashMap::new(),
        }
    }

    /// The files of the policy for a session in `cwd`, each with whether it must exist.
    fn paths(&self, cwd: Option<&Path>) -> Vec<(PathBuf, bool)> {
        let mut all: Vec<(PathBuf, bool)> = self.given.iter().map(|f| (f.clone(), true)).collect();
        all.extend(self.user.iter().map(|f| (f.clone(), false)));
        all.extend(cwd.map(|d| (file::project_file(d), false)));
        all
    }

    /// Reads `path` again if it changed; returns its stamp.
    fn refresh(&mut self, path: &Path, required: bool, changes: &mut Vec<Change>) -> Option<Stamp> {
        let now = stamp(path);
        let w = self.files.entry(path.to_owned()).or_default();
        if w.stamp == Some(now) {
            return now;
        }
        let first = w.stamp.is_none();
        w.stamp = Some(now);
        let read = match now {
            None if !required => Ok(Vec::new()),
            None => Err(format!(
                "{}: cannot read it (it does not exist)",
                path.display()
            )),
            Some(_) => read_rules(path),
        };
        match read {
            Ok(rules) => {
                if !first {
                    tracing::info!(file = %path.display(), rules = rules.len(), "policy file read again; in force");
                    changes.push(Change::Reloaded(path.to_owned()));
                }
                w.good = Some(rules);
                w.error = None;
            }
            Err(error) => {
                if w.good.is_some() {
                    tracing::warn!(%error, "policy file changed and is broken now; its last good rules stay in force");
                    changes.push(Change::KeptLastGood {
                        file: path.to_owned(),
                        error: error.clone(),
                    });
                } else {
                    tracing::warn!(%error, "policy file is broken: the policy decides nothing, every approval is asked");
                }
                w.error = Some(error);
            }
        }
        now
    }

    /// The trusted folders, read again if their file changed.
    fn trusted_folders(&mut self) -> (Option<Stamp>, Vec<PathBuf>) {
        let Some(f) = file::trusted_file() else {
            return (None, Vec::new());
        };
        let now = stamp(&f);
        match &self.trusted {
            Some((s, list)) if *s == now => (now, list.clone()),
            _ => {
                let list: Vec<PathBuf> = std::fs::read_to_string(&f)
                    .unwrap_or_default()
                    .lines()
                    .map(|l| PathBuf::from(l.trim()))
                    .filter(|l| !l.as_os_str().is_empty())
                    .collect();
                self.trusted = Some((now, list.clone()));
                (now, list)
            }
        }
    }

    /// The policy for a session in `cwd` (`None`: no project file), with what changed in its
    /// files since they were last read.
    pub fn policy(&mut self, cwd: Option<&Path>) -> (Arc<Policy>, Vec<Change>) {
        let mut changes = Vec::new();
        // Project files of many folders: forget them all (the user's are kept, with their
        // last good rules), to be read again when their folder asks.
        if self.files.len() > MAX_FILES {
            let own: Vec<PathBuf> = self.given.iter().chain(&self.user).cloned().collect();
            self.files.retain(|p, _| own.contains(p));
            self.composed.clear();
        }
        let paths = self.paths(cwd);
        let mut stamps: Vec<Option<Stamp>> = paths
            .iter()
            .map(|(p, required)| self.refresh(p, *required, &mut changes))
            .collect();
        let (trusted_stamp, trusted) = match cwd {
            Some(_) => self.trusted_folders(),
            None => (None, Vec::new()),
        };
        stamps.push(trusted_stamp);
        let key = cwd.map(Path::to_owned);
        if let Some((s, p)) = self.composed.get(&key) {
            if *s == stamps {
                return (p.clone(), changes);
            }
        }
        let mut errors = Vec::new();
        let mut user = Vec::new();
        let mut project = Vec::new();
        let project_file = cwd.map(file::project_file);
        for (p, _) in &paths {
            let w = &self.files[p];
            if let (Some(e), None) = (&w.error, &w.good) {
                errors.push(e.clone());
            }
            let rules = w.good.iter().flatten().cloned();
            if Some(p) == project_file.as_ref() {
                project.extend(rules);
            } else {
                user.extend(rules);
            }
        }
        let is_trusted = cwd.is_some_and(|d| {
            let d = d.canonicalize().unwrap_or_else(|_| d.to_owned());
            trusted.contains(&d)
        });
        let policy = Arc::new(compose(user, project, is_trusted, errors));
        if self.composed.len() >= 64 {
            self.composed.clear();
        }
        self.composed.insert(key, (stamps, policy.clone()));
        (policy, changes)
    }

    /// The files and their state, for `bridge.status` and the page: each file with its
    /// rules in force and, if its current version is not in force, why.
    pub fn status(&self) -> serde_json::Value {
        let mut files: Vec<_> = self
            .files
            .iter()
            .filter(|(_, w)| w.stamp.is_some_and(|s| s.is_some()) || w.error.is_some())
            .map(|(p, w)| {
                serde_json::json!({
                    "file": p.display().to_string(),
                    "rules": w.good.as_ref().map_or(0, Vec::len),
                    "error": w.error,
                    "inForce": w.good.is_some(),
                })
            })
            .collect();
        files.sort_by(|a, b| a["file"].as_str().cmp(&b["file"].as_str()));
        let broken: Vec<&str> = self
            .files
            .values()
            .filter(|w| w.good.is_none())
            .filter_map(|w| w.error.as_deref())
            .collect();
        serde_json::json!({
            "files": files,
            "broken": (!broken.is_empty()).then(|| broken.join("; ")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Call, Decision};

    fn call(cmd: &str, cwd: &Path) -> Call {
        Call::from_tool_call(
            &serde_json::json!({"kind": "execute", "title": cmd, "rawInput": {"command": cmd}}),
            "mock",
            cwd,
        )
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("acp-qb-live-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write_atomically(path: &Path, text: &str) {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }

    #[test]
    fn an_edit_counts_from_the_next_decision_and_a_bad_one_keeps_the_last_good() {
        let dir = scratch("edit");
        let f = dir.join("policy.toml");
        std::fs::write(
            &f,
            "[[rule]]\nid = \"t\"\ndecision = \"allow\"\ncommand = [\"cargo\", \"test\"]\n",
        )
        .unwrap();
        let mut live = Live::new(vec![f.clone()], None);
        let (p, changes) = live.policy(None);
        assert!(changes.is_empty());
        assert_eq!(
            p.decide(&call("cargo test", &dir)).decision,
            Decision::Allow
        );

        // An atomic replace that adds a deny rule.
        write_atomically(
            &f,
            "[[rule]]\nid = \"t\"\ndecision = \"deny\"\ncommand = [\"cargo\", \"test\"]\n",
        );
        let (p, changes) = live.policy(None);
        assert_eq!(changes, vec![Change::Reloaded(f.clone())]);
        assert_eq!(p.decide(&call("cargo test", &dir)).decision, Decision::Deny);

        // A bad edit: the last good rules stay, and the change says why.
        write_atomically(&f, "[[rule]]\nid = \"t\"\ndecision = \"sometimes\"\n");
        let (p, changes) = live.policy(None);
        assert!(
            matches!(&changes[..], [Change::KeptLastGood { file, .. }] if *file == f),
            "{changes:?}"
        );
        assert!(p.broken.is_none());
        assert_eq!(p.decide(&call("cargo test", &dir)).decision, Decision::Deny);
        assert!(live.status()["files"][0]["error"]
            .as_str()
            .unwrap()
            .contains("sometimes"));
        // Nothing changed: nothing said again.
        assert!(live.policy(None).1.is_empty());
    }

    #[test]
    fn a_file_broken_from_the_start_or_missing_decides_nothing() {
        let dir = scratch("broken");
        let f = dir.join("policy.toml");
        std::fs::write(&f, "[[rule]]\nid = \"t\"\ndecision = \"allow\"\ncommand = [\"cargo\"]\nmatch = [\"git status\"]\n").unwrap();
        let mut live = Live::new(vec![f.clone()], None);
        let (p, _) = live.policy(None);
        assert!(
            p.broken.as_deref().unwrap().contains("git status"),
            "{:?}",
            p.broken
        );
        assert_eq!(p.decide(&call("cargo test", &dir)).decision, Decision::Ask);

        let mut live = Live::new(vec![dir.join("missing.toml")], None);
        let (p, _) = live.policy(None);
        assert!(p.broken.as_deref().unwrap().contains("does not exist"));
        assert!(live.status()["broken"].is_string());

        // The user's own file also given with --policy is read once (not ids used twice).
        std::fs::write(
            &f,
            "[[rule]]\nid = \"t\"\ndecision = \"allow\"\ncommand = [\"cargo\"]\n",
        )
        .unwrap();
        let mut live = Live::new(vec![f.clone()], Some(f.clone()));
        assert!(live.policy(None).0.broken.is_none());

        // A missing user file is no rules, not an error.
        let mut live = Live::new(Vec::new(), Some(dir.join("none.toml")));
        let (p, _) = live.policy(Some(&dir));
        assert!(p.broken.is_none());
    }
}
