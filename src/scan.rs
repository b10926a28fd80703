//! The fast path of classification: a single-pass JSON validator specialised for the
//! JSON-RPC envelope, for the lines the bridge only forwards.
//!
//! Owns one question: "is this line, beyond doubt, a well-formed request, notification or
//! response, and where are its parts?" It answers with a [`Shape`] (byte offsets into the
//! line, no lifetime, no allocation), so it can run on a reader task and cross a channel.
//!
//! Invariants:
//! - `scan` accepts a strict subset of what [`crate::envelope::classify`] accepts as a
//!   request, notification or response, and agrees with it on everything it reports (kind,
//!   id text, method, params text, outcome). Anything unusual (invalid JSON or UTF-8, any
//!   invalid JSON-RPC, batches, non-objects, duplicate or escaped envelope members, an
//!   escaped `method`, nesting deeper than [`MAX_DEPTH`]) returns `None`, and the caller
//!   falls back to `classify`, which decides exactly as it always has. So `None` is never
//!   wrong; only a `Some` must be right (checked by differential tests and fuzzing).
//! - UTF-8 is checked only where it can fail. Outside strings the grammar accepts ASCII
//!   bytes only, so a non-ASCII byte that the scan accepts is inside a string; and every
//!   byte of every string is in a 64-byte block the scan marks (below), whose marks also
//!   say whether it has a byte >= 0x80. A line with one is checked with [`simdutf8`] (many
//!   bytes per instruction) before it is reported; an all-ASCII line (base64 images, most
//!   code and prose) is not read a second time.
//! - Strings are skipped with marks: for each 64-byte block, one bit per `"`, `\\` and
//!   control byte, made with SIMD compares once per block. The end of a string is then a
//!   shift and a count of trailing zeros away, instead of a dependent chain of loads and
//!   compares per string (what bounded the token-by-token walk).
//! - The line is never copied. The one copy is the skeleton [`Memo`] keeps of a line it
//!   scanned in full (at most 4 KiB, into a buffer it reuses): a cache
//!   beside the forwarding path, not a step of it.

use bytes::Bytes;

use crate::codec::{Frame, Piece};

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

const ONES: u64 = u64::MAX / 255;
const HIGH: u64 = ONES << 7;
const LOW7: u64 = !HIGH;

/// Per byte of `w`, the high bit set exactly when the byte is zero (no carry crosses a
/// byte: the high bits are cleared before the add).
#[inline(always)]
fn zero_bytes(w: u64) -> u64 {
    !(((w & LOW7) + LOW7) | w) & HIGH
}

/// Per byte of `w`, the high bit set exactly when the byte is `"`, `\\` or a control
/// character (below 0x20; bytes of multi-byte UTF-8 characters are not).
#[inline(always)]
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn special(w: u64) -> u64 {
    // Below 0x20: adding 0x60 to the low seven bits leaves the high bit clear, and the
    // byte's own high bit is clear too.
    let ctrl = !(((w & LOW7) + ONES * 0x60) | w) & HIGH;
    zero_bytes(w ^ (ONES * u64::from(b'"'))) | zero_bytes(w ^ (ONES * u64::from(b'\\'))) | ctrl
}

/// One bit per byte of `chunk`: set when the byte is `"`, `\\` or a control character (below
/// 0x20); the same for `"` alone; and for bytes >= 0x80 (non-ASCII). SSE2 (in every x86-64)
/// through `safe_arch`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn special16(chunk: &[u8; 16]) -> (u32, u32, u32) {
    use safe_arch::{
        bitor_m128i, cmp_eq_mask_i8_m128i, cmp_lt_mask_i8_m128i, load_unaligned_m128i,
        move_mask_i8_m128i, set_splat_i8_m128i,
    };
    let v = load_unaligned_m128i(chunk);
    let quote = cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(b'"' as i8));
    let backslash = cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(b'\\' as i8));
    // Signed: a byte >= 0x80 is negative, so "< 0x20" also catches the non-ASCII bytes;
    // their sign bits (the mask of `v` itself) take them out again.
    let low = cmp_lt_mask_i8_m128i(v, set_splat_i8_m128i(0x20));
    let all = bitor_m128i(bitor_m128i(quote, backslash), low);
    let high = move_mask_i8_m128i(v) as u32;
    (
        move_mask_i8_m128i(all) as u32 & !high,
        move_mask_i8_m128i(quote) as u32,
        high,
    )
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn special16(chunk: &[u8; 16]) -> (u32, u32, u32) {
    special16_swar(chunk)
}

/// Whether any of the 64 bytes is `"`, `\\` or a control byte: the test that passes long
/// strings a block at a time (one mask for the whole block); and whether any is non-ASCII.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn any_special64(chunk: &[u8; 64]) -> (bool, bool) {
    use safe_arch::{
        bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, min_u8_m128i, move_mask_i8_m128i,
        set_splat_i8_m128i,
    };
    let mut any = set_splat_i8_m128i(0);
    let mut high = set_splat_i8_m128i(0);
    for sixteen in chunk.chunks_exact(16) {
        let v = load_unaligned_m128i(sixteen.try_into().unwrap_or(&[0; 16]));
        high = bitor_m128i(high, v);
        let quote = cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(b'"' as i8));
        let backslash = cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(b'\\' as i8));
        // Unsigned "<= 0x1F": the byte is its own minimum with 0x1F.
        let ctrl = cmp_eq_mask_i8_m128i(min_u8_m128i(v, set_splat_i8_m128i(0x1F)), v);
        any = bitor_m128i(any, bitor_m128i(bitor_m128i(quote, backslash), ctrl));
    }
    (move_mask_i8_m128i(any) != 0, move_mask_i8_m128i(high) != 0)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn any_special64(chunk: &[u8; 64]) -> (bool, bool) {
    let (m, _, h) = marks64(chunk);
    (m != 0, h != 0)
}

/// The portable version of [`special16`]: eight bytes at a time (SWAR), exact like it.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn special16_swar(chunk: &[u8; 16]) -> (u32, u32, u32) {
    // The high bit of each flagged byte, gathered into one byte (byte j to bit j).
    let pack = |m: u64| (((m >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56) as u32;
    let half = |k: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&chunk[k..k + 8]);
        let w = u64::from_le_bytes(w);
        (
            pack(special(w)),
            pack(zero_bytes(w ^ (ONES * u64::from(b'"')))),
            pack(w & HIGH),
        )
    };
    let ((m0, q0, h0), (m1, q1, h1)) = (half(0), half(8));
    (m0 | (m1 << 8), q0 | (q1 << 8), h0 | (h1 << 8))
}

/// The marks of the 64-byte block `k` of `b`: one bit per byte, set for `"`, `\\` and
/// control bytes; for `"` alone; and for non-ASCII bytes. Bytes past the end count as spaces
/// (unmarked).
#[inline(always)]
fn marks(b: &[u8], k: usize) -> (u64, u64, u64) {
    let start = k * 64;
    if let Some(chunk) = b.get(start..start + 64).and_then(|c| c.try_into().ok()) {
        return marks64(chunk);
    }
    // The last, partial block: the line's last 64 bytes, shifted so that bit 0 is the
    // block's first byte (no copy); a line shorter than 64 bytes is padded instead.
    let rest = b.len().saturating_sub(start);
    match b
        .get(b.len().wrapping_sub(64)..)
        .and_then(|c| c.try_into().ok())
    {
        Some(last) if rest > 0 => {
            let (m, q, h) = marks64(last);
            (m >> (64 - rest), q >> (64 - rest), h >> (64 - rest))
        }
        _ => marks_short(b.get(start..).unwrap_or_default()),
    }
}

/// [`marks`] of a line shorter than 64 bytes (or past the end: no marks).
#[inline(never)]
fn marks_short(rest: &[u8]) -> (u64, u64, u64) {
    let mut pad = [b' '; 64];
    let n = rest.len().min(64);
    pad[..n].copy_from_slice(&rest[..n]);
    marks64(&pad)
}

#[inline(always)]
fn marks64(chunk: &[u8; 64]) -> (u64, u64, u64) {
    let (mut special, mut quote, mut high) = (0u64, 0u64, 0u64);
    for (j, sixteen) in chunk.chunks_exact(16).enumerate() {
        let (m, q, h) = special16(sixteen.try_into().unwrap_or(&[0; 16]));
        special |= u64::from(m) << (16 * j);
        quote |= u64::from(q) << (16 * j);
        high |= u64::from(h) << (16 * j);
    }
    (special, quote, high)
}

/// The eight bytes of `b` at `i`, when there are eight.
#[inline(always)]
fn word(b: &[u8], i: usize) -> Option<u64> {
    let mut w = [0u8; 8];
    w.copy_from_slice(b.get(i..i + 8)?);
    Some(u64::from_le_bytes(w))
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    /// The 64-byte block whose marks (see [`marks`]) are in `special` and `quote`.
    block: usize,
    special: u64,
    quote: u64,
    /// The first [`MAX_GAPS`] string values inside a container: where each one's opening
    /// quote is, and where the byte after its closing quote is (see [`Memo`]).
    gaps: [(usize, usize); MAX_GAPS],
    found: usize,
    /// Whether a block the scan marked had a non-ASCII byte (see [`scan`] on UTF-8).
    high: bool,
}

impl<'a> Scanner<'a> {
    fn new(b: &'a [u8], i: usize) -> Self {
        Self {
            b,
            i,
            block: usize::MAX,
            special: 0,
            quote: 0,
            gaps: [(0, 0); MAX_GAPS],
            found: 0,
            high: false,
        }
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline(always)]
    fn ws(&mut self) {
        // Compact JSON has no whitespace: one compare decides the common case.
        if self.peek().is_some_and(|c| c > b' ') {
            return;
        }
        self.ws_rest();
    }

    #[inline(never)]
    fn ws_rest(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// Consumes `c` (after optional whitespace) or fails.
    #[inline(always)]
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            return Some(());
        }
        self.ws();
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// The position of the first marked byte (`"`, `\\`, control) at or after `i`, from the
    /// block marks (each block's marks are computed once: the scan only moves forward).
    #[inline(always)]
    fn next_mark(&mut self, mut i: usize) -> Option<usize> {
        loop {
            let k = i / 64;
            if k != self.block {
                if i >= self.b.len() {
                    return None;
                }
                let high;
                (self.special, self.quote, high) = marks(self.b, k);
                self.high |= high != 0;
                self.block = k;
            }
            let m = self.special & (u64::MAX << (i % 64));
            if m != 0 {
                return Some(k * 64 + m.trailing_zeros() as usize);
            }
            i = (k + 1) * 64;
            // A long string: whole blocks without a mark are passed with one test each.
            while let Some(chunk) = self.b.get(i..i + 64).and_then(|c| c.try_into().ok()) {
                let (special, high) = any_special64(chunk);
                self.high |= high;
                if special {
                    break;
                }
                i += 64;
            }
        }
    }

    /// Skips the string that starts at `self.i` (a `"`); true when it has escapes. The
    /// common case is one look at the marks; an escape goes to [`Scanner::escape`].
    #[inline(always)]
    fn string(&mut self) -> Option<bool> {
        let mut i = self.i + 1;
        let mut escaped = false;
        loop {
            let p = self.next_mark(i)?;
            if self.quote >> (p % 64) & 1 == 1 {
                self.i = p + 1;
                return Some(escaped);
            }
            escaped = true;
            i = self.escape(p)?;
        }
    }

    /// The position after the escape at `p` (a `\\`, or a control byte, which is invalid).
    #[inline(never)]
    fn escape(&self, p: usize) -> Option<usize> {
        let b = self.b;
        if b[p] != b'\\' {
            return None;
        }
        match *b.get(p + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(p + 2),
            b'u' => {
                let hex = b.get(p + 2..p + 6)?;
                hex.iter().all(u8::is_ascii_hexdigit).then_some(p + 6)
            }
            _ => None,
        }
    }

    #[inline(always)]
    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    /// Skips a number (RFC 8259 grammar) that starts at `self.i`.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// Skips one object key and its colon (the key at `self.i`, whitespace skipped).
    #[inline(always)]
    fn key(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        self.string()?;
        self.eat(b':')?;
        self.ws();
        Some(())
    }

    /// Skips the value at `self.i` (no leading whitespace) and validates it.
    fn value(&mut self) -> Option<()> {
        // One bit per open container, 1 for an object; `depth` of them are open.
        let mut stack: u64 = 0;
        let mut depth: u32 = 0;
        loop {
            match self.peek()? {
                b'"' => {
                    let start = self.i;
                    self.string()?;
                    // `depth` is never 0 here: `value` is not given top-level strings.
                    if depth > 0 && self.found < MAX_GAPS {
                        self.gaps[self.found] = (start, self.i);
                        self.found += 1;
                    }
                }
                c @ (b'{' | b'[') => {
                    self.i += 1;
                    self.ws();
                    let close = if c == b'{' { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.i += 1;
                    } else {
                        if depth == MAX_DEPTH {
                            return None;
                        }
                        stack = (stack << 1) | u64::from(c == b'{');
                        depth += 1;
                        if c == b'{' {
                            self.key()?;
                        }
                        continue;
                    }
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                b'-' | b'0'..=b'9' => self.number()?,
                _ => return None,
            }
            // A value is complete: close what it completes, or go on to the next one.
            loop {
                if depth == 0 {
                    return Some(());
                }
                self.ws();
                let object = stack & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        self.ws();
                        if object {
                            self.key()?;
                        }
                        break;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return None,
                }
                self.i += 1;
                stack >>= 1;
                depth -= 1;
            }
        }
    }
}

/// The envelope's members, as the spans of their values.
#[derive(Default)]
struct Members {
    jsonrpc: Option<Span>,
    id: Option<Span>,
    method: Option<Span>,
    params: Option<Span>,
    result: Option<Span>,
    error: Option<Span>,
}

/// A key as a little-endian integer (keys of at most eight bytes).
const fn key(k: &[u8]) -> u64 {
    let mut w = 0u64;
    let mut n = 0;
    while n < k.len() {
        w |= (k[n] as u64) << (8 * n);
        n += 1;
    }
    w
}

impl Members {
    /// The slot of the member named by `line[start..end]` (a key without escapes).
    #[inline(always)]
    fn slot(&mut self, line: &[u8], start: usize, end: usize) -> Option<(&mut Option<Span>, bool)> {
        let len = end - start;
        if !(2..=7).contains(&len) {
            return None;
        }
        // The eight bytes at the key, cut to its length (a key has no NUL, so the padding
        // cannot make two keys equal).
        let w = match word(line, start) {
            Some(w) => w & ((1u64 << (8 * len)) - 1),
            None => line[start..end]
                .iter()
                .rev()
                .fold(0, |w, &c| (w << 8) | u64::from(c)),
        };
        const JSONRPC: u64 = key(b"jsonrpc");
        const ID: u64 = key(b"id");
        const METHOD: u64 = key(b"method");
        const PARAMS: u64 = key(b"params");
        const RESULT: u64 = key(b"result");
        const ERROR: u64 = key(b"error");
        // The flag: whether this is `method`.
        match w {
            JSONRPC => Some((&mut self.jsonrpc, false)),
            ID => Some((&mut self.id, false)),
            METHOD => Some((&mut self.method, true)),
            PARAMS => Some((&mut self.params, false)),
            RESULT => Some((&mut self.result, false)),
            ERROR => Some((&mut self.error, false)),
            _ => None,
        }
    }
}

/// Classifies `line` when it is plainly a valid request, notification or response; `None`
/// leaves it to [`crate::envelope::classify`] (see the module invariants).
pub fn scan(line: &[u8]) -> Option<Shape> {
    scan_full(line).map(|(shape, _)| shape)
}

/// The last line an input's scan read in full, as a skeleton: its bytes around its string
/// values inside containers (its gaps, at most 16), and its shape.
///
/// Streamed messages differ from the one before in a few strings (the next piece of text;
/// a session id when sessions interleave): same method and nesting. A line that has the
/// skeleton's exact bytes around valid JSON strings is valid exactly when the remembered
/// line was, with the same shape moved by the strings' changes of length: string tokens
/// were swapped for others, at places (inside `params`, `result`, `error` or another
/// container member) that no envelope rule looks into. So only those strings are scanned;
/// the rest is compared. Three forms are tried, cheapest first: the remembered line with
/// another longest string (one stream: the next piece of text); with another first and
/// longest string (interleaved sessions: the session id and the text; without it the gaps
/// form cost 100 sessions ~10% more CPU than one); and the gaps form, any of its strings
/// swapped. Every other line is scanned in full, and becomes the skeleton when it is valid
/// and its skeleton is at most 4 KiB (the memory bound: one per scanner).
#[derive(Debug, Default)]
pub struct Memo {
    /// The remembered line's bytes outside its gaps, in order. Each gap's segment ends with
    /// the gap's opening quote; the gap is the rest of the string, closing quote included.
    lit: Vec<u8>,
    /// Per gap: where its segment ends in `lit`, and where the string started (its opening
    /// quote) and ended (after its closing quote) in the remembered line.
    gaps: Vec<Gap>,
    /// The shape, in the remembered line; `None` while nothing is remembered.
    shape: Option<Shape>,
    /// The fast form for a single stream, tried first: the remembered line up to and
    /// including the opening quote of its longest gap, and after that gap (empty when over
    /// [`MAX_SKELETON`]); and where that gap ended in it.
    prefix: Vec<u8>,
    suffix: Vec<u8>,
    end: usize,
    #[cfg(test)]
    hits: usize,
}

#[derive(Debug, Clone, Copy)]
struct Gap {
    lit_end: usize,
    start: usize,
    end: usize,
}

impl Memo {
    /// [`scan`], through the skeleton when the line fits it.
    pub fn scan(&mut self, line: &[u8]) -> Option<Shape> {
        if let Some(shape) = self.reuse(line) {
            #[cfg(test)]
            {
                self.hits += 1;
            }
            return Some(shape);
        }
        let (shape, (gaps, found)) = scan_full(line)?;
        let gaps = &gaps[..found];
        let holes: usize = gaps.iter().map(|(a, b)| b - a - 1).sum();
        if !gaps.is_empty() && line.len() - holes <= MAX_SKELETON {
            self.lit.clear();
            self.gaps.clear();
            let mut from = 0;
            for &(start, end) in gaps {
                self.lit.extend_from_slice(&line[from..=start]);
                self.gaps.push(Gap {
                    lit_end: self.lit.len(),
                    start,
                    end,
                });
                from = end;
            }
            self.lit.extend_from_slice(&line[from..]);
            self.shape = Some(shape);
            self.prefix.clear();
            self.suffix.clear();
            let longest = gaps.iter().max_by_key(|(a, b)| b - a).copied();
            if let Some((start, end)) =
                longest.filter(|(a, b)| line.len() - (b - a) <= MAX_SKELETON)
            {
                self.prefix.extend_from_slice(&line[..=start]);
                self.suffix.extend_from_slice(&line[end..]);
                self.end = end;
            }
        }
        Some(shape)
    }

    /// The shape of `line` when it is the remembered line with another longest string.
    #[inline]
    fn reuse_one(&self, line: &[u8]) -> Option<Shape> {
        let shape = self.shape?;
        if self.prefix.is_empty()
            || line.len() < self.prefix.len() + self.suffix.len() + 1
            || !line.starts_with(&self.prefix)
        {
            return None;
        }
        let start = self.prefix.len() - 1;
        let mut s = Scanner::new(line, start);
        s.string()?;
        if line[s.i..] != self.suffix[..] {
            return None;
        }
        // The rest was checked when it was remembered; the string is cut at ASCII quotes.
        if s.high && simdutf8::basic::from_utf8(&line[start..s.i]).is_err() {
            return None;
        }
        Some(shape.moved(|x| if x >= self.end { x - self.end + s.i } else { x }))
    }

    /// The form for interleaved streams, tried second: where the remembered line's first
    /// gap (a session id) starts and ends, when the single-stream form exists and that gap
    /// is before its longest one (in `prefix`). The line is then `prefix` with that string
    /// swapped, another longest string, and `suffix`.
    #[inline]
    fn first_gap(&self) -> Option<(usize, usize)> {
        let gap = self.gaps.first()?;
        (gap.end < self.prefix.len()).then_some((gap.start, gap.end))
    }

    /// The shape of `line` when it is the remembered line with another first string and
    /// another longest string (a line of another session of the same stream).
    #[inline]
    fn reuse_two(&self, line: &[u8]) -> Option<Shape> {
        let shape = self.shape?;
        let (first, first_end) = self.first_gap()?;
        // The remembered line up to the first string's opening quote, and from after it up
        // to the longest string's opening quote.
        let (head, mid) = (&self.prefix[..=first], &self.prefix[first_end..]);
        if !line.starts_with(head) {
            return None;
        }
        let mut s = Scanner::new(line, first);
        s.string()?;
        let moved_by = s.i as isize - first_end as isize;
        if !line.get(s.i..)?.starts_with(mid) {
            return None;
        }
        s.i += mid.len() - 1;
        s.string()?;
        if line.get(s.i..)? != &self.suffix[..] {
            return None;
        }
        // As in `reuse`: the skeleton is valid UTF-8 and cut at ASCII quotes.
        if s.high && simdutf8::basic::from_utf8(&line[first..s.i]).is_err() {
            return None;
        }
        // No offset the shape holds is inside a gap.
        Some(shape.moved(|x| {
            if x >= self.end {
                x - self.end + s.i
            } else if x >= first_end {
                x.wrapping_add_signed(moved_by)
            } else {
                x
            }
        }))
    }

    /// The shape of `line` when it is the skeleton around valid strings.
    #[inline]
    fn reuse(&self, line: &[u8]) -> Option<Shape> {
        if let Some(shape) = self.reuse_one(line) {
            return Some(shape);
        }
        if let Some(shape) = self.reuse_two(line) {
            return Some(shape);
        }
        let shape = self.shape?;
        let mut s = Scanner::new(line, 0);
        // Where each gap's string is in `line`.
        let mut now = [(0usize, 0usize); MAX_GAPS];
        let (mut pos, mut from) = (0, 0);
        for (g, gap) in self.gaps.iter().enumerate() {
            let segment = &self.lit[from..gap.lit_end];
            if !line.get(pos..)?.starts_with(segment) {
                return None;
            }
            // The segment ends with the string's opening quote.
            s.i = pos + segment.len() - 1;
            let start = s.i;
            s.string()?;
            now[g] = (start, s.i);
            (pos, from) = (s.i, gap.lit_end);
        }
        if line.get(pos..)? != &self.lit[from..] {
            return None;
        }
        // The skeleton is valid UTF-8, and it is cut at ASCII quotes: the line is valid
        // exactly when its strings are, so when one had a byte >= 0x80 the stretch from the
        // first string to the last is checked, in one call.
        let n = self.gaps.len();
        if s.high && simdutf8::basic::from_utf8(&line[now[0].0..now[n - 1].1]).is_err() {
            return None;
        }
        // An offset of the remembered line moves by the change of length of the strings
        // before it (no offset the shape holds is inside a gap): `shift[k]` for the first
        // `k` strings, which end at or before it.
        let mut shift = [0isize; MAX_GAPS + 1];
        for (g, (gap, &(start, end))) in self.gaps.iter().zip(&now).enumerate() {
            shift[g + 1] = shift[g] + (end - start) as isize - (gap.end - gap.start) as isize;
        }
        Some(shape.moved(|x| {
            let k = self.gaps.partition_point(|gap| gap.end <= x);
            x.wrapping_add_signed(shift[k])
        }))
    }
}

/// The most bytes a skeleton keeps (its bytes outside the gaps): a line with more is not the
/// streaming kind, and is not copied.
const MAX_SKELETON: usize = 4096;

/// The most string gaps a skeleton has (strings after them stay in its bytes).
const MAX_GAPS: usize = 16;

/// A full scan's string values inside containers: where each is, and how many there are.
type Gaps = ([(usize, usize); MAX_GAPS], usize);

/// The scan, and the string values inside containers it found (up to [`MAX_GAPS`]).
#[inline(always)]
fn scan_full(line: &[u8]) -> Option<(Shape, Gaps)> {
    let mut s = Scanner::new(line, 0);
    let shape = envelope(&mut s)?;
    if s.high && simdutf8::basic::from_utf8(line).is_err() {
        return None;
    }
    Some((shape, (s.gaps, s.found)))
}

/// The scan proper: the envelope's members, then the JSON-RPC rules.
#[inline(always)]
fn envelope(s: &mut Scanner<'_>) -> Option<Shape> {
    let line = s.b;
    s.eat(b'{')?;
    let mut m = Members::default();
    let mut method_escaped = false;
    s.ws();
    if s.peek()? == b'}' {
        return None; // `{}` is invalid JSON-RPC
    }
    loop {
        if s.peek()? != b'"' {
            return None;
        }
        let key_start = s.i + 1;
        if s.string()? {
            return None; // an escaped key could spell a member's name
        }
        let key_end = s.i - 1;
        s.eat(b':')?;
        s.ws();
        let start = s.i;
        let escaped = if s.peek()? == b'"' {
            s.string()?
        } else {
            s.value()?;
            false
        };
        if let Some((slot, is_method)) = m.slot(line, key_start, key_end) {
            if slot.is_some() {
                return None; // a duplicate member
            }
            *slot = Some(Span { start, end: s.i });
            if is_method {
                method_escaped = escaped;
            }
        }
        s.ws();
        match s.peek()? {
            b',' => {
                s.i += 1;
                s.ws();
            }
            b'}' => {
                s.i += 1;
                break;
            }
            _ => return None,
        }
    }
    s.ws();
    if s.i != line.len() {
        return None;
    }
    let first = |span: Span| line[span.start];
    if &line[m.jsonrpc?.start..m.jsonrpc?.end] != b"\"2.0\"" {
        return None;
    }
    if let Some(id) = m.id {
        if !matches!(first(id), b'"' | b'-' | b'0'..=b'9' | b'n') {
            return None;
        }
    }
    if let Some(method) = m.method {
        let inner = Span {
            start: method.start + 1,
            end: method.end - 1,
        };
        if first(method) != b'"'
            || method_escaped
            || m.result.is_some()
            || m.error.is_some()
            || m.params.is_some_and(|p| !matches!(first(p), b'{' | b'['))
        {
            return None;
        }
        return Some(match m.id {
            Some(id) => Shape::Request {
                id,
                method: inner,
                params: m.params,
            },
            None => Shape::Notification {
                method: inner,
                params: m.params,
            },
        });
    }
    match (m.id?, m.result, m.error) {
        (id, Some(outcome), None) => Some(Shape::Response {
            id,
            ok: true,
            outcome,
        }),
        (id, None, Some(outcome)) if first(outcome) == b'{' => Some(Shape::Response {
            id,
            ok: false,
            outcome,
        }),
        _ => None,
    }
}

/// The differential check shared by the tests and the `envelope` fuzz target: when `scan`
/// decides a line, `kind` (what [`crate::envelope::classify`] made of it) says the same,
/// down to the text of every part. Panics on a disagreement; returns the scan.
#[doc(hidden)]
pub fn assert_agrees(line: &[u8], kind: &crate::envelope::Kind<'_>) -> Option<Shape> {
    use crate::envelope::Kind;
    let shape = scan(line)?;
    let text = |s: Span| s.text(line);
    match (shape, kind) {
        (
            Shape::Request { id, method, params },
            Kind::Request {
                id: i,
                method: m,
                params: p,
            },
        ) => {
            assert_eq!(text(id), i.as_json());
            assert_eq!(text(method), m.as_ref());
            assert_eq!(params.map(text), p.map(|p| p.get()));
        }
        (
            Shape::Notification { method, params },
            Kind::Notification {
                method: m,
                params: p,
            },
        ) => {
            assert_eq!(text(method), m.as_ref());
            assert_eq!(params.map(text), p.map(|p| p.get()));
        }
        (Shape::Response { id, ok, outcome }, Kind::Response { id: i, outcome: o }) => {
            assert_eq!(text(id), i.as_json());
            assert_eq!(ok, o.is_ok());
            let raw = match o {
                Ok(r) | Err(r) => r.get(),
            };
            assert_eq!(text(outcome), raw);
        }
        (s, k) => panic!(
            "scan says {s:?}, classify {k:?}: {}",
            String::from_utf8_lossy(line)
        ),
    }
    Some(shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::{classify, Kind};

    /// The differential check: when `scan` decides, `classify` decides the same.
    fn agrees(line: &[u8]) -> Option<Shape> {
        assert_agrees(line, &classify(line))
    }

    #[test]
    fn plain_messages_are_scanned() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":"1","method":"session/prompt","params":{"n":1e400}}"#[..],
            br#" { "method" : "a" , "id" : -0.5e+3 , "jsonrpc" : "2.0" } "#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"t":"\u00e9 \"q\" \\ \/ \b\f\n\r\t","u":"über ✓ 🙂"}}"#.as_bytes(),
            br#"{"jsonrpc":"2.0","id":null,"result":null}"#,
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"},"x":[1,{"y":[]},{}]}"#,
            br#"{"jsonrpc":"2.0","id":3,"result":[true,false,null,0,-1,2.5,1E2,"s",[[[]]]]}"#,
            br#"{"x":1,"x":2,"jsonrpc":"2.0","method":"a","params":[]}"#,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\r\t ",
        ] {
            assert!(agrees(line).is_some(), "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn anything_unusual_is_left_to_classify() {
        for line in [
            &b""[..],
            b"   ",
            b"[]",
            b"[{\"jsonrpc\":\"2.0\",\"method\":\"a\"}]",
            b"42",
            b"{}",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"} x",
            b"\x0c{\"jsonrpc\":\"2.0\",\"method\":\"a\"}",
            br#"{"jsonrpc":"2.0","method":"a","method":"b"}"#,
            br#"{"jsonrpc":"2.0","method":"session\/update"}"#,
            br#"{"jsonrpc":"2.0","method":"session\/update","params":{},"id":1}"#,
            br#"{"jsonrp\u0063":"2.0","method":"a"}"#,
            br#"{"jsonrpc":"2\u002e0","method":"a"}"#,
            br#"{"jsonrpc":"1.0","method":"a"}"#,
            br#"{"method":"a"}"#,
            br#"{"jsonrpc":"2.0","id":{},"method":"a"}"#,
            br#"{"jsonrpc":"2.0","id":true,"method":"a"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"a","params":3}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"a","result":3}"#,
            br#"{"jsonrpc":"2.0","id":1}"#,
            br#"{"jsonrpc":"2.0","result":1}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"error":"e"}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":{"n":01}}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":{"n":1.}}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":{"n":-}}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":{"n":1e}}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":{"n":tru}}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":{"s":"\x"}}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":{"s":"\u12g4"}}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":[1,]}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":{"a":1,}}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":{"a" 1}}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":{1:1}}"#,
            br#"{"jsonrpc":"2.0","method":"a","params":[1}"#,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":{\"s\":\"a\tb\"}}",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":{\"s\":\"\xff\"}}",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":{\"s\":\"\xed\xa0\x80\"}}",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":{\"s\":\"\xc0\xaf\"}}",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":{\"s\":\"\xf4\x90\x80\x80\"}}",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":{\"s\":\"\xe2\x9c\"}}",
        ] {
            assert_eq!(scan(line), None, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn deep_nesting_is_left_to_classify() {
        let deep = |n: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"a","params":{}{}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        // The innermost `[]` is empty: `n` brackets open `n - 1` containers.
        assert!(agrees(deep(MAX_DEPTH as usize + 1).as_bytes()).is_some());
        assert_eq!(scan(deep(MAX_DEPTH as usize + 2).as_bytes()), None);
        assert!(matches!(
            classify(deep(1000).as_bytes()),
            Kind::Notification { .. }
        ));
    }

    /// What the memo makes of a line, checked against a scan of the line alone.
    fn memo_agrees(memo: &mut Memo, line: &[u8]) -> Option<Shape> {
        let alone = agrees(line);
        let got = memo.scan(line);
        assert_eq!(got, alone, "{}", String::from_utf8_lossy(line));
        got
    }

    fn chunk(text: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}}}}}"#
        )
    }

    #[test]
    fn streamed_lines_reuse_the_skeleton_when_they_fit_it() {
        let mut memo = Memo::default();
        assert!(memo_agrees(&mut memo, chunk("the first piece of text").as_bytes()).is_some());
        // The gaps: the session id, `agent_message_chunk`, `text` and the text.
        assert_eq!(memo.gaps.len(), 4);
        assert!(memo.lit.ends_with(br#""text":"}}}}"#));
        let mut hits = 0;
        for text in [
            "",
            "x",
            "a longer piece of text, über ✓ 🙂, than the first one was",
            r#"escapes \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00"#,
            r#"ends in an escaped backslash \\"#,
        ] {
            assert!(
                memo_agrees(&mut memo, chunk(text).as_bytes()).is_some(),
                "{text}"
            );
            hits += 1;
            assert_eq!(memo.hits, hits, "reused");
        }
        // Another session, and another kind of update, fit the same skeleton.
        for line in [
            chunk("more").replace(r#""s1""#, r#""sess_0123456789""#),
            chunk("more").replace("agent_message_chunk", "agent_thought_chunk"),
        ] {
            assert!(memo_agrees(&mut memo, line.as_bytes()).is_some(), "{line}");
            hits += 1;
            assert_eq!(memo.hits, hits, "reused");
        }
    }

    #[test]
    fn interleaved_sessions_take_the_two_string_form() {
        let mut memo = Memo::default();
        memo_agrees(&mut memo, chunk("the first piece of text").as_bytes());
        let session =
            |sid: &str, text: &str| chunk(text).replace(r#""s1""#, &format!(r#""{sid}""#));
        for (sid, text) in [
            ("s2", "other text, über ✓"),
            ("sess_0123456789", ""),
            ("", r#"escapes \" \\ \u00e9"#),
            (r#"\u00e9\"q"#, "x"),
        ] {
            let line = session(sid, text);
            let line = line.as_bytes();
            assert_eq!(memo.reuse_one(line), None, "{sid}");
            let two = memo.reuse_two(line);
            assert!(two.is_some(), "{sid}");
            assert_eq!(two, agrees(line), "{sid}");
            assert_eq!(memo_agrees(&mut memo, line), two);
        }
        // Invalid strings in either place, and strings that end early.
        for (sid, text) in [
            ("a\tb", "x"),
            ("s2", "a\tb"),
            (r#"bad \x"#, "x"),
            ("s2", r#"early"}}}}"#),
            (r#"s2","x":"y"#, "x"),
        ] {
            let line = session(sid, text);
            assert_eq!(memo.reuse_two(line.as_bytes()), None, "{sid} {text}");
            memo_agrees(&mut memo, line.as_bytes());
            memo_agrees(&mut memo, chunk("the first piece of text").as_bytes());
        }
        // A third string that differs is the gaps form's.
        let line = session("s2", "x").replace("agent_message_chunk", "agent_thought_chunk");
        assert_eq!(memo.reuse_two(line.as_bytes()), None);
        assert!(memo_agrees(&mut memo, line.as_bytes()).is_some());
        // Offsets between the two strings (the id, the method, where `params` starts) move
        // by the first one's change of length; those after the second by both.
        let request = |sid: &str, text: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","x":{{"sid":"{sid}"}},"id":"r1","method":"m","params":{{"text":"{text}"}}}}"#
            )
        };
        let mut memo = Memo::default();
        memo_agrees(
            &mut memo,
            request("s1", "the first piece of text").as_bytes(),
        );
        for (sid, text) in [
            ("s22", "x"),
            ("", "a much longer piece of text than before"),
            ("s", ""),
        ] {
            let line = request(sid, text);
            let two = memo.reuse_two(line.as_bytes());
            assert!(matches!(two, Some(Shape::Request { .. })), "{line}");
            assert_eq!(two, agrees(line.as_bytes()), "{line}");
        }
    }

    #[test]
    fn a_line_that_only_looks_like_the_skeleton_is_scanned_alone() {
        let mut memo = Memo::default();
        memo_agrees(&mut memo, chunk("the first piece of text").as_bytes());
        // Invalid strings, and strings that end early (the rest is not the suffix).
        for text in [
            "a raw \t tab",
            "a raw \n newline",
            r#"a bad \x escape"#,
            r#"a short \u12 escape"#,
            r#"a lone backslash \"#,
            r#"early"}}}}"#,
            r#"early"}}}},"x":"#,
        ] {
            assert_eq!(
                memo_agrees(&mut memo, chunk(text).as_bytes()),
                None,
                "{text}"
            );
        }
        // Text that is not UTF-8: a stray continuation byte, a lead byte without its
        // continuation, an encoded surrogate, an overlong form, past U+10FFFF.
        for bad in [
            &b"\x80"[..],
            b"\xc3",
            b"ab\xe2\x9c",
            b"\xed\xa0\x80",
            b"\xc0\xaf",
            b"\xf4\x90\x80\x80",
            b"\xff",
        ] {
            let good = chunk("é ✓ 🙂").into_bytes();
            assert!(memo_agrees(&mut memo, &good).is_some());
            let at = good.len() - b"\"}}}}".len();
            let line = [&good[..at], bad, &good[at..]].concat();
            assert_eq!(memo_agrees(&mut memo, &line), None, "{bad:x?}");
            // In a 64-byte block of the string's middle, with no quote or backslash (passed
            // by the whole-block test).
            // The text is ASCII up to there, so no earlier mark saw a non-ASCII byte.
            let ascii = chunk("plain text").into_bytes();
            let at = ascii.len() - b"\"}}}}".len();
            let far = [
                &ascii[..at],
                &[b'a'; 100][..],
                bad,
                &[b'a'; 300],
                &ascii[at..],
            ]
            .concat();
            assert_eq!(memo_agrees(&mut memo, &far), None, "{bad:x?}");
        }
        // Valid, but with one more member in `content`: scanned in full, and remembered.
        let more = chunk(r#"early" , "x":"y"#);
        let hits = memo.hits;
        assert!(memo_agrees(&mut memo, more.as_bytes()).is_some());
        assert_eq!((memo.hits, memo.gaps.len()), (hits, 5));
        assert!(memo.lit.ends_with(br#""text":" , "x":"}}}}"#));
        memo_agrees(&mut memo, chunk("the first piece of text").as_bytes());
        // Valid lines with different bytes outside the strings.
        for line in [
            chunk("x").replace("}}}}", r#"}},"x":1}}"#),
            chunk("x") + " ",
            chunk("x").replace(r#""s1""#, "7"),
            chunk("x").replace(r#"{"jsonrpc"#, r#"{"id":1,"jsonrpc"#),
        ] {
            assert!(memo_agrees(&mut memo, line.as_bytes()).is_some(), "{line}");
        }
        // Invalid ones.
        for line in [
            chunk("x").replace("}}}}", "}}}}}"),
            chunk("x").replace("}}}}", "}}}"),
            chunk("x").replace("}}}}", "}}}},"),
            chunk("x").replace(r#"{"jsonrpc"#, r#"{"method":"a","jsonrpc"#),
        ] {
            assert_eq!(memo_agrees(&mut memo, line.as_bytes()), None, "{line}");
        }
        // Same length, and quotes where the strings were: only the bytes outside them tell.
        for line in [
            chunk("x").replace(r#""2.0""#, r#""2.1""#),
            chunk("x").replace(r#""s1""#, r#""s\x""#),
            chunk("x").replace(r#""sessionId""#, r#""sessionI\""#),
            chunk("x").replace(r#""type""#, r#""typ\u""#),
            chunk("x").replace("}}}}", "}}]}"),
        ] {
            memo_agrees(&mut memo, chunk("the first piece of text").as_bytes());
            assert_eq!(memo_agrees(&mut memo, line.as_bytes()), None, "{line}");
        }
    }

    #[test]
    fn a_large_skeleton_is_not_kept() {
        let mut memo = Memo::default();
        memo_agrees(&mut memo, chunk("a").as_bytes());
        let small = memo.lit.clone();
        let many = format!(
            r#"[{}"longest string"]"#,
            r#""s","#.repeat(MAX_SKELETON / 4)
        );
        let big = format!(r#"{{"jsonrpc":"2.0","method":"m","params":{many}}}"#);
        assert!(memo_agrees(&mut memo, big.as_bytes()).is_some());
        assert_eq!(memo.lit, small, "the old skeleton stays");
    }

    #[test]
    fn a_moved_shape_points_at_the_same_parts() {
        let mut memo = Memo::default();
        let a = br#"{"jsonrpc":"2.0","result":{"content":[{"text":"short"}]},"id":"abc"}"#;
        let b =
            br#"{"jsonrpc":"2.0","result":{"content":[{"text":"a good deal longer"}]},"id":"abc"}"#;
        memo_agrees(&mut memo, a);
        let Some(Shape::Response { id, outcome, .. }) = memo_agrees(&mut memo, b) else {
            panic!("not a response");
        };
        assert_eq!(id.text(b), r#""abc""#);
        assert_eq!(
            outcome.text(b),
            r#"{"content":[{"text":"a good deal longer"}]}"#
        );
    }

    /// The marks a block should have, byte by byte.
    fn expected(bytes: &[u8]) -> (u64, u64, u64) {
        bytes
            .iter()
            .enumerate()
            .fold((0, 0, 0), |(m, q, h), (j, &c)| {
                let bit = 1u64 << j;
                let special = c == b'"' || c == b'\\' || c < 0x20;
                (
                    m | if special { bit } else { 0 },
                    q | if c == b'"' { bit } else { 0 },
                    h | if c >= 0x80 { bit } else { 0 },
                )
            })
    }

    fn random_bytes(rng: &mut u64, out: &mut [u8]) {
        for c in out {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            // Mostly plain ASCII, sometimes a special byte.
            *c = match *rng % 24 {
                0 => b'"',
                1 => b'\\',
                2 => (*rng >> 8) as u8 & 0x1F,
                3 => 0x80 | (*rng >> 8) as u8,
                _ => 0x20 + ((*rng >> 8) % 0x60) as u8,
            };
        }
    }

    #[test]
    fn special16_marks_exactly_the_special_bytes() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            let mut chunk = [0u8; 16];
            random_bytes(&mut rng, &mut chunk);
            let want = expected(&chunk);
            for (m, q, h) in [special16(&chunk), special16_swar(&chunk)] {
                let got = (u64::from(m), u64::from(q), u64::from(h));
                assert_eq!(got, want, "{chunk:x?}");
            }
        }
    }

    #[test]
    fn marks_cover_every_block_and_the_padded_tail() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        for len in 0..300 {
            let mut line = vec![0u8; len];
            random_bytes(&mut rng, &mut line);
            for k in 0..len.div_ceil(64) {
                let end = (k * 64 + 64).min(len);
                assert_eq!(marks(&line, k), expected(&line[k * 64..end]), "{len} {k}");
            }
        }
    }

    #[test]
    fn any_special64_agrees_with_marks() {
        let mut rng = 0x1234_5678_9ABC_DEF1u64;
        for _ in 0..50_000 {
            let mut chunk = [b'a'; 64];
            // Zero to two special bytes (or none at all) in a block of plain text.
            for _ in 0..rng % 3 {
                let mut one = [0u8; 1];
                random_bytes(&mut rng, &mut one);
                chunk[(rng % 64) as usize] = one[0];
            }
            random_bytes(&mut rng, &mut [0u8; 1]);
            let (m, _, h) = expected(&chunk);
            assert_eq!(any_special64(&chunk), (m != 0, h != 0), "{chunk:x?}");
        }
    }

    #[test]
    fn special_marks_exactly_the_special_bytes() {
        for c in 0..=0xFFu8 {
            for filler in [b'a', b' ', 0, 0x1F, 0x7F, b'"', b'\\', 0x80, 0xC3, 0xFF] {
                for pos in 0..8 {
                    let mut w = [filler; 8];
                    w[pos] = c;
                    let m = special(u64::from_le_bytes(w));
                    let want = expected(&w).0;
                    let got = (0..8).fold(0, |acc, j| acc | ((m >> (8 * j + 7)) & 1) << j);
                    assert_eq!(got, want, "{w:x?}");
                }
            }
        }
    }

    mod differential {
        use super::agrees;
        use crate::scan::{scan, Memo};
        use proptest::collection::vec;
        use proptest::prelude::*;

        fn string_lit() -> impl Strategy<Value = String> {
            prop_oneof![
                Just("\"2.0\"".to_owned()),
                Just("\"session/update\"".to_owned()),
                "\"([a-z /é🙂✓]|\\\\[\"\\\\/bfnrtx]|\\\\u[0-9a-fA-F]{4}|\\\\ud83d|\\\\ude00|\t)*\"",
            ]
        }

        fn json_value() -> impl Strategy<Value = String> {
            let leaf = prop_oneof![
                Just("null".to_owned()),
                Just("true".to_owned()),
                Just("false".to_owned()),
                "-?(0|[1-9][0-9]{0,3})(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?",
                "-?0[0-9]|1e400|-|\\.5",
                string_lit(),
            ];
            leaf.prop_recursive(4, 32, 4, |inner| {
                prop_oneof![
                    vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                    vec((string_lit(), inner), 0..4).prop_map(|v| {
                        let members: Vec<String> =
                            v.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                        format!("{{{}}}", members.join(","))
                    }),
                ]
            })
        }

        fn member() -> impl Strategy<Value = String> {
            let name = prop_oneof![
                Just("\"jsonrpc\""),
                Just("\"id\""),
                Just("\"method\""),
                Just("\"params\""),
                Just("\"result\""),
                Just("\"error\""),
                Just("\"x\""),
                Just("\"i\\u0064\""),
            ];
            let value = prop_oneof![
                json_value(),
                Just("\"2.0\"".to_owned()),
                Just("7".to_owned()),
                Just("\"s/m\"".to_owned()),
                Just("{\"sessionId\":\"s1\"}".to_owned()),
            ];
            (name, value, "[ \t\r\n]{0,2}")
                .prop_map(|(n, v, ws)| format!("{ws}{n}{ws}:{ws}{v}{ws}"))
        }

        /// A message with a string value somewhere inside a container, members in any
        /// order (the string is not always the longest, nor always valid).
        fn skeleton() -> impl Strategy<Value = String> {
            let inner = (json_value(), string_lit(), json_value())
                .prop_map(|(a, s, b)| format!(r#"{{"a":{a},"t":[1,{s}],"b":{b}}}"#));
            let head = prop_oneof![
                Just(r#""jsonrpc":"2.0","method":"session/update","params""#),
                Just(r#""method":"m","jsonrpc":"2.0","id":7,"params""#),
                Just(r#""jsonrpc":"2.0","id":"x","result""#),
                Just(r#""jsonrpc":"2.0","id":null,"error""#),
                Just(r#""jsonrpc":"2.0","x""#),
            ];
            let tail = prop_oneof![Just(""), Just(r#","id":-1"#), Just(r#","z":"zz""#)];
            (head, inner, tail).prop_map(|(h, i, t)| format!("{{{h}:{i}{t}}}"))
        }

        /// An envelope of random members, then (sometimes) a random edit of its bytes.
        fn line() -> impl Strategy<Value = Vec<u8>> {
            let envelope = vec(member(), 0..7).prop_map(|m| format!("{{{}}}", m.join(",")));
            let edit = prop_oneof![
                4 => Just(None),
                1 => (any::<prop::sample::Index>(), prop::sample::select(
                    &[b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'1', b'n', 0x01, 0x0c, 0xFF, 0xC3, 0xE2, 0x80, b' '][..]
                )).prop_map(|(i, b)| Some((i, Some(b)))),
                1 => any::<prop::sample::Index>().prop_map(|i| Some((i, None))),
            ];
            (envelope, edit).prop_map(|(e, edit)| {
                let mut bytes = e.into_bytes();
                match edit {
                    Some((i, Some(b))) if !bytes.is_empty() => {
                        let i = i.index(bytes.len());
                        bytes[i] = b;
                    }
                    Some((i, None)) => bytes.truncate(i.index(bytes.len() + 1)),
                    _ => {}
                }
                bytes
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(20_000))]
            /// Whenever the fast path decides, the serde path decides the same.
            #[test]
            fn scan_agrees_with_classify(line in line()) {
                agrees(&line);
            }

            /// A line scanned through the memo is decided exactly as alone: after any line,
            /// and after one it shares a skeleton with (the remembered line with its strings
            /// swapped for other tokens, valid or not).
            #[test]
            fn memo_decides_as_a_scan_alone(
                first in line(),
                second in prop_oneof![skeleton().prop_map(String::into_bytes), line()],
                swaps in vec(r#""([a-z /é🙂"\\]|\\["\\/bfnrtux]|\\u[0-9a-fA-F]{4}|\t|\}|\]|,|:)*"?"#, 1..4),
                // Sometimes a byte that breaks the swapped string's UTF-8.
                bad in proptest::option::of((any::<prop::sample::Index>(), prop::sample::select(&[0x80u8, 0xC3, 0xE2, 0xED, 0xF4, 0xFF][..]))),
            ) {
                let mut memo = Memo::default();
                prop_assert_eq!(memo.scan(&first), scan(&first));
                prop_assert_eq!(memo.scan(&second), agrees(&second));
                if memo.shape.is_some() {
                    // The skeleton, each gap filled with one of the swaps in turn.
                    let mut fit = Vec::new();
                    let mut from = 0;
                    for (g, gap) in memo.gaps.iter().enumerate() {
                        fit.extend_from_slice(&memo.lit[from..gap.lit_end - 1]);
                        let mut swap = swaps[g % swaps.len()].clone().into_bytes();
                        if let (0, Some((at, byte))) = (g, bad) {
                            swap.insert(at.index(swap.len() + 1), byte);
                        }
                        fit.extend_from_slice(&swap);
                        from = gap.lit_end;
                    }
                    fit.extend_from_slice(&memo.lit[from..]);
                    prop_assert_eq!(memo.scan(&fit), agrees(&fit));
                }
                // The remembered line with only its first and longest strings swapped (what
                // the two-string form decides).
                let mut memo = Memo::default();
                if let (Some(_), Some(first_gap)) = (memo.scan(&second), memo.first_gap()) {
                    let longest = memo.end;
                    let long_start = memo.prefix.len() - 1;
                    let swap = |g: usize| {
                        let mut swap = swaps[g % swaps.len()].clone().into_bytes();
                        if let (0, Some((at, byte))) = (g, bad) {
                            swap.insert(at.index(swap.len() + 1), byte);
                        }
                        swap
                    };
                    let fit = [
                        &second[..first_gap.0],
                        &swap(0),
                        &second[first_gap.1..long_start],
                        &swap(1),
                        &second[longest..],
                    ]
                    .concat();
                    prop_assert_eq!(memo.scan(&fit), agrees(&fit));
                }
            }
        }

        /// The same over every line of the fixtures and fuzz corpora in the repository.
        #[test]
        fn scan_agrees_on_recorded_lines() {
            let mut seen = 0;
            let mut scanned = 0;
            for dir in ["fixtures", "fuzz/corpus/envelope", "fuzz/corpus/router"] {
                let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let bytes = std::fs::read(entry.path()).unwrap_or_default();
                    for line in bytes.split(|&b| b == b'\n') {
                        // Fixture lines wrap a message: `{"client":{...}}`.
                        let inner = line
                            .iter()
                            .position(|&b| b == b':')
                            .and_then(|c| line.get(c + 1..line.len().checked_sub(1)?));
                        for l in [Some(line), inner].into_iter().flatten() {
                            seen += 1;
                            scanned += usize::from(agrees(l).is_some());
                        }
                    }
                }
            }
            assert!(
                seen > 100 && scanned > 50,
                "{seen} lines, {scanned} scanned"
            );
        }
    }
}
