//! `trellis query`: a question answered with a RetrievalRoute over the
//! embedded engine.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};

use trellis::index::IndexVersion;
use trellis::retrieve::{Filter, LoadedRoute, NumberRange, ValueFilter, opening};
use trellis::spec;

use super::{ModeArg, parse_key_value};
use trellis::parse::DateRange;

fn parse_dates(text: &str) -> Result<DateRange, String> {
    text.parse()
}

fn parse_numbers(text: &str) -> Result<NumberRange, String> {
    text.parse()
}
use trellis::locations::data_dir;

#[derive(clap::Args)]
pub struct QueryArgs {
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
    /// Only documents under this path of the source ("this folder").
    #[arg(long, value_name = "PATH")]
    under: Option<String>,
    /// Only documents whose author names this (ignoring case).
    #[arg(long, value_name = "NAME")]
    author: Option<String>,
    /// Only documents dated within: `2023`, `2023-04`, `2022-07..2023-06`,
    /// `2023..` or `..2023-06`.
    #[arg(long, value_name = "DATES", value_parser = parse_dates)]
    dated: Option<DateRange>,
    /// Only documents in this language (`en` takes `en-GB` too).
    #[arg(long, value_name = "TAG")]
    language: Option<String>,
    /// Only documents with this form field holding this value (a
    /// content control, a legacy form field, a PDF form field; a check
    /// box as `yes` or `no`); repeat for several, all must hold.
    #[arg(long = "field", value_name = "NAME=VALUE", value_parser = parse_key_value)]
    fields: Vec<(String, String)>,
    /// Only sentences stating an amount of money in this range:
    /// `">1,000,000"`, `">=5"`, `"<5"`, `"<=5"`, `"=5"` or `100..500`.
    #[arg(long, value_name = "RANGE", value_parser = parse_numbers)]
    amount: Option<NumberRange>,
    /// Only sentences stating an amount in this currency (ISO 4217:
    /// `USD`, `EUR`); with `--amount`, the same amount.
    #[arg(long, value_name = "CODE")]
    currency: Option<String>,
    /// Only sentences stating a percentage in this range (as `--amount`).
    #[arg(long, value_name = "RANGE", value_parser = parse_numbers)]
    percent: Option<NumberRange>,
    /// Only sentences stating a date or fiscal period that lies within
    /// these dates (as `--dated`).
    #[arg(long, value_name = "DATES", value_parser = parse_dates)]
    mentions_date: Option<DateRange>,
    /// Print results, signals, context and citations as JSON.
    #[arg(long)]
    json: bool,
}

impl QueryArgs {
    /// The filter of `--document` and `--section`: no restriction when both
    /// are absent; a section path's headings are separated by `>`.
    fn filter(&self) -> Filter {
        Filter {
            metadata: (!self.metadata.is_empty()).then(|| self.metadata.iter().cloned().collect()),
            documents: (!self.documents.is_empty()).then(|| self.documents.clone()),
            section_prefix: self.section.as_deref().map(|path| {
                path.split('>')
                    .map(|heading| heading.trim().to_string())
                    .filter(|heading| !heading.is_empty())
                    .collect()
            }),
            path_prefix: self.under.clone(),
            author: self.author.clone(),
            dated: self.dated.clone(),
            language: self.language.clone(),
            fields: (!self.fields.is_empty()).then(|| self.fields.iter().cloned().collect()),
            values: (self.amount.is_some()
                || self.currency.is_some()
                || self.percent.is_some()
                || self.mentions_date.is_some())
            .then(|| ValueFilter {
                amount: self.amount,
                currency: self.currency.clone(),
                percent: self.percent,
                dated: self.mentions_date.clone(),
            }),
            ..Filter::default()
        }
    }

    /// Loads the route and its index version and runs the question
    /// through the route's three stages.
    pub(super) fn retrieve(&self) -> Result<Retrieved> {
        let data_dir = data_dir(self.data_dir.as_deref());
        let filter = self.filter();
        let k = self.k.map(|k| k as usize);
        let loaded = spec::load_path(&self.manifests)?;
        let (route, _) = spec::select_route(&loaded, self.route.as_deref(), &self.manifests)?;
        let mut route_spec = route.spec.clone();
        if let Some(mode) = self.mode {
            route_spec.anchors.mode = mode.into();
        }
        let corpus = &route_spec.corpus_ref.name;
        let index = IndexVersion::open_as(
            &data_dir,
            corpus,
            self.index_version.as_deref(),
            opening(&route_spec),
        )?;
        // A mistyped document would otherwise read as "no results"; checked
        // before the model loads.
        for wanted in filter.documents.iter().flatten() {
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
        let loaded = LoadedRoute::with_index(index, &route_spec, 1)?;
        let answer = loaded
            .retriever()?
            .retrieve(&route_spec, &self.question, k, &filter)?;
        Ok(Retrieved {
            loaded,
            route: route_spec,
            answer,
        })
    }

    pub fn question(&self) -> &str {
        &self.question
    }

    pub fn json(&self) -> bool {
        self.json
    }

    pub fn run(&self) -> Result<ExitCode> {
        let Retrieved { answer, .. } = self.retrieve()?;
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&answer)?)?;
            return Ok(ExitCode::SUCCESS);
        }
        if answer.hits.is_empty() {
            outln!("no results")?;
        }
        if answer.rerank.is_some_and(|r| !r.reranked) {
            outln!(
                "(not reranked: the reranker failed or missed reranker.budgetMs; stage 3's order)\n"
            )?;
        }
        let bold = console_bold();
        for (n, hit) in answer.hits.iter().enumerate() {
            let mut display = hit.display.clone();
            let marked = std::iter::once(hit.text.as_str())
                .chain(hit.highlights.iter().map(|h| h.text.as_str()));
            for text in marked {
                display = match display.find(text) {
                    Some(at) => format!(
                        "{}{}{text}{}{}",
                        &display[..at],
                        bold.0,
                        bold.1,
                        &display[at + text.len()..]
                    ),
                    None => display,
                };
            }
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
}

/// A question's route, loaded, and what its three stages selected.
pub(super) struct Retrieved {
    pub loaded: LoadedRoute,
    pub route: trellis::spec::RetrievalRouteSpec,
    pub answer: trellis::retrieve::Answer,
}

/// ANSI bold on a terminal, `**…**` otherwise.
pub(super) fn console_bold() -> (&'static str, &'static str) {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        ("\x1b[1m", "\x1b[0m")
    } else {
        ("**", "**")
    }
}
