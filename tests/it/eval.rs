//! `trellis eval` on small slices of the development sets: each reader
//! turns its set into documents and judged queries, every judged query is
//! matched to indexed sentences, the metrics are sane, and a second run
//! with another mode reuses the cached index.

use crate::common;

use std::io::Write;
use std::path::Path;

use trellis::eval::{DatasetKind, EvalReport, EvalSet, Evaluation};
use trellis::spec::{AnchorMode, IndexProfileSpec, RetrievalRouteSpec};

fn route(mode: AnchorMode) -> RetrievalRouteSpec {
    let mut spec = RetrievalRouteSpec::for_corpus("any");
    spec.anchors.mode = mode;
    spec
}

fn run(set: &EvalSet, data_dir: &Path, mode: AnchorMode) -> EvalReport {
    run_with(set, data_dir, &route(mode), false)
}

fn run_with(
    set: &EvalSet,
    data_dir: &Path,
    route: &RetrievalRouteSpec,
    chunk_baseline: bool,
) -> EvalReport {
    let profile = IndexProfileSpec::default();
    let generator = trellis::generate::Generator::from_spec(&route.generation).unwrap();
    Evaluation {
        set,
        dataset: "slice".into(),
        profile: &profile,
        profile_base: data_dir,
        route,
        data_dir,
        chunk_baseline,
        generator: Some(&generator),
        answer_limit: usize::MAX,
    }
    .run(&|_, _, _| {})
    .unwrap()
}

fn in_unit_range(x: f64) -> bool {
    (0.0..=1.0).contains(&x)
}

/// The first `queries` SciFact train queries with evidence, their judged
/// abstracts and as many other abstracts, as a BEIR directory.
fn scifact_slice(dir: &Path, queries: usize) {
    let source = common::eval_dir().join("scifact");
    let qrels = std::fs::read_to_string(source.join("qrels/train.tsv")).unwrap();
    let all_queries = std::fs::read_to_string(source.join("queries.jsonl")).unwrap();
    let mut chosen = Vec::new();
    let mut docs = std::collections::HashSet::new();
    for line in all_queries.lines() {
        let q: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = q["_id"].as_str().unwrap().to_string();
        let judged: Vec<&str> = qrels
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f[0] == id).then_some(f[1])
            })
            .collect();
        if judged.is_empty() || q["metadata"].as_object().is_none_or(|m| m.is_empty()) {
            continue;
        }
        docs.extend(judged.iter().map(|d| d.to_string()));
        chosen.push(line.to_string());
        if chosen.len() == queries {
            break;
        }
    }
    std::fs::create_dir_all(dir.join("qrels")).unwrap();
    std::fs::write(dir.join("queries.jsonl"), chosen.join("\n")).unwrap();
    std::fs::write(dir.join("qrels/train.tsv"), qrels).unwrap();
    let corpus = std::fs::read_to_string(source.join("corpus.jsonl")).unwrap();
    let mut out = std::fs::File::create(dir.join("corpus.jsonl")).unwrap();
    let mut others = 0;
    for line in corpus.lines() {
        let d: serde_json::Value = serde_json::from_str(line).unwrap();
        let judged = docs.contains(d["_id"].as_str().unwrap());
        if judged || others < queries {
            others += usize::from(!judged);
            writeln!(out, "{line}").unwrap();
        }
    }
}

#[test]
fn scifact_slice_scores_documents_and_evidence_sentences_and_reuses_its_index() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    scifact_slice(&tmp.path().join("scifact"), 12);
    let set = EvalSet::load(DatasetKind::Beir, &tmp.path().join("scifact"), None, None).unwrap();
    assert_eq!(set.split, "train");
    assert_eq!(set.queries.len(), 12);

    let bm25 = run(&set, &data, AnchorMode::Bm25);
    let full = run(&set, &data, AnchorMode::Full);
    // Chunk candidates on the same version; the baseline ranks documents.
    let mut chunked = route(AnchorMode::Full);
    chunked.anchors.chunks = 5;
    let with_chunks = run_with(&set, &data, &chunked, true);
    assert_eq!(with_chunks.index_version, full.index_version);
    assert!(with_chunks.document.as_ref().unwrap().ndcg_10 > 0.6);
    let baseline = with_chunks.chunk_baseline.unwrap().document.unwrap();
    assert_eq!(baseline.queries, 12);
    assert!(baseline.ndcg_10 > 0.6, "{baseline:?}");
    assert_eq!(bm25.index_version, full.index_version);
    assert_eq!(full.index_seconds, 0.0, "the second run reuses the index");
    for report in [&bm25, &full] {
        let doc = report.document.as_ref().unwrap();
        let sentence = report.sentence.as_ref().unwrap();
        assert_eq!(report.coverage.unmatched, 0);
        assert_eq!(doc.queries, 12);
        assert_eq!(sentence.queries, 12, "every evidence sentence aligned");
        // Twelve claims against their own abstracts and a dozen others.
        assert!(doc.ndcg_10 > 0.6, "{report:?}");
        assert!(in_unit_range(sentence.recall_10) && sentence.recall_10 > 0.3);
    }
    let json = serde_json::to_value(&full).unwrap();
    for key in [
        "dataset", "split", "mode", "queries", "document", "sentence", "seconds",
    ] {
        assert!(json.get(key).is_some(), "{key} missing from {json}");
    }
    for key in ["ndcg@10", "recall@1", "recall@5", "recall@10", "mrr", "p@5"] {
        assert!(json["document"][key].is_number(), "document.{key}");
    }
    assert_eq!(json["mode"], "full");
}

#[test]
fn squad_slice_finds_the_sentence_holding_each_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let source = common::eval_dir().join("squad/dev-v1.1-part1.json");
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(source).unwrap()).unwrap();
    let data = file["data"].as_array_mut().unwrap();
    data.truncate(1);
    data[0]["paragraphs"].as_array_mut().unwrap().truncate(4);
    let path = tmp.path().join("part.json");
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();

    let set = EvalSet::load(DatasetKind::Squad, &path, None, None).unwrap();
    assert!(set.queries.len() > 20);
    let report = run_with(
        &set,
        &tmp.path().join("data"),
        &route(AnchorMode::Hybrid),
        true,
    );
    assert_eq!(
        report.coverage.unmatched, 0,
        "every answer lies in a sentence"
    );
    let sentence = report.sentence.unwrap();
    assert_eq!(sentence.queries, set.queries.len());
    assert!(sentence.recall_10 > 0.7, "{sentence:?}");
    assert!(sentence.recall_1 <= sentence.recall_5 && sentence.recall_5 <= sentence.recall_10);
    // The results' displays hold at least their own sentences.
    let shown = report.passages.unwrap();
    assert_eq!(shown.queries, set.queries.len());
    assert!(shown.recall_10 >= sentence.recall_10 - 1e-9, "{shown:?}");
    assert!(shown.recall_1 <= shown.recall_5 && shown.recall_5 <= shown.recall_10);
    // The chunk baseline: four paragraphs make few chunks, which hold
    // nearly every answer.
    let baseline = report.chunk_baseline.unwrap();
    assert!(baseline.chunks >= 1);
    assert_eq!(baseline.document.is_some(), report.document.is_some());
    let chunks = baseline.passages.unwrap();
    assert_eq!(chunks.queries, set.queries.len());
    assert!(chunks.recall_10 > 0.9, "{chunks:?}");
    // The extractive answers: whole sentences, so exact match is rare and
    // F1 low, but their cited sentences hold the answer about as often as
    // the top results do.
    let answers = report.answers.unwrap();
    assert_eq!(answers.provider, "extractive");
    assert_eq!(answers.queries, set.queries.len());
    assert_eq!(answers.failed, 0);
    assert_eq!(answers.unsupported_sentences, 0.0);
    assert!(answers.f1 > 0.0 && answers.f1 < 0.6, "{answers:?}");
    assert!(
        answers.cited_gold >= sentence.recall_1,
        "{answers:?} {sentence:?}"
    );
}

#[test]
fn cuad_slice_matches_excerpts_and_reports_the_unfiltered_setting() {
    let tmp = tempfile::tempdir().unwrap();
    let source = common::eval_dir().join("cuad");
    let dir = tmp.path().join("cuad");
    std::fs::create_dir_all(dir.join("contracts")).unwrap();
    std::fs::copy(source.join("categories.json"), dir.join("categories.json")).unwrap();
    let csv = std::fs::read_to_string(source.join("master_clauses.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let row = reader
        .records()
        .map(Result::unwrap)
        .find(|r| r[0].starts_with("WEBHELPCOMINC"))
        .unwrap();
    let mut writer = csv::Writer::from_path(dir.join("master_clauses.csv")).unwrap();
    writer.write_record(&header).unwrap();
    writer.write_record(&row).unwrap();
    writer.flush().unwrap();
    // The CSV names the PDF (`.pdf` or `.PDF`); the text has the same stem.
    let stem = Path::new(&row[0]).file_stem().unwrap().to_string_lossy();
    for name in [
        format!("{stem}.txt"),
        "SightLife Surgical, Inc. - STRATEGIC SALES _ MARKETING AGREEMENT.txt".to_string(),
    ] {
        std::fs::copy(
            source.join("contracts").join(&name),
            dir.join("contracts").join(&name),
        )
        .unwrap();
    }

    let set = EvalSet::load(DatasetKind::Cuad, &dir, None, None).unwrap();
    assert_eq!(
        set.documents.len(),
        1,
        "a contract without a row is skipped"
    );
    assert_eq!(set.skipped.len(), 1);
    assert!(set.queries.len() >= 8);
    let report = run(&set, &tmp.path().join("data"), AnchorMode::Full);
    assert!(report.document.is_none(), "CUAD has no document level");
    let sentence = report.sentence.unwrap();
    assert!(sentence.queries + report.coverage.unmatched == set.queries.len());
    assert!(report.coverage.unmatched <= 1, "{:?}", report.coverage);
    assert!(sentence.hit_10 > 0.5, "{sentence:?}");
    // One contract: filtered and unfiltered rank the same sentences.
    assert_eq!(report.unfiltered.unwrap().recall_10, sentence.recall_10);
}

/// `files:DIR` with `--queries`: a team's own documents (DOCX, HTML,
/// text, Markdown and a PDF here), indexed as they are, scored by the
/// spans each query quotes from the documents that answer it.
#[test]
fn your_own_files_are_scored_by_the_spans_the_queries_quote() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("files");
    let examples = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/corpus");
    std::fs::create_dir_all(dir.join("legal")).unwrap();
    std::fs::create_dir_all(dir.join("pdf")).unwrap();
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        let into = match path.extension().and_then(|x| x.to_str()) {
            Some("docx") => dir.join("legal").join(name),
            _ => dir.join(name),
        };
        std::fs::copy(&path, into).unwrap();
    }
    let pdf = common::pdf::PdfParts::text(&[
        "The warehouse in Rotterdam ships every pallet within two days of the order.",
    ]);
    std::fs::write(dir.join("pdf/shipping.pdf"), common::pdf::write(&pdf)).unwrap();
    let queries = tmp.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        r#"{"id": "logs", "query": "How long are administrative access logs retained?", "answers": [{"document": "legal/data-processing-addendum.docx", "text": "Logging of administrative access, retained for 12 months"}]}
{"id": "dividend", "query": "What dividend does the Board propose?", "answers": [{"document": "annual-report-2024.html", "text": "The Board proposes a dividend of EUR 1.10 per share"}]}

{"query": "How fast does the Rotterdam warehouse ship pallets?", "answers": [{"document": "pdf/shipping.pdf", "text": "ships every pallet within two days"}], "within": "pdf/shipping.pdf"}
"#,
    )
    .unwrap();
    let set = EvalSet::load(DatasetKind::Files, &dir, None, Some(&queries)).unwrap();
    assert_eq!(set.documents.len(), 5);
    assert_eq!(set.queries.len(), 3);
    assert_eq!(set.queries[2].id, "4", "an id defaults to the line number");
    let report = run(&set, &tmp.path().join("data"), AnchorMode::Full);
    assert_eq!(report.coverage.unmatched, 0, "{:?}", report.coverage);
    let sentence = report.sentence.unwrap();
    assert_eq!(sentence.queries, 3);
    assert_eq!(sentence.hit_10, 1.0, "{sentence:?}");
    let document = report.document.unwrap();
    assert_eq!(document.recall_1, 1.0, "{document:?}");

    // Queries that name what is not there are refused with the line.
    let bad = tmp.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        r#"{"query": "q", "answers": [{"document": "nowhere.pdf", "text": "x"}]}"#,
    )
    .unwrap();
    let error = EvalSet::load(DatasetKind::Files, &dir, None, Some(&bad))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("line 1") && error.contains("nowhere.pdf"),
        "{error}"
    );
    let error = EvalSet::load(DatasetKind::Files, &dir, None, None)
        .unwrap_err()
        .to_string();
    assert!(error.contains("--queries"), "{error}");

    // The command: the same set through `trellis eval`.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["eval", "--json", "--dataset"])
        .arg(format!("files:{}", dir.display()))
        .arg("--queries")
        .arg(&queries)
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["dataset"], "files:files");
    assert_eq!(json["sentence"]["queries"], 3);
    assert_eq!(json["sentence"]["hit@10"], 1.0);
}
