//! `trellis operator`: the controller, with leader election and its
//! metrics endpoint; and the cluster side of `trellis ingest` (the report
//! an ingest pod leaves for the operator).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::ResourceRequirements;
use trellis::operator::controller::{self, Context as ReconcileContext};
use trellis::operator::lease::{self, LeaseLock};
use trellis::operator::telemetry::{self, Metrics};
use trellis::operator::{Settings, report};
use trellis::spec::IndexVersionStatus;

#[derive(clap::Args)]
pub struct OperatorArgs {
    /// Reconcile only these namespaces (comma-separated; default: every
    /// namespace). The operator then needs a Role in each, nothing
    /// cluster-wide.
    #[arg(long, env = "TRELLIS_WATCH_NAMESPACE", value_delimiter = ',')]
    namespace: Vec<String>,
    /// The image ingest Jobs and retrieval pods run.
    #[arg(long, env = "TRELLIS_IMAGE")]
    image: String,
    /// The pull policy of ingest and retrieval pods.
    #[arg(
        long,
        env = "TRELLIS_IMAGE_PULL_POLICY",
        default_value = "IfNotPresent"
    )]
    image_pull_policy: String,
    /// Image pull secrets given to ingest and retrieval pods
    /// (comma-separated names).
    #[arg(long, env = "TRELLIS_IMAGE_PULL_SECRETS", value_delimiter = ',')]
    image_pull_secrets: Vec<String>,
    /// Guard each route's retrieval pods with a NetworkPolicy
    /// (requests to the serving port only, from the route's
    /// `allowedClients`; no egress to link-local addresses).
    #[arg(long, env = "TRELLIS_RETRIEVAL_NETWORK_POLICY")]
    retrieval_network_policy: bool,
    /// Guard each Corpus' ingest pods with a NetworkPolicy (nothing in;
    /// no egress to link-local addresses, where cloud metadata answers,
    /// unless an s3 source uses ambient credentials).
    #[arg(long, env = "TRELLIS_INGEST_NETWORK_POLICY")]
    ingest_network_policy: bool,
    /// What an ingest pod requests when its Corpus does not say: a
    /// Kubernetes `resources` object as JSON (default: 1 CPU, 1 GiB).
    #[arg(long, env = "TRELLIS_INGEST_RESOURCES", value_parser = parse_resources)]
    ingest_resources: Option<ResourceRequirements>,
    /// What a retrieval pod requests when its route does not say, as JSON
    /// (default: 250m CPU, 512 MiB).
    #[arg(long, env = "TRELLIS_RETRIEVAL_RESOURCES", value_parser = parse_resources)]
    retrieval_resources: Option<ResourceRequirements>,
    /// Ingests that may run at once in the watched namespaces; a Corpus
    /// past the cap waits its turn (default 2).
    #[arg(long, env = "TRELLIS_MAX_CONCURRENT_INGESTS", value_parser = clap::value_parser!(u32).range(1..))]
    max_concurrent_ingests: Option<u32>,
    /// Routes whose pods may roll at once; a route past the cap keeps its
    /// pods until one finishes (default 2).
    #[arg(long, env = "TRELLIS_MAX_CONCURRENT_ROLLOUTS", value_parser = clap::value_parser!(u32).range(1..))]
    max_concurrent_rollouts: Option<u32>,
    /// Address of /metrics and /healthz.
    #[arg(long, default_value = "0.0.0.0:8080")]
    metrics_listen: std::net::SocketAddr,
    /// Reconcile without holding the leader Lease (one replica only).
    #[arg(long)]
    no_leader_election: bool,
    /// The Lease replicas elect a leader on.
    #[arg(long, default_value = "trellis-operator")]
    lease_name: String,
    /// The Lease's namespace (default: the pod's).
    #[arg(long, env = "POD_NAMESPACE")]
    lease_namespace: Option<String>,
}

/// A `resources` object (`{"requests": {...}, "limits": {...}}`) as JSON.
fn parse_resources(text: &str) -> Result<ResourceRequirements, String> {
    serde_json::from_str(text).map_err(|e| format!("not a Kubernetes resources object: {e}"))
}

impl OperatorArgs {
    /// What the reconcilers make pods with; empty pull secret names are
    /// dropped.
    fn settings(&self) -> Settings {
        let defaults = Settings::default();
        Settings {
            image: self.image.clone(),
            image_pull_policy: self.image_pull_policy.clone(),
            image_pull_secrets: self
                .image_pull_secrets
                .iter()
                .filter(|name| !name.trim().is_empty())
                .cloned()
                .collect(),
            network_policy: self.retrieval_network_policy,
            ingest_network_policy: self.ingest_network_policy,
            ingest_resources: self
                .ingest_resources
                .clone()
                .unwrap_or(defaults.ingest_resources),
            retrieval_resources: self
                .retrieval_resources
                .clone()
                .unwrap_or(defaults.retrieval_resources),
            max_concurrent_ingests: self
                .max_concurrent_ingests
                .map_or(defaults.max_concurrent_ingests, |n| n as usize),
            max_concurrent_rollouts: self
                .max_concurrent_rollouts
                .map_or(defaults.max_concurrent_rollouts, |n| n as usize),
        }
    }

    pub fn run(&self) -> Result<std::process::ExitCode> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        runtime.block_on(operate(self))
    }
}

async fn operate(args: &OperatorArgs) -> Result<std::process::ExitCode> {
    let client = kube::Client::try_default()
        .await
        .context("connecting to the Kubernetes API (in-cluster config or kubeconfig)")?;
    let metrics = Metrics::new();
    let listener = tokio::net::TcpListener::bind(args.metrics_listen)
        .await
        .with_context(|| format!("listening on {}", args.metrics_listen))?;
    tracing::info!(listen = %args.metrics_listen, "metrics at /metrics, liveness at /healthz");
    let router = telemetry::router(metrics.clone());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "metrics server stopped");
        }
    });

    let lease = if !args.no_leader_election {
        let namespace = args
            .lease_namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_string());
        let identity = lease::identity(std::env::var("POD_NAME").ok().as_deref());
        let lock = LeaseLock::new(
            kube::Api::namespaced(client.clone(), &namespace),
            &args.lease_name,
            &identity,
            Duration::from_secs(15),
        );
        tracing::info!(lease = %args.lease_name, %namespace, %identity, "waiting for the leader lease");
        tokio::select! {
            () = lock.acquire() => {}
            () = super::serve::shutdown_signal() => return Ok(std::process::ExitCode::SUCCESS),
        }
        tracing::info!("leader lease held; reconciling");
        Some(lock)
    } else {
        tracing::warn!("leader election off: run a single replica");
        None
    };
    metrics.set_leader(true);

    let mut ctx = ReconcileContext::new(client, args.settings(), metrics.clone());
    ctx.watched = args
        .namespace
        .iter()
        .map(|ns| ns.trim().to_string())
        .filter(|ns| !ns.is_empty())
        .collect();
    let ctx = Arc::new(ctx);
    let (lost_tx, lost_rx) = tokio::sync::oneshot::channel::<()>();
    let lease = lease.map(Arc::new);
    if let Some(lock) = lease.clone() {
        let metrics = metrics.clone();
        tokio::spawn(async move {
            lock.keep().await;
            metrics.set_leader(false);
            metrics.set_unhealthy();
            let _ = lost_tx.send(());
        });
    }
    let lost = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lost_flag = lost.clone();
    let shutdown = async move {
        tokio::select! {
            () = super::serve::shutdown_signal() => {}
            Ok(()) = lost_rx => {
                lost_flag.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
    };
    controller::run(ctx, shutdown).await;
    if lost.load(std::sync::atomic::Ordering::SeqCst) {
        // Another replica may be reconciling now: stop, and let the pod
        // restart as a follower.
        anyhow::bail!("leader lease lost");
    }
    if let Some(lock) = lease {
        match lock.release().await {
            Ok(()) => tracing::info!(lease = %args.lease_name, "leader lease released"),
            Err(e) => tracing::warn!(error = %e, "releasing the leader lease"),
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Leaves an ingest's outcome in the operator's report ConfigMap, in the
/// namespace of the pod (`$POD_NAMESPACE`, else the client's default).
pub fn write_report(
    configmap: &str,
    inputs: &str,
    outcome: Result<&IndexVersionStatus, &report::IngestFailure>,
) -> Result<()> {
    let data = report::report_data(inputs, outcome);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let client = kube::Client::try_default()
            .await
            .context("connecting to the Kubernetes API to write the ingest report")?;
        let namespace = std::env::var("POD_NAMESPACE")
            .unwrap_or_else(|_| client.default_namespace().to_string());
        report::write_report(client, &namespace, configmap, data)
            .await
            .with_context(|| {
                format!("writing the ingest report to ConfigMap {namespace}/{configmap}")
            })
    })
}
