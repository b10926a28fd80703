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
            if self.discarding.is_some() {
                self.next_index = 0;
                return Ok(self.discard(buf).map(|bytes| Frame::TooLong { bytes }));
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

/// One line of a chunk (see [`LineCodec::decode_chunk`]): where its content is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// The content's range in the chunk: without the terminator and a leading BOM.
    pub start: usize,
    pub end: usize,
    /// `Some(n)`: the line was longer than the limit (`n` bytes without terminator) and is
    /// dropped; the range is then empty.
    pub too_long: Option<u64>,
}

impl Piece {
    /// Whether the chunk's bytes from the content's start through the next byte are exactly
    /// the content and `\n` (what forwarding the line writes), so forwarded neighbours can
    /// be written as one slice of the chunk.
    pub fn bare(&self, chunk: &[u8]) -> bool {
        self.too_long.is_none() && chunk.get(self.end) == Some(&b'\n')
    }

    /// The frame this piece stands for (sharing the chunk, no copy).
    pub fn frame(&self, chunk: &Bytes) -> Frame {
        match self.too_long {
            Some(bytes) => Frame::TooLong { bytes },
            None => Frame::Line(chunk.slice(self.start..self.end)),
        }
    }
}

impl LineCodec {
    /// The whole-read form of [`Decoder::decode`], for the bridge's readers: after a read
    /// appended `new` bytes to `buf`, takes every complete line out of `buf` as one frozen
    /// chunk (one shared buffer per read instead of one per line) and appends to `pieces`
    /// where the lines are in it. At `eof` the rest of `buf` is the last line. Same rules,
    /// and the same frames in the same order, as [`Decoder::decode`] / `decode_eof`.
    ///
    /// `buf` must hold no `\n` before the read (true between calls): only the new bytes are
    /// searched, so a long line arriving in many reads is not searched again.
    pub fn decode_chunk(
        &mut self,
        buf: &mut BytesMut,
        new: usize,
        eof: bool,
        pieces: &mut Vec<Piece>,
    ) -> Bytes {
        let mut from = buf.len() - new.min(buf.len());
        if self.discarding.is_some() {
            // Everything in `buf` arrived while discarding.
            match self.discard(buf) {
                Some(bytes) => {
                    pieces.push(Self::dropped(bytes));
                    from = 0;
                }
                None => {
                    if eof {
                        if let Some(dropped) = self.discarding.take() {
                            let cr = u64::from(self.dropped_cr && dropped > 0);
                            pieces.push(Self::dropped(dropped - cr));
                        }
                    }
                    return Bytes::new();
                }
            }
        }
        let end = if eof {
            buf.len()
        } else {
            match memchr::memrchr(b'\n', &buf[from..]) {
                Some(p) => from + p + 1,
                None => {
                    // `+ 1` leaves room for a `\r` that may precede the coming `\n`.
                    if buf.len() > self.max_line + 1 {
                        self.dropped_cr = buf.last() == Some(&b'\r');
                        self.discarding = Some(buf.len() as u64);
                        buf.clear();
                    }
                    return Bytes::new();
                }
            }
        };
        let chunk = buf.split_to(end).freeze();
        let mut s = 0;
        // One search over the chunk (a search per line pays its setup per line), from where
        // this read's bytes start: the bytes before hold no `\n` (a long line is not searched
        // again). At EOF the chunk may end without a `\n`: its end closes the last line.
        let ends = memchr::memchr_iter(b'\n', &chunk[from..]).map(|p| from + p);
        for nl in ends.chain((chunk.last() != Some(&b'\n')).then_some(chunk.len())) {
            let mut e = nl;
            if e > s && chunk[e - 1] == b'\r' {
                e -= 1;
            }
            if e - s > self.max_line {
                pieces.push(Self::dropped((e - s) as u64));
            } else {
                let start = if chunk[s..e].starts_with(BOM) {
                    s + BOM.len()
                } else {
                    s
                };
                if !chunk[start..e].iter().all(u8::is_ascii_whitespace) {
                    pieces.push(Piece {
                        start,
                        end: e,
                        too_long: None,
                    });
                }
            }
            s = nl + 1;
        }
        chunk
    }

    /// In discard mode: drops `buf` up to and with the over-long line's `\n` and returns the
    /// line's length without terminator, or, with no `\n` yet, drops all of `buf`.
    fn discard(&mut self, buf: &mut BytesMut) -> Option<u64> {
        let dropped = self.discarding?;
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
                Some(dropped + pos as u64 - u64::from(cr))
            }
            None => {
                if let Some(&last) = buf.last() {
                    self.dropped_cr = last == b'\r';
                }
                self.discarding = Some(dropped + buf.len() as u64);
                buf.clear();
                None
            }
        }
    }

    fn dropped(bytes: u64) -> Piece {
        Piece {
            start: 0,
            end: 0,
            too_long: Some(bytes),
        }
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

    /// Feeds `chunks` through [`LineCodec::decode_chunk`], as the bridge's readers do.
    fn run_chunks(max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut codec = LineCodec::new(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut pieces = Vec::new();
        for (i, chunk) in chunks.iter().chain([&&b""[..]]).enumerate() {
            buf.extend_from_slice(chunk);
            let data = codec.decode_chunk(&mut buf, chunk.len(), i == chunks.len(), &mut pieces);
            for p in pieces.drain(..) {
                if p.bare(&data) {
                    assert_eq!(data[p.end], b'\n');
                }
                out.push(p.frame(&data));
            }
            assert!(!buf.contains(&b'\n'));
        }
        out
    }

    #[test]
    fn chunks_follow_the_same_rules() {
        for (max, chunks) in [
            (100, &[&b"1\n2\n3\n"[..]][..]),
            (100, &[b"\xEF\xBB\xBF{}\r\n", b"[]\r", b"\n"]),
            (100, &[b"\n\r\n  \n1\n\n"]),
            (4, &[b"12345", b"6789\nok\n"]),
            (4, &[b"123456\r\nok\n"]),
            (4, &[b"1234", b"\r", b"\n"]),
            (100, &[b"1\n2"]),
            (2, &[b"ok\n12345"]),
            (2, &[b"ok\n12345\r"]),
        ] {
            assert_eq!(run_chunks(max, chunks), run(max, chunks), "{chunks:?}");
        }
    }

    #[test]
    fn bare_lines_are_content_and_newline() {
        let mut codec = LineCodec::new(100);
        let mut buf = BytesMut::from(&b"a\n\xEF\xBB\xBFb\nc\r\n\nd\n"[..]);
        let mut pieces = Vec::new();
        let n = buf.len();
        let data = codec.decode_chunk(&mut buf, n, false, &mut pieces);
        let bare: Vec<bool> = pieces.iter().map(|p| p.bare(&data)).collect();
        assert_eq!(bare, [true, true, false, true]);
        assert_eq!(&data[pieces[1].start..=pieces[1].end], b"b\n");
    }

    /// `input` cut into reads at the positions `cuts` (taken modulo its length).
    fn cut(input: &[u8], cuts: Vec<usize>) -> Vec<&[u8]> {
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (input.len() + 1)).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut prev = 0;
        for c in cuts {
            chunks.push(&input[prev..c]);
            prev = c;
        }
        chunks.push(&input[prev..]);
        chunks
    }

    proptest::proptest! {
        /// Whole-read chunks yield the frames the line-by-line decoder yields, however
        /// the input is cut into reads.
        #[test]
        fn chunks_yield_the_decoders_frames(
            lines in proptest::collection::vec("(\u{FEFF})?[ -~é\r]{0,40}", 0..20),
            cuts in proptest::collection::vec(0usize..2000, 0..30),
            max in 1usize..50,
            last_newline in proptest::bool::ANY,
        ) {
            let mut input = Vec::new();
            for l in &lines { input.extend_from_slice(l.as_bytes()); input.push(b'\n'); }
            if !last_newline { input.pop(); }
            let chunks = cut(&input, cuts);
            proptest::prop_assert_eq!(run_chunks(max, &chunks), run(max, &chunks));
        }
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
            let chunks = cut(&input, cuts);
            proptest::prop_assert_eq!(run(30, &chunks), whole);
        }
    }
}
