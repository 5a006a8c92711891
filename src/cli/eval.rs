//! `trellis eval`: retrieval quality on a public dataset.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use trellis::eval::{EvalReport, EvalSet, Evaluation, Metrics, PassageMetrics, parse_dataset_arg};
use trellis::generate::Generator;
use trellis::spec::GenerationProvider;
use trellis::spec::{self, IndexProfileSpec, RetrievalRouteSpec};

use super::progress::StageBars;
use super::{ModeArg, manifest_dir};
use trellis::locations::data_dir;

#[derive(clap::Args)]
pub struct EvalArgs {
    /// `beir:DIR` (corpus.jsonl, queries.jsonl, qrels/), `squad:FILE`
    /// (SQuAD JSON), `cuad:DIR` (contracts/, master_clauses.csv,
    /// categories.json) or `files:DIR` (your own documents, with
    /// `--queries`).
    #[arg(long)]
    dataset: String,
    /// For `files:DIR`: JSON Lines of queries, each with the passages
    /// that answer it by document (path under DIR) and quoted text:
    /// `{"query": "…", "answers": [{"document": "a.pdf", "text": "…"}]}`.
    #[arg(long, value_name = "Q.jsonl")]
    queries: Option<PathBuf>,
    /// Which judgements: BEIR's qrels file name (default test, else
    /// dev, else train); a label for the others.
    #[arg(long)]
    split: Option<String>,
    /// Override the route's anchor mode.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Manifests holding the IndexProfile and RetrievalRoute to
    /// evaluate (default: the documented defaults).
    #[arg(short = 'f', long = "file")]
    manifests: Option<PathBuf>,
    /// Which IndexProfile, when the manifests hold several.
    #[arg(long)]
    profile: Option<String>,
    /// Which RetrievalRoute, when the manifests hold several.
    #[arg(long)]
    route: Option<String>,
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Also write one JSON line per judged query (id, relevant
    /// sentences, how many the top ten found, first relevant rank) to
    /// this file, for breakdowns by category.
    #[arg(long)]
    per_query: Option<PathBuf>,
    /// Also run the plain chunk baseline: the version's chunks alone,
    /// encoded whole and indexed for BM25, fused, ranked as passages.
    #[arg(long)]
    chunk_baseline: bool,
    /// Queries with gold answers (SQuAD) that the route's generation
    /// stage answers and the answer metrics score: all of them by
    /// default with the extractive provider, none with a model service
    /// unless given (each is a call to the model).
    #[arg(long, value_name = "N")]
    answers: Option<usize>,
}

impl EvalArgs {
    pub fn run(&self) -> Result<ExitCode> {
        let data_dir = data_dir(self.data_dir.as_deref());
        let (kind, path) = parse_dataset_arg(&self.dataset)?;
        let set = EvalSet::load(kind, &path, self.split.as_deref(), self.queries.as_deref())
            .with_context(|| format!("reading {}", self.dataset))?;
        let (profile, profile_base, mut route) = match self.manifests.as_deref() {
            Some(manifests) => {
                let loaded = spec::load_path(manifests)?;
                let (profile, file) =
                    spec::select_profile(&loaded, self.profile.as_deref(), manifests)?;
                let route = match spec::select_route(&loaded, self.route.as_deref(), manifests) {
                    Ok((route, _)) => route.spec.clone(),
                    Err(_) if self.route.is_none() => RetrievalRouteSpec::for_corpus("evaluation"),
                    Err(e) => return Err(e.into()),
                };
                (profile.spec.clone(), manifest_dir(file), route)
            }
            None => (
                IndexProfileSpec::default(),
                std::env::current_dir()?,
                RetrievalRouteSpec::for_corpus("evaluation"),
            ),
        };
        if let Some(mode) = self.mode {
            route.anchors.mode = mode.into();
        }
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let generator = Generator::from_spec(&route.generation)?;
        let answer_limit = match (self.answers, route.generation.provider) {
            (Some(n), _) => n,
            (None, GenerationProvider::Extractive) => usize::MAX,
            (None, _) => 0,
        };
        let evaluation = Evaluation {
            set: &set,
            dataset: format!("{}:{name}", kind.as_str()),
            profile: &profile,
            profile_base: &profile_base,
            route: &route,
            data_dir: &data_dir,
            chunk_baseline: self.chunk_baseline,
            generator: (answer_limit > 0).then_some(&generator),
            answer_limit,
        };
        let bars = StageBars::new();
        let report = evaluation.run(&|stage: &str, done, total| bars.update(stage, done, total))?;
        bars.finish();
        if let Some(file) = &self.per_query {
            let mut lines = String::new();
            for q in &report.per_query {
                lines.push_str(&serde_json::to_string(q)?);
                lines.push('\n');
            }
            std::fs::write(file, lines).with_context(|| format!("writing {}", file.display()))?;
        }
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&report)?)?;
        } else {
            print_report(&report)?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

fn print_report(r: &EvalReport) -> std::io::Result<()> {
    outln!(
        "{} ({} split) · mode {} · {} queries · index {} ({} sentences)",
        r.dataset,
        r.split,
        r.mode,
        r.queries,
        r.index_version,
        r.indexed_sentences
    )?;
    let row = |label: &str, m: &Option<Metrics>| match m {
        Some(m) => outln!(
            "  {label:<11} nDCG@10 {:.3} · R@1 {:.3} · R@5 {:.3} · R@10 {:.3} · hit@10 {:.3} · MRR@10 {:.3} · P@5 {:.3} ({} queries)",
            m.ndcg_10,
            m.recall_1,
            m.recall_5,
            m.recall_10,
            m.hit_10,
            m.mrr,
            m.p_5,
            m.queries
        ),
        None => outln!("  {label:<11} not measured by this dataset"),
    };
    row("document", &r.document)?;
    row("sentence", &r.sentence)?;
    if r.unfiltered.is_some() {
        row("unfiltered", &r.unfiltered)?;
    }
    if let Some(s) = &r.sections {
        outln!(
            "  sections    coverage@10 {:.3} · spanning two or more: {:.3} ({} queries) · distinct in the top ten {:.2}",
            s.coverage_10,
            s.spanning_coverage_10,
            s.spanning,
            s.distinct_10
        )?;
    }
    let passages = |label: &str, p: &Option<PassageMetrics>| match p {
        Some(p) => outln!(
            "  {label:<11} shown R@1 {:.3} · R@5 {:.3} · R@10 {:.3} · hit@1 {:.3} · words@5 {:.0} · words@10 {:.0} · R within 500 words {:.3} · 1,000 {:.3}",
            p.recall_1,
            p.recall_5,
            p.recall_10,
            p.hit_1,
            p.words_5,
            p.words_10,
            p.within_500,
            p.within_1000
        ),
        None => Ok(()),
    };
    passages("passages", &r.passages)?;
    if let Some(b) = &r.chunk_baseline {
        outln!(
            "  chunk baseline ({} chunks, indexed in {:.1} s):",
            b.chunks,
            b.index_seconds
        )?;
        if b.document.is_some() {
            row("document", &b.document)?;
        }
        passages("passages", &b.passages)?;
    }
    if let Some(a) = &r.answers {
        outln!(
            "  answers     {} · exact match {:.3} · F1 {:.3} · cited sentences hold a gold answer {:.3} · unsupported sentences {:.3} ({} answers, {} failed)",
            a.provider,
            a.exact_match,
            a.f1,
            a.cited_gold,
            a.unsupported_sentences,
            a.queries,
            a.failed
        )?;
    }
    let c = &r.coverage;
    outln!(
        "  coverage: {} of {} queries scored at sentence level ({} unmatched), {} at document level",
        c.sentence,
        c.queries,
        c.unmatched,
        c.document
    )?;
    outln!(
        "  seconds: index {:.1} · queries {:.1} · total {:.1}",
        r.index_seconds,
        r.query_seconds,
        r.seconds
    )
}
