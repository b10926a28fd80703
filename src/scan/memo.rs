//! The skeleton memo: a cache of the last line an input's scan read in full, so that the
//! next line of a stream costs compares of the bytes between its strings and a scan of
//! those strings only.
//!
//! Invariants: a line is decided through the memo exactly as [`super::scan`] alone decides
//! it (a proptest and the `envelope` fuzz target check it); the skeleton holds at most
//! [`MAX_SKELETON`] bytes, the memory bound per scanner.

use super::json::{scan_full, Scanner, MAX_GAPS};
use super::Shape;

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
/// longest string (interleaved sessions: the session id and the text; without it their
/// lines took the gaps form, and many sessions cost more CPU than one: figures in
/// `bench/results.md`); and the gaps form, any of its strings swapped. Every other line is
/// scanned in full, and becomes the skeleton when it is valid and its skeleton is at most
/// 4 KiB (the memory bound: one per scanner).
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
    /// [`super::scan`], through the skeleton when the line fits it.
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

#[cfg(test)]
mod tests {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::*;
    use crate::scan::scan;
    use crate::scan::testing::{agrees, cases, line, skeleton};

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

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]
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
}
