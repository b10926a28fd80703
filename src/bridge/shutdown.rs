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
//!   ends the wait at once.
//! - No member gets SIGKILL sooner than one grace after its group got SIGTERM, whatever
//!   order the client's EOF, the agent's exit and signals come in, unless the user asked for
//!   it with a second signal to the bridge (SIGKILL at once). What makes a signal the
//!   second is the signals *from outside*, not whether the ladder has started: an editor
//!   that quits closes the agent's stdin and then sends SIGTERM, and that SIGTERM is its
//!   first signal, not its second.
//! - The first signal to the bridge is forwarded to the group at once, unless the group has
//!   already had the ladder's SIGTERM (then nothing is sent: no second SIGTERM into a
//!   handler that is saving, no SIGINT that would end it early). A forwarded SIGTERM is the
//!   group's SIGTERM (SIGKILL one grace after it); a forwarded SIGINT or SIGHUP is not, and
//!   SIGTERM follows when the grace already running ends (one grace after the signal when
//!   none was running).
//! - The reason (and so the exit code) is the first trigger the bridge saw: a client EOF
//!   read before the signal makes it `ClientEof`, even while the agent's stdin is still
//!   being closed.
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
    /// The client's EOF has been read.
    eof_read: bool,
    /// Signals the bridge has received from outside (a second one sends SIGKILL at once).
    outside_signals: u32,
    /// The first of them: it decides the bridge's exit status (128 and its number), whatever
    /// came before it (the client's EOF) or after.
    first_signal: Option<i32>,
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
            eof_read: false,
            outside_signals: 0,
            first_signal: None,
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
        self.eof_read = true;
        if self.started.is_none() {
            self.awaiting_close = true;
            self.stall = Some((now + self.grace, taken));
        }
    }

    /// The client hung up while its input waits for the agent (its EOF is not read yet).
    pub fn client_hung_up(&mut self, now: Instant, taken: u64) {
        if self.started.is_none() {
            self.stall = Some((now + self.grace, taken));
        }
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

    /// A signal to the bridge: the signal to send the agent's group now, if any (see the
    /// module docs). The first is forwarded, unless the group has already had the ladder's
    /// SIGTERM; a forwarded SIGTERM leaves the group one whole grace before SIGKILL. The
    /// second sends SIGKILL at once.
    pub fn signal(&mut self, now: Instant, sig: Signal) -> Option<Signal> {
        self.outside_signals = self.outside_signals.saturating_add(1);
        self.first_signal.get_or_insert(sig as i32);
        let reason = if self.eof_read {
            QuitReason::ClientEof
        } else {
            QuitReason::Signal(sig as i32)
        };
        // The grace starts now (if none is running): the watchdog and the wait for the
        // agent's stdin to close have nothing left to decide.
        self.awaiting_close = false;
        self.stall = None;
        self.start(reason, now);
        let grace = self.grace;
        let second = self.outside_signals > 1;
        let s = self.started.as_mut()?;
        let send = match s.rung {
            // The group is gone (or given up on): nothing to signal, and its id may be
            // another's by now.
            Rung::GaveUp | Rung::Over => return None,
            _ if second => {
                s.rung = Rung::Killed(now + KILL_WAIT);
                Signal::SIGKILL
            }
            Rung::Term(_) if sig == Signal::SIGTERM => {
                s.rung = Rung::Kill(now + grace);
                sig
            }
            // SIGINT or SIGHUP: SIGTERM still comes when the grace running ends.
            Rung::Term(_) => sig,
            // The group already had SIGTERM (or is gone): its SIGKILL keeps its time.
            Rung::Kill(_) | Rung::Killed(_) => return None,
        };
        self.sent();
        Some(send)
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
        match (&self.started, self.first_signal) {
            // A signal to the bridge decides, even after the client's EOF: the status does
            // not hang on which of two that came together was read first.
            (_, Some(n)) => (QuitReason::Signal(n), self.terminated),
            (Some(s), None) => (s.reason.clone(), self.terminated),
            (None, None) => (QuitReason::AgentExited, false),
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
        assert_eq!(l.signal(t0, Signal::SIGINT), Some(Signal::SIGINT));
        assert_eq!(l.next_deadline(), Some(at(t0, 3000)));
        assert_eq!(l.signal(at(t0, 10), Signal::SIGINT), Some(Signal::SIGKILL));
        assert_eq!(l.next_deadline(), Some(at(t0, 510)));
        assert_eq!(l.outcome(), (QuitReason::Signal(2), true));

        // SIGINT then SIGTERM: the second, whatever it is.
        let mut l = Ladder::new(GRACE);
        assert_eq!(l.signal(t0, Signal::SIGINT), Some(Signal::SIGINT));
        assert_eq!(l.signal(at(t0, 10), Signal::SIGTERM), Some(Signal::SIGKILL));
        assert_eq!(l.outcome(), (QuitReason::Signal(2), true));

        // SIGTERM twice.
        let mut l = Ladder::new(GRACE);
        assert_eq!(l.signal(t0, Signal::SIGTERM), Some(Signal::SIGTERM));
        assert_eq!(l.signal(at(t0, 10), Signal::SIGTERM), Some(Signal::SIGKILL));
        assert_eq!(l.outcome(), (QuitReason::Signal(15), true));
    }

    /// Issue 41: an editor that quits closes the agent's stdin, then sends SIGTERM during
    /// the EOF grace. That SIGTERM is the user's first signal: it goes to the group, and
    /// SIGKILL comes a whole grace after it (it used to come at once).
    #[test]
    fn eof_then_sigterm_during_the_grace_leaves_the_group_a_whole_grace() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 0);
        l.stdin_closed(at(t0, 5));
        assert_eq!(l.signal(at(t0, 55), Signal::SIGTERM), Some(Signal::SIGTERM));
        assert_eq!(
            l.next_deadline(),
            Some(at(t0, 3055)),
            "SIGKILL a grace later"
        );
        assert_eq!(
            l.tick(at(t0, 3054), 0),
            None,
            "no second SIGTERM, no SIGKILL"
        );
        assert_eq!(l.tick(at(t0, 3055), 0), Some(Signal::SIGKILL));
        assert_eq!(
            l.outcome(),
            (QuitReason::Signal(15), true),
            "a signal decides the status, even after the EOF"
        );

        // The user insists: a second signal still kills at once.
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 0);
        l.stdin_closed(at(t0, 5));
        assert_eq!(l.signal(at(t0, 55), Signal::SIGTERM), Some(Signal::SIGTERM));
        assert_eq!(l.signal(at(t0, 60), Signal::SIGTERM), Some(Signal::SIGKILL));
        assert_eq!(l.next_deadline(), Some(at(t0, 560)));
    }

    /// The EOF is read but the agent's stdin is not closed yet when SIGTERM comes: the same,
    /// and neither the close nor the watchdog moves a rung afterwards.
    #[test]
    fn a_signal_before_the_agents_stdin_is_closed_starts_the_grace_then() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 7);
        assert_eq!(l.signal(at(t0, 50), Signal::SIGTERM), Some(Signal::SIGTERM));
        assert_eq!(l.next_deadline(), Some(at(t0, 3050)));
        l.stdin_closed(at(t0, 100));
        assert_eq!(l.tick(at(t0, 3049), 7), None, "the watchdog is off");
        assert_eq!(l.tick(at(t0, 3050), 7), Some(Signal::SIGKILL));
        assert_eq!(l.outcome(), (QuitReason::Signal(15), true));
    }

    /// SIGTERM first, then the client's EOF at once: the EOF changes nothing.
    #[test]
    fn sigterm_then_eof_leaves_the_group_a_whole_grace() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        assert_eq!(l.signal(t0, Signal::SIGTERM), Some(Signal::SIGTERM));
        l.client_eof(at(t0, 1), 0);
        l.client_hung_up(at(t0, 1), 0);
        l.stdin_closed(at(t0, 2));
        assert_eq!(l.next_deadline(), Some(at(t0, 3000)));
        assert_eq!(l.tick(at(t0, 2999), 0), None);
        assert_eq!(l.tick(at(t0, 3000), 0), Some(Signal::SIGKILL));
        assert_eq!(l.outcome(), (QuitReason::Signal(15), true));
    }

    /// SIGINT (or SIGHUP) during the EOF grace is forwarded; it is not the group's SIGTERM,
    /// which comes when the grace ends, and SIGKILL a whole grace after that.
    #[test]
    fn sigint_during_the_eof_grace_is_forwarded_and_the_ladder_goes_on() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 0);
        l.stdin_closed(t0);
        assert_eq!(l.signal(at(t0, 100), Signal::SIGINT), Some(Signal::SIGINT));
        assert_eq!(l.next_deadline(), Some(at(t0, 3000)), "the grace running");
        assert_eq!(l.tick(at(t0, 3000), 0), Some(Signal::SIGTERM));
        assert_eq!(l.tick(at(t0, 5999), 0), None);
        assert_eq!(l.tick(at(t0, 6000), 0), Some(Signal::SIGKILL));
    }

    /// A first signal after the ladder's own SIGTERM sends nothing (no second SIGTERM into
    /// a handler that is saving) and leaves SIGKILL where it was; a second one kills.
    #[test]
    fn a_first_signal_after_the_ladders_sigterm_keeps_the_sigkill_time() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 0);
        l.stdin_closed(t0);
        assert_eq!(l.tick(at(t0, 3000), 0), Some(Signal::SIGTERM));
        assert_eq!(l.signal(at(t0, 3100), Signal::SIGTERM), None);
        assert_eq!(l.next_deadline(), Some(at(t0, 6000)));
        assert_eq!(
            l.signal(at(t0, 3200), Signal::SIGINT),
            Some(Signal::SIGKILL),
            "the second"
        );

        let mut l = Ladder::new(GRACE);
        l.client_eof(t0, 0);
        l.stdin_closed(t0);
        assert_eq!(l.tick(at(t0, 3000), 0), Some(Signal::SIGTERM));
        assert_eq!(l.signal(at(t0, 3100), Signal::SIGINT), None);
        assert_eq!(l.next_deadline(), Some(at(t0, 6000)));
        assert_eq!(l.tick(at(t0, 6000), 0), Some(Signal::SIGKILL));
        assert_eq!(l.outcome(), (QuitReason::Signal(2), true));
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
    /// bring the next rung forward. A forwarded SIGTERM is the group's SIGTERM; a forwarded
    /// SIGINT is not, and SIGTERM follows a grace later.
    #[test]
    fn a_forwarded_signal_counts_as_the_groups_signal() {
        let t0 = Instant::now();
        let mut l = Ladder::new(GRACE);
        assert_eq!(l.signal(t0, Signal::SIGTERM), Some(Signal::SIGTERM));
        l.child_exited(at(t0, 1));
        assert_eq!(l.tick(at(t0, 1), 0), None);
        assert_eq!(l.tick(at(t0, 2999), 0), None);
        assert_eq!(l.tick(at(t0, 3000), 0), Some(Signal::SIGKILL));

        let mut l = Ladder::new(GRACE);
        assert_eq!(l.signal(t0, Signal::SIGINT), Some(Signal::SIGINT));
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
        assert_eq!(l.signal(at(t0, 1), Signal::SIGTERM), Some(Signal::SIGKILL));
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
        // Signals during the drain send nothing: the group's id may be another's by now.
        assert_eq!(l.signal(at(t0, 6200), Signal::SIGINT), None);
        assert_eq!(
            l.signal(at(t0, 6300), Signal::SIGINT),
            None,
            "not even a second"
        );
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
