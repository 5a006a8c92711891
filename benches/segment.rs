//! Sentence segmentation throughput on SQuAD contexts (Wikipedia prose) and
//! CUAD contracts (raw legal text with newlines), plus golden-rules
//! accuracy, as one JSON line for scripts and one line for people.
//!
//! `cargo bench --bench segment`. Each corpus is split once to warm up,
//! then repeatedly until at least `MIN_MEASURE` has passed; the best pass
//! counts. pySBD, the baseline, is run by a separate script on the same
//! files.

#[path = "../tests/it/common/mod.rs"]
mod common;

/// The allocator the `trellis` binary runs with, so that the figures are
/// the binary's.
#[global_allocator]
static ALLOCATOR: trellis::memory::CountingAllocator = trellis::memory::CountingAllocator;

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Deserialize;
use trellis::segment::Segmenter;

/// Least total measuring time per corpus.
const MIN_MEASURE: Duration = Duration::from_secs(1);
/// Least number of measured passes per corpus.
const MIN_PASSES: usize = 5;

#[derive(Deserialize)]
struct Squad {
    data: Vec<Article>,
}

#[derive(Deserialize)]
struct Article {
    paragraphs: Vec<Paragraph>,
}

#[derive(Deserialize)]
struct Paragraph {
    context: String,
}

#[derive(Deserialize)]
struct GoldenCase {
    text: String,
    sentences: Vec<String>,
}

/// Best time of one pass over `texts`, and the sentences a pass finds.
fn measure(segmenter: &Segmenter, texts: &[String]) -> (Duration, usize) {
    let mut ranges = Vec::new();
    let mut pass = || {
        let mut sentences = 0;
        for text in texts {
            ranges.clear();
            segmenter.split_into(black_box(text), &mut ranges);
            sentences += black_box(&ranges).len();
        }
        sentences
    };
    let sentences = pass();
    let mut best = Duration::MAX;
    let mut total = Duration::ZERO;
    let mut passes = 0;
    while total < MIN_MEASURE || passes < MIN_PASSES {
        let start = Instant::now();
        pass();
        let elapsed = start.elapsed();
        best = best.min(elapsed);
        total += elapsed;
        passes += 1;
    }
    (best, sentences)
}

fn mb_per_s(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn main() {
    let eval = common::eval_dir();
    let squad_path = eval.join("squad/dev-v1.1-part1.json");
    let squad: Squad = serde_json::from_str(&read(&squad_path))
        .unwrap_or_else(|e| panic!("parsing {}: {e}", squad_path.display()));
    let contexts: Vec<String> = squad
        .data
        .into_iter()
        .flat_map(|a| a.paragraphs)
        .map(|p| p.context)
        .collect();

    let mut contracts: Vec<String> = std::fs::read_dir(eval.join("cuad/contracts"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|e| e == "txt"))
                .map(|path| read(&path))
                .collect()
        })
        .unwrap_or_default();
    contracts.sort();

    let golden_path = eval.join("sentences/golden_rules_en.json");
    let golden: Vec<GoldenCase> = serde_json::from_str(&read(&golden_path))
        .unwrap_or_else(|e| panic!("parsing {}: {e}", golden_path.display()));

    let segmenter = Segmenter::default();
    let golden_passed = golden
        .iter()
        .filter(|case| {
            let got: Vec<&str> = segmenter
                .split(&case.text)
                .into_iter()
                .map(|r| &case.text[r])
                .collect();
            got == case.sentences
        })
        .count();
    let golden_accuracy = golden_passed as f64 / golden.len().max(1) as f64;

    let squad_bytes: usize = contexts.iter().map(String::len).sum();
    let (squad_time, squad_sentences) = measure(&segmenter, &contexts);
    let squad_rate = mb_per_s(squad_bytes, squad_time);

    let cuad_bytes: usize = contracts.iter().map(String::len).sum();
    let (cuad_time, cuad_sentences) = measure(&segmenter, &contracts);
    let cuad_rate = mb_per_s(cuad_bytes, cuad_time);

    println!(
        "{}",
        serde_json::json!({
            "bench": "segment",
            "bytes": squad_bytes,
            "texts": contexts.len(),
            "mb_per_s": (squad_rate * 10.0).round() / 10.0,
            "sentences": squad_sentences,
            "cuad_bytes": cuad_bytes,
            "cuad_mb_per_s": (cuad_rate * 10.0).round() / 10.0,
            "cuad_sentences": cuad_sentences,
            "golden_rules_accuracy": golden_accuracy,
        })
    );
    println!(
        "segment: SQuAD {:.2} MB in {:.2} ms = {squad_rate:.0} MB/s ({squad_sentences} sentences); \
         CUAD {:.2} MB = {cuad_rate:.0} MB/s ({cuad_sentences} sentences); \
         golden rules {golden_passed}/{} = {golden_accuracy:.3}",
        squad_bytes as f64 / 1e6,
        squad_time.as_secs_f64() * 1e3,
        cuad_bytes as f64 / 1e6,
        golden.len(),
    );
}
