//! Per-file checksums of a version: `checksums.json`, written last at
//! build time and checked first when the version opens.
//!
//! The readers of a version's files (serde, tantivy, hnsw_rs) trust what
//! they read: a truncated HNSW graph can end the process inside hnsw_rs,
//! inconsistent skeleton ranges can panic, flipped bits in `vectors.f32`
//! serve wrong vectors silently. A BLAKE3 hash of every file, checked
//! before any of them is parsed, turns each such damage into one error
//! naming the file. The manifest is covered as well and records that the
//! version has checksums (`checksummed`), so that neither losing
//! `checksums.json` nor editing the manifest goes unnoticed; versions
//! built before checksums existed open unchecked.

use std::collections::BTreeMap;
use std::path::Path;

use super::IndexError;
use super::files::CHECKSUMS as CHECKSUMS_FILE;

/// Files no checksum covers: tantivy's lock files, which are empty and
/// may be created by any reader.
fn excluded(relative: &str) -> bool {
    relative == CHECKSUMS_FILE
        || Path::new(relative)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(".tantivy-") && n.ends_with(".lock"))
}

/// Every covered file under `dir` by its path relative to `dir` (with
/// `/`), with the hex BLAKE3 hash of its bytes.
fn hash_tree(dir: &Path) -> Result<BTreeMap<String, String>, IndexError> {
    let mut hashes = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(|e| super::current::walk_error(dir, e))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(dir)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .replace('\\', "/");
        if excluded(&relative) {
            continue;
        }
        hashes.insert(relative, hash_file(entry.path())?);
    }
    Ok(hashes)
}

fn hash_file(path: &Path) -> Result<String, IndexError> {
    let file = std::fs::File::open(path).map_err(|e| IndexError::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    hasher
        .update_reader(file)
        .map_err(|e| IndexError::io(path, e))?;
    Ok(hasher.finalize().to_hex().to_string())
}

/// Writes `checksums.json` for every file of the finished build `dir`.
pub fn write(dir: &Path) -> Result<(), IndexError> {
    let hashes = hash_tree(dir)?;
    super::files::write_json(&dir.join(CHECKSUMS_FILE), &hashes)
}

/// Checks every file `checksums.json` names against its hash. `Ok(false)`
/// when the version has no checksums file (the caller decides whether it
/// should have had one).
pub fn verify(dir: &Path) -> Result<bool, IndexError> {
    verify_listed(dir, None)
}

/// Checks the files `names` against the hashes `checksums.json` holds for
/// them: each must be listed. For a version opened without some of its
/// files, which need not be present. `Ok(false)` as for [`verify`].
pub fn verify_files(dir: &Path, names: &[&str]) -> Result<bool, IndexError> {
    verify_listed(dir, Some(names))
}

fn verify_listed(dir: &Path, only: Option<&[&str]>) -> Result<bool, IndexError> {
    let path = dir.join(CHECKSUMS_FILE);
    if !path.exists() {
        return Ok(false);
    }
    let expected: BTreeMap<String, String> = super::files::read_json(&path)?;
    if expected.is_empty() {
        return Err(IndexError::Corrupt(format!(
            "{}: names no file",
            path.display()
        )));
    }
    if let Some(names) = only
        && let Some(unlisted) = names.iter().find(|n| !expected.contains_key(**n))
    {
        return Err(IndexError::Corrupt(format!(
            "{}: lists no checksum for {unlisted}",
            path.display()
        )));
    }
    let wanted = |relative: &str| only.is_none_or(|names| names.contains(&relative));
    for (relative, hash) in expected.iter().filter(|(r, _)| wanted(r)) {
        if relative
            .split('/')
            .any(|part| part == ".." || part.is_empty())
        {
            return Err(IndexError::Corrupt(format!(
                "{}: names {relative:?}, not a file of the version",
                path.display()
            )));
        }
        let file = dir.join(relative);
        let found = match hash_file(&file) {
            Ok(found) => found,
            Err(IndexError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(IndexError::Corrupt(format!(
                    "{}: missing (listed in {CHECKSUMS_FILE})",
                    file.display()
                )));
            }
            Err(e) => return Err(e),
        };
        if &found != hash {
            return Err(IndexError::Corrupt(format!(
                "{}: damaged: its checksum differs from the one {CHECKSUMS_FILE} recorded at build time",
                file.display()
            )));
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_missing_or_unlisted_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("bm25")).unwrap();
        std::fs::write(root.join("vectors.f32"), [1u8; 64]).unwrap();
        std::fs::write(root.join("bm25/meta.json"), "{}").unwrap();
        std::fs::write(root.join("bm25/.tantivy-meta.lock"), "").unwrap();
        assert!(!verify(root).unwrap(), "no checksums yet");
        write(root).unwrap();
        let listed: BTreeMap<String, String> =
            serde_json::from_slice(&std::fs::read(root.join(CHECKSUMS_FILE)).unwrap()).unwrap();
        assert_eq!(
            listed.keys().collect::<Vec<_>>(),
            ["bm25/meta.json", "vectors.f32"]
        );
        assert!(verify(root).unwrap());

        // A reader's lock file and files added later do not matter.
        std::fs::write(root.join("bm25/.tantivy-writer.lock"), "").unwrap();
        assert!(verify(root).unwrap());

        std::fs::write(root.join("vectors.f32"), [2u8; 64]).unwrap();
        let err = verify(root).unwrap_err().to_string();
        assert!(err.contains("vectors.f32: damaged"), "{err}");
        // Checking some files leaves the others alone.
        assert!(verify_files(root, &["bm25/meta.json"]).unwrap());
        let err = verify_files(root, &["vectors.f32"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("vectors.f32: damaged"), "{err}");
        let err = verify_files(root, &["terms.f32"]).unwrap_err().to_string();
        assert!(err.contains("lists no checksum for terms.f32"), "{err}");
        std::fs::remove_file(root.join("vectors.f32")).unwrap();
        let err = verify(root).unwrap_err().to_string();
        assert!(err.contains("vectors.f32: missing"), "{err}");
    }
}
