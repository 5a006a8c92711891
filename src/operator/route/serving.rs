//! Serving a route as explicit states. Each reconcile reads what the
//! running Deployment says, then finds the route in one [`ServingState`]
//! ([`ServingState::of`] decides which, in order of precedence): a spec its
//! pods would refuse, a Corpus that is missing, unreadable, without a
//! version, or with one the pods cannot open, or a version to serve. Every
//! state but the last leaves the pods as they are, and says why; serving a
//! version is a [`Rollout`]: the pods stay, roll, or wait for a turn to.

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;

use super::{Observed, Plan, rolled_out, template_annotation, template_version};
use crate::operator::conditions::{self, Note, Set};
use crate::operator::deployment::{Objects, route_objects};
use crate::operator::{
    CONFIG_HASH_ANNOTATION, Error, SECRETS_ANNOTATION, Settings, is_paused, storage, template,
};
use crate::spec::{AnchorSource, Corpus, IndexVersionStatus, RetrievalRoute};

/// The reason of a rollout that waits for others to finish.
pub const ROLLOUT_QUEUED: &str = "RolloutQueued";

/// How often a queued rollout looks for a free turn.
const QUEUED_RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// What a route's plan is made from.
struct Given<'o> {
    route: &'o RetrievalRoute,
    observed: &'o Observed,
    settings: &'o Settings,
    /// Stamps condition transitions.
    now: &'o str,
}

impl Given<'_> {
    /// Sets a condition on the plan's status, stamped with this reconcile.
    fn set(&self, plan: &mut Plan, change: Set<'_>) {
        conditions::set(
            &mut plan.status.conditions,
            change,
            self.route.metadata.generation,
            self.now,
        );
    }
}

/// Where serving a route that is not paused stands.
enum ServingState<'o> {
    /// Its pods would refuse the spec at start (its template clashes with
    /// the operator's own names, its generation settings do not hold).
    Invalid(Vec<String>),
    /// Its Corpus exists but this operator cannot read it.
    CorpusUnreadable(&'o str),
    /// Its Corpus does not exist.
    CorpusMissing,
    /// Its Corpus has no index version yet.
    WaitingForIndex(&'o Corpus),
    /// The Corpus' active version is in a format this build's pods cannot
    /// open (`message` says which, and why).
    AwaitingReindex { corpus: &'o Corpus, message: String },
    /// The route takes its anchors from the graph store, but the active
    /// version is in none.
    NotInGraphStore {
        corpus: &'o Corpus,
        active: &'o IndexVersionStatus,
    },
    /// The active version can be served.
    Servable {
        corpus: &'o Corpus,
        active: &'o IndexVersionStatus,
    },
}

impl<'o> ServingState<'o> {
    fn of(given: &Given<'o>) -> Self {
        let (route, observed) = (given.route, given.observed);
        let mut problems =
            template::problems(&route.spec.serving.template, "spec.serving.template");
        // What the pods' `trellis serve` would refuse at start, refused here
        // first: the pods keep serving the last good configuration.
        problems.extend(route.spec.generation.check().err());
        if !problems.is_empty() {
            return Self::Invalid(problems);
        }
        if let Some(reason) = &observed.corpus_unreadable {
            return Self::CorpusUnreadable(reason);
        }
        let Some(corpus) = &observed.corpus else {
            return Self::CorpusMissing;
        };
        let Some(active) = corpus.status.as_ref().and_then(|s| s.active_index.as_ref()) else {
            return Self::WaitingForIndex(corpus);
        };
        if let Some(message) = unreadable_format(active) {
            return Self::AwaitingReindex { corpus, message };
        }
        if route.spec.anchors.source == AnchorSource::Graph && active.graph.is_none() {
            return Self::NotInGraphStore { corpus, active };
        }
        Self::Servable { corpus, active }
    }
}

/// What serving the active version does to the route's pods.
enum Rollout {
    /// Their template stays as it is.
    Steady,
    /// Their template changes: a new index version or configuration, or
    /// only (`secrets_only`) a rotated Secret. The pods roll, or the first
    /// ones start; rolling pods that serve (`takes_turn`) counts against
    /// `operator.maxConcurrentRollouts`.
    Rolls {
        secrets_only: bool,
        takes_turn: bool,
    },
    /// Their template changes, but as many routes as
    /// `operator.maxConcurrentRollouts` allows are rolling theirs.
    Queued,
}

impl Rollout {
    fn of(given: &Given<'_>, desired: &Deployment, active: &IndexVersionStatus) -> Self {
        let observed = given.observed;
        let changes_template = observed.deployment.as_ref().is_none_or(|d| {
            template_version(d) != Some(active.version.as_str())
                || template_annotation(d, CONFIG_HASH_ANNOTATION)
                    != template_annotation(desired, CONFIG_HASH_ANNOTATION)
        });
        let secrets_changed = observed.deployment.as_ref().is_some_and(|d| {
            template_annotation(d, SECRETS_ANNOTATION)
                != template_annotation(desired, SECRETS_ANNOTATION)
        });
        if !changes_template && !secrets_changed {
            return Self::Steady;
        }
        let takes_turn = observed.deployment.as_ref().is_some_and(rolled_out);
        if takes_turn && observed.rollouts_elsewhere >= given.settings.max_concurrent_rollouts {
            return Self::Queued;
        }
        Self::Rolls {
            secrets_only: !changes_template,
            takes_turn,
        }
    }
}

/// Plans serving `route`: the objects to apply, if any, and the status.
pub(super) fn plan_serving(
    route: &RetrievalRoute,
    observed: &Observed,
    settings: &Settings,
    now: &str,
) -> Result<Plan, Error> {
    let given = Given {
        route,
        observed,
        settings,
        now,
    };
    let mut plan = unchanged(route);
    if is_paused(&route.metadata) {
        // Not acted on: observedGeneration stays where it was.
        given.set(&mut plan, Set::paused());
        return Ok(plan);
    }
    plan.status.observed_generation = route.metadata.generation;
    conditions::remove(&mut plan.status.conditions, "Paused");
    // What the running Deployment says, whatever happens next.
    if let Some(deployment) = &observed.deployment {
        read_deployment(&mut plan, &given, deployment);
    }
    Ok(match ServingState::of(&given) {
        ServingState::Invalid(problems) => invalid(plan, &given, &problems),
        ServingState::CorpusUnreadable(reason) => corpus_unreadable(plan, &given, reason),
        ServingState::CorpusMissing => corpus_missing(plan, &given),
        ServingState::WaitingForIndex(corpus) => waiting_for_index(plan, &given, corpus),
        ServingState::AwaitingReindex { corpus, message } => {
            awaiting_reindex(plan, &given, corpus, message)
        }
        ServingState::NotInGraphStore { corpus, active } => {
            not_in_graph_store(plan, &given, corpus, active)
        }
        ServingState::Servable { corpus, active } => serve(plan, &given, corpus, active)?,
    })
}

/// A plan that changes nothing: the status as it is, nothing to apply.
fn unchanged(route: &RetrievalRoute) -> Plan {
    Plan {
        objects: None,
        status: route.status.clone().unwrap_or_default(),
        prune_configs: None,
        events: Vec::new(),
        rollout_began: None,
        requeue: None,
        needs_turn: false,
    }
}

/// What the running Deployment says: its ready pods, the version they
/// serve once every one runs the template (and the configurations that
/// older templates read, which may then go), whether it is available and
/// whether it is rolling, done or stuck.
fn read_deployment(plan: &mut Plan, given: &Given<'_>, deployment: &Deployment) {
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
    given.set(plan, availability(deployment, ready));
    given.set(plan, progress(deployment, done));
}

/// `Available`, as the Deployment says.
fn availability(deployment: &Deployment, ready: i32) -> Set<'static> {
    let available = deployment
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Available"))
        .is_some_and(|c| c.status == "True");
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
    }
}

/// `Progressing`: done once every pod runs the template (`done`), rolling
/// until then; a rollout the Deployment gave up on (its progress
/// deadline) is reported as the Deployment reports it.
fn progress(deployment: &Deployment, done: bool) -> Set<'_> {
    let stalled = deployment
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Progressing"))
        .filter(|c| c.status == "False");
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
    }
}

/// The pods keep serving what they serve; nothing is applied.
fn invalid(mut plan: Plan, given: &Given<'_>, problems: &[String]) -> Plan {
    given.set(
        &mut plan,
        Set::new("Progressing", false, "InvalidSpec", problems.join("; ")),
    );
    plan
}

/// The pods keep serving what they serve; nothing is applied.
fn corpus_unreadable(mut plan: Plan, given: &Given<'_>, reason: &str) -> Plan {
    let message = format!(
        "Corpus {:?} cannot be read by this operator: {reason}",
        given.route.spec.corpus_ref.name
    );
    given.set(
        &mut plan,
        Set::new("Progressing", false, "CorpusInvalid", message),
    );
    plan
}

/// Nothing is applied, and `Progressing` says why; a route that has no
/// pods yet is not `Available` for the same reason.
fn held(
    mut plan: Plan,
    given: &Given<'_>,
    progressing: bool,
    reason: &str,
    message: String,
) -> Plan {
    given.set(
        &mut plan,
        Set::new("Progressing", progressing, reason, message.clone()),
    );
    if given.observed.deployment.is_none() {
        given.set(&mut plan, Set::new("Available", false, reason, message));
    }
    plan
}

fn corpus_missing(plan: Plan, given: &Given<'_>) -> Plan {
    let message = format!(
        "Corpus {:?} not found in this namespace",
        given.route.spec.corpus_ref.name
    );
    held(plan, given, false, "CorpusNotFound", message)
}

fn waiting_for_index(plan: Plan, given: &Given<'_>, corpus: &Corpus) -> Plan {
    let message = format!("Corpus {} has no index version yet", corpus.name_any());
    held(plan, given, true, "WaitingForIndex", message)
}

/// Rebuild first, roll after: the pods that run keep serving the version
/// with the release that built it, and nothing is applied (a new template
/// would roll them onto a binary that cannot open it) until the Corpus
/// publishes a version this build reads. A re-ingest that failed will not
/// publish one by itself: the wait is then stuck, not under way, until
/// someone mends the Corpus.
fn awaiting_reindex(plan: Plan, given: &Given<'_>, corpus: &Corpus, message: String) -> Plan {
    let failed = corpus
        .status
        .as_ref()
        .and_then(|s| s.pending_index.as_ref())
        .and_then(|p| p.error.as_deref());
    match failed {
        Some(error) => {
            let message = format!(
                "{message}; but the re-ingest of Corpus {} failed ({error}), so none will be \
                 published until the Corpus is fixed",
                corpus.name_any()
            );
            held(plan, given, false, "ReindexFailed", message)
        }
        None => held(plan, given, true, "AwaitingReindex", message),
    }
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

/// The pods that run keep serving the version they have; none roll onto
/// one they could not read.
fn not_in_graph_store(
    plan: Plan,
    given: &Given<'_>,
    corpus: &Corpus,
    active: &IndexVersionStatus,
) -> Plan {
    let message = format!(
        "the route takes anchors from the graph store, but index version {} of Corpus {} \
         is in none: it was built with graph.store embedded, or its export failed (see \
         the Corpus' ingest report); set the IndexProfile's graph section, or serve the \
         route with anchors.source embedded",
        active.version,
        corpus.name_any()
    );
    held(plan, given, false, "NotInGraphStore", message)
}

/// Serves the active version: the objects to apply, and what applying
/// them does to the pods.
fn serve(
    mut plan: Plan,
    given: &Given<'_>,
    corpus: &Corpus,
    active: &IndexVersionStatus,
) -> Result<Plan, Error> {
    let objects = serving_objects(given, corpus, active)?;
    Ok(match Rollout::of(given, &objects.deployment, active) {
        Rollout::Steady => {
            plan.objects = Some(objects);
            plan
        }
        Rollout::Queued => queue(plan, given, active),
        Rollout::Rolls {
            secrets_only,
            takes_turn,
        } => roll(plan, given, active, objects, secrets_only, takes_turn),
    })
}

/// The objects that serve `active`, placed where the data claim allows
/// and applied only over the Deployment as it was read.
fn serving_objects(
    given: &Given<'_>,
    corpus: &Corpus,
    active: &IndexVersionStatus,
) -> Result<Objects, Error> {
    let (route, observed) = (given.route, given.observed);
    let mut objects = route_objects(
        route,
        corpus,
        active,
        given.settings,
        &observed.secret_versions,
    )?;
    // Pods that read the version from the graph store mount no claim: no
    // placement follows from one.
    let anchored_in_store = route.spec.anchors.source == AnchorSource::Graph;
    if let Some(spec) = objects
        .deployment
        .spec
        .as_mut()
        .filter(|_| !anchored_in_store)
    {
        storage::place(
            &mut spec.template,
            &corpus.spec.storage.claim_name,
            storage::Placement::of(observed.data_claim.as_ref()),
        );
    }
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
    Ok(objects)
}

/// Past the cap the pods that serve stay as they are, and nothing is
/// applied until a turn is free.
fn queue(mut plan: Plan, given: &Given<'_>, active: &IndexVersionStatus) -> Plan {
    plan.needs_turn = true;
    let message = format!(
        "{} routes are rolling their pods, as many as operator.maxConcurrentRollouts ({}) \
         allows; this one rolls to index version {} when one of them finishes",
        given.observed.rollouts_elsewhere, given.settings.max_concurrent_rollouts, active.version
    );
    given.set(
        &mut plan,
        Set::new("Progressing", true, ROLLOUT_QUEUED, message),
    );
    plan.prune_configs = None;
    plan.requeue = Some(QUEUED_RECHECK);
    plan
}

/// The pods roll to the new template (or the first ones start). The old
/// pods still read the old configuration: it is not pruned yet.
fn roll(
    mut plan: Plan,
    given: &Given<'_>,
    active: &IndexVersionStatus,
    objects: Objects,
    secrets_only: bool,
    takes_turn: bool,
) -> Plan {
    plan.needs_turn = takes_turn;
    plan.prune_configs = None;
    let message = if secrets_only {
        "rolling pods: a Secret they read changed".to_string()
    } else {
        format!("rolling pods to index version {}", active.version)
    };
    given.set(
        &mut plan,
        Set::new("Progressing", true, "NewTemplate", message),
    );
    if given.observed.deployment.is_none() {
        given.set(
            &mut plan,
            Set::new(
                "Available",
                false,
                "Deploying",
                "the first pods are starting",
            ),
        );
    }
    plan.objects = Some(objects);
    plan
}
