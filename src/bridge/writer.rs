//! The writer of one output: writes the batches the loop queues for it, in order, and
//! flushes whenever its queue runs empty. It knows nothing of what the lines mean.
//!
//! Invariants: nothing is copied more than once on its way out; the writer of the agent's
//! stdin counts every byte the agent takes (the stall watchdog's measure of progress) and
//! closes the pipe only once the agent has read it all.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::hangup::peer_gone;
use crate::router::Out;

const WRITE_BUFFER: usize = 64 * 1024;

/// Writes batches of lines from `rx` to `output`, flushing whenever the queue runs empty.
///
/// Lines are gathered into one buffer and written with one call per buffer (a `write_all`
/// per line costs more than the copy); a line as long as the buffer, and a run of 16 KiB or
/// more, is written straight from its own bytes, so nothing is copied more than once.
///
/// The agent's stdin is written with an [`AgentInput`]: see there.
pub(super) async fn write_lines<W: AsyncWrite + Unpin>(
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
        // The agent gone (it was signalled, or it exited: the loop says so) is no surprise.
        Err(e) if agent.is_some() && e.kind() == std::io::ErrorKind::BrokenPipe => {
            tracing::debug!(output = name, error = %e, "the agent closed its stdin; output closed")
        }
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
pub(super) struct AgentInput {
    pub(super) taken: Arc<AtomicU64>,
    /// Told once the agent's stdin is closed.
    pub(super) closed: tokio::sync::oneshot::Sender<()>,
    /// A second handle on the pipe, to see how much of it is unread.
    pub(super) probe: Option<std::os::fd::OwnedFd>,
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
pub(super) struct Bulk {
    file: Arc<std::fs::File>,
    /// Where the bytes written are counted, as they are written.
    count: Option<Arc<AtomicU64>>,
}

impl Bulk {
    /// A handle on `pipe`'s file descriptor; `None` when it cannot be had, or when the
    /// descriptor is open for reading too (stdin and stdout one FIFO opened read-write,
    /// `<>fifo`): blocking mode is a property of the open file, and the reader on it must
    /// never block a runtime worker.
    pub(super) fn of(pipe: &impl std::os::fd::AsFd) -> Option<Self> {
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

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_secs(5);

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
}
