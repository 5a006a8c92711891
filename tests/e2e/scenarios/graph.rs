//! A route anchored in the graph store: the ingest exports the version to
//! a real FalkorDB, and the route's pods mount no index volume but read
//! the version from the store, answering as a route on the volume does.

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::DeleteParams;
use serde_json::{Value, json};

use super::corpus::{QUERY, claim_corpus, put, quickstart, ready_corpus, stage};
use crate::World;
use crate::cluster::GATEWAY;
use crate::cluster::repo;
use crate::support::{self, wait_for};

const NS: &str = "e2e-graph";
const CORPUS: &str = "quickstart";

/// A FalkorDB server on the node's bridge address, where pods reach it.
struct Falkor {
    _server: tokio::process::Child,
    port: u16,
}

impl Falkor {
    async fn start(address: Ipv4Addr) -> Result<Falkor> {
        let port = std::net::TcpListener::bind((address, 0))?
            .local_addr()?
            .port();
        let server = tokio::process::Command::new("bash")
            .arg(repo().join("scripts/falkordb-test-server.sh"))
            .args([port.to_string(), address.to_string()])
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting FalkorDB")?;
        wait_for("FalkorDB to listen", Duration::from_secs(120), || async {
            Ok(tokio::net::TcpStream::connect((address, port))
                .await
                .ok()
                .map(|_| ()))
        })
        .await?;
        Ok(Falkor {
            _server: server,
            port,
        })
    }
}

/// The quickstart route named `name`, one pod, anchors from `source`.
fn route(name: &str, source: &str) -> Result<Value> {
    let mut route = quickstart("RetrievalRoute")?.remove(0);
    route["metadata"]["name"] = json!(name);
    route["spec"]["anchors"]["source"] = json!(source);
    route["spec"]["serving"]["replicas"] = json!(1);
    Ok(route)
}

/// The first ready endpoint of route `name`, once it serves `version`.
async fn serving(world: &World, name: &str, version: &str) -> Result<String> {
    let client = &world.cluster.admin;
    let service = trellis::operator::deployment::workload_name(name);
    let endpoints = wait_for(
        &format!("route {name} to serve"),
        Duration::from_secs(240),
        || async {
            let route = support::trellis_object(client, NS, "retrievalroutes", name).await?;
            let served = route["status"]["servedVersion"].as_str() == Some(version);
            let ready = support::ready_endpoints(client, NS, &service).await?;
            Ok((served && !ready.is_empty()).then_some(ready))
        },
    )
    .await?;
    Ok(endpoints[0].clone())
}

pub async fn anchored_in_store(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let falkor = Falkor::start(GATEWAY).await?;
    stage(world, NS).await?;
    let mut profile = quickstart("IndexProfile")?.remove(0);
    profile["spec"]["graph"] = json!({
        "store": "falkordb",
        "falkordb": {"url": format!("falkor://{GATEWAY}:{}", falkor.port), "graph": "e2e"},
    });
    put(world, NS, &profile).await?;
    put(world, NS, &claim_corpus()?).await?;
    let corpus = ready_corpus(world, NS, CORPUS, None, Duration::from_secs(300)).await?;
    let active = &corpus["status"]["activeIndex"];
    ensure!(
        active["graph"]["store"] == "falkordb",
        "the Corpus does not say which store holds its version: {active}"
    );
    let version = active["version"]
        .as_str()
        .context("no active version")?
        .to_string();

    put(world, NS, &route("on-volume", "embedded")?).await?;
    put(world, NS, &route("in-store", "graph")?).await?;
    let on_volume = serving(world, "on-volume", &version).await?;
    let in_store = serving(world, "in-store", &version).await?;

    // The store-anchored pods mount no claim and read the version from
    // the store.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let deployment = deployments
        .get(&trellis::operator::deployment::workload_name("in-store"))
        .await?;
    let pod = deployment
        .spec
        .and_then(|s| s.template.spec)
        .context("Deployment without a pod spec")?;
    let claims: Vec<_> = pod
        .volumes
        .iter()
        .flatten()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.clone())
        .collect();
    ensure!(claims.is_empty(), "the pods mount claims {claims:?}");
    let args = pod.containers[0].args.clone().unwrap_or_default().join(" ");
    ensure!(args.contains("--index-from-graph"), "{args}");

    // Both answer the quickstart question from the version, with the
    // same best sentence.
    let top = |answer: &Value| answer["hits"][0]["citation"]["sentence_id"].clone();
    let a = support::retrieve(&world.http, &on_volume, QUERY).await?;
    let b = support::retrieve(&world.http, &in_store, QUERY).await?;
    ensure!(
        b["index_version"] == version.as_str(),
        "answered from {}",
        b["index_version"]
    );
    ensure!(
        !top(&b).is_null() && top(&a) == top(&b),
        "the volume's route answers {}, the store's {}",
        top(&a),
        top(&b)
    );

    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces.delete(NS, &DeleteParams::default()).await?;
    Ok(())
}
