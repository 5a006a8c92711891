//! Shared helpers of the integration tests.
#![allow(dead_code)]

pub mod docling;

use std::path::{Path, PathBuf};

/// Writes `docs/contract.txt` (two numbered clauses: payment, governing
/// law) and `docs/manual.md` (one heading) under `dir`.
pub fn write_two_documents(dir: &Path) {
    std::fs::create_dir_all(dir.join("docs")).expect("creating docs/");
    std::fs::write(
        dir.join("docs/contract.txt"),
        "1. Payment\n\nFees are due within thirty days of the invoice date. Late payments accrue interest of 1.5% per month.\n\n\
         2. Governing Law\n\nThis Agreement is governed by the laws of the State of New York. The courts of New York County have jurisdiction.\n",
    )
    .expect("writing a test document");
    std::fs::write(
        dir.join("docs/manual.md"),
        "# Reset\n\nHold the reset button for five seconds until the light blinks green. The device then restarts.\n",
    )
    .expect("writing a test document");
}

/// Ingests the first Corpus of `manifests` (YAML text, its paths relative
/// to `dir`) into `dir/data` as corpus `c`, and returns the report and the
/// first RetrievalRoute.
pub fn ingest_manifests(
    manifests: &str,
    dir: &Path,
) -> (trellis::index::IngestReport, trellis::spec::RetrievalRoute) {
    let origin = dir.join("trellis.yaml");
    let loaded = trellis::spec::parse_str(manifests, &origin).expect("manifests");
    let (corpus, _) = trellis::spec::select_corpus(&loaded, None, &origin).expect("a Corpus");
    let (profile, _) =
        trellis::spec::select_profile(&loaded, None, &origin).expect("an IndexProfile");
    let report = trellis::index::ingest(
        "c",
        &corpus.spec,
        &trellis::source::SourceContext::new(dir),
        &profile.spec,
        dir,
        &dir.join("data"),
        &[],
        &|_, _, _| {},
    )
    .expect("ingest");
    let (route, _) = trellis::spec::select_route(&loaded, None, &origin).expect("a RetrievalRoute");
    (report, route.clone())
}

/// Resident memory of a process (`"self"` or a pid), in bytes; 0 where
/// `/proc` does not say.
pub fn resident_bytes(process: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{process}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

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
