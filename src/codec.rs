//! The ACP stdio line codec: splits a byte stream into newline-delimited frames.
//!
//! Owns the framing rules of PROTOCOL.md section 0 and 5: one message per `\n`-terminated
//! line, a trailing `\r` and a leading UTF-8 BOM are tolerated, blank lines are skipped, and
//! a line longer than the configured maximum is discarded up to its newline.
//!
//! Invariants:
//! - A per-line problem (an over-long line) is an *item* ([`Frame::TooLong`]), never an
//!   `Err`: an `Err` ends a `FramedRead`, and one bad line must not end the stream.
//! - Bytes are scanned once (`next_index` remembers how far the search for `\n` got).
//! - The buffer never holds more than `max_line` bytes of one line plus one read chunk:
//!   in discard mode bytes are dropped as they arrive.
//! - A frame's [`Frame::Line`] keeps the original bytes (the `Bytes` shares the read buffer,
//!   no copy) so forwarding can relay them untouched.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::Decoder;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One unit the codec yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A line's content: without its terminator (`\n` or `\r\n`) and without a leading BOM.
    /// Never empty and never all-whitespace.
    Line(Bytes),
    /// A line longer than the limit was dropped; `bytes` is its length without terminator.
    TooLong { bytes: u64 },
}

/// Newline-delimited frame decoder with a maximum line length and discard mode.
#[derive(Debug)]
pub struct LineCodec {
    max_line: usize,
    /// How far into the buffer the search for `\n` has already looked.
    next_index: usize,
    /// `Some(n)` while dropping an over-long line; `n` counts the bytes dropped so far.
    discarding: Option<u64>,
    /// In discard mode: whether the last byte dropped was `\r` (part of a `\r\n`).
    dropped_cr: bool,
}

impl LineCodec {
    pub fn new(max_line: usize) -> Self {
        Self {
            max_line,
            next_index: 0,
            discarding: None,
            dropped_cr: false,
        }
    }

    pub fn max_line(&self) -> usize {
        self.max_line
    }

    /// Turns a raw line (terminator already removed) into a frame, or `None` when blank.
    fn finish_line(mut line: BytesMut) -> Option<Frame> {
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.starts_with(BOM) {
            line.advance(BOM.len());
        }
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            return None;
        }
        Some(Frame::Line(line.freeze()))
    }
}

impl Decoder for LineCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        loop {
            if let Some(dropped) = self.discarding {
                match memchr_nl(buf, 0) {
                    Some(pos) => {
                        // A `\r` before the `\n` belongs to the terminator, not the content.
                        let cr = if pos == 0 {
                            self.dropped_cr
                        } else {
                            buf[pos - 1] == b'\r'
                        };
                        buf.advance(pos + 1);
                        self.discarding = None;
                        self.next_index = 0;
                        return Ok(Some(Frame::TooLong {
                            bytes: dropped + pos as u64 - u64::from(cr),
                        }));
                    }
                    None => {
                        if let Some(&last) = buf.last() {
                            self.dropped_cr = last == b'\r';
                        }
                        self.discarding = Some(dropped + buf.len() as u64);
                        buf.clear();
                        return Ok(None);
                    }
                }
            }
            match memchr_nl(buf, self.next_index) {
                Some(pos) => {
                    self.next_index = 0;
                    let mut line = buf.split_to(pos + 1);
                    line.truncate(pos);
                    let content = line.len() - usize::from(line.last() == Some(&b'\r'));
                    if content > self.max_line {
                        return Ok(Some(Frame::TooLong {
                            bytes: content as u64,
                        }));
                    }
                    match Self::finish_line(line) {
                        Some(frame) => return Ok(Some(frame)),
                        None => continue,
                    }
                }
                None => {
                    // `+ 1` leaves room for a `\r` that may precede the coming `\n`.
                    if buf.len() > self.max_line + 1 {
                        self.dropped_cr = buf.last() == Some(&b'\r');
                        self.discarding = Some(buf.len() as u64);
                        buf.clear();
                        self.next_index = 0;
                    } else {
                        self.next_index = buf.len();
                    }
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        if let Some(dropped) = self.discarding.take() {
            // A final `\r` would have been part of a `\r\n` terminator: not content.
            let cr = u64::from(self.dropped_cr && dropped > 0);
            return Ok(Some(Frame::TooLong {
                bytes: dropped - cr,
            }));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        // The stream ended without a final newline: the rest is the last line.
        self.next_index = 0;
        let line = buf.split_to(buf.len());
        let content = line.len() - usize::from(line.last() == Some(&b'\r'));
        if content > self.max_line {
            return Ok(Some(Frame::TooLong {
                bytes: content as u64,
            }));
        }
        Ok(Self::finish_line(line))
    }
}

fn memchr_nl(buf: &[u8], from: usize) -> Option<usize> {
    memchr::memchr(b'\n', buf.get(from..)?).map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> Frame {
        Frame::Line(Bytes::copy_from_slice(s.as_bytes()))
    }

    /// Feeds `chunks` one by one, then EOF, collecting every frame.
    fn run(max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut codec = LineCodec::new(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(f) = codec.decode(&mut buf).unwrap() {
                out.push(f);
            }
        }
        while let Some(f) = codec.decode_eof(&mut buf).unwrap() {
            out.push(f);
        }
        out
    }

    #[test]
    fn partial_lines_are_joined() {
        let frames = run(100, &[b"{\"a\"", b":1}", b"\n{\"b\":2}\n"]);
        assert_eq!(frames, vec![line("{\"a\":1}"), line("{\"b\":2}")]);
    }

    #[test]
    fn many_lines_in_one_read() {
        let frames = run(100, &[b"1\n2\n3\n"]);
        assert_eq!(frames, vec![line("1"), line("2"), line("3")]);
    }

    #[test]
    fn crlf_and_bom_are_stripped() {
        let frames = run(100, &[b"\xEF\xBB\xBF{}\r\n", b"[]\r", b"\n"]);
        assert_eq!(frames, vec![line("{}"), line("[]")]);
    }

    #[test]
    fn blank_lines_are_skipped() {
        let frames = run(100, &[b"\n\r\n  \n1\n\n"]);
        assert_eq!(frames, vec![line("1")]);
    }

    #[test]
    fn over_long_line_then_recovery() {
        let frames = run(4, &[b"12345", b"6789\nok\n"]);
        assert_eq!(frames, vec![Frame::TooLong { bytes: 9 }, line("ok")]);
    }

    #[test]
    fn over_long_line_complete_in_buffer() {
        let frames = run(4, &[b"123456\r\nok\n"]);
        assert_eq!(frames, vec![Frame::TooLong { bytes: 6 }, line("ok")]);
    }

    #[test]
    fn line_of_exactly_max_with_crlf_passes() {
        let frames = run(4, &[b"1234", b"\r", b"\n"]);
        assert_eq!(frames, vec![line("1234")]);
    }

    #[test]
    fn eof_without_final_newline() {
        let frames = run(100, &[b"1\n2"]);
        assert_eq!(frames, vec![line("1"), line("2")]);
    }

    #[test]
    fn eof_while_discarding() {
        let frames = run(2, &[b"ok\n12345"]);
        assert_eq!(frames, vec![line("ok"), Frame::TooLong { bytes: 5 }]);
    }

    #[test]
    fn discarding_keeps_buffer_small() {
        let mut codec = LineCodec::new(8);
        let mut buf = BytesMut::new();
        for _ in 0..100 {
            buf.extend_from_slice(&[b'x'; 1000]);
            assert_eq!(codec.decode(&mut buf).unwrap(), None);
            assert!(buf.len() <= 1000);
        }
        buf.extend_from_slice(b"\n");
        assert_eq!(
            codec.decode(&mut buf).unwrap(),
            Some(Frame::TooLong { bytes: 100_000 })
        );
    }

    proptest::proptest! {
        /// However the input is cut into reads, the same frames come out.
        #[test]
        fn any_chunking_yields_same_frames(
            lines in proptest::collection::vec("[ -~é\\r]{0,40}", 0..20),
            cuts in proptest::collection::vec(0usize..2000, 0..30),
        ) {
            let mut input = Vec::new();
            for l in &lines { input.extend_from_slice(l.as_bytes()); input.push(b'\n'); }
            let whole = run(30, &[&input]);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (input.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut prev = 0;
            for c in cuts { chunks.push(&input[prev..c]); prev = c; }
            chunks.push(&input[prev..]);
            proptest::prop_assert_eq!(run(30, &chunks), whole);
        }
    }
}
