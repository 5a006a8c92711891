//! `trellis serve`: the retrieval service from the command line.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};

use trellis::retrieve::LoadedRoute;
use trellis::serve::{self, Limits, Service, Tokens};
use trellis::spec;

/// What `trellis serve` was asked.
pub struct ServeArgs<'a> {
    pub manifests: &'a Path,
    pub route_name: Option<&'a str>,
    pub data_dir: &'a Path,
    pub listen: SocketAddr,
    pub index_version: Option<&'a str>,
    pub limits: Limits,
    pub token_file: Option<&'a Path>,
    /// After SIGTERM, how long the service goes on accepting requests
    /// while reporting unready, before it stops accepting and drains.
    pub shutdown_delay: std::time::Duration,
}

pub fn serve(args: ServeArgs<'_>) -> Result<ExitCode> {
    let loaded = spec::load_path(args.manifests)?;
    let (route, _) = spec::select_route(&loaded, args.route_name, args.manifests)?;
    let route_name = route.metadata.name.clone().unwrap_or_default();
    let tokens = args.token_file.map(Tokens::load).transpose()?;
    let open = tokens.is_none();
    let token_count = tokens.as_ref().map_or(0, Tokens::len);
    let service = Arc::new(Service::new(
        &route_name,
        route.spec.clone(),
        args.limits,
        tokens,
    ));
    let corpus = route.spec.corpus_ref.name.clone();
    let data_dir = args.data_dir.to_path_buf();
    let index_version = args.index_version.map(str::to_string);
    let route_spec = route.spec.clone();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = serve::bind(args.listen).await?;
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
            let loaded = LoadedRoute::open(&data_dir, &route_spec, index_version.as_deref())?;
            let version = loaded.index.manifest.version.clone();
            loading.set_loaded(loaded)?;
            tracing::info!(%version, "index loaded and query embedder warm; ready");
            Ok(())
        });
        if let Some(path) = args.token_file {
            tokio::spawn(reload_tokens(Arc::clone(&service), path.to_path_buf()));
        }
        // Stopping, the pod is unready at once but keeps accepting for
        // the delay: the endpoints that clients and proxies read learn of
        // the stop asynchronously, and a request sent meanwhile to a
        // closed port would fail.
        let draining = Arc::clone(&service);
        let delay = args.shutdown_delay;
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
        let server = tokio::spawn(serve::run(listener, service, shutdown));
        // A failed load ends the process: a pod that can never become
        // ready should restart rather than sit unready.
        match loader.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e.context("loading the index")),
            Err(e) => return Err(anyhow::anyhow!("loading the index: {e}")),
        }
        server.await.context("server task")??;
        tracing::info!("drained; stopped");
        Ok(ExitCode::SUCCESS)
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
