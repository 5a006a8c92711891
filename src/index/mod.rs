//! Index versions on disk: build, publish, load, retain.
//!
//! ```text
//! <data-dir>/indexes/<corpus>/
//!     current                 the served version's name (replaced atomically)
//!     <version>/              one immutable index version
//!         manifest.json       format version, profile hash, model, counts, timings
//!         profile.json        the IndexProfile spec it was built with (model path and
//!                             key file made absolute, a service's dimensions filled in)
//!         skeleton.json       the skeleton store (store.rs)
//!         vectors.f32         sentence vectors (vectors.rs)
//!         headings.f32        one vector per section: its heading path embedded
//!         terms.f32           one vector per defined term, in sentence order
//!         hnsw.hnsw.graph     HNSW graph, and hnsw.hnsw.data its points
//!         bm25/               tantivy index (bm25.rs)
//!         related.json        RELATED_TO edges (links.rs)
//!         chunks.json         the chunks, for the graph export (store.rs)
//!         checksums.json      BLAKE3 of every file above, checked on open (checksums.rs)
//!     .build-<version>-<writer>/       a version being built; never read
//!     .build-<version>-<writer>.lock   held while it is built (writer.rs)
//! <data-dir>/cache/embeddings/  the embedding cache, shared by corpora
//!     shards/<corpus>/            vectors of a sharded ingest's shards
//! ```
//!
//! A version's name is the hash of the profile spec, the corpus spec and
//! every document's key, ACL and content, so an unchanged corpus maps to
//! the version already built. A version is built under a temporary name
//! and renamed into place once complete; `current` is then replaced by a
//! rename as well. A crash at any point leaves the previous `current`
//! serving and no half-written version under a version name.

pub mod bm25;
pub mod checksums;
pub mod links;
pub mod store;
pub mod vectors;
pub mod writer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::embed::{self, EmbedError, EmbeddingCache};
use crate::pipeline::Pipeline;
use crate::source::{self, CorpusDocument, Fetched, Printable, SourceContext, SourceError};
use crate::spec::{CorpusSpec, EmbeddingProvider, IndexProfileSpec};

pub use links::RelatedEdge;
pub use store::{ChunkRecord, SkeletonStore};
pub use vectors::{HnswGraph, Vectors};

/// Version of the on-disk layout this build writes; part of every version
/// hash.
pub const FORMAT_VERSION: u32 = 9;

/// The on-disk layouts this build opens. A version written in another one
/// must be rebuilt before this build serves it: the operator keeps a
/// route's pods on the release that built their version until the Corpus
/// publishes one in a format the new release reads.
pub const READABLE_FORMATS: std::ops::RangeInclusive<u32> = FORMAT_VERSION..=FORMAT_VERSION;

/// The chunks of a version, read only by the graph export.
pub const CHUNKS_FILE: &str = "chunks.json";

#[derive(Debug, Error)]
pub enum IndexError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("BM25 index: {0}")]
    Bm25(String),
    #[error("HNSW index: {0}")]
    Hnsw(String),
    #[error("index is corrupt: {0}")]
    Corrupt(String),
    #[error("no index for corpus {corpus:?} under {dir}; run `trellis ingest` first")]
    NotBuilt { corpus: String, dir: PathBuf },
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("profile: {0}")]
    Profile(String),
    /// No document gave a sentence to index: a version would answer
    /// nothing, so none is published and the current one stays.
    #[error("nothing to index: {documents} documents read, {failed} failed{first}")]
    NothingIndexed {
        documents: usize,
        failed: usize,
        /// The first failure, as `"; first: <key>: <reason>"`.
        first: String,
    },
}

impl IndexError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        IndexError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A document and what the ingest says of it: why it could not be indexed
/// ([`VersionManifest::failed`]) or why its text is in doubt
/// ([`VersionManifest::flagged`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DocumentNote {
    pub key: String,
    pub reason: String,
}

/// Counts recorded in the manifest and reported by every ingest.
#[derive(Clone, Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Counts {
    pub documents: usize,
    pub failed_documents: usize,
    /// Indexed documents whose text is in doubt (see
    /// [`VersionManifest::flagged`]).
    #[serde(default)]
    pub flagged_documents: usize,
    pub sections: usize,
    pub paragraphs: usize,
    pub sentences: usize,
    pub indexed_sentences: usize,
    pub chunks: usize,
    pub related_edges: usize,
}

/// Seconds spent per stage.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Timings {
    pub parse: f64,
    pub embed: f64,
    pub bm25: f64,
    pub hnsw: f64,
    pub links: f64,
    pub total: f64,
}

/// `manifest.json` of a version.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VersionManifest {
    pub format_version: u32,
    pub corpus: String,
    pub version: String,
    /// Hash of the profile spec alone.
    pub profile_hash: String,
    pub model_id: String,
    pub dims: usize,
    pub counts: Counts,
    /// `related_edges ≤ maxPerSentence × indexed sentences` held.
    pub related_edges_within_bound: bool,
    pub embedded_sentences: usize,
    pub cached_sentences: usize,
    /// Heading paths embedded (not found in the cache) for `headings.f32`.
    #[serde(default)]
    pub embedded_headings: usize,
    /// Defined terms embedded (not found in the cache) for `terms.f32`.
    #[serde(default)]
    pub embedded_terms: usize,
    pub timings: Timings,
    pub failed: Vec<DocumentNote>,
    /// Documents indexed with pages whose text looks garbled: their
    /// sentences carry a low confidence (`scoring.confidenceFloor` drops
    /// them from results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged: Vec<DocumentNote>,
    /// What the sources said about their documents when this version was
    /// built (see [`source::revision`]), with the profile and corpus specs:
    /// an ingest that finds the same again reuses the version without
    /// reading a document. `None` when a source could not tell.
    #[serde(default)]
    pub source_revision: Option<String>,
    /// Seconds since the Unix epoch when the build finished.
    pub created: u64,
    /// The version has `checksums.json` ([`checksums`]); false for
    /// versions built before checksums were written.
    #[serde(default)]
    pub checksummed: bool,
}

/// What `ingest` did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IngestReport {
    pub manifest: VersionManifest,
    /// The version existed already; nothing was rebuilt.
    pub reused: bool,
    /// The sources reported no change since the current version was
    /// built, so no document was read.
    #[serde(default)]
    pub sources_unchanged: bool,
    /// Versions removed by retention.
    pub removed: Vec<String>,
    /// What the graph store step did, when the profile names a graph
    /// store (set by the caller after [`ingest`]: see
    /// [`crate::graph::sync`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<crate::graph::GraphOutcome>,
    /// Entries of the sources' directories not read (symbolic links,
    /// files of other types), found by this run's listing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<source::SkippedEntry>,
}

/// The directory of a corpus' versions.
pub fn corpus_dir(data_dir: &Path, corpus: &str) -> PathBuf {
    data_dir.join("indexes").join(corpus)
}

/// The embedding cache, under the data directory; corpora share it (a
/// vector depends on the model and the text only).
pub const CACHE_DIR: &str = "cache/embeddings";

/// Where the shards of a corpus' sharded ingest leave their vectors.
fn shard_dir(data_dir: &Path, corpus: &str) -> PathBuf {
    data_dir.join(CACHE_DIR).join("shards").join(corpus)
}

/// Canonical hash of a profile spec (its JSON with defaults filled in).
pub fn profile_hash(spec: &IndexProfileSpec) -> String {
    let json = serde_json::to_vec(spec).unwrap_or_default();
    blake3::hash(&json).to_hex()[..16].to_string()
}

/// Progress callback: stage name, units done, units in all.
pub type Progress<'a> = &'a (dyn Fn(&str, u64, u64) + Sync);

/// Builds (or finds) the index version of a corpus and makes it current.
///
/// `sources` says where the corpus' sources are (relative paths resolve
/// against its `base_dir`, the Corpus manifest's directory);
/// `profile_base` is the profile manifest's directory. One bad document is
/// recorded in the report and the manifest and never stops the ingest.
///
/// When the sources report the same revision as the current version's
/// (sizes and modification times, ETags) and the specs are unchanged, the
/// current version is kept without reading any document.
///
/// After publishing, versions beyond the Corpus' `retainVersions` are
/// removed, oldest first, except those named in `served` (versions that
/// retrieval pods still serve).
// The corpus, its sources and profile, where versions live, which of
// them are served, and progress: each is needed, none belongs to another.
#[allow(clippy::too_many_arguments)]
pub fn ingest(
    corpus_name: &str,
    corpus: &CorpusSpec,
    sources: &SourceContext,
    profile: &IndexProfileSpec,
    profile_base: &Path,
    data_dir: &Path,
    served: &[String],
    progress: Progress<'_>,
) -> Result<IngestReport, IndexError> {
    let started = Instant::now();
    let source::Listing { documents, skipped } = source::corpus_documents(corpus, sources)?;
    let root = corpus_dir(data_dir, corpus_name);
    std::fs::create_dir_all(&root).map_err(|e| IndexError::io(&root, e))?;

    let revision = source::revision(&documents).map(|r| inputs_revision(profile, corpus, &r));
    if let Some(manifest) = unchanged_current(data_dir, corpus_name, revision.as_deref()) {
        let removed = retain(&root, corpus.storage.retain_versions, served)?;
        return Ok(IngestReport {
            manifest,
            reused: true,
            sources_unchanged: true,
            removed,
            graph: None,
            skipped,
        });
    }

    let contents = read_documents(&documents, progress);
    let version = version_hash(profile, corpus, &documents, &contents);

    let final_dir = root.join(&version);
    if final_dir.join("manifest.json").is_file() {
        let manifest = read_manifest(&final_dir)?;
        set_current(&root, &version)?;
        let removed = retain(&root, corpus.storage.retain_versions, served)?;
        return Ok(IngestReport {
            manifest,
            reused: true,
            sources_unchanged: false,
            removed,
            graph: None,
            skipped,
        });
    }

    let build = writer::BuildDir::create(&root, &version)?;
    let manifest = build_version(
        corpus_name,
        &version,
        profile,
        profile_base,
        data_dir,
        &documents,
        contents,
        revision,
        build.path(),
        progress,
        started,
    )?;
    let reused = publish(&build, &final_dir)?;
    // The version published is the one on disk: another writer's, when it
    // won the race (built from the same inputs).
    let manifest = if reused {
        read_manifest(&final_dir)?
    } else {
        manifest
    };
    drop(build);
    // What `current` names must open: a version that cannot (a value the
    // checks let through, a bug) is taken back, never published.
    if let Err(e) = IndexVersion::open(data_dir, corpus_name, Some(&version)) {
        if !reused {
            let _ = std::fs::remove_dir_all(&final_dir);
        }
        return Err(IndexError::Corrupt(format!(
            "{}: the new version does not open ({e}); `current` still names the previous one",
            final_dir.display()
        )));
    }
    set_current(&root, &version)?;
    let removed = retain(&root, corpus.storage.retain_versions, served)?;
    Ok(IngestReport {
        manifest,
        reused,
        sources_unchanged: false,
        removed,
        graph: None,
        skipped,
    })
}

/// Renames a finished build into place; `Ok(true)` when another writer
/// published the same version first (two ingests of one corpus at once),
/// which is success: a version's name is the hash of its inputs.
fn publish(build: &writer::BuildDir, final_dir: &Path) -> Result<bool, IndexError> {
    // Every file's data reaches the disk before the rename makes the
    // version visible: after a power loss (unlike a killed process) a
    // renamed directory can otherwise hold empty or short files.
    sync_tree(build.path())?;
    match std::fs::rename(build.path(), final_dir) {
        Ok(()) => {}
        Err(_) if final_dir.join("manifest.json").is_file() => {
            tracing::info!(
                version = %final_dir.display(),
                "another writer published this version first; keeping theirs"
            );
            return Ok(true);
        }
        Err(e) => return Err(IndexError::io(final_dir, e)),
    }
    if let Some(root) = final_dir.parent() {
        sync_dir(root)?;
    }
    Ok(false)
}

/// The current version's manifest, when it was built from `revision`.
fn unchanged_current(
    data_dir: &Path,
    corpus_name: &str,
    revision: Option<&str>,
) -> Option<VersionManifest> {
    let revision = revision?;
    let current = current_version(data_dir, corpus_name).ok()?;
    let manifest = read_manifest(&corpus_dir(data_dir, corpus_name).join(current)).ok()?;
    (manifest.source_revision.as_deref() == Some(revision)).then_some(manifest)
}

/// Reads every document (in parallel: remote sources wait on the network);
/// a document that cannot be read keeps its reason.
fn read_documents(
    documents: &[CorpusDocument],
    progress: Progress<'_>,
) -> Vec<Result<Fetched, String>> {
    let total = documents.len() as u64;
    let done = std::sync::atomic::AtomicU64::new(0);
    documents
        .par_iter()
        .map(|d| {
            let content = d.read();
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress("read", n, total);
            content
        })
        .collect()
}

/// The corpus and profile specs as they decide a version, without where
/// versions are kept and how ingest pods run.
fn indexed_corpus_spec(corpus: &CorpusSpec) -> Vec<u8> {
    let mut corpus = serde_json::to_value(corpus).unwrap_or_default();
    if let Some(fields) = corpus.as_object_mut() {
        fields.remove("storage");
        fields.remove("ingest");
    }
    serde_json::to_vec(&corpus).unwrap_or_default()
}

/// What an ingest compares with the current version's `source_revision`:
/// the specs and the sources' revision.
fn inputs_revision(profile: &IndexProfileSpec, corpus: &CorpusSpec, sources: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&FORMAT_VERSION.to_le_bytes());
    hasher.update(&crate::pipeline::SKELETON_REVISION.to_le_bytes());
    hasher.update(&serde_json::to_vec(profile).unwrap_or_default());
    hasher.update(&indexed_corpus_spec(corpus));
    hasher.update(sources.as_bytes());
    hasher.finalize().to_hex()[..16].to_string()
}

fn version_hash(
    profile: &IndexProfileSpec,
    corpus: &CorpusSpec,
    documents: &[CorpusDocument],
    contents: &[Result<Fetched, String>],
) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&FORMAT_VERSION.to_le_bytes());
    hasher.update(&crate::pipeline::SKELETON_REVISION.to_le_bytes());
    hasher.update(&serde_json::to_vec(profile).unwrap_or_default());
    // Where versions are kept and how ingest pods run do not change what
    // is indexed.
    hasher.update(&indexed_corpus_spec(corpus));
    for (doc, content) in documents.iter().zip(contents) {
        hasher.update(doc.key.as_bytes());
        hasher.update(&[0]);
        hasher.update(doc.acl.join(",").as_bytes());
        hasher.update(&[0]);
        match content {
            Ok(fetched) => hasher.update(blake3::hash(&fetched.bytes).as_bytes()),
            Err(e) => hasher.update(e.as_bytes()),
        };
    }
    hasher.finalize().to_hex()[..16].to_string()
}

#[allow(clippy::too_many_arguments)]
fn build_version(
    corpus_name: &str,
    version: &str,
    profile: &IndexProfileSpec,
    profile_base: &Path,
    data_dir: &Path,
    documents: &[CorpusDocument],
    contents: Vec<Result<Fetched, String>>,
    source_revision: Option<String>,
    dir: &Path,
    progress: Progress<'_>,
    started: Instant,
) -> Result<VersionManifest, IndexError> {
    let mut timings = Timings::default();
    let pipeline = Pipeline::new(profile, Some(profile_base))
        .map_err(|e| IndexError::Profile(e.to_string()))?;

    // Parse, segment, chunk and enrich every document in parallel.
    let t = Instant::now();
    let Processed {
        store,
        failed,
        flagged,
        chunks,
    } = process_documents(&pipeline, documents, contents, progress);
    timings.parse = t.elapsed().as_secs_f64();

    // Embed the indexed sentences, through the cache.
    let t = Instant::now();
    // The version records where the model was found, so that queries load
    // the same directory whichever manifest they start from.
    let mut recorded = profile.clone();
    recorded.embedding = embed::with_resolved_path(&profile.embedding, Some(profile_base));
    let embedder = embed::from_spec(&recorded.embedding, None)?;
    let dims = embedder.dimensions();
    if recorded.embedding.provider != EmbeddingProvider::Local {
        // A service's dimensions, probed when the profile leaves them out,
        // are recorded too: queries then start without a probe request,
        // and a service whose vectors changed length is caught.
        recorded.embedding.dimensions.get_or_insert(dims as u32);
    }
    let rows = indexed_rows(&store);
    if rows.is_empty() {
        return Err(IndexError::NothingIndexed {
            documents: store.documents.len(),
            failed: failed.len(),
            first: failed
                .first()
                .map(|f| format!("; first: {}: {}", f.key, f.reason))
                .unwrap_or_default(),
        });
    }
    let cache_dir = data_dir.join(CACHE_DIR);
    let mut cache = EmbeddingCache::open(&cache_dir, embedder.model_id(), dims)?;
    cache.fold_shards(embedder.model_id(), &shard_dir(data_dir, corpus_name))?;
    let Embedded {
        vectors,
        headings,
        terms: term_vectors,
        sentence_stats,
        heading_stats,
        term_stats,
    } = embed_store(&store, &rows, &mut cache, embedder.as_ref(), progress)?;
    timings.embed = t.elapsed().as_secs_f64();
    vectors.write(&dir.join("vectors.f32"))?;
    headings.write(&dir.join("headings.f32"))?;
    term_vectors.write(&dir.join("terms.f32"))?;

    let t = Instant::now();
    let bm25_dir = dir.join("bm25");
    std::fs::create_dir_all(&bm25_dir).map_err(|e| IndexError::io(&bm25_dir, e))?;
    // A field the profile leaves out is indexed empty.
    let paragraphs: Vec<String> = if profile.index.bm25_paragraph {
        store
            .paragraphs
            .iter()
            .map(|p| store.paragraph_text(p))
            .collect()
    } else {
        Vec::new()
    };
    // Each document's words ride on its first indexed sentence.
    let mut first_rows: HashMap<u32, u32> = HashMap::new();
    for &i in &rows {
        first_rows
            .entry(store.sentences[i as usize].document)
            .or_insert(i);
    }
    let documents: Vec<String> = store
        .documents
        .iter()
        .enumerate()
        .map(|(d, document)| {
            if first_rows.contains_key(&(d as u32)) {
                store.document_text(document)
            } else {
                String::new()
            }
        })
        .collect();
    bm25::build(
        &bm25_dir,
        rows.iter().map(|&i| {
            let sentence = &store.sentences[i as usize];
            let first = first_rows.get(&sentence.document) == Some(&i);
            bm25::Bm25Input {
                sentence: i,
                text: &sentence.text,
                section_path: if profile.index.bm25_section_path {
                    store.section_path(i).join(" ")
                } else {
                    String::new()
                },
                paragraph: paragraphs
                    .get(sentence.paragraph as usize)
                    .map_or("", String::as_str),
                document: match documents.get(sentence.document as usize) {
                    Some(text) if first => text,
                    _ => "",
                },
            }
        }),
    )?;
    timings.bm25 = t.elapsed().as_secs_f64();
    progress("bm25", 1, 1);

    let t = Instant::now();
    let graph = HnswGraph::build(
        &vectors,
        &rows,
        profile.index.hnsw_m as usize,
        profile.index.hnsw_ef_construction as usize,
    );
    graph.dump(dir)?;
    timings.hnsw = t.elapsed().as_secs_f64();
    progress("hnsw", 1, 1);

    let t = Instant::now();
    let related = links::build(&profile.semantic_links, &store, &vectors, &rows, &graph);
    timings.links = t.elapsed().as_secs_f64();
    progress("links", 1, 1);
    write_json(&dir.join("related.json"), &related)?;
    write_json(&dir.join("skeleton.json"), &store)?;
    write_json(&dir.join(CHUNKS_FILE), &chunks)?;
    write_json(&dir.join("profile.json"), &recorded)?;

    timings.total = started.elapsed().as_secs_f64();
    let bound = profile.semantic_links.max_per_sentence as usize * rows.len();
    let manifest = VersionManifest {
        format_version: FORMAT_VERSION,
        corpus: corpus_name.to_string(),
        version: version.to_string(),
        profile_hash: profile_hash(profile),
        model_id: embedder.model_id().to_string(),
        dims,
        counts: Counts {
            documents: store.documents.len(),
            failed_documents: failed.len(),
            flagged_documents: flagged.len(),
            sections: store.sections.len(),
            paragraphs: store.paragraphs.len(),
            sentences: store.sentences.len(),
            indexed_sentences: rows.len(),
            chunks: chunks.len(),
            related_edges: related.len(),
        },
        related_edges_within_bound: related.len() <= bound,
        embedded_sentences: sentence_stats.embedded,
        cached_sentences: sentence_stats.hits,
        embedded_headings: heading_stats.embedded,
        embedded_terms: term_stats.embedded,
        timings,
        failed,
        flagged,
        source_revision,
        created: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        checksummed: true,
    };
    // The manifest and then the checksums of every file, the manifest's
    // included, are written last.
    write_json(&dir.join("manifest.json"), &manifest)?;
    checksums::write(dir)?;
    Ok(manifest)
}

/// The documents of a build, parsed.
struct Processed {
    store: SkeletonStore,
    failed: Vec<DocumentNote>,
    flagged: Vec<DocumentNote>,
    chunks: Vec<ChunkRecord>,
}

/// Parses, segments, chunks and enriches `documents` in parallel; a
/// document that fails is recorded with its reason and left out.
fn process_documents(
    pipeline: &Pipeline,
    documents: &[CorpusDocument],
    contents: Vec<Result<Fetched, String>>,
    progress: Progress<'_>,
) -> Processed {
    let total = documents.len() as u64;
    let done = std::sync::atomic::AtomicU64::new(0);
    let processed: Vec<_> = documents
        .par_iter()
        .zip(contents.into_par_iter())
        .map(|(doc, content)| {
            let _span = tracing::info_span!("document", key = %Printable(&doc.key)).entered();
            let result = content
                .map_err(|e| format!("cannot read: {e}"))
                .and_then(|fetched| {
                    // The same format choice as `trellis parse` and `chunk`.
                    let bytes = &fetched.bytes;
                    crate::parse::detect_format(&fetched.name, bytes)
                        .and_then(|format| pipeline.process_bytes(&doc.key, bytes, format))
                        .map_err(|e| e.to_string())
                });
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress("parse", n, total);
            result
        })
        .collect();

    let mut store = SkeletonStore::default();
    let mut failed = Vec::new();
    let mut flagged = Vec::new();
    let mut chunks = Vec::new();
    for (doc, result) in documents.iter().zip(processed) {
        match result {
            Ok(p) => {
                for warning in &p.warnings {
                    tracing::warn!(key = %Printable(&doc.key), "{warning}");
                }
                if !p.garbled_pages.is_empty() {
                    flagged.push(DocumentNote {
                        key: doc.key.clone(),
                        reason: crate::parse::pdf::garbled_pages_warning(&p.garbled_pages),
                    });
                }
                chunks.extend(ChunkRecord::of(&p, &store));
                store.add(&p, &doc.acl, &doc.metadata);
            }
            Err(reason) => {
                tracing::warn!(key = %Printable(&doc.key), %reason, "document failed");
                failed.push(DocumentNote {
                    key: doc.key.clone(),
                    reason,
                });
            }
        }
    }
    Processed {
        store,
        failed,
        flagged,
        chunks,
    }
}

/// The rows of the sentences that are indexed (embedded and searched).
fn indexed_rows(store: &SkeletonStore) -> Vec<u32> {
    (0..store.sentences.len() as u32)
        .filter(|&i| store.sentences[i as usize].indexed)
        .collect()
}

/// The vectors of a build.
struct Embedded {
    vectors: Vectors,
    headings: Vectors,
    terms: Vectors,
    sentence_stats: embed::cache::CacheStats,
    heading_stats: embed::cache::CacheStats,
    term_stats: embed::cache::CacheStats,
}

/// Embeds, through `cache`, the indexed sentences (`rows`), each section's
/// heading path and each defined term.
fn embed_store(
    store: &SkeletonStore,
    rows: &[u32],
    cache: &mut EmbeddingCache,
    embedder: &dyn embed::Embedder,
    progress: Progress<'_>,
) -> Result<Embedded, IndexError> {
    let sentence_texts: Vec<(usize, &str)> = rows
        .iter()
        .map(|&i| (i as usize, store.sentences[i as usize].text.as_str()))
        .collect();
    let (vectors, sentence_stats) = embed_rows(
        cache,
        embedder,
        &sentence_texts,
        store.sentences.len(),
        &|done, total| progress("embed", done, total),
    )?;
    // Each section's heading path, embedded once: the heading signal of
    // scoring compares queries with the headings a sentence sits under.
    let heading_texts: Vec<String> = store
        .sections
        .iter()
        .map(|s| {
            heading_text(
                &s.path,
                store.documents[s.document as usize].title.as_deref(),
            )
        })
        .collect();
    let present: Vec<(usize, &str)> = heading_texts
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.is_empty())
        .map(|(n, t)| (n, t.as_str()))
        .collect();
    let (headings, heading_stats) =
        embed_rows(cache, embedder, &present, store.sections.len(), &|_, _| {})?;
    // Each defined term, embedded alone: the definition signal compares
    // queries with the terms a sentence defines.
    let terms = defined_terms(store);
    let term_texts: Vec<(usize, &str)> = terms
        .iter()
        .enumerate()
        .map(|(row, &(_, term))| (row, term))
        .collect();
    let (term_vectors, term_stats) =
        embed_rows(cache, embedder, &term_texts, terms.len(), &|_, _| {})?;
    Ok(Embedded {
        vectors,
        headings,
        terms: term_vectors,
        sentence_stats,
        heading_stats,
        term_stats,
    })
}

/// One shard of a sharded ingest: `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `I/N`, with I below N.
    fn from_str(text: &str) -> Result<Self, String> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?}: expected INDEX/COUNT, such as 0/4"))?;
        let index: u32 = index
            .trim()
            .parse()
            .map_err(|_| format!("{text:?}: shard index is not a whole number"))?;
        let count: u32 = count
            .trim()
            .parse()
            .map_err(|_| format!("{text:?}: shard count is not a whole number"))?;
        if count == 0 || index >= count {
            return Err(format!("{text:?}: the index must be below the count"));
        }
        Ok(Self { index, count })
    }
}

/// What one shard of a sharded ingest did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardReport {
    pub shard: u32,
    pub shards: u32,
    /// Documents of this shard that were read and parsed.
    pub documents: usize,
    pub failed: Vec<DocumentNote>,
    pub sentences: usize,
    /// Vectors embedded now (sentences, headings, terms).
    pub embedded: usize,
    /// Vectors found in the cache.
    pub cached: usize,
    /// The sources reported no change since the current version: the
    /// shard read nothing.
    #[serde(default)]
    pub sources_unchanged: bool,
    pub seconds: f64,
}

/// The first step of a sharded ingest: parses this shard's documents
/// (every `count`th of the corpus' stable document order, from `index`)
/// and embeds their sentences, headings and terms into the shard's own
/// embedding cache file. Nothing is published: a later [`ingest`] of the
/// whole corpus finds every vector in the cache and only builds.
// The same inputs as `ingest`, and which shard.
#[allow(clippy::too_many_arguments)]
pub fn embed_shard(
    corpus_name: &str,
    corpus: &CorpusSpec,
    sources: &SourceContext,
    profile: &IndexProfileSpec,
    profile_base: &Path,
    data_dir: &Path,
    shard: Shard,
    progress: Progress<'_>,
) -> Result<ShardReport, IndexError> {
    let started = Instant::now();
    let listed = source::corpus_documents(corpus, sources)?.documents;
    // The whole corpus unchanged since the current version: nothing to
    // embed, and the finalize step keeps that version.
    let revision = source::revision(&listed).map(|r| inputs_revision(profile, corpus, &r));
    if unchanged_current(data_dir, corpus_name, revision.as_deref()).is_some() {
        return Ok(ShardReport {
            shard: shard.index,
            shards: shard.count,
            documents: 0,
            failed: Vec::new(),
            sentences: 0,
            embedded: 0,
            cached: 0,
            sources_unchanged: true,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    let documents: Vec<CorpusDocument> = listed
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i as u32 % shard.count == shard.index)
        .map(|(_, d)| d)
        .collect();
    let contents = read_documents(&documents, progress);
    let pipeline = Pipeline::new(profile, Some(profile_base))
        .map_err(|e| IndexError::Profile(e.to_string()))?;
    let processed = process_documents(&pipeline, &documents, contents, progress);
    let spec = embed::with_resolved_path(&profile.embedding, Some(profile_base));
    let embedder = embed::from_spec(&spec, None)?;
    let mut cache = EmbeddingCache::open_shard(
        &data_dir.join(CACHE_DIR),
        embedder.model_id(),
        embedder.dimensions(),
        &shard_dir(data_dir, corpus_name),
        &format!("{}-{}", shard.index, writer::writer_id()),
    )?;
    let rows = indexed_rows(&processed.store);
    let embedded = embed_store(
        &processed.store,
        &rows,
        &mut cache,
        embedder.as_ref(),
        progress,
    )?;
    let stats = [
        embedded.sentence_stats,
        embedded.heading_stats,
        embedded.term_stats,
    ];
    Ok(ShardReport {
        shard: shard.index,
        shards: shard.count,
        documents: processed.store.documents.len(),
        failed: processed.failed,
        sentences: processed.store.sentences.len(),
        embedded: stats.iter().map(|s| s.embedded).sum(),
        cached: stats.iter().map(|s| s.hits).sum(),
        sources_unchanged: false,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Embeds `texts` (row number, text) through the cache into a table of
/// `rows` vectors; rows without a text stay zero. The cache is flushed per
/// batch, so an interrupted ingest keeps what it embedded.
fn embed_rows(
    cache: &mut EmbeddingCache,
    embedder: &dyn embed::Embedder,
    texts: &[(usize, &str)],
    rows: usize,
    progress: &dyn Fn(u64, u64),
) -> Result<(Vectors, embed::cache::CacheStats), IndexError> {
    const EMBED_BATCH: usize = 2048;
    let dims = embedder.dimensions();
    let mut vectors = Vectors {
        dims,
        data: vec![0.0; rows * dims],
    };
    let mut stats = embed::cache::CacheStats::default();
    let mut done = 0;
    for batch in texts.chunks(EMBED_BATCH) {
        let batch_texts: Vec<&str> = batch.iter().map(|&(_, t)| t).collect();
        let (batch_vectors, batch_stats) = cache.embed(embedder, &batch_texts)?;
        stats.embedded += batch_stats.embedded;
        stats.hits += batch_stats.hits;
        for (&(row, _), v) in batch.iter().zip(batch_vectors) {
            vectors.data[row * dims..(row + 1) * dims].copy_from_slice(&v);
        }
        cache.flush()?;
        done += batch.len();
        progress(done as u64, texts.len() as u64);
    }
    Ok((vectors, stats))
}

/// The defined terms of the indexed sentences, in sentence order: row
/// `n` of `terms.f32` is the `n`th (sentence, term).
fn defined_terms(store: &SkeletonStore) -> Vec<(u32, &str)> {
    store
        .sentences
        .iter()
        .enumerate()
        .filter(|(_, s)| s.indexed)
        .flat_map(|(i, s)| s.terms.iter().map(move |t| (i as u32, t.as_str())))
        .collect()
}

/// What a section's heading vector embeds: its heading path, outermost
/// first (the document title leads when the path does not start with it).
fn heading_text(path: &[String], title: Option<&str>) -> String {
    let mut parts: Vec<&str> = Vec::with_capacity(path.len() + 1);
    if let Some(title) = title
        && path.first().is_none_or(|first| first != title)
    {
        parts.push(title);
    }
    parts.extend(path.iter().map(String::as_str));
    parts.join(" › ")
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

fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), IndexError> {
    let file = std::fs::File::create(path).map_err(|e| IndexError::io(path, e))?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer(&mut out, value)
        .map_err(|e| IndexError::io(path, std::io::Error::other(e)))?;
    let file = out
        .into_inner()
        .map_err(|e| IndexError::io(path, e.into_error()))?;
    file.sync_all().map_err(|e| IndexError::io(path, e))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, IndexError> {
    let bytes = std::fs::read(path).map_err(|e| IndexError::io(path, e))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| IndexError::Corrupt(format!("{}: {e}", path.display())))
}

fn read_manifest(dir: &Path) -> Result<VersionManifest, IndexError> {
    read_json(&dir.join("manifest.json"))
}

/// Syncs every file under `dir`, then each directory after its entries;
/// the number of entries synced.
fn sync_tree(dir: &Path) -> Result<usize, IndexError> {
    let mut synced = 0;
    for entry in walkdir::WalkDir::new(dir).contents_first(true) {
        let entry = entry.map_err(|e| walk_error(dir, e))?;
        if entry.file_type().is_file() || entry.file_type().is_dir() {
            std::fs::File::open(entry.path())
                .and_then(|f| f.sync_all())
                .map_err(|e| IndexError::io(entry.path(), e))?;
            synced += 1;
        }
    }
    Ok(synced)
}

/// A failed step of a walk under `dir`, naming the entry it failed on.
fn walk_error(dir: &Path, e: walkdir::Error) -> IndexError {
    let path = e.path().unwrap_or(dir).to_path_buf();
    IndexError::io(&path, std::io::Error::other(e))
}

fn sync_dir(dir: &Path) -> Result<(), IndexError> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| IndexError::io(dir, e))
}

/// Points `current` at `version` by writing a temporary file and renaming
/// it over the old pointer.
fn set_current(root: &Path, version: &str) -> Result<(), IndexError> {
    let tmp = root.join(format!(".current-{}", writer::writer_id()));
    std::fs::write(&tmp, format!("{version}\n")).map_err(|e| IndexError::io(&tmp, e))?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| IndexError::io(&tmp, e))?;
    let current = root.join("current");
    std::fs::rename(&tmp, &current).map_err(|e| IndexError::io(&current, e))?;
    sync_dir(root)
}

/// The version `current` points at.
pub fn current_version(data_dir: &Path, corpus: &str) -> Result<String, IndexError> {
    let root = corpus_dir(data_dir, corpus);
    let current = root.join("current");
    match std::fs::read_to_string(&current) {
        Ok(text) => Ok(text.trim().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(IndexError::NotBuilt {
            corpus: corpus.to_string(),
            dir: root,
        }),
        Err(e) => Err(IndexError::io(&current, e)),
    }
}

/// Removes complete versions beyond the newest `keep` (the current one
/// counts, and is always kept) except those in `served`, and leftovers of
/// builds that did not finish; returns the versions it removed.
fn retain(root: &Path, keep: u32, served: &[String]) -> Result<Vec<String>, IndexError> {
    for dir in writer::collect_abandoned(root) {
        tracing::info!(dir = %dir.display(), "removed an abandoned build");
    }
    let current = std::fs::read_to_string(root.join("current")).unwrap_or_default();
    let current = current.trim();
    let mut versions = Vec::new();
    let entries = std::fs::read_dir(root).map_err(|e| IndexError::io(root, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if name.starts_with(".build-") {
            continue;
        }
        if let Ok(manifest) = read_manifest(&path) {
            versions.push((manifest.created, name));
        }
    }
    // The current version is always kept and counts towards `keep`.
    versions.retain(|(_, name)| name != current);
    versions.sort();
    let keep = keep.max(1) as usize - 1;
    let mut removed = Vec::new();
    let excess = versions.len().saturating_sub(keep);
    for (_, name) in versions.into_iter().take(excess) {
        if served.contains(&name) {
            continue;
        }
        let path = root.join(&name);
        std::fs::remove_dir_all(&path).map_err(|e| IndexError::io(&path, e))?;
        removed.push(name);
    }
    Ok(removed)
}

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
                dir.join(checksums::CHECKSUMS_FILE).display()
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
        let profile: IndexProfileSpec = read_json(&dir.join("profile.json"))?;
        let store: SkeletonStore = read_json(&dir.join("skeleton.json"))?;
        store.validate().map_err(|reason| {
            IndexError::Corrupt(format!("{}: {reason}", dir.join("skeleton.json").display()))
        })?;
        let vectors = read_rows(&dir, "vectors.f32", manifest.dims, store.sentences.len())?;
        let headings = read_rows(&dir, "headings.f32", manifest.dims, store.sections.len())?;
        let paragraphs = paragraph_centroids(&store, &vectors);
        let term_sentences: Vec<u32> = defined_terms(&store).iter().map(|&(i, _)| i).collect();
        let terms = read_rows(&dir, "terms.f32", manifest.dims, term_sentences.len())?;
        let graph = HnswGraph::load(&dir)?;
        let bm25 = bm25::Bm25Index::open(&dir.join("bm25"))?;
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
        let edges: Vec<RelatedEdge> = read_json(&dir.join("related.json"))?;
        let mut related = vec![Vec::new(); store.sentences.len()];
        for e in edges {
            match related.get_mut(e.from as usize) {
                Some(list) if (e.to as usize) < store.sentences.len() => {
                    list.push((e.to, e.similarity))
                }
                _ => {
                    return Err(IndexError::Corrupt(format!(
                        "{}: an edge {} → {} outside the {} sentences",
                        dir.join("related.json").display(),
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
        read_json(&self.dir.join(CHUNKS_FILE))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Publishing syncs nested files too (the BM25 index is a directory of
    /// its own), and every directory after its entries.
    #[test]
    fn sync_tree_reaches_every_nested_file_and_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("v");
        std::fs::create_dir_all(root.join("bm25/deeper")).unwrap();
        for file in ["vectors.f32", "bm25/meta.json", "bm25/deeper/segment"] {
            std::fs::write(root.join(file), b"data").unwrap();
        }
        assert_eq!(
            sync_tree(&root).unwrap(),
            6,
            "three files, three directories"
        );
        let err = sync_tree(&dir.path().join("missing")).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
