//! The English "Golden Rules" sentence-boundary cases: exact match of the
//! sentence list per case.

use crate::common;

use serde::Deserialize;
use trellis::segment::Segmenter;

/// Required share of cases whose sentence list matches exactly.
const MIN_ACCURACY: f64 = 0.95;

#[derive(Deserialize)]
struct Case {
    text: String,
    sentences: Vec<String>,
}

#[test]
fn golden_rules_accuracy() {
    let path = common::eval_dir().join("sentences/golden_rules_en.json");
    let json = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let cases: Vec<Case> =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    assert!(!cases.is_empty(), "{} holds no cases", path.display());

    let segmenter = Segmenter::default();
    let mut passed = 0;
    for (index, case) in cases.iter().enumerate() {
        let got: Vec<&str> = segmenter
            .split(&case.text)
            .into_iter()
            .map(|range| &case.text[range])
            .collect();
        if got == case.sentences {
            passed += 1;
        } else {
            println!(
                "case {index} failed\n  text:     {:?}\n  expected: {:?}\n  got:      {:?}",
                case.text, case.sentences, got
            );
        }
    }
    let accuracy = passed as f64 / cases.len() as f64;
    println!("golden rules: {passed}/{} = {accuracy:.3}", cases.len());
    assert!(
        accuracy >= MIN_ACCURACY,
        "golden-rules accuracy {accuracy:.3} is below {MIN_ACCURACY}"
    );
}
