//! The agent child process: spawning, its stderr, and its process group ([`group`]).
//!
//! Owns the agent's lifecycle outside the protocol. Invariants:
//! - The agent runs in its own process group (pgid = its pid), so wrappers that re-launch
//!   themselves (`npx`, gemini-cli) are signalled as a whole; `kill_on_drop` is a backstop.
//! - The agent's stderr is copied to the bridge's stderr unchanged, and only a bounded tail
//!   (64 KiB) is kept in memory for error reports.
//! - The agent does not outlive the bridge: on Linux it gets SIGTERM when the bridge dies,
//!   however it dies (a parent-death signal set before exec), and the binary also starts a
//!   [`guard`] that takes the agent's whole group down when the bridge is gone.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use nix::sys::signal::Signal;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, Command};

pub mod group;

/// The prefix of the bridge's own variables, which an agent inside the wall does not get.
pub const OWN_ENV_PREFIX: &str = "ACP_QUESTION_BRIDGE_";

/// How much of the agent's stderr is kept for error reports.
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// Spawning failed; carries what to tell the user.
#[derive(Debug, thiserror::Error)]
#[error("cannot start agent `{command}`: {}", what_to_do(command, source))]
pub struct SpawnError {
    pub command: String,
    #[source]
    pub source: std::io::Error,
}

/// Why a program did not start, said so that the user knows what to do: a bare name not on
/// PATH (naming it), a path that is not there, a file that is not executable.
fn what_to_do(command: &str, e: &std::io::Error) -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    match e.kind() {
        // On PATH, yet not found: its interpreter (the `#!` line) is what is missing.
        std::io::ErrorKind::NotFound if !command.contains('/') => {
            match crate::agents::which(command) {
                Some(p) => format!(
                    "{e}: {} is there, so the interpreter its `#!` line names is not",
                    p.display()
                ),
                None => {
                    format!("not found on PATH (PATH={path}); install it, or give its full path")
                }
            }
        }
        std::io::ErrorKind::NotFound => {
            if std::path::Path::new(command).exists() {
                // The file is there: its interpreter (`#!`) is not.
                format!("{e}: the file is there, so the interpreter its `#!` line names is not")
            } else {
                "no such file".into()
            }
        }
        std::io::ErrorKind::PermissionDenied => {
            if std::path::Path::new(command).is_dir() {
                "it is a folder, not a program".into()
            } else {
                format!("not executable (chmod +x {command})")
            }
        }
        _ => e.to_string(),
    }
}

/// Starts the agent with piped stdio in a new process group, `env` added to its environment;
/// with `launcher` (the argv that runs the wall's launcher before the agent's own:
/// `crate::wall`), without the bridge's own variables ([`OWN_ENV_PREFIX`]).
pub fn spawn(
    argv: &[String],
    env: &[(String, String)],
    cwd: Option<&PathBuf>,
    launcher: Option<&[String]>,
) -> Result<Child, SpawnError> {
    let (program, _) = argv.split_first().ok_or_else(|| SpawnError {
        command: String::new(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no agent command"),
    })?;
    let launched;
    let (exe, args) = match launcher {
        Some(prefix) => {
            // The launcher would only fail later, out of sight: what `exec` would say of a
            // program not there, or not executable, is said now.
            startable(program).map_err(|source| SpawnError {
                command: program.clone(),
                source,
            })?;
            launched = [prefix, argv].concat();
            (&launched[0], &launched[1..])
        }
        None => (program, &argv[1..]),
    };
    let mut cmd = Command::new(exe);
    if launcher.is_some() {
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with(OWN_ENV_PREFIX) {
                cmd.env_remove(k);
            }
        }
    }
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if launcher.is_some() {
        own_session(&mut cmd);
    } else {
        cmd.process_group(0);
    }
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    die_with_parent(&mut cmd);
    let child = cmd.spawn().map_err(|source| SpawnError {
        command: program.clone(),
        source,
    })?;
    // The agent's stdout is where streams flow: grown now. At Linux's 64 KiB until it
    // fills, the bridge read the session flood written one message per write in twice as
    // many reads, 5-10% slower (bench/results.md, "Pipes grown once they fill"). Its stdin
    // is grown once a write finds it full (`bridge/writer.rs`, `Widen`).
    if let Some(out) = &child.stdout {
        widen_pipe(out, "agent's stdout");
    }
    Ok(child)
}

/// Whether `program` could be executed as `execvp` finds it: an error of the kind it would
/// give (not found, permission denied) if not.
pub(crate) fn startable(program: &str) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind};
    let path = if program.contains('/') {
        PathBuf::from(program)
    } else {
        crate::agents::which(program).ok_or_else(|| Error::from(ErrorKind::NotFound))?
    };
    match std::fs::metadata(&path) {
        Err(e) => Err(e),
        Ok(_) if crate::agents::is_executable(&path) => Ok(()),
        Ok(_) => Err(Error::from(ErrorKind::PermissionDenied)),
    }
}

/// Starts the agent in a session of its own (its group's id its pid, as with a group of its
/// own), with no controlling terminal: inside the wall nothing it runs can open the
/// bridge's terminal and type into the user's shell (`TIOCSTI` works on a controlling
/// terminal only, without a capability).
#[allow(unsafe_code)]
pub(crate) fn own_session(cmd: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec: `setsid` is one system
    // call, and nothing here allocates or takes a lock.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()?;
            Ok(())
        });
    }
}

/// Has the agent, once started, receive SIGTERM when the bridge dies, SIGKILL included.
///
/// Linux's parent-death signal belongs to the thread that forks: the bridge spawns the agent
/// from a runtime worker (or the thread that runs `run_with`), which lives as long as the
/// runtime. Should the bridge die between the fork and the `prctl`, the child sees a new
/// parent and does not start. Only the agent itself gets the signal: its own children are
/// the [`guard`]'s business.
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        let parent = nix::unistd::getpid();
        // SAFETY: the closure runs in the forked child before exec, where only
        // async-signal-safe calls are allowed: `prctl` and `getppid` are single system
        // calls, and nothing here allocates or takes a lock.
        unsafe {
            cmd.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)?;
                if nix::unistd::getppid() != parent {
                    return Err(std::io::Error::from(nix::errno::Errno::ESRCH));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// The agent's name from its command: the program, without its directory; after a launcher
/// (`npx`, `uvx`, `env`, ...), the first word that is neither a flag nor a `NAME=value`
/// setting, without its directory or `@scope/`. Nothing else of the command (flags and
/// their values may be secrets). Used where the agent is named to a person: a push, a
/// client's list of agents (`setup`).
pub fn agent_name(argv: &[&str]) -> String {
    const LAUNCHERS: &[&str] = &[
        "npx", "pnpx", "bunx", "uvx", "pipx", "env", "node", "bun", "deno", "python", "python3",
    ];
    let base = |w: &str| {
        let w = w.trim_end_matches('/');
        w.rsplit('/').next().unwrap_or(w).to_owned()
    };
    let Some(program) = argv.first().map(|p| base(p)).filter(|p| !p.is_empty()) else {
        return "agent".to_owned();
    };
    if !LAUNCHERS.contains(&program.as_str()) {
        return program;
    }
    match argv[1..]
        .iter()
        .find(|w| !w.starts_with('-') && !w.contains('='))
        .map(|w| base(w))
        .filter(|w| !w.is_empty())
    {
        Some(what) => format!("{program} {what}"),
        None => program,
    }
}

/// The size a pipe of the bridge's is grown to once it fills (Linux's default is 64 KiB).
pub const AGENT_PIPE_BYTES: i32 = 256 * 1024;

/// Grows a pipe to [`AGENT_PIPE_BYTES`]. A bigger pipe lets the agent write ahead while
/// the bridge is busy with a long line (it would otherwise block every 64 KiB, and each
/// block and wake-up costs both sides a context switch): it shortens the bridge's wall time
/// on the mixed benchmark (2 MiB image lines; `bench/results.md`). Each grown pipe spends
/// 256 KiB of the user's pipe allowance (`/proc/sys/fs/pipe-user-pages-soft`: 64 MiB by
/// default; past it every new pipe of the user's gets two pages), so the bridge grows only
/// the agent's stdout at once, and its stdin and a client's stdout once a write finds them
/// full (`bridge/writer.rs`, `Widen`). A refusal (the allowance spent, or not Linux) only
/// costs that speed.
pub(crate) fn widen_pipe(pipe: &impl std::os::fd::AsFd, name: &str) {
    #[cfg(target_os = "linux")]
    match nix::fcntl::fcntl(pipe, nix::fcntl::FcntlArg::F_SETPIPE_SZ(AGENT_PIPE_BYTES)) {
        Ok(_) => tracing::debug!(pipe = name, bytes = AGENT_PIPE_BYTES, "pipe grown"),
        Err(e) => {
            tracing::debug!(pipe = name, error = %e, "cannot grow the pipe; keeping its size")
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (pipe, name);
}

/// The agent's group outlives a dead bridge in two cases the parent-death signal does not
/// cover: the agent ignores SIGTERM, or it has children of its own (an `npx` wrapper and the
/// real agent). So the binary starts a guard: a second copy of itself (`agent-guard`, hidden)
/// in its own process group, holding the read end of a pipe whose write end only the bridge
/// has (close-on-exec, so no other process inherits it). When the bridge is gone, however
/// it went, the pipe reaches EOF and the guard sends SIGTERM to the agent's group and,
/// after the grace, SIGKILL; then it exits. A bridge that ends normally writes one byte
/// first (its agent's group is gone by then), and the guard exits without signalling.
pub mod guard {
    use std::io::{Read as _, Write as _};
    use std::os::unix::process::CommandExt as _;
    use std::process::{ChildStdin, Command, Stdio};
    use std::time::Duration;

    use nix::sys::signal::Signal;

    /// The hidden subcommand that runs [`watch`].
    pub const SUBCOMMAND: &str = "agent-guard";

    /// The bridge's end of the guard's pipe.
    pub struct Guard(Option<ChildStdin>);

    impl Guard {
        /// Starts `exe agent-guard <pgid> <grace-ms>`; `None` (logged) when it cannot be.
        pub fn start(exe: &std::path::Path, pgid: u32, grace: Duration) -> Option<Self> {
            let started = Command::new(exe)
                .arg(SUBCOMMAND)
                .arg(pgid.to_string())
                .arg(grace.as_millis().to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn();
            match started {
                Ok(mut child) => {
                    tracing::debug!(pid = child.id(), "agent guard started");
                    // Reaped by init once it exits: the bridge is gone by then, or it told
                    // the guard to go.
                    Some(Self(child.stdin.take()))
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start the agent guard; the agent's children may outlive a killed bridge");
                    None
                }
            }
        }

        /// The agent's group is gone: the guard may exit without signalling.
        pub fn release(mut self) {
            if let Some(mut pipe) = self.0.take() {
                let _ = pipe.write_all(b"x");
            }
        }
    }

    /// The guard's body: waits for the bridge to go (EOF on stdin, no byte), then ends the
    /// agent's group: SIGTERM, and SIGKILL after `grace` if any of it is left.
    pub fn watch(pgid: u32, grace: Duration) {
        let mut byte = [0u8; 1];
        let released = loop {
            match std::io::stdin().read(&mut byte) {
                Ok(0) => break false,
                Ok(_) => break true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break false,
            }
        };
        if released || super::group::members(pgid).is_empty() {
            return;
        }
        // The same rule as the bridge's own ladder: SIGKILL only to members still alive a
        // whole grace after their SIGTERM.
        super::group::signal(pgid, Signal::SIGTERM);
        if !super::group::wait_gone_blocking(pgid, grace) {
            super::group::signal(pgid, Signal::SIGKILL);
        }
    }
}

/// A bounded tail of the agent's stderr, shared with the task that copies it.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<Vec<u8>>>);

impl StderrTail {
    fn push(&self, chunk: &[u8]) {
        let Ok(mut buf) = self.0.lock() else { return };
        if chunk.len() >= STDERR_TAIL_BYTES {
            buf.clear();
            buf.extend_from_slice(&chunk[chunk.len() - STDERR_TAIL_BYTES..]);
            return;
        }
        let overflow = (buf.len() + chunk.len()).saturating_sub(STDERR_TAIL_BYTES);
        buf.drain(..overflow);
        buf.extend_from_slice(chunk);
    }

    /// The tail as text (lossy UTF-8, cut at a character boundary).
    pub fn text(&self) -> String {
        self.0
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

/// Copies the agent's stderr to ours, unchanged, and keeps the tail. Ends at EOF.
///
/// Our stderr is the client's: it may be a pipe nobody reads, a full disk, or closed. So the
/// agent's stderr is always drained (the agent never blocks on it) and kept in the tail, and
/// the copy to ours is written by a thread of its own through a bounded queue: while that
/// thread is stuck on a stderr that takes nothing, what does not fit in the queue is dropped
/// (and counted in one line once stderr takes writes again), and no runtime worker ever waits
/// on our stderr. Write errors are ignored.
pub async fn pump_stderr(mut stderr: ChildStderr, tail: StderrTail) {
    let mut copier: Option<StderrCopier> = None;
    let mut buf = vec![0u8; 8192];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                tail.push(&buf[..n]);
                // The thread starts with the agent's first words on stderr: a silent agent
                // costs none.
                copier
                    .get_or_insert_with(StderrCopier::start)
                    .copy(&buf[..n]);
            }
        }
    }
}

/// The thread that writes the agent's stderr to ours, and its bounded queue.
struct StderrCopier {
    queue: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    /// Bytes dropped since the thread last wrote (reported by it, in one line).
    dropped: Arc<std::sync::atomic::AtomicU64>,
}

impl StderrCopier {
    /// Reads of up to 8 KiB queued for our stderr: 512 KiB at most.
    const QUEUED_READS: usize = 64;

    fn start() -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(Self::QUEUED_READS);
        let dropped = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let lost = dropped.clone();
        let thread = std::thread::Builder::new()
            .name("agent-stderr".into())
            .spawn(move || {
                for chunk in rx {
                    let mut err = std::io::stderr().lock();
                    let n = lost.swap(0, std::sync::atomic::Ordering::Relaxed);
                    if n > 0 {
                        let _ = writeln!(
                            err,
                            "acp-question-bridge: {n} bytes of the agent's stderr were dropped (our stderr took no more)"
                        );
                    }
                    let _ = err.write_all(&chunk);
                    let _ = err.flush();
                }
            });
        StderrCopier {
            queue: thread.ok().map(|_| tx),
            dropped,
        }
    }

    /// Queues `bytes` for our stderr, or drops them (counted) when the queue is full.
    fn copy(&self, bytes: &[u8]) {
        let queued = self
            .queue
            .as_ref()
            .is_some_and(|tx| tx.try_send(bytes.to_vec()).is_ok());
        if !queued {
            self.dropped
                .fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::unistd::Pid;

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_agents_stdout_is_widened_and_its_stdin_is_not_yet() {
        let mut child = spawn(&["cat".to_string()], &[], None, None).expect("cat starts");
        let size = |fd: &dyn std::os::fd::AsFd| {
            nix::fcntl::fcntl(fd.as_fd(), nix::fcntl::FcntlArg::F_GETPIPE_SZ).expect("a pipe")
        };
        assert_eq!(size(child.stdout.as_ref().unwrap()), AGENT_PIPE_BYTES);
        // Grown only once it fills (`bridge/writer.rs`, `Widen`).
        assert!(size(child.stdin.as_ref().unwrap()) < AGENT_PIPE_BYTES);
        child.start_kill().unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(5), child.wait())
            .await
            .expect("cat ends")
            .unwrap();
    }

    /// The parent-death signal alone (library use has no guard): the agent is spawned
    /// from a thread that then ends, as if the bridge had died; the agent gets SIGTERM.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_agent_gets_sigterm_when_its_parent_thread_dies() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let child =
                    spawn(&["sleep".into(), "1000".into()], &[], None, None).expect("sleep starts");
                tx.send(child.id().expect("pid")).unwrap();
                // Not killed on drop: only the parent's death may end it.
                std::mem::forget(child);
            });
        })
        .join()
        .unwrap();
        let pid = rx.recv().unwrap();
        let status = nix::sys::wait::waitpid(Pid::from_raw(pid as i32), None).expect("reaped");
        assert!(
            matches!(
                status,
                nix::sys::wait::WaitStatus::Signaled(_, Signal::SIGTERM, _)
            ),
            "{status:?}"
        );
    }

    #[test]
    fn tail_keeps_the_last_bytes() {
        let tail = StderrTail::default();
        tail.push(&vec![b'a'; STDERR_TAIL_BYTES - 1]);
        tail.push(b"xyz");
        let text = tail.text();
        assert_eq!(text.len(), STDERR_TAIL_BYTES);
        assert!(text.ends_with("axyz"));
        tail.push(&vec![b'b'; STDERR_TAIL_BYTES + 5]);
        assert_eq!(tail.text(), "b".repeat(STDERR_TAIL_BYTES));
    }
}
