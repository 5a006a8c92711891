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
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CorpusSpec {
    /// The `IndexProfile` (same namespace, or the same manifest set) that
    /// decides how documents are indexed.
    pub profile_ref: ObjectRef,
    /// Where documents come from; at least one.
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
}

/// A reference to another Trellis resource by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectRef {
    pub name: String,
}

/// One source of documents. Exactly one kind is set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = source_rules)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceSpec {
    /// A local directory or file, relative to the manifest's directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
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
            "[has(self.path)].filter(k, k).size() == 1",
            "set exactly one source kind (path)",
        )],
    );
}

/// How index versions are kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct StorageSpec {
    /// Index versions kept on disk, the current one included; older ones
    /// are removed after a new version is published. Default 3.
    pub retain_versions: u32,
}

impl Default for StorageSpec {
    fn default() -> Self {
        Self { retain_versions: 3 }
    }
}
