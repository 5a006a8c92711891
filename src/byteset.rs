//! Where the bytes of a small set stand in a text, found 64 bytes at a
//! time.
//!
//! The scanner stops at a few kinds of byte (terminators, newlines, the
//! lead bytes of punctuation) and counts a few others (quotation marks and
//! brackets). Searching for each group with its own `memchr` call costs a
//! call, its set-up and a pass over the same bytes per group, at every
//! stop; in prose, where a stop comes every hundred bytes or so, that
//! set-up is most of the search. Instead, a [`Cursor`] reads the text in
//! blocks of 64 bytes, compares each block against every byte of the set
//! at once (AVX-512 where the processor has it: one load and a compare per
//! byte of the set; else SSE2, which every x86-64 processor has: four
//! loads and four compares per byte) and keeps the block's bits, so every
//! later position in the same block is found by a shift and a count of
//! trailing zeros.
//!
//! The same block bits serve the loops that read every byte of a text
//! for a few kinds of byte ([`scan_blocks`]): the decoder's count of
//! control characters, the parser's check that a line's whitespace is
//! already collapsed, the skeleton's screen for unknown glyphs and the
//! chunker's word count; and [`count_chars`], which every character
//! offset is counted with.

use std::ops::ControlFlow;

/// Bytes per block: one bit of a `u64` each.
pub(crate) const BLOCK: usize = 64;

/// The positions of one set of bytes in one text, read block by block. A
/// cursor moves forward cheaply and backward by reading a block again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<const N: usize> {
    set: [u8; N],
    /// Start of the block `bits` describes, or `usize::MAX` before the
    /// first read.
    block: usize,
    /// Bit `k` is set when the byte at `block + k` is in the set.
    bits: u64,
}

impl<const N: usize> Cursor<N> {
    /// A cursor over the bytes of `set`.
    pub(crate) const fn new(set: [u8; N]) -> Self {
        Cursor {
            set,
            block: usize::MAX,
            bits: 0,
        }
    }

    /// Replaces the byte at `index` of the set (the scanner's next list
    /// number); the block is read again on the next search.
    pub(crate) fn set_byte(&mut self, index: usize, byte: u8) {
        if let Some(slot) = self.set.get_mut(index)
            && *slot != byte
        {
            *slot = byte;
            self.block = usize::MAX;
        }
    }

    /// The first position at or after `from` whose byte is in the set.
    pub(crate) fn next(&mut self, bytes: &[u8], from: usize) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::cpu().avx512bw() {
            // SAFETY: the CPU has AVX-512BW, checked just above (`cpu()`
            // claims only what the processor has).
            return unsafe { self.next_512(bytes, from) };
        }
        self.next_by(bytes, from, |bytes, start, set| {
            block_bits(bytes, start, set)
        })
    }

    /// [`Cursor::next`] with AVX-512BW, where each block's compare is built
    /// into the search instead of called per block.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512BW.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw")]
    unsafe fn next_512(&mut self, bytes: &[u8], from: usize) -> Option<usize> {
        self.next_by(bytes, from, |bytes, start, set| {
            let rest = bytes.get(start..).unwrap_or_default();
            let rest = rest.get(..BLOCK).unwrap_or(rest);
            let within = bits_within(rest.len());
            // SAFETY: the CPU has AVX-512BW (this function's contract).
            let bits = unsafe { bits_of_512(rest, within, set, 0) };
            bits & within
        })
    }

    /// [`Cursor::next`] with `read` giving a block's bits.
    #[inline(always)]
    fn next_by(
        &mut self,
        bytes: &[u8],
        from: usize,
        read: impl Fn(&[u8], usize, &[u8; N]) -> u64,
    ) -> Option<usize> {
        let mut block = from - from % BLOCK;
        let mut skip = from - block;
        while block < bytes.len() {
            if self.block != block {
                self.bits = read(bytes, block, &self.set);
                self.block = block;
            }
            let bits = self.bits & (u64::MAX << skip);
            if bits != 0 {
                return Some(block + bits.trailing_zeros() as usize);
            }
            block += BLOCK;
            skip = 0;
        }
        None
    }
}

/// The bits of the block of `bytes` starting at `start`: bit `k` set when
/// the byte at `start + k` is one of `set` (never past the end of
/// `bytes`).
pub(crate) fn block_bits<const N: usize>(bytes: &[u8], start: usize, set: &[u8; N]) -> u64 {
    block_bits_or_below(bytes, start, set, 0)
}

/// [`block_bits`] for the bytes of `set` and every byte below `below` (the
/// control characters below 0x20, say; none when `below` is 0).
pub(crate) fn block_bits_or_below<const N: usize>(
    bytes: &[u8],
    start: usize,
    set: &[u8; N],
    below: u8,
) -> u64 {
    let rest = bytes.get(start..).unwrap_or_default();
    let rest = rest.get(..BLOCK).unwrap_or(rest);
    let within = bits_within(rest.len());
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::cpu().avx512bw() {
        // SAFETY: the CPU has AVX-512BW, checked just above (`cpu()`
        // claims only what the processor has).
        return unsafe { bits_of_512(rest, within, set, below) } & within;
    }
    let mut padded = [0u8; BLOCK];
    let block: &[u8; BLOCK] = match rest.try_into() {
        Ok(block) => block,
        Err(_) => {
            // The last, short block, padded with zeros, whose bits are
            // dropped.
            padded[..rest.len()].copy_from_slice(rest);
            &padded
        }
    };
    bits_of(block, set, below) & within
}

/// The bits of a block that stand on bytes of the text, when `len` bytes
/// of it are left from the block's start: all of them but in the last,
/// short block.
pub(crate) fn bits_within(len: usize) -> u64 {
    match len {
        n if n >= BLOCK => u64::MAX,
        n => (1u64 << n) - 1,
    }
}

/// The characters of `text`: its bytes less its UTF-8 continuation bytes
/// (0x80 to 0xBF), which with AVX-512BW are counted a block at a time (one
/// masked load, one compare and a population count per 64 bytes, where
/// the standard library's count reads a word at a time). Every character
/// offset of the canonical text and of its sentences is counted with it.
pub(crate) fn count_chars(text: &str) -> usize {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::cpu().avx512bw() {
        // SAFETY: the CPU has AVX-512BW, checked just above (`cpu()`
        // claims only what the processor has).
        return unsafe { count_chars_512(text.as_bytes()) };
    }
    text.chars().count()
}

/// [`count_chars`] with AVX-512BW, over the bytes of a `str`.
///
/// # Safety
///
/// The CPU must support AVX-512BW.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
unsafe fn count_chars_512(bytes: &[u8]) -> usize {
    use std::arch::x86_64::{_mm512_cmplt_epi8_mask, _mm512_maskz_loadu_epi8, _mm512_set1_epi8};
    let mut continuation = 0;
    for start in (0..bytes.len()).step_by(BLOCK) {
        let rest = &bytes[start..];
        // SAFETY: the mask selects no more than the `rest.len()` readable
        // bytes; a masked load touches no byte outside its mask (and loads
        // the others as 0, an ASCII byte).
        let v = unsafe { _mm512_maskz_loadu_epi8(bits_within(rest.len()), rest.as_ptr().cast()) };
        // As signed bytes, the continuation bytes are -128 to -65: exactly
        // those below -64 (0xC0, the first lead byte).
        continuation += _mm512_cmplt_epi8_mask(v, _mm512_set1_epi8(-64)).count_ones() as usize;
    }
    bytes.len() - continuation
}

/// [`bits_of`] with AVX-512BW: up to a block in one register (a short
/// last block read under the mask `within`, which reads nothing past its
/// end, so it needs no padded copy), each compare straight into a mask.
///
/// # Safety
///
/// The CPU must support AVX-512BW.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
#[inline]
unsafe fn bits_of_512<const N: usize>(block: &[u8], within: u64, set: &[u8; N], below: u8) -> u64 {
    debug_assert!(within.count_ones() as usize <= block.len());
    // SAFETY: `within` selects no more than the first `block.len()` bytes,
    // all readable; a masked load touches no byte outside its mask.
    let v = unsafe { std::arch::x86_64::_mm512_maskz_loadu_epi8(within, block.as_ptr().cast()) };
    matches_512(v, set, below)
}

/// The bits of the bytes of `v` that are in `set` or below `below`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
#[inline]
fn matches_512<const N: usize>(v: std::arch::x86_64::__m512i, set: &[u8; N], below: u8) -> u64 {
    use std::arch::x86_64::{_mm512_cmpeq_epi8_mask, _mm512_cmplt_epu8_mask, _mm512_set1_epi8};
    let low = _mm512_cmplt_epu8_mask(v, _mm512_set1_epi8(below as i8));
    set.iter().fold(low, |bits, &b| {
        bits | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b as i8))
    })
}

/// A set of bytes to find in a text: the bytes listed and every byte below
/// the bound (none when it is 0), as [`block_bits_or_below`] takes them.
pub(crate) type ByteSet<'a, const N: usize> = (&'a [u8; N], u8);

/// Calls `each(start, first, second)` for every block of `bytes`, in
/// order, with the bits of the block's bytes in each of the two sets,
/// until `each` breaks; what it broke with.
///
/// This is [`block_bits_or_below`] twice per block for loops that read
/// every byte of a text, but with AVX-512BW the whole loop runs in one
/// function built for it: a block is loaded once for both sets, and no
/// call and no check of the processor is paid per block, which in a loop
/// over short texts costs as much as the compares.
#[inline]
pub(crate) fn scan_blocks<const N: usize, const M: usize, B>(
    bytes: &[u8],
    first: ByteSet<'_, N>,
    second: ByteSet<'_, M>,
    mut each: impl FnMut(usize, u64, u64) -> ControlFlow<B>,
) -> ControlFlow<B> {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::cpu().avx512bw() {
        // SAFETY: the CPU has AVX-512BW, checked just above (`cpu()`
        // claims only what the processor has).
        return unsafe { scan_blocks_512(bytes, first, second, each) };
    }
    for start in (0..bytes.len()).step_by(BLOCK) {
        each(
            start,
            block_bits_or_below(bytes, start, first.0, first.1),
            block_bits_or_below(bytes, start, second.0, second.1),
        )?;
    }
    ControlFlow::Continue(())
}

/// [`scan_blocks`] with AVX-512BW.
///
/// # Safety
///
/// The CPU must support AVX-512BW.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
unsafe fn scan_blocks_512<const N: usize, const M: usize, B>(
    bytes: &[u8],
    first: ByteSet<'_, N>,
    second: ByteSet<'_, M>,
    mut each: impl FnMut(usize, u64, u64) -> ControlFlow<B>,
) -> ControlFlow<B> {
    for start in (0..bytes.len()).step_by(BLOCK) {
        let rest = &bytes[start..];
        let within = bits_within(rest.len());
        // SAFETY: `within` selects no more than the `rest.len()` readable
        // bytes; a masked load touches no byte outside its mask. The bytes
        // it leaves out load as 0, whose bits `within` clears.
        let v = unsafe { std::arch::x86_64::_mm512_maskz_loadu_epi8(within, rest.as_ptr().cast()) };
        each(
            start,
            matches_512(v, first.0, first.1) & within,
            matches_512(v, second.0, second.1) & within,
        )?;
    }
    ControlFlow::Continue(())
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn bits_of<const N: usize>(block: &[u8; BLOCK], set: &[u8; N], below: u8) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_setzero_si128,
    };
    let mut bits = 0u64;
    for (k, lane) in block.chunks_exact(16).enumerate() {
        // SAFETY: the build targets SSE2 (as every x86-64 build does, the
        // cfg above checks it), and `lane` is 16 readable bytes, which an
        // unaligned load reads exactly.
        let lane_bits = unsafe {
            let v = _mm_loadu_si128(lane.as_ptr().cast::<__m128i>());
            let mut hits = _mm_setzero_si128();
            if let Some(top) = below.checked_sub(1) {
                // Unsigned `v <= top`: the minimum of the two is `v`.
                let low = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(top as i8)), v);
                hits = _mm_or_si128(hits, low);
            }
            for &b in set {
                hits = _mm_or_si128(hits, _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8)));
            }
            _mm_movemask_epi8(hits) as u16
        };
        bits |= u64::from(lane_bits) << (16 * k);
    }
    bits
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn bits_of<const N: usize>(block: &[u8; BLOCK], set: &[u8; N], below: u8) -> u64 {
    block.iter().enumerate().fold(0u64, |bits, (k, b)| {
        bits | (u64::from(set.contains(b) || *b < below) << k)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions_by_bytes(bytes: &[u8], set: &[u8], from: usize) -> Option<usize> {
        (from..bytes.len()).find(|&i| set.contains(&bytes[i]))
    }

    #[test]
    fn finds_every_byte_of_the_set() {
        let text = "Hello. Is it? Yes!\nA — b “c” é".repeat(9);
        let bytes = text.as_bytes();
        let set = [b'.', b'?', b'!', b'\n', 0xE2];
        let mut cursor = Cursor::new(set);
        for from in 0..=bytes.len() + 2 {
            assert_eq!(
                cursor.next(bytes, from),
                positions_by_bytes(bytes, &set, from),
                "{from}"
            );
        }
        // Backwards too.
        for from in (0..bytes.len()).rev() {
            assert_eq!(
                cursor.next(bytes, from),
                positions_by_bytes(bytes, &set, from)
            );
        }
    }

    #[test]
    fn a_replaced_byte_is_searched_for_at_once() {
        let bytes = b"one 2. two 3. three";
        let mut cursor = Cursor::new([b'!', 0xFF]);
        assert_eq!(cursor.next(bytes, 0), None);
        cursor.set_byte(1, b'3');
        assert_eq!(cursor.next(bytes, 0), Some(11));
    }

    #[test]
    fn every_build_of_the_block_compare_agrees() {
        let block: [u8; BLOCK] = std::array::from_fn(|k| (k * 37 % 256) as u8 | 1);
        let set = [b'.', 0xE2, 0x81, 0xFF];
        for below in [0, 1, 0x20, 0x80, 0xFF] {
            let expected = block.iter().enumerate().fold(0u64, |bits, (k, b)| {
                bits | (u64::from(set.contains(b) || *b < below) << k)
            });
            assert_ne!(expected, 0);
            assert_eq!(bits_of(&block, &set, below), expected, "{below}");
            for len in [0, 1, 17, 63, 64] {
                let within = u64::MAX.checked_shr(64 - len).unwrap_or(0);
                assert_eq!(
                    block_bits_or_below(&block[..len as usize], 0, &set, below),
                    expected & within,
                    "{below} {len}"
                );
            }
            // Padding is never in a set, not even when 0 is.
            assert_eq!(block_bits(&block[..3], 0, &[0]), 0);
            #[cfg(target_arch = "x86_64")]
            if crate::cpu::cpu().avx512bw() {
                // SAFETY: the CPU has AVX-512BW, checked just above (`cpu()`
                // claims only what the processor has).
                let wide = unsafe { bits_of_512(&block, u64::MAX, &set, below) };
                assert_eq!(wide, expected, "{below}");
            }
        }
    }

    #[test]
    fn counts_characters_as_the_standard_library_does() {
        let text = "a é — “q” 𝄞 ".repeat(40);
        for end in (0..=text.len()).filter(|&end| text.is_char_boundary(end)) {
            for start in [0, 1, 3].into_iter().filter(|&s| s <= end) {
                if let Some(part) = text.get(start..end) {
                    assert_eq!(count_chars(part), part.chars().count(), "{start}..{end}");
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn counts_the_characters_of_any_text(text in "\\PC{0,300}") {
            proptest::prop_assert_eq!(count_chars(&text), text.chars().count());
        }

        #[test]
        fn finds_what_a_byte_by_byte_search_finds(
            bytes in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b' ', b'.', b'\n', 0xE2, 0x80, 0xFF]),
                0..300,
            ),
            froms in proptest::collection::vec(0usize..320, 1..20),
        ) {
            let set = [b'.', b'\n', 0xE2];
            let mut cursor = Cursor::new(set);
            for from in froms {
                proptest::prop_assert_eq!(
                    cursor.next(&bytes, from),
                    positions_by_bytes(&bytes, &set, from)
                );
            }
        }

        #[test]
        fn scans_the_bits_a_byte_by_byte_test_gives(
            bytes in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b' ', b'\t', b'.', 0x1F, 0xE2, 0x80, 0xFF]),
                0..300,
            ),
        ) {
            let mut scanned = Vec::new();
            let flow = scan_blocks(&bytes, (b".", 0x20), (&[0xE2, 0xFF], 0), |start, first, second| {
                scanned.push((start, first, second));
                ControlFlow::<()>::Continue(())
            });
            assert_eq!(flow, ControlFlow::Continue(()));
            let bits_by_bytes = |start: usize, test: &dyn Fn(u8) -> bool| {
                bytes[start..].iter().take(BLOCK).enumerate()
                    .fold(0u64, |bits, (k, &b)| bits | (u64::from(test(b)) << k))
            };
            let expected: Vec<_> = (0..bytes.len()).step_by(BLOCK).map(|start| (
                start,
                bits_by_bytes(start, &|b| b == b'.' || b < 0x20),
                bits_by_bytes(start, &|b| b == 0xE2 || b == 0xFF),
            )).collect();
            proptest::prop_assert_eq!(scanned, expected);
        }
    }
}
