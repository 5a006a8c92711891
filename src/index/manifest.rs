//! What a version's `manifest.json` records.

use serde::{Deserialize, Serialize};

use super::links::LinkReport;

/// A document and what the ingest says of it: why it could not be indexed
/// ([`VersionManifest::failed`]) or why its text is in doubt
/// ([`VersionManifest::flagged`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DocumentNote {
    pub key: String,
    pub reason: String,
}

/// Counts recorded in the manifest and reported by every ingest.
#[derive(Clone, Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Counts {
    pub documents: usize,
    pub failed_documents: usize,
    /// Indexed documents whose text is in doubt (see
    /// [`VersionManifest::flagged`]).
    #[serde(default)]
    pub flagged_documents: usize,
    /// Pages the indexed documents promise that could not be read (a
    /// truncated or damaged PDF); each such document is flagged.
    #[serde(default)]
    pub lost_pages: usize,
    pub sections: usize,
    pub paragraphs: usize,
    pub sentences: usize,
    pub indexed_sentences: usize,
    pub chunks: usize,
    pub related_edges: usize,
    /// Tables found (one per table, however many pages it runs over).
    #[serde(default)]
    pub tables: usize,
    /// Tables that nearly repeat an earlier one of their document: kept
    /// for display, their rows left out of the index.
    #[serde(default)]
    pub duplicate_tables: usize,
}

/// Seconds spent per stage.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Timings {
    pub parse: f64,
    pub embed: f64,
    pub bm25: f64,
    pub hnsw: f64,
    pub links: f64,
    pub total: f64,
}

/// `manifest.json` of a version.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VersionManifest {
    pub format_version: u32,
    pub corpus: String,
    pub version: String,
    /// Hash of the profile spec alone.
    pub profile_hash: String,
    pub model_id: String,
    pub dims: usize,
    pub counts: Counts,
    /// How the `RELATED_TO` edges were made: at which threshold, against
    /// which budget, with what warnings. Absent from versions written
    /// before it was recorded.
    #[serde(default)]
    pub links: LinkReport,
    pub embedded_sentences: usize,
    pub cached_sentences: usize,
    /// Heading paths embedded (not found in the cache) for `headings.f32`.
    #[serde(default)]
    pub embedded_headings: usize,
    /// Defined terms embedded (not found in the cache) for `terms.f32`.
    #[serde(default)]
    pub embedded_terms: usize,
    pub timings: Timings,
    pub failed: Vec<DocumentNote>,
    /// Documents indexed with pages whose text looks garbled: their
    /// sentences carry a low confidence (`scoring.confidenceFloor` drops
    /// them from results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged: Vec<DocumentNote>,
    /// What the sources said about their documents when this version was
    /// built (see [`crate::source::revision`]), with the profile and corpus specs:
    /// an ingest that finds the same again reuses the version without
    /// reading a document. `None` when a source could not tell.
    #[serde(default)]
    pub source_revision: Option<String>,
    /// Seconds since the Unix epoch when the build finished.
    pub created: u64,
    /// The version has `checksums.json` ([`super::checksums`]); false for
    /// versions built before checksums were written.
    #[serde(default)]
    pub checksummed: bool,
}
