//! The `structure` strategy: chunks that follow the document's sections.
//!
//! Sections are walked in reading order; each chunk holds content of one
//! heading path only. Sentences are packed whole: a chunk is closed at a
//! paragraph boundary once it holds `minTokens` tokens (heading prefix and
//! overlap included), and always before a sentence would take it over
//! `maxTokens`. Only a sentence that alone exceeds the chunk's room is cut,
//! at word boundaries, into fragments that each fill a chunk; this is the
//! only way a chunk holds part of a sentence. Within a heading path, the
//! next chunk starts with the trailing whole sentences of the previous one
//! that fit in `overlapTokens`, or, when the last sentence alone is longer,
//! with its last words up to `overlapTokens`. Tables end the current chunk
//! and become table chunks; no overlap crosses them.

use super::draft::{Drafts, Piece};
use super::pack::Packer;
use super::{Block, Context, table};

pub(super) fn build<'c>(ctx: &'c Context<'c>, drafts: &mut Drafts<'c>) {
    walk(
        ctx,
        ctx.spec.min_tokens,
        |_, paragraph_start| paragraph_start,
        drafts,
    );
}

/// Packs each section's sentences whole, closing a chunk before a
/// sentence where `closes_before(piece, paragraph_start)` holds once it
/// has `min_tokens` tokens; tables become table chunks. The walk the
/// `semantic` strategy shares, with topic shifts for paragraph starts.
pub(super) fn walk<'c>(
    ctx: &'c Context<'c>,
    min_tokens: u32,
    closes_before: impl Fn(&Piece<'c>, bool) -> bool,
    drafts: &mut Drafts<'c>,
) {
    let mut packer = Packer::new(ctx, Some(min_tokens), true);
    for section in &ctx.skeleton.sections {
        let heading = ctx.heading(section);
        packer.begin(heading.clone(), drafts);
        for block in ctx.blocks(section) {
            match block {
                Block::Prose(paragraph) => {
                    let budget = packer.budget();
                    for (k, piece) in ctx.sentence_pieces(paragraph, budget).enumerate() {
                        let boundary = closes_before(&piece, k == 0);
                        if piece.tokens <= budget {
                            packer.push(piece.tokens, boundary, [piece], drafts);
                            continue;
                        }
                        for (f, fragment) in ctx.cut(&piece, budget).into_iter().enumerate() {
                            let starts = boundary && f == 0;
                            packer.push(fragment.tokens, starts, [fragment], drafts);
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
