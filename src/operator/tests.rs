//! The plans and builders, without an API server.

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

#[test]
fn a_new_corpus_gets_an_ingest_job_with_everything_it_needs() {
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
    let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("Corpus", "uid-corpus")
    );
    assert_eq!(owner.controller, Some(true));

    let spec = job.spec.as_ref().unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((spec.completions, spec.parallelism), (Some(1), Some(1)));
    assert_eq!(spec.backoff_limit, Some(2));
    assert_eq!(spec.active_deadline_seconds, Some(6 * 3600));
    assert_eq!(spec.ttl_seconds_after_finished, Some(3600));
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some(names.service_account.as_str())
    );
    let container = &pod.containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("registry.example/trellis:1.0")
    );
    let args = container.args.as_ref().unwrap().join(" ");
    assert!(
        args.contains(&format!(
            "ingest -f /etc/trellis/manifests --corpus handbook --data-dir /var/lib/trellis --report-configmap {} --inputs {}",
            names.report, plan.inputs
        )),
        "{args}"
    );
    assert!(!args.contains("--shard"), "{args}");
    let security = container.security_context.as_ref().unwrap();
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert_eq!(security.allow_privilege_escalation, Some(false));
    // No resources in the spec: the chart's requests, so never BestEffort.
    let requests = container.resources.as_ref().unwrap().requests.as_ref();
    assert_eq!(requests.unwrap()["cpu"].0, "750m");
    // Of the data claim, the corpus' own versions and the embedding cache
    // read-write; the source claim read-only under the root the source
    // module reads.
    let mounts = container.volume_mounts.as_ref().unwrap();
    assert_eq!(
        data_mounts(container),
        [
            (
                Some("indexes/handbook"),
                "/var/lib/trellis/indexes/handbook",
                Some(false)
            ),
            (Some("cache"), "/var/lib/trellis/cache", Some(false)),
        ]
    );
    let env: Vec<&str> = container
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert!(env.contains(&"TRELLIS_POD_UID"), "{env:?}");
    let source = mounts.iter().find(|m| m.name == "source-0").unwrap();
    assert_eq!(
        (source.mount_path.as_str(), source.read_only),
        ("/var/run/trellis/pvc/contracts", Some(true))
    );
    let volumes = pod.volumes.as_ref().unwrap();
    let claim = volumes
        .iter()
        .find(|v| v.name == "data")
        .and_then(|v| v.persistent_volume_claim.as_ref())
        .unwrap();
    assert_eq!(claim.claim_name, "trellis-data");

    // The pods may write their report and nothing else.
    let role = plan
        .apply
        .iter()
        .find_map(|d| match d {
            Desired::Role(r) => Some(r),
            _ => None,
        })
        .unwrap();
    let rule = &role.rules.as_ref().unwrap()[0];
    assert_eq!(
        rule.resources.as_deref(),
        Some(&["configmaps".to_string()][..])
    );
    assert_eq!(
        rule.resource_names.as_deref(),
        Some(&[names.report.clone()][..])
    );
    assert!(!rule.verbs.contains(&"create".to_string()));

    // The rendered manifests read back as the same resources.
    let manifests = plan
        .apply
        .iter()
        .find_map(|d| match d {
            Desired::ConfigMap(cm)
                if cm.metadata.name.as_deref() == Some(names.inputs_config.as_str()) =>
            {
                cm.data.as_ref()?.get("manifests.yaml").cloned()
            }
            _ => None,
        })
        .unwrap();
    let loaded =
        crate::spec::parse_str(&manifests, std::path::Path::new("manifests.yaml")).unwrap();
    assert_eq!(loaded.len(), 2);
    assert_eq!(loaded[1].manifest.as_corpus().unwrap().spec, c.spec);

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

/// An ordinary failure an ingest pod reports.
fn failure(message: &str) -> report::IngestFailure {
    report::IngestFailure {
        message: message.into(),
        nothing_indexed: false,
    }
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

/// Evictions and preemptions do not use up the backoff limit; a pod that
/// found nothing to index fails its Job at once.
#[test]
fn ingest_jobs_ignore_disruptions_and_fail_at_once_on_nothing_to_index() {
    let plan = plan(&corpus(), &with_profile());
    let job = job_of(&plan).unwrap().spec.as_ref().unwrap();
    let policy = job.pod_failure_policy.clone().unwrap();
    let rule = &policy.rules[0];
    assert_eq!(rule.action, "Ignore");
    assert_eq!(
        rule.on_pod_conditions.as_ref().unwrap()[0].type_,
        "DisruptionTarget"
    );
    let rule = &policy.rules[1];
    assert_eq!(rule.action, "FailJob");
    let codes = rule.on_exit_codes.as_ref().unwrap();
    let container = &job.template.spec.as_ref().unwrap().containers[0].name;
    assert_eq!(codes.container_name.as_ref(), Some(container));
    assert_eq!(
        (codes.operator.as_str(), codes.values.as_slice()),
        (
            "In",
            [i32::from(report::NOTHING_INDEXED_EXIT_CODE)].as_slice()
        )
    );
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
fn every_object_built_is_owned_by_its_resource() {
    let c = corpus();
    let mut shards = corpus();
    shards.spec.ingest.shards = 2;
    let finalize = plan(
        &shards,
        &Observed {
            ingest_job: Some(finished_job(true)),
            ..with_profile()
        },
    );
    for desired in plan(&c, &with_profile())
        .apply
        .iter()
        .chain(&finalize.apply)
    {
        let meta = match desired {
            Desired::ServiceAccount(o) => &o.metadata,
            Desired::Role(o) => &o.metadata,
            Desired::RoleBinding(o) => &o.metadata,
            Desired::ConfigMap(o) => &o.metadata,
            Desired::NetworkPolicy(o) => &o.metadata,
            Desired::Job(o) => &o.metadata,
        };
        assert!(controlled_by(meta, &c.metadata), "{:?}", meta.name);
    }
    let r = route();
    let objects = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let mut metas = vec![
        &objects.config.metadata,
        &objects.deployment.metadata,
        &objects.service.metadata,
    ];
    metas.extend(objects.budget.as_ref().map(|b| &b.metadata));
    for meta in metas {
        assert!(controlled_by(meta, &r.metadata), "{:?}", meta.name);
    }
}

#[test]
fn paused_objects_keep_their_observed_generation() {
    let mut c = corpus();
    c.metadata.generation = Some(5);
    c.status = Some(crate::spec::CorpusStatus {
        observed_generation: Some(4),
        ..Default::default()
    });
    c.metadata.annotations = Some(BTreeMap::from([(
        PAUSED_ANNOTATION.to_string(),
        "true".to_string(),
    )]));
    let p = plan(&c, &with_profile());
    assert_eq!(p.status.observed_generation, Some(4));
    assert_eq!(p.events.len(), 1, "{:?}", p.events);
    assert_eq!(p.events[0].reason, "PausedByAnnotation");

    let mut r = route();
    r.metadata.generation = Some(3);
    r.metadata.annotations = c.metadata.annotations.clone();
    let paused = route_plan(&r, &route::Observed::default());
    assert_eq!(paused.status.observed_generation, None);
    assert!(conditions::is_true(&paused.status.conditions, "Paused"));
}

#[test]
fn failed_reconciles_back_off() {
    use super::controller::retry_after;
    let waits: Vec<u64> = (1..=9).map(|n| retry_after(n).as_secs()).collect();
    assert_eq!(waits, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
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
fn the_graph_store_password_secret_is_mounted_into_ingest_pods() {
    let mut observed = with_profile();
    let profile = observed.profile.as_mut().unwrap();
    profile.spec.graph = serde_json::from_value(serde_json::json!({
        "store": "falkordb",
        "falkordb": {
            "url": "falkor://falkordb.graph:6379",
            "passwordSecretRef": {"name": "falkordb-auth"}
        }
    }))
    .unwrap();
    let p = plan(&corpus(), &observed);
    let job = job_of(&p).expect("an ingest Job");
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let secret = pod
        .volumes
        .iter()
        .flatten()
        .find_map(|v| v.secret.as_ref())
        .expect("the password Secret as a volume");
    assert_eq!(secret.secret_name.as_deref(), Some("falkordb-auth"));
    let mounts = mount_paths(&pod.containers[0]);
    assert!(
        mounts.contains(&"/var/run/trellis/secrets/falkordb-auth"),
        "{mounts:?}"
    );
}

#[test]
fn config_map_and_s3_sources_are_mounted_into_ingest_pods_and_edits_are_new_inputs() {
    let mut c = corpus();
    c.spec.sources = serde_json::from_value(serde_json::json!([
        {"configMap": {"name": "faq"}},
        {"s3": {"bucket": "b", "credentialsSecret": {"name": "s3-creds"}}},
        {"http": {"urls": ["https://docs.example.com/a.md"]}},
    ]))
    .unwrap();
    let mut observed = with_profile();
    observed
        .source_config_maps
        .insert("faq".into(), "101".into());
    let p = plan(&c, &observed);
    let job = job_of(&p).expect("an ingest Job");
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let volumes = pod.volumes.as_ref().unwrap();
    let faq = volumes
        .iter()
        .find_map(|v| v.config_map.as_ref().filter(|c| c.name == "faq"))
        .expect("the source ConfigMap as a volume");
    assert_eq!(faq.optional, Some(true));
    let secret = volumes
        .iter()
        .find_map(|v| v.secret.as_ref())
        .expect("the credentials Secret as a volume");
    assert_eq!(secret.secret_name.as_deref(), Some("s3-creds"));
    let container = &pod.containers[0];
    let mounts = mount_paths(container);
    assert!(
        mounts.contains(&"/var/run/trellis/configmaps/faq"),
        "{mounts:?}"
    );
    assert!(
        mounts.contains(&"/var/run/trellis/secrets/s3-creds"),
        "{mounts:?}"
    );
    let env: Vec<&str> = container
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert!(env.contains(&"TRELLIS_CONFIGMAP_ROOT") && env.contains(&"TRELLIS_SECRET_ROOT"));

    // An edit to the ConfigMap (a new resource version) is a new ingest.
    let mut edited = observed.clone();
    edited.source_config_maps.insert("faq".into(), "102".into());
    assert_ne!(plan(&c, &edited).inputs, p.inputs);
    assert_eq!(ingest_job::source_config_map_names(&c), ["faq"]);
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

#[test]
fn a_route_runs_a_hardened_deployment_a_service_and_a_budget() {
    let r = route();
    let observed = route::Observed {
        corpus_unreadable: None,
        corpus: Some(active_corpus("v1")),
        deployment: None,
        ..Default::default()
    };
    let plan = route_plan(&r, &observed);
    let objects = plan.objects.unwrap();
    let d = &objects.deployment;
    assert_eq!(d.metadata.name.as_deref(), Some("handbook-qa-retrieval"));
    let spec = d.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(2));
    let rolling = spec
        .strategy
        .as_ref()
        .unwrap()
        .rolling_update
        .as_ref()
        .unwrap();
    assert_eq!(
        rolling.max_unavailable,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(0))
    );
    let template = &spec.template;
    let annotations = template
        .metadata
        .as_ref()
        .unwrap()
        .annotations
        .as_ref()
        .unwrap();
    assert_eq!(annotations[INDEX_VERSION_ANNOTATION], "v1");
    let pod = template.spec.as_ref().unwrap();
    assert_eq!(pod.automount_service_account_token, Some(false));
    assert_eq!(
        pod.security_context.as_ref().unwrap().run_as_non_root,
        Some(true)
    );
    let c = &pod.containers[0];
    let args = c.args.as_ref().unwrap().join(" ");
    assert!(
        args.contains("serve -f /etc/trellis/manifests --route handbook-qa"),
        "{args}"
    );
    assert!(args.contains("--index-version v1"), "{args}");
    assert!(!args.contains("--token-file"), "{args}");
    let security = c.security_context.as_ref().unwrap();
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert_eq!(
        security.capabilities.as_ref().unwrap().drop.as_deref(),
        Some(&["ALL".to_string()][..])
    );
    let readiness = c
        .readiness_probe
        .as_ref()
        .unwrap()
        .http_get
        .as_ref()
        .unwrap();
    assert_eq!(readiness.path.as_deref(), Some("/readyz"));
    let liveness = c
        .liveness_probe
        .as_ref()
        .unwrap()
        .http_get
        .as_ref()
        .unwrap();
    assert_eq!(liveness.path.as_deref(), Some("/healthz"));
    // Only the corpus' versions, read-only: not another corpus', not the
    // embedding cache.
    assert_eq!(
        data_mounts(c),
        [(
            Some("indexes/handbook"),
            "/var/lib/trellis/indexes/handbook",
            Some(true)
        )]
    );

    let service = objects.service.spec.as_ref().unwrap();
    assert_eq!(service.ports.as_ref().unwrap()[0].port, 8080);
    assert_eq!(
        service.selector.as_ref(),
        spec.selector.match_labels.as_ref()
    );
    let budget = objects.budget.unwrap();
    assert_eq!(
        budget.spec.unwrap().min_available,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1))
    );
    // The NetworkPolicy selects the same pods: in, the serving port from
    // anywhere (the route names no clients); out, all but link-local, and
    // DNS.
    let policy = objects.network_policy.unwrap().spec.unwrap();
    assert_eq!(
        policy.pod_selector.as_ref().unwrap().match_labels.as_ref(),
        spec.selector.match_labels.as_ref()
    );
    let ingress = &policy.ingress.as_ref().unwrap()[0];
    assert_eq!(ingress.from, None);
    assert_eq!(
        ingress.ports.as_ref().unwrap()[0].port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("http".into()))
    );
    let egress = serde_json::to_value(&policy.egress).unwrap();
    assert_eq!(egress[0]["to"][0]["ipBlock"]["except"][0], "169.254.0.0/16");
    assert_eq!(egress[1]["ports"][0]["port"], 53);
    // Named clients only, when the route lists them; none without the
    // operator's setting.
    let mut narrow = r.clone();
    narrow.spec.serving.allowed_clients = serde_json::from_value(serde_json::json!([
        {"namespaceSelector": {"matchLabels": {"team": "search"}}}
    ]))
    .unwrap();
    let plan = route_plan(&narrow, &observed);
    let policy = plan.objects.unwrap().network_policy.unwrap().spec.unwrap();
    let from = policy.ingress.unwrap()[0].from.clone().unwrap();
    assert_eq!(from, narrow.spec.serving.allowed_clients);
    let off = Settings {
        network_policy: false,
        ..settings()
    };
    let plan = plan_route(&r, &observed, &off, "2026-11-24T00:00:00Z").unwrap();
    assert!(plan.objects.unwrap().network_policy.is_none());
    // The ConfigMap holds the route, readable as a manifest.
    assert_eq!(objects.config.immutable, Some(true));
    let yaml = &objects.config.data.as_ref().unwrap()["route.yaml"];
    let loaded = crate::spec::parse_str(yaml, std::path::Path::new("route.yaml")).unwrap();
    assert_eq!(loaded[0].manifest.as_route().unwrap().spec, r.spec);
    let volume = pod
        .volumes
        .as_ref()
        .unwrap()
        .iter()
        .find(|v| v.name == "manifests")
        .unwrap();
    assert_eq!(
        volume.config_map.as_ref().unwrap().name,
        objects.config.metadata.name.clone().unwrap()
    );

    assert!(conditions::is_true(&plan.status.conditions, "Progressing"));
    assert!(!conditions::is_true(&plan.status.conditions, "Available"));
}

#[test]
fn a_token_secret_is_mounted_and_required() {
    let mut r = route();
    r.spec.serving.token_secret = Some("qa-tokens".into());
    r.spec.serving.replicas = 1;
    let plan = plan_over(&r, Some(active_corpus("v1")), None);
    let objects = plan.objects.unwrap();
    let pod = objects.deployment.spec.unwrap().template.spec.unwrap();
    let args = pod.containers[0].args.clone().unwrap().join(" ");
    assert!(
        args.contains("--token-file /etc/trellis/tokens/tokens"),
        "{args}"
    );
    let secret = pod
        .volumes
        .unwrap()
        .into_iter()
        .find_map(|v| v.secret)
        .unwrap();
    assert_eq!(secret.secret_name.as_deref(), Some("qa-tokens"));
    assert!(objects.budget.is_none(), "no budget over a single pod");
}

#[test]
fn a_route_only_change_rolls_pods_without_an_ingest() {
    let r = route();
    let c = active_corpus("v1");
    let first = plan_over(&r, Some(c.clone()), None).objects.unwrap();
    let running = rolled(&first.deployment, 2);

    // The same route and version: the template is unchanged.
    let same = plan_over(&r, Some(c.clone()), Some(running.clone()));
    assert_eq!(
        same.objects.unwrap().deployment.spec.unwrap().template,
        first.deployment.spec.clone().unwrap().template
    );
    assert_eq!(same.status.served_version.as_deref(), Some("v1"));
    assert!(!conditions::is_true(&same.status.conditions, "Progressing"));
    assert!(conditions::is_true(&same.status.conditions, "Available"));
    assert_eq!(same.status.ready_replicas, 2);

    // A route change: a new template (new config hash), the same version,
    // and the Corpus' plan has nothing to build.
    let mut changed = r.clone();
    changed.spec.selection.top_k = 9;
    let next = plan_over(&changed, Some(c.clone()), Some(running));
    let template = next.objects.unwrap().deployment.spec.unwrap().template;
    let before = first.deployment.spec.unwrap().template;
    assert_ne!(template, before);
    let annotations = template.metadata.unwrap().annotations.unwrap();
    assert_eq!(annotations[INDEX_VERSION_ANNOTATION], "v1");
    assert_ne!(
        annotations[CONFIG_HASH_ANNOTATION],
        before.metadata.unwrap().annotations.unwrap()[CONFIG_HASH_ANNOTATION]
    );
    assert!(conditions::is_true(&next.status.conditions, "Progressing"));
    assert!(
        next.prune_configs.is_none(),
        "old pods still read the old ConfigMap"
    );
}

#[test]
fn a_new_version_rolls_pods_and_is_served_once_they_are_ready() {
    let r = route();
    let first = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let running = rolled(&first.deployment, 2);
    let mut served = r.clone();
    served.status = Some(plan_over(&r, Some(active_corpus("v1")), Some(running.clone())).status);
    let next = plan_over(&served, Some(active_corpus("v2")), Some(running));
    let objects = next.objects.unwrap();
    assert_eq!(route::template_version(&objects.deployment), Some("v2"));
    // Still v1 until the new pods are ready.
    assert_eq!(next.status.served_version.as_deref(), Some("v1"));
    let mut rolling = objects.deployment.clone();
    rolling.metadata.generation = Some(2);
    rolling.status = Some(DeploymentStatus {
        observed_generation: Some(2),
        replicas: Some(3),
        updated_replicas: Some(1),
        ready_replicas: Some(2),
        available_replicas: Some(2),
        ..Default::default()
    });
    let mid = plan_over(&served, Some(active_corpus("v2")), Some(rolling));
    assert_eq!(mid.status.served_version.as_deref(), Some("v1"));
    assert!(conditions::is_true(&mid.status.conditions, "Progressing"));
    let done = plan_over(
        &served,
        Some(active_corpus("v2")),
        Some(rolled(&objects.deployment, 2)),
    );
    assert_eq!(done.status.served_version.as_deref(), Some("v2"));
    assert!(
        done.events
            .iter()
            .any(|e| e.reason == "ServedVersionChanged" && e.message.contains("v2"))
    );
    assert!(done.prune_configs.is_some());

    // A rollout the Deployment gave up on says so, as the Deployment does.
    let mut stuck = objects.deployment.clone();
    stuck.metadata.generation = Some(2);
    stuck.status = Some(DeploymentStatus {
        observed_generation: Some(2),
        replicas: Some(3),
        updated_replicas: Some(1),
        ready_replicas: Some(2),
        available_replicas: Some(2),
        conditions: Some(vec![DeploymentCondition {
            type_: "Progressing".into(),
            status: "False".into(),
            reason: Some("ProgressDeadlineExceeded".into()),
            message: Some("ReplicaSet has timed out progressing.".into()),
            ..Default::default()
        }]),
        ..Default::default()
    });
    let stalled = plan_over(&served, Some(active_corpus("v2")), Some(stuck));
    let progressing = conditions::get(&stalled.status.conditions, "Progressing").unwrap();
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_str()),
        ("False", "ProgressDeadlineExceeded")
    );
    assert!(progressing.message.contains("timed out"));
    assert_eq!(stalled.status.served_version.as_deref(), Some("v1"));

    // kstatus: reconciling mid-rollout, ready once done, stalled when
    // stuck (and a stuck rollout is never Ready, though pods serve).
    let kstatus = |plan: &route::Plan| {
        let c = &plan.status.conditions;
        (
            conditions::get(c, "Ready").map(|c| c.status.clone()),
            conditions::is_true(c, "Reconciling"),
            conditions::is_true(c, "Stalled"),
        )
    };
    assert_eq!(kstatus(&mid), (Some("False".into()), true, false));
    assert_eq!(kstatus(&done), (Some("True".into()), false, false));
    assert_eq!(kstatus(&stalled), (Some("False".into()), false, true));
    let ready = conditions::get(&stalled.status.conditions, "Ready").unwrap();
    assert_eq!(ready.reason, "ProgressDeadlineExceeded");
    assert!(
        stalled
            .events
            .iter()
            .any(|e| e.warning && e.reason == "ProgressDeadlineExceeded")
    );
}

#[test]
fn every_kind_reports_kstatus_ready_reconciling_and_stalled() {
    let mut bad = profile();
    bad.spec.chunking.min_tokens = 500;
    bad.spec.chunking.max_tokens = 100;
    let status = super::profile::plan_profile(&bad, "2026-11-24T00:00:00Z");
    assert!(!conditions::is_true(&status.conditions, "Ready"));
    assert!(conditions::is_true(&status.conditions, "Stalled"));
    let status = super::profile::plan_profile(&profile(), "2026-11-24T00:00:00Z");
    assert!(conditions::is_true(&status.conditions, "Ready"));
    assert!(conditions::get(&status.conditions, "Stalled").is_none());

    // A first ingest is reconciling; a failed one stalls.
    let started = plan(&corpus(), &with_profile());
    assert!(conditions::is_true(
        &started.status.conditions,
        "Reconciling"
    ));
    assert!(!conditions::is_true(&started.status.conditions, "Stalled"));
    let mut observed = with_profile();
    let inputs = started.inputs.clone();
    observed.ingest_job = Some(finished_job(false));
    let mut running = corpus();
    running.status = Some(started.status.clone());
    let failed = plan(&running, &observed);
    assert!(
        conditions::is_true(&failed.status.conditions, "Stalled"),
        "{inputs}: {:?}",
        failed.status.conditions
    );
    assert!(!conditions::is_true(
        &failed.status.conditions,
        "Reconciling"
    ));
}

#[test]
fn a_route_waits_for_its_corpus() {
    let r = route();
    let none = route_plan(&r, &route::Observed::default());
    assert!(none.objects.is_none());
    let available = conditions::get(&none.status.conditions, "Available").unwrap();
    assert_eq!(available.reason, "CorpusNotFound");
    let unbuilt = plan_over(&r, Some(corpus()), None);
    assert!(unbuilt.objects.is_none());
    let progressing = conditions::get(&unbuilt.status.conditions, "Progressing").unwrap();
    assert_eq!(progressing.reason, "WaitingForIndex");
}

#[test]
fn a_route_whose_corpus_cannot_be_read_keeps_its_pods() {
    let r = route();
    let serving = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let running = rolled(&serving.deployment, 2);
    let plan = route_plan(
        &r,
        &route::Observed {
            corpus_unreadable: Some("spec.ingest.shards: invalid type".into()),
            corpus: None,
            deployment: Some(running),
            ..Default::default()
        },
    );
    assert!(plan.objects.is_none(), "nothing is applied");
    let progressing = conditions::get(&plan.status.conditions, "Progressing").unwrap();
    assert_eq!(progressing.reason, "CorpusInvalid");
    assert!(progressing.message.contains("spec.ingest.shards"));
}

#[test]
fn a_route_holds_its_pods_until_a_version_this_build_reads_is_published() {
    let r = route();
    let serving = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let running = rolled(&serving.deployment, 2);
    for (format, said) in [
        (None, "earlier release"),
        (Some(crate::index::FORMAT_VERSION + 1), "format"),
    ] {
        let mut corpus = active_corpus("v1");
        if let Some(active) = corpus.status.as_mut().and_then(|s| s.active_index.as_mut()) {
            active.format = format;
        }
        let held = plan_over(&r, Some(corpus.clone()), Some(running.clone()));
        assert!(held.objects.is_none(), "{format:?}: nothing is applied");
        let progressing = conditions::get(&held.status.conditions, "Progressing").unwrap();
        assert_eq!(progressing.reason, "AwaitingReindex");
        assert!(
            progressing.message.contains(said),
            "{}",
            progressing.message
        );
        assert_eq!(held.status.served_version.as_deref(), Some("v1"));
        let fresh = plan_over(&r, Some(corpus), None);
        assert!(fresh.objects.is_none());
        let available = conditions::get(&fresh.status.conditions, "Available").unwrap();
        assert_eq!(available.reason, "AwaitingReindex");
    }
}

#[test]
fn a_route_waiting_on_a_reindex_that_failed_is_stalled_not_progressing() {
    let r = route();
    let serving = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let running = rolled(&serving.deployment, 2);
    let mut corpus = active_corpus("v1");
    let status = corpus.status.as_mut().unwrap();
    if let Some(active) = status.active_index.as_mut() {
        active.format = Some(crate::index::FORMAT_VERSION + 1);
    }
    status.pending_index = Some(crate::spec::IndexVersionStatus {
        version: "v2".into(),
        error: Some("source manuals: no such directory".into()),
        ..Default::default()
    });
    let stuck = plan_over(&r, Some(corpus), Some(running));
    assert!(stuck.objects.is_none(), "nothing is applied");
    let progressing = conditions::get(&stuck.status.conditions, "Progressing").unwrap();
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_str()),
        ("False", "ReindexFailed")
    );
    assert!(
        progressing.message.contains("no such directory"),
        "{}",
        progressing.message
    );
    let stalled = conditions::get(&stuck.status.conditions, "Stalled").unwrap();
    assert_eq!(stalled.reason, "ReindexFailed");
    // The pods it runs still serve the version they have.
    assert_eq!(stuck.status.served_version.as_deref(), Some("v1"));
}

/// A template of every kind the issue names, as a user writes it.
fn template_json() -> serde_json::Value {
    serde_json::json!({
        "metadata": {
            "labels": {"team": "search", "app.kubernetes.io/name": "not-trellis"},
            "annotations": {"cost-center": "42"}
        },
        "nodeSelector": {"pool": "cpu"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "rag", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [{
            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"
        }],
        "priorityClassName": "rag-batch",
        "imagePullSecrets": [{"name": "team-cred"}],
        "env": [{"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": {"name": "openai", "key": "key"}}}],
        "envFrom": [{"configMapRef": {"name": "proxy"}}],
        "volumes": [{"name": "ca", "configMap": {"name": "corporate-ca"}}],
        "volumeMounts": [{"name": "ca", "mountPath": "/etc/ssl/corporate", "readOnly": true}]
    })
}

fn assert_templated(pod: &PodTemplateSpec) {
    let meta = pod.metadata.as_ref().unwrap();
    let labels = meta.labels.as_ref().unwrap();
    assert_eq!(labels["team"], "search");
    assert_eq!(
        labels["app.kubernetes.io/name"], "trellis",
        "the operator's labels win"
    );
    assert_eq!(meta.annotations.as_ref().unwrap()["cost-center"], "42");
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(spec.node_selector.as_ref().unwrap()["pool"], "cpu");
    assert_eq!(spec.tolerations.as_ref().unwrap().len(), 1);
    assert_eq!(spec.topology_spread_constraints.as_ref().unwrap().len(), 1);
    assert_eq!(spec.priority_class_name.as_deref(), Some("rag-batch"));
    let pull: Vec<&str> = spec
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(
        pull,
        ["registry-cred", "team-cred"],
        "the chart's, then the template's"
    );
    assert!(spec.volumes.iter().flatten().any(|v| v.name == "data"));
    assert!(spec.volumes.iter().flatten().any(|v| v.name == "ca"));
    let container = &spec.containers[0];
    let env: Vec<&str> = container
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert!(
        env.contains(&"TRELLIS_SECRET_ROOT") && env.contains(&"OPENAI_API_KEY"),
        "{env:?}"
    );
    assert_eq!(container.env_from.as_ref().unwrap().len(), 1);
    let mounts = mount_paths(container);
    assert!(mounts.contains(&"/etc/ssl/corporate"), "{mounts:?}");
}

#[test]
fn templates_reach_ingest_and_retrieval_pods() {
    let mut c = corpus();
    c.spec.ingest.template = serde_json::from_value(template_json()).unwrap();
    let p = plan(&c, &with_profile());
    let job = job_of(&p).expect("an ingest Job");
    assert_templated(&job.spec.as_ref().unwrap().template);

    let mut r = route();
    r.spec.serving.template = serde_json::from_value(template_json()).unwrap();
    let plan = plan_over(&r, Some(active_corpus("v1")), None);
    let deployment = plan.objects.unwrap().deployment;
    assert_templated(&deployment.spec.as_ref().unwrap().template);
}

#[test]
fn template_clashes_with_the_operators_own_names_are_refused() {
    let clash = serde_json::json!({
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "secret-0", "emptyDir": {}}],
        "volumeMounts": [{"name": "x", "mountPath": "/var/lib/trellis/cache"}],
        "env": [{"name": "TRELLIS_SECRET_ROOT", "value": "/elsewhere"}]
    });
    let mut c = corpus();
    c.spec.ingest.template = serde_json::from_value(clash.clone()).unwrap();
    let p = plan(&c, &with_profile());
    assert!(job_of(&p).is_none());
    let ready = conditions::get(&p.status.conditions, "Ready").unwrap();
    assert_eq!(ready.reason, "InvalidSpec");
    for needle in [
        "\"data\"",
        "\"secret-0\"",
        "/var/lib/trellis/cache",
        "TRELLIS_SECRET_ROOT",
    ] {
        assert!(
            ready.message.contains(needle),
            "{needle}: {}",
            ready.message
        );
    }

    let mut r = route();
    r.spec.serving.template = serde_json::from_value(clash).unwrap();
    let plan = plan_over(&r, Some(active_corpus("v1")), None);
    assert!(plan.objects.is_none());
    let progressing = conditions::get(&plan.status.conditions, "Progressing").unwrap();
    assert_eq!(progressing.reason, "InvalidSpec");
    assert!(progressing.message.contains("spec.serving.template"));
}

#[test]
fn provider_and_graph_secrets_reach_the_pods_that_build_and_serve_a_version() {
    let mut observed = with_profile();
    let profile = observed.profile.as_mut().unwrap();
    profile.spec.embedding = serde_json::from_value(serde_json::json!({
        "provider": "openai",
        "model": "text-embedding-3-small",
        "apiKeySecretRef": {"name": "openai", "key": "api-key"}
    }))
    .unwrap();
    profile.spec.graph = serde_json::from_value(serde_json::json!({
        "store": "neo4j",
        "neo4j": {"uri": "bolt://neo4j:7687", "passwordSecretRef": {"name": "neo4j-auth"}}
    }))
    .unwrap();
    assert_eq!(profile.spec.secret_names(), ["neo4j-auth", "openai"]);
    let p = plan(&corpus(), &observed);
    let job = job_of(&p).expect("an ingest Job");
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let secrets: Vec<&str> = pod
        .volumes
        .iter()
        .flatten()
        .filter_map(|v| v.secret.as_ref()?.secret_name.as_deref())
        .collect();
    assert_eq!(secrets, ["neo4j-auth", "openai"]);

    // The version's status names them; the route's pods mount them.
    let mut c = active_corpus("v1");
    if let Some(active) = c.status.as_mut().and_then(|s| s.active_index.as_mut()) {
        active.secrets = vec!["neo4j-auth".into(), "openai".into()];
    }
    let plan = plan_over(&route(), Some(c), None);
    let deployment = plan.objects.unwrap().deployment;
    let pod = deployment.spec.unwrap().template.spec.unwrap();
    let mounts = mount_paths(&pod.containers[0]);
    for name in ["neo4j-auth", "openai"] {
        assert!(
            mounts.contains(&format!("/var/run/trellis/secrets/{name}").as_str()),
            "{mounts:?}"
        );
    }
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

#[test]
fn a_rotated_secret_rolls_the_route_pods() {
    let mut r = route();
    r.spec.serving.token_secret = Some("qa-tokens".into());
    let corpus = active_corpus("v1");
    let names = deployment::secret_names(&r, &corpus, &settings());
    assert!(names.contains(&"qa-tokens".to_string()), "{names:?}");
    let observed = |version: &str, deployment: Option<Deployment>| route::Observed {
        corpus: Some(corpus.clone()),
        deployment,
        secret_versions: names
            .iter()
            .map(|n| (n.clone(), version.to_string()))
            .collect(),
        ..Default::default()
    };
    let first = route_plan(&r, &observed("100", None)).objects.unwrap();
    let running = rolled(&first.deployment, 2);
    let mut served = r.clone();
    served.status = Some(route_plan(&r, &observed("100", Some(running.clone()))).status);

    let same = route_plan(&served, &observed("100", Some(running.clone())));
    assert!(!conditions::is_true(&same.status.conditions, "Progressing"));

    let rotated = route_plan(&served, &observed("101", Some(running)));
    let progressing = conditions::get(&rotated.status.conditions, "Progressing").unwrap();
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_str()),
        ("True", "NewTemplate")
    );
    assert!(
        progressing.message.contains("Secret"),
        "{}",
        progressing.message
    );
    let stamp =
        |d: &Deployment| route::template_annotation(d, SECRETS_ANNOTATION).map(String::from);
    assert_ne!(
        stamp(&rotated.objects.unwrap().deployment),
        stamp(&first.deployment)
    );
}

#[test]
fn a_route_anchored_in_the_graph_store_mounts_no_claim() {
    let mut r = route();
    r.spec.anchors.source = crate::spec::AnchorSource::Graph;
    // A version in no graph store: nothing is built, and the route says
    // why.
    let plan = plan_over(&r, Some(active_corpus("v1")), None);
    assert!(plan.objects.is_none());
    let progressing = conditions::get(&plan.status.conditions, "Progressing").unwrap();
    assert_eq!(progressing.reason, "NotInGraphStore");
    assert!(
        progressing.message.contains("v1"),
        "{}",
        progressing.message
    );

    let store = crate::spec::GraphSpec {
        store: crate::spec::GraphStoreKind::Neo4j,
        neo4j: Some(crate::spec::Neo4jSpec {
            uri: "bolt+s://neo4j.graph:7687".into(),
            database: None,
            username: "neo4j".into(),
            password_secret_ref: Some(crate::spec::SecretKeyRef {
                name: "neo4j-auth".into(),
                key: "password".into(),
            }),
            password_env: None,
        }),
        ..Default::default()
    };
    let mut corpus = active_corpus("v1");
    if let Some(active) = corpus.status.as_mut().and_then(|s| s.active_index.as_mut()) {
        active.graph = Some(store.clone());
        active.secrets = vec!["neo4j-auth".into()];
    }
    let plan = route_plan(
        &r,
        &route::Observed {
            corpus: Some(corpus),
            data_claim: Some(k8s_openapi::api::core::v1::PersistentVolumeClaim {
                spec: Some(k8s_openapi::api::core::v1::PersistentVolumeClaimSpec {
                    access_modes: Some(vec!["ReadWriteOnce".into()]),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    let objects = plan.objects.expect("objects");
    // The store's section reaches the pods whole (TLS scheme included),
    // beside the route, and the password's Secret is mounted.
    let data = objects.config.data.as_ref().unwrap();
    let json = &data[deployment::GRAPH_STORE_FILE];
    let read: crate::spec::GraphSpec = serde_yaml::from_str(json).unwrap();
    assert_eq!(read, store);
    let template = objects.deployment.spec.unwrap().template;
    let pod = template.spec.unwrap();
    let args = pod.containers[0].args.clone().unwrap().join(" ");
    assert!(
        args.contains("--index-from-graph /etc/trellis/manifests/graph-store.json"),
        "{args}"
    );
    assert!(args.contains("--index-version v1"), "{args}");
    let volumes = pod.volumes.clone().unwrap();
    assert!(volumes.iter().all(|v| v.persistent_volume_claim.is_none()));
    let data_volume = volumes.iter().find(|v| v.name == "data").unwrap();
    assert!(data_volume.empty_dir.is_some());
    assert_eq!(
        data_mounts(&pod.containers[0]),
        [(None, "/var/lib/trellis", Some(false))]
    );
    assert!(deployment::referenced_secrets(&pod).contains(&"neo4j-auth".to_string()));
    // A single-node claim places nothing: the pods have no claim.
    assert!(pod.affinity.is_none());
    assert!(
        !template
            .metadata
            .unwrap()
            .labels
            .unwrap()
            .contains_key(crate::operator::storage::DATA_CLAIM_LABEL)
    );
}

#[test]
fn a_reranking_service_key_is_mounted_into_the_route_pods_only_when_a_service_reads_it() {
    let mut r = route();
    r.spec.reranker = crate::spec::RerankerSpec {
        kind: crate::spec::RerankerKind::Cohere,
        model: "rerank-v3.5".into(),
        endpoint: Some("https://api.cohere.com".into()),
        api_key_secret_ref: Some(crate::spec::SecretKeyRef {
            name: "cohere".into(),
            key: "api-key".into(),
        }),
        ..Default::default()
    };
    let corpus = active_corpus("v1");
    let names = deployment::secret_names(&r, &corpus, &settings());
    assert!(names.contains(&"cohere".to_string()), "{names:?}");
    let objects = route_plan(
        &r,
        &route::Observed {
            corpus: Some(corpus.clone()),
            ..Default::default()
        },
    )
    .objects
    .unwrap();
    let pod = objects.deployment.spec.unwrap().template.spec.unwrap();
    let mounted = pod.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .any(|m| m.mount_path.ends_with("/cohere"));
    assert!(mounted, "the Secret is mounted under the secret root");

    // A local cross-encoder reads no key: a stale secret ref mounts nothing.
    r.spec.reranker.kind = crate::spec::RerankerKind::Local;
    let names = deployment::secret_names(&r, &corpus, &settings());
    assert!(!names.contains(&"cohere".to_string()), "{names:?}");
}

#[test]
fn a_generator_key_reaches_the_route_pods_its_address_the_policy_and_its_state_the_status() {
    let mut r = route();
    r.spec.generation = crate::spec::GenerationSpec {
        provider: crate::spec::GenerationProvider::Openai,
        model: "gpt-4o-mini".into(),
        endpoint: Some("http://169.254.10.20:8000/v1".into()),
        api_key_secret_ref: Some(crate::spec::SecretKeyRef {
            name: "llm".into(),
            key: "api-key".into(),
        }),
        ..Default::default()
    };
    let corpus = active_corpus("v1");
    assert!(deployment::secret_names(&r, &corpus, &settings()).contains(&"llm".to_string()));
    let observed = route::Observed {
        corpus: Some(corpus.clone()),
        generator: Some(Err(
            "http://169.254.10.20:8000/v1: connection refused".into()
        )),
        ..Default::default()
    };
    let plan = route_plan(&r, &observed);
    // Down: said, and not held against the route's readiness.
    let reachable = plan
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "GeneratorReachable")
        .expect("the generator's condition");
    assert_eq!(
        (reachable.status.as_str(), reachable.reason.as_str()),
        ("False", "GeneratorUnreachable")
    );
    assert!(reachable.message.contains("connection refused"));
    let objects = plan.objects.unwrap();
    let pod = objects.deployment.spec.unwrap().template.spec.unwrap();
    assert!(deployment::referenced_secrets(&pod).contains(&"llm".to_string()));
    // A link-local address, which the policy otherwise closes, is opened
    // to the generator alone, on its port.
    let egress = objects
        .network_policy
        .unwrap()
        .spec
        .unwrap()
        .egress
        .unwrap();
    let opened = egress.iter().any(|rule| {
        let to = rule.to.iter().flatten().filter_map(|p| p.ip_block.as_ref());
        let port = rule.ports.iter().flatten().filter_map(|p| p.port.clone());
        to.map(|b| b.cidr.as_str()).eq(["169.254.10.20/32"])
            && port.eq([k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(8000)])
    });
    assert!(opened, "{egress:?}");

    // Extractive: no condition, no key.
    let mut plain = r.clone();
    plain.spec.generation = Default::default();
    let plan = route_plan(
        &plain,
        &route::Observed {
            corpus: Some(corpus.clone()),
            ..Default::default()
        },
    );
    assert!(
        plan.status
            .conditions
            .iter()
            .all(|c| c.type_ != "GeneratorReachable")
    );
    assert!(!deployment::secret_names(&plain, &corpus, &settings()).contains(&"llm".to_string()));

    // An extractive route that names a model is refused, not rolled out.
    plain.spec.generation.model = "gpt-4o-mini".into();
    let plan = route_plan(
        &plain,
        &route::Observed {
            corpus: Some(corpus),
            ..Default::default()
        },
    );
    assert!(plan.objects.is_none());
    let progressing = plan
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .unwrap();
    assert_eq!(progressing.reason, "InvalidSpec");
    assert!(
        progressing.message.contains("spec.generation.model"),
        "{}",
        progressing.message
    );
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

/// The start of a rollout is when the route's status says it began, and
/// there is none once every pod runs the template.
#[test]
fn a_rollout_under_way_reports_when_it_began() {
    let r = route();
    let first = plan_over(&r, Some(active_corpus("v1")), None);
    let began = |plan: &route::Plan| plan.rollout_began;
    // The first pods: a rollout from now (the plan's clock).
    let now = conditions::unix_seconds("2026-11-24T00:00:00Z").unwrap();
    assert_eq!(began(&first), Some(now));
    let objects = first.objects.unwrap();
    let running = rolled(&objects.deployment, 2);
    let mut served = r.clone();
    served.status = Some(plan_over(&r, Some(active_corpus("v1")), Some(running.clone())).status);
    assert_eq!(
        began(&plan_over(
            &served,
            Some(active_corpus("v1")),
            Some(running.clone())
        )),
        None,
        "every pod runs the template"
    );
    // A new version: under way from the Progressing transition the
    // status recorded, reconcile after reconcile.
    let mut rolling = served.clone();
    let mut status = plan_over(&served, Some(active_corpus("v2")), Some(running)).status;
    for c in &mut status.conditions {
        if c.type_ == "Progressing" {
            c.last_transition_time = Some("2026-11-23T23:00:00Z".into());
        }
    }
    rolling.status = Some(status);
    let next = plan_over(&rolling, Some(active_corpus("v2")), None).objects;
    let mut half = rolled(&next.unwrap().deployment, 2);
    half.status.as_mut().unwrap().updated_replicas = Some(1);
    assert_eq!(
        began(&plan_over(&rolling, Some(active_corpus("v2")), Some(half))),
        Some(now - 3600)
    );
    // A paused route reports none.
    let mut paused = rolling.clone();
    paused.metadata.annotations = Some(BTreeMap::from([(
        PAUSED_ANNOTATION.to_string(),
        "true".to_string(),
    )]));
    assert_eq!(
        began(&plan_over(&paused, Some(active_corpus("v2")), None)),
        None
    );
}

/// The chart's PodMonitor scrapes the retrieval pods by labels and a port
/// they have.
#[test]
fn the_charts_pod_monitor_selects_the_retrieval_pods() {
    let template = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/charts/trellis/templates/podmonitor.yaml"
    ))
    .unwrap();
    let selector = template
        .split("matchLabels:")
        .nth(1)
        .and_then(|rest| rest.split("namespaceSelector:").next())
        .unwrap();
    let objects = plan_over(&route(), Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let pod = objects.deployment.spec.unwrap().template;
    let labels = pod.metadata.unwrap().labels.unwrap();
    let mut selected = 0;
    for line in selector.lines().filter(|l| l.contains(": ")) {
        let (key, value) = line.trim().split_once(": ").unwrap();
        assert_eq!(labels.get(key).map(String::as_str), Some(value), "{key}");
        selected += 1;
    }
    assert_eq!(selected, 3, "{selector}");
    assert!(template.contains("- port: http"));
    let ports = pod.spec.unwrap().containers[0].ports.clone().unwrap();
    assert!(ports.iter().any(|p| p.name.as_deref() == Some("http")));
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

/// Past `maxConcurrentRollouts` a route whose pods would roll keeps them
/// as they are (nothing applied) and says why; a route's first pods and
/// one whose rollout is under way are not held.
#[test]
fn a_rollout_past_the_cap_keeps_the_pods_that_serve() {
    let r = route();
    let first = plan_over(&r, Some(active_corpus("v1")), None);
    let objects = first.objects.unwrap();
    let replicas = objects
        .deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap();
    let serving_v1 = rolled(&objects.deployment, replicas);
    let at = |rollouts_elsewhere: usize, deployment: Option<Deployment>| {
        route_plan(
            &r,
            &route::Observed {
                corpus: Some(active_corpus("v2")),
                deployment,
                rollouts_elsewhere,
                ..Default::default()
            },
        )
    };

    let held = at(2, Some(serving_v1.clone()));
    assert!(held.objects.is_none());
    assert!(held.prune_configs.is_none());
    let progressing = conditions::get(&held.status.conditions, "Progressing").unwrap();
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_str()),
        ("True", "RolloutQueued")
    );
    assert!(
        progressing.message.contains("maxConcurrentRollouts (2)")
            && progressing.message.contains("index version v2"),
        "{}",
        progressing.message
    );
    assert!(conditions::get(&held.status.conditions, "Stalled").is_none());
    assert_eq!(held.requeue, Some(Duration::from_secs(10)));
    assert_eq!(held.status.served_version.as_deref(), Some("v1"));

    let rolls = at(1, Some(serving_v1.clone()));
    assert_eq!(
        rolls
            .objects
            .as_ref()
            .and_then(|o| route::template_version(&o.deployment)),
        Some("v2")
    );
    // A route's first pods are no rollout of running ones.
    assert!(at(9, None).objects.is_some());
    // Rolling serving pods takes a turn; first pods and pods that already
    // run the template take none.
    assert!(held.needs_turn && rolls.needs_turn);
    assert!(!at(9, None).needs_turn);
    let served = rolled(&rolls.objects.unwrap().deployment, replicas);
    let steady = at(9, Some(served));
    assert!(steady.objects.is_some() && !steady.needs_turn);
}

/// When an autoscaler scales a route's Deployment, the operator applies
/// the replica count it finds instead of the route's.
#[test]
fn an_autoscaled_route_keeps_the_autoscalers_replicas() {
    let r = route();
    let objects = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let mut scaled = rolled(&objects.deployment, 5);
    if let Some(spec) = scaled.spec.as_mut() {
        spec.replicas = Some(5);
    }
    scaled.metadata.resource_version = Some("rv-5".into());
    let observe = |autoscaler: Option<&str>| route::Observed {
        corpus: Some(active_corpus("v1")),
        deployment: Some(scaled.clone()),
        autoscaler: autoscaler.map(String::from),
        ..Default::default()
    };
    let replicas = |plan: &route::Plan| {
        plan.objects
            .as_ref()
            .and_then(|o| o.deployment.spec.as_ref())
            .and_then(|s| s.replicas)
    };
    let autoscaled = route_plan(&r, &observe(Some("handbook-qa")));
    assert_eq!(replicas(&autoscaled), Some(5));
    // The count is applied only over the Deployment it was read from.
    assert_eq!(
        autoscaled
            .objects
            .as_ref()
            .and_then(|o| o.deployment.metadata.resource_version.as_deref()),
        Some("rv-5")
    );
    // Without one the route's count is applied, over the Deployment as
    // read too: a count set between the read and the apply is planned
    // over again, not overwritten.
    let owned = route_plan(&r, &observe(None));
    assert_ne!(replicas(&owned), Some(5));
    assert_eq!(
        owned
            .objects
            .as_ref()
            .and_then(|o| o.deployment.metadata.resource_version.as_deref()),
        Some("rv-5")
    );
    // A Deployment not yet made has no version to hold the apply to.
    let fresh = plan_over(&r, Some(active_corpus("v1")), None);
    assert!(
        fresh
            .objects
            .and_then(|o| o.deployment.metadata.resource_version)
            .is_none()
    );
}

/// Ingest pods are fenced: nothing in, nothing out to link-local
/// addresses (cloud metadata), unless an s3 source runs on ambient
/// credentials, which an instance role serves from there.
#[test]
fn ingest_pods_get_a_policy_that_keeps_them_from_cloud_metadata() {
    let policy_of = |c: &Corpus| {
        plan(c, &with_profile())
            .apply
            .into_iter()
            .find_map(|d| match d {
                Desired::NetworkPolicy(p) => Some(p),
                _ => None,
            })
            .unwrap()
    };
    let c = corpus();
    let policy = policy_of(&c);
    let spec = policy.spec.as_ref().unwrap();
    let job = job_of(&plan(&c, &with_profile())).unwrap().clone();
    let pod_labels = job.spec.unwrap().template.metadata.unwrap().labels.unwrap();
    let selector = spec
        .pod_selector
        .as_ref()
        .unwrap()
        .match_labels
        .clone()
        .unwrap();
    assert!(
        selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v)),
        "{selector:?}"
    );
    assert_eq!(spec.ingress.as_deref(), Some(&[][..]));
    let egress = serde_json::to_string(&spec.egress).unwrap();
    assert!(
        egress.contains("169.254.0.0/16") && egress.contains("fe80::/10"),
        "{egress}"
    );

    let mut ambient = corpus();
    ambient.spec.sources = serde_json::from_value(serde_json::json!([
        {"s3": {"bucket": "b", "ambientCredentials": true}}
    ]))
    .unwrap();
    let open = policy_of(&ambient);
    let egress = serde_json::to_string(&open.spec.unwrap().egress).unwrap();
    assert!(!egress.contains("169.254.0.0/16"), "{egress}");
}

/// A template's `serviceAccount.annotations` reach the ServiceAccount the
/// pods run as: the ingest pods' own, and one the route gets only when
/// its template asks.
#[test]
fn template_service_accounts_carry_a_cloud_identity() {
    let identity: crate::spec::TemplateServiceAccount = serde_json::from_value(serde_json::json!({
        "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/trellis"}
    }))
    .unwrap();
    let mut c = corpus();
    c.spec.ingest.template.service_account = Some(identity.clone());
    let account = plan(&c, &with_profile())
        .apply
        .into_iter()
        .find_map(|d| match d {
            Desired::ServiceAccount(a) => Some(a),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        account.metadata.annotations.unwrap()["eks.amazonaws.com/role-arn"],
        "arn:aws:iam::1:role/trellis"
    );

    let plain = plan_over(&route(), Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    assert!(plain.service_account.is_none());
    let pod = plain.deployment.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.service_account_name, None);

    let mut r = route();
    r.spec.serving.template.service_account = Some(identity);
    let objects = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let account = objects.service_account.unwrap();
    assert!(controlled_by(&account.metadata, &r.metadata));
    assert_eq!(account.automount_service_account_token, Some(false));
    let pod = objects.deployment.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.service_account_name, account.metadata.name);
    assert_eq!(pod.automount_service_account_token, Some(false));
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

/// Retrieval pods are told the profile the operator rendered, by hash.
#[test]
fn retrieval_pods_are_given_the_rendered_profiles_hash() {
    let mut corpus = active_corpus("v1");
    if let Some(active) = corpus.status.as_mut().and_then(|s| s.active_index.as_mut()) {
        active.served_profile = Some("00aa11bb22cc33dd".into());
    }
    let objects = plan_over(&route(), Some(corpus), None).objects.unwrap();
    let args = objects
        .deployment
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0]
        .args
        .clone()
        .unwrap();
    let at = args.iter().position(|a| a == "--profile-hash").unwrap();
    assert_eq!(args[at + 1], "00aa11bb22cc33dd");
}
