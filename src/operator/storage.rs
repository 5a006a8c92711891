//! Where a Corpus' pods may run, given what its data claim allows.
//!
//! Ingest pods write the claim and retrieval pods read it, at the same
//! time. A `ReadWriteMany` claim lets them run anywhere. A
//! `ReadWriteOnce` claim attaches to one node at a time, where any
//! number of pods may use it: the operator places every pod of the claim
//! on one node (a required pod affinity to the claim's other pods), where
//! Kubernetes would otherwise start the second pod on another node and
//! leave it `ContainerCreating` with a Multi-Attach error. A
//! `ReadWriteOncePod` claim admits one pod in all, which cannot serve
//! while an ingest writes: the Corpus says so instead.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, PersistentVolumeClaim, PodAffinity, PodAffinityTerm, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::spec::StorageStatus;

/// Label on every pod that mounts a data claim, naming the claim: the
/// pods of a single-node claim find each other by it.
pub const DATA_CLAIM_LABEL: &str = "trellis.dev/data-claim";
/// The node label the pods of a single-node claim share.
const HOSTNAME: &str = "kubernetes.io/hostname";

/// Where the pods of a data claim may run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// Any node: the claim is `ReadWriteMany`, or not known (yet).
    #[default]
    AnyNode,
    /// One node, shared: the claim is `ReadWriteOnce`.
    OneNode,
    /// One pod: the claim is `ReadWriteOncePod`.
    OnePod,
}

impl Placement {
    /// The placement a claim's access modes allow. An unknown or missing
    /// claim places nothing: its pods say why they wait.
    pub fn of(claim: Option<&PersistentVolumeClaim>) -> Self {
        let modes = access_modes(claim);
        let has = |m: &str| modes.iter().any(|x| x == m);
        if modes.is_empty() || has("ReadWriteMany") {
            Placement::AnyNode
        } else if has("ReadWriteOnce") {
            Placement::OneNode
        } else if has("ReadWriteOncePod") {
            Placement::OnePod
        } else {
            // ReadOnlyMany: ingest pods fail to write, and say so.
            Placement::AnyNode
        }
    }

    fn name(self) -> &'static str {
        match self {
            Placement::AnyNode => "AnyNode",
            Placement::OneNode => "OneNode",
            Placement::OnePod => "OnePod",
        }
    }
}

fn access_modes(claim: Option<&PersistentVolumeClaim>) -> Vec<String> {
    // The bound volume's modes (status) are what the node honours; a
    // pending claim has only what it asked for.
    claim
        .and_then(|c| {
            c.status
                .as_ref()
                .and_then(|s| s.access_modes.clone())
                .filter(|m| !m.is_empty())
                .or_else(|| c.spec.as_ref()?.access_modes.clone())
        })
        .unwrap_or_default()
}

/// What a Corpus reports of its data claim.
pub fn status(claim_name: &str, claim: Option<&PersistentVolumeClaim>) -> StorageStatus {
    StorageStatus {
        claim_name: claim_name.to_string(),
        access_modes: access_modes(claim),
        placement: Placement::of(claim).name().to_string(),
    }
}

/// Why a Corpus cannot run on its claim, if it cannot.
pub fn problem(claim_name: &str, placement: Placement) -> Option<String> {
    (placement == Placement::OnePod).then(|| {
        format!(
            "data claim {claim_name:?} is ReadWriteOncePod: one pod at a time cannot both \
             ingest and serve; use a ReadWriteMany claim, or ReadWriteOnce to keep every pod \
             of the claim on one node"
        )
    })
}

/// Labels `template`'s pods with their data claim and, for a single-node
/// claim, requires them on the node of the claim's other pods. Added to
/// whatever affinity the pod template override gave.
pub fn place(template: &mut PodTemplateSpec, claim_name: &str, placement: Placement) {
    let value = super::label_value(claim_name);
    template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(Default::default)
        .insert(DATA_CLAIM_LABEL.into(), value.clone());
    if placement != Placement::OneNode {
        return;
    }
    let spec = template.spec.get_or_insert_with(Default::default);
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let pod_affinity = affinity
        .pod_affinity
        .get_or_insert_with(PodAffinity::default);
    pod_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(Vec::new)
        .push(PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(DATA_CLAIM_LABEL.to_string(), value)])),
                ..Default::default()
            }),
            topology_key: HOSTNAME.into(),
            ..Default::default()
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PersistentVolumeClaimSpec, PersistentVolumeClaimStatus};

    fn claim(spec: &[&str], bound: &[&str]) -> PersistentVolumeClaim {
        let modes = |m: &[&str]| Some(m.iter().map(|s| s.to_string()).collect());
        PersistentVolumeClaim {
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: modes(spec),
                ..Default::default()
            }),
            status: Some(PersistentVolumeClaimStatus {
                access_modes: modes(bound),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn access_modes_decide_the_placement() {
        assert_eq!(Placement::of(None), Placement::AnyNode);
        let rwx = claim(&["ReadWriteMany"], &["ReadWriteMany"]);
        assert_eq!(Placement::of(Some(&rwx)), Placement::AnyNode);
        // Pending: what the claim asks for.
        let rwo = claim(&["ReadWriteOnce"], &[]);
        assert_eq!(Placement::of(Some(&rwo)), Placement::OneNode);
        // Bound: what the volume gives.
        let bound = claim(&["ReadWriteOnce"], &["ReadWriteOnce", "ReadWriteMany"]);
        assert_eq!(Placement::of(Some(&bound)), Placement::AnyNode);
        let rwop = claim(&["ReadWriteOncePod"], &["ReadWriteOncePod"]);
        assert_eq!(Placement::of(Some(&rwop)), Placement::OnePod);
        assert!(problem("data", Placement::OnePod).is_some());
        assert!(problem("data", Placement::OneNode).is_none());
    }

    #[test]
    fn single_node_pods_keep_the_override_affinity_and_add_their_own() {
        let mut template = PodTemplateSpec {
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                affinity: Some(Affinity {
                    pod_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: Some(vec![
                            PodAffinityTerm {
                                topology_key: "topology.kubernetes.io/zone".into(),
                                ..Default::default()
                            },
                        ]),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        place(&mut template, "data", Placement::OneNode);
        let terms = template
            .spec
            .unwrap()
            .affinity
            .unwrap()
            .pod_affinity
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .unwrap();
        assert_eq!(terms.len(), 2);
        assert_eq!(terms[1].topology_key, HOSTNAME);
        let labels = template.metadata.unwrap().labels.unwrap();
        assert_eq!(
            labels.get(DATA_CLAIM_LABEL).map(String::as_str),
            Some("data")
        );

        let mut anywhere = PodTemplateSpec::default();
        place(&mut anywhere, "data", Placement::AnyNode);
        assert!(
            anywhere.spec.is_none(),
            "no affinity for a ReadWriteMany claim"
        );
    }
}
