//! Sentence vectors on disk, their int8 form, and nearest-neighbour search
//! over them.
//!
//! `vectors.f32` holds one row of `dims` little-endian f32 per global
//! sentence (zeros for sentences that are not indexed). A loaded version
//! maps it into memory instead of reading it: the file is the one copy of
//! the vectors, shared by the HNSW search, the rescoring and the
//! expansion. It is read in whole at load when the graph walk reads it
//! ([`Paging::Resident`]); under an int8 walk it is read with `pread` as
//! rescoring needs rows and paged in as the expansion touches them
//! ([`Paging::OnDemand`]). `vectors.i8` ([`Quantized`]) holds the indexed rows again in int8 for a
//! profile with `index.quantization: int8`, a quarter of the size, for the
//! graph walk.

use std::path::Path;

use memmap2::Mmap;

use super::IndexError;
use crate::vector::dot;

/// Where a file's rows lie: built in memory, or mapped from the file.
enum Rows {
    Owned(Vec<f32>),
    Mapped(Mmap),
    /// Mapped, and the file kept open so that a search's scattered reads
    /// ([`Vectors::similarity`]) can copy rows out with `pread` instead
    /// of faulting them into the mapping: each fault maps the cached
    /// pages around it too (the kernel's fault-around), and all of those
    /// count as the process's resident memory.
    OnDemand {
        map: Mmap,
        file: std::fs::File,
    },
}

thread_local! {
    /// One row read with `pread`, reused by every read on its thread.
    static ROW: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Vectors of one width, row-major.
pub struct Vectors {
    pub dims: usize,
    rows: Rows,
}

/// Whether a mapped file's pages are read in when it is mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paging {
    /// Read in whole at load: every search reads it, and no query should
    /// wait on a page fault.
    Resident,
    /// Read in row by row as searches touch them: the f32 rows under an
    /// int8 search, which reads only the candidates it rescores.
    OnDemand,
}

/// Maps `path` into memory. The mapped files are parts of a published
/// index version, which is never written again: a new version is a new
/// directory, and an old one is removed whole, which leaves a live mapping
/// valid (the inode stays until it is unmapped).
fn map(path: &Path, paging: Paging) -> Result<Option<(Mmap, std::fs::File)>, IndexError> {
    let file = std::fs::File::open(path).map_err(|e| IndexError::io(path, e))?;
    let len = file.metadata().map_err(|e| IndexError::io(path, e))?.len();
    if len == 0 {
        return Ok(None);
    }
    let mut options = memmap2::MmapOptions::new();
    if paging == Paging::Resident {
        options.populate();
    }
    // SAFETY: the file is immutable once published (above); nothing in
    // this process writes to it, and the mapping is only read.
    let mapped = unsafe { options.map(&file) }.map_err(|e| IndexError::io(path, e))?;
    // A search reads scattered rows: without this, every row read pages in
    // (and counts as resident) the 64 KiB around it.
    #[cfg(unix)]
    let _ = mapped.advise(memmap2::Advice::Random);
    Ok(Some((mapped, file)))
}

impl Vectors {
    pub fn from_vec(dims: usize, data: Vec<f32>) -> Self {
        Self {
            dims,
            rows: Rows::Owned(data),
        }
    }

    /// `rows` rows of zeros, to be filled.
    pub fn zeroed(rows: usize, dims: usize) -> Self {
        Self::from_vec(dims, vec![0.0; rows * dims])
    }

    /// Every value, row after row.
    pub fn as_slice(&self) -> &[f32] {
        match &self.rows {
            Rows::Owned(data) => data,
            // Checked at read: the map is page-aligned and a whole number of
            // f32, so the cast cannot fail.
            Rows::Mapped(map) | Rows::OnDemand { map, .. } => bytemuck::cast_slice(map),
        }
    }

    pub fn len(&self) -> usize {
        self.as_slice().len().checked_div(self.dims).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn row(&self, i: u32) -> &[f32] {
        let i = i as usize;
        &self.as_slice()[i * self.dims..(i + 1) * self.dims]
    }

    /// Row `i` to fill; rows built in memory only.
    ///
    /// # Panics
    /// On mapped rows, which are read-only.
    pub fn row_mut(&mut self, i: usize) -> &mut [f32] {
        let dims = self.dims;
        match &mut self.rows {
            Rows::Owned(data) => &mut data[i * dims..(i + 1) * dims],
            Rows::Mapped(_) | Rows::OnDemand { .. } => panic!("mapped vectors are read-only"),
        }
    }

    /// Bytes the rows take, in memory or mapped.
    pub fn bytes(&self) -> usize {
        self.as_slice().len() * 4
    }

    pub fn write(&self, path: &Path) -> Result<(), IndexError> {
        let mut bytes = Vec::with_capacity(self.bytes());
        for x in self.as_slice() {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        std::fs::write(path, bytes).map_err(|e| IndexError::io(path, e))
    }

    /// Maps a vector file into memory, read in whole.
    pub fn read(path: &Path, dims: usize) -> Result<Self, IndexError> {
        Self::map(path, dims, Paging::Resident)
    }

    /// Maps a vector file into memory, paged as `paging` says (reads it
    /// into memory on a big-endian machine).
    pub fn map(path: &Path, dims: usize, paging: Paging) -> Result<Self, IndexError> {
        let len = std::fs::metadata(path)
            .map_err(|e| IndexError::io(path, e))?
            .len() as usize;
        if dims == 0 || !len.is_multiple_of(4 * dims) {
            return Err(IndexError::Corrupt(format!(
                "{}: {len} bytes is not a whole number of {dims}-dimensional rows",
                path.display(),
            )));
        }
        if cfg!(target_endian = "big") {
            let bytes = std::fs::read(path).map_err(|e| IndexError::io(path, e))?;
            let data = bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            return Ok(Self::from_vec(dims, data));
        }
        let rows = match map(path, paging)? {
            Some((map, file)) => {
                if bytemuck::try_cast_slice::<u8, f32>(&map).is_err() {
                    return Err(IndexError::Corrupt(format!(
                        "{}: mapped at an address not aligned for f32",
                        path.display()
                    )));
                }
                match paging {
                    Paging::Resident => Rows::Mapped(map),
                    Paging::OnDemand => Rows::OnDemand { map, file },
                }
            }
            None => Rows::Owned(Vec::new()),
        };
        Ok(Self { dims, rows })
    }

    /// `query · row`, the row read with `pread` when the rows are paged
    /// on demand (it stays out of the process's resident memory), else
    /// where it lies. Rescoring an int8 walk's candidates reads rows this
    /// way: a couple of hundred scattered rows a query.
    pub fn similarity(&self, query: &[f32], row: u32) -> f32 {
        #[cfg(unix)]
        if let Rows::OnDemand { file, .. } = &self.rows {
            use std::os::unix::fs::FileExt;
            let offset = row as u64 * self.dims as u64 * 4;
            let read = ROW.with_borrow_mut(|buffer| {
                buffer.resize(self.dims, 0.0);
                file.read_exact_at(bytemuck::cast_slice_mut(buffer.as_mut_slice()), offset)
                    .map(|()| dot(query, buffer))
            });
            // The file is a published, immutable part of the version; if
            // the read fails anyway, the mapping answers.
            if let Ok(similarity) = read {
                return similarity;
            }
        }
        dot(query, self.row(row))
    }

    /// Exact top-`k` by dot product among rows where `allowed` holds.
    pub fn exact_search(
        &self,
        query: &[f32],
        k: usize,
        allowed: &dyn Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        let mut scored: Vec<(u32, f32)> = (0..self.len() as u32)
            .filter(|&i| allowed(i))
            .map(|i| (i, dot(query, self.row(i))))
            .collect();
        let k = k.min(scored.len());
        if k == 0 {
            return Vec::new();
        }
        scored.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
    }
}

/// The graph's rows in int8: each dimension scaled by its largest magnitude
/// over the rows, so that every code uses the range −127..=127.
///
/// The query stays in f32 and is multiplied by the scales once
/// ([`Quantized::prepare`]); a score is then one f32 × int8 dot product, and
/// only the stored side carries rounding. `vectors.i8`: `dims` little-endian
/// f32 scales, then one row of `dims` bytes per graph node, in node order.
pub struct Quantized {
    dims: usize,
    scales: Vec<f32>,
    codes: Codes,
}

enum Codes {
    Owned(Vec<u8>),
    Mapped(Mmap),
}

impl Quantized {
    /// Quantizes `rows` (sentence numbers, the graph's node order) of
    /// `vectors`.
    pub fn build(vectors: &Vectors, rows: &[u32]) -> Self {
        let dims = vectors.dims;
        let mut largest = vec![0f32; dims];
        for &r in rows {
            for (m, x) in largest.iter_mut().zip(vectors.row(r)) {
                *m = m.max(x.abs());
            }
        }
        let scales: Vec<f32> = largest
            .iter()
            .map(|&m| if m > 0.0 { m / 127.0 } else { 1.0 })
            .collect();
        let mut codes = Vec::with_capacity(rows.len() * dims);
        for &r in rows {
            codes.extend(
                vectors
                    .row(r)
                    .iter()
                    .zip(&scales)
                    .map(|(x, s)| (x / s).round().clamp(-127.0, 127.0) as i8 as u8),
            );
        }
        Self {
            dims,
            scales,
            codes: Codes::Owned(codes),
        }
    }

    fn codes(&self) -> &[u8] {
        match &self.codes {
            Codes::Owned(codes) => codes,
            Codes::Mapped(map) => &map[4 * self.dims..],
        }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.codes().len().checked_div(self.dims).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the codes take, in memory or mapped.
    pub fn bytes(&self) -> usize {
        self.codes().len() + 4 * self.scales.len()
    }

    /// The query as [`Quantized::score`] takes it: scaled per dimension.
    pub fn prepare(&self, query: &[f32]) -> Vec<f32> {
        query.iter().zip(&self.scales).map(|(q, s)| q * s).collect()
    }

    /// The dot product of a prepared query with node `node`'s row.
    pub fn score(&self, prepared: &[f32], node: u32) -> f32 {
        let start = node as usize * self.dims;
        let row = &self.codes()[start..start + self.dims];
        // Eight accumulators, as in `vector::dot`, so that the loop
        // vectorises.
        let mut acc = [0f32; 8];
        let (q_chunks, r_chunks) = (prepared.chunks_exact(8), row.chunks_exact(8));
        let tail: f32 = q_chunks
            .remainder()
            .iter()
            .zip(r_chunks.remainder())
            .map(|(q, &c)| q * (c as i8) as f32)
            .sum();
        for (q, c) in q_chunks.zip(r_chunks) {
            for lane in 0..8 {
                acc[lane] += q[lane] * (c[lane] as i8) as f32;
            }
        }
        acc.iter().sum::<f32>() + tail
    }

    pub fn write(&self, path: &Path) -> Result<(), IndexError> {
        let mut bytes = Vec::with_capacity(self.bytes());
        for s in &self.scales {
            bytes.extend_from_slice(&s.to_le_bytes());
        }
        bytes.extend_from_slice(self.codes());
        std::fs::write(path, bytes).map_err(|e| IndexError::io(path, e))
    }

    /// Maps `vectors.i8`, which must hold `rows` rows of `dims`.
    pub fn read(path: &Path, dims: usize, rows: usize) -> Result<Self, IndexError> {
        let corrupt = |why: String| IndexError::Corrupt(format!("{}: {why}", path.display()));
        let expected = 4 * dims + rows * dims;
        let (map, _) = map(path, Paging::Resident)?.ok_or_else(|| corrupt("empty".into()))?;
        if map.len() != expected {
            return Err(corrupt(format!(
                "{} bytes where {rows} rows of {dims} take {expected}",
                map.len()
            )));
        }
        let scales: Vec<f32> = map[..4 * dims]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if scales.iter().any(|s| !s.is_finite() || *s <= 0.0) {
            return Err(corrupt("a scale that is not a positive number".into()));
        }
        Ok(Self {
            dims,
            scales,
            codes: Codes::Mapped(map),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_vectors_read_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.f32");
        let vectors = Vectors::from_vec(3, vec![0.5, -1.0, 2.0, 0.0, 0.25, -0.125]);
        vectors.write(&path).unwrap();
        let read = Vectors::read(&path, 3).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read.row(1), &[0.0, 0.25, -0.125]);
        assert_eq!(read.as_slice(), vectors.as_slice());

        std::fs::write(&path, []).unwrap();
        assert!(Vectors::read(&path, 3).unwrap().is_empty());
        std::fs::write(&path, [0u8; 8]).unwrap();
        let err = Vectors::read(&path, 3).err().unwrap().to_string();
        assert!(err.contains("not a whole number"), "{err}");
    }

    #[test]
    fn rows_paged_on_demand_are_read_with_pread_to_the_same_scores() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.f32");
        let data: Vec<f32> = (0..40).map(|i| (i as f32 * 0.37).sin()).collect();
        let vectors = Vectors::from_vec(8, data);
        vectors.write(&path).unwrap();
        let paged = Vectors::map(&path, 8, Paging::OnDemand).unwrap();
        assert!(matches!(paged.rows, Rows::OnDemand { .. }));
        let query: Vec<f32> = (0..8).map(|i| i as f32 - 3.5).collect();
        for row in 0..5 {
            let want = dot(&query, vectors.row(row));
            assert_eq!(paged.similarity(&query, row), want);
            assert_eq!(vectors.similarity(&query, row), want);
        }
    }

    #[test]
    fn int8_scores_track_f32_dot_products() {
        let mut data = Vec::new();
        for i in 0..50u32 {
            let mut v: Vec<f32> = (0..32)
                .map(|d| ((i * 7 + d * 13) % 17) as f32 - 8.0)
                .collect();
            crate::vector::normalize(&mut v);
            data.extend(v);
        }
        let vectors = Vectors::from_vec(32, data);
        let rows: Vec<u32> = (10..50).collect();
        let quantized = Quantized::build(&vectors, &rows);
        let query = vectors.row(3).to_vec();
        let prepared = quantized.prepare(&query);
        for (node, &row) in rows.iter().enumerate() {
            let exact = dot(&query, vectors.row(row));
            let approx = quantized.score(&prepared, node as u32);
            assert!((exact - approx).abs() < 0.02, "{exact} vs {approx}");
        }

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.i8");
        quantized.write(&path).unwrap();
        let read = Quantized::read(&path, 32, 40).unwrap();
        assert_eq!(read.codes(), quantized.codes());
        assert_eq!(read.score(&prepared, 7), quantized.score(&prepared, 7));
        let err = Quantized::read(&path, 32, 41).err().unwrap().to_string();
        assert!(err.contains("where 41 rows"), "{err}");
    }
}
