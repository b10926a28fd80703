//! The writer of one output: writes the batches the loop queues for it, in order, and
//! flushes whenever its queue runs empty. It knows nothing of what the lines mean.
//!
//! Invariants: nothing is copied more than once on its way out; the writer of the agent's
//! stdin counts every byte the agent takes (the stall watchdog's measure of progress) and
//! closes the pipe only once the agent has read it all.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
/// The agent's stdin is written with an [`AgentInput`]: see there. The agent's stdin and a
/// client's stdout come with a [`Widen`].
pub(super) async fn write_lines<W: AsyncWrite + Unpin>(
    output: W,
    mut rx: mpsc::Receiver<Vec<Out>>,
    name: &'static str,
    agent: Option<AgentInput>,
    widen: Option<Widen>,
) {
    let taken = agent.as_ref().map(|a| a.taken.clone());
    let mut output = Counted {
        inner: output,
        count: taken,
        widen,
        name,
    };
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
                                output.write_all(&line).await?;
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
                                output.write_all(&run).await?;
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
    drop(output);
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

/// An output that counts the bytes it accepts (see [`write_lines`]), and grows its pipe
/// the first time it is full ([`Widen`]).
struct Counted<W> {
    inner: W,
    count: Option<Arc<AtomicU64>>,
    widen: Option<Widen>,
    name: &'static str,
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
        if let Some(widen) = &self.widen {
            if widen.full(&polled, buf.len()) {
                if let Some(widen) = self.widen.take() {
                    widen.grow(self.name);
                }
            }
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

/// A second handle on an output pipe (the agent's stdin, a client's stdout), to grow it to
/// [`crate::child::AGENT_PIPE_BYTES`], as the agent's stdout is grown, the first time a
/// write finds it full. A pipe of Linux's default 64 KiB takes half of a
/// 128 KiB read: the rest then costs a wait for the poller and a second write, where `cat`
/// makes one of each (bench/results.md, "One thread"). Only a pipe that fills is grown, so
/// a bridge that streams little spends none of the user's pipe allowance
/// (`/proc/sys/fs/pipe-user-pages-soft`); a refusal only costs that speed.
pub(super) struct Widen(std::os::fd::OwnedFd);

impl Widen {
    /// A handle on `pipe`; `None` when it cannot be had (then the pipe keeps its size).
    pub(super) fn of(pipe: &impl std::os::fd::AsFd) -> Option<Self> {
        pipe.as_fd().try_clone_to_owned().ok().map(Self)
    }

    /// Whether a write of `len` bytes that came back `polled` found the pipe full: it took
    /// part of them (a write longer than the room left), or none while bytes wait unread (a
    /// short write is all or nothing; a new pipe is not yet known to be writable either).
    fn full(&self, polled: &std::task::Poll<std::io::Result<usize>>, len: usize) -> bool {
        match polled {
            std::task::Poll::Ready(Ok(n)) => *n < len,
            std::task::Poll::Pending => rustix::io::ioctl_fionread(&self.0).is_ok_and(|n| n > 0),
            std::task::Poll::Ready(Err(_)) => false,
        }
    }

    fn grow(self, name: &str) {
        crate::child::widen_pipe(&self.0, name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    const WAIT: Duration = Duration::from_secs(30);

    fn pipe_bytes(fd: &impl std::os::fd::AsFd) -> i32 {
        nix::fcntl::fcntl(fd.as_fd(), nix::fcntl::FcntlArg::F_GETPIPE_SZ).expect("a pipe")
    }

    /// A pipe's two ends: the read end blocking, the write end as the runtime's.
    fn pipe() -> (std::fs::File, tokio::net::unix::pipe::Sender) {
        let (rx, tx) = nix::unistd::pipe().unwrap();
        let tx = tokio::net::unix::pipe::Sender::from_file(std::fs::File::from(tx)).unwrap();
        (std::fs::File::from(rx), tx)
    }

    /// Writes `batches` through [`write_lines`] to `tx`, and returns what a reader got.
    async fn through(
        tx: tokio::net::unix::pipe::Sender,
        mut rx: std::fs::File,
        widen: Option<Widen>,
        batches: Vec<Vec<Out>>,
    ) -> Vec<u8> {
        let reader = std::thread::spawn(move || {
            use std::io::Read as _;
            let mut got = Vec::new();
            rx.read_to_end(&mut got).map(|_| got)
        });
        let (to, from) = mpsc::channel(4);
        let writer = tokio::spawn(write_lines(tx, from, "test", None, widen));
        for batch in batches {
            tokio::time::timeout(WAIT, to.send(batch))
                .await
                .expect("queued in time")
                .expect("the writer is there");
        }
        drop(to);
        tokio::time::timeout(WAIT, writer)
            .await
            .expect("written in time")
            .expect("no panic");
        let read = tokio::task::spawn_blocking(move || reader.join().unwrap().expect("read"));
        tokio::time::timeout(WAIT, read)
            .await
            .expect("read to the end in time")
            .unwrap()
    }

    #[tokio::test]
    async fn a_client_pipe_that_fills_is_grown_once_and_nothing_is_lost() {
        let (rx, tx) = pipe();
        // The read end: a second write end would keep the reader from its end of file.
        let probe = rx.try_clone().unwrap();
        let before = pipe_bytes(&probe);
        let widen = Widen::of(&tx);
        // 3 MiB in runs of a read's length, and lines long and short between them.
        let run: Bytes = (0..128 << 10)
            .map(|i: u32| {
                if i % 97 == 96 {
                    b'\n'
                } else {
                    b'a' + (i % 26) as u8
                }
            })
            .collect::<Vec<_>>()
            .into();
        let mut batches = Vec::new();
        let mut want = Vec::new();
        for i in 0..24 {
            let line = Bytes::from(vec![
                b'0' + (i % 10) as u8;
                if i % 3 == 0 { 200 << 10 } else { 90 }
            ]);
            batches.push(vec![Out::Run(run.clone()), Out::Line(line.clone())]);
            want.extend_from_slice(&run);
            want.extend_from_slice(&line);
            want.push(b'\n');
        }
        let got = through(tx, rx, widen, batches).await;
        assert!(
            got == want,
            "{} of {} bytes, or not in order",
            got.len(),
            want.len()
        );
        let after = pipe_bytes(&probe);
        assert_eq!(after, crate::child::AGENT_PIPE_BYTES, "grown from {before}");
    }

    #[tokio::test]
    async fn a_client_pipe_that_never_fills_keeps_its_size() {
        let (rx, tx) = pipe();
        let probe = rx.try_clone().unwrap();
        let before = pipe_bytes(&probe);
        let widen = Widen::of(&tx);
        let line = Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
        let batches = vec![vec![Out::Line(line.clone())]; 100];
        let got = through(tx, rx, widen, batches).await;
        assert_eq!(got.len(), 100 * (line.len() + 1));
        assert_eq!(
            pipe_bytes(&probe),
            before,
            "a pipe that never filled is not grown"
        );
    }
}
