//! The chart and the manifests users apply.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::discovery::Discovery;
use kube::{Api, ResourceExt};
use serde_json::Value;

use crate::cluster::repo;
use crate::support::{self, Apply, wait_for};
use crate::{IMAGE_REPOSITORY, IMAGE_TAG, OPERATOR_NAMESPACE, World};

/// `helm install` of charts/trellis with its defaults (two replicas,
/// leader election, cluster-wide RBAC) waits for the operator Deployment;
/// then exactly one replica holds the Lease.
pub async fn install(world: &World) -> Result<()> {
    let repository = format!("image.repository={IMAGE_REPOSITORY}");
    let tag = format!("image.tag={IMAGE_TAG}");
    let output = world
        .cluster
        .helm(&[
            "install",
            "trellis",
            "charts/trellis",
            "--namespace",
            OPERATOR_NAMESPACE,
            "--create-namespace",
            "--set",
            &repository,
            "--set",
            &tag,
            "--wait",
            "--timeout",
            "300s",
        ])
        .await?;
    if !output.status.success() {
        bail!(
            "helm install failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let client = &world.cluster.admin;
    let pods: Api<Pod> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let operators = pods
        .list(&ListParams::default().labels("app.kubernetes.io/name=trellis"))
        .await?
        .items;
    ensure!(
        operators.len() == 2,
        "expected the chart's 2 operator pods, found {:?}",
        support::names(&operators)
    );
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let holder = wait_for("the leader Lease", Duration::from_secs(60), || async {
        Ok(leases
            .get_opt("trellis-operator")
            .await?
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
            .and_then(|h| h.rsplit_once('_').map(|(pod, _)| pod.to_string())))
    })
    .await?;
    ensure!(
        operators.iter().any(|p| p.name_any() == holder),
        "the Lease is held by {holder:?}, not an operator pod"
    );
    Ok(())
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
    support::namespace(client, ns).await?;
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
