//! Every file of the data directory that an index version owns, by name,
//! and the on-disk formats this build writes and reads.
//!
//! ```text
//! <data-dir>/indexes/<corpus>/
//!     current                 the served version's name (replaced atomically)
//!     <version>/              one immutable index version
//!         manifest.json       format version, profile hash, model, counts, timings
//!         profile.json        the IndexProfile spec it was built with (model path and
//!                             key file made absolute, a service's dimensions filled in)
//!         skeleton.json       the skeleton store (store.rs)
//!         vectors.f32         sentence vectors (vectors.rs)
//!         paragraphs.f32      one vector per paragraph: its indexed sentences' centroid
//!         headings.f32        one vector per section: its heading path embedded
//!         terms.f32           one vector per defined term, in sentence order
//!         vectors.i8          the indexed rows in int8 (`index.quantization: int8` only)
//!         hnsw.graph          HNSW graph: neighbour lists, no vectors (hnsw.rs)
//!         bm25/               tantivy index (bm25.rs)
//!         related.json        RELATED_TO edges (links.rs)
//!         chunks.json         the chunks (store.rs)
//!         chunks.f32          one vector per chunk, in chunks.json's order (chunks.rs)
//!         checksums.json      BLAKE3 of every file above, checked on open (checksums.rs)
//!     .build-<version>-<writer>/       a version being built; never read
//!     .build-<version>-<writer>.lock   held while it is built (writer.rs)
//! <data-dir>/cache/embeddings/  the embedding cache, shared by corpora
//!     shards/<corpus>/            vectors of a sharded ingest's shards
//! ```
//!
//! A new file, or a change to what one holds, bumps [`FORMAT_VERSION`].

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::IndexError;

/// Version of the on-disk layout this build writes; part of every version
/// hash.
pub const FORMAT_VERSION: u32 = 17;

/// The on-disk layouts this build opens. A version written in another one
/// must be rebuilt before this build serves it: the operator keeps a
/// route's pods on the release that built their version until the Corpus
/// publishes one in a format the new release reads.
pub const READABLE_FORMATS: RangeInclusive<u32> = FORMAT_VERSION..=FORMAT_VERSION;

/// The pointer to the served version, in a corpus' directory.
pub const CURRENT: &str = "current";
/// Format, counts, timings and notes of a version ([`super::VersionManifest`]);
/// written last but for the checksums, so its presence marks a complete
/// version.
pub const MANIFEST: &str = "manifest.json";
/// The IndexProfile spec a version was built with.
pub const PROFILE: &str = "profile.json";
/// The skeleton store ([`super::SkeletonStore`]).
pub const SKELETON: &str = "skeleton.json";
/// One vector per sentence (zeros for sentences not indexed).
pub const SENTENCE_VECTORS: &str = "vectors.f32";
/// One vector per paragraph: the normalised mean of its indexed
/// sentences' vectors.
pub const PARAGRAPH_VECTORS: &str = "paragraphs.f32";
/// One vector per section: its heading path embedded.
pub const HEADING_VECTORS: &str = "headings.f32";
/// One vector per defined term of an indexed sentence, in sentence order.
pub const TERM_VECTORS: &str = "terms.f32";
/// The indexed sentences' vectors in int8, in the graph's node order
/// ([`super::Quantized`]); written when the profile asks for int8 search.
pub const QUANTIZED_VECTORS: &str = "vectors.i8";
/// The HNSW graph ([`super::HnswGraph`]).
pub const HNSW_GRAPH: &str = "hnsw.graph";
/// The tantivy BM25 index, a directory.
pub const BM25_DIR: &str = "bm25";
/// `RELATED_TO` edges ([`super::RelatedEdge`]).
pub const RELATED: &str = "related.json";
/// The chunks of a version: what the graph export writes, and which
/// sentences each holds for routes that take chunk candidates.
pub const CHUNKS: &str = "chunks.json";
/// One vector per chunk, in the order of [`CHUNKS`] ([`super::chunks`]).
pub const CHUNK_VECTORS: &str = "chunks.f32";
/// BLAKE3 hashes of every other file ([`super::checksums`]).
pub const CHECKSUMS: &str = "checksums.json";

/// The files a version opened [`super::Opening::WithoutSearch`] reads: what
/// a graph store keeps of a version, beside its nodes, for retrieval pods
/// that mount no index volume (`graph::version_files`).
pub const SERVING_FILES: [&str; 8] = [
    MANIFEST,
    PROFILE,
    SKELETON,
    HEADING_VECTORS,
    TERM_VECTORS,
    RELATED,
    CHUNKS,
    CHUNK_VECTORS,
];

/// The embedding cache, under the data directory; corpora share it (a
/// vector depends on the model and the text only).
pub const CACHE_DIR: &str = "cache/embeddings";

/// The directory of a corpus' versions.
pub fn corpus_dir(data_dir: &Path, corpus: &str) -> PathBuf {
    data_dir.join("indexes").join(corpus)
}

/// Where the shards of a corpus' sharded ingest leave their vectors.
pub fn shard_dir(data_dir: &Path, corpus: &str) -> PathBuf {
    data_dir.join(CACHE_DIR).join("shards").join(corpus)
}

/// Writes a build's JSON files into its directory `dir`, each under its
/// name: the `RELATED_TO` links, the skeleton store, the chunks and the
/// profile the version was built with (paths resolved).
pub fn write_parts(
    dir: &Path,
    related: &[super::RelatedEdge],
    store: &super::SkeletonStore,
    chunks: &[super::ChunkRecord],
    profile: &crate::spec::IndexProfileSpec,
) -> Result<(), IndexError> {
    write_json(&dir.join(RELATED), related)?;
    write_json(&dir.join(SKELETON), store)?;
    write_json(&dir.join(CHUNKS), chunks)?;
    write_json(&dir.join(PROFILE), profile)
}

/// Seals a build directory: its manifest, then the checksums of every
/// file in it, the manifest's included. Written last, so that a directory
/// without them is a build that did not finish.
pub fn seal(dir: &Path, manifest: &super::VersionManifest) -> Result<(), IndexError> {
    write_json(&dir.join(MANIFEST), manifest)?;
    super::checksums::write(dir)
}

/// Writes `value` as JSON to `path` and syncs it.
pub(crate) fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), IndexError> {
    let file = std::fs::File::create(path).map_err(|e| IndexError::io(path, e))?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer(&mut out, value)
        .map_err(|e| IndexError::io(path, std::io::Error::other(e)))?;
    let file = out
        .into_inner()
        .map_err(|e| IndexError::io(path, e.into_error()))?;
    file.sync_all().map_err(|e| IndexError::io(path, e))
}

/// Reads a JSON file of a version; one that does not parse is corrupt.
/// Only a regular file is read ([`open_regular`]).
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, IndexError> {
    let (mut file, len) = open_regular(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    std::io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| IndexError::io(path, e))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| IndexError::Corrupt(format!("{}: {e}", path.display())))
}

/// Opens a file of a version for reading, with its length, only when it
/// is a regular file. A symbolic link is refused, not followed (it could
/// name any file of the machine); a FIFO would block the reader forever
/// and a device (`/dev/zero`) never ends: both are refused before a byte
/// is read. The type is checked on the opened descriptor, so the file
/// cannot be swapped between the check and the read.
pub(crate) fn open_regular(path: &Path) -> Result<(std::fs::File, u64), IndexError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK: opening a FIFO without a writer returns at once
        // instead of waiting for one; it changes nothing for a regular file.
        options.custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(nix::libc::ELOOP) {
            return IndexError::Corrupt(format!(
                "{}: a symbolic link, not a file of the version",
                path.display()
            ));
        }
        IndexError::io(path, e)
    })?;
    let metadata = file.metadata().map_err(|e| IndexError::io(path, e))?;
    if !metadata.is_file() {
        return Err(IndexError::Corrupt(format!(
            "{}: not a regular file ({})",
            path.display(),
            describe_type(&metadata.file_type())
        )));
    }
    Ok((file, metadata.len()))
}

/// What kind of file a non-regular one is, for an error message.
pub(crate) fn describe_type(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return "a device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// Whether `name` can be a version's directory name: one path component
/// of letters, digits, `-`, `_` and `.`, not starting with `.` (so never
/// `..`, nor a build in progress), at most 64 bytes. Version names are 16
/// hex digits; `current` and every version a user names must pass this,
/// so that neither can point outside the corpus' own directory.
pub fn is_version_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// The manifest of the version in `dir`.
pub fn read_manifest(dir: &Path) -> Result<super::VersionManifest, IndexError> {
    read_json(&dir.join(MANIFEST))
}
