//! The per-document pipeline: parse → skeleton → chunks → enrichment, with
//! one profile.

use std::path::Path;

use crate::chunk::{self, Chunk, TokenCounter, tokens::TokenizerError};
use crate::enrich::{self, Enrichment};
use crate::parse::{self, DocumentTree, Format, ParseError, ParseFailure};
use crate::segment::{Segmenter, SentenceFilter};
use crate::skeleton::Skeleton;
use crate::spec::{ChunkStrategy, IndexProfileSpec};

/// Revision of how bytes become a skeleton (parsing, segmentation, chunking,
/// enrichment). Part of every index version hash: bump it whenever the same
/// input and profile yield a different skeleton, so that an index built by
/// an older build is rebuilt rather than reused as if it were current.
pub const SKELETON_REVISION: u32 = 10;

/// Everything Trellis derives from one document.
#[derive(Clone, Debug)]
pub struct ProcessedDocument {
    pub skeleton: Skeleton,
    pub chunks: Vec<Chunk>,
    pub enrichment: Enrichment,
    /// Parser warnings (encoding fallbacks, dropped boilerplate, …).
    pub warnings: Vec<String>,
    /// Pages whose text looks garbled (PDF): the document is indexed but
    /// flagged in the ingest report.
    pub garbled_pages: Vec<u32>,
    /// Pages that could not be read at all (PDF), counted in the report.
    pub lost_pages: Vec<u32>,
    /// Other reasons the document is flagged in the ingest report
    /// (damaged streams, lost pages).
    pub flags: Vec<String>,
}

/// A profile made ready to run: segmenter, filters and token counter built
/// once and shared by every document (and thread).
pub struct Pipeline {
    spec: IndexProfileSpec,
    segmenter: Segmenter,
    filter: SentenceFilter,
    tokens: Box<dyn TokenCounter>,
}

impl Pipeline {
    /// Prepares a profile. `base_dir` resolves relative paths in it (the
    /// manifest's directory).
    pub fn new(spec: &IndexProfileSpec, base_dir: Option<&Path>) -> Result<Self, TokenizerError> {
        Ok(Self {
            spec: spec.clone(),
            segmenter: Segmenter::new(&spec.sentences),
            filter: SentenceFilter::new(&spec.sentences),
            tokens: chunk::tokens::load_counter(spec.chunking.tokenizer.as_deref(), base_dir)?,
        })
    }

    pub fn spec(&self) -> &IndexProfileSpec {
        &self.spec
    }

    pub fn segmenter(&self) -> &Segmenter {
        &self.segmenter
    }

    pub fn token_counter(&self) -> &dyn TokenCounter {
        self.tokens.as_ref()
    }

    /// Reads and processes one file; `key` is the document's stable key
    /// (usually the path as given).
    pub fn process_file(&self, path: &Path, key: &str) -> Result<ProcessedDocument, ParseError> {
        let _span = tracing::debug_span!("document", key).entered();
        let tree = parse::parse_file(path, &self.spec.parsing)?;
        Ok(self.process_tree(key, tree))
    }

    /// Processes a document held in memory.
    pub fn process_bytes(
        &self,
        key: &str,
        bytes: &[u8],
        format: Format,
    ) -> Result<ProcessedDocument, ParseFailure> {
        let mut tree = parse::parse_bytes(bytes, format, &self.spec.parsing)?;
        let warnings = std::mem::take(&mut tree.warnings);
        let doubts = Doubts::of(&tree);
        let skeleton = self.build_skeleton(key, tree);
        // Checked before chunking and enrichment, which cost as much again.
        let limit = self.spec.parsing.max_sentences_per_document;
        if skeleton.sentences.len() > limit as usize {
            return Err(ParseFailure::TooManySentences {
                sentences: skeleton.sentences.len(),
                limit,
            });
        }
        Ok(self.finish(skeleton, warnings, doubts))
    }

    /// The skeleton step alone (sentence splitting and filters included).
    pub fn build_skeleton(&self, key: &str, tree: DocumentTree) -> Skeleton {
        Skeleton::build(key, tree, &self.segmenter, &self.filter)
    }

    /// Cuts `skeleton` with the `semantic` strategy at the topic shifts
    /// its sentence vectors give (`chunking.semantic`); `vector(i)` is
    /// sentence `i`'s unit vector, `None` when it is not indexed.
    pub fn chunk_at_shifts<'v>(
        &self,
        skeleton: &Skeleton,
        vector: impl Fn(usize) -> Option<&'v [f32]>,
    ) -> Vec<Chunk> {
        let spec = &self.spec.chunking;
        let shifts =
            chunk::TopicShifts::from_vectors(skeleton, vector, spec.semantic.breakpoint_percentile);
        chunk::chunk_at_shifts(skeleton, spec, self.tokens.as_ref(), &shifts)
    }

    /// Runs the steps after parsing.
    pub fn process_tree(&self, key: &str, mut tree: DocumentTree) -> ProcessedDocument {
        let warnings = std::mem::take(&mut tree.warnings);
        let doubts = Doubts::of(&tree);
        let skeleton = self.build_skeleton(key, tree);
        self.finish(skeleton, warnings, doubts)
    }

    /// Chunks and enriches a skeleton.
    fn finish(
        &self,
        skeleton: Skeleton,
        warnings: Vec<String>,
        doubts: Doubts,
    ) -> ProcessedDocument {
        // The semantic strategy cuts once the sentence vectors are known
        // (`chunk_at_shifts`); until then the document has no chunks.
        let chunks = if self.spec.chunking.strategy == ChunkStrategy::Semantic {
            Vec::new()
        } else {
            chunk::chunk_skeleton(&skeleton, &self.spec.chunking, self.tokens.as_ref())
        };
        let enrichment = enrich::enrich(&skeleton, &self.spec.enrichment);
        ProcessedDocument {
            skeleton,
            chunks,
            enrichment,
            warnings,
            garbled_pages: doubts.garbled_pages,
            lost_pages: doubts.lost_pages,
            flags: doubts.flags,
        }
    }
}

/// What makes a document's text doubtful, kept from its tree for the
/// ingest report.
struct Doubts {
    garbled_pages: Vec<u32>,
    lost_pages: Vec<u32>,
    flags: Vec<String>,
}

impl Doubts {
    fn of(tree: &DocumentTree) -> Self {
        Self {
            garbled_pages: tree.garbled_pages.clone(),
            lost_pages: tree.lost_pages.clone(),
            flags: tree.flags.clone(),
        }
    }
}
