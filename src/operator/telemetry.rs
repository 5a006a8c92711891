//! The operator's metrics (reconciles, failures and durations per kind,
//! leadership; ingests per Corpus and rollouts per route) and its
//! `/metrics` and `/healthz` endpoints.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::corpus::{FinishedIngest, IngestOutcome};
use crate::spec::CorpusStatus;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FailureLabels {
    kind: String,
    error: String,
}

/// A Corpus or route: the object a per-object series is about.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CorpusLabels {
    namespace: String,
    corpus: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct IngestLabels {
    namespace: String,
    corpus: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    namespace: String,
    route: String,
}

/// The `outcome` label of an ingest.
fn outcome_label(outcome: IngestOutcome) -> &'static str {
    match outcome {
        IngestOutcome::Succeeded => "succeeded",
        IngestOutcome::Failed => "failed",
    }
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
    ingests: Family<IngestLabels, Counter>,
    ingest_duration: Family<IngestLabels, Histogram>,
    failed_documents: Family<CorpusLabels, Gauge>,
    ingest_failing: Family<CorpusLabels, Gauge>,
    rollout_started: Family<RouteLabels, Gauge>,
    /// The last attempt counted per Corpus: a reconcile that reads a
    /// Corpus from a cache not yet holding the status that recorded the
    /// end (or a status write that failed after counting) counts nothing.
    counted: Arc<Mutex<HashMap<CorpusLabels, String>>>,
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
        let ingests = Family::<IngestLabels, Counter>::default();
        // 1 s to about 9 h.
        let ingest_duration = Family::<IngestLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(1.0, 2.0, 16))
        });
        let failed_documents = Family::<CorpusLabels, Gauge>::default();
        let ingest_failing = Family::<CorpusLabels, Gauge>::default();
        let rollout_started = Family::<RouteLabels, Gauge>::default();
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
        registry.register(
            "ingests",
            "Ingests that ended, by Corpus and outcome (succeeded: a version was \
             published; failed: the Job failed or left no readable report)",
            ingests.clone(),
        );
        registry.register(
            "ingest_seconds",
            "Ingest duration by Corpus and outcome, from the Job's start to its end \
             (or to the reconcile that read its report, if that came first)",
            ingest_duration.clone(),
        );
        registry.register(
            "ingest_failed_documents",
            "Documents that failed in the ingest of the Corpus' active index version",
            failed_documents.clone(),
        );
        registry.register(
            "ingest_failing",
            "1 while the Corpus' current ingest has failed and is not tried again \
             (until its inputs or spec.ingest change)",
            ingest_failing.clone(),
        );
        registry.register(
            "rollout_started_timestamp_seconds",
            "When the rollout under way of a route's pods began (Unix seconds); \
             no series while none is",
            rollout_started.clone(),
        );
        Self {
            registry: Arc::new(registry),
            reconciles,
            failures,
            duration,
            unreadable,
            stream_errors,
            leader,
            ingests,
            ingest_duration,
            failed_documents,
            ingest_failing,
            rollout_started,
            counted: Default::default(),
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

    /// Counts an ingest of Corpus `namespace/corpus` that ended, unless
    /// the same attempt was counted last; returns whether it counted.
    pub fn ingest_finished(&self, namespace: &str, corpus: &str, done: &FinishedIngest) -> bool {
        let key = CorpusLabels {
            namespace: namespace.into(),
            corpus: corpus.into(),
        };
        {
            let mut counted = self.counted.lock().unwrap_or_else(|e| e.into_inner());
            if counted.get(&key) == Some(&done.attempt) {
                return false;
            }
            counted.insert(key, done.attempt.clone());
        }
        let labels = IngestLabels {
            namespace: namespace.into(),
            corpus: corpus.into(),
            outcome: outcome_label(done.outcome),
        };
        self.ingests.get_or_create(&labels).inc();
        if let Some(seconds) = done.seconds {
            self.ingest_duration
                .get_or_create(&labels)
                .observe(seconds.max(0.0));
        }
        true
    }

    /// What the status of Corpus `namespace/corpus` says: the failed
    /// documents of its active version, whether its current ingest failed.
    /// Its ingest counters start at zero, so that the first ingest to end
    /// is an increase.
    pub fn observe_corpus(&self, namespace: &str, corpus: &str, status: &CorpusStatus) {
        let labels = CorpusLabels {
            namespace: namespace.into(),
            corpus: corpus.into(),
        };
        for outcome in [IngestOutcome::Succeeded, IngestOutcome::Failed] {
            drop(self.ingests.get_or_create(&IngestLabels {
                namespace: namespace.into(),
                corpus: corpus.into(),
                outcome: outcome_label(outcome),
            }));
        }
        let failing = status
            .pending_index
            .as_ref()
            .is_some_and(|p| p.error.is_some());
        self.ingest_failing
            .get_or_create(&labels)
            .set(i64::from(failing));
        if let Some(active) = &status.active_index {
            self.failed_documents
                .get_or_create(&labels)
                .set(i64::try_from(active.failed_documents).unwrap_or(i64::MAX));
        }
    }

    /// Records whether a rollout of route `namespace/route` is under way.
    /// One that was already under way keeps the start it had; a new one
    /// starts at `began` (Unix seconds: when the route's status says it
    /// began, which outlives a restart of the operator). None removes the
    /// series. The gauge itself records the start: a route is reconciled
    /// by one worker at a time, so nothing sets its series between the
    /// read and the write.
    pub fn set_rollout(&self, namespace: &str, route: &str, began: Option<u64>) {
        let labels = RouteLabels {
            namespace: namespace.into(),
            route: route.into(),
        };
        match began {
            Some(began) => {
                if self.rollout_started.get(&labels).is_none() {
                    // A gauge holds i64: far past any second a clock reads.
                    let began = i64::try_from(began).unwrap_or(i64::MAX);
                    self.rollout_started.get_or_create(&labels).set(began);
                }
            }
            None => {
                self.rollout_started.remove(&labels);
            }
        }
    }

    /// Drops the series of an object that was deleted: a gauge of a
    /// Corpus or route that no longer exists would otherwise stay (and a
    /// rollout of a deleted route would look stuck for ever). Counters
    /// and histograms go too: nothing will count them again.
    pub fn forget(&self, kind: &str, namespace: &str, name: &str) {
        match kind {
            "Corpus" => {
                let labels = CorpusLabels {
                    namespace: namespace.into(),
                    corpus: name.into(),
                };
                self.failed_documents.remove(&labels);
                self.ingest_failing.remove(&labels);
                for outcome in [IngestOutcome::Succeeded, IngestOutcome::Failed] {
                    let labels = IngestLabels {
                        namespace: namespace.into(),
                        corpus: name.into(),
                        outcome: outcome_label(outcome),
                    };
                    self.ingests.remove(&labels);
                    self.ingest_duration.remove(&labels);
                }
                self.counted
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&labels);
            }
            "RetrievalRoute" => self.set_rollout(namespace, name, None),
            _ => {}
        }
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

    fn finished(attempt: &str, outcome: IngestOutcome, seconds: Option<f64>) -> FinishedIngest {
        FinishedIngest {
            attempt: attempt.into(),
            outcome,
            seconds,
        }
    }

    #[test]
    fn an_ingest_is_counted_once_per_attempt_by_corpus_and_outcome() {
        let metrics = Metrics::new();
        let first = finished("a/1", IngestOutcome::Failed, Some(100.0));
        assert!(metrics.ingest_finished("docs", "handbook", &first));
        // The same end seen again (a stale cache, a retried status write).
        assert!(!metrics.ingest_finished("docs", "handbook", &first));
        let second = finished("b/1", IngestOutcome::Succeeded, None);
        assert!(metrics.ingest_finished("docs", "handbook", &second));
        assert!(metrics.ingest_finished("docs", "contracts", &first));
        let status = CorpusStatus {
            active_index: Some(crate::spec::IndexVersionStatus {
                failed_documents: 3,
                ..Default::default()
            }),
            pending_index: Some(crate::spec::IndexVersionStatus {
                error: Some("Job failed".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        metrics.observe_corpus("docs", "handbook", &status);
        metrics.observe_corpus("docs", "new", &CorpusStatus::default());
        let text = metrics.encode();
        for line in [
            "trellis_operator_ingests_total{namespace=\"docs\",corpus=\"handbook\",outcome=\"failed\"} 1",
            "trellis_operator_ingests_total{namespace=\"docs\",corpus=\"handbook\",outcome=\"succeeded\"} 1",
            "trellis_operator_ingests_total{namespace=\"docs\",corpus=\"contracts\",outcome=\"failed\"} 1",
            "trellis_operator_ingest_seconds_count{namespace=\"docs\",corpus=\"handbook\",outcome=\"failed\"} 1",
            "trellis_operator_ingest_seconds_sum{namespace=\"docs\",corpus=\"handbook\",outcome=\"failed\"} 100.0",
            "trellis_operator_ingest_failed_documents{namespace=\"docs\",corpus=\"handbook\"} 3",
            "trellis_operator_ingest_failing{namespace=\"docs\",corpus=\"handbook\"} 1",
            "trellis_operator_ingest_failing{namespace=\"docs\",corpus=\"new\"} 0",
            // A Corpus seen is one whose first failure is an increase.
            "trellis_operator_ingests_total{namespace=\"docs\",corpus=\"new\",outcome=\"failed\"} 0",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        // An ingest without a Job to time is counted, not timed.
        assert!(
            !text.contains(
                "ingest_seconds_count{namespace=\"docs\",corpus=\"handbook\",outcome=\"succeeded\"}"
            ),
            "{text}"
        );

        // A deleted Corpus leaves no gauge behind.
        metrics.forget("Corpus", "docs", "handbook");
        let text = metrics.encode();
        assert!(!text.contains("corpus=\"handbook\""), "{text}");
        assert!(metrics.ingest_finished("docs", "handbook", &second));
    }

    #[test]
    fn a_rollout_keeps_the_start_it_had_until_it_ends() {
        let metrics = Metrics::new();
        let line =
            "trellis_operator_rollout_started_timestamp_seconds{namespace=\"docs\",route=\"qa\"}";
        metrics.set_rollout("docs", "qa", Some(1_000));
        metrics.set_rollout("docs", "qa", Some(2_000));
        assert!(metrics.encode().contains(&format!("{line} 1000")));
        metrics.set_rollout("docs", "qa", None);
        assert!(!metrics.encode().contains(line));
        metrics.set_rollout("docs", "qa", Some(3_000));
        assert!(metrics.encode().contains(&format!("{line} 3000")));
        // A route deleted mid-rollout is not a rollout stuck for ever.
        metrics.forget("RetrievalRoute", "docs", "qa");
        assert!(!metrics.encode().contains(line));
    }

    /// The series names a registry's exposition offers: a counter's with
    /// `_total`, a histogram's `_bucket`, `_sum` and `_count`.
    fn exported(text: &str) -> std::collections::BTreeSet<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split_once(' '))
            .flat_map(|(name, kind)| match kind {
                "counter" => vec![format!("{name}_total")],
                "histogram" => ["_bucket", "_sum", "_count"]
                    .iter()
                    .map(|s| format!("{name}{s}"))
                    .collect(),
                _ => vec![name.to_string()],
            })
            .collect()
    }

    /// Every `trellis_` metric the chart's dashboard, alerts and alert
    /// tests name is one the operator or the retrieval service exports:
    /// a renamed metric fails here, not silently on a dashboard.
    #[test]
    fn the_charts_dashboard_and_alerts_name_only_exported_metrics() {
        // A family is exposed once it has a series: give each one.
        let operator = Metrics::new();
        operator.reconciled("Corpus", Duration::from_millis(3));
        operator.failed("Corpus", &super::super::Error::Render("x".into()));
        operator.unreadable("Corpus");
        operator.stream_error("Corpus", "watch");
        operator.ingest_finished(
            "docs",
            "handbook",
            &finished("a/1", IngestOutcome::Succeeded, Some(1.0)),
        );
        operator.observe_corpus(
            "docs",
            "handbook",
            &CorpusStatus {
                active_index: Some(Default::default()),
                ..Default::default()
            },
        );
        operator.set_rollout("docs", "qa", Some(1));
        let serving = crate::serve::Metrics::new();
        serving.request("qa", "ok", Duration::from_millis(3));
        serving.index_loaded("handbook", "v1", "model");
        serving.open_connections();
        let mut names = exported(&operator.encode());
        names.extend(exported(&serving.encode()));
        assert!(
            names.contains("trellis_operator_ingests_total"),
            "{names:?}"
        );
        assert!(
            names.contains("trellis_retrieve_request_seconds_bucket"),
            "{names:?}"
        );
        let chart = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("charts/trellis");
        let mut files = vec![
            chart.join("files/dashboards/trellis.json"),
            chart.join("templates/prometheusrule.yaml"),
        ];
        let mut tests: Vec<_> = std::fs::read_dir(chart.join("tests"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        tests.sort();
        assert!(!tests.is_empty());
        files.extend(tests);
        let mut used = 0;
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            for (at, _) in text.match_indices("trellis_") {
                let before = text[..at].chars().next_back();
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    continue;
                }
                let name: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(
                    names.contains(&name),
                    "{} names {name}, which nothing exports; exported: {names:?}",
                    file.display()
                );
                used += 1;
            }
        }
        assert!(used > 20, "{used} metric names found");
    }
}
