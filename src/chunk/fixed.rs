//! The `fixed` strategy: windows of `fixed.sizeTokens` tokens over the
//! document's sentence stream, consecutive windows sharing
//! `fixed.overlapTokens` tokens.
//!
//! A window is filled with sentences in reading order, across paragraphs
//! and sections; the sentence that would overflow it is cut at a word
//! boundary so that the window holds exactly its size (with an additive
//! counter), and the next window starts with the last `overlapTokens`
//! tokens of the previous one, then the rest of the cut sentence. Windows
//! hold sentence text only (paragraphs still separated by a blank line, no
//! heading prefix or list markers, which would not be part of the stream);
//! their `heading_path` is the common prefix of their sentences' paths.
//! Tables are not windowed through: a table ends the current window and
//! becomes table chunks, and the next window starts fresh after it.

use super::draft::{Draft, Drafts, Fragments, Part, Piece, Start, common_path};
use super::fragment::{Words, trailing_words};
use super::{Block, ChunkKind, Context, table};

pub(super) fn build<'c>(ctx: &'c Context<'c>, drafts: &mut Drafts<'c>) {
    let size = ctx.spec.fixed.size_tokens.clamp(1, ctx.max);
    let mut window = Window {
        ctx,
        size,
        overlap: ctx.spec.fixed.overlap_tokens.min(size / 2),
        pieces: Vec::new(),
        tokens: 0,
        overlap_pieces: 0,
        overlap_from: None,
    };
    for section in &ctx.skeleton.sections {
        for block in ctx.blocks(section) {
            match block {
                Block::Prose(paragraph) => {
                    for (k, sentence) in ctx.sentences(paragraph).iter().enumerate() {
                        let start = if k == 0 {
                            Start::Paragraph
                        } else {
                            Start::Continue
                        };
                        let tokens = ctx.count(&sentence.text);
                        window.push(Piece::of_sentence(sentence, tokens, start, false), drafts);
                    }
                }
                Block::Table {
                    caption,
                    paragraph,
                    table,
                } => {
                    window.close(false, drafts);
                    table::build(
                        ctx,
                        &ctx.heading(section),
                        caption,
                        paragraph,
                        table,
                        drafts,
                    );
                }
            }
        }
    }
    window.close(false, drafts);
}

struct Window<'c> {
    ctx: &'c Context<'c>,
    size: u32,
    overlap: u32,
    pieces: Vec<Piece<'c>>,
    tokens: u32,
    /// Leading pieces repeated from the previous window.
    overlap_pieces: usize,
    overlap_from: Option<u32>,
}

impl<'c> Window<'c> {
    fn has_content(&self) -> bool {
        self.pieces.len() > self.overlap_pieces
    }

    fn add(&mut self, piece: Piece<'c>) {
        self.tokens += piece.tokens;
        self.pieces.push(piece);
    }

    fn push(&mut self, piece: Piece<'c>, drafts: &mut Drafts<'c>) {
        if self.tokens + piece.tokens <= self.size {
            self.add(piece);
            return;
        }
        let words = Words::new(&piece.text);
        if words.is_empty() {
            self.close(true, drafts);
            self.add(piece);
            return;
        }
        let mut fragments = Fragments::new(&piece);
        let mut from = 0;
        let mut rest = piece.tokens;
        while from < words.len() {
            let room = self.size.saturating_sub(self.tokens);
            let start = if from == 0 {
                piece.start
            } else {
                Start::Continue
            };
            if rest <= room {
                let range = words.span(from, words.len());
                self.add(fragments.cut(range, rest, start));
                return;
            }
            let mut k = words.take(from, room, self.ctx.counter);
            if k == 0 {
                if self.has_content() {
                    self.close(true, drafts);
                    continue;
                }
                if self.overlap_pieces > 0 {
                    self.clear();
                    continue;
                }
                // One word longer than a whole window: taken whole, the fit
                // check halves it.
                k = 1;
            }
            let range = words.span(from, from + k);
            let tokens = piece
                .text
                .get(range.clone())
                .map_or(0, |s| self.ctx.count(s));
            self.add(fragments.cut(range, tokens, start));
            from += k;
            rest = rest.saturating_sub(tokens);
            if from < words.len() {
                self.close(true, drafts);
            }
        }
    }

    fn clear(&mut self) {
        self.pieces.clear();
        self.tokens = 0;
        self.overlap_pieces = 0;
        self.overlap_from = None;
    }

    fn close(&mut self, carry: bool, drafts: &mut Drafts<'c>) {
        if !self.has_content() {
            self.clear();
            return;
        }
        let carried = if carry { self.tail() } else { Vec::new() };
        let part = Part {
            path: self.path(),
            head: Vec::new(),
            body: std::mem::take(&mut self.pieces),
        };
        let draft = Draft::new(
            ChunkKind::Text,
            part,
            self.overlap_pieces,
            self.overlap_from,
        );
        let id = drafts.push(draft);
        self.clear();
        if !carried.is_empty() {
            self.overlap_pieces = carried.len();
            self.overlap_from = Some(id);
            for piece in carried {
                self.add(piece);
            }
        }
    }

    /// The last `overlap` tokens of the window, cut at a word boundary.
    fn tail(&self) -> Vec<Piece<'c>> {
        let mut budget = self.overlap;
        let mut first = self.pieces.len();
        while let Some(piece) = first.checked_sub(1).and_then(|i| self.pieces.get(i)) {
            if piece.tokens > budget {
                break;
            }
            budget -= piece.tokens;
            first -= 1;
        }
        let mut tail = Vec::new();
        if let Some(piece) = first.checked_sub(1).and_then(|i| self.pieces.get(i))
            && budget > 0
        {
            let range = trailing_words(&piece.text, budget, self.ctx.counter);
            if !range.is_empty() {
                let tokens = piece
                    .text
                    .get(range.clone())
                    .map_or(0, |s| self.ctx.count(s));
                tail.push(piece.fragment(range, tokens, Start::Continue));
            }
        }
        tail.extend(self.pieces.get(first..).unwrap_or_default().iter().cloned());
        tail
    }

    /// The common prefix of the heading paths of the window's sentences.
    fn path(&self) -> &'c [String] {
        let skeleton = self.ctx.skeleton;
        let mut path: Option<&'c [String]> = None;
        let mut last_section = None;
        for piece in &self.pieces {
            let Some(sentence) = piece
                .sentence
                .and_then(|id| skeleton.sentences.get(id.index()))
            else {
                continue;
            };
            if last_section == Some(sentence.section) {
                continue;
            }
            last_section = Some(sentence.section);
            let Some(section) = skeleton.sections.get(sentence.section.index()) else {
                continue;
            };
            path = Some(match path {
                Some(p) => common_path(p, &section.path.0),
                None => &section.path.0,
            });
        }
        path.unwrap_or_default()
    }
}
