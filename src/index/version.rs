//! Opening a version: every file checked, then read, then checked against
//! the others.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::files::{self, corpus_dir, read_json, read_manifest};
use super::ids::IdNumbers;
use super::lexical::LexicalStats;
use super::names::DocumentNames;
use super::numbers::SentenceNumber;
use super::vectors::Paging;
use super::{
    ChunkIndex, ChunkMembers, ChunkRecord, HnswGraph, IndexError, Quantized, READABLE_FORMATS,
    RelatedEdge, SkeletonStore, Vectors, VersionManifest, bm25, checksums, current_version,
};
use crate::spec::{IndexProfileSpec, Quantization};

/// A loaded index version.
pub struct IndexVersion {
    pub dir: PathBuf,
    pub manifest: VersionManifest,
    pub profile: IndexProfileSpec,
    pub store: SkeletonStore,
    /// One vector per section: its heading path embedded (zeros when the
    /// path is empty).
    pub headings: Vectors,
    /// One vector per defined term of an indexed sentence (the term
    /// embedded alone), and the sentence defining it.
    pub terms: Vectors,
    pub term_sentences: Vec<SentenceNumber>,
    /// Documents with at least one indexed sentence: those the BM25
    /// index's document field counts.
    pub indexed_documents: usize,
    /// `RELATED_TO` edges leaving each sentence.
    pub related: Vec<Vec<(u32, f32)>>,
    /// How the version searches, as it was opened.
    searching: Searching,
    /// Its ids to numbers, built when a graph store's answer is first
    /// read.
    ids: OnceLock<IdNumbers>,
    /// The words naming its documents, built when a query first asks.
    names: OnceLock<DocumentNames>,
    /// Its chunk vectors and the sentences of each, read when a route
    /// that takes chunk candidates opens it.
    chunk_index: OnceLock<ChunkIndex>,
    /// Every chunk's sentences, read when a route first climbs to chunks.
    chunk_members: OnceLock<ChunkMembers>,
}

/// What a version searches with: its own files, or, opened
/// [`Opening::WithoutSearch`], the BM25 index's statistics counted at
/// load.
enum Searching {
    InProcess(SearchFiles),
    Counted(LexicalStats),
}

/// How much of a version to load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    /// Every file: what searching in process and exporting need.
    Whole,
    /// The skeleton, the heading and term vectors and the related links,
    /// but not the sentence vectors, the HNSW graph or the BM25 index:
    /// for a route whose anchors and sentence vectors come from a graph
    /// store. These three are most of a loaded version's memory.
    WithoutSearch,
}

/// The part of a version that searches in process: the sentence vectors
/// and what is built over them.
pub struct SearchFiles {
    pub vectors: Vectors,
    /// One vector per paragraph: the normalised mean of its indexed
    /// sentences' vectors (`paragraphs.f32`).
    pub paragraphs: Vectors,
    pub graph: HnswGraph,
    /// The graph's rows in int8, for a profile with `index.quantization:
    /// int8`.
    pub quantized: Option<Quantized>,
    pub bm25: bm25::Bm25Index,
}

/// The manifest's counts against the skeleton they were counted from.
fn check_counts(manifest: &VersionManifest, store: &SkeletonStore) -> Result<(), String> {
    let counts = &manifest.counts;
    let indexed = store.sentences.iter().filter(|s| s.indexed).count();
    for (what, counted, found) in [
        ("documents", counts.documents, store.documents.len()),
        ("sections", counts.sections, store.sections.len()),
        ("paragraphs", counts.paragraphs, store.paragraphs.len()),
        ("sentences", counts.sentences, store.sentences.len()),
        ("indexed sentences", counts.indexed_sentences, indexed),
    ] {
        if counted != found {
            return Err(format!("{counted} {what} counted, {found} stored"));
        }
    }
    if manifest.dims == 0 {
        return Err("a dimension of 0".into());
    }
    Ok(())
}

/// The environment variable by which an operator opts in to opening
/// versions that have no `checksums.json` (built by a release before
/// checksums, or copied without it): their structure is still checked,
/// but damage that keeps the files well-formed is not seen.
pub const ALLOW_UNCHECKED: &str = "TRELLIS_ALLOW_UNCHECKED_VERSIONS";

fn unchecked_versions_allowed() -> bool {
    std::env::var(ALLOW_UNCHECKED).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

impl IndexVersion {
    /// Loads `version` of `corpus`, or the current one, whole.
    pub fn open(data_dir: &Path, corpus: &str, version: Option<&str>) -> Result<Self, IndexError> {
        Self::open_as(data_dir, corpus, version, Opening::Whole)
    }

    /// The sentence vectors, HNSW graph and BM25 index; an error naming
    /// the version when it was opened without them.
    pub fn search(&self) -> Result<&SearchFiles, IndexError> {
        match &self.searching {
            Searching::InProcess(search) => Ok(search),
            Searching::Counted(_) => Err(IndexError::NotLoaded(format!(
                "index version {} was opened without its sentence vectors, HNSW graph and \
                 BM25 index (its route takes anchors from the graph store)",
                self.manifest.version
            ))),
        }
    }

    /// The mean share of the indexed documents that use the query's words
    /// ([`bm25::Bm25Index::document_share`]), from the BM25 index or,
    /// without it, from the words counted at load.
    pub fn document_share(&self, query: &str) -> Result<f32, IndexError> {
        match &self.searching {
            Searching::InProcess(search) => {
                search.bm25.document_share(query, self.indexed_documents)
            }
            Searching::Counted(stats) => stats.document_share(query, self.indexed_documents),
        }
    }

    /// The BM25 index's statistics, counted at load, of a version opened
    /// without the index.
    pub fn lexical(&self) -> Result<&LexicalStats, IndexError> {
        match &self.searching {
            Searching::Counted(stats) => Ok(stats),
            Searching::InProcess(_) => Err(IndexError::NotLoaded(format!(
                "index version {} was opened with its BM25 index: no statistics counted",
                self.manifest.version
            ))),
        }
    }

    /// Loads `version` of `corpus`, or the current one, as `opening` says.
    pub fn open_as(
        data_dir: &Path,
        corpus: &str,
        version: Option<&str>,
        opening: Opening,
    ) -> Result<Self, IndexError> {
        let version = match version {
            Some(v) => v.to_string(),
            None => current_version(data_dir, corpus)?,
        };
        let dir = super::current::version_dir(&corpus_dir(data_dir, corpus), &version)?;
        // Every file read is checked before any is parsed: the parsers
        // trust their input.
        let checked = match opening {
            Opening::Whole => checksums::verify(&dir)?,
            Opening::WithoutSearch => checksums::verify_files(&dir, &files::SERVING_FILES)?,
        };
        if !checked && !unchecked_versions_allowed() {
            return Err(IndexError::Corrupt(format!(
                "{}: missing, so nothing of the version can be checked; set \
                 {ALLOW_UNCHECKED}=1 to open versions without checksums anyway",
                dir.join(files::CHECKSUMS).display()
            )));
        }
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
        check_counts(&manifest, &store).map_err(|reason| {
            IndexError::Corrupt(format!(
                "{} and {} disagree: {reason}",
                dir.join(files::MANIFEST).display(),
                dir.join(files::SKELETON).display()
            ))
        })?;
        let headings = read_rows(
            &dir,
            files::HEADING_VECTORS,
            manifest.dims,
            store.sections.len(),
            Paging::Resident,
        )?;
        let term_sentences: Vec<SentenceNumber> =
            defined_terms(&store).iter().map(|&(i, _)| i).collect();
        let terms = read_rows(
            &dir,
            files::TERM_VECTORS,
            manifest.dims,
            term_sentences.len(),
            Paging::Resident,
        )?;
        let searching = match opening {
            Opening::Whole => {
                // The f32 rows are read in whole when the graph walk reads
                // them; under an int8 walk, only the rows rescoring and
                // expansion touch.
                let paging = match profile.index.quantization {
                    Quantization::None => Paging::Resident,
                    Quantization::Int8 => Paging::OnDemand,
                };
                let vectors = read_rows(
                    &dir,
                    files::SENTENCE_VECTORS,
                    manifest.dims,
                    store.sentences.len(),
                    paging,
                )?;
                let paragraphs = read_rows(
                    &dir,
                    files::PARAGRAPH_VECTORS,
                    manifest.dims,
                    store.paragraphs.len(),
                    Paging::Resident,
                )?;
                let graph = HnswGraph::read(&dir.join(files::HNSW_GRAPH))?;
                if let Some(&row) = graph.rows().iter().find(|&&r| r as usize >= vectors.len()) {
                    return Err(IndexError::Corrupt(format!(
                        "{}: a node for sentence {row} of {}",
                        dir.join(files::HNSW_GRAPH).display(),
                        vectors.len()
                    )));
                }
                let quantized = match profile.index.quantization {
                    Quantization::Int8 => Some(Quantized::read(
                        &dir.join(files::QUANTIZED_VECTORS),
                        manifest.dims,
                        graph.len(),
                    )?),
                    Quantization::None => None,
                };
                Searching::InProcess(SearchFiles {
                    paragraphs,
                    vectors,
                    graph,
                    quantized,
                    bm25: {
                        let bm25 = bm25::Bm25Index::open(&dir.join(files::BM25_DIR))?;
                        // An index emptied of its segments opens as an
                        // empty index and would answer nothing, silently.
                        let indexed = manifest.counts.indexed_sentences as u64;
                        if bm25.documents() != indexed {
                            return Err(IndexError::Corrupt(format!(
                                "{}: {} sentences indexed where the manifest counts {indexed}",
                                dir.join(files::BM25_DIR).display(),
                                bm25.documents()
                            )));
                        }
                        bm25
                    },
                })
            }
            Opening::WithoutSearch => Searching::Counted(LexicalStats::count(&store, &profile)?),
        };
        let indexed_documents = store
            .documents
            .iter()
            .filter(|d| store.has_indexed_sentence(d))
            .count();
        let edges: Vec<RelatedEdge> = read_json(&dir.join(files::RELATED))?;
        if edges.len() != manifest.counts.related_edges {
            return Err(IndexError::Corrupt(format!(
                "{}: {} links where the manifest counts {}",
                dir.join(files::RELATED).display(),
                edges.len(),
                manifest.counts.related_edges
            )));
        }
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
            headings,
            terms,
            term_sentences,
            indexed_documents,
            related,
            searching,
            ids: OnceLock::new(),
            names: OnceLock::new(),
            chunk_index: OnceLock::new(),
            chunk_members: OnceLock::new(),
        })
    }

    /// The words that name the version's documents (titles, file names).
    pub fn document_names(&self) -> &DocumentNames {
        self.names
            .get_or_init(|| DocumentNames::new(&self.store.documents))
    }

    /// The version's sentence and paragraph ids mapped to their numbers.
    pub fn ids(&self) -> &IdNumbers {
        self.ids.get_or_init(|| IdNumbers::new(&self.store))
    }

    /// The chunk vectors and each chunk's indexed sentences, read from
    /// disk the first time a route asks (files checked when the version
    /// was opened).
    pub fn chunk_index(&self) -> Result<&ChunkIndex, IndexError> {
        if let Some(index) = self.chunk_index.get() {
            return Ok(index);
        }
        let index = ChunkIndex::read(&self.dir, self.manifest.dims, &self.store)?;
        Ok(self.chunk_index.get_or_init(|| index))
    }

    /// Every chunk's sentences, indexed or not, read from disk the first
    /// time a route climbs from a sentence to its chunk.
    pub fn chunk_members(&self) -> Result<&ChunkMembers, IndexError> {
        if let Some(members) = self.chunk_members.get() {
            return Ok(members);
        }
        let members = ChunkMembers::read(&self.dir, &self.store)?;
        Ok(self.chunk_members.get_or_init(|| members))
    }

    /// The version's chunks (`chunks.json`) with their text, read on
    /// demand: the graph export writes them.
    pub fn chunks(&self) -> Result<Vec<ChunkRecord>, IndexError> {
        read_json(&self.dir.join(files::CHUNKS))
    }
}

/// Each paragraph's centroid: the mean of its indexed sentences'
/// vectors, normalised; zeros for a paragraph with none. Written at
/// ingest, so that opening a version reads no sentence vector.
pub(crate) fn paragraph_centroids(store: &SkeletonStore, vectors: &Vectors) -> Vectors {
    let dims = vectors.dims;
    let mut data = vec![0f32; store.paragraphs.len() * dims];
    for (p, out) in data.chunks_exact_mut(dims).enumerate() {
        for i in SentenceNumber::range(store.paragraphs[p].sentences) {
            if store.sentences[i].indexed {
                for (o, x) in out.iter_mut().zip(vectors.row(i.0)) {
                    *o += x;
                }
            }
        }
        crate::vector::normalize(out);
    }
    Vectors::from_vec(dims, data)
}

/// Maps a vector file that must hold one row per sentence, paragraph,
/// section or defined term.
fn read_rows(
    dir: &Path,
    file: &str,
    dims: usize,
    rows: usize,
    paging: Paging,
) -> Result<Vectors, IndexError> {
    let path = dir.join(file);
    let vectors = Vectors::map(&path, dims, paging)?;
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
pub(crate) fn defined_terms(store: &SkeletonStore) -> Vec<(SentenceNumber, &str)> {
    store
        .sentences
        .iter()
        .enumerate()
        .filter(|(_, s)| s.indexed)
        .flat_map(|(i, s)| {
            let i = SentenceNumber(i as u32);
            s.terms.iter().map(move |t| (i, t.as_str()))
        })
        .collect()
}
