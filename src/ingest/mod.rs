//! A corpus run: sources → pipeline → embed → index build → publish →
//! graph store → report.
//!
//! ```text
//! list sources ─ unchanged since `current`? ─ yes → keep it
//!      │ no
//! read every document ─ version hash (hash.rs) ─ built already? ─ yes → make it current
//!      │ no
//! build directory: parse, embed, BM25, HNSW, links, manifest (build.rs, embedding.rs)
//!      │
//! publish, open it once, `current`, retention (crate::index::current)
//!      │
//! graph store copy (crate::graph::sync) ─ report
//! ```
//!
//! A sharded ingest runs [`embed_shard`] per shard first (shard.rs), then
//! [`run`] over the whole corpus, which finds every vector in the cache.
//! One bad document is recorded in the report and the manifest and never
//! stops the run; a version is published whole or not at all.

mod build;
mod embedding;
mod hash;
mod shard;

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::embed::EmbedError;
use crate::graph::GraphOutcome;
use crate::index::current::{publish, retain, set_current};
use crate::index::files::{MANIFEST, read_manifest};
use crate::index::{
    IndexError, IndexVersion, VersionManifest, corpus_dir, current_version, writer,
};
use crate::source::{self, CorpusDocument, Fetched, SourceContext, SourceError};
use crate::spec::{CorpusSpec, IndexProfileSpec};

pub(crate) use embedding::embed_chunks;

/// Chunks `doc` with the `semantic` strategy as an ingest does, its
/// indexed sentences embedded alone or in `context` as the index would
/// hold them: for `trellis chunk`, which has no index and no cache to
/// read them from (they are embedded through a cache that lives as long as
/// the call).
pub fn chunk_semantic(
    pipeline: &crate::pipeline::Pipeline,
    doc: &mut crate::pipeline::ProcessedDocument,
    context: crate::spec::EmbeddingContext,
    embedder: &dyn crate::embed::Embedder,
) -> Result<(), IngestError> {
    let mut store = crate::index::SkeletonStore::default();
    store.add(doc, &[], &Default::default());
    let rows = build::indexed_rows(&store);
    let dir = tempfile::tempdir().map_err(|e| {
        IngestError::Index(IndexError::Io {
            path: std::env::temp_dir(),
            source: e,
        })
    })?;
    let mut cache = crate::embed::EmbeddingCache::open(
        dir.path(),
        &embedder.cache_id(),
        embedder.dimensions(),
    )?;
    let (vectors, _) =
        embedding::embed_sentences(&store, &rows, context, &mut cache, embedder, &|_, _| {})?;
    doc.chunks = pipeline.chunk_at_shifts(&doc.skeleton, |i| {
        store
            .sentences
            .get(i)
            .filter(|s| s.indexed)
            .map(|_| vectors.row(i as u32))
    });
    Ok(())
}
pub use hash::profile_hash;
pub use shard::{Shard, ShardReport, embed_shard};

#[derive(Debug, Error)]
pub enum IngestError {
    #[error(transparent)]
    Index(#[from] IndexError),
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

/// What a run reads: a corpus, where its sources are, its profile, and
/// where versions live.
#[derive(Clone, Copy)]
pub struct Inputs<'a> {
    pub corpus_name: &'a str,
    pub corpus: &'a CorpusSpec,
    /// Where the corpus' sources are (relative paths resolve against its
    /// `base_dir`, the Corpus manifest's directory).
    pub sources: &'a SourceContext,
    pub profile: &'a IndexProfileSpec,
    /// The profile manifest's directory (a relative model path resolves
    /// against it).
    pub profile_base: &'a Path,
    pub data_dir: &'a Path,
}

/// Progress callback: stage name, units done, units in all.
pub type Progress<'a> = &'a (dyn Fn(&str, u64, u64) + Sync);

/// What a run did.
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
    /// store ([`crate::graph::sync`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<GraphOutcome>,
    /// Entries of the sources' directories not read (symbolic links,
    /// files of other types), found by this run's listing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<source::SkippedEntry>,
}

/// Builds (or finds) the index version of a corpus, makes it current and,
/// when the profile names a graph store, copies it there.
///
/// When the sources report the same revision as the current version's
/// (sizes and modification times, ETags) and the specs are unchanged, the
/// current version is kept without reading any document.
///
/// After publishing, versions beyond the Corpus' `retainVersions` are
/// removed, oldest first, except those named in `served` (versions that
/// retrieval pods still serve). The graph store's copy follows the
/// published version; its failure is reported in
/// [`IngestReport::graph`] and leaves the embedded index serving.
pub fn run(
    inputs: &Inputs<'_>,
    served: &[String],
    progress: Progress<'_>,
) -> Result<IngestReport, IngestError> {
    let mut report = publish_version(inputs, served, progress)?;
    report.graph = crate::graph::sync(
        &inputs.profile.graph,
        inputs.data_dir,
        inputs.corpus_name,
        &report.manifest.version,
        served,
    );
    Ok(report)
}

/// The index part of [`run`]: the version built or found, current, and
/// retention applied.
fn publish_version(
    inputs: &Inputs<'_>,
    served: &[String],
    progress: Progress<'_>,
) -> Result<IngestReport, IngestError> {
    let Inputs {
        corpus_name,
        corpus,
        sources,
        profile,
        data_dir,
        ..
    } = *inputs;
    let started = Instant::now();
    let source::Listing { documents, skipped } = source::corpus_documents(corpus, sources)?;
    let root = corpus_dir(data_dir, corpus_name);
    std::fs::create_dir_all(&root).map_err(|e| IndexError::io(&root, e))?;
    // Called once, on whichever path returns.
    let report = move |manifest, reused, sources_unchanged, removed| IngestReport {
        manifest,
        reused,
        sources_unchanged,
        removed,
        graph: None,
        skipped,
    };

    let revision = source::revision(&documents).map(|r| hash::inputs_revision(profile, corpus, &r));
    if let Some(manifest) = unchanged_current(data_dir, corpus_name, revision.as_deref()) {
        let removed = retain(&root, corpus.storage.retain_versions, served)?;
        return Ok(report(manifest, true, true, removed));
    }

    let contents = read_documents(&documents, progress);
    let version = hash::version_hash(profile, corpus, &documents, &contents);

    let final_dir = root.join(&version);
    if final_dir.join(MANIFEST).is_file() {
        let manifest = read_manifest(&final_dir)?;
        set_current(&root, &version)?;
        let removed = retain(&root, corpus.storage.retain_versions, served)?;
        return Ok(report(manifest, true, false, removed));
    }

    let build = writer::BuildDir::create(&root, &version)?;
    let manifest = build::Build {
        inputs,
        version: &version,
        source_revision: revision,
        dir: build.path(),
        progress,
        started,
    }
    .run(&documents, contents)?;
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
        ))
        .into());
    }
    set_current(&root, &version)?;
    let removed = retain(&root, corpus.storage.retain_versions, served)?;
    Ok(report(manifest, reused, false, removed))
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
