//! The Kubernetes operator: reconcilers for `IndexProfile`, `Corpus` and
//! `RetrievalRoute`, and the objects they build.
//!
//! Every reconciler is split in two, in the shape of kube-rs'
//! controller-rs: a pure *plan* ([`corpus::plan_corpus`],
//! [`route::plan_route`], [`profile::plan_profile`]) that turns the
//! resource and what was observed of the cluster into the objects to apply,
//! the status to write and the events to publish, and a thin async
//! [`controller`] that fetches, applies (server-side, field manager
//! [`FIELD_MANAGER`]) and patches status. The plans carry the logic and are
//! unit-tested without an API server; the controller is tested against a
//! mocked one.
//!
//! A module per kind holds its plan (`profile.rs`, `corpus/`, `route/`):
//! the Corpus' ingest and the route's serving are explicit states, each
//! planned by a function of its own (`corpus/ingest.rs`,
//! `route/serving.rs`). The objects a plan applies are built apart
//! (`ingest_job.rs`, `deployment.rs`, with what both kinds of pod share in
//! `pod.rs`), and the ingest pod's report ConfigMap protocol is
//! `report.rs`. The controller has a module per kind too, one generic
//! checked reconciler and the run loop (see [`controller`]). The unit
//! tests are in `tests/`, a module per kind and the objects it builds.
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
pub mod corpus;
pub mod deployment;
pub mod ingest_job;
pub mod lease;
pub mod pod;
pub mod profile;
pub mod report;
pub mod route;
pub mod storage;
pub mod telemetry;
pub mod template;
pub mod trouble;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
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
/// Pod template annotation of a route's Deployment: a hash of the
/// resource versions of the Secrets its pods read, so that rotating one
/// rolls them.
pub const SECRETS_ANNOTATION: &str = "trellis.dev/secrets-version";
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
/// Label of an ingest Job and its inputs ConfigMap: the hash of the
/// `spec.ingest` it runs with, which with the inputs names an attempt.
pub const INGEST_SPEC_LABEL: &str = "trellis.dev/ingest-spec";

/// Where pods mount things. The image's binary reads these paths.
pub mod paths {
    /// The data volume (index versions, embedding cache).
    pub const DATA: &str = "/var/lib/trellis";
    /// Rendered manifests (a ConfigMap).
    pub const MANIFESTS: &str = "/etc/trellis/manifests";
    /// The route's bearer tokens (a Secret).
    pub const TOKENS: &str = "/etc/trellis/tokens";
    /// Source claims, ConfigMaps and credential Secrets: where the
    /// binary looks for them by default.
    pub use crate::locations::{CONFIG_MAP_ROOT, PVC_ROOT, SECRET_ROOT};
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
    /// The chart's `imagePullSecrets`, given to every pod the operator
    /// makes (a Corpus' or route's `template` may add more).
    pub image_pull_secrets: Vec<String>,
    /// Guard each route's retrieval pods with a NetworkPolicy: requests
    /// only to the serving port (from the route's `allowedClients`), and
    /// no egress to link-local addresses (cloud metadata).
    pub network_policy: bool,
    /// Guard each Corpus' ingest pods with a NetworkPolicy: nothing in,
    /// and no egress to link-local addresses (cloud metadata) unless a
    /// source uses ambient credentials.
    pub ingest_network_policy: bool,
    /// What an ingest pod requests when its Corpus does not say (the
    /// chart's `podResources.ingest`).
    pub ingest_resources: ResourceRequirements,
    /// What a retrieval pod requests when its route does not say.
    pub retrieval_resources: ResourceRequirements,
    /// Ingests that may run at once in the namespaces the operator
    /// watches (the chart's `operator.maxConcurrentIngests`): a format
    /// change re-ingests every Corpus, which would otherwise start every
    /// Job at once. A Corpus past the cap waits (`IngestQueued`).
    pub max_concurrent_ingests: usize,
    /// Routes whose pods may roll at once (`operator.maxConcurrentRollouts`):
    /// an image change rolls every route, each surging new pods. A route
    /// past the cap keeps its pods (`RolloutQueued`).
    pub max_concurrent_rollouts: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            image: "ghcr.io/trellis-rag/trellis:0.1.0".into(),
            image_pull_policy: "IfNotPresent".into(),
            image_pull_secrets: Vec::new(),
            network_policy: false,
            ingest_network_policy: false,
            ingest_resources: default_resources("ingest"),
            retrieval_resources: default_resources("retrieval"),
            max_concurrent_ingests: 2,
            max_concurrent_rollouts: 2,
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
    /// The API server refused one of the operator's writes for what it
    /// holds: an admission policy, a quota, a name or field rule, a
    /// missing permission. It holds until someone changes one of those, so
    /// the object's status says so (reason `ApplyFailed`).
    #[error("the API server refused {kind} {name}: {message}")]
    Refused {
        kind: String,
        name: String,
        message: String,
    },
    /// An apply conditional on the object being as the reconcile read it
    /// found it changed (HTTP 409): the plan rests on a stale read and is
    /// made again from a fresh one, not forced over the change.
    #[error("{kind} {name} changed since it was read")]
    Changed { kind: String, name: String },
}

impl Error {
    /// A short label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube",
            Error::MissingField { .. } => "missing_field",
            Error::Render(_) => "render",
            Error::Refused { .. } => "refused",
            Error::Changed { .. } => "changed",
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

/// Whether `owner` is the controller of the object `meta` describes (an
/// owner reference with its uid and `controller: true`).
pub fn controlled_by(meta: &ObjectMeta, owner: &ObjectMeta) -> bool {
    let Some(uid) = owner.uid.as_deref() else {
        return false;
    };
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid && o.controller == Some(true))
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
pub fn is_paused(meta: &ObjectMeta) -> bool {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(PAUSED_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// The longest label value (and name of an object whose name becomes one,
/// as a Job's does).
const MAX_LABEL: usize = 63;

/// A Kubernetes object name from `base` and a `suffix`, within the 63
/// characters a name that also becomes a label value (Job names do) may
/// have, and a DNS-1035 label, as a Service's name and a pod's hostname
/// must be: a resource's name may hold dots or start with a digit
/// (`docs.v2`, `2024-reports`), which those refuse. A `base` too long or
/// not such a label is cut or mended (dots to dashes, leading digits and
/// dashes dropped), never the suffix, and followed by a hash of all of it,
/// so that two names alike in what is kept (`docs.v2`, `docs-v2`) still
/// name different objects.
pub fn object_name(base: &str, suffix: &str) -> String {
    object_name_within(base, suffix, MAX_LABEL)
}

/// The longest name of an Indexed Job: its pods' hostnames are the Job's
/// name, `-` and the completion index (up to 255, as `shards` allows), and
/// a hostname is a DNS label of at most 63 characters.
pub const MAX_JOB_NAME: usize = MAX_LABEL - 4;

/// [`object_name`] within `max` characters.
pub fn object_name_within(base: &str, suffix: &str, max: usize) -> String {
    let label = base.starts_with(|c: char| c.is_ascii_lowercase()) && !base.contains('.');
    if label && base.len() + 1 + suffix.len() <= max {
        return format!("{base}-{suffix}");
    }
    let hash = short_hash(&[base.as_bytes()]);
    let room = max.saturating_sub(suffix.len() + hash.len() + 2);
    let mended: String = base
        .trim_start_matches(|c: char| !c.is_ascii_lowercase())
        .chars()
        .map(|c| if c == '.' { '-' } else { c })
        .take(room)
        .collect();
    match mended.trim_end_matches('-') {
        // Nothing left that starts with a letter: the hash alone might not.
        "" => format!("trellis-{hash}-{suffix}"),
        head => format!("{head}-{hash}-{suffix}"),
    }
}

/// `name` as a label value: itself when it fits in 63 characters (object
/// names may have 253), else its start and a hash of all of it. Labels and
/// the selectors that find objects by them both go through this.
pub fn label_value(name: &str) -> String {
    if name.len() <= MAX_LABEL {
        return name.to_string();
    }
    let hash = short_hash(&[name.as_bytes()]);
    let head: String = name.chars().take(MAX_LABEL - hash.len() - 1).collect();
    let head = head.trim_end_matches(['-', '.', '_']);
    format!("{head}-{hash}")
}

/// What a pod requests when neither its resource nor the chart says:
/// without requests a pod is BestEffort, the first evicted under node
/// pressure and placed with no regard to what it needs. An ingest embeds
/// on the CPU; a retrieval pod holds an index version and the query
/// encoder in memory.
pub fn default_resources(component: &str) -> ResourceRequirements {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    let (cpu, memory) = match component {
        "ingest" => ("1", "1Gi"),
        _ => ("250m", "512Mi"),
    };
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(memory.into())),
        ])),
        ..Default::default()
    }
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
        // Two long names alike in their first 60 characters stay apart.
        let other = format!("{}b", "a".repeat(79));
        assert_ne!(object_name(&other, "ingest-0123456789"), name);
        assert!(object_name(&other, "ingest-0123456789").len() <= 63);
    }

    #[test]
    fn names_are_dns_1035_labels() {
        let label = |name: &str| {
            name.len() <= 63
                && name.starts_with(|c: char| c.is_ascii_lowercase())
                && name.ends_with(|c: char| c.is_ascii_alphanumeric())
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        };
        let dotted = object_name("docs.v2", "retrieval");
        assert!(label(&dotted), "{dotted}");
        assert!(dotted.starts_with("docs-v2-"), "{dotted}");
        // The name it would have collided with keeps its own.
        assert_eq!(object_name("docs-v2", "retrieval"), "docs-v2-retrieval");
        for base in [
            "2024-reports",
            "9",
            "-.-",
            "a.b.c.d",
            &format!("1{}", "x.".repeat(40)),
        ] {
            let name = object_name(base, "retrieval");
            assert!(label(&name), "{base} -> {name}");
            let job = object_name_within(base, "ingest-0123abcd", MAX_JOB_NAME);
            assert!(label(&format!("{job}-255")), "{base} -> {job}");
        }
    }

    #[test]
    fn job_names_leave_room_for_the_completion_index() {
        let name = object_name_within(&"e".repeat(50), "ingest-0123abcd", MAX_JOB_NAME);
        assert!(format!("{name}-255").len() <= 63, "{name}");
    }

    #[test]
    fn label_values_fit_and_stay_distinct() {
        assert_eq!(label_value("docs"), "docs");
        let a = label_value(&format!("{}-x", "c".repeat(70)));
        let b = label_value(&format!("{}-y", "c".repeat(70)));
        assert!(a.len() <= 63 && b.len() <= 63, "{a} {b}");
        assert_ne!(a, b);
        assert!(a.ends_with(|c: char| c.is_ascii_alphanumeric()));
        // A name of exactly 63 characters is its own label.
        let exact = "d".repeat(63);
        assert_eq!(label_value(&exact), exact);
    }

    #[test]
    fn control_is_an_owner_reference_with_the_owners_uid() {
        let owner = ObjectMeta {
            uid: Some("route-uid".into()),
            ..Default::default()
        };
        let reference = |uid: &str, controller: Option<bool>| ObjectMeta {
            owner_references: Some(vec![OwnerReference {
                uid: uid.into(),
                controller,
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert!(controlled_by(&reference("route-uid", Some(true)), &owner));
        // Someone's own object of the same name, or one the route only
        // co-owns, is not the route's to remove.
        assert!(!controlled_by(&ObjectMeta::default(), &owner));
        assert!(!controlled_by(&reference("other-uid", Some(true)), &owner));
        assert!(!controlled_by(&reference("route-uid", None), &owner));
        assert!(!controlled_by(
            &reference("route-uid", Some(true)),
            &ObjectMeta::default()
        ));
    }

    #[test]
    fn hashes_separate_their_parts() {
        assert_ne!(short_hash(&[b"ab", b"c"]), short_hash(&[b"a", b"bc"]));
        assert_eq!(short_hash(&[b"x"]).len(), 10);
    }
}
