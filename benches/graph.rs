//! Graph export throughput: sentences/s written to each graph store, per
//! batch size, against one row per statement (batch size 1) in the same
//! run.
//!
//! ```text
//! cargo bench --bench graph
//! ```
//!
//! The index is SQuAD part 1 (24 articles; `../shared/eval/squad`, or
//! `$TRELLIS_EVAL_DIR`), built once with the default profile. FalkorDB and
//! Neo4j 5 Community are started from `scripts/falkordb-test-server.sh` and
//! `scripts/neo4j-test-server.sh` on free ports, one after the other. Each
//! export goes to an empty graph.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::time::Instant;

use trellis::eval::{DatasetKind, EvalSet, Evaluation};
use trellis::graph::{self, ExportOptions, GraphStore, export};
use trellis::index::IndexVersion;
use trellis::spec::{
    AnchorMode, FalkorDbSpec, GraphSpec, GraphStoreKind, IndexProfileSpec, Neo4jSpec,
    RetrievalRouteSpec,
};

const BATCH_SIZES: [usize; 6] = [1, 50, 200, 500, 1000, 2000];

/// The password the Neo4j test server gives user `neo4j` (the script's
/// default), and the variable the Neo4j spec reads it from.
const NEO4J_PASSWORD: &str = "trellis-test-password";
const NEO4J_PASSWORD_ENV: &str = "TRELLIS_BENCH_NEO4J_PASSWORD";

fn main() {
    // SAFETY: the first statement of `main`, before any other thread runs.
    unsafe { std::env::set_var(NEO4J_PASSWORD_ENV, NEO4J_PASSWORD) };
    let tmp = std::env::temp_dir().join(format!("trellis-bench-graph-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let index = build_index(&tmp);
    println!(
        "graph export: SQuAD part 1, {} documents, {} sentences, {} RELATED_TO links",
        index.manifest.counts.documents,
        index.manifest.counts.sentences,
        index.manifest.counts.related_edges
    );

    let falkordb = common::ScriptServer::start("falkordb-test-server.sh");
    measure("falkordb", &index, |graph| GraphSpec {
        store: GraphStoreKind::Falkordb,
        falkordb: Some(FalkorDbSpec {
            url: format!("falkor://127.0.0.1:{}", falkordb.port),
            graph: graph.to_string(),
            password_secret_ref: None,
            password_env: None,
        }),
        ..GraphSpec::default()
    });
    drop(falkordb);

    let neo4j = common::ScriptServer::start("neo4j-test-server.sh");
    // Community has one user database: every batch size shares it, emptied
    // before each export.
    measure("neo4j", &index, |_| GraphSpec {
        store: GraphStoreKind::Neo4j,
        neo4j: Some(Neo4jSpec {
            uri: format!("bolt://127.0.0.1:{}", neo4j.port),
            database: None,
            username: "neo4j".into(),
            password_secret_ref: None,
            password_env: Some(NEO4J_PASSWORD_ENV.into()),
        }),
        ..GraphSpec::default()
    });
    drop(neo4j);
    let _ = std::fs::remove_dir_all(&tmp);
}

fn build_index(dir: &std::path::Path) -> IndexVersion {
    let path = common::eval_dir().join("squad/dev-v1.1-part1.json");
    let set = EvalSet::load(DatasetKind::Squad, &path, None).expect("SQuAD part 1");
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
