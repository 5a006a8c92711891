//! Sentence boundaries: the English "Golden Rules" cases, and the project's
//! own cases for the boundary classes the segmenter handles in general
//! (`tests/fixtures/sentences/boundary_classes.json`, built from real text:
//! CUAD contracts, SQuAD articles, public-domain novels). Both are scored by
//! exact match of the sentence list per case.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;

use serde::Deserialize;
use trellis::segment::Segmenter;

#[derive(Deserialize)]
struct Case {
    /// The boundary class a case exercises (the project's own cases).
    #[serde(default)]
    class: String,
    text: String,
    sentences: Vec<String>,
}

fn read_cases(path: &Path) -> Vec<Case> {
    let json =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let cases: Vec<Case> =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    assert!(!cases.is_empty(), "{} holds no cases", path.display());
    cases
}

/// Whether the segmenter splits `case` exactly as expected; prints a miss.
fn passes(segmenter: &Segmenter, index: usize, case: &Case) -> bool {
    let got: Vec<&str> = segmenter
        .split(&case.text)
        .into_iter()
        .map(|range| &case.text[range])
        .collect();
    let ok = got == case.sentences;
    if !ok {
        println!(
            "case {index} ({}) failed\n  text:     {:?}\n  expected: {:?}\n  got:      {:?}",
            case.class, case.text, case.sentences, got
        );
    }
    ok
}

/// Every Golden Rules case passes, as the README's figure says (48/48): a
/// miss is a regression to mend, not a share to stay above.
#[test]
fn golden_rules_accuracy() {
    let cases = read_cases(&common::eval_dir().join("sentences/golden_rules_en.json"));
    let segmenter = Segmenter::default();
    let passed = cases
        .iter()
        .enumerate()
        .filter(|(index, case)| passes(&segmenter, *index, case))
        .count();
    let accuracy = passed as f64 / cases.len() as f64;
    println!("golden rules: {passed}/{} = {accuracy:.3}", cases.len());
    assert_eq!(
        passed,
        cases.len(),
        "golden rules: {passed}/{} (the misses are printed above)",
        cases.len()
    );
}

/// Every case of every class passes: these are the project's own rules, so
/// a miss is a regression, not noise.
#[test]
fn boundary_classes() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sentences/boundary_classes.json");
    let cases = read_cases(&path);
    let segmenter = Segmenter::default();
    let mut by_class: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (index, case) in cases.iter().enumerate() {
        let entry = by_class.entry(case.class.as_str()).or_default();
        entry.1 += 1;
        if passes(&segmenter, index, case) {
            entry.0 += 1;
        }
    }
    for (class, (passed, total)) in &by_class {
        println!("{class}: {passed}/{total}");
    }
    let failed: Vec<_> = by_class
        .iter()
        .filter(|(_, (passed, total))| passed < total)
        .map(|(class, _)| *class)
        .collect();
    assert!(
        failed.is_empty(),
        "boundary classes with misses: {failed:?}"
    );
}
