//! The reader of one input: reads, frames lines, scans them, and hands the loop one batch
//! per read. It knows nothing of what the lines mean.
//!
//! Invariants: at most [`IN_FLIGHT_BYTES`] of its lines are between their read and their
//! write or drop (a longer line waits until nothing else is in flight); order is kept (one
//! batch per read, sent in the order read).

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;

use super::hangup::peer_gone;
use crate::codec::LineCodec;
use crate::scan::{Batch, Memo};

/// As much as `cat` reads at once (coreutils' `io_blksize`): a streaming agent's pipe (grown
/// to 256 KiB) is drained in fewer reads, each one batch.
const READ_BUFFER: usize = 128 * 1024;
/// How often a client reader that is held back checks whether the client hung up.
const HUP_POLL: Duration = Duration::from_millis(100);

/// Reads `input` and sends, per read, the batch of lines it completed into `tx`: one shared
/// chunk per read, each line already scanned, until EOF, a read error, or the loop going
/// away. With `hup`, while a batch waits for room it also watches the input's file
/// descriptor and reports once that the peer hung up (its unread data stays where it is).
///
/// Every chunk is scanned here, on the reader's task: a chunk of lines goes from the read
/// buffer to the loop, and on to the writer, with no other thread to wake (a scan thread
/// per input, which overlapped the scan with the next read, cost a `futex` wake-up and two
/// context switches per read, more than the scan it moved: `bench/results.md`, "Scanning
/// on the reader").
pub(super) async fn read_frames<R: AsyncRead + Unpin>(
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
            let batch = Batch::scan(data, &pieces, &mut memo);
            pieces.clear();
            if !send_batch(&tx, batch, &mut hup).await {
                return;
            }
        }
        if eof {
            return;
        }
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
pub(super) type Hup = Option<(std::os::fd::OwnedFd, tokio::sync::oneshot::Sender<()>)>;

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
/// The channels bound the number of batches in flight, not their size: with long image
/// lines, a wide agent pipe and every queue full (the output is the slower side), the
/// bridge held many such lines at once. So each chunk a reader sends holds its share of this
/// budget until the last piece of it is dropped (written, or not forwarded), and the reader
/// waits for room before it sends more. 3 MiB lets a 2 MiB line be written while a line of
/// up to 1 MiB (and any number of small ones) is read and scanned; 2 MiB serialised long
/// lines, 4 MiB was no faster and held a megabyte more at the peak. The sizes tried and their
/// speed and RSS are in `bench/results.md`. A line longer than the whole budget waits until
/// nothing else is in flight.
pub const IN_FLIGHT_BYTES: usize = 3 << 20;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
