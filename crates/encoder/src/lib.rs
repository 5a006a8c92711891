//! The arithmetic under Trellis' `local` embedder and its cross-encoder:
//! a BERT-family encoder's forward pass ([`bert`]) over weights read from
//! safetensors or an ONNX export ([`files`], `onnx`), its dense layers
//! packed for AVX-512 (`packed`) or quantized to int8 ([`int8`]), each
//! kernel taking the wide path [`cpu`] allows.
//!
//! It is a crate of its own so that the test build can optimise it fully
//! while the rest of Trellis builds at a low optimisation level: every
//! test and end-to-end scenario that ingests a corpus runs this code, and
//! at the test build's level (no vectorisation, sums kept in memory) it
//! ran about twelve times slower than in a release build. Nothing here
//! knows about documents, profiles or indexes; tokenization and pooling
//! stay in `trellis::embed`.

pub mod bert;
pub mod cpu;
pub mod files;
pub mod int8;
mod onnx;
mod packed;

use std::path::{Path, PathBuf};

use thiserror::Error;

/// A model directory that cannot be loaded: missing, incomplete, or of a
/// kind this encoder does not run.
#[derive(Clone, Debug, Error)]
#[error("model {path}: {reason}")]
pub struct ModelError {
    /// The file at fault (`config.json`, `model.safetensors`, `model.onnx`).
    pub path: PathBuf,
    pub reason: String,
}

impl ModelError {
    pub(crate) fn new(path: &Path, reason: impl Into<String>) -> Self {
        ModelError {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

/// Scales a vector to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in v {
            *x /= norm;
        }
    }
}

/// Dot product; the cosine similarity of two unit vectors. Always
/// inlined, so that a caller built for wider vectors widens it too.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    // Eight independent accumulators over fixed-size chunks: the compiler
    // keeps them in one vector register (a plain float sum cannot be
    // reordered, so it would stay scalar).
    let mut acc = [0f32; 8];
    let (chunks_a, chunks_b) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in chunks_a.zip(chunks_b) {
        for lane in 0..8 {
            acc[lane] += x[lane] * y[lane];
        }
    }
    acc.iter().sum::<f32>() + tail
}
