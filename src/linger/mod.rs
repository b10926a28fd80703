//! `--linger`: the agent and its sessions outlive the editor.
//!
//! The process the editor starts is a *front* ([`front`]); the agent is held by a *holder*,
//! a bridge in a session of its own ([`holder`]), so an editor that kills the process group
//! it started does not reach it. The front hands the holder its stdin, stdout and stderr
//! over a Unix socket (`SCM_RIGHTS`): the holder reads and writes the editor's pipes itself,
//! so the relay costs no extra hop. A front that dies, or whose client closes its stdin, is a
//! client that left; the holder keeps the agent for the linger, waiting for the next front.
//!
//! What is here: the holders' folder and their files ([`Info`]), the key that says which
//! holders a front may attach to (same command line, same folder), and the few messages
//! of the socket ([`Hello`], [`Reply`]).
//!
//! Invariants (docs/SECURITY.md, "The holder's socket"):
//! - A holder's socket is mode 0600 in the 0700 folder `<roster>/held/`, and a front must
//!   also send the holder's token (kept in the holder's 0600 file there); nothing listens
//!   on the network.
//! - A message on the socket is one JSON line of at most [`MAX_LINE`] bytes.

pub mod ended;
pub mod front;
pub mod holder;

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};
use serde::{Deserialize, Serialize};

/// The environment variable that gives a holder its token (never on its command line,
/// which every user may read).
pub const TOKEN_ENV: &str = "ACP_QUESTION_BRIDGE_HOLD_TOKEN";

/// The environment variable that gives a holder its key ([`key`]).
pub const KEY_ENV: &str = "ACP_QUESTION_BRIDGE_HOLD_KEY";

/// The longest message on a holder's socket.
pub const MAX_LINE: usize = 4096;

/// The most a front reads of its client before it hands it over (its `initialize` and the
/// request after it).
pub const MAX_PREFIX: usize = 1 << 20;

/// The folder of the holders: `held/` in the roster's folder (so
/// `ACP_QUESTION_BRIDGE_REGISTRY` moves it too).
pub fn dir() -> PathBuf {
    crate::inbox::roster::dir().join("held")
}

/// Which holders a front may attach to: the SHA-256 of its folder and its whole command
/// line (the bridge's flags and the agent's), as 16 hex digits. An editor that starts the
/// same command line in the same folder again finds the agent it left.
pub fn key(cwd: &Path, args: &[String]) -> String {
    let mut text = serde_json::to_vec(&(cwd.to_string_lossy(), args)).expect("strings serialize");
    text.push(b'\n');
    let digest = ring::digest::digest(&ring::digest::SHA256, &text);
    digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A holder's file in [`dir`]: how a front finds it and proves it is the user.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Info {
    pub pid: u32,
    pub key: String,
    pub socket: PathBuf,
    pub token: String,
    /// The agent command and its arguments.
    pub agent: Vec<String>,
    pub cwd: String,
    /// Milliseconds since the epoch.
    pub started_ms: u64,
    /// The `initialize` result a later client gets (JSON text), once the agent gave one: a
    /// front answers its client's `initialize` with it, to learn which session it loads.
    #[serde(default)]
    pub init: Option<String>,
    /// The sessions it keeps, so a front finds the one that has the session its client loads.
    #[serde(default)]
    pub sessions: Vec<String>,
}

/// The live holders in `folder` (files of processes that are gone are removed), newest
/// first.
pub fn scan(folder: &Path) -> Vec<Info> {
    read(folder, true)
}

/// The live holders in `folder`, changing nothing (for `doctor`).
pub fn live(folder: &Path) -> Vec<Info> {
    read(folder, false)
}

fn read(folder: &Path, tidy: bool) -> Vec<Info> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(text) = std::fs::read(&path) else {
            continue;
        };
        let Ok(info) = serde_json::from_slice::<Info>(&text) else {
            continue;
        };
        if crate::inbox::roster::alive(info.pid) {
            found.push(info);
        } else if tidy {
            // It died without a word: a later load of its sessions is told (once, however
            // many fronts find it at once).
            let gone = ended::Ended::found_gone(
                &info.key,
                info.pid,
                &info.sessions,
                info.init.as_deref(),
                (&info.agent, &info.cwd),
            );
            ended::found_gone(folder, &path, &gone, &info.socket);
        }
    }
    found.sort_by_key(|i| std::cmp::Reverse(i.started_ms));
    found
}

/// What a front sends first, with its stdin, stdout and stderr.
#[derive(Debug, Serialize, Deserialize)]
pub struct Hello {
    pub token: String,
    /// The front's pid (for the log and `sessions`).
    pub pid: u32,
    /// How many bytes of the client's input the front read before it chose this holder: they
    /// follow the hello on the socket, and the holder reads them before the client's pipe.
    #[serde(default)]
    pub prefix_len: usize,
    /// The first line of those bytes is the client's `initialize`, which the front answered
    /// with this holder's result.
    #[serde(default)]
    pub initialized: bool,
    /// The held session the client's next request loads or resumes: while another client
    /// is attached, the front joins that session beside it (several clients on one session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<String>,
    /// Take the client only if the holder keeps `join` now (the holder decides from its
    /// own state, not from its file, which lags it): a front tries the holder that keeps
    /// the session before any other, so one session never gets two agents.
    #[serde(default)]
    pub kept_only: bool,
    /// `sessions stop`: the holder stops (as at SIGTERM) and tells its clients why; the
    /// descriptors sent are `/dev/null`.
    #[serde(default)]
    pub stop: bool,
}

/// What a holder says to a front.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Reply {
    /// The front's client is now the holder's.
    Attached { holder: u32 },
    /// Another client is attached (or, with [`Hello::kept_only`], the holder does not keep
    /// the session); try another holder, or start one. `init` is the holder's `initialize`
    /// result when it has one, which its file may not say yet: a front that has not read
    /// its client yet answers the client's `initialize` with it and learns the session.
    Busy {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        init: Option<String>,
    },
    /// The token was wrong, or the message could not be read.
    Refused(String),
    /// The holder keeps the session the client loads, and has no room for one more client
    /// there (why): the front refuses the load rather than start a second agent for it.
    Full(String),
    /// The holder is done with the front's client: the front exits with this code.
    Exit(i32),
}

impl Reply {
    /// The reply as one line.
    pub fn line(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).expect("replies serialize");
        v.push(b'\n');
        v
    }
}

/// Sends `hello` with three descriptors (stdin, stdout, stderr) in one message, then the
/// `prefix` bytes it announces.
pub fn send_hello(
    stream: &UnixStream,
    hello: &Hello,
    fds: [BorrowedFd<'_>; 3],
    prefix: &[u8],
) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(hello)?;
    line.push(b'\n');
    let raw: [RawFd; 3] = [fds[0].as_raw_fd(), fds[1].as_raw_fd(), fds[2].as_raw_fd()];
    let cmsg = [ControlMessage::ScmRights(&raw)];
    let iov = [IoSlice::new(&line)];
    let sent = sendmsg::<()>(stream.as_raw_fd(), &iov, &cmsg, MsgFlags::empty(), None)
        .map_err(std::io::Error::from)?;
    if sent != line.len() {
        return Err(std::io::Error::other("the hello was cut short"));
    }
    std::io::Write::write_all(&mut &*stream, prefix)
}

/// Receives a front's hello and its descriptors (blocking; the caller bounds the wait with
/// a read timeout on `stream`).
pub fn recv_hello(stream: &UnixStream) -> std::io::Result<(Hello, Vec<OwnedFd>, Vec<u8>)> {
    let mut buf = vec![0u8; MAX_LINE];
    let mut space = nix::cmsg_space!([RawFd; 3]);
    let (n, fds) = {
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<()>(
            stream.as_fd().as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(std::io::Error::from)?;
        let mut fds = Vec::new();
        for c in msg.cmsgs().map_err(std::io::Error::from)? {
            if let ControlMessageOwned::ScmRights(raw) = c {
                for fd in raw {
                    // SAFETY: the kernel just installed `fd` in this process for this
                    // message; nothing else owns it.
                    #[allow(unsafe_code)]
                    fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
                }
            }
        }
        (msg.bytes, fds)
    };
    let got = &buf[..n];
    let end = memchr::memchr(b'\n', got).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "the hello is not one line")
    })?;
    let hello: Hello = serde_json::from_slice(&got[..end])
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    if hello.prefix_len > MAX_PREFIX {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the hello announces too much of the client's input",
        ));
    }
    // The client's first bytes: what came with the hello, then the rest.
    let mut prefix = got[end + 1..].to_vec();
    if prefix.len() > hello.prefix_len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "more after the hello than it announces",
        ));
    }
    let had = prefix.len();
    prefix.resize(hello.prefix_len, 0);
    std::io::Read::read_exact(&mut &*stream, &mut prefix[had..])?;
    if fds.len() != 3 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the hello carries {} descriptors, not 3", fds.len()),
        ));
    }
    Ok((hello, fds, prefix))
}

/// Whether two tokens are equal, in time that does not depend on where they differ.
pub fn same_token(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_carries_three_descriptors_and_its_token() {
        let (a, b) = UnixStream::pair().expect("a pair");
        let (r, w) = std::io::pipe().expect("a pipe");
        let prefix = vec![b'p'; 300_000];
        let hello = Hello {
            token: "t0k".into(),
            pid: 7,
            prefix_len: prefix.len(),
            initialized: true,
            join: Some("s-1".into()),
            kept_only: true,
            stop: false,
        };
        let sender = std::thread::spawn(move || {
            send_hello(&a, &hello, [r.as_fd(), w.as_fd(), w.as_fd()], &prefix).expect("sent");
            r
        });
        let (got, fds, first) = recv_hello(&b).expect("received");
        let r = sender.join().expect("joined");
        assert_eq!(
            (got.token.as_str(), got.pid, got.initialized),
            ("t0k", 7, true)
        );
        assert_eq!(got.join.as_deref(), Some("s-1"));
        assert!(got.kept_only);
        assert_eq!(
            first,
            vec![b'p'; 300_000],
            "the client's first bytes, whole"
        );
        assert_eq!(fds.len(), 3);
        // The received write end writes into the same pipe.
        let mut out = std::fs::File::from(fds[1].try_clone().expect("dup"));
        std::io::Write::write_all(&mut out, b"x").expect("write");
        let mut r = r;
        let mut one = [0u8; 1];
        std::io::Read::read_exact(&mut r, &mut one).expect("read");
        assert_eq!(&one, b"x");
    }

    #[test]
    fn keys_differ_by_folder_and_command_line() {
        let a = key(
            Path::new("/p"),
            &["--linger".into(), "10m".into(), "--".into(), "agent".into()],
        );
        let b = key(
            Path::new("/q"),
            &["--linger".into(), "10m".into(), "--".into(), "agent".into()],
        );
        let c = key(
            Path::new("/p"),
            &[
                "--linger".into(),
                "10m".into(),
                "--".into(),
                "agent2".into(),
            ],
        );
        assert_eq!(a.len(), 16);
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(
            a,
            key(
                Path::new("/p"),
                &["--linger".into(), "10m".into(), "--".into(), "agent".into()]
            )
        );
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abc", "abd"));
        assert!(!same_token("abc", "ab"));
    }
}
