//! A version's string ids (`<doc>:s<n>`, `<doc>:p<n>`) mapped back to its
//! global sentence and paragraph numbers: what a graph store answers in,
//! read as the skeleton numbers everything else works with.

use std::collections::HashMap;

use super::SkeletonStore;
use super::numbers::{ParagraphNumber, SentenceNumber};

/// Sentence and paragraph ids to numbers, built once per loaded version
/// ([`super::IndexVersion::ids`]).
pub struct IdNumbers {
    documents: HashMap<String, u32>,
    /// Per document, its first sentence's number and one past its last.
    sentences: Vec<[u32; 2]>,
    /// Per document, its first paragraph's number and one past its last.
    paragraphs: Vec<[u32; 2]>,
}

impl IdNumbers {
    pub fn new(store: &SkeletonStore) -> Self {
        let documents = store
            .documents
            .iter()
            .enumerate()
            .map(|(i, d)| (d.id.clone(), i as u32))
            .collect();
        let sentences = store
            .documents
            .iter()
            .map(|d| d.sentences.map(|s| s.0))
            .collect();
        let mut paragraphs = vec![[u32::MAX, 0]; store.documents.len()];
        for (p, paragraph) in store.paragraphs.iter().enumerate() {
            let d = store.sections[paragraph.section].document.index();
            let range = &mut paragraphs[d];
            range[0] = range[0].min(p as u32);
            range[1] = range[1].max(p as u32 + 1);
        }
        Self {
            documents,
            sentences,
            paragraphs,
        }
    }

    /// The sentence number of a sentence id (`<doc>:s<n>`).
    pub fn sentence(&self, id: &str) -> Option<SentenceNumber> {
        Self::within(&self.sentences, self.document(id, ":s")?).map(SentenceNumber)
    }

    /// The paragraph number of a paragraph id (`<doc>:p<n>`).
    pub fn paragraph(&self, id: &str) -> Option<ParagraphNumber> {
        Self::within(&self.paragraphs, self.document(id, ":p")?).map(ParagraphNumber)
    }

    /// The id of paragraph `p` of `store` (`<doc>:p<n>`), as the graph
    /// export writes it.
    pub fn paragraph_id(&self, store: &SkeletonStore, p: ParagraphNumber) -> Option<String> {
        let paragraph = store.paragraphs.get(p.index())?;
        let d = store
            .sections
            .get(paragraph.section.index())?
            .document
            .index();
        let [start, _] = *self.paragraphs.get(d)?;
        Some(format!(
            "{}:p{}",
            store.documents.get(d)?.id,
            p.0.checked_sub(start)?
        ))
    }

    /// The document number and the number after `mark` in `id`.
    fn document(&self, id: &str, mark: &str) -> Option<(u32, u32)> {
        let (doc, n) = id.rsplit_once(mark)?;
        Some((*self.documents.get(doc)?, n.parse().ok()?))
    }

    /// The `n`th of a document's range, when the document has that many.
    fn within(ranges: &[[u32; 2]], (document, n): (u32, u32)) -> Option<u32> {
        let [start, end] = ranges[document as usize];
        let i = start.checked_add(n)?;
        (i < end).then_some(i)
    }
}
