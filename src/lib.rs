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
//! [`pipeline`] runs the steps for one document with one profile.

pub mod chunk;
pub mod embed;
pub mod enrich;
pub mod eval;
pub mod index;
pub mod operator;
pub mod parse;
pub mod pipeline;
pub mod retrieve;
pub mod segment;
pub mod serve;
pub mod skeleton;
pub mod source;
pub mod spec;
