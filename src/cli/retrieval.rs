//! `trellis ingest` and `trellis query`: the embedded engine from the
//! command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::{Context, Result, bail};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use trellis::index::{self, IndexVersion};
use trellis::retrieve::{Filter, LoadedRoute};
use trellis::spec::{self, AnchorMode, IndexProfileSpec};

use super::{EXIT_PARTIAL, manifest_dir};

/// The data directory: `--data-dir`, else `$TRELLIS_DATA_DIR`, else
/// `./.trellis`.
pub fn data_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| std::env::var_os("TRELLIS_DATA_DIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(".trellis"))
}

/// In a cluster: the operator's report ConfigMap and the inputs hash it
/// started the ingest for.
pub struct ClusterReport<'a> {
    pub configmap: &'a str,
    pub inputs: &'a str,
}

pub fn ingest(
    manifests: &Path,
    corpus: Option<&str>,
    data_dir: &Path,
    json: bool,
    report: Option<ClusterReport<'_>>,
    shard: Option<index::Shard>,
    served: &[String],
) -> Result<ExitCode> {
    let result = if let Some(shard) = shard {
        ingest_shard(manifests, corpus, data_dir, json, shard)
    } else {
        ingest_corpus(manifests, corpus, data_dir, json, served)
    };
    let Some(cluster) = report else {
        return result.map(|(code, _)| code);
    };
    match result {
        // A shard reports nothing: the finalize step does, for the corpus.
        Ok((code, None)) => Ok(code),
        Ok((_, Some((report, profile)))) => {
            let status =
                trellis::operator::ingest::version_status(&report, cluster.inputs, &profile);
            super::operator::write_report(cluster.configmap, cluster.inputs, Ok(&status))?;
            // Failed documents are in the report (and the Corpus' Degraded
            // condition); the Job itself succeeded.
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let reason = super::error_chain(&e);
            if let Err(write) =
                super::operator::write_report(cluster.configmap, cluster.inputs, Err(&reason))
            {
                tracing::error!(error = %super::error_chain(&write), "could not report the failure");
            }
            Err(e)
        }
    }
}

/// A Corpus and its IndexProfile, read from manifests, with the
/// directories their relative paths resolve against.
struct Selected {
    corpus_name: String,
    corpus: spec::Corpus,
    /// Where the corpus' sources are: its manifest's directory, the
    /// mounts, the ConfigMaps of the manifest set.
    sources: trellis::source::SourceContext,
    profile: spec::IndexProfile,
    profile_dir: PathBuf,
}

fn select(manifests: &Path, corpus: Option<&str>) -> Result<Selected> {
    let loaded = spec::load_path(manifests)?;
    let (corpus_res, corpus_file) = spec::select_corpus(&loaded, corpus, manifests)?;
    let corpus_name = corpus_res.metadata.name.clone().unwrap_or_default();
    let profile_name = &corpus_res.spec.profile_ref.name;
    let (profile, profile_file) = spec::select_profile(&loaded, Some(profile_name), manifests)
        .with_context(|| {
            format!("corpus {corpus_name:?} refers to IndexProfile {profile_name:?}")
        })?;
    Ok(Selected {
        corpus_name,
        corpus: corpus_res.clone(),
        sources: trellis::source::SourceContext::new(&manifest_dir(corpus_file))
            .with_config_maps(spec::config_maps(&loaded)),
        profile: profile.clone(),
        profile_dir: manifest_dir(profile_file),
    })
}

fn ingest_shard(
    manifests: &Path,
    corpus: Option<&str>,
    data_dir: &Path,
    json: bool,
    shard: index::Shard,
) -> Result<(ExitCode, Option<(index::IngestReport, IndexProfileSpec)>)> {
    let Selected {
        corpus_name,
        corpus: corpus_res,
        sources,
        profile,
        profile_dir,
    } = select(manifests, corpus)?;
    let bars = StageBars::new();
    let report = index::embed_shard(
        &corpus_name,
        &corpus_res.spec,
        &sources,
        &profile.spec,
        &profile_dir,
        data_dir,
        shard,
        &|stage: &str, done, total| bars.update(stage, done, total),
    )?;
    bars.finish();
    if json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else if report.sources_unchanged {
        outln!(
            "corpus {corpus_name} shard {}/{}: sources unchanged since the current version; nothing to embed",
            report.shard,
            report.shards
        )?;
    } else {
        outln!(
            "corpus {corpus_name} shard {}/{}: {} documents ({} failed) · {} sentences · embedded {} vectors, {} from cache · {:.1} s",
            report.shard,
            report.shards,
            report.documents,
            report.failed.len(),
            report.sentences,
            report.embedded,
            report.cached,
            report.seconds
        )?;
    }
    Ok((ExitCode::SUCCESS, None))
}

/// Entries listed first, before the rest are summed up.
const LISTED_SKIPPED: usize = 10;

/// What the sources held that was not read, by reason, with the first few
/// entries named.
fn print_skipped(skipped: &[trellis::source::SkippedEntry]) -> std::io::Result<()> {
    use trellis::source::SkipReason;
    if skipped.is_empty() {
        return Ok(());
    }
    let links = skipped
        .iter()
        .filter(|s| s.reason == SkipReason::Symlink)
        .count();
    outln!(
        "  skipped {} entries not read: {} symbolic links (not followed), {} of other types",
        skipped.len(),
        links,
        skipped.len() - links
    )?;
    for entry in skipped.iter().take(LISTED_SKIPPED) {
        outln!(
            "  skipped: {}: {}",
            trellis::source::Printable(&entry.key),
            entry.reason.describe()
        )?;
    }
    if skipped.len() > LISTED_SKIPPED {
        outln!(
            "  … and {} more (--json lists all)",
            skipped.len() - LISTED_SKIPPED
        )?;
    }
    Ok(())
}

fn print_graph_outcome(graph: &trellis::graph::GraphOutcome) -> std::io::Result<()> {
    if let Some(error) = &graph.error {
        outln!(
            "  graph store {}: export FAILED (the embedded index serves): {error}",
            graph.store
        )?;
    } else if graph.already_exported {
        outln!(
            "  graph store {}: version {} already exported",
            graph.store,
            graph.version
        )?;
    } else if let Some(export) = &graph.export {
        let nodes: usize = export.written.nodes.values().sum();
        let relationships: usize = export.written.relationships.values().sum();
        outln!(
            "  graph store {}: {nodes} nodes, {relationships} relationships in {} statements, {:.2} s ({:.0} sentences/s)",
            graph.store,
            export.statements,
            export.seconds,
            export.sentences_per_second
        )?;
    }
    for v in &graph.removed {
        outln!("  graph store {}: removed version {v}", graph.store)?;
    }
    Ok(())
}

fn ingest_corpus(
    manifests: &Path,
    corpus: Option<&str>,
    data_dir: &Path,
    json: bool,
    served: &[String],
) -> Result<(ExitCode, Option<(index::IngestReport, IndexProfileSpec)>)> {
    let Selected {
        corpus_name,
        corpus: corpus_res,
        sources,
        profile,
        profile_dir,
    } = select(manifests, corpus)?;

    let bars = StageBars::new();
    let mut report = index::ingest(
        &corpus_name,
        &corpus_res.spec,
        &sources,
        &profile.spec,
        &profile_dir,
        data_dir,
        served,
        &|stage: &str, done, total| bars.update(stage, done, total),
    )?;
    bars.finish();
    // The graph store copy follows the published version; its failure is
    // reported and leaves the embedded index serving.
    report.graph = trellis::graph::sync(
        &profile.spec.graph,
        data_dir,
        &corpus_name,
        &report.manifest.version,
        served,
    );

    let m = &report.manifest;
    if json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        let c = &m.counts;
        outln!(
            "corpus {} → index version {}{}",
            m.corpus,
            m.version,
            if report.sources_unchanged {
                " (sources unchanged since it was built; nothing read)"
            } else if report.reused {
                " (unchanged; reused)"
            } else {
                ""
            }
        )?;
        outln!(
            "  documents {} ok ({} flagged), {} failed · sentences {} ({} indexed) · chunks {} · RELATED_TO edges {} (≤ {} × sentences: {})",
            c.documents,
            c.flagged_documents,
            c.failed_documents,
            c.sentences,
            c.indexed_sentences,
            c.chunks,
            c.related_edges,
            profile.spec.semantic_links.max_per_sentence,
            if m.related_edges_within_bound {
                "yes"
            } else {
                "NO"
            },
        )?;
        outln!(
            "  embedded {} new sentences, {} from cache · model {} ({} dims)",
            m.embedded_sentences,
            m.cached_sentences,
            m.model_id,
            m.dims
        )?;
        let t = &m.timings;
        outln!(
            "  seconds: parse {:.2} · embed {:.2} · bm25 {:.2} · hnsw {:.2} · links {:.2} · total {:.2}",
            t.parse,
            t.embed,
            t.bm25,
            t.hnsw,
            t.links,
            t.total
        )?;
        for (label, notes) in [("failed", &m.failed), ("flagged", &m.flagged)] {
            for note in notes {
                outln!(
                    "  {label}: {}: {}",
                    trellis::source::Printable(&note.key),
                    note.reason
                )?;
            }
        }
        print_skipped(&report.skipped)?;
        for v in &report.removed {
            outln!("  removed old version {v}")?;
        }
        if let Some(graph) = &report.graph {
            print_graph_outcome(graph)?;
        }
    }
    let graph_failed = report.graph.as_ref().is_some_and(|g| g.failed());
    let code = if m.failed.is_empty() && !graph_failed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_PARTIAL)
    };
    Ok((code, Some((report, profile.spec))))
}

/// What `trellis query` was asked.
pub struct QueryArgs<'a> {
    pub manifests: &'a Path,
    pub route_name: Option<&'a str>,
    pub data_dir: &'a Path,
    pub question: &'a str,
    pub k: Option<usize>,
    pub mode: Option<AnchorMode>,
    pub index_version: Option<&'a str>,
    pub filter: Filter,
    pub json: bool,
}

/// The filter of `--document` and `--section`: no restriction when both
/// are absent; a section path's headings are separated by `>`.
pub fn filter(
    documents: Vec<String>,
    section: Option<&str>,
    metadata: Vec<(String, String)>,
) -> Filter {
    Filter {
        metadata: (!metadata.is_empty()).then(|| metadata.into_iter().collect()),
        documents: (!documents.is_empty()).then_some(documents),
        section_prefix: section.map(|path| {
            path.split('>')
                .map(|heading| heading.trim().to_string())
                .filter(|heading| !heading.is_empty())
                .collect()
        }),
        ..Filter::default()
    }
}

pub fn query(args: &QueryArgs<'_>) -> Result<ExitCode> {
    let loaded = spec::load_path(args.manifests)?;
    let (route, _) = spec::select_route(&loaded, args.route_name, args.manifests)?;
    let mut route_spec = route.spec.clone();
    if let Some(mode) = args.mode {
        route_spec.anchors.mode = mode;
    }
    let corpus = &route_spec.corpus_ref.name;
    let index = IndexVersion::open(args.data_dir, corpus, args.index_version)?;
    // A mistyped document would otherwise read as "no results"; checked
    // before the model loads.
    for wanted in args.filter.documents.iter().flatten() {
        let documents = &index.store.documents;
        if !documents
            .iter()
            .any(|d| d.key == *wanted || d.id == *wanted)
        {
            bail!(
                "no document {wanted:?} in index version {} of corpus {corpus} \
                 (its documents are named by their key, such as {:?}, or id)",
                index.manifest.version,
                documents.first().map_or("", |d| d.key.as_str()),
            );
        }
    }
    let loaded = LoadedRoute::with_index(index, &route_spec)?;
    let answer = loaded
        .retriever()?
        .retrieve(&route_spec, args.question, args.k, &args.filter)?;
    let json = args.json;
    if json {
        outln!("{}", serde_json::to_string_pretty(&answer)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if answer.hits.is_empty() {
        outln!("no results")?;
    }
    let bold = console_bold();
    for (n, hit) in answer.hits.iter().enumerate() {
        let display = match hit.display.find(&hit.text) {
            Some(at) => format!(
                "{}{}{}{}{}",
                &hit.display[..at],
                bold.0,
                hit.text,
                bold.1,
                &hit.display[at + hit.text.len()..]
            ),
            None => format!("{}{}{}", bold.0, hit.display, bold.1),
        };
        outln!("{}. [{:.3}] {display}", n + 1, hit.score)?;
        let c = &hit.citation;
        let mut cite = format!("   — {}", c.document);
        if !c.section_path.is_empty() {
            cite.push_str(&format!(" › {}", c.section_path.join(" › ")));
        }
        if let Some(page) = c.page {
            cite.push_str(&format!(" · p. {page}"));
        }
        cite.push_str(&format!(" · chars {}+{}", c.char_span[0], c.char_span[1]));
        outln!("{cite}\n")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One progress bar per stage of a long run (parse, embed, …, query),
/// each replacing the last when its stage begins.
pub struct StageBars {
    bars: MultiProgress,
    style: ProgressStyle,
    current: Mutex<Option<(String, ProgressBar)>>,
}

impl StageBars {
    pub fn new() -> Self {
        Self {
            bars: MultiProgress::new(),
            style: ProgressStyle::with_template("{prefix:>6} [{bar:30}] {pos}/{len} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            current: Mutex::new(None),
        }
    }

    pub fn update(&self, stage: &str, done: u64, total: u64) {
        let Ok(mut slot) = self.current.lock() else {
            return;
        };
        if slot.as_ref().is_none_or(|(s, _)| s != stage) {
            if let Some((_, bar)) = slot.take() {
                bar.finish();
            }
            let bar = self
                .bars
                .add(ProgressBar::new(total).with_style(self.style.clone()));
            bar.set_prefix(stage.to_string());
            *slot = Some((stage.to_string(), bar));
        }
        if let Some((_, bar)) = slot.as_ref() {
            bar.set_length(total);
            bar.set_position(done);
        }
    }

    pub fn finish(&self) {
        if let Ok(mut slot) = self.current.lock()
            && let Some((_, bar)) = slot.take()
        {
            bar.finish();
        }
    }
}

/// ANSI bold on a terminal, `**…**` otherwise.
fn console_bold() -> (&'static str, &'static str) {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        ("\x1b[1m", "\x1b[0m")
    } else {
        ("**", "**")
    }
}
