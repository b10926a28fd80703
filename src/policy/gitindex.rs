//! The files git tracks, read from the repository's index (gitformat-index(5)): `git diff`
//! with no path and `git status -v` show the working copy of every tracked file that
//! changed, so a `Read` deny beneath the repository covers them when, and only when, a
//! file it covers is tracked (an untracked `.env`, the usual case, is never in a diff).
//!
//! Invariant: `None` whenever the index cannot be read whole and exactly (a version or
//! extension not known, a split index, more than [`MAX_TRACKED`] entries, a file larger
//! than [`MAX_INDEX_BYTES`]): the caller then asks.

use std::path::{Path, PathBuf};

/// The most tracked files looked at for one folder; a bigger repository is asked.
pub const MAX_TRACKED: usize = 65_536;
/// The largest index read.
const MAX_INDEX_BYTES: u64 = 16 << 20;

/// The files tracked by the repository of folder `dir` (absolute, resolved), all of them
/// (a diff from a subfolder shows the whole repository's), or with `beneath` only those
/// beneath `dir` (a pathspec), as absolute paths; `Some` of none in a repository with no
/// index yet, and outside any of the whole repository's (git fails there). Beneath paths
/// outside any, `None`: there `git diff A B` compares its two paths whole, as `--no-index`.
/// `step` takes one step of the decision's work per index read (`false`: spent, asked).
pub fn tracked(dir: &Path, beneath: bool, step: &mut dyn FnMut() -> bool) -> Option<Vec<PathBuf>> {
    let Some(root) = dir.ancestors().find(|d| d.join(".git").exists()) else {
        return (!beneath).then(Vec::new);
    };
    // A `.git` folder git passes over (no `HEAD`, `objects` or `refs`): which repository
    // git uses, if any, is not told.
    let dot = root.join(".git");
    if dot.is_dir() && !super::gitdir::surely_repository(&dot) {
        return None;
    }
    let mut out = Vec::new();
    in_repository(root, SUBMODULE_DEPTH, step, &mut out)?;
    if beneath {
        out.retain(|q| q.starts_with(dir));
    }
    // git reads a tracked file through a link in its folders (`git grep` did, with a
    // tracked `x/d` replaced by a link to `~/.ssh`): which file it reads is then not the
    // index's path, and the command is asked.
    let mut folders = std::collections::HashSet::new();
    for q in &out {
        for a in q.ancestors().skip(1) {
            if a == root || !a.starts_with(root) || !folders.insert(a) {
                break;
            }
            if std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink()) {
                return None;
            }
        }
    }
    Some(out)
}

/// How deep submodules are followed; deeper, the command is asked.
const SUBMODULE_DEPTH: usize = 4;

/// The tracked files of the repository whose worktree is `root`, and of its submodules
/// (a gitlink's files are in the submodule's own index: `git diff --submodule=diff`).
fn in_repository(
    root: &Path,
    depth: usize,
    step: &mut dyn FnMut() -> bool,
    out: &mut Vec<PathBuf>,
) -> Option<()> {
    // Each index read is a step of the decision's work: a repository of many submodules
    // spends it, and is asked.
    if !step() {
        return None;
    }
    let found = index_entries(root)?;
    use std::os::unix::ffi::OsStrExt;
    for (mode, name) in found {
        let p = root.join(std::ffi::OsStr::from_bytes(&name));
        if out.len() >= MAX_TRACKED {
            return None;
        }
        match mode & 0o170000 {
            // A gitlink: a submodule, whose files its own index lists.
            0o160000 if p.join(".git").exists() => {
                in_repository(&p, depth.checked_sub(1)?, step, out)?;
            }
            0o160000 => {}
            // A sparse index's folder entry: its files are not listed here.
            0o040000 => return None,
            _ => {}
        }
        out.push(p);
    }
    Some(())
}

/// The entries (modes and paths) of the index of the repository whose worktree is `root`;
/// none where it has no index yet, `None` where it cannot be read exactly.
fn index_entries(root: &Path) -> Option<Vec<(u32, Vec<u8>)>> {
    let gitdir = super::gitdir::discover(root)?;
    let index = gitdir.join("index");
    let bytes = match std::fs::metadata(&index) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Vec::new()),
        Err(_) => return None,
        Ok(m) if m.len() > MAX_INDEX_BYTES => return None,
        Ok(_) => std::fs::read(&index).ok()?,
    };
    // A linked worktree's config is the main repository's (its `commondir`).
    let config = std::fs::read_to_string(super::gitconfig::common_of(&gitdir).join("config"))
        .unwrap_or_default();
    let sha256 = config
        .to_ascii_lowercase()
        .lines()
        .any(|l| l.replace([' ', '\t'], "").contains("objectformat=sha256"));
    entries(&bytes, if sha256 { 32 } else { 20 })
}

/// Why `words`, a git command from a session in `session`, may not be allowed: the
/// session's repository has a submodule, at any depth, whose repository is not one git
/// made for it in its superproject's folder (`.git/modules/…`) but one in the submodule's
/// working folder, or where its `gitdir:` file points (`sub/.git/config` written by a file
/// tool, then `git add sub`; a sixtieth review: a nested submodule never initialized, with
/// a `sub/nested/.git` the agent made): `git status` and `git diff` run git there, with
/// that repository's configuration (`core.fsmonitor`). An index that cannot be read is
/// asked too, and submodules nested deeper than [`SUBMODULE_DEPTH`] or more than
/// [`MAX_SUBMODULES`].
/// A command that may take the working copy into the index is asked too when a tracked
/// file is now a folder holding a repository ([`KEEPS_ENTRIES`]).
/// Each index read takes a `step` of the decision's work, as in [`tracked`].
pub fn foreign_submodule(
    session: &Path,
    words: &[String],
    step: &mut dyn FnMut() -> bool,
) -> Option<String> {
    if super::args::base(words.first()?) != "git" {
        return None;
    }
    let root = session.ancestors().find(|d| d.join(".git").exists())?;
    let sub = words.get(super::args::git::subcommand_at(words));
    let takes_in = !sub.is_some_and(|s| KEEPS_ENTRIES.contains(&s.as_str()));
    foreign_in(root, SUBMODULE_DEPTH, takes_in, &mut 0, step)
}

/// git's commands that never take a tracked path's working copy into the index. Every
/// other may: `git add -u`, `git commit -a`, `git commit -- PATH` and `git stash push --
/// PATH` turned a tracked file the agent replaced by a folder holding a repository into a
/// gitlink, which the next `git status` ran the `core.fsmonitor` of; `git commit --dry-run
/// -a` ran it on its own (real git 2.47).
const KEEPS_ENTRIES: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "whatchanged",
    "shortlog",
    "reflog",
    "branch",
    "rev-parse",
    "rev-list",
    "ls-files",
    "ls-tree",
    "cat-file",
    "blame",
    "annotate",
    "grep",
    "describe",
    "remote",
    "config",
    "clone",
    "version",
    "help",
];

/// Why a git command that may update the index of the repository whose worktree is `root`,
/// whose entries are `found`, may make a submodule of a repository the agent made: a
/// tracked file or link (not a gitlink) is now a folder with a `.git`. One `step` per
/// entry; a sparse index (its folders' files are not listed) is asked.
fn replaced_by_repository(
    root: &Path,
    found: &[(u32, Vec<u8>)],
    step: &mut dyn FnMut() -> bool,
) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    for (mode, name) in found {
        if !step() {
            return Some(format!(
                "the index of {} is larger than is looked through for one decision",
                root.display()
            ));
        }
        let p = root.join(std::ffi::OsStr::from_bytes(name));
        match mode & 0o170000 {
            0o160000 => continue,
            0o040000 => {
                return Some(format!(
                    "the index of {} is sparse: the files of its folder {} are not listed",
                    root.display(),
                    p.display()
                ))
            }
            _ => {}
        }
        let is_dir = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir());
        if is_dir && p.join(".git").symlink_metadata().is_ok() {
            return Some(format!(
                "the tracked file {} is now a folder holding a repository: git takes it in as a submodule and runs git there, with that repository's configuration",
                p.display()
            ));
        }
    }
    None
}

/// The most submodules looked into for one decision; more are asked.
const MAX_SUBMODULES: usize = 64;

/// [`foreign_submodule`] in the repository whose worktree is `root`, `depth` levels more
/// deep at most, with `seen` submodules looked into so far; with `takes_in`, a tracked file
/// now a repository too ([`replaced_by_repository`], from the same read of the index).
fn foreign_in(
    root: &Path,
    depth: usize,
    takes_in: bool,
    seen: &mut usize,
    step: &mut dyn FnMut() -> bool,
) -> Option<String> {
    if !step() {
        return Some(format!(
            "the submodules of {} are more than are read for one decision",
            root.display()
        ));
    }
    let Some(found) = index_entries(root) else {
        return Some(format!(
            "the index of {} cannot be read, so its submodules cannot be told",
            root.display()
        ));
    };
    if takes_in {
        if let Some(why) = replaced_by_repository(root, &found, step) {
            return Some(why);
        }
    }
    let modules = modules_of(root)?;
    use std::os::unix::ffi::OsStrExt;
    let subs = found
        .into_iter()
        .filter(|(mode, _)| mode & 0o170000 == 0o160000)
        .map(|(_, name)| root.join(std::ffi::OsStr::from_bytes(&name)));
    for sub in subs {
        // git goes only into a submodule with a `.git` (`is_submodule_populated_gently`).
        let Some(repo) = super::gitdir::discover(&sub).filter(|_| sub.join(".git").exists()) else {
            continue;
        };
        if !in_modules(&repo, &modules) {
            return Some(format!(
                "git may run in the submodule {} with the repository {}, which is not one git keeps in {} (allowed writes could have made it)",
                sub.display(),
                repo.display(),
                modules.display()
            ));
        }
        *seen += 1;
        let (Some(deeper), true) = (depth.checked_sub(1), *seen <= MAX_SUBMODULES) else {
            return Some(format!(
                "{} has more submodules, or nested more deeply, than are read for one decision",
                root.display()
            ));
        };
        if let Some(why) = foreign_in(&sub, deeper, false, seen, step) {
            return Some(why);
        }
    }
    None
}

/// The folder where git keeps the repositories it made for the submodules of the
/// repository whose worktree is `root` (`.git/modules`, a linked worktree's in its main
/// repository's), resolved.
pub(super) fn modules_of(root: &Path) -> Option<PathBuf> {
    let modules = super::gitconfig::common_of(&super::gitdir::discover(root)?).join("modules");
    Some(modules.canonicalize().unwrap_or(modules))
}

/// Whether the repository (git folder) `repo` is one git made for a submodule, in
/// `modules` ([`modules_of`]); one that cannot be resolved is not.
pub(super) fn in_modules(repo: &Path, modules: &Path) -> bool {
    repo.canonicalize().is_ok_and(|g| g.starts_with(modules))
}

/// Extensions that do not change which files are listed (gitformat-index(5)): the cache
/// tree, the resolve undo, the untracked cache, the fsmonitor's, the end of entries and
/// the entry offsets. Any other (a split index's `link`, a sparse index's `sdir`, one not
/// known) leaves the listing unsure.
const KNOWN_EXTENSIONS: &[&[u8; 4]] = &[b"TREE", b"REUC", b"UNTR", b"FSMN", b"EOIE", b"IEOT"];

/// The modes and paths of an index's entries (versions 2, 3 and 4), with `hash` bytes per
/// object name; `None` for anything else, or for bytes that do not end exactly with the
/// extensions and the checksum.
fn entries(b: &[u8], hash: usize) -> Option<Vec<(u32, Vec<u8>)>> {
    let be32 = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    if b.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(4)?;
    let count = be32(8)? as usize;
    if !(2..=4).contains(&version) || count > MAX_TRACKED {
        return None;
    }
    let mut at = 12;
    let mut names: Vec<(u32, Vec<u8>)> = Vec::with_capacity(count);
    let mut last: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let mode = be32(start + 24)?;
        // ctime, mtime, dev, ino, mode, uid, gid, size: 40 bytes; then the object name.
        at += 40 + hash;
        let flags = u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?);
        at += 2;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        let name = if version == 4 {
            // The number of bytes of the previous name left off, then the rest.
            let (strip, used) = varint(b.get(at..)?)?;
            at += used;
            let end = at + b.get(at..)?.iter().position(|&c| c == 0)?;
            let keep = last.len().checked_sub(strip)?;
            let mut n = last[..keep].to_vec();
            n.extend_from_slice(&b[at..end]);
            at = end + 1;
            n
        } else {
            let end = at + b.get(at..)?.iter().position(|&c| c == 0)?;
            let n = b[at..end].to_vec();
            // NUL-padded to a multiple of 8 bytes from the entry's start.
            at = start + (end - start + 8) / 8 * 8;
            n
        };
        last.clone_from(&name);
        names.push((mode, name));
    }
    // Extensions, then the checksum, exactly.
    while b.len() >= at + 8 + hash {
        let sig = b.get(at..at + 4)?;
        if !KNOWN_EXTENSIONS.iter().any(|k| k.as_slice() == sig) {
            return None;
        }
        at = at.checked_add(8 + be32(at + 4)? as usize)?;
    }
    (at + hash == b.len()).then_some(names)
}

/// Git's offset varint (the index's version 4): each byte's low 7 bits, and for each byte
/// after the first, one added before the shift.
fn varint(b: &[u8]) -> Option<(usize, usize)> {
    let mut value: usize = 0;
    for (i, &c) in b.iter().enumerate().take(8) {
        value = if i == 0 {
            usize::from(c & 0x7f)
        } else {
            value.checked_add(1)?.checked_shl(7)? | usize::from(c & 0x7f)
        };
        if c & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each index version real git writes, read as `git ls-files` lists it.
    #[test]
    fn the_tracked_files_are_those_git_lists_in_every_index_version() {
        let d = std::env::temp_dir().join(format!("acp-qb-gitindex-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("src/deep")).unwrap();
        for f in [
            ".env",
            "src/a.rs",
            "src/deep/b.rs",
            "src/deep/c.rs",
            "untracked",
        ] {
            std::fs::write(d.join(f), "x").unwrap();
        }
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(&d)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git(&["init", "-q"]);
        git(&["add", ".env", "src"]);
        let d = d.canonicalize().unwrap();
        for version in ["2", "3", "4"] {
            git(&["update-index", "--index-version", version]);
            let listed: Vec<PathBuf> = git(&["ls-files"]).lines().map(|l| d.join(l)).collect();
            let mut read = tracked(&d, false, &mut || true).expect(version);
            read.sort();
            assert_eq!(read, listed, "version {version}");
            let mut from_below = tracked(&d.join("src/deep"), false, &mut || true).unwrap();
            from_below.sort();
            assert_eq!(from_below, listed, "version {version}, from a subfolder");
            // A pathspec's: only those beneath it.
            let src = d.join("src");
            let beneath = tracked(&src, true, &mut || true).unwrap();
            let want: Vec<&PathBuf> = listed.iter().filter(|p| p.starts_with(&src)).collect();
            assert_eq!(beneath.len(), want.len(), "version {version}, beneath src");
            assert!(beneath.iter().all(|p| p.starts_with(&src)));
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn an_index_not_read_whole_is_none() {
        assert_eq!(entries(b"DIRC\0\0\0\x05\0\0\0\0", 20), None);
        assert_eq!(entries(b"DIRC\0\0\0\x02\0\0\0\x01", 20), None);
        assert_eq!(entries(b"XXXX", 20), None);
        let mut empty = b"DIRC\0\0\0\x02\0\0\0\0".to_vec();
        empty.extend([0u8; 20]);
        assert_eq!(entries(&empty, 20), Some(Vec::new()), "an empty index");
        assert_eq!(entries(&empty, 32), None, "read with the wrong hash");
    }
}
