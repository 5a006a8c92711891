//! What the ingest states write on a Corpus' status: `Ready` beside an
//! ingest that is not done, `Ingesting` while a Job runs (or cannot run its
//! pods), `Ready` and `Degraded` on a version that serves, a failed
//! attempt's error, and the phase.

use super::Plan;
use super::ingest::NOTHING_TO_INDEX;
use crate::operator::conditions::{self, Set};
use crate::operator::trouble::Trouble;
use crate::spec::CorpusStatus;

/// `Ready` beside an ingest of the current inputs that is not done: true
/// on the version that serves, if there is one (`beside` says what goes
/// on beside it), else false with `reason` and `message`.
pub(super) fn ready_beside<'a>(
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

pub(super) fn set_ingesting(plan: &mut Plan, job: &str, generation: Option<i64>, now: &str) {
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
pub(super) fn set_stuck(
    plan: &mut Plan,
    job: &str,
    trouble: &Trouble,
    generation: Option<i64>,
    now: &str,
) {
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

pub(super) fn set_ready(plan: &mut Plan, generation: Option<i64>, now: &str) {
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
/// [`plan_corpus`](super::plan_corpus)).
pub(super) fn failed(
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

pub(super) fn phase(status: &CorpusStatus, ingesting: bool) -> String {
    match (ingesting, &status.active_index) {
        (true, _) => "Ingesting",
        (false, Some(_)) => "Ready",
        (false, None) => "Pending",
    }
    .to_string()
}
