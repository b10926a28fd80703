//! What no rule allows (docs/POLICY.md, "Paths"): once a rule would allow a call, it is
//! asked instead when
//! - one of its paths (or the session's folder) could not be resolved as the OS opens it
//!   ([`path::resolve`]: longer than [`path::MAX_PATH_BYTES`], a link loop, `~user`);
//! - it reads or searches a folder beneath which a deny or ask rule, of the allowing rule's
//!   tier or a higher one, could match ([`super::PathGlobs::reaches_beneath`]);
//! - it may change one of the policy's own files ([`Policy::protected`], every
//!   `.acp-question-bridge` folder), by its paths or a word of its command.
//!
//! Invariant: these only ever turn an allow into an ask; a deny or an ask stands.

use std::path::{Path, PathBuf};

use super::{path, Call, Decision, Policy, Verdict};

/// A call's session folder and paths as the OS names them.
pub(super) struct Seen {
    /// The session's folder, resolved (as given if it cannot be).
    pub cwd: PathBuf,
    /// Every reading of every path that could be resolved ([`path::readings`]), sorted.
    pub paths: Vec<PathBuf>,
    /// The folders a read or search looks beneath: its paths that are folders; for a search
    /// with no path, the session's folder.
    pub searched: Vec<PathBuf>,
    /// Why a path (or the session's folder) could not be resolved.
    pub unresolved: Option<String>,
}

impl Seen {
    pub fn of(call: &Call) -> Seen {
        let (cwd, mut unresolved) = match path::resolve(&call.cwd, Path::new("/")) {
            Some(c) => (c.path, None),
            None => (call.cwd.clone(), Some(not_resolved(&call.cwd))),
        };
        let mut paths = Vec::new();
        let mut folders = Vec::new();
        for p in &call.paths {
            match path::readings(p, &cwd) {
                Some(readings) => {
                    for r in readings {
                        if r.is_dir {
                            folders.push(r.path.clone());
                        }
                        paths.push(r.path);
                    }
                }
                None => {
                    unresolved.get_or_insert_with(|| not_resolved(p));
                }
            }
        }
        paths.sort();
        paths.dedup();
        let searched = match call.kind.as_deref() {
            Some("search") if call.paths.is_empty() => vec![cwd.clone()],
            Some("read" | "search") => folders,
            _ => Vec::new(),
        };
        Seen {
            cwd,
            paths,
            searched,
            unresolved,
        }
    }
}

impl Policy {
    /// Why `call` (its folder resolved: `seen`) is asked although rule `allowed` allows it.
    pub(super) fn never_allowed(
        &self,
        call: &Call,
        seen: &Seen,
        allowed: &Verdict,
    ) -> Option<String> {
        seen.unresolved
            .clone()
            .or_else(|| self.asked_beneath(call, &seen.searched, allowed))
            .or_else(|| self.changes_own_file(call, &seen.paths))
    }

    /// Why a read or search of `folders` (resolved) is asked although a rule allows it
    /// (`allowed`): a deny or ask rule of that rule's tier or a higher one, that fits the
    /// call but for its paths, has a path pattern that could match something beneath one of
    /// them ([`super::PathGlobs::reaches_beneath`]).
    fn asked_beneath(&self, call: &Call, folders: &[PathBuf], allowed: &Verdict) -> Option<String> {
        if folders.is_empty() {
            return None;
        }
        let tier_of_allow = allowed.rule.as_ref().and_then(|a| {
            self.tiers.iter().position(|t| {
                t.rules
                    .iter()
                    .any(|r| r.id == a.id && r.file == a.file && r.line == a.line)
            })
        });
        let upto = tier_of_allow.unwrap_or(self.tiers.len());
        for tier in self.tiers.iter().take(upto + 1) {
            for r in &tier.rules {
                let Some(globs) = &r.paths else { continue };
                // A rule with a command pattern speaks of a call with a command only.
                if r.decision == Decision::Allow
                    || (r.command.is_some() && call.command.is_none())
                    || !r.fits_but_paths(call)
                {
                    continue;
                }
                if let Some(f) = folders.iter().find(|f| globs.reaches_beneath(f, &call.cwd)) {
                    return Some(format!(
                        "it reads or searches {}, and rule {:?} in the {} tier ({}) could cover something beneath it",
                        f.display(),
                        r.id,
                        tier.name,
                        r.decision.as_str()
                    ));
                }
            }
        }
        None
    }

    /// Why `call` may change one of the policy's own files ([`own_file`]): a call of a
    /// kind that may change a file (any but read, search, fetch and think) with one of them,
    /// or a folder holding one, among its `paths` (resolved); or a command with a word (or
    /// the value after a word's `=`) that names one of them or a folder holding one other
    /// than the session's folder and the folders above it.
    fn changes_own_file(&self, call: &Call, paths: &[PathBuf]) -> Option<String> {
        let reads = matches!(
            call.kind.as_deref(),
            Some("read" | "search" | "fetch" | "think")
        );
        if !reads {
            if let Some(why) = paths
                .iter()
                .find_map(|p| own_file(p, &self.protected, &call.cwd, true))
            {
                return Some(format!(
                    "the policy's own files are never changed on an allow: {why}"
                ));
            }
        }
        let cmd = call.command.as_ref()?;
        let folder = path::Folder::open(&call.cwd);
        let mut looked = std::collections::HashSet::new();
        for word in cmd.seen.iter().flatten() {
            let value = word.split_once('=').map(|(_, v)| v);
            for w in std::iter::once(word.as_str()).chain(value) {
                // Each word once; a plain name not in the session's folder names nothing.
                if !looked.insert(w) || folder.as_ref().is_some_and(|f| f.lacks(w)) {
                    continue;
                }
                // A word the OS could not open as a path names none of them.
                let Some(readings) = path::readings(Path::new(w), &call.cwd) else {
                    continue;
                };
                if let Some(why) = readings
                    .iter()
                    .find_map(|r| own_file(&r.path, &self.protected, &call.cwd, false))
                {
                    return Some(format!(
                        "the policy's own files are never changed on an allow, and the command names one: {why}"
                    ));
                }
            }
        }
        None
    }
}

/// Why `p` is not resolved, said briefly (it may be a megabyte long).
fn not_resolved(p: &Path) -> String {
    let len = p.as_os_str().len();
    if len > path::MAX_PATH_BYTES {
        return format!(
            "a path of {len} bytes, longer than the {} the OS opens, is not resolved, so it is never allowed",
            path::MAX_PATH_BYTES
        );
    }
    let shown: String = p.to_string_lossy().chars().take(200).collect();
    format!(
        "path {:?} cannot be resolved as the OS would (a link loop, `~user`, `~` without HOME, a folder it may not search), so it is never allowed",
        shown
    )
}

/// The name of a project's policy folder: a path in it, or it, is one of the policy's own.
pub const PROJECT_FOLDER: &str = ".acp-question-bridge";

/// The policy's own files, resolved (a link to one counts as it, and so does the link):
/// `files` (every `--policy FILE`, the user's own, the trusted folders' file), and for a
/// session in `project`, its `.acp-question-bridge` folder and the file in it. Relative
/// files are taken from the process's current folder, as they are read.
pub fn own_files(files: impl Iterator<Item = PathBuf>, project: Option<&Path>) -> Vec<PathBuf> {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let project = project.map(|d| d.join(PROJECT_FOLDER));
    let files = files.chain(
        project
            .iter()
            .flat_map(|d| [d.clone(), d.join("policy.toml")]),
    );
    let mut out: Vec<PathBuf> = Vec::new();
    for f in files {
        let abs = if f.is_absolute() { f } else { here.join(f) };
        out.extend(path::resolve(&abs, Path::new("/")).map(|r| r.path));
        out.push(abs);
    }
    out.sort();
    out.dedup();
    out
}

/// Why resolved path `p` is one of the policy's own files (`own`), or a folder that holds
/// one; `None` if it is not. `above`: whether a folder holding one counts (`false` for a
/// command's words, where the session's folder and those above it do not).
pub fn own_file(p: &Path, own: &[PathBuf], cwd: &Path, above: bool) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    if p.components().any(|c| c.as_os_str() == PROJECT_FOLDER) {
        return Some(format!(
            "{} is in a project's policy folder ({PROJECT_FOLDER})",
            p.display()
        ));
    }
    let holds = |f: &Path| f.starts_with(p) && (above || !cwd.starts_with(p));
    if let Some(f) = own.iter().find(|f| *f == p || holds(f)) {
        return Some(if f == p {
            format!("{} is a file of the policy", p.display())
        } else {
            format!(
                "{} holds {}, a file of the policy",
                p.display(),
                f.display()
            )
        });
    }
    if above || !cwd.starts_with(p) {
        let inner = p.join(PROJECT_FOLDER);
        if std::fs::symlink_metadata(&inner).is_ok() {
            return Some(format!(
                "{} holds {}, a project's policy folder",
                p.display(),
                inner.display()
            ));
        }
    }
    // The same file by another name (a hard link).
    let id = |m: std::fs::Metadata| (m.dev(), m.ino());
    let this = std::fs::metadata(p).ok().filter(|m| m.is_file()).map(id)?;
    own.iter()
        .find(|f| std::fs::metadata(f).ok().map(id) == Some(this))
        .map(|f| format!("{} is {} (a hard link)", p.display(), f.display()))
}
