//! The retrieval service under load on loopback, against in-process
//! retrieval in the same run.
//!
//! ```text
//! cargo bench --bench serve                      # 20 s per level, 300 s soak
//! SERVE_BENCH_SECONDS=5 SERVE_BENCH_SOAK_SECONDS=30 cargo bench --bench serve
//! ```
//!
//! Starts `trellis serve` (the release-profile binary) over the SciFact
//! index, building it first when the data directory (`$TRELLIS_DATA_DIR`,
//! else `./.trellis`) has none, with the default route in full mode and a
//! concurrency limit of 128, so that no client is turned away. Then:
//!
//! - **baseline**: the same queries through `Retriever` in this process, one
//!   thread, query embedded per call: what a request costs without HTTP.
//! - **load**: 1, 8 and 64 concurrent clients (one blocking HTTP client per
//!   thread, SciFact's queries in turn, `k` 10) for the set time each:
//!   queries/s, p50/p99 latency, errors (anything but 200), and the ratios
//!   to the baseline and to one client.
//! - **earlier build** (when `SERVE_BENCH_EARLIER_BIN` names another
//!   `trellis` binary): the same levels against it, served alone, before
//!   this build is started, and the ratio of queries/s at each level.
//! - **soak**: 8 clients for the soak time, the server's resident memory
//!   sampled every 5 s: first sample after a 10 s warm-up, last, highest.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::service::{Run, Server, load, mib};

use trellis::embed;
use trellis::eval::{DatasetKind, EvalSet, Evaluation};
use trellis::index::IndexVersion;
use trellis::retrieve::{Filter, Retriever};
use trellis::spec::{AnchorMode, IndexProfileSpec, RetrievalRouteSpec};

fn seconds(var: &str, default: u64) -> Duration {
    Duration::from_secs(
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default),
    )
}

fn main() {
    let level_time = seconds("SERVE_BENCH_SECONDS", 20);
    let soak_time = seconds("SERVE_BENCH_SOAK_SECONDS", 300);
    let data = std::env::var_os("TRELLIS_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(".trellis"));
    let scifact = common::eval_dir().join("scifact");
    let set = EvalSet::load(DatasetKind::Beir, &scifact, None, None).expect("SciFact");
    let corpus = ensure_index(&set, &data);
    let queries: Vec<String> = set.queries.iter().map(|q| q.text.clone()).collect();

    let baseline = in_process(&data, &corpus, &queries);
    println!(
        "baseline (in process, 1 thread): {:.1} q/s, p50 {:.1} ms, p99 {:.1} ms over {} queries",
        baseline.qps(),
        baseline.percentile(0.5),
        baseline.percentile(0.99),
        baseline.latencies.len()
    );

    let manifest = format!(
        "apiVersion: trellis.dev/v1alpha1\nkind: RetrievalRoute\nmetadata: {{name: bench}}\n\
         spec:\n  corpusRef: {{name: {corpus}}}\n  anchors: {{mode: full}}\n"
    );
    let queries = Arc::new(queries);
    let earlier = earlier_build(&scifact, &queries, level_time);

    let server = Server::start(&manifest, &data, SERVE_ARGS);
    println!(
        "server: trellis serve on {} (pid {}), resident {:.0} MiB when ready",
        server.addr,
        server.child.id(),
        mib(server.resident())
    );
    let levels = load_levels(&server, &queries, level_time);
    for (clients, run) in &levels {
        println!(
            "load {clients:>2} clients: {:.1} q/s ({:.2}x one client), p50 {:.1} ms ({:.2}x baseline p50), p99 {:.1} ms, errors {}",
            run.qps(),
            run.qps() / levels[0].1.qps(),
            run.percentile(0.5),
            run.percentile(0.5) / baseline.percentile(0.5),
            run.percentile(0.99),
            run.errors
        );
    }
    if let Some(earlier) = &earlier {
        for ((clients, now), (_, then)) in levels.iter().zip(earlier) {
            println!(
                "this build against the earlier one, {clients:>2} clients: {:.2}x queries/s, p99 {:.1} ms against {:.1} ms",
                now.qps() / then.qps(),
                now.percentile(0.99),
                then.percentile(0.99)
            );
        }
    }

    let samples = Arc::new(Mutex::new(Vec::new()));
    let run = load(&server, &queries, 8, soak_time, Some(Arc::clone(&samples)));
    let samples = samples.lock().map(|s| s.clone()).unwrap_or_default();
    let first = samples.first().copied().unwrap_or(0);
    let last = samples.last().copied().unwrap_or(0);
    let highest = samples.iter().copied().max().unwrap_or(0);
    println!(
        "soak 8 clients, {} s: {:.1} q/s, {} requests, errors {}; resident {:.0} MiB after warm-up, {:.0} MiB at the end ({:+.1}%), highest {:.0} MiB, {} samples",
        soak_time.as_secs(),
        run.qps(),
        run.latencies.len(),
        run.errors,
        mib(first),
        mib(last),
        (last as f64 / first.max(1) as f64 - 1.0) * 100.0,
        mib(highest),
        samples.len()
    );
    server.stop();
}

/// The SciFact index's corpus name, building the index when it is missing.
fn ensure_index(set: &EvalSet, data: &Path) -> String {
    let corpus = format!("eval-beir-{}", set.content_hash());
    if IndexVersion::open(data, &corpus, None).is_err() {
        println!("building the SciFact index under {}", data.display());
        let profile = IndexProfileSpec::default();
        let route = RetrievalRouteSpec::for_corpus("evaluation");
        let base = std::env::current_dir().expect("working directory");
        Evaluation {
            set,
            dataset: "beir:scifact".to_string(),
            profile: &profile,
            profile_base: &base,
            route: &route,
            data_dir: data,
            chunk_baseline: false,
            generator: None,
            answer_limit: 0,
        }
        .run(&|_, _, _| {})
        .expect("SciFact evaluation");
    }
    corpus
}

/// The server's options in every run: no client is turned away.
const SERVE_ARGS: &[&str] = &["--concurrency", "128", "--max-k", "10"];

/// Client counts of the load levels.
const CLIENTS: [usize; 3] = [1, 8, 64];

/// Each load level for `level_time`, in [`CLIENTS`] order.
fn load_levels(
    server: &Server,
    queries: &Arc<Vec<String>>,
    level_time: Duration,
) -> Vec<(usize, Run)> {
    CLIENTS
        .into_iter()
        .map(|clients| (clients, load(server, queries, clients, level_time, None)))
        .collect()
}

/// The load levels against an earlier build, when
/// `SERVE_BENCH_EARLIER_BIN` names its `trellis` binary: its own SciFact
/// index (an earlier build may not read today's index format) is built by
/// its own `trellis eval` under `SERVE_BENCH_EARLIER_DATA` (default
/// `./.trellis-earlier`) when missing, and served with the same options.
fn earlier_build(
    scifact: &Path,
    queries: &Arc<Vec<String>>,
    level_time: Duration,
) -> Option<Vec<(usize, Run)>> {
    let binary = PathBuf::from(std::env::var_os("SERVE_BENCH_EARLIER_BIN")?);
    let data = std::env::var_os("SERVE_BENCH_EARLIER_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(".trellis-earlier"));
    let set = EvalSet::load(DatasetKind::Beir, scifact, None, None).expect("SciFact");
    let corpus = format!("eval-beir-{}", set.content_hash());
    if !data.join("indexes").join(&corpus).exists() {
        println!(
            "building the earlier build's SciFact index under {}",
            data.display()
        );
        let dir = tempfile::tempdir().expect("temporary directory");
        let manifests = dir.path().join("eval.yaml");
        std::fs::write(
            &manifests,
            "apiVersion: trellis.dev/v1alpha1\nkind: IndexProfile\nmetadata: {name: p}\nspec: {}\n---\n\
             apiVersion: trellis.dev/v1alpha1\nkind: RetrievalRoute\nmetadata: {name: r}\n\
             spec: {corpusRef: {name: evaluation}}\n",
        )
        .expect("eval manifests");
        let status = std::process::Command::new(&binary)
            .arg("eval")
            .arg("--dataset")
            .arg(format!("beir:{}", scifact.display()))
            .arg("-f")
            .arg(&manifests)
            .arg("--data-dir")
            .arg(&data)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("running the earlier build's eval");
        assert!(status.success(), "the earlier build's eval failed");
    }
    let manifest = format!(
        "apiVersion: trellis.dev/v1alpha1\nkind: RetrievalRoute\nmetadata: {{name: bench}}\n\
         spec:\n  corpusRef: {{name: {corpus}}}\n  anchors: {{mode: full}}\n"
    );
    let server = Server::start_binary(&binary, &manifest, &data, SERVE_ARGS);
    println!(
        "earlier build: {} on {}, resident {:.0} MiB when ready",
        binary.display(),
        server.addr,
        mib(server.resident())
    );
    let levels = load_levels(&server, queries, level_time);
    for (clients, run) in &levels {
        println!(
            "earlier build, load {clients:>2} clients: {:.1} q/s, p50 {:.1} ms, p99 {:.1} ms, errors {}",
            run.qps(),
            run.percentile(0.5),
            run.percentile(0.99),
            run.errors
        );
    }
    server.stop();
    Some(levels)
}

fn route() -> RetrievalRouteSpec {
    let mut route = RetrievalRouteSpec::for_corpus("any");
    route.anchors.mode = AnchorMode::Full;
    route
}

fn in_process(data: &Path, corpus: &str, queries: &[String]) -> Run {
    let index = IndexVersion::open(data, corpus, None).expect("SciFact index");
    let embedder = embed::from_spec(&index.profile.embedding, None).expect("embedder");
    let retriever = Retriever::new(&index, embedder.as_ref()).expect("retriever");
    let route = route();
    let filter = Filter::default();
    let started = Instant::now();
    let latencies = queries
        .iter()
        .take(300)
        .map(|q| {
            let t = Instant::now();
            retriever
                .retrieve(&route, q, Some(10), &filter)
                .expect("query");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    Run {
        latencies,
        errors: 0,
        elapsed: started.elapsed(),
    }
}
