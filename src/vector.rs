//! The vector arithmetic every step shares: the dot product (the cosine
//! of two unit vectors) and scaling to unit length. It lives under the
//! encoder, whose kernels it is built with, and is named here so that the
//! index, retrieval and generation use it without importing `embed`.

pub use trellis_encoder::{dot, normalize};
