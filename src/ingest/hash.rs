//! What names a version: the hash of everything it is built from.
//!
//! A version's name is the hash of the on-disk format, the skeleton
//! revision, the profile spec, the corpus spec (without where versions are
//! kept and how ingest pods run) and every document's key, ACL and
//! content, so an unchanged corpus maps to the version already built.

use crate::index::FORMAT_VERSION;
use crate::source::{CorpusDocument, Fetched};
use crate::spec::{CorpusSpec, IndexProfileSpec};

/// Canonical hash of a profile spec ([`IndexProfileSpec::canonical_hash`]).
pub fn profile_hash(spec: &IndexProfileSpec) -> String {
    spec.canonical_hash()
}

/// The corpus and profile specs as they decide a version, without where
/// versions are kept and how ingest pods run.
fn indexed_corpus_spec(corpus: &CorpusSpec) -> Vec<u8> {
    let mut corpus = serde_json::to_value(corpus).unwrap_or_default();
    if let Some(fields) = corpus.as_object_mut() {
        fields.remove("storage");
        fields.remove("ingest");
    }
    serde_json::to_vec(&corpus).unwrap_or_default()
}

/// What an ingest compares with the current version's `source_revision`:
/// the specs and the sources' revision.
pub(super) fn inputs_revision(
    profile: &IndexProfileSpec,
    corpus: &CorpusSpec,
    sources: &str,
) -> String {
    let mut hasher = specs_hasher(profile, corpus);
    hasher.update(sources.as_bytes());
    short_hex(&hasher)
}

/// The name of the version built from `documents` as read (`contents`).
pub(super) fn version_hash(
    profile: &IndexProfileSpec,
    corpus: &CorpusSpec,
    documents: &[CorpusDocument],
    contents: &[Result<Fetched, String>],
) -> String {
    let mut hasher = specs_hasher(profile, corpus);
    for (doc, content) in documents.iter().zip(contents) {
        hasher.update(doc.key.as_bytes());
        hasher.update(&[0]);
        hasher.update(doc.acl.join(",").as_bytes());
        hasher.update(&[0]);
        match content {
            Ok(fetched) => hasher.update(blake3::hash(&fetched.bytes).as_bytes()),
            Err(e) => hasher.update(e.as_bytes()),
        };
    }
    short_hex(&hasher)
}

/// A hasher fed what every hash of an ingest's inputs starts with: the
/// on-disk format, the skeleton revision, the profile spec and the corpus
/// spec as it decides what is indexed (where versions are kept and how
/// ingest pods run do not).
fn specs_hasher(profile: &IndexProfileSpec, corpus: &CorpusSpec) -> blake3::Hasher {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&FORMAT_VERSION.to_le_bytes());
    hasher.update(&crate::pipeline::SKELETON_REVISION.to_le_bytes());
    hasher.update(&serde_json::to_vec(profile).unwrap_or_default());
    hasher.update(&indexed_corpus_spec(corpus));
    hasher
}

/// The first 16 hex digits of what `hasher` has been fed.
fn short_hex(hasher: &blake3::Hasher) -> String {
    hasher.finalize().to_hex()[..16].to_string()
}
