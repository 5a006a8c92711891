//! `trellis ingest`: a Corpus into a new index version, from the command
//! line or, in a cluster, from the operator's ingest Job.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use trellis::ingest::{self, IngestReport, Inputs, Shard};
use trellis::spec::{self, IndexProfileSpec};

use super::progress::StageBars;
use super::{EXIT_PARTIAL, manifest_dir};
use trellis::locations::data_dir;

#[derive(clap::Args)]
pub struct IngestArgs {
    /// Manifests holding the Corpus and its IndexProfile (a YAML file or
    /// a directory of them).
    #[arg(short = 'f', long = "file")]
    manifests: PathBuf,
    /// Which Corpus, when the manifests hold several.
    #[arg(long)]
    corpus: Option<String>,
    /// Where indexes and caches live (default $TRELLIS_DATA_DIR, else
    /// ./.trellis).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Print the ingest report as JSON.
    #[arg(long)]
    json: bool,
    /// In a cluster (set by the operator): write the outcome into this
    /// ConfigMap of $POD_NAMESPACE, which the operator reads; documents
    /// that failed are reported there and do not fail the command.
    #[arg(long, requires = "inputs")]
    report_configmap: Option<String>,
    /// The inputs hash the operator started this ingest for.
    #[arg(long, requires = "report_configmap")]
    inputs: Option<String>,
    /// One shard of a sharded ingest, `INDEX/COUNT`: parse and embed
    /// every COUNT-th document from INDEX into the embedding cache and
    /// publish nothing; a later ingest of the whole corpus then embeds
    /// nothing.
    #[arg(long)]
    shard: Option<Shard>,
    /// An index version that retrieval pods still serve: never
    /// removed by `storage.retainVersions` (repeatable; the operator
    /// names every version its routes serve).
    #[arg(long = "keep-version", value_name = "VERSION")]
    keep_versions: Vec<String>,
}

/// In a cluster: the operator's report ConfigMap and the inputs hash it
/// started the ingest for.
struct ClusterReport<'a> {
    configmap: &'a str,
    inputs: &'a str,
}

impl IngestArgs {
    /// In a cluster, `--report-configmap` and `--inputs` (clap requires
    /// each with the other).
    fn cluster_report(&self) -> Option<ClusterReport<'_>> {
        self.report_configmap
            .as_deref()
            .zip(self.inputs.as_deref())
            .map(|(configmap, inputs)| ClusterReport { configmap, inputs })
    }

    pub fn run(&self) -> Result<ExitCode> {
        let manifests = &self.manifests;
        let corpus = self.corpus.as_deref();
        let data_dir = &data_dir(self.data_dir.as_deref());
        let result = if let Some(shard) = self.shard {
            ingest_shard(manifests, corpus, data_dir, self.json, shard)
        } else {
            ingest_corpus(manifests, corpus, data_dir, self.json, &self.keep_versions)
        };
        let Some(cluster) = self.cluster_report() else {
            return result.map(|(code, _)| code);
        };
        match result {
            // A shard reports nothing: the finalize step does, for the corpus.
            Ok((code, None)) => Ok(code),
            Ok((_, Some((report, profile)))) => {
                let status =
                    trellis::operator::report::version_status(&report, cluster.inputs, &profile);
                super::operator::write_report(cluster.configmap, cluster.inputs, Ok(&status))?;
                // Failed documents are in the report (and the Corpus' Degraded
                // condition); the Job itself succeeded.
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                let failure = trellis::operator::report::IngestFailure::of(
                    e.as_ref(),
                    super::errors::error_chain(&e),
                );
                if let Err(write) =
                    super::operator::write_report(cluster.configmap, cluster.inputs, Err(&failure))
                {
                    tracing::error!(error = %super::errors::error_chain(&write), "could not report the failure");
                }
                if failure.nothing_indexed {
                    eprintln!("error: {}", failure.message);
                    return Ok(ExitCode::from(
                        trellis::operator::report::NOTHING_INDEXED_EXIT_CODE,
                    ));
                }
                Err(e)
            }
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

impl Selected {
    /// What an ingest of the selected corpus into `data_dir` reads.
    fn inputs<'a>(&'a self, data_dir: &'a Path) -> Inputs<'a> {
        Inputs {
            corpus_name: &self.corpus_name,
            corpus: &self.corpus.spec,
            sources: &self.sources,
            profile: &self.profile.spec,
            profile_base: &self.profile_dir,
            data_dir,
        }
    }
}

fn ingest_shard(
    manifests: &Path,
    corpus: Option<&str>,
    data_dir: &Path,
    json: bool,
    shard: Shard,
) -> Result<(ExitCode, Option<(IngestReport, IndexProfileSpec)>)> {
    let selected = select(manifests, corpus)?;
    let corpus_name = &selected.corpus_name;
    let bars = StageBars::new();
    let inputs = selected.inputs(data_dir);
    let report = ingest::embed_shard(&inputs, shard, &|stage: &str, done, total| {
        bars.update(stage, done, total)
    })?;
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
) -> Result<(ExitCode, Option<(IngestReport, IndexProfileSpec)>)> {
    let selected = select(manifests, corpus)?;
    let bars = StageBars::new();
    let inputs = selected.inputs(data_dir);
    let report = ingest::run(&inputs, served, &|stage: &str, done, total| {
        bars.update(stage, done, total)
    })?;
    bars.finish();

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
            "  documents {} ok ({} flagged, {} pages lost), {} failed · sentences {} ({} indexed) · chunks {} · tables {} ({} near-duplicates dropped) · RELATED_TO edges {} at {:.2} (budget {})",
            c.documents,
            c.flagged_documents,
            c.lost_pages,
            c.failed_documents,
            c.sentences,
            c.indexed_sentences,
            c.chunks,
            c.tables,
            c.duplicate_tables,
            c.related_edges,
            m.links.threshold,
            m.links.budget,
        )?;
        for warning in &m.links.warnings {
            outln!("  warning: {warning}")?;
        }
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
    Ok((code, Some((report, selected.profile.spec))))
}
