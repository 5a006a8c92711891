//! The plans and builders, without an API server: one module per kind
//! and the objects it builds, the fixtures they share here.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus};
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::api::core::v1::{ConfigMap, PodTemplateSpec};
use kube::ResourceExt;

use super::conditions;
use super::corpus::{self, JobState, Observed, plan_corpus};
use super::ingest_job::{self, Desired};
use super::route::{self, plan_route};
use super::*;
use super::{deployment, report};
use crate::spec::{
    Corpus, CorpusSpec, IndexProfile, IndexProfileSpec, IndexVersionStatus, RetrievalRoute,
    RetrievalRouteSpec, SourceSpec,
};

mod corpus_objects;
mod corpus_plans;
mod every_kind;
mod route_objects;
mod route_plans;

const NOW: u64 = 1_800_000_000;

pub(crate) fn profile() -> IndexProfile {
    let mut p = IndexProfile::new("default", IndexProfileSpec::default());
    p.metadata.namespace = Some("docs".into());
    p.metadata.uid = Some("uid-profile".into());
    p
}

pub(crate) fn corpus() -> Corpus {
    let spec: CorpusSpec = serde_json::from_value(serde_json::json!({
        "profileRef": {"name": "default"},
        "sources": [{"pvc": {"claimName": "contracts", "path": "2026"}}],
        "acl": ["legal"],
    }))
    .unwrap();
    let mut c = Corpus::new("handbook", spec);
    c.metadata.namespace = Some("docs".into());
    c.metadata.uid = Some("uid-corpus".into());
    c.metadata.generation = Some(1);
    c
}

pub(crate) fn route() -> RetrievalRoute {
    let mut r = RetrievalRoute::new("handbook-qa", RetrievalRouteSpec::for_corpus("handbook"));
    r.metadata.namespace = Some("docs".into());
    r.metadata.uid = Some("uid-route".into());
    r.metadata.generation = Some(1);
    r
}

fn settings() -> Settings {
    Settings {
        image: "registry.example/trellis:1.0".into(),
        image_pull_policy: "IfNotPresent".into(),
        image_pull_secrets: vec!["registry-cred".into()],
        network_policy: true,
        ingest_network_policy: true,
        // The chart's `podResources.ingest`, unlike the built-in default.
        ingest_resources: serde_json::from_value(serde_json::json!({
            "requests": {"cpu": "750m", "memory": "768Mi"}
        }))
        .unwrap(),
        retrieval_resources: super::default_resources("retrieval"),
        max_concurrent_ingests: 2,
        max_concurrent_rollouts: 2,
    }
}

pub(crate) fn finished_job(succeeded: bool) -> Job {
    Job {
        status: Some(JobStatus {
            conditions: Some(vec![JobCondition {
                type_: if succeeded { "Complete" } else { "Failed" }.into(),
                status: "True".into(),
                reason: (!succeeded).then(|| "BackoffLimitExceeded".into()),
                message: (!succeeded).then(|| "Job has reached the specified backoff limit".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub(crate) fn report(inputs: &str, version: &str, failed: u64) -> ConfigMap {
    let status = IndexVersionStatus {
        version: version.into(),
        profile_hash: Some(crate::ingest::profile_hash(&IndexProfileSpec::default())),
        format: Some(crate::index::FORMAT_VERSION),
        documents: 12,
        failed_documents: failed,
        sentences: 3400,
        chunks: 210,
        edges: 950,
        failures: (0..failed)
            .map(|i| format!("bad-{i}.pdf: truncated"))
            .collect(),
        ..Default::default()
    };
    ConfigMap {
        data: Some(report::report_data(inputs, Ok(&status))),
        ..Default::default()
    }
}

fn plan(corpus: &Corpus, observed: &Observed) -> corpus::Plan {
    plan_corpus(corpus, observed, &settings(), NOW, "2026-11-24T00:00:00Z").unwrap()
}

fn with_profile() -> Observed {
    Observed {
        profile: Some(profile()),
        ..Default::default()
    }
}

fn job_of(plan: &corpus::Plan) -> Option<&Job> {
    plan.apply.iter().find_map(|d| match d {
        Desired::Job(j) => Some(j.as_ref()),
        _ => None,
    })
}

fn active_corpus(version: &str) -> Corpus {
    let mut c = corpus();
    c.status = Some(crate::spec::CorpusStatus {
        active_index: Some(IndexVersionStatus {
            version: version.into(),
            format: Some(crate::index::FORMAT_VERSION),
            ..Default::default()
        }),
        ..Default::default()
    });
    c
}

fn rolled(deployment: &Deployment, ready: i32) -> Deployment {
    let mut d = deployment.clone();
    d.metadata.generation = Some(1);
    d.status = Some(DeploymentStatus {
        observed_generation: Some(1),
        replicas: Some(ready),
        updated_replicas: Some(ready),
        ready_replicas: Some(ready),
        available_replicas: Some(ready),
        conditions: Some(vec![DeploymentCondition {
            type_: "Available".into(),
            status: "True".into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    d
}

/// Where a container mounts its volumes.
/// The data claim's mounts: sub path, mount path, read-only.
fn data_mounts(
    container: &k8s_openapi::api::core::v1::Container,
) -> Vec<(Option<&str>, &str, Option<bool>)> {
    container
        .volume_mounts
        .iter()
        .flatten()
        .filter(|m| m.name == "data")
        .map(|m| (m.sub_path.as_deref(), m.mount_path.as_str(), m.read_only))
        .collect()
}

fn mount_paths(container: &k8s_openapi::api::core::v1::Container) -> Vec<&str> {
    container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.as_str())
        .collect()
}

fn route_plan(route: &RetrievalRoute, observed: &route::Observed) -> route::Plan {
    plan_route(route, observed, &settings(), "2026-11-24T00:00:00Z").unwrap()
}

/// The plan for `route` over a readable Corpus (or none) and its
/// Deployment as observed.
fn plan_over(
    route: &RetrievalRoute,
    corpus: Option<Corpus>,
    deployment: Option<Deployment>,
) -> route::Plan {
    route_plan(
        route,
        &route::Observed {
            corpus_unreadable: None,
            corpus,
            deployment,
            ..Default::default()
        },
    )
}
