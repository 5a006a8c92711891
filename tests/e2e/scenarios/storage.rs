//! Storage modes: a Corpus whose data claim is ReadWriteOnce runs every
//! pod of the claim on one node (the node the claim is attached to),
//! says so in `status.storage`, ingests and serves; one on a
//! ReadWriteOncePod claim, which cannot both ingest and serve, is
//! refused with the reason instead of pods that wait forever.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Pod, PodTemplateSpec};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::corpus::{QUERY, claim_corpus, put, quickstart, ready_corpus, stage};
use crate::World;
use crate::nodes::{TAINT_KEY, TAINT_VALUE};
use crate::support::{self, wait_for};

const NS: &str = "e2e-storage";

fn claim(name: &str, mode: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": [mode], "resources": {"requests": {"storage": "1Gi"}}},
    })
}

/// Lets pods onto the dedicated node too, so that the scheduler has two
/// nodes to choose from and only the claim's affinity keeps them together.
fn tolerate_both_nodes() -> Value {
    json!({"tolerations": [{
        "key": TAINT_KEY, "operator": "Equal", "value": TAINT_VALUE, "effect": "NoSchedule"
    }]})
}

fn corpus_on(name: &str, claim: &str) -> Result<Value> {
    let mut corpus = claim_corpus()?;
    corpus["metadata"]["name"] = json!(name);
    corpus["spec"]["storage"]["claimName"] = json!(claim);
    corpus["spec"]["ingest"]["template"] = tolerate_both_nodes();
    Ok(corpus)
}

/// The required pod-affinity terms of a pod template, as JSON.
fn affinity_terms(template: &PodTemplateSpec) -> Vec<Value> {
    let terms = template
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.pod_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .clone()
        })
        .unwrap_or_default();
    terms
        .iter()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect()
}

fn on_one_node(template: &PodTemplateSpec, claim: &str) -> bool {
    affinity_terms(template).iter().any(|t| {
        t["topologyKey"] == "kubernetes.io/hostname"
            && t["labelSelector"]["matchLabels"]["trellis.dev/data-claim"] == claim
    })
}

pub async fn single_node_claims(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    stage(world, NS).await?;
    put(world, NS, &claim("data-rwo", "ReadWriteOnce")).await?;
    put(world, NS, &claim("data-rwop", "ReadWriteOncePod")).await?;

    put(world, NS, &corpus_on("one-node", "data-rwo")?).await?;
    let corpus = ready_corpus(world, NS, "one-node", None, Duration::from_secs(240)).await?;
    let storage = &corpus["status"]["storage"];
    ensure!(
        storage["placement"] == "OneNode" && storage["accessModes"] == json!(["ReadWriteOnce"]),
        "status.storage: {storage}"
    );
    let version = corpus["status"]["activeIndex"]["version"]
        .as_str()
        .context("no active version")?
        .to_string();
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    let job = jobs
        .list(&ListParams::default().labels("trellis.dev/corpus=one-node"))
        .await?
        .items
        .into_iter()
        .next()
        .context("no ingest Job")?;
    let template = job.spec.context("Job without spec")?.template;
    ensure!(
        on_one_node(&template, "data-rwo"),
        "the ingest pods are not held to the claim's node: {:?}",
        affinity_terms(&template)
    );

    let mut route = quickstart("RetrievalRoute")?.remove(0);
    route["metadata"]["name"] = json!("one-node");
    route["spec"]["corpusRef"]["name"] = json!("one-node");
    // Two replicas, which the scheduler spreads over nodes unless held.
    route["spec"]["serving"]["replicas"] = json!(2);
    route["spec"]["serving"]["template"] = tolerate_both_nodes();
    put(world, NS, &route).await?;
    let service = trellis::operator::deployment::workload_name("one-node");
    let endpoints = wait_for("the route to serve", Duration::from_secs(240), || async {
        let route = support::trellis_object(client, NS, "retrievalroutes", "one-node").await?;
        let served = route["status"]["servedVersion"].as_str() == Some(version.as_str());
        let ready = support::ready_endpoints(client, NS, &service).await?;
        Ok((served && !ready.is_empty()).then_some(ready))
    })
    .await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let deployment = deployments.get(&service).await?;
    let template = deployment.spec.context("Deployment without spec")?.template;
    ensure!(
        on_one_node(&template, "data-rwo"),
        "the retrieval pods are not held to the claim's node: {:?}",
        affinity_terms(&template)
    );
    let answer = support::retrieve(&world.http, &endpoints[0], QUERY).await?;
    ensure!(
        answer["index_version"] == version.as_str(),
        "answered from {}",
        answer["index_version"]
    );
    // Where the real scheduler put them: every pod of the claim, the
    // ingest's and the route's, on one node, though both were open to it.
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let placed: Vec<(String, String)> = pods
        .list(&ListParams::default().labels("trellis.dev/data-claim=data-rwo"))
        .await?
        .items
        .iter()
        .filter_map(|p| {
            let node = p.spec.as_ref()?.node_name.clone()?;
            Some((p.name_any(), node))
        })
        .collect();
    ensure!(
        placed.len() >= 2,
        "expected the two retrieval pods at least, found {placed:?}"
    );
    ensure!(
        placed.iter().all(|(_, node)| *node == placed[0].1),
        "the claim's pods ran on more than one node: {placed:?}"
    );

    put(world, NS, &corpus_on("one-pod", "data-rwop")?).await?;
    let refused = wait_for(
        "the ReadWriteOncePod Corpus to be refused",
        Duration::from_secs(60),
        || async {
            let corpus = support::trellis_object(client, NS, "corpora", "one-pod").await?;
            let stalled = support::condition(&corpus, "Stalled").is_some_and(|(s, _)| s == "True");
            Ok(stalled.then_some(corpus))
        },
    )
    .await?;
    let message = support::condition_message(&refused, "Ready");
    ensure!(
        message.contains("ReadWriteOncePod") && message.contains("data-rwop"),
        "Ready says: {message}"
    );
    let none = jobs
        .list(&ListParams::default().labels("trellis.dev/corpus=one-pod"))
        .await?;
    ensure!(
        none.items.is_empty(),
        "a Job started on a ReadWriteOncePod claim"
    );

    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces.delete(NS, &DeleteParams::default()).await?;
    Ok(())
}
