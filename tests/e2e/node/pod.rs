//! One pod on the node, from binding to removal: its volumes and sandbox,
//! its init containers in order, its containers as processes restarted by
//! the pod's restart policy, its probes, the status it reports through the
//! status subresource, and its graceful termination.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, Event as CoreEvent, EventSource, HostIP,
    ObjectReference, Pod, PodCondition, PodIP,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, ResourceExt};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::container::{Bind, Launch, RUN_COMMAND};
use super::probe::{ProbeState, Target, Verdict};
use super::sandbox::{GATEWAY, Sandbox};
use super::volumes::{self, HostVolume};
use super::{Image, Shared, env};

/// How a volume the pod cannot have yet is told, as the kubelet words it:
/// the waiting message starts with it, and a `FailedMount` Event says it.
const MOUNT_FAILED: &str = "MountVolume.SetUp failed";

/// The newest view of the pod, or `None` once it is gone from the API.
pub type PodFeed = watch::Receiver<Option<Pod>>;

/// Runs the pod until it is removed.
pub async fn run(shared: Arc<Shared>, mut feed: PodFeed) {
    let Some(pod) = feed.borrow().clone() else {
        return;
    };
    let key = format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any());
    let mut worker = Worker::new(shared.clone(), pod);
    if let Err(e) = worker.live(&mut feed).await {
        shared.log(&format!("pod {key}: {e:#}"));
    }
    worker.shutdown(&mut feed).await;
}

struct Worker {
    shared: Arc<Shared>,
    pod: Pod,
    dir: PathBuf,
    sandbox: Option<Sandbox>,
    volumes: BTreeMap<String, HostVolume>,
    init: Vec<Slot>,
    main: Vec<Slot>,
    phase: String,
    start_time: Option<Time>,
    conditions: BTreeMap<String, (bool, Time, Option<String>)>,
    exits: (mpsc::Sender<Exit>, mpsc::Receiver<Exit>),
    waiting_message: Option<String>,
}

/// A container's process ended.
struct Exit {
    init: bool,
    index: usize,
    run: u64,
    code: i32,
    signal: Option<i32>,
}

/// One container's place in the pod.
struct Slot {
    spec: Container,
    launch: Option<Launch>,
    pid: Option<i32>,
    /// Counts processes started, so that an exit is matched to its run.
    run: u64,
    state: ContainerState,
    last_state: Option<ContainerState>,
    restarts: i32,
    ready: bool,
    started: bool,
    restart_at: Option<Instant>,
    startup: Option<ProbeState>,
    liveness: Option<ProbeState>,
    readiness: Option<ProbeState>,
    /// The node killed this run for its memory (the cgroup's OOM killer).
    oom_killed: bool,
}

fn now() -> Time {
    Time(Timestamp::now())
}

fn waiting(reason: &str, message: Option<String>) -> ContainerState {
    ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.into()),
            message,
        }),
        ..Default::default()
    }
}

impl Slot {
    fn new(spec: Container) -> Self {
        Self {
            spec,
            launch: None,
            pid: None,
            run: 0,
            state: waiting("ContainerCreating", None),
            last_state: None,
            restarts: 0,
            ready: false,
            started: false,
            restart_at: None,
            startup: None,
            liveness: None,
            readiness: None,
            oom_killed: false,
        }
    }

    fn running(&self) -> bool {
        self.pid.is_some()
    }

    fn exit_code(&self) -> Option<i32> {
        self.state.terminated.as_ref().map(|t| t.exit_code)
    }

    fn status(&self) -> ContainerStatus {
        ContainerStatus {
            name: self.spec.name.clone(),
            image: self.spec.image.clone().unwrap_or_default(),
            image_id: format!(
                "trellis-test-node://{}",
                self.spec.image.clone().unwrap_or_default()
            ),
            container_id: self.pid.map(|pid| format!("process://{pid}")).or_else(|| {
                self.state
                    .terminated
                    .as_ref()
                    .and_then(|t| t.container_id.clone())
            }),
            ready: self.ready,
            started: Some(self.started),
            restart_count: self.restarts,
            state: Some(self.state.clone()),
            last_state: self.last_state.clone(),
            ..Default::default()
        }
    }
}

impl Worker {
    fn new(shared: Arc<Shared>, pod: Pod) -> Self {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let dir = shared.root.join("pods").join(&uid);
        let spec = pod.spec.clone().unwrap_or_default();
        let init = spec
            .init_containers
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(Slot::new)
            .collect();
        let main = spec.containers.into_iter().map(Slot::new).collect();
        shared.register(&pod, &dir);
        Self {
            shared,
            pod,
            dir,
            sandbox: None,
            volumes: BTreeMap::new(),
            init,
            main,
            phase: "Pending".into(),
            start_time: None,
            conditions: BTreeMap::new(),
            exits: mpsc::channel(16),
            waiting_message: None,
        }
    }

    fn api(&self) -> Api<Pod> {
        Api::namespaced(
            self.shared.client.clone(),
            &self.pod.namespace().unwrap_or_default(),
        )
    }

    fn restart_policy(&self) -> String {
        self.pod
            .spec
            .as_ref()
            .and_then(|s| s.restart_policy.clone())
            .unwrap_or_else(|| "Always".into())
    }

    fn deleting(&self) -> bool {
        self.pod.metadata.deletion_timestamp.is_some()
    }

    /// Takes in a newer view of the pod; false when it is gone.
    fn refresh(&mut self, feed: &mut PodFeed) -> bool {
        match feed.borrow_and_update().clone() {
            Some(pod) => {
                self.pod = pod;
                true
            }
            None => false,
        }
    }

    /// Everything from binding until deletion is asked for (or the pod
    /// finished and is waiting to be removed).
    async fn live(&mut self, feed: &mut PodFeed) -> Result<()> {
        if matches!(
            self.pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        ) {
            // Finished before this node (re)started: nothing to run.
            return Ok(());
        }
        self.start_time = Some(now());
        self.set_condition("PodScheduled", true, None);
        self.set_condition("Initialized", self.init.is_empty(), None);
        self.set_condition("ContainersReady", false, None);
        self.set_condition("Ready", false, None);
        // Volumes and the sandbox, retried until they can be had.
        loop {
            if self.deleting() {
                return Ok(());
            }
            match self.prepare().await {
                Ok(()) => break,
                Err(e) => {
                    let message = format!("{e:#}");
                    if self.waiting_message.as_deref() != Some(message.as_str()) {
                        self.shared.log(&format!(
                            "pod {}/{} waits: {message}",
                            self.pod.namespace().unwrap_or_default(),
                            self.pod.name_any()
                        ));
                        // A launch error names the kubelet's reason first
                        // (`ErrImagePull: …`); a volume not there yet is
                        // still ContainerCreating.
                        let reason = ["ErrImagePull", "CreateContainerConfigError"]
                            .into_iter()
                            .find(|r| message.starts_with(&format!("{r}:")))
                            .unwrap_or("ContainerCreating");
                        for slot in self.init.iter_mut().chain(self.main.iter_mut()) {
                            slot.state = waiting(reason, Some(message.clone()));
                        }
                        if message.starts_with(MOUNT_FAILED) {
                            self.warn("FailedMount", &message).await;
                        }
                        self.waiting_message = Some(message);
                        self.report().await;
                    }
                    tokio::select! {
                        changed = feed.changed() => {
                            if changed.is_err() || !self.refresh(feed) {
                                return Ok(());
                            }
                        }
                        () = tokio::time::sleep(Duration::from_secs(2)) => {}
                    }
                }
            }
        }
        self.set_condition("PodReadyToStartContainers", true, None);
        for slot in self.init.iter_mut().chain(self.main.iter_mut()) {
            slot.state = waiting("PodInitializing", None);
        }
        self.report().await;

        // Init containers, one at a time.
        let mut index = 0;
        while index < self.init.len() {
            if self.deleting() {
                return Ok(());
            }
            self.start(true, index).await;
            self.report().await;
            loop {
                tokio::select! {
                    changed = feed.changed() => {
                        if changed.is_err() || !self.refresh(feed) || self.deleting() {
                            return Ok(());
                        }
                    }
                    Some(exit) = self.exits.1.recv() => {
                        self.exited(exit);
                        break;
                    }
                }
            }
            match self.init[index].exit_code() {
                Some(0) => index += 1,
                _ if self.restart_policy() == "Never" => {
                    self.phase = "Failed".into();
                    self.report().await;
                    return Ok(());
                }
                _ => {
                    self.init[index].restarts += 1;
                    tokio::time::sleep(backoff(self.init[index].restarts)).await;
                }
            }
        }
        self.set_condition("Initialized", true, None);

        for i in 0..self.main.len() {
            self.start(false, i).await;
        }
        self.phase = "Running".into();
        self.update_readiness();
        self.report().await;

        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                changed = feed.changed() => {
                    if changed.is_err() || !self.refresh(feed) || self.deleting() {
                        return Ok(());
                    }
                }
                Some(exit) = self.exits.1.recv() => {
                    self.exited(exit);
                    self.after_exit();
                    self.update_readiness();
                    self.report().await;
                    if matches!(self.phase.as_str(), "Succeeded" | "Failed") {
                        return Ok(());
                    }
                }
                _ = tick.tick() => {
                    let mut changed = self.run_probes().await;
                    self.enforce_memory_limits();
                    changed |= self.restart_due().await;
                    if changed {
                        self.update_readiness();
                        self.report().await;
                    }
                }
            }
        }
    }

    async fn prepare(&mut self) -> Result<()> {
        std::fs::create_dir_all(self.dir.join("volumes"))?;
        std::fs::create_dir_all(self.dir.join("logs"))?;
        if self.volumes.is_empty() {
            self.volumes =
                volumes::materialise(&self.shared.client, &self.pod, &self.dir.join("volumes"))
                    .await
                    .context(MOUNT_FAILED)?;
        }
        if self.sandbox.is_none() {
            let (ip, link) = self.shared.next_address();
            let sandbox = Sandbox::start(ip, link).await?;
            self.sandbox = Some(sandbox);
            // The pod's address is known from now on; env and probes use it.
            let ip = ip.to_string();
            let status = self.pod.status.get_or_insert_with(Default::default);
            status.pod_ip = Some(ip.clone());
            status.host_ip = Some(GATEWAY.to_string());
        }
        let slots: Vec<(bool, usize)> = (0..self.init.len())
            .map(|i| (true, i))
            .chain((0..self.main.len()).map(|i| (false, i)))
            .collect();
        for (init, index) in slots {
            let launch = self.launch(init, index).await?;
            self.slot(init, index).launch = Some(launch);
        }
        Ok(())
    }

    fn slot(&mut self, init: bool, index: usize) -> &mut Slot {
        if init {
            &mut self.init[index]
        } else {
            &mut self.main[index]
        }
    }

    /// What starting container `index` means on this node.
    async fn launch(&self, init: bool, index: usize) -> Result<Launch> {
        let container = if init {
            &self.init[index].spec
        } else {
            &self.main[index].spec
        };
        let image_name = container.image.clone().unwrap_or_default();
        let image: &Image = self.shared.images.get(&image_name).ok_or_else(|| {
            anyhow!("ErrImagePull: image {image_name:?} is not one this node can run")
        })?;
        let spec = self.pod.spec.clone().unwrap_or_default();
        let pod_security = spec.security_context.clone().unwrap_or_default();
        let security = container.security_context.clone().unwrap_or_default();
        let uid = security
            .run_as_user
            .or(pod_security.run_as_user)
            .map(|u| u as u32)
            .unwrap_or(image.user.0);
        let gid = security
            .run_as_group
            .or(pod_security.run_as_group)
            .map(|g| g as u32)
            .unwrap_or(image.user.1);
        let non_root = security
            .run_as_non_root
            .or(pod_security.run_as_non_root)
            .unwrap_or(false);
        if non_root && uid == 0 {
            bail!(
                "CreateContainerConfigError: container {:?} has runAsNonRoot and would run as root",
                container.name
            );
        }
        let mut groups: Vec<u32> = pod_security
            .supplemental_groups
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|g| g as u32)
            .collect();
        groups.extend(pod_security.fs_group.map(|g| g as u32));
        groups.push(gid);
        groups.sort_unstable();
        groups.dedup();

        let mut binds = vec![Bind {
            source: image.binary.clone(),
            target: image.entrypoint.clone(),
            read_only: true,
        }];
        binds.extend(image.binds.iter().cloned());
        for mount in container.volume_mounts.iter().flatten() {
            let volume = self.volumes.get(&mount.name).ok_or_else(|| {
                anyhow!(
                    "container {:?} mounts volume {:?}, which the pod does not have",
                    container.name,
                    mount.name
                )
            })?;
            let mut source = volume.path.clone();
            if let Some(sub) = mount.sub_path.as_deref().filter(|s| !s.is_empty()) {
                source = source.join(sub);
                if !source.exists() {
                    // As the kubelet does: with the volume's own mode, so
                    // that the pod's fsGroup may write a fresh one.
                    let mode = std::fs::metadata(&volume.path)?.permissions();
                    std::fs::create_dir_all(&source)?;
                    let mut dir = source.clone();
                    while dir != volume.path {
                        std::fs::set_permissions(&dir, mode.clone())?;
                        if !dir.pop() {
                            break;
                        }
                    }
                }
            }
            binds.push(Bind {
                source,
                target: mount.mount_path.clone(),
                read_only: mount.read_only.unwrap_or(false) || volume.read_only,
            });
        }

        let mut base = image.env.clone();
        base.extend([
            ("HOSTNAME".to_string(), self.pod.name_any()),
            ("KUBERNETES_SERVICE_HOST".into(), GATEWAY.to_string()),
            (
                "KUBERNETES_SERVICE_PORT".into(),
                self.shared.api_port.to_string(),
            ),
            (
                "KUBERNETES_SERVICE_PORT_HTTPS".into(),
                self.shared.api_port.to_string(),
            ),
        ]);
        let env = env::container_env(&self.shared.client, &self.pod, container, &base)
            .await
            .with_context(|| {
                format!("CreateContainerConfigError: container {:?}", container.name)
            })?;
        let vars: BTreeMap<String, String> = env.iter().cloned().collect();
        let mut argv: Vec<String> = match &container.command {
            Some(command) if !command.is_empty() => command.clone(),
            _ => vec![image.entrypoint.clone()],
        };
        argv.extend(container.args.clone().unwrap_or_default());
        let argv = argv.iter().map(|a| env::expand(a, &vars)).collect();

        let netns = self
            .sandbox
            .as_ref()
            .context("the pod has no sandbox")?
            .netns()?;
        let base_dir = self.dir.join("containers").join(&container.name);
        let root = base_dir.join("rootfs");
        let scratch = base_dir.join("scratch");
        std::fs::create_dir_all(&root)?;
        std::fs::create_dir_all(&scratch)?;
        Ok(Launch {
            netns,
            hostname: self.pod.name_any(),
            root,
            scratch,
            binds,
            read_only_root: security.read_only_root_filesystem.unwrap_or(false),
            no_new_privileges: security.allow_privilege_escalation == Some(false),
            working_dir: container
                .working_dir
                .clone()
                .unwrap_or_else(|| image.working_dir.clone()),
            uid,
            gid,
            groups,
            argv,
            env,
        })
    }

    /// Starts container `index`'s process.
    async fn start(&mut self, init: bool, index: usize) {
        let exe = self.shared.exe.clone();
        let dir = self.dir.clone();
        let exits = self.exits.0.clone();
        let slot = self.slot(init, index);
        slot.run += 1;
        slot.oom_killed = false;
        slot.restart_at = None;
        slot.ready = false;
        slot.started = false;
        let run = slot.run;
        let Some(launch) = slot.launch.clone() else {
            slot.state = waiting("CreateContainerError", Some("no launch".into()));
            return;
        };
        let name = slot.spec.name.clone();
        let spawned = spawn(&exe, &dir, &name, &launch, run);
        match spawned {
            Ok(mut child) => {
                let pid = child.id().map(|p| p as i32);
                slot.pid = pid;
                if let Some(pid) = pid {
                    // For the scenarios that crash a pod's processes.
                    let pids = dir.join("pids");
                    let _ = std::fs::create_dir_all(&pids)
                        .and_then(|()| std::fs::write(pids.join(&name), pid.to_string()));
                }
                let started = Instant::now();
                slot.startup = slot
                    .spec
                    .startup_probe
                    .clone()
                    .map(|p| ProbeState::new(p, started));
                slot.liveness = slot
                    .spec
                    .liveness_probe
                    .clone()
                    .map(|p| ProbeState::new(p, started));
                slot.readiness = slot
                    .spec
                    .readiness_probe
                    .clone()
                    .map(|p| ProbeState::new(p, started));
                slot.started = slot.startup.is_none();
                slot.state = ContainerState {
                    running: Some(ContainerStateRunning {
                        started_at: Some(now()),
                    }),
                    ..Default::default()
                };
                tokio::spawn(async move {
                    let status = child.wait().await;
                    let (code, signal) = match status {
                        Ok(s) => {
                            use std::os::unix::process::ExitStatusExt;
                            match (s.code(), s.signal()) {
                                (Some(c), _) => (c, None),
                                (None, Some(sig)) => (128 + sig, Some(sig)),
                                _ => (255, None),
                            }
                        }
                        Err(_) => (255, None),
                    };
                    let _ = exits
                        .send(Exit {
                            init,
                            index,
                            run,
                            code,
                            signal,
                        })
                        .await;
                });
            }
            Err(e) => {
                slot.state = waiting("CreateContainerError", Some(format!("{e:#}")));
            }
        }
    }

    fn exited(&mut self, exit: Exit) {
        let slot = self.slot(exit.init, exit.index);
        if exit.run != slot.run {
            return;
        }
        let started_at = slot
            .state
            .running
            .as_ref()
            .and_then(|r| r.started_at.clone());
        let container_id = slot.pid.map(|p| format!("process://{p}"));
        slot.pid = None;
        slot.ready = false;
        let reason = match (exit.code, exit.signal) {
            (0, _) => "Completed",
            (_, Some(9)) if slot.oom_killed => "OOMKilled",
            (_, Some(9)) => "Killed",
            _ => "Error",
        };
        slot.state = ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: exit.code,
                signal: exit.signal,
                reason: Some(reason.into()),
                started_at,
                finished_at: Some(now()),
                container_id,
                message: None,
            }),
            ..Default::default()
        };
    }

    /// After a main container exited: restart it (with the kubelet's
    /// backoff) or settle the pod's phase.
    fn after_exit(&mut self) {
        let policy = self.restart_policy();
        let mut all_done = true;
        let mut any_failed = false;
        for slot in &mut self.main {
            if slot.running() || slot.restart_at.is_some() {
                all_done = false;
                continue;
            }
            let Some(code) = slot.exit_code() else {
                all_done = false;
                continue;
            };
            let restart = match policy.as_str() {
                "Always" => true,
                "OnFailure" => code != 0,
                _ => false,
            };
            if restart {
                slot.restarts += 1;
                slot.last_state = Some(slot.state.clone());
                let wait = backoff(slot.restarts);
                slot.restart_at = Some(Instant::now() + wait);
                slot.state = waiting(
                    "CrashLoopBackOff",
                    Some(format!(
                        "back-off {}s restarting failed container",
                        wait.as_secs()
                    )),
                );
                all_done = false;
            } else if code != 0 {
                any_failed = true;
            }
        }
        if all_done {
            self.phase = if any_failed { "Failed" } else { "Succeeded" }.into();
        }
    }

    /// What a cgroup's memory limit does to a container that outgrows it:
    /// SIGKILL, reported as `OOMKilled`. Sampled twice a second, so a
    /// short spike may pass; what the scenarios need is a process whose
    /// resident set stays above its limit.
    fn enforce_memory_limits(&mut self) {
        for slot in &mut self.main {
            let (Some(pid), Some(limit)) = (slot.pid, memory_limit(&slot.spec)) else {
                continue;
            };
            if slot.oom_killed || resident_bytes(pid).is_none_or(|rss| rss <= limit) {
                continue;
            }
            self.shared.log(&format!(
                "pod {}/{}: container {} outgrew its memory limit of {limit} bytes",
                self.pod.namespace().unwrap_or_default(),
                self.pod.name_any(),
                slot.spec.name
            ));
            slot.oom_killed = true;
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }

    async fn restart_due(&mut self) -> bool {
        let now = Instant::now();
        let due: Vec<usize> = self
            .main
            .iter()
            .enumerate()
            .filter(|(_, s)| s.restart_at.is_some_and(|t| t <= now))
            .map(|(i, _)| i)
            .collect();
        for i in &due {
            self.start(false, *i).await;
        }
        !due.is_empty()
    }

    async fn run_probes(&mut self) -> bool {
        let Some(ip) = self.sandbox.as_ref().map(|s| s.ip) else {
            return false;
        };
        let now = Instant::now();
        let mut changed = false;
        let mut kill = Vec::new();
        let exe = self.shared.exe.clone();
        let dir = self.dir.clone();
        for (index, slot) in self.main.iter_mut().enumerate() {
            if !slot.running() {
                continue;
            }
            let launch = slot.launch.clone();
            let exe = exe.clone();
            let dir = dir.clone();
            let name = slot.spec.name.clone();
            let exec = move |argv: Vec<String>, timeout: Duration| {
                let launch = launch.clone();
                let exe = exe.clone();
                let dir = dir.clone();
                let name = name.clone();
                tokio::spawn(async move {
                    let Some(mut launch) = launch else {
                        return false;
                    };
                    launch.argv = argv;
                    let Ok(mut child) = spawn(&exe, &dir, &format!("{name}-probe"), &launch, 0)
                    else {
                        return false;
                    };
                    match tokio::time::timeout(timeout, child.wait()).await {
                        Ok(Ok(status)) => status.success(),
                        _ => {
                            let _ = child.kill().await;
                            false
                        }
                    }
                })
            };
            let spec = slot.spec.clone();
            let target = Target {
                ip,
                container: &spec,
                exec: &exec,
            };
            if !slot.started {
                if let Some(probe) = slot.startup.as_mut().filter(|p| p.due(now)) {
                    match probe.run(&target).await {
                        Verdict::Passed => {
                            slot.started = true;
                            changed = true;
                        }
                        Verdict::Failed => kill.push(index),
                        Verdict::Undecided => {}
                    }
                }
                continue;
            }
            if let Some(probe) = slot.liveness.as_mut().filter(|p| p.due(now))
                && probe.run(&target).await == Verdict::Failed
            {
                kill.push(index);
                continue;
            }
            let Some(probe) = slot.readiness.as_mut() else {
                // No readiness probe: ready once started.
                if !slot.ready {
                    slot.ready = true;
                    changed = true;
                }
                continue;
            };
            if !probe.due(now) {
                continue;
            }
            match probe.run(&target).await {
                Verdict::Passed if !slot.ready => {
                    slot.ready = true;
                    changed = true;
                }
                Verdict::Failed if slot.ready => {
                    slot.ready = false;
                    changed = true;
                }
                _ => {}
            }
        }
        for index in kill {
            // A failed liveness or startup probe: the container is killed
            // and the restart policy decides.
            let grace = self.grace();
            if let Some(pid) = self.main[index].pid {
                stop_process(pid, grace).await;
            }
        }
        changed
    }

    fn grace(&self) -> Duration {
        let seconds = self
            .pod
            .metadata
            .deletion_grace_period_seconds
            .or_else(|| {
                self.pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
            })
            .unwrap_or(30)
            .max(0);
        Duration::from_secs(seconds as u64)
    }

    fn update_readiness(&mut self) {
        let ready = !self.main.is_empty() && self.main.iter().all(|s| s.ready && s.running());
        self.set_condition("ContainersReady", ready, None);
        self.set_condition("Ready", ready, None);
    }

    fn set_condition(&mut self, kind: &str, value: bool, reason: Option<String>) {
        match self.conditions.get(kind) {
            Some((old, _, _)) if *old == value => {}
            _ => {
                self.conditions
                    .insert(kind.to_string(), (value, now(), reason));
            }
        }
    }

    /// Posts a Warning Event on the pod, as the kubelet does (with the
    /// node's credentials).
    async fn warn(&self, reason: &str, message: &str) {
        let ns = self.pod.namespace().unwrap_or_default();
        let name = self.pod.name_any();
        let at = now();
        let event = CoreEvent {
            metadata: ObjectMeta {
                generate_name: Some(format!("{name}.")),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(name.clone()),
                namespace: Some(ns.clone()),
                uid: self.pod.uid(),
                ..Default::default()
            },
            reason: Some(reason.into()),
            message: Some(message.into()),
            type_: Some("Warning".into()),
            source: Some(EventSource {
                component: Some("kubelet".into()),
                host: Some(self.shared.name.clone()),
            }),
            first_timestamp: Some(at.clone()),
            last_timestamp: Some(at),
            count: Some(1),
            ..Default::default()
        };
        let events: Api<CoreEvent> = Api::namespaced(self.shared.client.clone(), &ns);
        if let Err(e) = events.create(&PostParams::default(), &event).await {
            self.shared.log(&format!("event {reason} of {name}: {e}"));
        }
    }

    /// Writes the pod's status (a strategic merge patch of the status
    /// subresource, with the node's credentials).
    async fn report(&mut self) {
        let pod_ip = self.pod.status.as_ref().and_then(|s| s.pod_ip.clone());
        let conditions: Vec<PodCondition> = self
            .conditions
            .iter()
            .map(|(kind, (value, at, reason))| PodCondition {
                type_: kind.clone(),
                status: if *value { "True" } else { "False" }.into(),
                last_transition_time: Some(at.clone()),
                reason: reason.clone(),
                ..Default::default()
            })
            .collect();
        let mut status = serde_json::json!({
            "phase": self.phase,
            "conditions": conditions,
            "hostIP": GATEWAY.to_string(),
            "hostIPs": [HostIP { ip: GATEWAY.to_string() }],
            "startTime": self.start_time,
            "containerStatuses": self.main.iter().map(Slot::status).collect::<Vec<_>>(),
        });
        if !self.init.is_empty() {
            status["initContainerStatuses"] =
                serde_json::to_value(self.init.iter().map(Slot::status).collect::<Vec<_>>())
                    .unwrap_or_default();
        }
        if let Some(ip) = pod_ip {
            status["podIP"] = ip.clone().into();
            status["podIPs"] = serde_json::to_value([PodIP { ip }]).unwrap_or_default();
        }
        let patch = serde_json::json!({ "status": status });
        let name = self.pod.name_any();
        if let Err(e) = self
            .api()
            .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
        {
            // A pod already removed is no error; anything else is worth
            // seeing in the node's log.
            if !matches!(&e, kube::Error::Api(s) if s.code == 404) {
                self.shared.log(&format!("pod status of {name}: {e}"));
            }
        }
    }

    /// Stops what runs and, when deletion was asked for, removes the pod
    /// from the API (the kubelet's final delete).
    async fn shutdown(&mut self, feed: &mut PodFeed) {
        // A finished pod stays until somebody deletes it.
        loop {
            let gone = feed.borrow().is_none();
            if gone || self.deleting() {
                break;
            }
            if feed.changed().await.is_err() || !self.refresh(feed) {
                break;
            }
        }
        let gone = feed.borrow().is_none();
        let grace = if gone { Duration::ZERO } else { self.grace() };
        let pids: Vec<i32> = self
            .init
            .iter()
            .chain(self.main.iter())
            .filter_map(|s| s.pid)
            .collect();
        let stops = pids.into_iter().map(|pid| stop_process(pid, grace));
        futures::future::join_all(stops).await;
        // Collect the exits of what was stopped.
        while let Ok(Some(exit)) =
            tokio::time::timeout(Duration::from_millis(200), self.exits.1.recv()).await
        {
            self.exited(exit);
        }
        for slot in &mut self.main {
            slot.restart_at = None;
            slot.ready = false;
        }
        if let Some(sandbox) = self.sandbox.take() {
            sandbox.stop().await;
        }
        if gone {
            return;
        }
        if !matches!(self.phase.as_str(), "Succeeded" | "Failed") {
            let failed = self
                .main
                .iter()
                .any(|s| s.exit_code().is_none_or(|c| c != 0));
            self.phase = if failed { "Failed" } else { "Succeeded" }.into();
        }
        self.update_readiness();
        self.report().await;
        let uid = self.pod.metadata.uid.clone();
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid,
                resource_version: None,
            }),
            ..Default::default()
        };
        let name = self.pod.name_any();
        match self.api().delete(&name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => self.shared.log(&format!("deleting pod {name}: {e}")),
        }
    }
}

/// The kubelet's restart back-off: 10 s doubling to 5 minutes.
/// A container's `resources.limits.memory` in bytes.
fn memory_limit(container: &Container) -> Option<u64> {
    let quantity = container
        .resources
        .as_ref()?
        .limits
        .as_ref()?
        .get("memory")?;
    let text = quantity.0.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale: f64 = match unit {
        "" => 1.0,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some((number.parse::<f64>().ok()? * scale) as u64)
}

/// A process's resident set in bytes (`VmRSS`).
fn resident_bytes(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn backoff(restarts: i32) -> Duration {
    let exponent = (restarts.max(1) - 1).min(5) as u32;
    Duration::from_secs((10u64 << exponent).min(300))
}

/// Starts `e2e __run` for `launch`, output appended to the container's log.
fn spawn(
    exe: &std::path::Path,
    dir: &std::path::Path,
    name: &str,
    launch: &Launch,
    run: u64,
) -> Result<tokio::process::Child> {
    let spec_path = dir.join("containers").join(format!("{name}-{run}.json"));
    if let Some(parent) = spec_path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&spec_path, serde_json::to_vec(launch)?)?;
    let log_path = dir.join("logs").join(format!("{name}.log"));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let child = tokio::process::Command::new(exe)
        .arg(RUN_COMMAND)
        .arg(&spec_path)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .context("starting the container process")?;
    Ok(child)
}

/// SIGTERM to the container's process group, SIGKILL after `grace`.
async fn stop_process(pid: i32, grace: Duration) {
    let group = Pid::from_raw(pid);
    if grace.is_zero() {
        let _ = killpg(group, Signal::SIGKILL);
        return;
    }
    let _ = killpg(group, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        // Signal 0: is any process of the group left?
        if killpg(group, None).is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = killpg(group, Signal::SIGKILL);
}
