//! The cluster under test: a network namespace of the suite's own (so
//! that the nodes' bridges and pod addresses exist nowhere else), and in
//! it the control plane, the two nodes and the registry of
//! `scripts/control-plane.sh`; clients with each role's credentials, and
//! helm.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use anyhow::{Context, Result, bail};
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use nix::sched::{CloneFlags, unshare};

use crate::nodes;

/// The suite's own address in its network namespace: the API server is
/// advertised on it, the nodes' InternalIP, and test doubles that pods
/// call (an embedding endpoint, FalkorDB) listen on it. Pods reach it
/// through their node's bridge (10.244.N.0/24, routed here).
pub const GATEWAY: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 244, 0, 1);

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
            "the end-to-end suite runs kubelets, containerd and runc in a network namespace \
             of its own and needs root"
        );
    }
    unshare(CloneFlags::CLONE_NEWNET).context("creating the suite's network namespace")?;
    Ok(())
}

/// A running cluster.
pub struct Cluster {
    pub dir: PathBuf,
    pub env: BTreeMap<String, String>,
    pub admin: Client,
    /// `kubelet vX, containerd vY, runc vZ`.
    pub versions: String,
    /// host:port of the registry, its user and password.
    pub registry: Registry,
}

/// The registry beside the cluster (TLS from the cluster CA, a password).
#[derive(Clone, Debug)]
pub struct Registry {
    pub host: String,
    pub user: String,
    pub password: String,
    /// A directory holding the cluster CA, which the registry's
    /// certificate chains to, as `ca.crt` (skopeo's `--dest-cert-dir`).
    pub cert_dir: PathBuf,
}

impl Cluster {
    /// Gives the namespace its address and starts the cluster in `dir`.
    pub async fn up(dir: &Path) -> Result<Self> {
        let address = format!("{GATEWAY}/24");
        ip(&["link", "set", "lo", "up"]).await?;
        ip(&["link", "add", "trellis0", "type", "bridge"]).await?;
        ip(&["addr", "add", &address, "dev", "trellis0"]).await?;
        ip(&["link", "set", "trellis0", "up"]).await?;
        let output = run(
            tokio::process::Command::new(repo().join("scripts/control-plane.sh"))
                .args(["up", "--dir"])
                .arg(dir)
                .args(["--pod-gateway", &GATEWAY.to_string(), "--registry"])
                .args(nodes::node_arguments()),
            "scripts/control-plane.sh up",
        )
        .await?;
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        let text = std::fs::read_to_string(dir.join("cluster.env"))?;
        let env: BTreeMap<String, String> = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = |key: &str| {
            env.get(key)
                .cloned()
                .with_context(|| format!("cluster.env has no {key}"))
        };
        let cert_dir = dir.join("registry-certs");
        std::fs::create_dir_all(&cert_dir)?;
        std::fs::copy(dir.join("pki/ca.crt"), cert_dir.join("ca.crt"))?;
        let registry = Registry {
            host: get("TRELLIS_CP_REGISTRY")?,
            user: get("TRELLIS_CP_REGISTRY_USER")?,
            password: get("TRELLIS_CP_REGISTRY_PASSWORD")?,
            cert_dir,
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            admin: client(&dir.join("admin.kubeconfig")).await?,
            versions: get("TRELLIS_CP_VERSIONS")?,
            registry,
            env,
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

async fn ip(args: &[&str]) -> Result<()> {
    run(
        tokio::process::Command::new("ip").args(args),
        &format!("ip {}", args.join(" ")),
    )
    .await?;
    Ok(())
}

/// Runs a program the suite needs (`what` names it in errors); fails with
/// its standard error when it does not succeed.
pub async fn run(command: &mut tokio::process::Command, what: &str) -> Result<Output> {
    let output = command
        .output()
        .await
        .with_context(|| format!("running {what}"))?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(output)
}
