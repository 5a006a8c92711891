//! Where documents come from. For now: local files and directories.

use std::path::{Path, PathBuf};

use crate::parse::Format;

/// The files found under a set of paths.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Files to parse, in a stable order (directory walks sorted by name).
    pub files: Vec<PathBuf>,
    /// Files inside walked directories whose type Trellis does not read.
    pub skipped: Vec<PathBuf>,
}

/// A path given on the command line that does not exist or cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct DiscoveryError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Expands files and directories into the documents to read. Files named
/// explicitly are always returned (an unknown type then fails at parse time
/// with a clear error); files met while walking a directory are kept only
/// when their extension names a known format, and hidden files are ignored.
pub fn discover(paths: &[PathBuf]) -> Result<Discovery, DiscoveryError> {
    let mut found = Discovery::default();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|source| DiscoveryError {
            path: path.clone(),
            source,
        })?;
        if !meta.is_dir() {
            found.files.push(path.clone());
            continue;
        }
        let walker = walkdir::WalkDir::new(path)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !is_hidden(e.path()));
        for entry in walker {
            let entry = entry.map_err(|e| DiscoveryError {
                path: e.path().unwrap_or(path).to_path_buf(),
                source: e.into(),
            })?;
            if !entry.file_type().is_file() {
                continue;
            }
            if Format::from_extension(entry.path()).is_some() {
                found.files.push(entry.into_path());
            } else {
                found.skipped.push(entry.into_path());
            }
        }
    }
    Ok(found)
}

fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}
