//! The run loop: the three kinds' controllers over every namespace, or
//! one set per watched namespace, until shutdown; and what their watches
//! share (the scope of an `Api`, the selector of the operator's own
//! objects, the logging of a controller's own errors).

use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, watcher};
use kube::{Api, Client, Resource, ResourceExt};

use super::reconciler::{Reconcile, error_policy, reconcile};
use super::{Context, corpus, profile, route};
use crate::operator::checked::Checked;
use crate::operator::{Error, FIELD_MANAGER};

/// Runs the three controllers until `shutdown` completes. `namespace`
/// limits them to one namespace (the chart's namespaced mode).
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let (stop_tx, _) = tokio::sync::broadcast::channel::<()>(1);
    // One set of controllers over every namespace, or one per watched
    // namespace: a Role in each grants no watch across them.
    let scopes: Vec<Option<String>> = if ctx.watched.is_empty() {
        vec![None]
    } else {
        ctx.watched.iter().cloned().map(Some).collect()
    };
    let controllers = futures::future::join_all(
        scopes
            .iter()
            .map(|scope| run_scope(ctx.clone(), scope.as_deref(), &stop_tx)),
    );
    let stopper = async {
        shutdown.await;
        let _ = stop_tx.send(());
    };
    tokio::join!(controllers, stopper);
}

/// The three kinds' controllers over one namespace (`None`: every one),
/// until `stop_tx` sends.
async fn run_scope(
    ctx: Arc<Context>,
    namespace: Option<&str>,
    stop_tx: &tokio::sync::broadcast::Sender<()>,
) {
    let client = &ctx.client;
    let profiles = drive(profile::controller(client, namespace), &ctx, stop(stop_tx));
    let corpora = drive(corpus::controller(client, namespace), &ctx, stop(stop_tx));
    let routes = drive(route::controller(client, namespace), &ctx, stop(stop_tx));
    tokio::join!(profiles, corpora, routes);
}

/// A future that completes when `tx` sends.
fn stop(
    tx: &tokio::sync::broadcast::Sender<()>,
) -> impl std::future::Future<Output = ()> + Send + Sync + 'static {
    let mut rx = tx.subscribe();
    async move {
        let _ = rx.recv().await;
    }
}

/// Runs a kind's controller, its watches set, through the checked
/// reconciler until `stop` completes, logging what goes wrong outside a
/// reconcile.
fn drive<K: Reconcile>(
    controller: Controller<Checked<K>>,
    ctx: &Arc<Context>,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) -> impl std::future::Future<Output = ()> {
    controller
        .graceful_shutdown_on(stop)
        .run(reconcile::<K>, error_policy::<K>, ctx.clone())
        .for_each(logged(K::KIND, ctx.clone()))
}

/// An `Api` over one namespace, or over every one.
pub(super) fn scoped<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = kube::core::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// The objects of `store` in `namespace` that `wanted` picks: whom a watch
/// on another kind wakes.
pub(super) fn woken<K>(
    store: &Store<K>,
    namespace: Option<String>,
    wanted: impl Fn(&K) -> bool,
) -> Vec<ObjectRef<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store
        .state()
        .into_iter()
        .filter(|object| object.namespace() == namespace && wanted(object))
        .map(|object| ObjectRef::from_obj(object.as_ref()))
        .collect()
}

/// The objects the operator creates, for the owned-object watches.
pub(super) fn managed() -> watcher::Config {
    watcher::Config::default().labels(&format!("app.kubernetes.io/managed-by={FIELD_MANAGER}"))
}

/// What a controller's stream yields: each reconcile's outcome, or an
/// error of the controller itself (a watch that failed, an object it could
/// not queue). Failed reconciles are the error policy's; the controller's
/// own errors are logged and counted here, not dropped, since a watch that
/// keeps failing means the kind is not being reconciled.
fn logged<T, E: std::fmt::Display>(
    kind: &'static str,
    ctx: Arc<Context>,
) -> impl FnMut(Result<T, kube::runtime::controller::Error<Error, E>>) -> std::future::Ready<()> {
    move |outcome| {
        use kube::runtime::controller::Error as Controller;
        match outcome {
            Ok(_) | Err(Controller::ReconcilerFailed(..)) => {}
            // The object was deleted before its reconcile: the usual end
            // of one, not an error. Its gauges go with it.
            Err(Controller::ObjectNotFound(object)) => {
                tracing::debug!(kind, name = %object.name, "deleted");
                ctx.metrics.forget(
                    kind,
                    object.namespace.as_deref().unwrap_or_default(),
                    &object.name,
                );
            }
            Err(Controller::QueueError(e)) => {
                tracing::warn!(kind, error = %e, "watch failed");
                ctx.metrics.stream_error(kind, "watch");
            }
            Err(e) => {
                tracing::warn!(kind, error = %e, "controller error");
                ctx.metrics.stream_error(kind, "controller");
            }
        }
        std::future::ready(())
    }
}
