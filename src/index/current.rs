//! Publishing a version, the `current` pointer, and retention.
//!
//! A version is built under a temporary name ([`super::writer`]) and
//! renamed into place once complete; `current` is then replaced by a
//! rename as well. A crash at any point leaves the previous `current`
//! serving and no half-written version under a version name.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::files::{
    CURRENT, MANIFEST, corpus_dir, describe_type, is_version_name, open_regular, read_manifest,
};
use super::{IndexError, writer};

/// Renames a finished build into place; `Ok(true)` when another writer
/// published the same version first (two ingests of one corpus at once),
/// which is success: a version's name is the hash of its inputs.
pub fn publish(build: &writer::BuildDir, final_dir: &Path) -> Result<bool, IndexError> {
    // Every file's data reaches the disk before the rename makes the
    // version visible: after a power loss (unlike a killed process) a
    // renamed directory can otherwise hold empty or short files.
    sync_tree(build.path())?;
    match std::fs::rename(build.path(), final_dir) {
        Ok(()) => {}
        Err(_) if final_dir.join(MANIFEST).is_file() => {
            tracing::info!(
                version = %final_dir.display(),
                "another writer published this version first; keeping theirs"
            );
            return Ok(true);
        }
        Err(e) => return Err(IndexError::io(final_dir, e)),
    }
    if let Some(root) = final_dir.parent() {
        sync_dir(root)?;
    }
    Ok(false)
}

/// Points `current` at `version` by writing a temporary file and renaming
/// it over the old pointer.
pub fn set_current(root: &Path, version: &str) -> Result<(), IndexError> {
    let tmp = root.join(format!(".{CURRENT}-{}", writer::writer_id()));
    std::fs::write(&tmp, format!("{version}\n")).map_err(|e| IndexError::io(&tmp, e))?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| IndexError::io(&tmp, e))?;
    let current = root.join(CURRENT);
    std::fs::rename(&tmp, &current).map_err(|e| IndexError::io(&current, e))?;
    sync_dir(root)
}

/// The longest `current` file read: a version name and a newline.
const MAX_CURRENT_BYTES: u64 = 128;

/// The version `current` points at: a regular file of the corpus'
/// directory holding one version name ([`is_version_name`]), so that it
/// can only name a version directory of its own corpus. What it holds
/// otherwise is never printed: a `current` made a link to another file
/// would show that file's text in the error.
pub fn current_version(data_dir: &Path, corpus: &str) -> Result<String, IndexError> {
    let root = corpus_dir(data_dir, corpus);
    let current = root.join(CURRENT);
    let (mut file, len) = match open_regular(&current) {
        Ok(opened) => opened,
        Err(IndexError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(IndexError::NotBuilt {
                corpus: corpus.to_string(),
                dir: root,
            });
        }
        Err(e) => return Err(e),
    };
    let not_a_name = || {
        IndexError::Corrupt(format!(
            "{}: does not hold a version name of corpus {corpus:?} ({len} bytes)",
            current.display()
        ))
    };
    if len > MAX_CURRENT_BYTES {
        return Err(not_a_name());
    }
    let mut text = String::new();
    std::io::Read::take(&mut file, MAX_CURRENT_BYTES)
        .read_to_string(&mut text)
        .map_err(|_| not_a_name())?;
    let version = text.trim();
    if !is_version_name(version) {
        return Err(not_a_name());
    }
    Ok(version.to_string())
}

/// The directory of `version` of the corpus under `root`: a directory of
/// its own (not a link to one elsewhere), named as a version is.
pub fn version_dir(root: &Path, version: &str) -> Result<PathBuf, IndexError> {
    if !is_version_name(version) {
        return Err(IndexError::Corrupt(format!(
            "{version:?} is not a version name (16 hex digits)"
        )));
    }
    let dir = root.join(version);
    match std::fs::symlink_metadata(&dir) {
        Ok(metadata) if metadata.is_dir() => Ok(dir),
        Ok(metadata) => Err(IndexError::Corrupt(format!(
            "{}: {}, not a version directory",
            dir.display(),
            describe_type(&metadata.file_type())
        ))),
        Err(e) => Err(IndexError::io(&dir, e)),
    }
}

/// Removes complete versions beyond the newest `keep` (the current one
/// counts, and is always kept) except those in `served`, and leftovers of
/// builds that did not finish; returns the versions it removed.
pub fn retain(root: &Path, keep: u32, served: &[String]) -> Result<Vec<String>, IndexError> {
    for dir in writer::collect_abandoned(root) {
        tracing::info!(dir = %dir.display(), "removed an abandoned build");
    }
    let current = std::fs::read_to_string(root.join(CURRENT)).unwrap_or_default();
    let current = current.trim();
    let mut versions = Vec::new();
    let entries = std::fs::read_dir(root).map_err(|e| IndexError::io(root, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if name.starts_with(".build-") {
            continue;
        }
        if let Ok(manifest) = read_manifest(&path) {
            versions.push((manifest.created, name));
        }
    }
    // The current version is always kept and counts towards `keep`.
    versions.retain(|(_, name)| name != current);
    versions.sort();
    let keep = keep.max(1) as usize - 1;
    let mut removed = Vec::new();
    let excess = versions.len().saturating_sub(keep);
    for (_, name) in versions.into_iter().take(excess) {
        if served.contains(&name) {
            continue;
        }
        let path = root.join(&name);
        std::fs::remove_dir_all(&path).map_err(|e| IndexError::io(&path, e))?;
        removed.push(name);
    }
    Ok(removed)
}

/// Syncs every file under `dir`, then each directory after its entries;
/// the number of entries synced.
fn sync_tree(dir: &Path) -> Result<usize, IndexError> {
    let mut synced = 0;
    for entry in walkdir::WalkDir::new(dir).contents_first(true) {
        let entry = entry.map_err(|e| walk_error(dir, e))?;
        if entry.file_type().is_file() || entry.file_type().is_dir() {
            std::fs::File::open(entry.path())
                .and_then(|f| f.sync_all())
                .map_err(|e| IndexError::io(entry.path(), e))?;
            synced += 1;
        }
    }
    Ok(synced)
}

/// A failed step of a walk under `dir`, naming the entry it failed on.
pub(super) fn walk_error(dir: &Path, e: walkdir::Error) -> IndexError {
    let path = e.path().unwrap_or(dir).to_path_buf();
    IndexError::io(&path, std::io::Error::other(e))
}

fn sync_dir(dir: &Path) -> Result<(), IndexError> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| IndexError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Publishing syncs nested files too (the BM25 index is a directory of
    /// its own), and every directory after its entries.
    #[test]
    fn sync_tree_reaches_every_nested_file_and_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("v");
        std::fs::create_dir_all(root.join("bm25/deeper")).unwrap();
        for file in [
            super::super::files::SENTENCE_VECTORS,
            "bm25/meta.json",
            "bm25/deeper/segment",
        ] {
            std::fs::write(root.join(file), b"data").unwrap();
        }
        assert_eq!(
            sync_tree(&root).unwrap(),
            6,
            "three files, three directories"
        );
        let err = sync_tree(&dir.path().join("missing")).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
