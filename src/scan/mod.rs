//! The fast path of classification: a single-pass JSON validator specialised for the
//! JSON-RPC envelope, for the lines the bridge only forwards.
//!
//! Owns one question: "is this line, beyond doubt, a well-formed request, notification or
//! response, and where are its parts?" It answers with a [`Shape`] (byte offsets into the
//! line, no lifetime, no allocation), so it can run on a reader task and cross a channel.
//! [`scan`] accepts a strict subset of what [`crate::envelope::classify`] accepts and
//! agrees with it on everything it reports; `None` sends the line to `classify`, so `None`
//! is never wrong and only a `Some` must be right (differential tests and fuzzing). The
//! line is never copied; the one copy is the skeleton [`Memo`] keeps, beside the
//! forwarding path. Parts: `marks` (per-block bit marks), `json` (the validator), `memo`
//! (the skeleton cache); this file holds the types they share.

use bytes::Bytes;

use crate::codec::{Frame, Piece};

mod json;
mod marks;
mod memo;
#[cfg(test)]
mod testing;

#[doc(hidden)]
pub use json::assert_agrees;
pub use json::scan;
pub use memo::Memo;

/// A frame with its scan, made where the frame was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    pub frame: Frame,
    /// `None` for an over-long line, and for a line the router must classify itself.
    pub shape: Option<Shape>,
}

impl Scanned {
    pub fn new(frame: Frame) -> Self {
        let shape = match &frame {
            Frame::Line(line) => scan(line),
            Frame::TooLong { .. } => None,
        };
        Self { frame, shape }
    }
}

/// What one read produced, scanned: its complete lines as one shared chunk (see
/// [`crate::codec::LineCodec::decode_chunk`]) and, per line, where it is and its scan.
#[derive(Debug, Clone)]
pub struct Batch {
    pub data: Bytes,
    pub lines: Vec<(Piece, Option<Shape>)>,
}

impl Batch {
    /// Scans each piece of `data`, through `memo` (the input's; see [`Memo`]).
    pub fn scan(data: Bytes, pieces: &[Piece], memo: &mut Memo) -> Self {
        let lines = pieces
            .iter()
            .map(|p| {
                let shape = match p.too_long {
                    Some(_) => None,
                    None => memo.scan(&data[p.start..p.end]),
                };
                (*p, shape)
            })
            .collect();
        Self { data, lines }
    }
}

/// A range of bytes in the scanned line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    /// The spanned bytes of `line`.
    pub fn bytes(self, line: &[u8]) -> &[u8] {
        line.get(self.start..self.end).unwrap_or_default()
    }

    /// The spanned bytes of `line` as text (the scan checked they are UTF-8; a line that is
    /// not the scanned one yields "").
    pub fn text(self, line: &[u8]) -> &str {
        line.get(self.start..self.end)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }
}

/// What a valid line is, as byte offsets into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Request {
        /// The id's exact JSON text.
        id: Span,
        /// The method name (inside the quotes; it has no escapes).
        method: Span,
        /// The `params` value's JSON text (an object or an array).
        params: Option<Span>,
    },
    Notification {
        method: Span,
        params: Option<Span>,
    },
    Response {
        id: Span,
        /// True for `result`, false for `error` (an object).
        ok: bool,
        /// The `result` or `error` value's JSON text.
        outcome: Span,
    },
}

impl Shape {
    /// The same shape with each offset mapped by `at`.
    fn moved(self, at: impl Fn(usize) -> usize) -> Self {
        let span = |s: Span| Span {
            start: at(s.start),
            end: at(s.end),
        };
        match self {
            Shape::Request { id, method, params } => Shape::Request {
                id: span(id),
                method: span(method),
                params: params.map(span),
            },
            Shape::Notification { method, params } => Shape::Notification {
                method: span(method),
                params: params.map(span),
            },
            Shape::Response { id, ok, outcome } => Shape::Response {
                id: span(id),
                ok,
                outcome: span(outcome),
            },
        }
    }
}

/// Nesting deeper than this is left to the slow path (serde_json has no limit here).
pub const MAX_DEPTH: u32 = 64;
