//! Embedding throughput of the local encoder on SciFact sentences, and the
//! latency of embedding one short query alone (SciFact claims, as a
//! retrieval route embeds each query it is sent).
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

/// The first `n` SciFact claims: short queries (about 12 word pieces).
fn queries(n: usize) -> Vec<String> {
    let path = common::eval_dir().join("scifact/queries.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .take(n)
        .map(|line| {
            let query: serde_json::Value = serde_json::from_str(line).expect("SciFact JSON line");
            query["text"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

/// Median and 99th percentile, in milliseconds, of embedding each query
/// alone.
fn query_latency(embedder: &LocalEmbedder, queries: &[String]) -> (f64, f64) {
    for query in queries.iter().take(10) {
        embedder.embed_query(query).expect("warm-up");
    }
    let mut ms: Vec<f64> = queries
        .iter()
        .map(|query| {
            let start = Instant::now();
            embedder.embed_query(query).expect("query embedding");
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
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
    let (query_p50, query_p99) = query_latency(&embedder, &queries(300));
    if json {
        let out = serde_json::json!({
            "tool": "trellis",
            "sentences": texts.len(),
            "seconds": seconds,
            "sentences_per_second": rate,
            "threads": rayon::current_num_threads(),
            "query_p50_ms": query_p50,
            "query_p99_ms": query_p99,
            "vectors": vectors,
        });
        println!("{out}");
    } else {
        println!(
            "trellis local embedder: {} sentences in {seconds:.2} s = {rate:.1} sentences/s ({} threads)",
            texts.len(),
            rayon::current_num_threads()
        );
        println!("one query embedded alone: p50 {query_p50:.2} ms, p99 {query_p99:.2} ms");
    }
}
