//! `RetrievalRoute`: everything that only changes query time.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ObjectRef, RetrievalRouteStatus, ScoringWeights};

/// How queries against one corpus are answered.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "trellis.dev",
    version = "v1alpha1",
    kind = "RetrievalRoute",
    plural = "retrievalroutes",
    shortname = "rr",
    namespaced,
    status = "RetrievalRouteStatus",
    printcolumn = r#"{"name":"Corpus","type":"string","jsonPath":".spec.corpusRef.name"}"#,
    printcolumn = r#"{"name":"Served","type":"string","jsonPath":".status.servedVersion"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas"}"#,
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RetrievalRouteSpec {
    /// The `Corpus` whose current index version is served.
    pub corpus_ref: ObjectRef,
    /// Stage 1: anchor sentences.
    #[serde(default)]
    pub anchors: AnchorSpec,
    /// How the dense and lexical anchor lists are fused.
    #[serde(default)]
    pub fusion: FusionSpec,
    /// Stage 2: structural and semantic expansion around anchors.
    #[serde(default)]
    pub expansion: ExpansionSpec,
    /// Stage 3: composite scoring.
    #[serde(default)]
    pub scoring: ScoringSpec,
    /// What is returned.
    #[serde(default)]
    pub selection: SelectionSpec,
    /// An optional reranker of the anchors.
    #[serde(default)]
    pub reranker: RerankerSpec,
    /// Stage 4: the answer written from what selection chose
    /// (`trellis answer`, `POST /v1/answer`). Retrieval never reads it.
    #[serde(default, skip_serializing_if = "GenerationSpec::is_default")]
    pub generation: GenerationSpec,
    /// How the operator runs the route's retrieval pods (the embedded mode
    /// reads none of it).
    #[serde(default)]
    pub serving: ServingSpec,
}

impl RetrievalRouteSpec {
    /// The documented defaults, serving `corpus`.
    pub fn for_corpus(corpus: &str) -> Self {
        Self {
            corpus_ref: ObjectRef {
                name: corpus.to_string(),
            },
            anchors: AnchorSpec::default(),
            fusion: FusionSpec::default(),
            expansion: ExpansionSpec::default(),
            scoring: ScoringSpec::default(),
            selection: SelectionSpec::default(),
            reranker: RerankerSpec::default(),
            generation: GenerationSpec::default(),
            serving: ServingSpec::default(),
        }
    }
}

/// Which signals produce anchors.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, utoipa::ToSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum AnchorMode {
    /// BM25 only.
    Bm25,
    /// Vector search only.
    Dense,
    /// Both, fused; no expansion or composite scoring.
    Hybrid,
    /// Both, fused, then expansion and composite scoring (default).
    #[default]
    Full,
    /// `full`, answered from sentences or, for a broad question, through
    /// the chunks nearest it as well (`anchors.chunks`, or 10 when that is
    /// 0), decided per query by cues the response reports: a number, a
    /// proper name, a clause or a document named, or a question for one
    /// fact read as precise; a question for an explanation or of fifteen
    /// words or more as broad.
    Auto,
}

/// Stage 1 settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct AnchorSpec {
    /// `bm25`, `dense`, `hybrid`, `full` (default) or `auto`.
    pub mode: AnchorMode,
    /// Sentences taken from each of HNSW and BM25. Default 200.
    pub candidates: u32,
    /// HNSW search list size (at least `candidates`). Default 200.
    pub ef_search: u32,
    /// BM25: weight of a match in the sentence's paragraph against one in
    /// the sentence itself (0 to match the sentence alone; needs the
    /// profile's `index.bm25Paragraph`). Default 1.5.
    pub paragraph_boost: f32,
    /// BM25: weight of a phrase match, each two neighbouring words of the
    /// query found together in the sentence as the query writes them
    /// ("governing law", "governed by the laws"), added to the word
    /// matches. Embedded anchors only: a graph store's full-text index
    /// matches words. 0 for none. Default 0.
    pub phrase_boost: f32,
    /// Dense: share of a candidate's dense score that comes from the
    /// query's similarity to its paragraph (the normalised mean of the
    /// paragraph's sentence vectors) rather than to the sentence alone;
    /// in [0, 1]. Default 0.4.
    pub paragraph_mix: f32,
    /// Full mode: a sentence that defines a term (`(the "Agreement")`,
    /// `"Effective Date" means …`) joins the anchors when the embedded term
    /// is at least this similar to the query, so that a question about a
    /// defined concept reaches its definition even when the definition
    /// shares no word with it. Above 1 turns it off. Default 0.5.
    pub definition_similarity: f32,
    /// Chunks taken by the query's vector (exact search over the chunk
    /// vectors, `IndexProfile.spec.embedding.chunks`); every indexed
    /// sentence of each joins the anchors, and the chunk's rank adds
    /// `fusion.chunkWeight / (k + rank)` to its fused score. A question
    /// whose answer is spread over several sentences, none close to it
    /// alone, is reached through the chunk that holds them. 0 (default)
    /// takes none.
    pub chunks: u32,
    /// Where the anchors are searched: `embedded` (default; the index
    /// version's HNSW graph and BM25 index, loaded into the retrieval
    /// process) or `graph` (the vector and full-text indexes of the index
    /// profile's graph store, which must hold the served version; the
    /// process then loads neither, nor the sentence vectors, and reads
    /// the vectors of the sentences a query touches from the store).
    pub source: AnchorSource,
}

/// Where stage 1 (anchors) searches.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, utoipa::ToSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum AnchorSource {
    /// The index version's HNSW graph and BM25 index.
    #[default]
    Embedded,
    /// The graph store's vector and full-text indexes
    /// (`IndexProfile.spec.graph`).
    Graph,
}

impl Default for AnchorSpec {
    fn default() -> Self {
        Self {
            mode: AnchorMode::Full,
            candidates: 200,
            ef_search: 200,
            paragraph_boost: 1.5,
            phrase_boost: 0.0,
            paragraph_mix: 0.4,
            definition_similarity: 0.5,
            chunks: 0,
            source: AnchorSource::Embedded,
        }
    }
}

/// Rank fusion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct FusionSpec {
    /// Reciprocal Rank Fusion constant: a list's item at rank r adds
    /// 1 / (k + r). Default 60.
    pub k: u32,
    /// Weight of the dense list in the fusion. Default 1.0.
    pub dense_weight: f32,
    /// Weight of the BM25 list in the fusion. Default 1.0.
    pub lexical_weight: f32,
    /// Weight of the chunk list (`anchors.chunks`) in the fusion; each
    /// sentence of a chunk takes its chunk's rank. Default 1.0.
    pub chunk_weight: f32,
}

impl Default for FusionSpec {
    fn default() -> Self {
        Self {
            k: 60,
            dense_weight: 1.0,
            lexical_weight: 1.0,
            chunk_weight: 1.0,
        }
    }
}

/// Stage 2 settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ExpansionSpec {
    /// Anchors (best fused first) that are expanded. Default 30.
    pub anchors: u32,
    /// Show each result inside its parent paragraph. Default true.
    pub paragraph: bool,
    /// Sentences before and after an anchor (NEXT/PREV) considered for
    /// the context. Default 2.
    pub window: u32,
    /// Follow `RELATED_TO` edges from anchors. Default true.
    pub related: bool,
    /// Continue a clause across a chunk or paragraph boundary when the
    /// next paragraph belongs to the same numbered clause. Default true.
    pub same_clause: bool,
    /// Climb from each expanded anchor to its parent and bring the
    /// parent's sentences in as candidates, nearest the anchor first, at
    /// most `parentSentences` of them: `none` (default), `chunk` (the text
    /// chunk that first holds the anchor, `PART_OF`) or `section` (the
    /// sentences of the anchor's own section, `IN_SECTION`). An answer
    /// that shares no word with the question but sits in the chunk or
    /// section of one that does becomes a candidate.
    pub parent: ParentLevel,
    /// Most sentences one anchor's parent brings in. Default 12.
    pub parent_sentences: u32,
    /// Follow the references an anchor makes ("as defined in Section
    /// 1.4", "set out in Exhibit B", found at ingest with the profile's
    /// `enrichment.references`) to their targets in the same document: the
    /// target's opening sentences become candidates, at most
    /// `referenceSentences` per reference. Default true.
    pub references: bool,
    /// Most sentences one reference brings in, from its target's start.
    /// Default 4.
    pub reference_sentences: u32,
    /// Where stage 2 runs: `embedded` (default; array lookups in the index
    /// version) or `graph` (Cypher against the index profile's graph
    /// store, which must hold the served version). Both add the same
    /// sentences.
    pub source: ExpansionSource,
}

/// The parent stage 2 climbs to from an anchor.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, utoipa::ToSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum ParentLevel {
    /// No climb.
    #[default]
    None,
    /// The first text chunk holding the anchor.
    Chunk,
    /// The anchor's own section (not its subsections).
    Section,
}

/// Where stage 2 (expansion) runs.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, utoipa::ToSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum ExpansionSource {
    /// The index version's arrays.
    #[default]
    Embedded,
    /// The graph store (`IndexProfile.spec.graph`).
    Graph,
}

impl Default for ExpansionSpec {
    fn default() -> Self {
        Self {
            anchors: 30,
            paragraph: true,
            window: 2,
            related: true,
            same_clause: true,
            parent: ParentLevel::None,
            parent_sentences: 12,
            references: true,
            reference_sentences: 4,
            source: ExpansionSource::Embedded,
        }
    }
}

/// Stage 3: composite score = Σ weight × signal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ScoringSpec {
    pub weights: ScoringWeights,
    /// Sentences whose extraction confidence is below this are dropped.
    /// Default 0.0 (keep all).
    pub confidence_floor: f32,
    /// What the provenance signal favours: the rarer sections, as the
    /// design draws them (`annexes`: annexes, schedules and exhibits; the
    /// body scores 0), or the body (`body`). Default `annexes`.
    pub provenance: ProvenanceFavours,
    /// Full mode: a query that names a document outright (one document's
    /// title or file name holds every word of it that names documents,
    /// and they spell out that name, all but one word at most: "… the
    /// hosting agreement?") is measured without its naming words once they have
    /// picked the document: the document signal reads the whole query,
    /// the dense, lexical, heading and paragraph signals what is left
    /// ("Which state's law governs"). Default true.
    pub named_documents: bool,
}

impl Default for ScoringSpec {
    fn default() -> Self {
        Self {
            weights: ScoringWeights::default(),
            confidence_floor: 0.0,
            provenance: ProvenanceFavours::Annexes,
            named_documents: true,
        }
    }
}

/// Which sections the provenance signal favours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ProvenanceFavours {
    /// Annexes, schedules and exhibits, the rarer sections, as the design
    /// draws them; the body scores 0 (default: on CUAD it finds more of
    /// the answers, which a contract often puts in an exhibit; SciFact and
    /// SQuAD have no annexes).
    #[default]
    Annexes,
    /// The body of a document; its annexes, schedules and exhibits score
    /// 0.
    Body,
}

/// What is returned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SelectionSpec {
    /// Results returned. Default 5.
    pub top_k: u32,
    /// Results under this composite score are dropped. Default 0.0.
    pub threshold: f32,
    /// Neighbouring sentences shown around each result (within its
    /// paragraph display). Default 1.
    pub neighbours: u32,
    /// Most results from one document; 0 for no limit. Default 0.
    pub max_per_document: u32,
    /// Results from one document after which other documents' results
    /// come first; only when no other document has any left do the rest
    /// of this one's follow, in rank order. Spreads a query over a whole
    /// corpus across documents without limiting one filtered to a single
    /// document. 0 for off. Default 0.
    pub spread_per_document: u32,
    /// Each result already taken from a document multiplies the scores of
    /// that document's other sentences by (1 − this): a soft preference
    /// for other documents that gives way when one document is clearly
    /// better. 0 for off. Default 0.
    pub document_decay: f32,
    /// Each result already taken from a section multiplies the scores of
    /// that section's other sentences by (1 − this): results spread over a
    /// document's regions (its clauses, its annexes) rather than gather in
    /// one, and come back to it when it is clearly better. 0 for off.
    /// Default 0.
    pub section_decay: f32,
    /// A query whose words are, on average, used by at least this share
    /// of the corpus' documents names no document in particular ("Which
    /// law governs the contract?" over a folder of contracts): any
    /// document may hold its answer. Such a common query is answered in
    /// each of the `topK` documents the corpus-wide ranking puts first,
    /// each searched alone, and the documents then take turns
    /// (`commonQueryDecay`). A query that names what one document is about
    /// keeps that document's sentences together. Stop words and question
    /// words are not counted. Above 1 for off. Default 0.55.
    pub common_query_share: f32,
    /// The `documentDecay` of a common query (the larger of the two
    /// applies). Default 0.4.
    pub common_query_decay: f32,
    /// MMR trade-off between relevance (1.0) and diversity; 1.0 turns
    /// diversity off. Default 1.0.
    pub mmr_lambda: f32,
    /// A result inside a numbered clause shows the whole clause (its run
    /// of sentences, across paragraphs, up to `clauseMaxChars`) instead
    /// of its paragraph: a clause that runs over several paragraphs is
    /// not cut where the anchor's paragraph ends. Default false.
    pub whole_clause: bool,
    /// The longest clause display, in characters; a longer clause is
    /// shown around its anchor, a sentence before and after in turn,
    /// never cutting one. Default 3000.
    pub clause_max_chars: u32,
    /// Tokens the results' passages may take together (the context a
    /// generator reads), counted at three characters to a token; 0 for no
    /// limit. Passages are cut down whole sentences at a time: every
    /// result's own sentence first, best result first, then each one's
    /// paragraph, then what its display adds past it (a clause), then its
    /// parent (`expansion.parent`); a result whose sentence does not fit is
    /// left out. The generation stage fills `generation.maxContextTokens`
    /// by the same priorities. Default 0.
    pub context_tokens: u32,
}

impl Default for SelectionSpec {
    fn default() -> Self {
        Self {
            top_k: 5,
            threshold: 0.0,
            neighbours: 1,
            max_per_document: 0,
            spread_per_document: 0,
            document_decay: 0.0,
            section_decay: 0.0,
            common_query_share: 0.55,
            common_query_decay: 0.4,
            mmr_lambda: 1.0,
            whole_clause: false,
            clause_max_chars: 3000,
            context_tokens: 0,
        }
    }
}

/// Which reranker scores the best candidates again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RerankerKind {
    /// No reranker (default).
    #[default]
    None,
    /// A cross-encoder run in process: a BERT- or RoBERTa-family
    /// sequence-classification directory (ms-marco-MiniLM-L-6-v2,
    /// bge-reranker-base) with its `tokenizer.json`.
    Local,
    /// Hugging Face Text Embeddings Inference serving a reranker:
    /// `POST {endpoint}/rerank`.
    Tei,
    /// The Cohere-style `POST {endpoint}/v1/rerank` that Cohere, Jina,
    /// Voyage, vLLM and Infinity serve.
    Cohere,
}

/// What of a candidate the reranker reads beside the query.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RerankPassage {
    /// The sentence alone (default): what stage 3 ranks, and what a
    /// cross-encoder reads fast enough to fit the default budget on a
    /// small CPU.
    #[default]
    Sentence,
    /// The passage the result displays (its paragraph, or the
    /// `selection.neighbours` window in a long one), scored once for all
    /// the candidates that show it: more context for the reranker, at
    /// about 2.6 times the cost of sentences on SciFact.
    Paragraph,
}

/// An optional second pass over the best candidates of stage 3: a
/// cross-encoder reads the query and each candidate's passage together
/// and its score joins the composite (`scoring.weights.rerank`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct RerankerSpec {
    /// `none` (default), `local`, `tei` or `cohere`.
    pub kind: RerankerKind,
    /// `local`: the name of a directory in the model cache
    /// (`$TRELLIS_MODEL_DIR`, else `~/.cache/trellis/models`) unless
    /// `path` is set. `cohere`: the model the service is asked for
    /// (`rerank-v3.5`, `jina-reranker-v2-base-multilingual`). `tei`
    /// serves one model and is not told; the name is kept for logs.
    pub model: String,
    /// `local`: the model directory, relative to the manifest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Base URL of the service (`tei`, `cohere`; required). Must not carry
    /// credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Environment variable holding the API key (sent as `Authorization:
    /// Bearer <key>`). Without any key, requests go without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// A file whose trimmed content is the API key, relative to the
    /// manifest. Takes precedence over the other two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_file: Option<String>,
    /// A key of a Secret holding the API key; in a cluster the operator
    /// mounts it into the route's pods, the embedded mode reads
    /// `$TRELLIS_SECRET_ROOT/<name>/<key>`. Takes precedence over
    /// `apiKeyEnv`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_secret_ref: Option<crate::spec::SecretKeyRef>,
    /// The candidates reranked: the best this many of stage 3. Default 20.
    pub top_n: u32,
    /// Milliseconds the reranker may take per query. A reranker that has
    /// not answered by then is given up for that query: stage 3's order
    /// stands, the answer says it was not reranked and
    /// `trellis_rerank_skipped_total` counts it. Default 1000.
    pub budget_ms: u32,
    /// `sentence` (default) or `paragraph`.
    pub passage: RerankPassage,
    /// `local`: longest query-and-passage pair in tokens; the passage is
    /// cut, never the query. Default 512 (or less, as the model allows).
    pub max_length: u32,
    /// `local`: tokens per encoder batch. Default 4096.
    pub batch_tokens: u32,
}

impl RerankerSpec {
    /// Makes a relative `path` and `apiKeyFile` absolute against `base`
    /// (the manifest's directory).
    pub fn resolve_paths(&mut self, base: &std::path::Path) {
        for field in [&mut self.path, &mut self.api_key_file] {
            if let Some(path) = field.as_deref()
                && std::path::Path::new(path).is_relative()
            {
                *field = Some(base.join(path).display().to_string());
            }
        }
    }

    /// The Secret holding the API key, which the route's pods mount.
    pub fn secret_name(&self) -> Option<&str> {
        match self.kind {
            RerankerKind::Tei | RerankerKind::Cohere => {
                self.api_key_secret_ref.as_ref().map(|r| r.name.as_str())
            }
            RerankerKind::None | RerankerKind::Local => None,
        }
    }
}

impl Default for RerankerSpec {
    fn default() -> Self {
        Self {
            kind: RerankerKind::None,
            model: String::new(),
            path: None,
            endpoint: None,
            api_key_env: None,
            api_key_file: None,
            api_key_secret_ref: None,
            top_n: 20,
            budget_ms: 1000,
            passage: RerankPassage::Sentence,
            max_length: 512,
            batch_tokens: 4096,
        }
    }
}

/// Who writes the answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum GenerationProvider {
    /// No model: the answer is the selected anchor sentences, verbatim, in
    /// reading order, each with its citation (default; deterministic).
    #[default]
    Extractive,
    /// Any OpenAI-compatible `POST {endpoint}/v1/chat/completions`: OpenAI,
    /// Azure OpenAI, vLLM, llama.cpp's server, Ollama, TGI.
    Openai,
    /// Anthropic's Messages API, `POST {endpoint}/v1/messages`.
    Anthropic,
}

/// What an answer sentence that cites nothing, or that its sources do not
/// support, becomes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum UnsupportedPolicy {
    /// Kept, and marked unsupported with the reason (default).
    #[default]
    Flag,
    /// Left out of the answer; the response counts it.
    Drop,
}

/// Stage 4, synthesis: a model writes the answer from the selected
/// passages and only from them; it never ranks. Trellis numbers the
/// passages as sources, fits them to the model's context, parses the `[n]`
/// citations of the answer and checks each sentence against the sources it
/// cites.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct GenerationSpec {
    /// `extractive` (default), `openai` or `anthropic`.
    pub provider: GenerationProvider,
    /// The model the service is asked for (`gpt-4o-mini`,
    /// `claude-sonnet-4-5`); required for `openai` and `anthropic`.
    /// A llama.cpp server answers with the model it loaded whatever the
    /// name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// Base URL of the service. Default `https://api.openai.com`
    /// (`openai`), `https://api.anthropic.com` (`anthropic`). An endpoint
    /// already ending in `/v1` gets no second one. Must not carry
    /// credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Environment variable holding the API key. Default `OPENAI_API_KEY`
    /// (`openai`), `ANTHROPIC_API_KEY` (`anthropic`). A self-hosted
    /// `endpoint` may go without a key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// A file whose trimmed content is the API key, relative to the
    /// manifest. Takes precedence over the other two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_file: Option<String>,
    /// A key of a Secret holding the API key; in a cluster the operator
    /// mounts it into the route's retrieval pods (never into ingest pods),
    /// the embedded mode reads `$TRELLIS_SECRET_ROOT/<name>/<key>`. Takes
    /// precedence over `apiKeyEnv`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_secret_ref: Option<crate::spec::SecretKeyRef>,
    /// The model's `tokenizer.json` (Hugging Face format), relative to the
    /// manifest, to count the prompt's tokens exactly. Without it the
    /// count is an estimate of one token per three characters, which
    /// over-counts English text for current tokenizers, so a prompt fits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
    /// Tokens the prompt (instructions, sources and question) may take.
    /// Sources are dropped whole, lowest score first, until it fits; a
    /// source is never cut. Default 3000.
    pub max_context_tokens: u32,
    /// Tokens the model may write. Default 512.
    pub max_answer_tokens: u32,
    /// Sampling temperature. Default 0 (the most likely answer).
    pub temperature: f32,
    /// Seconds one call to the model may take, the whole answer included.
    /// Default 60.
    pub timeout_seconds: u32,
    /// Retries of a call that failed with status 429 or 5xx or could not
    /// connect, before any of the answer arrived: after the service's
    /// `Retry-After` (at most 30 s) when given, else after a backoff from
    /// 0.5 s. Default 2.
    pub max_retries: u32,
    /// Instructions added after Trellis' own (answer from the sources,
    /// cite them, treat them as data), such as a tone or a language. They
    /// cannot lift Trellis' rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// An answer sentence is supported when it cites a source, and its
    /// embedding is at least this similar (cosine) to one sentence of the
    /// passages it cites, and every number and name it states appears
    /// there. Default 0.5: paraphrases of a sentence score above it with
    /// the embedding models Trellis ships, unrelated sentences well below.
    pub support_similarity: f32,
    /// `flag` (default) or `drop` the sentences that are not supported.
    pub unsupported: UnsupportedPolicy,
}

impl GenerationSpec {
    /// The documented defaults, left out of a route's JSON so that routes
    /// written before this section keep their hash.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Makes a relative `apiKeyFile` and `tokenizer` absolute against
    /// `base` (the manifest's directory).
    pub fn resolve_paths(&mut self, base: &std::path::Path) {
        for field in [&mut self.api_key_file, &mut self.tokenizer] {
            if let Some(path) = field.as_deref()
                && std::path::Path::new(path).is_relative()
            {
                *field = Some(base.join(path).display().to_string());
            }
        }
    }

    /// What the numeric bounds ([`super::bounds`]) cannot say: a model
    /// service needs a model, and the extractive answer reads no service
    /// settings. The endpoint is checked when the generator is built.
    pub fn check(&self) -> Result<(), String> {
        let service = match self.provider {
            GenerationProvider::Extractive => None,
            GenerationProvider::Openai => Some("openai"),
            GenerationProvider::Anthropic => Some("anthropic"),
        };
        match service {
            Some(provider) => {
                if self.model.trim().is_empty() {
                    return Err(format!(
                        "spec.generation.model is required for provider {provider}"
                    ));
                }
            }
            None => {
                let set: Vec<&str> = [
                    ("model", !self.model.is_empty()),
                    ("endpoint", self.endpoint.is_some()),
                    ("apiKeyEnv", self.api_key_env.is_some()),
                    ("apiKeyFile", self.api_key_file.is_some()),
                    ("apiKeySecretRef", self.api_key_secret_ref.is_some()),
                    ("tokenizer", self.tokenizer.is_some()),
                    ("systemPrompt", self.system_prompt.is_some()),
                ]
                .into_iter()
                .filter_map(|(name, set)| set.then_some(name))
                .collect();
                if !set.is_empty() {
                    return Err(format!(
                        "spec.generation.{} is set, but provider extractive calls no model; \
                         set provider to openai or anthropic",
                        set.join(", ")
                    ));
                }
            }
        }
        if self
            .system_prompt
            .as_ref()
            .is_some_and(|p| p.len() > 16_384)
        {
            return Err("spec.generation.systemPrompt is over 16384 bytes".to_string());
        }
        Ok(())
    }

    /// The Secret holding the API key, which the route's pods mount.
    pub fn secret_name(&self) -> Option<&str> {
        match self.provider {
            GenerationProvider::Openai | GenerationProvider::Anthropic => {
                self.api_key_secret_ref.as_ref().map(|r| r.name.as_str())
            }
            GenerationProvider::Extractive => None,
        }
    }
}

impl Default for GenerationSpec {
    fn default() -> Self {
        Self {
            provider: GenerationProvider::Extractive,
            model: String::new(),
            endpoint: None,
            api_key_env: None,
            api_key_file: None,
            api_key_secret_ref: None,
            tokenizer: None,
            max_context_tokens: 3000,
            max_answer_tokens: 512,
            temperature: 0.0,
            timeout_seconds: 60,
            max_retries: 2,
            system_prompt: None,
            support_similarity: 0.5,
            unsupported: UnsupportedPolicy::Flag,
        }
    }
}

/// The retrieval pods of a route in a cluster: a Deployment running
/// `trellis serve`, a Service in front of it and a PodDisruptionBudget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ServingSpec {
    /// Pods serving the route. Default 2.
    #[schemars(range(min = 0, max = 1000))]
    pub replicas: i32,
    /// Pods that voluntary disruptions (node drains) must leave running.
    /// Default 1; ignored when `replicas` is below 2.
    pub min_available: i32,
    /// The Service's port. Default 8080.
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// CPU and memory of each pod. Default: requests of 250m CPU and
    /// 512Mi, no limits (never BestEffort).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    /// A Secret in the route's namespace whose `tokens` key holds the
    /// bearer tokens (`TOKEN TAG[,TAG…]` per line). Without it the route is
    /// open to anything that reaches its Service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_secret: Option<String>,
    /// Seconds a rollout may go without progress before the route reports
    /// it `Stalled` (`ProgressDeadlineExceeded`, from the Deployment).
    /// Default 600; raise it for indexes that take longer to load.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 2147483647))]
    pub progress_deadline_seconds: Option<u32>,
    /// Additions to the retrieval pods: labels, annotations, scheduling,
    /// image pull secrets, env, volumes.
    #[serde(skip_serializing_if = "super::PodTemplate::is_empty")]
    pub template: super::PodTemplate,
    /// Where requests may come from, as NetworkPolicy peers (pods,
    /// namespaces, CIDRs), when the operator guards retrieval pods with a
    /// NetworkPolicy (the chart's `retrievalNetworkPolicy.enabled`).
    /// Default: anywhere, to the route's port only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_clients: Vec<k8s_openapi::api::networking::v1::NetworkPolicyPeer>,
}

impl Default for ServingSpec {
    fn default() -> Self {
        Self {
            replicas: 2,
            min_available: 1,
            port: 8080,
            resources: None,
            token_secret: None,
            progress_deadline_seconds: None,
            template: Default::default(),
            allowed_clients: Vec::new(),
        }
    }
}
