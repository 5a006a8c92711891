//! The embedding cache: vectors keyed by (model id, text hash).
//!
//! One append-only file per model under the cache directory. Each record is
//! the 16-byte BLAKE3 hash of the text followed by the vector as
//! little-endian f32; the file starts with a header naming the model and
//! the dimension. A torn last record (a crash mid-write) is ignored on
//! load, so the cache can only lose work, never return a wrong vector.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::{EmbedError, Embedder};

const MAGIC: &[u8; 8] = b"TRLSEMB1";

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
    /// Opens (or starts) the cache of `model_id` under `dir`. Vectors that
    /// shards of a sharded ingest left in their own files
    /// ([`open_shard`](Self::open_shard)) are folded into the main file and
    /// their files removed.
    pub fn open(dir: &Path, model_id: &str, dims: usize) -> Result<Self, EmbedError> {
        let stem = file_stem(model_id);
        let mut cache = Self {
            path: dir.join(format!("{stem}.vectors")),
            dims,
            vectors: HashMap::new(),
            pending: Vec::new(),
        };
        cache.load(model_id)?;
        let shard_files = shard_files(dir, &stem);
        for file in &shard_files {
            let mut shard = Self {
                path: file.clone(),
                dims,
                vectors: HashMap::new(),
                pending: Vec::new(),
            };
            shard.load(model_id)?;
            for (k, v) in shard.vectors {
                if let std::collections::hash_map::Entry::Vacant(e) = cache.vectors.entry(k) {
                    e.insert(v);
                    cache.pending.push(k);
                }
            }
        }
        if !shard_files.is_empty() {
            cache.flush()?;
            for file in shard_files {
                let _ = fs::remove_file(file);
            }
        }
        Ok(cache)
    }

    /// Opens the cache of one shard of a sharded ingest: it reads the main
    /// file (what is cached already is not embedded again) and appends to
    /// a file of its own, so that shards on different machines never write
    /// to one file.
    pub fn open_shard(
        dir: &Path,
        model_id: &str,
        dims: usize,
        shard: u32,
    ) -> Result<Self, EmbedError> {
        let stem = file_stem(model_id);
        let mut main = Self {
            path: dir.join(format!("{stem}.vectors")),
            dims,
            vectors: HashMap::new(),
            pending: Vec::new(),
        };
        if main.path.is_file() {
            main.load(model_id)?;
        }
        let mut cache = Self {
            path: dir.join(format!("{stem}.shard-{shard}.vectors")),
            dims,
            vectors: HashMap::new(),
            pending: Vec::new(),
        };
        cache.load(model_id)?;
        for (k, v) in main.vectors {
            cache.vectors.entry(k).or_insert(v);
        }
        Ok(cache)
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
            if v.len() != self.dims {
                return Err(EmbedError::Config(format!(
                    "model returned {} dimensions, expected {}",
                    v.len(),
                    self.dims
                )));
            }
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

    /// Appends the vectors embedded since the last flush to the file.
    pub fn flush(&mut self) -> Result<(), EmbedError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let err = |e: std::io::Error| EmbedError::Cache {
            path: self.path.clone(),
            reason: e.to_string(),
        };
        let file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(err)?;
        let mut out = BufWriter::new(file);
        for k in &self.pending {
            out.write_all(k).map_err(err)?;
            for x in &self.vectors[k] {
                out.write_all(&x.to_le_bytes()).map_err(err)?;
            }
        }
        out.flush().map_err(err)?;
        out.get_ref().sync_data().map_err(err)?;
        self.pending.clear();
        Ok(())
    }

    fn load(&mut self, model_id: &str) -> Result<(), EmbedError> {
        let err = |e: std::io::Error| EmbedError::Cache {
            path: self.path.clone(),
            reason: e.to_string(),
        };
        let header = header(model_id, self.dims);
        let mut bytes = Vec::new();
        match File::open(&self.path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(err)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(err(e)),
        }
        if !bytes.starts_with(&header) {
            // Missing, or written for another model or dimension: start
            // afresh rather than trust it.
            if let Some(parent) = self.path.parent() {
                fs::create_dir_all(parent).map_err(err)?;
            }
            fs::write(&self.path, &header).map_err(err)?;
            return Ok(());
        }
        let record = 16 + 4 * self.dims;
        let body = &bytes[header.len()..];
        for chunk in body.chunks_exact(record) {
            let mut k = [0u8; 16];
            k.copy_from_slice(&chunk[..16]);
            let v = chunk[16..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            self.vectors.insert(k, v);
        }
        let torn = body.len() % record;
        if torn != 0 {
            // Cut the torn record so that appends stay aligned.
            let file = OpenOptions::new()
                .write(true)
                .open(&self.path)
                .map_err(err)?;
            file.set_len((bytes.len() - torn) as u64).map_err(err)?;
        }
        Ok(())
    }
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

        for (shard, text) in [(0, "alpha"), (1, "beta")] {
            let mut cache = EmbeddingCache::open_shard(dir.path(), "m", 2, shard).unwrap();
            // What the main file holds is not embedded again.
            let (_, stats) = cache.embed_with(&["shared", text], encode).unwrap();
            assert_eq!((stats.hits, stats.embedded), (1, 1));
            cache.flush().unwrap();
        }
        assert!(dir.path().join("m.shard-0.vectors").is_file());

        let mut main = EmbeddingCache::open(dir.path(), "m", 2).unwrap();
        assert_eq!(main.len(), 3);
        let (vectors, stats) = main.embed_with(&["alpha", "beta"], refuse).unwrap();
        assert_eq!(stats.hits, 2);
        assert_eq!(vectors[1], vec![4.0, 1.0]);
        assert!(!dir.path().join("m.shard-0.vectors").exists());
        // Folded for good: a second open finds them in the main file.
        let again = EmbeddingCache::open(dir.path(), "m", 2).unwrap();
        assert_eq!(again.len(), 3);
    }
}
