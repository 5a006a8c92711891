//! The operator end to end, against a real control plane: kube-apiserver,
//! kube-controller-manager and etcd built from their Go modules
//! (`scripts/control-plane.sh`), the real Helm chart installed with helm,
//! and a harness that plays the node (`node/`), so that ingest Jobs and
//! retrieval Deployments really run `trellis` and the real Job,
//! ReplicaSet, Deployment, EndpointSlice, garbage-collector and namespace
//! controllers act on what they report.
//!
//! Needs root (network and mount namespaces) and the control plane built
//! (`scripts/control-plane.sh build`); `scripts/test.sh` runs it:
//!
//!   cargo test --test e2e [-- NAME-FILTER...]
//!
//! Scenarios run in order on one cluster; each says what it proves. The
//! run ends with `e2e: N passed, M failed`.

mod cluster;
mod node;
mod scenarios;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};

use cluster::Cluster;
use node::container::{self, Bind};
use node::{Image, Node, sandbox};

/// The image name the chart is installed with; the node runs this build's
/// `trellis` binary for it.
pub const IMAGE_REPOSITORY: &str = "trellis.test/trellis";
pub const IMAGE_TAG: &str = "e2e";
/// The tag the previous release's image goes by (its binary, built by
/// `scripts/previous-release.sh`).
pub const PREVIOUS_TAG: &str = "previous";
/// Where the chart is installed.
pub const OPERATOR_NAMESPACE: &str = "trellis-system";

/// What every scenario gets.
pub struct World {
    pub cluster: Cluster,
    pub node: Node,
    pub http: reqwest::Client,
    /// The previous release's chart directory.
    pub previous_chart: PathBuf,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some(container::RUN_COMMAND) => return container::run(&args[2..]),
        Some(sandbox::SANDBOX_COMMAND) => return sandbox::hold(),
        _ => {}
    }
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
        "e2e: control plane and node up in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let mut passed = 0;
    let mut failed = Vec::new();
    for scenario in scenarios::all() {
        if !filters.is_empty() && !filters.iter().any(|f| scenario.name.contains(f.as_str())) {
            continue;
        }
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
                    eprintln!("e2e: the scenarios after it need it; stopping");
                    break;
                }
            }
        }
    }

    let World { cluster, node, .. } = world;
    node.stop().await;
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
    let cluster = Cluster::up(&root.join("cluster")).await?;
    // The Dockerfile's image, as the node runs it.
    let image = Image {
        binary: trellis,
        entrypoint: "/usr/local/bin/trellis".into(),
        env: vec![
            (
                "PATH".into(),
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
            ),
            ("TRELLIS_MODEL_DIR".into(), "/opt/trellis/models".into()),
            ("TRELLIS_DATA_DIR".into(), "/var/lib/trellis".into()),
        ],
        binds: vec![Bind {
            source: models,
            target: "/opt/trellis/models".into(),
            read_only: true,
        }],
        working_dir: "/".into(),
        user: (10001, 10001),
    };
    let previous_image = Image {
        binary: previous.join("trellis"),
        ..image.clone()
    };
    let images = BTreeMap::from([
        (format!("{IMAGE_REPOSITORY}:{IMAGE_TAG}"), image),
        (format!("{IMAGE_REPOSITORY}:{PREVIOUS_TAG}"), previous_image),
    ]);
    let node = Node::start(node::Config {
        name: cluster.node_name.clone(),
        root: root.join("node"),
        images,
        api_port: cluster.api_port,
        node_client: cluster.node.clone(),
        scheduler_client: cluster.scheduler.clone(),
        admin_client: cluster.admin.clone(),
    })
    .await?;
    Ok(World {
        cluster,
        node,
        http: support::http(),
        previous_chart: previous.join("charts/trellis"),
    })
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
    let mut dirs: Vec<_> = world.node.pod_dirs().into_iter().collect();
    dirs.sort();
    for (pod, dir) in dirs {
        let Ok(entries) = std::fs::read_dir(dir.join("logs")) else {
            continue;
        };
        for entry in entries.flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(8)..];
            if tail.is_empty() {
                continue;
            }
            eprintln!(
                "--- {pod} {} (last {} lines)",
                entry.file_name().to_string_lossy(),
                tail.len()
            );
            for line in tail {
                eprintln!("    {}", truncate(line, 400));
            }
        }
    }
}

fn truncate(line: &str, max: usize) -> &str {
    match line.char_indices().nth(max) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}
