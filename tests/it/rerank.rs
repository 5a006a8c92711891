//! The rerankers: the local cross-encoder's forward pass against PyTorch's
//! logits for two small random models (`tests/fixtures/cross-encoders`,
//! written by `scripts/make_cross_encoder_fixtures.py`), the HTTP wire
//! formats against a scripted service, and the reranker inside a route.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};
use trellis::retrieve::rerank::{CrossEncoder, HttpReranker, RerankError, Reranker};
use trellis::retrieve::{Filter, LoadedRoute};
use trellis::spec::{RerankPassage, RerankerKind, RerankerSpec, Signal};

use crate::common;
use crate::common::scripted::{Reply, Server};

#[derive(Deserialize)]
struct Reference {
    max_length: u32,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    query: String,
    passage: String,
    input_ids: Vec<u32>,
    token_type_ids: Vec<u32>,
    logits: Vec<f32>,
}

/// A fixture directory: `bert` and `xlm-roberta` in
/// `tests/fixtures/cross-encoders` (safetensors), or a path under
/// `tests/fixtures` (`onnx/bert-cross-encoder`, the same model exported to
/// ONNX, its logits from onnxruntime).
fn fixture(model: &str) -> PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    match model.contains('/') {
        true => fixtures.join(model),
        false => fixtures.join("cross-encoders").join(model),
    }
}

fn load(model: &str) -> (CrossEncoder, Reference) {
    let dir = fixture(model);
    let text = std::fs::read_to_string(dir.join("reference.json")).expect("reference.json");
    let reference: Reference = serde_json::from_str(&text).expect("reference.json");
    let spec = RerankerSpec {
        kind: RerankerKind::Local,
        max_length: reference.max_length,
        // Small batches, so that several run side by side.
        batch_tokens: 64,
        ..RerankerSpec::default()
    };
    (
        CrossEncoder::load(&dir, &spec).expect("fixture model"),
        reference,
    )
}

/// Tokens and logits of every pair match the reference's (PyTorch's, or
/// onnxruntime's for an ONNX fixture); the pairs of one query go through
/// in one call, packed into batches.
fn matches_pytorch(model: &str) {
    let (encoder, reference) = load(model);
    let mut by_query: BTreeMap<&str, Vec<&Case>> = BTreeMap::new();
    for case in &reference.cases {
        let (ids, types) = encoder.encode(&case.query, &case.passage).unwrap();
        assert_eq!(ids, case.input_ids, "{model}: ids of {:?}", case.passage);
        assert_eq!(
            types, case.token_type_ids,
            "{model}: types of {:?}",
            case.passage
        );
        by_query.entry(&case.query).or_default().push(case);
    }
    let mut worst = 0f32;
    for (query, cases) in by_query {
        let passages: Vec<&str> = cases.iter().map(|c| c.passage.as_str()).collect();
        let logits = encoder.logits(query, &passages).unwrap();
        for (case, got) in cases.iter().zip(&logits) {
            assert_eq!(got.len(), case.logits.len(), "{model}: labels");
            for (a, b) in got.iter().zip(&case.logits) {
                worst = worst.max((a - b).abs());
            }
        }
    }
    eprintln!("{model}: max abs diff {worst}");
    assert!(worst <= 1e-4, "{model}: max abs diff {worst}");
}

#[test]
fn a_bert_cross_encoder_matches_pytorch() {
    matches_pytorch("bert");
}

#[test]
fn an_xlm_roberta_cross_encoder_matches_pytorch() {
    matches_pytorch("xlm-roberta");
}

/// Xenova's layout (`onnx/model.onnx` beside `config.json`): the same
/// forward pass over weights found through the graph, against
/// onnxruntime's logits.
#[test]
fn onnx_cross_encoders_match_onnxruntime() {
    matches_pytorch("onnx/bert-cross-encoder");
    matches_pytorch("onnx/xlm-roberta-cross-encoder");
}

#[test]
fn scores_are_probabilities_of_the_logits_and_the_passage_is_cut_not_the_query() {
    let (encoder, reference) = load("bert");
    let case = &reference.cases[0];
    let far = Instant::now() + Duration::from_secs(60);
    let scores = encoder.score(&case.query, &[&case.passage], far).unwrap();
    let expected = 1.0 / (1.0 + (-case.logits[0]).exp());
    assert!(
        (scores[0] - expected).abs() < 1e-4,
        "{} vs {expected}",
        scores[0]
    );

    let (roberta, reference) = load("xlm-roberta");
    let case = &reference.cases[0];
    let scores = roberta.score(&case.query, &[&case.passage], far).unwrap();
    let expected = 1.0 / (1.0 + (case.logits[0] - case.logits[1]).exp());
    assert!(
        (scores[0] - expected).abs() < 1e-4,
        "{} vs {expected}",
        scores[0]
    );

    // A long passage is cut to maxLength; the query's tokens all stay.
    let long = "fees are due ".repeat(200);
    let (ids, _) = encoder.encode("When are fees due?", &long).unwrap();
    let (query_ids, _) = encoder.encode("When are fees due?", "").unwrap();
    assert_eq!(ids.len(), reference_length("bert"));
    assert_eq!(ids[..query_ids.len() - 1], query_ids[..query_ids.len() - 1]);
    // A query longer than maxLength by itself is cut too, rather than failing.
    let (ids, _) = encoder.encode(&long, "a passage").unwrap();
    assert_eq!(ids.len(), reference_length("bert"));

    // Past its deadline, the encoder gives up instead of scoring.
    let past = Instant::now();
    std::thread::sleep(Duration::from_millis(2));
    assert!(matches!(
        encoder.score("q", &["a passage"], past),
        Err(RerankError::OverBudget)
    ));
}

fn reference_length(model: &str) -> usize {
    load(model).1.max_length as usize
}

#[test]
fn a_directory_without_a_head_or_with_three_labels_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = RerankerSpec {
        kind: RerankerKind::Local,
        path: Some(dir.path().display().to_string()),
        ..RerankerSpec::default()
    };
    let error = trellis::retrieve::rerank::from_spec(&spec, None)
        .err()
        .expect("an empty directory is refused")
        .to_string();
    assert!(error.contains("config.json"), "{error}");
    let no_path = RerankerSpec {
        kind: RerankerKind::Local,
        ..RerankerSpec::default()
    };
    let error = trellis::retrieve::rerank::from_spec(&no_path, None)
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("reranker.model"), "{error}");
}

fn service(kind: RerankerKind, server: &Server, spec: RerankerSpec) -> HttpReranker {
    HttpReranker::new(
        &RerankerSpec {
            kind,
            model: "rerank-test".into(),
            endpoint: Some(server.url()),
            ..spec
        },
        None,
    )
    .expect("reranker")
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

#[test]
fn tei_posts_query_and_texts_to_rerank_and_reads_scores_by_index() {
    let server = Server::start(|request, _| {
        let texts = request.body["texts"].as_array().map_or(0, Vec::len);
        // Best first, as TEI answers.
        let results: Vec<Value> = (0..texts)
            .rev()
            .map(|i| json!({"index": i, "score": i as f32 / 10.0}))
            .collect();
        Reply::json(200, json!(results))
    });
    let reranker = service(RerankerKind::Tei, &server, RerankerSpec::default());
    let scores = reranker.score("q", &["a", "b", "c"], soon()).unwrap();
    assert_eq!(scores, [0.0, 0.1, 0.2]);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/rerank");
    assert_eq!(
        request.body,
        json!({"query": "q", "texts": ["a", "b", "c"], "truncate": true, "raw_scores": false})
    );
    assert_eq!(request.header("authorization"), None);
}

#[test]
fn cohere_style_posts_model_and_documents_with_the_key_from_a_secret() {
    const TEST: &str = "rerank::cohere_style_posts_model_and_documents_with_the_key_from_a_secret";
    if !common::is_child(TEST) {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("rerank-key")).unwrap();
        std::fs::write(root.path().join("rerank-key/api-key"), "sk-rerank\n").unwrap();
        common::run_in_child(TEST, &[("TRELLIS_SECRET_ROOT", root.path().as_os_str())]);
        return;
    }
    let server = Server::start(|_, _| {
        Reply::json(
            200,
            json!({"id": "x", "results": [
                {"index": 1, "relevance_score": 0.75},
                {"index": 0, "relevance_score": 0.25}
            ]}),
        )
    });
    let spec = RerankerSpec {
        api_key_secret_ref: Some(trellis::spec::SecretKeyRef {
            name: "rerank-key".into(),
            key: "api-key".into(),
        }),
        ..RerankerSpec::default()
    };
    let reranker = service(RerankerKind::Cohere, &server, spec);
    let scores = reranker.score("q", &["a", "b"], soon()).unwrap();
    assert_eq!(scores, [0.25, 0.75]);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/rerank");
    assert_eq!(
        request.body,
        json!({"model": "rerank-test", "query": "q", "documents": ["a", "b"]})
    );
    assert_eq!(request.header("authorization"), Some("Bearer sk-rerank"));
}

#[test]
fn a_slow_service_misses_the_budget_and_a_failing_one_is_retried_within_it() {
    let slow = Server::start(|_, _| {
        Reply::json(200, json!([{"index": 0, "score": 0.5}])).after(Duration::from_millis(800))
    });
    let reranker = service(RerankerKind::Tei, &slow, RerankerSpec::default());
    let started = Instant::now();
    let result = reranker.score("q", &["a"], Instant::now() + Duration::from_millis(150));
    assert!(matches!(result, Err(RerankError::OverBudget)), "{result:?}");
    assert!(
        started.elapsed() < Duration::from_millis(600),
        "{:?}",
        started.elapsed()
    );

    let flaky = Server::start(|_, n| match n {
        0 => Reply::json(503, json!({"error": "warming up"})),
        _ => Reply::json(200, json!([{"index": 0, "score": 0.5}])),
    });
    let reranker = service(RerankerKind::Tei, &flaky, RerankerSpec::default());
    assert_eq!(reranker.score("q", &["a"], soon()).unwrap(), [0.5]);
    assert_eq!(flaky.requests().len(), 2);

    let refused = Server::start(|_, _| Reply::json(413, json!({"error": "too many texts"})));
    let reranker = service(RerankerKind::Tei, &refused, RerankerSpec::default());
    let error = reranker.score("q", &["a"], soon()).unwrap_err().to_string();
    assert!(
        error.contains("413") && error.contains("too many texts"),
        "{error}"
    );
    assert_eq!(refused.requests().len(), 1, "a 4xx is not retried");
}

/// A route over the two-document corpus with `reranker`.
fn route_with(dir: &Path, reranker: &str) -> trellis::spec::RetrievalRoute {
    let manifests = format!("{}  reranker: {reranker}\n", common::TWO_DOCUMENT_MANIFESTS);
    let origin = dir.join("trellis.yaml");
    let loaded = trellis::spec::parse_str(&manifests, &origin).expect("manifests");
    trellis::spec::select_route(&loaded, None, &origin)
        .expect("a route")
        .0
        .clone()
}

#[test]
fn a_route_reranks_its_best_candidates_and_falls_back_when_the_reranker_is_late() {
    let dir = tempfile::tempdir().unwrap();
    common::write_two_documents(dir.path());
    let (_, plain) = common::ingest_manifests(common::TWO_DOCUMENT_MANIFESTS, dir.path());
    let data = dir.path().join("data");
    let question = "Which law governs the agreement?";
    let answer = |route: &trellis::spec::RetrievalRoute| {
        let loaded = LoadedRoute::open(&data, &route.spec, None, 1).expect("route");
        loaded
            .retriever()
            .unwrap()
            .retrieve(&route.spec, question, None, &Filter::default())
            .unwrap()
    };
    let baseline = answer(&plain);
    assert!(baseline.rerank.is_none());

    // The fixture cross-encoder, by a path relative to the manifest.
    let fixture = fixture("bert");
    let local = route_with(
        dir.path(),
        &format!(
            "{{kind: local, path: {}, topN: 4, maxLength: 48}}",
            pathdiff(&fixture, dir.path())
        ),
    );
    assert_eq!(local.spec.reranker.passage, RerankPassage::Sentence);
    let reranked = answer(&local);
    assert!(reranked.rerank.is_some_and(|r| r.reranked));
    let (encoder, _) = load("bert");
    for hit in reranked
        .hits
        .iter()
        .filter(|h| h.signals[Signal::Rerank] > 0.0)
    {
        let expected = encoder.score(question, &[&hit.text], soon()).unwrap()[0];
        assert!(
            (hit.signals[Signal::Rerank] - expected).abs() < 1e-5,
            "{}",
            hit.text
        );
    }
    let scored = reranked
        .hits
        .iter()
        .filter(|h| h.signals[Signal::Rerank] > 0.0)
        .count();
    assert!(scored >= 1, "the best results were reranked");
    // Only the first topN places may change, and scores only rise.
    let top: std::collections::HashSet<_> =
        reranked.ranking.iter().take(4).map(|&(i, _)| i).collect();
    let before: std::collections::HashSet<_> =
        baseline.ranking.iter().take(4).map(|&(i, _)| i).collect();
    assert_eq!(top, before);
    assert_eq!(reranked.ranking[4..], baseline.ranking[4..]);

    // A service slower than the budget: stage 3's order, said so.
    let slow = Server::start(|_, _| {
        Reply::json(200, json!([{"index": 0, "score": 0.5}])).after(Duration::from_millis(500))
    });
    let late = route_with(
        dir.path(),
        &format!("{{kind: tei, endpoint: \"{}\", budgetMs: 50}}", slow.url()),
    );
    let fallback = answer(&late);
    assert!(fallback.rerank.is_some_and(|r| !r.reranked));
    assert_eq!(fallback.ranking, baseline.ranking);
    assert!(
        fallback
            .hits
            .iter()
            .all(|h| h.signals[Signal::Rerank] == 0.0)
    );
}

/// `path` relative to `base` (both absolute), for a manifest.
fn pathdiff(path: &Path, base: &Path) -> String {
    let ups = base.components().count() - 1;
    let mut relative = PathBuf::new();
    for _ in 0..ups {
        relative.push("..");
    }
    relative.push(path.strip_prefix("/").unwrap_or(path));
    relative.display().to_string()
}
