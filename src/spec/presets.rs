//! What a known embedding model needs besides its weights: how its token
//! states are pooled, how long an input it was trained on, and the
//! instruction its queries and passages carry.
//!
//! These settings are part of how the model was trained, and a model run
//! without them works, quietly, worse: bge's retrieval queries carry an
//! instruction, e5's queries and passages a `query: ` / `passage: `
//! prefix. Sentence-transformers directories carry the pooling
//! (`1_Pooling/`) and length (`sentence_bert_config.json`) but not the
//! prefixes, and ONNX exports carry none of them, so the model's name
//! brings them. Precedence, field by field: the profile's explicit field,
//! then the model directory's own files, then the preset, then the plain
//! default (mean pooling, 512 tokens, no prefix).

use super::{EmbeddingPooling, EmbeddingSpec};

/// A known model's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// The model's name as published, without its organisation.
    pub name: &'static str,
    pub pooling: EmbeddingPooling,
    /// The input length it was trained on, special tokens included.
    pub max_seq_length: u32,
    pub query_prefix: &'static str,
    pub document_prefix: &'static str,
}

/// bge v1.5's retrieval instruction, put before queries (never passages).
const BGE_QUERY: &str = "Represent this sentence for searching relevant passages: ";

const fn preset(
    name: &'static str,
    pooling: EmbeddingPooling,
    max_seq_length: u32,
    query_prefix: &'static str,
    document_prefix: &'static str,
) -> Preset {
    Preset {
        name,
        pooling,
        max_seq_length,
        query_prefix,
        document_prefix,
    }
}

use EmbeddingPooling::{Cls, Mean};

/// The models Trellis knows, from their model cards.
pub const PRESETS: &[Preset] = &[
    preset("all-MiniLM-L6-v2", Mean, 256, "", ""),
    preset("bge-small-en-v1.5", Cls, 512, BGE_QUERY, ""),
    preset("bge-base-en-v1.5", Cls, 512, BGE_QUERY, ""),
    preset("bge-large-en-v1.5", Cls, 512, BGE_QUERY, ""),
    preset("e5-small-v2", Mean, 512, "query: ", "passage: "),
    preset("e5-base-v2", Mean, 512, "query: ", "passage: "),
    preset("e5-large-v2", Mean, 512, "query: ", "passage: "),
    preset("multilingual-e5-small", Mean, 512, "query: ", "passage: "),
    preset("multilingual-e5-base", Mean, 512, "query: ", "passage: "),
    preset("multilingual-e5-large", Mean, 512, "query: ", "passage: "),
    preset("gte-small", Mean, 512, "", ""),
    preset("gte-base", Mean, 512, "", ""),
    preset("gte-large", Mean, 512, "", ""),
];

impl Preset {
    /// The preset of `model`, matched on its last path part without case
    /// (`BAAI/bge-small-en-v1.5`, `Xenova/bge-small-en-v1.5` and
    /// `bge-small-en-v1.5` are one model).
    pub fn for_model(model: &str) -> Option<&'static Preset> {
        let name = model.rsplit('/').next().unwrap_or(model);
        PRESETS.iter().find(|p| p.name.eq_ignore_ascii_case(name))
    }
}

/// The prefixes a profile's model is run with: the explicit fields, else
/// the preset's ([`EmbeddingSpec::prefixes`]).
pub(super) fn prefixes(spec: &EmbeddingSpec) -> (String, String) {
    let preset = Preset::for_model(&spec.model);
    let query = spec
        .query_prefix
        .clone()
        .unwrap_or_else(|| preset.map_or("", |p| p.query_prefix).to_string());
    let document = spec
        .document_prefix
        .clone()
        .unwrap_or_else(|| preset.map_or("", |p| p.document_prefix).to_string());
    (query, document)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(model: &str) -> EmbeddingSpec {
        EmbeddingSpec {
            model: model.into(),
            ..EmbeddingSpec::default()
        }
    }

    #[test]
    fn presets_match_by_name_without_organisation_or_case() {
        let bge = Preset::for_model("BAAI/bge-small-en-v1.5").unwrap();
        assert_eq!(bge.pooling, EmbeddingPooling::Cls);
        assert_eq!(Preset::for_model("Xenova/BGE-Small-EN-v1.5"), Some(bge));
        assert!(Preset::for_model("my-own-model").is_none());
    }

    #[test]
    fn an_explicit_prefix_wins_even_when_empty() {
        let (query, document) = prefixes(&spec("bge-small-en-v1.5"));
        assert_eq!(query, BGE_QUERY);
        assert_eq!(document, "");
        let (query, document) = prefixes(&spec("intfloat/e5-base-v2"));
        assert_eq!(
            (query.as_str(), document.as_str()),
            ("query: ", "passage: ")
        );
        let mut explicit = spec("bge-small-en-v1.5");
        explicit.query_prefix = Some(String::new());
        assert_eq!(prefixes(&explicit).0, "");
        let mut unknown = spec("my-own-model");
        unknown.document_prefix = Some("doc: ".into());
        assert_eq!(prefixes(&unknown), (String::new(), "doc: ".to_string()));
    }

    /// A profile is hashed and recorded by its JSON: it carries the
    /// prefixes in effect, so turning a preset's prefix off changes it,
    /// and reading it back runs the model the same way.
    #[test]
    fn the_json_says_which_prefixes_take_effect() {
        let implicit = spec("bge-small-en-v1.5");
        let json = serde_json::to_value(&implicit).unwrap();
        assert_eq!(json["queryPrefix"], BGE_QUERY);
        let back: EmbeddingSpec = serde_json::from_value(json).unwrap();
        assert_eq!(back.prefixes(), implicit.prefixes());

        let mut off = spec("bge-small-en-v1.5");
        off.query_prefix = Some(String::new());
        let json = serde_json::to_value(&off).unwrap();
        assert_eq!(json["queryPrefix"], "");
        let back: EmbeddingSpec = serde_json::from_value(json).unwrap();
        assert_eq!(back.prefixes().0, "");

        // Absent from a manifest: unset, so the preset applies.
        let read: EmbeddingSpec =
            serde_json::from_str(r#"{"model": "e5-base-v2", "pooling": "mean"}"#).unwrap();
        assert_eq!(read.query_prefix, None);
        assert_eq!(read.pooling, Some(EmbeddingPooling::Mean));
        assert_eq!(read.prefixes().1, "passage: ");
    }

    #[test]
    fn preset_names_are_unique() {
        for (i, a) in PRESETS.iter().enumerate() {
            assert!(
                PRESETS[i + 1..]
                    .iter()
                    .all(|b| !b.name.eq_ignore_ascii_case(a.name)),
                "{}",
                a.name
            );
        }
    }
}
