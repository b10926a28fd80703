//! The shutdown ladder: when the agent's process group is sent SIGTERM and SIGKILL, and when
//! the bridge stops waiting for it. A plain state machine with time passed in; it sends
//! nothing itself (the loop signals the agent's group with what it returns).
//!
//! The ladder is the group's, not the direct child's: agents start through wrappers (`sh -c`,
//! `npx`, `uvx`) that may die of SIGTERM, or exit on EOF, before the real agent does. "The
//! agent has exited" means its whole group has (see `child::group`).
//!
//! Invariants:
//! - Once started, the ladder always ends: SIGTERM one grace after the trigger, SIGKILL one
//!   grace after that, and only to members still alive then; a group that empties sooner
//!   ends the wait at once. A second signal to the bridge sends SIGKILL at once.
//! - No member gets SIGKILL sooner than one grace after its group got SIGTERM, unless the
//!   user asked for it with a second signal.
//! - When the direct child exits and members of its group live on, they get the rest of
//!   the ladder: SIGTERM now if the group has had no signal yet, and SIGKILL one grace after
//!   the SIGTERM.
//! - After SIGKILL the bridge waits at most [`KILL_WAIT`] for the group to be gone (a
//!   process in uninterruptible sleep dies late); the agent guard ends what is left.
//! - After the client's EOF, the grace starts when the agent's stdin is closed (it has read
//!   its whole input); meanwhile the stall watchdog shuts down an agent that takes nothing
//!   off its stdin for a whole grace (SIGTERM at once), and never one that reads, however
//!   slowly.
//! - Once the agent's group is gone, its output is drained for at most one grace (at least
//!   [`MIN_DRAIN`]).

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

/// Why the bridge stops; maps to the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuitReason {
    /// The client closed our stdin.
    ClientEof,
    /// The agent exited (or closed its stdout) on its own.
    AgentExited,
    /// The bridge received this signal.
    Signal(i32),
}

/// The least time the agent's output is drained after it exits.
pub const MIN_DRAIN: Duration = Duration::from_millis(100);

/// How long the bridge waits for the group to be gone after SIGKILL.
pub const KILL_WAIT: Duration = Duration::from_millis(500);

/// The shutdown's state (see the module docs).
#[derive(Debug)]
pub struct Ladder {
    grace: Duration,
    /// Started: why, and the next rung.
    started: Option<Started>,
    /// The client's EOF was read and the agent's stdin is not closed yet.
    awaiting_close: bool,
    /// The stall watchdog: when to look again, and the agent's progress at the last look.
    stall: Option<(Instant, u64)>,
    /// The agent's group is gone: until when its output is drained.
    drain_until: Option<Instant>,
    /// A signal has gone to the agent's group.
    signalled: bool,
    /// The direct child has exited.
    child_exited: bool,
    /// The group was signalled while the direct child still ran (it was terminated, rather
    /// than exiting by itself).
    terminated: bool,
}

#[derive(Debug)]
struct Started {
    reason: QuitReason,
    rung: Rung,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rung {
    /// SIGTERM is due at this time.
    Term(Instant),
    /// SIGTERM was sent; SIGKILL is due at this time.
    Kill(Instant),
    /// SIGKILL was sent; the bridge stops waiting for the group at this time.
    Killed(Instant),
    /// The wait after SIGKILL is over: the bridge stops waiting for the group.
    GaveUp,
    /// The group is gone: nothing more to send.
    Over,
}

impl Ladder {
    pub fn new(grace: Duration) -> Self {
        Self {
            grace,
            started: None,
            awaiting_close: false,
            stall: None,
            drain_until: None,
            signalled: false,
            child_exited: false,
            terminated: false,
        }
    }

    /// A signal is going to the group now.
    fn sent(&mut self) {
        self.signalled = true;
        self.terminated |= !self.child_exited;
    }

    /// Whether the shutdown has started (a signal now would be the second).
    pub fn is_started(&self) -> bool {
        self.started.is_some()
    }

    /// Starts the ladder for `reason` (a second start keeps the first).
    fn start(&mut self, reason: QuitReason, now: Instant) {
        if self.started.is_none() {
            tracing::info!(
                ?reason,
                grace_ms = self.grace.as_millis() as u64,
                "shutting down"
            );
            self.started = Some(Started {
                reason,
                rung: Rung::Term(now + self.grace),
            });
        }
    }

    /// The client's EOF was read; its input is still being delivered to the agent, which
    /// has taken `taken` bytes so far.
    pub fn client_eof(&mut self, now: Instant, taken: u64) {
        if self.started.is_none() {
            self.awaiting_close = true;
            self.stall = Some((now + self.grace, taken));
        }
    }

    /// The client hung up while its input waits for the agent (its EOF is not read yet).
    pub fn client_hung_up(&mut self, now: Instant, taken: u64) {
        self.stall = Some((now + self.grace, taken));
    }

    /// The agent's stdin is closed: after the client's EOF, the grace starts now.
    pub fn stdin_closed(&mut self, now: Instant) {
        if std::mem::take(&mut self.awaiting_close) {
            self.stall = None;
            tracing::debug!("agent stdin closed after the client's input");
            self.start(QuitReason::ClientEof, now);
        }
    }

    /// The agent closed its stdout while it runs.
    pub fn agent_closed_stdout(&mut self, now: Instant) {
        self.start(QuitReason::AgentExited, now);
    }

    /// A signal to the bridge: the signal to send the agent's group (the same one the first
    /// time, SIGKILL at once the second).
    pub fn signal(&mut self, now: Instant, sig: Signal) -> Signal {
        self.sent();
        match &mut self.started {
            Some(s) => {
                s.rung = Rung::Killed(now + KILL_WAIT);
                Signal::SIGKILL
            }
            None => {
                self.start(QuitReason::Signal(sig as i32), now);
                sig
            }
        }
    }

    /// The direct child exited while members of its group live on: they get the rest of the
    /// ladder (SIGTERM at the next [`Ladder::tick`] if the group has had no signal yet).
    pub fn child_exited(&mut self, now: Instant) {
        self.child_exited = true;
        self.awaiting_close = false;
        self.stall = None;
        self.start(QuitReason::AgentExited, now);
        let unsignalled = !self.signalled;
        if let Some(s) = &mut self.started {
            if unsignalled && matches!(s.rung, Rung::Term(_)) {
                s.rung = Rung::Term(now);
            }
        }
    }

    /// The agent's whole group is gone (the direct child included): its output is drained
    /// from now on.
    pub fn group_gone(&mut self, now: Instant) {
        self.child_exited = true;
        self.drain_until = Some(now + self.grace.max(MIN_DRAIN));
        if let Some(s) = &mut self.started {
            s.rung = Rung::Over;
        }
    }

    /// Whether SIGKILL went out [`KILL_WAIT`] ago: the bridge waits no longer for the group
    /// (nor for the direct child, should it not be reaped: the guard ends what is left).
    pub fn gave_up(&self, now: Instant) -> bool {
        self.started.as_ref().is_some_and(|s| match s.rung {
            Rung::Killed(at) => now >= at,
            Rung::GaveUp => true,
            _ => false,
        })
    }

    /// Whether the agent's output has been drained for long enough.
    pub fn drain_over(&self, now: Instant) -> bool {
        self.drain_until.is_some_and(|d| now >= d)
    }

    /// When [`Ladder::tick`] next has something to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        let rung = self.started.as_ref().and_then(|s| match s.rung {
            Rung::Term(at) | Rung::Kill(at) | Rung::Killed(at) => Some(at),
            Rung::GaveUp | Rung::Over => None,
        });
        [rung, self.drain_until, self.stall.map(|(at, _)| at)]
            .into_iter()
            .flatten()
            .min()
    }

    /// Time has passed and the agent has taken `taken` bytes off its stdin: the signal to
    /// send its group now, if any.
    pub fn tick(&mut self, now: Instant, taken: u64) -> Option<Signal> {
        if let Some((_, mark)) = self.stall.filter(|(at, _)| now >= *at) {
            if taken == mark {
                tracing::warn!(
                    "the client hung up and the agent has read none of its input for the grace period; shutting down"
                );
                self.awaiting_close = false;
                self.stall = None;
                self.start(QuitReason::ClientEof, now);
                if let Some(s) = &mut self.started {
                    if matches!(s.rung, Rung::Term(_)) {
                        // The grace has already passed: SIGTERM now.
                        s.rung = Rung::Term(now);
                    }
                }
            } else {
                self.stall = Some((now + self.grace, taken));
            }
        }
        let s = self.started.as_mut()?;
        let sig = match s.rung {
            Rung::Term(at) if now >= at => {
                tracing::warn!("agent still running after the grace period; sending SIGTERM");
                s.rung = Rung::Kill(now + self.grace);
                Signal::SIGTERM
            }
            Rung::Kill(at) if now >= at => {
                tracing::warn!("agent still running a grace after SIGTERM; sending SIGKILL");
                s.rung = Rung::Killed(now + KILL_WAIT);
                Signal::SIGKILL
            }
            Rung::Killed(at) if now >= at => {
                // A deadline in the past would wake the loop at once, for ever.
                s.rung = Rung::GaveUp;
                return None;
            }
            _ => return None,
        };
        self.sent();
        Some(sig)
    }

    /// Why the bridge stopped, and whether it had to terminate the agent (signalled its
    /// group while the direct child still ran); `AgentExited` when the ladder never started.
    pub fn outcome(&self) -> (QuitReason, bool) {
        match &self.started {
            Some(s) => (s.reason.clone(), self.terminated),
            None => (QuitReason::AgentExited, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(3);

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn client_eof_waits_for_the_close_then_term_then_kill() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 0);
        // The agent reads: the watchdog looks again, nothing is sent.
        assert_eq!(l.next_deadline(), Some(at(t0, 3000)));
        assert_eq!(l.tick(at(t0, 3000), 10), None);
        assert_eq!(l.next_deadline(), Some(at(t0, 6000)));
        l.stdin_closed(at(t0, 4000));
        assert_eq!(
            l.next_deadline(),
            Some(at(t0, 7000)),
            "grace from the close"
        );
        assert_eq!(l.tick(at(t0, 6999), 10), None);
        assert_eq!(l.tick(at(t0, 7000), 10), Some(Signal::SIGTERM));
        assert_eq!(l.next_deadline(), Some(at(t0, 10000)));
        assert_eq!(l.tick(at(t0, 10000), 10), Some(Signal::SIGKILL));
        assert_eq!(
            l.next_deadline(),
            Some(at(t0, 10500)),
            "the wait after SIGKILL"
        );
        assert!(!l.gave_up(at(t0, 10499)));
        assert!(l.gave_up(at(t0, 10500)));
        assert_eq!(l.tick(at(t0, 20000), 10), None);
        assert_eq!(l.outcome(), (QuitReason::ClientEof, true));
    }

    #[test]
    fn an_agent_reading_slowly_is_never_cut_off() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 0);
        for i in 1..100u64 {
            assert_eq!(l.tick(at(t0, 3000 * i), i), None, "round {i}");
        }
        assert_eq!(
            l.outcome(),
            (QuitReason::AgentExited, false),
            "never started"
        );
    }

    #[test]
    fn an_agent_taking_nothing_for_a_grace_gets_sigterm_at_once() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 5);
        assert_eq!(l.tick(at(t0, 3000), 7), None);
        assert_eq!(l.tick(at(t0, 6000), 7), Some(Signal::SIGTERM));
        assert_eq!(l.next_deadline(), Some(at(t0, 9000)));
        assert_eq!(l.tick(at(t0, 9000), 7), Some(Signal::SIGKILL));
        assert_eq!(l.outcome(), (QuitReason::ClientEof, true));
        // A close after that changes nothing.
        l.stdin_closed(at(t0, 9500));
        assert_eq!(l.next_deadline(), Some(at(t0, 9500)));
    }

    #[test]
    fn a_hang_up_while_input_is_held_back_arms_the_watchdog() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_hung_up(t0, 100);
        assert_eq!(l.next_deadline(), Some(at(t0, 3000)));
        assert_eq!(l.tick(at(t0, 3000), 100), Some(Signal::SIGTERM));
        assert_eq!(l.outcome(), (QuitReason::ClientEof, true));
    }

    #[test]
    fn a_second_signal_sends_sigkill_at_once() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        assert_eq!(l.signal(t0, Signal::SIGINT), Signal::SIGINT);
        assert_eq!(l.next_deadline(), Some(at(t0, 3000)));
        assert_eq!(l.signal(at(t0, 10), Signal::SIGINT), Signal::SIGKILL);
        assert_eq!(l.next_deadline(), Some(at(t0, 510)));
        assert_eq!(l.outcome(), (QuitReason::Signal(2), true));
    }

    #[test]
    fn a_signal_after_client_eof_keeps_the_first_reason() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 0);
        l.stdin_closed(at(t0, 5));
        assert_eq!(l.signal(at(t0, 10), Signal::SIGTERM), Signal::SIGKILL);
        assert_eq!(l.outcome(), (QuitReason::ClientEof, true));
    }

    #[test]
    fn the_agent_closing_stdout_starts_the_grace() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.agent_closed_stdout(t0);
        assert_eq!(l.outcome(), (QuitReason::AgentExited, false));
        assert_eq!(l.tick(at(t0, 3000), 0), Some(Signal::SIGTERM));
        assert_eq!(l.outcome(), (QuitReason::AgentExited, true));
    }

    /// A wrapper dies of the SIGTERM at once: the rest of its group keeps its grace, and
    /// SIGKILL comes a whole grace after the SIGTERM, not when the wrapper exits.
    #[test]
    fn a_wrapper_dying_of_sigterm_leaves_its_group_the_whole_grace() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 0);
        l.stdin_closed(t0);
        assert_eq!(l.tick(at(t0, 3000), 0), Some(Signal::SIGTERM));
        l.child_exited(at(t0, 3001));
        assert_eq!(
            l.tick(at(t0, 3001), 0),
            None,
            "no SIGKILL at the wrapper's exit"
        );
        assert_eq!(l.next_deadline(), Some(at(t0, 6000)));
        assert_eq!(l.tick(at(t0, 5999), 0), None);
        assert_eq!(l.tick(at(t0, 6000), 0), Some(Signal::SIGKILL));
        assert_eq!(l.outcome(), (QuitReason::ClientEof, true));
    }

    /// The direct child exits by itself (here on the client's EOF, before the grace is over)
    /// while its children run on: SIGTERM to them now, SIGKILL a grace later; the exit code
    /// stays the child's own.
    #[test]
    fn a_child_exiting_by_itself_leaves_the_rest_of_the_ladder_to_its_group() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 0);
        l.stdin_closed(t0);
        l.child_exited(at(t0, 100));
        assert_eq!(l.tick(at(t0, 100), 0), Some(Signal::SIGTERM));
        assert_eq!(l.next_deadline(), Some(at(t0, 3100)));
        assert_eq!(l.tick(at(t0, 3100), 0), Some(Signal::SIGKILL));
        assert_eq!(l.outcome(), (QuitReason::ClientEof, false));

        // With no trigger at all.
        let mut l = Ladder::new(GRACE);
        l.child_exited(t0);
        assert_eq!(l.tick(t0, 0), Some(Signal::SIGTERM));
        assert_eq!(l.outcome(), (QuitReason::AgentExited, false));
    }

    /// A signal to the bridge already reached the group: a wrapper that dies of it does not
    /// bring the next rung forward.
    #[test]
    fn a_forwarded_signal_counts_as_the_groups_signal() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        assert_eq!(l.signal(t0, Signal::SIGTERM), Signal::SIGTERM);
        l.child_exited(at(t0, 1));
        assert_eq!(l.tick(at(t0, 1), 0), None);
        assert_eq!(l.tick(at(t0, 3000), 0), Some(Signal::SIGTERM));
        assert_eq!(l.tick(at(t0, 6000), 0), Some(Signal::SIGKILL));
    }

    /// After SIGKILL the wait ends: the deadline passes once, and the ladder then asks for
    /// no more wake-ups, whether or not the direct child was reaped.
    #[test]
    fn the_wait_after_sigkill_ends_and_is_not_a_deadline_for_ever() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.signal(t0, Signal::SIGTERM);
        assert_eq!(l.signal(at(t0, 1), Signal::SIGTERM), Signal::SIGKILL);
        assert_eq!(l.next_deadline(), Some(at(t0, 501)));
        assert!(!l.gave_up(at(t0, 500)));
        assert_eq!(l.tick(at(t0, 501), 0), None);
        assert!(l.gave_up(at(t0, 501)));
        assert_eq!(l.next_deadline(), None, "no deadline in the past");
    }

    /// Once the group is gone, the rungs left send nothing.
    #[test]
    fn a_gone_group_ends_the_ladder() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 0);
        l.stdin_closed(t0);
        assert_eq!(l.tick(at(t0, 3000), 0), Some(Signal::SIGTERM));
        l.group_gone(at(t0, 3100));
        assert_eq!(l.next_deadline(), Some(at(t0, 6100)), "only the drain");
        assert_eq!(l.tick(at(t0, 6000), 0), None, "no SIGKILL");
        assert!(!l.gave_up(at(t0, 9000)));
        assert_eq!(l.outcome(), (QuitReason::ClientEof, true));
    }

    #[test]
    fn the_drain_after_exit_lasts_a_grace_and_at_least_the_minimum() {
        let t0 = Instant::now();
        let mut l = Ladder::new(Duration::from_millis(10));
        assert!(!l.drain_over(t0));
        l.group_gone(t0);
        assert_eq!(l.next_deadline(), Some(t0 + MIN_DRAIN));
        assert!(!l.drain_over(at(t0, 99)));
        assert!(l.drain_over(at(t0, 100)));
    }
}
