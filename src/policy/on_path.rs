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

/// `p` resolved: its longest part that is there canonical, the rest as written (`..`
/// taken off), so a folder not made yet is where it will be.
fn resolved(p: &Path) -> PathBuf {
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    let mut rest = Vec::new();
    let mut at = p.to_path_buf();
    while let Some(name) = at.file_name().map(|n| n.to_owned()) {
        at.pop();
        rest.push(name);
        if let Ok(c) = at.canonicalize() {
            let mut out = c;
            for n in rest.iter().rev() {
                if n == ".." {
                    out.pop();
                } else if n != "." {
                    out.push(n);
                }
            }
            return out;
        }
    }
    p.to_path_buf()
}

/// Whether folder `d` lies inside the session's folder `session`, there yet or not. A
/// session at `/` holds every folder, the system's among them: no project's own there.
fn inside(d: &Path, session: &Path) -> bool {
    session.parent().is_some() && resolved(d).starts_with(session)
}

/// Why program `prog`, run from any of `folders`, may be one the agent wrote: the shell
/// finds it first on `PATH` in a folder inside the session's.
pub(super) fn program_refused(prog: &str, folders: &[PathBuf], session: &Path) -> Option<String> {
    if prog.contains('/') || BUILTINS.contains(&prog) || RUNS_PROJECT_CODE.contains(&prog) {
        return None;
    }
    for at in folders {
        let found = path_folders(at)
            .into_iter()
            .find(|d| crate::agents::is_executable(&d.join(prog)));
        if let Some(d) = found.filter(|d| inside(d, session)) {
            return Some(format!(
                "`{prog}` is found first on PATH in {}, inside the session's folder, where the agent may have written it",
                d.display()
            ));
        }
    }
    None
}

/// Why writing `written` (resolved) may plant a program: it is a folder on `PATH` inside
/// the session's folder, a folder above one (`cp -r x/. .venv/bin`, `cp -r y/bin .venv`),
/// or a file in one, there yet or not; or the same of a `node_modules/.bin`; or anything in
/// a virtual environment (`.venv`, or a folder holding `pyvenv.cfg`).
pub(super) fn write_refused(written: &Path, folders: &[PathBuf], session: &Path) -> Option<String> {
    let written = resolved(written);
    // npx, `npm exec`, pnpm and yarn run a package's program from the project's
    // `node_modules/.bin` first, whatever `PATH` says (a twenty-fourth review: `cp /bin/sh
    // node_modules/.bin/cowsay`, then `npx cowsay -c …` under `Bash(npx cowsay:*)`).
    let rel = written
        .strip_prefix(session)
        .ok()
        .filter(|_| session.parent().is_some());
    // In either case: a file system that ignores case opens `Node_Modules/.BIN` too.
    let names: Vec<String> = rel
        .iter()
        .flat_map(|r| r.iter())
        .map(|n| n.to_string_lossy().to_lowercase())
        .collect();
    let in_bin = names
        .windows(2)
        .any(|w| w[0] == "node_modules" && w[1] == ".bin");
    if in_bin || names.last().is_some_and(|n| *n == "node_modules") {
        return Some(format!(
            "it writes {}, in or above a node_modules/.bin folder, whose programs npx, npm exec, pnpm and yarn run by name",
            written.display()
        ));
    }
    // A virtual environment: uv, poetry, pdm and hatch run the project's `.venv/bin/python`
    // whatever `PATH` says, and it runs the `.pth` files of its `site-packages` (a
    // twenty-fifth review: `install -m 755 x .venv/bin/python`, then `uv tree` ran it).
    let venv = names.iter().any(|n| n == ".venv" || n == "pyvenv.cfg")
        || written
            .ancestors()
            .skip(1)
            .take_while(|d| d.starts_with(session) && *d != session)
            .any(|d| d.join("pyvenv.cfg").is_file());
    if rel.is_some() && venv {
        return Some(format!(
            "it writes {}, in a virtual environment (its python and what it loads run when a tool starts it)",
            written.display()
        ));
    }
    let on_path = folders.iter().flat_map(|at| path_folders(at)).find(|d| {
        let d = resolved(d);
        inside(&d, session) && (d.starts_with(&written) || written.parent() == Some(d.as_path()))
    })?;
    Some(format!(
        "it writes {}, in or above {}, a folder on PATH inside the session's folder: a later command may run what it wrote",
        written.display(),
        on_path.display()
    ))
}
