//! The `trellis` command line.
//!
//! Exit status: 0 when everything succeeded, 1 on a fatal error, 2 on a
//! usage error, 3 when some documents failed and the others were processed.

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use rayon::prelude::*;
use serde::Serialize;

use trellis::chunk::ChunkKind;
use trellis::parse::TextSpan;
use trellis::pipeline::{Pipeline, ProcessedDocument};
use trellis::skeleton::Skeleton;
use trellis::spec::{self, AnchorMode, IndexProfileSpec};

/// `println!` that returns the write's error instead of panicking, so that
/// a closed stdout (`trellis crd | head -1`) ends the command quietly (see
/// [`main`]).
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

#[path = "cli/eval.rs"]
mod eval;
#[path = "cli/operator.rs"]
mod operator;
#[path = "cli/retrieval.rs"]
mod retrieval;
#[path = "cli/serve.rs"]
mod serve;

/// Exit status when some documents failed and the others were processed.
const EXIT_PARTIAL: u8 = 3;

/// Counts each thread's live memory, for `parsing.maxMemoryBytesPerDocument`.
#[global_allocator]
static ALLOCATOR: trellis::memory::CountingAllocator = trellis::memory::CountingAllocator;

#[derive(Parser)]
#[command(
    name = "trellis",
    version,
    about = "Deterministic sentence skeletons for retrieval over long documents"
)]
struct Cli {
    /// Log format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
    /// More logging (-v: debug, -vv: trace). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Parse one document and print its tree, canonical text or skeleton.
    Parse {
        file: PathBuf,
        /// What to print.
        #[arg(long, value_enum, default_value_t = ParseOutput::Json)]
        format: ParseOutput,
        #[command(flatten)]
        profile: ProfileArgs,
    },
    /// Split text on stdin into sentences, one per line.
    Segment {
        /// Print a JSON array of sentences instead.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        profile: ProfileArgs,
    },
    /// Parse, segment and chunk documents; write one JSON object per chunk.
    Chunk {
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
    },
    /// Ingest a Corpus into a new index version (or find the one already
    /// built for the same profile, sources and contents) and make it current.
    Ingest {
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
        shard: Option<trellis::index::Shard>,
        /// An index version that retrieval pods still serve: never
        /// removed by `storage.retainVersions` (repeatable; the operator
        /// names every version its routes serve).
        #[arg(long = "keep-version", value_name = "VERSION")]
        keep_versions: Vec<String>,
    },
    /// Answer a question with a RetrievalRoute over its corpus' current
    /// index version.
    Query {
        /// Manifests holding the RetrievalRoute.
        #[arg(short = 'f', long = "file")]
        manifests: PathBuf,
        question: String,
        /// Which RetrievalRoute, when the manifests hold several.
        #[arg(long)]
        route: Option<String>,
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Results to return (default: the route's topK).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(trellis::spec::bounds::MAX_TOP_K)))]
        k: Option<u32>,
        /// Override the route's anchor mode.
        #[arg(long, value_enum)]
        mode: Option<ModeArg>,
        /// Query this index version instead of the current one.
        #[arg(long)]
        index_version: Option<String>,
        /// Only this document (its key, the path under the source, or its
        /// id); repeat for several.
        #[arg(long = "document", value_name = "KEY")]
        documents: Vec<String>,
        /// Only sentences under this heading path, its headings separated
        /// by " > " (`"Terms > Payment"`).
        #[arg(long, value_name = "PATH")]
        section: Option<String>,
        /// Only documents with this metadata value (`format=pdf`, or a
        /// label of the document's source); repeat for several, all must
        /// hold.
        #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = parse_key_value)]
        metadata: Vec<(String, String)>,
        /// Print results, signals, context and citations as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the CustomResourceDefinitions of IndexProfile, Corpus and
    /// RetrievalRoute (generated from the spec types), or write one file
    /// per CRD into a directory.
    Crd {
        /// Write `<plural>.<group>.yaml` files here instead of printing.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Run the Kubernetes operator: reconcile IndexProfile, Corpus and
    /// RetrievalRoute resources into ingest Jobs and retrieval
    /// Deployments, until SIGTERM.
    Operator {
        /// Reconcile only this namespace (default: every namespace).
        #[arg(long, env = "TRELLIS_WATCH_NAMESPACE")]
        namespace: Option<String>,
        /// The image ingest Jobs and retrieval pods run.
        #[arg(long, env = "TRELLIS_IMAGE")]
        image: String,
        /// The pull policy of ingest and retrieval pods.
        #[arg(
            long,
            env = "TRELLIS_IMAGE_PULL_POLICY",
            default_value = "IfNotPresent"
        )]
        image_pull_policy: String,
        /// Image pull secrets given to ingest and retrieval pods
        /// (comma-separated names).
        #[arg(long, env = "TRELLIS_IMAGE_PULL_SECRETS", value_delimiter = ',')]
        image_pull_secrets: Vec<String>,
        /// Guard each route's retrieval pods with a NetworkPolicy
        /// (requests to the serving port only, from the route's
        /// `allowedClients`; no egress to link-local addresses).
        #[arg(long, env = "TRELLIS_RETRIEVAL_NETWORK_POLICY")]
        retrieval_network_policy: bool,
        /// Address of /metrics and /healthz.
        #[arg(long, default_value = "0.0.0.0:8080")]
        metrics_listen: std::net::SocketAddr,
        /// Reconcile without holding the leader Lease (one replica only).
        #[arg(long)]
        no_leader_election: bool,
        /// The Lease replicas elect a leader on.
        #[arg(long, default_value = "trellis-operator")]
        lease_name: String,
        /// The Lease's namespace (default: the pod's).
        #[arg(long, env = "POD_NAMESPACE")]
        lease_namespace: Option<String>,
    },
    /// Serve a RetrievalRoute over HTTP (POST /v1/retrieve, GET /v1/info,
    /// /healthz, /readyz, /metrics) until SIGTERM or Ctrl-C.
    Serve {
        /// Manifests holding the RetrievalRoute.
        #[arg(short = 'f', long = "file")]
        manifests: PathBuf,
        /// Which RetrievalRoute, when the manifests hold several.
        #[arg(long)]
        route: Option<String>,
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: std::net::SocketAddr,
        /// Serve this index version instead of the current one.
        #[arg(long)]
        index_version: Option<String>,
        /// Largest request body, in bytes.
        #[arg(long, default_value_t = 65_536)]
        max_body_bytes: usize,
        /// Longest query, in characters.
        #[arg(long, default_value_t = 2_000)]
        max_query_chars: usize,
        /// Largest k a request may ask for.
        #[arg(long, default_value_t = 50)]
        max_k: usize,
        /// Time one retrieval may take, in milliseconds (then 504).
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
        /// Retrievals running at once (more get 503 with Retry-After).
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// Bearer tokens, one line each: `TOKEN TAG[,TAG…]` (the ACL tags
        /// it may see) or `TOKEN *`. Without it the service is open.
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// Seconds to keep accepting requests after SIGTERM while
        /// `/readyz` fails, so that endpoints drop the pod before its port
        /// closes; then in-flight requests drain.
        #[arg(long, default_value_t = 5.0)]
        shutdown_delay: f64,
        /// Connections served at once; lowered to fit the descriptor limit.
        /// Past it, a small lane still answers /healthz, /readyz and
        /// /metrics.
        #[arg(long, default_value_t = 1_024)]
        max_connections: usize,
        /// Time a client has to send a request head, in milliseconds; also
        /// how long a keep-alive connection may sit idle.
        #[arg(long, default_value_t = 10_000)]
        header_timeout_ms: u64,
        /// Time a client has to send a request body, in milliseconds (then 408).
        #[arg(long, default_value_t = 10_000)]
        body_timeout_ms: u64,
        /// Seconds in-flight requests have to finish once the listener has
        /// closed; then the connections still open are dropped.
        #[arg(long, default_value_t = 10.0)]
        drain_timeout: f64,
    },
    /// Measure retrieval on a public dataset: index it (cached under the
    /// data directory by content and profile) and score its queries.
    Eval {
        /// `beir:DIR` (corpus.jsonl, queries.jsonl, qrels/), `squad:FILE`
        /// (SQuAD JSON) or `cuad:DIR` (contracts/, master_clauses.csv,
        /// categories.json).
        #[arg(long)]
        dataset: String,
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
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Bm25,
    Dense,
    Hybrid,
    Full,
}

impl From<ModeArg> for AnchorMode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Bm25 => AnchorMode::Bm25,
            ModeArg::Dense => AnchorMode::Dense,
            ModeArg::Hybrid => AnchorMode::Hybrid,
            ModeArg::Full => AnchorMode::Full,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum ParseOutput {
    /// The DocumentTree as JSON.
    Json,
    /// The canonical text every offset points into.
    Markdown,
    /// The sentence skeleton as JSON.
    Skeleton,
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
        let (spec, base) = match &self.manifest {
            Some(path) => {
                let manifests = spec::load_path(path)?;
                let (profile, _) = spec::select_profile(&manifests, self.profile.as_deref(), path)?;
                (profile.spec.clone(), Some(manifest_dir(path)))
            }
            None => (IndexProfileSpec::default(), None),
        };
        Pipeline::new(&spec, base.as_deref()).context("preparing the profile")
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_format, cli.verbose);
    match run(cli.command) {
        Ok(code) => code,
        // The reader went away (`| head`): done, as Unix tools are.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// Whether `error` comes from writing to a pipe whose reader is gone.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// The error and its causes joined by ": ", leaving out a cause that its
/// parent's message already spells out (library errors name their path and
/// their source in one message, and also return that source).
fn error_chain(error: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

fn init_tracing(format: LogFormat, verbose: u8) {
    let default = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        // hnsw_rs logs every build and dump step at info level.
        .unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new(format!("{default},hnsw_rs=warn,pdf_oxide=warn"))
        });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// `trellis crd`: the CRDs on stdout, or one file each under `out`.
fn crd(out: Option<&Path>) -> Result<ExitCode> {
    let crds = spec::crds();
    match out {
        None => {
            for crd in &crds {
                out!("---\n{}", spec::crd_yaml(crd)?)?;
            }
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for crd in &crds {
                let name = crd.metadata.name.as_deref().unwrap_or("crd");
                let path = dir.join(format!("{name}.yaml"));
                std::fs::write(&path, spec::crd_yaml(crd)?)
                    .with_context(|| format!("writing {}", path.display()))?;
                outln!("{}", path.display())?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
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

fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Parse {
            file,
            format,
            profile,
        } => parse(&file, format, &profile),
        Command::Segment { json, profile } => segment(json, &profile),
        Command::Chunk {
            paths,
            profile,
            out,
            jobs,
        } => chunk(&paths, &profile, out.as_deref(), jobs),
        Command::Ingest {
            manifests,
            corpus,
            data_dir,
            json,
            report_configmap,
            inputs,
            shard,
            keep_versions,
        } => retrieval::ingest(
            &manifests,
            corpus.as_deref(),
            &retrieval::data_dir(data_dir),
            json,
            report_configmap
                .as_deref()
                .zip(inputs.as_deref())
                .map(|(configmap, inputs)| retrieval::ClusterReport { configmap, inputs }),
            shard,
            &keep_versions,
        ),
        Command::Operator {
            namespace,
            image,
            image_pull_policy,
            image_pull_secrets,
            retrieval_network_policy,
            metrics_listen,
            no_leader_election,
            lease_name,
            lease_namespace,
        } => operator::operator(operator::OperatorArgs {
            namespace,
            settings: trellis::operator::Settings {
                image,
                image_pull_policy,
                image_pull_secrets: image_pull_secrets
                    .into_iter()
                    .filter(|name| !name.trim().is_empty())
                    .collect(),
                network_policy: retrieval_network_policy,
            },
            metrics_listen,
            leader_election: !no_leader_election,
            lease_name,
            lease_namespace,
        }),
        Command::Query {
            manifests,
            question,
            route,
            data_dir,
            k,
            mode,
            index_version,
            documents,
            section,
            metadata,
            json,
        } => retrieval::query(&retrieval::QueryArgs {
            manifests: &manifests,
            route_name: route.as_deref(),
            data_dir: &retrieval::data_dir(data_dir),
            question: &question,
            k: k.map(|k| k as usize),
            mode: mode.map(Into::into),
            index_version: index_version.as_deref(),
            filter: retrieval::filter(documents, section.as_deref(), metadata),
            json,
        }),
        Command::Crd { out } => crd(out.as_deref()),
        Command::Serve {
            manifests,
            route,
            data_dir,
            listen,
            index_version,
            max_body_bytes,
            max_query_chars,
            max_k,
            timeout_ms,
            concurrency,
            token_file,
            shutdown_delay,
            max_connections,
            header_timeout_ms,
            body_timeout_ms,
            drain_timeout,
        } => serve::serve(serve::ServeArgs {
            manifests: &manifests,
            route_name: route.as_deref(),
            data_dir: &retrieval::data_dir(data_dir),
            listen,
            index_version: index_version.as_deref(),
            limits: trellis::serve::Limits {
                body_bytes: max_body_bytes,
                query_chars: max_query_chars,
                max_k,
                timeout: std::time::Duration::from_millis(timeout_ms),
                concurrency,
                max_connections,
                header_timeout: std::time::Duration::from_millis(header_timeout_ms),
                body_timeout: std::time::Duration::from_millis(body_timeout_ms),
                drain_timeout: std::time::Duration::try_from_secs_f64(drain_timeout)
                    .map_err(|e| anyhow::anyhow!("--drain-timeout {drain_timeout}: {e}"))?,
            },
            token_file: token_file.as_deref(),
            shutdown_delay: std::time::Duration::try_from_secs_f64(shutdown_delay)
                .map_err(|e| anyhow::anyhow!("--shutdown-delay {shutdown_delay}: {e}"))?,
        }),
        Command::Eval {
            dataset,
            split,
            mode,
            manifests,
            profile,
            route,
            data_dir,
            json,
            per_query,
        } => eval::eval(&eval::EvalArgs {
            dataset: &dataset,
            split: split.as_deref(),
            mode: mode.map(Into::into),
            manifests: manifests.as_deref(),
            profile: profile.as_deref(),
            route: route.as_deref(),
            data_dir: retrieval::data_dir(data_dir),
            json,
            per_query: per_query.as_deref(),
        }),
    }
}

fn parse(file: &Path, format: ParseOutput, profile: &ProfileArgs) -> Result<ExitCode> {
    let pipeline = profile.pipeline()?;
    let tree = trellis::parse::parse_file(file, &pipeline.spec().parsing)?;
    for warning in &tree.warnings {
        tracing::warn!(file = %file.display(), "{warning}");
    }
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match format {
        ParseOutput::Json => {
            serde_json::to_writer_pretty(&mut out, &tree)?;
            writeln!(out)?;
        }
        ParseOutput::Markdown => out.write_all(tree.text.as_bytes())?,
        ParseOutput::Skeleton => {
            let document = pipeline.process_tree(&file.display().to_string(), tree);
            serde_json::to_writer_pretty(&mut out, &document.skeleton)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn segment(json: bool, profile: &ProfileArgs) -> Result<ExitCode> {
    let pipeline = profile.pipeline()?;
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("reading stdin (it must be UTF-8 text)")?;
    let sentences: Vec<String> = pipeline
        .segmenter()
        .split(&text)
        .into_iter()
        .map(|range| trellis::parse::collapse_whitespace(&text[range]))
        .collect();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if json {
        serde_json::to_writer(&mut out, &sentences)?;
        writeln!(out)?;
    } else {
        for sentence in &sentences {
            writeln!(out, "{sentence}")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
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

/// Documents processed per parallel batch: bounds memory on large corpora
/// while keeping the output in input order.
const BATCH: usize = 64;

fn chunk(
    paths: &[PathBuf],
    profile: &ProfileArgs,
    out_path: Option<&Path>,
    jobs: Option<usize>,
) -> Result<ExitCode> {
    let pipeline = profile.pipeline()?;
    if let Some(jobs) = jobs {
        rayon::ThreadPoolBuilder::new()
            .num_threads(jobs.max(1))
            .build_global()
            .context("starting worker threads")?;
    }
    let discovery = trellis::source::discover(paths)?;
    if discovery.files.is_empty() {
        bail!("no documents found under the given paths");
    }
    tracing::info!(
        documents = discovery.files.len(),
        skipped = discovery.skipped.len(),
        tokens = %pipeline.token_counter().describe(),
        "chunking"
    );

    let mut sink = OutputSink::open(out_path)?;
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
            match result {
                Ok(document) => {
                    report.add(&document);
                    write_chunks(&mut sink, &document)?;
                }
                Err(e) => {
                    tracing::error!("{e}");
                    report.failed.push(e.to_string());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_in_its_parents_message_is_printed_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("data/x.json: {source}")]
        struct Read {
            #[source]
            source: std::io::Error,
        }
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let error = anyhow::Error::new(Read { source: io }).context("reading squad:x");
        assert_eq!(
            error_chain(&error),
            "reading squad:x: data/x.json: no such file"
        );
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_chain(&plain), "outer: inner");
    }
}
