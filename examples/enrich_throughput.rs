//! Throughput of enrichment over a directory of documents (by default the
//! CUAD contracts of the evaluation data), overall and per extractor, with
//! the skeleton build (parse + segment) of the same documents as the
//! baseline.
//!
//! ```text
//! cargo run --release --example enrich_throughput -- [DIR] [PASSES]
//! ```

use std::path::PathBuf;
use std::time::Instant;

use trellis::enrich::enrich;
use trellis::segment::{Segmenter, SentenceFilter};
use trellis::skeleton::Skeleton;
use trellis::spec::{EnrichmentSpec, ParsingSpec};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = match args.next() {
        Some(dir) => PathBuf::from(dir),
        None => default_corpus()?,
    };
    let passes: u32 = args.next().map(|p| p.parse()).transpose()?.unwrap_or(5);

    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();

    let parsing = ParsingSpec::default();
    let (segmenter, filter) = (Segmenter::default(), SentenceFilter::default());
    // The baseline: parsing and segmenting the same documents, timed over
    // the same number of passes.
    let mut skeletons = Vec::new();
    let started = Instant::now();
    for _ in 0..passes.max(1) {
        skeletons.clear();
        for path in &paths {
            let Ok(tree) = trellis::parse::parse_file(path, &parsing) else {
                continue;
            };
            skeletons.push(Skeleton::build(
                &path.display().to_string(),
                tree,
                &segmenter,
                &filter,
            ));
        }
    }
    let build = started.elapsed() / passes.max(1);
    let sentences: usize = skeletons.iter().map(|s| s.sentences.len()).sum();
    let bytes: usize = skeletons
        .iter()
        .flat_map(|s| &s.sentences)
        .map(|s| s.text.len())
        .sum();
    println!(
        "{} documents, {sentences} sentences, {:.2} MB of sentence text, {passes} passes",
        skeletons.len(),
        bytes as f64 / 1e6
    );
    println!(
        "baseline: skeleton build (parse + segment) {:.1} ms per pass",
        build.as_secs_f64() * 1e3
    );

    let none = EnrichmentSpec::none();
    let runs: [(&str, EnrichmentSpec); 9] = [
        ("all", EnrichmentSpec::default()),
        ("none", none.clone()),
        (
            "references",
            EnrichmentSpec {
                references: true,
                ..none.clone()
            },
        ),
        (
            "dates",
            EnrichmentSpec {
                dates: true,
                ..none.clone()
            },
        ),
        (
            "fiscal periods",
            EnrichmentSpec {
                fiscal_periods: true,
                ..none.clone()
            },
        ),
        (
            "amounts",
            EnrichmentSpec {
                amounts: true,
                ..none.clone()
            },
        ),
        (
            "organizations",
            EnrichmentSpec {
                organizations: true,
                ..none.clone()
            },
        ),
        (
            "definitions",
            EnrichmentSpec {
                definitions: true,
                ..none.clone()
            },
        ),
        (
            "clauses",
            EnrichmentSpec {
                clauses: true,
                ..none.clone()
            },
        ),
    ];
    for (name, spec) in &runs {
        // One untimed pass compiles the patterns and warms the caches.
        for skeleton in &skeletons {
            std::hint::black_box(enrich(skeleton, spec));
        }
        let started = Instant::now();
        for _ in 0..passes {
            for skeleton in &skeletons {
                std::hint::black_box(enrich(skeleton, spec));
            }
        }
        let per_pass = started.elapsed().as_secs_f64() / f64::from(passes.max(1));
        println!(
            "{name:>15}: {:8.1} ms per pass, {:9.0} sentences/s, {:6.2} MB/s, {:5.2}× the skeleton build",
            per_pass * 1e3,
            sentences as f64 / per_pass,
            bytes as f64 / 1e6 / per_pass,
            per_pass / build.as_secs_f64().max(1e-9),
        );
    }
    Ok(())
}

/// The CUAD contracts of the evaluation data: under `$TRELLIS_EVAL_DIR`,
/// else `shared/eval` beside or above the checkout.
fn default_corpus() -> anyhow::Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidates = std::env::var_os("TRELLIS_EVAL_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            manifest.join("../shared/eval"),
            manifest.join("../../shared/eval"),
        ]);
    for eval in candidates {
        let contracts = eval.join("cuad").join("contracts");
        if contracts.is_dir() {
            return Ok(contracts);
        }
    }
    anyhow::bail!("no CUAD contracts found; pass a directory or set TRELLIS_EVAL_DIR")
}
