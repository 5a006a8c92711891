//! A Corpus' ingest as explicit states. Each reconcile finds the Corpus in
//! one [`IngestState`] ([`IngestState::of`] decides which, in order of
//! precedence) and plans the step out of it with the function named for
//! that state: start the ingest, wait for a turn, follow the Job, publish
//! its version, record its failure, wait out the backoff of one that found
//! nothing to index. Before any of them, a Corpus that is paused, misses
//! its profile or cannot be ingested as written is planned as such.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;

use super::status::{failed, phase, ready_beside, set_ingesting, set_ready, set_stuck};
use super::{
    JobState, Observed, Plan, content_hash, inputs_hash, job_state, served_profile,
    versions_to_keep,
};
use crate::operator::conditions::{self, Note, Set};
use crate::operator::ingest_job::{Desired, Names, finalize_job, ingest_objects, ingest_spec_hash};
use crate::operator::report::{read_report, report_error};
use crate::operator::storage::{self, Placement};
use crate::operator::trouble::Trouble;
use crate::operator::{
    CONTENT_LABEL, Error, INGEST_SPEC_LABEL, REINGEST_ANNOTATION, Settings, is_paused,
    owner_reference,
};
use crate::spec::{Corpus, CorpusStatus, IndexProfile, IndexVersionStatus};

/// The reason of an ingest that found nothing to index.
pub const NOTHING_TO_INDEX: &str = "NothingToIndex";

/// The reason of an ingest that waits for others to end.
pub const INGEST_QUEUED: &str = "IngestQueued";

/// How often a running ingest is looked at without being woken.
const RUNNING_RECHECK: Duration = Duration::from_secs(30);

/// How often a queued ingest looks for a free turn: another Corpus' Job
/// ending wakes only that Corpus.
const QUEUED_RECHECK: Duration = Duration::from_secs(10);

/// How soon a Corpus whose profile is missing looks for it again.
const PROFILE_RECHECK: Duration = Duration::from_secs(60);

/// The first wait after an ingest found nothing to index; each further
/// attempt waits twice as long, up to [`EMPTY_RETRY_MAX`].
const EMPTY_RETRY_FIRST: Duration = Duration::from_secs(30);
const EMPTY_RETRY_MAX: Duration = Duration::from_secs(600);

/// What a Corpus' plan is made from.
pub(super) struct Given<'o> {
    pub corpus: &'o Corpus,
    pub observed: &'o Observed,
    pub settings: &'o Settings,
    /// Unix seconds: picks the refresh tick, times backoffs.
    pub now: u64,
    /// Stamps condition transitions.
    pub now_rfc3339: &'o str,
}

impl Given<'_> {
    fn generation(&self) -> Option<i64> {
        self.corpus.metadata.generation
    }

    /// Sets a condition on the plan's status, stamped with this reconcile.
    fn set(&self, plan: &mut Plan, change: Set<'_>) {
        conditions::set(
            &mut plan.status.conditions,
            change,
            self.generation(),
            self.now_rfc3339,
        );
    }
}

/// The attempt at the Corpus' inputs as they are now: its hashes, the
/// names of its objects and the Job it follows.
struct Attempt<'o> {
    profile: &'o IndexProfile,
    placement: Placement,
    inputs: String,
    content: String,
    ingest_spec: String,
    names: Names,
    shards: u32,
    /// A sharded ingest has two Jobs: the shards, then the finalize step,
    /// whose start means the shards are done even once their Job is gone.
    shards_done: bool,
}

impl<'o> Attempt<'o> {
    fn new(given: &Given<'o>, profile: &'o IndexProfile, placement: Placement) -> Self {
        let (corpus, observed) = (given.corpus, given.observed);
        let inputs = inputs_hash(corpus, profile, &observed.source_config_maps, given.now);
        let shards = corpus.spec.ingest.shards.max(1);
        let shards_done = shards > 1
            && (observed.finalize_job.is_some()
                || observed
                    .ingest_job
                    .as_ref()
                    .is_some_and(|j| job_state(j) == JobState::Succeeded));
        Self {
            profile,
            placement,
            content: content_hash(corpus, profile, &observed.source_config_maps),
            ingest_spec: ingest_spec_hash(corpus),
            names: Names::new(corpus, &inputs),
            inputs,
            shards,
            shards_done,
        }
    }

    /// The name of the Job the attempt follows: the finalize step's once
    /// the shards are done.
    fn job_name(&self) -> &str {
        if self.shards_done {
            &self.names.finalize_job
        } else {
            &self.names.ingest_job
        }
    }

    /// The Job the attempt follows, if it exists.
    fn job<'a>(&self, observed: &'a Observed) -> Option<&'a Job> {
        if self.shards_done {
            observed.finalize_job.as_ref()
        } else {
            observed.ingest_job.as_ref()
        }
    }

    /// The status' `pendingIndex` for this attempt, carrying on what an
    /// earlier try at the same inputs counted.
    fn pending(&self, earlier: &Earlier) -> IndexVersionStatus {
        IndexVersionStatus {
            inputs: Some(self.inputs.clone()),
            profile_hash: Some(crate::ingest::profile_hash(&self.profile.spec)),
            job: Some(self.job_name().to_string()),
            ingest_spec: Some(self.ingest_spec.clone()),
            empty_attempts: earlier.empty_attempts(),
            retry_at: earlier
                .pending
                .as_ref()
                .and_then(|p| p.retry_at.clone())
                .filter(|_| !earlier.empty_retry_due),
            ..Default::default()
        }
    }
}

/// What the status says of an earlier try at the same inputs. An ingest
/// of these inputs that failed is not retried (its Job may be gone,
/// removed by its TTL) until the inputs or `spec.ingest` change. A status
/// from a release that did not record the latter counts as the same: an
/// upgrade alone retries nothing. One that found nothing to index is
/// retried when its backoff is over.
struct Earlier {
    /// The `pendingIndex` of these inputs, if the status holds one.
    pending: Option<IndexVersionStatus>,
    /// It failed and `spec.ingest` changed since: it runs again.
    retry: bool,
    /// It found nothing to index and its backoff is over.
    empty_retry_due: bool,
    /// Its error, when it failed and does not run again yet.
    failed_before: Option<String>,
}

impl Earlier {
    fn of(status: &CorpusStatus, attempt: &Attempt<'_>, now: u64) -> Self {
        let pending = status
            .pending_index
            .clone()
            .filter(|p| p.inputs.as_deref() == Some(attempt.inputs.as_str()));
        let failed_earlier = pending.as_ref().filter(|p| p.error.is_some());
        let retry = failed_earlier.is_some_and(|p| {
            p.ingest_spec
                .as_deref()
                .is_some_and(|s| s != attempt.ingest_spec)
        });
        let empty_retry_due = failed_earlier
            .and_then(|p| p.retry_at.as_deref())
            .is_some_and(|at| conditions::unix_seconds(at).is_none_or(|at| at <= now));
        let failed_before = failed_earlier
            .filter(|_| !retry && !empty_retry_due)
            .and_then(|p| p.error.clone());
        Self {
            pending,
            retry,
            empty_retry_due,
            failed_before,
        }
    }

    /// The attempts of these inputs that found nothing to index so far.
    fn empty_attempts(&self) -> u64 {
        self.pending.as_ref().map_or(0, |p| p.empty_attempts)
    }
}

/// Where the ingest of a Corpus that can be ingested stands.
enum IngestState<'o> {
    /// The active version was built from the current inputs.
    Current,
    /// The ingest pods reported a version of the current inputs (boxed:
    /// a version's status is many times the size of the other states).
    Published(Box<IndexVersionStatus>),
    /// They reported a version of another profile than the one rendered.
    ReportRejected(String),
    /// Their report cannot be read.
    ReportUnreadable(String),
    /// An earlier try at these inputs failed and does not run again yet.
    FailedBefore(String),
    /// An earlier try found nothing to index; the next waits until
    /// `until` (Unix seconds).
    BackingOff { message: String, until: u64 },
    /// An ingest of the same content, started by an earlier tick or
    /// reingest value, still runs.
    SameContentRunning(&'o Job),
    /// The shards of a sharded ingest are done; the finalize step is to
    /// start.
    ShardsDone,
    /// No Job runs the attempt, and as many ingests as
    /// `operator.maxConcurrentIngests` allows run elsewhere.
    Queued,
    /// No Job runs the attempt yet: it is to start.
    NotStarted,
    /// The attempt's Job runs.
    Running,
    /// The attempt's Job runs, but its pods cannot.
    Stuck(&'o Trouble),
    /// The attempt's Job failed, its sources holding nothing to index
    /// (what the pod said).
    NothingToIndex(String),
    /// The attempt's Job failed.
    JobFailed {
        reason: &'static str,
        message: String,
    },
    /// The attempt's Job succeeded but left no report.
    ReportMissing,
}

impl<'o> IngestState<'o> {
    fn of(
        given: &Given<'o>,
        attempt: &Attempt<'_>,
        earlier: &Earlier,
        status: &CorpusStatus,
    ) -> Self {
        let observed = given.observed;
        let active_inputs = status
            .active_index
            .as_ref()
            .and_then(|a| a.inputs.as_deref());
        if active_inputs == Some(attempt.inputs.as_str()) {
            return Self::Current;
        }
        // A report for these inputs means the version is published.
        if let Some(report) = observed
            .report
            .as_ref()
            .and_then(|r| read_report(r, &attempt.inputs))
        {
            return match report.map(|reported| trusted(reported, attempt.profile)) {
                Ok(Ok(version)) => Self::Published(Box::new(version)),
                Ok(Err(reason)) => Self::ReportRejected(reason),
                Err(reason) => Self::ReportUnreadable(reason),
            };
        }
        match attempt.job(observed).map(job_state) {
            None => Self::without_job(given, attempt, earlier),
            Some(JobState::Running) => match &observed.trouble {
                Some(trouble) => Self::Stuck(trouble),
                None => Self::Running,
            },
            Some(JobState::Failed(reason)) => Self::job_failed(observed, attempt, &reason),
            Some(JobState::Succeeded) => Self::ReportMissing,
        }
    }

    /// The attempt has no Job (yet, or any more).
    fn without_job(given: &Given<'o>, attempt: &Attempt<'_>, earlier: &Earlier) -> Self {
        let observed = given.observed;
        if let Some(message) = earlier.failed_before.clone() {
            let retry_at = earlier.pending.as_ref().and_then(|p| p.retry_at.as_deref());
            return match retry_at.and_then(conditions::unix_seconds) {
                Some(until) => Self::BackingOff { message, until },
                None => Self::FailedBefore(message),
            };
        }
        // One running with another `spec.ingest` (stuck unschedulable,
        // short of memory) is what the edit replaces.
        let running = observed.other_jobs.iter().find(|j| {
            job_state(j) == JobState::Running
                && j.labels().get(CONTENT_LABEL) == Some(&attempt.content)
                && j.labels()
                    .get(INGEST_SPEC_LABEL)
                    .is_none_or(|s| *s == attempt.ingest_spec)
        });
        if let Some(running) = running {
            Self::SameContentRunning(running)
        } else if attempt.shards_done {
            Self::ShardsDone
        } else if observed.ingests_elsewhere >= given.settings.max_concurrent_ingests {
            Self::Queued
        } else {
            Self::NotStarted
        }
    }

    /// The attempt's Job failed for `reason`, as the Job says.
    fn job_failed(observed: &Observed, attempt: &Attempt<'_>, reason: &str) -> Self {
        let reported = observed
            .report
            .as_ref()
            .and_then(|r| report_error(r, &attempt.inputs));
        if let Some(found) = reported.as_ref().filter(|f| f.nothing_indexed) {
            return Self::NothingToIndex(found.message.clone());
        }
        // What the ingest said, else what its pod died of (the Job says
        // only that it ran out of retries).
        let told = reported
            .map(|e| format!(" ({})", e.message))
            .or_else(|| {
                observed
                    .trouble
                    .as_ref()
                    .map(|t| format!(" ({})", t.message))
            })
            .unwrap_or_default();
        Self::JobFailed {
            reason: observed
                .trouble
                .as_ref()
                .map_or("IngestFailed", |t| t.reason),
            message: format!("Job {} failed: {reason}{told}", attempt.job_name()),
        }
    }

    /// Whether the state is one of the attempt at the current inputs,
    /// which the status records as `pendingIndex`.
    fn plans_the_attempt(&self) -> bool {
        !matches!(
            self,
            Self::Current
                | Self::Published(_)
                | Self::ReportRejected(_)
                | Self::ReportUnreadable(_)
        )
    }
}

/// Plans the ingest of a Corpus: the objects to apply and the status to
/// write for the state it is in.
pub(super) fn plan_ingest(given: &Given<'_>) -> Result<Plan, Error> {
    let mut plan = unchanged(given.corpus);
    if is_paused(&given.corpus.metadata) {
        // The generation is not acted on while paused: observedGeneration
        // stays where it was, so tools that wait for it keep waiting.
        given.set(&mut plan, Set::paused());
        return Ok(plan);
    }
    plan.status.observed_generation = given.generation();
    conditions::remove(&mut plan.status.conditions, "Paused");
    let Some(profile) = &given.observed.profile else {
        return Ok(profile_missing(plan, given));
    };
    let claim = &given.corpus.spec.storage.claim_name;
    let placement = Placement::of(given.observed.data_claim.as_ref());
    plan.status.storage = Some(storage::status(claim, given.observed.data_claim.as_ref()));
    let problems = problems(given.corpus, profile, placement);
    if !problems.is_empty() {
        return Ok(invalid(plan, given, &problems));
    }

    let attempt = Attempt::new(given, profile, placement);
    plan.inputs = attempt.inputs.clone();
    if let Ok(Some(every)) = given.corpus.spec.ingest.refresh_seconds() {
        // Wake at the next tick, when the inputs change by themselves.
        plan.requeue = Some(Duration::from_secs(every - given.now % every + 1));
    }
    let earlier = Earlier::of(&plan.status, &attempt, given.now);
    let state = IngestState::of(given, &attempt, &earlier, &plan.status);
    if state.plans_the_attempt() {
        plan.status.pending_index = Some(attempt.pending(&earlier));
    }
    let (generation, now) = (given.generation(), given.now_rfc3339);
    let job = attempt.job_name();
    Ok(match state {
        IngestState::Current => current(plan, given),
        IngestState::Published(version) => published(plan, given, *version),
        IngestState::ReportRejected(reason) => {
            failed(plan, "ReportRejected", reason, generation, now)
        }
        IngestState::ReportUnreadable(reason) => {
            failed(plan, "ReportUnreadable", reason, generation, now)
        }
        IngestState::FailedBefore(message) => {
            failed(plan, "IngestFailed", message, generation, now)
        }
        IngestState::BackingOff { message, until } => backing_off(plan, given, message, until),
        IngestState::SameContentRunning(running) => follow(plan, given, &running.name_any()),
        IngestState::ShardsDone => start_finalize(plan, given, &attempt)?,
        IngestState::Queued => queue(plan, given, &attempt),
        IngestState::NotStarted => start_ingest(plan, given, &attempt, &earlier)?,
        IngestState::Running => running(plan, given, job),
        IngestState::Stuck(trouble) => stuck(plan, given, job, trouble),
        IngestState::NothingToIndex(told) => {
            nothing_to_index(plan, given, earlier.pending.as_ref(), job, &told)
        }
        IngestState::JobFailed { reason, message } => {
            failed(plan, reason, message, generation, now)
        }
        IngestState::ReportMissing => report_missing(plan, given, &attempt),
    })
}

/// The attempt's Job succeeded but left no report: nothing says what it
/// built, so nothing is published.
fn report_missing(plan: Plan, given: &Given<'_>, attempt: &Attempt<'_>) -> Plan {
    let message = format!(
        "Job {} succeeded but left no report in ConfigMap {}",
        attempt.job_name(),
        attempt.names.report
    );
    failed(
        plan,
        "ReportMissing",
        message,
        given.generation(),
        given.now_rfc3339,
    )
}

/// A plan that changes nothing: the status as it is, nothing to apply.
fn unchanged(corpus: &Corpus) -> Plan {
    Plan {
        inputs: String::new(),
        apply: Vec::new(),
        status: corpus.status.clone().unwrap_or_default(),
        events: Vec::new(),
        prune_inputs: false,
        delete_jobs: Vec::new(),
        requeue: None,
        finished: None,
        needs_turn: false,
    }
}

/// The profile the Corpus names does not exist (or cannot be read): it is
/// looked for again in a minute.
fn profile_missing(mut plan: Plan, given: &Given<'_>) -> Plan {
    let message = format!(
        "IndexProfile {:?} not found in this namespace",
        given.corpus.spec.profile_ref.name
    );
    given.set(
        &mut plan,
        Set::new("Ready", false, "ProfileNotFound", message.clone()),
    );
    plan.status.phase = Some(phase(&plan.status, false));
    plan.requeue = Some(PROFILE_RECHECK);
    plan
}

/// Why the Corpus cannot be ingested as written: its profile, its
/// sources, its data claim, its refresh interval, its pod template.
fn problems(corpus: &Corpus, profile: &IndexProfile, placement: Placement) -> Vec<String> {
    crate::operator::profile::validate(&profile.spec)
        .into_iter()
        .chain(unsupported_sources(corpus))
        .chain(storage::problem(&corpus.spec.storage.claim_name, placement))
        .chain(corpus.spec.ingest.refresh_seconds().err())
        .chain(crate::operator::template::problems(
            &corpus.spec.ingest.template,
            "spec.ingest.template",
        ))
        .collect()
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

/// The Corpus cannot be ingested as written: nothing is built until it is
/// mended.
fn invalid(mut plan: Plan, given: &Given<'_>, problems: &[String]) -> Plan {
    given.set(
        &mut plan,
        Set::new("Ready", false, "InvalidSpec", problems.join("; ")),
    );
    plan.status.phase = Some("Failed".into());
    plan
}

/// The active version is of the current inputs: nothing is pending.
fn current(mut plan: Plan, given: &Given<'_>) -> Plan {
    plan.status.pending_index = None;
    set_ready(&mut plan, given.generation(), given.now_rfc3339);
    plan
}

/// The attempt's version is published: it becomes the active one, and the
/// manifests of other inputs may go.
fn published(mut plan: Plan, given: &Given<'_>, version: IndexVersionStatus) -> Plan {
    let previous = plan.status.active_index.as_ref().map(|a| a.version.clone());
    // A refresh that found nothing new publishes the same version again:
    // worth a status update, not an Event.
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
    given.set(
        &mut plan,
        Set::new(
            "Ingesting",
            false,
            "IngestSucceeded",
            "the last ingest finished",
        ),
    );
    set_ready(&mut plan, given.generation(), given.now_rfc3339);
    plan
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

/// Waiting out the backoff of an ingest that found nothing.
fn backing_off(mut plan: Plan, given: &Given<'_>, message: String, until: u64) -> Plan {
    plan.requeue = Some(Duration::from_secs(until.saturating_sub(given.now).max(1)));
    failed(
        plan,
        NOTHING_TO_INDEX,
        message,
        given.generation(),
        given.now_rfc3339,
    )
}

/// An ingest of the same content runs: it is waited for, not cancelled,
/// or a refresh shorter than an ingest would never publish.
fn follow(mut plan: Plan, given: &Given<'_>, running: &str) -> Plan {
    if let Some(pending) = plan.status.pending_index.as_mut() {
        pending.job = Some(running.to_string());
    }
    ingesting(plan, given, running)
}

/// The attempt starts (or waits for a turn to): the Corpus' other Jobs,
/// ingests for inputs that are no longer current, are wasted work and
/// would race this one for the version pointer. A new ingest takes a turn
/// under the cap; the finalize step of one whose shards are done is part
/// of a running ingest.
fn replace_others(plan: &mut Plan, given: &Given<'_>, attempt: &Attempt<'_>) {
    plan.delete_jobs = given
        .observed
        .other_jobs
        .iter()
        .map(|j| j.name_any())
        .collect();
    plan.needs_turn = !attempt.shards_done;
}

/// As many ingests as [`Settings::max_concurrent_ingests`] allows run
/// elsewhere: this one starts when one of them ends. The version that
/// serves (if any) goes on serving.
fn queue(mut plan: Plan, given: &Given<'_>, attempt: &Attempt<'_>) -> Plan {
    replace_others(&mut plan, given, attempt);
    let message = format!(
        "{} ingests run in the watched namespaces, as many as operator.maxConcurrentIngests \
         ({}) allows; this one starts when one of them ends",
        given.observed.ingests_elsewhere, given.settings.max_concurrent_ingests
    );
    given.set(
        &mut plan,
        Set::new("Ingesting", false, INGEST_QUEUED, message.clone()),
    );
    let ready = ready_beside(
        &plan.status,
        " while a new one waits its turn",
        INGEST_QUEUED,
        message,
    );
    given.set(&mut plan, ready);
    plan.status.phase = Some(phase(&plan.status, false));
    plan.requeue = Some(
        plan.requeue
            .map_or(QUEUED_RECHECK, |r| r.min(QUEUED_RECHECK)),
    );
    plan
}

/// The shards are done: the finalize Job builds and publishes the version.
fn start_finalize(mut plan: Plan, given: &Given<'_>, attempt: &Attempt<'_>) -> Result<Plan, Error> {
    replace_others(&mut plan, given, attempt);
    let keep = versions_to_keep(&plan.status, given.observed);
    let owner = owner_reference(given.corpus)?;
    plan.apply = vec![Desired::Job(Box::new(finalize_job(
        given.corpus,
        attempt.profile,
        &attempt.inputs,
        &attempt.content,
        &attempt.names,
        given.settings,
        owner,
        &keep,
    )))];
    let job = attempt.job_name();
    plan.events.push(Note::normal(
        "FinalizeStarted",
        format!("shards done; Job {job} builds and publishes the version"),
    ));
    place_jobs(&mut plan.apply, attempt.placement, given.corpus);
    Ok(ingesting(plan, given, job))
}

/// A new ingest of the current inputs starts: its objects, its Job, and
/// an Event saying why (a first try, a retry after `spec.ingest` changed,
/// a look again after one found nothing).
fn start_ingest(
    mut plan: Plan,
    given: &Given<'_>,
    attempt: &Attempt<'_>,
    earlier: &Earlier,
) -> Result<Plan, Error> {
    replace_others(&mut plan, given, attempt);
    let keep = versions_to_keep(&plan.status, given.observed);
    plan.apply = ingest_objects(
        given.corpus,
        attempt.profile,
        &attempt.inputs,
        &attempt.content,
        &attempt.names,
        given.settings,
        &keep,
    )?;
    plan.events.push(started(attempt, earlier));
    place_jobs(&mut plan.apply, attempt.placement, given.corpus);
    Ok(ingesting(plan, given, attempt.job_name()))
}

/// The Event of an ingest that starts.
fn started(attempt: &Attempt<'_>, earlier: &Earlier) -> Note {
    let job = attempt.job_name();
    let inputs = &attempt.inputs;
    let shards = attempt.shards;
    let shards = format!("{shards} shard{}", if shards == 1 { "" } else { "s" });
    if earlier.empty_retry_due && !earlier.retry {
        Note::normal(
            "IngestRetried",
            format!(
                "{} found nothing to index; Job {job} looks again",
                attempts_text(earlier.empty_attempts())
            ),
        )
    } else if earlier.retry {
        Note::normal(
            "IngestRetried",
            format!(
                "spec.ingest changed since the ingest of inputs {inputs} failed; \
                 Job {job} tries again in {shards}"
            ),
        )
    } else {
        Note::normal(
            "IngestStarted",
            format!("Job {job} ingests inputs {inputs} in {shards}"),
        )
    }
}

/// Places the pods of the Jobs in `apply` as the data claim allows.
fn place_jobs(apply: &mut [Desired], placement: Placement, corpus: &Corpus) {
    for desired in apply {
        if let Desired::Job(job) = desired
            && let Some(spec) = job.spec.as_mut()
        {
            storage::place(
                &mut spec.template,
                &corpus.spec.storage.claim_name,
                placement,
            );
        }
    }
}

/// The attempt's Job runs (or has just been applied): `Ingesting`, and
/// `Ready` on the version that serves meanwhile, if any.
fn ingesting(mut plan: Plan, given: &Given<'_>, job: &str) -> Plan {
    set_ingesting(&mut plan, job, given.generation(), given.now_rfc3339);
    plan.status.phase = Some(phase(&plan.status, true));
    plan
}

/// A Job whose pods cannot be created (a quota) changes no object this
/// reconciler watches: a running ingest is looked at again soon.
fn recheck_running(plan: &mut Plan) {
    plan.requeue = Some(
        plan.requeue
            .map_or(RUNNING_RECHECK, |r| r.min(RUNNING_RECHECK)),
    );
}

/// The attempt's Job runs.
fn running(mut plan: Plan, given: &Given<'_>, job: &str) -> Plan {
    recheck_running(&mut plan);
    ingesting(plan, given, job)
}

/// The attempt's Job runs but its pods cannot: said on the status, the
/// Corpus `Stalled` until someone acts.
fn stuck(mut plan: Plan, given: &Given<'_>, job: &str, trouble: &Trouble) -> Plan {
    recheck_running(&mut plan);
    set_stuck(
        &mut plan,
        job,
        trouble,
        given.generation(),
        given.now_rfc3339,
    );
    plan.status.phase = Some(phase(&plan.status, true));
    plan
}

/// The wait after the `attempts`-th attempt that found nothing.
pub(in crate::operator) fn empty_retry_backoff(attempts: u64) -> Duration {
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

/// The attempt's Job failed because its sources held nothing to index:
/// an empty claim the documents are yet to be copied into, a bucket not
/// yet filled. The Corpus waits, says so and how to go on, and tries
/// again after a backoff; the first time this Job's failure is seen it
/// counts an attempt, and once the backoff is over the Job is deleted so
/// that the next reconcile starts a fresh one under the same name.
fn nothing_to_index(
    mut plan: Plan,
    given: &Given<'_>,
    earlier: Option<&IndexVersionStatus>,
    job_name: &str,
    told: &str,
) -> Plan {
    let (now, generation, now_rfc3339) = (given.now, given.generation(), given.now_rfc3339);
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
