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

impl EmbeddingCache {
    /// Opens (or starts) the cache of `model_id` under `dir`.
    pub fn open(dir: &Path, model_id: &str, dims: usize) -> Result<Self, EmbedError> {
        let file_name: String = model_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.@+".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{file_name}.vectors"));
        let mut cache = Self {
            path,
            dims,
            vectors: HashMap::new(),
            pending: Vec::new(),
        };
        cache.load(model_id)?;
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
