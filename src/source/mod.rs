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

/// One document of a corpus, ready to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorpusDocument {
    /// Where the file is.
    pub path: PathBuf,
    /// The document's stable key: the source path as written in the
    /// manifest joined with the file's path below it (`docs/a/b.md`). Keys
    /// do not depend on where the manifest happens to be checked out, so
    /// document ids are the same on every machine.
    pub key: String,
    /// ACL tags: the source's own, else the corpus default.
    pub acl: Vec<String>,
    /// The source's metadata labels.
    pub metadata: std::collections::BTreeMap<String, String>,
}

/// Why a corpus' sources could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("source {index}: {reason}")]
    Invalid { index: usize, reason: String },
    #[error("glob {pattern:?}: {reason}")]
    Glob { pattern: String, reason: String },
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
}

/// Lists a corpus' documents: every source's files that match the include
/// globs (all when none are given) and no exclude glob, in a stable order.
/// Relative source paths resolve against `base_dir`, the manifest's
/// directory.
pub fn corpus_documents(
    spec: &crate::spec::CorpusSpec,
    base_dir: &Path,
) -> Result<Vec<CorpusDocument>, SourceError> {
    let mut documents = Vec::new();
    for (index, source) in spec.sources.iter().enumerate() {
        let Some(written) = &source.path else {
            return Err(SourceError::Invalid {
                index,
                reason: "no source kind set (this build reads `path` sources)".into(),
            });
        };
        let root = if Path::new(written).is_absolute() {
            PathBuf::from(written)
        } else {
            base_dir.join(written)
        };
        let include = globs(spec.include.iter().chain(&source.include))?;
        let exclude = globs(spec.exclude.iter().chain(&source.exclude))?;
        let found = discover(std::slice::from_ref(&root))?;
        for path in found.files {
            let relative = path.strip_prefix(&root).unwrap_or(&path);
            let relative_text = relative.to_string_lossy().replace('\\', "/");
            let included = include.as_ref().is_none_or(|g| g.is_match(relative));
            let excluded = exclude.as_ref().is_some_and(|g| g.is_match(relative));
            if !included || excluded {
                continue;
            }
            let key = if relative_text.is_empty() {
                written.trim_end_matches('/').to_string()
            } else {
                format!("{}/{relative_text}", written.trim_end_matches('/'))
            };
            documents.push(CorpusDocument {
                path,
                key,
                acl: source.acl.clone().unwrap_or_else(|| spec.acl.clone()),
                metadata: source.metadata.clone(),
            });
        }
    }
    Ok(documents)
}

fn globs<'a>(
    patterns: impl Iterator<Item = &'a String>,
) -> Result<Option<globset::GlobSet>, SourceError> {
    let mut builder = globset::GlobSetBuilder::new();
    let mut any = false;
    for pattern in patterns {
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(false)
            .build()
            .map_err(|e| SourceError::Glob {
                pattern: pattern.clone(),
                reason: e.to_string(),
            })?;
        builder.add(glob);
        any = true;
    }
    if !any {
        return Ok(None);
    }
    builder.build().map(Some).map_err(|e| SourceError::Glob {
        pattern: String::new(),
        reason: e.to_string(),
    })
}
