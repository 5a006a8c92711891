//! Stage 4, synthesis: the answer written from what selection chose, and
//! only from it. The model never ranks; it reads.
//!
//! ```text
//! Answer (hits) ─sources─▶ numbered passages ─prompt─▶ model ─citations─▶ sentences ─grounding─▶ checked answer
//! ```
//!
//! * [`sources`]: the selected results become sources `[1]..[n]` in
//!   reading order, each a whole passage with its document and section,
//!   fitted to `maxContextTokens` by dropping whole sources from the
//!   lowest score ([`tokens`] counts);
//! * [`prompt`]: Trellis' instructions, the sources inside delimiters the
//!   model is told about (documents are data, never instructions), the
//!   question;
//! * [`provider`]: the model service, OpenAI-compatible chat completions
//!   or Anthropic's Messages API, always streamed;
//! * [`citations`]: the answer split into sentences, each with the `[n]`
//!   markers it carries;
//! * [`grounding`]: each sentence checked against the passages it cites.
//!
//! The `extractive` provider skips the model: the answer is the selected
//! anchor sentences themselves, verbatim, each citing its source
//! ([`extractive`]).
//!
//! When retrieval finds nothing, the answer says so without calling the
//! model.

mod citations;
mod extractive;
mod grounding;
mod prompt;
mod provider;
mod sources;
mod tokens;

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use thiserror::Error;

use crate::embed::{EmbedError, Embedder};
use crate::index::{IndexVersion, SentenceNumber};
use crate::retrieve::Answer;
use crate::skeleton::PageBox;
use crate::spec::{GenerationProvider, GenerationSpec, UnsupportedPolicy};

pub use citations::strip_markers;
pub use prompt::{Prompt, SOURCE_CLOSE, SOURCE_OPEN};
pub use provider::Completion;
pub use tokens::TokenCounter;

/// What the answer says when retrieval found nothing to answer from.
pub const NO_ANSWER: &str = "The indexed documents hold nothing that answers this question.";

/// Why an answer could not be written.
#[derive(Debug, Error)]
pub enum GenerateError {
    /// The route's `generation` settings cannot work (no key where one is
    /// needed, an unreadable tokenizer, a bad endpoint).
    #[error("generation: {0}")]
    Config(String),
    /// The service could not be reached, after the retries.
    #[error("the generator at {endpoint} is unreachable: {reason}")]
    Unreachable { endpoint: String, reason: String },
    /// The service answered with an error status, after the retries.
    #[error("the generator at {endpoint} refused the request: {reason}")]
    Refused {
        endpoint: String,
        /// The HTTP status, to tell a busy service from a bad request.
        status: u16,
        reason: String,
    },
    /// No whole answer within `timeoutSeconds`.
    #[error("the generator at {endpoint} did not answer within {seconds} s (timeoutSeconds)")]
    Timeout { endpoint: String, seconds: u64 },
    /// The answer broke off: the connection closed or the stream ended
    /// before the service said it was done.
    #[error("the generator at {endpoint} stopped mid-answer: {reason}")]
    Interrupted { endpoint: String, reason: String },
    /// The service answered something that is not its protocol.
    #[error("the generator at {endpoint} answered unreadably: {reason}")]
    Protocol { endpoint: String, reason: String },
    /// The grounding check could not embed the answer.
    #[error("grounding: {0}")]
    Embed(#[from] EmbedError),
}

impl GenerateError {
    /// A short stable label, for metrics and API error codes.
    pub fn reason(&self) -> &'static str {
        match self {
            GenerateError::Config(_) => "config",
            GenerateError::Unreachable { .. } => "unreachable",
            GenerateError::Refused { status: 429, .. } => "rate_limited",
            GenerateError::Refused { .. } => "refused",
            GenerateError::Timeout { .. } => "timeout",
            GenerateError::Interrupted { .. } => "interrupted",
            GenerateError::Protocol { .. } => "protocol",
            GenerateError::Embed(_) => "grounding",
        }
    }

    /// Whether the generator, rather than the request, is at fault: the
    /// service answers 503 and keeps serving retrieval.
    pub fn generator_unavailable(&self) -> bool {
        matches!(
            self,
            GenerateError::Unreachable { .. }
                | GenerateError::Timeout { .. }
                | GenerateError::Interrupted { .. }
                | GenerateError::Protocol { .. }
        ) || matches!(self, GenerateError::Refused { status, .. } if *status == 429 || *status >= 500)
    }
}

/// One numbered source: a selected result's whole passage.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Source {
    /// Its number in the prompt and in the answer's `[n]` markers.
    pub number: usize,
    /// The document's key.
    pub document: String,
    pub document_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub section_path: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// The passage as the model read it.
    pub text: String,
    /// The passage's sentences, in order.
    pub sentences: Vec<SourceSentence>,
    /// Ids of the sentences retrieval selected in it (its anchors).
    pub selected: Vec<String>,
    /// The result's composite score.
    pub score: f32,
}

/// A sentence of a source's passage.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct SourceSentence {
    /// Global sentence number in the index version.
    #[serde(skip)]
    pub number: SentenceNumber,
    pub sentence_id: String,
    pub text: String,
    /// Character offset and length in the document's canonical text.
    pub char_span: [u32; 2],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<PageBox>,
}

/// Why a sentence is not supported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Flag {
    /// It cites no source.
    NoCitation,
    /// It cites a number no source has.
    UnknownSource,
    /// No sentence of its sources is similar enough
    /// (`generation.supportSimilarity`).
    LowSimilarity,
    /// A number or name it states appears in none of its sources.
    MissingValues,
}

impl Flag {
    /// The flag as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Flag::NoCitation => "no_citation",
            Flag::UnknownSource => "unknown_source",
            Flag::LowSimilarity => "low_similarity",
            Flag::MissingValues => "missing_values",
        }
    }
}

/// How well an answer sentence's sources bear it out.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Support {
    pub supported: bool,
    /// Cosine similarity of the sentence to the most similar sentence of
    /// the passages it cites; 0 when it cites none.
    pub similarity: f32,
    /// That sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_sentence_id: Option<String>,
    /// The source holding it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_source: Option<usize>,
    /// Numbers and names the sentence states that its sources do not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Why it is not supported; empty when it is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<Flag>,
}

/// One sentence of the answer.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct AnswerSentence {
    /// As written, with its `[n]` markers.
    pub text: String,
    /// The sources it cites that exist, in the order cited.
    pub sources: Vec<usize>,
    pub support: Support,
}

/// Token counts of one answer.
#[derive(Clone, Debug, Default, Serialize, utoipa::ToSchema)]
pub struct Usage {
    /// The prompt's tokens as Trellis counted them, against
    /// `maxContextTokens`.
    pub context_tokens: usize,
    /// How Trellis counted: `tokenizer` (the model's) or `estimate`.
    pub counted_by: &'static str,
    /// The prompt's tokens as the service counted them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u32>,
    /// The answer's tokens as the service counted them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u32>,
}

/// A written, cited and checked answer.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct GeneratedAnswer {
    /// The answer, with its `[n]` markers (without the dropped sentences
    /// when `generation.unsupported` is `drop`).
    pub answer: String,
    /// Its sentences, each with the sources it cites and their support.
    pub sentences: Vec<AnswerSentence>,
    /// The sources the model read, numbered in reading order.
    pub sources: Vec<Source>,
    /// `extractive`, `openai` or `anthropic`.
    pub provider: &'static str,
    /// The model that wrote it, as the service named it; empty for
    /// `extractive`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// Retrieval found nothing, so no model was asked.
    pub no_answer: bool,
    /// Sentences not supported by their sources (flagged or dropped).
    pub unsupported: usize,
    /// Unsupported sentences left out (`generation.unsupported: drop`).
    pub dropped_sentences: usize,
    /// Selected results left out to fit `maxContextTokens`.
    pub dropped_sources: usize,
    /// Why the model stopped (`stop`, `length`, `end_turn`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    pub usage: Usage,
    /// Seconds the model took; 0 without one.
    pub generation_seconds: f64,
}

/// A route's generator: its settings, its model client and its token
/// counter, built once.
pub struct Generator {
    spec: GenerationSpec,
    client: Option<provider::ChatClient>,
    counter: TokenCounter,
}

impl Generator {
    /// Checks the settings, reads the API key and the tokenizer. Relative
    /// paths must have been resolved against the manifest
    /// ([`GenerationSpec::resolve_paths`]; manifests read from files are).
    pub fn from_spec(spec: &GenerationSpec) -> Result<Self, GenerateError> {
        spec.check().map_err(GenerateError::Config)?;
        let client = match spec.provider {
            GenerationProvider::Extractive => None,
            _ => Some(provider::ChatClient::new(spec)?),
        };
        let counter = match &spec.tokenizer {
            Some(path) => TokenCounter::from_file(Path::new(path))?,
            None => TokenCounter::Estimate,
        };
        Ok(Self {
            spec: spec.clone(),
            client,
            counter,
        })
    }

    pub fn spec(&self) -> &GenerationSpec {
        &self.spec
    }

    /// `extractive`, `openai` or `anthropic`.
    pub fn provider_name(&self) -> &'static str {
        provider_name(self.spec.provider)
    }

    /// The service's endpoint; `None` for `extractive`.
    pub fn endpoint(&self) -> Option<&str> {
        self.client.as_ref().map(|c| c.endpoint())
    }

    /// Whether the service answers at all: a connection to its host within
    /// a few seconds (a health check that spends no tokens). `Ok` for
    /// `extractive`.
    pub fn reachable(&self) -> Result<(), GenerateError> {
        match &self.client {
            Some(client) => client.reachable(),
            None => Ok(()),
        }
    }

    /// The prompt the model would read for `question` over `answer`'s
    /// results, and the sources it numbers; `None` when no source fits or
    /// there are none.
    pub fn prompt(
        &self,
        question: &str,
        answer: &Answer,
        index: &IndexVersion,
    ) -> (Option<Prompt>, Vec<Source>, usize) {
        // The passages are cut down to the budget by selection's
        // priorities (each result's sentence first, then its paragraph,
        // its clause, its parent); a source is then never cut, only left
        // out when the count of the whole prompt still runs over.
        let budget = (self.spec.max_context_tokens as usize).saturating_sub(Prompt::overhead(
            question,
            self.spec.system_prompt.as_deref(),
            &self.counter,
        ));
        let store = &index.store;
        let cost = |i: SentenceNumber| {
            let text = store
                .sentences
                .get(i.index())
                .map_or("", |s| s.text.as_str());
            // The space that joins it to the next.
            self.counter.count(text) + 1
        };
        let frame = |hit: &crate::retrieve::Hit| sources::frame_tokens(hit, index, &self.counter);
        let (hits, spent) =
            crate::retrieve::fit_hits(index, answer.hits.clone(), budget, &cost, &frame);
        let all = sources::from_hits(&hits, index);
        let fitted = sources::fit(
            all,
            question,
            self.spec.system_prompt.as_deref(),
            self.spec.max_context_tokens as usize,
            &self.counter,
        );
        let prompt = (!fitted.sources.is_empty()).then(|| {
            Prompt::new(
                question,
                &fitted.sources,
                self.spec.system_prompt.as_deref(),
                &self.counter,
            )
        });
        (prompt, fitted.sources, spent.dropped + fitted.dropped)
    }

    /// Writes the answer to `question` from `answer`'s results; `on_text`
    /// gets the model's text as it arrives (nothing for `extractive` or a
    /// no-answer). `embedder` embeds the answer's sentences for the
    /// grounding check (the route's query embedder).
    pub fn answer(
        &self,
        question: &str,
        answer: &Answer,
        index: &IndexVersion,
        embedder: &dyn Embedder,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<GeneratedAnswer, GenerateError> {
        let _span = tracing::info_span!("generate", provider = self.provider_name()).entered();
        let Some(client) = &self.client else {
            let sources = sources::from_hits(&answer.hits, index);
            return Ok(extractive::answer(answer, sources));
        };
        let (prompt, sources, dropped_sources) = self.prompt(question, answer, index);
        let Some(prompt) = prompt else {
            return Ok(self.no_answer(dropped_sources));
        };
        let started = Instant::now();
        let completion = client.complete(&prompt, on_text)?;
        let generation_seconds = started.elapsed().as_secs_f64();
        let mut sentences = citations::sentences(&completion.text, sources.len());
        grounding::check(
            &mut sentences,
            &sources,
            embedder,
            self.spec.support_similarity,
        )?;
        let unsupported = sentences.iter().filter(|s| !s.support.supported).count();
        let dropped_sentences = match self.spec.unsupported {
            UnsupportedPolicy::Flag => 0,
            UnsupportedPolicy::Drop => {
                sentences.retain(|s| s.support.supported);
                unsupported
            }
        };
        let text = match self.spec.unsupported {
            UnsupportedPolicy::Flag => completion.text.trim().to_string(),
            UnsupportedPolicy::Drop => sentences
                .iter()
                .map(|s| s.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        };
        Ok(GeneratedAnswer {
            answer: text,
            sentences,
            sources,
            provider: self.provider_name(),
            model: completion.model,
            no_answer: false,
            unsupported,
            dropped_sentences,
            dropped_sources,
            finish_reason: completion.finish_reason,
            usage: Usage {
                context_tokens: prompt.tokens,
                counted_by: self.counter.kind(),
                prompt_tokens: completion.prompt_tokens,
                completion_tokens: completion.completion_tokens,
            },
            generation_seconds,
        })
    }

    /// The answer when there is nothing to answer from: retrieval found
    /// nothing, or no source fits the context budget.
    fn no_answer(&self, dropped_sources: usize) -> GeneratedAnswer {
        let text = if dropped_sources > 0 {
            format!(
                "No passage found fits generation.maxContextTokens ({} tokens) beside the \
                 instructions and the question.",
                self.spec.max_context_tokens
            )
        } else {
            NO_ANSWER.to_string()
        };
        no_answer(self.provider_name(), text, dropped_sources)
    }
}

/// An answer that says there is nothing to answer from.
fn no_answer(provider: &'static str, text: String, dropped_sources: usize) -> GeneratedAnswer {
    GeneratedAnswer {
        answer: text,
        sentences: Vec::new(),
        sources: Vec::new(),
        provider,
        model: String::new(),
        no_answer: true,
        unsupported: 0,
        dropped_sentences: 0,
        dropped_sources,
        finish_reason: None,
        usage: Usage::default(),
        generation_seconds: 0.0,
    }
}

/// Whether the route's generation service accepts a connection, without
/// its API key (the operator, which never reads the key, checks routes
/// this way); `None` for `extractive`. Blocks up to a few seconds per
/// address of the host.
pub fn endpoint_reachable(spec: &GenerationSpec) -> Option<Result<String, String>> {
    let default = match spec.provider {
        GenerationProvider::Extractive => return None,
        GenerationProvider::Openai => "https://api.openai.com",
        GenerationProvider::Anthropic => "https://api.anthropic.com",
    };
    let endpoint = spec.endpoint.as_deref().unwrap_or(default);
    let checked = crate::embed::service::parse_endpoint("generation", endpoint)
        .and_then(|url| provider::connect(&url))
        .map(|()| endpoint.to_string())
        .map_err(|reason| format!("{endpoint}: {reason}"));
    Some(checked)
}

/// The provider's name as the spec spells it.
pub fn provider_name(provider: GenerationProvider) -> &'static str {
    match provider {
        GenerationProvider::Extractive => "extractive",
        GenerationProvider::Openai => "openai",
        GenerationProvider::Anthropic => "anthropic",
    }
}
