//! The bridge's services, each started and stopped in one place:
//! - [`Surfaces`]: where questions are seen besides the client (the control server with this
//!   bridge's roster entry, NATS, the journal, the `--on-question` notifier);
//! - [`Agent`]: the agent's process, its group, its guard and its stderr;
//! - [`Ends`]: the reader and writer tasks of the four pipes, and the loop's ends of their
//!   channels (the client's may come and go, with `--linger`).
//!
//! [`super::run_inner`] starts them in this order (observers first, so a bad address or path
//! fails before the agent starts) and stops them in the order [`super::stop`] writes down.

use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::observers::Observers;
use super::reader::read_frames;
use super::writer::{write_lines, AgentInput, Widen};
use super::{Config, Host, RunError, CHANNEL_CAPACITY};
use crate::child::{self, StderrTail};
use crate::control::{self, ControlConfig};
use crate::inbox::roster;
use crate::journal;
use crate::notify::Notifier;
use crate::router::Out;
use crate::scan::Batch;

/// Where questions are seen besides the client.
pub(super) struct Surfaces {
    pub control: Option<control::Control>,
    /// This bridge's roster entry (with the control server).
    pub identity: Option<roster::Entry>,
    pub observers: Observers,
    /// The bridge's file in the roster the inbox reads; removed when dropped.
    registration: Option<roster::Registration>,
    /// The NATS publisher and what stops it.
    nats: Option<(CancellationToken, JoinHandle<()>)>,
}

impl Surfaces {
    pub(super) async fn start(cfg: &Config) -> Result<Self, RunError> {
        let control = start_control(cfg.control.as_ref()).await?;
        // Who this bridge is, for `bridges.list` and the inbox.
        let identity = match (&control, &cfg.control) {
            (Some(running), Some(c)) => Some(identity(cfg, running.addr, &c.token)?),
            _ => None,
        };
        let registration = match &identity {
            Some(entry) if cfg.register => register(entry),
            _ => None,
        };
        // NATS sees what the control server sees, from beside the loop (never in its way).
        let nats = match (&cfg.nats, &control, &identity) {
            (Some(n), Some(c), Some(me)) => {
                let stop = CancellationToken::new();
                let task =
                    tokio::spawn(crate::inbox::nats::publish(crate::inbox::nats::Publisher {
                        cfg: n.clone(),
                        identity: me.public(),
                        calls: c.caller.clone(),
                        events: c.events.subscribe(),
                        stop: stop.clone(),
                    }));
                Some((stop, task))
            }
            _ => None,
        };
        let journal = match &cfg.journal {
            Some(path) => Some(
                journal::open(path, &cfg.agent).map_err(|e| RunError::Journal(path.clone(), e))?,
            ),
            None => None,
        };
        let notifier = cfg.on_question.clone().map(|argv| {
            // Inside the agent's wall, when it has one: the agent can make it run.
            let launcher = cfg.wall.as_ref().map(crate::wall::Launch::prefix);
            let page = control.as_ref().map(|c| c.page_url.clone());
            Notifier::new(argv, page, cfg.on_question_token, launcher)
        });
        let observers = Observers {
            events: control.as_ref().map(|c| c.events.clone()),
            journal,
            notifier,
            ringer: crate::ring::Ringer::new(cfg.ring),
            desk_said: None,
        };
        Ok(Self {
            control,
            identity,
            observers,
            registration,
            nats,
        })
    }

    /// The page's address without its token (the fragment): the chat is kept by clients,
    /// shown and shared.
    pub(super) fn page_url(&self) -> Option<String> {
        self.control.as_ref().map(|c| {
            let url = c.page_url.as_str();
            url.split_once('#').map_or(url, |(page, _)| page).to_owned()
        })
    }

    /// Stops them in order: NATS is told this bridge's questions are gone (bounded: NATS may
    /// be down); the control server stops once its subscribers have had the final events;
    /// the journal records the exit code; the roster entry goes last.
    pub(super) async fn stop(self, code: i32) {
        if let Some((stop, task)) = self.nats {
            stop.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(3), task).await;
        }
        if let Some(c) = &self.control {
            c.stop(Duration::from_secs(1)).await;
        }
        if let Some(j) = self.observers.journal {
            j.record("bridge_stopped", serde_json::json!({ "exitCode": code }));
            j.close();
        }
        drop(self.registration);
    }
}

/// The control server, when configured. One started by default (no `--control`) that
/// cannot start is only a warning: the bridge then runs as with `--no-control`.
pub(super) async fn start_control(
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

/// Lists the bridge in the roster the inbox reads; a failure is only a warning.
fn register(entry: &roster::Entry) -> Option<roster::Registration> {
    let dir = roster::dir();
    match roster::register(&dir, entry) {
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

/// This bridge's roster entry: a fresh id, its control server, its agent.
fn identity(
    cfg: &Config,
    addr: std::net::SocketAddr,
    token: &str,
) -> Result<roster::Entry, RunError> {
    let id = control::random_token()?[..16].to_owned();
    let cwd = match &cfg.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir().unwrap_or_default(),
    };
    Ok(roster::Entry {
        id,
        url: format!("http://{addr}/"),
        token: token.to_owned(),
        pid: std::process::id(),
        agent: cfg.agent.clone(),
        cwd: cwd.display().to_string(),
        host: roster::host_name(),
        started_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
    })
}

/// The agent's process.
pub(super) struct Agent {
    pub child: Child,
    /// Its pid, which is also its process group's id.
    pub pgid: u32,
    pub started: Instant,
    /// The binary's guard, which ends the agent's group should the bridge be killed (see
    /// `child::guard`).
    guard: Option<child::guard::Guard>,
    /// The wall around it (`--sandbox`), for `bridge.status`.
    pub wall: crate::wall::State,
    tail: StderrTail,
    stderr: JoinHandle<()>,
}

/// The agent's stdin and stdout, for [`Ends::start`].
pub(super) struct AgentPipes {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
}

impl Agent {
    pub(super) fn spawn(cfg: &Config, host: &Host) -> Result<(Self, AgentPipes), RunError> {
        let started = Instant::now();
        let launcher = cfg.wall.as_ref().map(crate::wall::Launch::prefix);
        let mut child = child::spawn(
            &cfg.agent,
            &cfg.agent_env,
            cfg.cwd.as_ref(),
            launcher.as_deref(),
        )?;
        let pgid = child.id().unwrap_or(0);
        tracing::info!(agent = ?cfg.agent, pid = pgid, "agent started");
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            unreachable!("all three agent pipes are requested in child::spawn");
        };
        let guard = match host {
            // By the running image, not by a path the agent may have renamed over.
            Host::Binary => child::guard::Guard::start(
                std::path::Path::new(crate::wall::SELF_EXE),
                pgid,
                cfg.shutdown_grace,
            ),
            Host::Library => None,
        };
        let tail = StderrTail::default();
        let stderr = tokio::spawn(child::pump_stderr(stderr, tail.clone()));
        let agent = Self {
            child,
            pgid,
            started,
            guard,
            wall: cfg.wall_state.clone(),
            tail,
            stderr,
        };
        Ok((agent, AgentPipes { stdin, stdout }))
    }

    /// The agent is gone: waits for the end of its stderr, so all of it is relayed and the
    /// tail is complete, and returns the tail. The end comes as soon as the relay task runs
    /// (the group is gone, so nothing writes any more); the bound only keeps a process that
    /// left the group while holding the pipe from holding the bridge. 500 ms lost the last
    /// lines of a `sh -c "pwd >&2"` agent on a loaded machine (the full test suite beside
    /// it): the task had not run yet.
    pub(super) async fn stderr_tail(&mut self) -> String {
        let _ = tokio::time::timeout(STDERR_END, &mut self.stderr).await;
        self.tail.text()
    }

    /// The shutdown ladder has run its course: makes sure the agent's group is gone before
    /// the bridge is (it is, unless a member outlived SIGKILL by [`super::shutdown::KILL_WAIT`]).
    /// With the group gone, the guard goes without signalling; else, once the bridge exits,
    /// it ends what is left.
    pub(super) async fn reap(self) {
        self.stderr.abort();
        let gone = tokio::time::timeout(Duration::from_millis(500), child::group::gone(self.pgid))
            .await
            .is_ok();
        if let (true, Some(guard)) = (gone, self.guard) {
            guard.release();
        }
    }
}

/// The longest wait for the end of the agent's stderr once it is gone.
const STDERR_END: Duration = Duration::from_secs(5);

/// The loop's ends of the channels to the four pipes' tasks.
pub(super) struct Ends {
    pub client_frames: mpsc::Receiver<Batch>,
    pub agent_frames: mpsc::Receiver<Batch>,
    pub to_client: Option<mpsc::Sender<Vec<Out>>>,
    pub to_agent: Option<mpsc::Sender<Vec<Out>>>,
    /// Reports once that the client hung up while its input was held back.
    pub hup: Option<oneshot::Receiver<()>>,
    /// Reports once that the agent's stdin is closed.
    pub stdin_closed: Option<oneshot::Receiver<()>>,
    /// Bytes the agent has taken off its stdin (see [`super::writer::AgentInput`]).
    pub agent_taken: Arc<AtomicU64>,
    /// The client's reader and writer tasks (none while no client is attached, with
    /// `--linger`).
    pub client: Option<ClientTasks>,
}

/// The client's reader and writer tasks, stopped or waited for when it goes.
pub(super) struct ClientTasks {
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

/// A client's two pipes, and what grows its output pipe once it fills.
pub(super) struct ClientSide<R, W> {
    pub input: R,
    pub output: W,
    /// A second handle on the input, only to see the client hang up while it waits.
    pub probe: Option<OwnedFd>,
    pub widen: Option<Widen>,
}

impl Ends {
    /// Starts a client's reader and writer, and points the loop's ends at them.
    pub(super) fn attach<R, W>(&mut self, max_line_bytes: usize, client: ClientSide<R, W>)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (frames_tx, frames) = mpsc::channel(CHANNEL_CAPACITY);
        let (hup_tx, hup) = oneshot::channel();
        let reader = tokio::spawn(read_frames(
            client.input,
            max_line_bytes,
            frames_tx,
            "client",
            client.probe.map(|fd| (fd, hup_tx)),
        ));
        let (to_client, to_client_rx) = mpsc::channel(CHANNEL_CAPACITY);
        let writer = tokio::spawn(write_lines(
            client.output,
            to_client_rx,
            "client",
            None,
            client.widen,
        ));
        self.client_frames = frames;
        self.to_client = Some(to_client);
        self.hup = Some(hup);
        self.client = Some(ClientTasks { reader, writer });
    }

    /// The client is gone: its reader stops, and its writer ends once it has written what
    /// it was handed (or at once, when the client does not read).
    pub(super) fn detach(&mut self) {
        if let Some(tasks) = self.client.take() {
            tasks.reader.abort();
            let mut writer = tasks.writer;
            tokio::spawn(async move {
                if tokio::time::timeout(Duration::from_secs(5), &mut writer)
                    .await
                    .is_err()
                {
                    // It holds the editor's stdout: let go of it.
                    tracing::debug!("the client that left is not reading; its writer is stopped");
                    writer.abort();
                }
            });
        }
        self.to_client = None;
        self.hup = None;
    }

    /// Starts a reader per input and a writer per output (the client's when there is one).
    pub(super) fn start<R, W>(
        cfg: &Config,
        client: Option<ClientSide<R, W>>,
        agent: AgentPipes,
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (agent_frames_tx, agent_frames) = mpsc::channel(CHANNEL_CAPACITY);
        tokio::spawn(read_frames(
            agent.stdout,
            cfg.max_line_bytes,
            agent_frames_tx,
            "agent",
            None,
        ));
        let (to_agent, to_agent_rx) = mpsc::channel(CHANNEL_CAPACITY);
        let agent_taken = Arc::new(AtomicU64::new(0));
        let (stdin_closed_tx, stdin_closed) = oneshot::channel();
        let agent_input = AgentInput {
            taken: agent_taken.clone(),
            closed: stdin_closed_tx,
            probe: {
                use std::os::fd::AsFd;
                agent.stdin.as_fd().try_clone_to_owned().ok()
            },
        };
        let widen_stdin = Widen::of(&agent.stdin);
        tokio::spawn(write_lines(
            agent.stdin,
            to_agent_rx,
            "agent",
            Some(agent_input),
            // Its stdout was grown when it started; its stdin is grown once it fills.
            widen_stdin,
        ));
        let mut ends = Ends {
            client_frames: mpsc::channel(1).1,
            agent_frames,
            to_client: None,
            to_agent: Some(to_agent),
            hup: None,
            stdin_closed: Some(stdin_closed),
            agent_taken,
            client: None,
        };
        if let Some(client) = client {
            ends.attach(cfg.max_line_bytes, client);
        }
        ends
    }

    /// Stops reading the client, closes the agent's stdin after what is queued for it, and
    /// delivers what is left for the client, bounded by `grace` (at least a second).
    pub(super) async fn finish(self, rest: Vec<Out>, grace: Duration) {
        drop(self.to_agent);
        let Some(tasks) = self.client else { return };
        tasks.reader.abort();
        let client_writer = tasks.writer;
        let to_client = self.to_client;
        let flush = async {
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
    }
}
