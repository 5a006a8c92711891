//! What ingest and retrieval pods share: their volumes (the data claim,
//! sources, Secrets), mounts, downward-API variables, security contexts
//! and the egress their NetworkPolicies allow.

use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, EnvVar, EnvVarSource, ObjectFieldSelector,
    PersistentVolumeClaimVolumeSource, PodSecurityContext, SeccompProfile, SecretVolumeSource,
    SecurityContext, Volume, VolumeMount,
};

use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicyEgressRule, NetworkPolicyPeer, NetworkPolicyPort,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::paths;

/// The user id of the image (Dockerfile).
const IMAGE_USER: i64 = 10001;

/// Who mounts the data claim, and so which of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DataAccess {
    /// Ingest pods: the corpus' versions and the embedding cache,
    /// writable.
    Ingest,
    /// Retrieval pods: the corpus' versions, read-only.
    Serve,
    /// Retrieval pods of a route anchored in the graph store: no claim,
    /// but an empty directory the version's serving files are read into
    /// from the store (`trellis serve --index-from-graph`).
    ServeFromGraph,
}

/// The volumes every Trellis pod has: the data claim (an empty directory
/// for [`DataAccess::ServeFromGraph`]), the rendered manifests and a
/// scratch directory under the read-only root filesystem; and their
/// mounts.
///
/// The claim is shared by the corpora of a namespace, but a pod mounts
/// only its corpus' directory (`indexes/<corpus>`, by `subPath`) and, to
/// ingest, the embedding cache: one corpus' pods can neither read nor
/// remove another's versions. The layout inside the claim is the embedded
/// mode's data directory, so the same claim serves both.
pub(super) fn pod_volumes(
    claim: &str,
    corpus: &str,
    access: DataAccess,
    manifests: &str,
) -> (Vec<Volume>, Vec<VolumeMount>) {
    let read_only = access == DataAccess::Serve;
    let data = match access {
        DataAccess::ServeFromGraph => Volume {
            name: "data".into(),
            empty_dir: Some(Default::default()),
            ..Default::default()
        },
        DataAccess::Ingest | DataAccess::Serve => Volume {
            name: "data".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.to_string(),
                read_only: Some(read_only),
            }),
            ..Default::default()
        },
    };
    let volumes = vec![
        data,
        Volume {
            name: "manifests".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: manifests.to_string(),
                ..Default::default()
            }),
            ..Default::default()
        },
        Volume {
            name: "tmp".into(),
            empty_dir: Some(Default::default()),
            ..Default::default()
        },
    ];
    let versions = format!("indexes/{corpus}");
    let mut mounts = vec![match access {
        DataAccess::ServeFromGraph => mount("data", paths::DATA, false),
        DataAccess::Ingest | DataAccess::Serve => data_mount(&versions, read_only),
    }];
    if access == DataAccess::Ingest {
        mounts.push(data_mount("cache", false));
    }
    mounts.extend([
        mount("manifests", paths::MANIFESTS, true),
        mount("tmp", paths::TMP, false),
    ]);
    (volumes, mounts)
}

/// `sub_path` of the data claim at the same path under the data root.
fn data_mount(sub_path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        sub_path: Some(sub_path.into()),
        ..mount("data", &format!("{}/{sub_path}", paths::DATA), read_only)
    }
}

/// Each Secret read-only in its own directory under the secret root
/// (volumes `secret-0`, …). Optional: a missing one fails the step that
/// needs it with a message naming it, where a required volume would leave
/// the pod pending in silence.
pub(super) fn mount_secrets(
    secrets: &[impl AsRef<str>],
    volumes: &mut Vec<Volume>,
    mounts: &mut Vec<VolumeMount>,
) {
    for (i, secret) in secrets.iter().enumerate() {
        let secret = secret.as_ref();
        let volume = format!("secret-{i}");
        volumes.push(Volume {
            name: volume.clone(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret.to_string()),
                optional: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        });
        mounts.push(mount(
            &volume,
            &format!("{}/{secret}", paths::SECRET_ROOT),
            true,
        ));
    }
}

/// An environment variable from a field of the pod (the downward API).
pub(super) fn pod_field(name: &str, field_path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: field_path.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub(super) fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: Some(read_only),
        ..Default::default()
    }
}

/// Non-root, as the image's user, with the volumes' group so that a fresh
/// claim is writable.
pub(super) fn pod_security() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(IMAGE_USER),
        run_as_group: Some(IMAGE_USER),
        fs_group: Some(IMAGE_USER),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// No privilege escalation, no capabilities, a read-only root filesystem.
pub(super) fn container_security() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        capabilities: Some(k8s_openapi::api::core::v1::Capabilities {
            drop: Some(vec!["ALL".into()]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A count for a Kubernetes `int32` field. The CRD bounds these below
/// `i32::MAX`; an object admitted before the bounds existed gets the
/// largest value rather than a negative one.
pub(super) fn saturating_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Egress anywhere but link-local addresses, where cloud metadata answers
/// (instance credentials among it): embedding services, graph stores and
/// sources are often inside the cluster, so private ranges stay open. And
/// DNS anywhere: NodeLocal DNSCache answers on a link-local address
/// (169.254.20.10).
pub(super) fn egress_but_link_local() -> Vec<NetworkPolicyEgressRule> {
    let everywhere_but = |cidr: &str, except: &str| NetworkPolicyPeer {
        ip_block: Some(IPBlock {
            cidr: cidr.into(),
            except: Some(vec![except.into()]),
        }),
        ..Default::default()
    };
    vec![
        NetworkPolicyEgressRule {
            to: Some(vec![
                everywhere_but("0.0.0.0/0", "169.254.0.0/16"),
                everywhere_but("::/0", "fe80::/10"),
            ]),
            ports: None,
        },
        NetworkPolicyEgressRule {
            to: None,
            ports: Some(
                ["UDP", "TCP"]
                    .map(|protocol| NetworkPolicyPort {
                        port: Some(IntOrString::Int(53)),
                        protocol: Some(protocol.into()),
                        ..Default::default()
                    })
                    .to_vec(),
            ),
        },
    ]
}
