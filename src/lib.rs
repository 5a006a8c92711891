//! Trellis: deterministic sentence skeletons and three-stage retrieval for
//! retrieval-augmented generation over long documents.
//!
//! The data flow, one module per step:
//!
//! ```text
//! bytes ─parse─▶ DocumentTree ─segment/skeleton─▶ Skeleton ─chunk─▶ Chunks
//!                                                      └─enrich─▶ metadata
//! ```
//!
//! [`pipeline`] runs the steps for one document with one profile;
//! [`ingest`] runs a whole corpus through it:
//!
//! ```text
//! source ─▶ pipeline ─▶ embed ─▶ index (a version on disk) ─▶ graph (a copy in a store)
//!                                   │
//! query ─▶ retrieve (anchors → expansion → selection) ─▶ generate ─▶ serve / eval
//! ```
//!
//! [`generate`] is the last stage: it writes the answer from what
//! selection chose, cites its sources and checks each sentence.
//!
//! [`operator`] reconciles the same manifests on Kubernetes: ingest Jobs
//! run `trellis ingest`, retrieval Deployments `trellis serve`.

pub(crate) mod byteset;
pub use trellis_encoder::cpu;

pub mod chunk;
pub mod embed;
pub mod enrich;
pub mod eval;
pub mod generate;
pub mod graph;
pub mod index;
pub mod ingest;
pub mod locations;
pub mod memory;
pub mod operator;
pub mod parse;
pub mod pipeline;
pub mod retrieve;
pub mod segment;
pub mod serve;
pub mod skeleton;
pub mod source;
pub mod spec;
pub mod vector;

/// An error and its causes on one line, each cause once (many errors
/// repeat their source's message in their own).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
