//! Arbitrary bytes, cut into arbitrary reads, through `LineCodec` (the `tokio_util`
//! `Decoder` contract, as `FramedRead` drives it).
//!
//! Input: `[limit][n][n bytes][n][n bytes]...`: the first byte is the line limit (0-63, so
//! over-long lines are common); each chunk is one read.
//!
//! Checked: `decode`/`decode_eof` never fail or panic; a `Line` is never longer than the
//! limit, never blank, never holds a `\n`; while waiting for a newline the buffer holds at
//! most `limit + 1` bytes; and the frames equal those of a straightforward reference
//! splitter over the whole input (so chunking never changes the result).
#![no_main]

use acp_question_bridge::codec::{Frame, LineCodec};
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::Decoder;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The framing rules of PROTOCOL.md sections 0 and 5, over the whole stream at once.
fn reference(limit: usize, stream: &[u8]) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut push = |raw: &[u8]| {
        let content = raw.strip_suffix(b"\r").unwrap_or(raw);
        if content.len() > limit {
            frames.push(Frame::TooLong {
                bytes: content.len() as u64,
            });
            return;
        }
        let content = content.strip_prefix(BOM).unwrap_or(content);
        if content.iter().all(|b| b.is_ascii_whitespace()) {
            return;
        }
        frames.push(Frame::Line(bytes::Bytes::copy_from_slice(content)));
    };
    let mut rest = stream;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        push(&rest[..nl]);
        rest = &rest[nl + 1..];
    }
    if !rest.is_empty() {
        push(rest);
    }
    frames
}

fuzz_target!(|data: &[u8]| {
    let Some((&limit, mut rest)) = data.split_first() else {
        return;
    };
    let limit = usize::from(limit % 64);
    let mut chunks: Vec<&[u8]> = Vec::new();
    while let Some((&n, tail)) = rest.split_first() {
        let n = usize::from(n).min(tail.len());
        chunks.push(&tail[..n]);
        rest = &tail[n..];
    }
    let stream: Vec<u8> = chunks.concat();

    let mut codec = LineCodec::new(limit);
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    let check = |f: &Frame| {
        if let Frame::Line(l) = f {
            assert!(
                l.len() <= limit,
                "line of {} bytes > limit {limit}",
                l.len()
            );
            assert!(!l.contains(&b'\n'));
            assert!(
                !l.iter().all(|b| b.is_ascii_whitespace()),
                "blank line yielded"
            );
        }
    };
    for chunk in &chunks {
        buf.extend_from_slice(chunk);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(f)) => {
                    check(&f);
                    got.push(f);
                }
                Ok(None) => break,
                Err(e) => panic!("decode returned an error: {e}"),
            }
        }
        assert!(
            buf.len() <= limit + 1,
            "buffer holds {} bytes with limit {limit}",
            buf.len()
        );
    }
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(f)) => {
                check(&f);
                got.push(f);
            }
            Ok(None) => break,
            Err(e) => panic!("decode_eof returned an error: {e}"),
        }
    }
    let want = reference(limit, &stream);
    assert_eq!(got, want, "chunks {chunks:?}");
});
