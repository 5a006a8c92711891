//! ONNX exports on Trellis' own encoder, against onnxruntime: the small
//! random models of `tests/fixtures/onnx/` (exported with `torch.onnx` and
//! run through onnxruntime by `scripts/make_onnx_fixtures.py`), and
//! bge-small-en-v1.5 as `scripts/fetch-model.sh` puts it in the model cache
//! (its reference vectors made by the same script).

use std::path::{Path, PathBuf};

use trellis::embed::bert::{BertModel, Segment};
use trellis::embed::files::{ModelFiles, WeightsFormat};
use trellis::embed::{self, Embedder, LocalEmbedder};
use trellis::spec::{EmbeddingPooling, EmbeddingSpec};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/onnx")
        .join(name)
}

#[derive(serde::Deserialize)]
struct Reference {
    max_length: u32,
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    text: String,
    input_ids: Vec<u32>,
    last_hidden_state: Vec<Vec<f32>>,
}

fn reference() -> Reference {
    let text = std::fs::read_to_string(fixture("bert-embedder/reference.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn max_abs_diff<'a>(ours: &[f32], theirs: impl IntoIterator<Item = &'a f32>) -> f32 {
    ours.iter()
        .zip(theirs)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max)
}

#[test]
fn an_onnx_export_runs_as_onnxruntime_runs_it() {
    let files = ModelFiles::locate(&fixture("bert-embedder")).unwrap();
    assert_eq!(files.format, WeightsFormat::Onnx);
    assert!(files.weights.ends_with("onnx/model.onnx"));
    let model = BertModel::load(&files).unwrap();
    let reference = reference();
    let hidden = model.hidden_size();
    // Each text alone, then all packed into one pass.
    let mut worst = 0f32;
    let mut ids = Vec::new();
    let mut segments = Vec::new();
    for case in &reference.cases {
        let states = model.forward(
            &case.input_ids,
            &[Segment {
                offset: 0,
                len: case.input_ids.len(),
            }],
        );
        worst = worst.max(max_abs_diff(
            &states,
            case.last_hidden_state.iter().flatten(),
        ));
        segments.push(Segment {
            offset: ids.len(),
            len: case.input_ids.len(),
        });
        ids.extend_from_slice(&case.input_ids);
    }
    let packed = model.forward(&ids, &segments);
    for (case, segment) in reference.cases.iter().zip(&segments) {
        let states = &packed[segment.offset * hidden..(segment.offset + segment.len) * hidden];
        worst = worst.max(max_abs_diff(
            states,
            case.last_hidden_state.iter().flatten(),
        ));
    }
    eprintln!("max abs diff against onnxruntime: {worst:e}");
    assert!(worst <= 1e-4, "max abs diff {worst}");
}

#[test]
fn the_onnx_file_itself_is_an_embedding_model_with_the_pooling_asked_for() {
    let reference = reference();
    let spec = EmbeddingSpec {
        model: "fixture".into(),
        path: Some(
            fixture("bert-embedder/onnx/model.onnx")
                .display()
                .to_string(),
        ),
        pooling: Some(EmbeddingPooling::Cls),
        max_seq_length: Some(reference.max_length),
        ..EmbeddingSpec::default()
    };
    let path = embed::resolve_model_dir(&spec, None).unwrap();
    let embedder = LocalEmbedder::load(&path, &spec).unwrap();
    let texts: Vec<&str> = reference.cases.iter().map(|c| c.text.as_str()).collect();
    let vectors = embedder.embed_documents(&texts).unwrap();
    for (case, vector) in reference.cases.iter().zip(&vectors) {
        let mut cls = case.last_hidden_state[0].clone();
        trellis::vector::normalize(&mut cls);
        let diff = max_abs_diff(vector, &cls);
        assert!(diff <= 1e-4, "{:?}: max abs diff {diff}", case.text);
    }
    assert!(embedder.model_id().starts_with("fixture@"));
}

#[test]
fn a_quantized_export_is_refused_naming_its_node() {
    let files = ModelFiles::locate(&fixture("bert-embedder-quantized")).unwrap();
    let err = BertModel::load(&files).err().unwrap().to_string();
    assert!(err.contains("onnx/model.onnx"), "{err}");
    assert!(err.contains("node /"), "{err}");
    assert!(
        err.contains("(DequantizeLinear)") || err.contains("(MatMulInteger)"),
        "{err}"
    );
    assert!(err.contains("quantized export"), "{err}");
}

#[test]
fn broken_or_missing_weights_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixture("bert-embedder");
    std::fs::copy(source.join("config.json"), dir.path().join("config.json")).unwrap();
    let err = ModelFiles::locate(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("model.safetensors") && err.contains("onnx/model.onnx"),
        "{err}"
    );

    // A cut file: the protobuf ends inside a tensor.
    let bytes = std::fs::read(source.join("onnx/model.onnx")).unwrap();
    std::fs::write(dir.path().join("model.onnx"), &bytes[..bytes.len() / 2]).unwrap();
    let files = ModelFiles::locate(dir.path()).unwrap();
    let err = BertModel::load(&files).err().unwrap().to_string();
    assert!(
        err.contains("model.onnx") && err.contains("not an ONNX model"),
        "{err}"
    );

    // Another architecture's config over these weights: the shapes
    // disagree and the tensor is named.
    std::fs::write(dir.path().join("model.onnx"), &bytes).unwrap();
    let config = std::fs::read_to_string(source.join("config.json"))
        .unwrap()
        .replace("\"intermediate_size\": 64", "\"intermediate_size\": 48");
    std::fs::write(dir.path().join("config.json"), config).unwrap();
    let err = BertModel::load(&files).err().unwrap().to_string();
    assert!(err.contains("intermediate.dense"), "{err}");

    // A file that is not an ONNX export.
    let text = dir.path().join("weights.bin");
    std::fs::write(&text, b"not a model").unwrap();
    let err = ModelFiles::locate(&text).unwrap_err().to_string();
    assert!(err.contains(".onnx"), "{err}");
}

#[derive(serde::Deserialize)]
struct BgeReference {
    max_seq_length: u32,
    texts: Vec<String>,
    /// The `[CLS]` state onnxruntime computes, before normalisation.
    cls: Vec<Vec<f32>>,
}

/// bge-small-en-v1.5 from Maven Central (Xenova's export), loaded by its
/// name alone: the preset brings CLS pooling and 512 tokens, and every
/// text's `[CLS]` state matches onnxruntime's.
#[test]
fn bge_small_runs_as_onnxruntime_runs_it() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/embeddings/bge-small-en-v1.5-onnxruntime.json");
    let reference: BgeReference =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let spec = EmbeddingSpec {
        model: "bge-small-en-v1.5".into(),
        ..EmbeddingSpec::default()
    };
    let dir = embed::resolve_model_dir(&spec, None)
        .unwrap_or_else(|e| panic!("{e}; run scripts/fetch-model.sh bge-small-en-v1.5 first"));
    let files = ModelFiles::locate(&dir).unwrap();
    assert_eq!(files.format, WeightsFormat::Onnx);
    let embedder = LocalEmbedder::load(&dir, &spec).unwrap();
    assert_eq!(
        embedder.pooling(),
        trellis::embed::local::Pooling::Cls,
        "the preset's pooling"
    );
    let texts: Vec<&str> = reference.texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed_documents(&texts).unwrap();
    let mut worst = 0f32;
    for (vector, cls) in vectors.iter().zip(&reference.cls) {
        let mut expected = cls.clone();
        trellis::vector::normalize(&mut expected);
        worst = worst.max(max_abs_diff(vector, &expected));
    }
    eprintln!("bge-small: max abs diff of normalised vectors {worst:e}");
    assert!(worst <= 1e-4, "max abs diff {worst}");
    assert_eq!(reference.max_seq_length, 512);

    // The raw states too, through the encoder alone.
    let model = BertModel::load(&files).unwrap();
    let tokenizer = tokenizers::Tokenizer::from_file(files.dir.join("tokenizer.json")).unwrap();
    let mut raw = 0f32;
    for (text, cls) in texts.iter().zip(&reference.cls).take(5) {
        let ids = tokenizer.encode(*text, true).unwrap().get_ids().to_vec();
        let states = model.forward(
            &ids,
            &[Segment {
                offset: 0,
                len: ids.len(),
            }],
        );
        raw = raw.max(max_abs_diff(&states[..cls.len()], cls));
    }
    eprintln!("bge-small: max abs diff of [CLS] states {raw:e}");
    assert!(raw <= 1e-4, "max abs diff {raw}");

    // int8 works for the preset as for MiniLM: within a cosine of 0.99.
    let int8 = EmbeddingSpec {
        quantization: trellis::spec::Quantization::Int8,
        ..spec
    };
    let quantized = LocalEmbedder::load(&dir, &int8).unwrap();
    assert!(quantized.model_id().ends_with("+int8"));
    let vectors = quantized.embed_documents(&texts).unwrap();
    let lowest = vectors
        .iter()
        .zip(&reference.cls)
        .map(|(vector, cls)| {
            let mut expected = cls.clone();
            trellis::vector::normalize(&mut expected);
            trellis::vector::dot(vector, &expected)
        })
        .fold(f32::INFINITY, f32::min);
    eprintln!("bge-small int8: lowest cosine {lowest}");
    assert!(lowest >= 0.99, "lowest cosine {lowest}");
}
