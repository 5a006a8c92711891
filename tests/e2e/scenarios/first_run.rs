//! A platform team's first run: the chart installed, then the cluster
//! quickstart applied exactly as the chart's NOTES say, and a Corpus
//! pointed at a claim before its documents are copied in.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

use super::corpus::{
    DOCUMENTS_CLAIM, QUERY, claim_corpus, put, quickstart, ready_corpus, shared_claim,
};
use crate::cluster::repo;
use crate::support::{self, wait_for};
use crate::{OPERATOR_NAMESPACE, World};

const FIRST_RUN_NS: &str = "e2e-first-run";
const EMPTY_NS: &str = "e2e-empty-claim";
const NAME: &str = "quickstart";
/// [`QUERY`] as the NOTES' shell quoting spells it.
const QUERY_IN_NOTES: &str = r"Which state'\''s law governs the hosting agreement?";

/// `kubectl apply -f examples/kubernetes/quickstart.yaml`, the file as it
/// is: its documents inline, its data claim ReadWriteOnce with the
/// default storage class. The Corpus becomes Ready, the route serves, and
/// the Service the NOTES find by label answers the NOTES' question from
/// the hosting agreement.
pub async fn quickstart_as_written(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let notes = world
        .cluster
        .helm(&["get", "notes", "trellis", "--namespace", OPERATOR_NAMESPACE])
        .await?;
    let notes = String::from_utf8_lossy(&notes.stdout);
    for told in [
        "/examples/kubernetes/quickstart.yaml",
        "trellis.dev/route=quickstart",
        "Content-Type: application/json",
        QUERY_IN_NOTES,
    ] {
        ensure!(
            notes.contains(told),
            "the NOTES do not say {told:?}:\n{notes}"
        );
    }
    support::namespace(world, FIRST_RUN_NS).await?;
    let text = std::fs::read_to_string(repo().join("examples/kubernetes/quickstart.yaml"))?;
    support::apply_all(client, FIRST_RUN_NS, &text).await?;

    let corpus = ready_corpus(world, FIRST_RUN_NS, NAME, None, Duration::from_secs(300)).await?;
    let documents = quickstart("ConfigMap")?
        .first()
        .and_then(|c| c["data"].as_object().map(|d| d.len()))
        .context("the quickstart has no documents ConfigMap")?;
    ensure!(
        corpus["status"]["activeIndex"]["documents"] == documents as u64,
        "the quickstart holds {documents} documents: {}",
        corpus["status"]
    );
    ensure!(
        corpus["status"]["storage"]["placement"] == "OneNode",
        "a ReadWriteOnce data claim: {}",
        corpus["status"]["storage"]
    );
    wait_for("the route to serve", Duration::from_secs(300), || async {
        let route = support::trellis_object(client, FIRST_RUN_NS, "retrievalroutes", NAME).await?;
        let available = support::condition(&route, "Available").is_some_and(|(s, _)| s == "True");
        Ok(available.then_some(()))
    })
    .await?;

    // As the NOTES find it: by the route's label, not by a guessed name.
    let services: Api<Service> = Api::namespaced(client.clone(), FIRST_RUN_NS);
    let found = services
        .list(&ListParams::default().labels(&format!("trellis.dev/route={NAME}")))
        .await?;
    let [service] = found.items.as_slice() else {
        anyhow::bail!(
            "{} Services carry trellis.dev/route={NAME}",
            found.items.len()
        );
    };
    let name = service
        .metadata
        .name
        .clone()
        .context("a Service without a name")?;
    let endpoints = wait_for("ready endpoints", Duration::from_secs(60), || async {
        let ready = support::ready_endpoints(client, FIRST_RUN_NS, &name).await?;
        Ok((!ready.is_empty()).then_some(ready))
    })
    .await?;
    // The hosting agreement comes first. Its governing-law sentence is
    // not yet among the route's first results in `full` mode: that is
    // the retrieval's to mend, not the first run's.
    for address in &endpoints {
        let answer = support::retrieve(&world.http, address, QUERY).await?;
        let first = answer["hits"][0]["citation"]["document"]
            .as_str()
            .unwrap_or_default();
        ensure!(
            first.ends_with("/webhelp-hosting-agreement.txt"),
            "{address} did not answer from the hosting agreement first: {answer}"
        );
    }
    Ok(())
}

/// A Corpus over a claim with nothing in it yet: the ingest finds nothing
/// to index, the Corpus says so (`Stalled`, reason `NothingToIndex`,
/// phase `Pending`, the message naming the re-ingest annotation) instead
/// of failing for good,
/// and once the documents are copied in, the retry after its backoff
/// ingests them with no one touching the Corpus.
pub async fn empty_claim_retried(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    support::namespace(world, EMPTY_NS).await?;
    let mut corpus = claim_corpus()?;
    let data = corpus["spec"]["storage"]["claimName"].clone();
    let data = data.as_str().context("the Corpus names no data claim")?;
    for claim in [DOCUMENTS_CLAIM, data] {
        put(world, EMPTY_NS, &shared_claim(claim)).await?;
    }
    for profile in quickstart("IndexProfile")? {
        put(world, EMPTY_NS, &profile).await?;
    }
    corpus["metadata"]["name"] = json!(NAME);
    put(world, EMPTY_NS, &corpus).await?;

    let waiting = wait_for(
        "the Corpus to wait for documents",
        Duration::from_secs(240),
        || async {
            let corpus = support::trellis_object(client, EMPTY_NS, "corpora", NAME).await?;
            let ready = support::condition(&corpus, "Ready");
            Ok(ready
                .is_some_and(|(_, reason)| reason == "NothingToIndex")
                .then_some(corpus))
        },
    )
    .await?;
    let message = support::condition_message(&waiting, "Ready");
    ensure!(
        message.contains("nothing to index") && message.contains("trellis.dev/reingest"),
        "{message}"
    );
    ensure!(
        waiting["status"]["phase"] == "Pending",
        "{}",
        waiting["status"]
    );
    ensure!(
        support::condition(&waiting, "Stalled")
            .is_some_and(|(s, reason)| s == "True" && reason == "NothingToIndex"),
        "{}",
        waiting["status"]
    );
    let annotations = waiting["metadata"]["annotations"].clone();

    let documents = support::claim_dir(client, EMPTY_NS, DOCUMENTS_CLAIM).await?;
    let copied = support::copy_tree(&repo().join("examples/quickstart/documents"), &documents)?;
    let ready = ready_corpus(world, EMPTY_NS, NAME, None, Duration::from_secs(300)).await?;
    ensure!(
        ready["status"]["activeIndex"]["documents"] == copied as u64,
        "{copied} documents copied: {}",
        ready["status"]
    );
    ensure!(
        ready["metadata"]["annotations"] == annotations,
        "the Corpus was touched: {}",
        ready["metadata"]
    );
    let reasons = support::event_reasons(client, EMPTY_NS, NAME).await?;
    ensure!(
        reasons.iter().any(|r| r == "IngestRetried"),
        "events: {reasons:?}"
    );
    Ok(())
}
