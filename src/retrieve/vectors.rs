//! The sentence and paragraph vectors one query reads: the loaded
//! version's own, or, on a route whose anchors come from the graph store,
//! those of the sentences the query touches and of their paragraphs'
//! centroids, read from the store as the stages reach them (the export
//! writes each paragraph's centroid as the version derives it at load).

use std::collections::{HashMap, HashSet};

use crate::index::{ParagraphNumber, SearchFiles, SentenceNumber};

use super::{RetrieveError, Retriever};

/// Where one query's vectors come from.
pub(super) enum QueryVectors<'a> {
    /// The version's, loaded with it.
    Loaded(&'a SearchFiles),
    /// Read from the graph store, sentence by sentence.
    Fetched(Fetched),
}

/// The vectors read so far from the graph store.
#[derive(Default)]
pub(super) struct Fetched {
    sentences: HashMap<SentenceNumber, Vec<f32>>,
    paragraphs: HashMap<ParagraphNumber, Vec<f32>>,
}

impl QueryVectors<'_> {
    /// Sentence `i`'s vector; `None` for one not indexed or not read.
    pub(super) fn sentence(&self, i: SentenceNumber) -> Option<&[f32]> {
        match self {
            QueryVectors::Loaded(search) => Some(search.vectors.row(i.0)),
            QueryVectors::Fetched(fetched) => fetched.sentences.get(&i).map(Vec::as_slice),
        }
    }

    /// Paragraph `p`'s centroid; `None` for one not read.
    pub(super) fn paragraph(&self, p: ParagraphNumber) -> Option<&[f32]> {
        match self {
            QueryVectors::Loaded(search) => Some(search.paragraphs.row(p.0)),
            QueryVectors::Fetched(fetched) => fetched.paragraphs.get(&p).map(Vec::as_slice),
        }
    }
}

impl<'a> Retriever<'a> {
    /// The vectors a query starts with: the version's when it was loaded
    /// whole, else none yet.
    pub(super) fn query_vectors(&self) -> QueryVectors<'a> {
        match self.index.search() {
            Ok(search) => QueryVectors::Loaded(search),
            Err(_) => QueryVectors::Fetched(Fetched::default()),
        }
    }

    /// Makes sure `vectors` holds the vectors of `sentences` and the
    /// centroids of their paragraphs, reading what is missing from the
    /// graph store in two statements.
    pub(super) fn read_vectors(
        &self,
        vectors: &mut QueryVectors<'_>,
        sentences: impl IntoIterator<Item = SentenceNumber>,
    ) -> Result<(), RetrieveError> {
        let QueryVectors::Fetched(fetched) = vectors else {
            return Ok(());
        };
        let store = &self.index.store;
        let mut missing: HashSet<SentenceNumber> = HashSet::new();
        let mut paragraphs: HashSet<ParagraphNumber> = HashSet::new();
        for i in sentences {
            let p = store.sentences[i].paragraph;
            if !fetched.paragraphs.contains_key(&p) {
                paragraphs.insert(p);
            }
            if !fetched.sentences.contains_key(&i) {
                missing.insert(i);
            }
        }
        if missing.is_empty() && paragraphs.is_empty() {
            return Ok(());
        }
        let mut missing: Vec<SentenceNumber> = missing.into_iter().collect();
        missing.sort_unstable();
        let mut paragraphs: Vec<ParagraphNumber> = paragraphs.into_iter().collect();
        paragraphs.sort_unstable();
        let graph = self.graph_store()?;
        let (sentence_vectors, centroids) = {
            let mut store = graph.connection()?;
            (
                graph.search.vectors(&mut *store, &missing)?,
                graph.search.centroids(&mut *store, &paragraphs)?,
            )
        };
        fetched.sentences.extend(sentence_vectors);
        // A paragraph with no indexed sentence has no centroid in the
        // store: the zero vector, as the version derives it.
        let dims = self.index.manifest.dims;
        for p in paragraphs {
            fetched.paragraphs.insert(p, vec![0.0; dims]);
        }
        fetched.paragraphs.extend(centroids);
        Ok(())
    }
}
