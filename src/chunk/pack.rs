//! Greedy packing of atoms into chunks under one heading path, with
//! overlap: the shared engine of the `structure`, `semantic` and
//! `recursive` strategies.
//!
//! An atom is a run of pieces that is never split here (a sentence for
//! `structure`; a paragraph, line, sentence or word run for `recursive`);
//! strategies cut atoms to fit a chunk beforehand. A chunk is closed before
//! an atom that would take it over the limit, and, with `min_close`, at a
//! boundary once it holds that many tokens (a paragraph's start; for
//! `semantic`, a topic shift). The next chunk starts
//! with the closed chunk's trailing whole atoms that fit in the overlap
//! budget; with `fragment_overlap`, when not even the last atom fits, with
//! that atom's last words instead. Overlap atoms are dropped, oldest first,
//! when the atom that follows them would not fit.

use super::draft::{Draft, Drafts, Part, Piece, Start};
use super::fragment::trailing_words;
use super::{ChunkKind, Context, Heading};

/// The end (in pieces) and tokens of one atom.
#[derive(Clone, Copy, Debug)]
struct Atom {
    end: usize,
    tokens: u32,
}

pub(super) struct Packer<'c> {
    ctx: &'c Context<'c>,
    min_close: Option<u32>,
    fragment_overlap: bool,
    heading: Heading<'c>,
    pieces: Vec<Piece<'c>>,
    atoms: Vec<Atom>,
    /// Tokens of `pieces`.
    tokens: u32,
    /// Leading atoms that repeat the previous chunk.
    overlap_atoms: usize,
    overlap_from: Option<u32>,
}

impl<'c> Packer<'c> {
    pub fn new(ctx: &'c Context<'c>, min_close: Option<u32>, fragment_overlap: bool) -> Self {
        Self {
            ctx,
            min_close,
            fragment_overlap,
            heading: Heading {
                path: &[],
                prefix: None,
            },
            pieces: Vec::new(),
            atoms: Vec::new(),
            tokens: 0,
            overlap_atoms: 0,
            overlap_from: None,
        }
    }

    /// Starts a section: closes the current chunk (no overlap crosses
    /// heading paths).
    pub fn begin(&mut self, heading: Heading<'c>, drafts: &mut Drafts<'c>) {
        self.flush(drafts);
        self.heading = heading;
    }

    /// Closes the current chunk without carrying overlap (before a table,
    /// at the end of a section).
    pub fn flush(&mut self, drafts: &mut Drafts<'c>) {
        self.close(false, drafts);
    }

    /// The most tokens an atom may have to fit in a chunk.
    pub fn budget(&self) -> u32 {
        self.ctx.max.saturating_sub(self.heading.tokens()).max(1)
    }

    fn has_content(&self) -> bool {
        self.atoms.len() > self.overlap_atoms
    }

    fn total(&self) -> u32 {
        self.heading.tokens() + self.tokens
    }

    /// Adds an atom of `tokens` tokens (at most [`budget`](Self::budget));
    /// `boundary` when the chunk may close before it.
    pub fn push(
        &mut self,
        tokens: u32,
        boundary: bool,
        pieces: impl IntoIterator<Item = Piece<'c>>,
        drafts: &mut Drafts<'c>,
    ) {
        if self.has_content() {
            let reached_min = boundary && self.min_close.is_some_and(|min| self.total() >= min);
            if reached_min || self.total() + tokens > self.ctx.max {
                self.close(true, drafts);
            }
        }
        while self.overlap_atoms > 0 && self.total() + tokens > self.ctx.max {
            self.drop_first_atom();
        }
        self.pieces.extend(pieces);
        self.tokens += tokens;
        self.atoms.push(Atom {
            end: self.pieces.len(),
            tokens,
        });
    }

    fn drop_first_atom(&mut self) {
        if self.atoms.is_empty() {
            return;
        }
        let first = self.atoms.remove(0);
        self.pieces.drain(..first.end.min(self.pieces.len()));
        for atom in &mut self.atoms {
            atom.end -= first.end;
        }
        self.tokens = self.tokens.saturating_sub(first.tokens);
        self.overlap_atoms = self.overlap_atoms.saturating_sub(1);
        if self.overlap_atoms == 0 {
            self.overlap_from = None;
        }
    }

    fn close(&mut self, carry: bool, drafts: &mut Drafts<'c>) {
        if !self.has_content() {
            self.clear();
            return;
        }
        let (carried, carried_atoms) = if carry {
            self.trailing_overlap()
        } else {
            (Vec::new(), Vec::new())
        };
        let overlap_pieces = match self.overlap_atoms.checked_sub(1) {
            Some(last) => self.atoms.get(last).map_or(0, |a| a.end),
            None => 0,
        };
        let next = Vec::with_capacity(self.pieces.len());
        let part = Part {
            path: self.heading.path,
            head: self.heading.prefix.iter().cloned().collect(),
            body: std::mem::replace(&mut self.pieces, next),
        };
        let draft = Draft::new(ChunkKind::Text, part, overlap_pieces, self.overlap_from);
        let id = drafts.push(draft);
        self.clear();
        if !carried.is_empty() {
            self.tokens = carried_atoms.iter().map(|a| a.tokens).sum();
            self.overlap_atoms = carried_atoms.len();
            // Into the vectors already sized for a chunk, which are empty.
            self.atoms.extend(carried_atoms);
            self.pieces.extend(carried);
            self.overlap_from = Some(id);
        }
    }

    fn clear(&mut self) {
        self.pieces.clear();
        self.atoms.clear();
        self.tokens = 0;
        self.overlap_atoms = 0;
        self.overlap_from = None;
    }

    /// The overlap for the next chunk: trailing whole content atoms within
    /// the budget, else (with `fragment_overlap`) the last words of the last
    /// piece.
    fn trailing_overlap(&self) -> (Vec<Piece<'c>>, Vec<Atom>) {
        let budget = self.ctx.overlap;
        if budget == 0 {
            return (Vec::new(), Vec::new());
        }
        let content = self.atoms.get(self.overlap_atoms..).unwrap_or_default();
        let mut taken = 0;
        let mut tokens = 0;
        for atom in content.iter().rev() {
            if tokens + atom.tokens > budget {
                break;
            }
            tokens += atom.tokens;
            taken += 1;
        }
        if taken > 0 {
            let first = self.atoms.len() - taken;
            let start = first
                .checked_sub(1)
                .and_then(|i| self.atoms.get(i))
                .map_or(0, |a| a.end);
            let pieces = self.pieces.get(start..).unwrap_or_default().to_vec();
            let atoms = self
                .atoms
                .get(first..)
                .unwrap_or_default()
                .iter()
                .map(|a| Atom {
                    end: a.end - start,
                    tokens: a.tokens,
                })
                .collect();
            return (pieces, atoms);
        }
        let Some(last) = self.pieces.last().filter(|_| self.fragment_overlap) else {
            return (Vec::new(), Vec::new());
        };
        let range = trailing_words(&last.text, budget, self.ctx.counter);
        if range.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let tokens = last
            .text
            .get(range.clone())
            .map_or(0, |s| self.ctx.count(s));
        let fragment = last.fragment(range, tokens, Start::Continue);
        (vec![fragment], vec![Atom { end: 1, tokens }])
    }
}
