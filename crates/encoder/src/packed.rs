//! The encoder's f32 dense layers packed once, at load, for AVX-512.
//!
//! `sgemm` packs both operands into panels on every call. Over a batch of
//! thousands of tokens that costs little, but the queries of a retrieval
//! service come a few at a time (one, or the handful the service's
//! batcher gathers), and for them packing the model's 42 MB of weights
//! again on each call costs more than the arithmetic. Packed here once,
//! the weights are read by a kernel that keeps a tile of sums in
//! registers: for each input column it loads one 16-wide register of
//! weights per block of 16 outputs and multiplies it by each token's
//! value, broadcast. Nothing is copied per call, and a few tokens share
//! the output blocks among the cores.
//!
//! Used on CPUs with AVX-512F; elsewhere the layers keep PyTorch's layout
//! and run through `sgemm` and the direct few-token loop in `bert.rs`.

use rayon::prelude::*;

/// Outputs per packed block: one 512-bit register of f32 (or of i32
/// sums, in [`crate::int8`]).
pub(crate) const BLOCK: usize = 16;

/// Tokens of a register tile: 6 × 4 sums, 4 weight registers and one
/// broadcast input fit AVX-512's 32 registers.
pub(crate) const TILE_TOKENS: usize = 6;

/// Output blocks of a register tile (64 outputs).
pub(crate) const TILE_BLOCKS: usize = 4;

/// Most tokens whose product is shared among the cores: a query or a
/// batch of queries. Bigger inputs are ingest batches, which already run
/// one per core.
const SHARED_TOKENS: usize = 512;

/// Tokens whose inputs stay in cache while every block group's weights
/// pass over them (96 × 1,536 inputs is 576 KiB).
const CHUNK_TOKENS: usize = 96;

/// Fewest output blocks worth a core of their own.
pub(crate) const LEAST_BLOCKS_PER_PART: usize = 8;

/// A weight matrix `[outputs, inputs]` as blocks of [`BLOCK`] output
/// rows, each block stored input column by input column: `packed[(block
/// · inputs + k) · BLOCK + lane] = w[block · BLOCK + lane, k]`, the last
/// block padded with zero rows.
pub struct PackedMatrix {
    inputs: usize,
    outputs: usize,
    packed: Vec<f32>,
}

/// Whether this CPU runs the packed kernel.
pub fn available() -> bool {
    crate::cpu::cpu().avx512f()
}

impl PackedMatrix {
    /// Packs `weight` (`[outputs, inputs]`, row-major).
    pub fn pack(weight: &[f32], inputs: usize, outputs: usize) -> Self {
        assert_eq!(weight.len(), inputs * outputs);
        let blocks = outputs.div_ceil(BLOCK);
        let mut packed = vec![0f32; blocks * inputs * BLOCK];
        for (o, row) in weight.chunks_exact(inputs).enumerate() {
            let (block, lane) = (o / BLOCK, o % BLOCK);
            for (k, &v) in row.iter().enumerate() {
                packed[(block * inputs + k) * BLOCK + lane] = v;
            }
        }
        Self {
            inputs,
            outputs,
            packed,
        }
    }

    /// The weights in PyTorch's `[outputs, inputs]` layout again.
    pub fn unpack(&self) -> Vec<f32> {
        let mut weight = vec![0f32; self.inputs * self.outputs];
        for (o, row) in weight.chunks_exact_mut(self.inputs).enumerate() {
            let (block, lane) = (o / BLOCK, o % BLOCK);
            for (k, v) in row.iter_mut().enumerate() {
                *v = self.packed[(block * self.inputs + k) * BLOCK + lane];
            }
        }
        weight
    }

    /// `out[t, o] += x[t, ·] · w[o, ·]` for every token row of `x`
    /// (`[tokens, inputs]`). The caller checked [`available`].
    pub fn multiply_add(&self, x: &[f32], tokens: usize, out: &mut [f32]) {
        assert_eq!(x.len(), tokens * self.inputs);
        assert!(out.len() >= tokens * self.outputs);
        if tokens == 0 {
            return;
        }
        let blocks = self.outputs.div_ceil(BLOCK);
        let parts = rayon::current_num_threads().min(blocks / LEAST_BLOCKS_PER_PART);
        if tokens > SHARED_TOKENS || parts <= 1 {
            self.blocks_into(x, tokens, 0..blocks, out, self.outputs);
            return;
        }
        let per_part = blocks.div_ceil(parts).next_multiple_of(TILE_BLOCKS);
        let shares: Vec<(std::ops::Range<usize>, Vec<f32>)> = (0..blocks)
            .step_by(per_part)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|first| {
                let range = first..(first + per_part).min(blocks);
                let width = self.columns(&range).len();
                let mut share = vec![0f32; tokens * width];
                self.blocks_into(x, tokens, range.clone(), &mut share, width);
                (range, share)
            })
            .collect();
        for (range, share) in shares {
            let columns = self.columns(&range);
            let width = columns.len();
            for (t, row) in share.chunks_exact(width).enumerate() {
                let target =
                    &mut out[t * self.outputs + columns.start..t * self.outputs + columns.end];
                for (o, v) in target.iter_mut().zip(row) {
                    *o += v;
                }
            }
        }
    }

    /// The output columns of blocks `range`.
    fn columns(&self, range: &std::ops::Range<usize>) -> std::ops::Range<usize> {
        range.start * BLOCK..(range.end * BLOCK).min(self.outputs)
    }

    /// Adds the outputs of blocks `blocks` into `out`, whose rows are
    /// `stride` wide and start at the first of these blocks' columns.
    fn blocks_into(
        &self,
        x: &[f32],
        tokens: usize,
        blocks: std::ops::Range<usize>,
        out: &mut [f32],
        stride: usize,
    ) {
        #[cfg(target_arch = "x86_64")]
        {
            if available() {
                // SAFETY: the CPU has AVX-512F, checked just above; `out`
                // holds `tokens` rows of `stride` ≥ the blocks' columns.
                unsafe { self.blocks_avx512(x, tokens, blocks, out, stride) };
                return;
            }
        }
        self.blocks_portable(x, tokens, blocks, out, stride);
    }

    /// [`Self::blocks_into`] in plain Rust (a CPU without AVX-512 never
    /// packs its layers; this serves the tests and other targets).
    fn blocks_portable(
        &self,
        x: &[f32],
        tokens: usize,
        blocks: std::ops::Range<usize>,
        out: &mut [f32],
        stride: usize,
    ) {
        let first_column = blocks.start * BLOCK;
        for block in blocks {
            let weights =
                &self.packed[block * self.inputs * BLOCK..(block + 1) * self.inputs * BLOCK];
            let lanes = (self.outputs - block * BLOCK).min(BLOCK);
            for t in 0..tokens {
                let xs = &x[t * self.inputs..(t + 1) * self.inputs];
                let mut sums = [0f32; BLOCK];
                for (v, column) in xs.iter().zip(weights.chunks_exact(BLOCK)) {
                    for (sum, w) in sums.iter_mut().zip(column) {
                        *sum += v * w;
                    }
                }
                let at = t * stride + block * BLOCK - first_column;
                for (o, sum) in out[at..at + lanes].iter_mut().zip(&sums) {
                    *o += sum;
                }
            }
        }
    }

    /// [`Self::blocks_into`] with AVX-512: tiles of [`TILE_TOKENS`]
    /// tokens by [`TILE_BLOCKS`] blocks.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F; `x` holds `tokens` rows, `out`
    /// `tokens` rows of `stride` values, at least the blocks' columns.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn blocks_avx512(
        &self,
        x: &[f32],
        tokens: usize,
        blocks: std::ops::Range<usize>,
        out: &mut [f32],
        stride: usize,
    ) {
        let first_column = blocks.start * BLOCK;
        let target = Target {
            out,
            stride,
            first_column,
        };
        let mut target = target;
        // Tokens a chunk at a time, and within a chunk every block group
        // over all of its tokens: a group's weights are read from memory
        // once per chunk and then from cache, and the chunk's inputs stay
        // in cache across the groups.
        for chunk in (0..tokens).step_by(CHUNK_TOKENS) {
            let chunk_end = (chunk + CHUNK_TOKENS).min(tokens);
            let mut block = blocks.start;
            while block < blocks.end {
                let count = (blocks.end - block).min(TILE_BLOCKS);
                let mut t = chunk;
                while t < chunk_end {
                    let rows = (chunk_end - t).min(TILE_TOKENS);
                    // SAFETY: the tile's tokens and blocks lie inside `x`,
                    // the matrix and `out`; the CPU was checked by the
                    // caller.
                    unsafe {
                        match (rows, count) {
                            (6, TILE_BLOCKS) => {
                                self.tile::<6, TILE_BLOCKS>(x, t, block, &mut target)
                            }
                            (5, TILE_BLOCKS) => {
                                self.tile::<5, TILE_BLOCKS>(x, t, block, &mut target)
                            }
                            (4, TILE_BLOCKS) => {
                                self.tile::<4, TILE_BLOCKS>(x, t, block, &mut target)
                            }
                            (3, TILE_BLOCKS) => {
                                self.tile::<3, TILE_BLOCKS>(x, t, block, &mut target)
                            }
                            (2, TILE_BLOCKS) => {
                                self.tile::<2, TILE_BLOCKS>(x, t, block, &mut target)
                            }
                            (1, TILE_BLOCKS) => {
                                self.tile::<1, TILE_BLOCKS>(x, t, block, &mut target)
                            }
                            _ => {
                                for r in 0..rows {
                                    for b in 0..count {
                                        self.tile::<1, 1>(x, t + r, block + b, &mut target);
                                    }
                                }
                            }
                        }
                    }
                    t += rows;
                }
                block += count;
            }
        }
    }

    /// Tokens `first_token..+T` times blocks `first_block..+B`, added
    /// into `target`.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F; the tokens must be rows of `x`, the
    /// blocks blocks of the matrix whose columns `target` holds.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn tile<const T: usize, const B: usize>(
        &self,
        x: &[f32],
        first_token: usize,
        first_block: usize,
        target: &mut Target<'_>,
    ) {
        use std::arch::x86_64::{
            _mm512_add_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_loadu_ps,
            _mm512_mask_storeu_ps, _mm512_set1_ps, _mm512_setzero_ps, _mm512_storeu_ps,
        };
        // The bounds of every read below, checked once per tile (in
        // every build: the loads are unchecked).
        assert!((first_token + T) * self.inputs <= x.len());
        assert!((first_block + B) * self.inputs * BLOCK <= self.packed.len());
        let mut acc = [[_mm512_setzero_ps(); B]; T];
        let weights = self.packed.as_ptr();
        let inputs = x.as_ptr();
        for k in 0..self.inputs {
            let mut w = [_mm512_setzero_ps(); B];
            for (j, w) in w.iter_mut().enumerate() {
                let offset = ((first_block + j) * self.inputs + k) * BLOCK;
                // SAFETY: 16 floats of block `first_block + j`.
                *w = unsafe { _mm512_loadu_ps(weights.add(offset)) };
            }
            for (i, acc) in acc.iter_mut().enumerate() {
                // SAFETY: token `first_token + i` is a row of `x`.
                let xv =
                    _mm512_set1_ps(unsafe { *inputs.add((first_token + i) * self.inputs + k) });
                for (acc, w) in acc.iter_mut().zip(&w) {
                    *acc = _mm512_fmadd_ps(xv, *w, *acc);
                }
            }
        }
        for (i, acc) in acc.iter().enumerate() {
            for (j, acc) in acc.iter().enumerate() {
                let block = first_block + j;
                let lanes = (self.outputs - block * BLOCK).min(BLOCK);
                let at = (first_token + i) * target.stride + block * BLOCK - target.first_column;
                let row = &mut target.out[at..at + lanes];
                let dst = row.as_mut_ptr();
                if lanes == BLOCK {
                    // SAFETY: `row` holds 16 floats.
                    unsafe { _mm512_storeu_ps(dst, _mm512_add_ps(_mm512_loadu_ps(dst), *acc)) };
                } else {
                    let mask = (1u16 << lanes) - 1;
                    // SAFETY: only the `lanes` floats of `row` are read
                    // and written.
                    unsafe {
                        let sum = _mm512_add_ps(_mm512_mask_loadu_ps(*acc, mask, dst), *acc);
                        _mm512_mask_storeu_ps(dst, mask, sum);
                    }
                }
            }
        }
    }
}

/// Where a tile's sums go: rows of `stride` values starting at column
/// `first_column` of the matrix's outputs.
struct Target<'a> {
    out: &'a mut [f32],
    stride: usize,
    first_column: usize,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Deterministic values in −1..1 (a linear congruential sequence).
    pub(crate) fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// `x · wᵀ`, plainly.
    pub(crate) fn product(x: &[f32], w: &[f32], inputs: usize) -> Vec<f32> {
        x.chunks_exact(inputs)
            .flat_map(|xs| {
                w.chunks_exact(inputs)
                    .map(|ws| xs.iter().zip(ws).map(|(a, b)| a * b).sum::<f32>())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Partial tiles, a partial last block, shared and unshared products.
    #[test]
    fn packed_product_matches_the_plain_product() {
        for (tokens, inputs, outputs) in [(1, 3, 5), (7, 37, 70), (13, 384, 1152), (600, 64, 300)] {
            let w = values(inputs * outputs, 7);
            let x = values(tokens * inputs, 11);
            let matrix = PackedMatrix::pack(&w, inputs, outputs);
            assert_eq!(matrix.unpack(), w);
            let want = product(&x, &w, inputs);
            let mut got = vec![1f32; tokens * outputs];
            matrix.multiply_add(&x, tokens, &mut got);
            let blocks = outputs.div_ceil(BLOCK);
            let mut portable = vec![1f32; tokens * outputs];
            matrix.blocks_portable(&x, tokens, 0..blocks, &mut portable, outputs);
            for ((g, p), w) in got.iter().zip(&portable).zip(&want) {
                assert!(
                    (g - 1.0 - w).abs() < 1e-3,
                    "{g} vs {w} at {tokens}×{inputs}×{outputs}"
                );
                assert!(
                    (p - 1.0 - w).abs() < 1e-3,
                    "{p} vs {w} at {tokens}×{inputs}×{outputs}"
                );
            }
        }
    }
}
