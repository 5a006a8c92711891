//! A Corpus' life after its first version: a failed ingest and its
//! recovery, the pause and re-ingest annotations, retention around the
//! versions routes serve, and deletion.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Pod, ResourceQuota, Service, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::corpus::{DOCUMENTS_CLAIM, QUERY, claim_corpus, put, quickstart, ready_corpus, stage};
use crate::World;
use crate::support::{self, wait_for};

const NS: &str = "e2e-lifecycle";
const CORPUS: &str = "lifecycle";
const ROUTE: &str = "pinned";

fn corpus_object(path: &str) -> Result<Value> {
    let mut corpus = claim_corpus()?;
    corpus["metadata"]["name"] = json!(CORPUS);
    corpus["spec"]["sources"] = json!([{"pvc": {"claimName": DOCUMENTS_CLAIM, "path": path}}]);
    corpus["spec"]["storage"]["retainVersions"] = json!(1);
    // One attempt: the failure is the point.
    corpus["spec"]["ingest"] = json!({"backoffLimit": 0});
    Ok(corpus)
}

async fn merge_corpus(world: &World, patch: Value) -> Result<()> {
    support::merge_trellis(&world.cluster.admin, NS, "corpora", CORPUS, patch).await
}

async fn ingest_jobs(client: &Client) -> Result<Vec<String>> {
    ingest_jobs_in(client, NS).await
}

async fn ingest_jobs_in(client: &Client, ns: &str) -> Result<Vec<String>> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let list = jobs
        .list(&ListParams::default().labels(&format!("trellis.dev/corpus={CORPUS}")))
        .await?;
    Ok(support::names(&list.items))
}

/// A source that cannot be listed fails the ingest Job; the Corpus says
/// `Ready=False`, `IngestFailed`, with the pod's own error and a Warning
/// Event, and does not retry; fixing the source ingests again and the
/// Corpus becomes Ready.
pub async fn failure_and_recovery(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    stage(world, NS).await?;
    put(world, NS, &corpus_object("no-such-directory")?).await?;
    let failed = wait_for("the ingest to fail", Duration::from_secs(240), || async {
        let corpus = support::trellis_object(client, NS, "corpora", CORPUS).await?;
        Ok((corpus["status"]["phase"] == "Failed").then_some(corpus))
    })
    .await?;
    let (status, reason) = support::condition(&failed, "Ready").context("no Ready condition")?;
    ensure!(
        status == "False" && reason == "IngestFailed",
        "Ready is {status} {reason}"
    );
    let message = failed["status"]["pendingIndex"]["error"]
        .as_str()
        .unwrap_or_default();
    ensure!(
        message.contains("no-such-directory"),
        "the failure does not name the missing directory: {message}"
    );
    support::expect_event(client, NS, CORPUS, "IngestFailed").await?;
    // Not retried while the inputs stay the same.
    let jobs = ingest_jobs(client).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    ensure!(
        ingest_jobs(client).await? == jobs,
        "a failed ingest was retried with unchanged inputs"
    );

    put(world, NS, &corpus_object("")?).await?;
    ready_corpus(world, NS, CORPUS, None, Duration::from_secs(240)).await?;
    Ok(())
}

/// A re-ingest that fails while a version serves leaves the Corpus
/// `Ready` on that version, `Stalled` with the reason (kstatus), and its
/// `activeIndex` untouched; fixed, the stall clears.
pub async fn failed_reingest_keeps_serving(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let version = support::active_version(client, NS, CORPUS).await?;
    put(world, NS, &corpus_object("no-such-directory")?).await?;
    let failed = wait_for(
        "the re-ingest to fail",
        Duration::from_secs(240),
        || async {
            let corpus = support::trellis_object(client, NS, "corpora", CORPUS).await?;
            let error = corpus["status"]["pendingIndex"]["error"].is_string();
            Ok((error && corpus["status"]["phase"] == "Degraded").then_some(corpus))
        },
    )
    .await?;
    let ready = support::condition(&failed, "Ready");
    ensure!(
        ready
            .as_ref()
            .is_some_and(|(s, r)| s == "True" && r == "IndexActive"),
        "Ready is {ready:?} while version {version} serves"
    );
    let stalled = support::condition(&failed, "Stalled");
    ensure!(
        stalled
            .as_ref()
            .is_some_and(|(s, r)| s == "True" && r == "IngestFailed"),
        "Stalled is {stalled:?}"
    );
    ensure!(
        failed["status"]["activeIndex"]["version"] == version.as_str(),
        "the active version changed: {}",
        failed["status"]["activeIndex"]
    );

    put(world, NS, &corpus_object("")?).await?;
    wait_for("the stall to clear", Duration::from_secs(240), || async {
        let corpus = support::trellis_object(client, NS, "corpora", CORPUS).await?;
        let ready = support::condition(&corpus, "Ready").is_some_and(|(s, _)| s == "True");
        let stalled = support::condition(&corpus, "Stalled").is_some();
        Ok((ready && !stalled && corpus["status"]["phase"] == "Ready").then_some(()))
    })
    .await?;
    Ok(())
}

/// Why an ingest's pods cannot run reaches the Corpus: a quota that
/// refuses its pod (`PodCreateFailed`), a Secret volume the node cannot
/// mount (`VolumeMountFailed`, from the kubelet's Event), then a pod
/// killed for its memory
/// (`OOMKilled`, not the Job's `BackoffLimitExceeded`), with `Stalled`
/// and Warning Events. More memory in `spec.ingest` alone (the inputs
/// are unchanged) tries the ingest again, `IngestRetried`, as a new Job;
/// the failed one goes.
pub async fn pod_troubles_surface_and_ingest_edits_retry(world: &World) -> Result<()> {
    const NS: &str = "e2e-troubles";
    let client = &world.cluster.admin;
    stage(world, NS).await?;
    let quota = json!({
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "no-pods"},
        "spec": {"hard": {"pods": "0"}},
    });
    put(world, NS, &quota).await?;
    let mut corpus = corpus_object("")?;
    // Enough to start, far too little to load the model.
    let small =
        json!({"requests": {"cpu": "100m", "memory": "16Mi"}, "limits": {"memory": "16Mi"}});
    corpus["spec"]["ingest"]["resources"] = small;
    // A volume from a Secret that comes later.
    corpus["spec"]["ingest"]["template"] = json!({
        "volumes": [{"name": "late", "secret": {"secretName": "late-secret"}}],
        "volumeMounts": [{"name": "late", "mountPath": "/etc/late", "readOnly": true}]
    });
    put(world, NS, &corpus).await?;

    let condition_is = |want: &'static str, phase: &'static str| {
        move || async move {
            let corpus = support::trellis_object(client, NS, "corpora", CORPUS).await?;
            let ingesting = support::condition(&corpus, "Ingesting");
            Ok((ingesting.is_some_and(|(_, reason)| reason == want)
                && corpus["status"]["phase"] == phase)
                .then_some(corpus))
        }
    };
    let refused = wait_for(
        "Ingesting to say the quota refuses the pod",
        Duration::from_secs(120),
        condition_is("PodCreateFailed", "Ingesting"),
    )
    .await?;
    let message = support::condition_message(&refused, "Ingesting");
    ensure!(message.contains("quota"), "Ingesting says: {message}");
    ensure!(
        support::condition(&refused, "Stalled").is_some_and(|(s, _)| s == "True"),
        "not Stalled: {}",
        refused["status"]["conditions"]
    );
    support::expect_event(client, NS, CORPUS, "PodCreateFailed").await?;

    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), NS);
    quotas.delete("no-pods", &DeleteParams::default()).await?;
    // The first mount may also fail for a moment on the data claim (the
    // node's authorisation learns of the pod just after it is bound), as
    // with a real kubelet: wait for the Secret's own failure.
    wait_for(
        "Ingesting to say the pod's Secret volume is missing",
        Duration::from_secs(180),
        || async {
            let corpus = support::trellis_object(client, NS, "corpora", CORPUS).await?;
            let unmounted = support::condition(&corpus, "Ingesting")
                .is_some_and(|(_, reason)| reason == "VolumeMountFailed");
            let message = support::condition_message(&corpus, "Ingesting");
            Ok((unmounted && message.contains("late-secret")).then_some(()))
        },
    )
    .await?;
    support::expect_event(client, NS, CORPUS, "VolumeMountFailed").await?;
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "late-secret"},
        "stringData": {"ca.crt": "-"},
    });
    put(world, NS, &secret).await?;
    let killed = wait_for(
        "the ingest to fail for its memory",
        Duration::from_secs(240),
        condition_is("OOMKilled", "Failed"),
    )
    .await?;
    let message = support::condition_message(&killed, "Ingesting");
    ensure!(
        message.contains("16Mi") && message.contains("BackoffLimitExceeded"),
        "Ingesting says: {message}"
    );
    ensure!(
        killed["status"]["pendingIndex"]["error"].is_string(),
        "no pendingIndex.error: {}",
        killed["status"]
    );
    support::expect_event(client, NS, CORPUS, "OOMKilled").await?;
    let failed_jobs = ingest_jobs_in(client, NS).await?;

    // The same inputs; more memory.
    support::merge_trellis(
        client,
        NS,
        "corpora",
        CORPUS,
        json!({"spec": {"ingest": {"resources": {
            "requests": {"memory": "256Mi"}, "limits": {"memory": "4Gi"}}}}}),
    )
    .await?;
    support::expect_event(client, NS, CORPUS, "IngestRetried").await?;
    let ready = ready_corpus(world, NS, CORPUS, None, Duration::from_secs(240)).await?;
    ensure!(
        support::condition(&ready, "Stalled").is_none(),
        "still Stalled: {}",
        ready["status"]["conditions"]
    );
    let jobs = ingest_jobs_in(client, NS).await?;
    ensure!(
        failed_jobs.iter().all(|j| !jobs.contains(j)),
        "the failed attempt's Job {failed_jobs:?} remains among {jobs:?}"
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces.delete(NS, &DeleteParams::default()).await?;
    Ok(())
}

/// `trellis.dev/paused` stops reconciliation (condition `Paused`, no new
/// Job for a re-ingest asked meanwhile, observedGeneration kept); once
/// unpaused, the `trellis.dev/reingest` value asked while paused starts a
/// new ingest.
pub async fn pause_and_reingest(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let version = support::active_version(client, NS, CORPUS).await?;
    merge_corpus(
        world,
        json!({"metadata": {"annotations": {"trellis.dev/paused": "true"}}}),
    )
    .await?;
    wait_for("condition Paused", Duration::from_secs(30), || async {
        let corpus = support::trellis_object(client, NS, "corpora", CORPUS).await?;
        Ok(support::condition(&corpus, "Paused")
            .filter(|(s, _)| s == "True")
            .map(|_| ()))
    })
    .await?;
    let jobs = ingest_jobs(client).await?;
    merge_corpus(
        world,
        json!({"metadata": {"annotations": {"trellis.dev/reingest": "1"}}}),
    )
    .await?;
    // A spec change too: observedGeneration must not follow it.
    merge_corpus(world, json!({"spec": {"storage": {"retainVersions": 2}}})).await?;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let paused = support::trellis_object(client, NS, "corpora", CORPUS).await?;
    ensure!(
        ingest_jobs(client).await? == jobs,
        "a paused Corpus started a Job"
    );
    ensure!(
        paused["status"]["observedGeneration"] != paused["metadata"]["generation"],
        "observedGeneration followed a change made while paused"
    );

    merge_corpus(
        world,
        json!({"metadata": {"annotations": {"trellis.dev/paused": null}}}),
    )
    .await?;
    let jobs_after = wait_for("a new ingest Job", Duration::from_secs(60), || async {
        let now = ingest_jobs(client).await?;
        Ok((now.iter().any(|j| !jobs.contains(j))).then_some(now))
    })
    .await?;
    let corpus = wait_for(
        "the re-ingest to finish",
        Duration::from_secs(240),
        || async {
            let corpus = support::trellis_object(client, NS, "corpora", CORPUS).await?;
            let done = corpus["status"]["phase"] == "Ready"
                && corpus["status"]["observedGeneration"] == corpus["metadata"]["generation"]
                && corpus["status"]["pendingIndex"].is_null();
            Ok(done.then_some(corpus))
        },
    )
    .await?;
    ensure!(
        support::condition(&corpus, "Paused").is_none(),
        "condition Paused remains"
    );
    // The same documents and profile: the same version, rebuilt by nobody.
    ensure!(
        corpus["status"]["activeIndex"]["version"] == version.as_str(),
        "a re-ingest of unchanged content moved the version"
    );
    ensure!(jobs_after.iter().any(|j| !jobs.contains(j)), "no new Job");
    Ok(())
}

/// With `retainVersions: 1`, a route paused on the first version keeps
/// it on the data volume through three newer versions, and its pod still
/// answers from it. Of the others, each ingest keeps the version it
/// replaces (routes may be rolling to it) and removes older ones: after
/// the fourth version the second is gone.
pub async fn retention(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    merge_corpus(world, json!({"spec": {"storage": {"retainVersions": 1}}})).await?;
    let corpus = ready_corpus(world, NS, CORPUS, None, Duration::from_secs(120)).await?;
    let first = corpus["status"]["activeIndex"]["version"]
        .as_str()
        .context("no active version")?
        .to_string();
    let mut route = quickstart("RetrievalRoute")?.remove(0);
    route["metadata"]["name"] = json!(ROUTE);
    route["spec"]["corpusRef"]["name"] = json!(CORPUS);
    route["spec"]["serving"] = json!({"replicas": 1});
    put(world, NS, &route).await?;
    wait_for("the route to serve", Duration::from_secs(180), || async {
        let route = support::trellis_object(client, NS, "retrievalroutes", ROUTE).await?;
        Ok((route["status"]["servedVersion"] == first.as_str()).then_some(()))
    })
    .await?;
    route["metadata"]["annotations"] = json!({"trellis.dev/paused": "true"});
    put(world, NS, &route).await?;

    let data = support::claim_dir(client, NS, "trellis-data").await?;
    let versions = || -> Result<Vec<String>> {
        let mut names: Vec<String> = std::fs::read_dir(data.join("indexes").join(CORPUS))?
            .flatten()
            .filter(|e| e.path().join("manifest.json").exists())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    };
    let mut published = vec![first.clone()];
    for threshold in [0.85, 0.8, 0.75] {
        let mut profile = quickstart("IndexProfile")?.remove(0);
        profile["spec"]["semanticLinks"]["threshold"] = json!(threshold);
        put(world, NS, &profile).await?;
        let last = published.last().cloned();
        let corpus =
            ready_corpus(world, NS, CORPUS, last.as_deref(), Duration::from_secs(240)).await?;
        published.push(
            corpus["status"]["activeIndex"]["version"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
    }
    let mut expected = vec![first.clone(), published[2].clone(), published[3].clone()];
    expected.sort();
    let on_disk = versions()?;
    ensure!(
        on_disk == expected,
        "versions on the data volume: {on_disk:?}; expected the served {first}, the replaced {} \
         and the active {} (not {})",
        published[2],
        published[3],
        published[1]
    );
    let endpoints = support::ready_endpoints(client, NS, &format!("{ROUTE}-retrieval")).await?;
    let address = endpoints
        .first()
        .context("the paused route has no ready pod")?;
    let answer = support::retrieve(&world.http, address, QUERY).await?;
    ensure!(
        answer["index_version"] == first.as_str(),
        "the paused route answered from {}",
        answer["index_version"]
    );
    Ok(())
}

async fn gone<K>(client: &Client, selector: &str) -> Result<Option<()>>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), NS);
    let left = api
        .list(&ListParams::default().labels(selector))
        .await?
        .items;
    if left.is_empty() {
        Ok(Some(()))
    } else {
        anyhow::bail!("{} {} left", left.len(), K::kind(&()))
    }
}

/// Deleting a route removes its Deployment, ReplicaSets, pods, Service and
/// ConfigMaps; deleting the Corpus removes its Jobs, ConfigMaps,
/// ServiceAccount, Role and RoleBinding (the garbage collector, through
/// owner references); deleting the namespace then completes.
pub async fn deletion(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let resource = |plural: &str, kind: &str| kube::api::ApiResource {
        group: "trellis.dev".into(),
        version: "v1alpha1".into(),
        api_version: "trellis.dev/v1alpha1".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    let routes: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        NS,
        &resource("retrievalroutes", "RetrievalRoute"),
    );
    routes.delete(ROUTE, &DeleteParams::default()).await?;
    let by_route = format!("trellis.dev/route={ROUTE}");
    wait_for(
        "the route's objects to go",
        Duration::from_secs(120),
        || async {
            gone::<Deployment>(client, &by_route).await?;
            gone::<ReplicaSet>(client, &by_route).await?;
            gone::<Pod>(client, &by_route).await?;
            gone::<Service>(client, &by_route).await?;
            gone::<ConfigMap>(client, &by_route).await
        },
    )
    .await?;

    let corpora: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), NS, &resource("corpora", "Corpus"));
    corpora.delete(CORPUS, &DeleteParams::default()).await?;
    let by_corpus = format!("trellis.dev/corpus={CORPUS}");
    wait_for(
        "the Corpus' objects to go",
        Duration::from_secs(120),
        || async {
            gone::<Job>(client, &by_corpus).await?;
            gone::<Pod>(client, &by_corpus).await?;
            gone::<ConfigMap>(client, &by_corpus).await?;
            gone::<ServiceAccount>(client, &by_corpus).await?;
            gone::<Role>(client, &by_corpus).await?;
            gone::<RoleBinding>(client, &by_corpus).await
        },
    )
    .await?;

    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces.delete(NS, &DeleteParams::default()).await?;
    wait_for(
        "the namespace to be deleted",
        Duration::from_secs(180),
        || async {
            match namespaces.get_opt(NS).await? {
                None => Ok(Some(())),
                Some(ns) => anyhow::bail!(
                    "still there: {}",
                    serde_json::to_string(&ns.status).unwrap_or_default()
                ),
            }
        },
    )
    .await?;
    Ok(())
}
