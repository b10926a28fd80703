//! The holder's side of the socket: it listens (mode 0600, in the 0700 holders' folder),
//! writes its file for fronts to find, takes each front's hello off the loop (token
//! checked, bounded in time) and hands the loop an [`Attachment`]: the front's stdin,
//! stdout and stderr, and the connection that tells when the front is gone.

use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;

use super::{Info, Reply};

/// How many hellos are read at once.
const HELLOS_AT_ONCE: usize = 4;

/// How long a connection may take to send its hello.
const HELLO_WITHIN: Duration = Duration::from_secs(30);

/// What the front asked of the holder: where to listen, with which token and key.
#[derive(Debug, Clone)]
pub struct HoldConfig {
    pub socket: PathBuf,
    pub token: String,
    pub key: String,
    /// How long the agent is kept with no client attached.
    pub linger: Duration,
}

/// A front that proved it is the user, with its client's pipes.
#[derive(Debug)]
pub struct Attachment {
    /// The front's connection: its end says the front is gone, and the holder writes the
    /// front's exit code there.
    pub conn: std::os::unix::net::UnixStream,
    /// The client's input (the front's stdin), output (its stdout), and the front's stderr.
    pub input: OwnedFd,
    pub output: OwnedFd,
    pub stderr: OwnedFd,
    pub front_pid: u32,
    /// What the front read of the client's input before it chose this holder.
    pub prefix: Vec<u8>,
    /// The front answered the client's `initialize` (the first line of `prefix`).
    pub initialized: bool,
    /// The held session the client loads or resumes (it may join it beside another client).
    pub join: Option<String>,
    /// Take the client only if this holder keeps `join`.
    pub kept_only: bool,
    /// `sessions stop`: no client; the holder stops.
    pub stop: bool,
}

/// The listening socket and the holder's file; both are removed when this is dropped.
#[derive(Debug)]
pub struct Listening {
    socket: PathBuf,
    info: PathBuf,
    task: tokio::task::JoinHandle<()>,
    /// What the file says, and the version of the router's state it was last written at.
    published: std::sync::Arc<std::sync::Mutex<(Info, u64)>>,
}

impl Listening {
    /// Says in the holder's file what fronts choose by: the `initialize` result a later
    /// client gets, and the sessions kept. Written off the loop (a sync and a rename); a
    /// write of an older `version` than the file's is skipped.
    pub fn publish(&self, version: u64, init: Option<&str>, sessions: Vec<String>) {
        let (published, path) = (self.published.clone(), self.info.clone());
        let init = init.map(str::to_owned);
        tokio::task::spawn_blocking(move || {
            let Ok(mut guard) = published.lock() else {
                return;
            };
            let (info, at) = &mut *guard;
            // (`u64::MAX`: the holder is gone, and its file with it.)
            if version <= *at {
                return;
            }
            info.init = init;
            info.sessions = sessions;
            *at = version;
            let Ok(mut bytes) = serde_json::to_vec(&*info) else {
                return;
            };
            bytes.push(b'\n');
            if let Err(e) = crate::private_file::replace(&path, &bytes) {
                tracing::warn!(error = %e, "cannot update the holder's file");
            }
        });
    }

    /// Says in the endings' folder that this holder ends while it keeps `sessions`, and
    /// why ([`super::ended`]): a front whose client loads one of them tells it.
    pub fn record_end(&self, why: &str, sessions: Vec<String>, init: Option<&str>) {
        let (Some(held), Some(name)) = (
            self.socket.parent(),
            self.socket.file_stem().and_then(|s| s.to_str()),
        ) else {
            return;
        };
        let (key, agent, cwd) = {
            let g = self.published.lock().unwrap_or_else(|e| e.into_inner());
            (g.0.key.clone(), g.0.agent.clone(), g.0.cwd.clone())
        };
        let ended = super::ended::Ended {
            key,
            agent,
            cwd,
            holder: std::process::id(),
            sessions,
            at_ms: super::ended::now_ms(),
            found_gone: false,
            why: why.to_owned(),
            init: init.map(str::to_owned),
        };
        if let Err(e) = super::ended::record(held, name, &ended) {
            tracing::warn!(error = %e, "cannot say that the held sessions end");
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.socket);
        // A write under way finishes first, and none comes after: the file stays gone.
        let mut guard = self.published.lock().unwrap_or_else(|e| e.into_inner());
        guard.1 = u64::MAX;
        let _ = std::fs::remove_file(&self.info);
    }
}

/// Listens on `cfg.socket`, writes the holder's file beside it, and says `ready <pid>` on
/// our stdout (the front waits for it), then points stdout at `/dev/null`. Each front that
/// attaches is sent on `tx`.
pub fn listen(
    cfg: &HoldConfig,
    agent: &[String],
    cwd: &std::path::Path,
    tx: mpsc::Sender<Attachment>,
) -> std::io::Result<Listening> {
    let folder = cfg
        .socket
        .parent()
        .ok_or_else(|| std::io::Error::other("the socket has no folder"))?;
    crate::inbox::roster::ensure_dir(folder)?;
    let _ = std::fs::remove_file(&cfg.socket);
    let listener = tokio::net::UnixListener::bind(&cfg.socket)?;
    std::fs::set_permissions(&cfg.socket, std::fs::Permissions::from_mode(0o600))?;
    let info_path = cfg.socket.with_extension("json");
    let info = Info {
        pid: std::process::id(),
        key: cfg.key.clone(),
        socket: cfg.socket.clone(),
        token: cfg.token.clone(),
        agent: agent.to_vec(),
        cwd: cwd.to_string_lossy().into_owned(),
        started_ms: super::ended::now_ms(),
        init: None,
        sessions: Vec::new(),
    };
    let mut bytes = serde_json::to_vec(&info)?;
    bytes.push(b'\n');
    crate::private_file::replace(&info_path, &bytes)?;
    let token = cfg.token.clone();
    let task = tokio::spawn(accept(listener, token, tx));
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let ready = format!("ready {}\n", std::process::id());
        let _ = out.write_all(ready.as_bytes()).and_then(|()| out.flush());
    }
    if let Ok(null) = std::fs::File::options().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
    }
    Ok(Listening {
        socket: cfg.socket.clone(),
        info: info_path,
        task,
        published: std::sync::Arc::new(std::sync::Mutex::new((info, 0))),
    })
}

/// Takes connections until the loop is gone; each hello is read off the runtime.
async fn accept(listener: tokio::net::UnixListener, token: String, tx: mpsc::Sender<Attachment>) {
    // A few hellos read at once; more connections wait in the socket's backlog.
    let reading = std::sync::Arc::new(tokio::sync::Semaphore::new(HELLOS_AT_ONCE));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors, say: not a reason to spin.
                tracing::warn!(error = %e, "cannot accept a front; trying again in a moment");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let Ok(permit) = reading.clone().acquire_owned().await else {
            return;
        };
        let (token, tx) = (token.clone(), tx.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let Ok(std) = stream.into_std() else { return };
            let read = tokio::task::spawn_blocking(move || {
                std.set_nonblocking(false)?;
                std.set_read_timeout(Some(HELLO_WITHIN))?;
                let (hello, fds, prefix) = super::recv_hello(&std)?;
                Ok::<_, std::io::Error>((std, hello, fds, prefix))
            })
            .await;
            let Ok(Ok((conn, hello, fds, prefix))) = read else {
                tracing::warn!("a connection to the holder sent no readable hello; closed");
                return;
            };
            if !super::same_token(&hello.token, &token) {
                tracing::warn!(front = hello.pid, "a front with a wrong token; refused");
                let _ = std::io::Write::write_all(
                    &mut &conn,
                    &Reply::Refused("wrong token".into()).line(),
                );
                return;
            }
            let [input, output, stderr]: [OwnedFd; 3] = match fds.try_into() {
                Ok(three) => three,
                Err(_) => return,
            };
            let _ = tx
                .send(Attachment {
                    conn,
                    input,
                    output,
                    stderr,
                    front_pid: hello.pid,
                    prefix,
                    initialized: hello.initialized,
                    join: hello.join,
                    kept_only: hello.kept_only,
                    stop: hello.stop,
                })
                .await;
        });
    }
}
