//! The roster of running bridges, which `inbox` reads: a per-user folder with one JSON file
//! per bridge whose control server runs, that only its user can enter. (Not the ACP Registry
//! of agents, `crate::agents`; the folder's variable and the inbox's `--registry` flag keep
//! their older name.)
//!
//! - Where: `$ACP_QUESTION_BRIDGE_REGISTRY` (tests), else `$XDG_RUNTIME_DIR/acp-question-bridge`,
//!   else `$XDG_STATE_HOME/acp-question-bridge/bridges`, else
//!   `~/.local/state/acp-question-bridge/bridges`.
//! - The folder is created 0700; an existing one that is not the user's own, or that others
//!   may enter, is refused (its entries carry tokens).
//! - An entry (`<id>.json`, 0600) holds the bridge's id, control URL, token, pid, agent
//!   command, cwd, host and start time. It is written to a temporary name and renamed, so a
//!   reader never sees half of one; it is removed when the bridge exits ([`Registration`]'s
//!   drop). A bridge killed with SIGKILL leaves its entry: readers skip an entry whose pid is
//!   not alive, and remove it.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The environment variable that names the roster's folder (overrides the default).
pub const REGISTRY_ENV: &str = "ACP_QUESTION_BRIDGE_REGISTRY";

/// One running bridge, as its entry says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Random, unique per bridge process (16 hex digits).
    pub id: String,
    /// The control server: `http://ADDR/`.
    pub url: String,
    pub token: String,
    pub pid: u32,
    /// The agent command and its arguments.
    pub agent: Vec<String>,
    pub cwd: String,
    pub host: String,
    /// RFC 3339.
    pub started_at: String,
}

impl Entry {
    /// What others may see of the bridge (everything but the token).
    pub fn public(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id, "agent": self.agent, "cwd": self.cwd, "host": self.host,
            "pid": self.pid, "startedAt": self.started_at,
        })
    }
}

/// The roster's folder for this user (not created).
pub fn dir() -> PathBuf {
    dir_in(|k| std::env::var_os(k))
}

/// [`dir`] as a process with the environment `env` picks it.
pub fn dir_in(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = var(REGISTRY_ENV) {
        return d;
    }
    if let Some(d) = var("XDG_RUNTIME_DIR") {
        return d.join("acp-question-bridge");
    }
    let state = var("XDG_STATE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    state.join("acp-question-bridge").join("bridges")
}

/// This machine's name (`/proc/sys/kernel/hostname`), or `localhost`.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Creates `dir` (0700, with its parents) or checks an existing one: it must be a folder
/// of this user's that nobody else may enter.
pub fn ensure_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    let me = std::fs::metadata("/proc/self")?.uid();
    let refuse = |why: String| {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            why,
        ))
    };
    if !meta.is_dir() {
        return refuse(format!("{} is not a folder", dir.display()));
    }
    if meta.uid() != me {
        return refuse(format!("{} belongs to another user", dir.display()));
    }
    if meta.mode() & 0o077 != 0 {
        return refuse(format!(
            "{} may be entered by other users (mode {:o}); it must be 0700",
            dir.display(),
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

/// A bridge's entry in the roster, removed when dropped.
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes `entry` into the roster at `dir` (created if needed).
pub fn register(dir: &Path, entry: &Entry) -> std::io::Result<Registration> {
    ensure_dir(dir)?;
    let path = dir.join(format!("{}.json", entry.id));
    let mut bytes = serde_json::to_vec(entry)?;
    bytes.push(b'\n');
    crate::private_file::replace(&path, &bytes)?;
    Ok(Registration { path })
}

/// Whether a process with this pid exists (signal 0) and is not exiting or exited (a
/// zombie, whose parent has not reaped it yet, is gone for us).
pub fn alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    let exists = match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        // It exists, but is not ours to signal.
        Err(nix::errno::Errno::EPERM) => true,
        Err(_) => false,
    };
    exists && !ending(pid)
}

/// The kernel's flag of a task in `do_exit` (`PF_EXITING`, include/linux/sched.h).
const PF_EXITING: u64 = 0x4;

/// Whether `/proc/<pid>/stat` says the process has exited (state `Z` or `X`) or is exiting
/// (`PF_EXITING`, set before its files, and so its sockets, are closed: whoever sees one of
/// its connections close because it was killed sees it gone).
fn ending(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses and may hold any byte;
    // the flags are the seventh field after it.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    let mut fields = rest.split_whitespace();
    let state = fields.next();
    let flags = fields.nth(5).and_then(|f| f.parse::<u64>().ok());
    matches!(state, Some("Z" | "X")) || flags.is_some_and(|f| f & PF_EXITING != 0)
}

/// The live bridges in the roster at `dir`; entries of processes that are gone are
/// removed, unreadable ones skipped.
pub fn scan(dir: &Path) -> Vec<Entry> {
    read(dir, true)
}

/// The live bridges in the roster at `dir`, changing nothing (for `doctor`).
pub fn live(dir: &Path) -> Vec<Entry> {
    read(dir, false)
}

fn read(dir: &Path, remove_dead: bool) -> Vec<Entry> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in read.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(entry) = serde_json::from_str::<Entry>(&text) else {
            tracing::debug!(path = %path.display(), "not a registry entry; skipped");
            continue;
        };
        if alive(entry.pid) {
            found.push(entry);
        } else if remove_dead {
            tracing::info!(id = %entry.id, pid = entry.pid, "a bridge that is gone left its entry; removed");
            let _ = std::fs::remove_file(&path);
        }
    }
    found.sort_by(|a, b| a.started_at.cmp(&b.started_at).then(a.id.cmp(&b.id)));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn entry(id: &str, pid: u32) -> Entry {
        Entry {
            id: id.into(),
            url: "http://127.0.0.1:1/".into(),
            token: "t".into(),
            pid,
            agent: vec!["agent".into()],
            cwd: "/".into(),
            host: host_name(),
            started_at: "2026-11-22T00:00:00.000Z".into(),
        }
    }

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "acp-qb-registry-{name}-{}-{}",
            std::process::id(),
            crate::control::random_token().unwrap()
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn entries_are_private_listed_while_alive_and_removed_on_drop() {
        let d = temp("life");
        let reg = register(&d, &entry("a", std::process::id())).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o777, 0o700);
        let file = d.join("a.json");
        assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
        assert_eq!(scan(&d), vec![entry("a", std::process::id())]);
        drop(reg);
        assert!(!file.exists());
        assert!(scan(&d).is_empty());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_entry_of_a_dead_process_is_skipped_and_removed() {
        let d = temp("dead");
        // A child that has exited and been reaped: its pid names no process.
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        let reg = register(&d, &entry("gone", pid)).unwrap();
        std::mem::forget(reg);
        assert!(scan(&d).is_empty());
        assert!(!d.join("gone.json").exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_killed_process_is_gone_before_it_is_reaped() {
        let mut c = std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .unwrap();
        let pid = c.id();
        assert!(alive(pid));
        c.kill().unwrap();
        // Not reaped yet: a zombie, or still exiting; gone either way, once the kernel
        // has made it one (wait for it without reaping it).
        let start = std::time::Instant::now();
        while alive(pid) {
            assert!(start.elapsed() < std::time::Duration::from_secs(30));
            std::thread::yield_now();
        }
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        c.wait().unwrap();
    }

    #[test]
    fn a_folder_others_may_enter_is_refused() {
        let d = temp("open");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = register(&d, &entry("x", std::process::id())).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("0700"), "{err}");
        assert!(!d.join("x.json").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
