//! The embedding cache: vectors keyed by (cache id, text hash); the cache
//! id is the model id and the rest of the recipe that made the vectors
//! ([`super::Embedder::cache_id`]).
//!
//! One append-only file per model under the cache directory. Each record is
//! the 16-byte BLAKE3 hash of the text, the vector as little-endian f32 and
//! an 8-byte BLAKE3 checksum of both; the file starts with a header naming
//! the model and the dimension.
//!
//! Several processes share the cache (the ingests of a namespace share one
//! data volume): every read-and-repair and every append holds an exclusive
//! `flock` on `<model>.lock` beside the file, so appends never interleave
//! and no reader cuts a record another process is writing. A record that
//! fails its checksum or holds a non-finite number (a crash mid-write, a
//! writer that did not lock) is skipped, the reader finds the next good
//! record, and the file is rewritten without the bad ones; so the cache
//! can only lose work, never return a wrong vector.
//!
//! The shards of a sharded ingest append to files of their own, one per
//! corpus, shard and pod under the corpus' shard directory; the finalize
//! step folds that corpus' shard files into the main file.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::{EmbedError, Embedder, Passage, SpanVectors};

const MAGIC: &[u8; 8] = b"TRLSEMB2";
/// Bytes of a record's checksum.
const CHECK: usize = 8;

type Key = [u8; 16];

/// What one [`EmbeddingCache::embed`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Texts found in the cache.
    pub hits: usize,
    /// Texts embedded now.
    pub embedded: usize,
}

/// Cached vectors for one model.
pub struct EmbeddingCache {
    path: PathBuf,
    /// The model's lock: one for its main file and all its shard files.
    lock_path: PathBuf,
    dims: usize,
    vectors: HashMap<Key, Vec<f32>>,
    pending: Vec<Key>,
}

/// The file name stem of a model's cache files.
fn file_stem(model_id: &str) -> String {
    model_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.@+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl EmbeddingCache {
    /// Opens (or starts) the cache of `model_id` under `dir`.
    pub fn open(dir: &Path, model_id: &str, dims: usize) -> Result<Self, EmbedError> {
        let stem = file_stem(model_id);
        let mut cache = Self::at(dir, &stem, dir.join(format!("{stem}.vectors")), dims);
        let _lock = cache.lock()?;
        cache.load(model_id)?;
        Ok(cache)
    }

    /// Folds into this (main) cache the vectors that the shards of one
    /// corpus' sharded ingest left in `shards`
    /// ([`open_shard`](Self::open_shard)), and removes their files. Only
    /// that corpus' shard files are touched: another corpus' shards may
    /// still be writing theirs.
    pub fn fold_shards(&mut self, model_id: &str, shards: &Path) -> Result<(), EmbedError> {
        let stem = file_stem(model_id);
        let _lock = self.lock()?;
        let files = shard_files(shards, &stem);
        for file in &files {
            let mut shard = Self::at(shards, &stem, file.clone(), self.dims);
            shard.lock_path = self.lock_path.clone();
            shard.load(model_id)?;
            for (k, v) in shard.vectors {
                if let std::collections::hash_map::Entry::Vacant(e) = self.vectors.entry(k) {
                    e.insert(v);
                    self.pending.push(k);
                }
            }
        }
        if !files.is_empty() {
            self.append()?;
            for file in files {
                let _ = fs::remove_file(file);
            }
        }
        Ok(())
    }

    /// Opens the cache of one shard of a sharded ingest: it reads the main
    /// file under `dir` (what is cached already is not embedded again) and
    /// appends to `<shards>/<model>.shard-<name>.vectors`, a file of its
    /// own: `shards` is the corpus' shard directory and `name` tells this
    /// writer apart (shard index and pod), so that no two pods, on one
    /// machine or several, ever write one file.
    pub fn open_shard(
        dir: &Path,
        model_id: &str,
        dims: usize,
        shards: &Path,
        name: &str,
    ) -> Result<Self, EmbedError> {
        let stem = file_stem(model_id);
        let mut main = Self::at(dir, &stem, dir.join(format!("{stem}.vectors")), dims);
        let _lock = main.lock()?;
        if main.path.is_file() {
            main.load(model_id)?;
        }
        let path = shards.join(format!("{stem}.shard-{}.vectors", file_stem(name)));
        let mut cache = Self::at(dir, &stem, path, dims);
        cache.load(model_id)?;
        for (k, v) in main.vectors {
            cache.vectors.entry(k).or_insert(v);
        }
        Ok(cache)
    }

    /// An empty cache over `path`, locked through `<dir>/<stem>.lock`.
    fn at(dir: &Path, stem: &str, path: PathBuf, dims: usize) -> Self {
        Self {
            path,
            lock_path: dir.join(format!("{stem}.lock")),
            dims,
            vectors: HashMap::new(),
            pending: Vec::new(),
        }
    }

    /// Vectors cached so far.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// Embeds `texts` as documents, reusing cached vectors and embedding
    /// (once) each text not seen before.
    pub fn embed(
        &mut self,
        embedder: &dyn Embedder,
        texts: &[&str],
    ) -> Result<(Vec<Vec<f32>>, CacheStats), EmbedError> {
        self.embed_with(texts, |todo| embedder.embed_documents(todo))
    }

    /// Like [`embed`](Self::embed), with `encode` embedding the texts not
    /// cached (a cache opened for queries passes the query encoder).
    pub fn embed_with(
        &mut self,
        texts: &[&str],
        encode: impl FnOnce(&[&str]) -> Result<Vec<Vec<f32>>, EmbedError>,
    ) -> Result<(Vec<Vec<f32>>, CacheStats), EmbedError> {
        let keys: Vec<Key> = texts.iter().map(|t| key(t)).collect();
        let mut missing: Vec<usize> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, k) in keys.iter().enumerate() {
            if !self.vectors.contains_key(k) && seen.insert(*k) {
                missing.push(i);
            }
        }
        let todo: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
        let fresh = if todo.is_empty() {
            Vec::new()
        } else {
            encode(&todo)?
        };
        for (&i, v) in missing.iter().zip(fresh) {
            self.check(&v, texts[i])?;
            self.vectors.insert(keys[i], v);
            self.pending.push(keys[i]);
        }
        let stats = CacheStats {
            hits: texts.len() - missing.len(),
            embedded: missing.len(),
        };
        let vectors = keys.iter().map(|k| self.vectors[k].clone()).collect();
        Ok((vectors, stats))
    }

    /// Embeds the spans of `passages` in their passage's context
    /// ([`Embedder::embed_in_context`]), reusing cached vectors. A passage
    /// is encoded again, whole, when any of its spans is not cached. A
    /// span's key is the passage, the span and `context` (the mode), so
    /// that a vector made in context never stands in for the sentence
    /// alone, or in another passage.
    pub fn embed_in_context(
        &mut self,
        embedder: &dyn Embedder,
        context: &str,
        passages: &[Passage],
    ) -> Result<(Vec<SpanVectors>, CacheStats), EmbedError> {
        let keys: Vec<Vec<Key>> = passages
            .iter()
            .map(|passage| {
                let text = blake3::hash(passage.text.as_bytes());
                passage
                    .spans
                    .iter()
                    .map(|span| {
                        let mut h = blake3::Hasher::new();
                        h.update(b"\0context\0");
                        h.update(context.as_bytes());
                        h.update(text.as_bytes());
                        h.update(&(span.start as u64).to_le_bytes());
                        h.update(&(span.end as u64).to_le_bytes());
                        let mut k = [0u8; 16];
                        k.copy_from_slice(&h.finalize().as_bytes()[..16]);
                        k
                    })
                    .collect()
            })
            .collect();
        let missing: Vec<usize> = (0..passages.len())
            .filter(|&p| keys[p].iter().any(|k| !self.vectors.contains_key(k)))
            .collect();
        let todo: Vec<Passage> = missing.iter().map(|&p| passages[p].clone()).collect();
        let fresh = if todo.is_empty() {
            Vec::new()
        } else {
            embedder.embed_in_context(&todo)?
        };
        let mut stats = CacheStats::default();
        for (&p, vectors) in missing.iter().zip(fresh) {
            let passage = &passages[p];
            if vectors.len() != passage.spans.len() {
                return Err(EmbedError::Config(format!(
                    "model returned {} vectors for a passage of {} sentences",
                    vectors.len(),
                    passage.spans.len()
                )));
            }
            for ((key, span), v) in keys[p].iter().zip(&passage.spans).zip(vectors) {
                self.check(&v, passage.text.get(span.clone()).unwrap_or_default())?;
                if self.vectors.insert(*key, v).is_none() {
                    self.pending.push(*key);
                }
            }
            stats.embedded += passage.spans.len();
        }
        stats.hits = passages.iter().map(|p| p.spans.len()).sum::<usize>() - stats.embedded;
        let vectors = keys
            .iter()
            .map(|keys| keys.iter().map(|k| self.vectors[k].clone()).collect())
            .collect();
        Ok((vectors, stats))
    }

    /// Refuses a vector of the wrong length or with a NaN or infinity.
    fn check(&self, v: &[f32], text: &str) -> Result<(), EmbedError> {
        if v.len() != self.dims {
            return Err(EmbedError::Config(format!(
                "model returned {} dimensions, expected {}",
                v.len(),
                self.dims
            )));
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(EmbedError::Config(format!(
                "model returned a vector with a NaN or infinite value for {:?}",
                text.chars().take(80).collect::<String>()
            )));
        }
        Ok(())
    }

    /// Appends the vectors embedded since the last flush to the file.
    pub fn flush(&mut self) -> Result<(), EmbedError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let _lock = self.lock()?;
        self.append()
    }

    fn error(&self) -> impl Fn(std::io::Error) -> EmbedError + use<> {
        let path = self.path.clone();
        move |e| EmbedError::Cache {
            path: path.clone(),
            reason: e.to_string(),
        }
    }

    /// Holds the model's lock (`<model>.lock` beside its files) until the
    /// returned file is dropped.
    fn lock(&self) -> Result<File, EmbedError> {
        let lock_path = self.lock_path.clone();
        let err = |e: std::io::Error| EmbedError::Cache {
            path: lock_path.clone(),
            reason: format!("locking the cache: {e}"),
        };
        if let Some(parent) = lock_path.parent() {
            fs::create_dir_all(parent).map_err(err)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(err)?;
        file.lock().map_err(err)?;
        Ok(file)
    }

    /// Appends the pending vectors; the caller holds the lock.
    fn append(&mut self) -> Result<(), EmbedError> {
        let err = self.error();
        let file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(&err)?;
        let mut out = BufWriter::new(file);
        for k in &self.pending {
            out.write_all(&record(k, &self.vectors[k])).map_err(&err)?;
        }
        out.flush().map_err(&err)?;
        out.get_ref().sync_data().map_err(&err)?;
        self.pending.clear();
        Ok(())
    }

    /// Reads the file; the caller holds the lock.
    fn load(&mut self, model_id: &str) -> Result<(), EmbedError> {
        let err = self.error();
        let header = header(model_id, self.dims);
        let mut bytes = Vec::new();
        match File::open(&self.path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(&err)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(err(e)),
        }
        if !bytes.starts_with(&header) {
            // Missing, or written for another model, dimension or format:
            // start afresh rather than trust it.
            if let Some(parent) = self.path.parent() {
                fs::create_dir_all(parent).map_err(&err)?;
            }
            fs::write(&self.path, &header).map_err(&err)?;
            return Ok(());
        }
        let size = 16 + 4 * self.dims + CHECK;
        let body = &bytes[header.len()..];
        let mut at = 0;
        let mut skipped = 0;
        let mut good = Vec::with_capacity(body.len());
        while at + size <= body.len() {
            let chunk = &body[at..at + size];
            match parse_record(chunk, self.dims) {
                Some((k, v)) => {
                    self.vectors.insert(k, v);
                    good.extend_from_slice(chunk);
                    at += size;
                }
                None => {
                    // Resynchronise on the next offset where a whole,
                    // checksummed record starts.
                    skipped += 1;
                    at += 1;
                }
            }
        }
        let torn = body.len() - at;
        if skipped > 0 {
            tracing::warn!(
                path = %self.path.display(),
                skipped_bytes = skipped,
                "embedding cache: records failed their checksum and were dropped"
            );
        }
        if skipped > 0 || torn != 0 {
            // Keep only the good records, replacing the file at once.
            let tmp = self.path.with_extension("vectors.tmp");
            let mut clean = header;
            clean.extend_from_slice(&good);
            fs::write(&tmp, &clean).map_err(&err)?;
            File::open(&tmp).and_then(|f| f.sync_all()).map_err(&err)?;
            fs::rename(&tmp, &self.path).map_err(&err)?;
        }
        Ok(())
    }
}

/// One record: key, vector, checksum of both.
fn record(key: &Key, vector: &[f32]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(16 + 4 * vector.len() + CHECK);
    bytes.extend_from_slice(key);
    for x in vector {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    let check = blake3::hash(&bytes);
    bytes.extend_from_slice(&check.as_bytes()[..CHECK]);
    bytes
}

/// A record's key and vector when its checksum holds and every number is
/// finite.
fn parse_record(chunk: &[u8], dims: usize) -> Option<(Key, Vec<f32>)> {
    let (data, check) = chunk.split_at(16 + 4 * dims);
    if blake3::hash(data).as_bytes()[..CHECK] != *check {
        return None;
    }
    let mut k = [0u8; 16];
    k.copy_from_slice(&data[..16]);
    let v: Vec<f32> = data[16..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    v.iter().all(|x| x.is_finite()).then_some((k, v))
}

/// The shard files of a model's cache under `dir`, in a stable order.
fn shard_files(dir: &Path, stem: &str) -> Vec<PathBuf> {
    let prefix = format!("{stem}.shard-");
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".vectors"))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn header(model_id: &str, dims: usize) -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    h.extend_from_slice(&(dims as u32).to_le_bytes());
    h.extend_from_slice(&(model_id.len() as u32).to_le_bytes());
    h.extend_from_slice(model_id.as_bytes());
    h
}

fn key(text: &str) -> Key {
    let mut k = [0u8; 16];
    k.copy_from_slice(&blake3::hash(text.as_bytes()).as_bytes()[..16]);
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
    }

    fn refuse(_: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Err(EmbedError::Config("nothing should be embedded".into()))
    }

    #[test]
    fn shards_write_apart_and_the_main_cache_absorbs_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut main = EmbeddingCache::open(dir.path(), "m", 2).unwrap();
        main.embed_with(&["shared"], encode).unwrap();
        main.flush().unwrap();

        let contracts = dir.path().join("shards/contracts");
        let manuals = dir.path().join("shards/manuals");
        for (shards, name, text) in [
            (&contracts, "0-pod-a", "alpha"),
            (&contracts, "1-pod-b", "beta"),
            (&manuals, "0-pod-c", "gamma"),
        ] {
            let mut cache = EmbeddingCache::open_shard(dir.path(), "m", 2, shards, name).unwrap();
            // What the main file holds is not embedded again.
            let (_, stats) = cache.embed_with(&["shared", text], encode).unwrap();
            assert_eq!((stats.hits, stats.embedded), (1, 1));
            cache.flush().unwrap();
        }
        assert!(contracts.join("m.shard-0-pod-a.vectors").is_file());

        let mut main = EmbeddingCache::open(dir.path(), "m", 2).unwrap();
        assert_eq!(main.len(), 1, "opening folds nothing");
        main.fold_shards("m", &contracts).unwrap();
        assert_eq!(main.len(), 3);
        let (vectors, stats) = main.embed_with(&["alpha", "beta"], refuse).unwrap();
        assert_eq!(stats.hits, 2);
        assert_eq!(vectors[1], vec![4.0, 1.0]);
        assert!(!contracts.join("m.shard-0-pod-a.vectors").exists());
        // Another corpus' shard, perhaps still writing, is left alone.
        assert!(manuals.join("m.shard-0-pod-c.vectors").is_file());
        // Folded for good: a second open finds them in the main file.
        let again = EmbeddingCache::open(dir.path(), "m", 2).unwrap();
        assert_eq!(again.len(), 3);
    }

    /// A vector that depends on every byte of the text, in 384 dimensions
    /// (records of 1.5 kB, so that one flush spans several writes).
    fn wide(texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let seed = blake3::hash(t.as_bytes());
                (0..384)
                    .map(|i| f32::from(seed.as_bytes()[i % 32]) + i as f32)
                    .collect()
            })
            .collect())
    }

    /// Writers of one cache at once (two ingests of a namespace, each
    /// opening, embedding and flushing in small batches) lose nothing and
    /// corrupt nothing: every vector read back afterwards is bit for bit
    /// the one its text was embedded to.
    #[test]
    fn concurrent_writers_keep_every_vector_exact() {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<String> = (0..400).map(|i| format!("sentence number {i}")).collect();
        std::thread::scope(|scope| {
            for writer in 0..4 {
                let texts = &texts;
                let dir = dir.path();
                scope.spawn(move || {
                    for round in 0..5 {
                        let mut cache = EmbeddingCache::open(dir, "m", 384).unwrap();
                        // Overlapping slices: some texts written by several.
                        let start = (writer * 60 + round * 17) % 300;
                        for batch in texts[start..start + 100].chunks(25) {
                            let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
                            cache.embed_with(&batch, wide).unwrap();
                            cache.flush().unwrap();
                        }
                    }
                });
            }
        });
        let mut cache = EmbeddingCache::open(dir.path(), "m", 384).unwrap();
        let all: Vec<&str> = texts.iter().map(String::as_str).collect();
        let written = cache.len();
        let (vectors, _) = cache.embed_with(&all, wide).unwrap();
        let expected = wide(&all).unwrap();
        let wrong = vectors
            .iter()
            .zip(&expected)
            .filter(|(a, b)| {
                a.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                    != b.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            })
            .count();
        assert_eq!(wrong, 0, "{wrong} vectors differ ({written} records read)");
        let union: std::collections::HashSet<usize> = (0..4)
            .flat_map(|w| (0..5).map(move |r| (w * 60 + r * 17) % 300))
            .flat_map(|start| start..start + 100)
            .collect();
        assert_eq!(written, union.len(), "vectors were lost");
    }

    /// A slow writer mid-record (here: half a record written, the lock
    /// held) is waited for; the opener does not cut its record as torn.
    #[test]
    fn an_opener_waits_for_a_writer_mid_record() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = EmbeddingCache::open(dir.path(), "m", 384).unwrap();
        first.embed_with(&["first"], wide).unwrap();
        first.flush().unwrap();

        let slow = wide(&["slow"]).unwrap().remove(0);
        let bytes = record(&key("slow"), &slow);
        let lock = first.lock().unwrap();
        let mut file = OpenOptions::new().append(true).open(&first.path).unwrap();
        file.write_all(&bytes[..700]).unwrap();
        std::thread::scope(|scope| {
            let opener = scope.spawn(|| {
                let mut other = EmbeddingCache::open(dir.path(), "m", 384).unwrap();
                other.embed_with(&["other"], wide).unwrap();
                other.flush().unwrap();
            });
            std::thread::sleep(std::time::Duration::from_millis(200));
            file.write_all(&bytes[700..]).unwrap();
            drop(lock);
            opener.join().unwrap();
        });
        let mut cache = EmbeddingCache::open(dir.path(), "m", 384).unwrap();
        assert_eq!(cache.len(), 3);
        let texts = ["first", "slow", "other"];
        let (vectors, _) = cache.embed_with(&texts, refuse).unwrap();
        assert_eq!(vectors, wide(&texts).unwrap());
    }

    /// A damaged record is dropped, the ones after it kept, and the file
    /// repaired.
    #[test]
    fn a_damaged_record_is_skipped_not_returned() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = EmbeddingCache::open(dir.path(), "m", 384).unwrap();
        cache.embed_with(&["a", "b", "c"], wide).unwrap();
        cache.flush().unwrap();
        let path = dir.path().join("m.vectors");
        let mut bytes = fs::read(&path).unwrap();
        let record = 16 + 4 * 384 + CHECK;
        let second = bytes.len() - 2 * record;
        bytes[second + 100] ^= 0x40;
        // And a stray half record between the second and the third.
        bytes.splice(second + record..second + record, [7u8; 300]);
        fs::write(&path, &bytes).unwrap();

        let mut cache = EmbeddingCache::open(dir.path(), "m", 384).unwrap();
        assert_eq!(cache.len(), 2);
        let (vectors, stats) = cache.embed_with(&["a", "b", "c"], wide).unwrap();
        assert_eq!(stats.embedded, 1, "only the damaged one is embedded again");
        assert_eq!(vectors, wide(&["a", "b", "c"]).unwrap());
        let header = fs::read(&path).unwrap().len() - 2 * record;
        assert_eq!(
            header,
            super::header("m", 384).len(),
            "the file was repaired"
        );
    }
}
