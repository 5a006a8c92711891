//! kstatus on the real control plane: a route whose new pods can never
//! start (an env var from a Secret that does not exist) passes its
//! progress deadline while its old pod keeps serving, and reports
//! `Stalled` and `Ready=False`, not healthy; paused and then edited it is
//! suspended; fixed, it is Ready again. Its generator is down all along:
//! the route says so (`GeneratorReachable=False`) and stays Ready, its
//! pods answer `/v1/answer` with 503 and go on serving `/v1/retrieve`. Each state is kept as a sample for
//! the Argo CD health checks, which the test command runs on them.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use super::corpus::{QUERY, claim_corpus, put, quickstart, ready_corpus, stage};
use crate::World;
use crate::support::{self, wait_for};

const NS: &str = "e2e-health";
const NAME: &str = "quickstart";

fn is(object: &Value, kind: &str, status: &str) -> bool {
    support::condition(object, kind).is_some_and(|(s, _)| s == status)
}

async fn route(world: &World) -> Result<Value> {
    support::trellis_object(&world.cluster.admin, NS, "retrievalroutes", NAME).await
}

pub async fn stuck_rollout(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    stage(world, NS).await?;
    put(world, NS, &claim_corpus()?).await?;
    let corpus = ready_corpus(world, NS, NAME, None, Duration::from_secs(240)).await?;
    ensure!(
        is(&corpus, "Ready", "True") && support::condition(&corpus, "Stalled").is_none(),
        "a Ready Corpus: {:?}",
        corpus["status"]["conditions"]
    );
    support::health_sample("corpus-ready", &corpus, "Healthy")?;
    let profile = support::trellis_object(client, NS, "indexprofiles", NAME).await?;
    ensure!(is(&profile, "Ready", "True"), "the profile is not Ready");
    support::health_sample("profile-ready", &profile, "Healthy")?;

    let mut spec = quickstart("RetrievalRoute")?.remove(0);
    spec["spec"]["serving"]["replicas"] = json!(1);
    spec["spec"]["serving"]["progressDeadlineSeconds"] = json!(15);
    // Nothing listens on port 9, from the operator or from the pods.
    spec["spec"]["generation"] = json!({
        "provider": "openai",
        "model": "absent",
        "endpoint": "http://127.0.0.1:9",
        "maxRetries": 0
    });
    put(world, NS, &spec).await?;
    let ready = wait_for(
        "the route to be Ready",
        Duration::from_secs(240),
        || async {
            let route = route(world).await?;
            Ok(
                (is(&route, "Ready", "True") && route["status"]["servedVersion"].is_string())
                    .then_some(route),
            )
        },
    )
    .await?;
    support::health_sample("route-ready", &ready, "Healthy")?;
    let generator = support::condition(&ready, "GeneratorReachable");
    ensure!(
        matches!(&generator, Some((s, r)) if s == "False" && r == "GeneratorUnreachable"),
        "the route does not say its generator is down: {:?}",
        ready["status"]["conditions"]
    );
    ensure!(
        is(&ready, "Available", "True"),
        "an unreachable generator made the route unavailable"
    );
    let endpoints = support::ready_endpoints(client, NS, "quickstart-retrieval").await?;
    let address = endpoints.first().context("no ready pod")?;
    let answer = world
        .http
        .post(format!("http://{address}:8080/v1/answer"))
        .json(&json!({"query": QUERY}))
        .send()
        .await?;
    let status = answer.status().as_u16();
    let body: Value = answer.json().await.unwrap_or(Value::Null);
    ensure!(
        status == 503 && body["error"]["code"] == "generator_unavailable",
        "/v1/answer with the generator down: {status} {body}"
    );
    support::retrieve(&world.http, address, QUERY).await?;

    // New pods that cannot start: the old one serves on (surge, never
    // below the replica count) and the rollout passes its deadline.
    support::merge_trellis(
        client,
        NS,
        "retrievalroutes",
        NAME,
        json!({"spec": {"serving": {"template": {"env": [{
            "name": "NEVER_THERE",
            "valueFrom": {"secretKeyRef": {"name": "absent", "key": "k"}}
        }]}}}}),
    )
    .await?;
    let stalled = wait_for(
        "the route to report the stuck rollout",
        Duration::from_secs(120),
        || async {
            let route = route(world).await?;
            let stuck = support::condition(&route, "Stalled")
                .is_some_and(|(s, r)| s == "True" && r == "ProgressDeadlineExceeded");
            Ok(stuck.then_some(route))
        },
    )
    .await?;
    ensure!(
        is(&stalled, "Ready", "False") && is(&stalled, "Available", "True"),
        "a stuck rollout over a serving pod: {:?}",
        stalled["status"]["conditions"]
    );
    let endpoints = support::ready_endpoints(client, NS, "quickstart-retrieval").await?;
    let address = endpoints.first().context("the old pod stopped serving")?;
    support::retrieve(&world.http, address, QUERY).await?;
    support::health_sample("route-stalled", &stalled, "Degraded")?;
    support::expect_event(client, NS, NAME, "ProgressDeadlineExceeded").await?;

    // Paused, then edited: suspended, whatever the generation says.
    support::merge_trellis(
        client,
        NS,
        "retrievalroutes",
        NAME,
        json!({"metadata": {"annotations": {"trellis.dev/paused": "true"}}}),
    )
    .await?;
    wait_for(
        "the route to be paused",
        Duration::from_secs(60),
        || async { Ok(is(&route(world).await?, "Paused", "True").then_some(())) },
    )
    .await?;
    support::merge_trellis(
        client,
        NS,
        "retrievalroutes",
        NAME,
        json!({"spec": {"selection": {"topK": 4}}}),
    )
    .await?;
    let paused = route(world).await?;
    ensure!(
        paused["status"]["observedGeneration"] != paused["metadata"]["generation"],
        "a paused route observed an edit"
    );
    support::health_sample("route-paused-edited", &paused, "Suspended")?;

    // Unpaused and fixed: Ready again, nothing stalled.
    support::merge_trellis(
        client,
        NS,
        "retrievalroutes",
        NAME,
        json!({
            "metadata": {"annotations": {"trellis.dev/paused": null}},
            "spec": {"serving": {"template": null}}
        }),
    )
    .await?;
    let recovered = wait_for("the route to recover", Duration::from_secs(240), || async {
        let route = route(world).await?;
        let current = route["status"]["observedGeneration"] == route["metadata"]["generation"];
        let ok = current
            && is(&route, "Ready", "True")
            && support::condition(&route, "Stalled").is_none()
            && support::condition(&route, "Reconciling").is_none();
        Ok(ok.then_some(route))
    })
    .await?;
    support::health_sample("route-recovered", &recovered, "Healthy")?;
    Ok(())
}
