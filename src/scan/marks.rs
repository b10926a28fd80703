//! Per-64-byte-block bit marks: for each byte, whether it is `"`, `\\` or a control byte;
//! whether it is `"`; whether it is non-ASCII. SSE2 compares on x86-64 (through
//! `safe_arch`, every x86-64 has it), eight bytes at a time (SWAR) elsewhere.
//!
//! Owns only bytes, not JSON. Invariants: every kind of marks is exact, byte for byte (the
//! SIMD and SWAR forms agree, checked exhaustively per byte and on random blocks); bytes
//! past the end of a line are unmarked, as if spaces.

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
pub(super) fn any_special64(chunk: &[u8; 64]) -> (bool, bool) {
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
pub(super) fn any_special64(chunk: &[u8; 64]) -> (bool, bool) {
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
pub(super) fn marks(b: &[u8], k: usize) -> (u64, u64, u64) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
