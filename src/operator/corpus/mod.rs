//! The Corpus reconciler's pure half: from a Corpus, its profile and what
//! the cluster holds of its ingest, the objects to apply (built in
//! [`super::ingest_job`]) and the status to write; the ingest pod's report
//! comes back through [`super::report`].
//!
//! An ingest is identified by its *inputs* hash ([`inputs_hash`]): what the
//! controller can know without reading the documents (profile spec, corpus
//! sources, the resource versions of source ConfigMaps, the reingest
//! annotation, the refresh tick). The ingest pod then compares the
//! sources' revision (sizes, modification times, ETags) with the one the
//! current version was built from and keeps that version without reading
//! a document when they agree, so a refresh tick over unchanged sources
//! costs a listing and no rebuild.
//!
//! Here: what the plan is made from and what it says ([`Observed`],
//! [`Plan`]), the hashes that name an ingest, and [`plan_corpus`], which
//! plans the ingest (`ingest.rs`: its states and a function per state) and
//! derives kstatus' conditions and the metrics' view of an ingest that
//! ended. What the states write on the status is `status.rs`.

mod ingest;
mod status;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim};
use kube::ResourceExt;

use super::conditions::{self, Note, Set};
use super::ingest_job::Desired;
use super::trouble::Trouble;
use super::{Error, REINGEST_ANNOTATION, Settings, short_hash};
use crate::spec::{Corpus, CorpusStatus, IndexProfile};
use ingest::{Given, plan_ingest};

#[cfg(test)]
pub(super) use ingest::empty_retry_backoff;
pub use ingest::{INGEST_QUEUED, NOTHING_TO_INDEX};

/// Reasons of the `Ingesting` condition that are no problem: any other
/// (a failed Job, a pod that cannot run) makes the Corpus `Stalled`.
const INGEST_UNDER_WAY: &[&str] = &["JobRunning", "Idle", "IngestSucceeded", INGEST_QUEUED];

/// What the controller observed of a Corpus' surroundings.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// The Corpus' IndexProfile, if it exists.
    pub profile: Option<IndexProfile>,
    /// The ingest Job for the current inputs, if created.
    pub ingest_job: Option<Job>,
    /// The finalize Job for the current inputs (sharded ingests).
    pub finalize_job: Option<Job>,
    /// The report ConfigMap the ingest pods write.
    pub report: Option<ConfigMap>,
    /// The resource version of every ConfigMap a `configMap` source names
    /// (empty when it does not exist): an edit to one is a new ingest.
    pub source_config_maps: BTreeMap<String, String>,
    /// The index versions the Corpus' routes serve (`servedVersion`).
    pub served_versions: Vec<String>,
    /// The Corpus' ingest and finalize Jobs other than the current
    /// attempt's: other inputs, or the same with another `spec.ingest`.
    pub other_jobs: Vec<Job>,
    /// What stops the current attempt's pods, if anything does.
    pub trouble: Option<Trouble>,
    /// The Corpus' data claim (`spec.storage.claimName`), if it exists.
    pub data_claim: Option<PersistentVolumeClaim>,
    /// Ingest Jobs of other Corpora that run now, in the namespaces the
    /// operator watches: against [`Settings::max_concurrent_ingests`].
    pub ingests_elsewhere: usize,
}

/// How an ingest ended, as the metrics count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IngestOutcome {
    /// Its version was published.
    Succeeded,
    /// Its Job failed, or it left no readable report.
    Failed,
}

/// An ingest that ended, to be counted once.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedIngest {
    /// Which attempt ended (its inputs and `spec.ingest` hashes): the same
    /// attempt reported twice is counted once.
    pub attempt: String,
    pub outcome: IngestOutcome,
    /// From the (first) Job's start to its end, when the Job still says.
    pub seconds: Option<f64>,
}

/// What to do for a Corpus.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The inputs hash of the spec as it is now.
    pub inputs: String,
    /// Objects to apply, in order.
    pub apply: Vec<Desired>,
    /// The status to write.
    pub status: CorpusStatus,
    pub events: Vec<Note>,
    /// Remove the input ConfigMaps of other inputs (an ingest finished).
    pub prune_inputs: bool,
    /// Jobs to delete: ingests for inputs that are no longer current.
    pub delete_jobs: Vec<String>,
    /// When to look again without being woken.
    pub requeue: Option<Duration>,
    /// The ingest that ended in this reconcile, for the metrics.
    pub finished: Option<FinishedIngest>,
    /// The plan starts an ingest, which `operator.maxConcurrentIngests`
    /// caps: the caller counts the ingests running elsewhere, holding the
    /// turn, and plans again with the count before it applies.
    pub needs_turn: bool,
}

/// The content hash of a Corpus: everything that decides what its index
/// holds that the controller sees without reading documents (profile spec,
/// corpus spec as indexed, source ConfigMaps' resource versions).
pub fn content_hash(
    corpus: &Corpus,
    profile: &IndexProfile,
    source_config_maps: &BTreeMap<String, String>,
) -> String {
    let mut spec = serde_json::to_value(&corpus.spec).unwrap_or_default();
    if let Some(fields) = spec.as_object_mut() {
        // How many versions are kept and how pods run do not change what
        // is indexed; where the index lives does.
        fields.remove("ingest");
        if let Some(storage) = fields.get_mut("storage").and_then(|s| s.as_object_mut()) {
            storage.remove("retainVersions");
        }
    }
    // The format is in it so that a release writing a new one rebuilds
    // every Corpus, which the routes wait for before they roll.
    short_hash(&[
        &crate::index::FORMAT_VERSION.to_le_bytes(),
        crate::ingest::profile_hash(&profile.spec).as_bytes(),
        spec.to_string().as_bytes(),
        serde_json::to_string(source_config_maps)
            .unwrap_or_default()
            .as_bytes(),
    ])
}

/// The inputs hash of a Corpus: its [`content_hash`] and what asks for a
/// fresh look at unchanged content (the `trellis.dev/reingest` value, the
/// refresh tick). `now` (Unix seconds) matters only with a
/// `refreshInterval`, through the tick it falls in.
pub fn inputs_hash(
    corpus: &Corpus,
    profile: &IndexProfile,
    source_config_maps: &BTreeMap<String, String>,
    now: u64,
) -> String {
    let reingest = corpus
        .annotations()
        .get(REINGEST_ANNOTATION)
        .cloned()
        .unwrap_or_default();
    let tick = match corpus.spec.ingest.refresh_seconds() {
        Ok(Some(every)) => (now / every).to_string(),
        _ => String::new(),
    };
    short_hash(&[
        content_hash(corpus, profile, source_config_maps).as_bytes(),
        reingest.as_bytes(),
        tick.as_bytes(),
    ])
}

/// Plans the reconcile of `corpus` given what was observed. `now_rfc3339`
/// stamps condition transitions; `now` (Unix seconds) picks the refresh
/// tick. Every condition that changes is announced by an Event.
pub fn plan_corpus(
    corpus: &Corpus,
    observed: &Observed,
    settings: &Settings,
    now: u64,
    now_rfc3339: &str,
) -> Result<Plan, Error> {
    let before = corpus
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut plan = plan_ingest(&Given {
        corpus,
        observed,
        settings,
        now,
        now_rfc3339,
    })?;
    if !super::is_paused(&corpus.metadata) {
        conditions::abnormal_from_ready(
            &mut plan.status.conditions,
            Some("Ingesting"),
            corpus.metadata.generation,
            now_rfc3339,
        );
        // A failed or stuck re-ingest: the previous version serves
        // (Ready), but the Corpus cannot reach its spec until someone acts.
        let cause = conditions::get(&plan.status.conditions, "Ingesting")
            .filter(|c| !INGEST_UNDER_WAY.contains(&c.reason.as_str()))
            .cloned();
        if let Some(cause) = cause {
            conditions::set(
                &mut plan.status.conditions,
                Set::new("Stalled", true, &cause.reason, cause.message),
                corpus.metadata.generation,
                now_rfc3339,
            );
        }
    }
    conditions::transitions(&before, &plan.status.conditions, &mut plan.events);
    plan.finished = finished_ingest(corpus.status.as_ref(), &plan.status, observed, now);
    Ok(plan)
}

/// The ingest that ended in this reconcile, if one did: the status moves
/// from an attempt pending without error to that attempt's version being
/// active (succeeded) or to its error (failed). Read from the status, not
/// the Job, so that the reconciles after it (the Job's own end, requeues,
/// a Job gone by its TTL) count nothing.
fn finished_ingest(
    before: Option<&CorpusStatus>,
    after: &CorpusStatus,
    observed: &Observed,
    now: u64,
) -> Option<FinishedIngest> {
    let pending = before?
        .pending_index
        .as_ref()
        .filter(|p| p.error.is_none())?;
    let inputs = pending.inputs.as_deref()?;
    let published = after.pending_index.is_none()
        && after
            .active_index
            .as_ref()
            .is_some_and(|a| a.inputs.as_deref() == Some(inputs));
    let failed = after
        .pending_index
        .as_ref()
        .is_some_and(|p| p.inputs.as_deref() == Some(inputs) && p.error.is_some());
    let outcome = if published {
        IngestOutcome::Succeeded
    } else if failed {
        IngestOutcome::Failed
    } else {
        return None;
    };
    Some(FinishedIngest {
        // Attempts after one that found nothing are attempts of their own.
        attempt: format!(
            "{inputs}/{}/{}",
            pending.ingest_spec.as_deref().unwrap_or_default(),
            pending.empty_attempts
        ),
        outcome,
        seconds: ingest_seconds(observed, now),
    })
}

/// Seconds from the start of the attempt's (first) Job to the end of its
/// last, or to `now` (Unix seconds) when the last has not ended yet: its
/// pod writes the report, which wakes the Corpus, before it exits. None
/// when the first Job is gone (removed by its TTL) or never started.
fn ingest_seconds(observed: &Observed, now: u64) -> Option<f64> {
    let first = observed.ingest_job.as_ref()?;
    let started = first.status.as_ref()?.start_time.as_ref()?.0;
    let last = observed.finalize_job.as_ref().unwrap_or(first);
    let ended = job_end(last).map_or(now as f64, |t| t.as_millisecond() as f64 / 1000.0);
    Some(ended - started.as_millisecond() as f64 / 1000.0)
}

/// When a Job completed or failed, as its status says.
fn job_end(job: &Job) -> Option<k8s_openapi::jiff::Timestamp> {
    let status = job.status.as_ref()?;
    if let Some(done) = &status.completion_time {
        return Some(done.0);
    }
    status
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.status == "True" && matches!(c.type_.as_str(), "Complete" | "Failed"))
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

/// The profile's [`served_hash`](crate::spec::IndexProfileSpec::served_hash)
/// as an ingest pod records it: its model and key file paths resolved
/// against the directory the operator mounts the manifests in.
pub fn served_profile(spec: &crate::spec::IndexProfileSpec) -> String {
    let mut recorded = spec.clone();
    recorded.embedding = crate::embed::with_resolved_path(
        &spec.embedding,
        Some(std::path::Path::new(super::paths::MANIFESTS)),
    );
    recorded.served_hash()
}

/// Where a Job is.
#[derive(Clone, Debug, PartialEq)]
pub enum JobState {
    Running,
    Succeeded,
    Failed(String),
}

/// A Job's state from its conditions (`Complete`, `Failed`).
pub fn job_state(job: &Job) -> JobState {
    let conditions = job
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    for c in conditions {
        if c.status != "True" {
            continue;
        }
        match c.type_.as_str() {
            "Complete" | "SuccessCriteriaMet" => return JobState::Succeeded,
            "Failed" | "FailureTarget" => {
                let reason = [c.reason.as_deref(), c.message.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(": ");
                return JobState::Failed(if reason.is_empty() {
                    "failed".into()
                } else {
                    reason
                });
            }
            _ => {}
        }
    }
    JobState::Running
}

/// The versions an ingest must keep whatever `retainVersions` says: the
/// active one (routes' pods may be rolling to it) and every one a route
/// serves.
pub fn versions_to_keep(status: &CorpusStatus, observed: &Observed) -> Vec<String> {
    let mut keep: Vec<String> = status
        .active_index
        .iter()
        .map(|a| a.version.clone())
        .chain(observed.served_versions.iter().cloned())
        .filter(|v| !v.is_empty())
        .collect();
    keep.sort();
    keep.dedup();
    keep
}
