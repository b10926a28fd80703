//! What no rule allows (docs/POLICY.md, "Paths"): once a rule would allow a call, it is
//! asked instead when
//! - one of its paths (or the session's folder) could not be resolved as the OS opens it
//!   ([`path::resolve`]: longer than [`path::MAX_PATH_BYTES`], a link loop, `~user`,
//!   `/proc/self`), or it has more than [`MAX_PATHS`] paths, or resolving them took more
//!   than a decision's work ([`path::Decision`]);
//! - it reads or searches a folder beneath which a deny or ask rule, of the allowing rule's
//!   tier or a higher one, could match ([`super::PathGlobs::reaches_beneath`]);
//! - it may change one of the policy's own files ([`Policy::protected`], every
//!   `.acp-question-bridge` folder), by its paths or a word of its command: a word (its
//!   `=` value, a short flag's joined value) naming one, a folder holding one other than
//!   the session's folder and those above it, or any folder above a file of the user's
//!   tier (`/` too); each resolved against every folder the command may move to (`cd`,
//!   `pushd`, `-C`); a move that cannot be told (`cd -`, `popd`) before a later word; a
//!   word that may name a path and cannot be resolved (it is never skipped); a symbolic
//!   link made with anything else in the same command.
//!
//! Invariant: these only ever turn an allow into an ask; a deny or an ask stands.

use std::path::{Path, PathBuf};

use super::{path, Call, Decision, Policy, Verdict};

/// The most paths of one call resolved. A tool call names a path or a few (an edit one, a
/// read or a multi-edit a handful), as many as [`MAX_RESOLVED`] words of a command at most;
/// each may take thousands of system calls ([`path::MAX_WALK`] steps). A call with more is
/// asked at once, none of the others resolved: the decision runs on the bridge's loop and
/// must end well within its bound (1,000 paths through a long link took 15 s).
pub const MAX_PATHS: usize = 64;

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
    /// The decision's work, shared by every path resolved while it lives (its command's
    /// words, the paths other modules resolve for it).
    _decision: path::Decision,
}

impl Seen {
    pub fn of(call: &Call) -> Seen {
        let decision = path::Decision::start();
        let (cwd, mut unresolved) = match path::resolve(&call.cwd, Path::new("/")) {
            Some(c) => (c.path, None),
            None => (call.cwd.clone(), Some(not_resolved(&call.cwd))),
        };
        if let Some(why) = &call.unsaid {
            unresolved.get_or_insert_with(|| why.clone());
        }
        let mut paths = Vec::new();
        let mut folders = Vec::new();
        if call.paths.len() > MAX_PATHS {
            unresolved.get_or_insert_with(|| {
                format!(
                    "it has {} paths, more than the {MAX_PATHS} resolved for one call, so it is never allowed",
                    call.paths.len()
                )
            });
        }
        // The first ones still resolved, for a deny of one of them. A path with whitespace
        // at its start or end is also read trimmed, as Claude Code opens it (its
        // `expandPath` trims first: `" ~/.ssh/id_rsa"` is the key), and never allowed.
        let trimmed: Vec<PathBuf> = call
            .paths
            .iter()
            .take(MAX_PATHS)
            .filter_map(|p| super::tool_call::trimmed(p))
            .collect();
        if let Some(t) = trimmed.first() {
            unresolved.get_or_insert_with(|| {
                format!(
                    "a path begins or ends with whitespace, which the agent may trim before it opens it ({})",
                    t.display()
                )
            });
        }
        // A relative path from every folder the agent's shell may be in, where it follows it.
        let elsewhere = super::moves::relative_elsewhere(call).unwrap_or_else(|why| {
            unresolved.get_or_insert(why);
            Vec::new()
        });
        for p in call
            .paths
            .iter()
            .take(MAX_PATHS)
            .chain(&trimmed)
            .chain(&elsewhere)
        {
            if path::decision_spent() {
                unresolved.get_or_insert_with(too_much_work);
                break;
            }
            match path::readings(p, &cwd) {
                Some(readings) => {
                    for r in readings {
                        if r.is_dir {
                            folders.push(r.path.clone());
                        }
                        paths.push(r.path);
                    }
                }
                None if path::decision_spent() => {
                    unresolved.get_or_insert_with(too_much_work);
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
            _decision: decision,
        }
    }
}

/// Why a path is not resolved when the decision's work ran out.
fn too_much_work() -> String {
    format!(
        "its paths take more than the {} steps resolved for one decision (links walked again and again), so it is never allowed",
        path::MAX_DECISION_STEPS
    )
}

impl Policy {
    /// Why `call` (its folder resolved: `seen`) is asked although rule `allowed` allows it.
    pub(super) fn never_allowed(
        &self,
        call: &Call,
        seen: &Seen,
        allowed: &Verdict,
        starts: &[PathBuf],
    ) -> Option<String> {
        seen.unresolved
            .clone()
            .or_else(|| self.asked_beneath(call, &seen.searched, allowed))
            .or_else(|| self.changes_own_file(call, &seen.paths, starts))
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
                t.rules()
                    .iter()
                    .any(|r| r.id == a.id && r.file == a.file && r.line == a.line)
            })
        });
        let upto = tier_of_allow.unwrap_or(self.tiers.len());
        for tier in self.tiers.iter().take(upto + 1) {
            for r in tier.rules() {
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
    /// or a folder holding one, among its `paths` (resolved); or a command that may
    /// ([`Policy::command_changes_own_file`]), run from any of `at`, the folders the
    /// agent's shell may be in.
    fn changes_own_file(&self, call: &Call, paths: &[PathBuf], at: &[PathBuf]) -> Option<String> {
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
        at.iter()
            .find_map(|start| self.command_changes_own_file(cmd, start))
            .map(|why| format!("the policy's own files are never changed on an allow: {why}"))
    }

    /// Why command `cmd`, run in `cwd` (resolved), may change one of the policy's own files:
    /// - it makes a symbolic link ([`super::links::makes_link`]) and does something else too: what it does
    ///   next may go through a link that does not exist yet;
    /// - a word of it names one of them ([`own_file`]), or a folder holding one other than
    ///   the session's folder and the folders above it, or a folder above a file of the
    ///   user's tier ([`user_tier`]), `/` included. A word stands for itself, the value after
    ///   its first `=`, and for `-oVALUE` each rest after a flag letter ([`candidates`]);
    ///   each is resolved against the session's folder and every folder the command may move
    ///   to ([`Moves`]);
    /// - it moves to a folder that cannot be told (`cd -`, `popd`), and a later command
    ///   has a word other than its program;
    /// - a word of it that may name a path cannot be resolved (a link loop, `~user`,
    ///   `/proc/self`, the decision's work spent: [`path::Decision`]): what it names is not
    ///   known, so it is never skipped.
    fn command_changes_own_file(
        &self,
        cmd: &super::command::Command,
        cwd: &Path,
    ) -> Option<String> {
        if let Some(why) = super::links::links_then_more(cmd) {
            return Some(why);
        }
        let moves = Moves::of(&cmd.seen, cwd);
        if let Some(lost) = moves.lost {
            for c in cmd.seen.iter().skip(lost + 1) {
                for word in c.iter().skip(1) {
                    if let Some(w) = super::named::candidates(word).find(|w| !w.is_empty()) {
                        return Some(format!(
                            "the command moves to a folder that cannot be told ({}), and a later word ({w:?}) may name one of them",
                            cmd.seen[lost].join(" ")
                        ));
                    }
                }
            }
        }
        if let Some(w) = cmd
            .seen
            .iter()
            .flatten()
            .find(|w| super::named::flag_letters(w) > super::named::MAX_FLAG_LETTERS)
        {
            let shown: String = w.chars().take(40).collect();
            return Some(format!(
                "a word of more than {} flag letters ({shown}…) may hide a path in them, and is not read",
                super::named::MAX_FLAG_LETTERS
            ));
        }
        let user = user_tier(&self.protected);
        let folders: Vec<_> = moves
            .folders
            .iter()
            .map(|d| (d, path::Folder::open(d)))
            .collect();
        let mut looked = std::collections::HashSet::new();
        let mut resolved = 0;
        // A move changes no file (its folder is followed). A part whose model does not know
        // every word (`npm exec -- cp x ~/.bashrc`) or a wrapper's may write what later words name.
        let changing = cmd.seen.iter().enumerate().filter(|(_, c)| !is_move(c));
        let changing = changing.flat_map(|(i, c)| {
            let own = cmd.part_own(i) && super::args::read(c).is_understood();
            c.iter().skip(1).map(move |w| (w, !own))
        });
        for (word, unmodelled) in changing {
            // A program no model reads may take a path from inside a word of a list
            // (`-Wl,-o,FILE`) or after a format's name (ImageMagick's `info:FILE`).
            let words: Vec<&str> = if unmodelled {
                super::named::pieces(word)
            } else {
                super::named::candidates(word).collect()
            };
            for w in words {
                // Each word once; an empty one names no path (the OS says ENOENT).
                if w.is_empty() || !looked.insert((w, unmodelled)) {
                    continue;
                }
                for (base, folder) in &folders {
                    // A plain name not in the folder names nothing, unless it is the name
                    // of one of the policy's files by name (`cp -r x .claude`, `tee
                    // .mcp.json` make one).
                    let by_name = super::rc::agent_settings(Path::new(w), Path::new(w)).is_some()
                        || w.eq_ignore_ascii_case(PROJECT_FOLDER)
                        || (unmodelled && super::writes::runs_by_name(w));
                    if !by_name && folder.as_ref().is_some_and(|f| f.lacks(w)) {
                        // Not there yet, but begun as a name that runs programs, or made
                        // in a place that runs what it holds (`cd .git/hooks && gcc -o
                        // pre-commit x.c`).
                        if unmodelled {
                            let at = base.join(w);
                            let why = super::writes::unmodelled_refused(&at, &moves.folders, cwd);
                            if why.is_some() {
                                return why;
                            }
                        }
                        continue;
                    }
                    // Bounded work on the bridge's loop: past the budget, asked.
                    resolved += 1;
                    if resolved > MAX_RESOLVED {
                        return Some(format!(
                            "the command names more than {MAX_RESOLVED} words that may be paths, which are not all checked"
                        ));
                    }
                    // A word that may be a path and is not resolved may name one of them:
                    // asked, never skipped (a bound of the walk is no proof it names
                    // nothing).
                    let Some(readings) = path::readings(Path::new(w), base) else {
                        let shown: String = w.chars().take(200).collect();
                        return Some(if path::decision_spent() {
                            format!(
                                "a word ({shown:?}) may name one of them, and {}",
                                too_much_work()
                            )
                        } else {
                            format!(
                                "a word ({shown:?}) may name one of them and cannot be resolved as the OS would (a link loop, `~user`, /proc/self, a folder it may not search)"
                            )
                        });
                    };
                    for r in &readings {
                        if let Some(why) = own_file(&r.path, &self.protected, cwd, false)
                            .or_else(|| above_user_file(&r.path, &user))
                        {
                            return Some(format!("the command names one: {why}"));
                        }
                        if unmodelled {
                            let why =
                                super::writes::unmodelled_refused(&r.path, &moves.folders, cwd);
                            if why.is_some() {
                                return why;
                            }
                        }
                    }
                }
            }
        }
        None
    }
}

/// The most words of one command resolved as paths (all within one [`path::Decision`]); a
/// command that names more is asked.
pub const MAX_RESOLVED: usize = 64;

/// The files of the policy's user tier among `own` (every `--policy FILE`, the user's
/// file, the trusted folders' file): those not in a project's policy folder.
fn user_tier(own: &[PathBuf]) -> Vec<&Path> {
    own.iter()
        .map(PathBuf::as_path)
        .filter(|f| !f.components().any(|c| c.as_os_str() == PROJECT_FOLDER))
        .collect()
}

/// Why resolved `p` is a folder above a file of the user's tier (`user`), `/` included:
/// a copy or an archive into it may write the file.
fn above_user_file(p: &Path, user: &[&Path]) -> Option<String> {
    let f = user.iter().find(|f| f.starts_with(p) && **f != p)?;
    Some(format!(
        "{} holds {}, a file of the policy's user tier",
        p.display(),
        f.display()
    ))
}

/// The folders a command may run its words in, as far as its words tell.
struct Moves {
    /// The session's folder, and every folder a `cd DIR` or `pushd DIR` moves to, or a
    /// `-C DIR`, `--chdir DIR` or `--directory DIR` names (`env -C`, `git -C`, `tar -C`,
    /// `make -C`), each resolved against every folder before it: a word is resolved against
    /// each (whether a move took place before it or not).
    folders: Vec<PathBuf>,
    /// The first command after which the folder cannot be told: `cd -`, `popd`, `pushd`
    /// with no folder or `+N`, `cd` with more than one folder, a folder `CDPATH` may find,
    /// a folder not resolved, `cd` with no `$HOME`, more than [`MAX_FOLDERS`] folders.
    lost: Option<usize>,
}

/// The most folders a command's moves are followed to; more and the folder is lost.
const MAX_FOLDERS: usize = 16;

impl Moves {
    fn of(seen: &[Vec<String>], cwd: &Path) -> Moves {
        let mut m = Moves {
            folders: vec![cwd.to_owned()],
            lost: None,
        };
        for (i, c) in seen.iter().enumerate() {
            let mut dirs: Vec<&str> = Vec::new();
            let mut words = c.iter().map(String::as_str).peekable();
            let program = words.next().unwrap_or("");
            let mut lost = false;
            if is_move(c) {
                let mut operands: Vec<&str> = Vec::new();
                let mut options = true;
                for w in words.by_ref() {
                    if options && w == "--" {
                        options = false;
                    } else if options && w.len() > 1 && w.starts_with('-') {
                        // `-L`, `-P`, `-e`, `-@`; pushd's `-n` and `-N`.
                        if program != "cd" {
                            lost = true;
                        }
                    } else {
                        options = false;
                        operands.push(w);
                    }
                }
                match (program, operands.as_slice()) {
                    ("popd", _) => lost = true,
                    ("cd", []) => match std::env::var_os("HOME") {
                        Some(h) if !h.is_empty() => m.add(Path::new(&h).to_owned()),
                        _ => lost = true,
                    },
                    (_, [d]) if *d == "-" || d.starts_with('+') => lost = true,
                    (_, [d]) if cdpath_may_find(d) => lost = true,
                    (_, [d]) => dirs.push(d),
                    _ => lost = true,
                }
            } else {
                let mut prev_c = false;
                for w in words {
                    if prev_c {
                        dirs.push(w);
                    }
                    prev_c = matches!(w, "-C" | "--chdir" | "--directory");
                    if let Some(d) = w
                        .strip_prefix("--chdir=")
                        .or_else(|| w.strip_prefix("--directory="))
                        .or_else(|| w.strip_prefix("-C").filter(|d| !d.is_empty()))
                    {
                        dirs.push(d);
                    }
                }
            }
            for d in dirs {
                let mut found = Vec::new();
                for base in &m.folders {
                    match path::readings(Path::new(d), base) {
                        Some(rs) => found.extend(rs.into_iter().map(|r| r.path)),
                        None => lost = true,
                    }
                }
                for f in found {
                    m.add(f);
                }
            }
            if m.folders.len() > MAX_FOLDERS {
                lost = true;
            }
            if lost {
                m.lost = Some(i);
                break;
            }
        }
        m
    }

    fn add(&mut self, f: PathBuf) {
        if !self.folders.contains(&f) {
            self.folders.push(f);
        }
    }
}

/// Whether `words` are a shell's move to another folder: `cd`, `pushd`, `popd`.
fn is_move(words: &[String]) -> bool {
    matches!(
        words.first().map(String::as_str),
        Some("cd" | "pushd" | "popd")
    )
}

/// Whether a shell may look `cd DIR` up in `$CDPATH`: it is set and not empty, and `DIR`
/// is relative and does not begin with `.` or `..`.
fn cdpath_may_find(dir: &str) -> bool {
    let set = std::env::var_os("CDPATH").is_some_and(|c| !c.is_empty());
    let first = dir.split('/').next().unwrap_or("");
    set && !dir.starts_with('/') && !matches!(first, "." | "..")
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
    // Names compared in either case: a file system that ignores case (macOS's, a
    // casefolded ext4 folder) opens `.Acp-Question-Bridge/policy.toml` or
    // `.CLAUDE/settings.json` as the policy's own.
    let folded = |p: &Path| PathBuf::from(p.to_string_lossy().to_lowercase());
    let (lower, lower_cwd) = (folded(p), folded(cwd));
    if lower.components().any(|c| c.as_os_str() == PROJECT_FOLDER) {
        return Some(format!(
            "{} is in a project's policy folder ({PROJECT_FOLDER})",
            p.display()
        ));
    }
    // The agents' folders below the session's only: a session may itself be in one (Codex
    // keeps its worktrees in `~/.codex/worktrees`).
    let below = p
        .strip_prefix(cwd)
        .ok()
        .filter(|r| !r.as_os_str().is_empty());
    if let Some(why) = super::rc::agent_settings(below.unwrap_or(p), p) {
        return Some(why);
    }
    let holds = |f: &Path| f.starts_with(&lower) && (above || !lower_cwd.starts_with(&lower));
    if let Some(f) = own.iter().find(|f| {
        let f = folded(f);
        f == lower || holds(&f)
    }) {
        return Some(if folded(f) == lower {
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
