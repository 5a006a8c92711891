//! `IndexProfile`: everything that changes the index.
//!
//! The structs here are at once the CLI's configuration, the ingest job's
//! configuration and (through kube's `CustomResource` derive and schemars)
//! the CRD's OpenAPI schema. Their doc comments are what `kubectl explain`
//! shows, so they are written for the platform engineer who sets them.

use kube::CustomResource;

use super::IndexProfileStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How documents are turned into a sentence skeleton and chunks.
///
/// A profile's canonical hash is the key of the index versions built with
/// it: change a field here and the corpus is re-indexed.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "trellis.dev",
    version = "v1alpha1",
    kind = "IndexProfile",
    plural = "indexprofiles",
    shortname = "ixp",
    namespaced,
    status = "IndexProfileStatus",
    printcolumn = r#"{"name":"Valid","type":"string","jsonPath":".status.conditions[?(@.type==\"Valid\")].status"}"#,
    printcolumn = r#"{"name":"Hash","type":"string","jsonPath":".status.hash"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct IndexProfileSpec {
    /// Input bounds and per-format cleaning.
    #[serde(default)]
    pub parsing: ParsingSpec,
    /// Sentence splitting and which sentences are indexed.
    #[serde(default)]
    pub sentences: SentenceSpec,
    /// How the skeleton is cut into display/export chunks.
    #[serde(default)]
    pub chunking: ChunkingSpec,
    /// Metadata extracted from sentences: references, dates, amounts,
    /// organisations, defined terms, clause ids.
    #[serde(default)]
    pub enrichment: EnrichmentSpec,
    /// The sentence embedding model.
    #[serde(default)]
    pub embedding: EmbeddingSpec,
    /// BM25 and HNSW index parameters.
    #[serde(default)]
    pub index: IndexSpec,
    /// `RELATED_TO` edges: k-NN links between similar sentences.
    #[serde(default)]
    pub semantic_links: SemanticLinksSpec,
    /// Where the skeleton graph is kept.
    #[serde(default)]
    pub graph: GraphSpec,
}

impl IndexProfileSpec {
    /// The canonical hash of the spec (its JSON, defaults filled in): what
    /// names the profile in versions' manifests and in status, and what a
    /// retrieval pod checks a version's profile against
    /// (`trellis serve --profile-hash`).
    pub fn canonical_hash(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        blake3::hash(&json).to_hex()[..16].to_string()
    }

    /// What a retrieval pod checks the profile of the version it serves
    /// against (`trellis serve --profile-hash`): the canonical hash
    /// without the embedding's `dimensions`, which an ingest probes from
    /// a service and records when the spec leaves them out. Everything
    /// that says where queries and keys go (provider, endpoints, Secret
    /// references, the graph store) is in it.
    pub fn served_hash(&self) -> String {
        let mut served = self.clone();
        served.embedding.dimensions = None;
        served.canonical_hash()
    }

    /// The Secrets this profile reads (the embedding service's API key,
    /// the graph store's password), sorted, each once: what the operator
    /// mounts into the pods that build or serve its versions.
    pub fn secret_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .embedding
            .api_key_secret_ref
            .iter()
            .chain(self.graph.password_secret())
            .map(|r| r.name.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// Input bounds and cleaning applied while parsing.
///
/// Every bound exists so that one hostile or broken file cannot exhaust the
/// ingest's memory or time; a file over a bound fails with an error naming
/// the file and the bound, and the rest of the corpus carries on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ParsingSpec {
    /// Largest input file accepted, in bytes. Default 67108864 (64 MiB).
    pub max_file_bytes: u64,
    /// Largest decompressed size of any one part of a zipped format (DOCX),
    /// in bytes; guards against zip bombs. Default 268435456 (256 MiB).
    pub max_decompressed_bytes: u64,
    /// Most entries a zipped format (DOCX) may list in its archive
    /// directory; guards against archives padded with millions of entries.
    /// Default 10000.
    pub max_archive_entries: u32,
    /// Deepest nesting accepted in a document: elements in HTML, DOCX XML
    /// and Markdown, arrays and dictionaries in PDF (measured before the
    /// PDF reader, which recurses per level, sees them). A deeper document
    /// fails alone. Default 512, at most 4096.
    pub max_nesting_depth: u32,
    /// Most table cells one document may expand to, counted over all its
    /// tables as rows × columns once merged cells (colspan/rowspan) are
    /// repeated in every position they cover. Past the bound, spans are no
    /// longer repeated and further rows are cut, with a warning; a few bytes
    /// of `colspan="1000"` cannot turn into gigabytes of grid.
    /// Default 1000000.
    pub max_table_cells: u64,
    /// Detect a table of contents, drop it from the body text and keep it as
    /// document metadata (it is also used to confirm heading levels).
    /// Default true.
    pub remove_table_of_contents: bool,
    /// Drop short lines that repeat throughout a document (running headers,
    /// footers, "Page 3 of 10", confidentiality banners) in plain text, HTML
    /// and PDF; DOCX and Markdown keep such furniture out of the body
    /// already. Default true.
    pub drop_boilerplate: bool,
    /// How many times a short line must occur in one document to count as
    /// boilerplate. Default 3.
    pub boilerplate_min_repeats: u32,
    /// Most pages read of one PDF; the rest is left out, with a warning.
    /// Default 5000.
    pub max_pages: u32,
    /// Longest a PDF may take to read, in seconds; past it the document
    /// fails as timed out and the ingest goes on. Default 300.
    pub max_seconds_per_document: u32,
    /// Most memory reading one PDF may take, in bytes, checked after each
    /// page; past it the document fails and the ingest goes on. Default
    /// 2 GiB.
    pub max_memory_bytes_per_document: u64,
    /// Most sentences one document may hold; a document with more fails,
    /// counted in the report, rather than holding the ingest for hours of
    /// embedding (a 1,000-page contract holds about 30,000). Default
    /// 250000.
    pub max_sentences_per_document: u32,
}

impl Default for ParsingSpec {
    fn default() -> Self {
        Self {
            max_file_bytes: 64 * 1024 * 1024,
            max_decompressed_bytes: 256 * 1024 * 1024,
            max_archive_entries: 10_000,
            max_nesting_depth: 512,
            max_table_cells: 1_000_000,
            remove_table_of_contents: true,
            drop_boilerplate: true,
            boilerplate_min_repeats: 3,
            max_pages: 5000,
            max_seconds_per_document: 300,
            max_memory_bytes_per_document: 2 * 1024 * 1024 * 1024,
            max_sentences_per_document: 250_000,
        }
    }
}

/// Sentence boundaries and the filters that decide which sentences are
/// indexed. Filtered sentences stay in the skeleton (and in chunks) for
/// display; they are only left out of the search indexes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SentenceSpec {
    /// Fewest characters a sentence needs to be indexed. Default 8.
    pub min_chars: u32,
    /// Fewest words a sentence needs to be indexed. Default 2.
    pub min_words: u32,
    /// Leave form labels ("Name: ________", "Signature:", "Date: ....")
    /// out of the index. Default true.
    pub drop_form_labels: bool,
    /// Further abbreviations (without the final period, e.g. "Ref", "Art")
    /// after which a period does not end a sentence, unless a word that
    /// typically opens one follows ("The", "It", "However"). Added to the
    /// built-in English list; matched ignoring case.
    pub extra_abbreviations: Vec<String>,
    /// Longest sentence, in characters. A longer run of text without a
    /// sentence end (a 10 MB line without punctuation, a table flattened
    /// into one line) is cut into sentences of at most this many: after
    /// the last clause punctuation (`;`, `:`, `,`, a dash) in the second
    /// half of the bound, else after the last word, else at the bound.
    /// Default 5000 (the encoder reads about the first 1,000 of a
    /// sentence; results show whole sentences).
    #[serde(skip_serializing_if = "SentenceSpec::is_default_max_chars")]
    pub max_chars: u32,
}

impl SentenceSpec {
    /// The default of [`SentenceSpec::max_chars`].
    pub const DEFAULT_MAX_CHARS: u32 = 5_000;

    /// Left out of a profile when default, so that the versions of
    /// profiles written before the bound keep their names.
    fn is_default_max_chars(max_chars: &u32) -> bool {
        *max_chars == Self::DEFAULT_MAX_CHARS
    }
}

impl Default for SentenceSpec {
    fn default() -> Self {
        Self {
            min_chars: 8,
            min_words: 2,
            drop_form_labels: true,
            extra_abbreviations: Vec::new(),
            max_chars: Self::DEFAULT_MAX_CHARS,
        }
    }
}

/// Chunking strategy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ChunkStrategy {
    /// Structure-aware: one heading path per chunk (prefixed to the text and
    /// kept as metadata), sentence boundaries kept, `minTokens`–`maxTokens`
    /// tokens, `overlapTokens` of overlap.
    #[default]
    Structure,
    /// Recursive splitting on paragraph, then line, then sentence, then
    /// token boundaries until pieces fit `maxTokens`.
    Recursive,
    /// Fixed windows of `fixed.sizeTokens` tokens with `fixed.overlapTokens`
    /// overlap.
    Fixed,
    /// One heading path per chunk, as `structure`, closed where the topic
    /// shifts: at the largest drops in similarity between consecutive
    /// sentence vectors, once `semantic.minTokens` is reached, and always
    /// before `maxTokens`.
    Semantic,
}

/// How the skeleton is cut into chunks for display and export. Chunks are
/// not the retrieval unit (sentences are); they are what a caller shows or
/// exports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ChunkingSpec {
    /// `structure` (default), `recursive`, `fixed` or `semantic`.
    pub strategy: ChunkStrategy,
    /// A structure chunk is closed at the next paragraph boundary once it
    /// holds this many tokens. Default 600.
    pub min_tokens: u32,
    /// No chunk is larger than this many tokens (heading prefix included).
    /// Default 800.
    pub max_tokens: u32,
    /// Tokens of the previous chunk repeated at the start of the next one
    /// (whole trailing sentences where they fit), at most half of
    /// `maxTokens`. Default 15.
    pub overlap_tokens: u32,
    /// Settings of the `fixed` strategy.
    pub fixed: FixedChunkingSpec,
    /// Settings of the `semantic` strategy.
    pub semantic: SemanticChunkingSpec,
    /// Chunks smaller than this many tokens are merged into a neighbour
    /// (same heading path first) or a similar chunk when the result stays
    /// under `maxTokens`; table chunks never merge. Default 50.
    pub merge_below_tokens: u32,
    /// Word-set Jaccard similarity above which a small chunk may merge into
    /// a non-adjacent chunk. Default 0.6.
    pub merge_min_jaccard: f64,
    /// Tables up to this many data rows become one Markdown chunk; larger
    /// ones are sharded with the header repeated in every shard.
    /// Default 200.
    pub table_max_rows: u32,
    /// Prefix each chunk's text with its heading path ("Part 1 > 1.1 Fees"
    /// and a blank line): `structure` and `recursive` chunks and all table
    /// chunks; `fixed` windows cross sections and carry none. A prefix over
    /// half of `maxTokens` is left out. Default true.
    pub heading_prefix: bool,
    /// Tokenizer used to count tokens: a path to a `tokenizer.json`, a
    /// model directory holding one, or the name of a model directory in the
    /// model cache (`$TRELLIS_MODEL_DIR`, else `~/.cache/trellis/models`).
    /// When unset, tokens are counted as whitespace-separated words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
}

impl Default for ChunkingSpec {
    fn default() -> Self {
        Self {
            strategy: ChunkStrategy::Structure,
            min_tokens: 600,
            max_tokens: 800,
            overlap_tokens: 15,
            fixed: FixedChunkingSpec::default(),
            semantic: SemanticChunkingSpec::default(),
            merge_below_tokens: 50,
            merge_min_jaccard: 0.6,
            table_max_rows: 200,
            heading_prefix: true,
            tokenizer: None,
        }
    }
}

/// Settings of the `fixed` chunking strategy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct FixedChunkingSpec {
    /// Tokens per chunk, at most `maxTokens`. Default 512.
    pub size_tokens: u32,
    /// Tokens shared by consecutive chunks, at most half of `sizeTokens`.
    /// Default 64.
    pub overlap_tokens: u32,
}

impl Default for FixedChunkingSpec {
    fn default() -> Self {
        Self {
            size_tokens: 512,
            overlap_tokens: 64,
        }
    }
}

/// Settings of the `semantic` chunking strategy. It reads the sentence
/// vectors the ingest computes anyway: the similarity of each sentence to
/// the next in its document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SemanticChunkingSpec {
    /// A chunk is closed at a topic shift once it holds this many tokens
    /// (heading prefix included). Default 150.
    pub min_tokens: u32,
    /// Where the topic shifts: between two sentences whose similarity is
    /// among the lowest `100 − this` percent of the document's consecutive
    /// pairs. A percentile of the document's own similarities, not a fixed
    /// cosine, because how alike neighbouring sentences are differs by
    /// model and by document (a contract's are all alike). Default 90.
    pub breakpoint_percentile: f64,
}

impl Default for SemanticChunkingSpec {
    fn default() -> Self {
        Self {
            min_tokens: 150,
            breakpoint_percentile: 90.0,
        }
    }
}

/// Which metadata is extracted from sentences. All on by default; each
/// extractor only adds metadata, it never changes text or boundaries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct EnrichmentSpec {
    /// Outbound references ("Table 3", "Figure 7", "Appendix B",
    /// "Section 2.1", "clause 5.1") resolved to their targets, and the
    /// inbound references of every target.
    pub references: bool,
    /// ISO dates and written dates, normalised to `YYYY-MM-DD`.
    pub dates: bool,
    /// Fiscal periods such as FY2024, Q4-2024, H1 2023.
    pub fiscal_periods: bool,
    /// Money amounts and percentages.
    pub amounts: bool,
    /// Organisations with a legal suffix (Inc., Ltd., LLC, GmbH, …).
    pub organizations: bool,
    /// Defined terms ("“Term” means …", "X shall mean …").
    pub definitions: bool,
    /// Clause ids ("5.1", "ARTICLE V") and whether a section is an annex,
    /// schedule, exhibit or appendix.
    pub clauses: bool,
}

impl EnrichmentSpec {
    /// Every extractor off.
    pub fn none() -> Self {
        Self {
            references: false,
            dates: false,
            fiscal_periods: false,
            amounts: false,
            organizations: false,
            definitions: false,
            clauses: false,
        }
    }
}

impl Default for EnrichmentSpec {
    fn default() -> Self {
        Self {
            references: true,
            dates: true,
            fiscal_periods: true,
            amounts: true,
            organizations: true,
            definitions: true,
            clauses: true,
        }
    }
}

/// Who computes the embeddings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum EmbeddingProvider {
    /// A sentence-transformers directory run in process (BERT family).
    #[default]
    Local,
    /// Any OpenAI-compatible `/v1/embeddings` endpoint.
    Openai,
    /// Voyage AI's embeddings API.
    Voyage,
    /// Hugging Face Text Embeddings Inference (`/embed`).
    Tei,
}

/// How token states become one vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum EmbeddingPooling {
    /// The mean of the tokens' states (sentence-transformers' MiniLM,
    /// e5, gte).
    Mean,
    /// The first token's (`[CLS]`) state (bge).
    Cls,
    /// The sum of the tokens' states over the square root of their count.
    MeanSqrtLen,
}

/// What a sentence is embedded with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum EmbeddingContext {
    /// The sentence alone.
    #[default]
    Sentence,
    /// Its paragraph: the paragraph is encoded once and each sentence's
    /// vector is the mean of its own tokens' states ("late chunking"). A
    /// paragraph longer than the model's input is encoded in overlapping
    /// windows of whole sentences, each sentence from the window it stands
    /// most central in.
    Paragraph,
    /// The sentences around it in its section, up to the model's input
    /// length, across paragraph breaks: the section is encoded in
    /// overlapping windows of whole sentences, each sentence pooled from
    /// the window it stands most central in.
    Window,
}

impl EmbeddingContext {
    fn is_sentence(&self) -> bool {
        *self == EmbeddingContext::Sentence
    }
}

/// How a chunk's vector is made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ChunkVectors {
    /// The normalised mean of its indexed sentences' vectors.
    #[default]
    Mean,
    /// Its text encoded as one passage, as plain chunk retrieval does.
    Whole,
}

impl ChunkVectors {
    fn is_mean(&self) -> bool {
        *self == ChunkVectors::Mean
    }
}

/// The form of the vectors the HNSW search walks over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Quantization {
    /// The f32 vectors.
    #[default]
    None,
    /// Int8 scalar quantization, one scale per dimension; f32 rescoring.
    Int8,
}

impl Quantization {
    fn is_none(&self) -> bool {
        *self == Quantization::None
    }
}

/// The sentence embedding model.
///
/// Serialised with the prefixes in effect ([`EmbeddingSpec::prefixes`]),
/// so that the JSON a profile is hashed and recorded by says what the
/// model is run with: `serde(remote = "Self")` makes the derived code
/// plain functions, which the `Serialize` and `Deserialize` impls below
/// call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(remote = "Self", rename_all = "camelCase", default)]
pub struct EmbeddingSpec {
    /// `local` (default), `openai`, `voyage` or `tei`.
    pub provider: EmbeddingProvider,
    /// Model name. For `local`, the name of a directory in the model cache
    /// (`$TRELLIS_MODEL_DIR`, else `~/.cache/trellis/models`) unless `path`
    /// is set. For `openai` and `voyage`, the model the service is asked
    /// for (`text-embedding-3-small`, `voyage-3.5`). For `tei`, which
    /// serves one model, the name of that model: it is not sent, but it
    /// keys the embedding cache, so change it when the server's model
    /// changes. Default `all-MiniLM-L6-v2`.
    pub model: String,
    /// The model (`local` only), relative to the manifest: a Hugging Face
    /// or sentence-transformers directory, one holding an ONNX export
    /// (`model.onnx`, `onnx/model.onnx`), or the `.onnx` file itself.
    /// Overrides the model cache lookup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Text put before every query ("query: ", or bge's "Represent this
    /// sentence for searching relevant passages: "). Default: the model's
    /// preset (see `docs/configuration.md#model-presets`), else empty. An
    /// empty string here turns a preset's prefix off.
    pub query_prefix: Option<String>,
    /// Text put before every document sentence ("passage: "). Default: the
    /// model's preset, else empty.
    pub document_prefix: Option<String>,
    /// How a sentence's token states become its vector (`local`): `mean`,
    /// `cls` (the first token's state) or `meanSqrtLen`. Default: the
    /// model directory's `1_Pooling/config.json`, else the model's
    /// preset, else `mean`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pooling: Option<EmbeddingPooling>,
    /// Longest input in tokens (`local`); longer sentences are truncated.
    /// Default: the directory's `sentence_bert_config.json`, else the
    /// model's preset, else 512. Not
    /// used by the HTTP providers: `tei` and `voyage` truncate at the
    /// service's own limit, OpenAI rejects a longer input (status 400).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_seq_length: Option<u32>,
    /// Tokens per encoder batch (`local`). Default 4096.
    pub batch_tokens: u32,
    /// The local encoder's dense layers: `none` runs them in f32; `int8`
    /// quantizes their weights per output row at load and each input per
    /// token (dynamic quantization): about 1.5× the f32 throughput on CPUs
    /// with AVX-512 VNNI, slower than f32 elsewhere. Its vectors differ
    /// slightly from f32 ones (cosine ≥ 0.99), so the model id gains
    /// `+int8` and no cached f32 vector is reused. `local` only. Default
    /// none.
    #[serde(skip_serializing_if = "Quantization::is_none")]
    pub quantization: Quantization,
    /// What each sentence is embedded with (`local`, mean-pooling models):
    /// `sentence` (alone), `paragraph` or `window` (its neighbours in its
    /// section); see [`EmbeddingContext`]. Queries are always embedded
    /// alone. Default `sentence`.
    #[serde(skip_serializing_if = "EmbeddingContext::is_sentence")]
    pub context: EmbeddingContext,
    /// How each chunk's vector is made, for routes that take chunk
    /// candidates into their anchors (`anchors.chunks`): `mean` (default;
    /// the normalised mean of its indexed sentences' vectors, no model
    /// call) or `whole` (the chunk's text, heading path first, encoded as
    /// one passage; the model reads at most its input length of it).
    #[serde(skip_serializing_if = "ChunkVectors::is_mean")]
    pub chunks: ChunkVectors,
    /// Base URL of the embeddings service (`openai`, `voyage`, `tei`).
    /// Texts are posted to `{endpoint}/v1/embeddings` (`openai`, `voyage`;
    /// an endpoint already ending in `/v1` gets no second one) or to
    /// `{endpoint}/embed` (`tei`). Default `https://api.openai.com`
    /// (`openai`), `https://api.voyageai.com` (`voyage`); required for
    /// `tei`. Must not carry credentials: use `apiKeyEnv` or `apiKeyFile`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Environment variable holding the API key, sent as
    /// `Authorization: Bearer <key>`. Default `OPENAI_API_KEY` (`openai`),
    /// `VOYAGE_API_KEY` (`voyage`), none (`tei`). When no key is found,
    /// requests go without one, which suits a self-hosted `endpoint`; for
    /// the public OpenAI or Voyage API, or when this variable is named but
    /// unset, it is an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// A file whose content, trimmed, is the API key (a mounted Secret, for
    /// example), relative to the manifest. Takes precedence over
    /// `apiKeySecretRef` and `apiKeyEnv`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_file: Option<String>,
    /// A key of a Secret holding the API key (give `key`: its default is
    /// `password`). In a cluster the operator mounts the Secret into the
    /// ingest pods and into the pods of every route serving a version
    /// built with this profile (they embed queries); the embedded mode
    /// reads `$TRELLIS_SECRET_ROOT/<name>/<key>`. Takes precedence over
    /// `apiKeyEnv`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_secret_ref: Option<SecretKeyRef>,
    /// Length of the service's vectors (HTTP providers); every vector
    /// returned is checked against it. When unset, an ingest sends one
    /// probe request before embedding to learn it, and the index version
    /// records it for queries. Default: unset (probed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<u32>,
    /// Texts per request (HTTP providers). Default 64 (`openai`, `voyage`)
    /// or 32 (`tei`, whose default `--max-client-batch-size` is 32).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_batch: Option<u32>,
    /// Seconds one request (HTTP providers) may take, connecting included,
    /// before it fails and is retried. Default 30.
    #[serde(skip_serializing_if = "is_default_timeout_seconds")]
    pub timeout_seconds: u32,
    /// Retries of a request (HTTP providers) that failed with status 429 or
    /// 5xx, could not connect or timed out: after the service's
    /// `Retry-After` seconds (at most 60) when it sends one, else after an
    /// exponential backoff from 0.5 s with jitter. Other failures, such as
    /// status 400 or 401, are not retried. Default 5.
    #[serde(skip_serializing_if = "is_default_max_retries")]
    pub max_retries: u32,
}

const DEFAULT_TIMEOUT_SECONDS: u32 = 30;
const DEFAULT_MAX_RETRIES: u32 = 5;

// Fields at their defaults are left out of the JSON, so that profiles
// written before these fields existed keep their canonical hash.
fn is_default_timeout_seconds(value: &u32) -> bool {
    *value == DEFAULT_TIMEOUT_SECONDS
}

fn is_default_max_retries(value: &u32) -> bool {
    *value == DEFAULT_MAX_RETRIES
}

impl EmbeddingSpec {
    /// The query and document prefixes the model is run with: the
    /// explicit fields, else the model's preset's ([`super::presets`]).
    pub fn prefixes(&self) -> (String, String) {
        super::presets::prefixes(self)
    }
}

impl Serialize for EmbeddingSpec {
    /// The prefixes are written as they take effect, so a profile of a
    /// model with a preset prefix hashes apart from one that turns it off,
    /// and a model without any (all-MiniLM-L6-v2) writes `""` for both as
    /// it always has: existing profiles keep their hash.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (query, document) = self.prefixes();
        let effective = EmbeddingSpec {
            query_prefix: Some(query),
            document_prefix: Some(document),
            ..self.clone()
        };
        EmbeddingSpec::serialize(&effective, serializer)
    }
}

impl<'de> Deserialize<'de> for EmbeddingSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        EmbeddingSpec::deserialize(deserializer)
    }
}

impl Default for EmbeddingSpec {
    fn default() -> Self {
        Self {
            provider: EmbeddingProvider::Local,
            model: "all-MiniLM-L6-v2".to_string(),
            path: None,
            query_prefix: None,
            document_prefix: None,
            pooling: None,
            max_seq_length: None,
            batch_tokens: 4096,
            quantization: Quantization::None,
            context: EmbeddingContext::Sentence,
            chunks: ChunkVectors::Mean,
            endpoint: None,
            api_key_env: None,
            api_key_file: None,
            api_key_secret_ref: None,
            dimensions: None,
            request_batch: None,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            max_retries: DEFAULT_MAX_RETRIES,
        }
    }
}

/// BM25 and HNSW parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct IndexSpec {
    /// HNSW: links per node. Default 16.
    pub hnsw_m: u32,
    /// HNSW: candidate list size while building. Default 200.
    pub hnsw_ef_construction: u32,
    /// How the HNSW graph is walked at query time: `none` reads the f32
    /// sentence vectors; `int8` walks over int8 copies of them (written
    /// to `vectors.i8`, a quarter of the bytes) and rescores every
    /// candidate found in f32. Default none.
    #[serde(skip_serializing_if = "Quantization::is_none")]
    pub quantization: Quantization,
    /// Index the heading path of each sentence for BM25 as well (at a lower
    /// weight than its text). Default true.
    pub bm25_section_path: bool,
    /// Index the text of each sentence's paragraph for BM25 as well, so
    /// that query words spread over neighbouring sentences still match
    /// (weighed at query time by the route's `anchors.paragraphBoost`).
    /// Default true.
    pub bm25_paragraph: bool,
}

impl Default for IndexSpec {
    fn default() -> Self {
        Self {
            hnsw_m: 16,
            hnsw_ef_construction: 200,
            quantization: Quantization::None,
            bm25_section_path: true,
            bm25_paragraph: true,
        }
    }
}

/// `RELATED_TO` edges from k-NN over sentence vectors. Deterministic
/// skeleton edges and these probabilistic ones are never mixed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SemanticLinksSpec {
    /// Build the edges at all. Default true.
    pub enabled: bool,
    /// Smallest cosine similarity of a link. Default 0.90.
    pub threshold: f32,
    /// Most links leaving one sentence. Default 2.
    pub max_per_sentence: u32,
    /// Link only sentences in different chunks (links inside a chunk add
    /// nothing the chunk does not already show). Default true.
    pub cross_chunk_only: bool,
}

impl Default for SemanticLinksSpec {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold: 0.90,
            max_per_sentence: 2,
            cross_chunk_only: true,
        }
    }
}

/// Where the skeleton graph lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum GraphStoreKind {
    /// Inside the index version directory (arrays; no server).
    #[default]
    Embedded,
    /// Also written to a Neo4j 5 database over Bolt (`graph.neo4j`).
    Neo4j,
    /// Also written to a FalkorDB graph over the Redis protocol
    /// (`graph.falkordb`).
    Falkordb,
}

/// The graph store of the skeleton and its links.
///
/// The embedded index is always built. With `neo4j` or `falkordb`, each
/// index version's skeleton is also written to that database once the
/// version is published, every node tagged with the version, and versions
/// no route serves any more are deleted from it. A failed export is
/// reported by the ingest and leaves the embedded index serving.
///
/// Fields left unset are not part of the profile's hash, so profiles that
/// do not use a graph database keep their index versions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = graph_rules)]
pub struct GraphSpec {
    /// `embedded` (default), `neo4j` or `falkordb`.
    pub store: GraphStoreKind,
    /// The Neo4j server, for `store: neo4j`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neo4j: Option<Neo4jSpec>,
    /// The FalkorDB server, for `store: falkordb`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub falkordb: Option<FalkorDbSpec>,
    /// Rows written per `UNWIND` statement. Default 200 (the fastest of
    /// 1 to 2000 in the graph export benchmark).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u32>,
    /// Longest one statement may take, in seconds. Default 60.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u32>,
    /// Further attempts of a statement that failed for a reason that may
    /// pass (connection lost, timeout), with backoff. Every write is an
    /// idempotent `MERGE`, so a retried batch never doubles a node.
    /// Default 3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
}

impl GraphSpec {
    pub const DEFAULT_BATCH_SIZE: u32 = 200;
    pub const DEFAULT_TIMEOUT_SECONDS: u32 = 60;
    pub const DEFAULT_RETRIES: u32 = 3;

    pub fn batch_size(&self) -> usize {
        self.batch_size.unwrap_or(Self::DEFAULT_BATCH_SIZE).max(1) as usize
    }

    pub fn timeout(&self) -> std::time::Duration {
        let seconds = self
            .timeout_seconds
            .unwrap_or(Self::DEFAULT_TIMEOUT_SECONDS)
            .max(1);
        std::time::Duration::from_secs(u64::from(seconds))
    }

    pub fn retries(&self) -> u32 {
        self.retries.unwrap_or(Self::DEFAULT_RETRIES)
    }

    /// The Secret holding the selected store's password, if any.
    pub fn password_secret(&self) -> Option<&SecretKeyRef> {
        match self.store {
            GraphStoreKind::Embedded => None,
            GraphStoreKind::Neo4j => self.neo4j.as_ref()?.password_secret_ref.as_ref(),
            GraphStoreKind::Falkordb => self.falkordb.as_ref()?.password_secret_ref.as_ref(),
        }
    }
}

/// The CRD's CEL rules for `graph`, checked by the API server.
fn graph_rules(schema: &mut schemars::Schema) {
    super::cel_rules(
        schema,
        &[
            (
                "!has(self.store) || self.store != 'neo4j' || has(self.neo4j)",
                "store neo4j needs graph.neo4j",
            ),
            (
                "!has(self.store) || self.store != 'falkordb' || has(self.falkordb)",
                "store falkordb needs graph.falkordb",
            ),
        ],
    );
}

/// Where a password comes from. In a cluster, a key of a Secret: the
/// operator passes it to the ingest and retrieval pods; the embedded mode
/// reads it from `$TRELLIS_SECRET_ROOT/<name>/<key>` (default
/// `/var/run/trellis/secrets`). For local runs, `passwordEnv` names an
/// environment variable instead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// The Secret's name.
    pub name: String,
    /// The key in the Secret. Default `password`.
    #[serde(default = "default_password_key")]
    pub key: String,
}

fn default_password_key() -> String {
    "password".into()
}

/// A Neo4j 5 server, reached over Bolt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Neo4jSpec {
    /// `bolt://host:7687`, `neo4j://…`, or with TLS `bolt+s://…` and
    /// `neo4j+s://…`.
    pub uri: String,
    /// The database; default the server's default database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    /// Default `neo4j`.
    #[serde(default = "default_neo4j_user")]
    pub username: String,
    /// The password, from a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_secret_ref: Option<SecretKeyRef>,
    /// The password, from this environment variable (local runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
}

fn default_neo4j_user() -> String {
    "neo4j".into()
}

/// A FalkorDB server, reached over the Redis protocol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FalkorDbSpec {
    /// `falkor://host:6379`, `redis://…`, or with TLS `falkors://…` and
    /// `rediss://…`.
    pub url: String,
    /// The graph (key) the skeleton is written to. Default `trellis`.
    #[serde(default = "default_graph_name")]
    pub graph: String,
    /// The password, from a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_secret_ref: Option<SecretKeyRef>,
    /// The password, from this environment variable (local runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
}

fn default_graph_name() -> String {
    "trellis".into()
}
