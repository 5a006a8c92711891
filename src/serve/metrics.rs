//! Prometheus metrics of the retrieval service: requests and their latency
//! by route and outcome, query-embedding latency, and the served index
//! version as an info metric.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct IndexLabels {
    corpus: String,
    version: String,
    model: String,
}

/// The service's metrics; cheap to clone (shared handles).
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RequestLabels, Histogram>,
    embed_latency: Histogram,
    index: Family<IndexLabels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("trellis");
        let requests = Family::<RequestLabels, Counter>::default();
        // 1 ms to about 33 s.
        let latency = Family::<RequestLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.001, 2.0, 16))
        });
        let embed_latency = Histogram::new(exponential_buckets(0.0005, 2.0, 14));
        let index = Family::<IndexLabels, Gauge>::default();
        registry.register(
            "retrieve_requests",
            "Retrieval requests by route and outcome (ok or the error code)",
            requests.clone(),
        );
        registry.register(
            "retrieve_request_seconds",
            "Retrieval request latency by route and outcome",
            latency.clone(),
        );
        registry.register(
            "query_embed_seconds",
            "Time to embed one query",
            embed_latency.clone(),
        );
        registry.register(
            "index",
            "The index version served (1), with its corpus and model",
            index.clone(),
        );
        Self {
            registry: Arc::new(registry),
            requests,
            latency,
            embed_latency,
            index,
        }
    }

    pub fn request(&self, route: &str, outcome: &str, took: Duration) {
        let labels = RequestLabels {
            route: route.to_string(),
            outcome: outcome.to_string(),
        };
        self.requests.get_or_create(&labels).inc();
        self.latency
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    pub fn query_embedded(&self, took: Duration) {
        self.embed_latency.observe(took.as_secs_f64());
    }

    pub fn index_loaded(&self, corpus: &str, version: &str, model: &str) {
        self.index
            .get_or_create(&IndexLabels {
                corpus: corpus.to_string(),
                version: version.to_string(),
                model: model.to_string(),
            })
            .set(1);
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
