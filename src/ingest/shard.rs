//! A sharded ingest's first step: each shard embeds a share of the
//! corpus into its own embedding cache file; the whole-corpus ingest that
//! follows finds every vector there and only builds.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::embed::{self, EmbeddingCache};
use crate::index::{DocumentNote, files, writer};
use crate::pipeline::Pipeline;
use crate::source::{self, CorpusDocument};

use super::build::{indexed_rows, process_documents};
use super::embedding::embed_store;
use super::hash::inputs_revision;
use super::{IngestError, Inputs, Progress, read_documents, unchanged_current};

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
/// embedding cache file. Nothing is published: a later [`super::run`] of
/// the whole corpus finds every vector in the cache and only builds.
pub fn embed_shard(
    inputs: &Inputs<'_>,
    shard: Shard,
    progress: Progress<'_>,
) -> Result<ShardReport, IngestError> {
    let Inputs {
        corpus_name,
        corpus,
        sources,
        profile,
        profile_base,
        data_dir,
    } = *inputs;
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
        .map_err(|e| IngestError::Profile(e.to_string()))?;
    let processed = process_documents(&pipeline, &documents, contents, progress);
    let spec = embed::with_resolved_path(&profile.embedding, Some(profile_base));
    let embedder = embed::from_spec(&spec, None)?;
    let mut cache = EmbeddingCache::open_shard(
        &data_dir.join(files::CACHE_DIR),
        &embedder.cache_id(),
        embedder.dimensions(),
        &files::shard_dir(data_dir, corpus_name),
        &format!("{}-{}", shard.index, writer::writer_id()),
    )?;
    let rows = indexed_rows(&processed.store);
    let embedded = embed_store(
        &processed.store,
        &rows,
        profile.embedding.context,
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
