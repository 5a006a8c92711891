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
