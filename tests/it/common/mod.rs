//! Shared helpers of the integration tests.
#![allow(dead_code)]

pub mod docling;
pub mod docx;
pub mod pdf;
pub mod scripted;
pub mod service;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A profile, corpus `c` over `docs/` and route `contracts` (top 3): the
/// manifests for [`write_two_documents`].
pub const TWO_DOCUMENT_MANIFESTS: &str = r#"
apiVersion: trellis.dev/v1alpha1
kind: IndexProfile
metadata: {name: p}
---
apiVersion: trellis.dev/v1alpha1
kind: Corpus
metadata: {name: c}
spec:
  profileRef: {name: p}
  sources: [{path: docs}]
---
apiVersion: trellis.dev/v1alpha1
kind: RetrievalRoute
metadata: {name: contracts}
spec:
  corpusRef: {name: c}
  selection: {topK: 3}
"#;

/// Corpus `c` with one source per team (`docs/a` for tag `team-a`,
/// `docs/b` for `team-b`) and route `shared` (top 10).
pub const ACL_MANIFESTS: &str = r#"
apiVersion: trellis.dev/v1alpha1
kind: IndexProfile
metadata: {name: p}
---
apiVersion: trellis.dev/v1alpha1
kind: Corpus
metadata: {name: c}
spec:
  profileRef: {name: p}
  sources:
    - {path: docs/a, acl: [team-a]}
    - {path: docs/b, acl: [team-b]}
---
apiVersion: trellis.dev/v1alpha1
kind: RetrievalRoute
metadata: {name: shared}
spec:
  corpusRef: {name: c}
  selection: {topK: 10}
"#;

/// Writes `docs/contract.txt` (two numbered clauses: payment, governing
/// law) and `docs/manual.md` (one heading) under `dir`.
pub fn write_two_documents(dir: &Path) {
    std::fs::create_dir_all(dir.join("docs")).expect("creating docs/");
    std::fs::write(
        dir.join("docs/contract.txt"),
        "1. Payment\n\nFees are due within thirty days of the invoice date. Late payments accrue interest of 1.5% per month.\n\n\
         2. Governing Law\n\nThis Agreement is governed by the laws of the State of New York. The courts of New York County have jurisdiction.\n",
    )
    .expect("writing a test document");
    std::fs::write(
        dir.join("docs/manual.md"),
        "---\nauthor: Device Team\ndate: 2024-02\n---\n\n# Reset\n\nHold the reset button for five seconds until the light blinks green. The device then restarts.\n",
    )
    .expect("writing a test document");
}

/// Ingests the first Corpus of `manifests` (YAML text, its paths relative
/// to `dir`) into `dir/data` as corpus `c`, and returns the report and the
/// first RetrievalRoute.
pub fn ingest_manifests(
    manifests: &str,
    dir: &Path,
) -> (trellis::ingest::IngestReport, trellis::spec::RetrievalRoute) {
    let origin = dir.join("trellis.yaml");
    let loaded = trellis::spec::parse_str(manifests, &origin).expect("manifests");
    let (corpus, _) = trellis::spec::select_corpus(&loaded, None, &origin).expect("a Corpus");
    let (profile, _) =
        trellis::spec::select_profile(&loaded, None, &origin).expect("an IndexProfile");
    let report = ingest_in(dir, &corpus.spec, &profile.spec, &[]).expect("ingest");
    let (route, _) = trellis::spec::select_route(&loaded, None, &origin).expect("a RetrievalRoute");
    (report, route.clone())
}

/// Ingests `corpus` with `profile` as corpus `c`, its sources and the
/// profile's paths relative to `dir`, into `dir/data`, keeping the
/// `served` versions.
pub fn ingest_in(
    dir: &Path,
    corpus: &trellis::spec::CorpusSpec,
    profile: &trellis::spec::IndexProfileSpec,
    served: &[String],
) -> Result<trellis::ingest::IngestReport, trellis::ingest::IngestError> {
    trellis::ingest::run(
        &trellis::ingest::Inputs {
            corpus_name: "c",
            corpus,
            sources: &trellis::source::SourceContext::new(dir),
            profile,
            profile_base: dir,
            data_dir: &dir.join("data"),
        },
        served,
        &|_, _, _| {},
    )
}

/// Resident memory of a process (`"self"` or a pid), in bytes; 0 where
/// `/proc` does not say.
pub fn resident_bytes(process: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{process}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// The development evaluation data: `$TRELLIS_EVAL_DIR`, else
/// `../shared/eval` beside the checkout. Tests that need it fail (never
/// skip) when it is missing, naming where they looked.
pub fn eval_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TRELLIS_EVAL_DIR") {
        return PathBuf::from(dir);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidates = [
        manifest.join("../shared/eval"),
        manifest.join("../../shared/eval"),
        PathBuf::from("/work/shared/eval"),
    ];
    for candidate in &candidates {
        if candidate.join("README.md").is_file() {
            return candidate.clone();
        }
    }
    panic!(
        "evaluation data not found; set TRELLIS_EVAL_DIR (looked in {})",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// A server that a project script starts on a free loopback port
/// (`scripts/<script> PORT`; the script installs it on first use), stopped
/// on drop. Panics when it does not listen within five minutes: a test
/// that needs it fails rather than skips.
pub struct ScriptServer {
    child: Child,
    pub port: u16,
}

impl ScriptServer {
    pub fn start(script: &str) -> ScriptServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("scripts")
            .join(script);
        let child = Command::new("bash")
            .arg(&script)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
        let mut server = ScriptServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(300);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("{} exited ({status}) before listening", script.display());
            }
            assert!(
                Instant::now() < deadline,
                "{} did not listen on port {port}",
                script.display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }
}

impl Drop for ScriptServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The variable that tells a test it runs in the child process
/// [`run_in_child`] started for it, and which test that is.
const CHILD_TEST: &str = "TRELLIS_TEST_CHILD";

/// Whether this process is the child [`run_in_child`] started for `test`.
pub fn is_child(test: &str) -> bool {
    std::env::var_os(CHILD_TEST).is_some_and(|t| t == test)
}

/// Runs `test` (its path in this program, `module::function`) alone in a
/// child process of this test program with `vars` in its environment, and
/// fails unless it passes there. The environment is process-wide, and
/// setting a variable while other tests' threads run is unsound, so a test
/// that needs one has it set where its process starts.
pub fn run_in_child(test: &str, vars: &[(&str, &std::ffi::OsStr)]) {
    let program = std::env::current_exe().expect("the test program's path");
    let output = std::process::Command::new(program)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_TEST, test)
        .envs(vars.iter().copied())
        .output()
        .expect("starting the test program again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{test} in a child process:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// splitmix64: a small deterministic generator, so that every run of a
/// benchmark draws the same vectors.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f32 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let v = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((-2.0 * u.max(1e-300).ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
    }
}
