//! Where documents come from: local files and directories (`path`), and
//! directories inside PersistentVolumeClaims (`pvc`), which the operator
//! mounts under [`pvc_root`].

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
    corpus_documents_in(spec, base_dir, &pvc_root())
}

/// [`corpus_documents`] with claims mounted under `pvc_root`.
pub fn corpus_documents_in(
    spec: &crate::spec::CorpusSpec,
    base_dir: &Path,
    pvc_root: &Path,
) -> Result<Vec<CorpusDocument>, SourceError> {
    let mut documents = Vec::new();
    for (index, source) in spec.sources.iter().enumerate() {
        let (root, written) = match (&source.path, &source.pvc) {
            (Some(path), None) => {
                let root = if Path::new(path).is_absolute() {
                    PathBuf::from(path)
                } else {
                    base_dir.join(path)
                };
                (root, path.clone())
            }
            (None, Some(pvc)) => {
                let inner = pvc.path.trim_matches('/');
                if pvc.claim_name.is_empty()
                    || pvc.claim_name.contains('/')
                    || inner.split('/').any(|part| part == "..")
                {
                    return Err(SourceError::Invalid {
                        index,
                        reason: format!(
                            "pvc source {:?} path {:?}: a claim name and a path inside the claim are needed",
                            pvc.claim_name, pvc.path
                        ),
                    });
                }
                let root = pvc_root.join(&pvc.claim_name).join(inner);
                // Keys name the claim, not where it happens to be mounted.
                let key = if inner.is_empty() {
                    format!("pvc:{}", pvc.claim_name)
                } else {
                    format!("pvc:{}/{inner}", pvc.claim_name)
                };
                (root, key)
            }
            _ => {
                return Err(SourceError::Invalid {
                    index,
                    reason: "set exactly one source kind (path or pvc)".into(),
                });
            }
        };
        let written = &written;
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

/// Where `pvc` sources' claims are mounted: `$TRELLIS_PVC_ROOT`, else
/// `/var/run/trellis/pvc` (where the operator mounts them in ingest pods).
pub fn pvc_root() -> PathBuf {
    std::env::var_os("TRELLIS_PVC_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/run/trellis/pvc"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pvc_sources_are_read_under_the_claims_mount_with_stable_keys() {
        let mounts = tempfile::tempdir().unwrap();
        let dir = mounts.path().join("contracts/2026");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.md"), "# A\n\nText.").unwrap();
        let spec: crate::spec::CorpusSpec = serde_json::from_value(serde_json::json!({
            "profileRef": {"name": "p"},
            "sources": [{"pvc": {"claimName": "contracts", "path": "/2026/"}}],
        }))
        .unwrap();
        let docs = corpus_documents_in(&spec, Path::new("/nowhere"), mounts.path()).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].key, "pvc:contracts/2026/a.md");
        assert_eq!(docs[0].path, dir.join("a.md"));

        let escape: crate::spec::CorpusSpec = serde_json::from_value(serde_json::json!({
            "profileRef": {"name": "p"},
            "sources": [{"pvc": {"claimName": "contracts", "path": "../other"}}],
        }))
        .unwrap();
        let err = corpus_documents_in(&escape, Path::new("/"), mounts.path()).unwrap_err();
        assert!(err.to_string().contains("source 0"), "{err}");
    }
}
