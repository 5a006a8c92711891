//! Chunks: a display and export unit over the skeleton (the retrieval unit
//! is the sentence).
//!
//! Three strategies cut the skeleton (`chunking.strategy`):
//!
//! * `structure` (default): one heading path per chunk, whole sentences,
//!   closed at a paragraph boundary once `minTokens` is reached and always
//!   before `maxTokens` would be exceeded, with whole-sentence overlap.
//! * `recursive`: per section, paragraphs, then lines, then sentences,
//!   then words until pieces fit, greedily packed up to `maxTokens` with
//!   overlap (LangChain's recursive splitter, measured in tokens).
//! * `fixed`: windows of `fixed.sizeTokens` tokens over the document's
//!   sentence stream with `fixed.overlapTokens` of overlap.
//! * `semantic`: `structure`'s sections and sentences, each chunk closed
//!   at a topic shift (a drop in the similarity of consecutive sentence
//!   vectors) once it holds `semantic.minTokens` (module `semantic`). It
//!   needs the vectors, so the ingest cuts with it after embedding
//!   ([`chunk_at_shifts`]).
//!
//! In all four, each table becomes table chunks (module `table`), and
//! tiny text chunks are then merged (module `merge`). Every sentence of the
//! skeleton lands in at least one chunk; no chunk's text counts more than
//! `maxTokens` tokens.
//!
//! # Text layout
//!
//! ```text
//! Part 1 > 1.1 Fees                       ← heading prefix
//!
//! First sentence. Second sentence.        ← a paragraph: sentences joined by a space
//!
//! - A list item.                          ← list items: "- ", two spaces of indent per
//!   - A nested item.                         nesting level, one item per line
//!
//! Next paragraph.                         ← paragraphs separated by a blank line
//! ```
//!
//! The heading prefix is the heading path joined with `" > "`, on its own
//! line followed by a blank line. It is written when `headingPrefix` is on,
//! the path is not empty (content before the first heading has none) and
//! it takes at most half of `maxTokens` (a longer one would crowd out the
//! content; the path is still in `heading_path`). `structure` and
//! `recursive` chunks and all table chunks carry it; `fixed` windows cross
//! sections and carry none (their `heading_path` is the common prefix of
//! their sentences' paths). Code blocks are kept verbatim as paragraphs.
//! Tables are laid out as the `table` module describes. A chunk merged from parts
//! with different heading paths keeps each part's own heading line, parts
//! separated by a blank line, and its `heading_path` is the parts' longest
//! common prefix.
//!
//! # Sizes
//!
//! Each sentence, heading prefix and table line is counted once; chunk sizes
//! are running sums of those counts, which is exact for counters that add up
//! over whitespace joins (the default word counter). Each chunk's final text
//! is then counted once more, exactly, for [`Chunk::tokens`]; should a
//! non-additive counter (a subword tokenizer) put it over `maxTokens`, the
//! chunk is halved until it fits (table halves repeat their head), and
//! chunks are kept in reading order of their first sentence. The one case that can still exceed
//! `maxTokens` is a single character the tokenizer encodes into more tokens
//! than that.
//!
//! Limits are sanitised rather than rejected: `maxTokens` is at least 1,
//! overlaps are at most half of the chunk or window size (so that every
//! chunk holds new content and output stays linear in the input), and
//! `fixed.sizeTokens` is at most `maxTokens`.

mod draft;
mod fixed;
mod fragment;
mod merge;
mod pack;
mod recursive;
pub mod semantic;
mod structure;
mod table;
pub mod tokens;

use serde::Serialize;

use crate::parse::{Table, TextSpan};
use crate::skeleton::{ParagraphKind, ParagraphNode, SectionNode, Sentence, SentenceId, Skeleton};
use crate::spec::{ChunkStrategy, ChunkingSpec};
use draft::{Draft, Drafts, Fragments, Piece, Start};
use merge::MergeRules;
pub use semantic::TopicShifts;
pub use tokens::{TokenCounter, WordCounter};

/// What a chunk holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkKind {
    /// Prose: paragraphs, list items, captions, code.
    Text,
    /// One table, or one shard of a large table, as Markdown.
    Table,
}

/// One chunk of a document.
#[derive(Clone, Debug, Serialize)]
pub struct Chunk {
    /// Position among the document's chunks, from 0.
    pub index: u32,
    pub kind: ChunkKind,
    /// The text to display or embed (see the module docs for its layout).
    pub text: String,
    /// Heading path of the chunk's content (for a chunk merged across
    /// headings, their longest common prefix).
    pub heading_path: Vec<String>,
    /// Sentences the chunk covers, wholly or in part, in reading order. A
    /// table chunk also lists the sentences of the duplicates of its table
    /// that were dropped. Empty only for a table chunk that holds nothing
    /// but part of the header of a table whose header is too long to repeat
    /// in every shard (header rows are not sentences).
    pub sentences: Vec<SentenceId>,
    /// Size in tokens of `text`, as counted by the configured counter.
    pub tokens: u32,
    /// Tokens at the start repeated from the previous chunk.
    pub overlap_tokens: u32,
    /// Canonical-text span from the first to the last character of the
    /// chunk's content (repeated table headers and dropped duplicates
    /// aside).
    pub span: TextSpan,
    /// First and last page, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<[u32; 2]>,
}

/// Cuts a skeleton into chunks with the configured strategy; `semantic`
/// without its vectors finds no topic shift and closes chunks at
/// `maxTokens` only ([`chunk_at_shifts`] gives it the shifts).
pub fn chunk_skeleton(
    skeleton: &Skeleton,
    spec: &ChunkingSpec,
    tokens: &dyn TokenCounter,
) -> Vec<Chunk> {
    chunk_at_shifts(
        skeleton,
        spec,
        tokens,
        &TopicShifts::none(skeleton.sentences.len()),
    )
}

/// Cuts a skeleton into chunks with the configured strategy, `semantic`
/// at the topic shifts `shifts`.
pub fn chunk_at_shifts(
    skeleton: &Skeleton,
    spec: &ChunkingSpec,
    tokens: &dyn TokenCounter,
    shifts: &TopicShifts,
) -> Vec<Chunk> {
    let ctx = Context::new(skeleton, spec, tokens);
    let mut drafts = Drafts::default();
    match spec.strategy {
        ChunkStrategy::Structure => structure::build(&ctx, &mut drafts),
        ChunkStrategy::Recursive => recursive::build(&ctx, &mut drafts),
        ChunkStrategy::Fixed => fixed::build(&ctx, &mut drafts),
        ChunkStrategy::Semantic => semantic::build(&ctx, shifts, &mut drafts),
    }
    let rules = MergeRules {
        below: spec.merge_below_tokens,
        max: ctx.max,
        min_jaccard: spec.merge_min_jaccard,
    };
    let drafts = merge::merge_small(drafts.items, &rules);
    ctx.finish(drafts)
}

/// What every strategy works from: the skeleton, the sanitised limits, the
/// counter and each section's heading prefix.
struct Context<'s> {
    skeleton: &'s Skeleton,
    spec: &'s ChunkingSpec,
    counter: &'s dyn TokenCounter,
    /// `maxTokens`, at least 1.
    max: u32,
    /// `overlapTokens`, at most half of `max`.
    overlap: u32,
    /// Tokens of a list item's "- " marker.
    marker_tokens: u32,
    /// Per section: its heading prefix and the prefix's tokens, when one is
    /// written.
    prefixes: Vec<Option<(String, u32)>>,
}

/// A section's heading path and, when written, its prefix line.
#[derive(Clone)]
struct Heading<'c> {
    path: &'c [String],
    prefix: Option<Piece<'c>>,
}

impl Heading<'_> {
    fn tokens(&self) -> u32 {
        self.prefix.as_ref().map_or(0, |p| p.tokens)
    }
}

/// A unit of a section's content: a prose paragraph, or a table with the
/// caption paragraph the skeleton split off it.
enum Block<'s> {
    Prose(&'s ParagraphNode),
    Table {
        caption: Option<&'s ParagraphNode>,
        paragraph: &'s ParagraphNode,
        table: &'s Table,
    },
}

impl<'s> Context<'s> {
    fn new(skeleton: &'s Skeleton, spec: &'s ChunkingSpec, counter: &'s dyn TokenCounter) -> Self {
        let max = spec.max_tokens.max(1);
        let prefixes = skeleton
            .sections
            .iter()
            .map(|section| {
                let path = &section.path.0;
                if !spec.heading_prefix || path.is_empty() || section.paragraphs.is_empty() {
                    return None;
                }
                // `SectionPath`'s display form, "Part 1 > 1.1 Fees".
                let len = path.iter().map(|h| h.len() + 3).sum();
                let mut prefix = String::with_capacity(len);
                for (i, heading) in path.iter().enumerate() {
                    if i > 0 {
                        prefix.push_str(" > ");
                    }
                    prefix.push_str(heading);
                }
                let tokens = counter.count(&prefix) as u32;
                (tokens <= max / 2).then_some((prefix, tokens))
            })
            .collect();
        Self {
            skeleton,
            spec,
            counter,
            max,
            overlap: spec.overlap_tokens.min(max / 2),
            marker_tokens: counter.count("-") as u32,
            prefixes,
        }
    }

    fn count(&self, text: &str) -> u32 {
        self.counter.count(text) as u32
    }

    fn heading(&self, section: &'s SectionNode) -> Heading<'_> {
        let prefix = self
            .prefixes
            .get(section.id.index())
            .and_then(Option::as_ref)
            .map(|(text, tokens)| Piece::new(text.as_str(), *tokens, Start::Paragraph));
        Heading {
            path: &section.path.0,
            prefix,
        }
    }

    fn sentences(&self, paragraph: &ParagraphNode) -> &'s [Sentence] {
        let range = paragraph.sentences.start as usize..paragraph.sentences.end as usize;
        self.skeleton.sentences.get(range).unwrap_or_default()
    }

    /// A section's own content in reading order.
    fn blocks(&self, section: &SectionNode) -> impl Iterator<Item = Block<'s>> + use<'s> {
        let range = section.paragraphs.start as usize..section.paragraphs.end as usize;
        let paragraphs = self.skeleton.paragraphs.get(range).unwrap_or_default();
        paragraphs.iter().enumerate().filter_map(move |(i, p)| {
            if let Some(table) = &p.table {
                let caption = i
                    .checked_sub(1)
                    .and_then(|j| paragraphs.get(j))
                    .filter(|c| is_caption_of(c, table));
                return Some(Block::Table {
                    caption,
                    paragraph: p,
                    table,
                });
            }
            let next = paragraphs.get(i + 1).and_then(|n| n.table.as_ref());
            // A table's caption goes with the table.
            (!next.is_some_and(|t| is_caption_of(p, t))).then_some(Block::Prose(p))
        })
    }

    /// A prose paragraph's sentences as pieces, each counted once. The first
    /// starts the paragraph (with the list marker for a list item, unless
    /// the marker alone would fill `budget`).
    fn sentence_pieces<'p>(
        &'p self,
        paragraph: &ParagraphNode,
        budget: u32,
    ) -> impl Iterator<Item = Piece<'s>> + 'p {
        let list = paragraph.kind == ParagraphKind::ListItem;
        let marker = list && budget > self.marker_tokens;
        let depth = paragraph.list_depth.unwrap_or(0);
        self.sentences(paragraph)
            .iter()
            .enumerate()
            .map(move |(k, sentence)| {
                let (start, extra) = match k {
                    0 if marker => (Start::ListItem(depth), self.marker_tokens),
                    0 => (Start::Paragraph, 0),
                    _ => (Start::Continue, 0),
                };
                let tokens = self.count(&sentence.text) + extra;
                Piece::of_sentence(sentence, tokens, start, list)
            })
    }

    /// Cuts a piece over `budget` into fragments within it, at word
    /// boundaries; the first keeps the piece's start and list marker.
    fn cut<'p>(&self, piece: &Piece<'p>, budget: u32) -> Vec<Piece<'p>> {
        let marker = match piece.start {
            Start::ListItem(_) => self.marker_tokens,
            _ => 0,
        };
        let budget = budget.saturating_sub(marker).max(1);
        let mut fragments = Fragments::new(piece);
        fragment::split_to_budget(&piece.text, budget, self.counter)
            .into_iter()
            .enumerate()
            .map(|(k, (range, tokens))| match k {
                0 => fragments.cut(range, tokens + marker, piece.start),
                _ => fragments.cut(range, tokens, Start::Continue),
            })
            .collect()
    }

    /// Renders the drafts, checks each against `max` with one exact count
    /// and numbers the chunks.
    fn finish(&self, drafts: Vec<Draft<'_>>) -> Vec<Chunk> {
        let mut chunks = Vec::with_capacity(drafts.len());
        for draft in drafts {
            self.fit(draft, &mut chunks);
        }
        // Halving a chunk merged from distant parts can leave its later
        // half ahead of the chunks between them: restore reading order of
        // first sentences (a chunk without sentences stays behind the chunk
        // before it).
        let mut key = 0;
        let keys: Vec<u32> = chunks
            .iter()
            .map(|c| {
                key = c.sentences.first().map_or(key, |s| s.0);
                key
            })
            .collect();
        if !keys.is_sorted() {
            let mut keyed: Vec<(u32, Chunk)> = keys.into_iter().zip(chunks).collect();
            keyed.sort_by_key(|(key, _)| *key);
            chunks = keyed.into_iter().map(|(_, chunk)| chunk).collect();
        }
        for (index, chunk) in chunks.iter_mut().enumerate() {
            chunk.index = index as u32;
        }
        chunks
    }

    fn fit(&self, draft: Draft<'_>, out: &mut Vec<Chunk>) {
        let text = draft.render();
        let tokens = if self.counter.is_additive() {
            // The draft's tokens sum its pieces' counts, each its text's
            // (plus the list marker it renders), and the rendered text
            // joins the pieces with whitespace.
            debug_assert_eq!(draft.tokens, self.count(&text), "{text:?}");
            draft.tokens
        } else {
            self.count(&text)
        };
        if tokens <= self.max {
            out.push(draft.into_chunk(text, tokens, self.skeleton));
            return;
        }
        match draft.split_in_two(self.counter, self.marker_tokens) {
            Ok((first, second)) => {
                self.fit(first, out);
                self.fit(second, out);
            }
            Err(draft) => out.push(draft.into_chunk(text, tokens, self.skeleton)),
        }
    }
}

fn is_caption_of(paragraph: &ParagraphNode, table: &Table) -> bool {
    paragraph.kind == ParagraphKind::Caption && table.caption_span == Some(paragraph.span)
}

#[cfg(test)]
mod tests;
