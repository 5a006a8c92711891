//! `trellis chunk`: documents parsed, segmented and chunked, one JSON
//! object per chunk.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use serde::Serialize;

use trellis::chunk::ChunkKind;
use trellis::parse::TextSpan;
use trellis::pipeline::ProcessedDocument;
use trellis::skeleton::Skeleton;
use trellis::spec::ChunkStrategy;

use super::{EXIT_PARTIAL, ProfileArgs};

#[derive(clap::Args)]
pub struct ChunkArgs {
    /// Files and directories (walked recursively; files of unknown type
    /// inside directories are skipped and counted).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    profile: ProfileArgs,
    /// Write JSON Lines here instead of stdout (replaced atomically).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
}

/// One line of `trellis chunk` output.
#[derive(Serialize)]
struct ChunkRecord<'a> {
    document_id: &'a str,
    source: &'a str,
    chunk_id: String,
    index: u32,
    kind: ChunkKind,
    text: &'a str,
    heading_path: &'a [String],
    tokens: u32,
    overlap_tokens: u32,
    sentence_ids: Vec<String>,
    span: TextSpan,
    #[serde(skip_serializing_if = "Option::is_none")]
    pages: Option<[u32; 2]>,
    metadata: trellis::enrich::ChunkMetadata,
}

/// The key a document was read under.
fn document_key(document: &ProcessedDocument) -> &str {
    &document.skeleton.document.source
}

/// Documents processed per parallel batch: bounds memory on large corpora
/// while keeping the output in input order.
const BATCH: usize = 64;

impl ChunkArgs {
    pub fn run(&self) -> Result<ExitCode> {
        let pipeline = self.profile.pipeline()?;
        // The semantic strategy cuts where the sentence vectors say the
        // topic shifts: the profile's model embeds each document.
        let (profile, base) = self.profile.profile()?;
        let embedder = match profile.chunking.strategy {
            ChunkStrategy::Semantic => Some(
                trellis::embed::from_spec(&profile.embedding, base.as_deref())
                    .context("loading the embedding model (chunking.strategy: semantic)")?,
            ),
            _ => None,
        };
        if let Some(jobs) = self.jobs {
            rayon::ThreadPoolBuilder::new()
                .num_threads(jobs.max(1))
                .build_global()
                .context("starting worker threads")?;
        }
        let discovery = trellis::source::discover(&self.paths)?;
        if discovery.files.is_empty() {
            bail!("no documents found under the given paths");
        }
        tracing::info!(
            documents = discovery.files.len(),
            skipped = discovery.skipped.len(),
            tokens = %pipeline.token_counter().describe(),
            "chunking"
        );

        let mut sink = OutputSink::open(self.out.as_deref())?;
        let progress = indicatif::ProgressBar::new(discovery.files.len() as u64).with_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} documents {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let mut report = Report::default();
        for batch in discovery.files.chunks(BATCH) {
            let results: Vec<_> = batch
                .par_iter()
                .map(|path| {
                    let key = path.display().to_string();
                    let result = pipeline.process_file(path, &key);
                    progress.inc(1);
                    result
                })
                .collect();
            for result in results {
                let result = match (result, &embedder) {
                    (Ok(mut document), Some(embedder)) => {
                        match trellis::ingest::chunk_semantic(
                            &pipeline,
                            &mut document,
                            profile.embedding.context,
                            embedder.as_ref(),
                        ) {
                            Ok(()) => Ok(document),
                            Err(e) => Err(format!("{}: {e}", document_key(&document))),
                        }
                    }
                    (result, _) => result.map_err(|e| e.to_string()),
                };
                match result {
                    Ok(document) => {
                        report.add(&document);
                        write_chunks(&mut sink, &document)?;
                    }
                    Err(e) => {
                        tracing::error!("{e}");
                        report.failed.push(e);
                    }
                }
            }
        }
        progress.finish_and_clear();
        sink.commit()?;

        eprintln!(
            "chunked {} documents: {} sections, {} sentences ({} indexable), {} chunks; {} failed, {} skipped",
            report.documents,
            report.sections,
            report.sentences,
            report.indexable,
            report.chunks,
            report.failed.len(),
            discovery.skipped.len()
        );
        for failure in &report.failed {
            eprintln!("  failed: {failure}");
        }
        if report.failed.is_empty() {
            Ok(ExitCode::SUCCESS)
        } else {
            Ok(ExitCode::from(EXIT_PARTIAL))
        }
    }
}

fn write_chunks(sink: &mut OutputSink, document: &ProcessedDocument) -> Result<()> {
    let skeleton: &Skeleton = &document.skeleton;
    for warning in &document.warnings {
        tracing::warn!(source = %skeleton.document.source, "{warning}");
    }
    for chunk in &document.chunks {
        let record = ChunkRecord {
            document_id: skeleton.document.id.as_str(),
            source: &skeleton.document.source,
            chunk_id: format!("{}:c{}", skeleton.document.id, chunk.index),
            index: chunk.index,
            kind: chunk.kind,
            text: &chunk.text,
            heading_path: &chunk.heading_path,
            tokens: chunk.tokens,
            overlap_tokens: chunk.overlap_tokens,
            sentence_ids: chunk
                .sentences
                .iter()
                .map(|&id| skeleton.sentence_key(id))
                .collect(),
            span: chunk.span,
            pages: chunk.pages,
            metadata: document
                .enrichment
                .chunk_metadata(skeleton, &chunk.sentences),
        };
        serde_json::to_writer(&mut sink.writer, &record)?;
        sink.writer.write_all(b"\n")?;
    }
    Ok(())
}

#[derive(Default)]
struct Report {
    documents: usize,
    sections: usize,
    sentences: usize,
    indexable: usize,
    chunks: usize,
    failed: Vec<String>,
}

impl Report {
    fn add(&mut self, document: &ProcessedDocument) {
        self.documents += 1;
        self.sections += document.skeleton.sections.len();
        self.sentences += document.skeleton.sentences.len();
        self.indexable += document
            .skeleton
            .sentences
            .iter()
            .filter(|s| s.indexable)
            .count();
        self.chunks += document.chunks.len();
    }
}

/// Stdout, or a file written beside its destination and renamed into place
/// on success, so a reader never sees half an output.
struct OutputSink {
    writer: BufWriter<Box<dyn Write>>,
    target: Option<(PathBuf, PathBuf)>,
}

impl OutputSink {
    fn open(path: Option<&Path>) -> Result<Self> {
        match path {
            None => Ok(Self {
                writer: BufWriter::new(Box::new(std::io::stdout())),
                target: None,
            }),
            Some(path) => {
                let mut tmp = path.as_os_str().to_owned();
                tmp.push(".tmp");
                let tmp = PathBuf::from(tmp);
                let file = std::fs::File::create(&tmp)
                    .with_context(|| format!("creating {}", tmp.display()))?;
                Ok(Self {
                    writer: BufWriter::new(Box::new(file)),
                    target: Some((tmp, path.to_path_buf())),
                })
            }
        }
    }

    fn commit(mut self) -> Result<()> {
        self.writer.flush()?;
        drop(self.writer);
        if let Some((tmp, path)) = self.target.take() {
            std::fs::rename(&tmp, &path)
                .with_context(|| format!("moving {} to {}", tmp.display(), path.display()))?;
        }
        Ok(())
    }
}
