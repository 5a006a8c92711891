//! The local embedder against sentence-transformers: the vectors in
//! `tests/fixtures/embeddings/` were made by `scripts/make_reference_vectors.py`
//! (PyTorch) from the same model directory, which `scripts/fetch-model.sh`
//! provides.

use std::path::PathBuf;

use trellis::embed::{self, Embedder, LocalEmbedder};
use trellis::spec::EmbeddingSpec;

#[derive(serde::Deserialize)]
struct Reference {
    texts: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

fn reference() -> Reference {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/embeddings/all-MiniLM-L6-v2.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn embedder() -> LocalEmbedder {
    let spec = EmbeddingSpec::default();
    let dir = embed::resolve_model_dir(&spec, None)
        .unwrap_or_else(|e| panic!("{e}; run scripts/fetch-model.sh first"));
    LocalEmbedder::load(&dir, &spec).unwrap()
}

#[test]
fn vectors_agree_with_sentence_transformers() {
    let reference = reference();
    let embedder = embedder();
    assert_eq!(embedder.dimensions(), 384);
    let texts: Vec<&str> = reference.texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed_documents(&texts).unwrap();
    let mut worst = f32::INFINITY;
    for ((text, ours), theirs) in texts.iter().zip(&vectors).zip(&reference.vectors) {
        let cosine = embed::dot(ours, theirs);
        println!("{cosine:.6}  {}", text.chars().take(60).collect::<String>());
        worst = worst.min(cosine);
    }
    println!("lowest cosine: {worst:.6}");
    assert!(worst >= 0.999, "lowest cosine {worst} < 0.999");
}

#[test]
fn batching_does_not_change_vectors() {
    let reference = reference();
    let embedder = embedder();
    let texts: Vec<&str> = reference.texts.iter().map(String::as_str).collect();
    let together = embedder.embed_documents(&texts).unwrap();
    for (text, v) in texts.iter().zip(&together) {
        let alone = embedder.embed_query(text).unwrap();
        assert!(embed::dot(&alone, v) > 0.99999, "{text}");
    }
}

#[test]
fn vectors_are_unit_length_and_deterministic() {
    let embedder = embedder();
    let texts = ["Payment is due in 30 days.", "", "The quick brown fox."];
    let a = embedder.embed_documents(&texts).unwrap();
    let b = embedder.embed_documents(&texts).unwrap();
    assert_eq!(a, b);
    for v in &a {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
    }
}

#[test]
fn a_directory_without_a_model_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let spec = EmbeddingSpec {
        path: Some(dir.path().display().to_string()),
        ..EmbeddingSpec::default()
    };
    let err = embed::resolve_model_dir(&spec, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("config.json"), "{err}");
    std::fs::write(dir.path().join("config.json"), "{\"hidden_size\": 8}").unwrap();
    let err = LocalEmbedder::load(dir.path(), &spec)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("config.json"), "{err}");
}
