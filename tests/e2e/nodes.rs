//! The suite's nodes: two real kubelets on containerd and runc, started
//! by `scripts/control-plane.sh up --node …` beside the control plane.
//! What the suite adds to them is the one thing a bare cluster lacks and
//! the nodes cannot do themselves, a storage provisioner: every pending
//! claim gets a hostPath volume of its own, bound in advance, as a
//! local-path provisioner does (the controller manager's volume binder
//! completes the binding; the kubelet mounts it).
//!
//! Also here: what the scenarios do to a pod from outside, as an operator
//! of the machine would — freezing its cgroup (a hung process, not a dead
//! one) — and reading the container logs the kubelets write.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, ObjectReference, PersistentVolume, PersistentVolumeClaim,
    PersistentVolumeSpec, Pod,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};

/// The node pods land on by default: labelled, not tainted.
pub const GENERAL_NODE: &str = "trellis-a";
/// The node only pods that tolerate its taint may use.
pub const DEDICATED_NODE: &str = "trellis-b";
/// Both nodes' label key; `general` on one, `rag` on the other.
pub const POOL_LABEL: &str = "trellis.dev/pool";
/// The dedicated node's taint: `dedicated=rag:NoSchedule`.
pub const TAINT_KEY: &str = "dedicated";
pub const TAINT_VALUE: &str = "rag";

/// The `--node`, `--labels` and `--taints` arguments of
/// `scripts/control-plane.sh up` for the suite's two nodes.
pub fn node_arguments() -> Vec<String> {
    [
        "--node",
        GENERAL_NODE,
        "--labels",
        &format!("{POOL_LABEL}=general"),
        "--node",
        DEDICATED_NODE,
        "--labels",
        &format!("{POOL_LABEL}={TAINT_VALUE}"),
        "--taints",
        &format!("{TAINT_KEY}={TAINT_VALUE}:NoSchedule"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The nodes of a running cluster, and the provisioner beside them.
pub struct Nodes {
    /// The cluster's state directory (`nodes/NAME/` under it).
    dir: PathBuf,
    provisioner: tokio::task::JoinHandle<()>,
}

impl Nodes {
    /// Starts the provisioner; volumes go under `root`.
    pub fn start(cluster_dir: &Path, admin: Client, root: &Path) -> Result<Self> {
        let volumes = root.join("volumes");
        std::fs::create_dir_all(&volumes)
            .with_context(|| format!("creating {}", volumes.display()))?;
        Ok(Self {
            dir: cluster_dir.to_path_buf(),
            provisioner: tokio::spawn(provision(admin, volumes)),
        })
    }

    /// Freezes (`true`) or thaws a pod's processes through the cgroup
    /// freezer: the process hangs as a stuck one does, holding its
    /// connections and leases without renewing them.
    pub async fn freeze(&self, client: &Client, ns: &str, name: &str, frozen: bool) -> Result<()> {
        let pod = Api::<Pod>::namespaced(client.clone(), ns)
            .get(name)
            .await
            .with_context(|| format!("reading pod {ns}/{name}"))?;
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .with_context(|| format!("pod {ns}/{name} is on no node"))?;
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let qos = pod
            .status
            .as_ref()
            .and_then(|s| s.qos_class.clone())
            .unwrap_or_default()
            .to_lowercase();
        let root = std::fs::read_to_string(self.dir.join("nodes").join(&node).join("cgroup-root"))
            .with_context(|| format!("the cgroup root of node {node}"))?;
        // The kubelet's cgroupfs layout: ROOT/kubepods[/QOS]/podUID.
        let mut path =
            PathBuf::from("/sys/fs/cgroup/freezer").join(root.trim().trim_start_matches('/'));
        path.push("kubepods");
        if qos != "guaranteed" {
            path.push(&qos);
        }
        path.push(format!("pod{uid}"));
        let state = path.join("freezer.state");
        let value = if frozen { "FROZEN" } else { "THAWED" };
        std::fs::write(&state, value)
            .with_context(|| format!("writing {value} to {}", state.display()))?;
        Ok(())
    }

    /// Every container log the kubelets wrote: (`ns_pod_uid/container`,
    /// file), for a failure's diagnosis.
    pub fn container_logs(&self) -> Vec<(String, PathBuf)> {
        let mut logs = Vec::new();
        let Ok(nodes) = std::fs::read_dir(self.dir.join("nodes")) else {
            return logs;
        };
        for node in nodes.flatten() {
            let Ok(pods) = std::fs::read_dir(node.path().join("pods")) else {
                continue;
            };
            for pod in pods.flatten() {
                let Ok(containers) = std::fs::read_dir(pod.path()) else {
                    continue;
                };
                for container in containers.flatten() {
                    let Ok(files) = std::fs::read_dir(container.path()) else {
                        continue;
                    };
                    for file in files.flatten() {
                        logs.push((
                            format!(
                                "{}/{}",
                                pod.file_name().to_string_lossy(),
                                container.file_name().to_string_lossy()
                            ),
                            file.path(),
                        ));
                    }
                }
            }
        }
        logs.sort();
        logs
    }

    pub fn stop(self) {
        self.provisioner.abort();
    }
}

/// Gives every pending claim without a volume a hostPath volume of its
/// own, bound to it in advance, as a local-path provisioner does.
async fn provision(client: Client, root: PathBuf) {
    let claims: Api<PersistentVolumeClaim> = Api::all(client.clone());
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let mut events = watcher::watcher(claims, watcher::Config::default()).boxed();
    while let Some(event) = events.next().await {
        let claim = match event {
            Ok(watcher::Event::Apply(c) | watcher::Event::InitApply(c)) => c,
            Ok(_) => continue,
            Err(e) => {
                eprintln!("e2e provisioner: watch: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(e) = provide(&volumes, &root, &claim).await {
            eprintln!("e2e provisioner: {e:#}");
        }
    }
}

async fn provide(
    volumes: &Api<PersistentVolume>,
    root: &Path,
    claim: &PersistentVolumeClaim,
) -> Result<()> {
    let Some(spec) = &claim.spec else {
        return Ok(());
    };
    if spec.volume_name.is_some() || claim.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let ns = claim.namespace().unwrap_or_default();
    let uid = claim.metadata.uid.clone().unwrap_or_default();
    let name = format!("pvc-{uid}");
    let path = root.join(&name);
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&path)?;
        // As local-path provisioners make them: any pod user may write.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))?;
    }
    let size = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .cloned()
        .unwrap_or_else(|| Quantity("1Gi".into()));
    let volume = PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(BTreeMap::from([(
                "trellis.dev/test-node".to_string(),
                "provisioned".to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(BTreeMap::from([("storage".to_string(), size)])),
            access_modes: spec.access_modes.clone(),
            storage_class_name: spec.storage_class_name.clone(),
            persistent_volume_reclaim_policy: Some("Delete".into()),
            volume_mode: spec.volume_mode.clone(),
            host_path: Some(HostPathVolumeSource {
                path: path.display().to_string(),
                type_: Some("Directory".into()),
            }),
            claim_ref: Some(ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("PersistentVolumeClaim".into()),
                namespace: Some(ns),
                name: Some(claim.name_any()),
                uid: Some(uid),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    };
    match volumes.create(&PostParams::default(), &volume).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => bail!("creating {name}: {e}"),
    }
}

impl Nodes {
    /// Kills a node's kubelet (SIGKILL: no goodbye to the API server),
    /// waits `down`, and starts it again with the same command line, its
    /// output appended to the same log. The pods' containers run on under
    /// containerd meanwhile, as on a node whose kubelet crashed.
    pub async fn restart_kubelet(&self, node: &str, down: Duration) -> Result<()> {
        let pid_file = self.dir.join(format!("kubelet-{node}.pid"));
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .with_context(|| format!("reading {}", pid_file.display()))?
            .trim()
            .parse()
            .context("the kubelet's pid file holds no pid")?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .with_context(|| format!("the kubelet of {node} (pid {pid}) is not running"))?;
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let (program, rest) = args
            .split_first()
            .context("the kubelet has no command line")?;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .with_context(|| format!("killing the kubelet of {node}"))?;
        tokio::time::sleep(down).await;
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.join(format!("kubelet-{node}.log")))?;
        let mut command = std::process::Command::new(program);
        command
            .args(rest)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0);
        let child = command.spawn().context("restarting the kubelet")?;
        std::fs::write(&pid_file, child.id().to_string())?;
        // `control-plane.sh down` stops it by its pid file.
        drop(child);
        Ok(())
    }
}
