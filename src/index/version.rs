//! Opening a version: every file checked, then read, then checked against
//! the others.

use std::path::{Path, PathBuf};

use super::files::{self, corpus_dir, read_json, read_manifest};
use super::{
    ChunkRecord, HnswGraph, IndexError, READABLE_FORMATS, RelatedEdge, SkeletonStore, Vectors,
    VersionManifest, bm25, checksums, current_version,
};
use crate::spec::IndexProfileSpec;

/// A loaded index version.
pub struct IndexVersion {
    pub dir: PathBuf,
    pub manifest: VersionManifest,
    pub profile: IndexProfileSpec,
    pub store: SkeletonStore,
    pub vectors: Vectors,
    /// One vector per section: its heading path embedded (zeros when the
    /// path is empty).
    pub headings: Vectors,
    /// One vector per paragraph: the normalised mean of its indexed
    /// sentences' vectors, derived at load.
    pub paragraphs: Vectors,
    /// One vector per defined term of an indexed sentence (the term
    /// embedded alone), and the sentence defining it.
    pub terms: Vectors,
    pub term_sentences: Vec<u32>,
    pub graph: HnswGraph,
    pub bm25: bm25::Bm25Index,
    /// Documents with at least one indexed sentence: those the BM25
    /// index's document field counts.
    pub indexed_documents: usize,
    /// `RELATED_TO` edges leaving each sentence.
    pub related: Vec<Vec<(u32, f32)>>,
}

impl IndexVersion {
    /// Loads `version` of `corpus`, or the current one.
    pub fn open(data_dir: &Path, corpus: &str, version: Option<&str>) -> Result<Self, IndexError> {
        let version = match version {
            Some(v) => v.to_string(),
            None => current_version(data_dir, corpus)?,
        };
        let dir = corpus_dir(data_dir, corpus).join(&version);
        // Every file is checked before any is parsed: the parsers trust
        // their input.
        let checked = checksums::verify(&dir)?;
        let manifest = read_manifest(&dir)?;
        if manifest.checksummed && !checked {
            return Err(IndexError::Corrupt(format!(
                "{}: missing; the manifest says the version was built with one",
                dir.join(files::CHECKSUMS).display()
            )));
        }
        if !READABLE_FORMATS.contains(&manifest.format_version) {
            return Err(IndexError::Corrupt(format!(
                "{}: format version {} (this build reads {}–{}); re-run ingest",
                dir.display(),
                manifest.format_version,
                READABLE_FORMATS.start(),
                READABLE_FORMATS.end()
            )));
        }
        let profile: IndexProfileSpec = read_json(&dir.join(files::PROFILE))?;
        let store: SkeletonStore = read_json(&dir.join(files::SKELETON))?;
        store.validate().map_err(|reason| {
            IndexError::Corrupt(format!("{}: {reason}", dir.join(files::SKELETON).display()))
        })?;
        let vectors = read_rows(
            &dir,
            files::SENTENCE_VECTORS,
            manifest.dims,
            store.sentences.len(),
        )?;
        let headings = read_rows(
            &dir,
            files::HEADING_VECTORS,
            manifest.dims,
            store.sections.len(),
        )?;
        let paragraphs = paragraph_centroids(&store, &vectors);
        let term_sentences: Vec<u32> = defined_terms(&store).iter().map(|&(i, _)| i).collect();
        let terms = read_rows(
            &dir,
            files::TERM_VECTORS,
            manifest.dims,
            term_sentences.len(),
        )?;
        let graph = HnswGraph::load(&dir)?;
        let bm25 = bm25::Bm25Index::open(&dir.join(files::BM25_DIR))?;
        let indexed_documents = store
            .documents
            .iter()
            .filter(|d| {
                let [start, end] = d.sentences;
                store.sentences[start as usize..end as usize]
                    .iter()
                    .any(|s| s.indexed)
            })
            .count();
        let edges: Vec<RelatedEdge> = read_json(&dir.join(files::RELATED))?;
        let mut related = vec![Vec::new(); store.sentences.len()];
        for e in edges {
            match related.get_mut(e.from as usize) {
                Some(list) if (e.to as usize) < store.sentences.len() => {
                    list.push((e.to, e.similarity))
                }
                _ => {
                    return Err(IndexError::Corrupt(format!(
                        "{}: an edge {} → {} outside the {} sentences",
                        dir.join(files::RELATED).display(),
                        e.from,
                        e.to,
                        store.sentences.len()
                    )));
                }
            }
        }
        Ok(Self {
            dir,
            manifest,
            profile,
            store,
            vectors,
            headings,
            paragraphs,
            terms,
            term_sentences,
            graph,
            bm25,
            indexed_documents,
            related,
        })
    }

    /// The version's chunks (`chunks.json`), read on demand: only the
    /// graph export needs them.
    pub fn chunks(&self) -> Result<Vec<ChunkRecord>, IndexError> {
        read_json(&self.dir.join(files::CHUNKS))
    }
}

/// Each paragraph's centroid: the mean of its indexed sentences' vectors,
/// normalised (zeros for a paragraph with none).
fn paragraph_centroids(store: &SkeletonStore, vectors: &Vectors) -> Vectors {
    let dims = vectors.dims;
    let mut data = vec![0f32; store.paragraphs.len() * dims];
    for (p, out) in store.paragraphs.iter().zip(data.chunks_exact_mut(dims)) {
        let [start, end] = p.sentences;
        for i in start..end {
            if store.sentences[i as usize].indexed {
                for (o, x) in out.iter_mut().zip(vectors.row(i)) {
                    *o += x;
                }
            }
        }
        crate::embed::normalize(out);
    }
    Vectors { dims, data }
}

/// Reads a vector file that must hold one row per sentence, section or
/// defined term.
fn read_rows(dir: &Path, file: &str, dims: usize, rows: usize) -> Result<Vectors, IndexError> {
    let path = dir.join(file);
    let vectors = Vectors::read(&path, dims)?;
    if vectors.len() != rows {
        return Err(IndexError::Corrupt(format!(
            "{}: {} rows where the skeleton has {rows}",
            path.display(),
            vectors.len()
        )));
    }
    Ok(vectors)
}

/// The defined terms of the indexed sentences, in sentence order: row
/// `n` of `terms.f32` is the `n`th (sentence, term).
pub(crate) fn defined_terms(store: &SkeletonStore) -> Vec<(u32, &str)> {
    store
        .sentences
        .iter()
        .enumerate()
        .filter(|(_, s)| s.indexed)
        .flat_map(|(i, s)| s.terms.iter().map(move |t| (i as u32, t.as_str())))
        .collect()
}
