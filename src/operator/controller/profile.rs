//! The IndexProfile reconciler: the profile's hash and `Valid` condition
//! ([`plan_profile`](crate::operator::profile::plan_profile)), written as
//! status, and its controller, which nothing but the profile itself wakes.

use std::sync::Arc;

use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::{Api, Client, ResourceExt};

use super::reconciler::{Reconcile, measured};
use super::run::scoped;
use super::writes::{patch_status, publish};
use super::{Context, namespace};
use crate::operator::checked::Checked;
use crate::operator::{Error, conditions, profile};
use crate::spec::{Condition, IndexProfile};

impl Reconcile for IndexProfile {
    const KIND: &'static str = "IndexProfile";

    fn conditions_mut(&mut self) -> Option<&mut Vec<Condition>> {
        self.status.as_mut().map(|s| &mut s.conditions)
    }

    fn reconcile(
        object: Arc<Self>,
        ctx: Arc<Context>,
    ) -> impl std::future::Future<Output = Result<Action, Error>> + Send {
        reconcile_profile(object, ctx)
    }
}

/// The profiles' controller over one namespace (`None`: every one).
pub(super) fn controller(
    client: &Client,
    namespace: Option<&str>,
) -> Controller<Checked<IndexProfile>> {
    Controller::new(
        scoped::<Checked<IndexProfile>>(client, namespace),
        Default::default(),
    )
}

/// Reconciles an IndexProfile: its hash and `Valid` condition.
#[tracing::instrument(skip_all, fields(kind = "IndexProfile", name = %profile.name_any()))]
pub async fn reconcile_profile(
    profile: Arc<IndexProfile>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    measured(
        profile.as_ref(),
        &ctx.clone(),
        profile_once(profile.clone(), ctx),
    )
    .await
}

async fn profile_once(profile: Arc<IndexProfile>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ns = namespace(profile.as_ref(), "IndexProfile")?;
    let status = profile::plan_profile(&profile, &conditions::now());
    if Some(&status) != profile.status.as_ref() {
        let api: Api<IndexProfile> = Api::namespaced(ctx.client.clone(), &ns);
        patch_status(&api, &profile.name_any(), &status).await?;
    }
    let before = profile
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let mut notes = Vec::new();
    conditions::transitions(before, &status.conditions, &mut notes);
    for note in &notes {
        publish(&ctx, profile.as_ref(), note).await;
    }
    Ok(Action::await_change())
}
