//! The holder's clients that joined a session beside the attached one (`--linger`, several
//! clients on one session): each one's pipes are read and written by tasks of its own, and
//! its front gets its exit code when it is let go.
//!
//! Invariants: what the router queued for a joined client reaches it in order; a joined
//! client that does not read (its queue is full) is let go rather than stall the others;
//! when the bridge ends, every joined client's front gets the bridge's code.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::net::UnixStream;

use bytes::Bytes;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::linger::Reply;
use crate::scan::Batch;

/// How many lines may wait for a joined client before it is let go as one that does not
/// read: far above what a client that reads lets pile up.
const QUEUE: usize = 4096;

/// What a joined client's tasks report: a batch of its lines, or `None` when it is gone.
pub(super) type JoinedEvent = (u32, Option<Batch>);

/// A joining client's front: its connection, its pid, and what it read of the client first.
pub(super) struct Front {
    pub conn: UnixStream,
    pub pid: u32,
    pub prefix: Vec<u8>,
}

struct Guest {
    conn: UnixStream,
    pid: u32,
    lines: mpsc::Sender<Bytes>,
    /// Its reader and its front's watch: stopped when it is let go.
    tasks: Vec<JoinHandle<()>>,
    /// Its writer: it writes what is queued, then ends when `lines` is dropped.
    writer: Option<JoinHandle<()>>,
}

impl Drop for Guest {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

#[derive(Default)]
pub(super) struct Guests {
    next: u32,
    guests: BTreeMap<u32, Guest>,
    events: Channel,
}

/// Where joined clients' tasks report.
struct Channel {
    tx: mpsc::Sender<JoinedEvent>,
    rx: mpsc::Receiver<JoinedEvent>,
}

impl Default for Channel {
    fn default() -> Self {
        let (tx, rx) = mpsc::channel(16);
        Channel { tx, rx }
    }
}

impl Guests {
    /// Whether any client joined.
    pub(super) fn any(&self) -> bool {
        !self.guests.is_empty()
    }

    /// The next thing a joined client's tasks report. Cancel-safe: `mpsc::Receiver::recv`
    /// (we hold a sender: never `None`).
    pub(super) async fn next(&mut self) -> JoinedEvent {
        match self.events.rx.recv().await {
            Some(ev) => ev,
            None => std::future::pending().await,
        }
    }

    /// The number the next client to join will have.
    pub(super) fn next_id(&self) -> u32 {
        self.next
    }

    /// Takes `front`'s client, whose pipes are `input` and `output`, as a joined client (the
    /// number [`Guests::next_id`] said): its front is told it is attached, and its pipes are
    /// read and written from now on. False when its front left first.
    pub(super) fn join<R, W>(&mut self, front: Front, input: R, output: W, max_line: usize) -> bool
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Front { conn, pid, prefix } = front;
        let id = self.next;
        self.next += 1;
        let reply = Reply::Attached {
            holder: std::process::id(),
        };
        if (&conn).write_all(&reply.line()).is_err() {
            tracing::info!(front = pid, "the front left before it joined");
            return false;
        }
        // What the front read first comes first.
        let input = std::io::Cursor::new(prefix).chain(input);
        let mut tasks = Vec::new();
        // Its lines: read and scanned as the attached client's are.
        let (batch_tx, mut batch_rx) = mpsc::channel(4);
        tasks.push(tokio::spawn(super::reader::read_frames(
            input,
            max_line,
            batch_tx,
            "joined client",
            None,
        )));
        let tx = self.events.tx.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(batch) = batch_rx.recv().await {
                if tx.send((id, Some(batch))).await.is_err() {
                    return;
                }
            }
            let _ = tx.send((id, None)).await;
        }));
        // What the router queued for it.
        let (lines, mut lines_rx) = mpsc::channel::<Bytes>(QUEUE);
        let tx = self.events.tx.clone();
        let mut output = output;
        let writer = Some(tokio::spawn(async move {
            while let Some(line) = lines_rx.recv().await {
                let wrote = async {
                    output.write_all(&line).await?;
                    output.write_all(b"\n").await?;
                    output.flush().await
                };
                if wrote.await.is_err() {
                    break;
                }
            }
            let _ = tx.send((id, None)).await;
        }));
        // Its front's end: gone means the client left.
        let watch = conn
            .try_clone()
            .and_then(|c| c.set_nonblocking(true).map(|()| c))
            .and_then(tokio::net::UnixStream::from_std);
        if let Ok(mut w) = watch {
            let tx = self.events.tx.clone();
            tasks.push(tokio::spawn(async move {
                let mut buf = [0u8; 64];
                while let Ok(n) = w.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
                let _ = tx.send((id, None)).await;
            }));
        }
        tracing::info!(front = pid, client = id, "a client joined a held session");
        self.guests.insert(
            id,
            Guest {
                conn,
                pid,
                lines,
                tasks,
                writer,
            },
        );
        true
    }

    /// Hands each joined client what the router queued for it; returns the clients let go
    /// because they do not read.
    pub(super) fn send(&mut self, queued: Vec<(u32, Bytes)>) -> Vec<u32> {
        let mut gone = Vec::new();
        for (id, line) in queued {
            let Some(g) = self.guests.get(&id) else {
                continue;
            };
            if g.lines.try_send(line).is_err() {
                tracing::warn!(
                    client = id,
                    front = g.pid,
                    "a joined client does not read its output; let go"
                );
                gone.push(id);
                self.leave(id, 1);
            }
        }
        gone
    }

    /// Client `id` is let go: its front exits with `code`. False when it was gone already.
    pub(super) fn leave(&mut self, id: u32, code: i32) -> bool {
        let Some(g) = self.guests.remove(&id) else {
            return false;
        };
        tracing::info!(client = id, front = g.pid, "a joined client left");
        let _ = (&g.conn).write_all(&Reply::Exit(code).line());
        true
    }

    /// The bridge is done: what is queued for each joined client is written (for at most
    /// `grace`), then its front exits with `code`.
    pub(super) async fn finish(self, code: i32, grace: std::time::Duration) {
        let Guests { guests, events, .. } = self;
        // (A writer that ends reports it: nobody listens any more.)
        drop(events);
        let mut fronts = Vec::new();
        let mut writers = Vec::new();
        for (_, mut g) in guests {
            writers.extend(g.writer.take());
            fronts.push(g.conn.try_clone());
        }
        let _ = tokio::time::timeout(grace, async {
            for w in writers {
                let _ = w.await;
            }
        })
        .await;
        for conn in fronts.into_iter().flatten() {
            let _ = (&conn).write_all(&Reply::Exit(code).line());
        }
    }

    /// The fronts' pids, for `bridge.status`.
    pub(super) fn pids(&self) -> Vec<u32> {
        self.guests.values().map(|g| g.pid).collect()
    }
}
