//! Enrichment: metadata extracted from the skeleton's sentences.

use serde::Serialize;

use crate::skeleton::Skeleton;
use crate::spec::EnrichmentSpec;

/// Annotations of one document, aligned with its skeleton's arrays.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Enrichment {
    /// One entry per sentence, by sentence id.
    pub sentences: Vec<SentenceAnnotations>,
    /// One entry per section, by section id.
    pub sections: Vec<SectionAnnotations>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct SentenceAnnotations {}

#[derive(Clone, Debug, Default, Serialize)]
pub struct SectionAnnotations {
    pub is_annex: bool,
}

/// Annotates a skeleton.
pub fn enrich(skeleton: &Skeleton, spec: &EnrichmentSpec) -> Enrichment {
    let _ = spec;
    Enrichment {
        sentences: vec![SentenceAnnotations::default(); skeleton.sentences.len()],
        sections: vec![SectionAnnotations::default(); skeleton.sections.len()],
    }
}

/// Enrichment aggregated over a chunk's sentences.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ChunkMetadata {}

impl Enrichment {
    /// Aggregates the annotations of `sentences` for a chunk.
    pub fn chunk_metadata(
        &self,
        skeleton: &Skeleton,
        sentences: &[crate::skeleton::SentenceId],
    ) -> ChunkMetadata {
        let _ = (skeleton, sentences);
        ChunkMetadata {}
    }
}
