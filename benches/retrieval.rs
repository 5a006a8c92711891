//! Index and query figures, each against its baseline in the same run.
//!
//! ```text
//! cargo bench --bench retrieval                  # all parts
//! cargo bench --bench retrieval -- hnsw          # HNSW against exact search
//! cargo bench --bench retrieval -- latency       # query latency and memory
//! cargo bench --bench retrieval -- ingest        # ingest sentences/s
//! ```
//!
//! - **hnsw**: recall@10 and queries/s of the HNSW graph (m 16,
//!   ef_construction 200, ef_search 200) against exact search over the same
//!   100,000 unit vectors (384 dimensions, drawn around 2,000 centres so
//!   that neighbourhoods exist as they do for sentence embeddings), 500
//!   queries.
//! - **latency**: p50/p99 of full-mode queries on the SciFact index, with
//!   the query embedded per call and with the vector computed beforehand,
//!   and of BM25-only queries; resident memory the loaded index adds, per
//!   indexed sentence. Needs the index `trellis eval --dataset
//!   beir:…/scifact` builds (data directory: `$TRELLIS_DATA_DIR`, else
//!   `./.trellis`).
//! - **ingest**: SQuAD part 1 (24 articles) ingested end to end into an
//!   empty data directory (no embedding cache), sentences/s, and the share
//!   of the time spent embedding.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use common::Rng;
use trellis::embed;
use trellis::eval::{DatasetKind, EvalSet, Evaluation};
use trellis::index::IndexVersion;
use trellis::index::{HnswGraph, Vectors};
use trellis::retrieve::{Filter, Retriever};
use trellis::spec::{AnchorMode, IndexProfileSpec, RetrievalRouteSpec};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |part: &str| args.is_empty() || args.iter().any(|a| a == part);
    // Latency first: it measures the resident memory an index load adds,
    // which pages freed by an earlier part would hide.
    if wants("latency") {
        query_latency();
    }
    if wants("hnsw") {
        hnsw_against_exact();
    }
    if wants("ingest") {
        ingest_throughput();
    }
}

fn clustered(n: usize, dims: usize, centres: &[Vec<f32>], spread: f32, rng: &mut Rng) -> Vec<f32> {
    let mut data = Vec::with_capacity(n * dims);
    for _ in 0..n {
        let c = &centres[(rng.next() % centres.len() as u64) as usize];
        let mut v: Vec<f32> = c.iter().map(|x| x + spread * rng.normal()).collect();
        trellis::vector::normalize(&mut v);
        data.extend(v);
    }
    data
}

fn hnsw_against_exact() {
    const N: usize = 100_000;
    const DIMS: usize = 384;
    const QUERIES: usize = 500;
    const K: usize = 10;
    let mut rng = Rng(42);
    let centres: Vec<Vec<f32>> = (0..2000)
        .map(|_| {
            let mut c: Vec<f32> = (0..DIMS).map(|_| rng.normal()).collect();
            trellis::vector::normalize(&mut c);
            c
        })
        .collect();
    let spread = 0.6 / (DIMS as f32).sqrt();
    let vectors = Vectors::from_vec(DIMS, clustered(N, DIMS, &centres, spread, &mut rng));
    let queries = clustered(QUERIES, DIMS, &centres, spread, &mut rng);
    let rows: Vec<u32> = (0..N as u32).collect();

    let t = Instant::now();
    let graph = HnswGraph::build(&vectors, &rows, 16, 200);
    let build = t.elapsed().as_secs_f64();

    let all = |_: u32| true;
    let t = Instant::now();
    let exact: Vec<Vec<u32>> = queries
        .chunks_exact(DIMS)
        .map(|q| {
            vectors
                .exact_search(q, K, &all)
                .into_iter()
                .map(|(i, _)| i)
                .collect()
        })
        .collect();
    let exact_qps = QUERIES as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    let approx: Vec<Vec<u32>> = queries
        .chunks_exact(DIMS)
        .map(|q| {
            graph
                .search(&vectors, None, q, K, 200, &all)
                .into_iter()
                .map(|(i, _)| i)
                .collect()
        })
        .collect();
    let hnsw_qps = QUERIES as f64 / t.elapsed().as_secs_f64();
    let found: usize = exact
        .iter()
        .zip(&approx)
        .map(|(e, a)| a.iter().filter(|i| e.contains(i)).count())
        .sum();
    let recall = found as f64 / (QUERIES * K) as f64;
    println!(
        "hnsw: {N} vectors × {DIMS} dims, built in {build:.1} s (m 16, ef_construction 200)\n  \
         recall@10 {recall:.4} against exact search\n  \
         queries/s (1 thread): HNSW {hnsw_qps:.0} · exact {exact_qps:.0} · {:.1}× faster",
        hnsw_qps / exact_qps
    );
}

fn data_dir() -> PathBuf {
    std::env::var_os("TRELLIS_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(".trellis"))
}

/// The SciFact evaluation corpus' name under the data directory.
fn scifact_corpus(data_dir: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(data_dir.join("indexes"))
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("eval-beir-"))
        .collect();
    names.sort();
    names.pop()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn default_route(mode: AnchorMode) -> RetrievalRouteSpec {
    let mut spec = RetrievalRouteSpec::for_corpus("any");
    spec.anchors.mode = mode;
    spec
}

fn query_latency() {
    let data = data_dir();
    let Some(corpus) = scifact_corpus(&data) else {
        println!(
            "latency: no SciFact index under {}; run `trellis eval --dataset beir:<eval>/scifact` first",
            data.display()
        );
        return;
    };
    let before = common::resident_bytes("self");
    let index = IndexVersion::open(&data, &corpus, None).expect("SciFact index");
    let after = common::resident_bytes("self");
    let sentences = index.manifest.counts.indexed_sentences;
    let embedder = embed::from_spec(&index.profile.embedding, None).expect("embedder");
    let retriever = Retriever::new(&index, embedder.as_ref()).expect("retriever");
    let text = std::fs::read_to_string(common::eval_dir().join("scifact/queries.jsonl"))
        .expect("SciFact queries");
    let queries: Vec<String> = text
        .lines()
        .take(500)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("query line");
            v["text"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    let refs: Vec<&str> = queries.iter().map(String::as_str).collect();
    let vectors = embedder.embed_queries(&refs).expect("query vectors");
    let filter = Filter::default();

    let time = |f: &dyn Fn(usize)| -> Vec<f64> {
        let mut ms: Vec<f64> = (0..queries.len())
            .map(|n| {
                let t = Instant::now();
                f(n);
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        ms
    };
    let full = default_route(AnchorMode::Full);
    let bm25 = default_route(AnchorMode::Bm25);
    let with_embedding = time(&|n| {
        retriever
            .retrieve(&full, &queries[n], Some(10), &filter)
            .expect("query");
    });
    let without = time(&|n| {
        retriever
            .retrieve_embedded(&full, &queries[n], Some(&vectors[n]), Some(10), &filter)
            .expect("query");
    });
    let lexical = time(&|n| {
        retriever
            .retrieve(&bm25, &queries[n], Some(10), &filter)
            .expect("query");
    });
    println!(
        "latency: SciFact index {} ({sentences} indexed sentences), {} queries, 1 thread",
        index.manifest.version,
        queries.len()
    );
    for (label, ms) in [
        ("full, query embedded per call", &with_embedding),
        ("full, query vector given", &without),
        ("bm25 only", &lexical),
    ] {
        println!(
            "  {label:<31} p50 {:6.2} ms · p99 {:6.2} ms",
            percentile(ms, 0.5),
            percentile(ms, 0.99)
        );
    }
    println!(
        "  embedding the query is {:.0}% of the full-mode median",
        100.0 * (1.0 - percentile(&without, 0.5) / percentile(&with_embedding, 0.5))
    );
    println!(
        "memory: loading the index adds {:.1} MiB resident, {:.0} bytes per indexed sentence",
        (after.saturating_sub(before)) as f64 / (1 << 20) as f64,
        after.saturating_sub(before) as f64 / sentences.max(1) as f64
    );
}

fn ingest_throughput() {
    let tmp = std::env::temp_dir().join(format!("trellis-bench-ingest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let path = common::eval_dir().join("squad/dev-v1.1-part1.json");
    let set = EvalSet::load(DatasetKind::Squad, &path, None, None).expect("SQuAD part 1");
    let profile = IndexProfileSpec::default();
    let route = default_route(AnchorMode::Bm25);
    let report = Evaluation {
        set: &set,
        dataset: "squad".into(),
        profile: &profile,
        profile_base: &tmp,
        route: &route,
        data_dir: &tmp,
        chunk_baseline: false,
        generator: None,
        answer_limit: 0,
    }
    .run(&|_, _, _| {})
    .expect("ingest");
    let corpus = std::fs::read_dir(tmp.join("indexes"))
        .ok()
        .and_then(|mut d| d.next()?.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .unwrap_or_default();
    let manifest = IndexVersion::open(&tmp, &corpus, None)
        .map(|v| v.manifest)
        .expect("the version just built");
    let t = &manifest.timings;
    println!(
        "ingest: SQuAD part 1, {} documents, {} sentences ({} indexed), empty cache\n  \
         {:.1} s end to end · {:.0} sentences/s · embedding {:.0}% of the time \
         (parse {:.1} s · embed {:.1} s · bm25 {:.1} s · hnsw {:.1} s · links {:.1} s)",
        manifest.counts.documents,
        manifest.counts.sentences,
        report.indexed_sentences,
        t.total,
        report.indexed_sentences as f64 / t.total,
        100.0 * t.embed / t.total,
        t.parse,
        t.embed,
        t.bm25,
        t.hnsw,
        t.links
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
