//! Every input kept from fuzzing (`tests/fixtures/fuzz/`), and every
//! hostile fixture (`tests/fixtures/bad/`), through its parser: a tree or a
//! `ParseFailure`, never a panic or a hang.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use trellis::parse::{Format, parse_bytes};
use trellis::spec::ParsingSpec;

fn files(dir: &str, extension: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case(extension))
                // libFuzzer names its finds crash-<sha1>, without extension.
                || p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("crash-") || n.starts_with("timeout-") || n.starts_with("oom-"))
        })
        .collect();
    files.sort();
    files
}

fn survive(format: Format, paths: &[PathBuf]) {
    let spec = ParsingSpec {
        max_seconds_per_document: 10,
        ..ParsingSpec::default()
    };
    for path in paths {
        let bytes = std::fs::read(path).unwrap();
        let started = Instant::now();
        let outcome = parse_bytes(&bytes, format, &spec);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{}: {:?}",
            path.display(),
            started.elapsed()
        );
        if let Err(e) = outcome {
            assert!(!e.to_string().is_empty(), "{}", path.display());
        }
    }
}

#[test]
fn pdf_inputs_kept_from_fuzzing_parse_or_fail_cleanly() {
    let mut paths = files("tests/fixtures/fuzz/pdf", "pdf");
    paths.extend(files("tests/fixtures/bad", "pdf"));
    assert!(!paths.is_empty());
    survive(Format::Pdf, &paths);
}

#[test]
fn docx_inputs_kept_from_fuzzing_parse_or_fail_cleanly() {
    let mut paths = files("tests/fixtures/fuzz/docx", "docx");
    paths.extend(files("tests/fixtures/bad", "docx"));
    assert!(!paths.is_empty());
    survive(Format::Docx, &paths);
}
