//! The I/O shell around the [`Router`]: tasks, channels, the child, signals, shutdown.
//!
//! Shape: one reader task per input (client stdin, agent stdout), one writer task per
//! output (client stdout, agent stdin), all joined to a single loop that owns the router.
//!
//! Invariants:
//! - Bounded memory: every channel is bounded; the loop reads a side only while the
//!   queue that side's messages feed is empty, so a stalled peer back-pressures the
//!   producer instead of growing a buffer. Bridge-made replies back to the sender are small
//!   and capped by [`REPLY_BACKLOG`].
//! - Independence: a client that stops reading stdout stalls only agent->client traffic;
//!   client->agent traffic keeps flowing (and vice versa).
//! - Ordering: each output is a FIFO fed by one loop, so per-direction order is kept.
//! - Only cancel-safe futures are polled in `select!` (noted at each branch).
//! - Shutdown always ends: stdin of the agent closed, then SIGTERM to its group after the
//!   grace, SIGKILL after a second grace; every wait after the agent is gone is bounded.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use nix::sys::signal::Signal;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;
use tokio::time::sleep_until;

use crate::child::{self, StderrTail};
use crate::codec::LineCodec;
use crate::control::{self, Call, Control, ControlConfig};
use crate::events::Event;
use crate::journal::{self, Journal};
use crate::notify::Notifier;
use crate::router::{AgentExit, Out, Outbox, Router, RouterConfig, Side};
use crate::scan::{Batch, Memo};

/// Batches buffered between a reader and the loop, and between the loop and a writer. A
/// batch is what one read produced (at most one read buffer of lines plus one line up to
/// `--max-line-bytes`), or what the loop queued for a writer between two sends.
pub const CHANNEL_CAPACITY: usize = 4;
/// How many bridge-made replies may wait for a stalled peer before its input is paused.
pub const REPLY_BACKLOG: usize = 256;
const READ_BUFFER: usize = 64 * 1024;
const WRITE_BUFFER: usize = 64 * 1024;

/// Everything the bridge needs to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub agent: Vec<String>,
    pub cwd: Option<std::path::PathBuf>,
    pub max_line_bytes: usize,
    pub shutdown_grace: Duration,
    pub router: RouterConfig,
    /// `--control`: the control server and the Questions page.
    pub control: Option<ControlConfig>,
    /// `--journal`: the question journal.
    pub journal: Option<std::path::PathBuf>,
    /// `--on-question`: the notification command's argv.
    pub on_question: Option<Vec<String>>,
}

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

/// Failures before the bridge is running.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Spawn(#[from] child::SpawnError),
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    #[error(transparent)]
    Control(#[from] control::ControlSetupError),
    #[error("cannot open the journal {0}: {1}")]
    Journal(std::path::PathBuf, std::io::Error),
}

impl RunError {
    /// The exit code for this failure (127 when the agent could not be started, as shells).
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Spawn(_) => 127,
            RunError::Signals(_) | RunError::Control(_) | RunError::Journal(..) => 1,
        }
    }
}

/// Runs the bridge on the process's stdin/stdout. Returns the exit code.
pub async fn run(cfg: Config) -> Result<i32, RunError> {
    let (input, output, bulk) = client_stdio();
    // A second handle on stdin, only to see the client hang up while its input waits.
    let probe = {
        use std::os::fd::AsFd;
        std::io::stdin().as_fd().try_clone_to_owned().ok()
    };
    run_inner(
        cfg,
        input,
        output,
        probe,
        LongWrites::Blocking { client: bulk },
    )
    .await
}

type ClientIn = Box<dyn AsyncRead + Unpin + Send>;
type ClientOut = Box<dyn AsyncWrite + Unpin + Send>;

/// Our stdin and stdout: as non-blocking pipes when they are pipes (the usual case, and far
/// cheaper: no thread hop per read or write), else tokio's blocking-pool stdio; and, for a
/// stdout pipe, the [`Bulk`] handle its long writes go through.
fn client_stdio() -> (ClientIn, ClientOut, Option<Bulk>) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let dup_in = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from);
    let input: ClientIn = match dup_in.and_then(pipe::Receiver::from_file) {
        Ok(rx) => Box::new(rx),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let dup_out = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from);
    let mut bulk = None;
    let output: ClientOut = match dup_out.and_then(pipe::Sender::from_file) {
        Ok(tx) => {
            bulk = Bulk::of(&tx);
            Box::new(tx)
        }
        Err(_) => Box::new(tokio::io::stdout()),
    };
    (input, output, bulk)
}

struct Shutdown {
    reason: QuitReason,
    term_at: Instant,
    kill_at: Instant,
    termed: bool,
    killed: bool,
}

/// Runs the bridge between the given client streams and a spawned agent.
pub async fn run_with<R, W>(cfg: Config, client_in: R, client_out: W) -> Result<i32, RunError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    run_inner(cfg, client_in, client_out, None, LongWrites::Async).await
}

/// How the writers send long pieces (see [`Bulk`]).
enum LongWrites {
    /// All through the async writers: `run_with`, inside someone else's runtime, which would
    /// wait for a pool thread blocked in a write when it is dropped.
    Async,
    /// The binary: blocking writes to the agent's stdin, and to our stdout when it is a pipe.
    Blocking { client: Option<Bulk> },
}

/// How often a client reader that is held back checks whether the client hung up.
const HUP_POLL: Duration = Duration::from_millis(100);

async fn run_inner<R, W>(
    cfg: Config,
    client_in: R,
    client_out: W,
    hup_probe: Option<std::os::fd::OwnedFd>,
    long_writes: LongWrites,
) -> Result<i32, RunError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // Observers first, so a bad address or path fails before the agent starts.
    let mut control = match &cfg.control {
        Some(c) => Some(control::start(c).await?),
        None => None,
    };
    let journal = match &cfg.journal {
        Some(path) => {
            Some(journal::open(path, &cfg.agent).map_err(|e| RunError::Journal(path.clone(), e))?)
        }
        None => None,
    };
    let notifier = cfg
        .on_question
        .clone()
        .map(|argv| Notifier::new(argv, control.as_ref().map(|c| c.page_url.clone())));
    let observers = Observers {
        events: control.as_ref().map(|c| c.events.clone()),
        journal,
        notifier,
    };
    let started = Instant::now();
    let mut child = child::spawn(&cfg.agent, cfg.cwd.as_ref())?;
    let pgid = child.id().unwrap_or(0);
    tracing::info!(agent = ?cfg.agent, pid = pgid, "agent started");
    let (Some(agent_in), Some(agent_out), Some(agent_err)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("all three agent pipes are requested in child::spawn");
    };

    // The binary has a guard end the agent's group should the bridge be killed (see
    // `child::guard`); inside someone else's process there is no binary to start.
    let guard = match long_writes {
        LongWrites::Blocking { .. } => std::env::current_exe()
            .ok()
            .and_then(|exe| child::guard::Guard::start(&exe, pgid, cfg.shutdown_grace)),
        LongWrites::Async => None,
    };
    let tail = StderrTail::default();
    let stderr_task = tokio::spawn(child::pump_stderr(agent_err, tail.clone()));

    let (client_frames_tx, mut client_frames) = mpsc::channel(CHANNEL_CAPACITY);
    let (agent_frames_tx, mut agent_frames) = mpsc::channel(CHANNEL_CAPACITY);
    let (hup_tx, hup_rx) = tokio::sync::oneshot::channel();
    let mut hup_rx = Some(hup_rx);
    let client_reader = tokio::spawn(read_frames(
        client_in,
        cfg.max_line_bytes,
        client_frames_tx,
        "client",
        hup_probe.map(|fd| (fd, hup_tx)),
    ));
    tokio::spawn(read_frames(
        agent_out,
        cfg.max_line_bytes,
        agent_frames_tx,
        "agent",
        None,
    ));
    let (to_client_tx, to_client_rx) = mpsc::channel(CHANNEL_CAPACITY);
    let (to_agent_tx, to_agent_rx) = mpsc::channel(CHANNEL_CAPACITY);
    let agent_progress = Arc::new(AtomicU64::new(0));
    let (stdin_closed_tx, stdin_closed_rx) = tokio::sync::oneshot::channel();
    let mut stdin_closed_rx = Some(stdin_closed_rx);
    let (client_bulk, agent_bulk) = match long_writes {
        LongWrites::Blocking { client } => (client, Bulk::of(&agent_in)),
        LongWrites::Async => (None, None),
    };
    let client_writer = tokio::spawn(write_lines(
        client_out,
        to_client_rx,
        "client",
        None,
        client_bulk,
    ));
    let agent_input = AgentInput {
        taken: agent_progress.clone(),
        closed: stdin_closed_tx,
        probe: {
            use std::os::fd::AsFd;
            agent_in.as_fd().try_clone_to_owned().ok()
        },
    };
    tokio::spawn(write_lines(
        agent_in,
        to_agent_rx,
        "agent",
        Some(agent_input),
        agent_bulk,
    ));
    // The client's EOF was read; the shutdown's grace starts once the agent's stdin is
    // actually closed (after the input still queued for it).
    let mut awaiting_close = false;
    // Set when the client hung up while its input was held back: (when to check, the
    // agent's progress then).
    let mut stall_check: Option<(Instant, u64)> = None;
    let mut to_client = Some(to_client_tx);
    let mut to_agent = Some(to_agent_tx);

    let mut sigs = Signals::new().map_err(RunError::Signals)?;
    let mut router = Router::new(RouterConfig {
        events: cfg.router.events || observers.any(),
        hold_unsupported: cfg.router.hold_unsupported || control.is_some(),
        ..cfg.router.clone()
    });
    let mut outbox = Outbox::default();
    let mut client_open = true;
    let mut agent_open = true;
    let mut status: Option<std::process::ExitStatus> = None;
    let mut drain_deadline: Option<Instant> = None;
    let mut shutdown: Option<Shutdown> = None;
    let grace = cfg.shutdown_grace;

    let start_shutdown = |shutdown: &mut Option<Shutdown>, reason: QuitReason| {
        if shutdown.is_none() {
            let now = Instant::now();
            tracing::info!(
                ?reason,
                grace_ms = grace.as_millis() as u64,
                "shutting down"
            );
            *shutdown = Some(Shutdown {
                reason,
                term_at: now + grace,
                kill_at: now + grace * 2,
                termed: false,
                killed: false,
            });
        }
    };

    loop {
        observers.publish(&mut outbox.events);
        flush_ready(&mut outbox, &mut to_client, &mut to_agent);
        if status.is_some() && (!agent_open || drain_deadline.is_some_and(|d| Instant::now() >= d))
        {
            break;
        }
        let deadline = [
            router.next_deadline(),
            shutdown.as_ref().and_then(|s| match (s.termed, s.killed) {
                (false, _) => Some(s.term_at),
                (true, false) => Some(s.kill_at),
                _ => None,
            }),
            drain_deadline,
            stall_check.map(|(at, _)| at),
        ]
        .into_iter()
        .flatten()
        .min();
        // A side is read while what it feeds has drained; the bridge's own replies back to
        // it may pile up to REPLY_BACKLOG (they are small) before it is paused too. (Counting
        // forwarded lines there would deadlock a client that writes before it reads.)
        let read_agent =
            agent_open && outbox.to_client.is_empty() && outbox.made_for_agent < REPLY_BACKLOG;
        let read_client = client_open
            && status.is_none()
            && outbox.to_agent.is_empty()
            && outbox.made_for_client < REPLY_BACKLOG;
        let mut lost_output = [false; 2];
        tokio::select! {
            biased;
            // Cancel-safe: `Signals::recv` only polls tokio signal streams.
            sig = sigs.recv() => {
                let now = Instant::now();
                tracing::info!(signal = %sig, "received signal; forwarding to agent");
                if shutdown.is_some() {
                    // A second signal: stop waiting.
                    child::signal_group(pgid, Signal::SIGKILL);
                    if let Some(s) = shutdown.as_mut() { s.termed = true; s.killed = true; }
                } else {
                    child::signal_group(pgid, sig);
                    router.on_client_eof(now, &mut outbox);
                    start_shutdown(&mut shutdown, QuitReason::Signal(sig as i32));
                }
            }
            // Cancel-safe: `reserve` holds no message; dropping it loses nothing.
            permit = reserve(&to_client), if !outbox.to_client.is_empty() => match permit {
                Ok(permit) => permit.send(outbox.take_client()),
                Err(_) => lost_output[0] = true,
            },
            permit = reserve(&to_agent), if !outbox.to_agent.is_empty() => match permit {
                Ok(permit) => permit.send(outbox.take_agent()),
                Err(_) => lost_output[1] = true,
            },
            // Cancel-safe: a sleep can be re-created.
            _ = sleep_until_opt(deadline), if deadline.is_some() => {
                let now = Instant::now();
                router.on_timer(now, &mut outbox);
                if let Some((_, mark)) = stall_check.filter(|(at, _)| now >= *at) {
                    let progress = agent_progress.load(Ordering::Relaxed);
                    if progress == mark && (client_open || awaiting_close) {
                        tracing::warn!(
                            "the client hung up and the agent has read none of its input for the grace period; shutting down"
                        );
                        awaiting_close = false;
                        start_shutdown(&mut shutdown, QuitReason::ClientEof);
                        if let Some(s) = shutdown.as_mut() {
                            // The grace has already passed: SIGTERM now, SIGKILL after one more.
                            s.term_at = now;
                            s.kill_at = now + grace;
                        }
                        stall_check = None;
                    } else {
                        stall_check =
                            (client_open || awaiting_close).then_some((now + grace, progress));
                    }
                }
                if let Some(s) = shutdown.as_mut() {
                    if !s.termed && now >= s.term_at {
                        tracing::warn!("agent still running after the grace period; sending SIGTERM");
                        child::signal_group(pgid, Signal::SIGTERM);
                        s.termed = true;
                    } else if s.termed && !s.killed && now >= s.kill_at {
                        tracing::warn!("agent still running after SIGTERM; sending SIGKILL");
                        child::signal_group(pgid, Signal::SIGKILL);
                        s.killed = true;
                    }
                }
            }
            // Cancel-safe per tokio docs (`Child::wait`).
            st = child.wait(), if status.is_none() => {
                let st = st.unwrap_or_else(|e| {
                    tracing::error!(error = %e, "cannot wait for agent");
                    std::os::unix::process::ExitStatusExt::from_raw(1 << 8)
                });
                tracing::info!(status = %st, "agent exited");
                // Leftovers of the agent's group could hold its stdout open: end them.
                child::signal_group(pgid, Signal::SIGKILL);
                status = Some(st);
                drain_deadline = Some(Instant::now() + grace.max(Duration::from_millis(100)));
            }
            // Cancel-safe: `mpsc::Receiver::recv`.
            call = recv_call(&mut control), if control.is_some() => match call {
                Some(call) => on_call(call, &mut router, &mut outbox, pgid, started),
                None => control = None,
            },
            // Cancel-safe: `mpsc::Receiver::recv`.
            batch = agent_frames.recv(), if read_agent => match batch {
                Some(batch) => router.on_batch(Side::Agent, batch, Instant::now(), &mut outbox),
                None => {
                    agent_open = false;
                    if status.is_none() {
                        tracing::info!("agent closed its stdout");
                        outbox.to_agent.push_back(Out::Close);
                        start_shutdown(&mut shutdown, QuitReason::AgentExited);
                    }
                }
            },
            // Cancel-safe: a oneshot receiver polled by reference.
            _ = async { stdin_closed_rx.as_mut().expect("guarded").await }, if stdin_closed_rx.is_some() => {
                stdin_closed_rx = None;
                if awaiting_close {
                    awaiting_close = false;
                    stall_check = None;
                    tracing::debug!("agent stdin closed after the client's input");
                    start_shutdown(&mut shutdown, QuitReason::ClientEof);
                }
            }
            // Cancel-safe: a oneshot receiver polled by reference.
            hup = async { hup_rx.as_mut().expect("guarded").await }, if hup_rx.is_some() && client_open => {
                hup_rx = None;
                if hup.is_ok() {
                    tracing::info!("the client hung up while its input waits for the agent");
                    stall_check = Some((Instant::now() + grace, agent_progress.load(Ordering::Relaxed)));
                }
            }
            batch = client_frames.recv(), if read_client => match batch {
                Some(batch) => router.on_batch(Side::Client, batch, Instant::now(), &mut outbox),
                None => {
                    tracing::info!("client closed stdin");
                    client_open = false;
                    router.on_client_eof(Instant::now(), &mut outbox);
                    if shutdown.is_none() {
                        awaiting_close = true;
                        stall_check = Some((
                            Instant::now() + grace,
                            agent_progress.load(Ordering::Relaxed),
                        ));
                    }
                }
            },
        }
        if lost_output[0] {
            writer_gone(outbox.take_client(), &mut to_client, "client");
        }
        if lost_output[1] {
            writer_gone(outbox.take_agent(), &mut to_agent, "agent");
        }
    }

    // The agent is gone: wait briefly for the end of its stderr so the tail is complete.
    let _ = tokio::time::timeout(Duration::from_millis(500), stderr_task).await;
    let status = status.unwrap_or_default();
    let exit = exit_of(status, tail.text());
    router.on_agent_gone(&exit, &mut outbox);
    observers.publish(&mut outbox.events);
    client_reader.abort();
    drop(to_agent);

    // Deliver what is left for the client, bounded by the grace period.
    let flush = async {
        let rest: Vec<Out> = outbox.take_client();
        if let Some(tx) = to_client.take() {
            if !rest.is_empty() {
                let _ = tx.send(rest).await;
            }
        }
        let _ = client_writer.await;
    };
    if tokio::time::timeout(grace.max(Duration::from_secs(1)), flush)
        .await
        .is_err()
    {
        tracing::warn!("client is not reading; giving up on the last messages");
    }

    // Leftovers of the agent's group were sent SIGKILL when it exited: make sure they are
    // gone before we are.
    let gone = child::wait_group_gone(pgid, Duration::from_millis(500)).await;
    // With the group gone, the guard goes without signalling; else, once we exit, it ends
    // what is left.
    if let (true, Some(guard)) = (gone, guard) {
        guard.release();
    }
    let reason = shutdown.map_or((QuitReason::AgentExited, false), |s| (s.reason, s.termed));
    let code = exit_code(&reason, &exit);
    tracing::info!(code, "bridge exiting");
    // Stopped last, once subscribers have been handed the final events (withdrawn
    // questions).
    if let Some(c) = &control {
        c.stop(Duration::from_secs(1)).await;
    }
    if let Some(j) = observers.journal {
        j.record("bridge_stopped", serde_json::json!({ "exitCode": code }));
        j.close();
    }
    Ok(code)
}

/// Who sees question lifecycle events: control-server subscribers, the journal, the
/// `--on-question` notifier.
struct Observers {
    events: Option<tokio::sync::broadcast::Sender<Arc<serde_json::Value>>>,
    journal: Option<Journal>,
    notifier: Option<Notifier>,
}

impl Observers {
    fn any(&self) -> bool {
        self.events.is_some() || self.journal.is_some() || self.notifier.is_some()
    }

    /// Hands out (and clears) the router's events, in order. Never waits.
    fn publish(&self, events: &mut Vec<Event>) {
        for e in events.drain(..) {
            if let Some(j) = &self.journal {
                j.event(&e);
            }
            if let (Some(n), Event::Requested { question }) = (&self.notifier, &e) {
                if let Ok(q) = serde_json::to_value(question) {
                    n.question(&q);
                }
            }
            if let Some(tx) = &self.events {
                if tx.receiver_count() > 0 {
                    if let Ok(v) = serde_json::to_value(&e) {
                        let _ = tx.send(Arc::new(v));
                    }
                }
            }
        }
    }
}

async fn recv_call(control: &mut Option<Control>) -> Option<Call> {
    match control {
        Some(c) => c.calls.recv().await,
        None => std::future::pending().await,
    }
}

/// Runs one control-server call against the router.
fn on_call(call: Call, router: &mut Router, outbox: &mut Outbox, pid: u32, started: Instant) {
    // A caller that went away (timeout, closed connection) just misses its reply.
    match call {
        Call::List(reply) => {
            let _ = reply.send(router.question_views());
        }
        Call::Answer {
            session_id,
            question_id,
            answers,
            reply,
        } => {
            let r = router.control_answer(&session_id, &question_id, &answers, outbox);
            let _ = reply.send(r);
        }
        Call::Reject {
            session_id,
            question_id,
            reason,
            reply,
        } => {
            let r = router.control_reject(&session_id, &question_id, reason.as_deref(), outbox);
            let _ = reply.send(r);
        }
        Call::Status(reply) => {
            let mut v = router.status();
            v["agentPid"] = pid.into();
            v["uptimeMs"] = (started.elapsed().as_millis() as u64).into();
            v["version"] = env!("CARGO_PKG_VERSION").into();
            let _ = reply.send(v);
        }
    }
}

fn exit_of(status: std::process::ExitStatus, stderr_tail: String) -> AgentExit {
    use std::os::unix::process::ExitStatusExt;
    AgentExit {
        code: status.code(),
        signal: status.signal(),
        stderr_tail,
    }
}

/// The bridge's exit code, from why it stopped and how the agent ended.
///
/// - signal N to the bridge: 128+N;
/// - client EOF: 0 when the bridge had to terminate the agent, else the agent's own code;
/// - the agent exited on its own: its code, or 128+N when killed by signal N.
fn exit_code(reason: &(QuitReason, bool), exit: &AgentExit) -> i32 {
    let agent_code = exit.code.unwrap_or_else(|| 128 + exit.signal.unwrap_or(0));
    match reason {
        (QuitReason::Signal(n), _) => 128 + n,
        (QuitReason::ClientEof, true) => 0,
        _ => agent_code,
    }
}

/// Moves everything queued for each writer into its channel as one batch, when the channel
/// has room (no await).
fn flush_ready(
    outbox: &mut Outbox,
    to_client: &mut Option<mpsc::Sender<Vec<Out>>>,
    to_agent: &mut Option<mpsc::Sender<Vec<Out>>>,
) {
    for (client, tx, name) in [(true, to_client, "client"), (false, to_agent, "agent")] {
        let queue = if client {
            &outbox.to_client
        } else {
            &outbox.to_agent
        };
        if queue.is_empty() {
            continue;
        }
        let take = |outbox: &mut Outbox| {
            if client {
                outbox.take_client()
            } else {
                outbox.take_agent()
            }
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
            writer_gone(take(outbox), tx, name);
        }
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

/// Reads `input` and sends, per read, the batch of lines it completed into `tx`: one shared
/// chunk per read, each line already scanned, until EOF, a read error, or the loop going
/// away. With `hup`, while a batch waits for room it also watches the input's file
/// descriptor and reports once that the peer hung up (its unread data stays where it is).
///
/// Where the scan runs: a chunk of a few lines (a message or two: the interactive case; or a
/// few long lines) is scanned here, so it reaches the loop with no thread to wake. A chunk of
/// many lines (a full read: the input is streaming) goes to this input's scan thread, so
/// scanning one read overlaps with reading the next and with the loop and writer, on the
/// other core (the runtime's tasks otherwise run one after another on one worker). Order is
/// kept: while the scan thread holds chunks, every chunk goes through it.
async fn read_frames<R: AsyncRead + Unpin>(
    mut input: R,
    max_line: usize,
    tx: mpsc::Sender<Batch>,
    name: &'static str,
    mut hup: Hup,
) {
    let budget = Budget::new(IN_FLIGHT_BYTES);
    let mut codec = LineCodec::new(max_line);
    let mut buf = BytesMut::with_capacity(READ_BUFFER);
    let mut pieces = Vec::new();
    // Started at the first long chunk.
    let mut scanner: Option<ScanThread> = None;
    // The reader's own (the scan thread has one too: each skeleton is only a cache).
    let mut memo = Memo::default();
    loop {
        if buf.capacity() - buf.len() < READ_BUFFER / 4 {
            buf.reserve(READ_BUFFER);
        }
        let n = match input.read_buf(&mut buf).await {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(input = name, error = %e, "read error; treating as end of input");
                0
            }
        };
        let eof = n == 0;
        let data = codec.decode_chunk(&mut buf, n, eof, &mut pieces);
        if !pieces.is_empty() {
            let data = budget.hold(data, &mut hup).await;
            let many = pieces.len() >= SCAN_THREAD_LINES;
            if many && scanner.is_none() {
                scanner = ScanThread::start(tx.clone(), name);
            }
            let sent = match scanner.as_ref().filter(|s| many || s.busy()) {
                Some(scanner) => {
                    scanner.in_flight.fetch_add(1, Ordering::Relaxed);
                    send_batch(&scanner.tx, (data, std::mem::take(&mut pieces)), &mut hup).await
                }
                None => {
                    let batch = Batch::scan(data, &pieces, &mut memo);
                    pieces.clear();
                    send_batch(&tx, batch, &mut hup).await
                }
            };
            if !sent {
                return;
            }
        }
        if eof {
            return;
        }
    }
}

/// A chunk of at least this many lines is scanned on the input's scan thread (see
/// [`read_frames`]). The scan's cost is mostly per line: a chunk of a few long lines costs
/// less to scan than to hand over (more buffers in flight, more page faults).
const SCAN_THREAD_LINES: usize = 32;

/// An input's scan thread: scans the chunks it is given, in order, and sends the batches to
/// the loop. It ends when the reader drops its sender or the loop goes away.
struct ScanThread {
    tx: mpsc::Sender<(Bytes, Vec<crate::codec::Piece>)>,
    /// Chunks given to the thread and not yet sent on to the loop.
    in_flight: Arc<AtomicUsize>,
}

impl ScanThread {
    /// `None` when the thread cannot be started (the reader then scans everything itself).
    fn start(out: mpsc::Sender<Batch>, name: &'static str) -> Option<Self> {
        // One chunk waiting plus the one being scanned: the memory bound grows by two reads.
        let (tx, mut rx) = mpsc::channel::<(Bytes, Vec<crate::codec::Piece>)>(1);
        let in_flight = Arc::new(AtomicUsize::new(0));
        let done = in_flight.clone();
        let started = std::thread::Builder::new()
            .name(format!("scan-{name}"))
            .spawn(move || {
                let mut memo = Memo::default();
                while let Some((data, pieces)) = rx.blocking_recv() {
                    if out
                        .blocking_send(Batch::scan(data, &pieces, &mut memo))
                        .is_err()
                    {
                        return;
                    }
                    // After the send: a reader that sees 0 sends after this batch.
                    done.fetch_sub(1, Ordering::Release);
                }
            });
        match started {
            Ok(_) => {
                tracing::debug!(input = name, "streaming: scanning on a scan thread");
                Some(Self { tx, in_flight })
            }
            Err(e) => {
                tracing::warn!(input = name, error = %e, "cannot start a scan thread; scanning on the reader");
                None
            }
        }
    }

    fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }
}

/// Sends `batch`, watching for a hang-up of the input while it waits (see [`read_frames`]).
/// False when the loop is gone.
async fn send_batch<T>(tx: &mpsc::Sender<T>, batch: T, hup: &mut Hup) -> bool {
    // Cancel-safe: `reserve` holds no message.
    match watching_hup(tx.reserve(), hup).await {
        Ok(permit) => {
            permit.send(batch);
            true
        }
        Err(_) => false,
    }
}

/// An input's file descriptor to watch for a hang-up, and where to report it once.
type Hup = Option<(std::os::fd::OwnedFd, tokio::sync::oneshot::Sender<()>)>;

/// Awaits `wait`, and meanwhile, with `hup`, checks every [`HUP_POLL`] whether the input's
/// peer hung up, reporting it once (its unread data stays where it is).
async fn watching_hup<F: std::future::Future>(wait: F, hup: &mut Hup) -> F::Output {
    tokio::pin!(wait);
    loop {
        tokio::select! {
            out = &mut wait => return out,
            _ = tokio::time::sleep(HUP_POLL), if hup.is_some() => {
                if hup.as_ref().is_some_and(|(fd, _)| peer_gone(fd)) {
                    if let Some((_, report)) = hup.take() {
                        let _ = report.send(());
                    }
                }
            }
        }
    }
}

/// How many bytes of one input's lines may be between their read and their write (or
/// drop).
///
/// The channels bound the number of batches in flight, not their size: with 2 MiB image
/// lines, a 256 KiB agent pipe and every queue full (the output is the slower side), the
/// bridge held ~11 such lines, 26-35 MiB of RSS. So each chunk a reader sends holds its
/// share of this budget until the last piece of it is dropped (written, or not forwarded),
/// and the reader waits for room before it sends more. 4 MiB lets one 2 MiB line be
/// written while the next is read and scanned (measured on the mixed benchmark: 2 MiB
/// serialises them, ratio ~1.6; 4 MiB ~1.2 at 19-23 MiB RSS; 8 MiB no faster at 25-28 MiB).
/// A line longer than the whole budget waits until nothing else is in flight.
pub const IN_FLIGHT_BYTES: usize = 4 << 20;

/// The in-flight budget of one input (see [`IN_FLIGHT_BYTES`]), counted in KiB.
struct Budget {
    room: Arc<tokio::sync::Semaphore>,
    /// The whole budget, in units.
    units: usize,
}

impl Budget {
    const UNIT: usize = 1024;

    fn new(bytes: usize) -> Self {
        let units = (bytes / Self::UNIT).clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
        Self {
            room: Arc::new(tokio::sync::Semaphore::new(units)),
            units,
        }
    }

    /// Waits until `chunk` fits (a chunk bigger than the whole budget waits for all of it),
    /// then returns it holding its share until its last piece is dropped.
    async fn hold(&self, chunk: Bytes, hup: &mut Hup) -> Bytes {
        let units = chunk.len().div_ceil(Self::UNIT).clamp(1, self.units);
        let units = u32::try_from(units).unwrap_or(u32::MAX);
        match watching_hup(self.room.clone().acquire_many_owned(units), hup).await {
            Ok(permit) => Bytes::from_owner(Held {
                chunk,
                _permit: permit,
            }),
            // Never closed; were it, the chunk would only go uncounted.
            Err(_) => chunk,
        }
    }
}

/// A chunk and its share of the budget (returned when the chunk's last piece is dropped).
struct Held {
    chunk: Bytes,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.chunk
    }
}

/// Whether the other end of a pipe or socket is closed: the writer of a read end (whose
/// data may still be unread), the reader of a write end.
fn peer_gone(fd: &std::os::fd::OwnedFd) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::empty())];
    matches!(poll(&mut fds, PollTimeout::ZERO), Ok(n) if n > 0)
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR))
}

/// Writes batches of lines from `rx` to `output`, flushing whenever the queue runs empty.
///
/// Lines are gathered into one buffer and written with one call per buffer (a `write_all`
/// per line costs more than the copy); a line as long as the buffer, and a run of 16 KiB or
/// more, is written straight from its own bytes, so nothing is copied more than once.
///
/// The agent's stdin is written with an [`AgentInput`]: see there.
async fn write_lines<W: AsyncWrite + Unpin>(
    output: W,
    mut rx: mpsc::Receiver<Vec<Out>>,
    name: &'static str,
    agent: Option<AgentInput>,
    bulk: Option<Bulk>,
) {
    let taken = agent.as_ref().map(|a| a.taken.clone());
    let mut output = Counted {
        inner: output,
        count: taken.clone(),
    };
    let bulk = bulk.map(|b| b.counting(taken.clone()));
    let mut buf: Vec<u8> = Vec::with_capacity(WRITE_BUFFER);
    let result: std::io::Result<()> = async {
        while let Some(mut batch) = rx.recv().await {
            loop {
                for msg in batch {
                    match msg {
                        Out::Line(line) => {
                            if buf.len() + line.len() >= WRITE_BUFFER && !buf.is_empty() {
                                output.write_all(&buf).await?;
                                buf.clear();
                            }
                            if line.len() >= WRITE_BUFFER {
                                write_big(&mut output, line, bulk.as_ref()).await?;
                            } else {
                                buf.extend_from_slice(&line);
                            }
                            buf.push(b'\n');
                        }
                        Out::Run(run) => {
                            // Lines forwarded as read: long runs (a read's worth, the
                            // common case under load) go out from the read's own buffer.
                            let long = run.len() >= WRITE_BUFFER / 4;
                            if (long || buf.len() + run.len() > WRITE_BUFFER) && !buf.is_empty() {
                                output.write_all(&buf).await?;
                                buf.clear();
                            }
                            if long {
                                write_big(&mut output, run, bulk.as_ref()).await?;
                            } else {
                                buf.extend_from_slice(&run);
                            }
                        }
                        Out::Close => {
                            output.write_all(&buf).await?;
                            output.flush().await?;
                            if let Some(AgentInput {
                                probe: Some(probe),
                                taken,
                                ..
                            }) = &agent
                            {
                                wait_drained(probe, taken).await;
                            }
                            return output.shutdown().await;
                        }
                    }
                }
                match rx.try_recv() {
                    Ok(next) => batch = next,
                    Err(_) => break,
                }
            }
            output.write_all(&buf).await?;
            buf.clear();
            output.flush().await?;
        }
        output.write_all(&buf).await?;
        output.flush().await?;
        output.shutdown().await
    }
    .await;
    // Every handle on the output is closed before the agent is said to have its EOF.
    drop((output, bulk));
    match result {
        Ok(()) => tracing::debug!(output = name, "output closed"),
        Err(e) => tracing::warn!(output = name, error = %e, "write failed; output closed"),
    }
    if let Some(agent) = agent {
        drop(agent.probe);
        let _ = agent.closed.send(());
    }
}

/// What the writer of the agent's stdin reports to the loop's stall watchdog.
///
/// Progress is what the agent took off its stdin: every byte the pipe accepts (a partial
/// write counts), and, once the last input is written, what the agent reads of what is
/// still in the pipe. The pipe is closed only when the agent has read it all (it sees EOF
/// only then anyway), so the shutdown's grace starts once the agent has its whole input.
struct AgentInput {
    taken: Arc<AtomicU64>,
    /// Told once the agent's stdin is closed.
    closed: tokio::sync::oneshot::Sender<()>,
    /// A second handle on the pipe, to see how much of it is unread.
    probe: Option<std::os::fd::OwnedFd>,
}

/// How often the writer looks at what the agent has left unread in its stdin pipe.
const DRAIN_POLL: Duration = Duration::from_millis(10);

/// Waits until the agent has read all that is in its stdin pipe, adding what it reads to
/// `taken`; returns at once when the agent's end is closed or the pipe cannot be asked.
async fn wait_drained(pipe: &std::os::fd::OwnedFd, taken: &AtomicU64) {
    let mut last: Option<u64> = None;
    loop {
        let Ok(unread) = rustix::io::ioctl_fionread(pipe) else {
            return;
        };
        if unread == 0 || peer_gone(pipe) {
            return;
        }
        if let Some(read) = last.and_then(|l| l.checked_sub(unread)) {
            taken.fetch_add(read, Ordering::Relaxed);
        }
        last = Some(unread);
        tokio::time::sleep(DRAIN_POLL).await;
    }
}

/// An output that counts the bytes it accepts (see [`write_lines`]).
struct Counted<W> {
    inner: W,
    count: Option<Arc<AtomicU64>>,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Counted<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if let (std::task::Poll::Ready(Ok(n)), Some(count)) = (&polled, &self.count) {
            count.fetch_add(*n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Writes `data`, which is long: with a [`Bulk`] handle and at least [`BULK_BYTES`], from a
/// blocking-pool thread in blocking writes; else like any write.
async fn write_big<W: AsyncWrite + Unpin>(
    output: &mut W,
    data: Bytes,
    bulk: Option<&Bulk>,
) -> std::io::Result<()> {
    match bulk {
        Some(bulk) if data.len() >= BULK_BYTES => bulk.write(data).await,
        _ => output.write_all(&data).await,
    }
}

/// A piece this long goes out through [`Bulk`].
const BULK_BYTES: usize = 256 * 1024;
/// The most one blocking write of [`Bulk`] hands the kernel at once, so that the bytes an
/// agent takes are counted while a long piece goes out (a blocking pipe write returns only
/// when all it was given is in the pipe).
const BULK_STEP: usize = 64 * 1024;

/// A second handle on an output pipe, for long writes (a 0.2-2 MiB image line): blocking
/// `write`s from a blocking-pool thread, which the kernel wakes each time the reader makes
/// room, instead of a non-blocking write per pipe-full, each followed by a trip through the
/// runtime's poller and scheduler. The writer task waits for it, so its output's order is
/// kept; the pipe is put back in non-blocking mode before the next write of the task's own.
struct Bulk {
    file: Arc<std::fs::File>,
    /// Where the bytes written are counted, as they are written.
    count: Option<Arc<AtomicU64>>,
}

impl Bulk {
    /// A handle on `pipe`'s file descriptor; `None` when it cannot be had, or when the
    /// descriptor is open for reading too (stdin and stdout one FIFO opened read-write,
    /// `<>fifo`): blocking mode is a property of the open file, and the reader on it must
    /// never block a runtime worker.
    fn of(pipe: &impl std::os::fd::AsFd) -> Option<Self> {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let mode = fcntl(pipe.as_fd(), FcntlArg::F_GETFL).map(OFlag::from_bits_truncate);
        if !mode.is_ok_and(|m| m & OFlag::O_ACCMODE == OFlag::O_WRONLY) {
            tracing::debug!(
                "output not a write-only descriptor; long lines are written like short ones"
            );
            return None;
        }
        match pipe.as_fd().try_clone_to_owned() {
            Ok(fd) => Some(Self {
                file: Arc::new(std::fs::File::from(fd)),
                count: None,
            }),
            Err(e) => {
                tracing::debug!(error = %e, "no second handle on an output; long lines are written like short ones");
                None
            }
        }
    }

    fn counting(self, count: Option<Arc<AtomicU64>>) -> Self {
        Self { count, ..self }
    }

    async fn write(&self, data: Bytes) -> std::io::Result<()> {
        let file = self.file.clone();
        let count = self.count.clone();
        let wrote = tokio::task::spawn_blocking(move || {
            use std::io::Write as _;
            let blocking = Blocking::set(&file)?;
            for step in data.chunks(BULK_STEP) {
                (&*blocking.0).write_all(step)?;
                if let Some(count) = &count {
                    count.fetch_add(step.len() as u64, Ordering::Relaxed);
                }
            }
            blocking.restore()
        })
        .await;
        wrote.unwrap_or_else(|e| Err(std::io::Error::other(e)))
    }
}

/// A file switched to blocking mode, switched back when dropped, on every path (an error
/// of the write included); [`Blocking::restore`] does it and reports a failure.
struct Blocking<'a>(&'a std::fs::File, nix::fcntl::OFlag);

impl<'a> Blocking<'a> {
    fn set(file: &'a std::fs::File) -> std::io::Result<Self> {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let flags = OFlag::from_bits_truncate(fcntl(file, FcntlArg::F_GETFL)?);
        fcntl(file, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK))?;
        Ok(Self(file, flags))
    }

    fn restore(self) -> std::io::Result<()> {
        let this = std::mem::ManuallyDrop::new(self);
        Self::put_back(this.0, this.1)
    }

    fn put_back(file: &std::fs::File, flags: nix::fcntl::OFlag) -> std::io::Result<()> {
        use nix::fcntl::{fcntl, FcntlArg};
        fcntl(file, FcntlArg::F_SETFL(flags))
            .map(drop)
            .map_err(std::io::Error::from)
    }
}

impl Drop for Blocking<'_> {
    fn drop(&mut self) {
        if let Err(e) = Self::put_back(self.0, self.1) {
            tracing::warn!(error = %e, "cannot put an output pipe back in non-blocking mode");
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP as one stream.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(code: Option<i32>, signal: Option<i32>) -> AgentExit {
        AgentExit {
            code,
            signal,
            stderr_tail: String::new(),
        }
    }

    const WAIT: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn a_chunk_holds_its_share_of_the_budget_until_its_last_piece_is_dropped() {
        let budget = Budget::new(4 * Budget::UNIT);
        let mut hup = None;
        let first =
            tokio::time::timeout(WAIT, budget.hold(Bytes::from(vec![b'a'; 3000]), &mut hup))
                .await
                .expect("3 of 4 KiB fit");
        assert_eq!(&first[..], &[b'a'; 3000][..]);
        let piece = first.slice(10..20);
        drop(first);
        // One unit is left: 1,025 bytes need two.
        let mut hup2 = None;
        let second = budget.hold(Bytes::from(vec![b'b'; 1025]), &mut hup2);
        tokio::pin!(second);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut second)
                .await
                .is_err(),
            "a piece of the first chunk still holds its share"
        );
        drop(piece);
        let second = tokio::time::timeout(WAIT, second)
            .await
            .expect("room again");
        assert_eq!(second.len(), 1025);
        // An empty chunk (a dropped over-long line) still counts one unit.
        let empty = tokio::time::timeout(WAIT, budget.hold(Bytes::new(), &mut hup))
            .await
            .expect("one unit left");
        assert!(empty.is_empty());
        assert_eq!(budget.room.available_permits(), 1);
    }

    #[tokio::test]
    async fn a_chunk_bigger_than_the_budget_waits_until_nothing_else_is_in_flight() {
        let budget = Budget::new(4 * Budget::UNIT);
        let mut hup = None;
        let small = tokio::time::timeout(WAIT, budget.hold(Bytes::from_static(b"x"), &mut hup))
            .await
            .unwrap();
        let big = budget.hold(Bytes::from(vec![b'b'; 64 * 1024]), &mut hup);
        tokio::pin!(big);
        assert!(tokio::time::timeout(Duration::from_millis(50), &mut big)
            .await
            .is_err());
        drop(small);
        let big = tokio::time::timeout(WAIT, big)
            .await
            .expect("the whole budget");
        assert_eq!(big.len(), 64 * 1024);
        assert_eq!(budget.room.available_permits(), 0);
        drop(big);
        assert_eq!(budget.room.available_permits(), 4);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_bulk_write_is_whole_and_leaves_the_pipe_non_blocking() {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        use std::io::Read as _;
        let (rx, tx) = nix::unistd::pipe().unwrap();
        fcntl(&tx, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).unwrap();
        let count = Arc::new(AtomicU64::new(0));
        let bulk = Bulk::of(&tx)
            .expect("a second handle")
            .counting(Some(count.clone()));
        let data: Bytes = (0..3 << 20)
            .map(|i: u32| (i % 251) as u8)
            .collect::<Vec<_>>()
            .into();
        // 3 MiB through a 64 KiB pipe: the write blocks and is woken many times over.
        let reader = std::thread::spawn(move || {
            let mut rx = std::fs::File::from(rx);
            let mut got = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                match rx.read(&mut chunk) {
                    Ok(0) | Err(_) => return got,
                    Ok(n) => got.extend_from_slice(&chunk[..n]),
                }
            }
        });
        tokio::time::timeout(WAIT, bulk.write(data.clone()))
            .await
            .expect("written in time")
            .expect("written");
        let flags = OFlag::from_bits_truncate(fcntl(&tx, FcntlArg::F_GETFL).unwrap());
        assert!(flags.contains(OFlag::O_NONBLOCK));
        assert_eq!(count.load(Ordering::Relaxed), data.len() as u64);
        drop((bulk, tx));
        let got = reader.join().unwrap();
        assert!(
            got == data[..],
            "{} of {} bytes, or not in order",
            got.len(),
            data.len()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_bulk_write_leaves_the_pipe_non_blocking() {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let (rx, tx) = nix::unistd::pipe().unwrap();
        fcntl(&tx, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).unwrap();
        let bulk = Bulk::of(&tx).expect("a second handle");
        // Nobody will read: the write fails with EPIPE (the test harness ignores SIGPIPE,
        // as every Rust program does).
        drop(rx);
        let wrote = tokio::time::timeout(WAIT, bulk.write(Bytes::from(vec![b'x'; 1 << 20])))
            .await
            .expect("fails in time");
        assert!(wrote.is_err());
        let flags = OFlag::from_bits_truncate(fcntl(&tx, FcntlArg::F_GETFL).unwrap());
        assert!(
            flags.contains(OFlag::O_NONBLOCK),
            "restored after the error"
        );
    }

    #[test]
    fn exit_codes() {
        assert_eq!(
            exit_code(&(QuitReason::AgentExited, false), &exit(Some(3), None)),
            3
        );
        assert_eq!(
            exit_code(&(QuitReason::AgentExited, false), &exit(None, Some(9))),
            137
        );
        assert_eq!(
            exit_code(&(QuitReason::Signal(15), true), &exit(None, Some(15))),
            143
        );
        assert_eq!(
            exit_code(&(QuitReason::ClientEof, true), &exit(None, Some(15))),
            0
        );
        assert_eq!(
            exit_code(&(QuitReason::ClientEof, false), &exit(Some(0), None)),
            0
        );
    }
}
