//! PDF parsing throughput: pages per second of `trellis::parse` on the
//! development PDFs (the 20 CUAD contracts and Docling's PDF inputs), one
//! thread, fastest of repeated passes.
//!
//! ```text
//! cargo bench --bench pdf            # human-readable
//! cargo bench --bench pdf -- --json  # one JSON object
//! ```
//!
//! `scripts/bench_pdf.py` runs this beside pdfminer.six and pypdf on the
//! same files and prints the ratios.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use trellis::parse::{Format, parse_bytes};
use trellis::spec::ParsingSpec;

/// Each pass is repeated for at least this long; the fastest counts.
const MIN_MEASURE: Duration = Duration::from_secs(3);

fn pdfs() -> Vec<PathBuf> {
    let eval = common::eval_dir();
    let mut files = Vec::new();
    for dir in [eval.join("cuad/pdf"), eval.join("docling/pdf/sources")] {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        files.extend(
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("pdf"))),
        );
    }
    files.sort();
    files
}

fn main() {
    let json = std::env::args().any(|a| a == "--json");
    let files: Vec<(PathBuf, Vec<u8>)> = pdfs()
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, bytes)
        })
        .collect();
    let spec = ParsingSpec::default();
    let pass = || -> (u32, usize) {
        let mut pages = 0;
        let mut failed = 0;
        for (_, bytes) in &files {
            match parse_bytes(bytes, Format::Pdf, &spec) {
                Ok(tree) => pages += tree.pages.unwrap_or(0),
                Err(_) => failed += 1,
            }
        }
        (pages, failed)
    };
    let (mut best, mut passes, started) = (f64::INFINITY, 0, Instant::now());
    let mut counted = (0, 0);
    while passes < 2 || started.elapsed() < MIN_MEASURE {
        let t = Instant::now();
        counted = pass();
        best = best.min(t.elapsed().as_secs_f64());
        passes += 1;
    }
    let (pages, failed) = counted;
    let rate = f64::from(pages) / best;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "tool": "trellis", "files": files.len(), "failed": failed,
                "pages": pages, "seconds": best, "pages_per_second": rate,
            })
        );
    } else {
        println!(
            "trellis parse: {} PDFs ({failed} failed), {pages} pages in {best:.2} s (fastest of {passes}): {rate:.1} pages/s",
            files.len()
        );
    }
}
