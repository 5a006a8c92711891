//! Writes of the operator's that the API server refuses for what they
//! hold: a quota that admits no Job, an admission policy that refuses the
//! route's Deployment. Each reaches the object's status (`Ready=False`,
//! `Stalled=True`, reason `ApplyFailed`, the server's message) with a
//! Warning Event, and lifting it lets the object reach its spec. The route
//! is named `docs.v2`: the Service made for it must be a DNS-1035 label,
//! which a name with a dot is not; and a disruption budget of the same
//! name that the platform team made stays, as the route does not own it.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ResourceQuota;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::corpus::{CORPUS, QUERY, claim_corpus, put, quickstart, ready_corpus, stage};
use crate::World;
use crate::support::{self, wait_for};

const NS: &str = "e2e-refused";
const QUOTA: &str = "no-jobs";
const POLICY: &str = "e2e-no-deployments";
const POLICY_MESSAGE: &str = "Deployments here need the platform team's approval";
const ROUTE: &str = "docs.v2";

/// Waits until `plural`/`name` says `Ready=False` and `Stalled=True` for
/// `ApplyFailed`, with a message holding `says`, and a Warning Event.
async fn refused(world: &World, plural: &str, name: &str, says: &str) -> Result<()> {
    let client = &world.cluster.admin;
    let object = wait_for(
        &format!("{plural}/{name} to say ApplyFailed"),
        Duration::from_secs(120),
        || async {
            let object = support::trellis_object(client, NS, plural, name).await?;
            let stalled = support::condition(&object, "Stalled")
                .is_some_and(|(s, r)| s == "True" && r == "ApplyFailed");
            Ok(stalled.then_some(object))
        },
    )
    .await?;
    let (status, reason) = support::condition(&object, "Ready").context("no Ready condition")?;
    ensure!(
        status == "False" && reason == "ApplyFailed",
        "Ready is {status} {reason}"
    );
    let message = support::condition_message(&object, "Ready");
    ensure!(
        message.contains("the API server refused") && message.contains(says),
        "the message does not quote the refusal: {message}"
    );
    eprintln!("e2e:   {plural}/{name}: {message}");
    support::expect_event(client, NS, name, "ApplyFailed").await
}

/// An edit wakes the object at once, rather than at its next retry.
async fn touch(world: &World, plural: &str, name: &str) -> Result<()> {
    let patch = json!({"metadata": {"annotations": {"e2e.trellis.dev/touched": name}}});
    support::trellis_api(&world.cluster.admin, NS, plural)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// A quota of no Jobs: the ingest Job is refused, the Corpus says so;
/// the quota gone, it ingests.
pub async fn quota_refuses_the_ingest(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    stage(world, NS).await?;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), NS);
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": QUOTA},
        "spec": {"hard": {"count/jobs.batch": "0"}},
    }))?;
    quotas.create(&PostParams::default(), &quota).await?;
    // Admission counts against the quota once its controller has.
    wait_for(
        "the quota to be counted",
        Duration::from_secs(60),
        || async {
            let quota = quotas.get(QUOTA).await?;
            Ok(quota.status.and_then(|s| s.hard).map(|_| ()))
        },
    )
    .await?;
    put(world, NS, &claim_corpus()?).await?;
    refused(world, "corpora", CORPUS, "exceeded quota").await?;

    quotas.delete(QUOTA, &DeleteParams::default()).await?;
    touch(world, "corpora", CORPUS).await?;
    let ready = ready_corpus(world, NS, CORPUS, None, Duration::from_secs(240)).await?;
    ensure!(
        support::condition(&ready, "Stalled").is_none(),
        "the Corpus is still Stalled once it ingested"
    );
    Ok(())
}

/// A `ValidatingAdmissionPolicy` (built into kube-apiserver) refuses
/// every Deployment of the namespace: the route says so; the policy gone,
/// `docs.v2` serves through its Service.
pub async fn policy_refuses_the_route(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": {"name": POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"],
            }]},
            "validations": [{"expression": "false", "message": POLICY_MESSAGE}],
        },
    }))?;
    let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
        "metadata": {"name": POLICY},
        "spec": {
            "policyName": POLICY,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": NS},
            }},
        },
    }))?;
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    policies.create(&PostParams::default(), &policy).await?;
    bindings.create(&PostParams::default(), &binding).await?;
    let outcome = refused_then_served(world).await;
    // Gone whatever happened, for the scenarios after.
    let _ = bindings.delete(POLICY, &DeleteParams::default()).await;
    let _ = policies.delete(POLICY, &DeleteParams::default()).await;
    outcome
}

async fn refused_then_served(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    // The API server enforces a policy once its informer has it: a
    // Deployment sent as a dry run is refused from then on.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let probe: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "probe"},
        "spec": {
            "selector": {"matchLabels": {"app": "probe"}},
            "template": {
                "metadata": {"labels": {"app": "probe"}},
                "spec": {"containers": [{"name": "probe", "image": "probe"}]},
            },
        },
    }))?;
    let admitted = || async {
        let dry_run = PostParams {
            dry_run: true,
            ..Default::default()
        };
        deployments.create(&dry_run, &probe).await.is_ok()
    };
    wait_for("the policy to apply", Duration::from_secs(60), || async {
        Ok((!admitted().await).then_some(()))
    })
    .await?;

    // The platform team's own budget, under the name the route's would
    // have: a route of one replica plans none, and must not take it.
    let service = trellis::operator::deployment::workload_name(ROUTE);
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), NS);
    let budget: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": service},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"team": "platform"}}},
    }))?;
    budgets.create(&PostParams::default(), &budget).await?;

    let mut route: Value = quickstart("RetrievalRoute")?.remove(0);
    route["metadata"]["name"] = json!(ROUTE);
    route["spec"]["serving"]["replicas"] = json!(1);
    put(world, NS, &route).await?;
    refused(world, "retrievalroutes", ROUTE, POLICY_MESSAGE).await?;

    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    bindings.delete(POLICY, &DeleteParams::default()).await?;
    wait_for("the policy to lift", Duration::from_secs(60), || async {
        Ok(admitted().await.then_some(()))
    })
    .await?;
    touch(world, "retrievalroutes", ROUTE).await?;
    wait_for("the route to serve", Duration::from_secs(240), || async {
        let route = support::trellis_object(client, NS, "retrievalroutes", ROUTE).await?;
        let available = support::condition(&route, "Available").is_some_and(|(s, _)| s == "True");
        let stalled = support::condition(&route, "Stalled").is_some();
        Ok((available && !stalled).then_some(()))
    })
    .await?;
    ensure!(
        !service.contains('.'),
        "the Service name {service} is not a DNS-1035 label"
    );
    let endpoints = wait_for("a ready endpoint", Duration::from_secs(60), || async {
        let ready = support::ready_endpoints(client, NS, &service).await?;
        Ok((!ready.is_empty()).then_some(ready))
    })
    .await?;
    let answer = support::retrieve(&world.http, &endpoints[0], QUERY).await?;
    ensure!(
        answer["index_version"].is_string(),
        "route {ROUTE} answered without an index version: {answer}"
    );
    eprintln!("e2e:   route {ROUTE} serves through Service {service}");
    ensure!(
        budgets.get_opt(&service).await?.is_some(),
        "the operator removed a disruption budget it does not own"
    );
    Ok(())
}
