//! The HNSW graph over the indexed sentences' vectors (Malkov & Yashunin,
//! "Efficient and robust approximate nearest neighbor search using
//! Hierarchical Navigable Small World graphs").
//!
//! Built on every core: nodes are inserted concurrently, each holding its
//! neighbour lists behind a lock of its own. Once built the graph is flat:
//! one array of neighbour numbers per layer with an offset per node, four
//! bytes an edge, and no copy of the vectors. A search reads the vectors
//! where they lie: the memory-mapped `vectors.f32`, or the int8 rows of
//! [`Quantized`] with the candidates rescored in f32.
//!
//! `hnsw.graph`, little-endian `u32` words:
//!
//! ```text
//! magic "TRHN", format 1, nodes n, layers L, entry node, m
//! rows[n]                      each node's sentence number
//! for l in 1..L:  count, nodes[count] (ascending)
//! for l in 0..L:  offsets[count_l + 1], neighbours[offsets[count_l]]
//! ```
//!
//! Layer 0 holds every node (`count_0 = n`, node `i` at slot `i`); node
//! numbers in the lists are graph nodes, not sentences.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::{Mutex, RwLock};

use rayon::prelude::*;

use super::IndexError;
use super::vectors::{Quantized, Vectors};
use crate::vector::dot;

const MAGIC: u32 = u32::from_le_bytes(*b"TRHN");
const GRAPH_FORMAT: u32 = 1;
/// Layers above this are never drawn (a million nodes at m 16 reach about
/// five).
const MAX_LAYER: usize = 16;
/// Nodes inserted one at a time before the rest go in concurrently, so that
/// concurrent insertions start from a connected graph.
const SERIAL_START: usize = 256;

/// One layer: the neighbours of each of its nodes.
#[derive(Debug, Default, PartialEq)]
struct Layer {
    /// The layer's nodes, ascending; empty for layer 0, which holds all.
    nodes: Vec<u32>,
    /// `neighbours[offsets[s]..offsets[s + 1]]` are slot `s`'s neighbours.
    offsets: Vec<u32>,
    neighbours: Vec<u32>,
}

impl Layer {
    fn slot(&self, node: u32, layer: usize) -> Option<usize> {
        if layer == 0 {
            Some(node as usize)
        } else {
            self.nodes.binary_search(&node).ok()
        }
    }

    fn neighbours_of(&self, slot: usize) -> &[u32] {
        let (start, end) = (self.offsets[slot] as usize, self.offsets[slot + 1] as usize);
        &self.neighbours[start..end]
    }
}

/// The graph over the indexed sentences.
#[derive(Debug, PartialEq)]
pub struct HnswGraph {
    /// Each node's sentence number.
    rows: Vec<u32>,
    /// Layer 0 first.
    layers: Vec<Layer>,
    entry: u32,
    m: u32,
}

/// How a search scores a node against the query: higher is nearer.
trait Scorer: Sync {
    fn score(&self, node: u32) -> f32;
}

/// A candidate: a node and its similarity to the query, ordered by
/// similarity (ties by node, so that equal scores order the same way in
/// every run).
#[derive(Clone, Copy, Debug)]
struct Scored {
    similarity: f32,
    node: u32,
}

impl PartialEq for Scored {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Scored {}
impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        self.similarity
            .total_cmp(&other.similarity)
            .then(other.node.cmp(&self.node))
    }
}

/// Nodes seen by the current search: a stamp per node, so that starting a
/// search costs nothing but bumping the stamp.
struct Visited {
    stamps: Vec<u32>,
    current: u32,
}

impl Visited {
    fn reset(&mut self, nodes: usize) {
        if self.stamps.len() < nodes {
            self.stamps.resize(nodes, 0);
        }
        self.current = self.current.wrapping_add(1);
        if self.current == 0 {
            self.stamps.fill(0);
            self.current = 1;
        }
    }

    /// Marks `node`; true the first time.
    fn insert(&mut self, node: u32) -> bool {
        let stamp = &mut self.stamps[node as usize];
        let first = *stamp != self.current;
        *stamp = self.current;
        first
    }
}

thread_local! {
    static VISITED: RefCell<Visited> = const {
        RefCell::new(Visited { stamps: Vec::new(), current: 0 })
    };
}

/// The `ef` nodes nearest the query in one layer, reached from `entries`,
/// best first. `neighbours` gives a node's list in that layer.
fn search_layer<S: Scorer + ?Sized>(
    scorer: &S,
    nodes: usize,
    entries: &[Scored],
    ef: usize,
    neighbours: &dyn Fn(u32, &mut Vec<u32>),
) -> Vec<Scored> {
    VISITED.with(|visited| {
        let mut visited = visited.borrow_mut();
        visited.reset(nodes);
        // `candidates` pops the nearest; `found` keeps the `ef` best with
        // the farthest on top.
        let mut candidates: BinaryHeap<Scored> = BinaryHeap::with_capacity(ef * 2);
        let mut found: BinaryHeap<std::cmp::Reverse<Scored>> = BinaryHeap::with_capacity(ef + 1);
        for &e in entries {
            if visited.insert(e.node) {
                candidates.push(e);
                found.push(std::cmp::Reverse(e));
            }
        }
        while found.len() > ef {
            found.pop();
        }
        let mut list = Vec::new();
        while let Some(c) = candidates.pop() {
            let farthest = found.peek().map_or(f32::NEG_INFINITY, |f| f.0.similarity);
            if c.similarity < farthest && found.len() >= ef {
                break;
            }
            neighbours(c.node, &mut list);
            for &n in &list {
                if !visited.insert(n) {
                    continue;
                }
                let similarity = scorer.score(n);
                let farthest = found.peek().map_or(f32::NEG_INFINITY, |f| f.0.similarity);
                if found.len() < ef || similarity > farthest {
                    let s = Scored {
                        similarity,
                        node: n,
                    };
                    candidates.push(s);
                    found.push(std::cmp::Reverse(s));
                    if found.len() > ef {
                        found.pop();
                    }
                }
            }
        }
        let mut out: Vec<Scored> = found.into_iter().map(|r| r.0).collect();
        out.sort_unstable_by(|a, b| b.cmp(a));
        out
    })
}

/// Keeps at most `max` of `candidates` (best first): a candidate is kept
/// when it is nearer the new node than any node already kept, so that the
/// links spread in every direction instead of crowding into one cluster
/// (the paper's heuristic, algorithm 4).
fn select_neighbours<'v>(
    candidates: &[Scored],
    max: usize,
    vector: &dyn Fn(u32) -> &'v [f32],
) -> Vec<u32> {
    let mut kept: Vec<u32> = Vec::with_capacity(max);
    for c in candidates {
        if kept.len() == max {
            break;
        }
        let v = vector(c.node);
        if kept.iter().all(|&k| dot(v, vector(k)) < c.similarity) {
            kept.push(c.node);
        }
    }
    kept
}

/// The graph while it is built: each node's lists behind its own lock.
struct Building<'a> {
    vectors: &'a Vectors,
    rows: &'a [u32],
    levels: Vec<u8>,
    links: Vec<Mutex<Vec<Vec<u32>>>>,
    entry: RwLock<(u32, u8)>,
    m: usize,
    ef_construction: usize,
}

/// Scores nodes against a vector of the graph's own during the build.
struct BuildScorer<'a, 'b> {
    building: &'a Building<'b>,
    query: &'a [f32],
}

impl Scorer for BuildScorer<'_, '_> {
    fn score(&self, node: u32) -> f32 {
        dot(self.query, self.building.vector(node))
    }
}

impl Building<'_> {
    fn vector(&self, node: u32) -> &[f32] {
        self.vectors.row(self.rows[node as usize])
    }

    fn max_links(&self, layer: usize) -> usize {
        if layer == 0 { self.m * 2 } else { self.m }
    }

    fn neighbours(&self, node: u32, layer: usize, out: &mut Vec<u32>) {
        out.clear();
        let links = self.links[node as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(list) = links.get(layer) {
            out.extend_from_slice(list);
        }
    }

    fn insert(&self, node: u32) {
        let query = self.vector(node);
        let scorer = BuildScorer {
            building: self,
            query,
        };
        let level = self.levels[node as usize] as usize;
        let (entry, top) = *self.entry.read().unwrap_or_else(|e| e.into_inner());
        if entry == node {
            return;
        }
        let mut nearest = vec![Scored {
            similarity: scorer.score(entry),
            node: entry,
        }];
        let nodes = self.rows.len();
        for layer in (level + 1..=top as usize).rev() {
            nearest = greedy(&scorer, nearest[0], &|n, out| {
                self.neighbours(n, layer, out)
            });
        }
        for layer in (0..=level.min(top as usize)).rev() {
            let mut found =
                search_layer(&scorer, nodes, &nearest, self.ef_construction, &|n, out| {
                    self.neighbours(n, layer, out)
                });
            // A node inserted concurrently may already link back to this
            // one, so the search can reach it; it is no neighbour of itself.
            found.retain(|s| s.node != node);
            if found.is_empty() {
                continue;
            }
            let max = self.max_links(layer);
            let chosen = select_neighbours(&found, max, &|n| self.vector(n));
            self.links[node as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner())[layer] = chosen.clone();
            for &other in &chosen {
                self.link_back(other, node, layer, max);
            }
            nearest = found;
        }
        if level > top as usize {
            let mut entry = self.entry.write().unwrap_or_else(|e| e.into_inner());
            if level > entry.1 as usize {
                *entry = (node, level as u8);
            }
        }
    }

    /// Adds `node` to `other`'s list in `layer`; a list over `max` keeps
    /// the `max` the heuristic selects among its members and the new one.
    fn link_back(&self, other: u32, node: u32, layer: usize, max: usize) {
        let mut links = self.links[other as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(list) = links.get_mut(layer) else {
            return;
        };
        if list.contains(&node) {
            return;
        }
        if list.len() < max {
            list.push(node);
            return;
        }
        let centre = self.vector(other);
        let mut candidates: Vec<Scored> = list
            .iter()
            .chain(std::iter::once(&node))
            .map(|&n| Scored {
                similarity: dot(centre, self.vector(n)),
                node: n,
            })
            .collect();
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        *list = select_neighbours(&candidates, max, &|n| self.vector(n));
    }
}

/// Walks from `start` to a node none of whose neighbours is nearer.
fn greedy<S: Scorer + ?Sized>(
    scorer: &S,
    start: Scored,
    neighbours: &dyn Fn(u32, &mut Vec<u32>),
) -> Vec<Scored> {
    let mut best = start;
    let mut list = Vec::new();
    loop {
        let mut moved = false;
        neighbours(best.node, &mut list);
        for &n in &list {
            let similarity = scorer.score(n);
            if similarity > best.similarity {
                best = Scored {
                    similarity,
                    node: n,
                };
                moved = true;
            }
        }
        if !moved {
            return vec![best];
        }
    }
}

/// A node's layer: drawn from an exponential distribution (scale
/// `1 / ln m`) through a hash of its number, so that a build of the same
/// rows draws the same layers.
fn level_of(node: u32, m: usize) -> u8 {
    let mut z = (node as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    // Uniform in (0, 1].
    let u = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let scale = 1.0 / (m.max(2) as f64).ln();
    ((-u.ln() * scale) as usize).min(MAX_LAYER - 1) as u8
}

/// Scores graph nodes against a query in f32.
struct ExactScorer<'a> {
    vectors: &'a Vectors,
    rows: &'a [u32],
    query: &'a [f32],
}

impl Scorer for ExactScorer<'_> {
    fn score(&self, node: u32) -> f32 {
        dot(self.query, self.vectors.row(self.rows[node as usize]))
    }
}

/// Scores graph nodes against a query through their int8 rows.
struct QuantizedScorer<'a> {
    quantized: &'a Quantized,
    query: Vec<f32>,
}

impl Scorer for QuantizedScorer<'_> {
    fn score(&self, node: u32) -> f32 {
        self.quantized.score(&self.query, node)
    }
}

impl HnswGraph {
    /// Builds the graph over `rows` (sentence numbers) of `vectors`, with
    /// `m` links a node (twice that in layer 0) and a candidate list of
    /// `ef_construction`, inserting on every core of the current rayon
    /// pool.
    pub fn build(vectors: &Vectors, rows: &[u32], m: usize, ef_construction: usize) -> Self {
        let m = m.max(2);
        let levels: Vec<u8> = (0..rows.len() as u32).map(|n| level_of(n, m)).collect();
        let links = levels
            .iter()
            .map(|&l| Mutex::new(vec![Vec::new(); l as usize + 1]))
            .collect();
        let building = Building {
            vectors,
            rows,
            entry: RwLock::new((0, levels.first().copied().unwrap_or(0))),
            levels,
            links,
            m,
            ef_construction: ef_construction.max(m),
        };
        let serial = rows.len().min(SERIAL_START) as u32;
        for node in 1..serial {
            building.insert(node);
        }
        (serial..rows.len() as u32)
            .into_par_iter()
            .for_each(|node| building.insert(node));
        building.into_graph()
    }

    /// Reads `hnsw.graph`.
    pub fn read(path: &Path) -> Result<Self, IndexError> {
        let bytes = std::fs::read(path).map_err(|e| IndexError::io(path, e))?;
        let corrupt = |why: &str| IndexError::Corrupt(format!("{}: {why}", path.display()));
        if !bytes.len().is_multiple_of(4) {
            return Err(corrupt("not a whole number of words"));
        }
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let mut reader = Words {
            words: &words,
            at: 0,
        };
        let mut take = |n: usize| reader.take(n).ok_or_else(|| corrupt("ends early"));
        let header = take(6)?;
        if header[0] != MAGIC || header[1] != GRAPH_FORMAT {
            return Err(corrupt("not a Trellis HNSW graph of format 1"));
        }
        let (n, layer_count, entry, m) =
            (header[2] as usize, header[3] as usize, header[4], header[5]);
        if layer_count == 0 || layer_count > MAX_LAYER || (n > 0 && entry as usize >= n) {
            return Err(corrupt("a header out of range"));
        }
        let rows = take(n)?.to_vec();
        let mut members = vec![Vec::new()];
        for _ in 1..layer_count {
            let count = take(1)?[0] as usize;
            let nodes = take(count)?.to_vec();
            if nodes.iter().any(|&x| x as usize >= n) || !nodes.is_sorted() {
                return Err(corrupt("a layer's nodes out of range or order"));
            }
            members.push(nodes);
        }
        let mut layers = Vec::with_capacity(layer_count);
        for (l, nodes) in members.into_iter().enumerate() {
            let count = if l == 0 { n } else { nodes.len() };
            let offsets = take(count + 1)?.to_vec();
            if offsets.first() != Some(&0) || !offsets.is_sorted() {
                return Err(corrupt("offsets out of order"));
            }
            let total = offsets[count] as usize;
            let neighbours = take(total)?.to_vec();
            if neighbours.iter().any(|&x| x as usize >= n) {
                return Err(corrupt("a neighbour out of range"));
            }
            layers.push(Layer {
                nodes,
                offsets,
                neighbours,
            });
        }
        if reader.at != words.len() {
            return Err(corrupt("trailing words"));
        }
        Ok(Self {
            rows,
            layers,
            entry,
            m,
        })
    }

    /// Writes `hnsw.graph`.
    pub fn write(&self, path: &Path) -> Result<(), IndexError> {
        let mut words: Vec<u32> = vec![
            MAGIC,
            GRAPH_FORMAT,
            self.rows.len() as u32,
            self.layers.len() as u32,
            self.entry,
            self.m,
        ];
        words.extend_from_slice(&self.rows);
        for layer in &self.layers[1..] {
            words.push(layer.nodes.len() as u32);
            words.extend_from_slice(&layer.nodes);
        }
        for layer in &self.layers {
            words.extend_from_slice(&layer.offsets);
            words.extend_from_slice(&layer.neighbours);
        }
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(path, bytes).map_err(|e| IndexError::io(path, e))
    }

    /// Nodes in the graph.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Each node's sentence number, in node order (the order of the int8
    /// rows).
    pub fn rows(&self) -> &[u32] {
        &self.rows
    }

    /// Bytes the graph holds in memory.
    pub fn heap_bytes(&self) -> usize {
        4 * (self.rows.len()
            + self
                .layers
                .iter()
                .map(|l| l.nodes.len() + l.offsets.len() + l.neighbours.len())
                .sum::<usize>())
    }

    fn neighbours(&self, node: u32, layer: usize, out: &mut Vec<u32>) {
        out.clear();
        if let Some(l) = self.layers.get(layer)
            && let Some(slot) = l.slot(node, layer)
        {
            out.extend_from_slice(l.neighbours_of(slot));
        }
    }

    /// The `ef` nodes nearest the query by `scorer`, best first.
    fn search_nodes<S: Scorer>(&self, scorer: &S, ef: usize) -> Vec<Scored> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut nearest = vec![Scored {
            similarity: scorer.score(self.entry),
            node: self.entry,
        }];
        for layer in (1..self.layers.len()).rev() {
            nearest = greedy(scorer, nearest[0], &|n, out| self.neighbours(n, layer, out));
        }
        search_layer(scorer, self.len(), &nearest, ef, &|n, out| {
            self.neighbours(n, 0, out)
        })
    }

    /// Approximate top-`k` sentences among those `allowed`, best first,
    /// scored exactly against `vectors`. With `quantized`, the graph is
    /// walked over the int8 rows and every candidate found is rescored in
    /// f32. A filter that rejects most candidates widens the search list
    /// until `k` pass or the graph is exhausted.
    pub fn search(
        &self,
        vectors: &Vectors,
        quantized: Option<&Quantized>,
        query: &[f32],
        k: usize,
        ef: usize,
        allowed: &dyn Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        if k == 0 || self.is_empty() {
            return Vec::new();
        }
        let mut width = ef.max(k);
        loop {
            let found = match quantized {
                Some(q) => self.search_nodes(
                    &QuantizedScorer {
                        quantized: q,
                        query: q.prepare(query),
                    },
                    width,
                ),
                None => self.search_nodes(
                    &ExactScorer {
                        vectors,
                        rows: &self.rows,
                        query,
                    },
                    width,
                ),
            };
            let exhausted = found.len() < width;
            // An f32 walk scored every candidate exactly already; an int8
            // walk's scores are rescored here.
            let mut out: Vec<(u32, f32)> = found
                .iter()
                .map(|s| (self.rows[s.node as usize], s.similarity))
                .filter(|&(row, _)| (row as usize) < vectors.len() && allowed(row))
                .map(|(row, similarity)| match quantized {
                    Some(_) => (row, vectors.similarity(query, row)),
                    None => (row, similarity),
                })
                .collect();
            if out.len() >= k || exhausted || width >= 4096.max(ef) {
                out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                out.truncate(k);
                return out;
            }
            width *= 4;
        }
    }
}

impl Building<'_> {
    /// The finished graph, flat.
    fn into_graph(self) -> HnswGraph {
        let n = self.rows.len();
        let links: Vec<Vec<Vec<u32>>> = self
            .links
            .into_iter()
            .map(|l| l.into_inner().unwrap_or_else(|e| e.into_inner()))
            .collect();
        let (entry, top) = self.entry.into_inner().unwrap_or_else(|e| e.into_inner());
        let layer_count = if n == 0 { 1 } else { top as usize + 1 };
        let mut layers = Vec::with_capacity(layer_count);
        for l in 0..layer_count {
            let nodes: Vec<u32> = if l == 0 {
                Vec::new()
            } else {
                (0..n as u32)
                    .filter(|&i| links[i as usize].len() > l)
                    .collect()
            };
            let mut offsets = vec![0u32];
            let mut neighbours = Vec::new();
            let mut push = |i: usize| {
                neighbours.extend_from_slice(&links[i][l]);
                offsets.push(neighbours.len() as u32);
            };
            if l == 0 {
                (0..n).for_each(&mut push);
            } else {
                nodes.iter().for_each(|&i| push(i as usize));
            }
            layers.push(Layer {
                nodes,
                offsets,
                neighbours,
            });
        }
        HnswGraph {
            rows: self.rows.to_vec(),
            layers,
            entry,
            m: self.m as u32,
        }
    }
}

/// A cursor over the words of `hnsw.graph`.
struct Words<'a> {
    words: &'a [u32],
    at: usize,
}

impl<'a> Words<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u32]> {
        let end = self.at.checked_add(n)?;
        let out = self.words.get(self.at..end)?;
        self.at = end;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64, uniform in [-0.5, 0.5).
    fn uniform(state: &mut u64) -> f32 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f32 / (1u64 << 53) as f32 - 0.5
    }

    /// Unit vectors around 200 centres, as sentence embeddings cluster;
    /// the same centres for every `seed`, which draws the points around
    /// them (so that queries resemble the data).
    fn clustered(n: usize, dims: usize, seed: u64) -> Vectors {
        let mut state = 1;
        let centres: Vec<Vec<f32>> = (0..200)
            .map(|_| (0..dims).map(|_| uniform(&mut state)).collect())
            .collect();
        let mut state = seed.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let mut data = Vec::with_capacity(n * dims);
        for _ in 0..n {
            let c = &centres[(uniform(&mut state) + 0.5).mul_add(200.0, 0.0) as usize % 200];
            let mut v: Vec<f32> = c.iter().map(|x| x + 0.3 * uniform(&mut state)).collect();
            crate::vector::normalize(&mut v);
            data.extend(v);
        }
        Vectors::from_vec(dims, data)
    }

    fn recall(graph: &HnswGraph, vectors: &Vectors, quantized: Option<&Quantized>) -> f64 {
        let queries = clustered(100, vectors.dims, 7);
        let all = |_: u32| true;
        let mut hits = 0;
        for q in 0..queries.len() as u32 {
            let query = queries.row(q);
            let exact: Vec<u32> = vectors
                .exact_search(query, 10, &all)
                .into_iter()
                .map(|(i, _)| i)
                .collect();
            hits += graph
                .search(vectors, quantized, query, 10, 64, &all)
                .iter()
                .filter(|(i, _)| exact.contains(i))
                .count();
        }
        hits as f64 / (queries.len() * 10) as f64
    }

    #[test]
    fn finds_what_exact_search_finds_in_f32_and_int8() {
        let vectors = clustered(6000, 48, 1);
        // Every other sentence indexed, so node and sentence numbers differ.
        let rows: Vec<u32> = (0..6000).step_by(2).collect();
        let indexed = Vectors::from_vec(
            48,
            rows.iter().flat_map(|&r| vectors.row(r).to_vec()).collect(),
        );
        // Built on one thread: parallel insertion orders differ from run
        // to run, and so do the graphs, which a per-query bound would make
        // a flaky test. The parallel build's recall is what
        // `recall_at_10_is_high_on_clustered_vectors` measures.
        let graph = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| HnswGraph::build(&vectors, &rows, 16, 100));
        assert_eq!(graph.len(), 3000);
        let quantized = Quantized::build(&vectors, graph.rows());
        // Recall against exact search over the indexed rows, mapped back.
        let to_row = |(i, s): (u32, f32)| (rows[i as usize], s);
        let queries = clustered(50, 48, 9);
        let all = |_: u32| true;
        let even = |r: u32| r.is_multiple_of(2);
        for q in 0..50 {
            let query = queries.row(q);
            let exact: Vec<(u32, f32)> = indexed
                .exact_search(query, 10, &all)
                .into_iter()
                .map(to_row)
                .collect();
            let approx = graph.search(&vectors, None, query, 10, 64, &even);
            let int8 = graph.search(&vectors, Some(&quantized), query, 10, 64, &even);
            assert!(approx.iter().all(|(r, _)| r % 2 == 0));
            let hits = |found: &[(u32, f32)]| {
                found
                    .iter()
                    .filter(|(r, _)| exact.iter().any(|(e, _)| e == r))
                    .count()
            };
            assert!(hits(&approx) >= 9, "query {q}: {approx:?} vs {exact:?}");
            assert!(hits(&int8) >= 9, "query {q}: {int8:?} vs {exact:?}");
            // Rescored in f32: the scores are exact.
            for (r, s) in &int8 {
                assert!((dot(query, vectors.row(*r)) - s).abs() < 1e-6);
            }
        }
    }

    #[test]
    fn recall_at_10_is_high_on_clustered_vectors() {
        let vectors = clustered(8000, 64, 3);
        let rows: Vec<u32> = (0..8000).collect();
        let graph = HnswGraph::build(&vectors, &rows, 16, 200);
        let quantized = Quantized::build(&vectors, graph.rows());
        let f32_recall = recall(&graph, &vectors, None);
        let int8_recall = recall(&graph, &vectors, Some(&quantized));
        assert!(f32_recall >= 0.98, "{f32_recall}");
        assert!(int8_recall >= 0.97, "{int8_recall}");
    }

    #[test]
    fn a_filter_that_rejects_most_widens_the_search() {
        let vectors = clustered(6000, 32, 5);
        let rows: Vec<u32> = (0..6000).collect();
        let graph = HnswGraph::build(&vectors, &rows, 8, 64);
        let rare = |r: u32| r.is_multiple_of(500);
        let found = graph.search(&vectors, None, vectors.row(3), 5, 16, &rare);
        assert_eq!(found.len(), 5);
        assert!(found.iter().all(|(r, _)| r % 500 == 0));
    }

    #[test]
    fn writes_and_reads_back_the_same_graph() {
        let vectors = clustered(700, 16, 11);
        let rows: Vec<u32> = (100..700).collect();
        let graph = HnswGraph::build(&vectors, &rows, 6, 40);
        assert!(graph.layers.len() > 1, "expected upper layers");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hnsw.graph");
        graph.write(&path).unwrap();
        assert_eq!(HnswGraph::read(&path).unwrap(), graph);

        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 4);
        std::fs::write(&path, &bytes).unwrap();
        let err = HnswGraph::read(&path).unwrap_err().to_string();
        assert!(err.contains("ends early"), "{err}");
        bytes[0] = b'X';
        std::fs::write(&path, &bytes).unwrap();
        let err = HnswGraph::read(&path).unwrap_err().to_string();
        assert!(err.contains("not a Trellis HNSW graph"), "{err}");
    }

    #[test]
    fn empty_and_single_node_graphs_search() {
        let vectors = clustered(1, 8, 2);
        let empty = HnswGraph::build(&vectors, &[], 16, 100);
        assert!(
            empty
                .search(&vectors, None, vectors.row(0), 3, 10, &|_| true)
                .is_empty()
        );
        let one = HnswGraph::build(&vectors, &[0], 16, 100);
        let found = one.search(&vectors, None, vectors.row(0), 3, 10, &|_| true);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, 0);
    }
}
