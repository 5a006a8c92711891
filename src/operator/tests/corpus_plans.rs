//! The Corpus plan: ingests started, followed, published, failed, retried
//! and queued, and the status and Events each leaves.

use super::*;

/// An ordinary failure an ingest pod reports.
fn failure(message: &str) -> report::IngestFailure {
    report::IngestFailure {
        message: message.into(),
        nothing_indexed: false,
    }
}

/// A Job of the attempt that started at `started` and, when `ended`, ended
/// then (completed or failed), as its status says.
fn timed_job(succeeded: bool, started: &str, ended: Option<&str>) -> Job {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let time = |t: &str| Time(t.parse().unwrap());
    let mut job = finished_job(succeeded);
    let status = job.status.as_mut().unwrap();
    status.start_time = Some(time(started));
    match ended {
        Some(ended) if succeeded => status.completion_time = Some(time(ended)),
        Some(ended) => {
            status.conditions.as_mut().unwrap()[0].last_transition_time = Some(time(ended))
        }
        None => status.conditions = None,
    }
    job
}

fn with_status(corpus: &Corpus, plan: &corpus::Plan) -> Corpus {
    let mut next = corpus.clone();
    next.status = Some(plan.status.clone());
    next
}

#[test]
fn a_new_corpus_applies_what_its_ingest_needs_and_starts_it() {
    let c = corpus();
    let plan = plan(&c, &with_profile());
    let kinds: Vec<&str> = plan
        .apply
        .iter()
        .map(|d| match d {
            Desired::ServiceAccount(_) => "ServiceAccount",
            Desired::Role(_) => "Role",
            Desired::RoleBinding(_) => "RoleBinding",
            Desired::ConfigMap(_) => "ConfigMap",
            Desired::NetworkPolicy(_) => "NetworkPolicy",
            Desired::Job(_) => "Job",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "ConfigMap",
            "ConfigMap",
            "NetworkPolicy",
            "Job"
        ]
    );
    let names = ingest_job::Names::new(&c, &plan.inputs);
    let job = job_of(&plan).unwrap();
    assert_eq!(
        job.metadata.name.as_deref(),
        Some(names.ingest_job.as_str())
    );

    assert_eq!(plan.status.phase.as_deref(), Some("Ingesting"));
    assert!(conditions::is_true(&plan.status.conditions, "Ingesting"));
    assert!(!conditions::is_true(&plan.status.conditions, "Ready"));
    assert_eq!(plan.events[0].reason, "IngestStarted");
    let pending = plan.status.pending_index.as_ref().unwrap();
    assert_eq!(pending.inputs.as_deref(), Some(plan.inputs.as_str()));
}

#[test]
fn sharded_ingests_run_one_pod_per_shard_then_a_finalize_job() {
    let mut c = corpus();
    c.spec.ingest.shards = 4;
    c.spec.ingest.parallelism = Some(2);
    let first = plan(&c, &with_profile());
    let spec = job_of(&first).unwrap().spec.clone().unwrap();
    assert_eq!((spec.completions, spec.parallelism), (Some(4), Some(2)));
    let args = spec.template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    assert!(args.ends_with(&["--shard".into(), "$(JOB_COMPLETION_INDEX)/4".into()]));

    let shards_done = Observed {
        ingest_job: Some(finished_job(true)),
        ..with_profile()
    };
    let second = plan(&c, &shards_done);
    let finalize = job_of(&second).unwrap();
    let names = ingest_job::Names::new(&c, &second.inputs);
    assert_eq!(
        finalize.metadata.name.as_deref(),
        Some(names.finalize_job.as_str())
    );
    let spec = finalize.spec.as_ref().unwrap();
    assert_eq!(spec.completions, Some(1));
    let args = spec.template.spec.as_ref().unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    assert!(!args.contains(&"--shard".to_string()));
    assert_eq!(second.events[0].reason, "FinalizeStarted");
}

#[test]
fn a_report_makes_the_version_active_and_ready() {
    let c = corpus();
    let inputs = plan(&c, &with_profile()).inputs;
    let done = Observed {
        ingest_job: Some(finished_job(true)),
        report: Some(report(&inputs, "v1", 0)),
        ..with_profile()
    };
    let plan = plan(&c, &done);
    assert!(plan.apply.is_empty());
    let active = plan.status.active_index.as_ref().unwrap();
    assert_eq!(active.version, "v1");
    assert_eq!((active.documents, active.sentences), (12, 3400));
    assert_eq!(active.inputs.as_deref(), Some(inputs.as_str()));
    assert!(plan.status.pending_index.is_none());
    assert!(conditions::is_true(&plan.status.conditions, "Ready"));
    assert!(!conditions::is_true(&plan.status.conditions, "Ingesting"));
    assert!(!conditions::is_true(&plan.status.conditions, "Degraded"));
    assert_eq!(plan.status.phase.as_deref(), Some("Ready"));
    assert!(plan.prune_inputs);
    assert_eq!(plan.events[0].reason, "IndexPublished");

    // Once recorded, nothing more happens for the same inputs.
    let mut settled = c.clone();
    settled.status = Some(plan.status.clone());
    let again = super::corpus::plan_corpus(
        &settled,
        &with_profile(),
        &settings(),
        NOW,
        "2026-11-24T00:01:00Z",
    )
    .unwrap();
    assert!(again.apply.is_empty() && again.events.is_empty());
    assert_eq!(again.status, plan.status);
    // Neither counts the ingests elsewhere nor waits for a turn.
    assert!(!plan.needs_turn && !again.needs_turn);
}

#[test]
fn failed_documents_mark_the_corpus_degraded_not_failed() {
    let c = corpus();
    let inputs = plan(&c, &with_profile()).inputs;
    let done = Observed {
        ingest_job: Some(finished_job(true)),
        report: Some(report(&inputs, "v1", 2)),
        ..with_profile()
    };
    let plan = plan(&c, &done);
    assert!(conditions::is_true(&plan.status.conditions, "Ready"));
    let degraded = conditions::get(&plan.status.conditions, "Degraded").unwrap();
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_str()),
        ("True", "DocumentsFailed")
    );
    assert!(
        degraded.message.contains("bad-0.pdf: truncated"),
        "{}",
        degraded.message
    );
    assert!(
        plan.events
            .iter()
            .any(|e| e.warning && e.reason == "DocumentsFailed")
    );
}

/// A re-ingest that fails leaves the version that serves in place: the
/// Corpus stays `Ready` on it, says in the message what failed, and is
/// `Stalled` (kstatus: it cannot reach its spec) until the inputs change.
#[test]
fn a_failed_reingest_keeps_the_corpus_ready_on_its_version_and_stalled() {
    let c = active_corpus("v1");
    let inputs = plan(&c, &with_profile()).inputs;
    let failed = Observed {
        ingest_job: Some(finished_job(false)),
        report: Some(ConfigMap {
            data: Some(report::report_data(
                &inputs,
                Err(&failure("no such directory: docs")),
            )),
            ..Default::default()
        }),
        ..with_profile()
    };
    let plan = plan(&c, &failed);
    let ready = conditions::get(&plan.status.conditions, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "IndexActive")
    );
    assert!(
        ready.message.contains("v1 serves") && ready.message.contains("no such directory"),
        "{}",
        ready.message
    );
    let stalled = conditions::get(&plan.status.conditions, "Stalled").unwrap();
    assert_eq!(
        (stalled.status.as_str(), stalled.reason.as_str()),
        ("True", "IngestFailed")
    );
    // Not `Failed` beside `Ready=True`: a version serves, the latest
    // ingest failed.
    assert_eq!(plan.status.phase.as_deref(), Some("Degraded"));
    assert_eq!(plan.status.active_index.unwrap().version, "v1");
}

#[test]
fn a_failed_job_sets_ready_false_with_the_reason() {
    let c = corpus();
    let inputs = plan(&c, &with_profile()).inputs;
    let told = ConfigMap {
        data: Some(report::report_data(
            &inputs,
            Err(&failure("IndexProfile: embedding model not found")),
        )),
        ..Default::default()
    };
    let failed = Observed {
        ingest_job: Some(finished_job(false)),
        report: Some(told),
        ..with_profile()
    };
    let plan = plan(&c, &failed);
    assert!(
        plan.apply.is_empty(),
        "a failed Job is not retried by itself"
    );
    let ready = conditions::get(&plan.status.conditions, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "IngestFailed")
    );
    assert!(
        ready.message.contains("BackoffLimitExceeded"),
        "{}",
        ready.message
    );
    assert!(
        ready.message.contains("embedding model not found"),
        "{}",
        ready.message
    );
    assert_eq!(plan.status.phase.as_deref(), Some("Failed"));
    assert!(plan.events[0].warning);
    assert_eq!(plan.events.len(), 1, "one Warning: {:?}", plan.events);

    // Its Job removed by its TTL, the failure is remembered, not retried,
    // and not announced again.
    let mut after = c.clone();
    after.status = Some(plan.status.clone());
    let gone = super::corpus::plan_corpus(
        &after,
        &with_profile(),
        &settings(),
        NOW,
        "2026-11-24T02:00:00Z",
    )
    .unwrap();
    assert!(gone.apply.is_empty(), "not retried");
    assert!(gone.events.is_empty(), "{:?}", gone.events);
    let ready = conditions::get(&gone.status.conditions, "Ready").unwrap();
    assert_eq!(ready.reason, "IngestFailed");
    assert!(ready.message.contains("embedding model not found"));
    // A new reingest value is new inputs: tried again.
    after.metadata.annotations = Some(BTreeMap::from([(
        REINGEST_ANNOTATION.to_string(),
        "again".to_string(),
    )]));
    let retried = super::corpus::plan_corpus(
        &after,
        &with_profile(),
        &settings(),
        NOW,
        "2026-11-24T02:00:00Z",
    )
    .unwrap();
    assert!(job_of(&retried).is_some());
}

#[test]
fn a_refresh_waits_for_a_running_ingest_of_the_same_content() {
    let mut c = corpus();
    c.spec.ingest.refresh_interval = Some("10m".into());
    let content = corpus::content_hash(&c, &profile(), &Default::default());
    let job_for = |name: &str, content: &str| Job {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([
                (CONTENT_LABEL.to_string(), content.to_string()),
                (INPUTS_LABEL.to_string(), "earlier".to_string()),
            ])),
            ..Default::default()
        },
        ..Default::default()
    };
    // The last tick's ingest of the same content still runs: wait for it.
    let waiting = plan(
        &c,
        &Observed {
            other_jobs: vec![job_for("handbook-ingest-earlier", &content)],
            ..with_profile()
        },
    );
    assert!(waiting.apply.is_empty() && waiting.delete_jobs.is_empty());
    let pending = waiting.status.pending_index.as_ref().unwrap();
    assert_eq!(pending.job.as_deref(), Some("handbook-ingest-earlier"));
    assert!(conditions::is_true(&waiting.status.conditions, "Ingesting"));

    // An ingest of other content (an edited spec) is obsolete: replaced.
    let replaced = plan(
        &c,
        &Observed {
            other_jobs: vec![job_for("handbook-ingest-old", "other")],
            ..with_profile()
        },
    );
    assert!(job_of(&replaced).is_some());
    assert_eq!(replaced.delete_jobs, ["handbook-ingest-old"]);
    // The Job carries its content, for the next tick to see.
    assert_eq!(
        job_of(&replaced).unwrap().labels().get(CONTENT_LABEL),
        Some(&content)
    );
}

#[test]
fn a_finalize_outlives_its_shards_job() {
    let mut c = corpus();
    c.spec.ingest.shards = 3;
    // The shards' Job is gone (its TTL) while the finalize Job runs.
    let p = plan(
        &c,
        &Observed {
            finalize_job: Some(Job::default()),
            ..with_profile()
        },
    );
    assert!(p.apply.is_empty(), "the shards are not run again");
    let names = ingest_job::Names::new(&c, &p.inputs);
    assert_eq!(
        p.status.pending_index.unwrap().job.as_deref(),
        Some(names.finalize_job.as_str())
    );
}

#[test]
fn a_profile_change_starts_a_new_job_while_the_old_version_serves() {
    let c = corpus();
    let inputs = plan(&c, &with_profile()).inputs;
    let done = Observed {
        ingest_job: Some(finished_job(true)),
        report: Some(report(&inputs, "v1", 0)),
        ..with_profile()
    };
    let mut settled = c.clone();
    settled.status = Some(plan(&c, &done).status);

    let mut changed = profile();
    changed.spec.semantic_links.threshold = 0.85;
    let next = plan(
        &settled,
        &Observed {
            profile: Some(changed),
            ..Default::default()
        },
    );
    assert_ne!(next.inputs, inputs);
    let job = job_of(&next).unwrap();
    assert_eq!(
        job.metadata.name.as_deref(),
        Some(
            ingest_job::Names::new(&settled, &next.inputs)
                .ingest_job
                .as_str()
        )
    );
    // The old version stays active and Ready while the new one builds.
    assert_eq!(next.status.active_index.as_ref().unwrap().version, "v1");
    assert!(conditions::is_true(&next.status.conditions, "Ready"));
    assert!(conditions::is_true(&next.status.conditions, "Ingesting"));
}

#[test]
fn ingest_settings_and_retention_do_not_change_the_inputs_but_the_reingest_annotation_does() {
    let c = corpus();
    let base = corpus::inputs_hash(&c, &profile(), &Default::default(), NOW);
    let mut tuned = c.clone();
    tuned.spec.ingest.backoff_limit = 9;
    tuned.spec.storage.retain_versions = 7;
    assert_eq!(
        corpus::inputs_hash(&tuned, &profile(), &Default::default(), NOW),
        base
    );
    let mut forced = c.clone();
    forced.metadata.annotations = Some(BTreeMap::from([(
        REINGEST_ANNOTATION.to_string(),
        "2026-11-24".to_string(),
    )]));
    assert_ne!(
        corpus::inputs_hash(&forced, &profile(), &Default::default(), NOW),
        base
    );
    let mut refreshed = c.clone();
    refreshed.spec.ingest.refresh_interval = Some("1h".into());
    let tick = corpus::inputs_hash(&refreshed, &profile(), &Default::default(), NOW);
    assert_eq!(
        corpus::inputs_hash(&refreshed, &profile(), &Default::default(), NOW + 1),
        tick
    );
    assert_ne!(
        corpus::inputs_hash(&refreshed, &profile(), &Default::default(), NOW + 3600),
        tick
    );
    let p = plan(&refreshed, &with_profile());
    let wait = p.requeue.unwrap().as_secs();
    assert!((1..=3601).contains(&wait), "{wait}");
}

#[test]
fn a_paused_corpus_is_left_alone() {
    let mut c = corpus();
    c.metadata.annotations = Some(BTreeMap::from([(
        PAUSED_ANNOTATION.to_string(),
        "true".to_string(),
    )]));
    let plan = plan(&c, &with_profile());
    assert!(plan.apply.is_empty());
    assert!(conditions::is_true(&plan.status.conditions, "Paused"));
}

#[test]
fn problems_are_reported_not_built() {
    let c = corpus();
    let missing = plan(&c, &Observed::default());
    let ready = conditions::get(&missing.status.conditions, "Ready").unwrap();
    assert_eq!(ready.reason, "ProfileNotFound");
    assert!(missing.apply.is_empty());

    let mut local = corpus();
    local.spec.sources = vec![SourceSpec {
        path: Some("docs".into()),
        ..Default::default()
    }];
    let p = plan(&local, &with_profile());
    let ready = conditions::get(&p.status.conditions, "Ready").unwrap();
    assert_eq!(ready.reason, "InvalidSpec");
    assert!(ready.message.contains("pvc"), "{}", ready.message);
    assert!(p.apply.is_empty());
}

#[test]
fn job_states_come_from_conditions() {
    assert_eq!(corpus::job_state(&Job::default()), JobState::Running);
    assert_eq!(corpus::job_state(&finished_job(true)), JobState::Succeeded);
    assert!(
        matches!(corpus::job_state(&finished_job(false)), JobState::Failed(r) if r.contains("BackoffLimitExceeded"))
    );
}

#[test]
fn an_oom_killed_ingest_runs_again_when_spec_ingest_changes() {
    let c = corpus();
    let first = plan(&c, &with_profile());
    let first_job = job_of(&first).unwrap().clone();
    let oom = crate::operator::trouble::Trouble {
        reason: "OOMKilled",
        message: "pod p: container ingest was killed for exceeding its memory limit of 64Mi".into(),
    };
    let failed = plan(
        &c,
        &Observed {
            ingest_job: Some(finished_job(false)),
            trouble: Some(oom),
            ..with_profile()
        },
    );
    let ingesting = conditions::get(&failed.status.conditions, "Ingesting").unwrap();
    assert_eq!(ingesting.reason, "OOMKilled", "what the pod died of");
    assert!(ingesting.message.contains("BackoffLimitExceeded"));
    assert!(ingesting.message.contains("64Mi"), "{}", ingesting.message);

    // The same spec again: remembered, not retried.
    let mut after = c.clone();
    after.status = Some(failed.status.clone());
    assert!(plan(&after, &with_profile()).apply.is_empty());

    // More memory: the inputs are the same, the attempt is new.
    after.spec.ingest.resources =
        Some(serde_json::from_value(serde_json::json!({"limits": {"memory": "4Gi"}})).unwrap());
    let mut old_job = first_job.clone();
    old_job.status = finished_job(false).status;
    let retried = plan(
        &after,
        &Observed {
            other_jobs: vec![old_job],
            ..with_profile()
        },
    );
    assert_eq!(retried.inputs, first.inputs);
    let job = job_of(&retried).expect("a new Job");
    assert_ne!(job.metadata.name, first_job.metadata.name);
    assert_eq!(
        retried.delete_jobs,
        vec![first_job.metadata.name.clone().unwrap()],
        "the failed attempt goes"
    );
    assert!(
        retried.events.iter().any(|e| e.reason == "IngestRetried"),
        "{:?}",
        retried.events
    );
    // Its manifests are a new ConfigMap, not an edit of the immutable one.
    let manifests = |p: &corpus::Plan| {
        p.apply
            .iter()
            .find_map(|d| match d {
                Desired::ConfigMap(cm) if cm.data.is_some() => cm.metadata.name.clone(),
                _ => None,
            })
            .unwrap()
    };
    assert_ne!(manifests(&retried), manifests(&first));
}

#[test]
fn a_stuck_pod_is_named_in_the_status_and_stalls_a_served_corpus() {
    let c = corpus();
    let unschedulable = crate::operator::trouble::Trouble {
        reason: "PodUnschedulable",
        message: "pod p cannot be scheduled: 0/3 nodes are available".into(),
    };
    let running = Observed {
        ingest_job: Some(Job::default()),
        trouble: Some(unschedulable.clone()),
        ..with_profile()
    };
    let first = plan(&c, &running);
    let ready = conditions::get(&first.status.conditions, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "PodUnschedulable")
    );
    assert!(conditions::get(&first.status.conditions, "Stalled").is_some());
    assert!(first.requeue.is_some(), "looked at again without a wake-up");

    // With a version serving it stays Ready, and Stalled says why the
    // new one does not come.
    let mut served = c.clone();
    served.status = Some(crate::spec::CorpusStatus {
        active_index: Some(IndexVersionStatus {
            version: "v1".into(),
            inputs: Some("older".into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    let p = plan(&served, &running);
    let ready = conditions::get(&p.status.conditions, "Ready").unwrap();
    assert_eq!(ready.status, "True");
    let stalled = conditions::get(&p.status.conditions, "Stalled").unwrap();
    assert_eq!(stalled.reason, "PodUnschedulable");
    assert!(stalled.message.contains("0/3 nodes"), "{}", stalled.message);

    // Once the pod runs, the reason goes.
    let p = plan(
        &served,
        &Observed {
            trouble: None,
            ..running
        },
    );
    assert!(conditions::get(&p.status.conditions, "Stalled").is_none());
}

/// An ingest ends once, whatever number of reconciles see it ended: the
/// metrics count the status transition, with the Job's duration.
#[test]
fn an_ingest_that_ends_is_counted_once_with_its_duration() {
    let c = corpus();
    let started = plan(&c, &with_profile());
    assert_eq!(
        started.finished, None,
        "an ingest that starts has not ended"
    );
    let running = with_status(&c, &started);
    let report = report(&started.inputs, "v1", 0);
    // The pod wrote its report and has not exited: the end is now.
    let reported = Observed {
        ingest_job: Some(timed_job(true, "2027-01-15T07:50:00Z", None)),
        report: Some(report.clone()),
        ..with_profile()
    };
    let first = plan(&running, &reported);
    let finished = first.finished.clone().unwrap();
    assert_eq!(finished.outcome, corpus::IngestOutcome::Succeeded);
    // NOW is 2027-01-15T08:00:00Z.
    assert_eq!(finished.seconds, Some(600.0));
    // The Job's own end, and every requeue after, count nothing.
    let settled = with_status(&running, &first);
    let complete = Observed {
        ingest_job: Some(timed_job(
            true,
            "2027-01-15T07:50:00Z",
            Some("2027-01-15T08:02:30Z"),
        )),
        report: Some(report),
        ..with_profile()
    };
    assert_eq!(plan(&settled, &complete).finished, None);
    assert_eq!(plan(&settled, &with_profile()).finished, None);
    // A Job that completed before its report was read: start to end.
    let late = plan(&running, &complete).finished.unwrap();
    assert_eq!(late.seconds, Some(750.0));
    assert_eq!(late.attempt, finished.attempt);

    // A failure, once; its Job gone by its TTL, nothing more.
    let failed = plan(
        &running,
        &Observed {
            ingest_job: Some(timed_job(
                false,
                "2027-01-15T07:50:00Z",
                Some("2027-01-15T07:51:40Z"),
            )),
            ..with_profile()
        },
    );
    let finished = failed.finished.clone().unwrap();
    assert_eq!(
        (finished.outcome, finished.seconds),
        (corpus::IngestOutcome::Failed, Some(100.0))
    );
    let remembered = with_status(&running, &failed);
    assert_eq!(plan(&remembered, &with_profile()).finished, None);
    // A report with no Job left to time is counted without a duration.
    let untimed = Observed {
        report: Some(self::report(&started.inputs, "v1", 0)),
        ..with_profile()
    };
    assert_eq!(plan(&running, &untimed).finished.unwrap().seconds, None);
}

/// An ingest that found nothing to index (an empty claim) waits, says
/// how to go on, and is tried again after a backoff that doubles; the
/// failed Job's later reconciles count no further attempt.
#[test]
fn nothing_to_index_is_retried_with_a_backoff() {
    let mut c = corpus();
    let inputs = plan(&c, &with_profile()).inputs;
    let empty = ConfigMap {
        data: Some(report::report_data(
            &inputs,
            Err(&report::IngestFailure {
                message: "nothing to index: 0 documents read, 0 failed".into(),
                nothing_indexed: true,
            }),
        )),
        ..Default::default()
    };
    let failed_job = Observed {
        ingest_job: Some(finished_job(false)),
        report: Some(empty.clone()),
        ..with_profile()
    };
    let at = |c: &Corpus, observed: &Observed, now: u64| {
        plan_corpus(c, observed, &settings(), now, "2026-11-24T00:00:00Z").unwrap()
    };

    let first = at(&c, &failed_job, NOW);
    let ready = conditions::get(&first.status.conditions, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "NothingToIndex")
    );
    assert!(
        ready.message.contains("nothing to index")
            && ready.message.contains("1 attempt so far")
            && ready.message.contains(REINGEST_ANNOTATION),
        "{}",
        ready.message
    );
    // Stalled (someone must put documents in), but not failed for good.
    assert_eq!(first.status.phase.as_deref(), Some("Pending"));
    let stalled = conditions::get(&first.status.conditions, "Stalled").unwrap();
    assert_eq!(
        (stalled.status.as_str(), stalled.reason.as_str()),
        ("True", "NothingToIndex")
    );
    assert_eq!(first.requeue, Some(Duration::from_secs(30)));
    let pending = first.status.pending_index.clone().unwrap();
    assert_eq!(pending.empty_attempts, 1);
    assert!(first.delete_jobs.is_empty() && first.apply.is_empty());

    // Seen again before its time: the same attempt, a shorter wait.
    c.status = Some(first.status.clone());
    let again = at(&c, &failed_job, NOW + 10);
    assert_eq!(again.status.pending_index, Some(pending.clone()));
    assert_eq!(again.requeue, Some(Duration::from_secs(20)));
    assert!(again.delete_jobs.is_empty());

    // Due: the failed Job goes, then a fresh one of the same name starts.
    let due = at(&c, &failed_job, NOW + 30);
    assert_eq!(due.delete_jobs, vec![pending.job.clone().unwrap()]);
    c.status = Some(due.status.clone());
    let restart = at(&c, &with_profile(), NOW + 31);
    assert_eq!(
        job_of(&restart).and_then(|j| j.metadata.name.clone()),
        pending.job
    );
    assert!(
        restart.events.iter().any(|n| n.reason == "IngestRetried"),
        "{:?}",
        restart.events
    );
    let retrying = restart.status.pending_index.clone().unwrap();
    assert_eq!((retrying.error, retrying.retry_at), (None, None));

    // The second attempt finds nothing too: twice the wait.
    c.status = Some(restart.status.clone());
    let second = at(&c, &failed_job, NOW + 60);
    assert_eq!(second.status.pending_index.unwrap().empty_attempts, 2);
    assert_eq!(second.requeue, Some(Duration::from_secs(60)));
}

#[test]
fn the_backoff_of_an_empty_source_doubles_up_to_ten_minutes() {
    let waits: Vec<u64> = (1..=7)
        .map(|n| corpus::empty_retry_backoff(n).as_secs())
        .collect();
    assert_eq!(waits, [30, 60, 120, 240, 480, 600, 600]);
    assert_eq!(corpus::empty_retry_backoff(u64::MAX).as_secs(), 600);
}

/// Past `maxConcurrentIngests` a new ingest waits its turn: no Job, the
/// Corpus says why, and it looks again soon; under it, the Job starts.
#[test]
fn an_ingest_past_the_cap_waits_its_turn() {
    let c = corpus();
    let busy = Observed {
        ingests_elsewhere: 2,
        ..with_profile()
    };
    let queued = plan(&c, &busy);
    assert!(job_of(&queued).is_none(), "{:?}", queued.apply);
    let ingesting = conditions::get(&queued.status.conditions, "Ingesting").unwrap();
    assert_eq!(
        (ingesting.status.as_str(), ingesting.reason.as_str()),
        ("False", "IngestQueued")
    );
    assert!(
        ingesting.message.contains("maxConcurrentIngests (2)"),
        "{}",
        ingesting.message
    );
    let ready = conditions::get(&queued.status.conditions, "Ready").unwrap();
    assert_eq!(ready.reason, "IngestQueued");
    // Waiting for a turn is work under way, not a problem.
    assert!(conditions::get(&queued.status.conditions, "Stalled").is_none());
    assert_eq!(queued.status.phase.as_deref(), Some("Pending"));
    assert_eq!(queued.requeue, Some(Duration::from_secs(10)));

    // A version that serves keeps the Corpus Ready while it waits.
    let serving = plan(&active_corpus("v1"), &busy);
    assert!(job_of(&serving).is_none());
    assert!(conditions::is_true(&serving.status.conditions, "Ready"));

    let free = Observed {
        ingests_elsewhere: 1,
        ..with_profile()
    };
    assert!(job_of(&plan(&c, &free)).is_some());
    // Starting an ingest takes a turn (see the settled Corpus of
    // `a_report_makes_the_version_active_and_ready` for one that takes none).
    assert!(plan(&c, &free).needs_turn && queued.needs_turn);

    // The finalize step of a sharded ingest is part of one that runs.
    let mut shards = corpus();
    shards.spec.ingest.shards = 2;
    let finalize = plan(
        &shards,
        &Observed {
            ingest_job: Some(finished_job(true)),
            ingests_elsewhere: 5,
            ..with_profile()
        },
    );
    assert!(
        job_of(&finalize).is_some(),
        "{:?}",
        finalize.status.conditions
    );
}

/// The operator believes an ingest pod's report only as far as it can
/// check it: the Secrets and graph store the routes' pods will use come
/// from the profile it rendered, and a report of another profile is
/// refused.
#[test]
fn a_report_is_checked_against_the_profile_the_operator_rendered() {
    let c = corpus();
    let inputs = plan(&c, &with_profile()).inputs;
    let claimed = |profile_hash: String| {
        let status = IndexVersionStatus {
            version: "v9".into(),
            profile_hash: Some(profile_hash),
            format: Some(crate::index::FORMAT_VERSION),
            // What a pod a hostile document took over might claim.
            secrets: vec!["cluster-admin-token".into()],
            graph: Some(
                serde_json::from_value(serde_json::json!({
                    "store": "neo4j", "neo4j": {"uri": "bolt://attacker.example:7687"}
                }))
                .unwrap(),
            ),
            documents: 3,
            ..Default::default()
        };
        Observed {
            ingest_job: Some(finished_job(true)),
            report: Some(ConfigMap {
                data: Some(report::report_data(&inputs, Ok(&status))),
                ..Default::default()
            }),
            ..with_profile()
        }
    };
    let rendered = profile().spec.canonical_hash();
    let accepted = plan(&c, &claimed(rendered.clone()));
    let active = accepted.status.active_index.unwrap();
    assert_eq!(active.version, "v9");
    assert_eq!(active.secrets, profile().spec.secret_names());
    assert_eq!(active.graph, Some(profile().spec.graph));
    assert_eq!(active.profile_hash.as_deref(), Some(rendered.as_str()));
    assert_eq!(
        active.served_profile,
        Some(corpus::served_profile(&profile().spec))
    );

    let refused = plan(&c, &claimed("0123456789abcdef".into()));
    assert!(refused.status.active_index.is_none());
    let ready = conditions::get(&refused.status.conditions, "Ready").unwrap();
    assert_eq!(ready.reason, "ReportRejected");
    assert!(
        ready.message.contains("0123456789abcdef"),
        "{}",
        ready.message
    );
}
