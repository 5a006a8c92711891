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

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim};
use kube::ResourceExt;

use super::conditions::{self, Note, Set};
use super::ingest_job::{Desired, Names, finalize_job, ingest_objects, ingest_spec_hash};
use super::report::{read_report, report_error};
use super::storage::{self, Placement};
use super::trouble::Trouble;
use super::{CONTENT_LABEL, Error, INGEST_SPEC_LABEL, REINGEST_ANNOTATION, Settings, short_hash};
use crate::spec::{Corpus, CorpusStatus, IndexProfile, IndexVersionStatus};

/// Reasons of the `Ingesting` condition that are no problem: any other
/// (a failed Job, a pod that cannot run) makes the Corpus `Stalled`.
const INGEST_UNDER_WAY: &[&str] = &["JobRunning", "Idle", "IngestSucceeded", INGEST_QUEUED];

/// How often a running ingest is looked at without being woken.
const RUNNING_RECHECK: Duration = Duration::from_secs(30);

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

/// Why a Corpus cannot be ingested in a cluster as written, if it cannot.
fn unsupported_sources(corpus: &Corpus) -> Option<String> {
    corpus.spec.sources.iter().enumerate().find_map(|(i, s)| {
        s.path.as_ref().map(|p| {
            format!(
                "source {i} is a local path ({p:?}), which names a directory on the machine \
                 running `trellis ingest`; in a cluster use a `pvc`, `configMap`, `http` or \
                 `s3` source"
            )
        })
    })
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
    let mut plan = plan_ingest(corpus, observed, settings, now, now_rfc3339)?;
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

fn plan_ingest(
    corpus: &Corpus,
    observed: &Observed,
    settings: &Settings,
    now: u64,
    now_rfc3339: &str,
) -> Result<Plan, Error> {
    let generation = corpus.metadata.generation;
    let mut plan = Plan {
        inputs: String::new(),
        apply: Vec::new(),
        status: corpus.status.clone().unwrap_or_default(),
        events: Vec::new(),
        prune_inputs: false,
        delete_jobs: Vec::new(),
        requeue: None,
        finished: None,
        needs_turn: false,
    };
    let set = |plan: &mut Plan, change: Set<'_>| {
        conditions::set(&mut plan.status.conditions, change, generation, now_rfc3339)
    };

    if super::is_paused(&corpus.metadata) {
        // The generation is not acted on while paused: observedGeneration
        // stays where it was, so tools that wait for it keep waiting.
        set(&mut plan, Set::paused());
        return Ok(plan);
    }
    plan.status.observed_generation = generation;
    conditions::remove(&mut plan.status.conditions, "Paused");

    let Some(profile) = &observed.profile else {
        let message = format!(
            "IndexProfile {:?} not found in this namespace",
            corpus.spec.profile_ref.name
        );
        set(
            &mut plan,
            Set::new("Ready", false, "ProfileNotFound", message.clone()),
        );
        plan.status.phase = Some(phase(&plan.status, false));
        plan.requeue = Some(Duration::from_secs(60));
        return Ok(plan);
    };
    let claim = &corpus.spec.storage.claim_name;
    let placement = Placement::of(observed.data_claim.as_ref());
    plan.status.storage = Some(storage::status(claim, observed.data_claim.as_ref()));
    let invalid = super::profile::validate(&profile.spec)
        .into_iter()
        .chain(unsupported_sources(corpus))
        .chain(storage::problem(claim, placement))
        .chain(corpus.spec.ingest.refresh_seconds().err())
        .chain(super::template::problems(
            &corpus.spec.ingest.template,
            "spec.ingest.template",
        ))
        .collect::<Vec<_>>();
    if !invalid.is_empty() {
        set(
            &mut plan,
            Set::new("Ready", false, "InvalidSpec", invalid.join("; ")),
        );
        plan.status.phase = Some("Failed".into());
        return Ok(plan);
    }

    let inputs = inputs_hash(corpus, profile, &observed.source_config_maps, now);
    let content = content_hash(corpus, profile, &observed.source_config_maps);
    plan.inputs = inputs.clone();
    let ingest_spec = ingest_spec_hash(corpus);
    let names = Names::new(corpus, &inputs);
    if let Ok(Some(every)) = corpus.spec.ingest.refresh_seconds() {
        // Wake at the next tick, when the inputs change by themselves.
        plan.requeue = Some(Duration::from_secs(every - now % every + 1));
    }

    let active_inputs = plan
        .status
        .active_index
        .as_ref()
        .and_then(|a| a.inputs.clone());
    if active_inputs.as_deref() == Some(inputs.as_str()) {
        plan.status.pending_index = None;
        set_ready(&mut plan, generation, now_rfc3339);
        return Ok(plan);
    }

    // A report for these inputs means the version is published.
    if let Some(report) = observed
        .report
        .as_ref()
        .and_then(|r| read_report(r, &inputs))
    {
        match report.map(|reported| trusted(reported, profile)) {
            Ok(Err(reason)) => {
                return Ok(failed(
                    plan,
                    "ReportRejected",
                    reason,
                    generation,
                    now_rfc3339,
                ));
            }
            Ok(Ok(version)) => {
                let previous = plan.status.active_index.as_ref().map(|a| a.version.clone());
                // A refresh that found nothing new publishes the same
                // version again: worth a status update, not an Event.
                if previous.as_deref() != Some(version.version.as_str()) {
                    let message = match previous {
                        Some(p) => format!("index version {} replaces {p}", version.version),
                        None => format!("index version {} is active", version.version),
                    };
                    plan.events.push(Note::normal("IndexPublished", message));
                }
                plan.status.active_index = Some(version);
                plan.status.pending_index = None;
                plan.prune_inputs = true;
                set(
                    &mut plan,
                    Set::new(
                        "Ingesting",
                        false,
                        "IngestSucceeded",
                        "the last ingest finished",
                    ),
                );
                set_ready(&mut plan, generation, now_rfc3339);
                return Ok(plan);
            }
            Err(reason) => {
                return Ok(failed(
                    plan,
                    "ReportUnreadable",
                    reason,
                    generation,
                    now_rfc3339,
                ));
            }
        }
    }

    // An ingest of these inputs that failed is not retried (its Job may
    // be gone, removed by its TTL) until the inputs or `spec.ingest`
    // change. A status from a release that did not record the latter
    // counts as the same: an upgrade alone retries nothing. One that
    // found nothing to index is retried when its backoff is over.
    let earlier = plan
        .status
        .pending_index
        .clone()
        .filter(|p| p.inputs.as_deref() == Some(inputs.as_str()));
    let failed_earlier = earlier.as_ref().filter(|p| p.error.is_some());
    let retry =
        failed_earlier.is_some_and(|p| p.ingest_spec.as_deref().is_some_and(|s| s != ingest_spec));
    let empty_retry_due = failed_earlier
        .and_then(|p| p.retry_at.as_deref())
        .is_some_and(|at| conditions::unix_seconds(at).is_none_or(|at| at <= now));
    let failed_before = failed_earlier
        .filter(|_| !retry && !empty_retry_due)
        .and_then(|p| p.error.clone());

    let shards = corpus.spec.ingest.shards.max(1);
    // A sharded ingest has two Jobs: the shards, then the finalize step,
    // whose start means the shards are done even once their Job is gone.
    let shards_done = shards > 1
        && (observed.finalize_job.is_some()
            || observed
                .ingest_job
                .as_ref()
                .is_some_and(|j| job_state(j) == JobState::Succeeded));
    let (job_name, job) = if shards_done {
        (&names.finalize_job, observed.finalize_job.as_ref())
    } else {
        (&names.ingest_job, observed.ingest_job.as_ref())
    };
    plan.status.pending_index = Some(IndexVersionStatus {
        inputs: Some(inputs.clone()),
        profile_hash: Some(crate::ingest::profile_hash(&profile.spec)),
        job: Some(job_name.clone()),
        ingest_spec: Some(ingest_spec.clone()),
        empty_attempts: earlier.as_ref().map_or(0, |p| p.empty_attempts),
        retry_at: earlier
            .as_ref()
            .and_then(|p| p.retry_at.clone())
            .filter(|_| !empty_retry_due),
        ..Default::default()
    });
    let keep = versions_to_keep(&plan.status, observed);
    match job.map(job_state) {
        None if failed_before.is_some() => {
            let message = failed_before.unwrap_or_default();
            let retry_at = earlier.as_ref().and_then(|p| p.retry_at.as_deref());
            if let Some(at) = retry_at.and_then(conditions::unix_seconds) {
                // Waiting out the backoff of an ingest that found nothing.
                plan.requeue = Some(Duration::from_secs(at.saturating_sub(now).max(1)));
                return Ok(failed(
                    plan,
                    NOTHING_TO_INDEX,
                    message,
                    generation,
                    now_rfc3339,
                ));
            }
            return Ok(failed(
                plan,
                "IngestFailed",
                message,
                generation,
                now_rfc3339,
            ));
        }
        None => {
            // An ingest of the same content, started by an earlier tick or
            // reingest value, is still running: it is waited for, not
            // cancelled, or a refresh shorter than an ingest would never
            // publish. One running with another `spec.ingest` (stuck
            // unschedulable, short of memory) is what the edit replaces.
            let running = observed.other_jobs.iter().find(|j| {
                job_state(j) == JobState::Running
                    && j.labels().get(CONTENT_LABEL) == Some(&content)
                    && j.labels()
                        .get(INGEST_SPEC_LABEL)
                        .is_none_or(|s| *s == ingest_spec)
            });
            if let Some(running) = running {
                let running = running.name_any();
                if let Some(pending) = plan.status.pending_index.as_mut() {
                    pending.job = Some(running.clone());
                }
                set_ingesting(&mut plan, &running, generation, now_rfc3339);
                plan.status.phase = Some(phase(&plan.status, true));
                return Ok(plan);
            }
            // Ingests for inputs that are no longer current are wasted
            // work and would race this one for the version pointer.
            plan.delete_jobs = observed.other_jobs.iter().map(|j| j.name_any()).collect();
            // A new ingest past the cap waits its turn; the finalize step
            // of one whose shards are done is part of a running ingest.
            plan.needs_turn = !shards_done;
            if !shards_done && observed.ingests_elsewhere >= settings.max_concurrent_ingests {
                queue_ingest(&mut plan, observed, settings, generation, now_rfc3339);
                return Ok(plan);
            }
            if shards_done {
                let owner = super::owner_reference(corpus)?;
                plan.apply = vec![Desired::Job(Box::new(finalize_job(
                    corpus, profile, &inputs, &content, &names, settings, owner, &keep,
                )))];
                plan.events.push(Note::normal(
                    "FinalizeStarted",
                    format!("shards done; Job {job_name} builds and publishes the version"),
                ));
            } else {
                plan.apply =
                    ingest_objects(corpus, profile, &inputs, &content, &names, settings, &keep)?;
                let shards = format!("{shards} shard{}", if shards == 1 { "" } else { "s" });
                let attempts = earlier.as_ref().map_or(0, |p| p.empty_attempts);
                plan.events.push(if empty_retry_due && !retry {
                    Note::normal(
                        "IngestRetried",
                        format!(
                            "{} found nothing to index; Job {job_name} looks again",
                            attempts_text(attempts)
                        ),
                    )
                } else if retry {
                    Note::normal(
                        "IngestRetried",
                        format!(
                            "spec.ingest changed since the ingest of inputs {inputs} failed; \
                             Job {job_name} tries again in {shards}"
                        ),
                    )
                } else {
                    Note::normal(
                        "IngestStarted",
                        format!("Job {job_name} ingests inputs {inputs} in {shards}"),
                    )
                });
            }
            place_jobs(&mut plan.apply, claim, placement);
        }
        Some(JobState::Running) => {
            // A Job whose pods cannot be created (a quota) changes no
            // object this reconciler watches: look again soon.
            plan.requeue = Some(
                plan.requeue
                    .map_or(RUNNING_RECHECK, |r| r.min(RUNNING_RECHECK)),
            );
            if let Some(trouble) = &observed.trouble {
                set_stuck(&mut plan, job_name, trouble, generation, now_rfc3339);
                plan.status.phase = Some(phase(&plan.status, true));
                return Ok(plan);
            }
        }
        Some(JobState::Failed(reason)) => {
            let reported = observed
                .report
                .as_ref()
                .and_then(|r| report_error(r, &inputs));
            if let Some(found) = reported.as_ref().filter(|f| f.nothing_indexed) {
                return Ok(nothing_to_index(
                    plan,
                    earlier.as_ref(),
                    job_name,
                    &found.message,
                    now,
                    generation,
                    now_rfc3339,
                ));
            }
            // What the ingest said, else what its pod died of (the Job
            // says only that it ran out of retries).
            let told = reported
                .map(|e| format!(" ({})", e.message))
                .or_else(|| {
                    observed
                        .trouble
                        .as_ref()
                        .map(|t| format!(" ({})", t.message))
                })
                .unwrap_or_default();
            let message = format!("Job {job_name} failed: {reason}{told}");
            let reason = observed
                .trouble
                .as_ref()
                .map_or("IngestFailed", |t| t.reason);
            return Ok(failed(plan, reason, message, generation, now_rfc3339));
        }
        Some(JobState::Succeeded) => {
            let message = format!(
                "Job {job_name} succeeded but left no report in ConfigMap {}",
                names.report
            );
            return Ok(failed(
                plan,
                "ReportMissing",
                message,
                generation,
                now_rfc3339,
            ));
        }
    }
    set_ingesting(&mut plan, job_name, generation, now_rfc3339);
    plan.status.phase = Some(phase(&plan.status, true));
    Ok(plan)
}

/// The reason of an ingest that found nothing to index.
pub const NOTHING_TO_INDEX: &str = "NothingToIndex";

/// The first wait after an ingest found nothing to index; each further
/// attempt waits twice as long, up to [`EMPTY_RETRY_MAX`].
const EMPTY_RETRY_FIRST: Duration = Duration::from_secs(30);
const EMPTY_RETRY_MAX: Duration = Duration::from_secs(600);

/// The wait after the `attempts`-th attempt that found nothing.
pub(super) fn empty_retry_backoff(attempts: u64) -> Duration {
    let doublings = attempts.saturating_sub(1).min(16) as u32;
    EMPTY_RETRY_FIRST
        .saturating_mul(2u32.saturating_pow(doublings))
        .min(EMPTY_RETRY_MAX)
}

fn attempts_text(attempts: u64) -> String {
    match attempts {
        1 => "1 attempt".to_string(),
        n => format!("{n} attempts"),
    }
}

/// Unix seconds of an RFC 3339 time the operator wrote.
/// The attempt's Job failed because its sources held nothing to index:
/// an empty claim the documents are yet to be copied into, a bucket not
/// yet filled. The Corpus waits, says so and how to go on, and tries
/// again after a backoff; the first time this Job's failure is seen it
/// counts an attempt, and once the backoff is over the Job is deleted so
/// that the next reconcile starts a fresh one under the same name.
fn nothing_to_index(
    mut plan: Plan,
    earlier: Option<&IndexVersionStatus>,
    job_name: &str,
    told: &str,
    now: u64,
    generation: Option<i64>,
    now_rfc3339: &str,
) -> Plan {
    let counted = earlier.filter(|p| p.error.is_some() && p.retry_at.is_some());
    if let Some(counted) = counted {
        let message = counted.error.clone().unwrap_or_default();
        let due = counted
            .retry_at
            .as_deref()
            .and_then(conditions::unix_seconds)
            .unwrap_or(now);
        if let Some(pending) = plan.status.pending_index.as_mut() {
            pending.retry_at = counted.retry_at.clone();
        }
        if due <= now {
            plan.delete_jobs.push(job_name.to_string());
            plan.requeue = Some(Duration::from_secs(1));
        } else {
            plan.requeue = Some(Duration::from_secs(due - now));
        }
        return failed(plan, NOTHING_TO_INDEX, message, generation, now_rfc3339);
    }
    let attempts = earlier.map_or(0, |p| p.empty_attempts) + 1;
    let wait = empty_retry_backoff(attempts);
    let at = k8s_openapi::jiff::Timestamp::from_second((now + wait.as_secs()) as i64)
        .map(|t| t.to_string())
        .unwrap_or_default();
    let message = format!(
        "Job {job_name}: {told}; {} so far, the next at {at}. Put documents in the sources \
         and that attempt ingests them, or set the annotation {REINGEST_ANNOTATION} to a new \
         value to ingest at once",
        attempts_text(attempts)
    );
    if let Some(pending) = plan.status.pending_index.as_mut() {
        pending.empty_attempts = attempts;
        pending.retry_at = Some(at);
    }
    plan.requeue = Some(wait);
    failed(plan, NOTHING_TO_INDEX, message, generation, now_rfc3339)
}

/// The reason of an ingest that waits for others to end.
pub const INGEST_QUEUED: &str = "IngestQueued";

/// How often a queued ingest looks for a free turn: another Corpus' Job
/// ending wakes only that Corpus.
const QUEUED_RECHECK: Duration = Duration::from_secs(10);

/// As many ingests as [`Settings::max_concurrent_ingests`] allows run
/// elsewhere: this one starts when one of them ends. The version that
/// serves (if any) goes on serving.
fn queue_ingest(
    plan: &mut Plan,
    observed: &Observed,
    settings: &Settings,
    generation: Option<i64>,
    now: &str,
) {
    let message = format!(
        "{} ingests run in the watched namespaces, as many as operator.maxConcurrentIngests \
         ({}) allows; this one starts when one of them ends",
        observed.ingests_elsewhere, settings.max_concurrent_ingests
    );
    conditions::set(
        &mut plan.status.conditions,
        Set::new("Ingesting", false, INGEST_QUEUED, message.clone()),
        generation,
        now,
    );
    let ready = ready_beside(
        &plan.status,
        " while a new one waits its turn",
        INGEST_QUEUED,
        message,
    );
    conditions::set(&mut plan.status.conditions, ready, generation, now);
    plan.status.phase = Some(phase(&plan.status, false));
    plan.requeue = Some(
        plan.requeue
            .map_or(QUEUED_RECHECK, |r| r.min(QUEUED_RECHECK)),
    );
}

/// The version an ingest pod reported, with what the routes' pods act
/// on taken from the profile the operator rendered rather than from the
/// pod, which parsed documents anyone may have written: the Secrets they
/// mount, the graph store they read and the profile hash they check the
/// version's `profile.json` against. A report of another profile is
/// refused.
fn trusted(
    reported: IndexVersionStatus,
    profile: &IndexProfile,
) -> Result<IndexVersionStatus, String> {
    let rendered = profile.spec.canonical_hash();
    if reported.profile_hash.as_deref() != Some(rendered.as_str()) {
        return Err(format!(
            "the ingest reported index version {} built with profile {}, not the profile \
             {rendered} the operator rendered for it; it is not served",
            reported.version,
            reported.profile_hash.as_deref().unwrap_or("(none)")
        ));
    }
    Ok(IndexVersionStatus {
        secrets: profile.spec.secret_names(),
        graph: reported.graph.map(|_| profile.spec.graph.clone()),
        served_profile: Some(served_profile(&profile.spec)),
        ..reported
    })
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

/// Places the pods of the Jobs in `apply` as the data claim allows.
fn place_jobs(apply: &mut [Desired], claim: &str, placement: Placement) {
    for desired in apply {
        if let Desired::Job(job) = desired
            && let Some(spec) = job.spec.as_mut()
        {
            storage::place(&mut spec.template, claim, placement);
        }
    }
}

/// `Ready` beside an ingest of the current inputs that is not done: true
/// on the version that serves, if there is one (`beside` says what goes
/// on beside it), else false with `reason` and `message`.
fn ready_beside<'a>(
    status: &CorpusStatus,
    beside: &str,
    reason: &'a str,
    message: String,
) -> Set<'a> {
    match &status.active_index {
        Some(active) => Set::new(
            "Ready",
            true,
            "IndexActive",
            format!("index version {} serves{beside}", active.version),
        ),
        None => Set::new("Ready", false, reason, message),
    }
}

fn set_ingesting(plan: &mut Plan, job: &str, generation: Option<i64>, now: &str) {
    conditions::set(
        &mut plan.status.conditions,
        Set::new(
            "Ingesting",
            true,
            "JobRunning",
            format!("Job {job} is running"),
        ),
        generation,
        now,
    );
    // The active version (if any) keeps serving meanwhile.
    let ready = ready_beside(
        &plan.status,
        " while a new one is built",
        "Ingesting",
        "the first index version is being built".to_string(),
    );
    conditions::set(&mut plan.status.conditions, ready, generation, now);
}

/// The attempt's Job runs but its pods cannot: `Ingesting` stays true
/// with the reason (the Job may still get on once someone acts), and
/// without a version to serve the Corpus is not `Ready` for it.
fn set_stuck(plan: &mut Plan, job: &str, trouble: &Trouble, generation: Option<i64>, now: &str) {
    set_ingesting(plan, job, generation, now);
    let message = format!("Job {job}: {}", trouble.message);
    conditions::set(
        &mut plan.status.conditions,
        Set::new("Ingesting", true, trouble.reason, message.clone()),
        generation,
        now,
    );
    if plan.status.active_index.is_none() {
        conditions::set(
            &mut plan.status.conditions,
            Set::new("Ready", false, trouble.reason, message),
            generation,
            now,
        );
    }
}

fn set_ready(plan: &mut Plan, generation: Option<i64>, now: &str) {
    let Some(active) = plan.status.active_index.clone() else {
        return;
    };
    conditions::set(
        &mut plan.status.conditions,
        Set::new(
            "Ready",
            true,
            "IndexActive",
            format!(
                "index version {} ({} documents, {} sentences)",
                active.version, active.documents, active.sentences
            ),
        ),
        generation,
        now,
    );
    let degraded = active.failed_documents > 0;
    let message = if degraded {
        format!(
            "{} documents failed: {}",
            active.failed_documents,
            active.failures.join("; ")
        )
    } else {
        "every document was indexed".to_string()
    };
    conditions::set(
        &mut plan.status.conditions,
        Set::new(
            "Degraded",
            degraded,
            if degraded {
                "DocumentsFailed"
            } else {
                "AllDocumentsIndexed"
            },
            message,
        ),
        generation,
        now,
    );
    if conditions::get(&plan.status.conditions, "Ingesting").is_some() {
        conditions::set(
            &mut plan.status.conditions,
            Set::new("Ingesting", false, "Idle", "no ingest is running"),
            generation,
            now,
        );
    }
    plan.status.phase = Some("Ready".into());
}

/// The ingest of the pending inputs failed: `Ingesting` false with the
/// reason, which `pendingIndex.error` keeps so that the ingest is not
/// retried until the inputs change. With no version yet the Corpus is not
/// `Ready` (phase `Failed`); with one, that version still serves, so it
/// stays `Ready` and the failure shows as `Stalled` (phase `Degraded`, see
/// [`plan`]).
fn failed(
    mut plan: Plan,
    reason: &'static str,
    message: String,
    generation: Option<i64>,
    now: &str,
) -> Plan {
    let ready = ready_beside(
        &plan.status,
        &format!("; the ingest of the current inputs failed: {message}"),
        reason,
        message.clone(),
    );
    conditions::set(&mut plan.status.conditions, ready, generation, now);
    conditions::set(
        &mut plan.status.conditions,
        Set::new("Ingesting", false, reason, message.clone()),
        generation,
        now,
    );
    if let Some(pending) = plan.status.pending_index.as_mut() {
        pending.error = Some(message);
    }
    let phase = match (&plan.status.active_index, reason) {
        (Some(_), _) => "Degraded",
        // Stalled until documents arrive, but not failed: it is tried
        // again by itself.
        (None, NOTHING_TO_INDEX) => "Pending",
        (None, _) => "Failed",
    };
    plan.status.phase = Some(phase.into());
    plan
}

fn phase(status: &CorpusStatus, ingesting: bool) -> String {
    match (ingesting, &status.active_index) {
        (true, _) => "Ingesting",
        (false, Some(_)) => "Ready",
        (false, None) => "Pending",
    }
    .to_string()
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
