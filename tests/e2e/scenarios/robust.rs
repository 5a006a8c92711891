//! Objects a real cluster holds that the happy path never meets.
//!
//! One object the operator cannot read never stops the others: a Corpus
//! admitted under a looser CRD (a value its type cannot hold) is marked
//! `InvalidSpec` on itself, with a Warning Event, while the other corpora
//! of its kind reconcile, across an operator restart (whose first list
//! holds the bad object) and with a field of a newer CRD in them; the
//! CRD's bounds, restored, refuse the value at admission; fixed, the
//! object is readable again.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::chart::lease_holder;
use super::corpus::{NS, claim_corpus, quickstart};
use crate::support::{self, wait_for};
use crate::{OPERATOR_NAMESPACE, World};

const CRD: &str = "corpora.trellis.dev";
const BAD: &str = "overflow";
/// Above what a `u32` holds.
const TOO_LARGE: u64 = 5_000_000_000;

fn corpora(world: &World) -> Api<kube::api::DynamicObject> {
    let resource = kube::api::ApiResource {
        group: "trellis.dev".into(),
        version: "v1alpha1".into(),
        api_version: "trellis.dev/v1alpha1".into(),
        kind: "Corpus".into(),
        plural: "corpora".into(),
    };
    Api::namespaced_with(world.cluster.admin.clone(), NS, &resource)
}

/// Replaces the Corpus CRD's schema by what `edit` makes of it.
async fn edit_crd(world: &World, edit: impl FnOnce(&mut Value)) -> Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(world.cluster.admin.clone());
    let crd = crds.get(CRD).await?;
    let mut value = serde_json::to_value(&crd)?;
    edit(&mut value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]);
    let crd: CustomResourceDefinition = serde_json::from_value(value)?;
    crds.replace(CRD, &PostParams::default(), &crd)
        .await
        .context("replacing the Corpus CRD")?;
    Ok(())
}

fn spec_schema(schema: &mut Value) -> &mut Value {
    &mut schema["properties"]["spec"]["properties"]
}

pub async fn unreadable_object(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let api = corpora(world);
    let original = Api::<CustomResourceDefinition>::all(client.clone())
        .get(CRD)
        .await?;
    let original_schema =
        serde_json::to_value(&original)?["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            .clone();

    // A looser CRD, as an older release or a hand edit might have left:
    // no bound on the TTL, and a field this build does not know.
    edit_crd(world, |schema| {
        let spec = spec_schema(schema);
        if let Some(ttl) = spec["ingest"]["properties"]["ttlSecondsAfterFinished"].as_object_mut() {
            ttl.remove("maximum");
        }
        spec["fromTheFuture"] = json!({"type": "string"});
    })
    .await?;
    let mut bad = claim_corpus()?;
    bad["metadata"]["name"] = json!(BAD);
    bad["spec"]["ingest"] = json!({"ttlSecondsAfterFinished": TOO_LARGE});
    // Admission under the looser schema may lag the replace by a moment.
    wait_for(
        "the looser CRD to admit the Corpus",
        Duration::from_secs(30),
        || async {
            let applied = support::apply_all(client, NS, &serde_yaml::to_string(&bad)?).await;
            Ok(applied.ok())
        },
    )
    .await?;

    // The bad object is marked on itself.
    let marked = wait_for(
        "the Corpus to be marked InvalidSpec",
        Duration::from_secs(60),
        || async {
            let corpus = support::trellis_object(client, NS, "corpora", BAD).await?;
            let stalled = support::condition(&corpus, "Stalled");
            Ok((stalled == Some(("True".into(), "InvalidSpec".into()))).then_some(corpus))
        },
    )
    .await?;
    let message = marked["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string();
    ensure!(
        message.contains("spec.ingest.ttlSecondsAfterFinished"),
        "the condition does not name the field: {message}"
    );
    // Observed, as GitOps tools read it: Degraded, not Progressing.
    let observed = marked["status"]["observedGeneration"].as_i64();
    ensure!(
        observed.is_some() && observed == marked["metadata"]["generation"].as_i64(),
        "the unreadable Corpus' observedGeneration is {observed:?}, its generation {}",
        marked["metadata"]["generation"]
    );
    support::expect_event(client, NS, BAD, "InvalidSpec").await?;

    // A restarted operator lists the kind with the bad object in it and
    // still reconciles the rest: the newer field's edit is observed.
    // Leading comes before listing: the new leader's Corpus watch lists
    // a moment after it takes the lease, more so on a loaded machine.
    let leader = restart_operator(world).await?;
    let text = wait_for(
        "the new leader to meet the bad Corpus",
        Duration::from_secs(30),
        || async {
            let text = super::leader::metrics(world, &leader).await?;
            Ok(text
                .contains("trellis_operator_unreadable_objects_total{kind=\"Corpus\"}")
                .then_some(text))
        },
    )
    .await?;
    ensure!(
        !text.contains("trellis_operator_stream_errors_total{"),
        "the new leader's watches failed: {text}"
    );
    // The quickstart Corpus gets the newer CRD's field.
    let edited = api
        .patch(
            "quickstart",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"fromTheFuture": "ignored"}})),
        )
        .await?;
    let generation = edited.metadata.generation;
    wait_for(
        "the quickstart Corpus to observe its edit",
        Duration::from_secs(60),
        || async {
            let corpus = support::trellis_object(client, NS, "corpora", "quickstart").await?;
            let observed = corpus["status"]["observedGeneration"].as_i64();
            let ready = support::condition(&corpus, "Ready").is_some_and(|(s, _)| s == "True");
            Ok((observed == generation && ready).then_some(()))
        },
    )
    .await?;

    // The restored bounds refuse the value at admission, with its field.
    edit_crd(world, |schema| *schema = original_schema).await?;
    let mut again = bad.clone();
    again["metadata"]["name"] = json!("overflow-again");
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run()
        .await?;
    // Admission may lag the replace by a moment, as it did above.
    let refused = wait_for(
        "the bounded CRD to refuse a TTL above i32",
        Duration::from_secs(30),
        || async {
            let applied = support::apply(
                client,
                &discovery,
                NS,
                &again,
                support::Apply {
                    dry_run: true,
                    strict: true,
                },
            )
            .await;
            Ok(applied.err())
        },
    )
    .await?;
    let refused = format!("{refused:#}");
    ensure!(
        refused.contains("ttlSecondsAfterFinished")
            && (refused.contains("2147483647") || refused.contains("2.147483647e+09")),
        "the refusal does not name the field and its bound: {refused}"
    );

    // Fixed (and paused, so that no ingest starts), it is readable again.
    api.patch(
        BAD,
        &PatchParams::default(),
        &Patch::Merge(json!({
            "metadata": {"annotations": {"trellis.dev/paused": "true"}},
            "spec": {"ingest": {"ttlSecondsAfterFinished": 60}},
        })),
    )
    .await?;
    wait_for("InvalidSpec to clear", Duration::from_secs(60), || async {
        let corpus = support::trellis_object(client, NS, "corpora", BAD).await?;
        let reasons: BTreeSet<&str> = corpus["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["reason"].as_str())
            .collect();
        Ok(
            (!reasons.contains("InvalidSpec") && reasons.contains("PausedByAnnotation"))
                .then_some(()),
        )
    })
    .await?;
    api.delete(BAD, &DeleteParams::default()).await?;
    Ok(())
}

/// Deletes the operator's pods and waits for a new one to lead; that pod.
async fn restart_operator(world: &World) -> Result<Pod> {
    let pods: Api<Pod> = Api::namespaced(world.cluster.admin.clone(), OPERATOR_NAMESPACE);
    let selector = ListParams::default().labels("app.kubernetes.io/name=trellis");
    let old: BTreeSet<String> = pods
        .list(&selector)
        .await?
        .items
        .iter()
        .map(|p| p.name_any())
        .collect();
    let started = std::time::Instant::now();
    for name in &old {
        pods.delete(name, &DeleteParams::default()).await?;
    }
    let leader = wait_for(
        "a new operator pod to lead",
        Duration::from_secs(120),
        || async {
            let Some(holder) = lease_holder(world).await?.filter(|h| !old.contains(h)) else {
                return Ok(None);
            };
            let pod = pods.get(&holder).await?;
            let ip = pod.status.as_ref().and_then(|s| s.pod_ip.as_ref());
            Ok(ip.is_some().then_some(pod))
        },
    )
    .await?;
    eprintln!(
        "e2e:   operator restarted; {} leads after {:.1} s",
        leader.name_any(),
        started.elapsed().as_secs_f64()
    );
    Ok(leader)
}

/// A Corpus and a route whose names are longer than a label value (63
/// characters; object names may have 253) ingest and serve: every label
/// and object name derived from them fits, and the selectors that find
/// their objects by those labels still do. Their pods, given no
/// resources, request some (Burstable, not BestEffort), and the chart
/// gives its operator replicas a disruption budget.
pub async fn long_names(world: &World) -> Result<()> {
    const LONG_NS: &str = "e2e-names";
    let corpus_name = format!("contracts{}", "-of-the-legal-department".repeat(3));
    let route_name = format!("answers{}", "-for-the-contract-review-team".repeat(3));
    ensure!(corpus_name.len() > 63 && route_name.len() > 63);
    let client = &world.cluster.admin;
    super::corpus::stage(world, LONG_NS).await?;
    let mut corpus = claim_corpus()?;
    corpus["metadata"]["name"] = json!(corpus_name);
    super::corpus::put(world, LONG_NS, &corpus).await?;
    let ready =
        super::corpus::ready_corpus(world, LONG_NS, &corpus_name, None, Duration::from_secs(240))
            .await?;
    let version = ready["status"]["activeIndex"]["version"]
        .as_str()
        .context("no active version")?
        .to_string();

    let label = trellis::operator::label_value(&corpus_name);
    let pods: Api<Pod> = Api::namespaced(client.clone(), LONG_NS);
    let ingest_pods = pods
        .list(&ListParams::default().labels(&format!("trellis.dev/corpus={label}")))
        .await?
        .items;
    ensure!(
        !ingest_pods.is_empty(),
        "no ingest pod carries the label {label}"
    );
    for pod in &ingest_pods {
        let qos = pod.status.as_ref().and_then(|s| s.qos_class.as_deref());
        ensure!(
            qos == Some("Burstable"),
            "ingest pod {} is {qos:?}",
            pod.name_any()
        );
        // The chart's `podResources`, as the suite installed it.
        let cpu = pod
            .spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .and_then(|c| c.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("cpu"))
            .map(|q| q.0.clone());
        ensure!(
            cpu.as_deref() == Some("100m"),
            "ingest pod {} requests {cpu:?} CPU, not the chart's podResources.ingest",
            pod.name_any()
        );
    }

    let mut route = quickstart("RetrievalRoute")?.remove(0);
    route["metadata"]["name"] = json!(route_name);
    route["spec"]["corpusRef"]["name"] = json!(corpus_name);
    route["spec"]["serving"]["replicas"] = json!(1);
    super::corpus::put(world, LONG_NS, &route).await?;
    wait_for(
        "the long-named route to serve",
        Duration::from_secs(240),
        || async {
            let route =
                support::trellis_object(client, LONG_NS, "retrievalroutes", &route_name).await?;
            let served = route["status"]["servedVersion"].as_str() == Some(version.as_str());
            let available =
                support::condition(&route, "Available").is_some_and(|(s, _)| s == "True");
            Ok((served && available).then_some(()))
        },
    )
    .await?;
    let service = trellis::operator::deployment::workload_name(&route_name);
    ensure!(service.len() <= 63, "Service name {service} is too long");
    let endpoints = wait_for("a ready endpoint", Duration::from_secs(60), || async {
        let ready = support::ready_endpoints(client, LONG_NS, &service).await?;
        Ok((!ready.is_empty()).then_some(ready))
    })
    .await?;
    let answer = support::retrieve(&world.http, &endpoints[0], super::corpus::QUERY).await?;
    ensure!(
        answer["index_version"] == version.as_str(),
        "answered from {}",
        answer["index_version"]
    );
    let serving = pods
        .list(&ListParams::default().labels(&format!(
            "trellis.dev/route={}",
            trellis::operator::label_value(&route_name)
        )))
        .await?
        .items;
    ensure!(
        serving
            .iter()
            .all(|p| p.status.as_ref().and_then(|s| s.qos_class.as_deref()) == Some("Burstable")),
        "a retrieval pod is not Burstable"
    );

    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let operator_budgets = budgets
        .list(&ListParams::default().labels("app.kubernetes.io/component=operator"))
        .await?
        .items;
    ensure!(
        operator_budgets.len() == 1,
        "the operator has {} disruption budgets",
        operator_budgets.len()
    );
    Ok(())
}
