//! Table chunks: a table paragraph rendered as a Markdown table, sharded
//! when large, deduplicated by content.
//!
//! A shard is laid out as
//!
//! ```text
//! Part 1 > 1.1 Fees          ← heading prefix (when on)
//!
//! Table 1: Fees              ← caption, when the table has one
//!
//! | Item | Fee (USD) |       ← header rows, verbatim (units kept)
//! | | USD m |                ← a units-only row right after the header
//! | - | - |
//! | Setup | 100 |            ← data rows
//! ```
//!
//! Everything above the data rows is the shard's *head* and is repeated in
//! every shard. A table is sharded after `tableMaxRows` data rows, or
//! earlier when the next row would take the shard over `maxTokens`; a
//! single row too long for a shard is cut at word boundaries. The head is
//! repeated only while it takes at most half of `maxTokens` (dropping first
//! the heading prefix, then the caption, which then becomes a chunk of its
//! own before the table, then the header, which then appears once in the
//! first shard), so that every shard has room for rows.
//!
//! A table without header rows is rendered as the canonical text renders it:
//! its first row in the header position. Header rows repeated inside the body
//! (page breaks) and empty rows are not data and are left out, exactly as
//! the skeleton leaves them out of its sentences.
//!
//! A table whose cells (lower-cased, whitespace-collapsed) hash like an
//! earlier table's with BLAKE3 is a duplicate (the same table repeated on
//! several pages): it gets no chunk, and its sentences are listed by the
//! first occurrence's chunks (each row's sentence by the shard holding the
//! same row), so that every sentence still lands in a chunk.

use super::draft::{Draft, Drafts, Fragments, Part, Piece, Start, sum_tokens};
use super::fragment::split_to_budget;
use super::{ChunkKind, Context, Heading};
use crate::parse::{Table, collapse_whitespace};
use crate::skeleton::{ParagraphNode, Sentence, SentenceId};

/// A table already chunked, for attaching its duplicates' sentences.
#[derive(Debug)]
pub(super) struct SeenTable {
    /// The first draft of the table.
    first: u32,
    /// For the n-th sentence of the table paragraph, the draft that holds
    /// it.
    by_sentence: Vec<u32>,
}

/// A line of a table with the sentence it stands for, if any.
struct Line<'a> {
    piece: Piece<'a>,
    /// Data rows count toward `tableMaxRows`.
    is_row: bool,
}

/// Builds the chunks of one table (with its caption paragraph, when the
/// skeleton split one off), or attaches its sentences to an earlier
/// identical table.
pub(super) fn build<'c>(
    ctx: &'c Context<'_>,
    heading: &Heading<'c>,
    caption: Option<&'c ParagraphNode>,
    paragraph: &'c ParagraphNode,
    table: &'c Table,
    drafts: &mut Drafts<'c>,
) {
    let caption_sentences = caption.map_or(&[][..], |c| ctx.sentences(c));
    let row_sentences = ctx.sentences(paragraph);
    let signature = signature(table);
    if let Some(seen) = drafts.tables.get(&signature) {
        let first = seen.first;
        let targets: Vec<(u32, SentenceId)> = caption_sentences
            .iter()
            .map(|s| (first, s.id))
            .chain(row_sentences.iter().enumerate().map(|(n, s)| {
                let target = seen.by_sentence.get(n).or(seen.by_sentence.last());
                (target.copied().unwrap_or(first), s.id)
            }))
            .collect();
        for (target, id) in targets {
            if let Some(draft) = drafts.items.get_mut(target as usize) {
                draft.extra_sentences.push(id);
            }
        }
        return;
    }

    let layout = Layout::new(ctx, table, row_sentences);
    let mut caption_lines: Vec<Line<'c>> = caption_sentences
        .iter()
        .enumerate()
        .map(|(k, s)| Line {
            piece: Piece::of_sentence(
                s,
                ctx.count(&s.text),
                if k == 0 {
                    Start::Paragraph
                } else {
                    Start::Continue
                },
                false,
            ),
            is_row: false,
        })
        .collect();
    if caption.is_none()
        && let Some(text) = &table.caption
    {
        // The table was not rendered with its caption split off: show the
        // caption all the same; it stands for no sentence.
        let mut piece = Piece::new(text.as_str(), ctx.count(text), Start::Paragraph);
        piece.span = table.caption_span;
        caption_lines.push(Line {
            piece,
            is_row: false,
        });
    }
    let Layout {
        header,
        rows,
        leftovers,
    } = layout;
    let has_sentence = caption_lines.iter().any(|l| l.piece.sentence.is_some())
        || header
            .iter()
            .chain(&rows)
            .any(|l| l.piece.sentence.is_some());
    if !has_sentence {
        // Nothing of this table is retrievable (a header without rows).
        return;
    }

    // What repeats: as much of prefix, caption and header as fits in half
    // of the limit, dropped in that order.
    let half = ctx.max / 2;
    let prefix_tokens = heading.tokens();
    let caption_tokens: u32 = caption_lines.iter().map(|l| l.piece.tokens).sum();
    let header_tokens: u32 = header.iter().map(|l| l.piece.tokens).sum();
    let (with_prefix, with_caption, with_header) =
        if prefix_tokens + caption_tokens + header_tokens <= half {
            (true, true, true)
        } else if caption_tokens + header_tokens <= half {
            (false, true, true)
        } else if header_tokens <= half {
            (false, false, true)
        } else {
            (false, false, false)
        };

    let mut head: Vec<Piece<'c>> = Vec::new();
    let mut body: Vec<Line<'c>> = Vec::new();
    if with_prefix && let Some(prefix) = &heading.prefix {
        head.push(prefix.clone());
    }
    let mut ids: Vec<u32> = Vec::new();
    if with_caption {
        head.extend(caption_lines.into_iter().map(|l| l.piece));
    } else if with_header {
        // A caption too long to repeat goes before the table on its own.
        ids.extend(shard(ctx, heading.path, Vec::new(), caption_lines, drafts));
    } else {
        body.extend(caption_lines);
    }
    if with_header {
        head.extend(header.into_iter().map(|l| l.piece));
    } else {
        body.extend(header);
    }
    body.extend(rows);
    let shard_ids = shard(ctx, heading.path, head, body, drafts);
    ids.extend(&shard_ids);
    let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else {
        return;
    };
    for id in leftovers {
        if let Some(draft) = drafts.items.get_mut(last as usize) {
            draft.extra_sentences.push(id);
        }
    }
    // Which draft holds each sentence of the table paragraph.
    let start = paragraph.sentences.start;
    let mut by_sentence: Vec<Option<u32>> = vec![None; row_sentences.len()];
    for &id in &shard_ids {
        let Some(draft) = drafts.items.get(id as usize) else {
            continue;
        };
        for piece in draft
            .parts
            .iter()
            .flat_map(|p| p.head.iter().chain(&p.body))
        {
            let slot = piece
                .sentence
                .and_then(|s| s.0.checked_sub(start))
                .and_then(|n| by_sentence.get_mut(n as usize));
            // The first shard holding a sentence wins (head rows repeat).
            if let Some(slot @ None) = slot {
                *slot = Some(id);
            }
        }
    }
    let by_sentence = by_sentence
        .into_iter()
        .map(|d| d.unwrap_or(first))
        .collect();
    drafts
        .tables
        .insert(signature, SeenTable { first, by_sentence });
}

/// Shards `lines` under a repeated `head`; returns the drafts' ids.
fn shard<'c>(
    ctx: &'c Context<'_>,
    path: &'c [String],
    head: Vec<Piece<'c>>,
    lines: Vec<Line<'c>>,
    drafts: &mut Drafts<'c>,
) -> Vec<u32> {
    let max_rows = ctx.spec.table_max_rows.max(1);
    let room = ctx.max.saturating_sub(sum_tokens(&head)).max(1);
    let mut ids = Vec::new();
    let mut body: Vec<Piece<'c>> = Vec::new();
    let (mut tokens, mut rows) = (0u32, 0u32);
    for line in lines {
        let pieces = if line.piece.tokens > room {
            cut_line(ctx, &line.piece, room)
        } else {
            vec![line.piece]
        };
        for (k, piece) in pieces.into_iter().enumerate() {
            let counts_row = line.is_row && k == 0;
            let full = tokens + piece.tokens > room || (counts_row && rows >= max_rows);
            if !body.is_empty() && full {
                ids.push(emit_shard(path, &head, ids.is_empty(), &mut body, drafts));
                (tokens, rows) = (0, 0);
            }
            tokens += piece.tokens;
            rows += u32::from(counts_row);
            body.push(piece);
        }
    }
    if !body.is_empty() || (ids.is_empty() && !head.is_empty()) {
        ids.push(emit_shard(path, &head, ids.is_empty(), &mut body, drafts));
    }
    ids
}

/// One shard: the head (as a repeat after the first shard) and the rows
/// gathered so far.
fn emit_shard<'c>(
    path: &'c [String],
    head: &[Piece<'c>],
    first: bool,
    body: &mut Vec<Piece<'c>>,
    drafts: &mut Drafts<'c>,
) -> u32 {
    let head = if first {
        head.to_vec()
    } else {
        head.iter().map(Piece::repeated).collect()
    };
    let part = Part {
        path,
        head,
        body: std::mem::take(body),
    };
    drafts.push(Draft::new(ChunkKind::Table, part, 0, None))
}

/// A line longer than a shard, cut at word boundaries.
fn cut_line<'c>(ctx: &Context<'_>, line: &Piece<'c>, room: u32) -> Vec<Piece<'c>> {
    let mut fragments = Fragments::new(line);
    split_to_budget(&line.text, room, ctx.counter)
        .into_iter()
        .enumerate()
        .map(|(k, (range, tokens))| {
            let start = if k == 0 { line.start } else { Start::Continue };
            fragments.cut(range, tokens, start)
        })
        .collect()
}

/// A table's lines: the header block (header rows, units rows, separator)
/// and the data rows, each with its sentence.
struct Layout<'a> {
    header: Vec<Line<'a>>,
    rows: Vec<Line<'a>>,
    /// Sentences of the paragraph left over when rows and sentences do not
    /// pair up (they always do for skeletons built by `Skeleton::build`).
    leftovers: Vec<SentenceId>,
}

impl<'a> Layout<'a> {
    fn new(ctx: &Context<'_>, table: &'a Table, sentences: &'a [Sentence]) -> Self {
        let header_rows = table.header_rows.min(table.rows.len());
        let mut sentences = sentences.iter();
        let mut header = Vec::new();
        let mut rows = Vec::new();
        // The canonical text puts at least one row above the separator.
        let mut header_end = header_rows.max(1);
        for (r, row) in table.rows.iter().enumerate() {
            // Which rows became sentences (`Table::is_data_row`). A
            // units row right after the header is header, not data.
            let units = table.is_units_row_at(r);
            let is_data = table.is_data_row(r);
            if r >= header_rows && !is_data && !units {
                continue;
            }
            let sentence = if is_data { sentences.next() } else { None };
            if units {
                header_end += 1;
            }
            let text = render_row(row);
            let tokens = ctx.count(&text);
            let start = if r == 0 {
                Start::Paragraph
            } else {
                Start::Line
            };
            let mut piece = Piece::new(text, tokens, start);
            piece.sentence = sentence.map(|s| s.id);
            piece.span = table.row_spans.get(r).copied().or(sentence.map(|s| s.span));
            let line = Line {
                piece,
                is_row: true,
            };
            if r < header_end {
                header.push(Line {
                    is_row: false,
                    ..line
                });
            } else {
                rows.push(line);
            }
        }
        if !header.is_empty() {
            let separator = separator_line(table.columns());
            let tokens = ctx.count(&separator);
            header.push(Line {
                piece: Piece::new(separator, tokens, Start::Line),
                is_row: false,
            });
        }
        Layout {
            header,
            rows,
            leftovers: sentences.map(|s| s.id).collect(),
        }
    }
}

/// A row as the canonical text renders it: `| a | b |`, pipes escaped.
fn render_row(row: &[String]) -> String {
    let mut line = String::with_capacity(1 + row.iter().map(|c| c.len() + 3).sum::<usize>());
    line.push('|');
    for cell in row {
        line.push(' ');
        for (i, part) in cell.split('|').enumerate() {
            if i > 0 {
                line.push_str("\\|");
            }
            line.push_str(part);
        }
        line.push_str(" |");
    }
    line
}

fn separator_line(columns: usize) -> String {
    let mut line = String::from("|");
    for _ in 0..columns {
        line.push_str(" - |");
    }
    line
}

/// The content signature of a table: BLAKE3 over its cells, lower-cased and
/// whitespace-collapsed, with cell and row separators.
fn signature(table: &Table) -> blake3::Hash {
    // One buffer, lower-cased and hashed once: per-cell work dominates
    // otherwise. Cells from `TreeBuilder` are already collapsed.
    let len = table
        .rows
        .iter()
        .flatten()
        .map(|c| c.len() + 1)
        .sum::<usize>();
    let mut normalised = String::with_capacity(len + table.rows.len());
    for row in &table.rows {
        for cell in row {
            if is_collapsed(cell) {
                normalised.push_str(cell);
            } else {
                normalised.push_str(&collapse_whitespace(cell));
            }
            normalised.push('\u{1f}');
        }
        normalised.push('\u{1e}');
    }
    if normalised.is_ascii() {
        normalised.make_ascii_lowercase();
    } else {
        normalised = normalised.to_lowercase();
    }
    blake3::hash(normalised.as_bytes())
}

/// Whether `text` is what [`collapse_whitespace`] would make of it.
fn is_collapsed(text: &str) -> bool {
    let mut after_space = true;
    for c in text.chars() {
        if c.is_whitespace() || c == '\u{200b}' || c == '\u{feff}' {
            if c != ' ' || after_space {
                return false;
            }
            after_space = true;
        } else {
            after_space = false;
        }
    }
    !after_space || text.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_ignore_case_and_spacing() {
        let table = |a: &str| Table {
            header_rows: 1,
            rows: vec![vec!["Item".into(), a.into()], vec!["x".into(), "1".into()]],
            ..Table::default()
        };
        assert_eq!(
            signature(&table("Fee  (USD)")),
            signature(&table("fee (usd)"))
        );
        assert_ne!(signature(&table("Fee")), signature(&table("Fees")));
        assert_eq!(
            signature(&table(" Fée\t(USD) ")),
            signature(&table("fée (usd)"))
        );
        assert!(is_collapsed("a b") && is_collapsed(""));
        assert!(!is_collapsed(" a") && !is_collapsed("a  b") && !is_collapsed("a\u{a0}b"));
    }

    #[test]
    fn rows_render_like_the_canonical_text() {
        let row = vec!["a|b".to_string(), String::new()];
        assert_eq!(render_row(&row), "| a\\|b |  |");
        assert_eq!(separator_line(2), "| - | - |");
    }
}
