//! How the reconcilers write to the API server: server-side apply with the
//! operator's field manager, deletes, status through the status
//! subresource, Events through the [`Recorder`](kube::runtime::events::Recorder);
//! and how a write the server refuses is told apart from a transient
//! failure and reported on the object it was for.

use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Context;
use crate::operator::conditions::{self, Note, WithConditions};
use crate::operator::{Error, FIELD_MANAGER};

fn apply_params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

/// A namespaced object the operator applies by server-side apply.
pub(super) trait Namespaced:
    Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
    + Clone
    + Serialize
    + DeserializeOwned
    + std::fmt::Debug
{
}

impl<K> Namespaced for K where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug
{
}

/// Server-side applies `object` (which names itself) in `ns`.
pub(super) async fn apply<K: Namespaced>(
    client: &Client,
    ns: &str,
    object: &K,
) -> Result<K, Error> {
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let name = object.meta().name.clone().ok_or(Error::MissingField {
        kind: "object",
        field: "metadata.name",
    })?;
    // Server-side apply needs apiVersion and kind in the body.
    let mut body = serde_json::to_value(object).map_err(|e| Error::Render(e.to_string()))?;
    body["apiVersion"] = K::api_version(&()).into();
    body["kind"] = K::kind(&()).into();
    api.patch(&name, &apply_params(), &Patch::Apply(body))
        .await
        .map_err(|error| refusal(error, &K::kind(&()), &name))
}

/// [`Error::Refused`] for an API error that refuses the object for what
/// it is: 400 (a field rule, an admission webhook's denial), 403 (a quota,
/// an admission policy, a missing permission) and 422 (an invalid name or
/// field). A conflict (409) can only come of a `resourceVersion`
/// precondition, since applies are forced: it is [`Error::Changed`].
/// Anything else, a timeout say, stays a transient error that the retry
/// alone may cure.
fn refusal(error: kube::Error, kind: &str, name: &str) -> Error {
    match error {
        kube::Error::Api(response) if response.code == 409 => Error::Changed {
            kind: kind.to_string(),
            name: name.to_string(),
        },
        kube::Error::Api(response) if matches!(response.code, 400 | 403 | 422) => Error::Refused {
            kind: kind.to_string(),
            name: name.to_string(),
            message: response.message,
        },
        other => other.into(),
    }
}

/// Deletes `name`; one already gone counts as deleted, and a refusal
/// (RBAC, an admission policy) is an [`Error::Refused`] like an apply's.
pub(super) async fn delete<K: Namespaced>(
    api: &Api<K>,
    name: &str,
    params: &DeleteParams,
) -> Result<(), Error> {
    match api.delete(name, params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(error) => Err(refusal(error, &K::kind(&()), name)),
    }
}

/// Deletes every object `selector` matches; a refusal as [`delete`]'s.
pub(super) async fn delete_matching<K: Namespaced>(
    api: &Api<K>,
    selector: &str,
) -> Result<(), Error> {
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels(selector),
    )
    .await
    .map(drop)
    .map_err(|error| refusal(error, &K::kind(&()), selector))
}

/// After a write the API server refused: the object's status as the plan
/// left it, but `Ready=False` and `Stalled=True` with reason
/// [`APPLY_FAILED`](conditions::APPLY_FAILED) and the server's message,
/// and a Warning Event. The reconcile still fails, so the error policy
/// retries with its backoff: the quota may be raised or the policy lifted,
/// and the next reconcile that applies plans the status afresh.
pub(super) async fn report_refusal<K, S>(
    ctx: &Context,
    ns: &str,
    object: &K,
    current: Option<&S>,
    planned: &S,
    error: &Error,
) where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    S: WithConditions + Clone + Serialize,
{
    let Error::Refused { .. } = error else {
        return;
    };
    let mut status = planned.clone();
    conditions::refused(
        status.conditions_mut(),
        &error.to_string(),
        object.meta().generation,
        &conditions::now(),
    );
    let before = current.map(|s| s.conditions()).unwrap_or_default();
    let mut notes = Vec::new();
    conditions::transitions(before, status.conditions(), &mut notes);
    let api: Api<K> = Api::namespaced(ctx.client.clone(), ns);
    // The reconcile fails with the refusal either way; a status that
    // cannot be written is logged beside it.
    if let Err(e) = patch_status(&api, &object.name_any(), &status).await {
        tracing::warn!(error = %e, "writing the status of a refused apply");
    }
    for note in &notes {
        publish(ctx, object, note).await;
    }
}

/// Writes `status` through the status subresource, by server-side apply
/// with the operator's field manager: a field the new status leaves out
/// (a finished `pendingIndex`, an old version's failures) is removed, as a
/// merge patch would not.
pub(super) async fn patch_status<K, S>(api: &Api<K>, name: &str, status: &S) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize,
{
    let patch = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    api.patch_status(name, &apply_params(), &Patch::Apply(&patch))
        .await?;
    Ok(())
}

pub(super) async fn publish<K: Resource<DynamicType = ()>>(ctx: &Context, object: &K, note: &Note) {
    let event = Event {
        type_: if note.warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: note.reason.clone(),
        note: Some(note.event_text()),
        action: "Reconcile".into(),
        secondary: None,
    };
    // An event that cannot be written is not worth failing a reconcile.
    if let Err(e) = ctx.recorder.publish(&event, &object.object_ref(&())).await {
        tracing::warn!(error = %e, reason = %note.reason, "publishing an event");
    }
}
