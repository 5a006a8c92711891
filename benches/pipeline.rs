//! Throughput of parse + segment + chunk (and of the segmenter alone) on the
//! development data: SQuAD part 1 articles as plain text, Docling's Markdown
//! and HTML inputs; and of the DOCX parser on synthetic documents of two
//! sizes, to show that it stays linear.
//!
//! ```text
//! cargo bench --bench pipeline            # human-readable
//! cargo bench --bench pipeline -- --json  # one JSON object per line
//! cargo bench --bench pipeline -- squad_text  # only corpora of that name
//! cargo bench --bench pipeline -- docx_synthetic  # the DOCX scaling alone
//! ```
//!
//! `scripts/bench.py` runs this beside LangChain's and chonkie's recursive
//! chunkers and pySBD on the same texts and prints the ratios.

#[path = "../tests/it/common/mod.rs"]
mod common;

/// The allocator the `trellis` binary runs with, so that the figures are
/// the binary's.
#[global_allocator]
static ALLOCATOR: trellis::memory::CountingAllocator = trellis::memory::CountingAllocator;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use std::time::{Duration, Instant};

use trellis::parse::Format;
use trellis::pipeline::Pipeline;
use trellis::spec::{EnrichmentSpec, IndexProfileSpec};

/// Each measurement repeats its workload for at least this long and keeps
/// the fastest pass.
const MIN_MEASURE: Duration = Duration::from_secs(2);

struct Corpus {
    name: &'static str,
    documents: Vec<(String, Vec<u8>, Format)>,
}

impl Corpus {
    fn bytes(&self) -> usize {
        self.documents.iter().map(|(_, b, _)| b.len()).sum()
    }
}

/// SQuAD articles: each article's contexts joined by blank lines, the way a
/// plain-text export of the article looks.
fn squad(eval: &Path) -> Corpus {
    let path = eval.join("squad/dev-v1.1-part1.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let json: serde_json::Value = serde_json::from_str(&text).expect("SQuAD JSON");
    let documents = json["data"]
        .as_array()
        .expect("data[]")
        .iter()
        .map(|article| {
            let contexts: Vec<&str> = article["paragraphs"]
                .as_array()
                .expect("paragraphs[]")
                .iter()
                .filter_map(|p| p["context"].as_str())
                .collect();
            let title = article["title"].as_str().unwrap_or("article").to_string();
            (title, contexts.join("\n\n").into_bytes(), Format::Text)
        })
        .collect();
    Corpus {
        name: "squad_text",
        documents,
    }
}

fn folder(eval: &Path, name: &'static str, dir: &str, ext: &str, format: Format) -> Corpus {
    let dir = eval.join(dir);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    paths.sort();
    let documents = paths
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("readable source");
            (p.display().to_string(), bytes, format)
        })
        .collect();
    Corpus { name, documents }
}

/// Runs `work` repeatedly for at least [`MIN_MEASURE`]; the fastest pass.
fn fastest(mut work: impl FnMut() -> usize) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut units = 0;
    let started = Instant::now();
    let mut passes = 0;
    while passes < 3 || started.elapsed() < MIN_MEASURE {
        let t = Instant::now();
        units = std::hint::black_box(work());
        best = best.min(t.elapsed());
        passes += 1;
    }
    (best, units)
}

fn report(
    json: bool,
    bench: &str,
    corpus: &str,
    bytes: usize,
    time: Duration,
    units: (&str, usize),
) {
    let mb_per_s = bytes as f64 / 1e6 / time.as_secs_f64();
    if json {
        println!(
            "{}",
            serde_json::json!({
                "bench": bench,
                "corpus": corpus,
                "bytes": bytes,
                "seconds": time.as_secs_f64(),
                "mb_per_s": mb_per_s,
                units.0: units.1,
            })
        );
    } else {
        println!(
            "{bench:<28} {corpus:<16} {:>9.3} MB in {:>8.2} ms  {:>8.1} MB/s  ({} {})",
            bytes as f64 / 1e6,
            time.as_secs_f64() * 1e3,
            mb_per_s,
            units.1,
            units.0
        );
    }
}

fn main() {
    let json = std::env::args().any(|a| a == "--json");
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let selected = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let eval = common::eval_dir();
    let squad = squad(&eval);
    let md = folder(
        &eval,
        "docling_md",
        "docling/md/sources",
        "md",
        Format::Markdown,
    );
    let html = folder(
        &eval,
        "docling_html",
        "docling/html/sources",
        "html",
        Format::Html,
    );
    let mut squad_md = Corpus {
        name: "squad_text+md",
        documents: squad.documents.clone(),
    };
    squad_md.documents.extend(md.documents.iter().cloned());

    // The comparison with chunkers that do no sentence or metadata work:
    // enrichment off. A second run shows its cost.
    let without_enrichment = IndexProfileSpec {
        enrichment: EnrichmentSpec::none(),
        ..IndexProfileSpec::default()
    };
    let plain = Pipeline::new(&without_enrichment, None).expect("default profile");
    let enriched = Pipeline::new(&IndexProfileSpec::default(), None).expect("default profile");

    for corpus in [&squad_md, &squad, &md, &html] {
        if !selected(corpus.name) {
            continue;
        }
        // Where the time goes: parsing alone, then parsing and the skeleton
        // (sentence splitting and filters).
        let (time, sections) = fastest(|| {
            corpus
                .documents
                .iter()
                .filter_map(|(_, bytes, format)| {
                    trellis::parse::parse_bytes(bytes, *format, &plain.spec().parsing).ok()
                })
                .map(|tree| tree.sections.len())
                .sum()
        });
        report(
            json,
            "parse",
            corpus.name,
            corpus.bytes(),
            time,
            ("sections", sections),
        );
        let (time, sentences) = fastest(|| {
            corpus
                .documents
                .iter()
                .filter_map(|(key, bytes, format)| {
                    let tree =
                        trellis::parse::parse_bytes(bytes, *format, &plain.spec().parsing).ok()?;
                    Some(plain.build_skeleton(key, tree).sentences.len())
                })
                .sum()
        });
        report(
            json,
            "parse+segment",
            corpus.name,
            corpus.bytes(),
            time,
            ("sentences", sentences),
        );
        for (bench, pipeline) in [
            ("parse+segment+chunk", &plain),
            ("parse+segment+chunk+enrich", &enriched),
        ] {
            let (time, chunks) = fastest(|| {
                corpus
                    .documents
                    .iter()
                    .map(|(key, bytes, format)| {
                        pipeline
                            .process_bytes(key, bytes, *format)
                            .map(|d| d.chunks.len())
                            .unwrap_or(0)
                    })
                    .sum()
            });
            report(
                json,
                bench,
                corpus.name,
                corpus.bytes(),
                time,
                ("chunks", chunks),
            );
        }
        // What `trellis chunk` does: documents in parallel on every core.
        let threads = rayon::current_num_threads();
        let (time, chunks) = fastest(|| {
            corpus
                .documents
                .par_iter()
                .map(|(key, bytes, format)| {
                    plain
                        .process_bytes(key, bytes, *format)
                        .map(|d| d.chunks.len())
                        .unwrap_or(0)
                })
                .sum()
        });
        let bench = format!("parse+segment+chunk/{threads}threads");
        report(
            json,
            &bench,
            corpus.name,
            corpus.bytes(),
            time,
            ("chunks", chunks),
        );
    }

    if selected("docx_synthetic") {
        docx_scaling(json, &plain.spec().parsing);
    }

    if !selected("squad_contexts") {
        return;
    }
    // The segmenter alone, on the raw SQuAD contexts (what pySBD is given).
    let contexts: Vec<String> = squad
        .documents
        .iter()
        .flat_map(|(_, bytes, _)| {
            String::from_utf8_lossy(bytes)
                .split("\n\n")
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let bytes: usize = contexts.iter().map(String::len).sum();
    let segmenter = plain.segmenter();
    let mut ranges = Vec::new();
    let (time, sentences) = fastest(|| {
        let mut n = 0;
        for context in &contexts {
            ranges.clear();
            segmenter.split_into(context, &mut ranges);
            n += ranges.len();
        }
        n
    });
    report(
        json,
        "segment",
        "squad_contexts",
        bytes,
        time,
        ("sentences", sentences),
    );
}

/// The DOCX parser on synthetic documents of two sizes, a heading, twenty
/// clauses and a table per section: the time per section at four times
/// the input against once shows whether the parser stays linear.
fn docx_scaling(json: bool, spec: &trellis::spec::ParsingSpec) {
    let mut per_section = Vec::new();
    for sections in [2_000, 8_000] {
        let bytes = synthetic_docx(sections);
        let (time, blocks) = fastest(|| {
            trellis::parse::docx::parse(&bytes, spec)
                .map(|tree| tree.blocks().count())
                .unwrap_or(0)
        });
        assert!(
            blocks > 0,
            "the synthetic DOCX of {sections} sections did not parse"
        );
        let corpus = format!("docx_{sections}_sections");
        report(
            json,
            "parse",
            &corpus,
            bytes.len(),
            time,
            ("blocks", blocks),
        );
        per_section.push(time.as_secs_f64() / sections as f64);
    }
    if !json {
        println!(
            "docx time per section, 4x input against 1x: {:.2}",
            per_section[1] / per_section[0]
        );
    }
}

/// A zipped DOCX of `sections` sections (see [`docx_scaling`]).
fn synthetic_docx(sections: usize) -> Vec<u8> {
    use std::io::Write;
    const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
    let mut body = String::new();
    for s in 0..sections {
        body.push_str(&format!(
            "<w:p><w:pPr><w:pStyle w:val=\"Heading1\"/></w:pPr><w:r><w:t>Section {s}</w:t></w:r></w:p>"
        ));
        for i in 0..20 {
            body.push_str(&format!(
                "<w:p><w:r><w:rPr><w:b/></w:rPr><w:t xml:space=\"preserve\">Clause {s}.{i}. </w:t></w:r>\
                 <w:r><w:t>The supplier shall deliver the goods described in the schedule within thirty days.</w:t></w:r></w:p>"
            ));
        }
        body.push_str("<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/></w:tblGrid>");
        for r in 0..5 {
            body.push_str(&format!(
                "<w:tr><w:tc><w:p><w:r><w:t>Item {r}</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>{r}00 EUR</w:t></w:r></w:p></w:tc></w:tr>"
            ));
        }
        body.push_str("</w:tbl>");
    }
    let styles = format!(
        "<w:styles xmlns:w=\"{W}\"><w:style w:type=\"paragraph\" w:styleId=\"Heading1\"><w:name w:val=\"heading 1\"/></w:style></w:styles>"
    );
    let document = format!("<w:document xmlns:w=\"{W}\"><w:body>{body}</w:body></w:document>");
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for (name, content) in [("word/document.xml", document), ("word/styles.xml", styles)] {
        zip.start_file(name, options)
            .expect("an in-memory zip entry");
        zip.write_all(content.as_bytes())
            .expect("an in-memory zip write");
    }
    zip.finish().expect("an in-memory zip").into_inner()
}
