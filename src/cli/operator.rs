//! `trellis operator`: the controller, with leader election and its
//! metrics endpoint; and the cluster side of `trellis ingest` (the report
//! an ingest pod leaves for the operator).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use trellis::operator::controller::{self, Context as ReconcileContext};
use trellis::operator::lease::{self, LeaseLock};
use trellis::operator::telemetry::{self, Metrics};
use trellis::operator::{Settings, ingest};
use trellis::spec::IndexVersionStatus;

/// What `trellis operator` was asked.
pub struct OperatorArgs {
    pub namespace: Option<String>,
    pub settings: Settings,
    pub metrics_listen: SocketAddr,
    pub leader_election: bool,
    pub lease_name: String,
    pub lease_namespace: Option<String>,
}

pub fn operator(args: OperatorArgs) -> Result<std::process::ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run(args))
}

async fn run(args: OperatorArgs) -> Result<std::process::ExitCode> {
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

    let lease = if args.leader_election {
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

    let ctx = Arc::new(ReconcileContext::new(
        client,
        args.settings,
        metrics.clone(),
    ));
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
    controller::run(ctx, args.namespace.as_deref(), shutdown).await;
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
    outcome: Result<&IndexVersionStatus, &str>,
) -> Result<()> {
    let data = ingest::report_data(inputs, outcome);
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
        ingest::write_report(client, &namespace, configmap, data)
            .await
            .with_context(|| {
                format!("writing the ingest report to ConfigMap {namespace}/{configmap}")
            })
    })
}
