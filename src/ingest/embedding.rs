//! Embedding a build's texts through the cache: the indexed sentences,
//! each section's heading path, each defined term, and each chunk when
//! the profile encodes chunks whole.

use crate::embed::cache::CacheStats;
use crate::embed::{Embedder, EmbeddingCache, Passage};
use crate::index::{ChunkRecord, SkeletonStore, Vectors, defined_terms};
use crate::spec::EmbeddingContext;

use super::{IngestError, Progress};

/// Texts (or sentences in passages) embedded per call between cache
/// flushes.
const EMBED_BATCH: usize = 2048;

/// The vectors of a build.
pub(super) struct Embedded {
    pub(super) vectors: Vectors,
    pub(super) headings: Vectors,
    pub(super) terms: Vectors,
    pub(super) sentence_stats: CacheStats,
    pub(super) heading_stats: CacheStats,
    pub(super) term_stats: CacheStats,
}

/// Embeds, through `cache`, the indexed sentences (`rows`) alone or in
/// their `context`, each section's heading path and each defined term.
pub(super) fn embed_store(
    store: &SkeletonStore,
    rows: &[u32],
    context: EmbeddingContext,
    cache: &mut EmbeddingCache,
    embedder: &dyn Embedder,
    progress: Progress<'_>,
) -> Result<Embedded, IngestError> {
    let report = |done, total| progress("embed", done, total);
    let (vectors, sentence_stats) =
        embed_sentences(store, rows, context, cache, embedder, &report)?;
    // Each section's heading path, embedded once: the heading signal of
    // scoring compares queries with the headings a sentence sits under.
    let heading_texts: Vec<String> = store
        .sections
        .iter()
        .map(|s| heading_text(&s.path, store.documents[s.document].title.as_deref()))
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

/// Embeds, through `cache`, the sentences `rows` of `store` alone or in
/// their `context`: one row per sentence of the store, zeros for those
/// not in `rows`.
pub(super) fn embed_sentences(
    store: &SkeletonStore,
    rows: &[u32],
    context: EmbeddingContext,
    cache: &mut EmbeddingCache,
    embedder: &dyn Embedder,
    report: &dyn Fn(u64, u64),
) -> Result<(Vectors, CacheStats), IngestError> {
    match context {
        EmbeddingContext::Sentence => {
            let sentence_texts: Vec<(usize, &str)> = rows
                .iter()
                .map(|&i| (i as usize, store.sentences[i as usize].text.as_str()))
                .collect();
            embed_rows(
                cache,
                embedder,
                &sentence_texts,
                store.sentences.len(),
                report,
            )
        }
        EmbeddingContext::Paragraph | EmbeddingContext::Window => {
            embed_in_context(store, rows, context, cache, embedder, report)
        }
    }
}

/// Embeds each chunk's text whole through the cache (`embedding.chunks:
/// whole`), one row per chunk.
pub(crate) fn embed_chunks(
    chunks: &[ChunkRecord],
    cache: &mut EmbeddingCache,
    embedder: &dyn Embedder,
    progress: Progress<'_>,
) -> Result<(Vectors, CacheStats), IngestError> {
    let texts: Vec<(usize, &str)> = chunks
        .iter()
        .enumerate()
        .map(|(row, chunk)| (row, chunk.text.as_str()))
        .collect();
    embed_rows(cache, embedder, &texts, chunks.len(), &|done, total| {
        progress("embed chunks", done, total)
    })
}

/// Embeds `texts` (row number, text) through the cache into a table of
/// `rows` vectors; rows without a text stay zero. The cache is flushed per
/// batch, so an interrupted ingest keeps what it embedded.
fn embed_rows(
    cache: &mut EmbeddingCache,
    embedder: &dyn Embedder,
    texts: &[(usize, &str)],
    rows: usize,
    progress: &dyn Fn(u64, u64),
) -> Result<(Vectors, CacheStats), IngestError> {
    let dims = embedder.dimensions();
    let mut vectors = Vectors::zeroed(rows, dims);
    let mut stats = CacheStats::default();
    let mut done = 0;
    for batch in texts.chunks(EMBED_BATCH) {
        let batch_texts: Vec<&str> = batch.iter().map(|&(_, t)| t).collect();
        let (batch_vectors, batch_stats) = cache.embed(embedder, &batch_texts)?;
        stats.embedded += batch_stats.embedded;
        stats.hits += batch_stats.hits;
        for (&(row, _), v) in batch.iter().zip(batch_vectors) {
            vectors.row_mut(row).copy_from_slice(&v);
        }
        cache.flush()?;
        done += batch.len();
        progress(done as u64, texts.len() as u64);
    }
    Ok((vectors, stats))
}

/// The passages the indexed sentences (`rows`) are embedded in: their
/// paragraphs, or (`window`) their sections, each the text of all its
/// sentences joined by spaces (unindexed ones too: they are context), with
/// each indexed sentence's byte range, and the row of each range.
fn passages(
    store: &SkeletonStore,
    rows: &[u32],
    context: EmbeddingContext,
) -> Vec<(Passage, Vec<usize>)> {
    let indexed: std::collections::HashSet<u32> = rows.iter().copied().collect();
    let group = |i: usize| {
        let sentence = &store.sentences[i];
        match context {
            EmbeddingContext::Window => sentence.section.0,
            _ => sentence.paragraph.0,
        }
    };
    let mut out: Vec<(Passage, Vec<usize>)> = Vec::new();
    let mut current: Option<u32> = None;
    for (i, sentence) in store.sentences.iter().enumerate() {
        if current != Some(group(i)) {
            current = Some(group(i));
            out.push(Default::default());
        }
        let Some((passage, sentence_rows)) = out.last_mut() else {
            continue;
        };
        if !passage.text.is_empty() {
            passage.text.push(' ');
        }
        let start = passage.text.len();
        passage.text.push_str(&sentence.text);
        if indexed.contains(&(i as u32)) {
            passage.spans.push(start..passage.text.len());
            sentence_rows.push(i);
        }
    }
    out.retain(|(passage, _)| !passage.spans.is_empty());
    out
}

/// Embeds the indexed sentences in their passages ([`passages`]) through
/// the cache, a batch of passages at a time.
fn embed_in_context(
    store: &SkeletonStore,
    rows: &[u32],
    context: EmbeddingContext,
    cache: &mut EmbeddingCache,
    embedder: &dyn Embedder,
    progress: &dyn Fn(u64, u64),
) -> Result<(Vectors, CacheStats), IngestError> {
    let dims = embedder.dimensions();
    let mut vectors = Vectors::zeroed(store.sentences.len(), dims);
    let mode = match context {
        EmbeddingContext::Window => "window",
        _ => "paragraph",
    };
    let passages = passages(store, rows, context);
    let mut stats = CacheStats::default();
    let mut done = 0;
    let mut start = 0;
    while start < passages.len() {
        let mut end = start;
        let mut sentences = 0;
        while end < passages.len() && (end == start || sentences < EMBED_BATCH) {
            sentences += passages[end].1.len();
            end += 1;
        }
        let batch = &passages[start..end];
        let texts: Vec<Passage> = batch.iter().map(|(p, _)| p.clone()).collect();
        let (batch_vectors, batch_stats) = cache.embed_in_context(embedder, mode, &texts)?;
        stats.embedded += batch_stats.embedded;
        stats.hits += batch_stats.hits;
        for ((_, sentence_rows), passage_vectors) in batch.iter().zip(batch_vectors) {
            for (&row, v) in sentence_rows.iter().zip(passage_vectors) {
                vectors.row_mut(row).copy_from_slice(&v);
            }
        }
        cache.flush()?;
        done += sentences;
        progress(done as u64, rows.len() as u64);
        start = end;
    }
    Ok((vectors, stats))
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
