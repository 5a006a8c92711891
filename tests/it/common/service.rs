//! `trellis serve` started as a child process on a free loopback port, and
//! clients that load it: what the benchmarks measure a retrieval pod with.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A `trellis serve` child process, ready to answer.
pub struct Server {
    pub child: Child,
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Serves `route` (a RetrievalRoute manifest) over the indexes under
    /// `data`, with `args` added to the command line, once `/readyz`
    /// answers (two minutes at most).
    pub fn start(route: &str, data: &Path, args: &[&str]) -> Self {
        Self::start_binary(Path::new(env!("CARGO_BIN_EXE_trellis")), route, data, args)
    }

    /// [`Server::start`] with another `trellis` binary (an earlier build,
    /// to compare against).
    pub fn start_binary(binary: &Path, route: &str, data: &Path, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let manifest = dir.path().join("route.yaml");
        std::fs::File::create(&manifest)
            .and_then(|mut file| file.write_all(route.as_bytes()))
            .expect("route manifest");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(binary)
            .args(["serve", "-f"])
            .arg(&manifest)
            .arg("--data-dir")
            .arg(data)
            .args(["--listen", &addr])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting trellis serve");
        let server = Self {
            child,
            addr,
            _dir: dir,
        };
        let client = reqwest::blocking::Client::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let ready = client
                .get(format!("http://{}/readyz", server.addr))
                .send()
                .is_ok_and(|r| r.status().is_success());
            if ready {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "trellis serve not ready after 120 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        server
    }

    /// The server's resident memory now, in bytes.
    pub fn resident(&self) -> u64 {
        super::resident_bytes(&self.child.id().to_string())
    }

    /// SIGTERM, as Kubernetes stops a pod; then waits for the drain.
    pub fn stop(mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// What a load run saw.
pub struct Run {
    /// Milliseconds per answered request.
    pub latencies: Vec<f64>,
    /// Requests that got anything but 200.
    pub errors: usize,
    pub elapsed: Duration,
}

impl Run {
    pub fn qps(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    /// The `p` quantile of the latencies, in milliseconds (nearest rank).
    pub fn percentile(&self, p: f64) -> f64 {
        let mut sorted = self.latencies.clone();
        sorted.sort_by(f64::total_cmp);
        let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted
            .get(at.min(sorted.len().saturating_sub(1)))
            .copied()
            .unwrap_or(f64::NAN)
    }
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// `clients` threads posting `queries` in turn (`k` 10) for `time`; with
/// `samples`, the server's resident memory every 5 s after a 10 s
/// warm-up.
pub fn load(
    server: &Server,
    queries: &Arc<Vec<String>>,
    clients: usize,
    time: Duration,
    samples: Option<Arc<Mutex<Vec<u64>>>>,
) -> Run {
    let url = format!("http://{}/v1/retrieve", server.addr);
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (url, stop, next, queries) = (
                url.clone(),
                Arc::clone(&stop),
                Arc::clone(&next),
                Arc::clone(queries),
            );
            std::thread::spawn(move || {
                let client = reqwest::blocking::Client::builder()
                    .timeout(Duration::from_secs(60))
                    .build()
                    .expect("HTTP client");
                let mut latencies = Vec::new();
                let mut errors = 0;
                while !stop.load(Ordering::Relaxed) {
                    let n = next.fetch_add(1, Ordering::Relaxed) % queries.len();
                    let body = serde_json::json!({"query": queries[n], "k": 10});
                    let t = Instant::now();
                    let ok = client
                        .post(&url)
                        .json(&body)
                        .send()
                        .and_then(|r| r.error_for_status())
                        .and_then(|r| r.bytes())
                        .is_ok();
                    if ok {
                        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                    } else {
                        errors += 1;
                    }
                }
                (latencies, errors)
            })
        })
        .collect();
    let warm_up = Duration::from_secs(10).min(time / 2);
    while started.elapsed() < time {
        std::thread::sleep(Duration::from_secs(5).min(time.saturating_sub(started.elapsed())));
        if let Some(samples) = &samples
            && started.elapsed() >= warm_up
            && let Ok(mut samples) = samples.lock()
        {
            samples.push(server.resident());
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut run = Run {
        latencies: Vec::new(),
        errors: 0,
        elapsed: Duration::ZERO,
    };
    for worker in workers {
        let (latencies, errors) = worker.join().expect("client thread");
        run.latencies.extend(latencies);
        run.errors += errors;
    }
    run.elapsed = started.elapsed();
    run
}
