//! Resource specs: the single configuration schema of Trellis.
//!
//! The CLI reads these from manifests, the ingest job receives them, and the
//! CRDs are generated from them; no second config schema exists.

mod corpus;
mod manifest;
mod profile;
mod route;

pub use corpus::{Corpus, CorpusSpec, ObjectRef, SourceSpec, StorageSpec};
pub use manifest::{
    API_VERSION, LoadedManifest, Manifest, ManifestError, load_path, parse_str, select_corpus,
    select_profile, select_route,
};
pub use profile::{
    ChunkStrategy, ChunkingSpec, EmbeddingProvider, EmbeddingSpec, EnrichmentSpec,
    FixedChunkingSpec, GraphSpec, GraphStoreKind, IndexProfile, IndexProfileSpec, IndexSpec,
    ParsingSpec, SemanticLinksSpec, SentenceSpec,
};
pub use route::{
    AnchorMode, AnchorSpec, ExpansionSpec, FusionSpec, RerankerKind, RerankerSpec, RetrievalRoute,
    RetrievalRouteSpec, ScoringSpec, ScoringWeights, SelectionSpec,
};
