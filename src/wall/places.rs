//! The places the wall is about that do not depend on a plan: where bridges and inboxes
//! keep their state, where an agent may write in a `workspace` wall, and the path this
//! program was started by.

use std::path::{Path, PathBuf};

/// The running program's own image (Linux): started by it, the launcher and the guard are
/// this program even after its file was renamed over.
pub const SELF_EXE: &str = "/proc/self/exe";

/// Where a front (`--linger`) tells its holder the path it was started by.
pub const INVOKED_ENV: &str = "ACP_QUESTION_BRIDGE_INVOKED";

/// The path this program was started by: its `argv[0]`, looked up on `PATH` when it names
/// no folder (as the editor's `execvp` did).
pub fn invoked() -> Option<PathBuf> {
    // A holder started by its front (`--linger`) gets the front's; anywhere else the
    // variable is not taken.
    let holder = std::env::args_os().any(|a| a == "--hold-socket");
    if let Some(p) = std::env::var_os(INVOKED_ENV).filter(|p| holder && !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let first = PathBuf::from(std::env::args_os().next()?);
    if first.components().count() > 1 {
        return std::path::absolute(&first).ok();
    }
    // As the editor's `execvp` found it.
    crate::agents::which(first.to_str()?)
}

/// Every folder in which a bridge or an inbox of this user may keep its registry or state,
/// whatever this process's environment picks: `$XDG_STATE_HOME/acp-question-bridge` first,
/// `$XDG_RUNTIME_DIR/acp-question-bridge`, the registry, and their default places. Every wall
/// hides them.
pub fn state_folders() -> Vec<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME");
    let state = var("XDG_STATE_HOME")
        .or_else(|| home.as_ref().map(|h| h.join(".local/state")))
        .map(|d| d.join("acp-question-bridge"));
    let runtime = var("XDG_RUNTIME_DIR").map(|d| d.join("acp-question-bridge"));
    let uid = rustix::process::getuid().as_raw();
    let defaults = [
        home.as_ref()
            .map(|h| h.join(".local/state/acp-question-bridge")),
        Some(PathBuf::from(format!("/run/user/{uid}")))
            .filter(|d| d.is_dir())
            .map(|d| d.join("acp-question-bridge")),
    ];
    let mut out: Vec<PathBuf> = [state, runtime, Some(crate::inbox::roster::dir())]
        .into_iter()
        .chain(defaults)
        .flatten()
        .collect();
    let mut seen = std::collections::HashSet::new();
    out.retain(|d| seen.insert(d.clone()));
    out
}

/// Where an agent inside a `workspace` wall may write: the session's folder, the temp
/// folders, of `/dev` the files programs write (`/dev/null`, terminals, `/dev/shm`: no disk), its own state folders (by `agent`, its name
/// as `child::agent_name` gives it), the caches every toolchain writes, and `extra`
/// (`--sandbox-write`). Those not there are left out.
pub fn writable(cwd: Option<&Path>, agent: &str, extra: &[PathBuf]) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut out: Vec<PathBuf> = cwd.into_iter().map(Path::to_path_buf).collect();
    out.push(std::env::temp_dir());
    // Of `/dev`, what a program writes (never a disk, which a root agent owns).
    out.extend(
        [
            "/tmp",
            "/var/tmp",
            "/dev/null",
            "/dev/zero",
            "/dev/full",
            "/dev/random",
            "/dev/urandom",
            "/dev/tty",
            "/dev/ptmx",
            "/dev/pts",
            "/dev/shm",
            "/proc/self",
        ]
        .map(PathBuf::from),
    );
    if let Some(h) = &home {
        let own: &[&str] = match agent {
            a if a.contains("claude") => &[".claude", ".claude.json", ".config/claude"],
            a if a.contains("codex") => &[".codex"],
            a if a.contains("gemini") => &[".gemini"],
            a if a.contains("qwen") => &[".qwen"],
            a if a.contains("opencode") => &[".local/share/opencode", ".config/opencode"],
            a if a.contains("goose") => &[".config/goose", ".local/share/goose"],
            _ => &[],
        };
        let caches = [
            ".cache",
            ".npm",
            ".cargo/registry",
            ".cargo/git",
            ".local/share/uv",
            "go/pkg/mod",
        ];
        out.extend(own.iter().chain(caches.iter()).map(|d| h.join(d)));
    }
    out.extend(extra.iter().cloned());
    out.retain(|p| p.exists());
    out
}
