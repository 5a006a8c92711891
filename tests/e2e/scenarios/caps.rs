//! Bounded blast radius: the operator's caps on ingests and rollouts
//! hold on a real cluster, an autoscaler keeps the replica count it sets,
//! and `helm rollback` takes the operator back to the settings it had.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use trellis::operator::CONFIG_HASH_ANNOTATION;
use trellis::operator::corpus::{JobState, job_state};
use trellis::operator::route::{rolled_out, template_annotation};

use super::chart::{helm_reuse, helm_rollback};
use super::corpus::{notice_corpus, put, quickstart, ready_corpus, stage_notice};
use crate::support::{self, wait_for};
use crate::{OPERATOR_NAMESPACE, World};

const NS: &str = "e2e-caps";
const CORPORA: [&str; 2] = ["caps-a", "caps-b"];
const ROUTES: [&str; 2] = ["caps-a", "caps-b"];
/// What the scenario lowers both caps to; the chart's default is 2.
const CAP: usize = 1;

/// The most objects a poll saw at once that were under way, and the
/// reasons the scenario's resources gave while it polled.
#[derive(Default)]
struct Seen {
    most: AtomicUsize,
    reasons: std::sync::Mutex<BTreeSet<String>>,
}

/// Polls every 200 ms until `stop`: how many operator-made objects are
/// under way (`count`), and the condition reasons of the scenario's
/// resources of `plural` (`condition`).
fn watch<F, Fut>(
    client: Client,
    plural: &'static str,
    condition: &'static str,
    count: F,
) -> (Arc<Seen>, Arc<AtomicBool>, tokio::task::JoinHandle<()>)
where
    F: Fn(Client) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<usize>> + Send,
{
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let task = {
        let (seen, stop) = (seen.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(n) = count(client.clone()).await {
                    seen.most.fetch_max(n, Ordering::Relaxed);
                }
                if let Ok(list) = support::trellis_api(&client, NS, plural)
                    .list(&ListParams::default())
                    .await
                {
                    for object in list.items {
                        let object = serde_json::to_value(&object).unwrap_or(Value::Null);
                        if let Some((_, reason)) = support::condition(&object, condition) {
                            seen.reasons
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .insert(reason);
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    (seen, stop, task)
}

/// The objects of kind `K` the operator made for `component`, in every
/// namespace.
async fn operator_made<K>(client: Client, component: &str) -> Result<Vec<K>>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let selector = format!(
        "app.kubernetes.io/managed-by=trellis-operator,app.kubernetes.io/component={component}"
    );
    Ok(Api::<K>::all(client)
        .list(&ListParams::default().labels(&selector))
        .await?
        .items)
}

/// Ingest Jobs that have not ended.
async fn running_ingests(client: Client) -> Result<usize> {
    let jobs: Vec<Job> = operator_made(client, "ingest").await?;
    Ok(jobs
        .iter()
        .filter(|j| job_state(j) == JobState::Running)
        .count())
}

/// Routes' Deployments whose pods do not all run their template and are
/// not all available.
async fn rolling_routes(client: Client) -> Result<usize> {
    let deployments: Vec<Deployment> = operator_made(client, "retrieval").await?;
    Ok(deployments.iter().filter(|d| !rolled_out(d)).count())
}

/// The value of `name` in the environment of the operator pods' container.
async fn operator_env(world: &World, name: &str) -> Result<BTreeSet<String>> {
    let pods: Api<Pod> = Api::namespaced(world.cluster.admin.clone(), OPERATOR_NAMESPACE);
    let list = pods
        .list(&ListParams::default().labels("app.kubernetes.io/name=trellis"))
        .await?;
    Ok(list
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .flat_map(|p| p.spec.iter().flat_map(|s| s.containers.iter()))
        .flat_map(|c| c.env.iter().flatten())
        .filter(|e| e.name == name)
        .filter_map(|e| e.value.clone())
        .collect())
}

/// With both caps lowered to 1 (`helm upgrade --reuse-values`): two
/// Corpora applied at once ingest one after the other (one says
/// `IngestQueued`), never two ingest Jobs running anywhere; two routes
/// changed at once roll one after the other (`RolloutQueued`), never two
/// Deployments rolling; a route whose Deployment an autoscaler scaled
/// keeps that count through its roll. `helm rollback` then restores the
/// chart's default caps, and a new leader takes over.
pub async fn caps_hold(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let cap = CAP.to_string();
    let ingests = format!("operator.maxConcurrentIngests={cap}");
    let rollouts = format!("operator.maxConcurrentRollouts={cap}");
    helm_reuse(world, &["--set", &ingests, "--set", &rollouts]).await?;
    let told = operator_env(world, "TRELLIS_MAX_CONCURRENT_INGESTS").await?;
    ensure!(
        told == BTreeSet::from([cap.clone()]),
        "the operator pods say {told:?}"
    );

    support::namespace(world, NS).await?;
    stage_notice(world, NS).await?;
    let (seen, stop, task) = watch(client.clone(), "corpora", "Ingesting", running_ingests);
    for name in CORPORA {
        put(world, NS, &notice_corpus(name)?).await?;
    }
    for name in CORPORA {
        ready_corpus(world, NS, name, None, Duration::from_secs(300)).await?;
    }
    stop.store(true, Ordering::Relaxed);
    task.await?;
    let most = seen.most.load(Ordering::Relaxed);
    let reasons = seen.reasons.lock().map(|r| r.clone()).unwrap_or_default();
    eprintln!("e2e:   at most {most} ingest Jobs ran at once; Ingesting reasons {reasons:?}");
    ensure!(most <= CAP, "{most} ingests ran at once, the cap is {CAP}");
    ensure!(
        reasons.contains("IngestQueued"),
        "no Corpus waited: {reasons:?}"
    );

    // Two routes, one replica each, on the first Corpus.
    for name in ROUTES {
        let mut route = quickstart("RetrievalRoute")?
            .pop()
            .context("the quickstart has no route")?;
        route["metadata"]["name"] = json!(name);
        route["spec"]["corpusRef"]["name"] = json!(CORPORA[0]);
        route["spec"]["serving"]["replicas"] = json!(1);
        put(world, NS, &route).await?;
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let workload = |route: &str| format!("{route}-retrieval");
    wait_for("both routes to serve", Duration::from_secs(300), || async {
        let mut ready = 0;
        for name in ROUTES {
            let route = support::trellis_object(client, NS, "retrievalroutes", name).await?;
            if support::condition(&route, "Ready").is_some_and(|(s, _)| s == "True") {
                ready += 1;
            }
        }
        Ok((ready == ROUTES.len()).then_some(()))
    })
    .await?;

    // An autoscaler on the first route's Deployment, which scales it to
    // two as its controller would, through the scale subresource.
    let scaled = workload(ROUTES[0]);
    put(
        world,
        NS,
        &json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": scaled},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": scaled},
                "minReplicas": 1, "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {
                    "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
            },
        }),
    )
    .await?;
    deployments
        .patch_scale(
            &scaled,
            &PatchParams {
                field_manager: Some("e2e-autoscaler".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await?;
    wait_for(
        "the scaled route's two pods",
        Duration::from_secs(180),
        || async {
            let d = deployments.get(&scaled).await?;
            let replicas = d.spec.as_ref().and_then(|s| s.replicas);
            if replicas == Some(2) && rolled_out(&d) {
                return Ok(Some(()));
            }
            // Said, so that a timeout tells a count taken back from a
            // pod that does not come up.
            let ready = d.status.as_ref().and_then(|s| s.ready_replicas);
            let managers: Vec<_> = d
                .metadata
                .managed_fields
                .iter()
                .flatten()
                .filter(|m| {
                    m.fields_v1
                        .as_ref()
                        .is_some_and(|f| f.0.pointer("/f:spec/f:replicas").is_some())
                })
                .filter_map(|m| m.manager.clone())
                .collect();
            bail!("replicas {replicas:?} ({managers:?}), ready {ready:?}")
        },
    )
    .await?;

    // Both routes change at once: each wants to roll.
    let before: Vec<Option<String>> = {
        let mut hashes = Vec::new();
        for name in ROUTES {
            hashes.push(config_hash(&deployments.get(&workload(name)).await?));
        }
        hashes
    };
    let (seen, stop, task) = watch(
        client.clone(),
        "retrievalroutes",
        "Progressing",
        rolling_routes,
    );
    for name in ROUTES {
        support::merge_trellis(
            client,
            NS,
            "retrievalroutes",
            name,
            json!({"spec": {"selection": {"topK": 4}}}),
        )
        .await?;
    }
    wait_for("both routes to roll", Duration::from_secs(300), || async {
        let mut rolled = 0;
        for (name, old) in ROUTES.iter().zip(&before) {
            let d = deployments.get(&workload(name)).await?;
            let route = support::trellis_object(client, NS, "retrievalroutes", name).await?;
            let ready = support::condition(&route, "Ready").is_some_and(|(s, _)| s == "True");
            if config_hash(&d) != *old && rolled_out(&d) && ready {
                rolled += 1;
            }
        }
        Ok((rolled == ROUTES.len()).then_some(()))
    })
    .await?;
    stop.store(true, Ordering::Relaxed);
    task.await?;
    let most = seen.most.load(Ordering::Relaxed);
    let reasons = seen.reasons.lock().map(|r| r.clone()).unwrap_or_default();
    eprintln!("e2e:   at most {most} routes rolled at once; Progressing reasons {reasons:?}");
    ensure!(
        most <= CAP,
        "{most} routes rolled at once, the cap is {CAP}"
    );
    ensure!(
        reasons.contains("RolloutQueued"),
        "no route waited: {reasons:?}"
    );
    let replicas = deployments
        .get(&scaled)
        .await?
        .spec
        .and_then(|s| s.replicas);
    ensure!(
        replicas == Some(2),
        "the autoscaled Deployment has {replicas:?} replicas after its roll, not the 2 it was scaled to"
    );

    // Back to the revision before the caps were lowered.
    helm_rollback(world).await?;
    let told = operator_env(world, "TRELLIS_MAX_CONCURRENT_INGESTS").await?;
    ensure!(
        told == BTreeSet::from(["2".to_string()]),
        "after the rollback the operator pods say {told:?}"
    );
    for name in CORPORA {
        let corpus = support::trellis_object(client, NS, "corpora", name).await?;
        ensure!(
            corpus["status"]["phase"] == "Ready",
            "{name} is {} after the rollback",
            corpus["status"]["phase"]
        );
    }
    Ok(())
}

/// The configuration hash in a Deployment's pod template.
fn config_hash(d: &Deployment) -> Option<String> {
    template_annotation(d, CONFIG_HASH_ANNOTATION).map(String::from)
}
