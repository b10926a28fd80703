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

mod effects;
mod event_loop;
mod hangup;
mod hold;
mod joined;
mod lingering;
mod observers;
mod reader;
mod services;
mod shutdown;
mod unstarted;
mod writer;

use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite};

use crate::child;
use crate::control::{self, ControlConfig};
use crate::policy::desk::Desk;
use crate::router::{AgentExit, Input, Outbox, Router, RouterConfig};
use effects::Effects;
pub use event_loop::REPLY_BACKLOG;
use event_loop::{Shell, Signals};
pub use reader::IN_FLIGHT_BYTES;
use services::{Agent, ClientSide, Ends, Surfaces};
use shutdown::Ladder;
pub use shutdown::QuitReason;
use writer::Widen;

/// Batches buffered between a reader and the loop, and between the loop and a writer. A
/// batch is what one read produced (at most one read buffer of lines plus one line up to
/// `--max-line-bytes`), or what the loop queued for a writer between two sends.
pub const CHANNEL_CAPACITY: usize = 4;

/// Everything the bridge needs to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub agent: Vec<String>,
    /// Variables added to the agent's environment (an `--agent` from the registry).
    pub agent_env: Vec<(String, String)>,
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
    /// `--on-question-token`: the command gets the page's token too.
    pub on_question_token: bool,
    /// `--notify-after`, `--remind-every`, `--quiet-at-desk`: when a question rings.
    pub ring: crate::ring::RingConfig,
    /// List the bridge in the per-user roster the inbox reads, while its control server
    /// runs (off with `--no-register`).
    pub register: bool,
    /// `--nats`: publish pending questions to NATS JetStream and take answers from there.
    pub nats: Option<crate::inbox::nats::NatsConfig>,
    /// `--linger`, in the holder: where fronts attach, and how long the agent waits for one.
    pub hold: Option<crate::linger::holder::HoldConfig>,
    /// `--sandbox`: the launcher that walls the agent in, if it runs inside the wall.
    pub wall: Option<crate::wall::Launch>,
    /// The wall's state, for `bridge.status`.
    pub wall_state: crate::wall::State,
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
    #[error("cannot listen for the editor's return on {0}: {1}")]
    Hold(std::path::PathBuf, std::io::Error),
}

impl RunError {
    /// The exit code for this failure: as shells say it when the agent could not be
    /// started, 126 for a file that is not executable, 127 for the rest (not found).
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Spawn(e) if e.source.kind() == std::io::ErrorKind::PermissionDenied => 126,
            RunError::Spawn(_) => 127,
            RunError::Signals(_)
            | RunError::Control(_)
            | RunError::Journal(..)
            | RunError::Hold(..) => 1,
        }
    }
}

/// Runs the bridge on the process's stdin/stdout. Returns the exit code.
pub async fn run(cfg: Config) -> Result<i32, RunError> {
    let (input, output, widen) = client_stdio();
    // A second handle on stdin, only to see the client hang up while its input waits.
    let probe = {
        use std::os::fd::AsFd;
        std::io::stdin().as_fd().try_clone_to_owned().ok()
    };
    let client = ClientSide {
        input,
        output,
        probe,
        widen,
    };
    run_inner(cfg, Some(client), Host::Binary).await
}

/// Runs the bridge as a holder (`--linger`): no client at first; fronts attach over the
/// socket of `cfg.hold`. Returns the exit code.
pub async fn run_held(cfg: Config) -> Result<i32, RunError> {
    run_inner::<ClientIn, ClientOut>(cfg, None, Host::Binary).await
}

pub(super) type ClientIn = Box<dyn AsyncRead + Unpin + Send>;
pub(super) type ClientOut = Box<dyn AsyncWrite + Unpin + Send>;

/// Our stdin and stdout: as non-blocking pipes when they are pipes (the usual case, and far
/// cheaper: no thread hop per read or write), else tokio's blocking-pool stdio; and, for a
/// stdout pipe, the [`Widen`] that grows it once it fills.
fn client_stdio() -> (ClientIn, ClientOut, Option<Widen>) {
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
    let mut widen = None;
    let output: ClientOut = match dup_out.and_then(pipe::Sender::from_file) {
        Ok(tx) => {
            widen = Widen::of(&tx);
            Box::new(tx)
        }
        Err(_) => Box::new(tokio::io::stdout()),
    };
    (input, output, widen)
}

/// A client's pipes handed over by a front: as non-blocking pipes when they are pipes,
/// else (a socket pair, as Node gives its children, or a file) through a blocking file.
fn client_of(
    input: std::os::fd::OwnedFd,
    output: std::os::fd::OwnedFd,
) -> ClientSide<ClientIn, ClientOut> {
    use tokio::net::unix::pipe;
    let probe = input.try_clone().ok();
    let input = std::fs::File::from(input);
    let output = std::fs::File::from(output);
    let input: ClientIn = match input.try_clone().and_then(pipe::Receiver::from_file) {
        Ok(rx) => Box::new(rx),
        Err(_) => Box::new(tokio::fs::File::from_std(input)),
    };
    let mut widen = None;
    let output: ClientOut = match output.try_clone().and_then(pipe::Sender::from_file) {
        Ok(tx) => {
            widen = Widen::of(&tx);
            Box::new(tx)
        }
        Err(_) => Box::new(tokio::fs::File::from_std(output)),
    };
    ClientSide {
        input,
        output,
        probe,
        widen,
    }
}

/// Runs the bridge between the given client streams and a spawned agent.
pub async fn run_with<R, W>(cfg: Config, client_in: R, client_out: W) -> Result<i32, RunError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let client = ClientSide {
        input: client_in,
        output: client_out,
        probe: None,
        widen: None,
    };
    run_inner(cfg, Some(client), Host::Library).await
}

/// Where the bridge runs, which decides what the library cannot do.
enum Host {
    /// `run_with`, inside someone else's runtime and process: there is no binary to start
    /// as the agent's guard.
    Library,
    /// The binary, which starts a [`child::guard`].
    Binary,
}

async fn run_inner<R, W>(
    cfg: Config,
    client: Option<ClientSide<R, W>>,
    host: Host,
) -> Result<i32, RunError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // Observers first, so a bad address or path fails before the agent starts.
    let surfaces = Surfaces::start(&cfg).await?;
    let signals = Signals::new().map_err(RunError::Signals)?;
    let (agent, agent_pipes) = match Agent::spawn(&cfg, &host) {
        Ok(a) => a,
        Err(e) => {
            // The client is not left waiting for an answer that will never come (a user at
            // a terminal reads the error at once instead).
            let typed = std::io::IsTerminal::is_terminal(&std::io::stdin());
            if let Some(client) = client.filter(|_| !typed) {
                unstarted::refuse(client.input, client.output, &e.to_string(), e.exit_code()).await;
            }
            return Err(e);
        }
    };
    let attached = client.is_some();
    let ends = Ends::start(&cfg, client, agent_pipes);
    // The holder listens only once the agent runs: a front that saw it fail to start
    // exits with its code.
    let holding = match &cfg.hold {
        Some(h) => Some(
            hold::Holding::start(h, &cfg.agent, cfg.cwd.as_deref(), cfg.max_line_bytes)
                .map_err(|e| RunError::Hold(h.socket.clone(), e))?,
        ),
        None => None,
    };
    let router = Router::new(
        RouterConfig {
            events: cfg.router.events || surfaces.observers.any(),
            hold_unsupported: cfg.router.hold_unsupported || surfaces.control.is_some(),
            page_url: surfaces.page_url(),
            linger: cfg.hold.is_some(),
            ..cfg.router.clone()
        },
        Instant::now(),
        std::time::SystemTime::now(),
    );
    let mut shell = Shell {
        router,
        outbox: Outbox::default(),
        ladder: Ladder::new(cfg.shutdown_grace),
        agent,
        signals,
        surfaces,
        effects: Effects::new(cfg.router.policy.as_ref().map(|files| {
            let desk = Desk::new(files);
            // Said at start, not only at the first approval (files are small: read here).
            if let Some(why) = desk.status(cfg.cwd.as_deref())["broken"].as_str() {
                tracing::warn!("the approval policy is broken, so every approval is asked until it is fixed: {why}");
            }
            desk
        }), cfg.hold.as_ref().and_then(|h| {
            let folder = h.socket.parent()?.to_owned();
            Some((folder, h.key.clone()))
        })),
        ends,
        client_open: true,
        attached,
        holding,
        guests: Default::default(),
        agent_open: true,
        status: None,
        leftovers: None,
    };
    if let Some(h) = &mut shell.holding {
        // The front that started us attaches at once, as a rule; it has the linger, and
        // at least `FIRST_ATTACH_WITHIN` (a linger of 0 included).
        h.waiting_for_first(Instant::now());
    }
    shell.run().await;
    Ok(stop(shell, cfg.shutdown_grace).await)
}

/// The agent is gone: the shutdown, in order. The client's requests still waiting get their
/// errors and every question is withdrawn; the client is sent what is left (bounded); the
/// agent's group is reaped; the surfaces stop last, so subscribers get the final events.
/// Returns the bridge's exit code.
async fn stop(shell: Shell, grace: Duration) -> i32 {
    let Shell {
        mut router,
        mut outbox,
        ladder,
        mut agent,
        mut surfaces,
        ends,
        status,
        mut holding,
        mut guests,
        ..
    } = shell;
    let exit = exit_of(status.unwrap_or_default(), agent.stderr_tail().await);
    if let Some(h) = &mut holding {
        // Said before anything else, for a front that comes meanwhile.
        if matches!(ladder.outcome().0, QuitReason::AgentExited) {
            h.lost(&format!("its {}", exit.describe()), &router);
        }
    }
    let stopped = holding.as_ref().and_then(|h| h.stopped());
    let gone = Input::AgentGone {
        exit: &exit,
        stopped,
    };
    router.handle(gone, std::time::Instant::now(), &mut outbox);
    guests.send(std::mem::take(&mut outbox.to_joined));
    surfaces.observers.publish(&mut outbox.events);
    ends.finish(outbox.take_client(), grace).await;
    agent.reap().await;
    let code = exit_code(&ladder.outcome(), &exit);
    tracing::info!(code, "bridge exiting");
    // Joined clients get what is queued for them, then their fronts our code.
    guests.finish(code, grace).await;
    if let Some(h) = holding {
        // The attached front exits with our code; no front attaches any more.
        h.end(code);
    }
    surfaces.stop(code).await;
    code
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
/// - signal N to the bridge (the first, whenever it came before the bridge exits, the
///   client's EOF before it or not): 128+N;
/// - client EOF (and no signal): 0 when the bridge had to terminate the agent, else the
///   agent's own code;
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
    use super::services::start_control;
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
            token_hint: crate::control::BRIDGE_TOKEN_HINT,
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
