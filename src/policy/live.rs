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
//! A missing user file is no rules; a missing `--policy FILE` is an error. A project file
//! never weakens the user's ([`file::compose`]): broken from the start, or clashing with a
//! user-tier file, it is ignored as a whole; its allow rules count only while its content
//! has the SHA-256 the user trusted. Either is said once per change of the file
//! ([`Change::Ignored`], [`Change::Untrusted`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::file::{self, compose, Left, Trust, Trusted};
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
    /// The SHA-256 of the content `good` was read from.
    sha256: String,
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
    /// A project file is ignored as a whole (an error, or a clash with a user-tier file);
    /// the user's rules stay in force.
    Ignored { file: PathBuf, why: String },
    /// A project file's allow rules are left out (asked): its content is not the one its
    /// folder was trusted with.
    Untrusted { file: PathBuf, why: String },
}

/// A policy made of files, and their stamps when it was made.
type Composed = (Vec<Option<Stamp>>, Arc<Policy>);

/// The contents of a file, and their SHA-256.
fn read_hashed(path: &Path) -> Result<(Vec<Rule>, String), String> {
    let bytes = file::read_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let hash = file::sha256(&bytes);
    let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8", path.display()))?;
    Ok((file::parse_rules(&text, path)?, hash))
}

/// The policy's files and what was read from them.
#[derive(Debug)]
pub struct Live {
    given: Vec<PathBuf>,
    user: Option<PathBuf>,
    files: HashMap<PathBuf, Watched>,
    /// The trusted folders' file ([`file::trusted_file`]).
    trusted_file: Option<PathBuf>,
    /// What it says, by its stamp.
    trusted: Option<(Option<Stamp>, Vec<Trusted>)>,
    /// What is left out of each project file (by its path), and the file's stamp then: each
    /// change is said once.
    left: HashMap<PathBuf, (Option<Stamp>, Left)>,
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
            trusted_file: file::trusted_file(),
            trusted: None,
            left: HashMap::new(),
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

    /// Reads `path` (a project's file: `project`) again if it changed; returns its stamp.
    fn refresh(
        &mut self,
        path: &Path,
        required: bool,
        project: bool,
        changes: &mut Vec<Change>,
    ) -> Option<Stamp> {
        let now = stamp(path);
        let w = self.files.entry(path.to_owned()).or_default();
        if w.stamp == Some(now) {
            return now;
        }
        let first = w.stamp.is_none();
        w.stamp = Some(now);
        let read = match now {
            None if !required => Ok((Vec::new(), String::new())),
            None => Err(format!(
                "{}: cannot read it (it does not exist)",
                path.display()
            )),
            Some(_) => read_hashed(path),
        };
        match read {
            Ok((rules, hash)) => {
                if !first {
                    tracing::info!(file = %path.display(), rules = rules.len(), "policy file read again; in force");
                    changes.push(Change::Reloaded(path.to_owned()));
                }
                w.good = Some(rules);
                w.sha256 = hash;
                w.error = None;
            }
            Err(error) => {
                if w.good.is_some() {
                    tracing::warn!(%error, "policy file changed and is broken now; its last good rules stay in force");
                    changes.push(Change::KeptLastGood {
                        file: path.to_owned(),
                        error: error.clone(),
                    });
                } else if project {
                    tracing::warn!(%error, "project policy file is broken: it is ignored, the user's rules stay in force");
                } else {
                    tracing::warn!(%error, "policy file is broken: the policy decides nothing, every approval is asked");
                }
                w.error = Some(error);
            }
        }
        now
    }

    /// The trusted folders, read again if their file changed.
    fn trusted_folders(&mut self) -> (Option<Stamp>, Vec<Trusted>) {
        let Some(f) = &self.trusted_file else {
            return (None, Vec::new());
        };
        let now = stamp(f);
        match &self.trusted {
            Some((s, list)) if *s == now => (now, list.clone()),
            _ => {
                let list = file::parse_trusted(&file::read_text(f).unwrap_or_default());
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
            self.left.clear();
        }
        let paths = self.paths(cwd);
        // The project's file is the last one (when there is a session folder).
        let project_at = cwd.map(|_| paths.len() - 1);
        let mut stamps: Vec<Option<Stamp>> = paths
            .iter()
            .enumerate()
            .map(|(i, (p, required))| {
                self.refresh(p, *required, Some(i) == project_at, &mut changes)
            })
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
        let mut project = None;
        for (i, (p, _)) in paths.iter().enumerate() {
            let w = &self.files[p];
            if Some(i) == project_at {
                let Some(dir) = cwd else { continue };
                let rules = match (&w.good, &w.error) {
                    (Some(good), _) => Ok(good.clone()),
                    (None, Some(e)) => Err(e.clone()),
                    (None, None) => Ok(Vec::new()),
                };
                // The same device and inode as a user-tier file: a link to it, or it.
                let id = |s: &Option<Stamp>| s.map(|s| (s.dev, s.ino));
                let same_as_user =
                    stamps[i].is_some() && stamps[..i].iter().any(|s| id(s) == id(&stamps[i]));
                project = Some(file::Project {
                    dir: dir.to_owned(),
                    file: p.clone(),
                    rules,
                    trust: Trust::of(dir, &w.sha256, &trusted),
                    same_as_user,
                });
                continue;
            }
            if let (Some(e), None) = (&w.error, &w.good) {
                errors.push(e.clone());
            }
            user.extend(w.good.iter().flatten().cloned());
        }
        let (mut policy, left) = compose(user, project, errors);
        let own = self.given.iter().chain(&self.user).cloned();
        let own = own.chain(file::user_file()).chain(file::trusted_file());
        policy.protected = super::guard::own_files(own, cwd);
        if let (Some(i), Some((p, _))) = (project_at, project_at.and_then(|i| paths.get(i))) {
            self.said(p, stamps[i], left, &mut changes);
        }
        let policy = Arc::new(policy);
        if self.composed.len() >= 64 {
            self.composed.clear();
        }
        self.composed.insert(key, (stamps, policy.clone()));
        (policy, changes)
    }

    /// Keeps what is left out of project file `path` (at `stamp`), and says it once per
    /// change: an ignored file, or allow rules left out of a file trusted with another
    /// content, in the chat and the log; allow rules of a file never trusted (a cloned
    /// repository's) in the log only.
    fn said(
        &mut self,
        path: &Path,
        stamp: Option<Stamp>,
        left: Option<Left>,
        changes: &mut Vec<Change>,
    ) {
        let Some(left) = left else {
            self.left.remove(path);
            return;
        };
        let now = (stamp, left);
        if self.left.get(path) == Some(&now) {
            return;
        }
        // Said instead of "read again; in force".
        if !matches!(
            &now.1,
            Left::Untrusted {
                trust: Trust::Untrusted,
                ..
            }
        ) {
            changes.retain(|c| !matches!(c, Change::Reloaded(f) if f == path));
        }
        match &now.1 {
            Left::Ignored { file, why } => {
                tracing::warn!(file = %file.display(), %why, "project policy file ignored as a whole; the user's rules stay in force");
                changes.push(Change::Ignored {
                    file: file.clone(),
                    why: why.clone(),
                });
            }
            Left::Untrusted { file, why, trust } if *trust != Trust::Untrusted => {
                tracing::warn!(file = %file.display(), %why, "project policy file's allow rules left out until it is trusted again");
                changes.push(Change::Untrusted {
                    file: file.clone(),
                    why: why.clone(),
                });
            }
            Left::Untrusted { file, why, .. } => {
                tracing::warn!(file = %file.display(), %why, "a project policy file's allow rules count only once its content is trusted (acp-question-bridge policy trust DIR); left out");
            }
        }
        self.left.insert(path.to_owned(), now);
    }

    /// The files and their state, for `bridge.status` and the page: each file with its
    /// rules in force and, if its current version is not in force, why.
    pub fn status(&self) -> serde_json::Value {
        let mut files: Vec<_> = self
            .files
            .iter()
            .filter(|(_, w)| w.stamp.is_some_and(|s| s.is_some()) || w.error.is_some())
            .map(|(p, w)| {
                let left = self.left.get(p).map(|(_, l)| l);
                let ignored = left.and_then(|l| match l {
                    Left::Ignored { why, .. } => Some(why),
                    Left::Untrusted { .. } => None,
                });
                let untrusted = left.and_then(|l| match l {
                    Left::Untrusted { why, .. } => Some(why),
                    Left::Ignored { .. } => None,
                });
                serde_json::json!({
                    "file": p.display().to_string(),
                    "rules": w.good.as_ref().map_or(0, Vec::len),
                    "error": w.error.as_ref().or(ignored),
                    "inForce": w.good.is_some() && ignored.is_none(),
                    "ignored": ignored,
                    "allowsLeftOut": untrusted,
                })
            })
            .collect();
        files.sort_by(|a, b| a["file"].as_str().cmp(&b["file"].as_str()));
        // Only the user's files break the policy; a project file is ignored instead.
        let broken: Vec<&str> = self
            .given
            .iter()
            .chain(&self.user)
            .filter_map(|p| self.files.get(p))
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

    /// The `status()` entry of file `f`.
    fn entry_of(status: &serde_json::Value, f: &Path) -> serde_json::Value {
        status["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["file"] == f.to_str().unwrap())
            .unwrap_or_else(|| panic!("no {} in {status}", f.display()))
            .clone()
    }

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

    fn project_in(dir: &Path, text: &str) -> PathBuf {
        let f = file::project_file(dir);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, text).unwrap();
        f
    }

    const PROJECT: &str = "[[rule]]\nid = \"p-tests\"\ndecision = \"allow\"\ncommand = [\"cargo\", \"test\"]\n\n[[rule]]\nid = \"p-no-push\"\ndecision = \"deny\"\ncommand = [\"git\", \"push\"]\n";

    /// Finding 5b: trust is for a content. A trusted project file that changes (a `git
    /// pull`) has its allow rules asked until it is trusted again, said once; its deny
    /// rules keep counting; an old line with only the folder trusts no content.
    #[test]
    fn a_trusted_project_file_that_changes_loses_its_allows_until_trusted_again() {
        let dir = scratch("trust").canonicalize().unwrap();
        let cwd = dir.join("repo");
        let f = project_in(&cwd, PROJECT);
        let trusted = dir.join("trusted-folders");
        let line = |text: &str| {
            format!(
                "sha256:{}\t{}\n",
                file::sha256(text.as_bytes()),
                cwd.display()
            )
        };
        write_atomically(&trusted, &line(PROJECT));
        let mut live = Live::new(Vec::new(), None);
        live.trusted_file = Some(trusted.clone());
        let (p, changes) = live.policy(Some(&cwd));
        assert!(changes.is_empty(), "{changes:?}");
        assert_eq!(
            p.decide(&call("cargo test", &cwd)).decision,
            Decision::Allow
        );

        // A pull appends an allow rule: no allow of the file counts any more.
        let pulled = format!(
            "{PROJECT}\n[[rule]]\nid = \"p-curl\"\ndecision = \"allow\"\ncommand = [\"curl\"]\n"
        );
        write_atomically(&f, &pulled);
        let (p, changes) = live.policy(Some(&cwd));
        assert_eq!(p.decide(&call("cargo test", &cwd)).decision, Decision::Ask);
        assert_eq!(
            p.decide(&call("curl evil.example", &cwd)).decision,
            Decision::Ask
        );
        assert_eq!(p.decide(&call("git push", &cwd)).decision, Decision::Deny);
        assert!(p.broken.is_none());
        assert!(
            matches!(&changes[..], [Change::Untrusted { file, why }]
                if *file == f && why.contains("changed since") && why.contains("policy trust")),
            "{changes:?}"
        );
        let status = live.status();
        let entry = entry_of(&status, &f);
        assert!(
            entry["allowsLeftOut"]
                .as_str()
                .unwrap()
                .contains("changed since"),
            "{status}"
        );
        // Said once.
        assert!(live.policy(Some(&cwd)).1.is_empty());

        // Trusted again (this content): the allows count, nothing more to say.
        write_atomically(&trusted, &line(&pulled));
        let (p, changes) = live.policy(Some(&cwd));
        assert!(changes.is_empty(), "{changes:?}");
        assert_eq!(
            p.decide(&call("cargo test", &cwd)).decision,
            Decision::Allow
        );

        // An old line, the folder with no content: its allows wait for trust again.
        write_atomically(&trusted, &format!("{}\n", cwd.display()));
        let (p, changes) = live.policy(Some(&cwd));
        assert_eq!(p.decide(&call("cargo test", &cwd)).decision, Decision::Ask);
        assert!(
            matches!(&changes[..], [Change::Untrusted { why, .. }] if why.contains("no hash")),
            "{changes:?}"
        );
        // Never trusted: left out, in the log and status only (a cloned repository).
        write_atomically(&trusted, "");
        let (p, changes) = live.policy(Some(&cwd));
        assert_eq!(p.decide(&call("cargo test", &cwd)).decision, Decision::Ask);
        assert!(changes.is_empty(), "{changes:?}");
    }

    #[test]
    fn trusted_folders_lines_old_and_new() {
        let hash = file::sha256(b"x");
        assert_eq!(hash.len(), 64);
        let text =
            format!("/old/dir\nsha256:{hash}\t/new/dir with space\nsha256:XYZ\t/bad\n# note\n");
        let list = file::parse_trusted(&text);
        assert_eq!(
            list,
            vec![
                file::Trusted {
                    dir: "/old/dir".into(),
                    sha256: None
                },
                file::Trusted {
                    dir: "/new/dir with space".into(),
                    sha256: Some(hash.clone())
                },
            ]
        );
        let of = |d: &str, h: &str| Trust::of(Path::new(d), h, &list);
        assert_eq!(of("/new/dir with space", &hash), Trust::Trusted);
        assert!(matches!(
            of("/new/dir with space", &file::sha256(b"y")),
            Trust::Changed { .. }
        ));
        assert_eq!(of("/old/dir", &hash), Trust::NoContent);
        assert_eq!(of("/other", &hash), Trust::Untrusted);
    }

    /// Finding 6: a project file never weakens the user's. One that reuses a user rule id,
    /// is a link to a user-tier file, or is broken is ignored as a whole (said once); the
    /// user's rules stay in force. Only a broken user-tier file breaks the policy.
    #[test]
    fn a_project_file_that_clashes_with_the_users_is_ignored_and_the_users_rules_hold() {
        let dir = scratch("clash").canonicalize().unwrap();
        let user = dir.join("user.toml");
        std::fs::write(
            &user,
            "[[rule]]\nid = \"no-rm\"\ndecision = \"deny\"\ncommand = [\"rm\", \"-rf\"]\n\n[[rule]]\nid = \"tests\"\ndecision = \"allow\"\ncommand = [\"cargo\", \"test\"]\n",
        )
        .unwrap();
        let cwd = dir.join("repo");
        let mut live = Live::new(vec![user.clone()], None);
        live.trusted_file = None;

        // The user's deny id, reused as an ask.
        let f = project_in(&cwd, "[[rule]]\nid = \"no-rm\"\ndecision = \"ask\"\ncommand = [\"ls\"]\n\n[[rule]]\nid = \"p-no-push\"\ndecision = \"deny\"\ncommand = [\"git\", \"push\"]\n");
        let (p, changes) = live.policy(Some(&cwd));
        assert!(p.broken.is_none(), "{:?}", p.broken);
        assert_eq!(p.decide(&call("rm -rf /", &cwd)).decision, Decision::Deny);
        assert_eq!(
            p.decide(&call("cargo test", &cwd)).decision,
            Decision::Allow
        );
        // Ignored as a whole: its own deny too.
        assert_eq!(p.decide(&call("git push", &cwd)).decision, Decision::Ask);
        assert!(
            matches!(&changes[..], [Change::Ignored { file, why }] if *file == f && why.contains("\"no-rm\"") && why.contains("user.toml")),
            "{changes:?}"
        );
        let status = live.status();
        assert!(status["broken"].is_null(), "{status}");
        let entry = entry_of(&status, &f);
        assert_eq!(entry["inForce"], false, "{status}");
        assert!(
            entry["ignored"].as_str().unwrap().contains("no-rm"),
            "{status}"
        );
        assert!(live.policy(Some(&cwd)).1.is_empty(), "said once");

        // A link to the user's file.
        std::fs::remove_file(&f).unwrap();
        std::os::unix::fs::symlink(&user, &f).unwrap();
        let (p, changes) = live.policy(Some(&cwd));
        assert!(p.broken.is_none(), "{:?}", p.broken);
        assert_eq!(p.decide(&call("rm -rf /", &cwd)).decision, Decision::Deny);
        assert!(p.tiers[1].rules().is_empty());
        assert!(
            matches!(&changes[..], [Change::Ignored { why, .. }] if why.contains("user's tier")),
            "{changes:?}"
        );
        // The same file, by a hard link.
        std::fs::remove_file(&f).unwrap();
        std::fs::hard_link(&user, &f).unwrap();
        let (p, _) = live.policy(Some(&cwd));
        assert!(p.broken.is_none(), "{:?}", p.broken);
        assert!(p.tiers[1].rules().is_empty());

        // Broken from the start, and an id used twice in it: ignored, the user's rules hold.
        for text in [
            "[[rule]]\nid = \"x\"\ndecision = \"whenever\"\n",
            "[[rule]]\nid = \"x\"\ndecision = \"deny\"\ncommand = [\"a\"]\n[[rule]]\nid = \"x\"\ndecision = \"deny\"\ncommand = [\"b\"]\n",
        ] {
            let other = dir.join(format!("repo{}", text.len()));
            project_in(&other, text);
            let (p, changes) = live.policy(Some(&other));
            assert!(p.broken.is_none(), "{:?}", p.broken);
            assert_eq!(p.decide(&call("rm -rf /", &other)).decision, Decision::Deny);
            assert!(matches!(&changes[..], [Change::Ignored { .. }]), "{changes:?}");
        }

        // A broken user-tier file still decides nothing.
        std::fs::write(&user, "[[rule]]\nid = \"no-rm\"\ndecision = \"never\"\n").unwrap();
        let mut live = Live::new(vec![user.clone()], None);
        let (p, _) = live.policy(Some(&cwd));
        assert!(p.broken.is_some());
        assert_eq!(p.decide(&call("rm -rf /", &cwd)).decision, Decision::Ask);
    }
}
