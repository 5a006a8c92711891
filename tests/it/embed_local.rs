//! The local embedder against sentence-transformers: the vectors in
//! `tests/fixtures/embeddings/` were made by `scripts/make_reference_vectors.py`
//! (PyTorch) from the same model directory, which `scripts/fetch-model.sh`
//! provides.

use std::path::PathBuf;

use trellis::embed::{self, Embedder, LocalEmbedder, Passage};
use trellis::spec::{EmbeddingSpec, Quantization};

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
        let cosine = trellis::vector::dot(ours, theirs);
        println!("{cosine:.6}  {}", text.chars().take(60).collect::<String>());
        worst = worst.min(cosine);
    }
    println!("lowest cosine: {worst:.6}");
    assert!(worst >= 0.999, "lowest cosine {worst} < 0.999");
}

/// The int8 encoder (`embedding.quantization: int8`) against the same
/// PyTorch vectors: dynamic quantization rounds every dense layer's
/// operands, so it agrees less closely than f32, but by a cosine of 0.99
/// on every text.
#[test]
fn int8_vectors_agree_with_sentence_transformers() {
    let reference = reference();
    let spec = EmbeddingSpec {
        quantization: Quantization::Int8,
        ..EmbeddingSpec::default()
    };
    let dir = embed::resolve_model_dir(&spec, None).unwrap();
    let embedder = LocalEmbedder::load(&dir, &spec).unwrap();
    assert!(
        embedder.model_id().ends_with("+int8"),
        "{}",
        embedder.model_id()
    );
    assert_ne!(embedder.model_id(), self::embedder().model_id());
    let texts: Vec<&str> = reference.texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed_documents(&texts).unwrap();
    let cosines: Vec<f32> = vectors
        .iter()
        .zip(&reference.vectors)
        .map(|(ours, theirs)| trellis::vector::dot(ours, theirs))
        .collect();
    let worst = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
    println!("int8: lowest cosine {worst:.6}, mean {mean:.6}");
    assert!(worst >= 0.99, "lowest cosine {worst} < 0.99");
    // A query alone goes through the few-token path: the same codes.
    for (text, v) in texts.iter().zip(&vectors) {
        let alone = embedder.embed_query(text).unwrap();
        assert!(trellis::vector::dot(&alone, v) > 0.9999, "{text}");
    }
}

#[test]
fn batching_does_not_change_vectors() {
    let reference = reference();
    let embedder = embedder();
    let texts: Vec<&str> = reference.texts.iter().map(String::as_str).collect();
    let together = embedder.embed_documents(&texts).unwrap();
    for (text, v) in texts.iter().zip(&together) {
        let alone = embedder.embed_query(text).unwrap();
        assert!(trellis::vector::dot(&alone, v) > 0.99999, "{text}");
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
    assert!(
        err.contains("model.safetensors") && err.contains("fetch-model.sh"),
        "{err}"
    );
    std::fs::write(dir.path().join("model.safetensors"), b"").unwrap();
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

#[derive(serde::Deserialize)]
struct ContextReference {
    passages: Vec<ContextCase>,
}

#[derive(serde::Deserialize)]
struct ContextCase {
    text: String,
    spans: Vec<[usize; 2]>,
    vectors: Vec<Vec<f32>>,
}

fn passage(text: &str, spans: &[[usize; 2]]) -> Passage {
    Passage {
        text: text.to_string(),
        spans: spans.iter().map(|&[a, b]| a..b).collect(),
    }
}

/// Late chunking (`embedding.context`) against PyTorch: each sentence's
/// vector is the mean of its own tokens' states in the paragraph's
/// encoding (`scripts/make_context_reference.py`).
#[test]
fn sentences_in_context_agree_with_pytorch() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/embeddings/all-MiniLM-L6-v2-context.json");
    let reference: ContextReference =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let embedder = embedder();
    let passages: Vec<Passage> = reference
        .passages
        .iter()
        .map(|case| passage(&case.text, &case.spans))
        .collect();
    let ours = embedder.embed_in_context(&passages).unwrap();
    let mut worst = f32::INFINITY;
    for (case, ours) in reference.passages.iter().zip(&ours) {
        assert_eq!(ours.len(), case.spans.len());
        for (v, theirs) in ours.iter().zip(&case.vectors) {
            worst = worst.min(trellis::vector::dot(v, theirs));
        }
    }
    println!("lowest cosine in context: {worst:.6}");
    assert!(worst >= 0.9999, "lowest cosine {worst}");

    // A passage of one sentence embeds as the sentence alone; a sentence
    // among others does not.
    let one = &reference.passages[2];
    let alone = embedder.embed_documents(&[one.text.as_str()]).unwrap();
    assert!(trellis::vector::dot(&alone[0], &ours[2][0]) > 0.99999);
    let first = &reference.passages[0];
    let sentence = &first.text[first.spans[0][0]..first.spans[0][1]];
    let alone = embedder.embed_documents(&[sentence]).unwrap();
    let cosine = trellis::vector::dot(&alone[0], &ours[0][0]);
    assert!(cosine < 0.999 && cosine > 0.5, "{cosine}");
}

/// A passage longer than the model reads is encoded in overlapping
/// windows: every sentence gets a unit vector, and one far from the
/// passage's start still reads its own neighbours.
#[test]
fn long_passages_are_embedded_in_windows() {
    let embedder = embedder();
    let sentences: Vec<String> = (0..60)
        .map(|i| format!("Clause {i} requires the supplier to deliver batch number {i} on time."))
        .collect();
    let mut text = String::new();
    let mut spans = Vec::new();
    for s in &sentences {
        if !text.is_empty() {
            text.push(' ');
        }
        spans.push([text.len(), text.len() + s.len()]);
        text.push_str(s);
    }
    let long = passage(&text, &spans);
    let vectors = embedder
        .embed_in_context(std::slice::from_ref(&long))
        .unwrap();
    assert_eq!(vectors[0].len(), 60);
    for v in &vectors[0] {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }
    // The last sentence in its window is the last sentence with the ones
    // before it, not the passage's start.
    let tail = passage(
        &text[spans[50][0]..],
        &spans[50..]
            .iter()
            .map(|&[a, b]| [a - spans[50][0], b - spans[50][0]])
            .collect::<Vec<_>>(),
    );
    let tail_vectors = embedder.embed_in_context(&[tail]).unwrap();
    let agreement = trellis::vector::dot(&vectors[0][59], &tail_vectors[0][9]);
    assert!(agreement > 0.9, "{agreement}");
}

/// Only the local provider embeds in context; the others say so.
#[test]
fn embedding_in_context_needs_a_provider_that_can() {
    struct Alone;
    impl Embedder for Alone {
        fn model_id(&self) -> &str {
            "alone"
        }
        fn dimensions(&self) -> usize {
            1
        }
        fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, embed::EmbedError> {
            Ok(texts.iter().map(|_| vec![1.0]).collect())
        }
        fn embed_query(&self, _: &str) -> Result<Vec<f32>, embed::EmbedError> {
            Ok(vec![1.0])
        }
    }
    let error = Alone
        .embed_in_context(&[passage("One. Two.", &[[0, 4], [5, 9]])])
        .unwrap_err()
        .to_string();
    assert!(error.contains("embedding.context"), "{error}");
}

/// Everything that changes a vector keys the embedding cache: each
/// variation below of the default model and spec gets a cache id of its
/// own (and changes the vector of a long text, where a change of the
/// recipe shows), so no cached vector is ever reused for another recipe.
/// The context mode keys each cached span itself
/// (`embed::cache` `embed_in_context`).
#[test]
fn every_part_of_the_vector_recipe_keys_the_cache() {
    let spec = EmbeddingSpec::default();
    let model = embed::resolve_model_dir(&spec, None).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    // A copy of the model directory with `change` applied to it.
    let variant = |name: &str, change: &dyn Fn(&std::path::Path)| {
        let dir = scratch.path().join(name);
        std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
        for file in [
            "config.json",
            "sentence_bert_config.json",
            "tokenizer.json",
            "1_Pooling/config.json",
        ] {
            std::fs::copy(model.join(file), dir.join(file)).unwrap();
        }
        std::os::unix::fs::symlink(
            model.join("model.safetensors"),
            dir.join("model.safetensors"),
        )
        .unwrap();
        change(&dir);
        dir
    };
    let edit = |path: std::path::PathBuf, from: &str, to: &str| {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{} has no {from}", path.display());
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    };
    let same = variant("same", &|_| {});
    let with = |f: &dyn Fn(&mut EmbeddingSpec)| {
        let mut spec = EmbeddingSpec::default();
        f(&mut spec);
        spec
    };
    let cases: Vec<(&str, std::path::PathBuf, EmbeddingSpec)> = vec![
        ("default", same.clone(), spec.clone()),
        (
            "maxSeqLength",
            same.clone(),
            with(&|s| s.max_seq_length = Some(8)),
        ),
        (
            "documentPrefix",
            same.clone(),
            with(&|s| s.document_prefix = Some("passage: ".into())),
        ),
        (
            "quantization",
            same.clone(),
            with(&|s| s.quantization = Quantization::Int8),
        ),
        (
            "pooling",
            variant("pooling", &|dir| {
                edit(
                    dir.join("1_Pooling/config.json"),
                    "\"pooling_mode_cls_token\": false",
                    "\"pooling_mode_cls_token\": true",
                );
                edit(
                    dir.join("1_Pooling/config.json"),
                    "\"pooling_mode_mean_tokens\": true",
                    "\"pooling_mode_mean_tokens\": false",
                );
            }),
            spec.clone(),
        ),
        (
            "the directory's max_seq_length",
            variant("length", &|dir| {
                edit(dir.join("sentence_bert_config.json"), "256", "16")
            }),
            spec.clone(),
        ),
        (
            "tokenizer",
            variant("tokenizer", &|dir| {
                edit(
                    dir.join("tokenizer.json"),
                    "\"lowercase\":true",
                    "\"lowercase\":false",
                )
            }),
            spec.clone(),
        ),
        (
            "config",
            variant("config", &|dir| {
                edit(
                    dir.join("config.json"),
                    "\"hidden_act\": \"gelu\"",
                    "\"hidden_act\": \"relu\"",
                )
            }),
            spec.clone(),
        ),
        (
            "weights",
            variant("weights", &|dir| {
                let path = dir.join("model.safetensors");
                let mut bytes = std::fs::read(&path).unwrap();
                std::fs::remove_file(&path).unwrap();
                let last = bytes.len() - 1;
                bytes[last] ^= 0x40;
                std::fs::write(&path, bytes).unwrap();
            }),
            spec.clone(),
        ),
    ];
    let long = "The Supplier shall deliver the Goods to the Buyer's premises within \
                thirty days of the order, at its own cost, and shall bear the risk \
                of loss until delivery is complete.";
    let mut seen: Vec<(&str, String, String, Vec<f32>)> = Vec::new();
    for (name, dir, spec) in cases {
        let embedder = LocalEmbedder::load(&dir, &spec).unwrap_or_else(|e| panic!("{name}: {e}"));
        let vector = embedder.embed_documents(&[long]).unwrap().remove(0);
        let (id, query_id) = (embedder.cache_id(), embedder.query_cache_id());
        for (other, other_id, other_query_id, other_vector) in &seen {
            assert_ne!(&id, other_id, "{name} and {other} share a cache id");
            assert_ne!(
                &query_id, other_query_id,
                "{name} and {other} share a query cache id"
            );
            // Each variation does change the vector, so keying it is
            // needed (a flipped bit of the weights may fall in a part the
            // sentence vector does not use: its hash keys every byte).
            assert!(
                name == "weights" || trellis::vector::dot(&vector, other_vector) < 0.99999,
                "{name} makes {other}'s vector"
            );
        }
        seen.push((name, id, query_id, vector));
    }
    // The query side keys its own prefix.
    let default = LocalEmbedder::load(&same, &spec).unwrap();
    let prefixed =
        LocalEmbedder::load(&same, &with(&|s| s.query_prefix = Some("query: ".into()))).unwrap();
    assert_eq!(default.cache_id(), prefixed.cache_id());
    assert_ne!(default.query_cache_id(), prefixed.query_cache_id());
}
