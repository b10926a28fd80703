//! Programs the shell finds on `PATH` inside the session's folder (an activated
//! virtualenv's `.venv/bin`, a `node_modules/.bin` put on `PATH`): the agent may have
//! written them with an allowed write, so a rule on `ls` would run the agent's `ls`. The
//! agent's shell inherits the bridge's `PATH` (Claude's snapshot of the user's shell may
//! add to it; that is not followed).
//!
//! Invariants: an allow never runs a program found first on `PATH` in a folder inside the
//! session, unless the program runs the project's code anyway (a test runner, a build
//! tool), and a command that writes into a folder on `PATH` inside the session runs
//! nothing allowed after it.

use std::path::{Path, PathBuf};

/// Programs whose rule already runs the project's own code (its tests, its scripts, its
/// build): a copy of theirs inside the project gives the agent nothing more.
const RUNS_PROJECT_CODE: &[&str] = &[
    "pytest", "py.test", "tox", "nox", "npm", "pnpm", "yarn", "npx", "cargo", "make", "jest",
    "vitest", "mocha",
];

/// bash's builtins a rule may name: never looked up on `PATH`.
const BUILTINS: &[&str] = &[
    "echo", "printf", "test", "[", "true", "false", "pwd", "cd", "type", "read", "export", "set",
    "unset", "exit", "return", "shift", "wait", "umask", "ulimit", "alias", "hash",
];

#[cfg(test)]
thread_local! {
    /// A test's `PATH` (the process's is shared by every test thread).
    pub(super) static TEST_PATH: std::cell::RefCell<Option<std::ffi::OsString>> =
        const { std::cell::RefCell::new(None) };
}

fn path_var() -> Option<std::ffi::OsString> {
    #[cfg(test)]
    if let Some(p) = TEST_PATH.with(|t| t.borrow().clone()) {
        return Some(p);
    }
    std::env::var_os("PATH")
}

/// The folders of `PATH`, a relative one (or an empty one: the current folder) from `at`.
fn path_folders(at: &Path) -> Vec<PathBuf> {
    let Some(p) = path_var() else {
        return Vec::new();
    };
    std::env::split_paths(&p)
        .map(|d| {
            if d.as_os_str().is_empty() {
                at.to_path_buf()
            } else if d.is_relative() {
                at.join(d)
            } else {
                d
            }
        })
        .collect()
}

/// Whether folder `d` lies inside the session's folder `session`. A session at `/` holds
/// every folder, the system's among them: no project's own there.
fn inside(d: &Path, session: &Path) -> bool {
    session.parent().is_some() && d.canonicalize().is_ok_and(|d| d.starts_with(session))
}

/// Why program `prog`, run from any of `folders`, may be one the agent wrote: the shell
/// finds it first on `PATH` in a folder inside the session's.
fn program_refused(prog: &str, folders: &[PathBuf], session: &Path) -> Option<String> {
    if prog.contains('/') || BUILTINS.contains(&prog) || RUNS_PROJECT_CODE.contains(&prog) {
        return None;
    }
    for at in folders {
        let found = path_folders(at).into_iter().find(|d| {
            std::fs::metadata(d.join(prog)).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt as _;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        });
        if let Some(d) = found.filter(|d| inside(d, session)) {
            return Some(format!(
                "`{prog}` is found first on PATH in {}, inside the session's folder, where the agent may have written it",
                d.display()
            ));
        }
    }
    None
}

/// Why writing `written` (resolved) may plant a program: it lies in a folder on `PATH`
/// inside the session's folder.
fn write_refused(written: &Path, folders: &[PathBuf], session: &Path) -> Option<String> {
    let parent = written.parent()?.canonicalize().ok()?;
    let on_path = folders.iter().any(|at| {
        path_folders(at)
            .iter()
            .any(|d| d.canonicalize().is_ok_and(|d| d == parent))
    });
    (on_path && inside(&parent, session)).then(|| {
        format!(
            "it writes {}, in a folder on PATH inside the session's folder: a later command may run what it wrote",
            written.display()
        )
    })
}

/// Why `part`, run from any of `folders`, may run or plant a program the agent wrote on
/// `PATH` inside the session.
pub(super) fn refused(
    part: &super::command::Part,
    folders: &[PathBuf],
    session: &Path,
) -> Option<String> {
    let prog = part.words.first()?;
    if let Some(why) = program_refused(prog, folders, session) {
        return Some(why);
    }
    let own = super::named::Named::in_folders(&part.words, folders);
    own.paths
        .iter()
        .filter(|(a, _)| matches!(a, super::args::Access::Write | super::args::Access::Remove))
        .find_map(|(_, p)| write_refused(p, folders, session))
}
