//! Where documents come from: local files and directories (`path`),
//! directories inside PersistentVolumeClaims (`pvc`), ConfigMaps
//! (`configMap`), URLs (`http`) and S3 buckets (`s3`).
//!
//! A source is listed first ([`corpus_documents`]), cheaply and without
//! reading any document; each document is read later
//! ([`CorpusDocument::read`]). Between the two, [`revision`] tells from
//! sizes, modification times and ETags whether anything changed since the
//! last ingest, so that an unchanged corpus is not read at all.

mod http;
pub mod network;
mod s3;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::locations;
use crate::parse::Format;
use crate::spec::SourceKind;

/// The files found under a set of paths.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Files to parse, in a stable order (directory walks sorted by name).
    pub files: Vec<PathBuf>,
    /// Files inside walked directories whose type Trellis does not read.
    pub skipped: Vec<PathBuf>,
    /// Symbolic links inside walked directories: not followed, since a
    /// link can lead out of the tree that was named (or around in it).
    pub links: Vec<PathBuf>,
    /// FIFOs, sockets and devices inside walked directories: never read
    /// (a FIFO would block the ingest for ever), and counted.
    pub special: Vec<PathBuf>,
}

/// A corpus' documents, and the entries of its sources' directories that
/// are not read.
#[derive(Debug, Default)]
pub struct Listing {
    pub documents: Vec<CorpusDocument>,
    pub skipped: Vec<SkippedEntry>,
}

/// An entry of a source's directory that is not read, and why: the
/// ingest report counts these so that nothing is left out silently.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SkippedEntry {
    pub key: String,
    pub reason: SkipReason,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SkipReason {
    /// A symbolic link: not followed.
    Symlink,
    /// A file of a type Trellis does not read (by its extension).
    UnknownFormat,
    /// Not a regular file: a FIFO, socket or device.
    NotAFile,
}

impl SkipReason {
    pub fn describe(self) -> &'static str {
        match self {
            SkipReason::Symlink => "symbolic link, not followed",
            SkipReason::UnknownFormat => "not a format Trellis reads",
            SkipReason::NotAFile => "not a regular file (a FIFO, socket or device), not read",
        }
    }
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
            if entry.path_is_symlink() && entry.depth() > 0 {
                found.links.push(entry.into_path());
                continue;
            }
            if entry.file_type().is_dir() {
                continue;
            }
            if !entry.file_type().is_file() {
                found.special.push(entry.into_path());
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

/// Where a corpus' sources are found, besides what the Corpus spec says:
/// the directory relative `path` sources resolve against, where claims,
/// ConfigMaps and Secrets are mounted, and ConfigMaps read from the
/// manifest set.
#[derive(Clone, Debug, Default)]
pub struct SourceContext {
    /// The Corpus manifest's directory.
    pub base_dir: PathBuf,
    /// Where `pvc` sources' claims are mounted (see [`locations::pvc_root`]).
    pub pvc_root: PathBuf,
    /// Where `configMap` sources are mounted when the manifest set does
    /// not hold them (see [`locations::config_map_root`]).
    pub config_map_root: PathBuf,
    /// Where `s3` sources' credential Secrets are mounted (see
    /// [`locations::secret_root`]).
    pub secret_root: PathBuf,
    /// ConfigMaps of the manifest set: name → key → bytes.
    pub config_maps: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
}

impl SourceContext {
    /// Relative paths resolve against `base_dir`; mounts are where the
    /// environment says (the operator's defaults otherwise).
    pub fn new(base_dir: &Path) -> Self {
        Self {
            base_dir: base_dir.to_path_buf(),
            pvc_root: locations::pvc_root(),
            config_map_root: locations::config_map_root(),
            secret_root: locations::secret_root(),
            config_maps: BTreeMap::new(),
        }
    }

    /// With the ConfigMaps of a manifest set (see
    /// [`crate::spec::config_maps`]).
    pub fn with_config_maps(mut self, maps: BTreeMap<String, BTreeMap<String, Vec<u8>>>) -> Self {
        self.config_maps = maps;
        self
    }
}

/// One document of a corpus, ready to read.
#[derive(Clone, Debug)]
pub struct CorpusDocument {
    /// Where the file is, for local sources; for the others a name whose
    /// extension tells the format (a ConfigMap key, an object key, a URL's
    /// path).
    pub path: PathBuf,
    /// The document's stable key: the source path as written in the
    /// manifest joined with the file's path below it (`docs/a/b.md`),
    /// `pvc:<claim>/<path>`, `configmap:<name>/<key>`, the URL, or
    /// `s3://<bucket>/<key>`. Keys do not depend on where the manifest
    /// happens to be checked out, so document ids are the same on every
    /// machine.
    pub key: String,
    /// ACL tags: the source's own, else the corpus default.
    pub acl: Vec<String>,
    /// The source's metadata labels.
    pub metadata: BTreeMap<String, String>,
    origin: Origin,
}

/// Where a document's bytes come from.
#[derive(Clone)]
enum Origin {
    File,
    Inline(Arc<[u8]>),
    Http(Arc<http::HttpFetcher>),
    S3 {
        objects: Arc<s3::S3Objects>,
        location: String,
        /// The listing's ETag and size: the object's revision.
        revision: Option<String>,
    },
}

impl std::fmt::Debug for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Origin::File => "File",
            Origin::Inline(_) => "Inline",
            Origin::Http(_) => "Http",
            Origin::S3 { .. } => "S3",
        })
    }
}

/// A document's bytes, read.
#[derive(Clone, Debug)]
pub struct Fetched {
    pub bytes: Vec<u8>,
    /// A name whose extension tells the format: the document's path, or
    /// for a URL the path it ended at after redirects, with an extension
    /// from its `Content-Type` when the path has none.
    pub name: PathBuf,
}

impl CorpusDocument {
    /// The document's bytes, or why they cannot be had (a reason for the
    /// ingest report; the key is not repeated in it).
    pub fn read(&self) -> Result<Fetched, String> {
        let local = |bytes: Vec<u8>| Fetched {
            bytes,
            name: self.path.clone(),
        };
        match &self.origin {
            Origin::File => std::fs::read(&self.path)
                .map(local)
                .map_err(|e| e.to_string()),
            Origin::Inline(bytes) => Ok(local(bytes.to_vec())),
            Origin::Http(fetcher) => fetcher.get(&self.key),
            Origin::S3 {
                objects, location, ..
            } => objects.get(location).map(local),
        }
    }

    /// A token that changes whenever the document's content may have
    /// changed, got without reading it: size and modification time of a
    /// file, the hash of an inline document, an object's ETag, a URL's
    /// ETag or Last-Modified. `None` when the source cannot tell.
    pub fn revision(&self) -> Option<String> {
        match &self.origin {
            Origin::File => {
                let meta = std::fs::metadata(&self.path).ok()?;
                let modified = meta
                    .modified()
                    .ok()?
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()?;
                Some(format!("{}:{}", meta.len(), modified.as_nanos()))
            }
            Origin::Inline(bytes) => Some(blake3::hash(bytes).to_hex().to_string()),
            Origin::Http(fetcher) => fetcher.revision(&self.key),
            Origin::S3 { revision, .. } => revision.clone(),
        }
    }
}

/// The revision of a whole listing: every document's key, ACL, labels and
/// [`CorpusDocument::revision`], hashed; `None` when any document's
/// revision is unknown. Equal revisions mean the documents did not change
/// (as far as their sources can tell without reading them).
pub fn revision(documents: &[CorpusDocument]) -> Option<String> {
    use rayon::prelude::*;
    let tokens: Vec<Option<String>> = documents.par_iter().map(CorpusDocument::revision).collect();
    let mut hasher = blake3::Hasher::new();
    for (doc, token) in documents.iter().zip(tokens) {
        for part in [
            doc.key.as_str(),
            &doc.acl.join(","),
            &serde_json::to_string(&doc.metadata).unwrap_or_default(),
            &token?,
        ] {
            hasher.update(part.as_bytes());
            hasher.update(&[0]);
        }
    }
    Some(hasher.finalize().to_hex()[..16].to_string())
}

/// Why a corpus' sources could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("source {index}: {reason}")]
    Invalid { index: usize, reason: String },
    #[error("glob {pattern:?}: {reason}")]
    Glob { pattern: String, reason: String },
    #[error(
        "{count} sources: a Corpus may list at most {} (spec.sources)",
        crate::spec::MAX_SOURCES
    )]
    TooMany { count: usize },
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
}

/// Lists a corpus' documents: every source's documents that match the
/// include globs (all when none are given) and no exclude glob, in a
/// stable order.
///
/// Listing never reads a document. A source that cannot be listed at all
/// (a missing directory or ConfigMap, a bucket that refuses the listing)
/// is an error: indexing without it would silently drop its documents. A
/// document that cannot be read later is a failed document of the ingest.
pub fn corpus_documents(
    spec: &crate::spec::CorpusSpec,
    context: &SourceContext,
) -> Result<Listing, SourceError> {
    if spec.sources.len() > crate::spec::MAX_SOURCES {
        return Err(SourceError::TooMany {
            count: spec.sources.len(),
        });
    }
    let mut documents = Vec::new();
    let mut skipped = Vec::new();
    for (index, source) in spec.sources.iter().enumerate() {
        let invalid = |reason: String| SourceError::Invalid { index, reason };
        let include = globs(spec.include.iter().chain(&source.include))?;
        let exclude = globs(spec.exclude.iter().chain(&source.exclude))?;
        let wanted = |relative: &Path| {
            include.as_ref().is_none_or(|g| g.is_match(relative))
                && !exclude.as_ref().is_some_and(|g| g.is_match(relative))
        };
        let mut push = |path: PathBuf, key: String, origin: Origin| {
            documents.push(CorpusDocument {
                path,
                key,
                acl: source.acl.clone().unwrap_or_else(|| spec.acl.clone()),
                metadata: source.metadata.clone(),
                origin,
            })
        };
        match source.kind().map_err(invalid)? {
            SourceKind::Path(path) => {
                let root = if Path::new(path).is_absolute() {
                    PathBuf::from(path)
                } else {
                    context.base_dir.join(path)
                };
                for (file, key) in walk(&root, path, &wanted, &mut skipped)? {
                    push(file, key, Origin::File);
                }
            }
            SourceKind::Pvc(pvc) => {
                let inner = pvc.path.trim_matches('/');
                if !is_plain_name(&pvc.claim_name) || inner.split('/').any(|part| part == "..") {
                    return Err(invalid(format!(
                        "pvc source {:?} path {:?}: a claim name and a path inside the claim are needed",
                        pvc.claim_name, pvc.path
                    )));
                }
                let claim = context.pvc_root.join(&pvc.claim_name);
                // The claim's own directory may not be a link: one named
                // like a claim but pointing elsewhere (`claim3 → /etc`)
                // would make everything under its target "inside" it.
                if std::fs::symlink_metadata(&claim).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(invalid(format!(
                        "pvc source {:?}: {} is a symbolic link, not a mounted claim; \
                         it is not followed",
                        pvc.claim_name,
                        claim.display()
                    )));
                }
                let root = confined(&claim, &claim.join(inner)).map_err(invalid)?;
                // Keys name the claim, not where it happens to be mounted.
                let written = if inner.is_empty() {
                    format!("pvc:{}", pvc.claim_name)
                } else {
                    format!("pvc:{}/{inner}", pvc.claim_name)
                };
                for (file, key) in walk(&root, &written, &wanted, &mut skipped)? {
                    push(file, key, Origin::File);
                }
            }
            SourceKind::ConfigMap(config_map) => {
                let name = &config_map.name;
                if !is_plain_name(name) {
                    return Err(invalid(format!("configMap name {name:?} is not a name")));
                }
                for (key, origin) in config_map_files(context, name).map_err(invalid)? {
                    if wanted(Path::new(&key)) {
                        push(
                            PathBuf::from(&key),
                            format!("configmap:{name}/{key}"),
                            origin,
                        );
                    }
                }
            }
            SourceKind::Http(spec) => {
                let fetcher = Arc::new(http::HttpFetcher::new(spec).map_err(invalid)?);
                for url in &spec.urls {
                    let path = http::url_path(url);
                    if wanted(Path::new(&path)) {
                        push(
                            PathBuf::from(path),
                            url.clone(),
                            Origin::Http(fetcher.clone()),
                        );
                    }
                }
            }
            SourceKind::S3(spec) => {
                let objects =
                    Arc::new(s3::S3Objects::new(spec, &context.secret_root).map_err(invalid)?);
                for object in objects.list().map_err(invalid)? {
                    let relative = object.key.strip_prefix(&spec.prefix).unwrap_or(&object.key);
                    let relative = relative.trim_start_matches('/');
                    // As in a directory walk: only what Trellis reads.
                    if Format::from_extension(Path::new(relative)).is_none()
                        || !wanted(Path::new(relative))
                    {
                        continue;
                    }
                    push(
                        PathBuf::from(&object.key),
                        format!("s3://{}/{}", spec.bucket, object.key),
                        Origin::S3 {
                            objects: objects.clone(),
                            location: object.key.clone(),
                            revision: object.revision.clone(),
                        },
                    );
                }
            }
        }
    }
    Ok(Listing { documents, skipped })
}

/// A document key as text logs and reports show it: control characters
/// (a newline in a file name) escaped, so that a key cannot forge a line.
pub struct Printable<'k>(pub &'k str);

impl std::fmt::Display for Printable<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write as _;
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                f.write_char(c)?;
            }
        }
        Ok(())
    }
}

/// `path` with its symlinks resolved, when that is still inside `claim`:
/// the `..` check on the written path cannot see a symlink inside the
/// claim that points out of it. A path that does not exist is left for
/// the walk to report.
fn confined(claim: &Path, path: &Path) -> Result<PathBuf, String> {
    let (Ok(claim_real), Ok(real)) = (claim.canonicalize(), path.canonicalize()) else {
        return Ok(path.to_path_buf());
    };
    if real.starts_with(&claim_real) {
        Ok(real)
    } else {
        Err(format!(
            "{} resolves to {}, outside its claim (a symlink); only paths inside the claim are read",
            path.display(),
            real.display()
        ))
    }
}

/// The files under `root` that `wanted` keeps (by their path relative to
/// `root`), with their keys: `written` joined with that relative path.
fn walk(
    root: &Path,
    written: &str,
    wanted: &dyn Fn(&Path) -> bool,
    skipped: &mut Vec<SkippedEntry>,
) -> Result<Vec<(PathBuf, String)>, SourceError> {
    let found = discover(std::slice::from_ref(&root.to_path_buf()))?;
    let key = |path: &Path| {
        let relative = path.strip_prefix(root).unwrap_or(path);
        let relative_text = relative.to_string_lossy().replace('\\', "/");
        if relative_text.is_empty() {
            written.trim_end_matches('/').to_string()
        } else {
            format!("{}/{relative_text}", written.trim_end_matches('/'))
        }
    };
    let relative = |path: &Path| path.strip_prefix(root).unwrap_or(path).to_path_buf();
    for (paths, reason) in [
        (&found.links, SkipReason::Symlink),
        (&found.skipped, SkipReason::UnknownFormat),
        (&found.special, SkipReason::NotAFile),
    ] {
        for path in paths.iter().filter(|p| wanted(&relative(p))) {
            skipped.push(SkippedEntry {
                key: key(path),
                reason,
            });
        }
    }
    Ok(found
        .files
        .into_iter()
        .filter(|path| wanted(&relative(path)))
        .map(|path| {
            let key = key(&path);
            (path, key)
        })
        .collect())
}

/// A Kubernetes object name: no path separators, not `.` or `..`.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('/') && name != "." && name != ".."
}

/// A ConfigMap's documents, key by key: from the manifest set, else from
/// where it is mounted. Mounted ConfigMaps hold `..data` and timestamped
/// directories beside the keys; only the keys are read.
fn config_map_files(context: &SourceContext, name: &str) -> Result<Vec<(String, Origin)>, String> {
    if let Some(files) = context.config_maps.get(name) {
        return Ok(files
            .iter()
            .map(|(key, bytes)| (key.clone(), Origin::Inline(Arc::from(bytes.as_slice()))))
            .collect());
    }
    let dir = context.config_map_root.join(name);
    let entries = std::fs::read_dir(&dir).map_err(|e| {
        format!(
            "ConfigMap {name:?} is neither in the manifests nor mounted at {}: {e}",
            dir.display()
        )
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let key = entry.file_name().to_string_lossy().to_string();
        if key.starts_with('.') || !entry.path().is_file() {
            continue;
        }
        let bytes =
            std::fs::read(entry.path()).map_err(|e| format!("{}: {e}", entry.path().display()))?;
        files.push((key, Origin::Inline(Arc::from(bytes))));
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
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
        let context = SourceContext {
            pvc_root: mounts.path().to_path_buf(),
            ..SourceContext::new(Path::new("/nowhere"))
        };
        let docs = corpus_documents(&spec, &context).unwrap().documents;
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].key, "pvc:contracts/2026/a.md");
        assert_eq!(docs[0].path, dir.join("a.md"));

        let escape: crate::spec::CorpusSpec = serde_json::from_value(serde_json::json!({
            "profileRef": {"name": "p"},
            "sources": [{"pvc": {"claimName": "contracts", "path": "../other"}}],
        }))
        .unwrap();
        let err = corpus_documents(&escape, &context).unwrap_err();
        assert!(err.to_string().contains("source 0"), "{err}");

        // A symlink inside the claim that points out of it is not followed.
        let outside = mounts.path().join("secrets");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("key.md"), "# Key\n\nsk-live").unwrap();
        std::os::unix::fs::symlink(&outside, mounts.path().join("contracts/link")).unwrap();
        let linked: crate::spec::CorpusSpec = serde_json::from_value(serde_json::json!({
            "profileRef": {"name": "p"},
            "sources": [{"pvc": {"claimName": "contracts", "path": "link"}}],
        }))
        .unwrap();
        let err = corpus_documents(&linked, &context).unwrap_err().to_string();
        assert!(err.contains("outside its claim"), "{err}");

        // A claim's directory that is itself a link (`claim3 → /etc`) is
        // not a mounted claim, and is not followed.
        std::os::unix::fs::symlink("/etc", mounts.path().join("claim3")).unwrap();
        let etc: crate::spec::CorpusSpec = serde_json::from_value(serde_json::json!({
            "profileRef": {"name": "p"},
            "sources": [{"pvc": {"claimName": "claim3", "path": "/"}}],
        }))
        .unwrap();
        let err = corpus_documents(&etc, &context).unwrap_err().to_string();
        assert!(
            err.contains("is a symbolic link, not a mounted claim"),
            "{err}"
        );
    }

    /// A symbolic link in a walked directory is not followed, and is
    /// counted with its reason beside files of types Trellis does not read.
    #[test]
    fn links_and_unknown_files_are_listed_as_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let docs = dir.path().join("docs");
        std::fs::create_dir_all(docs.join("sub")).unwrap();
        std::fs::write(docs.join("a.md"), "# A\n\nText.").unwrap();
        std::fs::write(docs.join("sub/photo.png"), b"\x89PNG").unwrap();
        std::os::unix::fs::symlink(docs.join("a.md"), docs.join("alias.md")).unwrap();
        std::os::unix::fs::symlink("/etc", docs.join("sub/etc")).unwrap();
        nix::unistd::mkfifo(&docs.join("pipe.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let spec: crate::spec::CorpusSpec = serde_json::from_value(serde_json::json!({
            "profileRef": {"name": "p"},
            "sources": [{"path": "docs"}],
        }))
        .unwrap();
        let listing = corpus_documents(&spec, &SourceContext::new(dir.path())).unwrap();
        let keys: Vec<_> = listing.documents.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["docs/a.md"]);
        let skipped: Vec<_> = listing
            .skipped
            .iter()
            .map(|s| (s.key.as_str(), s.reason))
            .collect();
        assert_eq!(
            skipped,
            [
                ("docs/alias.md", SkipReason::Symlink),
                ("docs/sub/etc", SkipReason::Symlink),
                ("docs/sub/photo.png", SkipReason::UnknownFormat),
                ("docs/pipe.md", SkipReason::NotAFile),
            ]
        );
    }

    #[test]
    fn keys_cannot_forge_log_lines() {
        let key = "pvc:docs/evil\nERROR forged line\r.md";
        let shown = Printable(key).to_string();
        assert!(!shown.contains('\n') && !shown.contains('\r'), "{shown}");
        assert_eq!(shown, "pvc:docs/evil\\nERROR forged line\\r.md");
        assert_eq!(Printable("pvc:a/b é.md").to_string(), "pvc:a/b é.md");
    }

    #[test]
    fn more_sources_than_the_crd_allows_are_refused() {
        // The CRD bounds `sources` (the API server prices CEL rules by
        // it); the embedded mode applies the same bound.
        let sources: Vec<_> = (0..=crate::spec::MAX_SOURCES)
            .map(|i| serde_json::json!({"path": format!("d{i}")}))
            .collect();
        let spec: crate::spec::CorpusSpec = serde_json::from_value(serde_json::json!({
            "profileRef": {"name": "p"},
            "sources": sources,
        }))
        .unwrap();
        let err = corpus_documents(&spec, &SourceContext::new(Path::new("/nowhere"))).unwrap_err();
        assert!(err.to_string().contains("at most 100"), "{err}");
    }
}
