//! The retrieval service on a loopback port over a small index: liveness
//! before readiness, retrieve with filters, info, metrics, the request
//! limits, JSON errors, and a graceful stop.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::common;
use serde_json::{Value, json};

use trellis::embed;
use trellis::index::IndexVersion;
use trellis::retrieve::LoadedRoute;
use trellis::serve::{self, Limits, Service};
use trellis::spec::RetrievalRoute;

use crate::common::TWO_DOCUMENT_MANIFESTS as MANIFESTS;

/// Ingests two small documents and returns the route.
fn index(dir: &Path) -> RetrievalRoute {
    common::write_two_documents(dir);
    common::ingest_manifests(MANIFESTS, dir).1
}

fn load(dir: &Path) -> LoadedRoute {
    let index = IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    let embedder = embed::from_spec(&index.profile.embedding, None).unwrap();
    LoadedRoute {
        index,
        embedder,
        graph: None,
        reranker: None,
    }
}

/// A server on a free loopback port, stopped by dropping `stop`.
struct Server {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(service: Arc<Service>) -> Self {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = serve::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                serve::run(listener, service, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
            });
        });
        let addr = addr_rx.recv().unwrap();
        Self {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Asks for a graceful stop and waits until the server has ended.
    fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

/// A loaded service with `limits` on a free port, over a fresh index
/// kept in the returned directory.
fn start_with(limits: Limits) -> (tempfile::TempDir, Server) {
    let tmp = tempfile::tempdir().unwrap();
    let route = index(tmp.path());
    let service = Arc::new(Service::new("contracts", route.spec, limits, None));
    service.set_loaded(load(tmp.path())).unwrap();
    (tmp, Server::start(service))
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn post(server: &Server, body: &Value) -> (u16, Value) {
    let response = client()
        .post(server.url("/v1/retrieve"))
        .json(body)
        .send()
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().unwrap_or(Value::Null))
}

#[test]
fn live_at_once_ready_once_loaded_then_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let route = index(dir);
    let service = Arc::new(Service::new(
        "contracts",
        route.spec,
        Limits::default(),
        None,
    ));
    let server = Server::start(Arc::clone(&service));
    let http = client();

    // Before the index is loaded: live, not ready, retrieval refused.
    assert_eq!(
        http.get(server.url("/healthz")).send().unwrap().status(),
        200
    );
    let ready = http.get(server.url("/readyz")).send().unwrap();
    assert_eq!(ready.status(), 503);
    let (status, body) = post(&server, &json!({"query": "When are fees due?"}));
    assert_eq!(status, 503);
    assert_eq!(body["error"]["code"], "not_ready");

    service.set_loaded(load(dir)).unwrap();
    assert_eq!(
        http.get(server.url("/readyz")).send().unwrap().status(),
        200
    );

    let (status, body) = post(&server, &json!({"query": "When are fees due?", "k": 2}));
    assert_eq!(status, 200, "{body}");
    let hits = body["hits"].as_array().unwrap();
    // Two sentences, in one result when they share a paragraph.
    let shown: usize = hits
        .iter()
        .map(|h| 1 + h["highlights"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(shown, 2, "{body}");
    assert!(hits[0]["text"].as_str().unwrap().contains("thirty days"));
    assert_eq!(hits[0]["citation"]["document"], "docs/contract.txt");
    assert!(hits[0]["signals"]["dense"].as_f64().unwrap() > 0.0);
    assert!(body["context"].as_str().unwrap().contains("Fees are due"));
    assert_eq!(body["route"], "contracts");

    // Filters: a document, a section.
    let (status, body) = post(
        &server,
        &json!({"query": "When are fees due?", "filters": {"documents": ["docs/manual.md"]}}),
    );
    assert_eq!(status, 200);
    let hits = body["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert!(
        hits.iter()
            .all(|h| h["citation"]["document"] == "docs/manual.md")
    );
    let (_, body) = post(
        &server,
        &json!({"query": "Which law governs?", "filters": {"section_prefix": ["Governing Law"]}}),
    );
    let hits = body["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    for hit in hits {
        let path = hit["citation"]["section_path"].as_array().unwrap();
        assert_eq!(path[0], "2. Governing Law", "{hit}");
    }

    // Metadata: every document carries its format.
    let (status, body) = post(
        &server,
        &json!({"query": "When are fees due?", "filters": {"metadata": {"format": "markdown"}}}),
    );
    assert_eq!(status, 200, "{body}");
    let hits = body["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert!(
        hits.iter()
            .all(|h| h["citation"]["document"] == "docs/manual.md")
    );
    let (_, body) = post(
        &server,
        &json!({"query": "fees", "filters": {"metadata": {"format": "pdf"}}}),
    );
    assert!(body["hits"].as_array().unwrap().is_empty(), "{body}");

    // Conditions on the documents: what they record of themselves (the
    // manual's front matter), where they lie.
    let (status, body) = post(
        &server,
        &json!({"query": "When are fees due?",
                "filters": {"documents": {"author": "device team", "date": "2023..2024"}}}),
    );
    assert_eq!(status, 200, "{body}");
    let hits = body["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    for hit in hits {
        assert_eq!(hit["citation"]["document"], "docs/manual.md", "{hit}");
        assert_eq!(
            hit["citation"]["document_info"],
            json!({"author": "Device Team", "date": "2024-02"})
        );
    }
    let (_, body) = post(
        &server,
        &json!({"query": "When are fees due?",
                "filters": {"documents": {"path_prefix": "docs/", "ids": ["docs/contract.txt"]}}}),
    );
    let hits = body["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert!(
        hits.iter()
            .all(|h| h["citation"]["document"] == "docs/contract.txt")
    );
    let (_, body) = post(
        &server,
        &json!({"query": "fees", "filters": {"documents": {"date": "2024-03"}}}),
    );
    assert!(body["hits"].as_array().unwrap().is_empty(), "{body}");
    // No document here is a form: none has a field to match.
    let (status, body) = post(
        &server,
        &json!({"query": "fees", "filters": {"documents": {"fields": {"Approved": "yes"}}}}),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body["hits"].as_array().unwrap().is_empty(), "{body}");
    for (documents, reason) in [
        (json!({"date": "someday"}), "\"someday\" is not a date"),
        (json!({"colour": "red"}), "unknown field `colour`"),
        (
            json!("docs/manual.md"),
            "a list of document keys or ids, or an object",
        ),
    ] {
        let (status, body) = post(
            &server,
            &json!({"query": "fees", "filters": {"documents": documents}}),
        );
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"]["code"], "invalid_request");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(reason), "{message}");
    }

    // Selection overrides: one result per document.
    let (status, body) = post(
        &server,
        &json!({"query": "When are fees due?", "k": 3, "selection": {"max_per_document": 1}}),
    );
    assert_eq!(status, 200, "{body}");
    let documents: Vec<&str> = body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["citation"]["document"].as_str().unwrap())
        .collect();
    assert_eq!(documents.len(), 2, "{body}");
    assert_ne!(documents[0], documents[1]);

    // Request ids: the caller's is echoed, else one is made.
    let response = http
        .post(server.url("/v1/retrieve"))
        .header("x-request-id", "caller-42")
        .json(&json!({"query": "fees"}))
        .send()
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "caller-42");
    let response = http.get(server.url("/healthz")).send().unwrap();
    assert_eq!(response.headers()["x-request-id"].len(), 16);

    // The OpenAPI document.
    let openapi: Value = http
        .get(server.url("/openapi.json"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert!(openapi["paths"]["/v1/retrieve"]["post"].is_object());
    assert_eq!(
        openapi["components"]["schemas"]["RetrieveRequest"]["properties"]["k"]["maximum"],
        50
    );

    // Info and metrics.
    let info: Value = http
        .get(server.url("/v1/info"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(info["route"], "contracts");
    assert_eq!(info["corpus"], "c");
    assert_eq!(info["counts"]["documents"], 2);
    assert_eq!(info["index_version"], body["index_version"]);
    let metrics = http
        .get(server.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains(r#"trellis_retrieve_requests_total{route="contracts",outcome="ok"} 11"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"outcome="not_ready""#));
    assert!(metrics.contains("trellis_retrieve_request_seconds_bucket"));
    assert!(metrics.contains("trellis_query_embed_seconds_count 11"));
    // Every embedded query went through the batcher, the warm-up too.
    let batched: f64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("trellis_query_embed_batch_size_sum "))
        .and_then(|sum| sum.trim().parse().ok())
        .unwrap_or_else(|| panic!("no batch size sum in {metrics}"));
    assert_eq!(batched, 12.0, "{metrics}");
    let version = info["index_version"].as_str().unwrap();
    assert!(metrics.contains(&format!(r#"version="{version}""#)));

    server.stop();
}

/// Requests at once share encoder calls, and each still gets its own
/// query's answer: the same first hit as when it is asked alone.
#[test]
fn concurrent_requests_get_their_own_answers() {
    let (_tmp, server) = start_with(Limits::default());
    let queries = [
        "When are fees due?",
        "Which law governs the agreement?",
        "How can the agreement be terminated?",
        "fees",
    ];
    let first_document = |body: &Value| body["hits"][0]["citation"]["document"].clone();
    let alone: Vec<Value> = queries
        .iter()
        .map(|q| {
            let (status, body) = post(&server, &json!({"query": q}));
            assert_eq!(status, 200, "{body}");
            first_document(&body)
        })
        .collect();
    let start = std::sync::Barrier::new(16);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let (server, start, query) = (&server, &start, queries[i % queries.len()]);
                scope.spawn(move || {
                    start.wait();
                    let (status, body) = post(server, &json!({"query": query}));
                    assert_eq!(status, 200, "{body}");
                    (i % queries.len(), first_document(&body))
                })
            })
            .collect();
        for handle in handles {
            let (which, document) = handle.join().unwrap();
            assert_eq!(document, alone[which], "{}", queries[which]);
        }
    });
}

#[test]
fn limits_and_bad_requests_get_json_errors() {
    let (dir, server) = start_with(Limits {
        body_bytes: 1_024,
        query_chars: 100,
        max_k: 5,
        ..Limits::default()
    });

    let cases = [
        (json!({"query": "x".repeat(2_000)}), 413, "body_too_large"),
        (json!({"query": "fee ".repeat(30)}), 400, "query_too_long"),
        (json!({"query": "fees", "k": 6}), 400, "invalid_k"),
        (json!({"query": "fees", "k": 0}), 400, "invalid_k"),
        (json!({"query": "   "}), 400, "empty_query"),
        (
            json!({"query": "fees", "colour": "red"}),
            400,
            "invalid_request",
        ),
        (json!({"k": 2}), 400, "invalid_request"),
        (
            json!({"query": "fees", "selection": {"neighbours": 9}}),
            400,
            "invalid_selection",
        ),
        (
            json!({"query": "fees", "selection": {"topK": 9}}),
            400,
            "invalid_request",
        ),
    ];
    for (body, status, code) in cases {
        let (got, answer) = post(&server, &body);
        assert_eq!(got, status, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(!message.contains(dir.path().to_str().unwrap()), "{message}");
    }
    // Not JSON at all, and an unknown endpoint.
    let response = client()
        .post(server.url("/v1/retrieve"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .unwrap();
    assert_eq!(response.status(), 400);
    // No response may be read as another type than the one it says.
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    let body: Value = response.json().unwrap();
    assert_eq!(body["error"]["code"], "invalid_request");
    let response = client().get(server.url("/v2/nothing")).send().unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    let body: Value = response.json().unwrap();
    assert_eq!(body["error"]["code"], "not_found");
    // A wrong method and a body that is not declared JSON: the same error
    // format as every other answer.
    let response = client().get(server.url("/v1/retrieve")).send().unwrap();
    assert_eq!(response.status(), 405);
    let body: Value = response.json().unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed");
    let response = client()
        .post(server.url("/v1/retrieve"))
        .header("content-type", "text/plain")
        .body(r#"{"query": "fees"}"#)
        .send()
        .unwrap();
    assert_eq!(response.status(), 415);
    let body: Value = response.json().unwrap();
    assert_eq!(body["error"]["code"], "unsupported_media_type");

    server.stop();
}

/// The real embedder, except that a query containing "hold" waits for the
/// test to release it: a request kept in flight on purpose.
struct GatedEmbedder {
    inner: Box<dyn embed::Embedder>,
    entered: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl embed::Embedder for GatedEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, embed::EmbedError> {
        self.inner.embed_documents(texts)
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, embed::EmbedError> {
        if text.contains("hold") {
            self.entered.lock().unwrap().send(()).unwrap();
            self.release.lock().unwrap().recv().unwrap();
        }
        self.inner.embed_query(text)
    }
}

/// A service over the test index whose embedder holds every query that
/// contains "hold": `entered` hears when one arrives, `release` lets it go.
struct Gated {
    _dir: tempfile::TempDir,
    server: Server,
    entered: std::sync::mpsc::Receiver<()>,
    release: std::sync::mpsc::Sender<()>,
}

fn start_gated(limits: Limits) -> Gated {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let route = index(dir);
    let service = Arc::new(Service::new("contracts", route.spec, limits, None));
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    let LoadedRoute {
        index, embedder, ..
    } = load(dir);
    service
        .set_loaded(LoadedRoute {
            index,
            embedder: Box::new(GatedEmbedder {
                inner: embedder,
                entered: std::sync::Mutex::new(entered_tx),
                release: std::sync::Mutex::new(release_rx),
            }),
            graph: None,
            reranker: None,
        })
        .unwrap();
    Gated {
        _dir: tmp,
        server: Server::start(service),
        entered,
        release,
    }
}

/// A retrieval held past the limit is answered 504 at the limit, without
/// waiting for it (the query's embedding is held until the answer is in).
#[test]
fn a_retrieval_over_its_time_limit_is_a_504() {
    let gated = start_gated(Limits {
        timeout: Duration::from_millis(200),
        ..Limits::default()
    });
    let (status, body) = post(&gated.server, &json!({"query": "hold: when are fees due?"}));
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], "timeout");
    gated.entered.recv_timeout(Duration::from_secs(30)).unwrap();
    gated.release.send(()).unwrap();
    gated.server.stop();
}

#[test]
fn saturation_is_a_503_and_shutdown_drains_requests_in_flight() {
    let Gated {
        _dir,
        server,
        entered,
        release,
    } = start_gated(Limits {
        concurrency: 1,
        ..Limits::default()
    });

    // One request holds the only slot.
    let url = server.url("/v1/retrieve");
    let held = std::thread::spawn(move || {
        let response = client()
            .post(url)
            .json(&json!({"query": "hold: when are fees due?"}))
            .send()
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json::<Value>().unwrap())
    });
    entered.recv_timeout(Duration::from_secs(30)).unwrap();

    // A second one is turned away with a hint when to retry.
    let response = client()
        .post(server.url("/v1/retrieve"))
        .json(&json!({"query": "Which law governs?"}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: Value = response.json().unwrap();
    assert_eq!(body["error"]["code"], "overloaded");

    // Stop while the first is in flight: it still gets its answer, and the
    // server ends only after that.
    let Server {
        addr,
        mut stop,
        mut thread,
    } = server;
    stop.take().unwrap().send(()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!thread.as_ref().unwrap().is_finished());
    release.send(()).unwrap();
    let (status, body) = held.join().unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(!body["hits"].as_array().unwrap().is_empty());
    thread.take().unwrap().join().unwrap();
    // Closed for new connections.
    assert!(
        client()
            .get(format!("http://{addr}/healthz"))
            .send()
            .is_err()
    );
}

const TOKENS: &str = "# who sees what\n\
                      token-for-team-a-0001 team-a\n\
                      token-for-team-b-0002 team-b\n\
                      token-for-everyone-03 *\n";

#[test]
fn a_token_sees_only_its_tags_through_anchors_expansion_and_links() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("docs/a")).unwrap();
    std::fs::create_dir_all(dir.join("docs/b")).unwrap();
    // Near-identical clauses, so that RELATED_TO links cross the two.
    std::fs::write(
        dir.join("docs/a/alpha.txt"),
        "Payment\n\nFees are due within thirty days of the invoice date. Alpha pays by wire transfer.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("docs/b/beta.txt"),
        "Payment\n\nFees are due within thirty days of the date of the invoice. Beta pays by cheque.\n",
    )
    .unwrap();
    let (_, route) = common::ingest_manifests(common::ACL_MANIFESTS, dir);
    let loaded = load(dir);
    // The test means something only if a link crosses the boundary.
    let store = &loaded.index.store;
    let crossing = loaded.index.related.iter().enumerate().any(|(i, edges)| {
        edges
            .iter()
            .any(|&(j, _)| store.sentences[i].document != store.sentences[j as usize].document)
    });
    assert!(crossing, "no RELATED_TO link between the two documents");

    let tokens = serve::Tokens::parse(TOKENS, Path::new("tokens")).unwrap();
    let service = Arc::new(Service::new(
        "shared",
        route.spec,
        Limits::default(),
        Some(tokens),
    ));
    service.set_loaded(loaded).unwrap();
    let server = Server::start(service);
    let ask = |token: Option<&str>, query: &str| {
        let mut request = client()
            .post(server.url("/v1/retrieve"))
            .json(&json!({"query": query}));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().unwrap();
        let status = response.status().as_u16();
        (status, response.json::<Value>().unwrap())
    };

    for (token, own, other) in [
        ("token-for-team-a-0001", "alpha", "beta"),
        ("token-for-team-b-0002", "beta", "alpha"),
    ] {
        // Questions aimed at either document, and at the other one's words.
        for query in [
            "When are fees due?",
            "Alpha pays by wire transfer",
            "Beta pays by cheque",
        ] {
            let (status, body) = ask(Some(token), query);
            assert_eq!(status, 200, "{body}");
            let text = body.to_string().to_lowercase();
            assert!(!text.contains(other), "{token} saw {other}: {body}");
            for hit in body["hits"].as_array().unwrap() {
                assert!(hit["citation"]["document"].as_str().unwrap().contains(own));
            }
        }
    }
    // A token for every tag sees both.
    let (_, body) = ask(Some("token-for-everyone-03"), "When are fees due?");
    let text = body.to_string().to_lowercase();
    assert!(text.contains("alpha") && text.contains("beta"), "{body}");
    // Counts describe every document: only for a token that sees them all.
    let info = |token: &str| -> Value {
        client()
            .get(server.url("/v1/info"))
            .bearer_auth(token)
            .send()
            .unwrap()
            .json()
            .unwrap()
    };
    assert_eq!(info("token-for-everyone-03")["counts"]["documents"], 2);
    assert!(info("token-for-team-a-0001")["counts"].is_null());

    // No token, a wrong one, another scheme: 401 with a challenge.
    for token in [None, Some("token-for-team-a-0009")] {
        let (status, body) = ask(token, "When are fees due?");
        assert_eq!(status, 401);
        assert_eq!(body["error"]["code"], "unauthorized");
    }
    let response = client()
        .post(server.url("/v1/retrieve"))
        .header("authorization", "Basic dXNlcjpwYXNz")
        .json(&json!({"query": "fees"}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
    // The scheme's case does not matter (RFC 9110).
    for scheme in ["bearer", "BEARER"] {
        let response = client()
            .post(server.url("/v1/retrieve"))
            .header("authorization", format!("{scheme} token-for-everyone-03"))
            .json(&json!({"query": "fees"}))
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "scheme {scheme}");
    }
    let response = client().get(server.url("/v1/info")).send().unwrap();
    assert_eq!(response.status(), 401);
    // Probes and metrics stay open.
    assert_eq!(
        client().get(server.url("/readyz")).send().unwrap().status(),
        200
    );
    assert_eq!(
        client()
            .get(server.url("/metrics"))
            .send()
            .unwrap()
            .status(),
        200
    );
    server.stop();
}

/// Writes the manifests and two documents into `dir` and ingests them
/// with the binary into `dir/data`; the binary's path.
fn ingest_with_the_binary(dir: &Path) -> &'static str {
    common::write_two_documents(dir);
    std::fs::write(dir.join("trellis.yaml"), MANIFESTS).unwrap();
    let trellis = env!("CARGO_BIN_EXE_trellis");
    let ingest = std::process::Command::new(trellis)
        .args(["ingest", "-f"])
        .arg(dir.join("trellis.yaml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .output()
        .unwrap();
    assert!(ingest.status.success(), "{ingest:?}");
    trellis
}

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The binary as a pod runs it: JSON logs that never carry the query text,
/// a loud warning when no token file is given, and on SIGTERM an orderly
/// stop with status 0: unready at once, still answering for the shutdown
/// delay (endpoints drop the pod meanwhile), then drained.
#[test]
fn the_binary_logs_without_query_text_and_stops_on_sigterm() {
    use std::process::{Command, Stdio};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let trellis = ingest_with_the_binary(dir);
    let port = free_port();
    let child = Command::new(trellis)
        .args(["--log-format", "json", "serve", "-f"])
        .arg(dir.join("trellis.yaml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--shutdown-delay", "3"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = client();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !http
        .get(format!("{base}/readyz"))
        .send()
        .is_ok_and(|r| r.status() == 200)
    {
        assert!(std::time::Instant::now() < deadline, "not ready in 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let response = http
        .post(format!("{base}/v1/retrieve"))
        .json(&json!({"query": "When are fees due?"}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while http
        .get(format!("{base}/readyz"))
        .send()
        .is_ok_and(|r| r.status() == 200)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "still ready after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let during = http
        .post(format!("{base}/v1/retrieve"))
        .json(&json!({"query": "Who may terminate?"}))
        .send()
        .expect("requests are accepted during the shutdown delay");
    assert_eq!(during.status(), 200);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("the service is OPEN"), "{log}");
    assert!(!log.contains("fees due"), "query text in the log:\n{log}");
    let retrieve = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["fields"]["message"] == "retrieve")
        .unwrap_or_else(|| panic!("no retrieve line in\n{log}"));
    assert_eq!(retrieve["span"]["id"], id.as_str(), "{retrieve}");
    assert_eq!(retrieve["fields"]["route"], "contracts");
    // Three sentences, in as many results as they show passages.
    assert_eq!(retrieve["fields"]["sentences"], 3, "{retrieve}");
    assert!(
        retrieve["fields"]["results"]
            .as_u64()
            .is_some_and(|n| (1..=3).contains(&n))
    );
    assert!(log.contains("drained; stopped"), "{log}");
}

#[test]
fn a_rotated_token_file_takes_effect_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let route = index(dir.path());
    let file = dir.path().join("tokens");
    std::fs::write(&file, "old-token-0000000001 *\n").unwrap();
    let service = Arc::new(Service::new(
        "contracts",
        route.spec,
        Limits::default(),
        Some(serve::Tokens::load(&file).unwrap()),
    ));
    service.set_loaded(load(dir.path())).unwrap();
    let server = Server::start(Arc::clone(&service));
    let status = |token: &str| {
        client()
            .post(server.url("/v1/retrieve"))
            .bearer_auth(token)
            .json(&json!({"query": "When are fees due?"}))
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(status("old-token-0000000001"), 200);
    assert!(!service.reload_tokens(&file).unwrap(), "unchanged");

    // The Secret rotates: the kubelet swaps the file's content.
    std::fs::write(&file, "new-token-0000000002 *\n").unwrap();
    assert!(service.reload_tokens(&file).unwrap());
    assert_eq!(status("old-token-0000000001"), 401);
    assert_eq!(status("new-token-0000000002"), 200);

    // A broken file is refused and the tokens in use stay.
    std::fs::write(&file, "no-tags-on-this-line\n").unwrap();
    assert!(service.reload_tokens(&file).is_err());
    assert_eq!(status("new-token-0000000002"), 200);
    std::fs::remove_file(&file).unwrap();
    assert!(service.reload_tokens(&file).is_err());
    assert_eq!(status("new-token-0000000002"), 200);

    // An emptied file (no token, comments only) revokes every token: how
    // an operator withdraws them all at once. Tokens written back work.
    std::fs::write(&file, "# every token withdrawn\n").unwrap();
    assert!(service.reload_tokens(&file).unwrap());
    assert_eq!(status("new-token-0000000002"), 401);
    std::fs::write(&file, "").unwrap();
    assert!(!service.reload_tokens(&file).unwrap(), "still none");
    assert_eq!(status("new-token-0000000002"), 401);
    std::fs::write(&file, "new-token-0000000002 *\n").unwrap();
    assert!(service.reload_tokens(&file).unwrap());
    assert_eq!(status("new-token-0000000002"), 200);
    server.stop();
}

/// Opens a connection and sends the start of a request head, never its
/// end: what a slow or hostile client holds open.
fn half_sent(addr: SocketAddr) -> std::net::TcpStream {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .write_all(b"POST /v1/retrieve HTTP/1.1\r\nHost: trellis\r\n")
        .unwrap();
    stream
}

/// Whether the server has closed `stream`: reads until end of file (after
/// whatever it answered) or gives up after `wait`.
fn closed_within(stream: &mut std::net::TcpStream, wait: Duration) -> bool {
    use std::io::Read;
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut buffer = [0_u8; 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// Connections past the limit are served for the probes only, a client
/// that never finishes its request head is closed after the head timeout,
/// and one that trickles its body gets a 408 after the body timeout.
#[test]
fn idle_connections_time_out_and_probes_answer_past_the_limit() {
    use std::io::{Read, Write};
    let (_dir, server) = start_with(Limits {
        max_connections: 4,
        header_timeout: Duration::from_millis(800),
        body_timeout: Duration::from_millis(800),
        ..Limits::default()
    });

    // Four idle clients fill the regular lane.
    let mut idle: Vec<_> = (0..4).map(|_| half_sent(server.addr)).collect();
    std::thread::sleep(Duration::from_millis(100));
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(5))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let health = http.get(server.url("/healthz")).send().unwrap();
    assert_eq!(health.status(), 200, "the probe lane answers /healthz");
    let metrics = http
        .get(server.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains(r#"trellis_connections{lane="regular"} 4"#),
        "{metrics}"
    );
    let busy = http
        .post(server.url("/v1/retrieve"))
        .json(&json!({"query": "When are fees due?"}))
        .send()
        .unwrap();
    assert_eq!(busy.status(), 503);
    assert!(busy.headers().contains_key("retry-after"));
    let body: Value = busy.json().unwrap();
    assert_eq!(body["error"]["code"], "too_many_connections");

    // The head timeout closes every idle client; the lane is free again.
    for stream in &mut idle {
        assert!(closed_within(stream, Duration::from_secs(5)));
    }
    let (status, _) = post(&server, &json!({"query": "When are fees due?"}));
    assert_eq!(status, 200);

    // A body promised and never sent in full: 408 in the JSON format.
    let mut trickle = std::net::TcpStream::connect(server.addr).unwrap();
    trickle
        .write_all(
            b"POST /v1/retrieve HTTP/1.1\r\nHost: trellis\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{\"query\":",
        )
        .unwrap();
    trickle
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut answer = Vec::new();
    let _ = trickle.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""code":"body_timeout""#), "{answer}");
    server.stop();
}

/// A client holding a connection open with a half-sent request does not
/// keep a stopping server alive past the drain timeout.
#[test]
fn an_idle_connection_does_not_hold_shutdown_past_the_drain_timeout() {
    let (_dir, server) = start_with(Limits {
        header_timeout: Duration::from_secs(120),
        drain_timeout: Duration::from_millis(500),
        ..Limits::default()
    });
    let _idle = half_sent(server.addr);
    std::thread::sleep(Duration::from_millis(100));
    let asked = std::time::Instant::now();
    server.stop();
    assert!(
        asked.elapsed() < Duration::from_secs(30),
        "stopped after {:?}",
        asked.elapsed()
    );
}

/// The binary under load: 2,000 clients each holding a half-sent request
/// against a process limited to 1,024 descriptors. `/healthz` keeps
/// answering, and SIGTERM ends the process within the shutdown delay and
/// drain timeout while the idle connections are still open.
#[test]
fn two_thousand_idle_clients_neither_starve_probes_nor_hold_shutdown() {
    use std::process::{Command, Stdio};
    const CLIENTS: usize = 2_000;
    #[cfg(unix)]
    {
        // This test's own end of the connections needs descriptors too.
        use nix::sys::resource::{Resource, getrlimit, setrlimit};
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        if soft < 2 * CLIENTS as u64 + 256 {
            assert!(hard >= CLIENTS as u64 + 256, "descriptor hard limit {hard}");
            setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let trellis = ingest_with_the_binary(dir);
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // `ulimit -n 1024` in a shell that then becomes the server.
    let command = format!(
        "ulimit -n 1024 && exec \"$0\" serve -f \"$1\" --data-dir \"$2\" --listen {addr} \
         --header-timeout-ms 60000 --shutdown-delay 0.5 --drain-timeout 2"
    );
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .arg(trellis)
        .arg(dir.join("trellis.yaml"))
        .arg(dir.join("data"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(2))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let health = || {
        http.get(format!("http://{addr}/healthz"))
            .send()
            .is_ok_and(|r| r.status() == 200)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !health() {
        assert!(std::time::Instant::now() < deadline, "not live in 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }

    let mut idle = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        use std::io::Write;
        // Past the server's limits a connection may be refused or closed
        // at once; that is the point, so such failures are not errors.
        if let Ok(mut stream) = std::net::TcpStream::connect(addr) {
            let _ = stream.write_all(b"POST /v1/retrieve HTTP/1.1\r\nHost: trellis\r\n");
            idle.push(stream);
        }
    }
    // Every probe within a few tries of the kubelet's default (three
    // failures in a row restart the pod).
    for probe in 0..10 {
        if !(0..3).any(|_| health()) {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "/healthz failed three times running (probe {probe}):\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }

    let stopping = std::time::Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Duration::from_secs(15);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if stopping.elapsed() > deadline {
            let _ = child.kill();
            panic!("still running {deadline:?} after SIGTERM with idle connections open");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut log = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        use std::io::Read;
        let _ = stderr.read_to_string(&mut log);
    }
    assert!(status.success(), "{status:?}\n{log}");
    assert!(log.contains("connection limit lowered"), "{log}");
    drop(idle);
}

#[test]
fn the_console_is_behind_the_token_and_a_request_may_pick_its_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let route = index(tmp.path());
    let tokens = serve::Tokens::parse(TOKENS, Path::new("tokens")).unwrap();
    let service = Arc::new(Service::new(
        "contracts",
        route.spec,
        Limits::default(),
        Some(tokens),
    ));
    service.set_loaded(load(tmp.path())).unwrap();
    let server = Server::start(service);
    let page = |cookie: Option<&str>, path: &str| {
        let mut request = client().get(server.url(path));
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.send().unwrap();
        let status = response.status().as_u16();
        let csp = response
            .headers()
            .get("content-security-policy")
            .map(|v| v.to_str().unwrap().to_string());
        (status, csp, response.text().unwrap())
    };

    // No token, or a bad one: the sign-in form, with the reason.
    let (status, csp, body) = page(None, "/");
    assert_eq!(status, 401);
    assert!(csp.unwrap().contains("script-src 'self'"));
    assert!(body.contains("401 Unauthorized: a bearer token is required"));
    let (status, _, body) = page(Some("trellis_token=not-a-token-at-all"), "/");
    assert_eq!(status, 401);
    assert!(body.contains("401 Unauthorized: the bearer token is not valid"));
    assert_eq!(page(None, "/console/app.js").0, 401);
    // What the sign-in page needs is open.
    assert_eq!(page(None, "/console/console.css").0, 200);
    assert_eq!(page(None, "/console/signin.js").0, 200);

    // A token from the cookie, percent-encoded as the form writes it, or
    // from the header: the console.
    let cookie = "theme=dark; trellis_token=token-for-everyone%2D03";
    let (status, _, body) = page(Some(cookie), "/");
    assert_eq!(status, 200);
    assert!(body.contains("/console/app.js"));
    let (status, _, script) = page(Some(cookie), "/console/app.js");
    assert_eq!(status, 200);
    assert!(script.contains("/v1/retrieve"));
    let response = client()
        .get(server.url("/"))
        .bearer_auth("token-for-everyone-03")
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);

    // The cookie alone does not open the API: only the header does.
    let response = client()
        .post(server.url("/v1/retrieve"))
        .header("cookie", cookie)
        .json(&json!({"query": "When are fees due?"}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 401);

    // A request may pick its anchor mode: BM25 alone fuses one list, so
    // its anchors' signals carry no dense score.
    let ask = |body: Value| -> Value {
        let response = client()
            .post(server.url("/v1/retrieve"))
            .bearer_auth("token-for-everyone-03")
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json().unwrap()
    };
    let bm25 = ask(json!({"query": "When are fees due?", "mode": "bm25"}));
    let hits = bm25["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h["signals"]["dense"] == 0.0), "{bm25}");
    let full = ask(json!({"query": "When are fees due?"}));
    assert!(
        full["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["signals"]["dense"].as_f64().unwrap() > 0.0),
        "{full}"
    );
    let response = client()
        .post(server.url("/v1/retrieve"))
        .bearer_auth("token-for-everyone-03")
        .json(&json!({"query": "When are fees due?", "mode": "sideways"}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 400);
    server.stop();
}

/// A service whose load never finishes (here its model's pooling
/// configuration is a FIFO no one writes: reading it blocks for ever)
/// answers liveness,
/// stays unready, and still ends on SIGTERM, with status 0, within the
/// shutdown delay: it used to wait for the load first, for ever.
#[test]
fn sigterm_ends_a_service_that_is_still_loading() {
    use std::process::{Command, Stdio};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let trellis = ingest_with_the_binary(dir);
    let real = embed::resolve_model_dir(&trellis::spec::EmbeddingSpec::default(), None).unwrap();
    let models = dir.join("models");
    let stuck = models.join(real.file_name().unwrap());
    std::fs::create_dir_all(&stuck).unwrap();
    for entry in std::fs::read_dir(&real).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != "1_Pooling" {
            std::os::unix::fs::symlink(entry.path(), stuck.join(entry.file_name())).unwrap();
        }
    }
    std::fs::create_dir(stuck.join("1_Pooling")).unwrap();
    nix::unistd::mkfifo(
        &stuck.join("1_Pooling/config.json"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .unwrap();
    let port = free_port();
    let mut child = Command::new(trellis)
        .args(["serve", "-f"])
        .arg(dir.join("trellis.yaml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--shutdown-delay", "1"])
        .env("TRELLIS_MODEL_DIR", &models)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = client();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !http
        .get(format!("{base}/healthz"))
        .send()
        .is_ok_and(|r| r.status() == 200)
    {
        assert!(std::time::Instant::now() < deadline, "no liveness in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let ready = http.get(format!("{base}/readyz")).send().unwrap();
    assert_eq!(ready.status(), 503, "ready with a load that cannot finish");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running 15 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");
}

/// A line of 400 KB without punctuation is cut into sentences within
/// `sentences.maxChars`, so a hit in it carries one such sentence, and a
/// response never passes the service's response limit: past it, passages
/// are cut around their sentence and the response says `truncated`.
#[test]
fn sentences_and_responses_have_sane_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    common::write_two_documents(dir);
    let line = "the supplier keeps the records of every shipment and the buyer may inspect them "
        .repeat(5_000);
    std::fs::write(dir.join("docs/long.txt"), &line).unwrap();
    let route = common::ingest_manifests(MANIFESTS, dir).1;
    let limits = Limits {
        response_bytes: 16 * 1024,
        ..Limits::default()
    };
    let service = Arc::new(Service::new("contracts", route.spec, limits, None));
    service.set_loaded(load(dir)).unwrap();
    let server = Server::start(service);
    let response = client()
        .post(server.url("/v1/retrieve"))
        .json(&json!({"query": "Who may inspect the shipment records?", "k": 10}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    let bytes = response.bytes().unwrap();
    assert!(bytes.len() <= 16 * 1024, "{} bytes", bytes.len());
    let answer: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(answer["truncated"], true, "{answer}");
    let hits = answer["hits"].as_array().unwrap();
    assert!(!hits.is_empty(), "{answer}");
    assert!(
        hits.iter()
            .any(|h| h["citation"]["document"] == "docs/long.txt"),
        "{answer}"
    );
    // The index holds the line as sentences within the bound.
    let index = IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    let longest = index
        .store
        .sentences
        .iter()
        .map(|s| s.text.chars().count())
        .max()
        .unwrap();
    assert!(
        longest <= trellis::spec::SentenceSpec::DEFAULT_MAX_CHARS as usize,
        "{longest}"
    );
    // A small answer is left whole, without `truncated`.
    let (status, body) = post(&server, &json!({"query": "When are fees due?", "k": 1}));
    assert_eq!(status, 200);
    assert!(body.get("truncated").is_none(), "{body}");
    server.stop();
}

/// A retrieval pod told the hash of the profile the operator rendered
/// opens a version of that profile, and refuses one whose profile.json
/// says anything else before it makes an embedder.
#[test]
fn a_version_of_another_profile_than_expected_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let route = index(tmp.path());
    let data = tmp.path().join("data");
    let rendered = IndexVersion::open(&data, "c", None)
        .unwrap()
        .profile
        .served_hash();
    trellis::retrieve::LoadedRoute::open_expecting(&data, &route.spec, None, 1, Some(&rendered))
        .expect("the rendered profile");
    let refused = trellis::retrieve::LoadedRoute::open_expecting(
        &data,
        &route.spec,
        None,
        1,
        Some("0123456789abcdef"),
    );
    let error = refused.err().expect("another profile").to_string();
    assert!(
        error.contains("0123456789abcdef") && error.contains(&rendered),
        "{error}"
    );
}
