//! The control plane under test: a network namespace of the suite's own
//! (so that the node's bridge and pod addresses exist nowhere else), the
//! control plane of `scripts/control-plane.sh` inside it, clients with
//! each role's credentials, and helm.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use anyhow::{Context, Result, bail};
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use nix::sched::{CloneFlags, unshare};

use crate::node::sandbox::{self, GATEWAY};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Moves this process into a network namespace of its own. Must run
/// before any thread starts: a namespace change applies to the calling
/// thread, and threads started afterwards inherit it.
pub fn isolate() -> Result<()> {
    if !nix::unistd::Uid::effective().is_root() {
        bail!(
            "the end-to-end suite runs pods in network and mount namespaces and needs root \
             (CAP_SYS_ADMIN and CAP_NET_ADMIN)"
        );
    }
    unshare(CloneFlags::CLONE_NEWNET).context("creating the suite's network namespace")?;
    Ok(())
}

/// A running control plane.
pub struct Cluster {
    pub dir: PathBuf,
    pub env: BTreeMap<String, String>,
    pub admin: Client,
    pub node: Client,
    pub scheduler: Client,
    pub api_port: u16,
    pub node_name: String,
}

impl Cluster {
    /// Creates the node bridge and starts the control plane in `dir`.
    pub async fn up(dir: &Path) -> Result<Self> {
        sandbox::create_bridge().await?;
        let node_name = "trellis-node".to_string();
        let output = tokio::process::Command::new(repo().join("scripts/control-plane.sh"))
            .args(["up", "--dir"])
            .arg(dir)
            .args([
                "--pod-gateway",
                &GATEWAY.to_string(),
                "--node-name",
                &node_name,
            ])
            .output()
            .await
            .context("running scripts/control-plane.sh up")?;
        if !output.status.success() {
            bail!(
                "scripts/control-plane.sh up failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        let text = std::fs::read_to_string(dir.join("cluster.env"))?;
        let env: BTreeMap<String, String> = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let api_port = env
            .get("TRELLIS_CP_API_PORT")
            .and_then(|p| p.parse().ok())
            .context("cluster.env has no API port")?;
        Ok(Self {
            dir: dir.to_path_buf(),
            admin: client(&dir.join("admin.kubeconfig")).await?,
            node: client(&dir.join("node.kubeconfig")).await?,
            scheduler: client(&dir.join("scheduler.kubeconfig")).await?,
            env,
            api_port,
            node_name,
        })
    }

    /// Runs helm against this cluster.
    pub async fn helm(&self, args: &[&str]) -> Result<Output> {
        let helm = self
            .env
            .get("TRELLIS_CP_HELM")
            .context("no helm in cluster.env")?;
        let home = self.dir.join("helm");
        let output = tokio::process::Command::new(helm)
            .args(args)
            .env("KUBECONFIG", self.dir.join("admin.kubeconfig"))
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .current_dir(repo())
            .output()
            .await
            .context("running helm")?;
        Ok(output)
    }

    /// Stops the control plane.
    pub async fn down(&self) {
        let _ = tokio::process::Command::new(repo().join("scripts/control-plane.sh"))
            .args(["down", "--dir"])
            .arg(&self.dir)
            .output()
            .await;
    }
}

/// A client from a kubeconfig file.
pub async fn client(path: &Path) -> Result<Client> {
    let kubeconfig =
        Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("loading {}", path.display()))?;
    Client::try_from(config).context("building a client")
}
