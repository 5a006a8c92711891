//! Building a version's files in its build directory: parse every
//! document, embed, then the BM25 index, the HNSW graph, the semantic
//! links, the JSON files, and last the manifest and the checksums.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

use crate::chunk::Chunk;
use crate::embed::{self, Embedder, EmbeddingCache};
use crate::index::files;
use crate::index::{
    ChunkRecord, Counts, DocumentNote, DocumentNumber, FORMAT_VERSION, HnswGraph, Quantized,
    SentenceNumber, SkeletonStore, Timings, Vectors, VersionManifest, bm25, links,
};
use crate::pipeline::Pipeline;
use crate::skeleton::Skeleton;
use crate::source::{CorpusDocument, Fetched, Printable};
use crate::spec::{ChunkStrategy, ChunkVectors, EmbeddingProvider, IndexProfileSpec, Quantization};

use super::embedding::{Embedded, embed_chunks, embed_store};
use super::{IngestError, Inputs, Progress, profile_hash};

/// One version being built: what from, where, and since when.
pub(super) struct Build<'a> {
    pub inputs: &'a Inputs<'a>,
    /// The version's name.
    pub version: &'a str,
    /// What the sources said about their documents (see
    /// [`VersionManifest::source_revision`]).
    pub source_revision: Option<String>,
    /// The build directory the files are written to.
    pub dir: &'a Path,
    pub progress: Progress<'a>,
    /// When the ingest started: the manifest's total time counts from it.
    pub started: Instant,
}

impl Build<'_> {
    /// Writes every file of the version and returns its manifest.
    pub fn run(
        self,
        documents: &[CorpusDocument],
        contents: Vec<Result<Fetched, String>>,
    ) -> Result<VersionManifest, IngestError> {
        let Build {
            inputs,
            dir,
            progress,
            ..
        } = self;
        let profile = inputs.profile;
        let mut timings = Timings::default();
        let pipeline = Pipeline::new(profile, Some(inputs.profile_base))
            .map_err(|e| IngestError::Profile(e.to_string()))?;

        // Parse, segment, chunk and enrich every document in parallel.
        let t = Instant::now();
        let Processed {
            mut store,
            failed,
            flagged,
            lost_pages,
            chunks,
            unchunked,
        } = process_documents(&pipeline, documents, contents, progress);
        timings.parse = t.elapsed().as_secs_f64();

        // Embed the indexed sentences, through the cache.
        let t = Instant::now();
        let (recorded, embedder) = recorded_profile(profile, inputs.profile_base)?;
        let dims = embedder.dimensions();
        let rows = indexed_rows(&store);
        if rows.is_empty() {
            return Err(IngestError::NothingIndexed {
                documents: store.documents.len(),
                failed: failed.len(),
                first: failed
                    .first()
                    .map(|f| format!("; first: {}: {}", f.key, f.reason))
                    .unwrap_or_default(),
            });
        }
        let data_dir = inputs.data_dir;
        let mut cache =
            EmbeddingCache::open(&data_dir.join(files::CACHE_DIR), &embedder.cache_id(), dims)?;
        cache.fold_shards(
            &embedder.cache_id(),
            &files::shard_dir(data_dir, inputs.corpus_name),
        )?;
        let Embedded {
            vectors,
            headings,
            terms,
            sentence_stats,
            heading_stats,
            term_stats,
        } = embed_store(
            &store,
            &rows,
            profile.embedding.context,
            &mut cache,
            embedder.as_ref(),
            progress,
        )?;
        // The semantic strategy cuts where the vectors say the topic shifts.
        let chunks = if unchunked.is_empty() {
            chunks
        } else {
            chunk_semantic(&pipeline, &unchunked, &mut store, &vectors)
        };
        drop(unchunked);
        let chunk_vectors = match profile.embedding.chunks {
            ChunkVectors::Mean => crate::index::chunks::mean_vectors(&chunks, &store, &vectors),
            ChunkVectors::Whole => {
                embed_chunks(&chunks, &mut cache, embedder.as_ref(), progress)?.0
            }
        };
        timings.embed = t.elapsed().as_secs_f64();
        vectors.write(&dir.join(files::SENTENCE_VECTORS))?;
        crate::index::paragraph_centroids(&store, &vectors)
            .write(&dir.join(files::PARAGRAPH_VECTORS))?;
        chunk_vectors.write(&dir.join(files::CHUNK_VECTORS))?;
        headings.write(&dir.join(files::HEADING_VECTORS))?;
        terms.write(&dir.join(files::TERM_VECTORS))?;

        let t = Instant::now();
        write_bm25(dir, profile, &store, &rows)?;
        timings.bm25 = t.elapsed().as_secs_f64();
        progress("bm25", 1, 1);

        let t = Instant::now();
        let graph = HnswGraph::build(
            &vectors,
            &rows,
            profile.index.hnsw_m as usize,
            profile.index.hnsw_ef_construction as usize,
        );
        graph.write(&dir.join(files::HNSW_GRAPH))?;
        if profile.index.quantization == Quantization::Int8 {
            Quantized::build(&vectors, graph.rows()).write(&dir.join(files::QUANTIZED_VECTORS))?;
        }
        timings.hnsw = t.elapsed().as_secs_f64();
        progress("hnsw", 1, 1);

        let t = Instant::now();
        let links::Linked {
            edges: related,
            report: links,
        } = links::link(&profile.semantic_links, &store, &vectors, &rows, &graph);
        for warning in &links.warnings {
            tracing::warn!("{warning}");
        }
        timings.links = t.elapsed().as_secs_f64();
        progress("links", 1, 1);
        files::write_parts(dir, &related, &store, &chunks, &recorded)?;

        timings.total = self.started.elapsed().as_secs_f64();
        let manifest = VersionManifest {
            format_version: FORMAT_VERSION,
            corpus: inputs.corpus_name.to_string(),
            version: self.version.to_string(),
            profile_hash: profile_hash(profile),
            model_id: embedder.model_id().to_string(),
            dims,
            counts: Counts {
                documents: store.documents.len(),
                failed_documents: failed.len(),
                flagged_documents: flagged.len(),
                lost_pages,
                sections: store.sections.len(),
                paragraphs: store.paragraphs.len(),
                sentences: store.sentences.len(),
                indexed_sentences: rows.len(),
                chunks: chunks.len(),
                related_edges: related.len(),
                tables: store.tables.len(),
                duplicate_tables: store
                    .tables
                    .iter()
                    .filter(|t| t.duplicate_of.is_some())
                    .count(),
            },
            links,
            embedded_sentences: sentence_stats.embedded,
            cached_sentences: sentence_stats.hits,
            embedded_headings: heading_stats.embedded,
            embedded_terms: term_stats.embedded,
            timings,
            failed,
            flagged,
            source_revision: self.source_revision,
            created: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            checksummed: true,
        };
        files::seal(dir, &manifest)?;
        Ok(manifest)
    }
}

/// The profile as the version records it, with the embedder it names.
///
/// The version records where the model was found, so that queries load
/// the same directory whichever manifest they start from.
fn recorded_profile(
    profile: &IndexProfileSpec,
    profile_base: &Path,
) -> Result<(IndexProfileSpec, Box<dyn Embedder>), IngestError> {
    let mut recorded = profile.clone();
    recorded.embedding = embed::with_resolved_path(&profile.embedding, Some(profile_base));
    let embedder = embed::from_spec(&recorded.embedding, None)?;
    if recorded.embedding.provider != EmbeddingProvider::Local {
        // A service's dimensions, probed when the profile leaves them out,
        // are recorded too: queries then start without a probe request,
        // and a service whose vectors changed length is caught.
        recorded
            .embedding
            .dimensions
            .get_or_insert(embedder.dimensions() as u32);
    }
    Ok((recorded, embedder))
}

/// Writes the BM25 index of the indexed sentences (`rows`), with the
/// fields the profile asks for; a field it leaves out is indexed empty.
fn write_bm25(
    dir: &Path,
    profile: &IndexProfileSpec,
    store: &SkeletonStore,
    rows: &[u32],
) -> Result<(), IngestError> {
    let bm25_dir = dir.join(files::BM25_DIR);
    std::fs::create_dir_all(&bm25_dir).map_err(|e| crate::index::IndexError::io(&bm25_dir, e))?;
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
    let mut first_rows: HashMap<DocumentNumber, u32> = HashMap::new();
    for &i in rows {
        first_rows
            .entry(store.sentences[i as usize].document)
            .or_insert(i);
    }
    let documents: Vec<String> = store
        .documents
        .iter()
        .map(|document| match store.has_indexed_sentence(document) {
            true => store.document_text(document),
            false => String::new(),
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
                    store.section_path(SentenceNumber(i)).join(" ")
                } else {
                    String::new()
                },
                paragraph: paragraphs
                    .get(sentence.paragraph.index())
                    .map_or("", String::as_str),
                document: match documents.get(sentence.document.index()) {
                    Some(text) if first => text,
                    _ => "",
                },
            }
        }),
    )?;
    Ok(())
}

/// The documents of a build, parsed.
pub(super) struct Processed {
    pub(super) store: SkeletonStore,
    pub(super) failed: Vec<DocumentNote>,
    pub(super) flagged: Vec<DocumentNote>,
    /// Pages the indexed documents promise that could not be read.
    pub(super) lost_pages: usize,
    pub(super) chunks: Vec<ChunkRecord>,
    /// For the `semantic` strategy, each indexed document's skeleton, by
    /// document number, to be chunked once the vectors are known
    /// ([`chunk_semantic`]); empty otherwise.
    pub(super) unchunked: Vec<(DocumentNumber, Skeleton)>,
}

/// Parses, segments, chunks and enriches `documents` in parallel; a
/// document that fails is recorded with its reason and left out.
pub(super) fn process_documents(
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
    let mut lost_pages = 0;
    let mut chunks = Vec::new();
    let mut unchunked = Vec::new();
    let semantic = pipeline.spec().chunking.strategy == ChunkStrategy::Semantic;
    for (doc, result) in documents.iter().zip(processed) {
        match result {
            Ok(p) => {
                for warning in &p.warnings {
                    tracing::warn!(key = %Printable(&doc.key), "{warning}");
                }
                let mut reasons = p.flags.clone();
                if !p.garbled_pages.is_empty() {
                    reasons.insert(
                        0,
                        crate::parse::pdf::garbled_pages_warning(&p.garbled_pages),
                    );
                }
                if !reasons.is_empty() {
                    flagged.push(DocumentNote {
                        key: doc.key.clone(),
                        reason: reasons.join("; "),
                    });
                }
                lost_pages += p.lost_pages.len();
                chunks.extend(ChunkRecord::of(&p, &store));
                store.add(&p, &doc.acl, &doc.metadata);
                if semantic {
                    unchunked.push((DocumentNumber(store.documents.len() as u32 - 1), p.skeleton));
                }
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
        lost_pages,
        chunks,
        unchunked,
    }
}

/// Chunks each of `unchunked` with the `semantic` strategy at the topic
/// shifts of its sentence `vectors`, and points the store's sentences at
/// their chunks.
pub(super) fn chunk_semantic(
    pipeline: &Pipeline,
    unchunked: &[(DocumentNumber, Skeleton)],
    store: &mut SkeletonStore,
    vectors: &Vectors,
) -> Vec<ChunkRecord> {
    let cut: Vec<Vec<Chunk>> = unchunked
        .par_iter()
        .map(|(document, skeleton)| {
            let [start, _] = store.documents[*document].sentences;
            pipeline.chunk_at_shifts(skeleton, |i| {
                let row = start.after(i as u32);
                store
                    .sentences
                    .get(row.index())
                    .filter(|s| s.indexed)
                    .map(|_| vectors.row(row.0))
            })
        })
        .collect();
    let mut records = Vec::new();
    for ((document, skeleton), chunks) in unchunked.iter().zip(cut) {
        records.extend(ChunkRecord::of_document(
            skeleton, &chunks, *document, store,
        ));
        store.set_chunks(*document, &chunks);
    }
    records
}

/// The rows of the sentences that are indexed (embedded and searched).
pub(super) fn indexed_rows(store: &SkeletonStore) -> Vec<u32> {
    (0..store.sentences.len() as u32)
        .filter(|&i| store.sentences[i as usize].indexed)
        .collect()
}
