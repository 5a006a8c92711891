//! The one checked reconciler every kind goes through, in the shape of
//! controller-rs' `reconcile` and `error_policy`: an object as read from
//! the API ([`Checked`]), readable or not. A readable one goes to its
//! kind's own reconcile ([`Reconcile::reconcile`]); one that does not fit
//! its Rust type is marked on itself (`InvalidSpec`) and nothing it owns
//! is touched. A failed reconcile is requeued with a backoff that grows
//! with the object's failures in a row.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::writes::publish;
use super::{Context, namespace};
use crate::operator::checked::{Checked, Unreadable};
use crate::operator::{Error, FIELD_MANAGER, conditions};
use crate::spec::Condition;

/// A kind the operator reconciles: what the checked reconciler needs to
/// know of it.
pub trait Reconcile:
    Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// The kind's name in logs, metrics and status messages.
    const KIND: &'static str;

    /// The conditions of the object's status, if it has a status.
    fn conditions_mut(&mut self) -> Option<&mut Vec<Condition>>;

    /// Reconciles an object that reads as the kind.
    fn reconcile(
        object: Arc<Self>,
        ctx: Arc<Context>,
    ) -> impl std::future::Future<Output = Result<Action, Error>> + Send;
}

/// Reconciles an object of kind `K` as read from the API, readable or not.
pub async fn reconcile<K: Reconcile>(
    object: Arc<Checked<K>>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    match &object.object {
        Ok(readable) => {
            let mut readable = readable.clone();
            clear_invalid(readable.conditions_mut());
            K::reconcile(Arc::new(readable), ctx).await
        }
        Err(unreadable) => reconcile_unreadable(K::KIND, &object, unreadable, &ctx).await,
    }
}

/// Requeues a failed reconcile with a backoff that grows with the
/// object's failures in a row, counting the failure.
pub fn error_policy<K: Reconcile>(
    object: Arc<Checked<K>>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    let kind = K::KIND;
    let failures = {
        let mut counts = ctx.failures.lock().unwrap_or_else(|e| e.into_inner());
        let n = counts.entry(object_key::<K>(object.as_ref())).or_default();
        *n += 1;
        *n
    };
    tracing::warn!(kind, error = %error, failures, "reconcile failed");
    ctx.metrics.failed(kind, error);
    Action::requeue(retry_after(failures))
}

/// The wait before retrying after the `failures`-th failure in a row:
/// 5 s, doubling, at most 5 minutes.
pub fn retry_after(failures: u32) -> Duration {
    let seconds = 5u64.saturating_mul(1u64 << failures.saturating_sub(1).min(6));
    Duration::from_secs(seconds.min(300))
}

/// The reason of the conditions set on an object that cannot be read.
pub const INVALID_SPEC: &str = "InvalidSpec";

/// How the mark on an unreadable object opens its message. A kind's own
/// reconcile also reports an invalid spec with [`INVALID_SPEC`] (a
/// readable field out of range), so the reason alone does not tell the
/// mark apart.
const UNREADABLE: &str = "this operator cannot read the";

/// Removes the mark an unreadable object was given, now that it reads:
/// its reconcile sets its own conditions. Those of the kind's own
/// reconcile stay, whatever their reason, so that one it sets again is
/// unchanged (no new transition time, no new Event).
fn clear_invalid(conditions: Option<&mut Vec<Condition>>) {
    if let Some(conditions) = conditions {
        conditions.retain(|c| !is_unreadable_mark(c));
    }
}

fn is_unreadable_mark(condition: &Condition) -> bool {
    condition.reason == INVALID_SPEC && condition.message.starts_with(UNREADABLE)
}

/// Marks an object this operator cannot read: `Ready=False` and
/// `Stalled=True`, reason `InvalidSpec`, naming the field, and a Warning
/// Event. Nothing it owns is touched: a route's pods keep serving and a
/// Corpus keeps its versions until the object is fixed (which wakes it).
#[tracing::instrument(skip_all, fields(kind, name = %object.name_any()))]
async fn reconcile_unreadable<K>(
    kind: &'static str,
    object: &Checked<K>,
    unreadable: &Unreadable,
    ctx: &Context,
) -> Result<Action, Error>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let started = Instant::now();
    let ns = namespace(object, kind)?;
    let name = object.name_any();
    tracing::warn!(kind, %name, reason = %unreadable.reason, "cannot read the object");
    ctx.metrics.unreadable(kind);
    let before: Vec<Condition> = unreadable
        .raw
        .pointer("/status/conditions")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let mut after = before.clone();
    let message = format!(
        "{UNREADABLE} {kind}: {}; fix the field (nothing else is affected)",
        unreadable.reason
    );
    let generation = object.metadata.generation;
    let now = conditions::now();
    for (type_, status) in [("Ready", false), ("Stalled", true)] {
        conditions::set(
            &mut after,
            conditions::Set::new(type_, status, INVALID_SPEC, message.clone()),
            generation,
            &now,
        );
    }
    let same = |a: &Condition, b: &Condition| {
        (&a.type_, &a.status, &a.reason, &a.message) == (&b.type_, &b.status, &b.reason, &b.message)
    };
    let observed = unreadable
        .raw
        .pointer("/status/observedGeneration")
        .and_then(|g| g.as_i64());
    let changed = after.len() != before.len()
        || after.iter().zip(&before).any(|(a, b)| !same(a, b))
        || observed != generation;
    if changed {
        // A merge patch of the conditions and the generation they observe
        // alone: the typed status cannot be read, and what else it says
        // (the active version) must stay. Observed, the object reads as
        // stalled to GitOps tools (Argo CD: Degraded), not as progressing.
        let api: Api<Checked<K>> = Api::namespaced(ctx.client.clone(), &ns);
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let status = serde_json::json!({"conditions": after, "observedGeneration": generation});
        api.patch_status(
            &name,
            &params,
            &Patch::Merge(serde_json::json!({ "status": status })),
        )
        .await?;
        let mut notes = Vec::new();
        conditions::transitions(&before, &after, &mut notes);
        for note in &notes {
            publish(ctx, object, note).await;
        }
    }
    ctx.metrics.reconciled(kind, started.elapsed());
    Ok(Action::await_change())
}

/// `kind/namespace/name`: the key of an object's failure count.
fn object_key<K: Reconcile>(object: &impl ResourceExt) -> String {
    format!(
        "{}/{}/{}",
        K::KIND,
        object.namespace().unwrap_or_default(),
        object.name_any()
    )
}

/// Runs one reconcile of `object`, recording its duration whatever its
/// outcome, and forgets the object's failures once one succeeds: under
/// the key [`error_policy`] counts them by.
pub(super) async fn measured<K: Reconcile>(
    object: &K,
    ctx: &Context,
    reconcile: impl std::future::Future<Output = Result<Action, Error>>,
) -> Result<Action, Error> {
    let started = Instant::now();
    let result = reconcile.await;
    ctx.metrics.reconciled(K::KIND, started.elapsed());
    if result.is_ok() {
        ctx.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&object_key::<K>(object));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(type_: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: "False".into(),
            reason: reason.into(),
            message: message.into(),
            ..Condition::default()
        }
    }

    #[test]
    fn only_the_unreadable_mark_is_cleared() {
        let mark = format!("{UNREADABLE} Corpus: spec.ingest.shards: invalid type");
        let mut conditions = vec![
            condition("Ready", INVALID_SPEC, &mark),
            condition("Stalled", INVALID_SPEC, &mark),
            // The Corpus' own reconcile found a readable field invalid.
            condition(
                "Progressing",
                INVALID_SPEC,
                "spec.chunking: minTokens over maxTokens",
            ),
            condition("Available", "ProfileNotFound", "no IndexProfile default"),
        ];
        clear_invalid(Some(&mut conditions));
        let left: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(left, ["Progressing", "Available"]);
    }
}
