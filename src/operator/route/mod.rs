//! The RetrievalRoute reconciler's pure half: from a route, its Corpus and
//! the Deployment the cluster holds, the objects to apply (built in
//! [`super::deployment`]) and the route's status computed from the
//! Deployment.
//!
//! Pods are pinned to a version (`--index-version`) and load the embedder
//! that version was built with, so a profile change never reaches running
//! pods before its index does. The pod template carries the index version
//! and the hash of the rendered configuration, so a new version or a route change rolls the pods
//! (surge first: old pods serve until new ones are ready), while nothing
//! else does. The rendered configuration is an immutable ConfigMap named
//! by its hash, so a pod of the old ReplicaSet that restarts mid-rollout
//! still reads the configuration it was made for.
//!
//! Here: what the plan is made from and what it says ([`Observed`],
//! [`Plan`]), and [`plan_route`], which plans serving the route
//! (`serving.rs`: its states and a function per state) and derives
//! kstatus' conditions, the generator's and the rollout's start.

mod serving;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;

use super::conditions::{self, Note, Set};
use super::deployment::Objects;
use super::{
    CONFIG_HASH_ANNOTATION, Error, INDEX_VERSION_ANNOTATION, SECRETS_ANNOTATION, Settings,
};
use crate::spec::{Corpus, RetrievalRoute, RetrievalRouteStatus};
use serving::plan_serving;

pub use serving::ROLLOUT_QUEUED;

/// What the controller observed around a route.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    pub corpus: Option<Corpus>,
    /// Why the Corpus, which exists, cannot be read (see
    /// [`super::checked`]).
    pub corpus_unreadable: Option<String>,
    pub deployment: Option<Deployment>,
    /// The resource version of every Secret the route's pods read (see
    /// [`secret_names`]); empty when it does not exist.
    pub secret_versions: BTreeMap<String, String>,
    /// The Corpus' data claim, if it exists: where the pods may run.
    pub data_claim: Option<k8s_openapi::api::core::v1::PersistentVolumeClaim>,
    /// Whether the route's generation service accepted a connection (its
    /// endpoint), or why not; `None` for `extractive`.
    pub generator: Option<Result<String, String>>,
    /// Other routes' Deployments whose pods are being replaced, in the
    /// namespaces the operator watches: against
    /// [`Settings::max_concurrent_rollouts`].
    pub rollouts_elsewhere: usize,
    /// The HorizontalPodAutoscaler that scales the route's Deployment, if
    /// one does: the operator then leaves `replicas` as it finds it.
    pub autoscaler: Option<String>,
}

/// What to do for a route.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Objects to apply, if the route can be served now.
    pub objects: Option<Objects>,
    pub status: RetrievalRouteStatus,
    /// Remove the configuration ConfigMaps other than the current one (no
    /// pod reads them any more).
    pub prune_configs: Option<String>,
    /// Events: the served version changed, conditions changed.
    pub events: Vec<Note>,
    /// When the rollout under way began (Unix seconds), if one is: the
    /// Deployment's pods do not all run its template and are not all
    /// available, or this plan gives it a new template. None for a paused
    /// route.
    pub rollout_began: Option<u64>,
    /// When to look again without being woken: a rollout waiting for a
    /// turn is woken by nothing it watches.
    pub requeue: Option<std::time::Duration>,
    /// The plan rolls pods that serve, which `operator.maxConcurrentRollouts`
    /// caps: the caller counts the rollouts under way elsewhere, holding
    /// the turn, and plans again with the count before it applies.
    pub needs_turn: bool,
}

/// The index version a Deployment's pod template serves.
pub fn template_version(deployment: &Deployment) -> Option<&str> {
    template_annotation(deployment, INDEX_VERSION_ANNOTATION)
}

/// A pod template annotation of a Deployment.
pub fn template_annotation<'d>(deployment: &'d Deployment, key: &str) -> Option<&'d str> {
    deployment
        .spec
        .as_ref()?
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// Whether every replica of the Deployment runs its current template and
/// is available.
pub fn rolled_out(deployment: &Deployment) -> bool {
    let wanted = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let Some(status) = &deployment.status else {
        return false;
    };
    let generation = deployment.metadata.generation.unwrap_or(0);
    status.observed_generation.unwrap_or(0) >= generation
        && status.updated_replicas.unwrap_or(0) >= wanted
        && status.available_replicas.unwrap_or(0) >= wanted
        && status.replicas.unwrap_or(0) == wanted
}

/// Plans the reconcile of `route`; every condition that changes is
/// announced by an Event.
pub fn plan_route(
    route: &RetrievalRoute,
    observed: &Observed,
    settings: &Settings,
    now: &str,
) -> Result<Plan, Error> {
    let before = route
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut plan = plan_serving(route, observed, settings, now)?;
    if !super::is_paused(&route.metadata) {
        summarize(&mut plan.status, route.metadata.generation, now);
        let rolling = observed.deployment.as_ref().is_some_and(|d| !rolled_out(d))
            || plan.objects.as_ref().is_some_and(|o| {
                observed
                    .deployment
                    .as_ref()
                    .is_none_or(|d| new_template(d, &o.deployment))
            });
        if rolling {
            plan.rollout_began =
                rollout_began(&plan.status).or_else(|| conditions::unix_seconds(now));
        }
    }
    generator_condition(&mut plan.status, observed, route.metadata.generation, now);
    conditions::transitions(&before, &plan.status.conditions, &mut plan.events);
    Ok(plan)
}

/// `GeneratorReachable`: whether the route's model service answers. An
/// unreachable generator fails answers only; retrieval goes on, so the
/// route's `Ready` and `Available` do not read it.
fn generator_condition(
    status: &mut RetrievalRouteStatus,
    observed: &Observed,
    generation: Option<i64>,
    now: &str,
) {
    let change = match &observed.generator {
        None => {
            conditions::remove(&mut status.conditions, "GeneratorReachable");
            return;
        }
        Some(Ok(endpoint)) => Set::new(
            "GeneratorReachable",
            true,
            "Reachable",
            format!("{endpoint} accepts connections"),
        ),
        Some(Err(reason)) => Set::new(
            "GeneratorReachable",
            false,
            "GeneratorUnreachable",
            format!("/v1/answer fails until the generator answers; retrieval is served: {reason}"),
        ),
    };
    conditions::set(&mut status.conditions, change, generation, now);
}

/// Whether `desired` rolls the pods of `running`: another index version,
/// configuration or set of Secrets in the pod template.
fn new_template(running: &Deployment, desired: &Deployment) -> bool {
    [
        INDEX_VERSION_ANNOTATION,
        CONFIG_HASH_ANNOTATION,
        SECRETS_ANNOTATION,
    ]
    .iter()
    .any(|key| template_annotation(running, key) != template_annotation(desired, key))
}

/// When the route's `Progressing` condition last changed, if it says a
/// rollout is under way (or stuck: past the Deployment's deadline).
fn rollout_began(status: &RetrievalRouteStatus) -> Option<u64> {
    conditions::get(&status.conditions, "Progressing")
        .filter(|c| c.status == "True" || c.reason == "ProgressDeadlineExceeded")
        .and_then(|c| c.last_transition_time.as_deref())
        .and_then(conditions::unix_seconds)
}

/// kstatus' `Ready` from `Progressing` and `Available`: ready while the
/// pods serve and no rollout is under way or stuck; then `Reconciling`
/// (a rollout, a wait for an index) and `Stalled` (a rollout past its
/// deadline, an invalid spec, a missing or unreadable Corpus, a re-ingest
/// it waits on that failed).
fn summarize(status: &mut RetrievalRouteStatus, generation: Option<i64>, now: &str) {
    let progressing = conditions::get(&status.conditions, "Progressing").cloned();
    let available = conditions::get(&status.conditions, "Available").cloned();
    let ready = match (&progressing, &available) {
        (Some(p), _) if p.status == "True" => {
            Set::new("Ready", false, &p.reason, p.message.clone())
        }
        (Some(p), _) if STALLED.contains(&p.reason.as_str()) => {
            Set::new("Ready", false, &p.reason, p.message.clone())
        }
        (_, Some(a)) if a.status == "True" => Set::new(
            "Ready",
            true,
            "Serving",
            match &status.served_version {
                Some(version) => format!(
                    "{} pods serve index version {version}",
                    status.ready_replicas
                ),
                None => format!("{} pods ready", status.ready_replicas),
            },
        ),
        (_, Some(a)) => Set::new("Ready", false, &a.reason, a.message.clone()),
        (Some(p), None) => Set::new("Ready", false, &p.reason, p.message.clone()),
        (None, None) => return,
    };
    conditions::set(&mut status.conditions, ready, generation, now);
    conditions::abnormal_from_ready(&mut status.conditions, Some("Progressing"), generation, now);
}

/// `Progressing=False` reasons that need a change from outside.
const STALLED: &[&str] = &[
    "ProgressDeadlineExceeded",
    "InvalidSpec",
    "CorpusNotFound",
    "CorpusInvalid",
    "ReindexFailed",
];
