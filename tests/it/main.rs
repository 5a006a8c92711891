//! The integration tests, as one program: each module was a test binary
//! of its own, and each linked the whole crate. Run one module with
//! `cargo test --test it <module>::`, for example `cargo test --test it pdf::`.

/// Counts memory per thread, as the `trellis` binary does, so that the
/// per-document memory bound holds in this test program too (`pdf::`).
#[global_allocator]
static ALLOCATOR: trellis::memory::CountingAllocator = trellis::memory::CountingAllocator;

mod common;

mod chunk_props;
mod cli;
mod crds;
mod docling;
mod docx;
mod embed_http;
mod embed_local;
mod enrich;
mod eval;
mod fuzz_regressions;
mod generation;
mod golden_rules;
mod graph;
mod html;
mod ingest;
mod layout;
mod onnx;
mod operator;
mod pdf;
mod rerank;
mod segment_props;
mod serve;
mod sources;
mod tampering;
mod text_parser;
mod tokenizer_chunks;
