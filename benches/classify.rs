//! Micro-benchmark of the per-line hot path: scanning a line (`scan::scan`, the fast path the
//! reader tasks run), classifying it the full way (`envelope::classify`, the fallback), and
//! the whole router step for a forwarded notification (scan included), on the three message
//! sizes of the benchmark workloads; and a line of a stream scanned through the skeleton memo
//! (`scan::Memo`: the line before it had other text in the same message, or came from
//! another session). Run with
//! `cargo bench --bench classify`.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // denied in src/router/ only (clippy.toml)

use std::time::Instant;

use acp_question_bridge::codec::Frame;
use acp_question_bridge::envelope::classify;
use acp_question_bridge::router::{Input, Outbox, Router, RouterConfig, Side};
use acp_question_bridge::scan::{scan, Memo};
use bytes::Bytes;

fn main() {
    divan::main();
}

fn chunk(text_len: usize) -> Bytes {
    chunk_from(0, text_len)
}

/// A chunk whose text starts `skip` bytes into the sample text.
fn chunk_from(skip: usize, text_len: usize) -> Bytes {
    let text = "the agent reads src/main.rs and finds a bug ".repeat(text_len / 44 + 2);
    let text = &text[skip..];
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{}"}}}}}}}}"#,
        &text[..text_len]
    ))
}

/// A 240-byte chunk, a 20 KiB diff-sized line and a 1 MiB image-sized line.
const SIZES: [usize; 3] = [120, 20 << 10, 1 << 20];

#[divan::bench(args = SIZES)]
fn classify_line(bencher: divan::Bencher, size: usize) {
    let line = chunk(size);
    bencher
        .counter(divan::counter::BytesCount::new(line.len()))
        .bench(|| classify(divan::black_box(&line)).is_batch());
}

#[divan::bench(args = SIZES)]
fn scan_line(bencher: divan::Bencher, size: usize) {
    let line = chunk(size);
    bencher
        .counter(divan::counter::BytesCount::new(line.len()))
        .bench(|| scan(divan::black_box(&line)).is_some());
}

#[divan::bench(args = SIZES)]
fn memo_line(bencher: divan::Bencher, size: usize) {
    // Two lines of one stream, taken in turn: each differs from the one before in its text.
    through_memo(bencher, [chunk_from(0, size), chunk_from(1, size)]);
}

/// Two interleaved streams (sessions): each line differs from the one before in its session
/// id too, so the single-stream form misses and the skeleton's gaps decide.
#[divan::bench(args = SIZES)]
fn memo_sessions(bencher: divan::Bencher, size: usize) {
    let other = String::from_utf8(chunk_from(1, size).to_vec())
        .unwrap_or_default()
        .replace(r#""s1""#, r#""s2""#);
    through_memo(bencher, [chunk_from(0, size), Bytes::from(other)]);
}

/// Scans `lines` in turn through one memo.
fn through_memo(bencher: divan::Bencher, lines: [Bytes; 2]) {
    let mut memo = Memo::default();
    let mut n = 0usize;
    bencher
        .counter(divan::counter::BytesCount::new(lines[0].len()))
        .bench_local(|| {
            n += 1;
            memo.scan(divan::black_box(&lines[n & 1])).is_some()
        });
}

#[divan::bench(args = SIZES)]
fn router_forward(bencher: divan::Bencher, size: usize) {
    let line = chunk(size);
    let mut router = Router::new(
        RouterConfig::default(),
        std::time::Instant::now(),
        std::time::SystemTime::now(),
    );
    let mut out = Outbox::default();
    let now = Instant::now();
    bencher
        .counter(divan::counter::BytesCount::new(line.len()))
        .bench_local(|| {
            router.handle(
                Input::Frame(Side::Agent, Frame::Line(line.clone())),
                now,
                &mut out,
            );
            out.take_client().len()
        });
}
