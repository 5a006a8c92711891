//! `Corpus`: where a collection's documents come from and how its index
//! versions are kept.

use std::collections::BTreeMap;

use kube::CustomResource;

use super::CorpusStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A collection of documents indexed with one `IndexProfile`.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "trellis.dev",
    version = "v1alpha1",
    kind = "Corpus",
    plural = "corpora",
    shortname = "corp",
    namespaced,
    status = "CorpusStatus",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.activeIndex.version"}"#,
    printcolumn = r#"{"name":"Documents","type":"integer","jsonPath":".status.activeIndex.documents"}"#,
    printcolumn = r#"{"name":"Sentences","type":"integer","jsonPath":".status.activeIndex.sentences"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct CorpusSpec {
    /// The `IndexProfile` (same namespace, or the same manifest set) that
    /// decides how documents are indexed.
    pub profile_ref: ObjectRef,
    /// Where documents come from: at least one, at most 100.
    #[schemars(length(min = 1, max = MAX_SOURCES))]
    pub sources: Vec<SourceSpec>,
    /// Glob patterns (relative to a source's root) a file must match to be
    /// ingested. Default: every file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Glob patterns of files to leave out, applied after `include`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// ACL tags given to every document unless its source sets its own.
    /// A caller sees a document only when it holds one of its tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acl: Vec<String>,
    /// How index versions are kept.
    #[serde(default)]
    pub storage: StorageSpec,
    /// How the operator runs ingests in a cluster (the embedded mode reads
    /// none of it). Changing it never changes an index version.
    #[serde(default)]
    pub ingest: IngestSpec,
}

/// The most sources a Corpus may list. Also what lets the API server
/// accept the CRD: it prices each source's CEL rule by the longest list
/// the schema allows, and refuses an unbounded one.
pub const MAX_SOURCES: usize = 100;

/// A reference to another Trellis resource by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub name: String,
}

/// One source of documents. Exactly one kind is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = source_rules)]
#[serde(rename_all = "camelCase")]
pub struct SourceSpec {
    /// A local directory or file, relative to the manifest's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A directory inside a PersistentVolumeClaim. The operator mounts the
    /// claim read-only into ingest pods; the embedded mode finds it under
    /// `$TRELLIS_PVC_ROOT/<claimName>` (default `/var/run/trellis/pvc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pvc: Option<PvcSource>,
    /// Small documents held inline in a ConfigMap of the Corpus'
    /// namespace, one per key (`data` or `binaryData`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapSource>,
    /// Documents fetched over HTTP(S) from a list of URLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpSource>,
    /// Objects under a prefix of an S3 (or S3-compatible) bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Source>,
    /// Globs for this source only, on top of the corpus-wide ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// ACL tags of this source's documents, replacing the corpus default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<Vec<String>>,
    /// Labels given to this source's documents (`team: legal`), for
    /// exact-match metadata filters at query time. Every document also
    /// carries `format` (`pdf`, `docx`, `html`, `markdown`, `text`), which
    /// a label cannot replace.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// The CRD's CEL rule for a source entry, checked by the API server.
fn source_rules(schema: &mut schemars::Schema) {
    super::cel_rules(
        schema,
        &[(
            "[has(self.path), has(self.pvc), has(self.configMap), has(self.http), has(self.s3)]\
             .filter(k, k).size() == 1",
            "set exactly one source kind (path, pvc, configMap, http or s3)",
        )],
    );
}

/// A directory inside a PersistentVolumeClaim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PvcSource {
    /// The claim, in the Corpus' namespace.
    pub claim_name: String,
    /// A directory or file inside the claim; default its root.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
}

/// The kind of a source entry, borrowed from it.
#[derive(Clone, Copy, Debug)]
pub enum SourceKind<'a> {
    Path(&'a str),
    Pvc(&'a PvcSource),
    ConfigMap(&'a ConfigMapSource),
    Http(&'a HttpSource),
    S3(&'a S3Source),
}

impl SourceSpec {
    /// The one kind this entry sets, or why it does not set exactly one.
    pub fn kind(&self) -> Result<SourceKind<'_>, String> {
        let kinds: Vec<SourceKind<'_>> = [
            self.path.as_deref().map(SourceKind::Path),
            self.pvc.as_ref().map(SourceKind::Pvc),
            self.config_map.as_ref().map(SourceKind::ConfigMap),
            self.http.as_ref().map(SourceKind::Http),
            self.s3.as_ref().map(SourceKind::S3),
        ]
        .into_iter()
        .flatten()
        .collect();
        match kinds.as_slice() {
            [one] => Ok(*one),
            _ => Err(format!(
                "set exactly one source kind (path, pvc, configMap, http or s3); {} set",
                kinds.len()
            )),
        }
    }
}

/// Documents held in a ConfigMap. The operator mounts it into ingest pods;
/// the embedded mode reads it from the manifest set when a `v1 ConfigMap`
/// of that name is in it, else under `$TRELLIS_CONFIGMAP_ROOT/<name>`
/// (default `/var/run/trellis/configmaps`). A key's extension names its
/// format (`faq.md`, `policy.html`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapSource {
    pub name: String,
}

/// Documents fetched over HTTP(S). Each URL is one document, keyed by the
/// URL; one that cannot be fetched is a failed document of the ingest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpSource {
    /// `http://` or `https://` URLs.
    #[schemars(length(min = 1))]
    pub urls: Vec<String>,
    /// Hosts that may be fetched from (exact names, or `*.example.com`
    /// for its subdomains). Default: the hosts of `urls`. A redirect is
    /// followed only to the same host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// Internal networks the URLs may reach, as CIDRs (`10.20.0.0/16`,
    /// `fd00:1::/64`). Default none: a name that resolves into a private
    /// (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7), loopback,
    /// link-local (169.254/16, where cloud metadata answers; fe80::/10) or
    /// otherwise non-public range is refused at connect time, so that a
    /// Corpus cannot make its ingest pod reach the cluster's internal
    /// services or the node's metadata endpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub allowed_networks: Vec<String>,
    /// A response longer than this fails its document. Default 64 MiB.
    #[serde(default = "default_http_max_bytes")]
    #[schemars(range(min = 1))]
    pub max_bytes: u64,
    /// Connecting and reading one URL must finish within this. Default 30.
    #[serde(default = "default_http_timeout")]
    #[schemars(range(min = 1, max = 3600))]
    pub timeout_seconds: u32,
}

fn default_http_max_bytes() -> u64 {
    64 << 20
}

fn default_http_timeout() -> u32 {
    30
}

/// Objects under a prefix of an S3 bucket, or of an S3-compatible store
/// (MinIO, Ceph RGW) at `endpoint`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = s3_rules)]
#[serde(rename_all = "camelCase")]
pub struct S3Source {
    pub bucket: String,
    /// Only keys starting with this are read (`contracts/2026/`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    /// The store's URL for an S3-compatible service; default AWS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Default `us-east-1`.
    #[serde(default = "default_region")]
    pub region: String,
    /// A Secret with `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
    /// optionally `AWS_SESSION_TOKEN`. The operator mounts it into ingest
    /// pods; the embedded mode reads it under
    /// `$TRELLIS_SECRET_ROOT/<name>` (default `/var/run/trellis/secrets`).
    /// Either this or `ambientCredentials: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<ObjectRef>,
    /// Use the credentials the pod's surroundings give: the `AWS_*`
    /// variables, a service account's web identity (IRSA) or the node's
    /// instance role, through the cloud's metadata address (which the
    /// ingest pods' NetworkPolicy then leaves open). Never the default: a
    /// source without `credentialsSecret` must say so, so that no ingest
    /// reaches a bucket with the node's role by accident.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ambient_credentials: bool,
}

impl S3Source {
    /// Why the source's credentials are not as the CRD's rule wants
    /// (exactly one of `credentialsSecret` and `ambientCredentials`).
    pub fn credentials_problem(&self) -> Option<String> {
        match (&self.credentials_secret, self.ambient_credentials) {
            (Some(_), false) | (None, true) => None,
            (Some(_), true) => Some(S3_CREDENTIALS_RULE.1.to_string()),
            (None, false) => Some(format!(
                "bucket {:?}: {}",
                self.bucket, S3_CREDENTIALS_RULE.1
            )),
        }
    }
}

/// The CRD's CEL rule for an `s3` source's credentials, and its message.
const S3_CREDENTIALS_RULE: (&str, &str) = (
    "has(self.credentialsSecret) != (has(self.ambientCredentials) && self.ambientCredentials)",
    "set either credentialsSecret or ambientCredentials: true (the pod's AWS_* \
     variables, service account or instance role), not both",
);

fn s3_rules(schema: &mut schemars::Schema) {
    super::cel_rules(schema, &[S3_CREDENTIALS_RULE]);
}

fn default_region() -> String {
    "us-east-1".into()
}

/// How index versions are kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct StorageSpec {
    /// Index versions kept on disk, the current one included; older ones
    /// are removed after a new version is published. Default 3; at least 2
    /// in a cluster, so that the version routes serve outlives the publish
    /// of its successor until their pods have rolled.
    pub retain_versions: u32,
    /// In a cluster: the PersistentVolumeClaim that holds the index
    /// versions (and the embedding cache). Ingest Jobs mount it read-write,
    /// retrieval pods read-only: on a ReadWriteMany claim they run
    /// anywhere, on a ReadWriteOnce one the operator keeps them all on the
    /// node it is attached to (`status.storage`). Default `trellis-data`.
    pub claim_name: String,
}

impl Default for StorageSpec {
    fn default() -> Self {
        Self {
            retain_versions: 3,
            claim_name: "trellis-data".into(),
        }
    }
}

/// How the operator runs a Corpus' ingest as a Kubernetes Job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct IngestSpec {
    /// Pods that embed the corpus' documents in parallel (an Indexed Job,
    /// one slice of the documents each); a single finalize pod then builds
    /// and publishes the version from their cached vectors. Default 1.
    #[schemars(range(min = 1, max = 256))]
    pub shards: u32,
    /// Shard pods running at once; default all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 256))]
    pub parallelism: Option<u32>,
    /// Retries of a failed pod before the Job fails. Default 2.
    #[schemars(range(max = 2147483647))]
    pub backoff_limit: u32,
    /// A Job running longer than this fails. Default 6 hours.
    pub active_deadline_seconds: u32,
    /// A finished Job (and its pods and logs) is removed after this long.
    /// Default one hour.
    #[schemars(range(max = 2147483647))]
    pub ttl_seconds_after_finished: u32,
    /// CPU and memory of each ingest pod. Default: requests of 1 CPU and
    /// 1Gi, no limits (never BestEffort).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    /// Re-check the sources this often (`30m`, `6h`, `1d`) and ingest
    /// again when they changed; unchanged documents come from the
    /// embedding cache. Default: only when a spec changes or the
    /// `trellis.dev/reingest` annotation gets a new value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_interval: Option<String>,
    /// Additions to the ingest pods: labels, annotations, scheduling,
    /// image pull secrets, env, volumes.
    #[serde(skip_serializing_if = "super::PodTemplate::is_empty")]
    pub template: super::PodTemplate,
}

impl Default for IngestSpec {
    fn default() -> Self {
        Self {
            shards: 1,
            parallelism: None,
            backoff_limit: 2,
            active_deadline_seconds: 6 * 3600,
            ttl_seconds_after_finished: 3600,
            resources: None,
            refresh_interval: None,
            template: Default::default(),
        }
    }
}

impl IngestSpec {
    /// `refreshInterval` in seconds, or why it cannot be read.
    pub fn refresh_seconds(&self) -> Result<Option<u64>, String> {
        self.refresh_interval
            .as_deref()
            .map(parse_duration)
            .transpose()
    }
}

/// Reads a duration such as `90s`, `30m`, `6h` or `1d` (one number, one
/// unit; at least a minute, so that a typo cannot hammer the sources).
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{text:?}: no unit (use s, m, h or d)"))?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?}: not a whole number of units"))?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?} (use s, m, h or d)"
            ));
        }
    };
    let seconds = number.saturating_mul(scale);
    if seconds < 60 {
        return Err(format!("{text:?}: shorter than a minute"));
    }
    Ok(seconds)
}
