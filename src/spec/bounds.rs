//! Ranges of the numeric spec fields the engine can honour, in one table
//! that both the command line and the API server apply.
//!
//! A field's type bounds it only by its width: `anchors.candidates` is a
//! `u32`, yet 4,294,967,295 candidates is a 34 GB allocation on the first
//! query, and hnsw_rs ends the process on more than 256 links per node.
//! Each such field gets a range here with the reason for it. The loader
//! checks manifests against [`BOUNDS`] ([`check`]), and [`super::crds`]
//! writes the same ranges into the CRDs' schemas as `minimum` and
//! `maximum` ([`apply_to_crd`]), so a manifest the CLI refuses is one the
//! API server refuses too.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};

/// One field's range.
#[derive(Debug)]
pub struct Bound {
    /// The resource kind whose spec holds the field.
    pub kind: &'static str,
    /// The field's path under `spec`.
    pub path: &'static [&'static str],
    pub min: f64,
    /// The minimum itself is out of range (`(0, 1]`).
    pub exclusive_min: bool,
    pub max: f64,
    /// Why the range is what it is, for the error message.
    pub why: &'static str,
}

const fn bound(
    kind: &'static str,
    path: &'static [&'static str],
    min: f64,
    max: f64,
    why: &'static str,
) -> Bound {
    Bound {
        kind,
        path,
        min,
        exclusive_min: false,
        max,
        why,
    }
}

/// Most results one retrieval returns: `selection.topK` and the command
/// line's `--k`.
pub const MAX_TOP_K: u32 = 1_000;

/// Every bounded field. Defaults lie inside (a test checks).
pub const BOUNDS: &[Bound] = &[
    bound(
        "IndexProfile",
        &["index", "hnswM"],
        2.0,
        256.0,
        "hnsw_rs keeps at most 256 links per node",
    ),
    bound(
        "IndexProfile",
        &["index", "hnswEfConstruction"],
        1.0,
        4_096.0,
        "the build's candidate list; past a few hundred it buys no recall, only time and memory",
    ),
    Bound {
        exclusive_min: true,
        ..bound(
            "IndexProfile",
            &["semanticLinks", "threshold"],
            0.0,
            1.0,
            "a cosine similarity",
        )
    },
    bound(
        "IndexProfile",
        &["semanticLinks", "maxPerSentence"],
        0.0,
        10.0,
        "links are a sparse overlay; more per sentence drowns the skeleton",
    ),
    bound(
        "IndexProfile",
        &["parsing", "maxNestingDepth"],
        1.0,
        4096.0,
        "the PDF reader recurses once per level; deeper would let a document exhaust its stack",
    ),
    bound(
        "IndexProfile",
        &["chunking", "semantic", "breakpointPercentile"],
        1.0,
        99.0,
        "a percentile of the document's sentence pairs; at 0 or 100 every or no pair is a shift",
    ),
    bound(
        "IndexProfile",
        &["sentences", "maxChars"],
        16.0,
        1_000_000.0,
        "a sentence is one search result's text; a bound any longer lets one line fill a response",
    ),
    bound(
        "IndexProfile",
        &["parsing", "maxSentencesPerDocument"],
        1.0,
        10_000_000.0,
        "every sentence of a document is held in memory while it is processed",
    ),
    bound(
        "IndexProfile",
        &["embedding", "batchTokens"],
        1.0,
        262_144.0,
        "one batch is held in memory as activations",
    ),
    bound(
        "IndexProfile",
        &["graph", "batchSize"],
        1.0,
        100_000.0,
        "one batch is one transaction on the graph store",
    ),
    bound(
        "RetrievalRoute",
        &["anchors", "candidates"],
        1.0,
        10_000.0,
        "each query allocates and scores this many candidates per list",
    ),
    bound(
        "RetrievalRoute",
        &["anchors", "chunks"],
        0.0,
        1_000.0,
        "every indexed sentence of each chunk becomes a candidate scored per query",
    ),
    bound(
        "RetrievalRoute",
        &["anchors", "efSearch"],
        1.0,
        10_000.0,
        "the HNSW search list, allocated per query",
    ),
    bound(
        "RetrievalRoute",
        &["anchors", "paragraphMix"],
        0.0,
        1.0,
        "a share",
    ),
    bound(
        "RetrievalRoute",
        &["expansion", "anchors"],
        0.0,
        1_000.0,
        "each expanded anchor adds its paragraph, window and links",
    ),
    bound(
        "RetrievalRoute",
        &["expansion", "window"],
        0.0,
        50.0,
        "sentences before and after each anchor",
    ),
    bound(
        "RetrievalRoute",
        &["reranker", "topN"],
        1.0,
        1_000.0,
        "each reranked candidate is a cross-encoder pass or a passage sent",
    ),
    bound(
        "RetrievalRoute",
        &["reranker", "budgetMs"],
        1.0,
        600_000.0,
        "a query waits for its reranker up to this long",
    ),
    bound(
        "RetrievalRoute",
        &["reranker", "maxLength"],
        8.0,
        8_192.0,
        "attention over a pair grows with the square of its length",
    ),
    bound(
        "RetrievalRoute",
        &["reranker", "batchTokens"],
        1.0,
        1_048_576.0,
        "one encoder batch's activations are allocated at once",
    ),
    bound(
        "RetrievalRoute",
        &["generation", "maxContextTokens"],
        256.0,
        1_048_576.0,
        "the prompt must hold the instructions, a source and the question; past a million \
         tokens no model reads it",
    ),
    bound(
        "RetrievalRoute",
        &["generation", "maxAnswerTokens"],
        1.0,
        65_536.0,
        "tokens the model writes, held in memory and streamed",
    ),
    bound(
        "RetrievalRoute",
        &["generation", "temperature"],
        0.0,
        2.0,
        "the range OpenAI's and Anthropic's APIs accept",
    ),
    bound(
        "RetrievalRoute",
        &["generation", "timeoutSeconds"],
        1.0,
        3_600.0,
        "a request waits for its answer up to this long",
    ),
    bound(
        "RetrievalRoute",
        &["generation", "maxRetries"],
        0.0,
        10.0,
        "each retry may wait up to 30 seconds",
    ),
    bound(
        "RetrievalRoute",
        &["generation", "supportSimilarity"],
        0.0,
        1.0,
        "a cosine similarity",
    ),
    bound(
        "RetrievalRoute",
        &["selection", "topK"],
        1.0,
        MAX_TOP_K as f64,
        "results are built and returned whole",
    ),
    bound(
        "RetrievalRoute",
        &["selection", "neighbours"],
        0.0,
        50.0,
        "sentences shown around each result",
    ),
    bound(
        "RetrievalRoute",
        &["selection", "mmrLambda"],
        0.0,
        1.0,
        "a trade-off between relevance (1) and diversity (0)",
    ),
];

impl Bound {
    /// The dotted path, `spec.index.hnswM`.
    pub fn field(&self) -> String {
        format!("spec.{}", self.path.join("."))
    }

    fn holds(&self, value: f64) -> bool {
        let above = if self.exclusive_min {
            value > self.min
        } else {
            value >= self.min
        };
        above && value <= self.max
    }

    fn range(&self) -> String {
        let open = if self.exclusive_min { "(" } else { "[" };
        format!("{open}{}, {}]", self.min, self.max)
    }
}

/// The first field of `value` (a manifest of `kind`) out of its range, as
/// a message naming the field, the value, the range and the reason.
pub fn check(kind: &str, value: &serde_yaml::Value) -> Result<(), String> {
    for bound in BOUNDS.iter().filter(|b| b.kind == kind) {
        let mut at = value.get("spec");
        for key in bound.path {
            at = at.and_then(|v| v.get(*key));
        }
        let Some(number) = at.and_then(serde_yaml::Value::as_f64) else {
            // Absent (the default applies) or not a number (the typed
            // parse that follows names the type error).
            continue;
        };
        if !bound.holds(number) {
            return Err(format!(
                "{} is {number}; it must be in {} ({})",
                bound.field(),
                bound.range(),
                bound.why
            ));
        }
    }
    Ok(())
}

/// Writes every bound of `crd`'s kind into its schemas as `minimum`,
/// `maximum` and `exclusiveMinimum`.
pub fn apply_to_crd(crd: &mut CustomResourceDefinition) {
    let kind = crd.spec.names.kind.clone();
    for version in &mut crd.spec.versions {
        let Some(root) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        for bound in BOUNDS.iter().filter(|b| b.kind == kind) {
            if let Some(field) = property(root, bound.path) {
                field.minimum = Some(bound.min);
                field.exclusive_minimum = bound.exclusive_min.then_some(true);
                field.maximum = Some(bound.max);
            }
        }
    }
}

/// The schema of `spec.<path>`.
fn property<'a>(root: &'a mut JSONSchemaProps, path: &[&str]) -> Option<&'a mut JSONSchemaProps> {
    let mut at = root.properties.as_mut()?.get_mut("spec")?;
    for key in path {
        at = at.properties.as_mut()?.get_mut(*key)?;
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bound_names_a_field_of_its_crd_and_holds_the_default() {
        for mut crd in super::super::crds() {
            let kind = crd.spec.names.kind.clone();
            let defaults = match kind.as_str() {
                "IndexProfile" => serde_yaml::to_value(super::super::IndexProfileSpec::default()),
                "RetrievalRoute" => {
                    serde_yaml::to_value(super::super::RetrievalRouteSpec::for_corpus("c"))
                }
                _ => continue,
            }
            .unwrap();
            let mut manifest = serde_yaml::Mapping::new();
            manifest.insert("spec".into(), defaults);
            let manifest = serde_yaml::Value::Mapping(manifest);
            check(&kind, &manifest).unwrap();
            let root = crd.spec.versions[0]
                .schema
                .as_mut()
                .and_then(|s| s.open_api_v3_schema.as_mut())
                .unwrap();
            for bound in BOUNDS.iter().filter(|b| b.kind == kind) {
                let field = property(root, bound.path)
                    .unwrap_or_else(|| panic!("{kind} has no {}", bound.field()));
                assert_eq!(field.maximum, Some(bound.max), "{}", bound.field());
            }
        }
    }

    #[test]
    fn a_value_out_of_range_is_named_with_its_range_and_reason() {
        let manifest: serde_yaml::Value =
            serde_yaml::from_str("spec: {anchors: {candidates: 4294967295}}").unwrap();
        let err = check("RetrievalRoute", &manifest).unwrap_err();
        assert_eq!(
            err,
            "spec.anchors.candidates is 4294967295; it must be in [1, 10000] \
             (each query allocates and scores this many candidates per list)"
        );
        let manifest: serde_yaml::Value =
            serde_yaml::from_str("spec: {semanticLinks: {threshold: 0}}").unwrap();
        assert!(
            check("IndexProfile", &manifest)
                .unwrap_err()
                .contains("(0, 1]")
        );
    }
}
