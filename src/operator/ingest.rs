//! The Corpus reconciler's pure half: from a Corpus, its profile and what
//! the cluster holds of its ingest, the objects to apply and the status to
//! write.
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

use k8s_openapi::api::batch::v1::{
    Job, JobSpec, PodFailurePolicy, PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, EnvVar, EnvVarSource, ObjectFieldSelector,
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, PodSecurityContext, PodSpec,
    PodTemplateSpec, SeccompProfile, SecretVolumeSource, SecurityContext, ServiceAccount, Volume,
    VolumeMount,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;

use super::conditions::{self, Note, Set};
use super::storage::{self, Placement};
use super::trouble::Trouble;
use super::{
    CONTENT_LABEL, CORPUS_LABEL, Error, INGEST_SPEC_LABEL, INPUTS_LABEL, MAX_JOB_NAME,
    REINGEST_ANNOTATION, Settings, common_labels, object_name, object_name_within, paths,
    short_hash,
};
use crate::ingest::IngestReport;
use crate::locations;
use crate::spec::{Corpus, CorpusStatus, IndexProfile, IndexVersionStatus};

/// Reasons of the `Ingesting` condition that are no problem: any other
/// (a failed Job, a pod that cannot run) makes the Corpus `Stalled`.
const INGEST_UNDER_WAY: &[&str] = &["JobRunning", "Idle", "IngestSucceeded"];

/// How often a running ingest is looked at without being woken.
const RUNNING_RECHECK: Duration = Duration::from_secs(30);

/// The ConfigMap key holding the inputs hash an ingest ran for.
pub const REPORT_INPUTS_KEY: &str = "inputs";
/// The ConfigMap key holding the ingest's [`IndexVersionStatus`] as JSON.
pub const REPORT_STATUS_KEY: &str = "status.json";
/// Failed (and flagged) documents listed in a status (all are counted).
const MAX_LISTED: usize = 20;
/// The user id of the image (Dockerfile).
const IMAGE_USER: i64 = 10001;

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
}

/// An object the plan wants applied.
#[derive(Clone, Debug)]
pub enum Desired {
    ServiceAccount(ServiceAccount),
    Role(Role),
    RoleBinding(RoleBinding),
    ConfigMap(ConfigMap),
    /// Boxed: a Job is several times the size of the other objects.
    Job(Box<Job>),
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
}

/// The names of a Corpus' ingest objects for some inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Names {
    pub ingest_job: String,
    pub finalize_job: String,
    pub inputs_config: String,
    pub report: String,
    pub service_account: String,
}

impl Names {
    /// The names of the attempt at `inputs` with the Corpus' `spec.ingest`
    /// as it is now: a new `spec.ingest` is a new Job, not an edit of one
    /// (a Job's pod template cannot change).
    pub fn new(corpus: &Corpus, inputs: &str) -> Self {
        let attempt = short_hash(&[inputs.as_bytes(), ingest_spec_hash(corpus).as_bytes()]);
        let short = &attempt[..8];
        let corpus = corpus.name_any();
        let corpus = corpus.as_str();
        Self {
            ingest_job: object_name_within(corpus, &format!("ingest-{short}"), MAX_JOB_NAME),
            finalize_job: object_name_within(corpus, &format!("finalize-{short}"), MAX_JOB_NAME),
            inputs_config: object_name(corpus, &format!("inputs-{short}")),
            report: object_name(corpus, "ingest-report"),
            service_account: object_name(corpus, "ingest"),
        }
    }
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

/// The hash of a Corpus' `spec.ingest`: how its ingest pods run, which
/// [`content_hash`] leaves out. A failed ingest runs again when it
/// changes.
pub fn ingest_spec_hash(corpus: &Corpus) -> String {
    short_hash(&[serde_json::to_string(&corpus.spec.ingest)
        .unwrap_or_default()
        .as_bytes()])
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

/// The ConfigMaps the Corpus' `configMap` sources name.
pub fn source_config_map_names(corpus: &Corpus) -> Vec<String> {
    let mut names: Vec<String> = corpus
        .spec
        .sources
        .iter()
        .filter_map(|s| s.config_map.as_ref().map(|c| c.name.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The status an ingest reports for the version it published: counts, the
/// first failures, and what it was built from.
pub fn version_status(
    report: &IngestReport,
    inputs: &str,
    profile: &crate::spec::IndexProfileSpec,
) -> IndexVersionStatus {
    let m = &report.manifest;
    IndexVersionStatus {
        version: m.version.clone(),
        inputs: Some(inputs.to_string()),
        profile_hash: Some(m.profile_hash.clone()),
        format: Some(m.format_version),
        secrets: profile.secret_names(),
        job: None,
        ingest_spec: None,
        documents: m.counts.documents as u64,
        failed_documents: m.counts.failed_documents as u64,
        flagged_documents: m.counts.flagged_documents as u64,
        sentences: m.counts.sentences as u64,
        chunks: m.counts.chunks as u64,
        edges: m.counts.related_edges as u64,
        skipped_entries: report.skipped.len() as u64,
        failures: listed(&m.failed),
        flagged: listed(&m.flagged),
        error: None,
    }
}

/// The first few of a version's notes on documents, for its status.
fn listed(notes: &[crate::index::DocumentNote]) -> Vec<String> {
    notes
        .iter()
        .take(MAX_LISTED)
        .map(|n| format!("{}: {}", n.key, n.reason))
        .collect()
}

/// Reads an ingest's report ConfigMap: the status it published, when it
/// ran for `inputs`.
pub fn read_report(report: &ConfigMap, inputs: &str) -> Option<Result<IndexVersionStatus, String>> {
    let data = report.data.as_ref()?;
    if data.get(REPORT_INPUTS_KEY).map(String::as_str) != Some(inputs) {
        return None;
    }
    let json = data.get(REPORT_STATUS_KEY)?;
    Some(
        serde_json::from_str::<IndexVersionStatus>(json)
            .map(|status| IndexVersionStatus {
                inputs: Some(inputs.to_string()),
                ..status
            })
            .map_err(|e| format!("unreadable ingest report: {e}")),
    )
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
    Ok(plan)
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
        match report {
            Ok(version) => {
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
    // counts as the same: an upgrade alone retries nothing.
    let failed_earlier = plan
        .status
        .pending_index
        .as_ref()
        .filter(|p| p.inputs.as_deref() == Some(inputs.as_str()) && p.error.is_some());
    let retry =
        failed_earlier.is_some_and(|p| p.ingest_spec.as_deref().is_some_and(|s| s != ingest_spec));
    let failed_before = failed_earlier
        .filter(|_| !retry)
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
        ..Default::default()
    });
    let keep = versions_to_keep(&plan.status, observed);
    match job.map(job_state) {
        None if failed_before.is_some() => {
            let message = failed_before.unwrap_or_default();
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
                plan.events.push(if retry {
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
            // What the ingest said, else what its pod died of (the Job
            // says only that it ran out of retries).
            let told = observed
                .report
                .as_ref()
                .and_then(|r| report_error(r, &inputs))
                .map(|e| format!(" ({e})"))
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
    let (ready, reason, message) = match &plan.status.active_index {
        Some(active) => (
            true,
            "IndexActive",
            format!(
                "index version {} serves while a new one is built",
                active.version
            ),
        ),
        None => (
            false,
            "Ingesting",
            "the first index version is being built".to_string(),
        ),
    };
    conditions::set(
        &mut plan.status.conditions,
        Set::new("Ready", ready, reason, message),
        generation,
        now,
    );
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
/// `Ready`; with one, that version still serves, so it stays `Ready` and
/// the failure shows as `Stalled` (see [`plan`]).
fn failed(
    mut plan: Plan,
    reason: &'static str,
    message: String,
    generation: Option<i64>,
    now: &str,
) -> Plan {
    let ready = match &plan.status.active_index {
        Some(active) => Set::new(
            "Ready",
            true,
            "IndexActive",
            format!(
                "index version {} serves; the ingest of the current inputs failed: {message}",
                active.version
            ),
        ),
        None => Set::new("Ready", false, reason, message.clone()),
    };
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
    plan.status.phase = Some("Failed".into());
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

/// The manifests an ingest pod reads: the profile and the corpus, as the
/// embedded mode would read them from files.
pub fn render_manifests(corpus: &Corpus, profile: &IndexProfile) -> Result<String, Error> {
    let profile_doc = serde_json::json!({
        "apiVersion": crate::spec::API_VERSION,
        "kind": "IndexProfile",
        "metadata": {"name": profile.name_any()},
        "spec": profile.spec,
    });
    let corpus_doc = serde_json::json!({
        "apiVersion": crate::spec::API_VERSION,
        "kind": "Corpus",
        "metadata": {"name": corpus.name_any()},
        "spec": corpus.spec,
    });
    let render =
        |v: &serde_json::Value| serde_yaml::to_string(v).map_err(|e| Error::Render(e.to_string()));
    Ok(format!(
        "{}---\n{}",
        render(&profile_doc)?,
        render(&corpus_doc)?
    ))
}

/// The labels of a Corpus' ingest objects; with `inputs`, those of one
/// attempt (its Jobs and rendered manifests).
fn labels(corpus: &Corpus, inputs: Option<&str>) -> BTreeMap<String, String> {
    let mut labels = common_labels("ingest");
    labels.insert(CORPUS_LABEL.into(), super::label_value(&corpus.name_any()));
    if let Some(inputs) = inputs {
        labels.insert(INPUTS_LABEL.into(), inputs.into());
        labels.insert(INGEST_SPEC_LABEL.into(), ingest_spec_hash(corpus));
    }
    labels
}

fn meta(
    name: &str,
    namespace: Option<String>,
    labels: BTreeMap<String, String>,
    owner: &OwnerReference,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace,
        labels: Some(labels),
        owner_references: Some(vec![owner.clone()]),
        ..Default::default()
    }
}

/// Everything a new ingest needs, in the order to apply it: the ingest
/// pods' ServiceAccount and the Role that lets them write their report
/// ConfigMap and nothing else, the report ConfigMap itself (metadata only:
/// its data belongs to the pods), the rendered manifests, and the Job.
///
/// `keep` names the versions the ingest must not remove when it applies
/// `retainVersions`: those routes serve or are rolling to.
pub fn ingest_objects(
    corpus: &Corpus,
    profile: &IndexProfile,
    inputs: &str,
    content: &str,
    names: &Names,
    settings: &Settings,
    keep: &[String],
) -> Result<Vec<Desired>, Error> {
    let name = corpus.name_any();
    let ns = corpus.namespace();
    let owner = super::owner_reference(corpus)?;
    let base = labels(corpus, None);
    let account = ServiceAccount {
        metadata: meta(&names.service_account, ns.clone(), base.clone(), &owner),
        automount_service_account_token: Some(true),
        ..Default::default()
    };
    let role = Role {
        metadata: meta(&names.service_account, ns.clone(), base.clone(), &owner),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".into()]),
            resource_names: Some(vec![names.report.clone()]),
            verbs: vec!["get".into(), "patch".into(), "update".into()],
            ..Default::default()
        }]),
    };
    let binding = RoleBinding {
        metadata: meta(&names.service_account, ns.clone(), base.clone(), &owner),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: names.service_account.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: names.service_account.clone(),
            namespace: ns.clone(),
            ..Default::default()
        }]),
    };
    let report = ConfigMap {
        metadata: meta(&names.report, ns.clone(), base.clone(), &owner),
        ..Default::default()
    };
    let manifests = ConfigMap {
        metadata: meta(
            &names.inputs_config,
            ns.clone(),
            labels(corpus, Some(inputs)),
            &owner,
        ),
        data: Some(BTreeMap::from([(
            "manifests.yaml".to_string(),
            render_manifests(corpus, profile)?,
        )])),
        immutable: Some(true),
        ..Default::default()
    };
    let shards = corpus.spec.ingest.shards.max(1);
    let mut args = ingest_args(&name, &names.report, inputs, keep);
    if shards > 1 {
        args.extend([
            "--shard".into(),
            format!("$(JOB_COMPLETION_INDEX)/{shards}"),
        ]);
    }
    let job = job(
        corpus,
        profile,
        &names.ingest_job,
        inputs,
        content,
        names,
        settings,
        args,
        shards,
        owner,
    );
    Ok(vec![
        Desired::ServiceAccount(account),
        Desired::Role(role),
        Desired::RoleBinding(binding),
        Desired::ConfigMap(report),
        Desired::ConfigMap(manifests),
        Desired::Job(Box::new(job)),
    ])
}

fn ingest_args(corpus: &str, report: &str, inputs: &str, keep: &[String]) -> Vec<String> {
    let mut args: Vec<String> = [
        "ingest",
        "-f",
        paths::MANIFESTS,
        "--corpus",
        corpus,
        "--data-dir",
        paths::DATA,
        "--report-configmap",
        report,
        "--inputs",
        inputs,
        "--log-format",
        "json",
    ]
    .map(String::from)
    .to_vec();
    for version in keep {
        args.extend(["--keep-version".to_string(), version.clone()]);
    }
    args
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

/// The single-pod Job that builds and publishes a sharded ingest's version
/// from the vectors its shards cached.
// The finalize Job needs what the ingest Job needs, and its own name.
#[allow(clippy::too_many_arguments)]
pub fn finalize_job(
    corpus: &Corpus,
    profile: &IndexProfile,
    inputs: &str,
    content: &str,
    names: &Names,
    settings: &Settings,
    owner: OwnerReference,
    keep: &[String],
) -> Job {
    let args = ingest_args(&corpus.name_any(), &names.report, inputs, keep);
    job(
        corpus,
        profile,
        &names.finalize_job,
        inputs,
        content,
        names,
        settings,
        args,
        1,
        owner,
    )
}

#[allow(clippy::too_many_arguments)]
fn job(
    corpus: &Corpus,
    profile: &IndexProfile,
    job_name: &str,
    inputs: &str,
    content: &str,
    names: &Names,
    settings: &Settings,
    args: Vec<String>,
    completions: u32,
    owner: OwnerReference,
) -> Job {
    let spec = &corpus.spec.ingest;
    let name = corpus.name_any();
    let mut labels = labels(corpus, Some(inputs));
    labels.insert(CONTENT_LABEL.into(), content.into());
    let (mut volumes, mut mounts) = pod_volumes(
        &corpus.spec.storage.claim_name,
        &name,
        DataAccess::Ingest,
        &names.inputs_config,
    );
    let mut claims: Vec<&str> = corpus
        .spec
        .sources
        .iter()
        .filter_map(|s| s.pvc.as_ref().map(|p| p.claim_name.as_str()))
        .collect();
    claims.sort_unstable();
    claims.dedup();
    for (i, claim) in claims.into_iter().enumerate() {
        let volume = format!("source-{i}");
        volumes.push(Volume {
            name: volume.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.to_string(),
                read_only: Some(true),
            }),
            ..Default::default()
        });
        mounts.push(mount(
            &volume,
            &format!("{}/{claim}", paths::PVC_ROOT),
            true,
        ));
    }
    // Source ConfigMaps, S3 credentials and the graph store's password,
    // each in its own directory. Optional: a missing one fails the ingest
    // (or, for the graph store, its export) with a message naming it,
    // where a required volume would leave the pod pending in silence.
    let config_maps = source_config_map_names(corpus);
    let profile_secrets = profile.spec.secret_names();
    let mut secrets: Vec<&str> = corpus
        .spec
        .sources
        .iter()
        .filter_map(|s| s.s3.as_ref()?.credentials_secret.as_ref())
        .map(|r| r.name.as_str())
        .chain(profile_secrets.iter().map(String::as_str))
        .collect();
    secrets.sort_unstable();
    secrets.dedup();
    for (i, config_map) in config_maps.iter().enumerate() {
        let volume = format!("configmap-{i}");
        volumes.push(Volume {
            name: volume.clone(),
            config_map: Some(ConfigMapVolumeSource {
                name: config_map.clone(),
                optional: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        });
        mounts.push(mount(
            &volume,
            &format!("{}/{config_map}", paths::CONFIG_MAP_ROOT),
            true,
        ));
    }
    mount_secrets(&secrets, &mut volumes, &mut mounts);
    let env_path = |name: &str, value: &str| EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    };
    let container = Container {
        name: "ingest".into(),
        image: Some(settings.image.clone()),
        image_pull_policy: Some(settings.image_pull_policy.clone()),
        args: Some(args),
        env: Some(vec![
            env_path(locations::PVC_ROOT_ENV, paths::PVC_ROOT),
            env_path(locations::CONFIG_MAP_ROOT_ENV, paths::CONFIG_MAP_ROOT),
            env_path(locations::SECRET_ROOT_ENV, paths::SECRET_ROOT),
            pod_field("POD_NAMESPACE", "metadata.namespace"),
            // Names the files this pod writes on the shared claim (build
            // directories, shard vectors): every container is PID 1.
            pod_field(crate::index::writer::POD_UID_ENV, "metadata.uid"),
        ]),
        resources: Some(
            spec.resources
                .clone()
                .unwrap_or_else(|| super::default_resources("ingest")),
        ),
        volume_mounts: Some(mounts),
        security_context: Some(container_security()),
        ..Default::default()
    };
    let mut template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels.clone()),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            service_account_name: Some(names.service_account.clone()),
            security_context: Some(pod_security()),
            containers: vec![container],
            volumes: Some(volumes),
            ..Default::default()
        }),
    };
    super::template::apply(&spec.template, settings, &mut template);
    Job {
        metadata: meta(job_name, corpus.namespace(), labels, &owner),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(saturating_i32(completions)),
            parallelism: Some(saturating_i32(
                spec.parallelism
                    .unwrap_or(completions)
                    .clamp(1, completions),
            )),
            backoff_limit: Some(saturating_i32(spec.backoff_limit)),
            active_deadline_seconds: Some(i64::from(spec.active_deadline_seconds)),
            ttl_seconds_after_finished: Some(saturating_i32(spec.ttl_seconds_after_finished)),
            // A pod evicted or preempted (a node drain, a higher priority)
            // did not fail: it does not use up the backoff limit.
            pod_failure_policy: Some(PodFailurePolicy {
                rules: vec![PodFailurePolicyRule {
                    action: "Ignore".into(),
                    on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                        type_: "DisruptionTarget".into(),
                        status: "True".into(),
                    }]),
                    on_exit_codes: None,
                }],
            }),
            template,
            ..Default::default()
        }),
        status: None,
    }
}

/// Who mounts the data claim, and so which of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DataAccess {
    /// Ingest pods: the corpus' versions and the embedding cache,
    /// writable.
    Ingest,
    /// Retrieval pods: the corpus' versions, read-only.
    Serve,
}

/// The volumes every Trellis pod has: the data claim, the rendered
/// manifests and a scratch directory under the read-only root filesystem;
/// and their mounts.
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
    let volumes = vec![
        Volume {
            name: "data".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.to_string(),
                read_only: Some(read_only),
            }),
            ..Default::default()
        },
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
    let mut mounts = vec![data_mount(&versions, read_only)];
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
fn pod_field(name: &str, field_path: &str) -> EnvVar {
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

/// The ConfigMap key holding why an ingest failed outright.
pub const REPORT_ERROR_KEY: &str = "error";

/// What an ingest pod writes into its report ConfigMap: the version it
/// published, or why it could not.
pub fn report_data(
    inputs: &str,
    outcome: Result<&IndexVersionStatus, &str>,
) -> BTreeMap<String, String> {
    let mut data = BTreeMap::from([(REPORT_INPUTS_KEY.to_string(), inputs.to_string())]);
    match outcome {
        Ok(status) => {
            data.insert(
                REPORT_STATUS_KEY.into(),
                serde_json::to_string(status).unwrap_or_default(),
            );
        }
        Err(reason) => {
            data.insert(REPORT_ERROR_KEY.into(), reason.to_string());
        }
    }
    data
}

/// Writes an ingest's report into the ConfigMap `name` of `namespace`
/// (which the controller created for it). Both keys are replaced, so a
/// report never mixes two ingests.
pub async fn write_report(
    client: kube::Client,
    namespace: &str,
    name: &str,
    data: BTreeMap<String, String>,
) -> Result<(), kube::Error> {
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client, namespace);
    let mut patch = serde_json::json!({ "data": data });
    // A merge patch keeps keys it does not mention: clear the other ones.
    for key in [REPORT_STATUS_KEY, REPORT_ERROR_KEY] {
        if !data.contains_key(key) {
            patch["data"][key] = serde_json::Value::Null;
        }
    }
    api.patch(
        name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// Why the ingest for `inputs` failed, as its pod reported it.
pub fn report_error<'r>(report: &'r ConfigMap, inputs: &str) -> Option<&'r str> {
    let data = report.data.as_ref()?;
    if data.get(REPORT_INPUTS_KEY).map(String::as_str) != Some(inputs) {
        return None;
    }
    data.get(REPORT_ERROR_KEY).map(String::as_str)
}
/// A count for a Kubernetes `int32` field. The CRD bounds these below
/// `i32::MAX`; an object admitted before the bounds existed gets the
/// largest value rather than a negative one.
pub(super) fn saturating_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}
