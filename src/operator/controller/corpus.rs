//! The Corpus reconciler: reads what the Corpus' plan
//! ([`plan_corpus`](crate::operator::corpus::plan_corpus)) needs (its
//! profile, source ConfigMaps, the versions routes serve, the current
//! attempt's Jobs and report and what stops its pods), takes a turn under
//! `operator.maxConcurrentIngests` when the plan starts an ingest, carries
//! out the plan's writes and records its status, metrics and Events; and
//! its controller, with the watches that wake a Corpus.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Event as CoreEvent, PersistentVolumeClaim, Pod, ServiceAccount,
};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{DeleteParams, ListParams};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use kube::{Api, Client, ResourceExt};

use super::reconciler::{Reconcile, measured};
use super::run::{managed, scoped, woken};
use super::writes::{apply, delete, delete_matching, patch_status, publish, report_refusal};
use super::{Context, managed_component, namespace};
use crate::operator::checked::Checked;
use crate::operator::corpus::{self, Observed, Plan};
use crate::operator::ingest_job::{self, Desired};
use crate::operator::{
    CORPUS_LABEL, Error, FIELD_MANAGER, INGEST_SPEC_LABEL, INPUTS_LABEL, SOURCE_LABEL, conditions,
    is_paused, label_value,
};
use crate::spec::{Condition, Corpus, IndexProfile, RetrievalRoute};

impl Reconcile for Corpus {
    const KIND: &'static str = "Corpus";

    fn conditions_mut(&mut self) -> Option<&mut Vec<Condition>> {
        self.status.as_mut().map(|s| &mut s.conditions)
    }

    fn reconcile(
        object: Arc<Self>,
        ctx: Arc<Context>,
    ) -> impl std::future::Future<Output = Result<Action, Error>> + Send {
        reconcile_corpus(object, ctx)
    }
}

/// Reconciles a Corpus: starts ingests for new inputs, follows them, and
/// records the published version.
#[tracing::instrument(skip_all, fields(kind = "Corpus", name = %corpus.name_any()))]
pub async fn reconcile_corpus(corpus: Arc<Corpus>, ctx: Arc<Context>) -> Result<Action, Error> {
    measured(
        corpus.as_ref(),
        &ctx.clone(),
        corpus_once(corpus.clone(), ctx),
    )
    .await
}

async fn corpus_once(corpus: Arc<Corpus>, ctx: Arc<Context>) -> Result<Action, Error> {
    if corpus.metadata.deletion_timestamp.is_some() {
        // Owner references remove the Jobs, ConfigMaps and RBAC objects.
        return Ok(Action::await_change());
    }
    let ns = namespace(corpus.as_ref(), "Corpus")?;
    let name = corpus.name_any();
    let client = &ctx.client;
    let now = (ctx.clock)();
    let mut observed = observe(client, &ns, &corpus, now).await?;

    let mut plan = corpus::plan_corpus(&corpus, &observed, &ctx.settings, now, &conditions::now())?;
    // A plan that starts an ingest is made again with the ingests running
    // elsewhere counted; from that count to the Job's apply no other
    // Corpus may start one. Any other plan neither counts nor waits.
    let turn = if plan.needs_turn {
        let turn = ctx.ingest_turns.lock().await;
        observed.ingests_elsewhere = ingests_elsewhere(&ctx, &ns, &name).await?;
        plan = corpus::plan_corpus(&corpus, &observed, &ctx.settings, now, &conditions::now())?;
        Some(turn)
    } else {
        None
    };
    let written = write_ingest(client, &ns, &corpus, &plan).await;
    drop(turn);
    if let Err(error) = written {
        report_refusal(
            &ctx,
            &ns,
            corpus.as_ref(),
            corpus.status.as_ref(),
            &plan.status,
            &error,
        )
        .await;
        return Err(error);
    }
    record(&ctx, &ns, &corpus, &plan).await?;
    Ok(match plan.requeue {
        Some(after) => Action::requeue(after),
        // Jobs and the report wake the Corpus; this is a safety net.
        None => Action::requeue(Duration::from_secs(600)),
    })
}

/// What the Corpus' plan needs of the cluster. A paused Corpus, or one
/// whose profile is missing, needs nothing beyond the profile.
async fn observe(client: &Client, ns: &str, corpus: &Corpus, now: u64) -> Result<Observed, Error> {
    let profiles: Api<Checked<IndexProfile>> = Api::namespaced(client.clone(), ns);
    // An unreadable profile is marked on itself; here it is one not found.
    let profile = profiles
        .get_opt(&corpus.spec.profile_ref.name)
        .await?
        .and_then(|p| p.object.ok());
    let mut observed = Observed::default();
    if let Some(profile) = &profile
        && !is_paused(&corpus.metadata)
    {
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for source in ingest_job::source_config_map_names(corpus) {
            let version = config_maps
                .get_opt(&source)
                .await?
                .and_then(|c| c.metadata.resource_version)
                .unwrap_or_default();
            observed.source_config_maps.insert(source, version);
        }
        observed.served_versions = served_versions(client, ns, &corpus.name_any()).await?;
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
        observed.data_claim = claims.get_opt(&corpus.spec.storage.claim_name).await?;
        let inputs = corpus::inputs_hash(corpus, profile, &observed.source_config_maps, now);
        observe_attempt(client, ns, corpus, &inputs, &mut observed).await?;
    }
    observed.profile = profile;
    Ok(observed)
}

/// The index versions the routes of Corpus `name` serve. An unreadable
/// route's pods still serve: retention keeps its version all the same.
async fn served_versions(client: &Client, ns: &str, name: &str) -> Result<Vec<String>, Error> {
    let routes: Api<Checked<RetrievalRoute>> = Api::namespaced(client.clone(), ns);
    Ok(routes
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|r| match r.object {
            Ok(route) => (route.spec.corpus_ref.name == name)
                .then(|| route.status.and_then(|s| s.served_version))
                .flatten(),
            Err(unreadable) => (unreadable.str_at("/spec/corpusRef/name") == Some(name))
                .then(|| unreadable.str_at("/status/servedVersion").map(String::from))
                .flatten(),
        })
        .collect())
}

/// The attempt at `inputs`: its report, its Jobs, the Corpus' other Jobs
/// and what stops the pods of the Job the plan follows.
async fn observe_attempt(
    client: &Client,
    ns: &str,
    corpus: &Corpus,
    inputs: &str,
    observed: &mut Observed,
) -> Result<(), Error> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let names = ingest_job::Names::new(corpus, inputs);
    observed.report = config_maps.get_opt(&names.report).await?;
    observed.ingest_job = jobs.get_opt(&names.ingest_job).await?;
    if corpus.spec.ingest.shards > 1 {
        observed.finalize_job = jobs.get_opt(&names.finalize_job).await?;
    }
    let current = [&names.ingest_job, &names.finalize_job];
    observed.other_jobs = jobs
        .list(&ListParams::default().labels(&format!(
            "{CORPUS_LABEL}={},{INPUTS_LABEL}",
            label_value(&corpus.name_any())
        )))
        .await?
        .items
        .into_iter()
        .filter(|j| !current.contains(&&j.name_any()))
        .collect();
    // The job the plan follows: the finalize step once it exists.
    let following = observed
        .finalize_job
        .as_ref()
        .or(observed.ingest_job.as_ref())
        .filter(|j| corpus::job_state(j) != corpus::JobState::Succeeded);
    if let Some(job) = following {
        observed.trouble = job_trouble(client, ns, &job.name_any()).await?;
    }
    Ok(())
}

/// Ingest Jobs the operator made that run now, other than `corpus`'s.
async fn ingests_elsewhere(ctx: &Context, ns: &str, corpus: &str) -> Result<usize, Error> {
    let selector = format!("{},{CORPUS_LABEL}", managed_component("ingest"));
    Ok(ctx
        .list_watched::<Job>(&selector)
        .await?
        .iter()
        .filter(|j| {
            let own = j.namespace().as_deref() == Some(ns)
                && j.labels().get(CORPUS_LABEL).map(String::as_str)
                    == Some(label_value(corpus).as_str());
            !own && corpus::job_state(j) == corpus::JobState::Running
        })
        .count())
}

/// Records what the plan concluded: the status (when it changed), the
/// metrics and the Events.
async fn record(ctx: &Context, ns: &str, corpus: &Corpus, plan: &Plan) -> Result<(), Error> {
    let name = corpus.name_any();
    if Some(&plan.status) != corpus.status.as_ref() {
        let api: Api<Corpus> = Api::namespaced(ctx.client.clone(), ns);
        patch_status(&api, &name, &plan.status).await?;
    }
    // Counted once the status that records the end is written: a write
    // that failed is retried, and the retry sees the same transition.
    if let Some(finished) = &plan.finished {
        ctx.metrics.ingest_finished(ns, &name, finished);
    }
    ctx.metrics.observe_corpus(ns, &name, &plan.status);
    for note in &plan.events {
        publish(ctx, corpus, note).await;
    }
    Ok(())
}

/// Carries out a Corpus plan's writes: the Jobs it ends, the objects it
/// applies, the manifests of other inputs it prunes.
async fn write_ingest(
    client: &Client,
    ns: &str,
    corpus: &Corpus,
    plan: &Plan,
) -> Result<(), Error> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    for job in &plan.delete_jobs {
        delete(&jobs, job, &DeleteParams::background()).await?;
    }
    apply_ingest(client, ns, &plan.apply).await?;
    if plan.prune_inputs {
        // Other inputs' manifests, and those of this inputs' attempts with
        // another `spec.ingest` (`!=` also matches a missing label).
        let ingest_objects = format!(
            "{CORPUS_LABEL}={},app.kubernetes.io/component=ingest",
            label_value(&corpus.name_any())
        );
        let ingest_spec = ingest_job::ingest_spec_hash(corpus);
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for others in [
            format!(
                "{ingest_objects},{INPUTS_LABEL},{INPUTS_LABEL}!={}",
                plan.inputs
            ),
            format!(
                "{ingest_objects},{INPUTS_LABEL}={},{INGEST_SPEC_LABEL}!={ingest_spec}",
                plan.inputs
            ),
        ] {
            delete_matching(&config_maps, &others).await?;
        }
    }
    Ok(())
}

/// Applies what an ingest needs, in the plan's order.
async fn apply_ingest(client: &Client, ns: &str, objects: &[Desired]) -> Result<(), Error> {
    for desired in objects {
        match desired {
            Desired::ServiceAccount(o) => drop(apply::<ServiceAccount>(client, ns, o).await?),
            Desired::Role(o) => drop(apply::<Role>(client, ns, o).await?),
            Desired::RoleBinding(o) => drop(apply::<RoleBinding>(client, ns, o).await?),
            Desired::ConfigMap(o) => drop(apply::<ConfigMap>(client, ns, o).await?),
            Desired::NetworkPolicy(o) => drop(apply::<NetworkPolicy>(client, ns, o).await?),
            Desired::Job(o) => drop(apply::<Job>(client, ns, o).await?),
        }
    }
    Ok(())
}

/// What stops Job `job`'s pods, from the pods, the Job's Events and the
/// Events of its pods that wait on their node for their volumes.
async fn job_trouble(
    client: &Client,
    ns: &str,
    job: &str,
) -> Result<Option<crate::operator::trouble::Trouble>, Error> {
    use crate::operator::trouble::{FAILED_CREATE, awaits_volumes, diagnose};
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pods = pods
        .list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
        .await?
        .items;
    let events: Api<CoreEvent> = Api::namespaced(client.clone(), ns);
    let job_events = events
        .list(&ListParams::default().fields(&format!(
            "involvedObject.kind=Job,involvedObject.name={job},reason={FAILED_CREATE}"
        )))
        .await?
        .items;
    // Only pods stuck before their containers start have volume Events
    // worth reading: usually none, one per shard at most.
    let mut pod_events = Vec::new();
    for pod in pods.iter().filter(|p| awaits_volumes(p)) {
        let fields = format!(
            "involvedObject.kind=Pod,involvedObject.name={}",
            pod.name_any()
        );
        pod_events.extend(
            events
                .list(&ListParams::default().fields(&fields))
                .await?
                .items,
        );
    }
    Ok(diagnose(&pods, &job_events, &pod_events))
}

/// The corpora's controller over one namespace (`None`: every one): woken
/// by its Jobs and ConfigMaps, by a change to its profile, by a pod of its
/// ingest that cannot run, and by an edit to a source ConfigMap it reads.
pub(super) fn controller(client: &Client, namespace: Option<&str>) -> Controller<Checked<Corpus>> {
    let corpora = Controller::new(
        scoped::<Checked<Corpus>>(client, namespace),
        Default::default(),
    );
    let corpus_store = corpora.store();
    let source_store = corpus_store.clone();
    let pod_store = corpus_store.clone();
    corpora
        .owns(scoped::<Job>(client, namespace), managed())
        .owns(scoped::<ConfigMap>(client, namespace), managed())
        // A profile change reaches every Corpus that uses it.
        .watches(
            scoped::<Checked<IndexProfile>>(client, namespace),
            Default::default(),
            move |profile| {
                let name = profile.name_any();
                woken(&corpus_store, profile.namespace(), |c| {
                    c.object
                        .as_ref()
                        .is_ok_and(|c| c.spec.profile_ref.name == name)
                })
            },
        )
        // A pod of an ingest that cannot run (unschedulable, short of
        // memory, no image) changes no Job: its Corpus hears of it here.
        .watches(
            scoped::<Pod>(client, namespace),
            watcher::Config::default().labels(&format!(
                "app.kubernetes.io/managed-by={FIELD_MANAGER},app.kubernetes.io/component=ingest,{CORPUS_LABEL}"
            )),
            move |pod| {
                let corpus = pod.labels().get(CORPUS_LABEL).cloned();
                woken(&pod_store, pod.namespace(), |c| {
                    corpus.as_deref() == Some(label_value(&c.name_any()).as_str())
                })
            },
        )
        // An edit to a labelled source ConfigMap reaches the corpora that
        // read it at once (others are seen at the next reconcile).
        .watches(
            scoped::<ConfigMap>(client, namespace),
            watcher::Config::default().labels(&format!("{SOURCE_LABEL}=true")),
            move |config_map| {
                let name = config_map.name_any();
                woken(&source_store, config_map.namespace(), |c| {
                    c.object
                        .as_ref()
                        .is_ok_and(|c| ingest_job::source_config_map_names(c).contains(&name))
                })
            },
        )
}
