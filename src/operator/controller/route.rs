//! The RetrievalRoute reconciler: reads what the route's plan
//! ([`plan_route`](crate::operator::route::plan_route)) needs (its
//! Deployment, its Corpus, the Corpus' data claim, the Secrets its pods
//! read, whether its generator answers, an autoscaler), takes a turn under
//! `operator.maxConcurrentRollouts` when the plan rolls serving pods,
//! applies the objects that serve it and records its status, metrics and
//! Events; and its controller, with the watches that wake a route.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Secret, Service};
use kube::api::{DeleteParams, ListParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};

use super::reconciler::{Reconcile, measured};
use super::run::{managed, scoped, woken};
use super::writes::{
    Namespaced, apply, delete, delete_matching, patch_status, publish, report_refusal,
};
use super::{Context, managed_component, namespace};
use crate::operator::checked::Checked;
use crate::operator::route::{self, Observed, Plan};
use crate::operator::{
    CONFIG_HASH_ANNOTATION, Error, ROUTE_LABEL, Settings, conditions, controlled_by, deployment,
    is_paused, label_value,
};
use crate::spec::{Condition, Corpus, RetrievalRoute};

impl Reconcile for RetrievalRoute {
    const KIND: &'static str = "RetrievalRoute";

    fn conditions_mut(&mut self) -> Option<&mut Vec<Condition>> {
        self.status.as_mut().map(|s| &mut s.conditions)
    }

    fn reconcile(
        object: Arc<Self>,
        ctx: Arc<Context>,
    ) -> impl std::future::Future<Output = Result<Action, Error>> + Send {
        reconcile_route(object, ctx)
    }
}

/// How soon a reconcile whose plan rested on a stale read runs again.
const STALE_RETRY: Duration = Duration::from_millis(500);

/// Reconciles a RetrievalRoute: the Deployment, ConfigMap, Service and
/// PodDisruptionBudget serving the Corpus' active version, and the status
/// they report.
#[tracing::instrument(skip_all, fields(kind = "RetrievalRoute", name = %route.name_any()))]
pub async fn reconcile_route(
    route: Arc<RetrievalRoute>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    measured(route.as_ref(), &ctx.clone(), route_once(route.clone(), ctx)).await
}

async fn route_once(route: Arc<RetrievalRoute>, ctx: Arc<Context>) -> Result<Action, Error> {
    if route.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let ns = namespace(route.as_ref(), "RetrievalRoute")?;
    let client = &ctx.client;
    let mut observed = observe(client, &ns, &route, &ctx.settings).await?;
    let workload = deployment::workload_name(&route.name_any());
    let mut plan = route::plan_route(&route, &observed, &ctx.settings, &conditions::now())?;
    // A plan that rolls serving pods is made again with the rollouts under
    // way elsewhere counted; from that count to the Deployment's apply no
    // other route may start one. Any other plan neither counts nor waits.
    let turn = if plan.needs_turn {
        let turn = ctx.rollout_turns.lock().await;
        observed.rollouts_elsewhere = rollouts_elsewhere(&ctx, &ns, &workload).await?;
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
    record(&ctx, &ns, &route, &plan).await?;
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

/// What the route's plan needs of the cluster; for a paused route,
/// nothing.
async fn observe(
    client: &Client,
    ns: &str,
    route: &RetrievalRoute,
    settings: &Settings,
) -> Result<Observed, Error> {
    let name = route.name_any();
    let corpora: Api<Checked<Corpus>> = Api::namespaced(client.clone(), ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);

    let mut observed = Observed::default();
    if !is_paused(&route.metadata) {
        observed.deployment = deployments
            .get_opt(&deployment::workload_name(&name))
            .await?;
        match corpora.get_opt(&route.spec.corpus_ref.name).await? {
            Some(Checked { object: Ok(c), .. }) => observed.corpus = Some(c),
            Some(Checked { object: Err(e), .. }) => observed.corpus_unreadable = Some(e.reason),
            None => {}
        }
        if let Some(corpus) = &observed.corpus {
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
            observed.data_claim = claims.get_opt(&corpus.spec.storage.claim_name).await?;
            // Metadata only: the operator needs to know that a Secret
            // changed, never what it holds.
            let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
            for secret in deployment::secret_names(route, corpus, settings) {
                let version = secrets
                    .get_metadata_opt(&secret)
                    .await?
                    .and_then(|s| s.metadata.resource_version)
                    .unwrap_or_default();
                observed.secret_versions.insert(secret, version);
            }
        }
    }
    if !is_paused(&route.metadata) {
        let generation = route.spec.generation.clone();
        observed.generator =
            tokio::task::spawn_blocking(move || crate::generate::endpoint_reachable(&generation))
                .await
                .unwrap_or(None);
    }
    let workload = deployment::workload_name(&name);
    if observed.deployment.is_some() {
        observed.autoscaler = autoscaler_of(client, ns, &workload).await?;
    }
    Ok(observed)
}

/// Routes' Deployments whose pods are being replaced, other than
/// `route`'s.
async fn rollouts_elsewhere(ctx: &Context, ns: &str, workload: &str) -> Result<usize, Error> {
    Ok(ctx
        .list_watched::<Deployment>(&managed_component("retrieval"))
        .await?
        .iter()
        .filter(|d| {
            let own = d.namespace().as_deref() == Some(ns) && d.name_any() == workload;
            !own && !route::rolled_out(d)
        })
        .count())
}

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

/// Records what the plan concluded: the status (when it changed), the
/// rollout metric and the Events.
async fn record(ctx: &Context, ns: &str, route: &RetrievalRoute, plan: &Plan) -> Result<(), Error> {
    let name = route.name_any();
    if Some(&plan.status) != route.status.as_ref() {
        let api: Api<RetrievalRoute> = Api::namespaced(ctx.client.clone(), ns);
        patch_status(&api, &name, &plan.status).await?;
    }
    ctx.metrics.set_rollout(ns, &name, plan.rollout_began);
    for note in &plan.events {
        publish(ctx, route, note).await;
    }
    Ok(())
}

/// Carries out a route plan's writes: the objects that serve it, then the
/// configurations of earlier profiles it prunes.
async fn write_serving(
    client: &Client,
    ns: &str,
    route: &RetrievalRoute,
    plan: &Plan,
) -> Result<(), Error> {
    if let Some(objects) = &plan.objects {
        apply_serving(client, ns, route, objects).await?;
    }
    if let Some(hash) = &plan.prune_configs {
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let selector = format!(
            "{ROUTE_LABEL}={},{CONFIG_HASH_ANNOTATION},{CONFIG_HASH_ANNOTATION}!={hash}",
            label_value(&route.name_any())
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
        if controlled_by(existing.meta(), route.meta()) {
            delete(&api, &name, &DeleteParams::default()).await?;
        }
        return Ok(());
    };
    apply(client, ns, object).await.map(drop)
}

/// The routes' controller over one namespace (`None`: every one): woken by
/// its Deployment, by a Secret of its namespace that changes (its pods may
/// read it) and by a new active version of its Corpus.
pub(super) fn controller(
    client: &Client,
    namespace: Option<&str>,
) -> Controller<Checked<RetrievalRoute>> {
    let routes = Controller::new(
        scoped::<Checked<RetrievalRoute>>(client, namespace),
        Default::default(),
    );
    let route_store = routes.store();
    let secret_routes = route_store.clone();
    // A rotated Secret rolls the pods of the routes of its namespace that
    // read it (their reconcile compares its resource version). Metadata
    // only: the operator never holds Secret data.
    let secrets = watcher(
        scoped::<PartialObjectMeta<Secret>>(client, namespace),
        Default::default(),
    )
    .touched_objects();
    routes
        .owns(scoped::<Deployment>(client, namespace), managed())
        .watches_stream(secrets, move |secret| {
            woken(&secret_routes, secret.namespace(), |_| true)
        })
        // A new active version reaches every route of the Corpus.
        .watches(
            scoped::<Checked<Corpus>>(client, namespace),
            Default::default(),
            move |corpus| {
                let name = corpus.name_any();
                woken(&route_store, corpus.namespace(), |r| {
                    r.object
                        .as_ref()
                        .is_ok_and(|r| r.spec.corpus_ref.name == name)
                })
            },
        )
}
