//! The loop that owns the router: it waits for the next [`Event`] and hands it to a plain
//! function that says what it means. It does no reading or writing of its own: readers and
//! writers are tasks ([`super::reader`], [`super::writer`]), and when to signal the agent is
//! the [`Ladder`]'s call.
//!
//! Invariants:
//! - [`Shell::next_event`] only turns readiness into an event; every future it polls is
//!   cancel-safe (noted at each branch), so an event that loses the race is not lost.
//! - A side is read only while what it feeds has drained (bridge-made replies back to it
//!   may pile up to [`REPLY_BACKLOG`]), so a stalled peer back-pressures its producer.
//! - Each output is a FIFO fed only here, so per-direction order is kept.

use std::process::ExitStatus;
use std::sync::atomic::Ordering;
use std::time::Instant;

use nix::sys::signal::Signal;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;
use tokio::time::sleep_until;

use super::effects::{Done, Effects};
use super::services::{Agent, Ends, Surfaces};
use super::shutdown::Ladder;
use crate::child;
use crate::control::{self, Call, Control};
use crate::router::{Control as Ask, Input, Out, Outbox, Router, Side};
use crate::scan::Batch;

/// How many bridge-made replies may wait for a stalled peer before its input is paused.
pub const REPLY_BACKLOG: usize = 256;

/// What woke the loop.
#[derive(Debug)]
pub(super) enum Event {
    /// A signal to the bridge.
    Signal(Signal),
    /// A writer has room for the queue waiting for it, or is gone.
    Room,
    /// A deadline of the router or of the shutdown ladder may have passed.
    Timer,
    /// The agent process (the direct child) ended.
    AgentExited(ExitStatus),
    /// The last live member of the agent's process group ended.
    GroupGone,
    /// A control-server call (`None`: the control server is gone).
    Call(Option<Call>),
    /// An effect the router asked for is done.
    Done(Done),
    /// A batch of the agent's lines (`None`: its stdout reached EOF).
    AgentInput(Option<Batch>),
    /// The agent's stdin is closed.
    StdinClosed,
    /// The client hung up while its input is held back (`false`: no longer watched).
    ClientHungUp(bool),
    /// A batch of the client's lines (`None`: our stdin reached EOF).
    ClientInput(Option<Batch>),
    /// `--linger`: a front attached, or one is gone.
    Hold(super::hold::HoldEvent),
    /// `--linger`: a joined client's lines, or its end.
    Joined(super::joined::JoinedEvent),
}

/// The loop's state: the router, what it queued, the channels to the tasks, the agent.
pub(super) struct Shell {
    pub router: Router,
    pub outbox: Outbox,
    pub ladder: Ladder,
    pub agent: Agent,
    pub signals: Signals,
    pub surfaces: Surfaces,
    /// The disk work the router asked for, under way.
    pub effects: Effects,
    pub ends: Ends,
    /// The router has not had the client's end (with `--linger`: the linger is not over).
    pub client_open: bool,
    /// A client is attached (always, without `--linger`, until its EOF).
    pub attached: bool,
    /// `--linger`: the holder's socket, its front, the linger.
    pub holding: Option<super::hold::Holding>,
    /// `--linger`: the clients that joined a session beside the attached one.
    pub guests: super::joined::Guests,
    pub agent_open: bool,
    /// How the direct child ended.
    pub status: Option<ExitStatus>,
    /// Ends when the rest of the agent's group is gone, once the direct child has exited
    /// and members live on (`child::group::gone`).
    pub leftovers: Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
}

impl Shell {
    /// Runs until the agent's whole group has exited and its output is drained (or its
    /// stdout closed), or until the wait after SIGKILL is over.
    pub async fn run(&mut self) {
        loop {
            self.surfaces.observers.publish(&mut self.outbox.events);
            flush_ready(
                &mut self.outbox,
                &mut self.ends.to_client,
                &mut self.ends.to_agent,
            );
            if self.done(Instant::now()) {
                return;
            }
            let event = self.next_event().await;
            let now = Instant::now();
            self.handle(event, now);
            self.flush_joined(now);
            if std::mem::take(&mut self.outbox.at_desk) {
                self.surfaces.observers.at_desk(now);
            }
            if let Some(h) = &mut self.holding {
                h.publish(&self.router);
            }
            self.effects.start(&mut self.outbox);
        }
    }

    fn done(&self, now: Instant) -> bool {
        if self.ladder.gave_up(now) {
            // A process that outlives SIGKILL (uninterruptible sleep): the guard, and the
            // child handle's kill on drop, end it; the bridge does not wait for ever.
            if self.leftovers.is_some() || self.status.is_none() {
                tracing::warn!("the agent's group is still there after SIGKILL; the guard ends it");
            }
            return true;
        }
        self.status.is_some()
            && self.leftovers.is_none()
            && (!self.agent_open || self.ladder.drain_over(now))
    }

    /// Waits for the next thing that needs the loop.
    async fn next_event(&mut self) -> Event {
        let linger = self.holding.as_ref().and_then(|h| h.deadline());
        let ringer = &self.surfaces.observers.ringer;
        let ring = match ringer.idle() {
            true => None,
            false => ringer.next_deadline(Instant::now()),
        };
        let deadline = [
            self.router.next_deadline(),
            self.ladder.next_deadline(),
            linger,
            ring,
        ]
        .into_iter()
        .flatten()
        .min();
        // A side is read while what it feeds has drained; the bridge's own replies back to
        // it may pile up to REPLY_BACKLOG (they are small) before it is paused too. (Counting
        // forwarded lines there would deadlock a client that writes before it reads.)
        let outbox = &self.outbox;
        let read_agent =
            self.agent_open && outbox.to_client.is_empty() && outbox.made_for_agent < REPLY_BACKLOG;
        let read_client = self.client_open
            && self.attached
            && self.status.is_none()
            && outbox.to_agent.is_empty()
            && outbox.made_for_client < REPLY_BACKLOG;
        let read_joined = outbox.to_agent.is_empty();
        tokio::select! {
            biased;
            // Cancel-safe: `Signals::recv` only polls tokio signal streams.
            sig = self.signals.recv() => Event::Signal(sig),
            // Cancel-safe: `reserve` holds no message; the permit is dropped at once and the
            // queue handed over by `flush_ready`, which then finds the room.
            _ = reserve(&self.ends.to_client), if !outbox.to_client.is_empty() => Event::Room,
            _ = reserve(&self.ends.to_agent), if !outbox.to_agent.is_empty() => Event::Room,
            // Cancel-safe: a sleep can be re-created.
            _ = sleep_until_opt(deadline), if deadline.is_some() => Event::Timer,
            // Cancel-safe: polled by reference, and `child::group::gone` holds nothing a drop
            // would lose.
            _ = async { self.leftovers.as_mut().expect("guarded").await },
                if self.leftovers.is_some() => Event::GroupGone,
            // Cancel-safe per tokio docs (`Child::wait`).
            st = self.agent.child.wait(), if self.status.is_none() => {
                Event::AgentExited(st.unwrap_or_else(|e| {
                    tracing::error!(error = %e, "cannot wait for agent");
                    std::os::unix::process::ExitStatusExt::from_raw(1 << 8)
                }))
            }
            // Cancel-safe: `mpsc::Receiver::recv` (the loop holds a sender: never `None`).
            Some(done) = self.effects.done_rx.recv() => Event::Done(done),
            // Cancel-safe: `mpsc::Receiver::recv`.
            call = recv_call(&mut self.surfaces.control), if self.surfaces.control.is_some() => Event::Call(call),
            // Cancel-safe: `mpsc::Receiver::recv`.
            batch = self.ends.agent_frames.recv(), if read_agent => Event::AgentInput(batch),
            // Cancel-safe: a oneshot receiver polled by reference.
            _ = async { self.ends.stdin_closed.as_mut().expect("guarded").await },
                if self.ends.stdin_closed.is_some() => Event::StdinClosed,
            // Cancel-safe: a oneshot receiver polled by reference.
            hup = async { self.ends.hup.as_mut().expect("guarded").await },
                if self.ends.hup.is_some() && self.client_open => Event::ClientHungUp(hup.is_ok()),
            // Cancel-safe: `mpsc::Receiver::recv`.
            batch = self.ends.client_frames.recv(), if read_client => Event::ClientInput(batch),
            // Cancel-safe: `Holding::next` polls two `mpsc::Receiver::recv`s.
            ev = async { self.holding.as_mut().expect("guarded").next().await },
                if self.holding.is_some() => Event::Hold(ev),
            // Cancel-safe: `Guests::next` polls one `mpsc::Receiver::recv`.
            // (Read, as the attached client is, only while what they fed the agent has
            // drained: a request of theirs is copied under a bridge id, so the reader's
            // byte budget does not hold it back.)
            ev = self.guests.next(), if self.guests.any() && read_joined => Event::Joined(ev),
        }
    }

    /// What an event means.
    pub(super) fn handle(&mut self, event: Event, now: Instant) {
        match event {
            Event::Signal(sig) => {
                // As the client's EOF for the router, unless that EOF was read already or the
                // shutdown is under way.
                let as_eof = !self.ladder.is_started() && self.client_open;
                match self.ladder.signal(now, sig) {
                    Some(Signal::SIGKILL) => {
                        tracing::warn!(signal = %sig, "received a second signal; SIGKILL to the agent's group at once");
                        child::group::signal(self.agent.pgid, Signal::SIGKILL);
                    }
                    Some(send) => {
                        tracing::info!(signal = %sig, "received signal; forwarding to agent");
                        child::group::signal(self.agent.pgid, send);
                    }
                    None => tracing::info!(
                        signal = %sig,
                        "received signal; the agent's group already had SIGTERM, and gets SIGKILL only a grace after it (a second signal: at once)"
                    ),
                }
                if as_eof {
                    self.router.handle(Input::ClientEof, now, &mut self.outbox);
                }
                if let Some(h) = &mut self.holding {
                    // Stopping: no front attaches any more.
                    h.close();
                }
            }
            // `flush_ready` hands the queue over (or drops it, for a writer that is gone).
            Event::Room => {}
            Event::Timer => {
                self.surfaces.observers.ring(now);
                self.router.handle(Input::Timer, now, &mut self.outbox);
                self.linger_over(now);
                self.step_ladder(now);
            }
            Event::AgentExited(st) => {
                tracing::info!(status = %st, "agent exited");
                self.status = Some(st);
                let left = child::group::members(self.agent.pgid).len();
                if left == 0 {
                    self.ladder.group_gone(now);
                } else {
                    // A wrapper went first (`sh -c`, `npx`, `uvx`): the real agent may still
                    // be running its SIGTERM handler, or holding its stdout open. The rest
                    // of the group gets the rest of the ladder.
                    tracing::info!(
                        processes = left,
                        "{left} of the agent's group still running; they get the rest of the shutdown ladder"
                    );
                    self.leftovers = Some(Box::pin(child::group::gone(self.agent.pgid)));
                    self.ladder.child_exited(now);
                    self.step_ladder(now);
                }
            }
            Event::GroupGone => {
                tracing::info!("the agent's group is gone");
                self.leftovers = None;
                self.ladder.group_gone(now);
            }
            Event::Call(Some(call)) => self.on_call(call),
            Event::Call(None) => self.surfaces.control = None,
            Event::Done(done) => self
                .effects
                .finish(done, &mut self.router, &mut self.outbox),
            Event::AgentInput(Some(batch)) => {
                let input = Input::Batch(Side::Agent, batch);
                self.router.handle(input, now, &mut self.outbox);
            }
            Event::AgentInput(None) => {
                self.agent_open = false;
                if self.status.is_none() {
                    tracing::info!("agent closed its stdout");
                    self.outbox.to_agent.push_back(Out::Close);
                    self.ladder.agent_closed_stdout(now);
                }
            }
            Event::StdinClosed => {
                self.ends.stdin_closed = None;
                self.ladder.stdin_closed(now);
            }
            Event::ClientHungUp(true) if self.lingers() => {
                tracing::info!("the client hung up while its input waits for the agent");
                self.detach(now);
            }
            Event::ClientHungUp(hung_up) => {
                self.ends.hup = None;
                if hung_up {
                    tracing::info!("the client hung up while its input waits for the agent");
                    self.ladder.client_hung_up(now, self.taken());
                }
            }
            Event::ClientInput(Some(batch)) => {
                let input = Input::Batch(Side::Client, batch);
                self.router.handle(input, now, &mut self.outbox);
            }
            Event::ClientInput(None) if self.lingers() => {
                tracing::info!("client closed stdin");
                self.detach(now);
            }
            Event::Hold(super::hold::HoldEvent::Attach(a)) => self.attach(a, now),
            Event::Joined(ev) => self.on_joined(ev, now),
            Event::Hold(super::hold::HoldEvent::FrontGone(generation)) => {
                let current = self
                    .holding
                    .as_ref()
                    .is_some_and(|h| h.is_current(generation));
                if current && self.attached {
                    tracing::info!("the front is gone");
                    self.detach(now);
                }
            }
            Event::ClientInput(None) => {
                tracing::info!("client closed stdin");
                self.client_open = false;
                self.router.handle(Input::ClientEof, now, &mut self.outbox);
                self.ladder.client_eof(now, self.taken());
            }
        }
    }

    /// Sends the agent's group the signal the ladder says is due now, if any.
    fn step_ladder(&mut self, now: Instant) {
        if let Some(sig) = self.ladder.tick(now, self.taken()) {
            child::group::signal(self.agent.pgid, sig);
        }
    }

    fn taken(&self) -> u64 {
        self.ends.agent_taken.load(Ordering::Relaxed)
    }

    /// Runs one control-server call against the router.
    fn on_call(&mut self, call: Call) {
        let (router, outbox) = (&mut self.router, &mut self.outbox);
        let now = Instant::now();
        // A caller that went away (timeout, closed connection) just misses its reply.
        match call {
            Call::List(reply) => {
                let views = serde_json::value::to_raw_value(&router.question_views())
                    .expect("question views serialize");
                let _ = reply.send(views);
            }
            Call::Answer(mut a, reply) => {
                if let Some(e) = control::not_me(
                    self.surfaces.identity.as_ref().map(|e| e.id.as_str()),
                    a.bridge.as_deref(),
                ) {
                    let _ = reply.send(Err(e));
                    return;
                }
                if let Some(choice) = a.remember.take() {
                    // The router checks the rule and asks for its write (off the loop: a
                    // lock, a read, a sync, a rename); the answer waits for it.
                    let call = Ask::Remember {
                        session: &a.session_id,
                        question_id: &a.question_id,
                        answers: &a.answers,
                        remember: choice,
                    };
                    let asked = router
                        .handle(Input::Control(call), now, outbox)
                        .remembering();
                    match asked {
                        Ok(token) => self.effects.wait_for_write(token, a, reply),
                        Err(e) => {
                            let _ = reply.send(Err(control::control_error(e)));
                        }
                    }
                    return;
                }
                let call = Ask::Answer {
                    session: &a.session_id,
                    question_id: &a.question_id,
                    answers: &a.answers,
                    device: a.device.as_deref(),
                };
                let r = router
                    .handle(Input::Control(call), now, outbox)
                    .answered()
                    .map_err(control::control_error);
                let _ = reply.send(r);
            }
            Call::Reject(r, reply) => {
                let result = match control::not_me(
                    self.surfaces.identity.as_ref().map(|e| e.id.as_str()),
                    r.bridge.as_deref(),
                ) {
                    Some(e) => Err(e),
                    None => {
                        let call = Ask::Reject {
                            session: &r.session_id,
                            question_id: &r.question_id,
                            reason: r.reason.as_deref(),
                            device: r.device.as_deref(),
                        };
                        router
                            .handle(Input::Control(call), now, outbox)
                            .answered()
                            .map_err(control::control_error)
                    }
                };
                let _ = reply.send(result);
            }
            Call::Page {
                visible,
                device,
                reply,
            } => {
                // A paired device's page says nothing of the desk.
                if device.is_none() {
                    self.surfaces.observers.ringer.page(visible, Instant::now());
                }
                let _ = reply.send(serde_json::Value::Bool(true));
            }
            Call::Bridges(reply) => {
                let me: Vec<serde_json::Value> = self
                    .surfaces
                    .identity
                    .iter()
                    .map(|e| {
                        let mut v = e.public();
                        v["status"] = "live".into();
                        v["pending"] = router.questions().len().into();
                        v
                    })
                    .collect();
                let _ = reply.send(me.into());
            }
            Call::Status(reply) => {
                let mut v = router.status();
                if let Some(me) = &self.surfaces.identity {
                    v["bridge"] = me.public();
                }
                v["agentPid"] = self.agent.pgid.into();
                v["wall"] = serde_json::to_value(&self.agent.wall).unwrap_or_default();
                v["uptimeMs"] = (self.agent.started.elapsed().as_millis() as u64).into();
                v["version"] = env!("CARGO_PKG_VERSION").into();
                v["ringing"] = self.surfaces.observers.ringer.status(Instant::now());
                if let Some(h) = &self.holding {
                    v["linger"] = h.status(Instant::now());
                    v["linger"]["joinedFrontPids"] = self.guests.pids().into();
                }
                let decided = router.policy_decisions();
                let Some(policy) = self.effects.policy().cloned() else {
                    v["policy"] = decided;
                    let _ = reply.send(v);
                    return;
                };
                // The policy's files are looked at again, off the loop (a broken edit shows
                // before the next approval).
                let cwd = router.cwd().map(ToOwned::to_owned);
                tokio::spawn(async move {
                    let files = policy.run(move |desk| desk.status(cwd.as_deref())).await;
                    let mut policy =
                        files.unwrap_or_else(|why| serde_json::json!({ "broken": why }));
                    policy["decided"] = decided;
                    v["policy"] = policy;
                    let _ = reply.send(v);
                });
            }
        }
    }
}

/// Moves everything queued for each writer into its channel as one batch, when the channel
/// has room (no await); drops it when the writer is gone.
pub(super) fn flush_ready(
    outbox: &mut Outbox,
    to_client: &mut Option<mpsc::Sender<Vec<Out>>>,
    to_agent: &mut Option<mpsc::Sender<Vec<Out>>>,
) {
    for (side, tx) in [(Side::Client, to_client), (Side::Agent, to_agent)] {
        let queued = match side {
            Side::Client => !outbox.to_client.is_empty(),
            Side::Agent => !outbox.to_agent.is_empty(),
        };
        if !queued {
            continue;
        }
        let take = |outbox: &mut Outbox| match side {
            Side::Client => outbox.take_client(),
            Side::Agent => outbox.take_agent(),
        };
        let closed = match tx.as_ref().map(mpsc::Sender::try_reserve) {
            Some(Ok(permit)) => {
                permit.send(take(outbox));
                false
            }
            Some(Err(mpsc::error::TrySendError::Full(()))) => false,
            Some(Err(mpsc::error::TrySendError::Closed(()))) | None => true,
        };
        if closed {
            if tx.is_none() && side == Side::Client {
                // No client attached (`--linger`): what the router kept is kept; the rest
                // is for nobody.
                drop(take(outbox));
                continue;
            }
            writer_gone(take(outbox), tx, output_name(side));
        }
    }
}

/// The name of the output a queue is written to.
fn output_name(to: Side) -> &'static str {
    match to {
        Side::Client => "client",
        Side::Agent => "agent",
    }
}

/// The writer for an output is gone: drop what was queued for it (a queued `Close` for an
/// output that is already closed is not a loss).
fn writer_gone(queued: Vec<Out>, tx: &mut Option<mpsc::Sender<Vec<Out>>>, name: &str) {
    let lost: usize = queued
        .iter()
        .map(|o| match o {
            Out::Line(_) => 1,
            Out::Run(run) => memchr::memchr_iter(b'\n', run).count(),
            Out::Close => 0,
        })
        .sum();
    if lost > 0 {
        tracing::warn!(
            output = name,
            dropped = lost,
            "output closed; dropping what is queued for it"
        );
    }
    *tx = None;
}

async fn reserve(
    tx: &Option<mpsc::Sender<Vec<Out>>>,
) -> Result<mpsc::Permit<'_, Vec<Out>>, mpsc::error::SendError<()>> {
    match tx {
        Some(tx) => tx.reserve().await,
        None => Err(mpsc::error::SendError(())),
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    if let Some(d) = deadline {
        sleep_until(d.into()).await;
    }
}

async fn recv_call(control: &mut Option<Control>) -> Option<Call> {
    match control {
        Some(c) => c.calls.recv().await,
        None => std::future::pending().await,
    }
}

/// SIGINT, SIGTERM and SIGHUP as one stream.
pub(super) struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn new() -> std::io::Result<Self> {
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.int.recv() => Signal::SIGINT,
            _ = self.term.recv() => Signal::SIGTERM,
            _ = self.hup.recv() => Signal::SIGHUP,
        }
    }
}
