//! Where Trellis finds what no manifest names: the model cache, the data
//! directory, and the roots under which sources' claims and ConfigMaps and
//! credential Secrets are mounted.
//!
//! Each is an environment variable with a default. On a workstation the
//! defaults suit; in a cluster the operator mounts volumes at the mount
//! roots below and sets the variables in the pods it makes, so that a
//! template's own settings cannot move them.

use std::path::{Path, PathBuf};

/// Overrides the model cache ([`model_cache_dir`]).
pub const MODEL_DIR_ENV: &str = "TRELLIS_MODEL_DIR";
/// Overrides the data directory ([`data_dir`]).
pub const DATA_DIR_ENV: &str = "TRELLIS_DATA_DIR";
/// Overrides where `pvc` sources' claims are mounted ([`pvc_root`]).
pub const PVC_ROOT_ENV: &str = "TRELLIS_PVC_ROOT";
/// Overrides where `configMap` sources are mounted ([`config_map_root`]).
pub const CONFIG_MAP_ROOT_ENV: &str = "TRELLIS_CONFIGMAP_ROOT";
/// Overrides where credential Secrets are mounted ([`secret_root`]).
pub const SECRET_ROOT_ENV: &str = "TRELLIS_SECRET_ROOT";

/// Source claims, one directory per claim name.
pub const PVC_ROOT: &str = "/var/run/trellis/pvc";
/// Source ConfigMaps, one directory per ConfigMap name.
pub const CONFIG_MAP_ROOT: &str = "/var/run/trellis/configmaps";
/// Credential Secrets (sources', embedding services', graph stores'), one
/// directory per Secret name.
pub const SECRET_ROOT: &str = "/var/run/trellis/secrets";

/// The model cache directory: `$TRELLIS_MODEL_DIR`, else
/// `$XDG_CACHE_HOME/trellis/models`, else `~/.cache/trellis/models`.
pub fn model_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(MODEL_DIR_ENV) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("trellis").join("models")
}

/// The data directory (index versions, the embedding cache): `flag` (the
/// command line's `--data-dir`), else `$TRELLIS_DATA_DIR`, else
/// `./.trellis`.
pub fn data_dir(flag: Option<&Path>) -> PathBuf {
    flag.map(Path::to_path_buf)
        .or_else(|| std::env::var_os(DATA_DIR_ENV).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(".trellis"))
}

/// Where `pvc` sources' claims are mounted: `$TRELLIS_PVC_ROOT`, else
/// [`PVC_ROOT`].
pub fn pvc_root() -> PathBuf {
    env_root(PVC_ROOT_ENV, PVC_ROOT)
}

/// Where `configMap` sources are mounted: `$TRELLIS_CONFIGMAP_ROOT`, else
/// [`CONFIG_MAP_ROOT`].
pub fn config_map_root() -> PathBuf {
    env_root(CONFIG_MAP_ROOT_ENV, CONFIG_MAP_ROOT)
}

/// Where credential Secrets are mounted: `$TRELLIS_SECRET_ROOT`, else
/// [`SECRET_ROOT`].
pub fn secret_root() -> PathBuf {
    env_root(SECRET_ROOT_ENV, SECRET_ROOT)
}

fn env_root(variable: &str, default: &str) -> PathBuf {
    std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default))
}
