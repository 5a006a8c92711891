//! The sentence vector index at scale: build time, memory, disk, recall and
//! latency, for the HNSW graph Trellis builds and, in the same run, for
//! the hnsw_rs graph earlier releases built and loaded.
//!
//! ```text
//! cargo bench --bench scale -- 100000 300000 1000000   # sizes (default 100000)
//! cargo bench --bench scale -- 100000 --no-baseline    # skip hnsw_rs
//! cargo bench --bench scale -- 100000 --queries 500
//! ```
//!
//! **Vectors.** The real ones are every indexed sentence vector of the
//! evaluation indexes under the data directory (`$TRELLIS_DATA_DIR`, else
//! `./.trellis`; `trellis eval` on the SciFact, SQuAD and CUAD
//! development sets builds them): about 54,000 all-MiniLM-L6-v2 sentence
//! embeddings. Past those, row `i` is real row `i mod R` plus Gaussian
//! noise of norm 0.45 (cosine about 0.91 to its source), normalised: the
//! neighbourhoods stay as dense as real ones and every copy is distinct.
//! Recall is measured against exact search over the same vectors.
//!
//! **Queries.** The first `--queries` SciFact claims, embedded by the
//! default model (`scripts/fetch-model.sh`); the default route's search
//! (200 candidates, search list 200).
//!
//! **Memory.** Each index is opened in a child process of its own (this
//! binary, re-run with `--probe`), after the model is loaded, so that no
//! page of another index is counted: resident bytes (`VmRSS`, of which
//! anonymous and file-backed) after loading and after every query ran,
//! divided by the sentences.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::Rng;
use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;
use hnsw_rs::prelude::{Distance, Hnsw};
use rayon::prelude::*;
use trellis::embed;
use trellis::index::vectors::Paging;
use trellis::index::{HnswGraph, Quantized, Vectors};

const DIMS: usize = 384;
const K: usize = 10;
const CANDIDATES: usize = 200;
const EF: usize = 200;
const M: usize = 16;
const EF_CONSTRUCTION: usize = 200;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--probe") {
        return probe(&args[at + 1..]);
    }
    let mut sizes = Vec::new();
    let mut queries = 300;
    let mut baseline = true;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--queries" => queries = it.next().and_then(|q| q.parse().ok()).unwrap_or(queries),
            "--no-baseline" => baseline = false,
            "--bench" => {}
            other => {
                if let Ok(n) = other.replace('_', "").parse::<usize>() {
                    sizes.push(n);
                }
            }
        }
    }
    if sizes.is_empty() {
        sizes.push(100_000);
    }
    let real = real_vectors();
    println!(
        "scale: {} real sentence vectors; {} queries; m {M}, ef_construction {EF_CONSTRUCTION}, \
         {CANDIDATES} candidates, search list {EF}; {} threads",
        real.len(),
        queries,
        rayon::current_num_threads()
    );
    let work = std::env::temp_dir().join(format!("trellis-scale-{}", std::process::id()));
    let embedder = embed::from_spec(&Default::default(), None).expect("the default model");
    let texts = scifact_claims(queries);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let query_vectors: Vec<f32> = embedder
        .embed_queries(&refs)
        .expect("query vectors")
        .concat();
    for n in sizes {
        let dir = work.join(n.to_string());
        std::fs::create_dir_all(&dir).expect("work directory");
        run(n, &real, &query_vectors, &texts, &dir, baseline);
        let _ = std::fs::remove_dir_all(&dir);
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// One size: build, write, exact answers, then one probe per index.
fn run(n: usize, real: &Vectors, queries: &[f32], texts: &[String], dir: &Path, baseline: bool) {
    let t = Instant::now();
    let vectors = synthesise(n, real);
    let synthesis = t.elapsed().as_secs_f64();
    vectors.write(&dir.join("vectors.f32")).expect("vectors");
    std::fs::write(dir.join("queries.txt"), texts.join("\n")).expect("queries");
    Vectors::from_vec(DIMS, queries.to_vec())
        .write(&dir.join("queries.f32"))
        .expect("queries");
    let rows: Vec<u32> = (0..n as u32).collect();

    let t = Instant::now();
    let exact: Vec<u32> = queries
        .par_chunks_exact(DIMS)
        .flat_map_iter(|q| {
            vectors
                .exact_search(q, K, &|_| true)
                .into_iter()
                .map(|(i, _)| i)
        })
        .collect();
    let exact_seconds = t.elapsed().as_secs_f64();
    write_u32(&dir.join("exact.u32"), &exact);

    let t = Instant::now();
    let graph = HnswGraph::build(&vectors, &rows, M, EF_CONSTRUCTION);
    let build = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let quantized = Quantized::build(&vectors, graph.rows());
    let quantize = t.elapsed().as_secs_f64();
    let t = Instant::now();
    graph.write(&dir.join("hnsw.graph")).expect("graph");
    quantized.write(&dir.join("vectors.i8")).expect("int8 rows");
    let write = t.elapsed().as_secs_f64();
    drop((graph, quantized));

    println!(
        "\n{n} sentences (synthesised in {synthesis:.1} s; exact answers in {exact_seconds:.1} s)"
    );
    println!(
        "  build  Trellis HNSW {build:.1} s ({:.0} vectors/s) · int8 rows {quantize:.2} s · \
         write {write:.2} s",
        n as f64 / build
    );
    let size = |f: &str| std::fs::metadata(dir.join(f)).map_or(0, |m| m.len());
    let mut probes = vec![
        (
            "Trellis HNSW, f32",
            "f32",
            size("vectors.f32") + size("hnsw.graph"),
        ),
        (
            "Trellis HNSW, int8",
            "int8",
            size("vectors.f32") + size("hnsw.graph") + size("vectors.i8"),
        ),
    ];
    if baseline {
        let t = Instant::now();
        let hnsw = Hnsw::<f32, UnitCosine>::new(M, n, 16, EF_CONSTRUCTION, UnitCosine);
        let data: Vec<(&[f32], usize)> =
            rows.iter().map(|&r| (vectors.row(r), r as usize)).collect();
        hnsw.parallel_insert_slice(&data);
        let build = t.elapsed().as_secs_f64();
        hnsw.file_dump(dir, "hnsw").expect("hnsw_rs dump");
        println!(
            "  build  hnsw_rs (before) {build:.1} s ({:.0} vectors/s)",
            n as f64 / build
        );
        probes.push((
            "hnsw_rs (before)",
            "hnsw_rs",
            size("vectors.f32") + size("hnsw.hnsw.graph") + size("hnsw.hnsw.data"),
        ));
    }
    drop(vectors);
    println!(
        "  {:<20} {:>9} {:>12} {:>12} {:>10} {:>9} {:>9} {:>13} {:>13}",
        "index",
        "disk B/s",
        "RSS load B/s",
        "RSS after",
        "anon/file",
        "recall@10",
        "p50 ms",
        "p99 ms",
        "p50/p99 +emb"
    );
    for (label, mode, disk) in probes {
        let out = Command::new(std::env::current_exe().expect("this binary"))
            .args(["--probe", &dir.to_string_lossy(), mode])
            .output()
            .expect("probe");
        let line = String::from_utf8_lossy(&out.stdout);
        let v: Vec<f64> = line
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if v.len() != 9 {
            println!(
                "  {label}: probe failed: {}{}",
                line,
                String::from_utf8_lossy(&out.stderr)
            );
            continue;
        }
        let per = |bytes: f64| bytes / n as f64;
        println!(
            "  {label:<20} {:>9.0} {:>12.0} {:>12.0} {:>4.0}/{:<5.0} {:>9.4} {:>9.2} {:>13.2} {:>6.2}/{:<6.2}",
            per(disk as f64),
            per(v[0]),
            per(v[1]),
            per(v[2]),
            per(v[3]),
            v[4],
            v[5],
            v[6],
            v[7],
            v[8],
        );
    }
}

/// In a child process: opens one index of `dir` the way a retrieval pod
/// does and prints, space-separated: resident bytes the load added, and
/// after the queries (total, anonymous, file-backed), recall@10, p50 and
/// p99 ms with the vector given, p50 and p99 ms with the query embedded.
fn probe(args: &[String]) {
    let dir = PathBuf::from(&args[0]);
    let mode = args[1].as_str();
    let embedder = embed::from_spec(&Default::default(), None).expect("the default model");
    let texts: Vec<String> = std::fs::read_to_string(dir.join("queries.txt"))
        .expect("queries")
        .lines()
        .map(str::to_string)
        .collect();
    let queries = Vectors::read(&dir.join("queries.f32"), DIMS).expect("query vectors");
    let queries = Vectors::from_vec(DIMS, queries.as_slice().to_vec());
    let exact = read_u32(&dir.join("exact.u32"));
    // Warm the model's code paths before the baseline is taken.
    embedder.embed_queries(&["warm up"]).expect("embedding");
    let before = rss();

    let search: Box<Search> = match mode {
        "f32" | "int8" => {
            // As a version opens them: read in whole when the walk reads
            // them, paged in by the rows rescored under an int8 walk.
            let paging = match mode {
                "f32" => Paging::Resident,
                _ => Paging::OnDemand,
            };
            let vectors = Vectors::map(&dir.join("vectors.f32"), DIMS, paging).expect("vectors");
            let graph = HnswGraph::read(&dir.join("hnsw.graph")).expect("graph");
            let quantized = (mode == "int8").then(|| {
                Quantized::read(&dir.join("vectors.i8"), DIMS, graph.len()).expect("int8 rows")
            });
            Box::new(move |q| {
                graph
                    .search(&vectors, quantized.as_ref(), q, CANDIDATES, EF, &|_| true)
                    .into_iter()
                    .map(|(i, _)| i)
                    .collect()
            })
        }
        _ => {
            // What earlier releases loaded: the vectors read into memory and
            // hnsw_rs' graph reloaded with its own copy of them.
            let bytes = std::fs::read(dir.join("vectors.f32")).expect("vectors");
            let data: Vec<f32> = bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            drop(bytes);
            let vectors = Vectors::from_vec(DIMS, data);
            let io: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(&dir, "hnsw")));
            let hnsw = io.load_hnsw::<f32, UnitCosine>().expect("hnsw_rs graph");
            Box::new(move |q| {
                let mut found: Vec<(u32, f32)> = hnsw
                    .search(q, CANDIDATES, EF)
                    .iter()
                    .map(|n| {
                        let i = n.d_id as u32;
                        (i, trellis::vector::dot(q, vectors.row(i)))
                    })
                    .collect();
                found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                found.into_iter().map(|(i, _)| i).collect()
            })
        }
    };
    let loaded = rss();
    let mut given = Vec::new();
    let mut hits = 0;
    for (i, q) in queries.as_slice().chunks_exact(DIMS).enumerate() {
        let t = Instant::now();
        let found = search(q);
        given.push(t.elapsed().as_secs_f64() * 1000.0);
        let truth = &exact[i * K..(i + 1) * K];
        hits += found.iter().take(K).filter(|f| truth.contains(f)).count();
    }
    let mut embedded = Vec::new();
    for text in &texts {
        let t = Instant::now();
        let q = embedder.embed_queries(&[text.as_str()]).expect("embedding");
        search(&q[0]);
        embedded.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let after = rss();
    given.sort_by(f64::total_cmp);
    embedded.sort_by(f64::total_cmp);
    println!(
        "{} {} {} {} {:.4} {:.3} {:.3} {:.3} {:.3}",
        loaded.0.saturating_sub(before.0),
        after.0.saturating_sub(before.0),
        after.1.saturating_sub(before.1),
        after.2.saturating_sub(before.2),
        hits as f64 / (texts.len() * K) as f64,
        percentile(&given, 0.5),
        percentile(&given, 0.99),
        percentile(&embedded, 0.5),
        percentile(&embedded, 0.99),
    );
}

/// One search: a query vector to sentence numbers, best first.
type Search = dyn Fn(&[f32]) -> Vec<u32>;

/// Resident bytes of this process: total, anonymous, file-backed.
fn rss() -> (u64, u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("RssAnon:"), field("RssFile:"))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted
        .get(at.min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0)
}

fn write_u32(path: &Path, words: &[u32]) {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(path, bytes).expect("write");
}

fn read_u32(path: &Path) -> Vec<u32> {
    std::fs::read(path)
        .expect("read")
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// hnsw_rs' distance as earlier releases gave it: `1 - a·b`, clamped.
#[derive(Clone, Copy, Debug, Default)]
struct UnitCosine;

impl Distance<f32> for UnitCosine {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - trellis::vector::dot(a, b)).max(0.0)
    }
}

fn data_dir() -> PathBuf {
    std::env::var_os("TRELLIS_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(".trellis"))
}

/// Every indexed (non-zero) sentence vector of the newest version of each
/// evaluation corpus under the data directory.
fn real_vectors() -> Vectors {
    let indexes = data_dir().join("indexes");
    let mut data = Vec::new();
    let mut corpora: Vec<PathBuf> = std::fs::read_dir(&indexes)
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    corpora.sort();
    for corpus in &corpora {
        let name = corpus
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if !name.starts_with("eval-") {
            continue;
        }
        let Ok(version) = trellis::index::current_version(&data_dir(), &name) else {
            continue;
        };
        let Ok(vectors) = Vectors::read(&corpus.join(version).join("vectors.f32"), DIMS) else {
            continue;
        };
        for row in vectors.as_slice().chunks_exact(DIMS) {
            if row.iter().any(|&x| x != 0.0) {
                data.extend_from_slice(row);
            }
        }
    }
    assert!(
        !data.is_empty(),
        "no evaluation index under {}: run `trellis eval` on the development sets first",
        indexes.display()
    );
    Vectors::from_vec(DIMS, data)
}

/// `n` rows: the real ones, then noisy copies of them.
fn synthesise(n: usize, real: &Vectors) -> Vectors {
    let sigma = 0.45 / (DIMS as f32).sqrt();
    let mut data = vec![0f32; n * DIMS];
    data.par_chunks_exact_mut(DIMS)
        .enumerate()
        .for_each(|(i, out)| {
            let source = real.row((i % real.len()) as u32);
            if i < real.len() {
                out.copy_from_slice(source);
                return;
            }
            let mut rng = Rng(i as u64);
            for (o, x) in out.iter_mut().zip(source) {
                *o = x + sigma * rng.normal();
            }
            trellis::vector::normalize(out);
        });
    Vectors::from_vec(DIMS, data)
}

fn scifact_claims(n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(common::eval_dir().join("scifact/queries.jsonl"))
        .expect("SciFact queries");
    text.lines()
        .take(n)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("query line");
            v["text"].as_str().unwrap_or_default().replace('\n', " ")
        })
        .collect()
}
