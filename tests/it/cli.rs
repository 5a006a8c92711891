//! The `trellis` binary end to end: bad input is reported by name and never
//! stops the other documents, output is deterministic and written whole.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn trellis() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trellis"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> Output {
    cmd.current_dir(root()).output().expect("trellis runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every bad fixture with a word its error must contain.
const BAD: &[(&str, &str)] = &[
    ("empty.txt", "empty file"),
    ("garbage.txt", "binary"),
    ("deep.html", "nesting deeper"),
    ("truncated.docx", "corrupt"),
    ("corrupt.docx", "corrupt"),
    ("zip_bomb.docx", "zip bomb"),
    ("missing_document.docx", "document.xml"),
    ("deep.docx", "nesting deeper"),
    ("malformed_xml.docx", "malformed xml"),
    ("encrypted.pdf", "password"),
    ("scanned.pdf", "ocr"),
];

#[test]
fn bad_documents_are_reported_by_name_and_the_rest_is_chunked() {
    let out = tempfile::tempdir().unwrap();
    let jsonl = out.path().join("chunks.jsonl");
    let started = Instant::now();
    let output = run(trellis()
        .args(["chunk", "examples/corpus", "tests/fixtures/bad", "--out"])
        .arg(&jsonl));
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "bad input must fail fast"
    );
    let err = stderr(&output);
    assert_eq!(
        output.status.code(),
        Some(3),
        "partial failure status; stderr:\n{err}"
    );
    for (file, reason) in BAD {
        let line = err
            .lines()
            .find(|l| l.contains("failed:") && l.contains(file))
            .unwrap_or_else(|| panic!("no failure reported for {file}:\n{err}"));
        assert!(
            line.to_lowercase().contains(reason),
            "{file}: expected {reason:?} in {line:?}"
        );
    }
    assert!(!err.contains("panicked"), "{err}");

    // The good documents (and the Latin-1 one, decoded with a warning) made it.
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let sources: std::collections::BTreeSet<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("one JSON object per line");
            v["source"].as_str().unwrap().to_string()
        })
        .collect();
    for expected in [
        "master-services-agreement.txt",
        "operations-manual.md",
        "annual-report-2024.html",
        "data-processing-addendum.docx",
        "latin1.txt",
        "utf16.txt",
        "three_pages.pdf",
        "bad_xref.pdf",
        "owner_only.pdf",
    ] {
        assert!(
            sources.iter().any(|s| s.ends_with(expected)),
            "{expected} missing from {sources:?}"
        );
    }
    assert!(
        err.contains("Windows-1252"),
        "the Latin-1 fallback is announced:\n{err}"
    );
    assert!(!Path::new(&format!("{}.tmp", jsonl.display())).exists());
}

#[test]
fn chunk_output_is_deterministic() {
    let once = run(trellis().args(["chunk", "examples/corpus"]));
    let twice = run(trellis().args(["chunk", "examples/corpus"]));
    assert!(once.status.success(), "{}", stderr(&once));
    assert!(!once.stdout.is_empty());
    assert_eq!(once.stdout, twice.stdout);
}

#[test]
fn chunk_records_carry_ids_paths_and_metadata() {
    let output = run(trellis().args(["chunk", "examples/corpus/master-services-agreement.txt"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let records: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!records.is_empty());
    let doc = records[0]["document_id"].as_str().unwrap();
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record["document_id"], doc);
        assert_eq!(record["index"], i);
        assert_eq!(record["chunk_id"], format!("{doc}:c{i}"));
        assert!(record["tokens"].as_u64().unwrap() <= 800);
        for id in record["sentence_ids"].as_array().unwrap() {
            assert!(id.as_str().unwrap().starts_with(&format!("{doc}:s")));
        }
    }
    assert!(
        records
            .iter()
            .any(|r| !r["heading_path"].as_array().unwrap().is_empty()),
        "the contract's articles become heading paths"
    );
}

#[test]
fn profile_manifest_with_the_model_tokenizer() {
    let output = run(trellis().args([
        "chunk",
        "examples/corpus/operations-manual.md",
        "-f",
        "examples/profile.yaml",
    ]));
    assert!(
        output.status.success(),
        "run scripts/fetch-model.sh first; {}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("tokenizer:"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_bad_manifest_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("profile.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: trellis.dev/v1alpha1\nkind: IndexProfile\nmetadata: {name: x}\nspec: {chunking: {maxTokenz: 5}}\n",
    )
    .unwrap();
    let output = run(trellis()
        .args(["chunk", "examples/corpus", "-f"])
        .arg(&manifest));
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        err.contains("profile.yaml") && err.contains("maxTokenz"),
        "{err}"
    );
}

#[test]
fn a_missing_path_is_a_clear_error() {
    let output = run(trellis().args(["chunk", "no/such/dir"]));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("no/such/dir"));
}

#[test]
fn segment_reads_stdin() {
    use std::io::Write;
    let mut child = trellis()
        .args(["segment", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"Contoso Ltd. is at P.O. Box 123, FL. It pays on time.\n\nNew paragraph")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let sentences: Vec<String> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        sentences,
        [
            "Contoso Ltd. is at P.O. Box 123, FL.",
            "It pays on time.",
            "New paragraph"
        ]
    );
}

#[test]
fn parse_prints_the_canonical_text_and_the_skeleton() {
    let output = run(trellis().args([
        "parse",
        "examples/corpus/operations-manual.md",
        "--format",
        "markdown",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("# Pump Station Operations Manual"), "{text}");
    assert!(
        text.contains("| Discharge pressure | 6.0 | 7.5 | bar |"),
        "{text}"
    );

    let output = run(trellis().args([
        "parse",
        "examples/corpus/operations-manual.md",
        "--format",
        "skeleton",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    let skeleton: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let sentences = skeleton["sentences"].as_array().unwrap();
    assert!(sentences.iter().any(|s| s["source"] == "table_row"));
    assert!(sentences.iter().any(|s| s["source"] == "list_item"));
}

#[test]
fn the_example_profile_spells_out_exactly_the_defaults() {
    let path = root().join("examples/profile.yaml");
    let manifests = trellis::spec::load_path(&path).unwrap();
    let (profile, _) = trellis::spec::select_profile(&manifests, None, &path).unwrap();
    let mut expected = trellis::spec::IndexProfileSpec::default();
    // The one setting the example changes: token counting with the model's
    // tokenizer instead of words.
    expected.chunking.tokenizer = Some("all-MiniLM-L6-v2".into());
    assert_eq!(profile.spec, expected);
    // Every field of the schema is written out: an omitted one would take
    // its default and pass the comparison unseen. Fields without a default
    // value (`nullable`: a model path, a tokenizer) are exempt.
    let written: serde_json::Value = {
        let text = std::fs::read_to_string(&path).unwrap();
        let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        serde_json::to_value(&yaml["spec"]).unwrap()
    };
    let crd = trellis::spec::crds()
        .into_iter()
        .find(|c| c.spec.names.kind == "IndexProfile")
        .unwrap();
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| s.properties.as_ref())
        .and_then(|p| p.get("spec"))
        .unwrap();
    let mut missing = Vec::new();
    unwritten(schema, &written, "spec", &mut missing);
    assert!(
        missing.is_empty(),
        "examples/profile.yaml leaves out:\n{}",
        missing.join("\n")
    );
}

/// The fields of `schema` that `written` lacks, by path.
fn unwritten(
    schema: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps,
    written: &serde_json::Value,
    path: &str,
    missing: &mut Vec<String>,
) {
    for (key, field) in schema.properties.iter().flatten() {
        let here = format!("{path}.{key}");
        match written.get(key) {
            Some(inner) => unwritten(field, inner, &here, missing),
            None if field.nullable == Some(true) => {}
            None => missing.push(here),
        }
    }
}

#[test]
fn the_cluster_quickstart_runs_as_its_ingest_pods_do() {
    // Its documents are in a ConfigMap of the same file.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let ingest = |extra: &[&str]| {
        let output = run(trellis()
            .args([
                "ingest",
                "-f",
                "examples/kubernetes/quickstart.yaml",
                "--data-dir",
            ])
            .arg(&data)
            .args(extra));
        assert!(output.status.success(), "{extra:?}: {}", stderr(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    // A sharded ingest: each shard pod embeds its share, then the
    // finalize pod publishes without embedding anything.
    let first = ingest(&["--shard", "0/2"]);
    assert!(first.contains("shard 0/2: 2 documents"), "{first}");
    ingest(&["--shard", "1/2"]);
    let report: serde_json::Value = serde_json::from_str(&ingest(&["--json"])).unwrap();
    let manifest = &report["manifest"];
    assert_eq!(manifest["counts"]["documents"], 4, "{report}");
    assert_eq!(manifest["embedded_sentences"], 0, "{report}");
    assert_eq!(manifest["embedded_headings"], 0, "{report}");
    let output = run(trellis().args([
        "ingest",
        "-f",
        "examples/kubernetes/quickstart.yaml",
        "--shard",
        "2/2",
    ]));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("below the count"),
        "{}",
        stderr(&output)
    );
}

/// The quick start's own questions (`examples/quickstart/queries.txt`),
/// asked as its demo asks them: the first result of each, with the
/// quick start's route, is the sentence that answers it, judged as the
/// person asking would. The first names a document ("the hosting
/// agreement"), whose opening lines repeat its name: the rest of the
/// question must pick the clause inside it.
#[test]
fn the_quickstart_questions_are_answered_first() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let manifests = "examples/quickstart/trellis.yaml";
    let output = run(trellis()
        .args(["ingest", "-f", manifests, "--data-dir"])
        .arg(&data));
    assert!(output.status.success(), "{}", stderr(&output));
    let questions =
        std::fs::read_to_string(root().join("examples/quickstart/queries.txt")).unwrap();
    let answers = [
        (
            "Which state's law governs the hosting agreement?",
            "governed by and construed in accordance with the laws of the State of California",
        ),
        (
            "What royalty does the endorsement agreement pay?",
            "a royalty (the \"Royalty\") equal to $0.02 for each Lifeway product",
        ),
        (
            "Who was the Norman leader who conquered England?",
            "Duke William II of Normandy conquered England",
        ),
        (
            "What does a Turing machine model?",
            "A Turing machine is a mathematical model",
        ),
    ];
    let asked: Vec<&str> = questions.lines().filter(|q| !q.trim().is_empty()).collect();
    assert_eq!(
        asked,
        answers.map(|(q, _)| q),
        "the quick start's questions changed"
    );
    for (question, answer) in answers {
        let output = run(trellis()
            .args(["query", "-f", manifests, "--json", "--data-dir"])
            .arg(&data)
            .arg(question));
        assert!(output.status.success(), "{}", stderr(&output));
        let response: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let first = &response["hits"][0];
        assert!(
            first["text"].as_str().is_some_and(|t| t.contains(answer)),
            "{question}: the first result is {}",
            first["text"]
        );
        // The response says which document the question named.
        let named = &response["named_documents"];
        match question {
            q if q.contains("hosting agreement") => assert_eq!(
                *named,
                serde_json::json!(["documents/webhelp-hosting-agreement.txt"])
            ),
            q if q.contains("Turing") => assert!(named.is_null(), "{named}"),
            _ => {}
        }
    }
}

/// Documents in a temporary directory, ingested once with the default
/// profile, asked questions through routes that differ in their spec.
struct Asked {
    tmp: tempfile::TempDir,
    /// The IndexProfile's spec (flow YAML), empty for the defaults.
    profile: String,
}

impl Asked {
    /// Writes `documents` (file name, text) and ingests them.
    fn ingest(documents: &[(&str, &str)]) -> Self {
        let files: Vec<(&str, Vec<u8>)> = documents
            .iter()
            .map(|(file, text)| (*file, text.as_bytes().to_vec()))
            .collect();
        Self::ingest_files(&files)
    }

    /// Writes `documents` (path under the source, bytes) and ingests them.
    fn ingest_files(documents: &[(&str, Vec<u8>)]) -> Self {
        Self::ingest_with_profile("", documents)
    }

    /// [`Asked::ingest_files`] with an IndexProfile of spec `profile` (flow
    /// YAML, `{chunking: {strategy: semantic}}`).
    fn ingest_with_profile(profile: &str, documents: &[(&str, Vec<u8>)]) -> Self {
        let asked = Asked {
            tmp: tempfile::tempdir().unwrap(),
            profile: profile.to_string(),
        };
        let docs = asked.tmp.path().join("docs");
        for (file, bytes) in documents {
            let path = docs.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        let output = run(trellis()
            .args(["ingest", "-f"])
            .arg(asked.manifests(""))
            .arg("--data-dir")
            .arg(asked.tmp.path().join("data")));
        assert!(output.status.success(), "{}", stderr(&output));
        asked
    }

    /// The manifests, with a route whose spec adds `fields` (flow YAML,
    /// `selection: {topK: 1}`) to its corpus reference.
    fn manifests(&self, fields: &str) -> std::path::PathBuf {
        let manifests = self.tmp.path().join("trellis.yaml");
        let spec = match fields.is_empty() {
            true => "{corpusRef: {name: c}}".to_string(),
            false => format!("{{corpusRef: {{name: c}}, {fields}}}"),
        };
        std::fs::write(
            &manifests,
            format!(
                "apiVersion: trellis.dev/v1alpha1\nkind: IndexProfile\nmetadata: {{name: p}}\n{profile}---\n\
                 apiVersion: trellis.dev/v1alpha1\nkind: Corpus\nmetadata: {{name: c}}\n\
                 spec: {{profileRef: {{name: p}}, sources: [{{path: docs}}]}}\n---\n\
                 apiVersion: trellis.dev/v1alpha1\nkind: RetrievalRoute\nmetadata: {{name: r}}\n\
                 spec: {spec}\n",
                profile = match self.profile.is_empty() {
                    true => String::new(),
                    false => format!("spec: {}\n", self.profile),
                },
            ),
        )
        .unwrap();
        manifests
    }

    /// What `trellis query --json` answers `question` through a route
    /// with `fields` ([`Asked::manifests`]).
    fn response(&self, fields: &str, question: &str) -> serde_json::Value {
        self.response_with(fields, question, &[])
    }

    /// [`Asked::response`] with more arguments to `trellis query`.
    fn response_with(&self, fields: &str, question: &str, args: &[&str]) -> serde_json::Value {
        let output = run(trellis()
            .args(["query", "--json", "-f"])
            .arg(self.manifests(fields))
            .arg("--data-dir")
            .arg(self.tmp.path().join("data"))
            .args(args)
            .arg(question));
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// The hits of [`Asked::response`].
    fn hits(&self, fields: &str, question: &str) -> Vec<serde_json::Value> {
        let response = self.response(fields, question);
        response["hits"].as_array().cloned().unwrap_or_default()
    }
}

/// What documents record of themselves (Markdown front matter, HTML
/// `<meta>`, a PDF's information dictionary) reaches their citations, and
/// a query can keep to one author, a span of dates, a folder or a language.
#[test]
fn document_metadata_is_cited_and_filters_the_documents() {
    let pdf = crate::common::pdf::PdfParts {
        trailer_entries: "/Info << /Author (Ann Smith) /CreationDate (D:20210301120000Z) >>"
            .to_string(),
        ..crate::common::pdf::PdfParts::text(&[
            "Payment terms for the manual: invoices are paid within sixty days.",
        ])
    };
    let asked = Asked::ingest_files(&[
        (
            "contracts/2023/supply.md",
            b"---\nauthor: Jane Doe\ndate: 2023-04-15\nlang: en-GB\n---\n\n\
              # Supply\n\nPayment terms for supply: invoices are paid within thirty days.\n"
                .to_vec(),
        ),
        (
            "contracts/2022/lease.html",
            b"<html lang='fr'><head><title>Lease</title><meta name='author' content='John Roe'>\
              <meta name='date' content='2022-09-01'></head><body>\
              <p>Payment terms for the lease: invoices are paid within forty days.</p></body></html>"
                .to_vec(),
        ),
        ("manuals/guide.pdf", crate::common::pdf::write(&pdf)),
    ]);
    let question = "What are the payment terms for invoices?";
    let documents = |args: &[&str]| {
        let response = asked.response_with("selection: {topK: 10}", question, args);
        let mut keys: Vec<String> = response["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["citation"]["document"].as_str().unwrap().to_string())
            .collect();
        keys.sort();
        keys.dedup();
        (keys, response)
    };
    let (all, response) = documents(&[]);
    assert_eq!(all.len(), 3, "{response}");
    let info_of = |key: &str| {
        response["hits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["citation"]["document"].as_str().unwrap().ends_with(key))
            .map(|h| h["citation"]["document_info"].clone())
            .unwrap()
    };
    assert_eq!(
        info_of("supply.md"),
        serde_json::json!({"author": "Jane Doe", "date": "2023-04-15", "language": "en-GB"})
    );
    assert_eq!(
        info_of("lease.html"),
        serde_json::json!({"author": "John Roe", "date": "2022-09-01", "language": "fr"})
    );
    assert_eq!(
        info_of("guide.pdf"),
        serde_json::json!({"author": "Ann Smith", "date": "2021-03-01"})
    );
    let only = |args: &[&str]| documents(args).0;
    assert_eq!(
        only(&["--author", "jane"]),
        ["docs/contracts/2023/supply.md"]
    );
    assert_eq!(
        only(&["--dated", "2022..2023"]),
        [
            "docs/contracts/2022/lease.html",
            "docs/contracts/2023/supply.md"
        ]
    );
    assert_eq!(only(&["--dated", "2021-03"]), ["docs/manuals/guide.pdf"]);
    assert_eq!(
        only(&["--under", "docs/contracts"]),
        [
            "docs/contracts/2022/lease.html",
            "docs/contracts/2023/supply.md"
        ]
    );
    assert_eq!(
        only(&["--language", "en"]),
        ["docs/contracts/2023/supply.md"]
    );
    assert!(only(&["--author", "nobody"]).is_empty());
    let refused = run(trellis()
        .args(["query", "-f"])
        .arg(asked.manifests(""))
        .args(["--dated", "spring", question]));
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("\"spring\" is not a date"),
        "{}",
        stderr(&refused)
    );
}

/// The fields of a form (a DOCX's content controls and legacy form
/// fields, a PDF's AcroForm) are cited with the sentences of their section
/// and filter the documents: "contracts whose auto-renewal box is ticked".
#[test]
fn form_fields_are_cited_and_filter_the_documents() {
    use crate::common::{docx, pdf};
    let contract = |party: &str, renews: bool| {
        let control = |props: &str, content: &str| {
            format!(
                "<w:sdt><w:sdtPr>{props}</w:sdtPr><w:sdtContent>{content}</w:sdtContent></w:sdt>"
            )
        };
        let run = |text: &str| format!("<w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r>");
        docx::write(&format!(
            "<w:p>{}{}</w:p><w:p>{}{}</w:p>{}",
            run("Party: "),
            control("<w:alias w:val=\"Party name\"/>", &run(party)),
            control(
                &format!(
                    "<w:alias w:val=\"Auto-renewal\"/><w14:checkbox><w14:checked w14:val=\"{}\"/></w14:checkbox>",
                    u8::from(renews)
                ),
                &run("X")
            ),
            run(" The agreement renews each year unless either party gives notice."),
            docx::paragraph("Notice of termination is given in writing ninety days ahead."),
        ))
    };
    let mut claim =
        pdf::PdfParts::text(&["A claim is filed in writing within thirty days of the loss."]);
    let first = claim.first_object();
    claim.catalog_entries = format!("/AcroForm << /Fields [{first} 0 R {} 0 R] >>", first + 1);
    claim.entries_by_page = vec![format!("/Annots [{first} 0 R {} 0 R]", first + 3)];
    claim.objects = vec![
        // A field that is its own widget.
        "<< /FT /Tx /T (Claimant) /V (Jane Roe) /Type /Annot /Subtype /Widget /Rect [72 600 300 620] >>"
            .to_string(),
        // A group, its check box, and the box's widget.
        format!("<< /T (Flags) /Kids [{} 0 R] >>", first + 2),
        format!(
            "<< /FT /Btn /T (Urgent) /V /Yes /Parent {} 0 R /Kids [{} 0 R] >>",
            first + 1,
            first + 3
        ),
        format!(
            "<< /Type /Annot /Subtype /Widget /Parent {} 0 R /Rect [72 560 90 578] /AS /Yes >>",
            first + 2
        ),
    ];
    let asked = Asked::ingest_files(&[
        ("contracts/acme.docx", contract("Acme Corp", true)),
        ("contracts/globex.docx", contract("Globex", false)),
        ("claims/claim.pdf", pdf::write(&claim)),
    ]);
    let hits = |question: &str, args: &[&str]| {
        asked.response_with("selection: {topK: 10}", question, args)["hits"]
            .as_array()
            .unwrap()
            .clone()
    };
    let documents = |hits: &[serde_json::Value]| {
        let mut keys: Vec<String> = hits
            .iter()
            .map(|h| h["citation"]["document"].as_str().unwrap().to_string())
            .collect();
        keys.sort();
        keys.dedup();
        keys
    };
    let question = "Does the agreement renew each year?";
    assert_eq!(documents(&hits(question, &[])).len(), 3);
    let renewing = hits(question, &["--field", "auto-renewal=yes"]);
    assert_eq!(documents(&renewing), ["docs/contracts/acme.docx"]);
    assert_eq!(
        renewing[0]["citation"]["fields"],
        serde_json::json!([
            {"name": "Party name", "value": "Acme Corp"},
            {"name": "Auto-renewal", "value": true},
        ])
    );
    assert_eq!(
        documents(&hits(
            question,
            &["--field", "Auto-renewal=no", "--field", "party name=globex"]
        )),
        ["docs/contracts/globex.docx"]
    );
    assert!(
        hits(
            question,
            &[
                "--field",
                "Auto-renewal=no",
                "--field",
                "Party name=Acme Corp"
            ]
        )
        .is_empty()
    );
    let claims = hits(
        "When is a claim filed?",
        &[
            "--field",
            "Claimant=jane roe",
            "--field",
            "Flags.Urgent=checked",
        ],
    );
    assert_eq!(documents(&claims), ["docs/claims/claim.pdf"]);
    assert_eq!(
        claims[0]["citation"]["fields"],
        serde_json::json!([
            {"name": "Claimant", "value": "Jane Roe"},
            {"name": "Flags.Urgent", "value": true},
        ])
    );
}

/// Tables are objects: a row's citation names its table, headers, units
/// and row label; chunks of a table name it; a near-copy of an earlier
/// table is counted in the report and its rows are not indexed.
#[test]
fn a_table_row_is_cited_with_its_headers_and_a_near_copy_is_dropped() {
    let table = |caption: &str, asia: &str| {
        format!(
            "<table><caption>{caption}</caption>\
             <tr><th>Region</th><th>Revenue (EUR m)</th><th>Margin [%]</th></tr>\
             <tr><td>Europe</td><td>1,200</td><td>14.1</td></tr>\
             <tr><td>Americas</td><td>640</td><td>13.9</td></tr>\
             <tr><td>Africa</td><td>95</td><td>7.2</td></tr>\
             <tr><td>Oceania</td><td>80</td><td>6.4</td></tr>\
             <tr><td>Asia</td><td>300</td><td>{asia}</td></tr>\
             <tr><td>Arctic</td><td>2</td><td>0.3</td></tr></table>"
        )
    };
    let html = format!(
        "<html><body><h1>Annual report</h1><p>Revenue grew in every region this year.</p>\
         {}<h2>Appendix</h2><p>The key figures again, with Asia's margin restated.</p>{}\
         </body></html>",
        table("Table 1: Key figures by region", "9.5"),
        table("Table 1: Key figures by region", "9.6"),
    );
    let asked = Asked::ingest_files(&[("report.html", html.into_bytes())]);
    let index =
        trellis::index::IndexVersion::open(&asked.tmp.path().join("data"), "c", None).unwrap();
    let counts = &index.manifest.counts;
    assert_eq!(
        (counts.tables, counts.duplicate_tables),
        (2, 1),
        "{counts:?}"
    );
    let chunks = index.chunks().unwrap();
    let first = &index.store.tables[0].id;
    assert!(
        chunks.iter().any(|c| c.table.as_ref() == Some(first)),
        "a chunk names the table"
    );
    let hits = asked.hits("selection: {topK: 10}", "What was the margin in Oceania?");
    let row = hits
        .iter()
        .find(|h| h["text"].as_str().unwrap().contains("Oceania"))
        .expect("the Oceania row");
    let cited = &row["citation"]["table"];
    assert_eq!(cited["id"], first.as_str(), "{row}");
    assert_eq!(
        cited["columns"],
        serde_json::json!(["Region", "Revenue (EUR m)", "Margin [%]"])
    );
    assert_eq!(cited["units"], serde_json::json!([null, "EUR m", "%"]));
    assert_eq!(cited["row_header"], "Oceania");
    assert_eq!(
        (cited["row"].as_u64(), cited["rows"].as_u64()),
        (Some(4), Some(6))
    );
    // The near-copy's rows are shown nowhere as results.
    let copy = &index.store.tables[1];
    assert_eq!(copy.duplicate_of, Some(0));
    assert!(
        hits.iter()
            .all(|h| h["citation"]["table"]["id"] != copy.id.as_str()),
        "{hits:?}"
    );
}

/// The amounts, percentages and dates a sentence states are typed values
/// of its citation, and a query can keep to sentences stating an amount
/// over a figure, a percentage in a range or a date in a year.
#[test]
fn typed_values_are_cited_and_filter_the_sentences() {
    let asked = Asked::ingest(&[(
        "fees.txt",
        "Fees\n\n\
         The Supplier shall pay a fee of $2,500,000 on March 31, 2024.\n\n\
         A late fee of $500 applies to every invoice.\n\n\
         The fee discount is 12.5% for FY2023.\n\n\
         The fee schedule is reviewed by both parties.\n",
    )]);
    let question = "What fee applies?";
    let texts = |args: &[&str]| {
        let route = "selection: {topK: 10, neighbours: 0}";
        let response = asked.response_with(route, question, args);
        let mut texts: Vec<String> = response["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["text"].as_str().unwrap().to_string())
            .collect();
        texts.sort();
        (texts, response)
    };
    let (all, response) = texts(&[]);
    assert!(all.len() >= 3, "{all:?}");
    let big = response["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["text"].as_str().unwrap().contains("2,500,000"))
        .expect("the large fee");
    let values = &big["citation"]["values"];
    assert!(
        values.as_array().unwrap().contains(
            &serde_json::json!({"type": "money", "amount": 2500000.0, "currency": "USD"})
        ),
        "{values}"
    );
    let only = |args: &[&str]| {
        let (texts, _) = texts(args);
        assert_eq!(texts.len(), 1, "{args:?}: {texts:?}");
        texts[0].clone()
    };
    assert!(only(&["--amount", ">1,000,000"]).contains("2,500,000"));
    assert!(only(&["--amount", "<=1000", "--currency", "usd"]).contains("late fee"));
    assert!(only(&["--percent", "10..15"]).contains("12.5%"));
    assert!(only(&["--mentions-date", "2024"]).contains("March 31, 2024"));
    assert!(only(&["--mentions-date", "2023"]).contains("FY2023"));
    assert!(texts(&["--currency", "EUR"]).0.is_empty());
}

/// `chunking.strategy: semantic` cuts a paragraph that changes topic where
/// the sentence vectors say it does, in the index version (from the
/// vectors the ingest computed) and in `trellis chunk` alike; `structure`
/// keeps the paragraph whole.
#[test]
fn the_semantic_chunker_cuts_where_the_topic_shifts() {
    let text = "# Notes\n\n\
        Knead the bread dough for ten minutes until it is smooth. \
        Let the dough rise in a warm kitchen for an hour. \
        Bake the loaf in a hot oven until the crust is brown. \
        Cool the bread on a rack before slicing it. \
        Jupiter is the largest planet in the solar system. \
        Saturn has bright rings made of ice and rock. \
        Mars is a cold desert planet with two small moons. \
        Neptune is the farthest planet from the sun.\n";
    let first_chunk = |profile: &str| {
        let asked = Asked::ingest_with_profile(profile, &[("notes.md", text.as_bytes().to_vec())]);
        let index =
            trellis::index::IndexVersion::open(&asked.tmp.path().join("data"), "c", None).unwrap();
        let chunks = index.chunks().unwrap();
        let sentences: Vec<Vec<u32>> = chunks
            .iter()
            .map(|c| c.sentences.iter().map(|s| s.0).collect())
            .collect();
        // Each sentence points at the first chunk that holds it.
        for (c, chunk) in chunks.iter().enumerate() {
            for &s in &chunk.sentences {
                let first = index.store.sentences[s].chunk.unwrap();
                assert!(first as usize <= c, "{s} in {c}, first {first}");
            }
        }
        (asked, sentences)
    };
    let (_, structure) = first_chunk("");
    assert_eq!(structure, vec![(0..8).collect::<Vec<u32>>()]);
    let profile = "{chunking: {strategy: semantic, overlapTokens: 0, mergeBelowTokens: 0, \
                   semantic: {minTokens: 20}}}";
    let (asked, semantic) = first_chunk(profile);
    assert_eq!(
        semantic,
        vec![(0..4).collect::<Vec<u32>>(), (4..8).collect()],
        "cut between the bread and the planets"
    );
    // `trellis chunk` cuts the same, embedding the document itself.
    let output = run(trellis()
        .args(["chunk", "-f"])
        .arg(asked.manifests(""))
        .arg(asked.tmp.path().join("docs/notes.md")));
    assert!(output.status.success(), "{}", stderr(&output));
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0]["text"]
            .as_str()
            .unwrap()
            .contains("Cool the bread")
    );
    assert!(
        lines[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("Notes\n\nJupiter")
    );
}

/// A clause that runs over several paragraphs is shown whole by a route
/// with `selection.wholeClause`, the anchor inside it; without it, the
/// anchor's paragraph alone.
#[test]
fn a_route_shows_a_clause_whole_across_its_paragraphs() {
    let asked = Asked::ingest(&[(
        "services-agreement.txt",
        "SERVICES AGREEMENT\n\n\
         1. Services. Provider shall deliver the services described in Exhibit A.\n\n\
         2. Termination. Either party may terminate this Agreement upon thirty days \
         written notice to the other party.\n\n\
         Upon termination, Customer shall pay all fees accrued through the effective date \
         of termination. Provider shall return all Customer materials within ten days.\n\n\
         No termination shall affect the confidentiality obligations, which survive for \
         five years.\n\n\
         3. Notices. Notices shall be in writing and delivered to the addresses above.\n",
    )]);
    let first = |whole: bool| {
        let route = format!("selection: {{topK: 1, wholeClause: {whole}}}");
        asked.hits(&route, "What must the customer pay upon termination?")[0].clone()
    };
    let cut = first(false);
    assert!(
        cut["text"]
            .as_str()
            .unwrap()
            .starts_with("Upon termination, Customer shall pay"),
        "{cut}"
    );
    let display = cut["display"].as_str().unwrap();
    assert!(!display.contains("thirty days"), "{display}");
    let whole = first(true);
    assert_eq!(whole["text"], cut["text"]);
    let display = whole["display"].as_str().unwrap();
    for part in [
        "2. Termination.",
        "thirty days written notice",
        "Upon termination, Customer shall pay",
        "survive for five years.",
    ] {
        assert!(display.contains(part), "{part}: {display}");
    }
    assert!(!display.contains("Notices shall be"), "{display}");
}

/// MMR (`selection.mmrLambda` below 1) trades relevance for diversity:
/// of two near-copies of the best answer, a route with it shows one and
/// then something else; without it, both.
#[test]
fn mmr_shows_one_of_two_near_copies() {
    let asked = Asked::ingest(&[
        (
            "order-form.txt",
            "Payment\n\nFees are due within thirty days of the invoice date.\n",
        ),
        (
            "master-agreement.txt",
            "Payment\n\nAll fees are due within thirty days after the date of the invoice.\n",
        ),
        (
            "payment-terms.txt",
            "Payment\n\nLate payments accrue interest at one percent per month until paid in full.\n",
        ),
    ]);
    let shown = |lambda: f32| {
        let route = format!("selection: {{topK: 2, mmrLambda: {lambda}}}");
        asked
            .hits(&route, "When are fees due?")
            .iter()
            .map(|h| h["text"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let due = |text: &String| text.contains("thirty days");
    let plain = shown(1.0);
    assert!(plain.len() == 2 && plain.iter().all(due), "{plain:?}");
    let diverse = shown(0.3);
    assert_eq!(diverse.len(), 2, "{diverse:?}");
    assert!(due(&diverse[0]), "{diverse:?}");
    assert!(diverse[1].contains("Late payments"), "{diverse:?}");
}

/// `expansion.parent` brings the sentences of an anchor's section or
/// chunk in as candidates and shows them around it: with one anchor from
/// each list and no window, the climb is the only way the section's other
/// paragraphs are shown.
#[test]
fn a_route_climbs_from_an_anchor_to_its_section_or_chunk() {
    let asked = Asked::ingest(&[(
        "services-agreement.md",
        "# Termination\n\n\
         Either party may terminate this agreement on ninety days written notice.\n\n\
         Notice must be delivered by registered mail to the address on file.\n\n\
         All unpaid invoices become due immediately.\n\n\
         # Confidentiality\n\n\
         Each party keeps the other's information secret.\n\n\
         The duty survives for five years.\n",
    )]);
    let shown = |parent: &str| {
        let route = format!(
            "anchors: {{candidates: 1}}, \
             expansion: {{window: 0, related: false, sameClause: false, parent: {parent}}}, \
             selection: {{topK: 10}}"
        );
        asked
            .hits(&route, "Can either party terminate the agreement?")
            .iter()
            .map(|h| h["display"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let has = |texts: &[String], words: &str| texts.iter().any(|t| t.contains(words));
    let alone = shown("none");
    assert!(has(&alone, "may terminate"), "{alone:?}");
    assert!(!has(&alone, "registered mail"), "{alone:?}");
    for parent in ["section", "chunk"] {
        let climbed = shown(parent);
        for words in ["may terminate", "registered mail", "unpaid invoices"] {
            assert!(has(&climbed, words), "{parent}: {climbed:?}");
        }
        if parent == "section" {
            assert!(!has(&climbed, "secret"), "{parent}: {climbed:?}");
        }
    }
}

/// `selection.contextTokens` cuts a result's passage down to what the
/// budget holds, whole sentences at a time, its own sentence first, and
/// says how the budget was spent.
#[test]
fn a_context_budget_keeps_the_results_sentence_and_cuts_its_paragraph() {
    let asked = Asked::ingest(&[(
        "lease.txt",
        "Rent\n\n\
         The tenant pays the rent monthly. Rent is due on the first day of each month. \
         Payments go to the landlord's bank account. A receipt is issued for each payment.\n",
    )]);
    let ask = |budget: u32| {
        let route = format!("selection: {{topK: 1, contextTokens: {budget}}}");
        asked.response(&route, "When is the rent due?")
    };
    let whole = ask(0);
    let hit = &whole["hits"][0];
    assert!(
        hit["text"].as_str().unwrap().contains("first day"),
        "{whole}"
    );
    assert!(
        hit["display"].as_str().unwrap().contains("receipt"),
        "{whole}"
    );
    assert!(whole.get("context_budget").is_none(), "{whole}");
    // The sentence (43 characters, 15 tokens at three characters to a
    // token) and the one after it (15 too) fit 34; the one before (11)
    // and the last (13) do not.
    let tight = ask(34);
    let display = tight["hits"][0]["display"].as_str().unwrap();
    assert_eq!(
        display,
        "Rent is due on the first day of each month. Payments go to the landlord's bank account.",
        "{tight}"
    );
    assert_eq!(tight["context"].as_str().unwrap(), display);
    let spent = &tight["context_budget"];
    assert_eq!(spent["budget"], 34, "{tight}");
    assert_eq!(spent["shortened"], 1, "{tight}");
    assert_eq!(spent["dropped"], 0, "{tight}");
    // A budget that does not hold the sentence shows nothing.
    let none = ask(5);
    assert!(none["hits"].as_array().unwrap().is_empty(), "{none}");
    assert_eq!(none["context_budget"]["dropped"], 1, "{none}");
}

/// `anchors.mode: auto` answers a question for one fact from sentences
/// and a question for an explanation through the chunks as well, as the
/// fixed `full` route with and without chunks would, and says which and
/// why.
#[test]
fn auto_mode_routes_precise_questions_to_sentences_and_broad_ones_to_chunks() {
    let asked = Asked::ingest(&[
        (
            "lease.txt",
            "Rent\n\nThe tenant pays the rent monthly. Rent is due on the first day of each month.\n\n\
             Deposit\n\nThe landlord holds a deposit of two months' rent. The landlord may keep \
             the deposit to repair damage beyond normal wear.\n",
        ),
        (
            "parking.txt",
            "Parking\n\nEach tenant has one parking space. Visitors park on the street.\n",
        ),
    ]);
    let texts = |response: &serde_json::Value| -> Vec<(String, String)> {
        response["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["text"].to_string(), h["score"].to_string()))
            .collect()
    };
    for (question, granularity, reason, fixed) in [
        (
            "When is the rent due?",
            "sentences",
            "asks for one fact",
            "anchors: {mode: full}",
        ),
        (
            "Why might the landlord keep the deposit?",
            "chunks",
            "asks for an explanation or an overview",
            "anchors: {mode: full, chunks: 10}",
        ),
    ] {
        let auto = asked.response("anchors: {mode: auto}", question);
        assert_eq!(auto["routing"]["granularity"], granularity, "{auto}");
        assert_eq!(auto["routing"]["reasons"][0], reason, "{auto}");
        let fixed = asked.response(fixed, question);
        assert!(fixed.get("routing").is_none(), "{fixed}");
        assert_eq!(texts(&auto), texts(&fixed), "{question}");
    }
}

/// A result that says "as defined in Section 1.4" brings 1.4's definition
/// in as a candidate (`expansion.references`), and its citation names the
/// reference and where it points; the definition's own citation says who
/// refers to it.
#[test]
fn a_reference_is_followed_to_its_target_and_cited() {
    let asked = Asked::ingest(&[(
        "services-agreement.md",
        "# Services Agreement\n\n## 1. Definitions\n\n\
         1.4 \"Confidential Information\" means any data the discloser marks as secret \
         before sharing it.\n\n\
         ## 7. Obligations\n\n\
         7.2 The recipient shall protect and return Confidential Information as defined in \
         Section 1.4 on request.\n\n\
         ## 9. Term\n\nThis agreement lasts three years.\n",
    )]);
    let question = "What must the recipient protect and return?";
    let hits = |references: bool| {
        let route = format!(
            "anchors: {{candidates: 1, definitionSimilarity: 2.0}}, \
             expansion: {{window: 0, related: false, sameClause: false, references: {references}}}, \
             selection: {{topK: 10}}"
        );
        asked.hits(&route, question)
    };
    let defines = |h: &&serde_json::Value| h["text"].as_str().unwrap().contains("means any data");
    let without = hits(false);
    assert!(
        without[0]["text"]
            .as_str()
            .unwrap()
            .contains("shall protect"),
        "{without:?}"
    );
    assert!(!without.iter().any(|h| defines(&h)), "{without:?}");
    let with = hits(true);
    let obligation = &with[0];
    assert!(
        obligation["text"]
            .as_str()
            .unwrap()
            .contains("shall protect"),
        "{with:?}"
    );
    let definition = with
        .iter()
        .find(defines)
        .expect("the definition is a result");
    let reference = &obligation["citation"]["references"][0];
    assert_eq!(reference["label"], "Section 1.4", "{obligation}");
    assert_eq!(
        reference["sentence_id"], definition["citation"]["sentence_id"],
        "{with:?}"
    );
    assert_eq!(
        definition["citation"]["referenced_by"][0], obligation["citation"]["sentence_id"],
        "{definition}"
    );
}

/// `anchors.phraseBoost` lifts a sentence that holds the query's words as
/// the query writes them over a shorter one that holds them apart (BM25
/// alone, so that the lexical list decides).
#[test]
fn a_phrase_match_lifts_the_sentence_that_says_it_as_the_query_does() {
    let asked = Asked::ingest(&[(
        "terms.txt",
        "Old laws governed.\n\n\
         This agreement is governed by the laws of the State of California, without regard \
         to its conflict of law provisions.\n",
    )]);
    let first = |boost: f32| {
        let route = format!("anchors: {{mode: bm25, phraseBoost: {boost}}}");
        let hits = asked.hits(&route, "governed by the laws");
        hits[0]["text"].as_str().unwrap().to_string()
    };
    assert_eq!(first(0.0), "Old laws governed.");
    assert!(first(2.0).starts_with("This agreement is governed"));
}

/// `selection.sectionDecay` spreads results over a document's sections:
/// the second result comes from another section once one is taken.
#[test]
fn section_decay_spreads_results_over_a_documents_sections() {
    let asked = Asked::ingest(&[(
        "contract.md",
        "# Fees\n\nFees are due within thirty days of the invoice.\n\n\
         Late fees are due with the next invoice.\n\n\
         # Termination\n\nUnpaid fees allow termination after notice.\n",
    )]);
    let sections = |decay: f32| {
        let route = format!("selection: {{topK: 2, sectionDecay: {decay}}}");
        asked
            .hits(&route, "When are fees due?")
            .iter()
            .map(|h| h["citation"]["section_path"].to_string())
            .collect::<Vec<_>>()
    };
    let gathered = sections(0.0);
    assert_eq!(gathered.len(), 2);
    assert_eq!(gathered[0], gathered[1], "{gathered:?}");
    let spread = sections(0.9);
    assert_eq!(spread[0], gathered[0]);
    assert_ne!(spread[0], spread[1], "{spread:?}");
}

/// `scoring.provenance` decides which of two equally good sentences, one
/// in the body and one in an exhibit, the provenance signal lifts (its
/// weight raised here so that it alone decides).
#[test]
fn provenance_favours_the_body_or_the_annexes_as_the_route_says() {
    let asked = Asked::ingest(&[(
        "supply-agreement.txt",
        "SUPPLY AGREEMENT\n\n\
         1. Prices. The unit price of each widget is ten dollars.\n\n\
         EXHIBIT A\n\n\
         Price List. The unit price of each gadget is twelve dollars.\n",
    )]);
    let first = |favours: &str| {
        let route = format!(
            "selection: {{topK: 1}}, scoring: {{provenance: {favours}, weights: {{provenance: 5.0}}}}"
        );
        let hits = asked.hits(&route, "What is the unit price?");
        hits[0]["text"].as_str().unwrap().to_string()
    };
    let body = first("body");
    assert!(body.contains("widget"), "{body}");
    let annexes = first("annexes");
    assert!(annexes.contains("gadget"), "{annexes}");
}

/// The `RELATED_TO` edge budget is an alarm that fires: a threshold that
/// links nearly every sentence as far as `maxPerSentence` allows is
/// reported as too low, and one that no two sentences reach falls back
/// by 0.05 (the design's 0.90 to 0.85), reported too.
#[test]
fn the_edge_budget_alarm_fires_and_a_threshold_nothing_reaches_falls_back() {
    let tmp = tempfile::tempdir().unwrap();
    let documents = root().join("examples/quickstart/documents");
    let ingest_at = |threshold: &str| {
        let manifests = tmp.path().join(format!("trellis-{threshold}.yaml"));
        std::fs::write(
            &manifests,
            format!(
                "apiVersion: trellis.dev/v1alpha1\nkind: IndexProfile\nmetadata: {{name: p}}\n\
                 spec: {{semanticLinks: {{threshold: {threshold}, maxPerSentence: 2}}}}\n---\n\
                 apiVersion: trellis.dev/v1alpha1\nkind: Corpus\nmetadata: {{name: c}}\n\
                 spec: {{profileRef: {{name: p}}, sources: [{{path: {}}}]}}\n",
                documents.display()
            ),
        )
        .unwrap();
        let output = run(trellis()
            .args(["ingest", "--json", "-f"])
            .arg(&manifests)
            .arg("--data-dir")
            .arg(tmp.path().join("data")));
        assert!(output.status.success(), "{}", stderr(&output));
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        report["manifest"].clone()
    };

    let loose = ingest_at("0.10");
    let edges = loose["counts"]["related_edges"].as_u64().unwrap();
    let budget = loose["links"]["budget"].as_u64().unwrap();
    assert!(edges * 10 >= budget * 9, "{edges} of {budget}");
    let warnings = loose["links"]["warnings"].to_string();
    assert!(warnings.contains("raise it"), "{warnings}");

    // The quick start's prose never repeats itself that closely.
    let strict = ingest_at("0.90");
    let at = strict["links"]["threshold"].as_f64().unwrap();
    assert!((at - 0.85).abs() < 1e-6, "{at}");
    let warnings = strict["links"]["warnings"].to_string();
    assert!(
        warnings.contains("no two sentences reached semanticLinks.threshold 0.90; linked at 0.85"),
        "{warnings}"
    );
}

/// Two ingests of one corpus at once on one data directory (a retried pod
/// beside the one it replaces, two Jobs of a namespace) publish exactly
/// the vectors one ingest alone publishes, and both succeed. One of them
/// is slowed: paused for 40 ms of every 60 ms, so that its cache appends,
/// build and publish interleave with the other's.
#[test]
fn two_ingests_at_once_publish_what_one_alone_publishes() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;

    let tmp = tempfile::tempdir().unwrap();
    let ingest = |data: &Path, pod: &str| {
        trellis()
            .current_dir(root())
            .env("TRELLIS_POD_UID", pod)
            .args([
                "ingest",
                "-f",
                "examples/kubernetes/quickstart.yaml",
                "--json",
                "--data-dir",
            ])
            .arg(data)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let report = |child: std::process::Child| {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()
    };

    let alone = tmp.path().join("alone");
    let expected = report(ingest(&alone, "pod-alone"));

    let shared = tmp.path().join("shared");
    let slowed = ingest(&shared, "pod-a");
    let other = ingest(&shared, "pod-b");
    let pid = Pid::from_raw(slowed.id() as i32);
    let done = std::sync::atomic::AtomicBool::new(false);
    let (a, b) = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if kill(pid, Signal::SIGSTOP).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(40));
                let _ = kill(pid, Signal::SIGCONT);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let b = report(other);
        let a = report(slowed);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (a, b)
    });

    let version = expected["manifest"]["version"].as_str().unwrap();
    for (name, r) in [("slowed", &a), ("other", &b)] {
        assert_eq!(r["manifest"]["version"], version, "{name}: {r}");
    }
    let published = |data: &Path, file: &str| {
        std::fs::read(data.join("indexes/quickstart").join(version).join(file)).unwrap()
    };
    for file in ["vectors.f32", "headings.f32", "terms.f32"] {
        assert!(
            published(&shared, file) == published(&alone, file),
            "{file} differs from a single ingest's"
        );
    }
    let current = std::fs::read_to_string(shared.join("indexes/quickstart/current")).unwrap();
    assert_eq!(current.trim(), version);
    let leftovers: Vec<String> = std::fs::read_dir(shared.join("indexes/quickstart"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The shared cache holds every vector, each passing its checksum: a
    // rebuild from it embeds nothing and publishes the same vectors again.
    std::fs::remove_dir_all(shared.join("indexes")).unwrap();
    let again = report(ingest(&shared, "pod-c"));
    assert_eq!(again["manifest"]["embedded_sentences"], 0, "{again}");
    assert_eq!(again["manifest"]["embedded_headings"], 0, "{again}");
    assert!(published(&shared, "vectors.f32") == published(&alone, "vectors.f32"));
}

#[test]
fn the_argocd_health_checks_are_the_lua_file() {
    let dir = root().join("examples/gitops/argocd");
    let config: serde_json::Value =
        serde_yaml::from_str(&std::fs::read_to_string(dir.join("argocd-cm.yaml")).unwrap())
            .unwrap();
    let script = std::fs::read_to_string(dir.join("trellis-health.lua")).unwrap();
    for kind in ["Corpus", "IndexProfile", "RetrievalRoute"] {
        let embedded =
            &config["data"][format!("resource.customizations.health.trellis.dev_{kind}")];
        assert_eq!(embedded.as_str(), Some(script.as_str()), "{kind}");
    }
}

/// `trellis crd | head -1`: a reader that goes away ends the command
/// quietly and successfully, as with any Unix tool, not with a panic.
#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    use std::io::{BufRead, BufReader};
    let mut child = trellis()
        .arg("crd")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    {
        // Half a megabyte of CRDs does not fit a pipe: the writer is still
        // writing when the reader closes.
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        reader.read_line(&mut first).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(first.trim(), "---");
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{:?}: {err}", output.status);
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.trim().is_empty(), "said something: {err}");
}

/// An ingest under a file-size limit it passes (`ulimit -f`, as a
/// container's may be) fails with an error naming the file it was writing,
/// where SIGXFSZ used to end it without a word.
#[test]
fn a_file_size_limit_is_an_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    crate::common::write_two_documents(dir);
    std::fs::write(
        dir.join("trellis.yaml"),
        crate::common::TWO_DOCUMENT_MANIFESTS,
    )
    .unwrap();
    let output = run(Command::new("sh")
        .arg("-c")
        // 4 blocks: the embedding cache and the vectors pass it.
        .arg("ulimit -f 4 && exec \"$0\" ingest -f \"$1/trellis.yaml\" --data-dir \"$1/data\"")
        .arg(env!("CARGO_BIN_EXE_trellis"))
        .arg(dir));
    let message = stderr(&output);
    assert!(!output.status.success(), "{message}");
    assert_eq!(output.status.code(), Some(1), "not a signal: {output:?}");
    assert!(message.contains("File too large"), "{message}");
    assert!(
        message.contains(&dir.display().to_string()) || message.contains("data/"),
        "{message}"
    );
}
