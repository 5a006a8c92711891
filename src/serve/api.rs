//! The service's request and response types, and the OpenAPI document
//! generated from them (`GET /openapi.json`).
//!
//! The document states the limits the server was started with (longest
//! query, largest `k`, body size), so that a client or a schema-driven
//! tester sees the bounds that are actually enforced.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};

use crate::generate::GeneratedAnswer;
use crate::index::Counts;
use crate::parse::DateRange;
use crate::retrieve::Hit;
use crate::spec::{AnchorMode, SelectionSpec};

use super::Limits;

/// A retrieval request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrieveRequest {
    /// The question. Must hold a character other than whitespace, which is
    /// Unicode's `White_Space` as the service trims it: the pattern spells
    /// the set out, as a schema regex's `\s` differs between engines
    /// (ECMAScript's leaves out U+0085, Python's adds U+001C–U+001F).
    #[schema(
        min_length = 1,
        max_length = 2000,
        pattern = r"[^\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    )]
    pub query: String,
    /// Results wanted; the route's `topK` when absent.
    #[serde(default, deserialize_with = "whole_number")]
    #[schema(minimum = 1, maximum = 50, nullable = false)]
    pub k: Option<u32>,
    /// Restrictions on what is searched.
    #[serde(default, deserialize_with = "object")]
    pub filters: RequestFilters,
    /// Overrides of the route's selection for this request.
    #[serde(default, deserialize_with = "object")]
    pub selection: SelectionOverrides,
    /// Which signals produce anchors for this request (`bm25`, `dense`,
    /// `hybrid`, `full` or `auto`); the route's `anchors.mode` when absent. Lets a
    /// caller compare modes on one index without a second route.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub mode: Option<AnchorMode>,
}

/// Restrictions a request adds to its token's ACL; like the ACL they apply
/// before scoring and expansion, so nothing outside them is ever reached.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestFilters {
    /// Only these documents: a list of keys or ids, or an object of
    /// conditions on them (`ids`, `path_prefix`, `author`, `date`,
    /// `language`), all of which must hold.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub documents: Option<DocumentsFilter>,
    /// Only sentences under this heading path; each heading matches with
    /// or without its numbering, case-insensitively.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub section_prefix: Option<Vec<String>>,
    /// Only documents whose metadata holds every one of these values
    /// (`format`, and the labels of the document's Corpus source).
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub metadata: Option<BTreeMap<String, String>>,
    /// Only sentences stating values that meet these conditions: an
    /// amount of money, a percentage, a date.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub values: Option<ValueConditions>,
}

/// Conditions on the values a sentence states (the amounts, percentages,
/// dates and fiscal periods enrichment reads); each one given must be met
/// by some value of the sentence.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ValueConditions {
    /// An amount of money within these bounds…
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub amount: Option<NumberBounds>,
    /// …in this currency (ISO 4217, any case); alone, any amount in it.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub currency: Option<String>,
    /// A percentage within these bounds.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub percent: Option<NumberBounds>,
    /// A date or period lying wholly within, written as `documents.date`
    /// is: `2023`, `2022-07..2023-06`.
    // The pattern is `parse::info::DATE_RANGE_PATTERN` (a test holds
    // them equal).
    #[serde(default, deserialize_with = "dates")]
    #[schema(value_type = String, pattern = "^([12][0-9]{3}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?(\\.\\.([12][0-9]{3}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?)?)?|\\.\\.[12][0-9]{3}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?)$", nullable = false)]
    pub date: Option<DateRange>,
}

/// Bounds on a number, each optional.
#[derive(Clone, Copy, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NumberBounds {
    /// Greater than.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub gt: Option<f64>,
    /// At least.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub gte: Option<f64>,
    /// Less than.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub lt: Option<f64>,
    /// At most.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub lte: Option<f64>,
}

impl From<NumberBounds> for crate::retrieve::NumberRange {
    fn from(b: NumberBounds) -> Self {
        crate::retrieve::NumberRange {
            gt: b.gt,
            gte: b.gte,
            lt: b.lt,
            lte: b.lte,
        }
    }
}

impl From<ValueConditions> for crate::retrieve::ValueFilter {
    fn from(v: ValueConditions) -> Self {
        crate::retrieve::ValueFilter {
            amount: v.amount.map(Into::into),
            currency: v.currency,
            percent: v.percent.map(Into::into),
            dated: v.date,
        }
    }
}

/// `filters.documents`: the documents' keys or ids, or conditions on the
/// documents.
#[derive(Debug)]
pub enum DocumentsFilter {
    Ids(Vec<String>),
    Where(DocumentConditions),
}

/// Conditions on a document, each on what it records of itself or where
/// it lies; a document without the field asked about does not pass.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentConditions {
    /// Only these documents (key or id).
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub ids: Option<Vec<String>>,
    /// Only documents whose key lies under this path, a whole component at
    /// a time (`contracts/2023` takes `contracts/2023/msa.pdf`).
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub path_prefix: Option<String>,
    /// Only documents whose author names this, ignoring case.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub author: Option<String>,
    /// Only documents dated within: `2023`, `2023-04`,
    /// `2022-07..2023-06`, `2023..` or `..2023-06`. A document dated only
    /// to a year is within a range that covers the whole year; a range
    /// that ends before it starts, or a day its month lacks, holds none.
    // The pattern is `parse::info::DATE_RANGE_PATTERN` (a test holds
    // them equal): the attribute takes a literal only.
    #[serde(default, deserialize_with = "dates")]
    #[schema(value_type = String, pattern = "^([12][0-9]{3}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?(\\.\\.([12][0-9]{3}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?)?)?|\\.\\.[12][0-9]{3}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?)$", nullable = false)]
    pub date: Option<DateRange>,
    /// Only documents in this language; `en` takes `en-GB` too.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub language: Option<String>,
    /// Only documents with a form field of each of these names (ignoring
    /// case) holding the value given: text as the form shows it (ignoring
    /// case and spacing), a check box as `true`/`yes`/`checked` or
    /// `false`/`no`/`unchecked`.
    #[serde(default, deserialize_with = "present")]
    #[schema(nullable = false)]
    pub fields: Option<std::collections::BTreeMap<String, String>>,
}

impl<'de> Deserialize<'de> for DocumentsFilter {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = DocumentsFilter;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of document keys or ids, or an object of conditions")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<DocumentsFilter, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(DocumentsFilter::Ids)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<DocumentsFilter, A::Error> {
                DocumentConditions::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(DocumentsFilter::Where)
            }
        }
        deserializer.deserialize_any(Either)
    }
}

impl utoipa::PartialSchema for DocumentsFilter {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::OneOfBuilder::new()
            .item(<Vec<String> as utoipa::PartialSchema>::schema())
            .item(utoipa::openapi::Ref::from_schema_name("DocumentConditions"))
            .into()
    }
}

impl ToSchema for DocumentsFilter {
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        schemas.push((
            "DocumentConditions".to_string(),
            <DocumentConditions as utoipa::PartialSchema>::schema(),
        ));
        <DocumentConditions as ToSchema>::schemas(schemas);
    }
}

/// A date range in the form [`DateRange`] reads (`2023`,
/// `2022-07..2023-06`); `null` is refused as in [`present`].
fn dates<'de, D>(deserializer: D) -> Result<Option<DateRange>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let text = String::deserialize(deserializer)?;
    text.parse().map(Some).map_err(serde::de::Error::custom)
}

/// Per-request changes to the route's `selection`, each within bounds.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectionOverrides {
    /// Results under this composite score are dropped.
    #[serde(default, deserialize_with = "present")]
    #[schema(minimum = 0.0, maximum = 10.0, nullable = false)]
    pub threshold: Option<f64>,
    /// Neighbouring sentences shown around each result.
    #[serde(default, deserialize_with = "whole_number")]
    #[schema(minimum = 0, maximum = 5, nullable = false)]
    pub neighbours: Option<u32>,
    /// Most results from one document; 0 for no limit.
    #[serde(default, deserialize_with = "whole_number")]
    #[schema(minimum = 0, maximum = 50, nullable = false)]
    pub max_per_document: Option<u32>,
    /// Results from one document after which other documents' come first;
    /// 0 for off.
    #[serde(default, deserialize_with = "whole_number")]
    #[schema(minimum = 0, maximum = 50, nullable = false)]
    pub spread_per_document: Option<u32>,
    /// Each result taken from a document multiplies that document's other
    /// scores by (1 − this); 0 for off.
    #[serde(default, deserialize_with = "present")]
    #[schema(minimum = 0.0, maximum = 1.0, nullable = false)]
    pub document_decay: Option<f64>,
    /// MMR trade-off between relevance (1.0) and diversity.
    #[serde(default, deserialize_with = "present")]
    #[schema(minimum = 0.0, maximum = 1.0, nullable = false)]
    pub mmr_lambda: Option<f64>,
}

impl RetrieveRequest {
    /// Reads a request body: a JSON object (serde would also take a
    /// struct from an array of its fields in order, which the schema does
    /// not allow).
    pub fn from_json(value: serde_json::Value) -> Result<Self, String> {
        if !value.is_object() {
            return Err("the body must be a JSON object".to_string());
        }
        serde_json::from_value(value).map_err(|e| e.to_string())
    }
}

/// A struct field that must be a JSON object, never an array.
fn object<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Object<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    deserializer.deserialize_map(Object(std::marker::PhantomData))
}

/// An optional field that, when present, holds a value: the schema does
/// not allow `null`, so neither does the server (serde alone would read
/// `null` as absent).
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// An optional count: JSON Schema counts `3.0` as the integer 3, so a
/// number without a fractional part is taken as one; `null` is refused as
/// in [`present`].
fn whole_number<'de, D>(deserializer: D) -> Result<Option<u32>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::de::Error;
    let number = serde_json::Number::deserialize(deserializer)?;
    let whole = number.as_u64().or_else(|| {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u32::MAX as f64)
            .map(|f| f as u64)
    });
    match whole.and_then(|n| u32::try_from(n).ok()) {
        Some(n) => Ok(Some(n)),
        None => Err(D::Error::custom(format!(
            "expected a whole number from 0 to {}, got {number}",
            u32::MAX
        ))),
    }
}

/// Largest `neighbours` a request may ask for.
const MAX_NEIGHBOURS: u32 = 5;
/// Largest `threshold` a request may set (composite scores stay below it).
const MAX_THRESHOLD: f64 = 10.0;

impl SelectionOverrides {
    /// The route's selection with these overrides, or what is out of
    /// bounds.
    pub fn apply(&self, route: &SelectionSpec, max_k: u32) -> Result<SelectionSpec, String> {
        let mut selection = route.clone();
        if let Some(t) = self.threshold {
            if !(0.0..=MAX_THRESHOLD).contains(&t) {
                return Err(format!("threshold must be between 0 and {MAX_THRESHOLD}"));
            }
            // Bounds are checked before narrowing: 10.000000000000002 is out
            // of bounds even though it rounds to 10.0 as an f32.
            selection.threshold = t as f32;
        }
        if let Some(n) = self.neighbours {
            if n > MAX_NEIGHBOURS {
                return Err(format!("neighbours must be at most {MAX_NEIGHBOURS}"));
            }
            selection.neighbours = n;
        }
        if let Some(n) = self.max_per_document {
            if n > max_k {
                return Err(format!("max_per_document must be at most {max_k}"));
            }
            selection.max_per_document = n;
        }
        if let Some(n) = self.spread_per_document {
            if n > max_k {
                return Err(format!("spread_per_document must be at most {max_k}"));
            }
            selection.spread_per_document = n;
        }
        if let Some(d) = self.document_decay {
            if !(0.0..=1.0).contains(&d) {
                return Err("document_decay must be between 0 and 1".to_string());
            }
            selection.document_decay = d as f32;
        }
        if let Some(l) = self.mmr_lambda {
            if !(0.0..=1.0).contains(&l) {
                return Err("mmr_lambda must be between 0 and 1".to_string());
            }
            selection.mmr_lambda = l as f32;
        }
        Ok(selection)
    }
}

/// A retrieval answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct RetrieveResponse {
    /// The RetrievalRoute that answered.
    pub route: String,
    /// The index version searched.
    pub index_version: String,
    /// Results, best first: each an anchor sentence inside its paragraph,
    /// with its per-signal scores and citation.
    pub hits: Vec<Hit>,
    /// The results' paragraphs in reading order, duplicates removed.
    pub context: String,
    /// The query was common to the corpus (its words used by most
    /// documents): answered in each of the best documents, which then
    /// took turns, rather than from the one that matched best.
    pub common_query: bool,
    /// The documents (keys) the query names outright, among those it may
    /// see: its sentences were measured by the rest of the query
    /// (`scoring.namedDocuments`). Absent when it names none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub named_documents: Vec<String>,
    /// How the route's context budget (`selection.contextTokens`) was
    /// spent: the budget, the tokens the passages take, the results shown
    /// shorter than their display and those left out. Absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_budget: Option<crate::retrieve::BudgetUse>,
    /// What `anchors.mode: auto` chose for the query (`sentences` or
    /// `chunks`) and the cues it read. Absent for a fixed mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing: Option<crate::retrieve::Routing>,
    /// Whether the route's reranker reordered the results; false when it
    /// failed or missed its budget (`reranker.budgetMs`) and stage 3's
    /// order stands. Absent when the route has no reranker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reranked: Option<bool>,
    /// The response was cut to the service's response limit
    /// (`--max-response-bytes`): passages were shortened to a window around
    /// their sentence, and the lowest results may be left out. Absent when
    /// nothing was cut.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Fits `response` into `cap` bytes of JSON, and says whether anything was
/// cut. First each result's display (and the context's copy of it), then
/// each sentence, is cut to a window around the result's sentence with
/// `…` at the cuts, the windows sharing half the cap; then results are
/// left out from the lowest until it fits. A cap too small for any
/// result leaves none.
pub fn fit_response(response: &mut RetrieveResponse, cap: usize) -> bool {
    let size = |r: &RetrieveResponse| serde_json::to_vec(r).map_or(usize::MAX, |v| v.len());
    if size(response) <= cap {
        return false;
    }
    response.truncated = true;
    // Half the cap for the displays, half for the context's copies of
    // them; a quarter of each share for a result's sentence.
    let share = (cap / (4 * response.hits.len().max(1))).max(64);
    for hit in &mut response.hits {
        if hit.display.len() > share {
            let cut = window_around(&hit.display, &hit.text, share);
            if response.context.contains(hit.display.as_str()) {
                response.context = response.context.replace(hit.display.as_str(), &cut);
            }
            hit.display = cut;
        }
        if hit.text.len() > share / 4 {
            hit.text = window_around(&hit.text, "", share / 4);
        }
        for highlight in &mut hit.highlights {
            if highlight.text.len() > share / 4 {
                highlight.text = window_around(&highlight.text, "", share / 4);
            }
        }
    }
    if response.context.len() > cap / 2 {
        response.context = window_around(&response.context, "", cap / 2);
    }
    while size(response) > cap && response.hits.pop().is_some() {}
    if size(response) > cap {
        response.context.clear();
    }
    true
}

/// At most about `bytes` bytes of `text` around the first place `anchor`
/// appears in it (its start without one), cut on character boundaries,
/// with `…` where text was left out.
fn window_around(text: &str, anchor: &str, bytes: usize) -> String {
    if text.len() <= bytes {
        return text.to_string();
    }
    let at = if anchor.is_empty() {
        0
    } else {
        text.find(anchor).unwrap_or(0)
    };
    let mut start = at.saturating_sub(bytes / 4);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + bytes).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}{}{}",
        if start > 0 { "…" } else { "" },
        &text[start..end],
        if end < text.len() { "…" } else { "" }
    )
}

/// A written answer: the route's generation stage over a retrieval.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnswerResponse {
    /// The RetrievalRoute that answered.
    pub route: String,
    /// The index version searched.
    pub index_version: String,
    /// The query was common to the corpus (see `/v1/retrieve`).
    pub common_query: bool,
    /// The answer, its sentences with their citations and support, and
    /// the numbered sources.
    #[serde(flatten)]
    pub answer: GeneratedAnswer,
}

/// What `GET /v1/info` says.
#[derive(Debug, Serialize, ToSchema)]
pub struct Info {
    pub route: String,
    pub corpus: String,
    pub mode: AnchorMode,
    pub index_version: String,
    pub model: String,
    pub dimensions: usize,
    /// The index version's counts; only for callers who may see every
    /// document, since they describe documents a restricted token may not
    /// see.
    pub counts: Option<Counts>,
}

/// Every error: a stable code and a message for people.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `invalid_request`, `empty_query`, `query_too_long`, `invalid_k`,
    /// `invalid_selection`, `unauthorized`, `body_too_large`, `not_found`,
    /// `not_ready`, `overloaded`, `timeout`, `generator_unavailable`,
    /// `generator_refused` or `internal`.
    pub code: String,
    pub message: String,
}

/// Answers a question over the route's corpus.
#[utoipa::path(
    post,
    path = "/v1/retrieve",
    request_body = RetrieveRequest,
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "Results", body = RetrieveResponse),
        (status = 400, description = "The request is malformed or out of bounds", body = ErrorBody),
        (status = 401, description = "A bearer token is required, or it is not valid", body = ErrorBody),
        (status = 408, description = "The body did not arrive within the body timeout", body = ErrorBody),
        (status = 413, description = "The body is too large", body = ErrorBody),
        (status = 415, description = "The body is not sent as application/json", body = ErrorBody),
        (status = 503, description = "Not ready, too many requests in flight, or too many connections",
            body = ErrorBody, headers(("Retry-After" = u32, description = "Seconds to wait"))),
        (status = 504, description = "The retrieval took too long", body = ErrorBody),
    )
)]
#[allow(dead_code)]
fn retrieve_doc() {}

/// Answers a question in sentences that cite their sources: the route's
/// generation stage (`spec.generation`) over what `/v1/retrieve` would
/// select for the same request. With `Accept: text/event-stream` the
/// answer streams as server-sent events: `text` events (`{"text"}`) as the
/// model writes, then one `answer` event (this response's JSON) or one
/// `error` event (`ErrorBody`).
#[utoipa::path(
    post,
    path = "/v1/answer",
    request_body = RetrieveRequest,
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "The answer, as JSON or as an event stream",
            content((AnswerResponse = "application/json"), (String = "text/event-stream"))),
        (status = 400, description = "The request is malformed or out of bounds", body = ErrorBody),
        (status = 401, description = "A bearer token is required, or it is not valid", body = ErrorBody),
        (status = 408, description = "The body did not arrive within the body timeout", body = ErrorBody),
        (status = 413, description = "The body is too large", body = ErrorBody),
        (status = 415, description = "The body is not sent as application/json", body = ErrorBody),
        (status = 502, description = "The model service refused the request", body = ErrorBody),
        (status = 503, description = "Not ready, too many answers in flight, or the generator is unavailable",
            body = ErrorBody, headers(("Retry-After" = u32, description = "Seconds to wait"))),
        (status = 504, description = "The retrieval took too long", body = ErrorBody),
    )
)]
#[allow(dead_code)]
fn answer_doc() {}

/// The route, index version, model and counts served.
#[utoipa::path(
    get,
    path = "/v1/info",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "What is served", body = Info),
        (status = 401, description = "A bearer token is required, or it is not valid", body = ErrorBody),
        (status = 503, description = "Not ready",
            body = ErrorBody, headers(("Retry-After" = u32, description = "Seconds to wait"))),
    )
)]
#[allow(dead_code)]
fn info_doc() {}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz",
    responses((status = 200, description = "Alive", body = String, content_type = "text/plain")))]
#[allow(dead_code)]
fn healthz_doc() {}

/// Readiness: the index is loaded and the query embedder warm.
#[utoipa::path(get, path = "/readyz",
    responses(
        (status = 200, description = "Ready", body = String, content_type = "text/plain"),
        (status = 503, description = "Still loading",
            body = ErrorBody, headers(("Retry-After" = u32, description = "Seconds to wait"))),
    ))]
#[allow(dead_code)]
fn readyz_doc() {}

/// Prometheus metrics (OpenMetrics text).
#[utoipa::path(get, path = "/metrics",
    responses((status = 200, description = "Metrics", body = String,
        content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8")))]
#[allow(dead_code)]
fn metrics_doc() {}

/// This document.
#[utoipa::path(get, path = "/openapi.json",
    responses((status = 200, description = "The OpenAPI document", body = Object)))]
#[allow(dead_code)]
fn openapi_doc() {}

#[derive(OpenApi)]
#[openapi(
    info(title = "Trellis retrieval service", description = "Sentence search, paragraph display: one RetrievalRoute over one index version."),
    paths(retrieve_doc, answer_doc, info_doc, healthz_doc, readyz_doc, metrics_doc, openapi_doc),
    modifiers(&BearerScheme),
)]
struct ApiDoc;

struct BearerScheme;

impl utoipa::Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The OpenAPI document for a server with these limits, as JSON.
pub fn openapi_json(limits: &Limits, version: &str) -> serde_json::Value {
    let mut doc = ApiDoc::openapi();
    doc.info.version = version.to_string();
    let mut value = serde_json::to_value(&doc).unwrap_or_default();
    let request = "/components/schemas/RetrieveRequest/properties";
    if let Some(query) = value.pointer_mut(&format!("{request}/query")) {
        query["maxLength"] = limits.query_chars.into();
    }
    if let Some(k) = value.pointer_mut(&format!("{request}/k")) {
        k["maximum"] = limits.max_k.into();
    }
    let response = "/components/schemas/RetrieveResponse";
    if let Some(schema) = value.pointer_mut(response) {
        schema["x-maxBytes"] = limits.response_bytes.into();
    }
    let overrides = "/components/schemas/SelectionOverrides/properties";
    for field in ["max_per_document", "spread_per_document"] {
        if let Some(n) = value.pointer_mut(&format!("{overrides}/{field}")) {
            n["maximum"] = limits.max_k.into();
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_date_filters_pattern_is_the_parsers() {
        let doc = openapi_json(&Limits::default(), "test");
        let pattern =
            &doc["components"]["schemas"]["DocumentConditions"]["properties"]["date"]["pattern"];
        assert_eq!(pattern, crate::parse::info::DATE_RANGE_PATTERN, "{doc}");
        let pattern =
            &doc["components"]["schemas"]["ValueConditions"]["properties"]["date"]["pattern"];
        assert_eq!(pattern, crate::parse::info::DATE_RANGE_PATTERN, "{doc}");
    }

    #[test]
    fn overrides_stay_within_bounds() {
        let route = SelectionSpec::default();
        let none = SelectionOverrides::default();
        assert_eq!(none.apply(&route, 50).unwrap(), route);
        let some = SelectionOverrides {
            neighbours: Some(0),
            max_per_document: Some(2),
            mmr_lambda: Some(0.5),
            ..Default::default()
        };
        let applied = some.apply(&route, 50).unwrap();
        assert_eq!(
            (
                applied.neighbours,
                applied.max_per_document,
                applied.mmr_lambda
            ),
            (0, 2, 0.5)
        );
        for bad in [
            SelectionOverrides {
                neighbours: Some(6),
                ..Default::default()
            },
            SelectionOverrides {
                threshold: Some(-0.1),
                ..Default::default()
            },
            SelectionOverrides {
                max_per_document: Some(51),
                ..Default::default()
            },
            SelectionOverrides {
                mmr_lambda: Some(1.5),
                ..Default::default()
            },
            // Rounds to 10.0 as an f32; still above the schema's maximum.
            SelectionOverrides {
                threshold: Some(10.000000000000002),
                ..Default::default()
            },
        ] {
            assert!(bad.apply(&route, 50).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_query_pattern_is_what_the_service_trims() {
        // Found by schemathesis: "\u{85}" matched the schema's `\S` (an
        // ECMAScript class without U+0085) and was refused as empty.
        let doc = openapi_json(&Limits::default(), "test");
        let pattern = doc
            .pointer("/components/schemas/RetrieveRequest/properties/query/pattern")
            .and_then(|p| p.as_str())
            .expect("the query has a pattern");
        // `\s` means another set in every engine; the set is spelt out.
        assert!(
            !pattern.contains("\\s") && !pattern.contains("\\S"),
            "{pattern}"
        );
        let holds = regex::Regex::new(pattern).expect("the pattern is a regex");
        for c in (0..0x3100)
            .chain([0xfeff, 0x1_0000])
            .filter_map(char::from_u32)
        {
            let query = format!(" {c} ");
            assert_eq!(
                holds.is_match(&query),
                !query.trim().is_empty(),
                "U+{:04X}",
                u32::from(c)
            );
        }
    }

    #[test]
    fn null_is_refused_where_the_schema_does_not_allow_it() {
        // Found by schemathesis: serde reads `null` as an absent Option,
        // the schema calls it a violation.
        for body in [
            r#"{"query": "q", "k": null}"#,
            r#"{"query": "q", "selection": {"max_per_document": null}}"#,
            r#"{"query": "q", "selection": {"threshold": null}}"#,
            r#"{"query": "q", "filters": {"documents": null}}"#,
        ] {
            let value: serde_json::Value = serde_json::from_str(body).unwrap();
            assert!(RetrieveRequest::from_json(value).is_err(), "{body}");
        }
        let fine: serde_json::Value =
            serde_json::from_str(r#"{"query": "q", "selection": {"threshold": 0.5}}"#).unwrap();
        let request = RetrieveRequest::from_json(fine).unwrap();
        assert_eq!(request.selection.threshold, Some(0.5));
        assert_eq!(request.k, None);

        let doc = openapi_json(&Limits::default(), "0");
        let k = &doc["components"]["schemas"]["RetrieveRequest"]["properties"]["k"];
        assert_eq!(k["type"], "integer", "{k}");
    }

    #[test]
    fn the_document_states_the_server_limits() {
        let limits = Limits {
            query_chars: 300,
            max_k: 7,
            ..Limits::default()
        };
        let doc = openapi_json(&limits, "1.2.3");
        let props = &doc["components"]["schemas"]["RetrieveRequest"]["properties"];
        assert_eq!(props["query"]["maxLength"], 300);
        assert_eq!(props["k"]["maximum"], 7);
        assert_eq!(doc["info"]["version"], "1.2.3");
        assert!(doc["paths"]["/v1/retrieve"]["post"].is_object());
        assert_eq!(
            doc["components"]["schemas"]["RetrieveRequest"]["additionalProperties"],
            false
        );
    }
}
