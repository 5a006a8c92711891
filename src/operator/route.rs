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

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;

use super::conditions::{self, Note, Set};
use super::deployment::{Objects, route_objects};
use super::{
    CONFIG_HASH_ANNOTATION, Error, INDEX_VERSION_ANNOTATION, SECRETS_ANNOTATION, Settings,
};
use crate::spec::{AnchorSource, Corpus, IndexVersionStatus, RetrievalRoute, RetrievalRouteStatus};

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

/// Why this build cannot serve the Corpus' active version, if it cannot:
/// its format is outside [`crate::index::READABLE_FORMATS`], or unknown
/// (an earlier release built it and did not say; the re-ingest a new
/// release starts reports it).
fn unreadable_format(active: &IndexVersionStatus) -> Option<String> {
    let formats = &crate::index::READABLE_FORMATS;
    let built = match active.format {
        Some(format) if formats.contains(&format) => return None,
        Some(format) => format!("was written in index format {format}"),
        None => "was built by an earlier release, which did not report its format".to_string(),
    };
    Some(format!(
        "index version {} {built}; this operator's pods read formats {}–{}, so the \
         route's pods keep serving it as they are until the Corpus publishes a version \
         this release builds",
        active.version,
        formats.start(),
        formats.end()
    ))
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

/// The reason of a rollout that waits for others to finish.
pub const ROLLOUT_QUEUED: &str = "RolloutQueued";

/// How often a queued rollout looks for a free turn.
const QUEUED_RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// `Progressing=False` reasons that need a change from outside.
const STALLED: &[&str] = &[
    "ProgressDeadlineExceeded",
    "InvalidSpec",
    "CorpusNotFound",
    "CorpusInvalid",
    "ReindexFailed",
];

fn plan_serving(
    route: &RetrievalRoute,
    observed: &Observed,
    settings: &Settings,
    now: &str,
) -> Result<Plan, Error> {
    let generation = route.metadata.generation;
    let mut plan = Plan {
        objects: None,
        status: route.status.clone().unwrap_or_default(),
        prune_configs: None,
        events: Vec::new(),
        rollout_began: None,
        requeue: None,
        needs_turn: false,
    };
    let set = |plan: &mut Plan, change: Set<'_>| {
        conditions::set(&mut plan.status.conditions, change, generation, now)
    };

    if super::is_paused(&route.metadata) {
        // Not acted on: observedGeneration stays where it was.
        set(&mut plan, Set::paused());
        return Ok(plan);
    }
    plan.status.observed_generation = generation;
    conditions::remove(&mut plan.status.conditions, "Paused");

    // What the running Deployment says, whatever happens next.
    if let Some(deployment) = &observed.deployment {
        let ready = deployment
            .status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0);
        plan.status.ready_replicas = ready;
        let done = rolled_out(deployment);
        if done && let Some(version) = template_version(deployment) {
            if plan.status.served_version.as_deref() != Some(version) {
                plan.events.push(Note::normal(
                    "ServedVersionChanged",
                    format!("pods serve index version {version}"),
                ));
            }
            plan.status.served_version = Some(version.to_string());
            plan.prune_configs =
                template_annotation(deployment, CONFIG_HASH_ANNOTATION).map(String::from);
        }
        let available = deployment
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Available"))
            .is_some_and(|c| c.status == "True");
        set(
            &mut plan,
            if available {
                Set::new(
                    "Available",
                    true,
                    "MinimumReplicasAvailable",
                    format!("{ready} pods ready"),
                )
            } else {
                Set::new(
                    "Available",
                    false,
                    "ReplicasUnavailable",
                    format!("{ready} pods ready"),
                )
            },
        );
        // A rollout the Deployment gave up on (its progress deadline) is
        // reported as the Deployment reports it.
        let stalled = deployment
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Progressing"))
            .filter(|c| c.status == "False");
        set(
            &mut plan,
            match stalled {
                Some(c) if !done => Set::new(
                    "Progressing",
                    false,
                    c.reason.as_deref().unwrap_or("ProgressDeadlineExceeded"),
                    c.message.clone().unwrap_or_default(),
                ),
                _ if done => Set::new(
                    "Progressing",
                    false,
                    "RolloutComplete",
                    "every pod runs the current template",
                ),
                _ => Set::new("Progressing", true, "RollingOut", "pods are being replaced"),
            },
        );
    }

    let mut problems =
        super::template::problems(&route.spec.serving.template, "spec.serving.template");
    // What the pods' `trellis serve` would refuse at start, refused here
    // first: the pods keep serving the last good configuration.
    problems.extend(route.spec.generation.check().err());
    if !problems.is_empty() {
        // The pods keep serving what they serve; nothing is applied.
        set(
            &mut plan,
            Set::new("Progressing", false, "InvalidSpec", problems.join("; ")),
        );
        return Ok(plan);
    }
    if let Some(reason) = &observed.corpus_unreadable {
        // The pods keep serving what they serve; nothing is applied.
        let message = format!(
            "Corpus {:?} cannot be read by this operator: {reason}",
            route.spec.corpus_ref.name
        );
        set(
            &mut plan,
            Set::new("Progressing", false, "CorpusInvalid", message),
        );
        return Ok(plan);
    }
    let Some(corpus) = &observed.corpus else {
        let message = format!(
            "Corpus {:?} not found in this namespace",
            route.spec.corpus_ref.name
        );
        set(
            &mut plan,
            Set::new("Progressing", false, "CorpusNotFound", message.clone()),
        );
        if observed.deployment.is_none() {
            set(
                &mut plan,
                Set::new("Available", false, "CorpusNotFound", message),
            );
        }
        return Ok(plan);
    };
    let Some(active) = corpus.status.as_ref().and_then(|s| s.active_index.as_ref()) else {
        let message = format!("Corpus {} has no index version yet", corpus.name_any());
        set(
            &mut plan,
            Set::new("Progressing", true, "WaitingForIndex", message.clone()),
        );
        if observed.deployment.is_none() {
            set(
                &mut plan,
                Set::new("Available", false, "WaitingForIndex", message),
            );
        }
        return Ok(plan);
    };
    if let Some(message) = unreadable_format(active) {
        // Rebuild first, roll after: the pods that run keep serving the
        // version with the release that built it, and nothing is applied
        // (a new template would roll them onto a binary that cannot open
        // it) until the Corpus publishes a version this build reads. A
        // re-ingest that failed will not publish one by itself: the wait
        // is then stuck, not under way, until someone mends the Corpus.
        let failed = corpus
            .status
            .as_ref()
            .and_then(|s| s.pending_index.as_ref())
            .and_then(|p| p.error.as_deref());
        let (progressing, reason, message) = match failed {
            Some(error) => (
                false,
                "ReindexFailed",
                format!(
                    "{message}; but the re-ingest of Corpus {} failed ({error}), so none will be \
                     published until the Corpus is fixed",
                    corpus.name_any()
                ),
            ),
            None => (true, "AwaitingReindex", message),
        };
        set(
            &mut plan,
            Set::new("Progressing", progressing, reason, message.clone()),
        );
        if observed.deployment.is_none() {
            set(&mut plan, Set::new("Available", false, reason, message));
        }
        return Ok(plan);
    }
    let anchored_in_store = route.spec.anchors.source == AnchorSource::Graph;
    if anchored_in_store && active.graph.is_none() {
        // The pods that run keep serving the version they have; none roll
        // onto one they could not read.
        let message = format!(
            "the route takes anchors from the graph store, but index version {} of Corpus {} \
             is in none: it was built with graph.store embedded, or its export failed (see \
             the Corpus' ingest report); set the IndexProfile's graph section, or serve the \
             route with anchors.source embedded",
            active.version,
            corpus.name_any()
        );
        set(
            &mut plan,
            Set::new("Progressing", false, "NotInGraphStore", message.clone()),
        );
        if observed.deployment.is_none() {
            set(
                &mut plan,
                Set::new("Available", false, "NotInGraphStore", message),
            );
        }
        return Ok(plan);
    }
    let mut objects = route_objects(route, corpus, active, settings, &observed.secret_versions)?;
    // Pods that read the version from the graph store mount no claim: no
    // placement follows from one.
    if let Some(spec) = objects
        .deployment
        .spec
        .as_mut()
        .filter(|_| !anchored_in_store)
    {
        super::storage::place(
            &mut spec.template,
            &corpus.spec.storage.claim_name,
            super::storage::Placement::of(observed.data_claim.as_ref()),
        );
    }
    let changes_template = observed.deployment.as_ref().is_none_or(|d| {
        template_version(d) != Some(active.version.as_str())
            || template_annotation(d, CONFIG_HASH_ANNOTATION)
                != template_annotation(&objects.deployment, CONFIG_HASH_ANNOTATION)
    });
    let secrets_changed = observed.deployment.as_ref().is_some_and(|d| {
        template_annotation(d, SECRETS_ANNOTATION)
            != template_annotation(&objects.deployment, SECRETS_ANNOTATION)
    });
    if let Some(running) = observed.deployment.as_ref() {
        // Every apply over a running Deployment is conditional on it being
        // as this reconcile read it: a count an autoscaler set meanwhile,
        // or any other write, makes the apply a conflict, planned again
        // from a fresh read, instead of a forced write of what was read.
        objects.deployment.metadata.resource_version = running.metadata.resource_version.clone();
        if observed.autoscaler.is_some()
            && let Some(spec) = objects.deployment.spec.as_mut()
        {
            // The autoscaler owns the replica count: applying the count
            // it set changes nothing, where the route's would undo its
            // work.
            spec.replicas = running.spec.as_ref().and_then(|s| s.replicas);
        }
    }
    plan.needs_turn = (changes_template || secrets_changed)
        && observed.deployment.as_ref().is_some_and(rolled_out);
    if plan.needs_turn && observed.rollouts_elsewhere >= settings.max_concurrent_rollouts {
        // Past the cap the pods that serve stay as they are, and nothing
        // is applied until a turn is free.
        let message = format!(
            "{} routes are rolling their pods, as many as operator.maxConcurrentRollouts ({}) \
             allows; this one rolls to index version {} when one of them finishes",
            observed.rollouts_elsewhere, settings.max_concurrent_rollouts, active.version
        );
        set(
            &mut plan,
            Set::new("Progressing", true, ROLLOUT_QUEUED, message),
        );
        plan.prune_configs = None;
        plan.requeue = Some(QUEUED_RECHECK);
        return Ok(plan);
    }
    if changes_template || secrets_changed {
        plan.prune_configs = None;
        let message = if changes_template {
            format!("rolling pods to index version {}", active.version)
        } else {
            "rolling pods: a Secret they read changed".to_string()
        };
        set(
            &mut plan,
            Set::new("Progressing", true, "NewTemplate", message),
        );
        if observed.deployment.is_none() {
            set(
                &mut plan,
                Set::new(
                    "Available",
                    false,
                    "Deploying",
                    "the first pods are starting",
                ),
            );
        }
    }
    plan.objects = Some(objects);
    Ok(plan)
}
