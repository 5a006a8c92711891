//! Embedding throughput of the local encoder on SciFact sentences.
//!
//! ```text
//! cargo bench --bench embed              # 2,000 sentences, human-readable
//! cargo bench --bench embed -- --json    # one JSON object
//! cargo bench --bench embed -- --n 500
//! ```
//!
//! `scripts/bench_embed.py` runs this beside sentence-transformers on the
//! same sentences, model directory and cores, and prints the ratio and the
//! cosine agreement.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::time::Instant;

use trellis::embed::{self, Embedder, LocalEmbedder};
use trellis::spec::EmbeddingSpec;

/// The first `n` sentences of the SciFact corpus, in file order.
fn sentences(n: usize) -> Vec<String> {
    let path = common::eval_dir().join("scifact/corpus.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::with_capacity(n);
    for line in text.lines() {
        let doc: serde_json::Value = serde_json::from_str(line).expect("SciFact JSON line");
        for s in doc["sentences"].as_array().into_iter().flatten() {
            if let Some(s) = s.as_str() {
                out.push(s.to_string());
            }
            if out.len() == n {
                return out;
            }
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    let n = args
        .iter()
        .position(|a| a == "--n")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let spec = EmbeddingSpec::default();
    let dir = embed::resolve_model_dir(&spec, None).expect("run scripts/fetch-model.sh first");
    let embedder = LocalEmbedder::load(&dir, &spec).expect("model loads");
    let texts = sentences(n);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    embedder
        .embed_documents(&refs[..refs.len().min(64)])
        .expect("warm-up");
    let start = Instant::now();
    let vectors = embedder.embed_documents(&refs).expect("embedding");
    let seconds = start.elapsed().as_secs_f64();
    let rate = texts.len() as f64 / seconds;
    if json {
        let out = serde_json::json!({
            "tool": "trellis",
            "sentences": texts.len(),
            "seconds": seconds,
            "sentences_per_second": rate,
            "threads": rayon::current_num_threads(),
            "vectors": vectors,
        });
        println!("{out}");
    } else {
        println!(
            "trellis local embedder: {} sentences in {seconds:.2} s = {rate:.1} sentences/s ({} threads)",
            texts.len(),
            rayon::current_num_threads()
        );
    }
}
