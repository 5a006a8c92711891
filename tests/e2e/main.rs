//! The operator end to end, on a real cluster: kube-apiserver,
//! kube-controller-manager, kube-scheduler and etcd, and two nodes of
//! kubelet, containerd and runc (one labelled, one tainted), all built
//! from their Go modules (`scripts/control-plane.sh`). This build's image
//! (`scripts/image.sh`, the Dockerfile's layers around the test build's
//! binary) and the previous release's are pushed to a registry with TLS
//! and a password, and the real Helm chart is installed with helm, pinned
//! by digest and pulling with `imagePullSecrets`. Every test namespace
//! enforces the Pod Security `restricted` profile.
//!
//! Needs root (containerd, runc, cgroups, a network namespace), the
//! cluster's binaries built (`scripts/control-plane.sh build`) and
//! debootstrap, umoci and skopeo; `scripts/test.sh` runs it:
//!
//!   cargo test --test e2e [-- NAME-FILTER...]
//!
//! Scenarios run in order on one cluster; each says what it proves. The
//! run says what it ran on (`e2e nodes: …`) and ends with
//! `e2e: N passed, M failed`, where the scenarios a failed required one
//! kept from running count as failed, and a name filter that matches no
//! scenario is a failure, not an empty pass.

mod cluster;
mod nodes;
mod scenarios;
mod support;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};

use cluster::{Cluster, Registry};
use nodes::Nodes;

/// Where the chart is installed.
pub const OPERATOR_NAMESPACE: &str = "trellis-system";
/// The pull Secret in every test namespace (the chart's
/// `imagePullSecrets`).
pub const PULL_SECRET: &str = "trellis-registry";

/// The two images in the registry, by digest.
#[derive(Clone, Debug)]
pub struct Images {
    /// REGISTRY/trellis
    pub repository: String,
    /// This build's image (`sha256:…`).
    pub current: String,
    /// The previous release's.
    pub previous: String,
}

impl Images {
    /// `REPOSITORY@DIGEST`.
    pub fn reference(&self, digest: &str) -> String {
        format!("{}@{digest}", self.repository)
    }
}

/// What every scenario gets.
pub struct World {
    pub cluster: Cluster,
    pub nodes: Nodes,
    pub http: reqwest::Client,
    /// The previous release's chart directory.
    pub previous_chart: PathBuf,
    pub images: Images,
    /// The `.dockerconfigjson` of the pull Secret.
    pub docker_config: String,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let filters: Vec<String> = args
        .iter()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .cloned()
        .collect();
    // Before the runtime starts any thread.
    if let Err(e) = cluster::isolate() {
        eprintln!("e2e: {e:#}");
        println!("e2e: 0 passed, 1 failed");
        return ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("e2e: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(filters))
}

async fn run(filters: Vec<String>) -> ExitCode {
    let started = Instant::now();
    let selected: Vec<_> = scenarios::all()
        .into_iter()
        .filter(|s| filters.is_empty() || filters.iter().any(|f| s.name.contains(f.as_str())))
        .collect();
    if selected.is_empty() {
        // A filter that names nothing runs nothing: that is no pass.
        eprintln!("e2e: no scenario's name contains any of {filters:?}");
        println!("e2e: 0 passed, 1 failed");
        return ExitCode::FAILURE;
    }
    let root = cluster::repo().join("target/e2e");
    let world = match set_up(&root).await {
        Ok(world) => world,
        Err(e) => {
            eprintln!("e2e: setting up the cluster failed: {e:#}");
            println!("e2e: 0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "e2e: cluster up and images pushed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // What the scenarios ran on, in one line a reader of the log can trust.
    println!(
        "e2e nodes: 2 {}; image {}",
        world.cluster.versions,
        world.images.reference(&world.images.current)
    );

    let mut passed = 0;
    let mut failed = Vec::new();
    let mut scenarios = selected.into_iter();
    while let Some(scenario) = scenarios.next() {
        let begun = Instant::now();
        eprintln!("e2e: {} ...", scenario.name);
        let result = (scenario.run)(&world).await;
        let seconds = begun.elapsed().as_secs_f64();
        match result {
            Ok(()) => {
                passed += 1;
                eprintln!("e2e: {} ... ok ({seconds:.1} s)", scenario.name);
            }
            Err(e) => {
                eprintln!("e2e: {} ... FAILED ({seconds:.1} s): {e:#}", scenario.name);
                failed.push((scenario.name, format!("{e:#}")));
                dump_logs(&world);
                if scenario.required {
                    // The scenarios after it need it: each one not run is
                    // counted failed, so the count says how much was lost.
                    eprintln!("e2e: the scenarios after it need it; stopping");
                    for rest in scenarios.by_ref() {
                        failed.push((
                            rest.name,
                            format!("not run: it needs {:?}, which failed", scenario.name),
                        ));
                    }
                    break;
                }
            }
        }
    }

    let World { cluster, nodes, .. } = world;
    nodes.stop();
    cluster.down().await;
    // Again after the log dumps, so that the tail of a CI log says why.
    for (name, reason) in &failed {
        eprintln!("e2e: failed: {name}: {reason}");
    }
    eprintln!(
        "e2e: finished in {:.1} s; logs under {}",
        started.elapsed().as_secs_f64(),
        root.display()
    );
    println!("e2e: {passed} passed, {} failed", failed.len());
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn set_up(root: &Path) -> Result<World> {
    if root.exists() {
        // A run that was killed may have left its control plane running.
        let _ = std::process::Command::new(cluster::repo().join("scripts/control-plane.sh"))
            .args(["down", "--dir"])
            .arg(root.join("cluster"))
            .output();
        std::fs::remove_dir_all(root)
            .with_context(|| format!("removing the last run's {}", root.display()))?;
    }
    std::fs::create_dir_all(root)?;
    let trellis = PathBuf::from(env!("CARGO_BIN_EXE_trellis"));
    let models = std::env::var_os("TRELLIS_MODEL_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/trellis/models"))
        })
        .context("neither TRELLIS_MODEL_DIR nor HOME is set")?;
    if !models.join("all-MiniLM-L6-v2/model.safetensors").exists() {
        anyhow::bail!(
            "no all-MiniLM-L6-v2 under {} (run scripts/fetch-model.sh)",
            models.display()
        );
    }
    let previous = previous_release()?;
    // Both images while the cluster starts: the Dockerfile's layers around
    // this build's binary and around the previous release's.
    let (current_dir, previous_dir) = (root.join("images/current"), root.join("images/previous"));
    let previous_binary = previous.join("trellis");
    let cluster_dir = root.join("cluster");
    let (current, previous_image, cluster) = tokio::join!(
        build_image(&trellis, &models, &current_dir),
        build_image(&previous_binary, &models, &previous_dir),
        Cluster::up(&cluster_dir),
    );
    let cluster = cluster?;
    let registry = cluster.registry.clone();
    let repository = format!("{}/trellis", registry.host);
    let images = Images {
        current: push(&current?, &registry, &format!("{repository}:e2e")).await?,
        previous: push(
            &previous_image?,
            &registry,
            &format!("{repository}:previous"),
        )
        .await?,
        repository,
    };
    let docker_config = docker_config(&registry);
    let nodes = Nodes::start(&cluster.dir, cluster.admin.clone(), root)?;
    let world = World {
        cluster,
        nodes,
        http: support::http(),
        previous_chart: previous.join("charts/trellis"),
        images,
        docker_config,
    };
    support::namespace(&world, OPERATOR_NAMESPACE).await?;
    Ok(world)
}

/// `scripts/image.sh` around `binary`: the OCI layout's directory.
async fn build_image(binary: &Path, models: &Path, out: &Path) -> Result<PathBuf> {
    cluster::run(
        tokio::process::Command::new(cluster::repo().join("scripts/image.sh"))
            .arg("--binary")
            .arg(binary)
            .arg("--model")
            .arg(models.join("all-MiniLM-L6-v2"))
            .arg(out),
        &format!("scripts/image.sh --binary {}", binary.display()),
    )
    .await?;
    Ok(out.join("oci"))
}

/// Pushes an OCI layout to the registry with skopeo; the digest.
async fn push(layout: &Path, registry: &Registry, reference: &str) -> Result<String> {
    let digest_file = layout.with_file_name("digest");
    cluster::run(
        tokio::process::Command::new("skopeo")
            .args(["copy", "--quiet", "--dest-cert-dir"])
            .arg(&registry.cert_dir)
            .arg("--dest-creds")
            .arg(format!("{}:{}", registry.user, registry.password))
            .arg("--digestfile")
            .arg(&digest_file)
            .arg(format!("oci:{}:trellis", layout.display()))
            .arg(format!("docker://{reference}")),
        &format!("skopeo copy to {reference}"),
    )
    .await?;
    let digest = std::fs::read_to_string(&digest_file)?.trim().to_string();
    anyhow::ensure!(
        digest.starts_with("sha256:"),
        "skopeo wrote no digest for {reference}"
    );
    Ok(digest)
}

/// The `.dockerconfigjson` that lets a pod pull from the registry.
fn docker_config(registry: &Registry) -> String {
    use base64::Engine;
    let auth = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", registry.user, registry.password));
    serde_json::json!({"auths": {registry.host.clone(): {
        "username": registry.user, "password": registry.password, "auth": auth,
    }}})
    .to_string()
}

/// The previous release's build (`scripts/previous-release.sh`), for the
/// upgrade scenario.
fn previous_release() -> Result<PathBuf> {
    let pin = cluster::repo().join("tests/e2e/previous-release");
    let text =
        std::fs::read_to_string(&pin).with_context(|| format!("reading {}", pin.display()))?;
    let rev = text
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::trim)
        .with_context(|| format!("{} names no commit", pin.display()))?;
    let dir = cluster::repo().join("target/e2e-previous").join(rev);
    if !dir.join("trellis").exists() || !dir.join("charts/trellis/Chart.yaml").exists() {
        anyhow::bail!(
            "the previous release ({rev}) is not built under {} (run scripts/previous-release.sh)",
            dir.display()
        );
    }
    Ok(dir)
}

/// The last lines of every container log of this run, for a failure's
/// diagnosis in CI's output.
fn dump_logs(world: &World) {
    for (name, path) in world.nodes.container_logs() {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(8)..];
        if tail.is_empty() {
            continue;
        }
        eprintln!("--- {name} (last {} lines)", tail.len());
        for line in tail {
            eprintln!("    {}", truncate(line, 400));
        }
    }
}

fn truncate(line: &str, max: usize) -> &str {
    match line.char_indices().nth(max) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}
