//! Held sessions that are gone: a holder that ends while it keeps sessions (its agent
//! exited, its linger ran out, it was stopped) says so in a file of `<held>/ended/`, and so
//! does the next front or `sessions` for a holder that died without a word (SIGKILL, a
//! crash). A front whose client loads such a session answers the load itself, once, with
//! `-32002` naming what happened and when ([`lost_error`]); the next load of it goes to an
//! agent as any other (an agent that saved the session itself may still have it).
//!
//! Invariants:
//! - The folder is 0700 and each file 0600, in the holders' folder; a file holds no token.
//! - At most [`MAX_FILES`] files, none older than [`KEEP_FOR`]: the oldest go first.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// How long an ending is remembered.
pub const KEEP_FOR: Duration = Duration::from_secs(7 * 24 * 3600);

/// The most endings remembered.
pub const MAX_FILES: usize = 256;

/// One holder's ending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ended {
    /// The holder's key ([`super::key`]): only fronts of the same command line and folder
    /// are told.
    pub key: String,
    pub holder: u32,
    /// The sessions it kept that no client has been told of yet.
    pub sessions: Vec<String>,
    /// Milliseconds since the epoch: when it ended, or when it was found gone.
    pub at_ms: u64,
    /// It died without a word: `at_ms` is when it was found gone.
    #[serde(default)]
    pub found_gone: bool,
    /// What happened, in words ("the agent exited with code 1").
    pub why: String,
    /// Its `initialize` result, for a front that finds no live holder to answer its
    /// client's `initialize` with (it must read the client's load to tell it).
    #[serde(default)]
    pub init: Option<String>,
    /// The agent command and its folder, for `sessions` (empty in a file of an older
    /// version).
    #[serde(default)]
    pub agent: Vec<String>,
    #[serde(default)]
    pub cwd: String,
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The endings' folder in the holders' folder `held`.
pub fn dir(held: &Path) -> PathBuf {
    held.join("ended")
}

/// Runs `f` holding the endings' lock (`<held>/ended/.lock`, exclusive): fronts and
/// `sessions` that find the same holder gone, or load the same session, at once, take
/// turns. Without the folder (nothing recorded yet) or the lock, `f` runs alone anyway.
fn locked<T>(held: &Path, f: impl FnOnce() -> T) -> T {
    use std::os::unix::fs::OpenOptionsExt;
    let folder = dir(held);
    let _ = crate::inbox::roster::ensure_dir(&folder);
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(folder.join(".lock"));
    let _held = lock
        .ok()
        .and_then(|f| nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive).ok());
    f()
}

impl Ended {
    /// The ending of holder `pid` (of `key`, keeping `sessions`, running `agent` in `cwd`),
    /// found gone now.
    pub fn found_gone(
        key: &str,
        pid: u32,
        sessions: &[String],
        init: Option<&str>,
        (agent, cwd): (&[String], &str),
    ) -> Self {
        Ended {
            agent: agent.to_vec(),
            cwd: cwd.to_owned(),
            key: key.to_owned(),
            holder: pid,
            sessions: sessions.to_vec(),
            at_ms: now_ms(),
            found_gone: true,
            why: format!(
                "its holder (pid {pid}) ended without a word: it was killed, or it crashed"
            ),
            init: init.map(str::to_owned),
        }
    }
}

/// A holder's file at `path` names a process that is gone (`gone`, from
/// [`Ended::found_gone`]): its sessions are recorded as lost, and its file and `socket`
/// go. Under the lock, and only while the file is still there: of several that find it at
/// once, one records it.
pub fn found_gone(held: &Path, path: &Path, gone: &Ended, socket: &Path) {
    locked(held, || {
        if !path.exists() {
            return;
        }
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("holder");
        if let Err(e) = write(held, name, gone) {
            tracing::warn!(error = %e, "cannot say that a dead holder's sessions are lost");
        }
        let _ = std::fs::remove_file(path);
        // Only a socket of this folder (the file says where; it is not trusted further).
        if socket.parent() == Some(held) {
            let _ = std::fs::remove_file(socket);
        }
    });
}

/// Writes `ended` as `<held>/ended/<name>.json` (`name`: the holder's socket's stem), and
/// drops the endings past the bounds. Nothing is written for a holder that kept no session.
pub fn record(held: &Path, name: &str, ended: &Ended) -> std::io::Result<()> {
    locked(held, || write(held, name, ended))
}

fn write(held: &Path, name: &str, ended: &Ended) -> std::io::Result<()> {
    if ended.sessions.is_empty() {
        return Ok(());
    }
    let folder = dir(held);
    crate::inbox::roster::ensure_dir(&folder)?;
    let mut bytes = serde_json::to_vec(ended)?;
    bytes.push(b'\n');
    crate::private_file::replace(&folder.join(format!("{name}.json")), &bytes)?;
    prune(&folder, SystemTime::now());
    Ok(())
}

/// The endings in `folder`, newest first, with their paths.
fn read(folder: &Path) -> Vec<(PathBuf, Ended)> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut found: Vec<(PathBuf, Ended)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| {
            let ended = serde_json::from_slice(&std::fs::read(&p).ok()?).ok()?;
            Some((p, ended))
        })
        .collect();
    found.sort_by_key(|(_, e)| std::cmp::Reverse(e.at_ms));
    found
}

fn prune(folder: &Path, now: SystemTime) {
    let oldest = now
        .checked_sub(KEEP_FOR)
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64);
    for (i, (path, e)) in read(folder).into_iter().enumerate() {
        if i >= MAX_FILES || e.at_ms < oldest {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The newest `initialize` result of an ended holder of `key`.
pub fn init_of(held: &Path, key: &str) -> Option<String> {
    read(&dir(held))
        .into_iter()
        .filter(|(_, e)| e.key == key)
        .find_map(|(_, e)| e.init)
}

/// Every ending whose sessions no client was told of yet, newest first (`sessions`).
pub fn untold(held: &Path) -> Vec<Ended> {
    locked(held, || {
        read(&dir(held)).into_iter().map(|(_, e)| e).collect()
    })
}

/// The ending of `session` under `key`, if no client was told of it yet: it is told now
/// (the session is taken out of its file).
pub fn take(held: &Path, key: &str, session: &str) -> Option<Ended> {
    locked(held, || take_locked(held, key, session))
}

fn take_locked(held: &Path, key: &str, session: &str) -> Option<Ended> {
    let (path, mut ended) = read(&dir(held))
        .into_iter()
        .find(|(_, e)| e.key == key && e.sessions.iter().any(|s| s == session))?;
    let told = ended.clone();
    ended.sessions.retain(|s| s != session);
    if ended.sessions.is_empty() {
        let _ = std::fs::remove_file(&path);
    } else if let Ok(mut bytes) = serde_json::to_vec(&ended) {
        bytes.push(b'\n');
        let _ = crate::private_file::replace(&path, &bytes);
    }
    Some(told)
}

/// The error a load of `session` gets when its holder ended: `-32002` (ACP's "resource not
/// found"), with what happened and when in `data.lost`.
pub fn lost_error(id: &Value, session: &str, e: &Ended) -> Value {
    let at = UNIX_EPOCH + Duration::from_millis(e.at_ms);
    let when = humantime::format_rfc3339_seconds(at).to_string();
    let seen = if e.found_gone { "found gone at" } else { "at" };
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": crate::jsonrpc::code::RESOURCE_NOT_FOUND,
            "message": format!(
                "session {session} is lost: {} ({seen} {when}). Its turn and its pending \
                 questions ended with it. Load it again to ask a new agent for what it saved.",
                e.why
            ),
            "data": {
                "sessionId": session,
                "lost": {
                    "at": when,
                    "foundGone": e.found_gone,
                    "why": e.why,
                    "holderPid": e.holder,
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("acp-qb-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("a folder");
        d
    }

    fn ended(key: &str, sessions: &[&str], at_ms: u64) -> Ended {
        Ended {
            key: key.into(),
            holder: 7,
            sessions: sessions.iter().map(|s| (*s).to_owned()).collect(),
            at_ms,
            found_gone: false,
            why: "the agent exited with code 1".into(),
            init: Some("{}".into()),
            agent: vec!["agent".into()],
            cwd: "/w".into(),
        }
    }

    #[test]
    fn a_lost_session_is_told_once_and_only_to_its_key() {
        let held = scratch("ended-once");
        record(&held, "a", &ended("k", &["s1", "s2"], now_ms())).expect("recorded");
        assert!(take(&held, "other", "s1").is_none());
        assert_eq!(take(&held, "k", "s1").expect("told").holder, 7);
        assert!(take(&held, "k", "s1").is_none(), "told once");
        assert!(take(&held, "k", "s2").is_some());
        assert!(!dir(&held).join("a.json").exists(), "nothing left to tell");
    }

    #[test]
    fn fronts_that_load_two_lost_sessions_at_once_each_tell_one_and_leave_nothing() {
        let held = scratch("ended-race");
        for _ in 0..200 {
            record(&held, "h", &ended("k", &["p", "q"], now_ms())).expect("recorded");
            let told: Vec<bool> = std::thread::scope(|s| {
                let a = s.spawn(|| take(&held, "k", "p").is_some());
                let b = s.spawn(|| take(&held, "k", "q").is_some());
                vec![a.join().expect("a"), b.join().expect("b")]
            });
            assert_eq!(told, [true, true]);
            assert!(!dir(&held).join("h.json").exists(), "nothing left to tell");
        }
    }

    #[test]
    fn endings_past_the_bounds_are_dropped() {
        let held = scratch("ended-bounds");
        let old = now_ms() - KEEP_FOR.as_millis() as u64 - 1000;
        record(&held, "old", &ended("k", &["s0"], old)).expect("recorded");
        record(&held, "new", &ended("k", &["s1"], now_ms())).expect("recorded");
        assert!(take(&held, "k", "s0").is_none(), "too old");
        for i in 0..MAX_FILES + 3 {
            record(
                &held,
                &format!("n{i}"),
                &ended("k", &["s"], 1_000_000 + i as u64),
            )
            .expect("recorded");
        }
        assert!(std::fs::read_dir(dir(&held)).expect("dir").count() <= MAX_FILES);
    }

    #[test]
    fn a_lost_sessions_error_says_what_and_when() {
        let e = ended("k", &["s1"], 0);
        let v = lost_error(&json!(3), "s1", &e);
        assert_eq!(v["error"]["code"], -32002);
        assert_eq!(v["id"], 3);
        let msg = v["error"]["message"].as_str().expect("text");
        assert!(msg.contains("the agent exited with code 1"), "{msg}");
        assert!(msg.contains("1970-01-01T00:00:00Z"), "{msg}");
        assert_eq!(v["error"]["data"]["lost"]["holderPid"], 7);
    }
}
