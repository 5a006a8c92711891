//! PDF parsing on real documents: the 20 CUAD development contracts as
//! PDFs (`../shared/eval/cuad/pdf`, CC BY 4.0) against their text versions,
//! and damaged files.
//!
//! The measure is the share of the text version's sentences (as Trellis
//! segments them) that are found, whole, in the parsed PDF's canonical
//! text, both compared as lowercase letters and digits only. Run with `--nocapture`
//! for each contract's share.

use crate::common;

use std::path::{Path, PathBuf};

use trellis::parse::ParseFailure;
use trellis::pipeline::Pipeline;
use trellis::spec::{IndexProfileSpec, ParsingSpec};

/// Share of the text versions' sentences the PDFs must give, over all
/// contracts.
const MIN_SENTENCE_COVERAGE: f64 = 0.95;

fn cuad() -> PathBuf {
    common::eval_dir().join("cuad")
}

/// Lowercase letters and digits only.
fn normalised(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn sentences(pipeline: &Pipeline, path: &Path) -> Vec<String> {
    let tree = trellis::parse::parse_file(path, &pipeline.spec().parsing)
        .unwrap_or_else(|e| panic!("{e}"));
    pipeline
        .build_skeleton("doc", tree)
        .sentences
        .into_iter()
        .map(|s| s.text)
        .collect()
}

#[test]
fn cuad_pdfs_give_the_sentences_of_their_text_versions() {
    let pipeline = Pipeline::new(&IndexProfileSpec::default(), None).expect("pipeline");
    let dir = cuad().join("pdf");
    let mut pdfs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")))
        .collect();
    pdfs.sort();
    let (mut found_total, mut expected_total) = (0usize, 0usize);
    let (mut located, mut sentences_total) = (0usize, 0usize);
    let mut compared = 0;
    for pdf in &pdfs {
        let stem = pdf.file_stem().unwrap().to_string_lossy().to_string();
        let text = cuad().join("contracts").join(format!("{stem}.txt"));
        if !text.is_file() {
            continue;
        }
        compared += 1;
        let tree = trellis::parse::parse_file(pdf, &pipeline.spec().parsing)
            .unwrap_or_else(|e| panic!("{e}"));
        // The whole canonical text (headings are not sentences, and the
        // text version may run a heading into its first sentence) and the
        // table of contents, which parsing moves out of the body.
        let toc: Vec<String> = tree
            .toc
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e.title,
                    e.page.map(|p| p.to_string()).unwrap_or_default()
                )
            })
            .collect();
        let parsed = normalised(&format!("{} {}", tree.text, toc.join(" ")));
        // Every sentence found on its pages has boxes on a page of the
        // document, inside US Letter or A4, one per line.
        let pages = tree.pages.expect("a PDF has pages");
        let skeleton = pipeline.build_skeleton("doc", tree.clone());
        for sentence in &skeleton.sentences {
            sentences_total += 1;
            located += usize::from(!sentence.boxes.is_empty());
            for b in &sentence.boxes {
                assert!((1..=pages).contains(&b.page), "{stem}: {b:?}");
                let [x0, y0, x1, y1] = b.bbox;
                assert!(
                    0.0 <= x0 && x0 <= x1 && x1 <= 612.0 && 0.0 <= y0 && y0 < y1 && y1 <= 842.0,
                    "{stem}: {b:?} for {:?}",
                    sentence.text
                );
            }
            assert_eq!(
                sentence.page,
                sentence.boxes.first().map(|b| b.page).or(sentence.page)
            );
        }
        let expected: Vec<String> = sentences(&pipeline, &text)
            .iter()
            .map(|s| normalised(s))
            .filter(|s| s.len() >= 12)
            .collect();
        let found = expected
            .iter()
            .filter(|s| parsed.contains(s.as_str()))
            .count();
        println!(
            "{:<60} {found:>4}/{:<4} = {:.3}",
            stem.chars().take(60).collect::<String>(),
            expected.len(),
            found as f64 / expected.len().max(1) as f64
        );
        found_total += found;
        expected_total += expected.len();
    }
    let coverage = found_total as f64 / expected_total.max(1) as f64;
    println!(
        "CUAD PDFs: {found_total}/{expected_total} text-version sentences found ({coverage:.4})"
    );
    let located_share = located as f64 / sentences_total.max(1) as f64;
    println!(
        "CUAD PDFs: {located}/{sentences_total} sentences located on their pages ({located_share:.4})"
    );
    assert_eq!(compared, 20, "expected the 20 CUAD development contracts");
    assert!(located_share >= 0.95, "located {located_share:.4} < 0.95");
    assert!(
        coverage >= MIN_SENTENCE_COVERAGE,
        "sentence coverage {coverage:.4} < {MIN_SENTENCE_COVERAGE}"
    );
}

#[test]
fn damaged_pdfs_fail_with_a_reason_and_never_panic() {
    let spec = ParsingSpec::default();
    let pdf = cuad().join("pdf");
    let first = std::fs::read_dir(&pdf)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")))
        .min()
        .expect("a CUAD PDF");
    let bytes = std::fs::read(&first).unwrap();
    // Cut short at several places: an error or a best-effort parse, never
    // a panic or a hang.
    for share in [0.02, 0.3, 0.5, 0.9] {
        let cut = &bytes[..(bytes.len() as f64 * share) as usize];
        match trellis::parse::parse_bytes(cut, trellis::parse::Format::Pdf, &spec) {
            // What was read is text, and what was lost is said.
            Ok(tree) => {
                let said = !(tree.lost_pages.is_empty()
                    && tree.flags.is_empty()
                    && tree.warnings.is_empty());
                assert!(!tree.text.trim().is_empty(), "{share}: no text");
                assert!(said, "{share}: a cut file parsed as if whole");
            }
            Err(e) => assert!(
                matches!(
                    e,
                    ParseFailure::Corrupt { .. }
                        | ParseFailure::Garbled { .. }
                        | ParseFailure::NeedsOcr { .. }
                        | ParseFailure::NoText
                ),
                "{share}: {e}"
            ),
        }
    }
    // Nothing but a header.
    let err = trellis::parse::parse_bytes(b"%PDF-1.7\n", trellis::parse::Format::Pdf, &spec)
        .expect_err("no document in it");
    assert!(matches!(err, ParseFailure::Corrupt { .. }), "{err}");
    // A time bound too tight for any document.
    let hurried = ParsingSpec {
        max_seconds_per_document: 1,
        ..ParsingSpec::default()
    };
    match trellis::parse::parse_bytes(&bytes, trellis::parse::Format::Pdf, &hurried) {
        Ok(tree) => assert!(!tree.text.trim().is_empty()),
        Err(e) => assert!(matches!(e, ParseFailure::TimedOut { seconds: 1 }), "{e}"),
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bad")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parse_fixture(
    name: &str,
    spec: &ParsingSpec,
) -> Result<trellis::parse::DocumentTree, ParseFailure> {
    trellis::parse::parse_bytes(&fixture(name), trellis::parse::Format::Pdf, spec)
}

#[test]
fn encrypted_pdf_needing_a_password_says_so() {
    let err = parse_fixture("encrypted.pdf", &ParsingSpec::default()).expect_err("a user password");
    assert!(matches!(err, ParseFailure::Encrypted), "{err}");
}

#[test]
fn encrypted_pdf_with_an_empty_user_password_is_decrypted() {
    let tree = parse_fixture("owner_only.pdf", &ParsingSpec::default()).expect("opens");
    assert!(
        tree.text
            .contains("Payment is due thirty days after the invoice date."),
        "{}",
        tree.text
    );
}

#[test]
fn broken_cross_reference_table_is_rebuilt() {
    let tree = parse_fixture("bad_xref.pdf", &ParsingSpec::default()).expect("rebuilt");
    for page in 1..=3 {
        assert!(
            tree.text.contains(&format!("Page {page}.")),
            "{}",
            tree.text
        );
    }
}

#[test]
fn truncated_pdf_is_an_error_or_a_partial_parse_with_a_warning() {
    match parse_fixture("truncated.pdf", &ParsingSpec::default()) {
        Err(err) => assert!(!err.to_string().is_empty()),
        Ok(tree) => assert!(!tree.text.contains("Page 3."), "{}", tree.text),
    }
}

/// Glyph ids of a subset font without a Unicode map read as "7KH
/// VXSSOLHU": a document that is all such text fails with the reason, one
/// with such a page is parsed with the page named and its sentences at
/// confidence 0.
#[test]
fn text_of_a_lost_font_encoding_is_refused_or_flagged() {
    let err = parse_fixture("lost_fonts.pdf", &ParsingSpec::default()).expect_err("garbled");
    assert!(matches!(err, ParseFailure::Garbled { .. }), "{err}");
    assert!(err.to_string().contains("vowels"), "{err}");

    let pipeline = Pipeline::new(&IndexProfileSpec::default(), None).unwrap();
    let processed = pipeline
        .process_bytes(
            "garbled_page.pdf",
            &fixture("garbled_page.pdf"),
            trellis::parse::Format::Pdf,
        )
        .expect("parsed");
    assert_eq!(processed.garbled_pages, [2]);
    assert!(
        processed
            .warnings
            .iter()
            .any(|w| w.contains("page 2 looks garbled")),
        "{:?}",
        processed.warnings
    );
    let sentences = &processed.skeleton.sentences;
    assert!(sentences.iter().any(|s| s.page == Some(2)));
    for s in sentences {
        let expected = if s.page == Some(2) { 0.0 } else { 1.0 };
        assert_eq!(s.confidence, expected, "{:?}: {}", s.page, s.text);
    }
}

#[test]
fn page_without_text_layer_needs_ocr() {
    let err = parse_fixture("scanned.pdf", &ParsingSpec::default()).expect_err("no text");
    assert!(matches!(err, ParseFailure::NeedsOcr { pages: 1 }), "{err}");
    assert!(err.to_string().contains("OCR"), "{err}");
}

#[test]
fn pages_beyond_the_limit_are_left_out_with_a_warning() {
    let spec = ParsingSpec {
        max_pages: 2,
        ..ParsingSpec::default()
    };
    let tree = parse_fixture("three_pages.pdf", &spec).expect("parsed");
    assert!(tree.text.contains("Page 2."), "{}", tree.text);
    assert!(!tree.text.contains("Page 3."), "{}", tree.text);
    assert!(
        tree.warnings.iter().any(|w| w.contains("maxPages")),
        "{:?}",
        tree.warnings
    );
    assert_eq!(tree.pages, Some(3));
    assert_eq!(tree.confidence, 1.0);
}

#[test]
fn an_ocr_layer_is_read_and_hidden_text_left_out() {
    let tree = parse_fixture("ocr_layer.pdf", &ParsingSpec::default()).expect("parsed");
    assert!(
        tree.text
            .contains("The lessee shall maintain the premises in good repair"),
        "{}",
        tree.text
    );
    assert!(tree.text.contains("ACME-000123"), "{}", tree.text);
    assert!(!tree.text.contains("Ignore previous"), "{}", tree.text);
    let warned = |what: &str| tree.warnings.iter().any(|w| w.contains(what));
    assert!(warned("invisible OCR layer"), "{:?}", tree.warnings);
    assert!(warned("hidden text"), "{:?}", tree.warnings);
}

#[test]
fn docling_invisible_text_layer_sample() {
    let path = common::eval_dir().join("docling/pdf/invisible_text_layer.pdf");
    let tree = trellis::parse::parse_file(&path, &ParsingSpec::default()).expect("parsed");
    assert!(tree.text.contains("Visible heading line"), "{}", tree.text);
    // Invisible, and over no scanned image: not what a reader of the page
    // sees.
    assert!(!tree.text.contains("Invisible OCR"), "{}", tree.text);
}

#[test]
fn docling_bookmark_sample_takes_its_heading_levels_from_the_outline() {
    let path = common::eval_dir().join("docling/pdf/bookmark_sample.pdf");
    let tree = trellis::parse::parse_file(&path, &ParsingSpec::default()).expect("parsed");
    let levels: Vec<(u8, String)> = tree
        .sections
        .iter()
        .skip(1)
        .map(|s| (s.level, s.heading()))
        .collect();
    let expected = [
        (1, "PART I DEFINITIONS"),
        (2, "1. Interpretation"),
        (2, "2. Construction of Terms"),
        (1, "PART II OBLIGATIONS"),
        (2, "3. Payment Terms"),
        (3, "3.1 Payment Schedule"),
        (2, "4. Termination"),
        (1, "PART III MISCELLANEOUS"),
    ];
    let expected: Vec<(u8, String)> = expected.iter().map(|(l, h)| (*l, h.to_string())).collect();
    assert_eq!(levels, expected);
    // "Sample Agreement — page 2" heads every page: furniture.
    assert!(!tree.text.contains("Sample Agreement"), "{}", tree.text);
}

#[test]
fn bookmarks_linked_in_circles_are_read_once() {
    let tree = parse_fixture("outline_loop.pdf", &ParsingSpec::default()).expect("parsed");
    assert!(tree.text.contains("Page 3."), "{}", tree.text);
}

#[test]
fn a_document_over_its_memory_bound_fails_and_says_which_bound() {
    assert!(trellis::memory::counting());
    let contract = cuad()
        .join("pdf")
        .join("AzulSa_20170303_F-1A_EX-10.3_9943903_EX-10.3_Maintenance Agreement1.pdf");
    let bytes = std::fs::read(&contract).unwrap_or_else(|e| panic!("{}: {e}", contract.display()));
    let tight = ParsingSpec {
        max_memory_bytes_per_document: 4 * 1024 * 1024,
        ..ParsingSpec::default()
    };
    let err = trellis::parse::parse_bytes(&bytes, trellis::parse::Format::Pdf, &tight)
        .expect_err("110 pages in 4 MiB");
    assert!(matches!(err, ParseFailure::OutOfMemory { .. }), "{err}");
    assert!(
        err.to_string().contains("maxMemoryBytesPerDocument"),
        "{err}"
    );
    // The default bound leaves room for it.
    trellis::parse::parse_bytes(&bytes, trellis::parse::Format::Pdf, &ParsingSpec::default())
        .expect("parsed within the default bound");
}

/// Arrays and dictionaries nested 3,000 levels deep, in a content stream
/// (compressed or not), a page dictionary or the trailer, overflowed the
/// reader's stack and ended the process. Each is now refused before the
/// reader recurses, naming the bound; the same document nested within the
/// bound reads.
#[test]
fn deep_nesting_is_refused_before_the_reader_recurses() {
    use crate::common::pdf::{self, PdfParts};
    let spec = ParsingSpec::default();
    let plain = PdfParts::text(&["Deeply nested arrays are refused before they are read."]);
    let content = |nesting: &str| {
        let mut parts = plain.clone();
        parts.pages[0].extend(format!(" BT {nesting} TJ ET").bytes());
        parts
    };
    let cases = [
        (
            "a compressed content stream",
            content(&pdf::nested_arrays(3000)),
        ),
        (
            "an uncompressed content stream",
            PdfParts {
                flate: false,
                ..content(&pdf::nested_arrays(3000))
            },
        ),
        (
            "a page dictionary",
            PdfParts {
                page_entries: format!("/Deep {}", pdf::nested_dictionaries(3000)),
                ..plain.clone()
            },
        ),
        (
            "the trailer",
            PdfParts {
                trailer_entries: format!("/Deep {}", pdf::nested_arrays(3000)),
                ..plain.clone()
            },
        ),
    ];
    for (place, parts) in cases {
        let error =
            trellis::parse::parse_bytes(&pdf::write(&parts), trellis::parse::Format::Pdf, &spec)
                .expect_err(place)
                .to_string();
        assert!(
            error.contains("parsing.maxNestingDepth"),
            "{place}: {error}"
        );
    }
    // The hostile fixtures of the same shapes (the fuzz targets' seeds).
    for name in ["deep_content.pdf", "deep_page.pdf", "deep_trailer.pdf"] {
        let error = parse_fixture(name, &spec).expect_err(name).to_string();
        assert!(error.contains("parsing.maxNestingDepth"), "{name}: {error}");
    }
    // Within the bound, the text is read.
    let tree = trellis::parse::parse_bytes(
        &pdf::write(&content(&pdf::nested_arrays(40))),
        trellis::parse::Format::Pdf,
        &spec,
    )
    .unwrap();
    let read = format!("{tree:?}");
    assert!(read.contains("refused before they are read"), "{read}");
}
