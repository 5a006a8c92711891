//! The HTTP embedding providers against a real HTTP server on 127.0.0.1
//! ([`scripted::Server`]): real sockets mean the client's timeouts, status
//! handling and headers are exercised as they are against a service.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use trellis::embed::{self, EmbedError, Embedder, HttpEmbedder};
use trellis::spec::{EmbeddingProvider, EmbeddingSpec, Quantization};

use crate::common;
use crate::common::scripted::{Reply, Request, Server, lock};

/// A deterministic, not normalised vector for a text: what the scripted
/// services "embed".
fn fake_vector(text: &str, dims: usize) -> Vec<f32> {
    let seed = text.bytes().fold(2166136261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    });
    (0..dims)
        .map(|j| 1.0 + ((seed.rotate_left(j as u32 * 5) % 1000) as f32) / 100.0)
        .collect()
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    trellis::vector::normalize(&mut v);
    v
}

/// OpenAI/Voyage answer: the vectors in reverse order, each with its
/// index, as a service may return them.
fn list_reply(request: &Request, dims: usize) -> Reply {
    let texts = request.texts();
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": fake_vector(t, dims)}))
        .collect();
    Reply::json(200, json!({"object": "list", "data": data, "model": "m"}))
}

/// TEI answer: a bare array of vectors.
fn tei_reply(request: &Request, dims: usize) -> Reply {
    let vectors: Vec<Vec<f32>> = request
        .texts()
        .iter()
        .map(|t| fake_vector(t, dims))
        .collect();
    Reply::json(200, json!(vectors))
}

fn service_spec(provider: EmbeddingProvider, server: &Server) -> EmbeddingSpec {
    EmbeddingSpec {
        provider,
        model: "test-model".into(),
        endpoint: Some(server.url()),
        dimensions: Some(4),
        ..EmbeddingSpec::default()
    }
}

/// Builds with a 1 ms backoff base, so that retry tests take milliseconds.
fn build(spec: &EmbeddingSpec) -> Result<HttpEmbedder, EmbedError> {
    HttpEmbedder::builder(spec)
        .with_backoff_base(Duration::from_millis(1))
        .build()
}

fn assert_unit_length(vectors: &[Vec<f32>]) {
    for v in vectors {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    }
}

#[test]
fn openai_posts_model_and_input_with_the_bearer_key_from_the_env_var() {
    // The key variable is set where the process starts, never while
    // other tests' threads run.
    let test = "embed_http::openai_posts_model_and_input_with_the_bearer_key_from_the_env_var";
    if !common::is_child(test) {
        common::run_in_child(test, &[("TRELLIS_TEST_OPENAI_KEY", "sk-from-env".as_ref())]);
        return;
    }
    let server = Server::start(|r, _| list_reply(r, 4));
    let spec = EmbeddingSpec {
        api_key_env: Some("TRELLIS_TEST_OPENAI_KEY".into()),
        ..service_spec(EmbeddingProvider::Openai, &server)
    };
    let embedder = HttpEmbedder::builder(&spec).build().unwrap();
    let vectors = embedder
        .embed_documents(&["first sentence", "second sentence"])
        .unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 1, "dimensions given: no probe request");
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/embeddings");
    assert_eq!(request.header("authorization"), Some("Bearer sk-from-env"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.body,
        json!({"model": "test-model", "input": ["first sentence", "second sentence"]})
    );
    // The reply listed the vectors in reverse: `index` puts them back.
    assert_eq!(
        vectors,
        vec![
            unit(fake_vector("first sentence", 4)),
            unit(fake_vector("second sentence", 4))
        ]
    );
    assert_eq!(
        embedder.model_id(),
        format!("openai:test-model@127.0.0.1:{}", server.port)
    );
}

#[test]
fn voyage_reads_the_key_file_and_tells_documents_from_queries() {
    let server = Server::start(|r, _| list_reply(r, 4));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("voyage.key"), "  vk-from-file\n").unwrap();
    let spec = EmbeddingSpec {
        // The file takes precedence over the variable (set or not).
        api_key_file: Some("voyage.key".into()),
        api_key_env: Some("TRELLIS_TEST_UNSET_VOYAGE_KEY".into()),
        query_prefix: Some("q: ".into()),
        document_prefix: Some("d: ".into()),
        ..service_spec(EmbeddingProvider::Voyage, &server)
    };
    let embedder = embed::from_spec(&spec, Some(dir.path())).unwrap();
    embedder.embed_documents(&["a clause"]).unwrap();
    let query = embedder.embed_query("which clause").unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/v1/embeddings");
        assert_eq!(request.header("authorization"), Some("Bearer vk-from-file"));
    }
    assert_eq!(
        requests[0].body,
        json!({"model": "test-model", "input": ["d: a clause"], "input_type": "document"})
    );
    assert_eq!(
        requests[1].body,
        json!({"model": "test-model", "input": ["q: which clause"], "input_type": "query"})
    );
    assert_eq!(query, unit(fake_vector("q: which clause", 4)));
    assert!(
        embedder.model_id().starts_with(&format!(
            "voyage:test-model@127.0.0.1:{}+prefix",
            server.port
        )),
        "{}",
        embedder.model_id()
    );
}

#[test]
fn int8_quantization_is_refused_for_a_service() {
    let server = Server::start(|r, _| tei_reply(r, 4));
    let mut spec = service_spec(EmbeddingProvider::Tei, &server);
    spec.quantization = Quantization::Int8;
    let Err(error) = build(&spec) else {
        panic!("an int8 HTTP provider was built");
    };
    assert!(error.to_string().contains("quantization"), "{error}");
    assert!(server.requests().is_empty());
}

#[test]
fn tei_posts_inputs_to_embed_without_a_key() {
    let server = Server::start(|r, _| tei_reply(r, 4));
    let embedder = build(&service_spec(EmbeddingProvider::Tei, &server)).unwrap();
    let vectors = embedder.embed_documents(&["one", "two", "three"]).unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/embed");
    assert_eq!(requests[0].header("authorization"), None);
    assert_eq!(
        requests[0].body,
        json!({"inputs": ["one", "two", "three"], "normalize": true, "truncate": true})
    );
    let expected: Vec<Vec<f32>> = ["one", "two", "three"]
        .iter()
        .map(|t| unit(fake_vector(t, 4)))
        .collect();
    assert_eq!(vectors, expected);
}

#[test]
fn texts_are_sent_in_request_batches_and_come_back_in_order() {
    let server = Server::start(|r, _| list_reply(r, 8));
    let spec = EmbeddingSpec {
        request_batch: Some(64),
        dimensions: Some(8),
        ..service_spec(EmbeddingProvider::Openai, &server)
    };
    let embedder = build(&spec).unwrap();
    let texts: Vec<String> = (0..150).map(|i| format!("sentence number {i}")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed_documents(&refs).unwrap();

    let sizes: Vec<usize> = server.requests().iter().map(|r| r.texts().len()).collect();
    assert_eq!(sizes, vec![64, 64, 22]);
    let sent: Vec<String> = server.requests().iter().flat_map(|r| r.texts()).collect();
    assert_eq!(sent, texts);
    assert_eq!(vectors.len(), 150);
    for (text, vector) in texts.iter().zip(&vectors) {
        assert_eq!(vector, &unit(fake_vector(text, 8)));
    }
    assert_unit_length(&vectors);
}

#[test]
fn a_429_is_retried_after_the_retry_after_seconds() {
    let server = Server::start(|r, n| match n {
        0 => Reply::json(429, json!({"error": {"message": "Rate limit reached"}}))
            .header("Retry-After", "1"),
        _ => tei_reply(r, 4),
    });
    let embedder = build(&service_spec(EmbeddingProvider::Tei, &server)).unwrap();
    let started = Instant::now();
    let vectors = embedder.embed_documents(&["text"]).unwrap();
    let waited = started.elapsed();
    assert_eq!(server.requests().len(), 2);
    assert!(
        waited >= Duration::from_secs(1),
        "Retry-After: 1 honoured over the 1 ms backoff, waited {waited:?}"
    );
    assert_eq!(vectors, vec![unit(fake_vector("text", 4))]);
}

#[test]
fn a_long_retry_after_is_capped() {
    let server = Server::start(|r, n| match n {
        0 => Reply::json(429, json!({})).header("Retry-After", "3600"),
        _ => tei_reply(r, 4),
    });
    let embedder = HttpEmbedder::builder(&service_spec(EmbeddingProvider::Tei, &server))
        .with_max_delay(Duration::from_millis(50))
        .build()
        .unwrap();
    let started = Instant::now();
    embedder.embed_documents(&["text"]).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_503_is_retried_until_the_service_recovers() {
    let server = Server::start(|r, n| {
        if n < 2 {
            Reply::json(503, json!({"error": "model is loading"}))
        } else {
            tei_reply(r, 4)
        }
    });
    let embedder = build(&service_spec(EmbeddingProvider::Tei, &server)).unwrap();
    let vectors = embedder.embed_documents(&["a", "b"]).unwrap();
    assert_eq!(server.requests().len(), 3);
    assert_eq!(vectors.len(), 2);
    assert_unit_length(&vectors);
}

#[test]
fn retries_stop_after_max_retries_with_the_last_failure() {
    let server = Server::start(|_, _| {
        Reply::json(
            503,
            json!({"error": {"message": "The engine is currently overloaded"}}),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("key"), "sk-secret-key").unwrap();
    let spec = EmbeddingSpec {
        max_retries: 2,
        api_key_file: Some(dir.path().join("key").display().to_string()),
        ..service_spec(EmbeddingProvider::Openai, &server)
    };
    let embedder = build(&spec).unwrap();
    let error = embedder.embed_documents(&["text"]).unwrap_err();
    assert_eq!(server.requests().len(), 3, "one attempt and two retries");
    assert!(matches!(error, EmbedError::Service { .. }));
    let message = error.to_string();
    for expected in [
        "gave up after 3 attempts",
        "503",
        "The engine is currently overloaded",
        &format!("http://127.0.0.1:{}/v1/embeddings", server.port),
    ] {
        assert!(message.contains(expected), "{expected:?} not in {message}");
    }
    assert!(!message.contains("sk-secret-key"), "{message}");
}

#[test]
fn a_400_is_not_retried_and_its_message_is_quoted_truncated_without_the_key() {
    let long = format!("Invalid input for key sk-secret-key: {}", "x".repeat(5000));
    let server = Server::start(move |_, _| {
        Reply::json(
            400,
            json!({"error": {"message": long, "type": "invalid_request_error"}}),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("key"), "sk-secret-key\n").unwrap();
    let spec = EmbeddingSpec {
        api_key_file: Some(dir.path().join("key").display().to_string()),
        ..service_spec(EmbeddingProvider::Openai, &server)
    };
    let embedder = build(&spec).unwrap();
    let message = embedder.embed_documents(&["text"]).unwrap_err().to_string();
    assert_eq!(server.requests().len(), 1, "a 400 is never retried");
    assert!(message.contains("400"), "{message}");
    assert!(message.contains("Invalid input for key"), "{message}");
    assert!(!message.contains("sk-secret-key"), "{message}");
    assert!(message.len() < 1000, "{} characters", message.len());
}

#[test]
fn a_service_slower_than_timeout_seconds_fails_after_its_retries() {
    let server = Server::start(|r, _| tei_reply(r, 4).after(Duration::from_secs(3)));
    let spec = EmbeddingSpec {
        timeout_seconds: 1,
        max_retries: 1,
        ..service_spec(EmbeddingProvider::Tei, &server)
    };
    let embedder = build(&spec).unwrap();
    let started = Instant::now();
    let message = embedder.embed_documents(&["text"]).unwrap_err().to_string();
    let took = started.elapsed();
    assert_eq!(server.requests().len(), 2, "a timeout is retried");
    assert!(message.contains("timeoutSeconds"), "{message}");
    assert!(message.contains("gave up after 2 attempts"), "{message}");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[test]
fn a_response_with_the_wrong_number_of_vectors_is_rejected() {
    // OpenAI shape: one vector for two inputs.
    let server = Server::start(|_, _| {
        Reply::json(
            200,
            json!({"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0, 0.0]}]}),
        )
    });
    let spec = service_spec(EmbeddingProvider::Openai, &server);
    let message = build(&spec)
        .unwrap()
        .embed_documents(&["a", "b"])
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("1 vectors returned for 2 inputs"),
        "{message}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "a malformed answer is not retried"
    );

    // TEI shape: three vectors for two inputs.
    let server = Server::start(|_, _| Reply::json(200, json!([[1.0], [1.0], [1.0]])));
    let spec = EmbeddingSpec {
        dimensions: Some(1),
        ..service_spec(EmbeddingProvider::Tei, &server)
    };
    let message = build(&spec)
        .unwrap()
        .embed_documents(&["a", "b"])
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("3 vectors returned for 2 inputs"),
        "{message}"
    );
}

#[test]
fn a_vector_of_other_dimensions_than_configured_is_rejected() {
    let server = Server::start(|r, _| tei_reply(r, 3));
    let message = build(&service_spec(EmbeddingProvider::Tei, &server))
        .unwrap()
        .embed_documents(&["a"])
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("3 dimensions, expected 4 (from embedding.dimensions)"),
        "{message}"
    );
}

#[test]
fn unknown_dimensions_are_learnt_from_one_probe_request() {
    let dims = Arc::new(Mutex::new(6usize));
    let served = Arc::clone(&dims);
    let server = Server::start(move |r, _| tei_reply(r, *lock(&served)));
    let spec = EmbeddingSpec {
        dimensions: None,
        ..service_spec(EmbeddingProvider::Tei, &server)
    };
    let embedder = embed::from_spec(&spec, None).unwrap();
    assert_eq!(embedder.dimensions(), 6);
    assert_eq!(server.requests().len(), 1, "one probe at construction");
    assert_eq!(server.requests()[0].texts().len(), 1);

    let vectors = embedder.embed_documents(&["a", "b"]).unwrap();
    assert!(vectors.iter().all(|v| v.len() == 6));
    assert_unit_length(&vectors);

    // The service changes model under the same name: caught, not cached.
    *lock(&dims) = 5;
    let message = embedder.embed_query("q").unwrap_err().to_string();
    assert!(
        message.contains("5 dimensions, expected 6 (from the probe request)"),
        "{message}"
    );
}

#[test]
fn a_refused_connection_is_retried_then_reported() {
    // A port that was just free: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let spec = EmbeddingSpec {
        provider: EmbeddingProvider::Tei,
        endpoint: Some(format!("http://127.0.0.1:{port}")),
        dimensions: Some(4),
        max_retries: 2,
        ..EmbeddingSpec::default()
    };
    let message = build(&spec)
        .unwrap()
        .embed_documents(&["text"])
        .unwrap_err()
        .to_string();
    assert!(message.contains("gave up after 3 attempts"), "{message}");
    assert!(
        message.contains(&format!("http://127.0.0.1:{port}/embed")),
        "{message}"
    );
}

#[test]
fn the_public_api_without_a_key_is_a_configuration_error() {
    let spec = EmbeddingSpec {
        provider: EmbeddingProvider::Openai,
        model: "text-embedding-3-small".into(),
        api_key_env: Some("TRELLIS_TEST_UNSET_OPENAI_KEY".into()),
        ..EmbeddingSpec::default()
    };
    let error = embed::from_spec(&spec, None).err().unwrap();
    assert!(matches!(error, EmbedError::Config(_)), "{error}");
    assert!(
        error.to_string().contains("TRELLIS_TEST_UNSET_OPENAI_KEY"),
        "{error}"
    );
}

#[test]
fn ingest_and_query_through_a_service_probe_it_only_once() {
    let server = Server::start(|r, _| tei_reply(r, 8));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    std::fs::write(
        dir.join("docs/contract.txt"),
        "1. Payment\n\nFees are due within thirty days of the invoice date. Late payments accrue interest of 1.5% per month.\n\n\
         2. Governing Law\n\nThis Agreement is governed by the laws of the State of New York.\n",
    )
    .unwrap();
    let manifests = format!(
        r#"
apiVersion: trellis.dev/v1alpha1
kind: IndexProfile
metadata: {{name: p}}
spec:
  embedding: {{provider: tei, model: fake-model, endpoint: "{}"}}
---
apiVersion: trellis.dev/v1alpha1
kind: Corpus
metadata: {{name: c}}
spec:
  profileRef: {{name: p}}
  sources: [{{path: docs}}]
---
apiVersion: trellis.dev/v1alpha1
kind: RetrievalRoute
metadata: {{name: r}}
spec:
  corpusRef: {{name: c}}
"#,
        server.url()
    );
    let (report, route) = common::ingest_manifests(&manifests, dir);
    let manifest = &report.manifest;
    assert_eq!(manifest.dims, 8);
    assert_eq!(
        manifest.model_id,
        format!("tei:fake-model@127.0.0.1:{}", server.port)
    );
    assert!(manifest.embedded_sentences >= 3, "{manifest:?}");
    let after_ingest = server.requests().len();
    assert_eq!(
        server.requests()[0].texts().len(),
        1,
        "the first request is the dimensions probe"
    );

    // The version records the probed dimensions: a query starts without a
    // probe and sends exactly one request.
    let version = trellis::index::IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    assert_eq!(version.profile.embedding.dimensions, Some(8));
    let embedder = embed::from_spec(&version.profile.embedding, None).unwrap();
    assert_eq!(server.requests().len(), after_ingest);
    let retriever = trellis::retrieve::Retriever::new(&version, embedder.as_ref()).unwrap();
    let answer = retriever
        .retrieve(
            &route.spec,
            "Which law governs the agreement?",
            None,
            &trellis::retrieve::Filter::default(),
        )
        .unwrap();
    assert!(!answer.hits.is_empty());
    let requests = server.requests();
    assert_eq!(requests.len(), after_ingest + 1);
    assert_eq!(
        requests[after_ingest].texts(),
        vec!["Which law governs the agreement?".to_string()]
    );
}

#[test]
fn the_key_comes_from_a_mounted_secret_when_a_secret_ref_names_one() {
    // The Secret root is set where the process starts, never while other
    // tests' threads run.
    let test = "embed_http::the_key_comes_from_a_mounted_secret_when_a_secret_ref_names_one";
    if !common::is_child(test) {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("openai")).unwrap();
        std::fs::write(root.path().join("openai/api-key"), "sk-from-secret\n").unwrap();
        common::run_in_child(test, &[("TRELLIS_SECRET_ROOT", root.path().as_os_str())]);
        return;
    }
    let server = Server::start(|r, _| list_reply(r, 4));
    let with_ref = |name: &str| EmbeddingSpec {
        // The Secret takes precedence over the variable (set or not).
        api_key_secret_ref: Some(trellis::spec::SecretKeyRef {
            name: name.into(),
            key: "api-key".into(),
        }),
        api_key_env: Some("TRELLIS_TEST_UNSET_OPENAI_KEY".into()),
        ..service_spec(EmbeddingProvider::Openai, &server)
    };
    let embedder = embed::from_spec(&with_ref("openai"), None).unwrap();
    let missing = embed::from_spec(&with_ref("absent"), None).err();
    embedder.embed_documents(&["a clause"]).unwrap();
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-from-secret")
    );
    let error = missing.expect("a missing Secret is an error").to_string();
    assert!(
        error.contains("apiKeySecretRef") && error.contains("\"absent\""),
        "{error}"
    );
}
