//! Chunk vectors: one row per chunk of `chunks.json`, in its order, in
//! `chunks.f32` (the layout of [`Vectors`]).
//!
//! A chunk's vector is the normalised mean of its indexed sentences'
//! vectors ([`mean_vectors`]) or its text encoded whole, as the profile's
//! `embedding.chunks` says; either way the file is written at build, so
//! a route reads the same rows whichever way they were made. A route with
//! `anchors.chunks` searches them exactly ([`ChunkIndex::nearest`]):
//! there are tens of times fewer chunks than sentences.

use std::path::Path;

use serde::Deserialize;

use super::files::{self, read_json};
use super::numbers::{DocumentNumber, SentenceNumber};
use super::{ChunkRecord, IndexError, SkeletonStore, Vectors};

/// The normalised mean of each chunk's indexed sentence vectors; zeros
/// for a chunk with none.
pub fn mean_vectors(chunks: &[ChunkRecord], store: &SkeletonStore, vectors: &Vectors) -> Vectors {
    let dims = vectors.dims;
    let mut data = vec![0f32; chunks.len() * dims];
    for (chunk, out) in chunks.iter().zip(data.chunks_exact_mut(dims)) {
        for &i in &chunk.sentences {
            if store.sentences.get(i.index()).is_some_and(|s| s.indexed) {
                for (o, x) in out.iter_mut().zip(vectors.row(i.0)) {
                    *o += x;
                }
            }
        }
        crate::vector::normalize(out);
    }
    Vectors::from_vec(dims, data)
}

/// What a query reads of a version's chunks: their vectors and the
/// indexed sentences each holds.
pub struct ChunkIndex {
    pub vectors: Vectors,
    /// Per chunk, the global numbers of its indexed sentences.
    pub sentences: Vec<Vec<SentenceNumber>>,
}

/// A chunk record as the chunk index reads it: its sentences only (the
/// text is skipped while parsing, never held).
#[derive(Deserialize)]
struct ChunkSentences {
    sentences: Vec<SentenceNumber>,
}

impl ChunkIndex {
    /// Reads `chunks.json` and `chunks.f32` of the version in `dir`,
    /// checking that they agree with each other and with `store`.
    pub fn read(dir: &Path, dims: usize, store: &SkeletonStore) -> Result<Self, IndexError> {
        let records: Vec<ChunkSentences> = read_json(&dir.join(files::CHUNKS))?;
        let path = dir.join(files::CHUNK_VECTORS);
        let vectors = Vectors::read(&path, dims)?;
        if vectors.len() != records.len() {
            return Err(IndexError::Corrupt(format!(
                "{}: {} rows where {} lists {} chunks",
                path.display(),
                vectors.len(),
                files::CHUNKS,
                records.len()
            )));
        }
        let mut sentences = Vec::with_capacity(records.len());
        for record in records {
            let mut indexed = Vec::with_capacity(record.sentences.len());
            for i in record.sentences {
                match store.sentences.get(i.index()) {
                    Some(s) if s.indexed => indexed.push(i),
                    Some(_) => {}
                    None => {
                        return Err(IndexError::Corrupt(format!(
                            "{}: a chunk holds sentence {i} of {}",
                            dir.join(files::CHUNKS).display(),
                            store.sentences.len()
                        )));
                    }
                }
            }
            sentences.push(indexed);
        }
        Ok(Self { vectors, sentences })
    }

    /// The `k` chunks nearest to `query` that hold a sentence `allowed`
    /// admits, best first (exact cosine similarity).
    pub fn nearest(
        &self,
        query: &[f32],
        k: usize,
        allowed: &dyn Fn(SentenceNumber) -> bool,
    ) -> Vec<(u32, f32)> {
        let admitted = |c: u32| {
            self.sentences
                .get(c as usize)
                .is_some_and(|list| list.iter().any(|&i| allowed(i)))
        };
        self.vectors.exact_search(query, k, &admitted)
    }
}

/// Every sentence of every chunk, indexed or not: the members stage 2
/// reaches when it climbs from a sentence to its text chunk.
pub struct ChunkMembers {
    /// Per document, the position in `sentences` of its first chunk.
    first: Vec<u32>,
    /// Per chunk, in `chunks.json` order, its sentences in reading order.
    sentences: Vec<Vec<SentenceNumber>>,
}

/// A chunk record as the members read it: its place and sentences.
#[derive(Deserialize)]
struct ChunkPlace {
    document: DocumentNumber,
    index: u32,
    sentences: Vec<SentenceNumber>,
}

impl ChunkMembers {
    /// Reads `chunks.json` of the version in `dir`, checking that its
    /// chunks come in document order, numbered from 0 in each, and hold
    /// sentences of their own document.
    pub fn read(dir: &Path, store: &SkeletonStore) -> Result<Self, IndexError> {
        let path = dir.join(files::CHUNKS);
        let records: Vec<ChunkPlace> = read_json(&path)?;
        let corrupt = |what: String| IndexError::Corrupt(format!("{}: {what}", path.display()));
        let mut first = Vec::with_capacity(store.documents.len());
        let mut sentences = Vec::with_capacity(records.len());
        for (n, record) in records.into_iter().enumerate() {
            let document = record.document.index();
            if document >= store.documents.len() || document + 1 < first.len() {
                return Err(corrupt(format!(
                    "chunk {n} of document {document}, out of order"
                )));
            }
            while first.len() <= document {
                first.push(n as u32);
            }
            if record.index as usize != n - first[document] as usize {
                return Err(corrupt(format!(
                    "chunk {n} is numbered {} in document {document}",
                    record.index
                )));
            }
            let [start, end] = store.documents[document].sentences;
            if let Some(i) = record.sentences.iter().find(|&&i| i < start || i >= end) {
                return Err(corrupt(format!(
                    "chunk {n} holds sentence {i}, outside its document's {start}..{end}"
                )));
            }
            sentences.push(record.sentences);
        }
        first.resize(store.documents.len(), sentences.len() as u32);
        Ok(Self { first, sentences })
    }

    /// The sentences of `document`'s chunk numbered `chunk` (from 0);
    /// empty when it has none such.
    pub fn of(&self, document: DocumentNumber, chunk: u32) -> &[SentenceNumber] {
        let Some(&first) = self.first.get(document.index()) else {
            return &[];
        };
        let end = self
            .first
            .get(document.index() + 1)
            .map_or(self.sentences.len() as u32, |&f| f);
        match first.checked_add(chunk).filter(|&c| c < end) {
            Some(c) => &self.sentences[c as usize],
            None => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_vector_is_the_normalised_mean_of_its_indexed_sentences() {
        let pipeline = crate::pipeline::Pipeline::new(&Default::default(), None).unwrap();
        let doc = pipeline
            .process_bytes(
                "a.txt",
                b"The first sentence is here. The second one follows.",
                crate::parse::Format::Text,
            )
            .unwrap();
        let mut store = SkeletonStore::default();
        let records = ChunkRecord::of(&doc, &store);
        store.add(&doc, &[], &Default::default());
        assert_eq!(store.sentences.len(), 2);
        let vectors = Vectors::from_vec(2, vec![1.0, 0.0, 0.0, 1.0]);
        let means = mean_vectors(&records, &store, &vectors);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert_eq!(means.len(), 1);
        assert!((means.row(0)[0] - h).abs() < 1e-6 && (means.row(0)[1] - h).abs() < 1e-6);
        // A sentence that is not indexed counts for nothing.
        store.sentences[1].indexed = false;
        assert_eq!(mean_vectors(&records, &store, &vectors).row(0), &[1.0, 0.0]);
    }
}
