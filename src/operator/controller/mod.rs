//! The reconcilers' async half: read what a plan needs from the API,
//! apply what it wants (server-side apply, field manager
//! [`FIELD_MANAGER`]), write status, publish events; and the watches that
//! wake each reconciler.
//!
//! In the shape of kube-rs' controller-rs: one module per kind
//! (`profile.rs`, `corpus.rs`, `route.rs`) holds that kind's `reconcile`
//! and the watches that wake it; `reconciler.rs` is the one generic
//! [`reconcile`] and [`error_policy`] every kind goes through (an object
//! read leniently, see [`super::checked`], is marked on itself when it
//! cannot be read); `writes.rs` is how anything reaches the API server;
//! `run.rs` runs the three controllers ([`run`]).

mod corpus;
mod profile;
mod reconciler;
mod route;
mod run;
mod writes;

use kube::api::ListParams;
use kube::runtime::events::{Recorder, Reporter};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::telemetry::Metrics;
use super::{Error, FIELD_MANAGER, Settings};

pub use corpus::reconcile_corpus;
pub use profile::reconcile_profile;
pub use reconciler::{INVALID_SPEC, Reconcile, error_policy, reconcile, retry_after};
pub use route::reconcile_route;
pub use run::run;

/// What every reconcile shares.
pub struct Context {
    pub client: Client,
    pub settings: Settings,
    pub metrics: Metrics,
    pub recorder: Recorder,
    /// Unix seconds now; a function so that tests can fix the clock.
    pub clock: fn() -> u64,
    /// Failed reconciles in a row per object, for the retry backoff.
    pub failures: std::sync::Mutex<std::collections::HashMap<String, u32>>,
    /// The namespaces the reconcilers watch; empty for every namespace.
    /// The caps count what runs there.
    pub watched: Vec<String>,
    /// Held from counting the ingests that run to starting one, so that
    /// two Corpora reconciled at once cannot both take the last turn.
    pub ingest_turns: tokio::sync::Mutex<()>,
    /// The same for routes' rollouts.
    pub rollout_turns: tokio::sync::Mutex<()>,
}

impl Context {
    pub fn new(client: Client, settings: Settings, metrics: Metrics) -> Self {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: FIELD_MANAGER.into(),
                instance: std::env::var("POD_NAME").ok(),
            },
        );
        Self {
            client,
            settings,
            metrics,
            recorder,
            clock: unix_now,
            failures: Default::default(),
            watched: Vec::new(),
            ingest_turns: Default::default(),
            rollout_turns: Default::default(),
        }
    }

    /// The objects of kind `K` that `selector` matches in the watched
    /// namespaces: one list over all of them, or one per namespace (a
    /// Role in each grants no list across them).
    async fn list_watched<K>(&self, selector: &str) -> Result<Vec<K>, Error>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
    {
        let params = ListParams::default().labels(selector);
        if self.watched.is_empty() {
            return Ok(Api::<K>::all(self.client.clone())
                .list(&params)
                .await?
                .items);
        }
        let mut items = Vec::new();
        for ns in &self.watched {
            let api: Api<K> = Api::namespaced(self.client.clone(), ns);
            items.extend(api.list(&params).await?.items);
        }
        Ok(items)
    }
}

/// The label selector of the objects of one component the operator made.
fn managed_component(component: &str) -> String {
    super::common_labels(component)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn namespace<K: ResourceExt>(object: &K, kind: &'static str) -> Result<String, Error> {
    object.namespace().ok_or(Error::MissingField {
        kind,
        field: "metadata.namespace",
    })
}
