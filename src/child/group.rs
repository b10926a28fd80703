//! The agent's process group as one thing: who is in it, signalling it, and waiting until it
//! is empty. The shutdown ladder applies to the group, not to the direct child
//! (docs/RELIABILITY.md, invariant 5): a wrapper (`sh -c`, `npx`, `uvx`, a node launcher)
//! often dies of SIGTERM at once while the real agent, its child, is still running its
//! handler; the agent must get its whole grace, so "the agent has exited" means "no live
//! process of its group is left".
//!
//! Invariants:
//! - A member is a live process of the group: zombies do not count (whoever adopted them may
//!   never reap them), and a process that left the group (`setsid`) is no longer ours.
//! - Waiting is driven by events, not by a fixed sleep: on Linux a pidfd per member, each
//!   readable once that member has exited; the group is looked at again whenever one of
//!   them exits, and every [`RESCAN`] (a member that left the group with `setsid` is no
//!   longer waited for; one started meanwhile is). Where pidfds are not to be had (an old
//!   kernel, or not Linux), the group is looked at every [`POLL`].
//! - A signal goes to the group only while it has members, and the log says how many.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// How often the group is looked at where pidfds cannot tell when its members exit.
pub const POLL: Duration = Duration::from_millis(10);

/// How often the group is looked at again while its members' pidfds are quiet: a member
/// that leaves the group (`setsid`) does not exit, and must not hold the wait.
pub const RESCAN: Duration = Duration::from_millis(100);

/// The pids of the live members of group `pgid`.
#[cfg(target_os = "linux")]
pub fn members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| is_live_member(pid, pgid))
        .collect()
}

/// The group's members where there is no `/proc` to list them: the group itself while
/// anything of it is left (its size is not known).
#[cfg(not(target_os = "linux"))]
pub fn members(pgid: u32) -> Vec<u32> {
    let alive = i32::try_from(pgid).is_ok_and(|g| killpg(Pid::from_raw(g), None).is_ok());
    if alive {
        vec![pgid]
    } else {
        Vec::new()
    }
}

/// Whether `pid` is alive (not a zombie) and in group `pgid`, from `/proc/<pid>/stat`.
#[cfg(target_os = "linux")]
fn is_live_member(pid: u32, pgid: u32) -> bool {
    live_group_of(pid) == Some(pgid)
}

/// The group of `pid` while it is alive (not a zombie), from `/proc/<pid>/stat`.
#[cfg(target_os = "linux")]
pub(crate) fn live_group_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command name (which may hold spaces and parentheses): state, ppid, pgrp, ...
    let mut fields = stat.rsplit_once(") ").map_or("", |(_, r)| r).split(' ');
    let state = fields.next().unwrap_or("Z");
    let pgrp = fields.nth(1).and_then(|g| g.parse::<u32>().ok());
    pgrp.filter(|_| !matches!(state, "Z" | "X"))
}

/// Sends `sig` to every member of group `pgid`; returns how many there were (none: nothing
/// is sent). A group that empties meanwhile is not an error.
pub fn signal(pgid: u32, sig: Signal) -> usize {
    let n = members(pgid).len();
    let Ok(group) = i32::try_from(pgid) else {
        return 0;
    };
    if n == 0 {
        tracing::debug!(pgid, signal = %sig, "the agent's group is empty; nothing to signal");
        return 0;
    }
    match killpg(Pid::from_raw(group), sig) {
        Ok(()) if sig == Signal::SIGKILL => {
            tracing::warn!(
                pgid,
                processes = n,
                "{n} of the agent's group still running: SIGKILL"
            )
        }
        Ok(()) => tracing::info!(
            pgid,
            processes = n,
            "{sig} to the agent's group ({n} processes)"
        ),
        Err(nix::errno::Errno::ESRCH) => return 0,
        Err(e) => {
            tracing::warn!(pgid, signal = %sig, error = %e, "cannot signal the agent's group");
            return 0;
        }
    }
    n
}

/// A pidfd for each live member of group `pgid` (empty: the group is gone); `None` where
/// pidfds are not to be had.
#[cfg(target_os = "linux")]
fn pidfds(pgid: u32) -> Option<Vec<OwnedFd>> {
    use rustix::process::{pidfd_open, Pid as RPid, PidfdFlags};
    let mut fds = Vec::new();
    for pid in members(pgid) {
        let Some(rpid) = i32::try_from(pid).ok().and_then(RPid::from_raw) else {
            continue;
        };
        match pidfd_open(rpid, PidfdFlags::empty()) {
            // The pid could have been reused between the listing and the open: keep the
            // pidfd only if it is still of a member.
            Ok(fd) if is_live_member(pid, pgid) => fds.push(fd),
            Ok(_) | Err(rustix::io::Errno::SRCH) => {}
            Err(e) => {
                tracing::debug!(error = %e, "no pidfds; watching the agent's group by polling");
                return None;
            }
        }
    }
    Some(fds)
}

#[cfg(not(target_os = "linux"))]
fn pidfds(_pgid: u32) -> Option<Vec<OwnedFd>> {
    None
}

/// Resolves once group `pgid` has no live member. Cancel-safe: it holds nothing that a drop
/// loses (the next call looks at the group anew).
pub async fn gone(pgid: u32) {
    loop {
        match pidfds(pgid) {
            Some(fds) if fds.is_empty() => return,
            Some(fds) => {
                let fds: Vec<_> = fds.into_iter().filter_map(|fd| register(fd).ok()).collect();
                if fds.is_empty() {
                    tokio::time::sleep(POLL).await;
                    continue;
                }
                // A pidfd is readable once its process has exited: any exit, or a while,
                // and the group is looked at again.
                let any = futures::future::select_all(fds.iter().map(|fd| Box::pin(fd.readable())));
                let _ = tokio::time::timeout(RESCAN, any).await;
            }
            None if members(pgid).is_empty() => return,
            None => tokio::time::sleep(POLL).await,
        }
    }
}

/// A pidfd, registered with the runtime's reactor for readability.
#[allow(unsafe_code)]
fn register(fd: OwnedFd) -> std::io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    // SAFETY: the `AsyncFd` takes the `OwnedFd` itself, so the descriptor is open and the
    // same for the `AsyncFd`'s whole life: nothing else holds it to close or reuse it.
    unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
            .map_err(std::io::Error::from)
    }
}

/// Waits, blocking the thread, until group `pgid` has no live member (true) or `limit` has
/// passed (false). For the agent guard, which has no runtime.
pub fn wait_gone_blocking(pgid: u32, limit: Duration) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd as _;
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match pidfds(pgid) {
            Some(fds) if fds.is_empty() => return true,
            None if members(pgid).is_empty() => return true,
            _ if left.is_zero() => return false,
            Some(fds) => {
                let mut polled: Vec<PollFd<'_>> = fds
                    .iter()
                    .map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN))
                    .collect();
                // Returns when any member exits, at the deadline, or after RESCAN; then
                // the group is looked at again.
                let timeout = PollTimeout::try_from(left.min(RESCAN)).unwrap_or(PollTimeout::MAX);
                if poll(&mut polled, timeout).is_err() {
                    std::thread::sleep(POLL.min(left));
                }
            }
            None => std::thread::sleep(POLL.min(left)),
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    /// A group of `sh` and two `sleep`s, started in a new group.
    fn group_of_three() -> std::process::Child {
        std::process::Command::new("sh")
            .args(["-c", "sleep 1000 & sleep 1000 & wait"])
            .process_group(0)
            .spawn()
            .expect("sh starts")
    }

    fn wait_for_members(pgid: u32, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while members(pgid).len() != n {
            assert!(Instant::now() < deadline, "{:?}", members(pgid));
            std::thread::sleep(POLL);
        }
    }

    #[test]
    fn members_are_the_live_processes_of_the_group() {
        let mut sh = group_of_three();
        let pgid = sh.id();
        wait_for_members(pgid, 3);
        assert!(members(pgid).contains(&pgid));
        assert_eq!(signal(pgid, Signal::SIGKILL), 3);
        assert!(wait_gone_blocking(pgid, Duration::from_secs(20)));
        // The shell is a zombie until reaped: not a member.
        assert!(members(pgid).is_empty());
        sh.wait().unwrap();
        assert_eq!(signal(pgid, Signal::SIGTERM), 0, "nothing to signal");
    }

    #[test]
    fn the_blocking_wait_ends_at_its_limit_while_members_live() {
        let mut sh = group_of_three();
        let pgid = sh.id();
        wait_for_members(pgid, 3);
        let start = Instant::now();
        assert!(!wait_gone_blocking(pgid, Duration::from_millis(50)));
        assert!(start.elapsed() >= Duration::from_millis(50));
        signal(pgid, Signal::SIGKILL);
        sh.wait().unwrap();
    }

    /// A member that leaves the group (`setsid`) does not hold the wait.
    #[tokio::test]
    async fn a_member_that_leaves_the_group_is_not_waited_for() {
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "setsid sleep 1000 & echo $! ; wait"])
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh starts");
        let pgid = sh.id();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(sh.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let leaver: i32 = line.trim().parse().unwrap();
        // The shell is the only member once the sleep has left.
        wait_for_members(pgid, 1);
        let wait = tokio::spawn(gone(pgid));
        nix::sys::signal::kill(Pid::from_raw(pgid as i32), Signal::SIGKILL).unwrap();
        sh.wait().unwrap();
        tokio::time::timeout(Duration::from_secs(20), wait)
            .await
            .expect("the group is gone though the leaver runs")
            .unwrap();
        nix::sys::signal::kill(Pid::from_raw(leaver), Signal::SIGKILL).unwrap();
    }

    /// The wrapper goes first; the wait goes on for the member left, and ends when it does.
    #[tokio::test]
    async fn gone_waits_for_every_member_not_just_the_first() {
        let mut sh = group_of_three();
        let pgid = sh.id();
        wait_for_members(pgid, 3);
        nix::sys::signal::kill(Pid::from_raw(pgid as i32), Signal::SIGKILL).unwrap();
        sh.wait().unwrap();
        assert_eq!(members(pgid).len(), 2, "the sleeps outlive their shell");
        let wait = tokio::spawn(gone(pgid));
        tokio::task::yield_now().await;
        assert!(!wait.is_finished());
        signal(pgid, Signal::SIGTERM);
        tokio::time::timeout(Duration::from_secs(20), wait)
            .await
            .expect("the group is gone")
            .unwrap();
        assert!(members(pgid).is_empty());
    }
}
