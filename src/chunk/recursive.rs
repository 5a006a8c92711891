//! The `recursive` strategy: LangChain's recursive splitter, measured in
//! tokens and cut along the skeleton.
//!
//! Each section's content is split on the coarsest boundary that makes
//! pieces fit `maxTokens`: paragraphs (list items and code blocks count as
//! paragraphs), then lines (within code blocks), then sentences (the
//! skeleton's), then words. The pieces are then packed greedily up to
//! `maxTokens`; the next chunk starts with the previous chunk's trailing
//! whole pieces that fit in `overlapTokens`. Working per section keeps one
//! heading path per chunk, so chunks carry the heading prefix like
//! `structure` chunks; tables become table chunks as in every strategy.

use super::draft::{Drafts, Fragments, Piece, Start, sum_tokens};
use super::pack::Packer;
use super::{Block, Context, table};

pub(super) fn build<'c>(ctx: &'c Context<'c>, drafts: &mut Drafts<'c>) {
    let mut packer = Packer::new(ctx, None, false);
    let mut paragraph_pieces: Vec<Piece<'c>> = Vec::new();
    for section in &ctx.skeleton.sections {
        let heading = ctx.heading(section);
        packer.begin(heading.clone(), drafts);
        for block in ctx.blocks(section) {
            match block {
                Block::Prose(paragraph) => {
                    let budget = packer.budget();
                    paragraph_pieces.clear();
                    paragraph_pieces.extend(ctx.sentence_pieces(paragraph, budget));
                    let tokens = sum_tokens(&paragraph_pieces);
                    if tokens <= budget {
                        packer.push(tokens, true, paragraph_pieces.drain(..), drafts);
                        continue;
                    }
                    for piece in paragraph_pieces.drain(..) {
                        for atom in split_sentence(ctx, piece, budget) {
                            packer.push(atom.tokens, false, [atom], drafts);
                        }
                    }
                }
                Block::Table {
                    caption,
                    paragraph,
                    table,
                } => {
                    packer.flush(drafts);
                    table::build(ctx, &heading, caption, paragraph, table, drafts);
                }
            }
        }
    }
    packer.flush(drafts);
}

/// A sentence of a paragraph too long for one chunk: whole when it fits,
/// else its lines, else word runs.
fn split_sentence<'c>(ctx: &Context<'_>, piece: Piece<'c>, budget: u32) -> Vec<Piece<'c>> {
    if piece.tokens <= budget {
        return vec![piece];
    }
    if !piece.text.contains('\n') {
        return ctx.cut(&piece, budget);
    }
    let marker = match piece.start {
        Start::ListItem(_) => ctx.marker_tokens,
        _ => 0,
    };
    let mut out = Vec::new();
    let mut fragments = Fragments::new(&piece);
    let mut offset = 0;
    for line in piece.text.split('\n') {
        let range = offset..offset + line.len();
        offset = range.end + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (start, extra) = if out.is_empty() {
            (piece.start, marker)
        } else {
            (Start::Line, 0)
        };
        let line = fragments.cut(range, ctx.count(line) + extra, start);
        if line.tokens <= budget {
            out.push(line);
        } else {
            out.extend(ctx.cut(&line, budget));
        }
    }
    out
}
