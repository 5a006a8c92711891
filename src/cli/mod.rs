//! The command line: the parser, one module per subcommand (its flags and
//! what it does), and what they share.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};

use trellis::pipeline::Pipeline;
use trellis::spec::{self, AnchorMode, IndexProfileSpec};

/// `println!` that returns the write's error instead of panicking, so that
/// a closed stdout (`trellis crd | head -1`) ends the command quietly (see
/// [`main`](crate::main)).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*)
    }};
}

/// `print!` as [`outln!`] is `println!`.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout(), $($arg)*)
    }};
}

mod answer;
mod chunk;
mod crd;
pub mod errors;
mod eval;
mod ingest;
pub mod logging;
mod operator;
mod parse;
mod progress;
mod query;
mod segment;
mod serve;

/// Exit status when some documents failed and the others were processed.
const EXIT_PARTIAL: u8 = 3;

#[derive(Parser)]
#[command(
    name = "trellis",
    version,
    about = "Deterministic sentence skeletons for retrieval over long documents"
)]
pub struct Cli {
    /// Log format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    /// More logging (-v: debug, -vv: trace). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
pub enum Command {
    /// Parse one document and print its tree, canonical text or skeleton.
    Parse(parse::ParseArgs),
    /// Split text on stdin into sentences, one per line.
    Segment(segment::SegmentArgs),
    /// Parse, segment and chunk documents; write one JSON object per chunk.
    Chunk(chunk::ChunkArgs),
    /// Ingest a Corpus into a new index version (or find the one already
    /// built for the same profile, sources and contents) and make it current.
    Ingest(ingest::IngestArgs),
    /// Answer a question with a RetrievalRoute over its corpus' current
    /// index version.
    Query(query::QueryArgs),
    /// Answer a question in sentences that cite their sources: the route's
    /// generation stage (`spec.generation`; extractive by default) over
    /// what retrieval selects.
    Answer(answer::AnswerArgs),
    /// Print the CustomResourceDefinitions of IndexProfile, Corpus and
    /// RetrievalRoute (generated from the spec types), or write one file
    /// per CRD into a directory.
    Crd(crd::CrdArgs),
    /// Run the Kubernetes operator: reconcile IndexProfile, Corpus and
    /// RetrievalRoute resources into ingest Jobs and retrieval
    /// Deployments, until SIGTERM.
    Operator(operator::OperatorArgs),
    /// Serve a RetrievalRoute over HTTP (POST /v1/retrieve, GET /v1/info,
    /// /healthz, /readyz, /metrics) until SIGTERM or Ctrl-C.
    Serve(serve::ServeArgs),
    /// Measure retrieval on a public dataset: index it (cached under the
    /// data directory by content and profile) and score its queries.
    Eval(eval::EvalArgs),
}

impl Command {
    pub fn run(self) -> Result<ExitCode> {
        match self {
            Command::Parse(args) => args.run(),
            Command::Segment(args) => args.run(),
            Command::Chunk(args) => args.run(),
            Command::Ingest(args) => args.run(),
            Command::Query(args) => args.run(),
            Command::Answer(args) => args.run(),
            Command::Crd(args) => args.run(),
            Command::Operator(args) => args.run(),
            Command::Serve(args) => args.run(),
            Command::Eval(args) => args.run(),
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Bm25,
    Dense,
    Hybrid,
    Full,
    Auto,
}

impl From<ModeArg> for AnchorMode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Bm25 => AnchorMode::Bm25,
            ModeArg::Dense => AnchorMode::Dense,
            ModeArg::Hybrid => AnchorMode::Hybrid,
            ModeArg::Full => AnchorMode::Full,
            ModeArg::Auto => AnchorMode::Auto,
        }
    }
}

#[derive(clap::Args)]
struct ProfileArgs {
    /// IndexProfile manifest (a YAML file or a directory of them). Without
    /// one, the documented defaults apply.
    #[arg(short = 'f', long = "file")]
    manifest: Option<PathBuf>,
    /// Which IndexProfile to use when the manifests hold several.
    #[arg(long)]
    profile: Option<String>,
}

impl ProfileArgs {
    fn pipeline(&self) -> Result<Pipeline> {
        let (spec, base) = self.profile()?;
        Pipeline::new(&spec, base.as_deref()).context("preparing the profile")
    }

    /// The profile, and the directory its relative paths resolve against.
    fn profile(&self) -> Result<(IndexProfileSpec, Option<PathBuf>)> {
        Ok(match &self.manifest {
            Some(path) => {
                let manifests = spec::load_path(path)?;
                let (profile, _) = spec::select_profile(&manifests, self.profile.as_deref(), path)?;
                (profile.spec.clone(), Some(manifest_dir(path)))
            }
            None => (IndexProfileSpec::default(), None),
        })
    }
}

/// The directory relative paths in a manifest resolve against: the
/// directory given, or the directory of the file given.
fn manifest_dir(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }
}

/// `KEY=VALUE` from the command line.
fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(format!("expected KEY=VALUE, got {text:?}")),
    }
}
