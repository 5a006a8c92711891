//! Sentence vectors on disk and their nearest-neighbour searches.
//!
//! `vectors.f32` holds one row of `dims` little-endian f32 per global
//! sentence (zeros for sentences that are not indexed). The HNSW graph
//! (hnsw_rs, [`UnitCosine`] distance) is built once, dumped
//! beside it and reloaded as is.

use std::path::Path;

use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;
use hnsw_rs::prelude::{Distance, Hnsw};

use super::IndexError;
use crate::embed::dot;

/// Below this many indexed sentences neighbours are found exactly (faster
/// than the graph at that size, and exact); above it through the graph.
pub const EXACT_BELOW: usize = 5000;

/// The `k` nearest indexed sentences to `query` among those `allowed`,
/// best first: exact search on small indexes, else the HNSW graph with
/// search list `ef`, rescored exactly.
pub fn nearest(
    vectors: &Vectors,
    graph: &HnswGraph,
    query: &[f32],
    k: usize,
    ef: usize,
    allowed: &dyn Fn(u32) -> bool,
) -> Vec<(u32, f32)> {
    if graph.len() < EXACT_BELOW {
        vectors.exact_search(query, k, allowed)
    } else {
        graph.search(vectors, query, k, ef, allowed)
    }
}

/// All sentence vectors, row-major.
pub struct Vectors {
    pub dims: usize,
    pub data: Vec<f32>,
}

impl Vectors {
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dims).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn row(&self, i: u32) -> &[f32] {
        let i = i as usize;
        &self.data[i * self.dims..(i + 1) * self.dims]
    }

    pub fn write(&self, path: &Path) -> Result<(), IndexError> {
        let mut bytes = Vec::with_capacity(self.data.len() * 4);
        for x in &self.data {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        std::fs::write(path, bytes).map_err(|e| IndexError::io(path, e))
    }

    pub fn read(path: &Path, dims: usize) -> Result<Self, IndexError> {
        let bytes = std::fs::read(path).map_err(|e| IndexError::io(path, e))?;
        if dims == 0 || bytes.len() % (4 * dims) != 0 {
            return Err(IndexError::Corrupt(format!(
                "{}: {} bytes is not a whole number of {dims}-dimensional rows",
                path.display(),
                bytes.len()
            )));
        }
        let data = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok(Self { dims, data })
    }

    /// Exact top-`k` by dot product among rows where `allowed` holds.
    pub fn exact_search(
        &self,
        query: &[f32],
        k: usize,
        allowed: &dyn Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        let mut scored: Vec<(u32, f32)> = (0..self.len() as u32)
            .filter(|&i| allowed(i))
            .map(|i| (i, dot(query, self.row(i))))
            .collect();
        let k = k.min(scored.len());
        if k == 0 {
            return Vec::new();
        }
        scored.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
    }
}

/// Cosine distance of unit vectors, `1 - a·b`, clamped at zero.
///
/// hnsw_rs' own `DistDot` asserts that the distance is not negative, which
/// rounding breaks for two copies of the same sentence (a·a can come out
/// a hair above 1) and would panic an ingest; this one clamps instead.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnitCosine;

impl Distance<f32> for UnitCosine {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).max(0.0)
    }
}

/// The HNSW graph over the indexed sentences' vectors.
pub struct HnswGraph {
    hnsw: Hnsw<'static, f32, UnitCosine>,
}

impl HnswGraph {
    /// Builds the graph over `rows` (global sentence numbers) of `vectors`.
    pub fn build(vectors: &Vectors, rows: &[u32], m: usize, ef_construction: usize) -> Self {
        let max_layer = 16;
        let hnsw = Hnsw::<f32, UnitCosine>::new(
            m,
            rows.len().max(1),
            max_layer,
            ef_construction,
            UnitCosine,
        );
        let data: Vec<(&[f32], usize)> =
            rows.iter().map(|&r| (vectors.row(r), r as usize)).collect();
        hnsw.parallel_insert_slice(&data);
        Self { hnsw }
    }

    /// Dumps the graph into `dir` (`hnsw.hnsw.graph`, `hnsw.hnsw.data`).
    pub fn dump(&self, dir: &Path) -> Result<(), IndexError> {
        self.hnsw
            .file_dump(dir, super::files::HNSW_STEM)
            .map(|_| ())
            .map_err(|e| IndexError::Hnsw(e.to_string()))
    }

    /// Reloads a dumped graph.
    pub fn load(dir: &Path) -> Result<Self, IndexError> {
        // hnsw_rs ties the loaded graph's lifetime to its loader. The loader
        // is small and the graph lives as long as the loaded index version,
        // so the loader is leaked: one small allocation per load.
        let io: &'static mut HnswIo =
            Box::leak(Box::new(HnswIo::new(dir, super::files::HNSW_STEM)));
        let hnsw = io
            .load_hnsw::<f32, UnitCosine>()
            .map_err(|e| IndexError::Hnsw(e.to_string()))?;
        Ok(Self { hnsw })
    }

    pub fn len(&self) -> usize {
        self.hnsw.get_nb_point()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Approximate top-`k`, rescored exactly against `vectors`.
    pub fn search(
        &self,
        vectors: &Vectors,
        query: &[f32],
        k: usize,
        ef: usize,
        allowed: &dyn Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        if k == 0 || self.is_empty() {
            return Vec::new();
        }
        let mut fetch = k;
        loop {
            let found = self.hnsw.search(query, fetch, ef.max(fetch));
            let exhausted = found.len() < fetch;
            let mut out: Vec<(u32, f32)> = found
                .iter()
                .map(|n| n.d_id as u32)
                .filter(|&id| (id as usize) < vectors.len() && allowed(id))
                .map(|id| (id, dot(query, vectors.row(id))))
                .collect();
            if out.len() >= k || exhausted || fetch >= 4096 {
                out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                out.truncate(k);
                return out;
            }
            fetch *= 4;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_cosine_never_goes_negative_for_a_vector_with_itself() {
        // Rounding makes this unit vector's dot product with itself
        // exceed 1.
        let mut v = vec![0.1f32; 100];
        crate::embed::normalize(&mut v);
        let v: Vec<f32> = v.iter().map(|x| x * 1.000001).collect();
        assert!(dot(&v, &v) > 1.0);
        assert_eq!(UnitCosine.eval(&v, &v), 0.0);
    }
}
