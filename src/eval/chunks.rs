//! The plain chunk baseline: what retrieval over the chunks alone finds,
//! so that the skeleton's gain over chunk RAG is measured, not assumed.
//!
//! The version's chunks are the retrieval units: their text (heading path
//! first) encoded whole by the version's model, the same text in a BM25
//! index of its own (the version's analyzers, nothing but the text
//! searched), the two lists fused by Reciprocal Rank Fusion as a hybrid
//! chunk retriever does. What it returns are passages, which compare with
//! the skeleton's displayed paragraphs ([`super::metrics::PassageMetrics`]),
//! and documents.

use std::path::Path;

use crate::embed::{Embedder, EmbeddingCache};
use crate::index::{ChunkRecord, DocumentNumber, IndexVersion, Vectors, bm25, files};
use crate::ingest::{Progress, embed_chunks};

use super::EvalError;

/// Chunks each list takes before fusion.
const CANDIDATES: usize = 100;
/// The fusion's constant, as in the routes' default.
const RRF_K: f32 = 60.0;

/// The chunks of a version, indexed for the baseline.
pub(super) struct ChunkBaseline {
    chunks: Vec<ChunkRecord>,
    vectors: Vectors,
    bm25: bm25::Bm25Index,
    /// Where the BM25 index lives while the evaluation runs.
    _dir: tempfile::TempDir,
}

impl ChunkBaseline {
    /// Embeds (through the cache under `data_dir`) and indexes the chunks
    /// of `index`.
    pub(super) fn build(
        index: &IndexVersion,
        embedder: &dyn Embedder,
        data_dir: &Path,
        progress: Progress<'_>,
    ) -> Result<Self, EvalError> {
        let chunks = index.chunks()?;
        let mut cache = EmbeddingCache::open(
            &data_dir.join(files::CACHE_DIR),
            &embedder.cache_id(),
            embedder.dimensions(),
        )?;
        let (vectors, _) = embed_chunks(&chunks, &mut cache, embedder, progress)?;
        let dir = tempfile::Builder::new()
            .prefix(".chunk-baseline-")
            .tempdir_in(data_dir)
            .map_err(|e| EvalError::io(data_dir, e))?;
        bm25::build(
            dir.path(),
            chunks.iter().enumerate().map(|(c, chunk)| bm25::Bm25Input {
                sentence: c as u32,
                text: &chunk.text,
                section_path: String::new(),
                paragraph: "",
                document: "",
            }),
        )?;
        let bm25 = bm25::Bm25Index::open(dir.path())?;
        Ok(Self {
            chunks,
            vectors,
            bm25,
            _dir: dir,
        })
    }

    /// The chunks found for `query` (with its vector), best first, within
    /// `document` when given.
    pub(super) fn search(
        &self,
        query: &str,
        vector: &[f32],
        document: Option<DocumentNumber>,
        k: usize,
    ) -> Result<Vec<u32>, EvalError> {
        let allowed = |c: u32| {
            document.is_none_or(|d| self.chunks.get(c as usize).is_some_and(|x| x.document == d))
        };
        let dense = self.vectors.exact_search(vector, CANDIDATES, &allowed);
        let lexical = self.bm25.search(query, CANDIDATES, 0.0, &allowed)?;
        let mut fused: std::collections::HashMap<u32, f32> = Default::default();
        for list in [&dense, &lexical] {
            for (rank, &(c, _)) in list.iter().enumerate() {
                *fused.entry(c).or_default() += 1.0 / (RRF_K + rank as f32 + 1.0);
            }
        }
        let mut ranked: Vec<(u32, f32)> = fused.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(ranked.into_iter().take(k).map(|(c, _)| c).collect())
    }

    pub(super) fn chunk(&self, c: u32) -> &ChunkRecord {
        &self.chunks[c as usize]
    }

    pub(super) fn len(&self) -> usize {
        self.chunks.len()
    }
}
