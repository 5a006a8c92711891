//! The operator's metrics (reconciles, failures and durations per kind,
//! leadership) and its `/metrics` and `/healthz` endpoints.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FailureLabels {
    kind: String,
    error: String,
}

/// The operator's metrics; cheap to clone (shared handles).
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    reconciles: Family<KindLabels, Counter>,
    failures: Family<FailureLabels, Counter>,
    duration: Family<KindLabels, Histogram>,
    unreadable: Family<KindLabels, Counter>,
    stream_errors: Family<FailureLabels, Counter>,
    leader: Gauge,
    healthy: Arc<AtomicBool>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("trellis_operator");
        let reconciles = Family::<KindLabels, Counter>::default();
        let failures = Family::<FailureLabels, Counter>::default();
        // 1 ms to about 16 s.
        let duration = Family::<KindLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.001, 2.0, 15))
        });
        let unreadable = Family::<KindLabels, Counter>::default();
        let stream_errors = Family::<FailureLabels, Counter>::default();
        let leader = Gauge::default();
        registry.register("reconciles", "Reconciles by kind", reconciles.clone());
        registry.register(
            "unreadable_objects",
            "Reconciles of objects that do not fit this operator's types, by kind",
            unreadable.clone(),
        );
        registry.register(
            "stream_errors",
            "Errors of a kind's watches and queue (not of its reconciles)",
            stream_errors.clone(),
        );
        registry.register(
            "reconcile_failures",
            "Failed reconciles by kind and error",
            failures.clone(),
        );
        registry.register(
            "reconcile_seconds",
            "Reconcile duration by kind",
            duration.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the leader lease",
            leader.clone(),
        );
        Self {
            registry: Arc::new(registry),
            reconciles,
            failures,
            duration,
            unreadable,
            stream_errors,
            leader,
            healthy: Arc::new(AtomicBool::new(true)),
        }
    }

    pub fn reconciled(&self, kind: &str, took: Duration) {
        let labels = KindLabels { kind: kind.into() };
        self.reconciles.get_or_create(&labels).inc();
        self.duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    pub fn failed(&self, kind: &str, error: &super::Error) {
        self.failures
            .get_or_create(&FailureLabels {
                kind: kind.into(),
                error: error.metric_label().into(),
            })
            .inc();
    }

    pub fn unreadable(&self, kind: &str) {
        self.unreadable
            .get_or_create(&KindLabels { kind: kind.into() })
            .inc();
    }

    pub fn stream_error(&self, kind: &str, error: &str) {
        self.stream_errors
            .get_or_create(&FailureLabels {
                kind: kind.into(),
                error: error.into(),
            })
            .inc();
    }

    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// Marks the process unhealthy (a lost lease): `/healthz` fails so the
    /// kubelet restarts it.
    pub fn set_unhealthy(&self) {
        self.healthy.store(false, Ordering::Relaxed);
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}

/// `/metrics` and `/healthz`.
pub fn router(metrics: Metrics) -> axum::Router {
    use axum::http::{StatusCode, header};
    use axum::routing::get;
    let health = metrics.healthy.clone();
    axum::Router::new()
        .route(
            "/metrics",
            get(move || {
                let metrics = metrics.clone();
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        metrics.encode(),
                    )
                }
            }),
        )
        .route(
            "/healthz",
            get(move || {
                let healthy = health.load(Ordering::Relaxed);
                async move {
                    if healthy {
                        (StatusCode::OK, "ok")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "leader lease lost")
                    }
                }
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_exposed_by_kind() {
        let metrics = Metrics::new();
        metrics.reconciled("Corpus", Duration::from_millis(3));
        metrics.failed("Corpus", &super::super::Error::Render("x".into()));
        metrics.set_leader(true);
        metrics.unreadable("Corpus");
        metrics.stream_error("Corpus", "watch");
        let text = metrics.encode();
        assert!(
            text.contains("trellis_operator_reconciles_total{kind=\"Corpus\"} 1"),
            "{text}"
        );
        assert!(text.contains("error=\"render\""), "{text}");
        assert!(text.contains("trellis_operator_leader 1"), "{text}");
        assert!(
            text.contains("trellis_operator_unreadable_objects_total{kind=\"Corpus\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "trellis_operator_stream_errors_total{kind=\"Corpus\",error=\"watch\"} 1"
            ),
            "{text}"
        );
    }
}
