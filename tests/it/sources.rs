//! Corpus sources beyond local paths: ConfigMaps (from the manifest set or
//! mounted), URLs over HTTP with their limits, and S3 buckets against a
//! real S3-compatible server (moto, started by `scripts/s3-test-server.sh`).
//! Also the source revision: an ingest over unchanged sources reads no
//! document.

use crate::common;

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use trellis::ingest::IngestReport;
use trellis::source::{self, SourceContext};
use trellis::spec;

const PROFILE: &str = r#"
apiVersion: trellis.dev/v1alpha1
kind: IndexProfile
metadata: {name: p}
"#;

/// Ingests the one Corpus of `manifests` (with [`PROFILE`]) into `data`.
fn ingest(manifests: &str, context: &SourceContext, data: &Path) -> IngestReport {
    try_ingest(manifests, context, data).expect("ingest")
}

fn try_ingest(
    manifests: &str,
    context: &SourceContext,
    data: &Path,
) -> Result<IngestReport, trellis::ingest::IngestError> {
    let text = format!("{PROFILE}\n---\n{manifests}");
    let loaded = spec::parse_str(&text, Path::new("t.yaml")).expect("manifests");
    let (corpus, _) = spec::select_corpus(&loaded, None, Path::new("t.yaml")).unwrap();
    let (profile, _) = spec::select_profile(&loaded, None, Path::new("t.yaml")).unwrap();
    let context = SourceContext {
        config_maps: spec::config_maps(&loaded),
        ..context.clone()
    };
    trellis::ingest::run(
        &trellis::ingest::Inputs {
            corpus_name: "c",
            corpus: &corpus.spec,
            sources: &context,
            profile: &profile.spec,
            profile_base: Path::new("."),
            data_dir: data,
        },
        &[],
        &|_, _, _| {},
    )
}

fn failures(report: &IngestReport) -> BTreeMap<String, String> {
    report
        .manifest
        .failed
        .iter()
        .map(|f| (f.key.clone(), f.reason.clone()))
        .collect()
}

/// A Corpus `c` of profile `p` whose spec continues with `rest` (YAML
/// indented by two, starting with `sources:`).
fn corpus_manifest(rest: &str) -> String {
    format!(
        "apiVersion: trellis.dev/v1alpha1\nkind: Corpus\nmetadata: {{name: c}}\nspec:\n  profileRef: {{name: p}}\n{}",
        rest.trim_start_matches('\n')
    )
}

/// The keys of the documents in the version a report names.
fn document_keys(data: &Path, report: &IngestReport) -> Vec<String> {
    let skeleton = data
        .join("indexes/c")
        .join(&report.manifest.version)
        .join("skeleton.json");
    let store: trellis::index::SkeletonStore =
        serde_json::from_slice(&std::fs::read(skeleton).unwrap()).unwrap();
    store.documents.into_iter().map(|d| d.key).collect()
}

#[test]
fn config_map_documents_come_from_the_manifest_set_and_from_a_mount() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = r##"
apiVersion: v1
kind: ConfigMap
metadata: {name: faq}
data:
  reset.md: "# Reset\n\nHold the reset button for five seconds until the light blinks."
  notes.txt: "Returns are accepted within thirty days of delivery."
binaryData:
  cover.html: PGgxPkNvdmVyPC9oMT48cD5TaGlwcGluZyBpcyBmcmVlIGFib3ZlIGZpZnR5IGV1cm9zLjwvcD4=
---
apiVersion: trellis.dev/v1alpha1
kind: Corpus
metadata: {name: c}
spec:
  profileRef: {name: p}
  sources: [{configMap: {name: faq}}]
  exclude: ["*.txt"]
"##;
    let context = SourceContext::new(dir.path());
    let report = ingest(manifests, &context, &dir.path().join("data"));
    assert_eq!(report.manifest.counts.documents, 2, "{:?}", report.manifest);
    assert!(failures(&report).is_empty(), "{:?}", failures(&report));
    assert_eq!(
        document_keys(&dir.path().join("data"), &report),
        ["configmap:faq/cover.html", "configmap:faq/reset.md"]
    );

    // Mounted as the kubelet does it: keys are links into `..data`.
    let mounts = dir.path().join("configmaps");
    let data = mounts.join("faq/..2026_11_25_10_00_00.1");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("reset.md"), "# Reset\n\nHold the button.").unwrap();
    std::os::unix::fs::symlink("..2026_11_25_10_00_00.1", mounts.join("faq/..data")).unwrap();
    std::os::unix::fs::symlink("..data/reset.md", mounts.join("faq/reset.md")).unwrap();
    let mounted = SourceContext {
        config_map_root: mounts.clone(),
        ..SourceContext::new(dir.path())
    };
    let corpus = r#"
apiVersion: trellis.dev/v1alpha1
kind: Corpus
metadata: {name: c}
spec:
  profileRef: {name: p}
  sources: [{configMap: {name: faq}}]
"#;
    let report = ingest(corpus, &mounted, &dir.path().join("data-mounted"));
    assert_eq!(report.manifest.counts.documents, 1);

    // Neither in the manifests nor mounted: the ingest fails and says so
    // rather than publishing a version without the source.
    let missing = corpus.replace("faq", "absent");
    let err = try_ingest(&missing, &mounted, &dir.path().join("data-missing")).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("source 0") && text.contains("\"absent\""),
        "{text}"
    );
}

/// A tiny HTTP/1.1 server on 127.0.0.1 serving fixed replies by path, and
/// counting the GET requests of each path.
struct Site {
    address: SocketAddr,
    gets: Arc<Mutex<BTreeMap<String, usize>>>,
    etag: Arc<Mutex<String>>,
}

impl Site {
    fn start() -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let gets: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
        let etag = Arc::new(Mutex::new("\"v1\"".to_string()));
        let flaky = Arc::new(AtomicUsize::new(0));
        let (g, e) = (gets.clone(), etag.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (g, e, f) = (g.clone(), e.clone(), flaky.clone());
                std::thread::spawn(move || serve(stream, address, &g, &e, &f));
            }
        });
        Site {
            address,
            gets,
            etag,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    fn gets(&self, path: &str) -> usize {
        self.gets.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

fn serve(
    mut stream: TcpStream,
    address: SocketAddr,
    gets: &Mutex<BTreeMap<String, usize>>,
    etag: &Mutex<String>,
    flaky: &AtomicUsize,
) {
    use std::io::{BufRead, BufReader, Write};
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                break;
            }
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        if method == "GET" {
            *gets.lock().unwrap().entry(path.clone()).or_default() += 1;
        }
        let etag = etag.lock().unwrap().clone();
        let body_of_a =
            format!("# Payment\n\nInvoices are payable within thirty days. Revision {etag}.");
        let (status, headers, body): (&str, Vec<String>, String) = match path.as_str() {
            "/docs/a.md" => ("200 OK", vec![format!("ETag: {etag}")], body_of_a),
            "/docs/b.txt" => (
                "200 OK",
                vec!["Last-Modified: Wed, 25 Nov 2026 10:00:00 GMT".into()],
                "Deliveries arrive within five working days of the order.".into(),
            ),
            "/big.txt" => ("200 OK", vec![], "x".repeat(5000)),
            "/same-host" => (
                "302 Found",
                vec!["Location: /docs/b.txt".into()],
                String::new(),
            ),
            "/page" => (
                "200 OK",
                vec!["Content-Type: text/html; charset=utf-8".into()],
                "<h1>Page</h1><p>Served without an extension.</p>".into(),
            ),
            "/other-host" => (
                "302 Found",
                // The same server under another name: another host.
                vec![format!(
                    "Location: http://localhost:{}/docs/b.txt",
                    address.port()
                )],
                String::new(),
            ),
            // The first GET fails (HEADs, for the revision, do not count).
            "/flaky.md" if method == "GET" && flaky.fetch_add(1, Ordering::SeqCst) == 0 => {
                ("503 Service Unavailable", vec![], String::new())
            }
            "/flaky.md" => (
                "200 OK",
                vec![],
                "# Flaky\n\nThe second attempt succeeds.".into(),
            ),
            _ => ("404 Not Found", vec![], "not here".into()),
        };
        let mut reply = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
        for h in headers {
            reply.push_str(&h);
            reply.push_str("\r\n");
        }
        reply.push_str("\r\n");
        if method != "HEAD" {
            reply.push_str(&body);
        }
        if stream.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

#[test]
fn http_sources_keep_to_their_hosts_limits_and_redirect_rule() {
    let site = Site::start();
    let dir = tempfile::tempdir().unwrap();
    let urls: Vec<String> = [
        "/docs/a.md",
        "/big.txt",
        "/missing.md",
        "/same-host",
        "/other-host",
        "/flaky.md",
        "/page",
    ]
    .iter()
    .map(|p| site.url(p))
    .chain(["https://elsewhere.example/a.md".to_string()])
    .collect();
    let manifests = corpus_manifest(&format!(
        r#"  sources:
  - http:
      urls: {urls:?}
      allowedHosts: ["127.0.0.1"]
      allowedNetworks: ["127.0.0.0/8"]
      maxBytes: 1000
      timeoutSeconds: 10
"#
    ));
    let report = ingest(
        &manifests,
        &SourceContext::new(dir.path()),
        &dir.path().join("data"),
    );
    let failed = failures(&report);
    // a.md, same-host (followed to b.txt), flaky.md (retried), page (its
    // format from Content-Type).
    assert_eq!(report.manifest.counts.documents, 4, "{failed:?}");
    let reason = |path: &str| failed.get(&site.url(path)).cloned().unwrap_or_default();
    assert!(reason("/big.txt").contains("maxBytes"), "{failed:?}");
    assert!(reason("/missing.md").contains("404"), "{failed:?}");
    assert!(reason("/other-host").contains("another host"), "{failed:?}");
    let elsewhere = failed.get("https://elsewhere.example/a.md").unwrap();
    assert!(elsewhere.contains("allowedHosts"), "{elsewhere}");
    assert_eq!(failed.len(), 4, "{failed:?}");
    // The server's 503 was retried.
    assert_eq!(site.gets("/flaky.md"), 2);
}

/// The ingest pod fetches from inside the cluster: an address on a
/// private, loopback or link-local network (cloud metadata) is refused,
/// whether written in the URL or resolved from a name, before any request
/// is sent, and without retries; unless the source lists its network.
#[test]
fn http_sources_refuse_internal_addresses_unless_listed() {
    let site = Site::start();
    let dir = tempfile::tempdir().unwrap();
    let port = site.address.port();
    let by_name = format!("http://localhost:{port}/docs/b.txt");
    let manifests = corpus_manifest(&format!(
        r#"  sources:
  - http: {{urls: ["{}", "{by_name}", "http://169.254.169.254/latest/meta-data/"]}}
"#,
        site.url("/docs/a.md"),
    ));
    let data = dir.path().join("data");
    let refused = try_ingest(&manifests, &SourceContext::new(dir.path()), &data).unwrap_err();
    let message = refused.to_string();
    assert!(
        message.contains("nothing to index: 0 documents read, 3 failed")
            && message.contains("allowedNetworks"),
        "{message}"
    );
    assert!(
        trellis::index::current_version(&data, "c").is_err(),
        "nothing was published"
    );
    assert_eq!(site.gets("/docs/a.md") + site.gets("/docs/b.txt"), 0);

    // One allowed document beside them: the others fail by name, saying
    // which range refused them.
    let manifests = corpus_manifest(&format!(
        r#"  sources:
  - http: {{urls: ["{}"], allowedNetworks: [127.0.0.1/32]}}
  - http: {{urls: ["{}", "{by_name}", "http://169.254.169.254/latest/meta-data/"]}}
"#,
        site.url("/page"),
        site.url("/docs/a.md"),
    ));
    let report = ingest(&manifests, &SourceContext::new(dir.path()), &data);
    assert_eq!(report.manifest.counts.documents, 1);
    let failed = failures(&report);
    assert!(
        failed[&site.url("/docs/a.md")].contains("loopback"),
        "{failed:?}"
    );
    assert!(failed[&by_name].contains("loopback"), "{failed:?}");
    let metadata = &failed["http://169.254.169.254/latest/meta-data/"];
    assert!(
        metadata.contains("cloud metadata") && metadata.contains("allowedNetworks"),
        "{metadata}"
    );
    assert_eq!(
        site.gets("/docs/b.txt"),
        0,
        "a refused name is never connected to"
    );
}

#[test]
fn unchanged_http_sources_are_not_read_again() {
    let site = Site::start();
    let dir = tempfile::tempdir().unwrap();
    let manifests = corpus_manifest(&format!(
        r#"  sources: [{{http: {{urls: ["{}", "{}"], allowedNetworks: [127.0.0.1]}}}}]
"#,
        site.url("/docs/a.md"),
        site.url("/docs/b.txt")
    ));
    let context = SourceContext::new(dir.path());
    let data = dir.path().join("data");
    let first = ingest(&manifests, &context, &data);
    assert!(!first.reused && !first.sources_unchanged);
    assert!(first.manifest.source_revision.is_some());
    assert_eq!(site.gets("/docs/a.md"), 1);

    // Same ETag and Last-Modified: the version stays, nothing is fetched.
    let second = ingest(&manifests, &context, &data);
    assert!(second.sources_unchanged, "{second:?}");
    assert_eq!(second.manifest.version, first.manifest.version);
    assert_eq!(site.gets("/docs/a.md"), 1);
    assert_eq!(site.gets("/docs/b.txt"), 1);

    // A new ETag: read again, a new version, the other document's
    // sentences from the embedding cache.
    *site.etag.lock().unwrap() = "\"v2\"".into();
    let third = ingest(&manifests, &context, &data);
    assert!(!third.sources_unchanged);
    assert_ne!(third.manifest.version, first.manifest.version);
    assert_eq!(site.gets("/docs/a.md"), 2);
    assert!(third.manifest.cached_sentences >= 1, "{:?}", third.manifest);
}

#[test]
fn unchanged_files_are_not_read_again_and_a_touched_one_is() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/a.md"), "# A\n\nOne sentence here.").unwrap();
    let manifests = r#"
apiVersion: trellis.dev/v1alpha1
kind: Corpus
metadata: {name: c}
spec:
  profileRef: {name: p}
  sources: [{path: docs}]
"#;
    let context = SourceContext::new(dir.path());
    let data = dir.path().join("data");
    let first = ingest(manifests, &context, &data);
    let documents = source::corpus_documents(
        &spec::parse_str(&format!("{PROFILE}\n---\n{manifests}"), Path::new("t.yaml"))
            .unwrap()
            .iter()
            .find_map(|m| m.manifest.as_corpus())
            .unwrap()
            .spec,
        &context,
    )
    .unwrap()
    .documents;
    assert_eq!(documents.len(), 1);
    let second = ingest(manifests, &context, &data);
    assert!(second.sources_unchanged);
    // Rewritten with the same bytes: the revision changes, the content
    // hash does not, so the version is reused after reading.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(dir.path().join("docs/a.md"), "# A\n\nOne sentence here.").unwrap();
    let third = ingest(manifests, &context, &data);
    assert!(!third.sources_unchanged && third.reused, "{third:?}");
    assert_eq!(third.manifest.version, first.manifest.version);
}

fn put(endpoint: &str, bucket: &str, key: &str, body: &str) {
    use object_store::ObjectStore;
    let store = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_region("us-east-1")
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(store.put(
            &object_store::path::Path::from(key),
            body.as_bytes().to_vec().into(),
        ))
        .unwrap();
}

#[test]
fn s3_sources_read_a_bucket_prefix_with_credentials_from_a_secret() {
    let server = common::ScriptServer::start("s3-test-server.sh");
    let endpoint = &format!("http://127.0.0.1:{}", server.port);
    // moto takes an unsigned request to create a bucket.
    let created = reqwest::blocking::Client::new()
        .put(format!("{endpoint}/contracts"))
        .send()
        .unwrap();
    assert!(created.status().is_success(), "{created:?}");
    put(
        endpoint,
        "contracts",
        "2026/a.md",
        "# Term\n\nThe term is two years.",
    );
    put(
        endpoint,
        "contracts",
        "2026/sub/b.txt",
        "Notices go to the registered office.",
    );
    put(
        endpoint,
        "contracts",
        "2026/skip.txt",
        "Left out by the exclude glob.",
    );
    put(endpoint, "contracts", "2026/image.png", "not a document");
    put(
        endpoint,
        "contracts",
        "2025/old.md",
        "# Old\n\nOutside the prefix.",
    );

    let dir = tempfile::tempdir().unwrap();
    let secrets = dir.path().join("secrets");
    std::fs::create_dir_all(secrets.join("s3-creds")).unwrap();
    std::fs::write(secrets.join("s3-creds/AWS_ACCESS_KEY_ID"), "test\n").unwrap();
    std::fs::write(secrets.join("s3-creds/AWS_SECRET_ACCESS_KEY"), "test\n").unwrap();
    let context = SourceContext {
        secret_root: secrets,
        ..SourceContext::new(dir.path())
    };
    let manifests = corpus_manifest(&format!(
        r#"  sources:
  - s3:
      bucket: contracts
      prefix: "2026/"
      endpoint: {endpoint}
      credentialsSecret: {{name: s3-creds}}
    exclude: ["skip.*"]
"#
    ));
    let data = dir.path().join("data");
    let first = ingest(&manifests, &context, &data);
    assert!(failures(&first).is_empty(), "{:?}", failures(&first));
    assert_eq!(
        document_keys(&data, &first),
        ["s3://contracts/2026/a.md", "s3://contracts/2026/sub/b.txt"]
    );

    // Unchanged bucket: no document read. A changed object: a new version.
    let second = ingest(&manifests, &context, &data);
    assert!(second.sources_unchanged, "{second:?}");
    put(
        endpoint,
        "contracts",
        "2026/a.md",
        "# Term\n\nThe term is three years.",
    );
    let third = ingest(&manifests, &context, &data);
    assert!(!third.sources_unchanged);
    assert_ne!(third.manifest.version, first.manifest.version);

    // A missing bucket fails the listing, and so the ingest, by name.
    let missing = manifests.replace("bucket: contracts", "bucket: absent");
    let err = try_ingest(&missing, &context, &dir.path().join("data-missing")).unwrap_err();
    assert!(err.to_string().contains("source 0"), "{err}");

    // Without the Secret mounted, the error says where it looked.
    let unmounted = SourceContext::new(dir.path());
    let err = try_ingest(
        &manifests,
        &SourceContext {
            secret_root: dir.path().join("none"),
            ..unmounted
        },
        &data,
    )
    .unwrap_err();
    assert!(err.to_string().contains("s3-creds"), "{err}");
}
