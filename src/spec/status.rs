//! What the operator reports on each resource (`status`, never written by
//! users): phase, conditions in the Kubernetes convention, and the index
//! versions built and served.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One aspect of a resource's state, in the Kubernetes convention
/// (`type`, `status` "True"/"False"/"Unknown", a CamelCase `reason`, a
/// message for people).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Ready`, `Ingesting`, `Degraded`, `Valid`, `Available`,
    /// `Progressing` or `Paused`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Why, in one CamelCase word.
    #[serde(default)]
    pub reason: String,
    /// Why, for people.
    #[serde(default)]
    pub message: String,
    /// When `status` last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// The `metadata.generation` this condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// What the operator reports on an `IndexProfile`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IndexProfileStatus {
    /// The canonical hash of the spec: part of every index version key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// `Valid`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// One index version of a corpus and what it holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IndexVersionStatus {
    /// The version (hash of profile, sources and contents); empty while it
    /// is being built.
    #[serde(default)]
    pub version: String,
    /// The hash of the inputs it was built from: profile spec, corpus
    /// sources, the `trellis.dev/reingest` value and the refresh tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<String>,
    /// The canonical hash of the IndexProfile spec it was built with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_hash: Option<String>,
    /// The [`served_hash`](super::IndexProfileSpec::served_hash) of the
    /// profile as the version records it, computed by the operator from
    /// the profile it rendered: its retrieval pods refuse a version whose
    /// `profile.json` says otherwise. Unset for versions an earlier
    /// release accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_profile: Option<String>,
    /// The on-disk format it was written in; unset when an earlier
    /// release, which did not report it, built it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<u32>,
    /// The Secrets its profile reads (embedding API key, graph store
    /// password): the route's pods mount them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// The graph store holding the version completely, as its profile
    /// names it: where the pods of a route with `anchors.source: graph`
    /// read it from. Unset when the version was built with the embedded
    /// store, or its export failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<super::GraphSpec>,
    /// The ingest Job building it (pending versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// The hash of the Corpus' `spec.ingest` that Job runs with (pending
    /// versions): a failed ingest is tried again when it changes (more
    /// memory after an OOMKill), though the inputs did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingest_spec: Option<String>,
    #[serde(default)]
    pub documents: u64,
    #[serde(default)]
    pub failed_documents: u64,
    /// Documents indexed with pages whose text looks garbled (a font
    /// without a usable Unicode mapping): their sentences carry a low
    /// confidence.
    #[serde(default)]
    pub flagged_documents: u64,
    /// Pages of indexed documents that could not be read (a truncated or
    /// damaged PDF): their text is not in the index.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost_pages: u64,
    #[serde(default)]
    pub sentences: u64,
    #[serde(default)]
    pub chunks: u64,
    /// `RELATED_TO` edges.
    #[serde(default)]
    pub edges: u64,
    /// Entries of the sources' directories not read: symbolic links (not
    /// followed) and files of types Trellis does not read.
    #[serde(default)]
    pub skipped_entries: u64,
    /// Documents that failed, with reasons (the first few).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// Documents flagged, with reasons (the first few).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged: Vec<String>,
    /// Why building this version failed (pending versions): it is not
    /// retried until the inputs change (a spec edit, a new
    /// `trellis.dev/reingest` value, the next refresh tick) or
    /// `spec.ingest` does, unless it found nothing to index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Attempts of these inputs that found nothing to index (pending
    /// versions). Each is followed by another after a backoff: a claim or
    /// bucket may fill without anything the inputs hash sees changing.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub empty_attempts: u64,
    /// When the next attempt starts (RFC 3339), after one that found
    /// nothing to index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<String>,
}

/// What a Corpus' data claim allows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageStatus {
    pub claim_name: String,
    /// The claim's access modes (the bound volume's, else those asked for).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub access_modes: Vec<String>,
    /// Where the pods of the claim run: `AnyNode` (ReadWriteMany, or not
    /// known), `OneNode` (ReadWriteOnce: every pod of the claim on the node
    /// it is attached to) or `OnePod` (ReadWriteOncePod: unsupported).
    pub placement: String,
}

/// What the operator reports on a `Corpus`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorpusStatus {
    /// `Pending`, `Ingesting`, `Ready`, `Degraded` (a version serves; the
    /// ingest of the current inputs failed) or `Failed` (the ingest failed
    /// and no version serves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The version routes serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_index: Option<IndexVersionStatus>,
    /// A version being built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_index: Option<IndexVersionStatus>,
    /// The data claim and where its pods may run (see `storage.claimName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageStatus>,
    /// `Ready`, `Ingesting`, `Degraded`, `Paused`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// What the operator reports on a `RetrievalRoute`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetrievalRouteStatus {
    /// The index version the route's pods serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_version: Option<String>,
    #[serde(default)]
    pub ready_replicas: i32,
    /// `Available`, `Progressing`, `Paused`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
