//! A version's serving files kept in the graph store, so that a retrieval
//! pod on a route anchored there mounts no index volume.
//!
//! A route with `anchors.source: graph` searches the store's vector and
//! full-text indexes and reads sentence vectors from it, but still needs
//! the small part of the version that ranks and displays: the skeleton,
//! the heading and term vectors, the related links, the manifest and the
//! profile ([`files::SERVING_FILES`]). The export writes those files, and
//! `checksums.json`, into the store as `IndexFile` nodes of at most
//! [`PART_BYTES`] each (base64: both stores carry strings, not bytes,
//! through their parameters), before the version's marker, so a complete
//! version has them. [`fetch`] reads them back into a data directory
//! laid out as the ingest's, under a temporary name renamed into place;
//! opening the version then checks every file against the checksums the
//! ingest recorded, as it does on a volume.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::{GraphError, GraphStore, Statement, Value, cypher, export, run_with_retries};
use crate::index::{IndexError, IndexVersion, corpus_dir, files};

/// The most bytes of a file one node holds (1 MiB): a statement carrying
/// it stays far below both stores' message limits.
pub const PART_BYTES: usize = 1 << 20;

/// The files written to the store: those a version opened without its
/// search files reads, and their checksums.
fn stored_files() -> impl Iterator<Item = &'static str> {
    files::SERVING_FILES
        .into_iter()
        .chain(std::iter::once(files::CHECKSUMS))
}

/// The id of part `part` of file `name`.
fn part_id(name: &str, part: usize) -> String {
    format!("{name}#{part}")
}

/// Writes `index`'s serving files into `store`, one statement per part;
/// returns how many parts. Idempotent: every part is a `MERGE`.
pub fn write(
    store: &mut dyn GraphStore,
    index: &IndexVersion,
    retries: u32,
) -> Result<usize, GraphError> {
    let version = index.manifest.version.as_str();
    let mut written = 0;
    for name in stored_files() {
        let path = index.dir.join(name);
        let bytes = std::fs::read(&path).map_err(|e| IndexError::io(&path, e))?;
        // An empty file still has one (empty) part, so that every file
        // of a complete version is found.
        let parts: Vec<&[u8]> = if bytes.is_empty() {
            vec![&[]]
        } else {
            bytes.chunks(PART_BYTES).collect()
        };
        for (part, data) in parts.iter().enumerate() {
            let statement = Statement::new("write version file", cypher::UPSERT_FILE_PART)
                .param("version", version)
                .param("corpus", index.manifest.corpus.as_str())
                .param("id", part_id(name, part))
                .param("name", name)
                .param("part", Value::Int(part as i64))
                .param("parts", Value::Int(parts.len() as i64))
                .param("data", BASE64.encode(data));
            run_with_retries(store, &statement, retries)?;
            written += 1;
        }
    }
    Ok(written)
}

/// Reads version `version` of `corpus` from `store` into `data_dir`, at
/// the place an ingest would have published it, unless it is there
/// already; returns its directory. The store must hold the version
/// completely. What is read is checked when the version is opened.
pub fn fetch(
    store: &mut dyn GraphStore,
    data_dir: &Path,
    corpus: &str,
    version: &str,
    retries: u32,
) -> Result<PathBuf, GraphError> {
    if !files::is_version_name(version) {
        return Err(GraphError::Config(format!(
            "{} names {version:?} as a version of corpus {corpus}: not a version name",
            store.name()
        )));
    }
    let corpus_dir = corpus_dir(data_dir, corpus);
    let target = corpus_dir.join(version);
    if target.join(files::MANIFEST).exists() {
        return Ok(target);
    }
    if !export::is_complete(store, version)? {
        return Err(GraphError::Config(format!(
            "{} does not hold index version {version} of corpus {corpus} completely \
             (its export failed or has not run): nothing to serve from",
            store.name()
        )));
    }
    let _span = tracing::info_span!("fetch_version", store = store.name(), version).entered();
    let building = corpus_dir.join(format!(".fetch-{version}-{}", std::process::id()));
    let io = |path: &Path, e: std::io::Error| GraphError::Index(IndexError::io(path, e));
    if building.exists() {
        std::fs::remove_dir_all(&building).map_err(|e| io(&building, e))?;
    }
    std::fs::create_dir_all(&building).map_err(|e| io(&building, e))?;
    let mut bytes = 0;
    for name in stored_files() {
        let path = building.join(name);
        let mut file = std::fs::File::create(&path).map_err(|e| io(&path, e))?;
        let mut part = 0;
        let mut parts = 1;
        while part < parts {
            let (count, data) = read_part(store, version, name, part, retries)?;
            if part == 0 {
                parts = count;
            } else if count != parts {
                return Err(part_error(
                    store,
                    version,
                    name,
                    part,
                    "its parts disagree on their number",
                ));
            }
            bytes += data.len();
            file.write_all(&data).map_err(|e| io(&path, e))?;
            part += 1;
        }
        file.sync_all().map_err(|e| io(&path, e))?;
    }
    match std::fs::rename(&building, &target) {
        Ok(()) => {}
        // Another process fetched it first: theirs is as good.
        Err(_) if target.join(files::MANIFEST).exists() => {
            let _ = std::fs::remove_dir_all(&building);
        }
        Err(e) => return Err(io(&target, e)),
    }
    tracing::info!(store = store.name(), %version, bytes, "index version fetched from the graph store");
    Ok(target)
}

/// Part `part` of file `name`: the number of parts the file has, and the
/// part's bytes.
fn read_part(
    store: &mut dyn GraphStore,
    version: &str,
    name: &str,
    part: usize,
    retries: u32,
) -> Result<(usize, Vec<u8>), GraphError> {
    let statement = Statement::new("read version file", cypher::READ_FILE_PART)
        .param("version", version)
        .param("id", part_id(name, part));
    let rows = run_with_retries(store, &statement, retries)?;
    let row = rows
        .first()
        .ok_or_else(|| part_error(store, version, name, part, "missing"))?;
    let parts = row
        .first()
        .and_then(Value::as_int)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > part)
        .ok_or_else(|| part_error(store, version, name, part, "no part count beyond it"))?;
    let data = row
        .get(1)
        .and_then(Value::as_str)
        .ok_or_else(|| part_error(store, version, name, part, "no data"))?;
    let data = BASE64
        .decode(data)
        .map_err(|e| part_error(store, version, name, part, &format!("not base64: {e}")))?;
    if data.len() > PART_BYTES {
        return Err(part_error(store, version, name, part, "larger than a part"));
    }
    Ok((parts, data))
}

fn part_error(
    store: &dyn GraphStore,
    version: &str,
    name: &str,
    part: usize,
    reason: &str,
) -> GraphError {
    GraphError::Reply {
        store: store.name(),
        statement: "read version file".into(),
        reason: format!("index version {version}, {name} part {part}: {reason}"),
    }
}
