//! `trellis eval`: retrieval quality on a public dataset.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use trellis::eval::{EvalReport, EvalSet, Evaluation, Metrics, parse_dataset_arg};
use trellis::spec::{self, AnchorMode, IndexProfileSpec, RetrievalRouteSpec};

use super::manifest_dir;
use super::retrieval::StageBars;

/// What `trellis eval` was asked.
pub struct EvalArgs<'a> {
    pub dataset: &'a str,
    pub split: Option<&'a str>,
    pub mode: Option<AnchorMode>,
    /// Manifests with the IndexProfile and RetrievalRoute to evaluate;
    /// the documented defaults without them.
    pub manifests: Option<&'a Path>,
    pub profile: Option<&'a str>,
    pub route: Option<&'a str>,
    pub data_dir: PathBuf,
    pub json: bool,
    /// Where to write one JSON line per judged query.
    pub per_query: Option<&'a Path>,
}

pub fn eval(args: &EvalArgs<'_>) -> Result<ExitCode> {
    let (kind, path) = parse_dataset_arg(args.dataset)?;
    let set = EvalSet::load(kind, &path, args.split)
        .with_context(|| format!("reading {}", args.dataset))?;
    let (profile, profile_base, mut route) = match args.manifests {
        Some(manifests) => {
            let loaded = spec::load_path(manifests)?;
            let (profile, file) = spec::select_profile(&loaded, args.profile, manifests)?;
            let route = match spec::select_route(&loaded, args.route, manifests) {
                Ok((route, _)) => route.spec.clone(),
                Err(_) if args.route.is_none() => RetrievalRouteSpec::for_corpus("evaluation"),
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
    if let Some(mode) = args.mode {
        route.anchors.mode = mode;
    }
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let evaluation = Evaluation {
        set: &set,
        dataset: format!("{}:{name}", kind.as_str()),
        profile: &profile,
        profile_base: &profile_base,
        route: &route,
        data_dir: &args.data_dir,
    };
    let bars = StageBars::new();
    let report = evaluation.run(&|stage: &str, done, total| bars.update(stage, done, total))?;
    bars.finish();
    if let Some(file) = args.per_query {
        let mut lines = String::new();
        for q in &report.per_query {
            lines.push_str(&serde_json::to_string(q)?);
            lines.push('\n');
        }
        std::fs::write(file, lines).with_context(|| format!("writing {}", file.display()))?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_report(&report)?;
    }
    Ok(ExitCode::SUCCESS)
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
