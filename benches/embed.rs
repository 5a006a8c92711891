//! Embedding throughput of the local encoder on SciFact sentences, and the
//! latency of embedding one short query alone (SciFact claims, as a
//! retrieval route embeds each query it is sent).
//!
//! ```text
//! cargo bench --bench embed              # 2,000 sentences, human-readable
//! cargo bench --bench embed -- --json    # one JSON object
//! cargo bench --bench embed -- --n 500
//! cargo bench --bench embed -- --model bge-small-en-v1.5 --against all-MiniLM-L6-v2
//! ```
//!
//! `--model` picks the model (a name in the model cache with its preset;
//! default the default model); `--against` also runs a second model in f32
//! on the same sentences and queries, in the same run, and prints the
//! ratios.
//!
//! Both precisions of the encoder run, one after the other: f32 and
//! `embedding.quantization: int8`, with their ratio and the cosine of each
//! int8 vector to its f32 one.
//!
//! `scripts/bench_embed.py` runs this beside sentence-transformers on the
//! same sentences, model directory and cores, and prints the ratio and the
//! cosine agreement.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::time::Instant;

use trellis::embed::{self, Embedder, LocalEmbedder};
use trellis::spec::{EmbeddingSpec, Quantization};

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

/// One precision's run: document throughput, query latency and vectors.
struct Measured {
    seconds: f64,
    rate: f64,
    query_p50: f64,
    query_p99: f64,
    /// Milliseconds per query when queries come [`QUERY_BATCHES`] at a
    /// time (as the service's batcher hands them to the encoder).
    batched: Vec<(usize, f64)>,
    vectors: Vec<Vec<f32>>,
}

/// Queries per encoder call measured: what concurrent requests make.
const QUERY_BATCHES: [usize; 5] = [1, 2, 4, 8, 16];

/// Milliseconds per query, embedding `queries` `size` at a time.
fn batched_queries(embedder: &LocalEmbedder, queries: &[String], size: usize) -> f64 {
    let refs: Vec<&str> = queries.iter().map(String::as_str).collect();
    let start = Instant::now();
    for batch in refs.chunks(size) {
        embedder.embed_queries(batch).expect("query batch");
    }
    start.elapsed().as_secs_f64() * 1e3 / refs.len() as f64
}

fn measure(
    model: &str,
    quantization: Quantization,
    texts: &[String],
    queries: &[String],
) -> Measured {
    let spec = EmbeddingSpec {
        model: model.to_string(),
        quantization,
        ..EmbeddingSpec::default()
    };
    let dir = embed::resolve_model_dir(&spec, None).expect("run scripts/fetch-model.sh first");
    let embedder = LocalEmbedder::load(&dir, &spec).expect("model loads");
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    embedder
        .embed_documents(&refs[..refs.len().min(64)])
        .expect("warm-up");
    let start = Instant::now();
    let vectors = embedder.embed_documents(&refs).expect("embedding");
    let seconds = start.elapsed().as_secs_f64();
    let (query_p50, query_p99) = query_latency(&embedder, queries);
    let batched = QUERY_BATCHES
        .iter()
        .map(|&size| (size, batched_queries(&embedder, queries, size)))
        .collect();
    Measured {
        seconds,
        rate: texts.len() as f64 / seconds,
        query_p50,
        query_p99,
        batched,
        vectors,
    }
}

/// Lowest and mean cosine between two runs' unit vectors.
fn agreement(a: &[Vec<f32>], b: &[Vec<f32>]) -> (f32, f32) {
    let cosines: Vec<f32> = a
        .iter()
        .zip(b)
        .map(|(a, b)| trellis::vector::dot(a, b))
        .collect();
    let lowest = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    (
        lowest,
        cosines.iter().sum::<f32>() / cosines.len().max(1) as f32,
    )
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
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let model = flag("--model").unwrap_or_else(|| EmbeddingSpec::default().model);
    let texts = sentences(n);
    let queries = queries(300);
    let f32_run = measure(&model, Quantization::None, &texts, &queries);
    let int8_run = measure(&model, Quantization::Int8, &texts, &queries);
    let baseline = flag("--against").map(|other| {
        let run = measure(&other, Quantization::None, &texts, &queries);
        (other, run)
    });
    let (lowest, mean) = agreement(&f32_run.vectors, &int8_run.vectors);
    let threads = rayon::current_num_threads();
    if json {
        let out = serde_json::json!({
            "tool": "trellis",
            "sentences": texts.len(),
            "seconds": f32_run.seconds,
            "sentences_per_second": f32_run.rate,
            "threads": threads,
            "query_p50_ms": f32_run.query_p50,
            "query_p99_ms": f32_run.query_p99,
            "vectors": f32_run.vectors,
            "int8": {
                "seconds": int8_run.seconds,
                "sentences_per_second": int8_run.rate,
                "query_p50_ms": int8_run.query_p50,
                "query_p99_ms": int8_run.query_p99,
                "accelerated": embed::int8::accelerated(),
                "vectors": int8_run.vectors,
            },
        });
        println!("{out}");
    } else {
        for (name, run) in [("f32", &f32_run), ("int8", &int8_run)] {
            println!(
                "trellis local embedder, {model} {name}: {} sentences in {:.2} s = {:.1} sentences/s ({threads} threads); one query alone p50 {:.2} ms, p99 {:.2} ms",
                texts.len(),
                run.seconds,
                run.rate,
                run.query_p50,
                run.query_p99
            );
            let batched: Vec<String> = run
                .batched
                .iter()
                .map(|(size, ms)| format!("{size}: {ms:.2}"))
                .collect();
            println!(
                "  {name}, ms per query when queries come n at a time: {}",
                batched.join(", ")
            );
        }
        println!(
            "int8 against f32: {:.2}x sentences/s, {:.2}x query p50; cosine to the f32 vectors min {lowest:.4}, mean {mean:.4} (vector kernel: {})",
            int8_run.rate / f32_run.rate,
            f32_run.query_p50 / int8_run.query_p50,
            embed::int8::accelerated()
        );
        if let Some((other, run)) = &baseline {
            println!(
                "{other} f32, same run: {:.1} sentences/s, one query alone p50 {:.2} ms; \
                 {model} against it: {:.2}x sentences/s, {:.2}x query p50 time",
                run.rate,
                run.query_p50,
                f32_run.rate / run.rate,
                f32_run.query_p50 / run.query_p50
            );
        }
    }
}
