//! Sentence ids as the graph holds them, mapped back to the index
//! version's global sentence numbers.

use std::collections::HashMap;

use crate::index::IndexVersion;

/// Maps sentence ids (`<doc>:s<n>`) back to the index's global sentence
/// numbers.
pub struct Numbers<'a> {
    index: &'a IndexVersion,
    documents: HashMap<&'a str, u32>,
    /// Per document, its first paragraph's number and one past its last.
    paragraphs: Vec<[u32; 2]>,
}

impl<'a> Numbers<'a> {
    pub fn new(index: &'a IndexVersion) -> Self {
        let documents = index
            .store
            .documents
            .iter()
            .enumerate()
            .map(|(i, d)| (d.id.as_str(), i as u32))
            .collect();
        let store = &index.store;
        let mut paragraphs = vec![[u32::MAX, 0]; store.documents.len()];
        for (p, paragraph) in store.paragraphs.iter().enumerate() {
            let d = store.sections[paragraph.section as usize].document as usize;
            let range = &mut paragraphs[d];
            range[0] = range[0].min(p as u32);
            range[1] = range[1].max(p as u32 + 1);
        }
        Self {
            index,
            documents,
            paragraphs,
        }
    }

    /// The paragraph number of a paragraph id (`<doc>:p<n>`).
    pub fn paragraph(&self, id: &str) -> Option<u32> {
        let (doc, n) = id.rsplit_once(":p")?;
        let d = *self.documents.get(doc)?;
        let [start, end] = self.paragraphs[d as usize];
        let p = start.checked_add(n.parse().ok()?)?;
        (p < end).then_some(p)
    }

    /// The sentence number of a sentence id (`<doc>:s<n>`).
    pub fn of(&self, id: &str) -> Option<u32> {
        let (doc, n) = id.rsplit_once(":s")?;
        let d = *self.documents.get(doc)?;
        let [start, end] = self.index.store.documents[d as usize].sentences;
        let i = start.checked_add(n.parse().ok()?)?;
        (i < end).then_some(i)
    }
}
