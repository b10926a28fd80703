//! Says what a run did beyond what its model said ([`judge`]).
//!
//! A model's reading ([`Effects`]) lists each path word as read, searched whole (`Tree`,
//! `TreeShown`, `TreeFollowed`), written or removed. Each is resolved by the policy's own
//! resolver (`policy::path::readings`) from the session's folder, in the state the run
//! started from; a command with a path it does not resolve (`/proc/self/...`), a write
//! outside the session's folder, or a link beneath a folder searched following links, is
//! asked by the policy and not run. A word `-` is a path like any other, as the policy reads it. A
//! run breaks its model when:
//!
//! - **ran**: it started a program other than itself and the helpers its model allows:
//!   tar its compressors (`-z`, `-j`, `-J`, `--zstd`, ... found on `PATH`); git its own
//!   programs (its binary and what is in `git --exec-path`) and, for a clone, the shell git
//!   starts `git-upload-pack '...'` with; make `/bin/sh -c RECIPE` for exactly the
//!   recipes of the project's Makefile (`make test` runs the project's Makefile by design:
//!   that is the project's own code); nothing else for any program. The stand-ins on
//!   `PATH` (`sh`, `id`, `gpg`, `vi`, `man`, `ssh`, ...) are never allowed;
//! - **wrote**: it opened to write, created, renamed, removed, linked, truncated, or
//!   changed the mode, owner or times of a path (attempted: a write refused by the OS still
//!   counts) that is not a path its model lists as written or removed, nor inside a folder
//!   so listed, nor a folder on the way to one inside the session's folder (`install -D`).
//!   Allowed besides: the run's own stdout and stderr and `/dev/null`, `/dev/tty`; the
//!   program's own state inside the session's folder, which its subcommand's job is to
//!   keep (git: `.git/` but its `config`, `hooks/`, `info/`, `modules/` and `worktrees/`,
//!   which decide what git runs; make: the Makefile's `made-*` and its targets; pytest:
//!   `.pytest_cache/` and `__pycache__/`); and temporary files the program made and removed
//!   (or renamed onto a path it may write) in the same run, under `/tmp`, `/var/tmp`,
//!   `/dev/shm` or beside a path it may write (`sed -i`'s `sedXXXXXX`, git's
//!   `/tmp/.git_vtag_tmp*`);
//! - **read**: it opened a file outside the session's folder (the secret among them,
//!   however reached: `sec`, `link/secret`, `sub/up/secret`) that its model does not list
//!   as read, nor under a folder listed as searched whole (`Tree`, `TreeFollowed`; for
//!   `TreeShown` no hidden name beneath it but ripgrep's ignore files), written or removed,
//!   nor a folder under one listed as read (`ls -R`, `du`: names, not contents). The
//!   program's own libraries, locale and configuration are allowed: `/usr`, `/lib*`,
//!   `/etc`, `/proc`, `/sys`, `/dev`, `/run`, `HOME` (`.gitconfig`), the stand-ins'
//!   folder. Reads inside the session's folder are not judged, but those of its `.env`
//!   ([`SENSITIVE`]), which must be listed like a file outside.

use std::path::{Path, PathBuf};

use acp_question_bridge::policy::args::{Access, Effects};
use acp_question_bridge::policy::{gitplaces, path};

use super::sandbox::{Run, Scratch, MAKE_RECIPES, MAKE_TARGETS};
use super::trace::{resolve, Event};

/// The one file inside the session's folder whose reads are judged: a hidden one, as a
/// deny rule's usual target (`Read(.env)`).
pub const SENSITIVE: &str = ".env";

/// What helpers a program may start besides itself.
#[derive(Debug, Clone)]
pub enum Helpers {
    Nothing,
    /// tar's compressors.
    Compressors,
    /// git's own programs, and `sh -c 'git-upload-pack ...'`.
    Git {
        exe: PathBuf,
        exec_path: PathBuf,
    },
    /// The recipes of the Makefile.
    Make,
}

/// The state a program keeps in the session's folder as its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Own {
    Nothing,
    Git,
    Make,
    Pytest,
}

/// One way a run did more than its model said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// `ran`, `wrote` or `read`.
    pub kind: &'static str,
    pub what: String,
}

/// The paths a model listed, each in every reading, resolved before the run.
#[derive(Debug, Clone, Default)]
pub struct Listed {
    pub paths: Vec<(Access, PathBuf)>,
}

/// Resolves what `effects` lists from the session's folder `box_dir` as it is now, by the
/// policy's own resolver (`policy::path::readings`: every reading of a path, a link as
/// itself too). `Err` names a path it does not resolve (`/proc/self/...`): the policy
/// asks for such a command, so it is not run.
pub fn listed(effects: &Effects, box_dir: &Path) -> Result<Listed, String> {
    let mut out = Listed::default();
    // What git finds beyond its words, as the decision finds it.
    let mut effects = effects.clone();
    let resolve =
        |w: &Path| path::readings(w, box_dir).map(|rs| rs.into_iter().map(|r| r.path).collect());
    gitplaces::place(&mut effects, box_dir, &|k| std::env::var_os(k), &resolve)?;
    let words = effects
        .paths
        .iter()
        .cloned()
        .chain(effects.unplaced.iter().map(|w| (Access::Read, w.clone())));
    for (access, word) in words {
        // A `-` is a file's name to the programs that write it (`tee -`), as the policy
        // resolves it; where it means the standard input, the file is never opened.
        if word.is_empty() {
            continue;
        }
        let Some(readings) = path::readings(Path::new(&word), box_dir) else {
            return Err(format!("{word:?} is not resolved"));
        };
        // As the policy does: a folder searched following its links is asked when a link
        // is beneath it.
        if access == Access::TreeFollowed
            && readings.iter().any(|r| r.is_dir && link_beneath(&r.path))
        {
            return Err(format!("a link beneath {word:?}"));
        }
        for r in readings {
            for p in std::iter::once(r.path).chain(r.link) {
                if !out.paths.contains(&(access, p.clone())) {
                    out.paths.push((access, p));
                }
            }
        }
    }
    Ok(out)
}

/// Whether there is a symbolic link beneath folder `dir` (at most a few thousand entries
/// looked at; more counts as one).
fn link_beneath(dir: &Path) -> bool {
    let mut stack = vec![dir.to_owned()];
    let mut seen = 0;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            seen += 1;
            match e.file_type() {
                Ok(t) if t.is_symlink() => return true,
                Ok(t) if t.is_dir() => stack.push(e.path()),
                _ => {}
            }
            if seen > 5000 {
                return true;
            }
        }
    }
    false
}

/// Whether a model's `access` of `listed` covers a read of `p` (`dir`: opened as a folder).
fn covers(access: Access, listed: &Path, p: &Path, dir: bool) -> bool {
    if p == listed {
        return true;
    }
    let Ok(rel) = p.strip_prefix(listed) else {
        return false;
    };
    match access {
        // A folder's names, and the folders beneath it (`ls -R`, `du`).
        Access::Read => dir,
        Access::Tree
        | Access::TreeFollowed
        | Access::Tracked
        | Access::TrackedBeneath
        | Access::Write
        | Access::Remove => true,
        // Hidden names left out, but the ignore files ripgrep reads to know what to skip.
        Access::TreeShown => {
            let hidden = rel
                .components()
                .any(|c| c.as_os_str().as_encoded_bytes().starts_with(b"."));
            let ignore_file = rel.file_name().is_some_and(|n| {
                [".gitignore", ".ignore", ".rgignore"].contains(&n.to_string_lossy().as_ref())
            }) || rel.ends_with(".git/info/exclude");
            !hidden || ignore_file
        }
    }
}

/// A path the model lists as written or removed that is outside the session's folder, or
/// the folder itself: the policy refuses such a command under a prefix rule, so it is not
/// run.
pub fn writes_outside(listed: &Listed, box_dir: &Path) -> Option<PathBuf> {
    listed
        .paths
        .iter()
        .filter(|(a, _)| matches!(a, Access::Write | Access::Remove))
        .map(|(_, p)| p)
        .find(|p| !p.starts_with(box_dir) || *p == box_dir)
        .cloned()
}

/// Everything `run` did beyond what `listed` (its model's reading) says.
pub fn judge(
    s: &Scratch,
    exe: &Path,
    helpers: &Helpers,
    own: Own,
    listed: &Listed,
    run: &Run,
) -> Vec<Violation> {
    let box_dir = s.box_dir();
    let tmp = std::env::temp_dir();
    let mut v = Vec::new();
    let show = |p: &Path| -> String {
        let t = p.to_string_lossy();
        t.replace(&*s.bin.to_string_lossy(), "<stand-ins>")
            .replace(&*s.box_dir().to_string_lossy(), "<box>")
            .replace(&*s.outside().to_string_lossy(), "<outside>")
            .replace(&*s.base.to_string_lossy(), "<scratch>")
    };
    let exe_real = resolve(exe, true);
    let written: Vec<&PathBuf> = listed
        .paths
        .iter()
        .filter(|(a, _)| matches!(a, Access::Write | Access::Remove))
        .map(|(_, p)| p)
        .collect();
    let may_write = |p: &Path| written.iter().any(|w| p == *w || p.starts_with(w));
    // Made during the run and gone at its end (or renamed onto a path it may write).
    let made: Vec<&PathBuf> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Change {
                path, made: true, ..
            } => Some(path),
            _ => None,
        })
        .collect();
    let renamed_onto_allowed = |p: &Path| {
        run.events.iter().any(|e| match e {
            Event::Rename { from, to } => from == p && may_write(to),
            _ => false,
        })
    };
    let temporary = |p: &Path| {
        let gone = std::fs::symlink_metadata(p).is_err();
        let in_tmp = [
            tmp.as_path(),
            Path::new("/tmp"),
            Path::new("/var/tmp"),
            Path::new("/dev/shm"),
        ]
        .iter()
        .any(|t| p.starts_with(t) && !p.starts_with(&s.base));
        let beside = p
            .parent()
            .is_some_and(|dir| written.iter().any(|w| w.parent() == Some(dir)));
        made.iter().any(|m| m.as_path() == p)
            && ((gone && (in_tmp || beside)) || (beside && renamed_onto_allowed(p)))
    };
    let own_state = |p: &Path| {
        let Ok(rel) = p.strip_prefix(&box_dir) else {
            return false;
        };
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        match own {
            Own::Nothing => false,
            // Its index, objects, refs and logs; never its configuration or hooks, which
            // decide what git runs (the policy never lets a prefix rule write them).
            Own::Git => {
                let mut c = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned());
                c.next().as_deref() == Some(".git")
                    && !matches!(
                        c.next().as_deref(),
                        Some("config" | "config.lock" | "hooks" | "info" | "modules" | "worktrees")
                    )
            }
            Own::Make => {
                rel.components().count() == 1
                    && first
                        .as_deref()
                        .is_some_and(|f| f.starts_with("made-") || MAKE_TARGETS.contains(&f))
            }
            Own::Pytest => {
                first.as_deref() == Some(".pytest_cache")
                    || rel.components().any(|c| c.as_os_str() == "__pycache__")
            }
        }
    };
    let streams = |p: &Path| {
        p == s.out
            || p == s.err
            || ["/dev/null", "/dev/tty", "/dev/stdout", "/dev/stderr"]
                .iter()
                .any(|d| p == Path::new(d))
            || p.starts_with("/dev/pts")
    };
    for e in &run.events {
        match e {
            Event::Exec { path, argv } => {
                if *path == exe_real || allowed_helper(helpers, path, argv) {
                    continue;
                }
                v.push(Violation {
                    kind: "ran",
                    what: format!("ran {} {:?}", show(path), argv),
                });
            }
            Event::Change { what, path, ok, .. } => {
                let on_the_way = *what == "made"
                    && path.starts_with(&box_dir)
                    && *path != box_dir
                    && written.iter().any(|w| w.starts_with(path));
                if may_write(path)
                    || on_the_way
                    || streams(path)
                    || own_state(path)
                    || temporary(path)
                {
                    continue;
                }
                v.push(Violation {
                    kind: "wrote",
                    what: format!(
                        "{what} {}{}",
                        show(path),
                        if *ok {
                            ""
                        } else {
                            " (tried; refused by the OS)"
                        }
                    ),
                });
            }
            Event::Read { path, dir } => {
                let system = [
                    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc", "/sys", "/dev",
                    "/run",
                ]
                .iter()
                .any(|d| path.starts_with(d));
                let inside = path.starts_with(&box_dir) && *path != box_dir.join(SENSITIVE);
                if inside
                    || path.starts_with(s.home())
                    || path.starts_with(&s.bin)
                    || *path == exe_real
                    || streams(path)
                    || (system && !path.starts_with(&s.base))
                    || made.iter().any(|m| m == &path)
                {
                    continue;
                }
                let covered = listed.paths.iter().any(|(a, l)| covers(*a, l, path, *dir));
                if !covered {
                    v.push(Violation {
                        kind: "read",
                        what: format!(
                            "read {}{} (not listed)",
                            if *dir { "the folder " } else { "" },
                            show(path)
                        ),
                    });
                }
            }
            Event::Rename { .. } => {}
        }
    }
    let mut seen = std::collections::HashSet::new();
    v.retain(|x| seen.insert(x.what.clone()));
    v
}

/// The compressors tar may start.
const COMPRESSORS: &[&str] = &[
    "gzip",
    "gunzip",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "zstd",
    "unzstd",
    "lzip",
    "lzma",
    "unlzma",
    "lzop",
    "lz4",
    "compress",
    "uncompress",
    "pigz",
];

/// Whether `path` started with `argv` is a helper `helpers` allows.
fn allowed_helper(helpers: &Helpers, path: &Path, argv: &[String]) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let system = |p: &Path| {
        ["/usr/bin", "/bin", "/usr/local/bin"]
            .iter()
            .any(|d| p.parent() == Some(Path::new(d)))
    };
    let shell = |p: &Path| system(p) && matches!(name.as_str(), "sh" | "dash" | "bash");
    match helpers {
        Helpers::Nothing => false,
        Helpers::Compressors => {
            // tar starts its compressor by `/bin/sh -c 'gzip -d'`, the shell finding it.
            let compressor = |n: &str| COMPRESSORS.contains(&n);
            (system(path) && compressor(&name))
                || (shell(path)
                    && argv.len() == 3
                    && argv[1] == "-c"
                    && argv[2].split(' ').enumerate().all(|(k, w)| {
                        if k == 0 {
                            compressor(w)
                        } else {
                            w == "-d"
                        }
                    }))
        }
        Helpers::Git { exe, exec_path } => {
            path == resolve(exe, true)
                || path.starts_with(resolve(exec_path, true))
                || (shell(path)
                    && argv.get(1).is_some_and(|a| a == "-c")
                    && argv.get(2).is_some_and(|c| {
                        c.starts_with("git-upload-pack ") || c.starts_with("git upload-pack ")
                    }))
        }
        Helpers::Make => {
            shell(path)
                && argv.len() == 3
                && argv[1] == "-c"
                && MAKE_RECIPES.contains(&argv[2].as_str())
        }
    }
}
