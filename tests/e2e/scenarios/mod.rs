//! The scenarios, in the order they run. Each proves one behaviour a
//! platform team relies on, on the real control plane.

mod caps;
mod chart;
mod corpus;
mod first_run;
mod graph;
mod health;
mod leader;
mod lifecycle;
mod namespaced;
mod nodes;
mod refused;
mod robust;
mod storage;
mod template;
mod upgrade;

use std::future::Future;
use std::pin::Pin;

use anyhow::Result;

use crate::World;

type Run = for<'w> fn(&'w World) -> Pin<Box<dyn Future<Output = Result<()>> + 'w>>;

/// One scenario.
pub struct Scenario {
    pub name: &'static str,
    pub run: Run,
    /// Later scenarios cannot run without this one.
    pub required: bool,
}

macro_rules! scenario {
    ($name:literal, $f:path) => {
        scenario!($name, $f, false)
    };
    ($name:literal, $f:path, $required:literal) => {
        Scenario {
            name: $name,
            run: |world| Box::pin($f(world)),
            required: $required,
        }
    };
}

pub fn all() -> Vec<Scenario> {
    vec![
        scenario!(
            "helm installs the previous release",
            upgrade::install_previous,
            true
        ),
        scenario!(
            "the previous release ingests and serves",
            upgrade::previous_serves,
            true
        ),
        scenario!(
            "helm upgrade to this build keeps the route serving",
            upgrade::upgrade,
            true
        ),
        scenario!(
            "CRDs and examples apply; the API server refuses invalid manifests",
            chart::manifests
        ),
        scenario!(
            "the quickstart applied as written ingests and answers",
            first_run::quickstart_as_written
        ),
        scenario!(
            "a Corpus over an empty claim waits, NothingToIndex; filled, it ingests",
            first_run::empty_claim_retried
        ),
        scenario!(
            "caps hold: ingests and rollouts take turns; an autoscaler keeps its count; helm rollback",
            caps::caps_hold
        ),
        scenario!(
            "a namespaced install has a Role in each namespace it watches and acts nowhere else",
            namespaced::namespaced_install
        ),
        scenario!("a sharded ingest makes the Corpus Ready", corpus::ingest),
        scenario!("a route's pods serve the active version", corpus::serve),
        scenario!(
            "a profile change rolls the route with no failed request",
            corpus::roll
        ),
        scenario!(
            "an unreadable Corpus is marked; the others reconcile",
            robust::unreadable_object
        ),
        scenario!(
            "names longer than a label ingest and serve; pods request resources",
            robust::long_names
        ),
        scenario!(
            "pod templates and Secret references reach ingest and retrieval pods",
            template::templates_and_secrets
        ),
        scenario!(
            "a stuck rollout is Stalled, not healthy; paused is Suspended",
            health::stuck_rollout
        ),
        scenario!(
            "a failed ingest says why and recovers when fixed",
            lifecycle::failure_and_recovery
        ),
        scenario!(
            "a failed re-ingest keeps the Corpus Ready on the version it serves",
            lifecycle::failed_reingest_keeps_serving
        ),
        scenario!(
            "a quota of no Jobs stalls the Corpus, ApplyFailed; lifted, it ingests",
            refused::quota_refuses_the_ingest
        ),
        scenario!(
            "an admission policy refuses route docs.v2's Deployment; lifted, it serves",
            refused::policy_refuses_the_route
        ),
        scenario!(
            "pod troubles reach the Corpus; more memory retries the ingest",
            lifecycle::pod_troubles_surface_and_ingest_edits_retry
        ),
        scenario!(
            "a route anchored in FalkorDB serves with no index volume",
            graph::anchored_in_store
        ),
        scenario!(
            "a ReadWriteOnce data claim keeps its pods on one node",
            storage::single_node_claims
        ),
        scenario!(
            "an image that cannot be pulled reaches the Corpus; the Secret made, it ingests",
            nodes::unpullable_image
        ),
        scenario!(
            "a pod no node admits is PodUnschedulable; untainted, it runs there",
            nodes::unschedulable_until_untainted
        ),
        scenario!(
            "a kubelet killed mid-ingest comes back; the ingest finishes once",
            nodes::kubelet_restart_mid_ingest
        ),
        scenario!(
            "a node drained mid-rollout: the route rolls onto the other, no failed request",
            nodes::drain_mid_rollout
        ),
        scenario!(
            "pause holds a Corpus; re-ingest runs once unpaused",
            lifecycle::pause_and_reingest
        ),
        scenario!(
            "retention keeps the version a route serves",
            lifecycle::retention
        ),
        scenario!(
            "deleting a route, a Corpus and their namespace cleans up",
            lifecycle::deletion
        ),
        scenario!(
            "a hung leader is replaced mid-ingest; no Job runs twice",
            leader::handover
        ),
        scenario!(
            "helm uninstall keeps resources; a fresh install takes over",
            chart::reinstall
        ),
    ]
}
