//! What the scenarios share: waiting on the cluster, applying YAML the
//! way `kubectl apply --server-side` does, claims with files in them, and
//! calls to retrieval pods.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim, Secret};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::{Discovery, Scope};
use kube::{Api, Client, ResourceExt};
use serde_json::Value;

use crate::{PULL_SECRET, World};

/// The field manager of everything the scenarios apply.
pub const MANAGER: &str = "trellis-e2e";

/// Polls `check` every half second until it gives `Some`, or fails after
/// `timeout` with `what` and the last thing `check` said.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = String::from("nothing yet");
    loop {
        match check().await {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => {}
            Err(e) => last = format!("{e:#}"),
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "timed out after {} s waiting for {what} (last: {last})",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Creates a namespace (fresh: one left from an earlier scenario of the
/// same name is an error) that enforces the Pod Security `restricted`
/// profile, as a platform team's namespaces do, with the registry's pull
/// Secret in it.
pub async fn namespace(world: &World, name: &str) -> Result<()> {
    let client = &world.cluster.admin;
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/enforce-version": "latest",
        }}
    }))?;
    api.create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    pull_secret(world, name, PULL_SECRET).await?;
    // Pods need the namespace's default ServiceAccount, which the
    // controller manager makes.
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), name);
    wait_for(
        "the default ServiceAccount",
        Duration::from_secs(30),
        || async { Ok(accounts.get_opt("default").await?.map(|_| ())) },
    )
    .await
}

/// A `kubernetes.io/dockerconfigjson` Secret with the registry's
/// credentials.
pub async fn pull_secret(world: &World, ns: &str, name: &str) -> Result<()> {
    use base64::Engine;
    let secrets: Api<Secret> = Api::namespaced(world.cluster.admin.clone(), ns);
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson":
            base64::engine::general_purpose::STANDARD.encode(&world.docker_config)},
    }))?;
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .with_context(|| format!("creating the pull Secret {ns}/{name}"))?;
    Ok(())
}

/// The YAML documents of a file or string, empty ones dropped.
pub fn documents(text: &str) -> Result<Vec<Value>> {
    let mut docs = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let value: Value = serde::Deserialize::deserialize(doc)?;
        if !value.is_null() {
            docs.push(value);
        }
    }
    Ok(docs)
}

/// Options of [`apply`].
#[derive(Clone, Copy, Default)]
pub struct Apply {
    pub dry_run: bool,
    /// `fieldValidation=Strict`: an unknown or duplicate field is an error.
    pub strict: bool,
}

/// Server-side applies one object, namespaced ones into `ns` unless they
/// name their own.
pub async fn apply(
    client: &Client,
    discovery: &Discovery,
    ns: &str,
    object: &Value,
    how: Apply,
) -> Result<DynamicObject> {
    let api_version = object["apiVersion"].as_str().context("no apiVersion")?;
    let kind = object["kind"].as_str().context("no kind")?;
    let name = object["metadata"]["name"]
        .as_str()
        .context("no metadata.name")?;
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let (resource, caps) = discovery
        .groups()
        .filter(|g| g.name() == group)
        .flat_map(|g| g.versioned_resources(version))
        .find(|(r, _)| r.kind == kind)
        .ok_or_else(|| anyhow!("the API server does not serve {api_version} {kind}"))?;
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Namespaced => {
            let ns = object["metadata"]["namespace"].as_str().unwrap_or(ns);
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let mut params = PatchParams::apply(MANAGER).force();
    params.dry_run = how.dry_run;
    if how.strict {
        params = params.validation_strict();
    }
    api.patch(name, &params, &Patch::Apply(object))
        .await
        .with_context(|| format!("applying {kind} {name}"))
}

/// Applies every document of `text` into `ns`.
pub async fn apply_all(client: &Client, ns: &str, text: &str) -> Result<()> {
    let discovery = Discovery::new(client.clone()).run().await?;
    for doc in documents(text)? {
        apply(client, &discovery, ns, &doc, Apply::default()).await?;
    }
    Ok(())
}

/// Waits until claim `name` is bound and returns its volume's directory.
pub async fn claim_dir(client: &Client, ns: &str, name: &str) -> Result<PathBuf> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let volume = wait_for(
        &format!("claim {name} to be bound"),
        Duration::from_secs(60),
        || async {
            let claim = claims.get(name).await?;
            let bound = claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
            Ok(claim.spec.and_then(|s| s.volume_name).filter(|_| bound))
        },
    )
    .await?;
    let pv = Api::<PersistentVolume>::all(client.clone())
        .get(&volume)
        .await?;
    let path = pv
        .spec
        .and_then(|s| s.host_path)
        .map(|h| h.path)
        .context("the claim's volume has no host path")?;
    Ok(PathBuf::from(path))
}

/// Copies a directory tree.
pub fn copy_tree(from: &Path, to: &Path) -> Result<usize> {
    let mut copied = 0;
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copied += copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
            copied += 1;
        }
    }
    Ok(copied)
}

/// The addresses of the ready endpoints behind Service `service`.
pub async fn ready_endpoints(client: &Client, ns: &str, service: &str) -> Result<Vec<String>> {
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), ns);
    let selector = format!("kubernetes.io/service-name={service}");
    let mut addresses = Vec::new();
    for slice in slices
        .list(&ListParams::default().labels(&selector))
        .await?
    {
        for endpoint in slice.endpoints {
            let ready = endpoint
                .conditions
                .as_ref()
                .and_then(|c| c.ready)
                .unwrap_or(false);
            if ready {
                addresses.extend(endpoint.addresses);
            }
        }
    }
    addresses.sort();
    Ok(addresses)
}

/// `POST /v1/retrieve` on a retrieval pod; the JSON answer.
pub async fn retrieve(http: &reqwest::Client, address: &str, query: &str) -> Result<Value> {
    let response = http
        .post(format!("http://{address}:8080/v1/retrieve"))
        .json(&serde_json::json!({"query": query, "k": 3}))
        .send()
        .await
        .with_context(|| format!("POST /v1/retrieve to {address}"))?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        bail!("{address} answered {status}: {body}");
    }
    Ok(body)
}

/// An HTTP client for pods: no proxy, short timeouts.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap_or_default()
}

/// The reasons of the Events about object `name` in `ns`.
pub async fn event_reasons(client: &Client, ns: &str, name: &str) -> Result<Vec<String>> {
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), ns);
    Ok(events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .filter_map(|e| e.reason)
        .collect())
}

/// Waits (20 s at most) for an Event with `reason` about the object
/// `name`: the operator publishes Events after it writes the status that
/// a scenario has just seen.
pub async fn expect_event(client: &Client, ns: &str, name: &str, reason: &str) -> Result<()> {
    let what = format!("an Event {reason} about {name}");
    let found = wait_for(&what, Duration::from_secs(20), || async {
        let reasons = event_reasons(client, ns, name).await?;
        Ok(reasons.iter().any(|r| r == reason).then_some(()))
    })
    .await;
    match found {
        Ok(()) => Ok(()),
        Err(e) => {
            let reasons = event_reasons(client, ns, name).await.unwrap_or_default();
            Err(e.context(format!("no {reason} Event among {reasons:?}")))
        }
    }
}

/// A condition's status and reason from an object's `status.conditions`.
pub fn condition(object: &Value, kind: &str) -> Option<(String, String)> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
}

/// A condition's message from an object's `status.conditions` (empty
/// when it has none).
pub fn condition_message(object: &Value, kind: &str) -> String {
    object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == kind)
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The API of one of Trellis' kinds, by its plural, in `ns`.
pub fn trellis_api(client: &Client, ns: &str, plural: &str) -> Api<DynamicObject> {
    let resource = kube::api::ApiResource {
        group: "trellis.dev".into(),
        version: "v1alpha1".into(),
        api_version: "trellis.dev/v1alpha1".into(),
        kind: String::new(),
        plural: plural.into(),
    };
    Api::namespaced_with(client.clone(), ns, &resource)
}

/// An object of one of Trellis' kinds, as JSON.
pub async fn trellis_object(client: &Client, ns: &str, plural: &str, name: &str) -> Result<Value> {
    let object = trellis_api(client, ns, plural)
        .get(name)
        .await
        .with_context(|| format!("getting {plural}/{name}"))?;
    Ok(serde_json::to_value(object)?)
}

/// The version a Corpus' `status.activeIndex` names.
pub async fn active_version(client: &Client, ns: &str, corpus: &str) -> Result<String> {
    let corpus = trellis_object(client, ns, "corpora", corpus).await?;
    corpus["status"]["activeIndex"]["version"]
        .as_str()
        .map(str::to_string)
        .context("the Corpus has no active version")
}

/// Names of the objects of a list.
pub fn names<K: ResourceExt>(items: &[K]) -> Vec<String> {
    items.iter().map(|o| o.name_any()).collect()
}

/// A JSON merge patch of one of Trellis' objects.
pub async fn merge_trellis(
    client: &Client,
    ns: &str,
    plural: &str,
    name: &str,
    patch: Value,
) -> Result<()> {
    trellis_api(client, ns, plural)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("patching {plural}/{name}"))?;
    Ok(())
}

/// Keeps a live object for the Argo CD health check
/// (`scripts/check_health_lua.py`, run by the test command after this
/// suite, reads `target/e2e/health/*.json` and expects `health`).
pub fn health_sample(name: &str, object: &Value, health: &str) -> Result<()> {
    let dir = crate::cluster::repo().join("target/e2e/health");
    std::fs::create_dir_all(&dir)?;
    let sample = serde_json::json!({"kind": object["kind"], "expected": health, "object": object});
    std::fs::write(
        dir.join(format!("{name}.json")),
        serde_json::to_vec_pretty(&sample)?,
    )?;
    Ok(())
}
