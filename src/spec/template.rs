//! `template`: what a cluster's operator adds to the pods it makes for a
//! Corpus (ingest) or a RetrievalRoute (retrieval), in the style of
//! Strimzi's `template`. The embedded mode reads none of it.
//!
//! The operator owns what makes its pods work (the container, its
//! arguments, the data volume, probes, the security context); a template
//! adds to that and never replaces it: labels and annotations are merged
//! under the operator's own, env, volumes and mounts are appended, and a
//! name the operator already uses is refused by validation rather than
//! silently shadowed.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, EnvFromSource, EnvVar, LocalObjectReference, Toleration, TopologySpreadConstraint,
    Volume, VolumeMount,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Additions to the pods the operator makes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct PodTemplate {
    /// Labels and annotations for the pods (the operator's own labels
    /// win on a clash: its selectors depend on them).
    #[serde(skip_serializing_if = "TemplateMetadata::is_empty")]
    pub metadata: TemplateMetadata,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Added to the operator's `imagePullSecrets` (the chart's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Environment variables of the Trellis container, after the
    /// operator's (a provider key from a Secret, a proxy).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_from: Vec<EnvFromSource>,
    /// Extra pod volumes; mount them with `volumeMounts`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
    /// Extra mounts of the Trellis container.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volume_mounts: Vec<VolumeMount>,
    /// The ServiceAccount the pods run as, which the operator makes (an
    /// ingest pod's always exists, for its report; a retrieval pod gets
    /// one only when this is set): a cloud identity for the pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account: Option<TemplateServiceAccount>,
}

/// What the operator's ServiceAccount for a template's pods carries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct TemplateServiceAccount {
    /// Annotations that bind it to a cloud identity:
    /// `eks.amazonaws.com/role-arn` (IRSA), `iam.gke.io/gcp-service-account`
    /// (GKE Workload Identity), `azure.workload.identity/client-id`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// Labels and annotations a template adds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct TemplateMetadata {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl TemplateMetadata {
    fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.annotations.is_empty()
    }
}

impl PodTemplate {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}
