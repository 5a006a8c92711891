//! Dynamic int8 quantization of the encoder's dense layers
//! (`embedding.quantization: int8`).
//!
//! Each weight matrix is quantized once, at load: one scale per output
//! row, `w ≈ scale · q` with `q` in −127..=127. Each input is quantized
//! as it comes ("dynamic"), one token row at a time, to bytes over the
//! row's own range: `x ≈ scale · (u − zero)` with `u` in 0..=255. A
//! range rather than a magnitude matters after GELU, whose outputs are
//! almost all above −0.17: a symmetric code would spend half its steps
//! on values that never occur. The product of the two integer matrices
//! is summed exactly in i32, then scaled back to f32, so the only error
//! is the rounding of the two operands.
//!
//! On CPUs with AVX-512 VNNI one instruction (`vpdpbusd`) multiplies 64
//! byte pairs and adds them into 16 sums, where an f32 fused multiply-add
//! does 8 or 16: the product runs several times faster and reads a
//! quarter of the weight bytes. `vpdpbusd` multiplies unsigned by signed
//! bytes, which is the shape of the two codes: each sum `Σ u · q` is
//! corrected by `zero · Σ q` of its weight row afterwards. Other CPUs run
//! the same arithmetic in plain Rust: the same vectors, slowly.

use rayon::prelude::*;

use crate::packed::{BLOCK, LEAST_BLOCKS_PER_PART, TILE_BLOCKS, TILE_TOKENS};

/// Input columns multiplied per instruction and lane (`vpdpbusd` sums
/// four byte products into each 32-bit lane).
const GROUP: usize = 4;

/// The largest quantized magnitude: symmetric, so that −q is a value too.
const LEVELS: f32 = 127.0;

/// A weight matrix `[outputs, inputs]` quantized per output row and
/// packed for the kernel: blocks of [`BLOCK`] output rows, within each
/// block the inputs in groups of [`GROUP`], each group stored as the
/// block's 16 rows × 4 bytes (64 bytes, one register).
pub struct Int8Matrix {
    inputs: usize,
    outputs: usize,
    /// Inputs rounded up to a multiple of [`GROUP`]; the padding is zero.
    padded_inputs: usize,
    packed: Vec<i8>,
    /// `w[o, ·] ≈ scales[o] · q[o, ·]`.
    scales: Vec<f32>,
    /// `Σ_k q[o, k]`: times an input row's zero, what its code's offset
    /// adds to the row's sum for output `o`.
    row_sums: Vec<i32>,
}

impl Int8Matrix {
    /// Quantizes `weight` (`[outputs, inputs]`, row-major).
    pub fn quantize(weight: &[f32], inputs: usize, outputs: usize) -> Self {
        assert_eq!(weight.len(), inputs * outputs);
        let padded_inputs = inputs.next_multiple_of(GROUP);
        let groups = padded_inputs / GROUP;
        let blocks = outputs.div_ceil(BLOCK);
        let mut packed = vec![0i8; blocks * groups * BLOCK * GROUP];
        let mut scales = vec![0f32; outputs];
        let mut row_sums = vec![0i32; outputs];
        for (o, row) in weight.chunks_exact(inputs).enumerate() {
            let largest = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            let scale = if largest > 0.0 { largest / LEVELS } else { 1.0 };
            scales[o] = scale;
            let (block, lane) = (o / BLOCK, o % BLOCK);
            let mut sum = 0i32;
            for (k, &v) in row.iter().enumerate() {
                let q = (v / scale).round().clamp(-LEVELS, LEVELS) as i8;
                sum += i32::from(q);
                let (group, byte) = (k / GROUP, k % GROUP);
                packed[((block * groups + group) * BLOCK + lane) * GROUP + byte] = q;
            }
            row_sums[o] = sum;
        }
        Self {
            inputs,
            outputs,
            padded_inputs,
            packed,
            scales,
            row_sums,
        }
    }

    /// Bytes the quantized matrix holds.
    pub fn bytes(&self) -> usize {
        self.packed.len() + 8 * self.outputs
    }

    /// `out[t, o] += x[t, ·] · w[o, ·]` for every token row of `x`
    /// (`[tokens, inputs]`), through the int8 product. A few tokens (one
    /// query) share the output blocks among the cores; many tokens are
    /// already spread over the cores a batch each.
    pub fn multiply_add(&self, x: &[f32], tokens: usize, out: &mut [f32], few_rows: usize) {
        assert_eq!(x.len(), tokens * self.inputs);
        assert!(out.len() >= tokens * self.outputs);
        if tokens == 0 {
            return;
        }
        let inputs = quantize_rows(x, self.inputs, self.padded_inputs);
        let blocks = self.outputs.div_ceil(BLOCK);
        let parts = rayon::current_num_threads().min(blocks / LEAST_BLOCKS_PER_PART);
        if tokens > few_rows || parts <= 1 {
            let mut sums = vec![0i32; tokens * blocks * BLOCK];
            self.sums(&inputs.bytes, tokens, 0..blocks, &mut sums);
            self.scale_into(&sums, &inputs, 0..blocks, out);
            return;
        }
        let per_part = blocks.div_ceil(parts);
        let shares: Vec<(std::ops::Range<usize>, Vec<i32>)> = (0..blocks)
            .step_by(per_part)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|first| {
                let range = first..(first + per_part).min(blocks);
                let mut sums = vec![0i32; tokens * range.len() * BLOCK];
                self.sums(&inputs.bytes, tokens, range.clone(), &mut sums);
                (range, sums)
            })
            .collect();
        for (range, sums) in shares {
            self.scale_into(&sums, &inputs, range, out);
        }
    }

    /// The i32 sums of output blocks `blocks` for every token:
    /// `sums[(t · blocks.len() + b) · BLOCK + lane]`, zero offset included.
    fn sums(&self, x: &[u8], tokens: usize, blocks: std::ops::Range<usize>, sums: &mut [i32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if vnni_512() {
                // SAFETY: the CPU has AVX-512F and AVX-512 VNNI, checked
                // just above; the slices have the lengths `sums_vnni`
                // documents.
                unsafe { self.sums_vnni(x, tokens, blocks, sums) };
                return;
            }
        }
        self.sums_portable(x, tokens, blocks, sums);
    }

    fn sums_portable(
        &self,
        x: &[u8],
        tokens: usize,
        blocks: std::ops::Range<usize>,
        sums: &mut [i32],
    ) {
        let groups = self.padded_inputs / GROUP;
        let width = blocks.len();
        for (b, block) in blocks.enumerate() {
            let packed =
                &self.packed[block * groups * BLOCK * GROUP..(block + 1) * groups * BLOCK * GROUP];
            for t in 0..tokens {
                let row = &x[t * self.padded_inputs..(t + 1) * self.padded_inputs];
                let out = &mut sums[(t * width + b) * BLOCK..(t * width + b + 1) * BLOCK];
                for (g, lanes) in packed.chunks_exact(BLOCK * GROUP).enumerate() {
                    let xs = &row[g * GROUP..(g + 1) * GROUP];
                    for (sum, w) in out.iter_mut().zip(lanes.chunks_exact(GROUP)) {
                        for (a, b) in xs.iter().zip(w) {
                            *sum += i32::from(*a) * i32::from(*b);
                        }
                    }
                }
            }
        }
    }

    /// [`Self::sums`] with `vpdpbusd`: [`TILE_TOKENS`] tokens by
    /// [`TILE_BLOCKS`] blocks of sums held in registers over the whole
    /// input, each weight register used by every token of the tile.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F and AVX-512 VNNI. `x` holds `tokens`
    /// rows of `padded_inputs` bytes; `sums` holds `tokens · blocks.len()
    /// · BLOCK` values.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vnni")]
    unsafe fn sums_vnni(
        &self,
        x: &[u8],
        tokens: usize,
        blocks: std::ops::Range<usize>,
        sums: &mut [i32],
    ) {
        let width = blocks.len();
        // Tokens a chunk at a time, every block group over the whole
        // chunk: a group's weights come from memory once per chunk.
        for chunk in (0..tokens).step_by(CHUNK_TOKENS) {
            let chunk_end = (chunk + CHUNK_TOKENS).min(tokens);
            let mut b = 0;
            while b < width {
                let count = (width - b).min(TILE_BLOCKS);
                let first = blocks.start + b;
                let mut t = chunk;
                while t < chunk_end {
                    let rows = (chunk_end - t).min(TILE_TOKENS);
                    // SAFETY: the tile lies inside `x`, `sums` and
                    // `packed` (rows ≤ tokens − t, count ≤ width − b), the
                    // CPU checked by the caller.
                    unsafe {
                        match (rows, count) {
                            (6, TILE_BLOCKS) => {
                                self.tile::<6, TILE_BLOCKS>(x, t, first, b, width, sums)
                            }
                            (5, TILE_BLOCKS) => {
                                self.tile::<5, TILE_BLOCKS>(x, t, first, b, width, sums)
                            }
                            (4, TILE_BLOCKS) => {
                                self.tile::<4, TILE_BLOCKS>(x, t, first, b, width, sums)
                            }
                            (3, TILE_BLOCKS) => {
                                self.tile::<3, TILE_BLOCKS>(x, t, first, b, width, sums)
                            }
                            (2, TILE_BLOCKS) => {
                                self.tile::<2, TILE_BLOCKS>(x, t, first, b, width, sums)
                            }
                            (1, TILE_BLOCKS) => {
                                self.tile::<1, TILE_BLOCKS>(x, t, first, b, width, sums)
                            }
                            _ => self.edge(x, t, rows, first, count, b, width, sums),
                        }
                    }
                    t += rows;
                }
                b += count;
            }
        }
    }

    /// A tile of fewer than [`TILE_BLOCKS`] blocks (the last of a row),
    /// one token and block at a time.
    ///
    /// # Safety
    ///
    /// As [`Self::tile`].
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vnni")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn edge(
        &self,
        x: &[u8],
        first_token: usize,
        rows: usize,
        first_block: usize,
        count: usize,
        column: usize,
        width: usize,
        sums: &mut [i32],
    ) {
        for r in 0..rows {
            for c in 0..count {
                // SAFETY: as the caller's, one token and one block.
                unsafe {
                    self.tile::<1, 1>(x, first_token + r, first_block + c, column + c, width, sums)
                };
            }
        }
    }

    /// The sums of tokens `first_token..+T` over blocks
    /// `first_block..+B`, written at column `column` of `sums` (whose rows
    /// are `width` blocks wide).
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F and AVX-512 VNNI; the tokens must be
    /// rows of `x`, the blocks blocks of the matrix and the columns
    /// columns of `sums`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vnni")]
    unsafe fn tile<const T: usize, const B: usize>(
        &self,
        x: &[u8],
        first_token: usize,
        first_block: usize,
        column: usize,
        width: usize,
        sums: &mut [i32],
    ) {
        use std::arch::x86_64::{
            __m512i, _mm512_dpbusd_epi32, _mm512_loadu_si512, _mm512_set1_epi32,
            _mm512_setzero_si512, _mm512_storeu_si512,
        };
        let groups = self.padded_inputs / GROUP;
        let block_bytes = groups * BLOCK * GROUP;
        // The bounds of every read and write below, checked once per tile
        // (in every build: the loads and stores are unchecked).
        assert!((first_block + B) * block_bytes <= self.packed.len());
        assert!((first_token + T) * self.padded_inputs <= x.len());
        assert!(((first_token + T - 1) * width + column + B) * BLOCK <= sums.len());
        let mut acc = [[_mm512_setzero_si512(); B]; T];
        let weights = self.packed.as_ptr();
        let inputs = x.as_ptr();
        for g in 0..groups {
            let mut w = [_mm512_setzero_si512(); B];
            for (j, w) in w.iter_mut().enumerate() {
                let offset = (first_block + j) * block_bytes + g * BLOCK * GROUP;
                // SAFETY: a whole 64-byte group of block `first_block + j`.
                *w = unsafe { _mm512_loadu_si512(weights.add(offset).cast::<__m512i>()) };
            }
            for (i, acc) in acc.iter_mut().enumerate() {
                let offset = (first_token + i) * self.padded_inputs + g * GROUP;
                // SAFETY: four bytes of row `first_token + i`, read
                // unaligned.
                let four = unsafe { inputs.add(offset).cast::<i32>().read_unaligned() };
                let xv = _mm512_set1_epi32(four);
                for (acc, w) in acc.iter_mut().zip(&w) {
                    *acc = _mm512_dpbusd_epi32(*acc, xv, *w);
                }
            }
        }
        for (i, acc) in acc.iter().enumerate() {
            for (j, acc) in acc.iter().enumerate() {
                let at = ((first_token + i) * width + column + j) * BLOCK;
                // SAFETY: 16 i32 inside `sums`, written unaligned.
                unsafe { _mm512_storeu_si512(sums.as_mut_ptr().add(at).cast::<__m512i>(), *acc) };
            }
        }
    }

    /// `out[t, o] += scale_x[t] · scale_w[o] · (sum − zero[t] · Σq[o])`
    /// for the outputs of `blocks`.
    fn scale_into(
        &self,
        sums: &[i32],
        inputs: &QuantizedRows,
        blocks: std::ops::Range<usize>,
        out: &mut [f32],
    ) {
        let width = blocks.len() * BLOCK;
        let first = blocks.start * BLOCK;
        let last = (blocks.end * BLOCK).min(self.outputs);
        for (t, (&token_scale, &zero)) in inputs.scales.iter().zip(&inputs.zeros).enumerate() {
            let row = &sums[t * width..(t + 1) * width];
            let target = &mut out[t * self.outputs + first..t * self.outputs + last];
            for (((o, sum), scale), row_sum) in target
                .iter_mut()
                .zip(row)
                .zip(&self.scales[first..last])
                .zip(&self.row_sums[first..last])
            {
                *o += token_scale * scale * (sum - zero * row_sum) as f32;
            }
        }
    }
}

/// Tokens whose codes stay in cache while every block group's weights
/// pass over them.
const CHUNK_TOKENS: usize = 192;

/// Token rows quantized for the kernel.
struct QuantizedRows {
    /// One code per value, rows padded to the matrix's padded input
    /// width (the padding meets zero weights, so its code is immaterial).
    bytes: Vec<u8>,
    /// `x[t, ·] ≈ scales[t] · (bytes[t, ·] − zeros[t])`.
    scales: Vec<f32>,
    zeros: Vec<i32>,
}

/// Quantizes each row of `x` (`inputs` wide) over its own range, which
/// always includes 0, so that 0 has an exact code.
fn quantize_rows(x: &[f32], inputs: usize, padded: usize) -> QuantizedRows {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::cpu().avx2() {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { quantize_rows_wide(x, inputs, padded) };
        }
    }
    quantize_rows_steps(x, inputs, padded)
}

/// [`quantize_rows`] built for AVX2, which rounds eight floats in one
/// instruction where the default target calls `roundf` for each.
///
/// # Safety
///
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quantize_rows_wide(x: &[f32], inputs: usize, padded: usize) -> QuantizedRows {
    quantize_rows_steps(x, inputs, padded)
}

#[inline(always)]
fn quantize_rows_steps(x: &[f32], inputs: usize, padded: usize) -> QuantizedRows {
    let tokens = x.len() / inputs;
    let mut bytes = vec![0u8; tokens * padded];
    let mut scales = Vec::with_capacity(tokens);
    let mut zeros = Vec::with_capacity(tokens);
    for (row, target) in x.chunks_exact(inputs).zip(bytes.chunks_exact_mut(padded)) {
        let (low, high) = row
            .iter()
            .fold((0f32, 0f32), |(low, high), &v| (low.min(v), high.max(v)));
        let scale = if high > low {
            (high - low) / 255.0
        } else {
            1.0
        };
        let inverse = 1.0 / scale;
        let zero = (-low * inverse).round().clamp(0.0, 255.0);
        for (b, &v) in target.iter_mut().zip(row) {
            *b = (v * inverse + zero).round().clamp(0.0, 255.0) as u8;
        }
        scales.push(scale);
        zeros.push(zero as i32);
    }
    QuantizedRows {
        bytes,
        scales,
        zeros,
    }
}

/// Whether this CPU runs the `vpdpbusd` kernel.
#[cfg(target_arch = "x86_64")]
fn vnni_512() -> bool {
    crate::cpu::cpu().avx512_vnni()
}

/// Whether the int8 product runs its vector kernel on this CPU (else it
/// runs in plain Rust, correct but slower than f32).
pub fn accelerated() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        vnni_512()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packed::tests::{product, values};

    /// The sums of the portable loop and of the kernel this process runs
    /// (the VNNI one where the processor has it), each against sums taken
    /// the plain way: from each weight row's codes as quantization defines
    /// them, not from the packed layout. Shapes with partial tiles,
    /// partial blocks and padded inputs.
    #[test]
    fn kernel_and_portable_sums_equal_the_plain_sums() {
        for (tokens, inputs, outputs) in [(1, 4, 16), (7, 38, 70), (13, 384, 1152), (6, 64, 64)] {
            let w = values(inputs * outputs, 7);
            let x = values(tokens * inputs, 11);
            let matrix = Int8Matrix::quantize(&w, inputs, outputs);
            let rows = quantize_rows(&x, inputs, matrix.padded_inputs);
            let blocks = outputs.div_ceil(BLOCK);
            let mut plain = vec![0i32; tokens * blocks * BLOCK];
            for t in 0..tokens {
                let bytes = &rows.bytes[t * matrix.padded_inputs..][..inputs];
                for (o, row) in w.chunks_exact(inputs).enumerate() {
                    plain[t * blocks * BLOCK + o] = row
                        .iter()
                        .zip(bytes)
                        .map(|(&v, &u)| {
                            let q = (v / matrix.scales[o]).round().clamp(-LEVELS, LEVELS);
                            q as i32 * i32::from(u)
                        })
                        .sum();
                }
            }
            let shape = format!("{tokens}×{inputs}×{outputs}");
            let mut portable = vec![0i32; plain.len()];
            matrix.sums_portable(&rows.bytes, tokens, 0..blocks, &mut portable);
            assert_eq!(portable, plain, "portable, {shape}");
            let mut dispatched = vec![0i32; plain.len()];
            matrix.sums(&rows.bytes, tokens, 0..blocks, &mut dispatched);
            assert_eq!(
                dispatched,
                plain,
                "{}, {shape}",
                crate::cpu::cpu().describe()
            );
        }
    }

    #[test]
    fn product_is_close_to_f32() {
        for (tokens, inputs, outputs, few) in
            [(3, 384, 384, 32), (40, 384, 1536, 32), (5, 1536, 384, 32)]
        {
            let w = values(inputs * outputs, 3);
            let x = values(tokens * inputs, 5);
            let exact = product(&x, &w, inputs);
            let matrix = Int8Matrix::quantize(&w, inputs, outputs);
            let mut out = vec![0.5f32; tokens * outputs];
            matrix.multiply_add(&x, tokens, &mut out, few);
            let scale = exact.iter().fold(0f32, |m, v| m.max(v.abs()));
            for (got, want) in out.iter().zip(&exact) {
                // Each operand rounds by at most half a step of 1/127.
                assert!(
                    (got - 0.5 - want).abs() < 0.02 * scale,
                    "{got} vs {want} (+0.5) at {tokens}×{inputs}×{outputs}"
                );
            }
        }
    }

    #[test]
    fn zero_rows_and_zero_inputs_stay_zero() {
        let w = vec![0f32; 8 * 20];
        let matrix = Int8Matrix::quantize(&w, 8, 20);
        let x = values(16, 1);
        let mut out = vec![0f32; 2 * 20];
        matrix.multiply_add(&x, 2, &mut out, 32);
        assert!(out.iter().all(|&v| v == 0.0));
        let w = values(8 * 20, 2);
        let matrix = Int8Matrix::quantize(&w, 8, 20);
        let mut out = vec![0f32; 2 * 20];
        matrix.multiply_add(&[0f32; 16], 2, &mut out, 32);
        assert!(out.iter().all(|&v| v == 0.0));
    }
}
