//! Prometheus metrics of the retrieval service: requests and their latency
//! by route and outcome, query-embedding latency and batch sizes, open and evicted
//! connections, reranking latency and the queries a reranker missed,
//! answers (tokens, generation time, errors by reason, unsupported
//! sentences), and the served index version as an info metric.

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
struct TokenLabels {
    /// `prompt` or `completion`.
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LaneLabels {
    lane: &'static str,
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
    embed_batch: Histogram,
    rerank_latency: Histogram,
    rerank_skipped: Counter,
    index: Family<IndexLabels, Gauge>,
    connections: Family<LaneLabels, Gauge>,
    connections_evicted: Counter,
    generation_tokens: Family<TokenLabels, Counter>,
    generation_latency: Histogram,
    generation_errors: Family<ReasonLabels, Counter>,
    unsupported_sentences: Counter,
}

/// One open connection, counted in its lane's gauge until dropped.
pub struct OpenConnection {
    gauge: Gauge,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.gauge.dec();
    }
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
        // 1 to 32 queries: the batcher's largest batch.
        let embed_batch = Histogram::new(exponential_buckets(1.0, 2.0, 6));
        let rerank_latency = Histogram::new(exponential_buckets(0.001, 2.0, 14));
        let rerank_skipped = Counter::default();
        let index = Family::<IndexLabels, Gauge>::default();
        let connections = Family::<LaneLabels, Gauge>::default();
        let connections_evicted = Counter::default();
        let generation_tokens = Family::<TokenLabels, Counter>::default();
        // 10 ms to about 5 minutes.
        let generation_latency = Histogram::new(exponential_buckets(0.01, 2.0, 15));
        let generation_errors = Family::<ReasonLabels, Counter>::default();
        let unsupported_sentences = Counter::default();
        registry.register(
            "generation_tokens",
            "Tokens of answers' prompts and completions, as the model service counted them",
            generation_tokens.clone(),
        );
        registry.register(
            "generation_seconds",
            "Time the model service took to write one answer",
            generation_latency.clone(),
        );
        registry.register(
            "generation_errors",
            "Answers that failed in the generation stage, by reason",
            generation_errors.clone(),
        );
        registry.register(
            "generation_unsupported_sentences",
            "Answer sentences that cite no source or that their sources do not support",
            unsupported_sentences.clone(),
        );
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
            "Time to embed one query, its wait for a batch included",
            embed_latency.clone(),
        );
        registry.register(
            "query_embed_batch_size",
            "Queries embedded together in one encoder call",
            embed_batch.clone(),
        );
        registry.register(
            "rerank_seconds",
            "Time the reranker took per query (or was given, when it missed its budget)",
            rerank_latency.clone(),
        );
        registry.register(
            "rerank_skipped",
            "Queries answered in stage 3's order because the reranker failed or missed its budget",
            rerank_skipped.clone(),
        );
        registry.register(
            "index",
            "The index version served (1), with its corpus and model",
            index.clone(),
        );
        registry.register(
            "connections",
            "Open connections by lane (regular, or probe: past the connection limit)",
            connections.clone(),
        );
        registry.register(
            "connections_evicted",
            "Probe-lane connections closed to make room for a newer one",
            connections_evicted.clone(),
        );
        Self {
            registry: Arc::new(registry),
            requests,
            latency,
            embed_latency,
            embed_batch,
            rerank_latency,
            rerank_skipped,
            index,
            connections,
            connections_evicted,
            generation_tokens,
            generation_latency,
            generation_errors,
            unsupported_sentences,
        }
    }

    /// An answer written: its tokens, time and unsupported sentences.
    pub fn answered(&self, answer: &crate::generate::GeneratedAnswer) {
        let usage = &answer.usage;
        for (kind, tokens) in [
            ("prompt", usage.prompt_tokens),
            ("completion", usage.completion_tokens),
        ] {
            if let Some(n) = tokens {
                self.generation_tokens
                    .get_or_create(&TokenLabels { kind })
                    .inc_by(u64::from(n));
            }
        }
        if answer.generation_seconds > 0.0 {
            self.generation_latency.observe(answer.generation_seconds);
        }
        self.unsupported_sentences.inc_by(answer.unsupported as u64);
    }

    /// An answer the generation stage could not write.
    pub fn generation_failed(&self, reason: &'static str) {
        self.generation_errors
            .get_or_create(&ReasonLabels { reason })
            .inc();
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

    /// Records one batch of queries embedded together.
    pub fn query_batch(&self, queries: usize) {
        self.embed_batch.observe(queries as f64);
    }

    /// Records what the reranker did for one query.
    pub fn reranked(&self, outcome: crate::retrieve::RerankOutcome) {
        self.rerank_latency.observe(outcome.took.as_secs_f64());
        if !outcome.reranked {
            self.rerank_skipped.inc();
        }
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

    /// Counts a connection open in `lane` until the guard is dropped.
    pub fn connection_opened(&self, lane: super::connections::Lane) -> OpenConnection {
        let gauge = self
            .connections
            .get_or_create(&LaneLabels { lane: lane.name() })
            .clone();
        gauge.inc();
        OpenConnection { gauge }
    }

    /// Connections open in every lane.
    pub fn open_connections(&self) -> i64 {
        [
            super::connections::Lane::Regular,
            super::connections::Lane::Probe,
        ]
        .into_iter()
        .map(|lane| {
            self.connections
                .get_or_create(&LaneLabels { lane: lane.name() })
                .get()
        })
        .sum()
    }

    pub fn connection_evicted(&self) {
        self.connections_evicted.inc();
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
