//! What only real nodes decide: whether the image can be pulled, where the
//! scheduler can put a pod, what happens to an ingest when its node's
//! kubelet dies under it, and to a rollout when its node is drained.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::api::{DeleteParams, EvictParams, ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::corpus::{
    change_profile, claim_corpus, put, quickstart, ready_corpus, rolled_to, stage,
};
use crate::nodes::{DEDICATED_NODE, GENERAL_NODE, POOL_LABEL, TAINT_KEY, TAINT_VALUE};
use crate::support::{self, wait_for};
use crate::{PULL_SECRET, World};

const CORPUS: &str = "quickstart";

/// The Corpus' `Ingesting` condition has `reason`; the Corpus.
async fn ingesting_reason(world: &World, ns: &str, reason: &str) -> Result<Value> {
    let client = &world.cluster.admin;
    wait_for(
        &format!("Ingesting to say {reason}"),
        Duration::from_secs(180),
        || async {
            let corpus = support::trellis_object(client, ns, "corpora", CORPUS).await?;
            let found = support::condition(&corpus, "Ingesting").is_some_and(|(_, r)| r == reason);
            Ok(found.then_some(corpus))
        },
    )
    .await
}

/// A namespace without the registry's pull Secret: the ingest pod cannot
/// pull the image, which the Corpus says (`ImagePullFailed`, `Stalled`,
/// a Warning Event, the kubelet's message naming the image); the Secret
/// made, the kubelet's next try pulls it and the Corpus turns Ready.
pub async fn unpullable_image(world: &World) -> Result<()> {
    const NS: &str = "e2e-pull";
    let client = &world.cluster.admin;
    stage(world, NS).await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    secrets
        .delete(PULL_SECRET, &DeleteParams::default())
        .await?;
    put(world, NS, &claim_corpus()?).await?;

    let refused = ingesting_reason(world, NS, "ImagePullFailed").await?;
    let message = support::condition_message(&refused, "Ingesting");
    ensure!(
        message.contains(&world.images.repository),
        "Ingesting does not name the image: {message}"
    );
    ensure!(
        support::condition(&refused, "Stalled").is_some_and(|(s, _)| s == "True"),
        "not Stalled: {}",
        refused["status"]["conditions"]
    );
    support::expect_event(client, NS, CORPUS, "ImagePullFailed").await?;

    support::pull_secret(world, NS, PULL_SECRET).await?;
    let ready = ready_corpus(world, NS, CORPUS, None, Duration::from_secs(300)).await?;
    ensure!(
        support::condition(&ready, "Stalled").is_none_or(|(s, _)| s == "False"),
        "still Stalled: {}",
        ready["status"]["conditions"]
    );
    Ok(())
}

/// A pod only the tainted node's label selects, without the toleration:
/// the scheduler finds no node (`PodUnschedulable` on the Corpus, with the
/// scheduler's reasons); the taint lifted, the scheduler places it there
/// and the ingest finishes on that node.
pub async fn unschedulable_until_untainted(world: &World) -> Result<()> {
    const NS: &str = "e2e-placement";
    let client = &world.cluster.admin;
    stage(world, NS).await?;
    let mut corpus = claim_corpus()?;
    corpus["spec"]["ingest"]["template"] = json!({"nodeSelector": {POOL_LABEL: TAINT_VALUE}});
    put(world, NS, &corpus).await?;

    let pending = ingesting_reason(world, NS, "PodUnschedulable").await?;
    let message = support::condition_message(&pending, "Ingesting");
    ensure!(
        message.contains("taint") && message.contains("node affinity/selector"),
        "Ingesting does not give the scheduler's reasons: {message}"
    );

    let nodes: Api<Node> = Api::all(client.clone());
    let taints = |with: bool| {
        let list: Vec<Value> = if with {
            vec![json!({"key": TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"})]
        } else {
            Vec::new()
        };
        json!({"spec": {"taints": list}})
    };
    nodes
        .patch(
            DEDICATED_NODE,
            &PatchParams::default(),
            &Patch::Merge(&taints(false)),
        )
        .await?;
    let result = ready_corpus(world, NS, CORPUS, None, Duration::from_secs(240)).await;
    // The taint goes back whatever happened, for the scenarios after.
    nodes
        .patch(
            DEDICATED_NODE,
            &PatchParams::default(),
            &Patch::Merge(&taints(true)),
        )
        .await?;
    result?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let placed: Vec<Option<String>> = pods
        .list(&ListParams::default().labels(&format!("trellis.dev/corpus={CORPUS}")))
        .await?
        .items
        .iter()
        .map(|p| p.spec.as_ref().and_then(|s| s.node_name.clone()))
        .collect();
    ensure!(
        !placed.is_empty() && placed.iter().all(|n| n.as_deref() == Some(DEDICATED_NODE)),
        "the ingest pods ran on {placed:?}, not {DEDICATED_NODE}"
    );
    Ok(())
}

/// The kubelet of the node running an ingest pod is killed and comes back
/// 10 s later: the container runs on under containerd, the kubelet takes
/// it up again, the Corpus turns Ready, and the Job ran one pod.
pub async fn kubelet_restart_mid_ingest(world: &World) -> Result<()> {
    const NS: &str = "e2e-kubelet";
    let client = &world.cluster.admin;
    stage(world, NS).await?;
    put(world, NS, &claim_corpus()?).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let selector = format!("trellis.dev/corpus={CORPUS}");
    let (pod, node) = wait_for("an ingest pod to run", Duration::from_secs(120), || async {
        let list = pods.list(&ListParams::default().labels(&selector)).await?;
        Ok(list.items.iter().find_map(|p| {
            let running = p.status.as_ref()?.phase.as_deref() == Some("Running");
            let node = p.spec.as_ref()?.node_name.clone()?;
            running.then(|| (p.name_any(), node))
        }))
    })
    .await?;
    ensure!(
        node == GENERAL_NODE,
        "the untolerating ingest pod {pod} ran on {node}"
    );
    world
        .nodes
        .restart_kubelet(&node, Duration::from_secs(10))
        .await?;
    ready_corpus(world, NS, CORPUS, None, Duration::from_secs(300)).await?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    let list = jobs.list(&ListParams::default().labels(&selector)).await?;
    for job in &list.items {
        let status = job.status.as_ref().context("a Job without status")?;
        ensure!(
            status.failed.unwrap_or(0) == 0,
            "Job {} lost a pod to the restart: {status:?}",
            job.name_any()
        );
    }
    let after = pods.list(&ListParams::default().labels(&selector)).await?;
    let ingest_pods = after
        .items
        .iter()
        .filter(|p| p.name_any().contains("-ingest-"))
        .count();
    ensure!(
        ingest_pods == 1,
        "{ingest_pods} ingest pods ran for one shard"
    );
    Ok(())
}

/// A node drained mid-rollout: a route whose pods may use both nodes
/// serves from the general node, a profile change rolls it, and mid-roll
/// the general node is cordoned and the route's pods there are evicted
/// through the Eviction API, as `kubectl drain` does (honouring the
/// route's PodDisruptionBudget: a refused eviction is tried again). The
/// rollout finishes on the dedicated node, and clients sending
/// retrievals all along see no failed request. Only this namespace's pods
/// are evicted: the operator's own replicas do not tolerate the other
/// node's taint, so a whole-node drain would wait on their budget for
/// ever, as it would on a real two-node cluster.
pub async fn drain_mid_rollout(world: &World) -> Result<()> {
    const NS: &str = "e2e-drain";
    let client = &world.cluster.admin;
    stage(world, NS).await?;
    let tolerate = json!({"tolerations": [{
        "key": TAINT_KEY, "operator": "Equal", "value": TAINT_VALUE, "effect": "NoSchedule"
    }]});
    let mut corpus = claim_corpus()?;
    corpus["spec"]["ingest"]["template"] = tolerate.clone();
    put(world, NS, &corpus).await?;
    let ready = ready_corpus(world, NS, CORPUS, None, Duration::from_secs(240)).await?;
    let old = ready["status"]["activeIndex"]["version"]
        .as_str()
        .context("no active version")?
        .to_string();
    let mut route = quickstart("RetrievalRoute")?.remove(0);
    route["spec"]["serving"]["replicas"] = json!(2);
    route["spec"]["serving"]["template"] = tolerate;
    let route_name = route["metadata"]["name"]
        .as_str()
        .context("the quickstart's route has no name")?
        .to_string();
    put(world, NS, &route).await?;
    let service = trellis::operator::deployment::workload_name(&route_name);
    wait_for("the route to serve", Duration::from_secs(240), || async {
        let ready = support::ready_endpoints(client, NS, &service).await?;
        Ok((ready.len() == 2).then_some(()))
    })
    .await?;

    let traffic = super::corpus::Traffic::start(world, NS, &service, 2);
    let new = change_profile(world, NS, &old).await?;

    let nodes: Api<Node> = Api::all(client.clone());
    let cordon = |on: bool| json!({"spec": {"unschedulable": on}});
    nodes
        .patch(
            GENERAL_NODE,
            &PatchParams::default(),
            &Patch::Merge(&cordon(true)),
        )
        .await?;
    let drained = drain(world, NS).await;
    let rolled = match &drained {
        Ok(_) => {
            wait_for("the route to roll", Duration::from_secs(300), || async {
                let route =
                    support::trellis_object(client, NS, "retrievalroutes", &route_name).await?;
                Ok(rolled_to(&route, &new).then_some(()))
            })
            .await
        }
        Err(_) => Ok(()),
    };
    // Uncordoned whatever happened, for the scenarios after.
    nodes
        .patch(
            GENERAL_NODE,
            &PatchParams::default(),
            &Patch::Merge(&cordon(false)),
        )
        .await?;
    let evicted = drained?;
    rolled?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let tally = traffic.finish().await;
    eprintln!("e2e:   {evicted} pods evicted");
    tally.none_failed("the drain and roll")?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let serving: Vec<(String, Option<String>)> = pods
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|p| p.name_any().starts_with(&service))
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| {
            (
                p.name_any(),
                p.spec.as_ref().and_then(|s| s.node_name.clone()),
            )
        })
        .collect();
    ensure!(
        !serving.is_empty()
            && serving
                .iter()
                .all(|(_, node)| node.as_deref() == Some(DEDICATED_NODE)),
        "after the drain the route's pods are on {serving:?}"
    );
    Ok(())
}

/// Evicts every running pod of `ns` on the general node, trying again
/// while a disruption budget refuses; how many were evicted.
async fn drain(world: &World, ns: &str) -> Result<usize> {
    let pods: Api<Pod> = Api::namespaced(world.cluster.admin.clone(), ns);
    let mut evicted = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    loop {
        let on_node: Vec<String> = pods
            .list(&ListParams::default().fields(&format!("spec.nodeName={GENERAL_NODE}")))
            .await?
            .items
            .iter()
            .filter(|p| {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                p.metadata.deletion_timestamp.is_none()
                    && !matches!(phase, Some("Succeeded" | "Failed"))
            })
            .map(|p| p.name_any())
            .collect();
        if on_node.is_empty() {
            return Ok(evicted);
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "the drain did not finish in 180 s; left: {on_node:?}"
        );
        for name in on_node {
            match pods.evict(&name, &EvictParams::default()).await {
                Ok(_) => evicted += 1,
                // The disruption budget says not yet; and a pod that went
                // meanwhile needs nothing.
                Err(kube::Error::Api(s)) if s.code == 429 || s.code == 404 => {}
                Err(e) => return Err(e).with_context(|| format!("evicting {ns}/{name}")),
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
