//! The nearest indexed sentences to a query vector: exactly over the
//! vectors of a small index, through the HNSW graph over a large one.
//! Apart from both so that the graph reads the vectors and the vectors
//! know nothing of the graph.

use super::hnsw::HnswGraph;
use super::vectors::{Quantized, Vectors};

/// Below this many indexed sentences neighbours are found exactly (faster
/// than the graph at that size, and exact); above it through the graph.
pub const EXACT_BELOW: usize = 5000;

/// The `k` nearest indexed sentences to `query` among those `allowed`,
/// best first: exact search on small indexes, else the HNSW graph with
/// search list `ef` (over the int8 rows when given), rescored exactly.
pub fn nearest(
    vectors: &Vectors,
    graph: &HnswGraph,
    quantized: Option<&Quantized>,
    query: &[f32],
    k: usize,
    ef: usize,
    allowed: &dyn Fn(u32) -> bool,
) -> Vec<(u32, f32)> {
    if graph.len() < EXACT_BELOW {
        vectors.exact_search(query, k, allowed)
    } else {
        graph.search(vectors, quantized, query, k, ef, allowed)
    }
}
