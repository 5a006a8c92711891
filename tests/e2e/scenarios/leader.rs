//! The chart's two operator replicas: one leads, the other waits; a
//! leader that hangs mid-ingest is replaced within the lease duration,
//! the new leader finishes the ingest without a second Job, and the old
//! one, woken, finds the lease gone, exits and restarts as a follower.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::chart::lease_holder;
use super::corpus::{claim_corpus, put, ready_corpus, stage};
use crate::support::{self, wait_for};
use crate::{OPERATOR_NAMESPACE, World};

const NS: &str = "e2e-leader";
const CORPUS: &str = "handover";
/// The operator's lease duration (`src/operator/lease.rs`) and its retry
/// period (a fifth of it, at least a second).
const LEASE: Duration = Duration::from_secs(15);
const RETRY: Duration = Duration::from_secs(3);

async fn holder(world: &World) -> Result<String> {
    lease_holder(world)
        .await?
        .context("the Lease has no holder")
}

async fn operator_pods(world: &World) -> Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(world.cluster.admin.clone(), OPERATOR_NAMESPACE);
    Ok(pods
        .list(&ListParams::default().labels("app.kubernetes.io/name=trellis"))
        .await?
        .items)
}

/// The operator's metrics from its pod.
pub async fn metrics(world: &World, pod: &Pod) -> Result<String> {
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .context("operator pod has no IP")?;
    let response = world
        .http
        .get(format!("http://{ip}:8080/metrics"))
        .send()
        .await?;
    Ok(response.text().await?)
}

fn reconciles(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("trellis_operator_reconciles_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// The follower never reconciles; hung mid-ingest (SIGSTOP: alive, not
/// renewing), the leader is replaced within the lease duration, and the
/// Corpus gets exactly one ingest Job, run once, and becomes Ready. Woken
/// up, the old leader stops rather than act beside the new one, and its
/// restart waits as a follower.
pub async fn handover(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let leader = holder(world).await?;
    let pods = operator_pods(world).await?;
    let (leading, following): (Vec<Pod>, Vec<Pod>) =
        pods.into_iter().partition(|p| p.name_any() == leader);
    let leading = leading
        .first()
        .context("the holder is not an operator pod")?;
    let follower = following.first().context("no second operator replica")?;
    stage(world, NS).await?;
    let mut corpus = claim_corpus()?;
    corpus["metadata"]["name"] = json!(CORPUS);
    put(world, NS, &corpus).await?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    let selector = format!("trellis.dev/corpus={CORPUS}");
    wait_for("the ingest Job", Duration::from_secs(60), || async {
        let list = jobs.list(&ListParams::default().labels(&selector)).await?;
        Ok((!list.items.is_empty()).then_some(()))
    })
    .await?;

    // The Job is the leader's work; the follower did nothing.
    let follower_metrics = metrics(world, follower).await?;
    ensure!(
        follower_metrics.contains("trellis_operator_leader 0"),
        "the follower says it leads: {follower_metrics}"
    );
    ensure!(
        reconciles(&follower_metrics) == 0,
        "the follower reconciled {} times",
        reconciles(&follower_metrics)
    );
    ensure!(
        reconciles(&metrics(world, leading).await?) > 0,
        "the leader has not reconciled anything"
    );

    world
        .nodes
        .freeze(&world.cluster.admin, OPERATOR_NAMESPACE, &leader, true)
        .await?;
    let crashed = Instant::now();
    let follower_name = follower.name_any();
    wait_for(
        "the follower to take the lease",
        LEASE + RETRY * 2,
        || async { Ok((holder(world).await? == follower_name).then_some(())) },
    )
    .await?;
    let handover = crashed.elapsed();
    eprintln!(
        "e2e:   lease handed over {:.1} s after the leader hung (lease {} s)",
        handover.as_secs_f64(),
        LEASE.as_secs()
    );
    ensure!(
        handover <= LEASE + RETRY + Duration::from_secs(2),
        "handover took {handover:?}"
    );

    ready_corpus(world, NS, CORPUS, None, Duration::from_secs(240)).await?;
    let list = jobs.list(&ListParams::default().labels(&selector)).await?;
    let ingest: Vec<&Job> = list
        .items
        .iter()
        .filter(|j| j.name_any().contains("-ingest-"))
        .collect();
    ensure!(
        ingest.len() == 1,
        "expected one ingest Job, found {:?}",
        support::names(&list.items)
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let runs = pods
        .list(&ListParams::default().labels(&format!("job-name={}", ingest[0].name_any())))
        .await?
        .items;
    ensure!(
        runs.len() == 1,
        "the ingest ran {} pods: {:?}",
        runs.len(),
        support::names(&runs)
    );

    // Woken, the old leader finds another holder and exits; it restarts
    // as a follower.
    world
        .nodes
        .freeze(&world.cluster.admin, OPERATOR_NAMESPACE, &leader, false)
        .await?;
    wait_for(
        "the old leader to restart as a follower",
        Duration::from_secs(90),
        || async {
            let pods = operator_pods(world).await?;
            let Some(pod) = pods.iter().find(|p| p.name_any() == leader) else {
                return Ok(None);
            };
            let restarted = pod
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .and_then(|c| c.first())
                .is_some_and(|c| c.restart_count >= 1 && c.ready);
            if !restarted {
                return Ok(None);
            }
            let text = metrics(world, pod).await?;
            Ok(text.contains("trellis_operator_leader 0").then_some(()))
        },
    )
    .await?;
    Ok(())
}
