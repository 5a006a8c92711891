//! Per-file checksums of a version: `checksums.json`, written last at
//! build time and checked first when the version opens.
//!
//! The readers of a version's files (serde, tantivy, hnsw_rs) trust what
//! they read: a truncated HNSW graph can end the process inside hnsw_rs,
//! inconsistent skeleton ranges can panic, flipped bits in `vectors.f32`
//! serve wrong vectors silently. A BLAKE3 hash of every file, checked
//! before any of them is parsed, turns each such damage into one error
//! naming the file. The listing covers every file of the version, the
//! manifest included, with each file's length, compared before the file
//! is read; a file it leaves out is an error, so removing an entry cannot
//! leave a file unchecked. Only regular files are read (see
//! [`super::files::open_regular`]). A version without `checksums.json` is
//! refused unless the operator opts in ([`super::ALLOW_UNCHECKED`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::IndexError;
use super::files::{CHECKSUMS as CHECKSUMS_FILE, describe_type, open_regular};

/// Files no checksum covers: tantivy's lock files, which are empty and
/// may be created by any reader.
fn excluded(relative: &str) -> bool {
    relative == CHECKSUMS_FILE
        || Path::new(relative)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(".tantivy-") && n.ends_with(".lock"))
}

/// One file's record: its hash and, since versions recorded them, its
/// length (checked before a byte is read, so that a file grown huge, or
/// swapped for a sparse one, is refused at once rather than hashed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
enum Entry {
    Sized {
        blake3: String,
        bytes: u64,
    },
    /// Versions built before lengths were recorded.
    Hash(String),
}

impl Entry {
    fn hash(&self) -> &str {
        match self {
            Entry::Sized { blake3, .. } => blake3,
            Entry::Hash(hash) => hash,
        }
    }
}

/// Every covered file under `dir` by its path relative to `dir` (with
/// `/`), with its hash and length.
fn hash_tree(dir: &Path) -> Result<BTreeMap<String, Entry>, IndexError> {
    let mut hashes = BTreeMap::new();
    for (relative, path) in files_under(dir)? {
        let (file, bytes) = open_regular(&path)?;
        let blake3 = hash_file(&path, file, bytes)?;
        hashes.insert(relative, Entry::Sized { blake3, bytes });
    }
    Ok(hashes)
}

/// Every entry under `dir` but directories and the [`excluded`] files, by
/// its path relative to `dir` (with `/`). Entries are not followed: a
/// symbolic link, FIFO or device among them is an error, as no version
/// has one.
fn files_under(dir: &Path) -> Result<Vec<(String, std::path::PathBuf)>, IndexError> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(|e| super::current::walk_error(dir, e))?;
        let file_type = entry.file_type();
        if file_type.is_dir() {
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
        if !file_type.is_file() {
            return Err(IndexError::Corrupt(format!(
                "{}: {}, not a file of the version",
                entry.path().display(),
                describe_type(&file_type)
            )));
        }
        files.push((relative, entry.path().to_path_buf()));
    }
    Ok(files)
}

/// The BLAKE3 hash of the `bytes` bytes of `file` (opened from `path`),
/// in hex; reading stops there even if the file grew since.
fn hash_file(path: &Path, file: std::fs::File, bytes: u64) -> Result<String, IndexError> {
    let mut hasher = blake3::Hasher::new();
    hasher
        .update_reader(std::io::Read::take(file, bytes))
        .map_err(|e| IndexError::io(path, e))?;
    Ok(hasher.finalize().to_hex().to_string())
}

/// Writes `checksums.json` for every file of the finished build `dir`.
pub fn write(dir: &Path) -> Result<(), IndexError> {
    let hashes = hash_tree(dir)?;
    super::files::write_json(&dir.join(CHECKSUMS_FILE), &hashes)
}

/// Checks a whole version: every file `checksums.json` lists against its
/// length and hash, and that it lists every file the version has, so that
/// dropping a file's entry cannot leave that file unchecked. `Ok(false)`
/// when the version has no checksums file (the caller decides whether it
/// may be opened at all).
pub fn verify(dir: &Path) -> Result<bool, IndexError> {
    let Some(expected) = read_listing(dir)? else {
        return Ok(false);
    };
    for (relative, path) in files_under(dir)? {
        if !expected.contains_key(&relative) {
            return Err(IndexError::Corrupt(format!(
                "{}: not listed in {CHECKSUMS_FILE}: a version's files are all listed at build time",
                path.display()
            )));
        }
    }
    check_entries(dir, &expected, None)?;
    Ok(true)
}

/// Checks the files `names` against the hashes `checksums.json` holds for
/// them: each must be listed. For a version opened without some of its
/// files, which need not be present. `Ok(false)` as for [`verify`].
pub fn verify_files(dir: &Path, names: &[&str]) -> Result<bool, IndexError> {
    let Some(expected) = read_listing(dir)? else {
        return Ok(false);
    };
    if let Some(unlisted) = names.iter().find(|n| !expected.contains_key(**n)) {
        return Err(IndexError::Corrupt(format!(
            "{}: lists no checksum for {unlisted}",
            dir.join(CHECKSUMS_FILE).display()
        )));
    }
    check_entries(dir, &expected, Some(names))?;
    Ok(true)
}

/// `checksums.json`, `None` when there is none. It must list the manifest:
/// a listing without it could belong to another version.
fn read_listing(dir: &Path) -> Result<Option<BTreeMap<String, Entry>>, IndexError> {
    let path = dir.join(CHECKSUMS_FILE);
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(IndexError::io(&path, e)),
        Ok(_) => {}
    }
    let expected: BTreeMap<String, Entry> = super::files::read_json(&path)?;
    if !expected.contains_key(super::files::MANIFEST) {
        return Err(IndexError::Corrupt(format!(
            "{}: lists no checksum for {}",
            path.display(),
            super::files::MANIFEST
        )));
    }
    Ok(Some(expected))
}

fn check_entries(
    dir: &Path,
    expected: &BTreeMap<String, Entry>,
    only: Option<&[&str]>,
) -> Result<(), IndexError> {
    let path = dir.join(CHECKSUMS_FILE);
    let wanted = |relative: &str| only.is_none_or(|names| names.contains(&relative));
    for (relative, entry) in expected.iter().filter(|(r, _)| wanted(r)) {
        if relative
            .split('/')
            .any(|part| part == ".." || part == "." || part.is_empty())
        {
            return Err(IndexError::Corrupt(format!(
                "{}: names {relative:?}, not a file of the version",
                path.display()
            )));
        }
        let file = dir.join(relative);
        let (opened, bytes) = match open_regular(&file) {
            Ok(opened) => opened,
            Err(IndexError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(IndexError::Corrupt(format!(
                    "{}: missing (listed in {CHECKSUMS_FILE})",
                    file.display()
                )));
            }
            Err(e) => return Err(e),
        };
        if let Entry::Sized {
            bytes: recorded, ..
        } = entry
            && *recorded != bytes
        {
            return Err(IndexError::Corrupt(format!(
                "{}: damaged: {bytes} bytes where {CHECKSUMS_FILE} recorded {recorded} at build time",
                file.display()
            )));
        }
        if hash_file(&file, opened, bytes)? != entry.hash() {
            return Err(IndexError::Corrupt(format!(
                "{}: damaged: its checksum differs from the one {CHECKSUMS_FILE} recorded at build time",
                file.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_missing_or_unlisted_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("bm25")).unwrap();
        std::fs::write(root.join("manifest.json"), "{}").unwrap();
        std::fs::write(root.join("vectors.f32"), [1u8; 64]).unwrap();
        std::fs::write(root.join("bm25/meta.json"), "{}").unwrap();
        std::fs::write(root.join("bm25/.tantivy-meta.lock"), "").unwrap();
        assert!(!verify(root).unwrap(), "no checksums yet");
        write(root).unwrap();
        let listed: BTreeMap<String, Entry> =
            serde_json::from_slice(&std::fs::read(root.join(CHECKSUMS_FILE)).unwrap()).unwrap();
        assert_eq!(
            listed.keys().collect::<Vec<_>>(),
            ["bm25/meta.json", "manifest.json", "vectors.f32"]
        );
        assert!(matches!(
            listed["vectors.f32"],
            Entry::Sized { bytes: 64, .. }
        ));
        assert!(verify(root).unwrap());

        // A reader's lock file does not matter; a file no entry lists does.
        std::fs::write(root.join("bm25/.tantivy-writer.lock"), "").unwrap();
        assert!(verify(root).unwrap());
        std::fs::write(root.join("bm25/extra"), "x").unwrap();
        let err = verify(root).unwrap_err().to_string();
        assert!(err.contains("extra: not listed"), "{err}");
        std::fs::remove_file(root.join("bm25/extra")).unwrap();

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
        // A length that differs is refused before the file is read.
        std::fs::write(root.join("vectors.f32"), [1u8; 65]).unwrap();
        let err = verify(root).unwrap_err().to_string();
        assert!(err.contains("65 bytes where"), "{err}");
        std::fs::remove_file(root.join("vectors.f32")).unwrap();
        let err = verify(root).unwrap_err().to_string();
        assert!(err.contains("vectors.f32: missing"), "{err}");
    }

    #[test]
    fn links_fifos_and_devices_are_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("manifest.json"), "{}").unwrap();
        std::fs::write(root.join("vectors.f32"), [1u8; 64]).unwrap();
        write(root).unwrap();
        let swap = |make: &dyn Fn(&Path)| {
            std::fs::remove_file(root.join("vectors.f32")).unwrap();
            make(&root.join("vectors.f32"));
            let whole = verify(root).unwrap_err().to_string();
            let some = verify_files(root, &["vectors.f32"])
                .unwrap_err()
                .to_string();
            std::fs::remove_file(root.join("vectors.f32")).unwrap();
            std::fs::write(root.join("vectors.f32"), [1u8; 64]).unwrap();
            (whole, some)
        };
        let (whole, some) = swap(&|p| std::os::unix::fs::symlink("/dev/zero", p).unwrap());
        assert!(whole.contains("a symbolic link"), "{whole}");
        assert!(some.contains("a symbolic link"), "{some}");
        let (whole, some) =
            swap(&|p| nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap());
        assert!(whole.contains("a FIFO"), "{whole}");
        assert!(some.contains("a FIFO"), "{some}");
        assert!(verify(root).unwrap());
    }
}
