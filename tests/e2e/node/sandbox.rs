//! Pod sandboxes: a network namespace per pod, held open by a small
//! process (`e2e __sandbox`, the part a pause container plays), joined to
//! the node's bridge by a veth pair with the pod's own address. Several
//! retrieval pods can then listen on the same port, and the node reaches
//! each on its address, as a CNI plugin's bridge would give.
//!
//! The sandbox process exits when its standard input closes, so a harness
//! that dies takes its pods' namespaces with it.

use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;

use anyhow::{Context, Result, bail};
use nix::sched::{CloneFlags, unshare};

/// The subcommand of the e2e binary that holds a pod's namespace.
pub const SANDBOX_COMMAND: &str = "__sandbox";

/// The bridge the node's pods hang off, and its address (the node's, and
/// the API server's as pods see it).
pub const BRIDGE: &str = "trellis0";
pub const GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 244, 0, 1);
pub const PREFIX: u8 = 16;

/// `e2e __sandbox`: waits until standard input closes.
pub fn hold() -> std::process::ExitCode {
    let mut sink = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    std::process::ExitCode::SUCCESS
}

/// A running sandbox.
pub struct Sandbox {
    process: tokio::process::Child,
    pub ip: Ipv4Addr,
    host_link: String,
}

impl Sandbox {
    /// Starts a sandbox with address `ip`, its host-side link named
    /// `host_link` (at most 15 characters).
    pub async fn start(ip: Ipv4Addr, host_link: String) -> Result<Self> {
        let exe = std::env::current_exe().context("finding the e2e binary")?;
        let mut command = std::process::Command::new(exe);
        command
            .arg(SANDBOX_COMMAND)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: unshare is a single system call, safe between fork and exec.
        unsafe {
            command.pre_exec(|| unshare(CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from));
        }
        let process = tokio::process::Command::from(command)
            .kill_on_drop(true)
            .spawn()
            .context("starting a pod sandbox")?;
        let pid = process.id().context("the sandbox exited at once")?;
        let sandbox = Self {
            process,
            ip,
            host_link,
        };
        sandbox.wire(pid).await?;
        Ok(sandbox)
    }

    /// `/proc/PID/ns/net` of the sandbox.
    pub fn netns(&self) -> Result<PathBuf> {
        let pid = self.process.id().context("the pod sandbox has exited")?;
        Ok(PathBuf::from(format!("/proc/{pid}/ns/net")))
    }

    async fn wire(&self, pid: u32) -> Result<()> {
        let pid = pid.to_string();
        let netns = format!("--net=/proc/{pid}/ns/net");
        let address = format!("{}/{PREFIX}", self.ip);
        let gateway = GATEWAY.to_string();
        let host = self.host_link.as_str();
        ip(&[
            "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", &pid,
        ])
        .await?;
        ip(&["link", "set", host, "master", BRIDGE, "up"]).await?;
        for args in [
            vec!["addr", "add", address.as_str(), "dev", "eth0"],
            vec!["link", "set", "eth0", "up"],
            vec!["link", "set", "lo", "up"],
            vec!["route", "add", "default", "via", gateway.as_str()],
        ] {
            let mut line = vec![netns.as_str(), "ip"];
            line.extend(args);
            run("nsenter", &line).await?;
        }
        Ok(())
    }

    /// Removes the sandbox: its process, namespace and links.
    pub async fn stop(mut self) {
        let _ = self.process.kill().await;
        // The veth pair goes with the namespace; this covers a process
        // that outlived the kill.
        let _ = ip(&["link", "del", &self.host_link]).await;
    }
}

/// Creates the node's bridge in the current network namespace.
pub async fn create_bridge() -> Result<()> {
    let address = format!("{GATEWAY}/{PREFIX}");
    ip(&["link", "set", "lo", "up"]).await?;
    ip(&["link", "add", BRIDGE, "type", "bridge"]).await?;
    ip(&["addr", "add", &address, "dev", BRIDGE]).await?;
    ip(&["link", "set", BRIDGE, "up"]).await?;
    Ok(())
}

async fn ip(args: &[&str]) -> Result<()> {
    run("ip", args).await
}

async fn run(program: &str, args: &[&str]) -> Result<()> {
    let output = tokio::process::Command::new(program)
        .args(args)
        .output()
        .await
        .with_context(|| format!("running {program}"))?;
    if !output.status.success() {
        bail!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}
