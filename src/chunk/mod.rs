//! Chunks: a display/export unit over the skeleton (the retrieval unit is
//! the sentence).

pub mod tokens;

use serde::Serialize;

use crate::parse::TextSpan;
use crate::skeleton::{SentenceId, Skeleton};
use crate::spec::ChunkingSpec;
pub use tokens::{TokenCounter, WordCounter};

/// What a chunk holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkKind {
    Text,
    Table,
}

/// One chunk of a document.
#[derive(Clone, Debug, Serialize)]
pub struct Chunk {
    /// Position among the document's chunks, from 0.
    pub index: u32,
    pub kind: ChunkKind,
    /// The text to display or embed (heading path prefixed for structure
    /// chunks when `headingPrefix` is on).
    pub text: String,
    /// Heading path of the chunk's content.
    pub heading_path: Vec<String>,
    /// Sentences the chunk covers (wholly or, for `fixed`/`recursive`
    /// windows, in part), in reading order.
    pub sentences: Vec<SentenceId>,
    /// Size in tokens as counted by the configured counter.
    pub tokens: u32,
    /// Tokens at the start repeated from the previous chunk.
    pub overlap_tokens: u32,
    /// Canonical-text span from the first to the last character covered.
    pub span: TextSpan,
    /// First and last page, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<[u32; 2]>,
}

/// Cuts a skeleton into chunks with the configured strategy.
pub fn chunk_skeleton(
    skeleton: &Skeleton,
    spec: &ChunkingSpec,
    tokens: &dyn TokenCounter,
) -> Vec<Chunk> {
    let _ = spec;
    let mut chunks = Vec::new();
    for section in &skeleton.sections {
        let first = skeleton.paragraphs.get(section.paragraphs.start as usize);
        let last = section
            .paragraphs
            .end
            .checked_sub(1)
            .and_then(|i| skeleton.paragraphs.get(i as usize));
        let (Some(first), Some(last)) = (first, last) else {
            continue;
        };
        if section.paragraphs.is_empty() {
            continue;
        }
        let ids: Vec<SentenceId> = (first.sentences.start..last.sentences.end)
            .map(SentenceId)
            .collect();
        let text = ids
            .iter()
            .map(|id| skeleton.sentence(*id).text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        chunks.push(Chunk {
            index: chunks.len() as u32,
            kind: ChunkKind::Text,
            tokens: tokens.count(&text) as u32,
            text,
            heading_path: section.path.0.clone(),
            sentences: ids,
            overlap_tokens: 0,
            span: TextSpan::default(),
            pages: None,
        });
    }
    chunks
}
