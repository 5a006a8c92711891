//! Index versions on disk: the files of a version and the formats this
//! build reads ([`files`]), their writers and readers, publishing,
//! `current` and retention ([`current`]).
//!
//! A version's name is the hash of everything it was built from (see
//! [`crate::ingest`]), so an unchanged corpus maps to the version already
//! built; a version, once published, is never written again.

pub mod bm25;
pub mod checksums;
pub mod chunks;
pub mod current;
pub mod files;
pub mod hnsw;
pub mod ids;
pub mod lexical;
pub mod links;
pub mod manifest;
pub mod names;
pub mod nearest;
pub mod numbers;
pub mod ranking;
pub mod store;
pub mod vectors;
mod version;
pub mod writer;

use std::path::{Path, PathBuf};

use thiserror::Error;

pub use chunks::{ChunkIndex, ChunkMembers};
pub use current::current_version;
pub use files::{CACHE_DIR, FORMAT_VERSION, READABLE_FORMATS, corpus_dir};
pub use hnsw::HnswGraph;
pub use links::RelatedEdge;
pub use manifest::{Counts, DocumentNote, Timings, VersionManifest};
pub use numbers::{DocumentNumber, ParagraphNumber, SectionNumber, SentenceNumber};
pub use ranking::Ranking;
pub use store::{
    ChunkRecord, DocumentRecord, ReferenceRecord, ReferenceTarget, SkeletonStore, TableRecord,
};
pub use vectors::{Quantized, Vectors};
pub use version::{ALLOW_UNCHECKED, IndexVersion, Opening, SearchFiles};
pub(crate) use version::{defined_terms, paragraph_centroids};

#[derive(Debug, Error)]
pub enum IndexError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("BM25 index: {0}")]
    Bm25(String),
    #[error("index is corrupt: {0}")]
    Corrupt(String),
    #[error("{0}")]
    NotLoaded(String),
    #[error("no index for corpus {corpus:?} under {dir}; run `trellis ingest` first")]
    NotBuilt { corpus: String, dir: PathBuf },
}

impl IndexError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        IndexError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
