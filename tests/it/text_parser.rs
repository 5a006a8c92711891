//! The plain-text parser on real contracts: the 20 CUAD development
//! contracts (`../shared/eval/cuad/contracts/*.txt`, SEC exhibit text,
//! CC BY 4.0).
//!
//! Every contract must parse, yield headings and paragraphs, and lose no
//! text: every word of the source (lowercase letters and digits) must be
//! found in the canonical text or the extracted table of contents, apart
//! from what cleaning drops on purpose (page numbers and short lines
//! repeated through the document). Run with `--nocapture` to see each
//! contract's headings and word coverage.

use crate::common;

use std::collections::HashMap;
use std::path::PathBuf;

use trellis::parse::{BlockKind, DocumentTree, clean::is_page_number};
use trellis::spec::ParsingSpec;

/// Share of source words that must survive parsing, over all contracts.
const MIN_WORD_COVERAGE: f64 = 0.99;

fn contracts() -> Vec<PathBuf> {
    let dir = common::eval_dir().join("cuad").join("contracts");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    paths
}

/// Lowercase alphanumeric words.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

fn bag(text: &str) -> HashMap<String, usize> {
    let mut bag = HashMap::new();
    for word in words(text) {
        *bag.entry(word).or_default() += 1;
    }
    bag
}

/// The source's words, without those of lines that cleaning drops on
/// purpose: page numbers and short lines occurring three times or more
/// (looked for in lines and in the parts of flattened lines between runs
/// of three spaces, where filings keep their page footers).
fn expected_words(source: &str) -> HashMap<String, usize> {
    let parts: Vec<&str> = source
        .lines()
        .flat_map(|line| line.split("   "))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let mut repeats: HashMap<String, usize> = HashMap::new();
    for part in &parts {
        if part.chars().count() <= 100 {
            *repeats.entry(part.to_lowercase()).or_default() += 1;
        }
    }
    let mut expected = HashMap::new();
    for part in parts {
        let repeated = repeats.get(&part.to_lowercase()).is_some_and(|&n| n >= 3);
        if is_page_number(part) || repeated {
            continue;
        }
        for word in words(part) {
            *expected.entry(word).or_default() += 1;
        }
    }
    expected
}

/// The words a parse kept: the canonical text and the table of contents.
fn kept_words(tree: &DocumentTree) -> HashMap<String, usize> {
    let mut kept = bag(&tree.text);
    for entry in &tree.toc {
        for word in words(&entry.title) {
            *kept.entry(word).or_default() += 1;
        }
        if let Some(page) = entry.page {
            *kept.entry(page.to_string()).or_default() += 1;
        }
    }
    kept
}

#[test]
fn cuad_contracts_parse_without_losing_text() {
    let spec = ParsingSpec::default();
    let paths = contracts();
    assert_eq!(
        paths.len(),
        20,
        "expected the 20 CUAD development contracts"
    );
    let (mut expected_total, mut covered_total) = (0usize, 0usize);
    let mut failures = Vec::new();
    for path in &paths {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let short: String = name.chars().take(48).collect();
        let tree = match trellis::parse::parse_file(path, &spec) {
            Ok(tree) => tree,
            Err(e) => {
                failures.push(format!("{short}: {e}"));
                continue;
            }
        };
        let source = std::fs::read_to_string(path).expect("contracts are UTF-8");
        let expected = expected_words(&source);
        let kept = kept_words(&tree);
        let expected_count: usize = expected.values().sum();
        let covered: usize = expected
            .iter()
            .map(|(word, &n)| n.min(kept.get(word).copied().unwrap_or(0)))
            .sum();
        expected_total += expected_count;
        covered_total += covered;

        let headings = tree.sections.len() - 1;
        let paragraphs = tree
            .blocks()
            .filter(|(_, b)| matches!(b.kind, BlockKind::Paragraph { .. }))
            .count();
        let list_items = tree
            .blocks()
            .filter(|(_, b)| matches!(b.kind, BlockKind::ListItem { .. }))
            .count();
        let tables = tree
            .blocks()
            .filter(|(_, b)| matches!(b.kind, BlockKind::Table(_)))
            .count();
        println!(
            "{short:<48} headings {headings:>3} paragraphs {paragraphs:>4} list items {list_items:>3} \
             tables {tables:>2} toc {:>2} words {:.4}",
            tree.toc.len(),
            covered as f64 / expected_count.max(1) as f64
        );
        for section in tree.sections.iter().skip(1) {
            let indent = "  ".repeat(usize::from(section.level));
            let heading: String = section.heading().chars().take(70).collect();
            println!("    {indent}{heading}");
        }
        if headings == 0 {
            failures.push(format!("{short}: no headings"));
        }
        if paragraphs == 0 {
            failures.push(format!("{short}: no paragraphs"));
        }
    }
    let coverage = covered_total as f64 / expected_total.max(1) as f64;
    println!("CUAD text: {covered_total}/{expected_total} source words kept ({coverage:.4})");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(
        coverage >= MIN_WORD_COVERAGE,
        "word coverage {coverage:.4} < {MIN_WORD_COVERAGE}"
    );
}
