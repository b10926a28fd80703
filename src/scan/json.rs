//! The JSON walk: [`scan`] reads a line once, validating it as JSON and collecting the
//! envelope's members, then applies the JSON-RPC rules.
//!
//! Invariants (see the parent module for the one with `classify`):
//! - Anything unusual (invalid JSON or UTF-8, any invalid JSON-RPC, batches, non-objects,
//!   duplicate or escaped envelope members, an escaped `method`, nesting deeper than
//!   [`MAX_DEPTH`]) returns `None`.
//! - UTF-8 is checked only where it can fail. Outside strings the grammar accepts ASCII
//!   bytes only, so a non-ASCII byte that the scan accepts is inside a string; every byte
//!   of every string is in a block the scan marks, and the marks flag bytes >= 0x80. Only a
//!   line with one is checked (with [`simdutf8`]); an all-ASCII line is read once.
//! - Strings are skipped with the block marks: the end of a string is a shift and a count
//!   of trailing zeros away, not a chain of loads and compares per byte.

use super::marks::{any_special64, marks};
use super::{Shape, Span, MAX_DEPTH};

/// The most string gaps a skeleton has (strings after them stay in its bytes).
pub(super) const MAX_GAPS: usize = 16;

/// A cursor over one line: where it is, the marks of the block it is in, and what the
/// memo needs from a full scan (the string values found, whether a byte was non-ASCII).
pub(super) struct Scanner<'a> {
    b: &'a [u8],
    pub(super) i: usize,
    /// The 64-byte block whose marks (see [`marks`]) are in `special` and `quote`.
    block: usize,
    special: u64,
    quote: u64,
    /// The first [`MAX_GAPS`] string values inside a container: where each one's opening
    /// quote is, and where the byte after its closing quote is (see [`super::Memo`]).
    gaps: [(usize, usize); MAX_GAPS],
    found: usize,
    /// Whether a block the scan marked had a non-ASCII byte (see [`scan`] on UTF-8).
    pub(super) high: bool,
}

impl<'a> Scanner<'a> {
    pub(super) fn new(b: &'a [u8], i: usize) -> Self {
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
    pub(super) fn string(&mut self) -> Option<bool> {
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

/// The eight bytes of `b` at `i`, when there are eight.
#[inline(always)]
fn word(b: &[u8], i: usize) -> Option<u64> {
    let mut w = [0u8; 8];
    w.copy_from_slice(b.get(i..i + 8)?);
    Some(u64::from_le_bytes(w))
}

/// Classifies `line` when it is plainly a valid request, notification or response; `None`
/// leaves it to [`crate::envelope::classify`] (see the module invariants).
pub fn scan(line: &[u8]) -> Option<Shape> {
    scan_full(line).map(|(shape, _)| shape)
}

/// A full scan's string values inside containers: where each is, and how many there are.
pub(super) type Gaps = ([(usize, usize); MAX_GAPS], usize);

/// The scan, and the string values inside containers it found (up to [`MAX_GAPS`]).
#[inline(always)]
pub(super) fn scan_full(line: &[u8]) -> Option<(Shape, Gaps)> {
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
    use proptest::prelude::*;

    use super::*;
    use crate::envelope::{classify, Kind};
    use crate::scan::testing::{agrees, cases, line};

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

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]
        /// Whenever the fast path decides, the serde path decides the same.
        #[test]
        fn scan_agrees_with_classify(line in line()) {
            agrees(&line);
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
