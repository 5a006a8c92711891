//! What only real nodes decide: whether the image can be pulled, where the
//! scheduler can put a pod, and what happens to an ingest when its node's
//! kubelet dies under it.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::corpus::{put, quickstart, ready_corpus, stage};
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
    put(world, NS, &quickstart("Corpus")?.remove(0)).await?;

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
    let mut corpus = quickstart("Corpus")?.remove(0);
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
    put(world, NS, &quickstart("Corpus")?.remove(0)).await?;
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
