//! The Kubernetes operator: reconcilers for `IndexProfile`, `Corpus` and
//! `RetrievalRoute`, and the objects they build.
//!
//! Every reconciler is split in two, in the shape of kube-rs'
//! controller-rs: a pure *plan* ([`ingest::plan_corpus`],
//! [`serving::plan_route`], [`profile::plan_profile`]) that turns the
//! resource and what was observed of the cluster into the objects to apply,
//! the status to write and the events to publish, and a thin async
//! [`controller`] that fetches, applies (server-side, field manager
//! [`FIELD_MANAGER`]) and patches status. The plans carry the logic and are
//! unit-tested without an API server; the controller is tested against a
//! mocked one.
//!
//! The flow: a profile or corpus change (or the `trellis.dev/reingest`
//! annotation, or a `refreshInterval` tick) gives the Corpus new *inputs*;
//! new inputs get an ingest Job (Indexed, one pod per shard, then a
//! finalize Job when sharded) that publishes an index version on the data
//! volume and writes its report into a ConfigMap; the report becomes the
//! Corpus' `activeIndex`; each route's Deployment then carries that version
//! in its pod template, so its pods roll to it, old ones serving until the
//! new ones are ready.

pub mod checked;
pub mod conditions;
pub mod controller;
pub mod ingest;
pub mod lease;
pub mod profile;
pub mod serving;
pub mod telemetry;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;

/// The field manager of every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = "trellis-operator";
/// `"true"` on a resource stops its reconciliation (condition `Paused`).
pub const PAUSED_ANNOTATION: &str = "trellis.dev/paused";
/// A new value on a Corpus forces a new ingest now.
pub const REINGEST_ANNOTATION: &str = "trellis.dev/reingest";
/// On pod templates: the index version the pods serve.
pub const INDEX_VERSION_ANNOTATION: &str = "trellis.dev/index-version";
/// On pod templates: the hash of the rendered route configuration.
pub const CONFIG_HASH_ANNOTATION: &str = "trellis.dev/config-hash";
/// Label naming the Corpus an object belongs to.
pub const CORPUS_LABEL: &str = "trellis.dev/corpus";
/// Label naming the RetrievalRoute an object belongs to.
pub const ROUTE_LABEL: &str = "trellis.dev/route";
/// Label of a ConfigMap that a `configMap` source reads (value `"true"`):
/// the operator watches these and re-ingests when one changes.
pub const SOURCE_LABEL: &str = "trellis.dev/source";

/// Label carrying the inputs hash of an ingest's objects.
pub const INPUTS_LABEL: &str = "trellis.dev/inputs";
/// Label carrying the content hash of an ingest's Jobs: ingests of the
/// same content differ only in what asked for them (a refresh tick, the
/// reingest annotation), so one still running is waited for, not deleted.
pub const CONTENT_LABEL: &str = "trellis.dev/content";

/// Where pods mount things. The image's binary reads these paths.
pub mod paths {
    /// The data volume (index versions, embedding cache).
    pub const DATA: &str = "/var/lib/trellis";
    /// Rendered manifests (a ConfigMap).
    pub const MANIFESTS: &str = "/etc/trellis/manifests";
    /// The route's bearer tokens (a Secret).
    pub const TOKENS: &str = "/etc/trellis/tokens";
    /// Source claims, one directory per claim name.
    pub const PVC_ROOT: &str = "/var/run/trellis/pvc";
    /// Source ConfigMaps, one directory per ConfigMap name.
    pub const CONFIG_MAP_ROOT: &str = "/var/run/trellis/configmaps";
    /// S3 sources' credential Secrets, one directory per Secret name.
    pub const SECRET_ROOT: &str = "/var/run/trellis/secrets";
    /// Scratch space under a read-only root filesystem.
    pub const TMP: &str = "/tmp";
}

/// How the operator was configured (flags of `trellis operator`, set by the
/// Helm chart).
#[derive(Clone, Debug)]
pub struct Settings {
    /// The image ingest and retrieval pods run (the operator's own).
    pub image: String,
    pub image_pull_policy: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            image: "ghcr.io/trellis-rag/trellis:0.1.0".into(),
            image_pull_policy: "IfNotPresent".into(),
        }
    }
}

/// Why a reconcile failed; the error policy requeues with a backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{kind} has no {field}")]
    MissingField {
        kind: &'static str,
        field: &'static str,
    },
    #[error("cannot render manifests: {0}")]
    Render(String),
}

impl Error {
    /// A short label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube",
            Error::MissingField { .. } => "missing_field",
            Error::Render(_) => "render",
        }
    }
}

/// The owner reference that makes `owner` the controller of an object, so
/// that deleting it deletes the object and the object's changes wake its
/// reconciler.
pub fn owner_reference<K: Resource<DynamicType = ()>>(owner: &K) -> Result<OwnerReference, Error> {
    owner.controller_owner_ref(&()).ok_or(Error::MissingField {
        kind: "owner",
        field: "metadata.uid",
    })
}

/// Labels every object of the operator carries.
pub fn common_labels(component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "trellis".to_string()),
        (
            "app.kubernetes.io/managed-by".to_string(),
            FIELD_MANAGER.to_string(),
        ),
        (
            "app.kubernetes.io/component".to_string(),
            component.to_string(),
        ),
    ])
}

/// Whether `trellis.dev/paused: "true"` is set.
pub fn is_paused(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(PAUSED_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// A Kubernetes object name from `base` and a `suffix`, within the 63
/// characters a name that also becomes a label value (Job names do) may
/// have: `base` is cut, never the suffix.
pub fn object_name(base: &str, suffix: &str) -> String {
    let room = 63usize.saturating_sub(suffix.len() + 1);
    let base: String = base.chars().take(room).collect();
    let base = base.trim_end_matches('-');
    format!("{base}-{suffix}")
}

/// A short stable hash of some JSON-serialisable value.
pub fn short_hash(parts: &[&[u8]]) -> String {
    let mut hasher = blake3::Hasher::new();
    for part in parts {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher.finalize().to_hex()[..10].to_string()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn names_fit_in_a_label_value() {
        let long = "a".repeat(80);
        let name = object_name(&long, "ingest-0123456789");
        assert_eq!(name.len(), 63);
        assert!(name.ends_with("-ingest-0123456789"));
        assert_eq!(object_name("docs", "ingest-1"), "docs-ingest-1");
    }

    #[test]
    fn hashes_separate_their_parts() {
        assert_ne!(short_hash(&[b"ab", b"c"]), short_hash(&[b"a", b"bc"]));
        assert_eq!(short_hash(&[b"x"]).len(), 10);
    }
}
