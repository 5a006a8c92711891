//! `trellis serve`: the retrieval service from the command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use trellis::locations::data_dir;
use trellis::retrieve::LoadedRoute;
use trellis::serve::{self, Limits, Service, Tokens};
use trellis::spec;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Manifests holding the RetrievalRoute.
    #[arg(short = 'f', long = "file")]
    manifests: PathBuf,
    /// Which RetrievalRoute, when the manifests hold several.
    #[arg(long)]
    route: Option<String>,
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: std::net::SocketAddr,
    /// Serve this index version instead of the current one.
    #[arg(long)]
    index_version: Option<String>,
    /// Read the index version from the graph store this file describes
    /// (YAML or JSON: an IndexProfile's `graph` section) into
    /// `--data-dir`, instead of from a volume holding it. For a route
    /// with `anchors.source: graph`, whose store holds the rest; needs
    /// `--index-version`.
    #[arg(long, value_name = "FILE", requires = "index_version")]
    index_from_graph: Option<PathBuf>,
    /// Refuse to serve a version whose profile does not have this hash:
    /// the operator passes the hash of the profile it rendered, so that a
    /// version an ingest pod wrote cannot send queries (and the Secrets
    /// that go with them) to an embedder or graph store of its choosing.
    #[arg(long, value_name = "HASH")]
    profile_hash: Option<String>,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = 65_536)]
    max_body_bytes: usize,
    /// Longest query, in characters.
    #[arg(long, default_value_t = 2_000)]
    max_query_chars: usize,
    /// Largest retrieval response, in bytes of JSON: past it, passages are
    /// cut to a window around their sentence and the lowest results left
    /// out, and the response says `truncated`.
    #[arg(long, default_value_t = 2 * 1024 * 1024)]
    max_response_bytes: usize,
    /// Largest k a request may ask for.
    #[arg(long, default_value_t = 50)]
    max_k: usize,
    /// Time one retrieval may take, in milliseconds (then 504).
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Retrievals running at once (more get 503 with Retry-After); on a
    /// route that runs a stage in the graph store, also the most
    /// connections to it.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Answers (POST /v1/answer) written at once, each holding a call to
    /// the route's model service; more get 503 with Retry-After.
    #[arg(long, default_value_t = 4)]
    answer_concurrency: usize,
    /// Bearer tokens, one line each: `TOKEN TAG[,TAG…]` (the ACL tags
    /// it may see) or `TOKEN *`. Without it the service is open.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Seconds to keep accepting requests after SIGTERM while
    /// `/readyz` fails, so that endpoints drop the pod before its port
    /// closes; then in-flight requests drain.
    #[arg(long, default_value_t = 5.0)]
    shutdown_delay: f64,
    /// Connections served at once; lowered to fit the descriptor limit.
    /// Past it, a small lane still answers /healthz, /readyz and
    /// /metrics.
    #[arg(long, default_value_t = 1_024)]
    max_connections: usize,
    /// Time a client has to send a request head, in milliseconds; also
    /// how long a keep-alive connection may sit idle.
    #[arg(long, default_value_t = 10_000)]
    header_timeout_ms: u64,
    /// Time a client has to send a request body, in milliseconds (then 408).
    #[arg(long, default_value_t = 10_000)]
    body_timeout_ms: u64,
    /// Seconds in-flight requests have to finish once the listener has
    /// closed; then the connections still open are dropped.
    #[arg(long, default_value_t = 10.0)]
    drain_timeout: f64,
}

impl ServeArgs {
    pub fn run(&self) -> Result<ExitCode> {
        let drain_timeout = self.drain_timeout;
        let concurrency = self.concurrency;
        let limits = Limits {
            body_bytes: self.max_body_bytes,
            response_bytes: self.max_response_bytes,
            query_chars: self.max_query_chars,
            max_k: self.max_k,
            timeout: Duration::from_millis(self.timeout_ms),
            concurrency: self.concurrency,
            answer_concurrency: self.answer_concurrency,
            max_connections: self.max_connections,
            header_timeout: Duration::from_millis(self.header_timeout_ms),
            body_timeout: Duration::from_millis(self.body_timeout_ms),
            drain_timeout: Duration::try_from_secs_f64(drain_timeout)
                .map_err(|e| anyhow::anyhow!("--drain-timeout {drain_timeout}: {e}"))?,
        };
        // After SIGTERM, how long the service goes on accepting requests
        // while reporting unready, before it stops accepting and drains.
        let shutdown_delay = self.shutdown_delay;
        let delay = Duration::try_from_secs_f64(shutdown_delay)
            .map_err(|e| anyhow::anyhow!("--shutdown-delay {shutdown_delay}: {e}"))?;
        let loaded = spec::load_path(&self.manifests)?;
        let (route, _) = spec::select_route(&loaded, self.route.as_deref(), &self.manifests)?;
        let route_name = route.metadata.name.clone().unwrap_or_default();
        let tokens = self.token_file.as_deref().map(Tokens::load).transpose()?;
        let open = tokens.is_none();
        let token_count = tokens.as_ref().map_or(0, Tokens::len);
        let service = Arc::new(Service::new(
            &route_name,
            route.spec.clone(),
            limits,
            tokens,
        ));
        let corpus = route.spec.corpus_ref.name.clone();
        let corpus_name = corpus.clone();
        let data_dir = data_dir(self.data_dir.as_deref());
        let index_version = self.index_version.clone();
        let profile_hash = self.profile_hash.clone();
        let route_spec = route.spec.clone();
        let fetch_from = match &self.index_from_graph {
            Some(path) => {
                if route_spec.anchors.source != spec::AnchorSource::Graph {
                    anyhow::bail!(
                        "--index-from-graph: route {route_name} takes anchors from the \
                         embedded index (anchors.source: embedded), which the graph store \
                         does not hold; serve it from a volume"
                    );
                }
                Some(read_graph_spec(path)?)
            }
            None => None,
        };

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        let outcome = runtime.block_on(async move {
            let listener = serve::bind(self.listen).await?;
            tracing::info!(
                listen = %listener.local_addr()?,
                route = %route_name,
                corpus = %corpus,
                "serving; liveness at /healthz, readiness at /readyz once the index is loaded"
            );
            if open {
                tracing::warn!(
                    "no --token-file: the service is OPEN, every client may query every document of corpus {corpus}"
                );
            } else {
                tracing::info!(tokens = token_count, "bearer tokens required on /v1/*");
            }

            // Load in the background: the port answers liveness probes at once.
            let loading = Arc::clone(&service);
            let loader = tokio::task::spawn_blocking(move || -> Result<()> {
                if let (Some(store), Some(version)) = (&fetch_from, &index_version) {
                    trellis::graph::fetch_version(store, &data_dir, &corpus_name, version)?;
                }
                // One graph store connection per retrieval that may run.
                let loaded = LoadedRoute::open_expecting(
                    &data_dir,
                    &route_spec,
                    index_version.as_deref(),
                    concurrency,
                    profile_hash.as_deref(),
                )?;
                let version = loaded.index.manifest.version.clone();
                loading.set_loaded(loaded)?;
                tracing::info!(%version, "index loaded and query embedder warm; ready");
                Ok(())
            });
            if let Some(path) = self.token_file.as_deref() {
                tokio::spawn(reload_tokens(Arc::clone(&service), path.to_path_buf()));
            }
            // Stopping, the pod is unready at once but keeps accepting for
            // the delay: the endpoints that clients and proxies read learn of
            // the stop asynchronously, and a request sent meanwhile to a
            // closed port would fail.
            let draining = Arc::clone(&service);
            let shutdown = async move {
                shutdown_signal().await;
                draining.start_draining();
                tracing::info!(
                    seconds = delay.as_secs_f64(),
                    "unready; still accepting requests until endpoints drop this pod"
                );
                tokio::time::sleep(delay).await;
                tracing::info!("shutting down: no new connections, draining requests in flight");
            };
            let mut server = tokio::spawn(serve::run(listener, service, shutdown));
            // A failed load ends the process: a pod that can never become
            // ready should restart rather than sit unready. A stop asked
            // for while loading ends it too, without waiting for the load
            // (a slow disk, a file much larger than it should be).
            tokio::select! {
                loaded = loader => match loaded {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return Err(e.context("loading the index")),
                    Err(e) => return Err(anyhow::anyhow!("loading the index: {e}")),
                },
                stopped = &mut server => {
                    stopped.context("server task")??;
                    tracing::info!("stopped while the index was loading");
                    return Ok(Stopped::WhileLoading);
                }
            }
            server.await.context("server task")??;
            tracing::info!("drained; stopped");
            Ok(Stopped::Drained)
        });
        // The runtime would wait, when dropped, for a load still running
        // on its blocking pool; a stop while loading leaves it behind.
        if matches!(outcome, Ok(Stopped::WhileLoading)) {
            runtime.shutdown_background();
        }
        outcome.map(|_| ExitCode::SUCCESS)
    }
}

/// How a service that started ended.
enum Stopped {
    Drained,
    WhileLoading,
}

/// The graph store `path` describes: a GraphSpec in YAML or JSON.
fn read_graph_spec(path: &std::path::Path) -> Result<spec::GraphSpec> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--index-from-graph {}", path.display()))?;
    serde_yaml::from_str(&text).with_context(|| {
        format!(
            "--index-from-graph {}: not a graph store section",
            path.display()
        )
    })
}

/// Completes on SIGTERM (Kubernetes stopping the pod) or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// How often the token file is read again. A mounted Secret is updated by
/// the kubelet within its sync period (a minute or so); this adds little.
const TOKEN_RELOAD_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Picks up a rotated token file: a new Secret value takes effect within
/// [`TOKEN_RELOAD_EVERY`] of reaching the pod, with no restart.
async fn reload_tokens(service: Arc<Service>, path: std::path::PathBuf) {
    let mut every = tokio::time::interval(TOKEN_RELOAD_EVERY);
    every.tick().await;
    loop {
        every.tick().await;
        match service.reload_tokens(&path) {
            Ok(true) => {
                tracing::info!(path = %path.display(), "token file changed; new tokens in use")
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, "token file unreadable; the previous tokens stay in use")
            }
        }
    }
}
