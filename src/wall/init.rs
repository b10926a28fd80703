//! The wall's PID namespace: the launcher's two processes around the agent.
//!
//! `unshare(CLONE_NEWPID)` leaves the caller where it was; its first child is pid 1 of the
//! new namespace. So the launcher forks ([`split`]):
//! - the **watcher** (the launcher itself, the bridge's child, in the bridge's namespace)
//!   takes the agent's status, waits for init to end, and ends as the agent did, with its
//!   exit code or by its signal: the bridge sees its agent end as before, and no init is
//!   left for another to reap;
//! - **init** (pid 1 of the new namespace) builds the rest of the wall, `/proc` of the new
//!   namespace among it, starts the agent ([`start`]: pid 2), reaps what is left to it, and
//!   ends when nothing of the namespace is left. Whatever is still inside when init ends
//!   (SIGKILL, from the bridge's shutdown or the guard) the kernel kills: nothing the agent
//!   starts outlives its wall, even a process that left the agent's group.
//!
//! Inside, the agent sees no process of the bridge's (no `/proc/<bridge>/oom_score_adj`,
//! `autogroup` or `fd/` to reach), and cannot reach the watcher (it has no pid there) nor
//! init (pid 1 takes no signal from inside but those it waits for, and is not dumpable: no
//! `ptrace` without a capability).
//!
//! Invariants:
//! - Neither holds the agent's stdio once the agent runs: the agent's output ends when the
//!   agent's own processes close it.
//! - Neither passes the bridge's signals on: the bridge signals the agent's whole group,
//!   both of them in it, and they wait it through. Init passes SIGTERM, SIGINT and SIGHUP
//!   to the processes of its namespace that left the group (`setsid`), which the bridge's
//!   signals miss; the watcher sends the group one SIGTERM when the bridge is gone (its
//!   parent-death signal, as the agent had before), and init SIGKILL a grace after
//!   (`Plan::grace_ms`): a notification command has no guard of the bridge's.
//! - The watcher ends before init only when it is killed (the bridge's `kill_on_drop`, the
//!   end of its shutdown): init's parent-death signal is SIGKILL, so all inside ends then.
//! - The agent's status is passed by a pipe, once, whose end init keeps until its own; a
//!   watcher whose init ended without one ends as init did (a wall that could not be
//!   built: 126 and init's message; SIGKILL).

use std::os::fd::{AsFd as _, AsRawFd as _, OwnedFd};
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::{ForkResult, Pid};

/// Init's end of the pipe to the watcher: the agent's status goes there.
pub struct Init {
    status: OwnedFd,
}

/// Forks the launcher into the watcher, which never returns, and init (pid 1 of the PID
/// namespace made by the caller's `unshare`), which gets [`Init`]. Every signal is blocked
/// in both (taken by a `signalfd`): pid 1 takes a signal only if it is blocked or handled.
#[allow(unsafe_code)]
pub fn split(parent: Pid, grace: Duration) -> Result<Init, String> {
    SigSet::all()
        .thread_set_mask()
        .map_err(|e| format!("signal mask: {e}"))?;
    let (read, write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: the launcher runs on one thread (it has just made a user namespace, which
    // only a process of one thread may): the child may do anything the parent could.
    match unsafe { nix::unistd::fork() }.map_err(|e| format!("fork: {e}"))? {
        ForkResult::Child => {
            drop(read);
            Ok(Init { status: write })
        }
        ForkResult::Parent { child } => {
            drop(write);
            watch(child, read, parent, grace)
        }
    }
}

/// Forks the agent: returns in the agent's process (pid 2), its signal mask empty again,
/// which is to `exec` it; init never returns.
#[allow(unsafe_code)]
pub fn start(init: Init) -> Result<(), String> {
    // The watcher never ends before init but when it is killed (the bridge's `kill_on_drop`
    // of a notification command, the end of the bridge's shutdown): init, and with it all
    // inside, goes too. Set here, once no credential changes are left to clear it; a
    // watcher gone before that has closed its end of the pipe.
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    let mut end = [nix::poll::PollFd::new(
        init.status.as_fd(),
        nix::poll::PollFlags::POLLOUT,
    )];
    let _ = nix::poll::poll(&mut end, nix::poll::PollTimeout::ZERO);
    if end[0].revents().is_some_and(|r| {
        r.intersects(nix::poll::PollFlags::POLLERR | nix::poll::PollFlags::POLLHUP)
    }) {
        return Err("the bridge ended before its agent started".into());
    }
    // No `ptrace` of init from inside without a capability.
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    // SAFETY: as in `split`: one thread.
    match unsafe { nix::unistd::fork() }.map_err(|e| format!("fork: {e}"))? {
        ForkResult::Child => {
            drop(init.status);
            // `exec` keeps the mask: the agent starts with none blocked, as before.
            SigSet::empty()
                .thread_set_mask()
                .map_err(|e| format!("signal mask: {e}"))
        }
        ForkResult::Parent { child } => reap(child, init.status),
    }
}

/// `/dev/null` in place of stdin, stdout and stderr.
fn let_go_of_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..3 {
            // SAFETY: `dup2` onto a standard descriptor is one system call.
            #[allow(unsafe_code)]
            unsafe {
                libc::dup2(null.as_raw_fd(), fd);
            }
        }
    }
}

/// `waitpid(pid, flags)`: the pid it returned (0: none yet; -1: an error, in `errno`) and
/// the wait status.
fn wait(pid: i32, flags: i32) -> (i32, i32) {
    let mut raw = 0;
    // SAFETY: `waitpid` with a valid pointer to an int.
    #[allow(unsafe_code)]
    let pid = unsafe { libc::waitpid(pid, &mut raw, flags) };
    (pid, raw)
}

/// Init's loop: reaps every child, sends the agent's status on when it ends, passes
/// SIGTERM, SIGINT and SIGHUP to the processes that left the group, and exits once it has
/// no child left.
fn reap(agent: Pid, status: OwnedFd) -> ! {
    let_go_of_stdio();
    let signals = SignalFd::with_flags(&SigSet::all(), SfdFlags::SFD_CLOEXEC).ok();
    // Without a signalfd (it cannot fail here but for want of memory), blocking waits.
    let flags = if signals.is_some() { libc::WNOHANG } else { 0 };
    loop {
        loop {
            match wait(-1, flags) {
                (0, _) => break,
                (-1, _) if nix::errno::Errno::last() == nix::errno::Errno::EINTR => {}
                (-1, _) => std::process::exit(0),
                (pid, raw) if pid == agent.as_raw() => {
                    // Its end stays open until init's own: the watcher ends then.
                    let _ = nix::unistd::write(&status, &raw.to_le_bytes());
                }
                _ => {}
            }
        }
        if let Some(Ok(Some(info))) = signals.as_ref().map(|s| s.read_signal()) {
            let sig = info.ssi_signo as i32;
            if [libc::SIGTERM, libc::SIGINT, libc::SIGHUP].contains(&sig) {
                to_those_who_left(sig);
            }
        }
    }
}

/// Sends `sig` to every process of the namespace that is not in init's group (nor init).
fn to_those_who_left(sig: i32) {
    let group = nix::unistd::getpgrp().as_raw() as u32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    let Ok(sig) = Signal::try_from(sig) else {
        return;
    };
    for pid in entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| p > 1)
    {
        if crate::child::group::live_group_of(pid).is_some_and(|g| g != group) {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid as i32), sig);
        }
    }
}

/// The watcher's loop: takes the agent's status, waits for init's end, then ends as the
/// agent did. When the bridge is gone (the parent-death signal), the group gets SIGTERM,
/// once.
fn watch(init: Pid, status: OwnedFd, parent: Pid, grace: Duration) -> ! {
    let_go_of_stdio();
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    let signals = SignalFd::with_flags(&SigSet::all(), SfdFlags::SFD_CLOEXEC).ok();
    // When the bridge is gone: the group had SIGTERM, and init gets SIGKILL at this time
    // (a notification command has no guard of the bridge's to do it).
    let mut kill_at: Option<Instant> = None;
    let mut told = false;
    let mut got = Vec::with_capacity(4);
    let mut buf = [0u8; 4];
    loop {
        let mut fds = vec![nix::poll::PollFd::new(
            status.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        if let Some(s) = &signals {
            fds.push(nix::poll::PollFd::new(
                s.as_fd(),
                nix::poll::PollFlags::POLLIN,
            ));
        }
        let timeout = match kill_at {
            None => nix::poll::PollTimeout::NONE,
            Some(at) => {
                let ms = at.saturating_duration_since(Instant::now()).as_millis();
                nix::poll::PollTimeout::try_from(ms.min(60_000) as i32)
                    .unwrap_or(nix::poll::PollTimeout::ZERO)
            }
        };
        match nix::poll::poll(&mut fds, timeout) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(_) => end_as(wait_for(init)),
        }
        if kill_at.is_some_and(|at| Instant::now() >= at) {
            // What the bridge's grace did not end: the whole namespace, with init.
            let _ = nix::sys::signal::kill(init, Signal::SIGKILL);
            kill_at = None;
        }
        let signalled = fds
            .get(1)
            .and_then(|f| f.revents())
            .is_some_and(|r| r.contains(nix::poll::PollFlags::POLLIN));
        let readable = fds[0].revents().is_some_and(|r| !r.is_empty());
        drop(fds);
        if signalled {
            if let Some(Ok(Some(_))) = signals.as_ref().map(|s| s.read_signal()) {
                if !told && nix::unistd::getppid() != parent {
                    told = true;
                    kill_at = Some(Instant::now() + grace);
                    let _ = nix::sys::signal::killpg(nix::unistd::getpgrp(), Signal::SIGTERM);
                }
            }
        }
        if readable {
            match nix::unistd::read(&status, &mut buf) {
                Ok(0) => {
                    // Init has ended (its end of the pipe with it): as the agent did, or
                    // as init did if the agent never ran or never ended (SIGKILL).
                    let init = wait_for(init);
                    end_as(match got[..] {
                        [a, b, c, d, ..] => i32::from_le_bytes([a, b, c, d]),
                        _ => init,
                    })
                }
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => {}
                Err(_) => end_as(wait_for(init)),
            }
        }
    }
}

/// Init's wait status (blocking).
fn wait_for(init: Pid) -> i32 {
    loop {
        let (pid, raw) = wait(init.as_raw(), 0);
        if pid != -1 || nix::errno::Errno::last() != nix::errno::Errno::EINTR {
            return raw;
        }
    }
}

/// Ends this process as a process with wait status `raw` ended: with its exit code, or by
/// its signal (raised with its default action; 128 and its number if that returns).
fn end_as(raw: i32) -> ! {
    if libc::WIFSIGNALED(raw) {
        let sig = libc::WTERMSIG(raw);
        if let Ok(s) = Signal::try_from(sig) {
            // SAFETY: the default action of a signal, then the signal raised unblocked.
            #[allow(unsafe_code)]
            unsafe {
                let _ = nix::sys::signal::signal(s, nix::sys::signal::SigHandler::SigDfl);
            }
            let mut one = SigSet::empty();
            one.add(s);
            let _ = one.thread_unblock();
            let _ = nix::sys::signal::raise(s);
        }
        std::process::exit(128 + sig);
    }
    std::process::exit(if libc::WIFEXITED(raw) {
        libc::WEXITSTATUS(raw)
    } else {
        1
    })
}
