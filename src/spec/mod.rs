//! Resource specs: the single configuration schema of Trellis.
//!
//! The CLI reads these from manifests, the ingest job receives them, and the
//! CRDs are generated from them; no second config schema exists.

mod manifest;
mod profile;

pub use manifest::{
    API_VERSION, LoadedManifest, Manifest, ManifestError, load_path, parse_str, select_profile,
};
pub use profile::{
    ChunkStrategy, ChunkingSpec, EnrichmentSpec, FixedChunkingSpec, IndexProfile, IndexProfileSpec,
    ParsingSpec, SentenceSpec,
};
