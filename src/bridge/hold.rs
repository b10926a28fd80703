//! The holder's part of the shell (`--linger`): fronts attaching over the socket, the
//! front that is attached, and the linger that runs while none is.
//!
//! Invariants:
//! - At most one client is attached; a front that comes while one is gets `busy`, unless
//!   its client joins a session the holder keeps ([`super::joined`]).
//! - The bridge's stderr is the attached front's (the editor's log); with none attached it
//!   is `/dev/null`, so no editor's pipe is held open by a holder it left.
//! - The linger runs only while no client is attached; once it is over, no front attaches
//!   again (the socket and the holder's file are gone).

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt as _;
use tokio::sync::mpsc;

use crate::linger::holder::{self, Attachment, HoldConfig, Listening};
use crate::linger::Reply;

/// How long the front that started a holder has to attach, whatever the linger: far above
/// the milliseconds it takes, for a busy machine.
const FIRST_ATTACH_WITHIN: Duration = Duration::from_secs(120);

/// What the holder's socket reports.
#[derive(Debug)]
pub(super) enum HoldEvent {
    /// A front proved it is the user and handed over its client.
    Attach(Attachment),
    /// The front of this generation is gone (it died, or closed its end).
    FrontGone(u64),
}

/// A client just attached: its pipes, and what its front read of it first.
pub(super) struct Attached {
    pub input: std::os::fd::OwnedFd,
    pub output: std::os::fd::OwnedFd,
    pub prefix: Vec<u8>,
    pub initialized: bool,
}

/// The attached front.
struct Front {
    /// Our end of its connection, for its exit code (non-blocking: a few bytes).
    conn: UnixStream,
    generation: u64,
    pid: u32,
    /// Watches its end (a second handle on the connection): stopped when it is let go,
    /// so the connection closes.
    watch: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Front {
    fn drop(&mut self) {
        if let Some(w) = self.watch.take() {
            w.abort();
        }
    }
}

pub(super) struct Holding {
    linger: Duration,
    pub max_line_bytes: usize,
    listening: Option<Listening>,
    attach_rx: mpsc::Receiver<Attachment>,
    gone_tx: mpsc::Sender<u64>,
    gone_rx: mpsc::Receiver<u64>,
    front: Option<Front>,
    generation: u64,
    /// When the linger ends, while no client is attached.
    until: Option<Instant>,
    /// The version of the router's state the holder's file says.
    published: u64,
    /// Why the holder stops, when the user asked for it (`sessions stop`): what its
    /// clients are told instead of the agent's signal alone.
    stopped: Option<&'static str>,
}

impl Holding {
    /// Listens for fronts (and says `ready` to the front that started us).
    pub(super) fn start(
        h: &HoldConfig,
        agent: &[String],
        cwd: Option<&std::path::Path>,
        max_line_bytes: usize,
    ) -> std::io::Result<Self> {
        let (tx, attach_rx) = mpsc::channel(1);
        let cwd = match cwd {
            Some(c) => c.to_owned(),
            None => std::env::current_dir().unwrap_or_default(),
        };
        let listening = holder::listen(h, agent, &cwd, tx)?;
        let (gone_tx, gone_rx) = mpsc::channel(4);
        tracing::info!(socket = %h.socket.display(), linger = ?h.linger, "holding the agent for fronts to attach");
        Ok(Self {
            linger: h.linger,
            max_line_bytes,
            listening: Some(listening),
            attach_rx,
            gone_tx,
            gone_rx,
            front: None,
            generation: 0,
            until: None,
            published: 0,
            stopped: None,
        })
    }

    /// The next thing the socket reports. Cancel-safe: two `mpsc::Receiver::recv`s.
    pub(super) async fn next(&mut self) -> HoldEvent {
        tokio::select! {
            Some(a) = self.attach_rx.recv() => HoldEvent::Attach(a),
            Some(g) = self.gone_rx.recv() => HoldEvent::FrontGone(g),
        }
    }

    /// Whether the attached front is not the one that started the holder.
    pub(super) fn reattached(&self) -> bool {
        self.generation > 1
    }

    /// When the linger ends, if it runs.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.until
    }

    /// For `bridge.status`: the linger, and what is left of it while no client is attached.
    pub(super) fn status(&self, now: Instant) -> serde_json::Value {
        serde_json::json!({
            "lingerMs": self.linger.as_millis() as u64,
            "lingerLeftMs": self.until.map(|u| u.saturating_duration_since(now).as_millis() as u64),
            "clientAttached": self.front.is_some(),
            "frontPid": self.front.as_ref().map(|f| f.pid),
            "open": self.open(),
        })
    }

    /// Tells fronts (the holder's file) what changed of what they choose by.
    pub(super) fn publish(&mut self, router: &crate::router::Router) {
        if router.held_version() == self.published {
            return;
        }
        let (version, init, sessions) = router.held_for_fronts();
        self.published = version;
        if let Some(l) = &self.listening {
            l.publish(version, init, sessions);
        }
    }

    /// Whether fronts may still attach.
    pub(super) fn open(&self) -> bool {
        self.listening.is_some()
    }

    /// Whether `generation` is the attached front's.
    pub(super) fn is_current(&self, generation: u64) -> bool {
        self.front
            .as_ref()
            .is_some_and(|f| f.generation == generation)
    }

    /// Tells `a`'s front to try elsewhere, with this holder's `initialize` result.
    pub(super) fn busy(a: Attachment, init: Option<&str>) {
        tracing::info!(
            front = a.front_pid,
            "a front came while a client is attached, or for a session not kept; told busy"
        );
        let init = init.map(str::to_owned);
        Self::reply(&a, Reply::Busy { init });
    }

    /// Says `reply` to `a`'s front (a few bytes; a front that is gone hears nothing).
    pub(super) fn reply(a: &Attachment, reply: Reply) {
        let _ = (&a.conn).write_all(&reply.line());
    }

    /// The user stopped the holder (`sessions stop`, `a`): its front is told it is done,
    /// and the clients will be told who stopped it.
    pub(super) fn stop_asked(&mut self, a: &Attachment, why: &'static str) {
        self.stopped = Some(why);
        Self::reply(a, Reply::Exit(0));
    }

    /// Why the user stopped the holder, if they did.
    pub(super) fn stopped(&self) -> Option<&'static str> {
        self.stopped
    }

    /// Takes `a`'s client: the front is told, the bridge's stderr becomes its, and its end
    /// is watched. Returns the client's input and output.
    pub(super) fn attach(&mut self, a: Attachment) -> Option<Attached> {
        let Attachment {
            conn,
            input,
            output,
            stderr,
            front_pid,
            prefix,
            initialized,
            join: _,
            kept_only: _,
            stop: _,
        } = a;
        let reply = Reply::Attached {
            holder: std::process::id(),
        };
        if (&conn).write_all(&reply.line()).is_err() {
            tracing::info!(front = front_pid, "the front left before it was attached");
            return None;
        }
        let _ = nix::unistd::dup2_stderr(&stderr);
        drop(stderr);
        self.generation += 1;
        let generation = self.generation;
        // Its end is watched on a second handle; ours writes its exit code.
        let watch = conn
            .try_clone()
            .and_then(|c| c.set_nonblocking(true).map(|()| c))
            .and_then(tokio::net::UnixStream::from_std);
        let gone = self.gone_tx.clone();
        let watching = match watch {
            Ok(mut w) => Some(tokio::spawn(async move {
                let mut buf = [0u8; 64];
                while let Ok(n) = w.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
                let _ = gone.send(generation).await;
            })),
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the front; taken as gone");
                let _ = gone.try_send(generation);
                None
            }
        };
        tracing::info!(front = front_pid, generation, "a client attached");
        self.front = Some(Front {
            conn,
            generation,
            pid: front_pid,
            watch: watching,
        });
        self.until = None;
        Some(Attached {
            input,
            output,
            prefix,
            initialized,
        })
    }

    /// The attached client left (or its front did): its front exits with `code`, the
    /// bridge's stderr goes to `/dev/null`, and the linger starts.
    pub(super) fn detach(&mut self, now: Instant, code: i32) {
        if let Some(front) = self.front.take() {
            tracing::info!(
                front = front.pid,
                "the client left; the agent is held for {:?}",
                self.linger
            );
            let _ = (&front.conn).write_all(&Reply::Exit(code).line());
        }
        if let Ok(null) = std::fs::File::options().write(true).open("/dev/null") {
            let _ = nix::unistd::dup2_stderr(&null);
        }
        self.detached_at(now);
    }

    /// The holder has just started: the front that started it has the linger, and at least
    /// [`FIRST_ATTACH_WITHIN`], to attach.
    pub(super) fn waiting_for_first(&mut self, now: Instant) {
        self.until = Some(now + self.linger.max(FIRST_ATTACH_WITHIN));
    }

    /// The linger waits: a client that joined a session is still there.
    pub(super) fn pause(&mut self) {
        self.until = None;
    }

    /// The linger runs from `now`.
    pub(super) fn detached_at(&mut self, now: Instant) {
        self.until = Some(now + self.linger);
    }

    /// The linger is over, or the bridge is stopping: no front attaches any more.
    pub(super) fn close(&mut self) {
        self.listening = None;
        self.until = None;
    }

    /// The sessions the router keeps end against the user's will (`why`: the agent died
    /// while fronts could still attach): they are recorded as lost, for a front whose
    /// client loads one later, and no front attaches any more. (A linger that ran out, or a
    /// stop the user asked for, closed the socket before: nothing is lost unasked.)
    pub(super) fn lost(&mut self, why: &str, router: &crate::router::Router) {
        if let Some(l) = &self.listening {
            // (A client that has a session was told, by its requests' errors.)
            let sessions = router.sessions_no_client_has();
            l.record_end(why, sessions, router.held_init());
        }
        self.close();
    }

    /// The bridge is done: the attached front exits with `code`.
    pub(super) fn end(mut self, code: i32) {
        self.close();
        if let Some(front) = self.front.take() {
            let _ = (&front.conn).write_all(&Reply::Exit(code).line());
        }
    }
}
