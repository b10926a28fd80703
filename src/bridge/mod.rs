//! The I/O shell around the [`Router`]: tasks, channels, the child, signals, shutdown.
//!
//! Shape: one [`reader`] task per input (client stdin, agent stdout), one [`writer`] task
//! per output (client stdout, agent stdin), all joined to one [`event_loop`] that owns the
//! router; the [`shutdown`] ladder decides when the agent is signalled. This file starts
//! them and ends them.
//!
//! Invariants:
//! - Bounded memory: every channel is bounded, each input has a byte budget, and the loop
//!   reads a side only while what that side feeds has drained.
//! - Independence: a client that stops reading stdout stalls only agent->client traffic;
//!   client->agent traffic keeps flowing (and vice versa).
//! - Shutdown always ends: every wait after the agent is gone is bounded.

mod event_loop;
mod hangup;
mod observers;
mod reader;
mod shutdown;
mod writer;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use crate::child::{self, StderrTail};
use crate::control::{self, ControlConfig};
use crate::inbox::registry;
use crate::journal;
use crate::notify::Notifier;
use crate::router::{AgentExit, Out, Outbox, Router, RouterConfig};
pub use event_loop::REPLY_BACKLOG;
use event_loop::{Shell, Signals};
use observers::Observers;
use reader::read_frames;
pub use reader::IN_FLIGHT_BYTES;
use shutdown::Ladder;
pub use shutdown::QuitReason;
use writer::{write_lines, AgentInput, Bulk};

/// Batches buffered between a reader and the loop, and between the loop and a writer. A
/// batch is what one read produced (at most one read buffer of lines plus one line up to
/// `--max-line-bytes`), or what the loop queued for a writer between two sends.
pub const CHANNEL_CAPACITY: usize = 4;

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
    /// List the bridge in the per-user registry the inbox reads, while its control server
    /// runs (off with `--no-register`).
    pub register: bool,
    /// `--nats`: publish pending questions to NATS JetStream and take answers from there.
    pub nats: Option<crate::inbox::nats::NatsConfig>,
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
        Host::Binary { client_bulk: bulk },
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

/// Runs the bridge between the given client streams and a spawned agent.
pub async fn run_with<R, W>(cfg: Config, client_in: R, client_out: W) -> Result<i32, RunError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    run_inner(cfg, client_in, client_out, None, Host::Library).await
}

/// Where the bridge runs, which decides two things the library cannot do.
enum Host {
    /// `run_with`, inside someone else's runtime and process: long pieces go through the
    /// async writers (a runtime being dropped would wait for a pool thread blocked in a
    /// write), and there is no binary to start as the agent's guard.
    Library,
    /// The binary: blocking writes of long pieces to the agent's stdin, and to our stdout
    /// when it is a pipe ([`Bulk`]); and a [`child::guard`].
    Binary { client_bulk: Option<Bulk> },
}

async fn run_inner<R, W>(
    cfg: Config,
    client_in: R,
    client_out: W,
    hup_probe: Option<std::os::fd::OwnedFd>,
    host: Host,
) -> Result<i32, RunError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // Observers first, so a bad address or path fails before the agent starts.
    let control = start_control(cfg.control.as_ref()).await?;
    // Who this bridge is, for `bridges.list` and the inbox.
    let identity = match (&control, &cfg.control) {
        (Some(running), Some(c)) => Some(identity(&cfg, running.addr, &c.token)?),
        _ => None,
    };
    let registration = match &identity {
        Some(entry) if cfg.register => {
            let dir = registry::dir();
            match registry::register(&dir, entry) {
                Ok(r) => {
                    tracing::info!(dir = %dir.display(), id = %entry.id, "listed in the registry the inbox reads");
                    Some(r)
                }
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "cannot list this bridge in the registry; the inbox will not see it");
                    None
                }
            }
        }
        _ => None,
    };
    // NATS sees what the control server sees, from beside the loop (never in its way).
    let nats_stop = tokio_util::sync::CancellationToken::new();
    let nats_task = match (&cfg.nats, &control, &identity) {
        (Some(n), Some(c), Some(me)) => Some(tokio::spawn(crate::inbox::nats::publish(
            crate::inbox::nats::Publisher {
                cfg: n.clone(),
                identity: me.public(),
                calls: c.caller.clone(),
                events: c.events.subscribe(),
                stop: nats_stop.clone(),
            },
        ))),
        _ => None,
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
    let signals = Signals::new().map_err(RunError::Signals)?;
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
    // `child::guard`).
    let (client_bulk, agent_bulk, guard) = match host {
        Host::Binary { client_bulk } => (
            client_bulk,
            Bulk::of(&agent_in),
            std::env::current_exe()
                .ok()
                .and_then(|exe| child::guard::Guard::start(&exe, pgid, cfg.shutdown_grace)),
        ),
        Host::Library => (None, None, None),
    };

    let tail = StderrTail::default();
    let stderr_task = tokio::spawn(child::pump_stderr(agent_err, tail.clone()));

    let (client_frames_tx, client_frames) = mpsc::channel(CHANNEL_CAPACITY);
    let (agent_frames_tx, agent_frames) = mpsc::channel(CHANNEL_CAPACITY);
    let (hup_tx, hup_rx) = tokio::sync::oneshot::channel();
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
    let agent_taken = Arc::new(AtomicU64::new(0));
    let (stdin_closed_tx, stdin_closed_rx) = tokio::sync::oneshot::channel();
    let client_writer = tokio::spawn(write_lines(
        client_out,
        to_client_rx,
        "client",
        None,
        client_bulk,
    ));
    let agent_input = AgentInput {
        taken: agent_taken.clone(),
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

    let router = Router::new(RouterConfig {
        events: cfg.router.events || observers.any(),
        hold_unsupported: cfg.router.hold_unsupported || control.is_some(),
        // Without its token (the fragment): the chat is kept by clients, shown and shared.
        page_url: control.as_ref().map(|c| {
            let url = c.page_url.as_str();
            url.split_once('#').map_or(url, |(page, _)| page).to_owned()
        }),
        ..cfg.router.clone()
    });
    let mut shell = Shell {
        router,
        outbox: Outbox::default(),
        ladder: Ladder::new(cfg.shutdown_grace),
        child,
        pgid,
        signals,
        control,
        identity,
        observers,
        started,
        client_frames,
        agent_frames,
        to_client: Some(to_client_tx),
        to_agent: Some(to_agent_tx),
        hup: Some(hup_rx),
        stdin_closed: Some(stdin_closed_rx),
        agent_taken,
        client_open: true,
        agent_open: true,
        status: None,
    };
    shell.run().await;

    // The agent is gone: wait briefly for the end of its stderr so the tail is complete.
    let _ = tokio::time::timeout(Duration::from_millis(500), stderr_task).await;
    let grace = cfg.shutdown_grace;
    let Shell {
        mut router,
        mut outbox,
        ladder,
        control,
        observers,
        to_client,
        to_agent,
        status,
        ..
    } = shell;
    let exit = exit_of(status.unwrap_or_default(), tail.text());
    router.on_agent_gone(&exit, &mut outbox);
    observers.publish(&mut outbox.events);
    client_reader.abort();
    drop(to_agent);

    // Deliver what is left for the client, bounded by the grace period.
    let flush = async {
        let rest: Vec<Out> = outbox.take_client();
        if let Some(tx) = to_client {
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
    // gone before we are. With the group gone, the guard goes without signalling; else,
    // once we exit, it ends what is left.
    let gone = child::wait_group_gone(pgid, Duration::from_millis(500)).await;
    if let (true, Some(guard)) = (gone, guard) {
        guard.release();
    }
    let code = exit_code(&ladder.outcome(), &exit);
    tracing::info!(code, "bridge exiting");
    // NATS is told this bridge's questions are gone (bounded: NATS may be down).
    nats_stop.cancel();
    if let Some(t) = nats_task {
        let _ = tokio::time::timeout(Duration::from_secs(3), t).await;
    }
    // Stopped last, once subscribers have been handed the final events (withdrawn
    // questions).
    if let Some(c) = &control {
        c.stop(Duration::from_secs(1)).await;
    }
    if let Some(j) = observers.journal {
        j.record("bridge_stopped", serde_json::json!({ "exitCode": code }));
        j.close();
    }
    drop(registration);
    Ok(code)
}

/// The control server, when configured. One started by default (no `--control`) that
/// cannot start is only a warning: the bridge then runs as with `--no-control`.
async fn start_control(
    cfg: Option<&ControlConfig>,
) -> Result<Option<control::Control>, control::ControlSetupError> {
    let Some(c) = cfg else { return Ok(None) };
    match control::start(c).await {
        Ok(running) => Ok(Some(running)),
        Err(e) if c.implicit => {
            tracing::warn!(error = %e, "no control server: questions no client can show cannot wait (pass --control ADDR to choose its address)");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// This bridge's registry entry: a fresh id, its control server, its agent.
fn identity(
    cfg: &Config,
    addr: std::net::SocketAddr,
    token: &str,
) -> Result<registry::Entry, RunError> {
    let id = control::random_token()?[..16].to_owned();
    let cwd = match &cfg.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir().unwrap_or_default(),
    };
    Ok(registry::Entry {
        id,
        url: format!("http://{addr}/"),
        token: token.to_owned(),
        pid: std::process::id(),
        agent: cfg.agent.clone(),
        cwd: cwd.display().to_string(),
        host: registry::host_name(),
        started_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
    })
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

    #[tokio::test]
    async fn a_default_control_server_that_cannot_listen_is_a_warning_an_asked_one_an_error() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let cfg = |implicit| ControlConfig {
            addr: taken.local_addr().expect("its address"),
            allow_remote: false,
            token: "t".repeat(32),
            token_file: None,
            implicit,
        };
        let default =
            tokio::time::timeout(Duration::from_secs(30), start_control(Some(&cfg(true))))
                .await
                .expect("in time");
        assert!(matches!(default, Ok(None)), "runs without it");
        let asked = tokio::time::timeout(Duration::from_secs(30), start_control(Some(&cfg(false))))
            .await
            .expect("in time");
        assert!(matches!(asked, Err(control::ControlSetupError::Bind(..))));
    }
}
