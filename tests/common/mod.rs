//! Shared helpers of the integration tests.
#![allow(dead_code)]

pub mod docling;

use std::path::PathBuf;

/// The development evaluation data: `$TRELLIS_EVAL_DIR`, else
/// `../shared/eval` beside the checkout. Tests that need it fail (never
/// skip) when it is missing, naming where they looked.
pub fn eval_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TRELLIS_EVAL_DIR") {
        return PathBuf::from(dir);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidates = [
        manifest.join("../shared/eval"),
        manifest.join("../../shared/eval"),
        PathBuf::from("/work/shared/eval"),
    ];
    for candidate in &candidates {
        if candidate.join("README.md").is_file() {
            return candidate.clone();
        }
    }
    panic!(
        "evaluation data not found; set TRELLIS_EVAL_DIR (looked in {})",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}
