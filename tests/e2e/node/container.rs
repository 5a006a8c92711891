//! One container process: what the node decides about it ([`Launch`]),
//! and the step that turns it into a process ([`exec`]), run as
//! `e2e __run LAUNCH.json` so that it is ordinary single-threaded code
//! between `fork` and `exec`.
//!
//! The process joins its pod's network namespace, gets a mount namespace
//! of its own whose root is an overlay over the host's (so that mount
//! points such as `/etc/trellis/manifests` can be made without touching
//! the host), the pod's volumes bound at their `mountPath` (`readOnly`
//! honoured), a read-only root when the container asks for one, the pod's
//! hostname, and the pod's user and groups; then it execs the command.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, setns, unshare};
use nix::unistd::{Gid, Uid, chdir, chroot, setgid, setgroups, sethostname, setuid};
use serde::{Deserialize, Serialize};

/// The subcommand of the e2e binary that execs a container.
pub const RUN_COMMAND: &str = "__run";

/// A bind mount of a host path into the container.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Bind {
    pub source: PathBuf,
    /// Absolute path inside the container.
    pub target: String,
    pub read_only: bool,
}

/// Everything needed to start one container process.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Launch {
    /// `/proc/PID/ns/net` of the pod's sandbox process.
    pub netns: PathBuf,
    pub hostname: String,
    /// An empty directory the container's root is mounted on.
    pub root: PathBuf,
    /// An empty directory for the overlay's writable layer (a tmpfs).
    pub scratch: PathBuf,
    pub binds: Vec<Bind>,
    pub read_only_root: bool,
    pub no_new_privileges: bool,
    pub working_dir: String,
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    /// The command line, `$(VAR)` references expanded.
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// `e2e __run LAUNCH.json`: sets up the container's view and execs its
/// command; returns only on failure, with the exit code 128 (as a
/// runtime's "cannot start" does).
pub fn run(args: &[String]) -> std::process::ExitCode {
    let result: Result<std::convert::Infallible, String> = args
        .first()
        .ok_or_else(|| "usage: e2e __run LAUNCH.json".to_string())
        .and_then(|path| {
            let text = std::fs::read(path).map_err(|e| format!("reading {path}: {e}"))?;
            serde_json::from_slice::<Launch>(&text).map_err(|e| format!("reading {path}: {e}"))
        })
        .and_then(|launch| exec(&launch));
    let Err(e) = result;
    eprintln!("container start failed: {e}");
    std::process::ExitCode::from(128)
}

fn exec(launch: &Launch) -> Result<std::convert::Infallible, String> {
    let netns = std::fs::File::open(&launch.netns)
        .map_err(|e| format!("opening {}: {e}", launch.netns.display()))?;
    setns(&netns, CloneFlags::CLONE_NEWNET).map_err(|e| format!("joining the pod network: {e}"))?;
    drop(netns);
    unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWUTS)
        .map_err(|e| format!("new mount namespace: {e}"))?;
    sethostname(&launch.hostname).map_err(|e| format!("setting the hostname: {e}"))?;
    // Nothing mounted here may reach the host's namespace.
    mount_or(
        None,
        Path::new("/"),
        None,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None,
        "making / private",
    )?;

    let scratch = launch.scratch.as_path();
    mount_or(
        Some("tmpfs"),
        scratch,
        Some("tmpfs"),
        MsFlags::empty(),
        Some("mode=0755"),
        "the root's writable layer",
    )?;
    let (upper, work) = (scratch.join("upper"), scratch.join("work"));
    for dir in [&upper, &work] {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let options = format!(
        "lowerdir=/,upperdir={},workdir={}",
        upper.display(),
        work.display()
    );
    let root = launch.root.as_path();
    mount_or(
        Some("overlay"),
        root,
        Some("overlay"),
        MsFlags::empty(),
        Some(&options),
        "the root overlay",
    )?;
    // The overlay has the root filesystem only, not what is mounted on it.
    for system in ["/proc", "/sys", "/dev"] {
        bind(Path::new(system), &inside(root, system), false)?;
    }
    for b in &launch.binds {
        bind(&b.source, &inside(root, &b.target), b.read_only)?;
    }
    if launch.read_only_root {
        mount_or(
            None,
            root,
            None,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
            None,
            "making the root read-only",
        )?;
    }
    chroot(root).map_err(|e| format!("chroot to {}: {e}", root.display()))?;
    chdir(launch.working_dir.as_str())
        .map_err(|e| format!("changing to {}: {e}", launch.working_dir))?;

    let groups: Vec<Gid> = launch.groups.iter().map(|g| Gid::from_raw(*g)).collect();
    setgroups(&groups).map_err(|e| format!("setgroups: {e}"))?;
    setgid(Gid::from_raw(launch.gid)).map_err(|e| format!("setgid {}: {e}", launch.gid))?;
    setuid(Uid::from_raw(launch.uid)).map_err(|e| format!("setuid {}: {e}", launch.uid))?;
    if launch.no_new_privileges {
        nix::sys::prctl::set_no_new_privs().map_err(|e| format!("no_new_privs: {e}"))?;
    }
    // Dies with the harness, whatever kills it (set after setuid, which
    // clears it).
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| format!("parent-death signal: {e}"))?;

    let (program, rest) = launch
        .argv
        .split_first()
        .ok_or("the container has no command")?;
    let error = std::process::Command::new(program)
        .args(rest)
        .env_clear()
        .envs(
            launch
                .env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        )
        .exec();
    Err(format!("exec {program}: {error}"))
}

/// `path` (absolute, inside the container) under `root`, its symbolic
/// links resolved inside `root` as the container will see them
/// (`/var/run` is a link to `/run` on Debian): resolved against the host,
/// a link would put the mount point, and the directories made for it, on
/// the host's filesystem.
fn inside(root: &Path, path: &str) -> PathBuf {
    let mut resolved = PathBuf::from("/");
    let mut pending: Vec<String> = path
        .split('/')
        .filter(|c| !c.is_empty())
        .rev()
        .map(String::from)
        .collect();
    let mut hops = 0;
    while let Some(component) = pending.pop() {
        match component.as_str() {
            "." => continue,
            ".." => {
                resolved.pop();
                continue;
            }
            _ => {}
        }
        let candidate = resolved.join(&component);
        let on_host = root.join(candidate.strip_prefix("/").unwrap_or(&candidate));
        match std::fs::read_link(&on_host) {
            Ok(target) if hops < 40 => {
                hops += 1;
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                let parts: Vec<String> = target
                    .to_string_lossy()
                    .split('/')
                    .filter(|c| !c.is_empty())
                    .map(String::from)
                    .collect();
                pending.extend(parts.into_iter().rev());
            }
            _ => resolved = candidate,
        }
    }
    root.join(resolved.strip_prefix("/").unwrap_or(&resolved))
}

/// Binds `source` on `target`, making the mount point (a directory, or an
/// empty file for a file) first.
fn bind(source: &Path, target: &Path, read_only: bool) -> Result<(), String> {
    let is_dir = source
        .metadata()
        .map_err(|e| format!("{}: {e}", source.display()))?
        .is_dir();
    if is_dir {
        std::fs::create_dir_all(target)
            .map_err(|e| format!("creating mount point {}: {e}", target.display()))?;
    } else {
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("creating mount point {}: {e}", parent.display()))?;
        }
        if !target.exists() {
            std::fs::File::create(target)
                .map_err(|e| format!("creating mount point {}: {e}", target.display()))?;
        }
    }
    let what = format!("binding {} on {}", source.display(), target.display());
    mount_or(
        source.to_str(),
        target,
        None,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None,
        &what,
    )?;
    if read_only {
        mount_or(
            None,
            target,
            None,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
            None,
            &what,
        )?;
    }
    Ok(())
}

fn mount_or(
    source: Option<&str>,
    target: &Path,
    fstype: Option<&str>,
    flags: MsFlags,
    data: Option<&str>,
    what: &str,
) -> Result<(), String> {
    mount(source, target, fstype, flags, data).map_err(|e| format!("{what}: {e}"))
}
