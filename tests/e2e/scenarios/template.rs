//! Pod templates and Secret references: a Corpus and a route whose pods
//! carry a team's labels, scheduling, env and volumes, and whose profile
//! embeds with an OpenAI-style service that wants a key from a Secret.
//! The ingest pods send the key with every document batch, the retrieval
//! pods with every query: both get the Secret the version's profile
//! names, and a rotated key rolls the retrieval pods onto it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::corpus::{DOCUMENTS_CLAIM, QUERY, put, ready_corpus, stage};
use crate::World;
use crate::cluster::GATEWAY;
use crate::nodes::{DEDICATED_NODE, POOL_LABEL, TAINT_KEY, TAINT_VALUE};
use crate::support::{self, wait_for};

const NS: &str = "e2e-template";
const PRIORITY_CLASS: &str = "e2e-rag-batch";
const API_KEY: &str = "sk-e2e-from-a-secret";
const ROTATED_KEY: &str = "sk-e2e-rotated";

/// What the embedding double was asked: the bearer token of each request
/// and how many texts it carried.
#[derive(Default)]
struct Seen {
    requests: Vec<(Option<String>, usize)>,
}

/// A test double of an OpenAI-style `/v1/embeddings` endpoint on the pods'
/// gateway: 16-dimension vectors derived from a hash of each text (no
/// meaning; the scenario checks the wiring, not the ranking).
async fn embedding_double() -> Result<(String, Arc<Mutex<Seen>>)> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let listener = tokio::net::TcpListener::bind((GATEWAY, 0)).await?;
    let address = listener.local_addr()?;
    let app = axum::Router::new()
        .route("/v1/embeddings", post(embed))
        .with_state(seen.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((format!("http://{address}"), seen))
}

async fn embed(
    State(seen): State<Arc<Mutex<Seen>>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    let texts: Vec<String> = match &body["input"] {
        Value::String(text) => vec![text.clone()],
        Value::Array(items) => items
            .iter()
            .map(|t| t.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => Vec::new(),
    };
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    if let Ok(mut seen) = seen.lock() {
        seen.requests.push((bearer, texts.len()));
    }
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let hash = blake3::hash(text.as_bytes());
            let vector: Vec<f32> = hash.as_bytes()[..16]
                .iter()
                .map(|&b| f32::from(b) / 127.5 - 1.0)
                .collect();
            json!({"object": "embedding", "index": i, "embedding": vector})
        })
        .collect();
    Json(json!({"object": "list", "data": data, "model": "e2e-double"}))
}

/// A template with every kind of addition, as a team writes one.
fn template() -> Value {
    json!({
        "metadata": {
            "labels": {"team": "search"},
            "annotations": {"example.com/cost-center": "42"}
        },
        // The dedicated node: its label selects it, its taint lets only
        // pods with the toleration below on.
        "nodeSelector": {POOL_LABEL: TAINT_VALUE},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "rag", "effect": "NoSchedule"}],
        "priorityClassName": PRIORITY_CLASS,
        "imagePullSecrets": [{"name": "team-registry"}],
        "env": [{"name": "TEAM_TOKEN", "valueFrom": {"secretKeyRef": {"name": "team", "key": "token"}}}],
        "envFrom": [{"configMapRef": {"name": "team-settings"}}],
        "volumes": [{"name": "corporate-ca", "configMap": {"name": "team-settings"}}],
        "volumeMounts": [{"name": "corporate-ca", "mountPath": "/etc/ssl/corporate", "readOnly": true}]
    })
}

/// The pods with `selector` carry the template, and the API server gave
/// them the PriorityClass' value.
async fn templated(pods: &Api<Pod>, selector: &str, priority: i32) -> Result<usize> {
    let items = pods
        .list(&ListParams::default().labels(selector))
        .await?
        .items;
    ensure!(!items.is_empty(), "no pod matches {selector}");
    for pod in &items {
        let name = pod.name_any();
        ensure!(
            pod.labels().get("team").map(String::as_str) == Some("search"),
            "{name} lacks the template's label"
        );
        ensure!(
            pod.labels()
                .get("app.kubernetes.io/name")
                .map(String::as_str)
                == Some("trellis"),
            "{name} lost the operator's label"
        );
        ensure!(
            pod.annotations().contains_key("example.com/cost-center"),
            "{name} lacks the template's annotation"
        );
        let spec = pod.spec.as_ref().context("no pod spec")?;
        ensure!(
            spec.priority == Some(priority),
            "{name}: priority {:?}, want {priority} from {PRIORITY_CLASS}",
            spec.priority
        );
        ensure!(
            spec.image_pull_secrets
                .iter()
                .flatten()
                .any(|r| r.name == "team-registry"),
            "{name} lacks the template's image pull secret"
        );
        ensure!(
            spec.tolerations
                .iter()
                .flatten()
                .any(|t| t.key.as_deref() == Some(TAINT_KEY)),
            "{name} lacks the template's toleration"
        );
        // The scheduler placed it by the selector and the toleration.
        ensure!(
            spec.node_name.as_deref() == Some(DEDICATED_NODE),
            "{name} ran on {:?}, not the dedicated node {DEDICATED_NODE}",
            spec.node_name
        );
        let container = spec.containers.first().context("no container")?;
        ensure!(
            container
                .volume_mounts
                .iter()
                .flatten()
                .any(|m| m.mount_path == "/etc/ssl/corporate"),
            "{name} lacks the template's mount"
        );
    }
    Ok(items.len())
}

pub async fn templates_and_secrets(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let (endpoint, seen) = embedding_double().await?;
    stage(world, NS).await?;
    let classes: Api<PriorityClass> = Api::all(client.clone());
    let class: PriorityClass = serde_json::from_value(json!({
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": PRIORITY_CLASS},
        "value": 1000,
        "description": "e2e: template priority"
    }))?;
    if classes.get_opt(PRIORITY_CLASS).await?.is_none() {
        classes.create(&PostParams::default(), &class).await?;
    }
    let result = run(world, &endpoint, &seen).await;
    let _ = classes
        .delete(PRIORITY_CLASS, &DeleteParams::default())
        .await;
    result
}

async fn run(world: &World, endpoint: &str, seen: &Arc<Mutex<Seen>>) -> Result<()> {
    let client = &world.cluster.admin;
    support::apply_all(
        client,
        NS,
        &format!(
            r#"
apiVersion: v1
kind: Secret
metadata:
  name: provider-key
stringData:
  api-key: {API_KEY}
---
apiVersion: v1
kind: Secret
metadata:
  name: team
stringData:
  token: team-secret
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: team-settings
data:
  TEAM_REGION: eu-west
"#
        ),
    )
    .await?;
    put(
        world,
        NS,
        &json!({
            "apiVersion": "trellis.dev/v1alpha1",
            "kind": "IndexProfile",
            "metadata": {"name": "remote"},
            "spec": {"embedding": {
                "provider": "openai",
                "model": "e2e-double",
                "endpoint": endpoint,
                "apiKeySecretRef": {"name": "provider-key", "key": "api-key"}
            }}
        }),
    )
    .await?;
    put(
        world,
        NS,
        &json!({
            "apiVersion": "trellis.dev/v1alpha1",
            "kind": "Corpus",
            "metadata": {"name": "templated"},
            "spec": {
                "profileRef": {"name": "remote"},
                "sources": [{"pvc": {"claimName": DOCUMENTS_CLAIM}}],
                "include": ["**/*.md", "**/*.txt"],
                "acl": ["public"],
                "ingest": {"template": template()}
            }
        }),
    )
    .await?;
    let corpus = ready_corpus(world, NS, "templated", None, Duration::from_secs(240)).await?;
    let active = &corpus["status"]["activeIndex"];
    ensure!(
        active["secrets"] == json!(["provider-key"]),
        "the version's status names {} as its Secrets",
        active["secrets"]
    );
    let version = active["version"]
        .as_str()
        .context("no version")?
        .to_string();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let ingest_pods = templated(&pods, "trellis.dev/corpus=templated", 1000).await?;
    let documents = {
        let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        ensure!(!seen.requests.is_empty(), "the ingest never embedded");
        let bad: Vec<_> = seen
            .requests
            .iter()
            .filter(|(bearer, _)| bearer.as_deref() != Some(&format!("Bearer {API_KEY}")))
            .collect();
        ensure!(bad.is_empty(), "requests without the Secret's key: {bad:?}");
        seen.requests.len()
    };

    put(
        world,
        NS,
        &json!({
            "apiVersion": "trellis.dev/v1alpha1",
            "kind": "RetrievalRoute",
            "metadata": {"name": "templated"},
            "spec": {
                "corpusRef": {"name": "templated"},
                "serving": {"replicas": 1, "template": template()}
            }
        }),
    )
    .await?;
    let service = trellis::operator::deployment::workload_name("templated");
    let endpoints = wait_for("the route to serve", Duration::from_secs(240), || async {
        let route = support::trellis_object(client, NS, "retrievalroutes", "templated").await?;
        let served = route["status"]["servedVersion"].as_str() == Some(version.as_str());
        let ready = support::ready_endpoints(client, NS, &service).await?;
        Ok((served && !ready.is_empty()).then_some(ready))
    })
    .await?;
    let retrieval_pods = templated(&pods, "trellis.dev/route=templated", 1000).await?;
    let answer = support::retrieve(&world.http, &endpoints[0], QUERY).await?;
    ensure!(
        answer["index_version"] == version.as_str(),
        "answered from {}",
        answer["index_version"]
    );
    let queries = {
        let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        let queries = &seen.requests[documents..];
        ensure!(
            !queries.is_empty(),
            "the retrieval pod answered without embedding the query"
        );
        ensure!(
            queries
                .iter()
                .all(|(bearer, _)| bearer.as_deref() == Some(&format!("Bearer {API_KEY}"))),
            "a query embedding went without the Secret's key: {queries:?}"
        );
        queries.len()
    };
    eprintln!(
        "e2e:   {ingest_pods} ingest and {retrieval_pods} retrieval pods templated; {documents} \
         document and {queries} query requests carried the Secret's key"
    );

    // A rotated key rolls the retrieval pods, which read it at start; the
    // queries then carry the new one.
    support::apply_all(
        client,
        NS,
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: provider-key\nstringData:\n  api-key: {ROTATED_KEY}\n"
        ),
    )
    .await?;
    let mut attempt = 0;
    wait_for(
        "queries to carry the rotated key",
        Duration::from_secs(180),
        || {
            attempt += 1;
            // A new text each time: a cached query embedding asks nothing.
            let query = format!("{QUERY} (attempt {attempt})");
            let service = &service;
            async move {
                for endpoint in support::ready_endpoints(client, NS, service).await? {
                    let _ = support::retrieve(&world.http, &endpoint, &query).await;
                }
                let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
                let last = seen.requests.last().and_then(|(bearer, _)| bearer.clone());
                Ok((last.as_deref() == Some(&format!("Bearer {ROTATED_KEY}"))).then_some(()))
            }
        },
    )
    .await?;
    support::expect_event(client, NS, "templated", "NewTemplate").await?;
    Ok(())
}
