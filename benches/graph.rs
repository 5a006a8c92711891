//! Graph stores measured, each against its baseline in the same run.
//!
//! ```text
//! cargo bench --bench graph                 # both parts
//! cargo bench --bench graph -- export       # export throughput
//! cargo bench --bench graph -- routes       # routes anchored in each store
//! ```
//!
//! - **export**: sentences/s written to each graph store, per batch size,
//!   against one row per statement (batch size 1). The index is SQuAD
//!   part 1 (24 articles), built once with the default profile; each
//!   export goes to an empty graph.
//! - **routes**: a route with `anchors.source: graph` on each store against
//!   the embedded route, on the SQuAD part 1 and SciFact development sets:
//!   every quality metric over all queries, then the route served by
//!   `trellis serve` (the release binary) and queried by one client:
//!   latency p50/p99 and the service's resident memory ([`routes`]).
//!
//! Evaluation data: `../shared/eval`, or `$TRELLIS_EVAL_DIR`. FalkorDB and
//! Neo4j 5 Community are started from `scripts/falkordb-test-server.sh`
//! and `scripts/neo4j-test-server.sh` on free ports.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::service::{self, Server};
use trellis::eval::{DatasetKind, EvalSet, Evaluation, Metrics};
use trellis::graph::{self, ExportOptions, GraphStore, export};
use trellis::index::IndexVersion;
use trellis::spec::{
    AnchorMode, AnchorSource, FalkorDbSpec, GraphSpec, GraphStoreKind, IndexProfileSpec, Neo4jSpec,
    RetrievalRouteSpec,
};

const BATCH_SIZES: [usize; 6] = [1, 50, 200, 500, 1000, 2000];

/// The password the Neo4j test server gives user `neo4j` (the script's
/// default), and the variable the Neo4j spec reads it from.
const NEO4J_PASSWORD: &str = "trellis-test-password";
const NEO4J_PASSWORD_ENV: &str = "TRELLIS_BENCH_NEO4J_PASSWORD";

/// How long one client queries each served route.
const ROUTE_LOAD_SECONDS: u64 = 30;

fn main() {
    // SAFETY: the first statement of `main`, before any other thread runs.
    unsafe { std::env::set_var(NEO4J_PASSWORD_ENV, NEO4J_PASSWORD) };
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |part: &str| args.is_empty() || args.iter().any(|a| a == part);
    let tmp = std::env::temp_dir().join(format!("trellis-bench-graph-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    if wants("export") {
        export_throughput(&tmp.join("export"));
    }
    if wants("routes") {
        routes(&tmp.join("routes"));
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

fn falkordb_spec(port: u16, graph: &str) -> GraphSpec {
    GraphSpec {
        store: GraphStoreKind::Falkordb,
        falkordb: Some(FalkorDbSpec {
            url: format!("falkor://127.0.0.1:{port}"),
            graph: graph.to_string(),
            password_secret_ref: None,
            password_env: None,
        }),
        ..GraphSpec::default()
    }
}

fn neo4j_spec(port: u16) -> GraphSpec {
    GraphSpec {
        store: GraphStoreKind::Neo4j,
        neo4j: Some(Neo4jSpec {
            uri: format!("bolt://127.0.0.1:{port}"),
            database: None,
            username: "neo4j".into(),
            password_secret_ref: None,
            password_env: Some(NEO4J_PASSWORD_ENV.into()),
        }),
        ..GraphSpec::default()
    }
}

fn export_throughput(tmp: &Path) {
    let index = build_index(tmp);
    println!(
        "graph export: SQuAD part 1, {} documents, {} sentences, {} RELATED_TO links",
        index.manifest.counts.documents,
        index.manifest.counts.sentences,
        index.manifest.counts.related_edges
    );

    let falkordb = common::ScriptServer::start("falkordb-test-server.sh");
    measure("falkordb", &index, |graph| {
        falkordb_spec(falkordb.port, graph)
    });
    drop(falkordb);

    let neo4j = common::ScriptServer::start("neo4j-test-server.sh");
    // Community has one user database: every batch size shares it, emptied
    // before each export.
    measure("neo4j", &index, |_| neo4j_spec(neo4j.port));
    drop(neo4j);
}

fn build_index(dir: &Path) -> IndexVersion {
    let path = common::eval_dir().join("squad/dev-v1.1-part1.json");
    let set = EvalSet::load(DatasetKind::Squad, &path, None, None).expect("SQuAD part 1");
    let profile = IndexProfileSpec::default();
    let mut route = RetrievalRouteSpec::for_corpus("squad");
    route.anchors.mode = AnchorMode::Bm25;
    Evaluation {
        set: &set,
        dataset: "squad".into(),
        profile: &profile,
        profile_base: dir,
        route: &route,
        data_dir: dir,
        chunk_baseline: false,
        generator: None,
        answer_limit: 0,
    }
    .run(&|_, _, _| {})
    .expect("ingest");
    let corpus = std::fs::read_dir(dir.join("indexes"))
        .ok()
        .and_then(|mut d| d.next()?.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .expect("a corpus");
    IndexVersion::open(dir, &corpus, None).expect("the version just built")
}

/// Exports `index` at each batch size into a fresh graph (removing the
/// version afterwards), and prints sentences/s and the ratio to batch
/// size 1.
fn measure(name: &str, index: &IndexVersion, spec_for: impl Fn(&str) -> GraphSpec) {
    let mut baseline = None;
    let mut best: Option<(usize, f64)> = None;
    for batch_size in BATCH_SIZES {
        let spec = spec_for(&format!("bench{batch_size}"));
        let mut store: Box<dyn GraphStore> = graph::connect(&spec)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .expect("a graph store");
        let options = ExportOptions {
            batch_size,
            retries: 0,
        };
        // Start empty: no earlier run's version in the way.
        export::remove_versions(store.as_mut(), &index.manifest.corpus, &[], options)
            .expect("emptying the graph");
        let started = Instant::now();
        let report = export::export(store.as_mut(), index, options).expect("export");
        let seconds = started.elapsed().as_secs_f64();
        let rate = index.store.sentences.len() as f64 / seconds;
        let base = *baseline.get_or_insert(rate);
        println!(
            "  {name}: batch {batch_size:>5} · {:>6} statements · {seconds:>7.2} s · \
             {rate:>8.0} sentences/s · {:>5.1}× batch 1",
            report.statements,
            rate / base
        );
        if best.is_none_or(|(_, r)| rate > r) {
            best = Some((batch_size, rate));
        }
        export::remove_versions(store.as_mut(), &index.manifest.corpus, &[], options)
            .expect("cleaning up");
    }
    if let (Some((size, rate)), Some(base)) = (best, baseline) {
        println!(
            "{name}: best batch size {size}: {rate:.0} sentences/s ({:.1}× one row per statement)",
            rate / base
        );
    }
}

/// The SQuAD and SciFact development sets through three routes in one
/// run: anchors from the embedded index (the baseline) and from each
/// store's vector and full-text indexes. Each route is evaluated whole
/// (every query, every metric), then served by `trellis serve` and queried
/// by one client for [`ROUTE_LOAD_SECONDS`]: latency per request (query
/// embedded by the service, as in a pod) and the service's resident
/// memory.
fn routes(tmp: &Path) {
    let falkordb = common::ScriptServer::start("falkordb-test-server.sh");
    let neo4j = common::ScriptServer::start("neo4j-test-server.sh");
    let stores = [
        ("embedded", GraphSpec::default()),
        ("falkordb", falkordb_spec(falkordb.port, "routes")),
        ("neo4j", neo4j_spec(neo4j.port)),
    ];
    let eval = common::eval_dir();
    let sets = [
        (
            "SQuAD part 1",
            DatasetKind::Squad,
            eval.join("squad/dev-v1.1-part1.json"),
        ),
        ("SciFact", DatasetKind::Beir, eval.join("scifact")),
    ];
    for (name, kind, path) in sets {
        let set = EvalSet::load(kind, &path, None, None).expect(name);
        let corpus = format!("eval-{}-{}", kind.as_str(), set.content_hash());
        let queries = Arc::new(
            set.queries
                .iter()
                .map(|q| q.text.clone())
                .collect::<Vec<_>>(),
        );
        println!("{name}: {} queries", set.queries.len());
        let mut baseline: Option<(f64, u64)> = None;
        for (store, graph) in &stores {
            let profile = IndexProfileSpec {
                graph: graph.clone(),
                ..IndexProfileSpec::default()
            };
            let mut route = RetrievalRouteSpec::for_corpus("evaluation");
            if graph.store != GraphStoreKind::Embedded {
                route.anchors.source = AnchorSource::Graph;
            }
            let report = Evaluation {
                set: &set,
                dataset: name.to_string(),
                profile: &profile,
                profile_base: tmp,
                route: &route,
                data_dir: tmp,
                chunk_baseline: false,
                generator: None,
                answer_limit: 0,
            }
            .run(&|_, _, _| {})
            .unwrap_or_else(|e| panic!("{name} through {store}: {e}"));
            let metrics = |label: &str, m: &Option<Metrics>| match m {
                Some(m) => format!(
                    "{label} R@1 {:.4} R@5 {:.4} R@10 {:.4} nDCG@10 {:.4} MRR {:.4}",
                    m.recall_1, m.recall_5, m.recall_10, m.ndcg_10, m.mrr
                ),
                None => format!("{label} –"),
            };
            println!(
                "  {store:<8} quality: {} · {} ({:.1} s for all queries, 2 threads)",
                metrics("sentence", &report.sentence),
                metrics("document", &report.document),
                report.query_seconds
            );

            let source = if graph.store == GraphStoreKind::Embedded {
                "embedded"
            } else {
                "graph"
            };
            let manifest = format!(
                "apiVersion: trellis.dev/v1alpha1\nkind: RetrievalRoute\nmetadata: {{name: bench}}\n\
                 spec:\n  corpusRef: {{name: {corpus}}}\n  anchors: {{source: {source}}}\n"
            );
            let server = Server::start(
                &manifest,
                tmp,
                &["--index-version", &report.index_version, "--max-k", "10"],
            );
            let ready = server.resident();
            let time = Duration::from_secs(ROUTE_LOAD_SECONDS);
            let run = service::load(&server, &queries, 1, time, None);
            let resident = server.resident();
            server.stop();
            let p50 = run.percentile(0.5);
            let (base_p50, base_resident) = *baseline.get_or_insert((p50, resident));
            println!(
                "  {store:<8} served, 1 client {ROUTE_LOAD_SECONDS} s: {} requests, errors {}, \
                 p50 {p50:.1} ms ({:.2}× embedded), p99 {:.1} ms; resident {:.0} MiB when ready, \
                 {:.0} MiB after ({:.2}× embedded)",
                run.latencies.len(),
                run.errors,
                p50 / base_p50,
                run.percentile(0.99),
                service::mib(ready),
                service::mib(resident),
                resident as f64 / base_resident as f64
            );
        }
    }
}
