//! An upgrade: the previous release (its chart and binary, built from the
//! commit in tests/e2e/previous-release) installs, ingests and serves;
//! `helm upgrade` to this build's chart and image then takes over what it
//! made, and the route keeps answering throughout.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use trellis::index::READABLE_FORMATS;

use super::chart::{Build, helm_release, operator_runs};
use super::corpus::{QUERY, Traffic, claim_corpus, put, quickstart, ready_corpus, stage};
use crate::World;
use crate::support::{self, wait_for};

const NS: &str = "e2e-upgrade";
const CORPUS: &str = "quickstart";
const SERVICE: &str = "quickstart-retrieval";

/// `helm install --wait` of the previous release's chart and image: two
/// operator replicas, one leading.
pub async fn install_previous(world: &World) -> Result<()> {
    let chart = world.previous_chart.display().to_string();
    helm_release(world, "install", &chart, Build::Previous).await?;
    operator_runs(world, Build::Previous).await
}

/// The previous release ingests the quickstart and serves it on two pods.
pub async fn previous_serves(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    stage(world, NS).await?;
    put(world, NS, &claim_corpus()?).await?;
    let corpus = ready_corpus(world, NS, CORPUS, None, Duration::from_secs(300)).await?;
    let version = corpus["status"]["activeIndex"]["version"]
        .as_str()
        .context("no active version")?
        .to_string();
    put(world, NS, &quickstart("RetrievalRoute")?.remove(0)).await?;
    wait_for("the route to serve", Duration::from_secs(300), || async {
        let route = support::trellis_object(client, NS, "retrievalroutes", CORPUS).await?;
        let served = route["status"]["servedVersion"] == version.as_str();
        let available = support::condition(&route, "Available").is_some_and(|(s, _)| s == "True");
        Ok((served && available).then_some(()))
    })
    .await?;
    for address in support::ready_endpoints(client, NS, SERVICE).await? {
        support::retrieve(&world.http, &address, QUERY).await?;
    }
    Ok(())
}

/// `helm upgrade --wait` to this chart and image while two clients send
/// retrievals to the route's ready endpoints: the new operator takes the
/// Lease, re-ingests (the index format is part of the inputs), holds the
/// retrieval pods on the old image until the Corpus reports a version in
/// a format this build reads (the previous release wrote an older one),
/// then rolls them, and not one request fails.
pub async fn upgrade(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let version = support::active_version(client, NS, CORPUS).await?;
    let traffic = Traffic::start(world, NS, SERVICE, 2);
    tokio::time::sleep(Duration::from_secs(2)).await;

    helm_release(world, "upgrade", "charts/trellis", Build::Current).await?;
    operator_runs(world, Build::Current).await?;
    let image = Build::Current.image(world);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let rolled_early = wait_for(
        "the route's pods to roll to the new image",
        Duration::from_secs(300),
        || async {
            let deployment = deployments.get(SERVICE).await?;
            let template_image = deployment
                .spec
                .as_ref()
                .and_then(|s| s.template.spec.as_ref())
                .and_then(|s| s.containers.first())
                .and_then(|c| c.image.clone());
            let route = support::trellis_object(client, NS, "retrievalroutes", CORPUS).await?;
            // Read after the Deployment: a Corpus that reported its format
            // before the roll still reports it now.
            let corpus = support::trellis_object(client, NS, "corpora", CORPUS).await?;
            let format = corpus["status"]["activeIndex"]["format"]
                .as_u64()
                .and_then(|f| u32::try_from(f).ok());
            let new_template = template_image.as_deref() == Some(image.as_str());
            if new_template && !format.is_some_and(|f| READABLE_FORMATS.contains(&f)) {
                return Ok(Some(Some(format!(
                    "the route's pods rolled to the new image before the Corpus reported a \
                     readable index format (format {format:?})"
                ))));
            }
            let rolled = new_template
                && support::condition(&route, "Progressing")
                    .is_some_and(|(s, r)| s == "False" && r == "RolloutComplete")
                && support::condition(&route, "Available").is_some_and(|(s, _)| s == "True");
            Ok(rolled.then_some(None))
        },
    )
    .await?;
    if let Some(problem) = rolled_early {
        bail!(problem);
    }
    // The hold may pass while `helm upgrade --wait` runs; its Event stays.
    support::expect_event(client, NS, CORPUS, "AwaitingReindex")
        .await
        .context("the route never held its pods for the re-ingest")?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let tally = traffic.finish().await;
    tally.none_failed("the upgrade")?;
    ensure!(tally.ok >= 20, "only {} retrievals answered", tally.ok);
    let after = ready_corpus(world, NS, CORPUS, None, Duration::from_secs(120)).await?;
    let route = support::trellis_object(client, NS, "retrievalroutes", CORPUS).await?;
    ensure!(
        route["status"]["servedVersion"] == after["status"]["activeIndex"]["version"],
        "the route serves {} while the Corpus' active version is {}",
        route["status"]["servedVersion"],
        after["status"]["activeIndex"]["version"]
    );
    eprintln!(
        "e2e:   index version before the upgrade {version}, after {}",
        after["status"]["activeIndex"]["version"]
    );
    Ok(())
}
