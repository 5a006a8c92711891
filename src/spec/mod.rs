//! Resource specs: the single configuration schema of Trellis.
//!
//! The CLI reads these from manifests, the ingest job receives them, and the
//! CRDs are generated from them; no second config schema exists.

pub mod bounds;
mod corpus;
mod manifest;
pub mod presets;
mod profile;
mod route;
mod signal;
mod status;
mod template;

pub use corpus::{
    ConfigMapSource, Corpus, CorpusSpec, HttpSource, IngestSpec, MAX_SOURCES, ObjectRef, PvcSource,
    S3Source, SourceKind, SourceSpec, StorageSpec, parse_duration,
};
pub use manifest::{
    API_VERSION, LoadedManifest, Manifest, ManifestError, config_maps, load_path, parse_str,
    select_corpus, select_profile, select_route,
};
pub use profile::{
    ChunkStrategy, ChunkVectors, ChunkingSpec, EmbeddingContext, EmbeddingPooling,
    EmbeddingProvider, EmbeddingSpec, EnrichmentSpec, FalkorDbSpec, FixedChunkingSpec, GraphSpec,
    GraphStoreKind, IndexProfile, IndexProfileSpec, IndexSpec, Neo4jSpec, ParsingSpec,
    Quantization, SecretKeyRef, SemanticChunkingSpec, SemanticLinksSpec, SentenceSpec,
};
pub use route::{
    AnchorMode, AnchorSource, AnchorSpec, ExpansionSource, ExpansionSpec, FusionSpec,
    GenerationProvider, GenerationSpec, ParentLevel, ProvenanceFavours, RerankPassage,
    RerankerKind, RerankerSpec, RetrievalRoute, RetrievalRouteSpec, ScoringSpec, SelectionSpec,
    ServingSpec, UnsupportedPolicy,
};
pub use signal::{About as SignalAbout, PerSignal, ScoringWeights, Signal};
pub use status::{
    Condition, CorpusStatus, IndexProfileStatus, IndexVersionStatus, RetrievalRouteStatus,
    StorageStatus,
};
pub use template::{PodTemplate, TemplateMetadata, TemplateServiceAccount};

/// Adds CEL validation rules (`x-kubernetes-validations`: rule, message)
/// to a type's schema.
fn cel_rules(schema: &mut schemars::Schema, rules: &[(&str, &str)]) {
    for (rule, message) in rules {
        // Only fails when a rule cannot be turned into JSON, which a
        // string pair always can.
        let _ = kube::core::cel::validate(schema, kube::core::Rule::new(*rule).message(*message));
    }
}

/// The CustomResourceDefinitions of the three kinds, generated from the
/// spec and status types above: what `trellis crd` prints and `crds/`
/// holds.
pub fn crds()
-> Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>
{
    use kube::CustomResourceExt;
    let mut crds = vec![IndexProfile::crd(), Corpus::crd(), RetrievalRoute::crd()];
    for crd in &mut crds {
        bounds::apply_to_crd(crd);
        for version in &mut crd.spec.versions {
            if let Some(schema) = version
                .schema
                .as_mut()
                .and_then(|s| s.open_api_v3_schema.as_mut())
            {
                bound_integers(schema);
            }
        }
    }
    crds
}

type SchemaProps =
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;

/// Gives every integer of `schema` a `minimum` and a `maximum` it lacks,
/// from its format: the range of the Rust type that reads it. Without them
/// the API server admits a value this operator cannot deserialise (a
/// `uint32` above 2^32), and one such object would fail every list of its
/// kind. 64-bit integers stop at 2^53 - 1, the largest a JSON reader that
/// parses numbers as doubles still holds exactly.
fn bound_integers(schema: &mut SchemaProps) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
    };
    const EXACT_IN_A_DOUBLE: f64 = 9_007_199_254_740_991.0;
    if schema.type_.as_deref() == Some("integer") {
        let (min, max) = match schema.format.as_deref() {
            Some("uint8") => (0.0, f64::from(u8::MAX)),
            Some("uint16") => (0.0, f64::from(u16::MAX)),
            Some("uint32") => (0.0, f64::from(u32::MAX)),
            Some("int8") => (f64::from(i8::MIN), f64::from(i8::MAX)),
            Some("int16") => (f64::from(i16::MIN), f64::from(i16::MAX)),
            Some("int32") => (f64::from(i32::MIN), f64::from(i32::MAX)),
            Some("uint64" | "uint") => (0.0, EXACT_IN_A_DOUBLE),
            _ => (-EXACT_IN_A_DOUBLE, EXACT_IN_A_DOUBLE),
        };
        schema.minimum.get_or_insert(min);
        schema.maximum.get_or_insert(max);
    }
    for child in schema.properties.iter_mut().flat_map(|p| p.values_mut()) {
        bound_integers(child);
    }
    match schema.items.as_mut() {
        Some(JSONSchemaPropsOrArray::Schema(item)) => bound_integers(item),
        Some(JSONSchemaPropsOrArray::Schemas(items)) => items.iter_mut().for_each(bound_integers),
        None => {}
    }
    if let Some(JSONSchemaPropsOrBool::Schema(values)) = schema.additional_properties.as_mut() {
        bound_integers(values);
    }
    for list in [&mut schema.all_of, &mut schema.any_of, &mut schema.one_of] {
        list.iter_mut().flatten().for_each(bound_integers);
    }
}

/// A CRD as the YAML file `crds/` keeps for it.
pub fn crd_yaml(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> Result<String, serde_yaml::Error> {
    Ok(format!(
        "# Generated by `trellis crd --out crds`; do not edit.\n{}",
        serde_yaml::to_string(crd)?
    ))
}
