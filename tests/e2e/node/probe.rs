//! Container probes (startup, liveness, readiness) as the kubelet runs
//! them: HTTP GET, TCP connect or a command in the container, with the
//! probe's delay, period, timeout and thresholds.

use std::net::Ipv4Addr;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::time::Instant;

/// What a probe needs to reach its container.
pub struct Target<'a> {
    pub ip: Ipv4Addr,
    pub container: &'a Container,
    /// Runs a command in the container; exit code 0 is success.
    pub exec: &'a (dyn Fn(Vec<String>, Duration) -> tokio::task::JoinHandle<bool> + Send + Sync),
}

/// One probe's running tally.
#[derive(Debug)]
pub struct ProbeState {
    pub spec: Probe,
    next: Instant,
    successes: i32,
    failures: i32,
}

/// What the last run of a probe concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Passed its success threshold.
    Passed,
    /// Passed its failure threshold.
    Failed,
    /// Neither yet.
    Undecided,
}

impl ProbeState {
    pub fn new(spec: Probe, started: Instant) -> Self {
        let delay = spec.initial_delay_seconds.unwrap_or(0).max(0) as u64;
        Self {
            spec,
            next: started + Duration::from_secs(delay),
            successes: 0,
            failures: 0,
        }
    }

    pub fn due(&self, now: Instant) -> bool {
        now >= self.next
    }

    /// Runs the probe once and updates the tally.
    pub async fn run(&mut self, target: &Target<'_>) -> Verdict {
        let period = self.spec.period_seconds.unwrap_or(10).max(1) as u64;
        self.next = Instant::now() + Duration::from_secs(period);
        let ok = check(&self.spec, target).await;
        if ok {
            self.successes += 1;
            self.failures = 0;
            if self.successes >= self.spec.success_threshold.unwrap_or(1).max(1) {
                return Verdict::Passed;
            }
        } else {
            self.failures += 1;
            self.successes = 0;
            if self.failures >= self.spec.failure_threshold.unwrap_or(3).max(1) {
                return Verdict::Failed;
            }
        }
        Verdict::Undecided
    }
}

async fn check(probe: &Probe, target: &Target<'_>) -> bool {
    let timeout = Duration::from_secs(probe.timeout_seconds.unwrap_or(1).max(1) as u64);
    if let Some(http) = &probe.http_get {
        let Some(port) = port(&http.port, target.container) else {
            return false;
        };
        if http.scheme.as_deref().is_some_and(|s| s != "HTTP") {
            return false;
        }
        let host = http.host.clone().unwrap_or_else(|| target.ip.to_string());
        let path = http.path.clone().unwrap_or_else(|| "/".into());
        return http_get(&host, port, &path, timeout).await;
    }
    if let Some(tcp) = &probe.tcp_socket {
        let Some(port) = port(&tcp.port, target.container) else {
            return false;
        };
        let address = (target.ip, port);
        return matches!(
            tokio::time::timeout(timeout, tokio::net::TcpStream::connect(address)).await,
            Ok(Ok(_))
        );
    }
    if let Some(exec) = &probe.exec {
        let command = exec.command.clone().unwrap_or_default();
        return (target.exec)(command, timeout).await.unwrap_or(false);
    }
    // gRPC probes are not played by this node.
    false
}

/// A probe's port: a number, or the name of a container port.
fn port(port: &IntOrString, container: &Container) -> Option<u16> {
    match port {
        IntOrString::Int(n) => u16::try_from(*n).ok(),
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .and_then(|p| u16::try_from(p.container_port).ok()),
    }
}

/// An HTTP/1.1 GET: success is a status from 200 to 399, as the kubelet
/// counts it.
async fn http_get(host: &str, port: u16, path: &str, timeout: Duration) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect((host, port)).await.ok()?;
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: kube-probe/1.37\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = [0u8; 64];
        let n = stream.read(&mut head).await.ok()?;
        let line = std::str::from_utf8(&head[..n]).ok()?;
        let code: u16 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some((200..400).contains(&code))
    };
    matches!(tokio::time::timeout(timeout, attempt).await, Ok(Some(true)))
}
