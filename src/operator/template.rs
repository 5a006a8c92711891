//! A Corpus' or route's pod `template` ([`PodTemplate`]) laid over the pod
//! the operator built, and the chart's image pull secrets given to every
//! pod.
//!
//! A template adds; it never takes away what makes the pod work. The names
//! the operator uses itself (volumes, mount paths, environment variables)
//! are refused by [`problems`], which the reconcilers report as an
//! `InvalidSpec` condition, rather than shadowed in silence.

use k8s_openapi::api::core::v1::{LocalObjectReference, PodTemplateSpec};

use super::{Settings, paths};
use crate::spec::PodTemplate;

/// Volume names the operator gives its own volumes.
const OWN_VOLUMES: &[&str] = &["data", "manifests", "tmp", "tokens"];
/// Prefixes of the operator's numbered volumes (`source-0`, …).
const OWN_VOLUME_PREFIXES: &[&str] = &["source-", "configmap-", "secret-", "provider-"];
/// The environment variables the operator sets.
const OWN_ENV: &[&str] = &[
    crate::locations::PVC_ROOT_ENV,
    crate::locations::CONFIG_MAP_ROOT_ENV,
    crate::locations::SECRET_ROOT_ENV,
    "POD_NAMESPACE",
    crate::index::writer::POD_UID_ENV,
];

/// What in `template` clashes with the operator's own pod, one message
/// per clash, naming the field.
pub fn problems(template: &PodTemplate, field: &str) -> Vec<String> {
    let own_mounts = [
        paths::DATA,
        paths::MANIFESTS,
        paths::TOKENS,
        paths::PVC_ROOT,
        paths::CONFIG_MAP_ROOT,
        paths::SECRET_ROOT,
        paths::TMP,
    ];
    let mut problems = Vec::new();
    for volume in &template.volumes {
        let name = volume.name.as_str();
        let numbered = OWN_VOLUME_PREFIXES.iter().any(|prefix| {
            name.strip_prefix(prefix)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
        if OWN_VOLUMES.contains(&name) || numbered {
            problems.push(format!(
                "{field}.volumes: {name:?} is a volume name the operator uses"
            ));
        }
    }
    for mount in &template.volume_mounts {
        let path = mount.mount_path.trim_end_matches('/');
        let clash = own_mounts.iter().any(|own| {
            path == *own
                || path.starts_with(&format!("{own}/"))
                || own.starts_with(&format!("{path}/"))
        });
        if clash {
            problems.push(format!(
                "{field}.volumeMounts: {:?} overlaps a path the operator mounts",
                mount.mount_path
            ));
        }
    }
    for var in &template.env {
        if OWN_ENV.contains(&var.name.as_str()) {
            problems.push(format!(
                "{field}.env: {:?} is set by the operator",
                var.name
            ));
        }
    }
    problems
}

/// Lays `template` over `pod` (whose first container is Trellis'), and
/// gives it the chart's image pull secrets. Labels and annotations the
/// operator set win over the template's.
pub fn apply(template: &PodTemplate, settings: &Settings, pod: &mut PodTemplateSpec) {
    let meta = pod.metadata.get_or_insert_with(Default::default);
    for (map, extra) in [
        (&mut meta.labels, &template.metadata.labels),
        (&mut meta.annotations, &template.metadata.annotations),
    ] {
        if extra.is_empty() {
            continue;
        }
        let own = map.take().unwrap_or_default();
        let mut merged = extra.clone();
        merged.extend(own);
        *map = Some(merged);
    }
    let spec = pod.spec.get_or_insert_with(Default::default);
    let pull_secrets: Vec<LocalObjectReference> = settings
        .image_pull_secrets
        .iter()
        .map(|name| LocalObjectReference { name: name.clone() })
        .chain(template.image_pull_secrets.iter().cloned())
        .collect();
    if !pull_secrets.is_empty() {
        spec.image_pull_secrets = Some(pull_secrets);
    }
    if !template.node_selector.is_empty() {
        spec.node_selector = Some(template.node_selector.clone());
    }
    if !template.tolerations.is_empty() {
        spec.tolerations = Some(template.tolerations.clone());
    }
    if let Some(affinity) = &template.affinity {
        spec.affinity = Some(affinity.clone());
    }
    if !template.topology_spread_constraints.is_empty() {
        spec.topology_spread_constraints = Some(template.topology_spread_constraints.clone());
    }
    if let Some(class) = &template.priority_class_name {
        spec.priority_class_name = Some(class.clone());
    }
    if !template.volumes.is_empty() {
        spec.volumes
            .get_or_insert_with(Vec::new)
            .extend(template.volumes.iter().cloned());
    }
    if let Some(container) = spec.containers.first_mut() {
        if !template.env.is_empty() {
            container
                .env
                .get_or_insert_with(Vec::new)
                .extend(template.env.iter().cloned());
        }
        if !template.env_from.is_empty() {
            container
                .env_from
                .get_or_insert_with(Vec::new)
                .extend(template.env_from.iter().cloned());
        }
        if !template.volume_mounts.is_empty() {
            container
                .volume_mounts
                .get_or_insert_with(Vec::new)
                .extend(template.volume_mounts.iter().cloned());
        }
    }
}
