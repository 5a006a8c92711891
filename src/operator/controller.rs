//! The reconcilers' async half: read what a plan needs from the API,
//! apply what it wants (server-side apply, field manager
//! [`FIELD_MANAGER`]), write status, publish events; and the watches that
//! wake each reconciler.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Event as CoreEvent, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::checked::{Checked, Unreadable};
use super::conditions::{Note, WithConditions};
use super::corpus;
use super::ingest_job::{self, Desired};
use super::telemetry::Metrics;
use super::{
    CONFIG_HASH_ANNOTATION, CORPUS_LABEL, Error, FIELD_MANAGER, INGEST_SPEC_LABEL, INPUTS_LABEL,
    ROUTE_LABEL, SOURCE_LABEL, Settings, conditions, profile,
};
use super::{deployment, route};
use crate::spec::{Condition, Corpus, IndexProfile, RetrievalRoute};

/// What every reconcile shares.
pub struct Context {
    pub client: Client,
    pub settings: Settings,
    pub metrics: Metrics,
    pub recorder: Recorder,
    /// Unix seconds now; a function so that tests can fix the clock.
    pub clock: fn() -> u64,
    /// Failed reconciles in a row per object, for the retry backoff.
    pub failures: std::sync::Mutex<std::collections::HashMap<String, u32>>,
    /// The namespaces the reconcilers watch; empty for every namespace.
    /// The caps count what runs there.
    pub watched: Vec<String>,
    /// Held from counting the ingests that run to starting one, so that
    /// two Corpora reconciled at once cannot both take the last turn.
    pub ingest_turns: tokio::sync::Mutex<()>,
    /// The same for routes' rollouts.
    pub rollout_turns: tokio::sync::Mutex<()>,
}

impl Context {
    pub fn new(client: Client, settings: Settings, metrics: Metrics) -> Self {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: FIELD_MANAGER.into(),
                instance: std::env::var("POD_NAME").ok(),
            },
        );
        Self {
            client,
            settings,
            metrics,
            recorder,
            clock: unix_now,
            failures: Default::default(),
            watched: Vec::new(),
            ingest_turns: Default::default(),
            rollout_turns: Default::default(),
        }
    }

    /// The objects of kind `K` that `selector` matches in the watched
    /// namespaces: one list over all of them, or one per namespace (a
    /// Role in each grants no list across them).
    async fn list_watched<K>(&self, selector: &str) -> Result<Vec<K>, Error>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
    {
        let params = ListParams::default().labels(selector);
        if self.watched.is_empty() {
            return Ok(Api::<K>::all(self.client.clone())
                .list(&params)
                .await?
                .items);
        }
        let mut items = Vec::new();
        for ns in &self.watched {
            let api: Api<K> = Api::namespaced(self.client.clone(), ns);
            items.extend(api.list(&params).await?.items);
        }
        Ok(items)
    }

    /// Ingest Jobs the operator made that run now, other than `corpus`'s.
    async fn ingests_elsewhere(&self, ns: &str, corpus: &str) -> Result<usize, Error> {
        let selector = format!("{},{CORPUS_LABEL}", managed_component("ingest"));
        Ok(self
            .list_watched::<Job>(&selector)
            .await?
            .iter()
            .filter(|j| {
                let own = j.namespace().as_deref() == Some(ns)
                    && j.labels().get(CORPUS_LABEL).map(String::as_str)
                        == Some(super::label_value(corpus).as_str());
                !own && corpus::job_state(j) == corpus::JobState::Running
            })
            .count())
    }

    /// Routes' Deployments whose pods are being replaced, other than
    /// `route`'s.
    async fn rollouts_elsewhere(&self, ns: &str, workload: &str) -> Result<usize, Error> {
        Ok(self
            .list_watched::<Deployment>(&managed_component("retrieval"))
            .await?
            .iter()
            .filter(|d| {
                let own = d.namespace().as_deref() == Some(ns) && d.name_any() == workload;
                !own && !route::rolled_out(d)
            })
            .count())
    }
}

/// The label selector of the objects of one component the operator made.
fn managed_component(component: &str) -> String {
    super::common_labels(component)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn apply_params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

/// A namespaced object the operator applies by server-side apply.
trait Namespaced:
    Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
    + Clone
    + Serialize
    + DeserializeOwned
    + std::fmt::Debug
{
}

impl<K> Namespaced for K where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug
{
}

/// Server-side applies `object` (which names itself) in `ns`.
async fn apply<K: Namespaced>(client: &Client, ns: &str, object: &K) -> Result<K, Error> {
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let name = object.meta().name.clone().ok_or(Error::MissingField {
        kind: "object",
        field: "metadata.name",
    })?;
    // Server-side apply needs apiVersion and kind in the body.
    let mut body = serde_json::to_value(object).map_err(|e| Error::Render(e.to_string()))?;
    body["apiVersion"] = K::api_version(&()).into();
    body["kind"] = K::kind(&()).into();
    api.patch(&name, &apply_params(), &Patch::Apply(body))
        .await
        .map_err(|error| refusal(error, &K::kind(&()), &name))
}

/// [`Error::Refused`] for an API error that refuses the object for what
/// it is: 400 (a field rule, an admission webhook's denial), 403 (a quota,
/// an admission policy, a missing permission) and 422 (an invalid name or
/// field). A conflict (409) can only come of a `resourceVersion`
/// precondition, since applies are forced: it is [`Error::Changed`].
/// Anything else, a timeout say, stays a transient error that the retry
/// alone may cure.
fn refusal(error: kube::Error, kind: &str, name: &str) -> Error {
    match error {
        kube::Error::Api(response) if response.code == 409 => Error::Changed {
            kind: kind.to_string(),
            name: name.to_string(),
        },
        kube::Error::Api(response) if matches!(response.code, 400 | 403 | 422) => Error::Refused {
            kind: kind.to_string(),
            name: name.to_string(),
            message: response.message,
        },
        other => other.into(),
    }
}

/// Deletes `name`; one already gone counts as deleted, and a refusal
/// (RBAC, an admission policy) is an [`Error::Refused`] like an apply's.
async fn delete<K: Namespaced>(
    api: &Api<K>,
    name: &str,
    params: &DeleteParams,
) -> Result<(), Error> {
    match api.delete(name, params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(error) => Err(refusal(error, &K::kind(&()), name)),
    }
}

/// Deletes every object `selector` matches; a refusal as [`delete`]'s.
async fn delete_matching<K: Namespaced>(api: &Api<K>, selector: &str) -> Result<(), Error> {
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels(selector),
    )
    .await
    .map(drop)
    .map_err(|error| refusal(error, &K::kind(&()), selector))
}

/// After a write the API server refused: the object's status as the plan
/// left it, but `Ready=False` and `Stalled=True` with reason
/// [`APPLY_FAILED`](conditions::APPLY_FAILED) and the server's message,
/// and a Warning Event. The reconcile still fails, so the error policy
/// retries with its backoff: the quota may be raised or the policy lifted,
/// and the next reconcile that applies plans the status afresh.
async fn report_refusal<K, S>(
    ctx: &Context,
    ns: &str,
    object: &K,
    current: Option<&S>,
    planned: &S,
    error: &Error,
) where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    S: WithConditions + Clone + Serialize,
{
    let Error::Refused { .. } = error else {
        return;
    };
    let mut status = planned.clone();
    conditions::refused(
        status.conditions_mut(),
        &error.to_string(),
        object.meta().generation,
        &conditions::now(),
    );
    let before = current.map(|s| s.conditions()).unwrap_or_default();
    let mut notes = Vec::new();
    conditions::transitions(before, status.conditions(), &mut notes);
    let api: Api<K> = Api::namespaced(ctx.client.clone(), ns);
    // The reconcile fails with the refusal either way; a status that
    // cannot be written is logged beside it.
    if let Err(e) = patch_status(&api, &object.name_any(), &status).await {
        tracing::warn!(error = %e, "writing the status of a refused apply");
    }
    for note in &notes {
        publish(ctx, object, note).await;
    }
}

/// Applies `object`, or, when the plan has none, removes the one of
/// this kind that `route` owns under its workload name (a budget left from
/// two replicas, a NetworkPolicy the operator is no longer told to make,
/// a ServiceAccount the template no longer asks for).
/// One of that name that the route does not control (someone's own
/// budget or policy) stays. Absent is the usual case.
async fn apply_or_remove<K: Namespaced>(
    client: &Client,
    ns: &str,
    route: &RetrievalRoute,
    object: Option<&K>,
) -> Result<(), Error> {
    let Some(object) = object else {
        let api: Api<K> = Api::namespaced(client.clone(), ns);
        let name = deployment::workload_name(&route.name_any());
        let Some(existing) = api.get_opt(&name).await? else {
            return Ok(());
        };
        if super::controlled_by(existing.meta(), route.meta()) {
            delete(&api, &name, &DeleteParams::default()).await?;
        }
        return Ok(());
    };
    apply(client, ns, object).await.map(drop)
}

/// Writes `status` through the status subresource, by server-side apply
/// with the operator's field manager: a field the new status leaves out
/// (a finished `pendingIndex`, an old version's failures) is removed, as a
/// merge patch would not.
async fn patch_status<K, S>(api: &Api<K>, name: &str, status: &S) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize,
{
    let patch = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    api.patch_status(name, &apply_params(), &Patch::Apply(&patch))
        .await?;
    Ok(())
}

async fn publish<K: Resource<DynamicType = ()>>(ctx: &Context, object: &K, note: &Note) {
    let event = Event {
        type_: if note.warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: note.reason.clone(),
        note: Some(note.event_text()),
        action: "Reconcile".into(),
        secondary: None,
    };
    // An event that cannot be written is not worth failing a reconcile.
    if let Err(e) = ctx.recorder.publish(&event, &object.object_ref(&())).await {
        tracing::warn!(error = %e, reason = %note.reason, "publishing an event");
    }
}

fn namespace<K: ResourceExt>(object: &K, kind: &'static str) -> Result<String, Error> {
    object.namespace().ok_or(Error::MissingField {
        kind,
        field: "metadata.namespace",
    })
}

/// Reconciles an IndexProfile: its hash and `Valid` condition.
#[tracing::instrument(skip_all, fields(kind = "IndexProfile", name = %profile.name_any()))]
pub async fn reconcile_profile(
    profile: Arc<IndexProfile>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let key = object_key(profile.as_ref());
    measured(
        "IndexProfile",
        key,
        &ctx.clone(),
        profile_once(profile, ctx),
    )
    .await
}

async fn profile_once(profile: Arc<IndexProfile>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ns = namespace(profile.as_ref(), "IndexProfile")?;
    let status = profile::plan_profile(&profile, &conditions::now());
    if Some(&status) != profile.status.as_ref() {
        let api: Api<IndexProfile> = Api::namespaced(ctx.client.clone(), &ns);
        patch_status(&api, &profile.name_any(), &status).await?;
    }
    let before = profile
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let mut notes = Vec::new();
    conditions::transitions(before, &status.conditions, &mut notes);
    for note in &notes {
        publish(&ctx, profile.as_ref(), note).await;
    }
    Ok(Action::await_change())
}

/// Reconciles a Corpus: starts ingests for new inputs, follows them, and
/// records the published version.
#[tracing::instrument(skip_all, fields(kind = "Corpus", name = %corpus.name_any()))]
pub async fn reconcile_corpus(corpus: Arc<Corpus>, ctx: Arc<Context>) -> Result<Action, Error> {
    let key = object_key(corpus.as_ref());
    measured("Corpus", key, &ctx.clone(), corpus_once(corpus, ctx)).await
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

    let profiles: Api<Checked<IndexProfile>> = Api::namespaced(client.clone(), &ns);
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    // An unreadable profile is marked on itself; here it is one not found.
    let mut observed = corpus::Observed {
        profile: profiles
            .get_opt(&corpus.spec.profile_ref.name)
            .await?
            .and_then(|p| p.object.ok()),
        ..Default::default()
    };
    if let Some(profile) = &observed.profile
        && !super::is_paused(&corpus.metadata)
    {
        for source in ingest_job::source_config_map_names(&corpus) {
            let version = config_maps
                .get_opt(&source)
                .await?
                .and_then(|c| c.metadata.resource_version)
                .unwrap_or_default();
            observed.source_config_maps.insert(source, version);
        }
        let routes: Api<Checked<RetrievalRoute>> = Api::namespaced(client.clone(), &ns);
        // An unreadable route's pods still serve: retention keeps its
        // version all the same.
        observed.served_versions = routes
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter_map(|r| match r.object {
                Ok(route) => (route.spec.corpus_ref.name == name)
                    .then(|| route.status.and_then(|s| s.served_version))
                    .flatten(),
                Err(unreadable) => (unreadable.str_at("/spec/corpusRef/name")
                    == Some(name.as_str()))
                .then(|| unreadable.str_at("/status/servedVersion").map(String::from))
                .flatten(),
            })
            .collect();
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
        observed.data_claim = claims.get_opt(&corpus.spec.storage.claim_name).await?;
        let inputs = corpus::inputs_hash(&corpus, profile, &observed.source_config_maps, now);
        let names = ingest_job::Names::new(&corpus, &inputs);
        observed.report = config_maps.get_opt(&names.report).await?;
        observed.ingest_job = jobs.get_opt(&names.ingest_job).await?;
        if corpus.spec.ingest.shards > 1 {
            observed.finalize_job = jobs.get_opt(&names.finalize_job).await?;
        }
        let current = [&names.ingest_job, &names.finalize_job];
        observed.other_jobs = jobs
            .list(&ListParams::default().labels(&format!(
                "{CORPUS_LABEL}={},{INPUTS_LABEL}",
                super::label_value(&name)
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
            observed.trouble = job_trouble(client, &ns, &job.name_any()).await?;
        }
    }

    let mut plan = corpus::plan_corpus(&corpus, &observed, &ctx.settings, now, &conditions::now())?;
    // A plan that starts an ingest is made again with the ingests running
    // elsewhere counted; from that count to the Job's apply no other
    // Corpus may start one. Any other plan neither counts nor waits.
    let turn = if plan.needs_turn {
        let turn = ctx.ingest_turns.lock().await;
        observed.ingests_elsewhere = ctx.ingests_elsewhere(&ns, &name).await?;
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
    if Some(&plan.status) != corpus.status.as_ref() {
        let api: Api<Corpus> = Api::namespaced(client.clone(), &ns);
        patch_status(&api, &name, &plan.status).await?;
    }
    // Counted once the status that records the end is written: a write
    // that failed is retried, and the retry sees the same transition.
    if let Some(finished) = &plan.finished {
        ctx.metrics.ingest_finished(&ns, &name, finished);
    }
    ctx.metrics.observe_corpus(&ns, &name, &plan.status);
    for note in &plan.events {
        publish(&ctx, corpus.as_ref(), note).await;
    }
    Ok(match plan.requeue {
        Some(after) => Action::requeue(after),
        // Jobs and the report wake the Corpus; this is a safety net.
        None => Action::requeue(Duration::from_secs(600)),
    })
}

/// Carries out a Corpus plan's writes: the Jobs it ends, the objects it
/// applies, the manifests of other inputs it prunes.
async fn write_ingest(
    client: &Client,
    ns: &str,
    corpus: &Corpus,
    plan: &corpus::Plan,
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
            super::label_value(&corpus.name_any())
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
) -> Result<Option<super::trouble::Trouble>, Error> {
    use super::trouble::{FAILED_CREATE, awaits_volumes, diagnose};
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

/// Reconciles a RetrievalRoute: the Deployment, ConfigMap, Service and
/// PodDisruptionBudget serving the Corpus' active version, and the status
/// they report.
#[tracing::instrument(skip_all, fields(kind = "RetrievalRoute", name = %route.name_any()))]
pub async fn reconcile_route(
    route: Arc<RetrievalRoute>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let key = object_key(route.as_ref());
    measured("RetrievalRoute", key, &ctx.clone(), route_once(route, ctx)).await
}

async fn route_once(route: Arc<RetrievalRoute>, ctx: Arc<Context>) -> Result<Action, Error> {
    if route.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let ns = namespace(route.as_ref(), "RetrievalRoute")?;
    let name = route.name_any();
    let client = &ctx.client;
    let corpora: Api<Checked<Corpus>> = Api::namespaced(client.clone(), &ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);

    let mut observed = route::Observed::default();
    if !super::is_paused(&route.metadata) {
        observed.deployment = deployments
            .get_opt(&deployment::workload_name(&name))
            .await?;
        match corpora.get_opt(&route.spec.corpus_ref.name).await? {
            Some(Checked { object: Ok(c), .. }) => observed.corpus = Some(c),
            Some(Checked { object: Err(e), .. }) => observed.corpus_unreadable = Some(e.reason),
            None => {}
        }
        if let Some(corpus) = &observed.corpus {
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
            observed.data_claim = claims.get_opt(&corpus.spec.storage.claim_name).await?;
            // Metadata only: the operator needs to know that a Secret
            // changed, never what it holds.
            let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
            for secret in deployment::secret_names(&route, corpus, &ctx.settings) {
                let version = secrets
                    .get_metadata_opt(&secret)
                    .await?
                    .and_then(|s| s.metadata.resource_version)
                    .unwrap_or_default();
                observed.secret_versions.insert(secret, version);
            }
        }
    }
    if !super::is_paused(&route.metadata) {
        let generation = route.spec.generation.clone();
        observed.generator =
            tokio::task::spawn_blocking(move || crate::generate::endpoint_reachable(&generation))
                .await
                .unwrap_or(None);
    }
    let workload = deployment::workload_name(&name);
    if observed.deployment.is_some() {
        observed.autoscaler = autoscaler_of(client, &ns, &workload).await?;
    }
    let mut plan = route::plan_route(&route, &observed, &ctx.settings, &conditions::now())?;
    // A plan that rolls serving pods is made again with the rollouts under
    // way elsewhere counted; from that count to the Deployment's apply no
    // other route may start one. Any other plan neither counts nor waits.
    let turn = if plan.needs_turn {
        let turn = ctx.rollout_turns.lock().await;
        observed.rollouts_elsewhere = ctx.rollouts_elsewhere(&ns, &workload).await?;
        plan = route::plan_route(&route, &observed, &ctx.settings, &conditions::now())?;
        Some(turn)
    } else {
        None
    };
    let written = write_serving(client, &ns, &route, &plan).await;
    drop(turn);
    if let Err(Error::Changed { kind, name }) = &written {
        // Someone wrote the Deployment (an autoscaler its count, the
        // Deployment controller its status) between the read and the
        // apply: plan again from what it is now. A stale plan is no
        // failure, so it neither backs off nor counts as one.
        tracing::debug!(%kind, %name, "changed since read; planning again");
        return Ok(Action::requeue(STALE_RETRY));
    }
    if let Err(error) = written {
        report_refusal(
            &ctx,
            &ns,
            route.as_ref(),
            route.status.as_ref(),
            &plan.status,
            &error,
        )
        .await;
        return Err(error);
    }
    if Some(&plan.status) != route.status.as_ref() {
        let api: Api<RetrievalRoute> = Api::namespaced(client.clone(), &ns);
        patch_status(&api, &name, &plan.status).await?;
    }
    ctx.metrics.set_rollout(&ns, &name, plan.rollout_began);
    for note in &plan.events {
        publish(&ctx, route.as_ref(), note).await;
    }
    // Nothing is watched that says when a generator comes back or goes
    // away: a route with one is looked at again each minute.
    let recheck = match observed.generator {
        Some(_) => Duration::from_secs(60),
        None => Duration::from_secs(600),
    };
    Ok(Action::requeue(
        plan.requeue.map_or(recheck, |r| r.min(recheck)),
    ))
}

/// How soon a reconcile whose plan rested on a stale read runs again.
const STALE_RETRY: Duration = Duration::from_millis(500);

/// The HorizontalPodAutoscaler in `ns` that scales Deployment `workload`,
/// if one does.
async fn autoscaler_of(client: &Client, ns: &str, workload: &str) -> Result<Option<String>, Error> {
    let autoscalers: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), ns);
    Ok(autoscalers
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .find(|a| {
            a.spec.as_ref().is_some_and(|s| {
                let target = &s.scale_target_ref;
                target.kind == "Deployment"
                    && target.name == workload
                    && target.api_version.as_deref().is_none_or(|v| v == "apps/v1")
            })
        })
        .map(|a| a.name_any()))
}

/// Carries out a route plan's writes: the objects that serve it, then the
/// configurations of earlier profiles it prunes.
async fn write_serving(
    client: &Client,
    ns: &str,
    route: &RetrievalRoute,
    plan: &route::Plan,
) -> Result<(), Error> {
    if let Some(objects) = &plan.objects {
        apply_serving(client, ns, route, objects).await?;
    }
    if let Some(hash) = &plan.prune_configs {
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let selector = format!(
            "{ROUTE_LABEL}={},{CONFIG_HASH_ANNOTATION},{CONFIG_HASH_ANNOTATION}!={hash}",
            super::label_value(&route.name_any())
        );
        delete_matching(&config_maps, &selector).await?;
    }
    Ok(())
}

/// Applies what serves a route.
async fn apply_serving(
    client: &Client,
    ns: &str,
    route: &RetrievalRoute,
    objects: &deployment::Objects,
) -> Result<(), Error> {
    // The configuration and the identity first: the new pods need them.
    apply::<ConfigMap>(client, ns, &objects.config).await?;
    apply_or_remove(client, ns, route, objects.service_account.as_ref()).await?;
    apply::<Deployment>(client, ns, &objects.deployment).await?;
    apply::<Service>(client, ns, &objects.service).await?;
    apply_or_remove(client, ns, route, objects.budget.as_ref()).await?;
    apply_or_remove(client, ns, route, objects.network_policy.as_ref()).await
}

/// The reason of the conditions set on an object that cannot be read.
pub const INVALID_SPEC: &str = "InvalidSpec";

/// Removes the conditions an unreadable object was given, now that it
/// reads: its reconcile sets its own.
fn clear_invalid(conditions: Option<&mut Vec<Condition>>) {
    if let Some(conditions) = conditions {
        conditions.retain(|c| c.reason != INVALID_SPEC);
    }
}

/// Reconciles an IndexProfile as read from the API, readable or not.
pub async fn reconcile_checked_profile(
    object: Arc<Checked<IndexProfile>>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    match &object.object {
        Ok(profile) => {
            let mut profile = profile.clone();
            clear_invalid(profile.status.as_mut().map(|s| &mut s.conditions));
            reconcile_profile(Arc::new(profile), ctx).await
        }
        Err(unreadable) => reconcile_unreadable("IndexProfile", &object, unreadable, &ctx).await,
    }
}

/// Reconciles a Corpus as read from the API, readable or not.
pub async fn reconcile_checked_corpus(
    object: Arc<Checked<Corpus>>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    match &object.object {
        Ok(corpus) => {
            let mut corpus = corpus.clone();
            clear_invalid(corpus.status.as_mut().map(|s| &mut s.conditions));
            reconcile_corpus(Arc::new(corpus), ctx).await
        }
        Err(unreadable) => reconcile_unreadable("Corpus", &object, unreadable, &ctx).await,
    }
}

/// Reconciles a RetrievalRoute as read from the API, readable or not.
pub async fn reconcile_checked_route(
    object: Arc<Checked<RetrievalRoute>>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    match &object.object {
        Ok(route) => {
            let mut route = route.clone();
            clear_invalid(route.status.as_mut().map(|s| &mut s.conditions));
            reconcile_route(Arc::new(route), ctx).await
        }
        Err(unreadable) => reconcile_unreadable("RetrievalRoute", &object, unreadable, &ctx).await,
    }
}

/// Marks an object this operator cannot read: `Ready=False` and
/// `Stalled=True`, reason `InvalidSpec`, naming the field, and a Warning
/// Event. Nothing it owns is touched: a route's pods keep serving and a
/// Corpus keeps its versions until the object is fixed (which wakes it).
#[tracing::instrument(skip_all, fields(kind, name = %object.name_any()))]
async fn reconcile_unreadable<K>(
    kind: &'static str,
    object: &Checked<K>,
    unreadable: &Unreadable,
    ctx: &Context,
) -> Result<Action, Error>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let started = Instant::now();
    let ns = namespace(object, kind)?;
    let name = object.name_any();
    tracing::warn!(kind, %name, reason = %unreadable.reason, "cannot read the object");
    ctx.metrics.unreadable(kind);
    let before: Vec<Condition> = unreadable
        .raw
        .pointer("/status/conditions")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let mut after = before.clone();
    let message = format!(
        "this operator cannot read the {kind}: {}; fix the field (nothing else is affected)",
        unreadable.reason
    );
    let generation = object.metadata.generation;
    let now = conditions::now();
    for (type_, status) in [("Ready", false), ("Stalled", true)] {
        conditions::set(
            &mut after,
            conditions::Set::new(type_, status, INVALID_SPEC, message.clone()),
            generation,
            &now,
        );
    }
    let same = |a: &Condition, b: &Condition| {
        (&a.type_, &a.status, &a.reason, &a.message) == (&b.type_, &b.status, &b.reason, &b.message)
    };
    let observed = unreadable
        .raw
        .pointer("/status/observedGeneration")
        .and_then(|g| g.as_i64());
    let changed = after.len() != before.len()
        || after.iter().zip(&before).any(|(a, b)| !same(a, b))
        || observed != generation;
    if changed {
        // A merge patch of the conditions and the generation they observe
        // alone: the typed status cannot be read, and what else it says
        // (the active version) must stay. Observed, the object reads as
        // stalled to GitOps tools (Argo CD: Degraded), not as progressing.
        let api: Api<Checked<K>> = Api::namespaced(ctx.client.clone(), &ns);
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let status = serde_json::json!({"conditions": after, "observedGeneration": generation});
        api.patch_status(
            &name,
            &params,
            &Patch::Merge(serde_json::json!({ "status": status })),
        )
        .await?;
        let mut notes = Vec::new();
        conditions::transitions(&before, &after, &mut notes);
        for note in &notes {
            publish(ctx, object, note).await;
        }
    }
    ctx.metrics.reconciled(kind, started.elapsed());
    Ok(Action::await_change())
}

/// `kind/namespace/name`: the key of an object's failure count.
fn object_key<K: ResourceExt>(object: &K) -> String {
    format!(
        "{}/{}/{}",
        std::any::type_name::<K>(),
        object.namespace().unwrap_or_default(),
        object.name_any()
    )
}

/// Runs one reconcile, recording its duration whatever its outcome, and
/// forgets the object's failures once one succeeds.
async fn measured(
    kind: &'static str,
    key: String,
    ctx: &Context,
    reconcile: impl std::future::Future<Output = Result<Action, Error>>,
) -> Result<Action, Error> {
    let started = Instant::now();
    let result = reconcile.await;
    ctx.metrics.reconciled(kind, started.elapsed());
    if result.is_ok() {
        ctx.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
    }
    result
}

/// The wait before retrying after the `failures`-th failure in a row:
/// 5 s, doubling, at most 5 minutes.
pub fn retry_after(failures: u32) -> Duration {
    let seconds = 5u64.saturating_mul(1u64 << failures.saturating_sub(1).min(6));
    Duration::from_secs(seconds.min(300))
}

/// Requeues a failed reconcile with a backoff that grows with the
/// object's failures in a row, counting the failure.
fn error_policy<K: ResourceExt>(
    kind: &'static str,
) -> impl Fn(Arc<K>, &Error, Arc<Context>) -> Action {
    move |object, error, ctx| {
        let failures = {
            let mut counts = ctx.failures.lock().unwrap_or_else(|e| e.into_inner());
            let n = counts.entry(object_key(object.as_ref())).or_default();
            *n += 1;
            *n
        };
        tracing::warn!(kind, error = %error, failures, "reconcile failed");
        ctx.metrics.failed(kind, error);
        Action::requeue(retry_after(failures))
    }
}

/// What a controller's stream yields: each reconcile's outcome, or an
/// error of the controller itself (a watch that failed, an object it could
/// not queue). Failed reconciles are the error policy's; the controller's
/// own errors are logged and counted here, not dropped, since a watch that
/// keeps failing means the kind is not being reconciled.
fn logged<T, E: std::fmt::Display>(
    kind: &'static str,
    ctx: Arc<Context>,
) -> impl FnMut(Result<T, kube::runtime::controller::Error<Error, E>>) -> std::future::Ready<()> {
    move |outcome| {
        use kube::runtime::controller::Error as Controller;
        match outcome {
            Ok(_) | Err(Controller::ReconcilerFailed(..)) => {}
            // The object was deleted before its reconcile: the usual end
            // of one, not an error. Its gauges go with it.
            Err(Controller::ObjectNotFound(object)) => {
                tracing::debug!(kind, name = %object.name, "deleted");
                ctx.metrics.forget(
                    kind,
                    object.namespace.as_deref().unwrap_or_default(),
                    &object.name,
                );
            }
            Err(Controller::QueueError(e)) => {
                tracing::warn!(kind, error = %e, "watch failed");
                ctx.metrics.stream_error(kind, "watch");
            }
            Err(e) => {
                tracing::warn!(kind, error = %e, "controller error");
                ctx.metrics.stream_error(kind, "controller");
            }
        }
        std::future::ready(())
    }
}

/// The objects the operator creates, for the owned-object watches.
fn managed() -> watcher::Config {
    watcher::Config::default().labels(&format!("app.kubernetes.io/managed-by={FIELD_MANAGER}"))
}

/// Runs the three controllers until `shutdown` completes. `namespace`
/// limits them to one namespace (the chart's namespaced mode).
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let (stop_tx, _) = tokio::sync::broadcast::channel::<()>(1);
    // One set of controllers over every namespace, or one per watched
    // namespace: a Role in each grants no watch across them.
    let scopes: Vec<Option<String>> = if ctx.watched.is_empty() {
        vec![None]
    } else {
        ctx.watched.iter().cloned().map(Some).collect()
    };
    let controllers = futures::future::join_all(
        scopes
            .iter()
            .map(|scope| run_scope(ctx.clone(), scope.as_deref(), &stop_tx)),
    );
    let stopper = async {
        shutdown.await;
        let _ = stop_tx.send(());
    };
    tokio::join!(controllers, stopper);
}

/// The three kinds' controllers over one namespace (`None`: every one),
/// until `stop_tx` sends.
async fn run_scope(
    ctx: Arc<Context>,
    namespace: Option<&str>,
    stop_tx: &tokio::sync::broadcast::Sender<()>,
) {
    fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = kube::core::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }
    let client = &ctx.client;
    let stop = |tx: &tokio::sync::broadcast::Sender<()>| {
        let mut rx = tx.subscribe();
        async move {
            let _ = rx.recv().await;
        }
    };

    let profiles = Controller::new(
        api::<Checked<IndexProfile>>(client, namespace),
        Default::default(),
    )
    .graceful_shutdown_on(stop(stop_tx))
    .run(
        reconcile_checked_profile,
        error_policy("IndexProfile"),
        ctx.clone(),
    )
    .for_each(logged("IndexProfile", ctx.clone()));

    let corpora = Controller::new(
        api::<Checked<Corpus>>(client, namespace),
        Default::default(),
    );
    let corpus_store = corpora.store();
    let source_store = corpus_store.clone();
    let pod_store = corpus_store.clone();
    let corpora = corpora
        .owns(api::<Job>(client, namespace), managed())
        .owns(api::<ConfigMap>(client, namespace), managed())
        // A profile change reaches every Corpus that uses it.
        .watches(
            api::<Checked<IndexProfile>>(client, namespace),
            Default::default(),
            move |profile| {
                let ns = profile.namespace();
                let name = profile.name_any();
                corpus_store
                    .state()
                    .into_iter()
                    .filter(|c| {
                        c.namespace() == ns
                            && c.object
                                .as_ref()
                                .is_ok_and(|c| c.spec.profile_ref.name == name)
                    })
                    .map(|c| ObjectRef::from_obj(c.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
        // A pod of an ingest that cannot run (unschedulable, short of
        // memory, no image) changes no Job: its Corpus hears of it here.
        .watches(
            api::<Pod>(client, namespace),
            watcher::Config::default().labels(&format!(
                "app.kubernetes.io/managed-by={FIELD_MANAGER},app.kubernetes.io/component=ingest,{CORPUS_LABEL}"
            )),
            move |pod| {
                let ns = pod.namespace();
                let corpus = pod.labels().get(CORPUS_LABEL).cloned();
                pod_store
                    .state()
                    .into_iter()
                    .filter(|c| {
                        c.namespace() == ns
                            && corpus.as_deref() == Some(super::label_value(&c.name_any()).as_str())
                    })
                    .map(|c| ObjectRef::from_obj(c.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
        // An edit to a labelled source ConfigMap reaches the corpora that
        // read it at once (others are seen at the next reconcile).
        .watches(
            api::<ConfigMap>(client, namespace),
            watcher::Config::default().labels(&format!("{SOURCE_LABEL}=true")),
            move |config_map| {
                let ns = config_map.namespace();
                let name = config_map.name_any();
                source_store
                    .state()
                    .into_iter()
                    .filter(|c| {
                        c.namespace() == ns
                            && c.object
                                .as_ref()
                                .is_ok_and(|c| ingest_job::source_config_map_names(c).contains(&name))
                    })
                    .map(|c| ObjectRef::from_obj(c.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
        .graceful_shutdown_on(stop(stop_tx))
        .run(
            reconcile_checked_corpus,
            error_policy("Corpus"),
            ctx.clone(),
        )
        .for_each(logged("Corpus", ctx.clone()));

    let routes = Controller::new(
        api::<Checked<RetrievalRoute>>(client, namespace),
        Default::default(),
    );
    let route_store = routes.store();
    let secret_routes = route_store.clone();
    // A rotated Secret rolls the pods of the routes of its namespace that
    // read it (their reconcile compares its resource version). Metadata
    // only: the operator never holds Secret data.
    let secrets = watcher(
        api::<PartialObjectMeta<Secret>>(client, namespace),
        Default::default(),
    )
    .touched_objects();
    let routes = routes
        .owns(api::<Deployment>(client, namespace), managed())
        .watches_stream(secrets, move |secret| {
            let ns = secret.namespace();
            secret_routes
                .state()
                .into_iter()
                .filter(|r| r.namespace() == ns)
                .map(|r| ObjectRef::from_obj(r.as_ref()))
                .collect::<Vec<_>>()
        })
        // A new active version reaches every route of the Corpus.
        .watches(
            api::<Checked<Corpus>>(client, namespace),
            Default::default(),
            move |corpus| {
                let ns = corpus.namespace();
                let name = corpus.name_any();
                route_store
                    .state()
                    .into_iter()
                    .filter(|r| {
                        r.namespace() == ns
                            && r.object
                                .as_ref()
                                .is_ok_and(|r| r.spec.corpus_ref.name == name)
                    })
                    .map(|r| ObjectRef::from_obj(r.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
        .graceful_shutdown_on(stop(stop_tx))
        .run(
            reconcile_checked_route,
            error_policy("RetrievalRoute"),
            ctx.clone(),
        )
        .for_each(logged("RetrievalRoute", ctx.clone()));

    tokio::join!(profiles, corpora, routes);
}
