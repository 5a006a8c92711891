//! A node without a kubelet: this harness plays the kubelet (pods as
//! local processes in their own network and mount namespaces, status
//! through the status subresource, a node Lease for heartbeats), the
//! scheduler (binding pending pods to itself) and a hostPath volume
//! provisioner (binding pending claims to fresh PersistentVolumes).
//! Everything else — Jobs, ReplicaSets, Deployments, EndpointSlices,
//! garbage collection, namespace deletion — is the real controller
//! manager's work.
//!
//! Kubelet calls use the node's own client certificate
//! (`system:node:NAME`), so the Node authorizer and NodeRestriction judge
//! them as they would a real kubelet's; binding uses the scheduler's.

pub mod container;
mod env;
mod pod;
mod probe;
pub mod sandbox;
mod volumes;

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, Node as NodeObject, NodeAddress, NodeCondition, NodeStatus,
    NodeSystemInfo, ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec,
    Pod,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use tokio::sync::watch;

use container::Bind;
use sandbox::GATEWAY;

/// What an image name stands for on this node: a binary of the build and
/// the image's configuration (Dockerfile's ENTRYPOINT, ENV, USER).
#[derive(Clone, Debug)]
pub struct Image {
    pub binary: PathBuf,
    /// Where the binary appears in the container (the entrypoint).
    pub entrypoint: String,
    pub env: Vec<(String, String)>,
    /// Extra files of the image (the model directory).
    pub binds: Vec<Bind>,
    pub working_dir: String,
    /// uid, gid.
    pub user: (u32, u32),
}

/// How to set the node up.
pub struct Config {
    pub name: String,
    /// Pod directories, volumes, logs.
    pub root: PathBuf,
    pub images: BTreeMap<String, Image>,
    pub api_port: u16,
    pub node_client: Client,
    pub scheduler_client: Client,
    pub admin_client: Client,
}

/// What every pod worker shares.
pub struct Shared {
    pub name: String,
    pub root: PathBuf,
    pub images: BTreeMap<String, Image>,
    pub api_port: u16,
    pub client: Client,
    pub exe: PathBuf,
    next_ip: AtomicU32,
    /// namespace/name → pod directory, for reading logs (kept after the
    /// pod is gone: its logs are what a failed scenario shows).
    pods: Mutex<HashMap<String, PathBuf>>,
    log: Mutex<std::fs::File>,
}

impl Shared {
    /// A fresh pod address and the name of its host-side link.
    fn next_address(&self) -> (Ipv4Addr, String) {
        let n = self.next_ip.fetch_add(1, Ordering::SeqCst);
        let ip = Ipv4Addr::new(10, 244, (1 + n / 250) as u8, (2 + n % 250) as u8);
        (ip, format!("tp{n}"))
    }

    fn register(&self, pod: &Pod, dir: &Path) {
        let key = format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any());
        self.pods
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, dir.to_path_buf());
    }

    /// A line in the node's own log.
    pub fn log(&self, line: &str) {
        use std::io::Write;
        let mut file = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(file, "{} {line}", Timestamp::now());
    }
}

/// A running node.
pub struct Node {
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    workers: Arc<Mutex<HashMap<String, Worker>>>,
}

/// A pod's worker: where its newest object is sent, and its task.
type Worker = (watch::Sender<Option<Pod>>, tokio::task::JoinHandle<()>);

impl Node {
    /// Registers the node and starts the kubelet, scheduler and
    /// provisioner loops.
    pub async fn start(config: Config) -> Result<Self> {
        std::fs::create_dir_all(config.root.join("volumes"))?;
        let log = std::fs::File::create(config.root.join("node.log"))?;
        let shared = Arc::new(Shared {
            name: config.name.clone(),
            root: config.root.clone(),
            images: config.images,
            api_port: config.api_port,
            client: config.node_client.clone(),
            exe: std::env::current_exe().context("finding the e2e binary")?,
            next_ip: AtomicU32::new(0),
            pods: Mutex::new(HashMap::new()),
            log: Mutex::new(log),
        });
        register(&config.node_client, &config.name).await?;
        let workers = Arc::new(Mutex::new(HashMap::new()));
        let tasks = vec![
            tokio::spawn(heartbeat(config.node_client.clone(), config.name.clone())),
            tokio::spawn(schedule(config.scheduler_client, config.name.clone())),
            tokio::spawn(provision(config.admin_client, config.root.join("volumes"))),
            tokio::spawn(kubelet(shared.clone(), workers.clone())),
        ];
        Ok(Self {
            shared,
            tasks,
            workers,
        })
    }

    /// The pod directories of this run (namespace/name → directory).
    pub fn pod_dirs(&self) -> HashMap<String, PathBuf> {
        self.shared
            .pods
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sends `signal` to every container process group of a pod: SIGKILL
    /// crashes it (the restart policy decides what follows), SIGSTOP
    /// hangs it and SIGCONT wakes it.
    pub fn signal(
        &self,
        namespace: &str,
        pod: &str,
        signal: nix::sys::signal::Signal,
    ) -> Result<usize> {
        let dir = self
            .pod_dirs()
            .get(&format!("{namespace}/{pod}"))
            .cloned()
            .with_context(|| format!("pod {namespace}/{pod} never ran on this node"))?;
        let mut killed = 0;
        let pids = std::fs::read_dir(dir.join("pids")).into_iter().flatten();
        for entry in pids.flatten() {
            if let Ok(text) = std::fs::read_to_string(entry.path())
                && let Ok(pid) = text.trim().parse::<i32>()
                && nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), signal).is_ok()
            {
                killed += 1;
            }
        }
        Ok(killed)
    }

    /// Stops every pod at once and the node's loops.
    pub async fn stop(self) {
        for task in &self.tasks {
            task.abort();
        }
        let workers: Vec<_> = {
            let mut map = self.workers.lock().unwrap_or_else(|e| e.into_inner());
            map.drain().collect()
        };
        let mut handles = Vec::new();
        for (_, (feed, handle)) in workers {
            let _ = feed.send(None);
            handles.push(handle);
        }
        for handle in handles {
            let _ = tokio::time::timeout(Duration::from_secs(5), handle).await;
        }
    }
}

fn node_status(name: &str) -> NodeStatus {
    let quantity = |s: &str| Quantity(s.to_string());
    let resources = BTreeMap::from([
        ("cpu".to_string(), quantity("2")),
        ("memory".to_string(), quantity("24Gi")),
        ("pods".to_string(), quantity("110")),
        ("ephemeral-storage".to_string(), quantity("100Gi")),
    ]);
    let now = Time(Timestamp::now());
    NodeStatus {
        capacity: Some(resources.clone()),
        allocatable: Some(resources),
        addresses: Some(vec![
            NodeAddress {
                type_: "InternalIP".into(),
                address: GATEWAY.to_string(),
            },
            NodeAddress {
                type_: "Hostname".into(),
                address: name.to_string(),
            },
        ]),
        conditions: Some(vec![NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
            reason: Some("KubeletReady".into()),
            message: Some("the Trellis test node runs pods as local processes".into()),
            last_heartbeat_time: Some(now.clone()),
            last_transition_time: Some(now),
        }]),
        node_info: Some(NodeSystemInfo {
            architecture: std::env::consts::ARCH.into(),
            operating_system: "linux".into(),
            os_image: "trellis test node".into(),
            kernel_version: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_string(),
            container_runtime_version: "process://0.1".into(),
            kubelet_version: "v1.37.2".into(),
            kube_proxy_version: String::new(),
            machine_id: "trellis-test-node".into(),
            system_uuid: "trellis-test-node".into(),
            boot_id: "trellis-test-node".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Creates the Node object (as the node itself) and reports it Ready.
async fn register(client: &Client, name: &str) -> Result<()> {
    let nodes: Api<NodeObject> = Api::all(client.clone());
    let node = NodeObject {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(BTreeMap::from([
                ("kubernetes.io/hostname".to_string(), name.to_string()),
                ("kubernetes.io/os".to_string(), "linux".to_string()),
                ("kubernetes.io/arch".to_string(), "amd64".to_string()),
            ])),
            ..Default::default()
        },
        ..Default::default()
    };
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e).context("registering the node"),
    }
    report_node(client, name).await
}

async fn report_node(client: &Client, name: &str) -> Result<()> {
    let nodes: Api<NodeObject> = Api::all(client.clone());
    let patch = serde_json::json!({ "status": node_status(name) });
    nodes
        .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .context("reporting the node's status")?;
    Ok(())
}

/// Renews the node's Lease every 10 s and its Ready condition every 30 s,
/// so the node lifecycle controller never takes it for gone.
async fn heartbeat(client: Client, name: String) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let mut ticks = 0u64;
    loop {
        let spec = LeaseSpec {
            holder_identity: Some(name.clone()),
            lease_duration_seconds: Some(40),
            renew_time: Some(MicroTime(Timestamp::now())),
            ..Default::default()
        };
        let result = match leases.get_opt(&name).await {
            Ok(Some(_)) => leases
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(serde_json::json!({ "spec": spec })),
                )
                .await
                .map(drop),
            Ok(None) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        ..Default::default()
                    },
                    spec: Some(spec),
                };
                leases
                    .create(&PostParams::default(), &lease)
                    .await
                    .map(drop)
            }
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            eprintln!("e2e node: renewing the node lease: {e}");
        }
        if ticks.is_multiple_of(3)
            && let Err(e) = report_node(&client, &name).await
        {
            eprintln!("e2e node: {e:#}");
        }
        ticks += 1;
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
}

/// Binds every pod that has no node to this one.
async fn schedule(client: Client, node: String) {
    let pods: Api<Pod> = Api::all(client.clone());
    let config = watcher::Config::default().fields("spec.nodeName=");
    let mut events = watcher::watcher(pods, config).boxed();
    while let Some(event) = events.next().await {
        let pod = match event {
            Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => pod,
            Ok(_) => continue,
            Err(e) => {
                eprintln!("e2e scheduler: watch: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let ns = pod.namespace().unwrap_or_default();
        let binding = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name_any(), "uid": pod.metadata.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let result: Result<serde_json::Value, _> = api
            .create_subresource("binding", &pod.name_any(), &PostParams::default(), &binding)
            .await;
        match result {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => {}
            Err(e) => eprintln!("e2e scheduler: binding {ns}/{}: {e}", pod.name_any()),
        }
    }
}

/// Gives every pending claim without a volume a hostPath volume of its
/// own, bound to it in advance, as a local-path provisioner does; the
/// controller manager's volume binder completes the binding.
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
        let Some(spec) = &claim.spec else { continue };
        if spec.volume_name.is_some() || claim.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let ns = claim.namespace().unwrap_or_default();
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        let name = format!("pvc-{uid}");
        let path = root.join(&name);
        if let Err(e) = std::fs::create_dir_all(&path).and_then(|()| {
            use std::os::unix::fs::PermissionsExt;
            // As local-path provisioners make them: any pod user may write.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))
        }) {
            eprintln!("e2e provisioner: {}: {e}", path.display());
            continue;
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
                    namespace: Some(ns.clone()),
                    name: Some(claim.name_any()),
                    uid: Some(uid),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: None,
        };
        match volumes.create(&PostParams::default(), &volume).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => eprintln!("e2e provisioner: creating {name}: {e}"),
        }
    }
}

type Workers =
    Arc<Mutex<HashMap<String, (watch::Sender<Option<Pod>>, tokio::task::JoinHandle<()>)>>>;

/// Watches the pods bound to this node and gives each a worker.
async fn kubelet(shared: Arc<Shared>, workers: Workers) {
    let pods: Api<Pod> = Api::all(shared.client.clone());
    let config = watcher::Config::default().fields(&format!("spec.nodeName={}", shared.name));
    let mut events = watcher::watcher(pods, config).boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => {
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                let mut map = workers.lock().unwrap_or_else(|e| e.into_inner());
                // Finished workers leave their entry; a pod seen again
                // after its worker ended is not restarted.
                match map.get(&uid) {
                    Some((feed, _)) => {
                        let _ = feed.send(Some(pod));
                    }
                    None => {
                        let (feed, rx) = watch::channel(Some(pod));
                        let handle = tokio::spawn(pod::run(shared.clone(), rx));
                        map.insert(uid, (feed, handle));
                    }
                }
            }
            Ok(watcher::Event::Delete(pod)) => {
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                let map = workers.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((feed, _)) = map.get(&uid) {
                    let _ = feed.send(None);
                }
            }
            Ok(_) => {}
            Err(e) => {
                eprintln!("e2e node: pod watch: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}
