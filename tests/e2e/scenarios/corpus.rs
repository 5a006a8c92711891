//! A Corpus from ingest to serving: the quickstart of
//! examples/kubernetes/quickstart.yaml, its documents in a claim (the
//! scenarios change what a source holds, which a claim lets them do).

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Api;
use kube::api::ListParams;
use serde_json::Value;

use crate::World;
use crate::cluster::repo;
use crate::support::{self, wait_for};

pub const NS: &str = "e2e-quickstart";
pub const CORPUS: &str = "quickstart";
const SERVICE: &str = "quickstart-retrieval";
pub const QUERY: &str = "Which state's law governs the hosting agreement?";

/// The quickstart's objects of one kind, as JSON.
pub fn quickstart(kind: &str) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(repo().join("examples/kubernetes/quickstart.yaml"))?;
    Ok(support::documents(&text)?
        .into_iter()
        .filter(|d| d["kind"] == kind)
        .collect())
}

/// The claim the scenarios' documents are copied into.
pub const DOCUMENTS_CLAIM: &str = "trellis-documents";

/// The quickstart's Corpus reading its documents from
/// [`DOCUMENTS_CLAIM`] instead of the quickstart's ConfigMap.
pub fn claim_corpus() -> Result<Value> {
    let mut corpus = quickstart("Corpus")?
        .pop()
        .context("the quickstart has no Corpus")?;
    corpus["spec"]["sources"] = serde_json::json!([{"pvc": {"claimName": DOCUMENTS_CLAIM}}]);
    Ok(corpus)
}

/// A ReadWriteMany claim: the scenarios move pods between the nodes
/// (drains, taints), which a ReadWriteOnce claim like the quickstart's
/// would pin to one of them.
pub fn shared_claim(name: &str) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    })
}

/// A namespace with the documents claim, the quickstart's documents
/// copied into it, the data claim ([`shared_claim`]s both) and the
/// quickstart's IndexProfile; how many documents.
pub async fn stage(world: &World, ns: &str) -> Result<usize> {
    let client = &world.cluster.admin;
    support::namespace(world, ns).await?;
    let data = claim_corpus()?["spec"]["storage"]["claimName"]
        .as_str()
        .context("the quickstart's Corpus names no data claim")?
        .to_string();
    for claim in [DOCUMENTS_CLAIM, &data] {
        put(world, ns, &shared_claim(claim)).await?;
    }
    let documents = support::claim_dir(client, ns, DOCUMENTS_CLAIM).await?;
    let copied = support::copy_tree(&repo().join("examples/quickstart/documents"), &documents)?;
    for profile in quickstart("IndexProfile")? {
        support::apply_all(client, ns, &serde_yaml::to_string(&profile)?).await?;
    }
    Ok(copied)
}

/// The ConfigMap of the one small document [`stage_notice`] stages.
const NOTICE: &str = "notice";

/// Stages `ns` for Corpora of one small document: the data claim (a
/// [`shared_claim`]), the quickstart's IndexProfile and a ConfigMap that
/// holds the document. The namespace must exist.
pub async fn stage_notice(world: &World, ns: &str) -> Result<()> {
    put(world, ns, &shared_claim("trellis-data")).await?;
    put(
        world,
        ns,
        &serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": NOTICE},
            "data": {"notice.md": "# Notice\n\nThe notice period is thirty days. \
                Either party may end the agreement by written notice.\n"},
        }),
    )
    .await?;
    for profile in quickstart("IndexProfile")? {
        put(world, ns, &profile).await?;
    }
    Ok(())
}

/// The quickstart's Corpus, named `name`, over the document
/// [`stage_notice`] stages.
pub fn notice_corpus(name: &str) -> Result<Value> {
    let mut corpus = quickstart("Corpus")?
        .pop()
        .context("the quickstart has no Corpus")?;
    corpus["metadata"]["name"] = serde_json::json!(name);
    corpus["spec"]["sources"] = serde_json::json!([{"configMap": {"name": NOTICE}}]);
    Ok(corpus)
}

/// Applies one object given as JSON.
pub async fn put(world: &World, ns: &str, object: &Value) -> Result<()> {
    support::apply_all(&world.cluster.admin, ns, &serde_yaml::to_string(object)?).await
}

/// Waits until the Corpus is Ready on a version other than `not`; its
/// status.
pub async fn ready_corpus(
    world: &World,
    ns: &str,
    name: &str,
    not: Option<&str>,
    timeout: Duration,
) -> Result<Value> {
    let client = &world.cluster.admin;
    wait_for(&format!("Corpus {name} to be Ready"), timeout, || async {
        let corpus = support::trellis_object(client, ns, "corpora", name).await?;
        let version = corpus["status"]["activeIndex"]["version"].as_str();
        let ready = support::condition(&corpus, "Ready").is_some_and(|(s, _)| s == "True");
        let ingesting = support::condition(&corpus, "Ingesting").is_some_and(|(s, _)| s == "True");
        let fresh = version.is_some() && version != not;
        anyhow::ensure!(
            corpus["status"]["phase"] != "Failed",
            "the Corpus failed: {}",
            corpus["status"]
        );
        Ok((ready && fresh && !ingesting).then_some(corpus))
    })
    .await
}

/// PVCs, documents copied into the claim, the profile and a Corpus of two
/// shards: an Indexed Job of two pods, then the finalize Job, publish a
/// version whose report makes the Corpus Ready with its counts,
/// conditions and Events.
pub async fn ingest(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let copied = stage(world, NS).await?;
    let mut objects = quickstart("IndexProfile")?;
    let mut corpus = claim_corpus()?;
    corpus["spec"]["ingest"] = serde_json::json!({"shards": 2});
    objects.push(corpus);
    for object in &objects {
        support::apply_all(client, NS, &serde_yaml::to_string(object)?).await?;
    }

    let corpus = ready_corpus(world, NS, CORPUS, None, Duration::from_secs(300)).await?;
    let status = &corpus["status"];
    let active = &status["activeIndex"];
    ensure!(
        active["documents"] == copied as u64,
        "{copied} documents copied, the active index has {}",
        active["documents"]
    );
    ensure!(
        active["sentences"].as_u64().unwrap_or(0) > 100,
        "too few sentences: {active}"
    );
    ensure!(
        status["observedGeneration"] == corpus["metadata"]["generation"],
        "observedGeneration {} for generation {}",
        status["observedGeneration"],
        corpus["metadata"]["generation"]
    );
    ensure!(
        support::condition(&corpus, "Degraded").is_some_and(|(s, _)| s == "False"),
        "Degraded is not False: {status}"
    );

    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    let jobs = jobs
        .list(&ListParams::default().labels(&format!("trellis.dev/corpus={CORPUS}")))
        .await?
        .items;
    let sharded = jobs
        .iter()
        .find(|j| {
            j.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.contains("-ingest-"))
        })
        .context("no ingest Job")?;
    let spec = sharded.spec.as_ref().context("ingest Job has no spec")?;
    ensure!(
        spec.completion_mode.as_deref() == Some("Indexed") && spec.completions == Some(2),
        "the ingest Job is not Indexed over 2 shards"
    );
    ensure!(
        sharded.status.as_ref().and_then(|s| s.succeeded) == Some(2),
        "the ingest Job did not succeed twice: {:?}",
        sharded.status
    );
    ensure!(
        jobs.iter().any(|j| j
            .metadata
            .name
            .as_deref()
            .is_some_and(|n| n.contains("-finalize-"))),
        "no finalize Job among {:?}",
        support::names(&jobs)
    );

    // The chart's default: the ingest pods' NetworkPolicy, admitted by
    // the API server, selecting the pods that ran, closed to link-local
    // addresses (cloud metadata) and to anything coming in.
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), NS);
    let policy = policies
        .get(&format!("{CORPUS}-ingest"))
        .await
        .context("the ingest pods' NetworkPolicy")?;
    let spec = policy.spec.context("NetworkPolicy without spec")?;
    let selector: Vec<String> = spec
        .pod_selector
        .and_then(|s| s.match_labels)
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let selected = pods
        .list(&ListParams::default().labels(&selector.join(",")))
        .await?
        .items;
    ensure!(
        selected.len() >= 3,
        "the ingest policy selects {} pods, not the two shards' and the finalize pod ({selector:?})",
        selected.len()
    );
    // No ingress rule under an `Ingress` policy type: nothing comes in
    // (the API server returns the empty list as none).
    let closed = spec.policy_types.iter().flatten().any(|t| t == "Ingress")
        && spec.ingress.as_ref().is_none_or(Vec::is_empty);
    let egress = serde_json::to_string(&spec.egress)?;
    ensure!(
        closed && egress.contains("169.254.0.0/16"),
        "{:?} {egress}",
        spec.ingress
    );

    // The finalize pod's report, written through the ingest
    // ServiceAccount, names the version the Corpus made active.
    let reports: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let report = reports.get(&format!("{CORPUS}-ingest-report")).await?;
    let data = report.data.unwrap_or_default();
    let published: Value =
        serde_json::from_str(data.get("status.json").context("no status.json")?)?;
    ensure!(
        published["version"] == active["version"],
        "the report says {}, the Corpus {}",
        published["version"],
        active["version"]
    );

    for reason in ["IngestStarted", "FinalizeStarted", "IndexPublished"] {
        support::expect_event(client, NS, CORPUS, reason).await?;
    }
    Ok(())
}

/// The route's Deployment of two pods becomes Available; each ready
/// endpoint answers a retrieval from the Corpus' active version, which
/// the route reports as served.
pub async fn serve(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let version = support::active_version(client, NS, CORPUS).await?;
    for route in quickstart("RetrievalRoute")? {
        support::apply_all(client, NS, &serde_yaml::to_string(&route)?).await?;
    }
    let route = wait_for("the route to serve", Duration::from_secs(300), || async {
        let route = support::trellis_object(client, NS, "retrievalroutes", CORPUS).await?;
        let served = route["status"]["servedVersion"].as_str() == Some(version.as_str());
        let available = support::condition(&route, "Available").is_some_and(|(s, _)| s == "True");
        Ok((served && available).then_some(route))
    })
    .await?;
    ensure!(
        route["status"]["readyReplicas"] == 2,
        "readyReplicas: {}",
        route["status"]
    );
    let endpoints = wait_for("two ready endpoints", Duration::from_secs(60), || async {
        let ready = support::ready_endpoints(client, NS, SERVICE).await?;
        Ok((ready.len() == 2).then_some(ready))
    })
    .await?;
    for address in &endpoints {
        let answer = support::retrieve(&world.http, address, QUERY).await?;
        ensure!(
            answer["index_version"] == version.as_str(),
            "{address} answered from {}, not {version}",
            answer["index_version"]
        );
        let hits = answer["hits"].as_array().map_or(0, Vec::len);
        ensure!(hits > 0, "{address} found nothing: {answer}");
    }
    // The chart's default: a NetworkPolicy over exactly the route's pods,
    // admitted by the API server, letting requests in to the serving port
    // only and keeping them from cloud metadata.
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), NS);
    let policy = policies
        .get(SERVICE)
        .await
        .context("the route's NetworkPolicy")?;
    let spec = policy.spec.context("NetworkPolicy without spec")?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let selector = spec
        .pod_selector
        .and_then(|s| s.match_labels)
        .unwrap_or_default();
    let selector: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let selected = pods
        .list(&ListParams::default().labels(&selector.join(",")))
        .await?;
    ensure!(
        selected.items.len() == 2,
        "the policy selects {} pods, not the route's 2 ({selector:?})",
        selected.items.len()
    );
    let rules = serde_json::to_value((&spec.ingress, &spec.egress))?;
    ensure!(
        rules[0][0]["ports"][0]["port"] == "http" && rules.to_string().contains("169.254.0.0/16"),
        "{rules}"
    );
    Ok(())
}

/// Sends retrievals to the route's ready endpoints (as a Service's
/// clients would, by the EndpointSlices) until stopped; every answer and
/// failure is counted.
pub struct Traffic {
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<Tally>>,
}

/// Changes the quickstart profile in `ns` (its semantic-link threshold),
/// which re-ingests the Corpus; the new version, once it is active.
pub async fn change_profile(world: &World, ns: &str, old: &str) -> Result<String> {
    let mut profile = quickstart("IndexProfile")?.remove(0);
    profile["spec"]["semanticLinks"]["threshold"] = serde_json::json!(0.85);
    support::apply_all(&world.cluster.admin, ns, &serde_yaml::to_string(&profile)?).await?;
    let corpus = ready_corpus(world, ns, CORPUS, Some(old), Duration::from_secs(300)).await?;
    Ok(corpus["status"]["activeIndex"]["version"]
        .as_str()
        .context("the re-ingested Corpus has no active version")?
        .to_string())
}

/// Whether a route serves `version` and has finished rolling to it.
pub fn rolled_to(route: &Value, version: &str) -> bool {
    route["status"]["servedVersion"] == version
        && support::condition(route, "Progressing")
            .is_some_and(|(s, r)| s == "False" && r == "RolloutComplete")
}

/// What a [`Traffic`] saw.
#[derive(Debug, Default)]
pub struct Tally {
    pub ok: usize,
    pub failures: Vec<String>,
    /// Index versions in the order answers came from them.
    pub versions: Vec<String>,
}

impl Tally {
    /// Logs what the clients saw `during` something (the e2e log's
    /// figures), and fails on any failed request.
    pub fn none_failed(&self, during: &str) -> Result<()> {
        eprintln!(
            "e2e:   {} retrievals during {during}, {} failed; versions answered: {:?}",
            self.ok + self.failures.len(),
            self.failures.len(),
            self.versions
        );
        ensure!(
            self.failures.is_empty(),
            "{} failed requests during {during}, first: {}",
            self.failures.len(),
            self.failures[0]
        );
        Ok(())
    }
}

impl Traffic {
    pub fn start(world: &World, ns: &str, service: &str, clients: usize) -> Self {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let tasks = (0..clients)
            .map(|i| {
                let client = world.cluster.admin.clone();
                let http = world.http.clone();
                let ns = ns.to_string();
                let service = service.to_string();
                let stopped = stopped.clone();
                tokio::spawn(async move {
                    let mut tally = Tally::default();
                    let mut turn = i;
                    while !*stopped.borrow() {
                        let endpoints = match support::ready_endpoints(&client, &ns, &service).await
                        {
                            Ok(e) if !e.is_empty() => e,
                            Ok(_) => {
                                tally.failures.push("no ready endpoint".into());
                                tokio::time::sleep(Duration::from_millis(200)).await;
                                continue;
                            }
                            Err(e) => {
                                // The API server's answer, not the route's.
                                eprintln!("e2e:   listing endpoints: {e:#}");
                                tokio::time::sleep(Duration::from_millis(500)).await;
                                continue;
                            }
                        };
                        turn += 1;
                        let address = &endpoints[turn % endpoints.len()];
                        match support::retrieve(&http, address, QUERY).await {
                            Ok(answer) => {
                                tally.ok += 1;
                                let version = answer["index_version"].as_str().unwrap_or_default();
                                if tally.versions.last().map(String::as_str) != Some(version) {
                                    tally.versions.push(version.to_string());
                                }
                            }
                            Err(e) => tally.failures.push(format!("{e:#}")),
                        }
                    }
                    tally
                })
            })
            .collect();
        Self { stop, tasks }
    }

    pub async fn finish(mut self) -> Tally {
        let _ = self.stop.send(true);
        let mut total = Tally::default();
        for task in std::mem::take(&mut self.tasks) {
            if let Ok(tally) = task.await {
                total.ok += tally.ok;
                total.failures.extend(tally.failures);
                for v in tally.versions {
                    if !total.versions.contains(&v) {
                        total.versions.push(v);
                    }
                }
            }
        }
        total
    }
}

impl Drop for Traffic {
    /// A scenario that fails half-way stops its traffic too.
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A profile change builds a new version and rolls the route's pods to
/// it, surge first; clients sending retrievals to the ready endpoints all
/// along see no failed request, answers from the old version and then the
/// new.
pub async fn roll(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let before = support::trellis_object(client, NS, "corpora", CORPUS).await?;
    let old = before["status"]["activeIndex"]["version"]
        .as_str()
        .context("no active version")?
        .to_string();
    let traffic = Traffic::start(world, NS, SERVICE, 2);
    tokio::time::sleep(Duration::from_secs(2)).await;

    let new = change_profile(world, NS, &old).await?;
    wait_for("the route to roll", Duration::from_secs(300), || async {
        let route = support::trellis_object(client, NS, "retrievalroutes", CORPUS).await?;
        Ok(rolled_to(&route, &new).then_some(()))
    })
    .await?;
    // The old pods are gone from the endpoints once the rollout is
    // complete; a little more traffic shows only the new version answers.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let tally = traffic.finish().await;
    tally.none_failed("the roll")?;
    ensure!(tally.ok >= 20, "only {} retrievals answered", tally.ok);
    ensure!(
        tally.versions.first() == Some(&old) && tally.versions.last() == Some(&new),
        "answers came from {:?}, expected {old} then {new}",
        tally.versions
    );
    Ok(())
}
