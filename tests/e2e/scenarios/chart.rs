//! The chart and the manifests users apply.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use kube::discovery::Discovery;
use serde_json::Value;

use crate::cluster::repo;
use crate::support::{self, Apply, wait_for};
use crate::{OPERATOR_NAMESPACE, PULL_SECRET, World};

/// Runs helm with `args`, failing with its output.
pub async fn helm(world: &World, args: &[&str]) -> Result<()> {
    let output = world.cluster.helm(args).await?;
    if !output.status.success() {
        bail!(
            "helm {} failed: {}{}",
            args.first().copied().unwrap_or_default(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// What the suite's chart gives pods whose Corpus or route asks for
/// nothing (`podResources`): two kubelets on one 2-core machine hold the
/// pods of every scenario at once, which the chart's defaults (a CPU per
/// ingest shard) would not fit.
pub const POD_RESOURCES: &str = r#"{"ingest": {"requests": {"cpu": "100m", "memory": "128Mi"}}, "retrieval": {"requests": {"cpu": "50m", "memory": "128Mi"}}}"#;

/// Which build's image a release runs.
#[derive(Clone, Copy, Debug)]
pub enum Build {
    Current,
    Previous,
}

impl Build {
    fn digest(self, world: &World) -> &str {
        match self {
            Build::Current => &world.images.current,
            Build::Previous => &world.images.previous,
        }
    }

    /// `REGISTRY/trellis@sha256:…`.
    pub fn image(self, world: &World) -> String {
        world.images.reference(self.digest(world))
    }
}

/// `helm install` (or `upgrade`) of `chart` running `build`'s image,
/// pinned by digest and pulled with the registry's Secret, waiting for
/// the operator Deployment (`--wait`).
pub async fn helm_release(world: &World, verb: &str, chart: &str, build: Build) -> Result<()> {
    let digest = build.digest(world);
    let image = match build {
        Build::Current => vec![
            format!("image.repository={}", world.images.repository),
            format!("image.digest={digest}"),
        ],
        // The previous release's chart has no `image.digest`; its image
        // is `REPOSITORY:TAG`, which these make `REPOSITORY@sha256:HEX`.
        Build::Previous => vec![
            format!("image.repository={}@sha256", world.images.repository),
            format!(
                "image.tag={}",
                digest.strip_prefix("sha256:").unwrap_or(digest)
            ),
        ],
    };
    let pull = format!("imagePullSecrets[0].name={PULL_SECRET}");
    let resources = format!("podResources={POD_RESOURCES}");
    let mut args = vec![
        verb,
        "trellis",
        chart,
        "--namespace",
        OPERATOR_NAMESPACE,
        "--set",
        &pull,
        "--wait",
        "--timeout",
        "300s",
    ];
    for value in &image {
        args.extend(["--set", value.as_str()]);
    }
    // The previous release's chart has no `podResources`.
    if let Build::Current = build {
        args.extend(["--set-json", resources.as_str()]);
    }
    helm(world, &args).await
}

/// `helm upgrade --reuse-values` of this chart with `flags` (`--set`,
/// `--set-string` and their values), waiting for the operator.
pub async fn helm_reuse(world: &World, flags: &[&str]) -> Result<()> {
    let mut args = vec![
        "upgrade",
        "trellis",
        "charts/trellis",
        "--namespace",
        OPERATOR_NAMESPACE,
        "--reuse-values",
        "--wait",
        "--timeout",
        "300s",
    ];
    args.extend(flags);
    helm(world, &args).await?;
    operator_runs(world, Build::Current).await
}

/// `helm rollback` to the release's previous revision, waiting for the
/// operator.
pub async fn helm_rollback(world: &World) -> Result<()> {
    helm(
        world,
        &[
            "rollback",
            "trellis",
            "--namespace",
            OPERATOR_NAMESPACE,
            "--wait",
            "--timeout",
            "300s",
        ],
    )
    .await?;
    operator_runs(world, Build::Current).await
}

/// The pod whose process holds the leader Lease (identities are
/// `POD_PROCESS`).
pub async fn lease_holder(world: &World) -> Result<Option<String>> {
    let leases: Api<Lease> = Api::namespaced(world.cluster.admin.clone(), OPERATOR_NAMESPACE);
    Ok(leases
        .get_opt("trellis-operator")
        .await?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .and_then(|h| h.rsplit_once('_').map(|(pod, _)| pod.to_string())))
}

/// The chart's two operator pods run `build`'s image, and one of them
/// holds the Lease.
pub async fn operator_runs(world: &World, build: Build) -> Result<()> {
    let image = build.image(world);
    let pods: Api<Pod> = Api::namespaced(world.cluster.admin.clone(), OPERATOR_NAMESPACE);
    let operators = wait_for(
        "two operator pods of the release",
        Duration::from_secs(120),
        || async {
            let list = pods
                .list(&ListParams::default().labels("app.kubernetes.io/name=trellis"))
                .await?
                .items;
            let current = list.iter().all(|p| {
                p.spec.as_ref().is_some_and(|s| {
                    s.containers
                        .iter()
                        .all(|c| c.image.as_deref() == Some(image.as_str()))
                }) && p.metadata.deletion_timestamp.is_none()
            });
            Ok((current && list.len() == 2).then_some(list))
        },
    )
    .await?;
    let names = support::names(&operators);
    wait_for("the leader Lease", Duration::from_secs(60), || async {
        let holder = lease_holder(world).await?;
        Ok(holder.filter(|h| names.contains(h)))
    })
    .await?;
    Ok(())
}

/// `helm uninstall` leaves the CRDs and the resources users made (the
/// CRDs carry `helm.sh/resource-policy: keep`); a fresh `helm install` of
/// this chart takes them over and its operator runs.
pub async fn reinstall(world: &World) -> Result<()> {
    helm(
        world,
        &[
            "uninstall",
            "trellis",
            "--namespace",
            OPERATOR_NAMESPACE,
            "--wait",
        ],
    )
    .await?;
    let client = &world.cluster.admin;
    let corpus = support::trellis_object(client, super::corpus::NS, "corpora", "quickstart")
        .await
        .context("the Corpus did not survive the uninstall")?;
    ensure!(
        corpus["status"]["phase"] == "Ready",
        "the Corpus is {} after the uninstall",
        corpus["status"]["phase"]
    );
    helm_release(world, "install", "charts/trellis", Build::Current).await?;
    operator_runs(world, Build::Current).await
}

/// The CRDs under crds/ apply server-side, every example manifest applies
/// with strict field validation (a dry run: nothing is reconciled), and
/// the real API server's CEL rules refuse the invalid manifests with the
/// messages the CRD tests expect.
pub async fn manifests(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    let discovery = Discovery::new(client.clone()).run().await?;
    let strict = Apply {
        dry_run: false,
        strict: true,
    };
    let mut crds = 0;
    for entry in std::fs::read_dir(repo().join("crds"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path)?;
            for doc in support::documents(&text)? {
                support::apply(client, &discovery, "default", &doc, strict)
                    .await
                    .with_context(|| format!("{}", path.display()))?;
                crds += 1;
            }
        }
    }
    ensure!(crds == 3, "expected 3 CRDs under crds/, applied {crds}");

    let ns = "e2e-examples";
    support::namespace(world, ns).await?;
    let discovery = Discovery::new(client.clone()).run().await?;
    let dry = Apply {
        dry_run: true,
        strict: true,
    };
    let mut files = Vec::new();
    yaml_files(&repo().join("examples"), &mut files)?;
    let (mut applied, mut skipped) = (0, Vec::new());
    for path in files {
        let text = std::fs::read_to_string(&path)?;
        for mut doc in support::documents(&text)? {
            // Into the scenario's namespace, whatever the example names.
            if let Some(meta) = doc["metadata"].as_object_mut() {
                meta.remove("namespace");
            }
            let kind = doc["kind"].as_str().unwrap_or_default().to_string();
            let api_version = doc["apiVersion"].as_str().unwrap_or_default().to_string();
            if kind.is_empty() || api_version.is_empty() {
                continue;
            }
            let served = discovery.groups().any(|g| {
                g.name() == api_version.split_once('/').map_or("", |(g, _)| g)
                    && g.recommended_resources()
                        .iter()
                        .any(|(r, _)| r.kind == kind)
            });
            if !served {
                // Argo CD and Flux objects: their CRDs are not part of
                // this cluster.
                skipped.push(format!("{api_version} {kind}"));
                continue;
            }
            support::apply(client, &discovery, ns, &doc, dry)
                .await
                .with_context(|| path.display().to_string())?;
            applied += 1;
        }
    }
    skipped.sort();
    skipped.dedup();
    eprintln!(
        "e2e:   {applied} example objects applied (strict, dry run); kinds not served here: {}",
        skipped.join(", ")
    );
    ensure!(applied >= 10, "only {applied} example objects applied");

    let invalid: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(
        repo().join("tests/fixtures/crds/invalid.json"),
    )?)?;
    let mut wrong = Vec::new();
    for case in &invalid {
        let manifest = &case["manifest"];
        let expected = case["server"].as_str().unwrap_or_default();
        match support::apply(client, &discovery, ns, manifest, dry).await {
            Ok(_) => wrong.push(format!("accepted: {manifest}")),
            Err(e) => {
                let message = format!("{e:#}");
                if !message.contains(expected) {
                    wrong.push(format!("refused without {expected:?}: {message}"));
                }
            }
        }
    }
    ensure!(wrong.is_empty(), "{}", wrong.join("\n"));
    ensure!(
        invalid.len() >= 6,
        "only {} invalid manifests",
        invalid.len()
    );
    Ok(())
}

fn yaml_files(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            yaml_files(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            found.push(path);
        }
    }
    Ok(())
}
