//! Sentences located on their pages.
//!
//! For a paged document (PDF) the parser hands over where each rendered
//! line stands ([`PageLine`]). A sentence's text has been through the text
//! parser since — lines joined, words broken at line ends mended, running
//! headers dropped — so it is found again by its letters and digits alone:
//! both sides are reduced to lower-case letters and digits, and each
//! sentence is looked up in the lines' stream a little after the previous
//! one (reading order is the same on both sides). The characters it matches
//! give one box per line it spans. Lines the text parser dropped (a page
//! number, a running header between two halves of a paragraph) are stepped
//! over: a sentence not found whole is matched in pieces, each the longest
//! prefix of the rest found shortly after the previous piece.
//!
//! A table row's sentence is rewritten (`Header: value | …`), so the row
//! is looked for as it stands in the canonical text, its cells in order.
//! A sentence that is not found keeps its paragraph's page and gets no
//! boxes.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::{Sentence, SourceTag};
use crate::parse::PageLine;

/// How far past the previous sentence (in bytes of the reduced stream) a
/// sentence is looked for: enough to step over dropped page furniture and
/// a table, not so far that a short sentence is matched on a later page.
const WINDOW: usize = 64 * 1024;
/// Sentences shorter than this (reduced) are only looked for close by.
const SHORT: usize = 16;
const SHORT_WINDOW: usize = 1024;
/// How far past one piece of a sentence the next is looked for (dropped
/// page furniture between them).
const GAP_WINDOW: usize = 512;
/// Shortest piece of a sentence matched on its own, and most pieces.
const MIN_PIECE: usize = 8;
const MAX_PIECES: usize = 4;

/// A sentence's part of one line on a page.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PageBox {
    /// 1-based.
    pub page: u32,
    /// `[x0, y0, x1, y1]` in PDF points, origin at the page's bottom left.
    pub bbox: [f32; 4],
}

/// The lines' letters and digits, lower-cased, with where each came from.
struct Stream {
    text: String,
    /// Per character of `text`: its byte offset in `text`, its line and
    /// the character's index in that line.
    origin: Vec<(usize, u32, u32)>,
}

impl Stream {
    fn of(lines: &[PageLine]) -> Stream {
        let mut text = String::new();
        let mut origin = Vec::new();
        for (l, line) in lines.iter().enumerate() {
            for (c, ch) in line.text.chars().enumerate() {
                if ch.is_alphanumeric() {
                    for lower in ch.to_lowercase() {
                        origin.push((text.len(), l as u32, c as u32));
                        text.push(lower);
                    }
                }
            }
        }
        Stream { text, origin }
    }

    /// The stream character at byte offset `byte`.
    fn index(&self, byte: usize) -> usize {
        self.origin.partition_point(|&(b, _, _)| b < byte)
    }

    /// Where `needle` is, starting within `window` bytes after `cursor`:
    /// whole, or in up to [`MAX_PIECES`] pieces with at most
    /// [`GAP_WINDOW`] bytes between them. Byte ranges of `text`.
    fn find(&self, needle: &str, cursor: usize, window: usize) -> Option<Vec<Range<usize>>> {
        let within = |from: usize, span: usize, what: &str| {
            let end = self.floor(from + span);
            self.text.get(from..end)?.find(what).map(|at| from + at)
        };
        if let Some(at) = within(cursor, window, needle) {
            let whole = at..at + needle.len();
            return Some(Vec::from([whole]));
        }
        if needle.len() < 2 * MIN_PIECE {
            return None;
        }
        let mut pieces: Vec<Range<usize>> = Vec::new();
        let mut rest = needle;
        let mut from = cursor;
        while !rest.is_empty() {
            if pieces.len() == MAX_PIECES {
                return None;
            }
            let span = if pieces.is_empty() {
                window
            } else {
                GAP_WINDOW
            };
            // The longest prefix of `rest` found: found prefixes are
            // closed under shortening, so a binary search over lengths.
            let bounds: Vec<usize> = rest
                .char_indices()
                .map(|(i, _)| i)
                .skip(1)
                .chain([rest.len()])
                .collect();
            let (mut lo, mut hi) = (0, bounds.len());
            let mut best: Option<(usize, usize)> = None;
            while lo < hi {
                let mid = (lo + hi) / 2;
                match within(from, span, &rest[..bounds[mid]]) {
                    Some(at) => {
                        best = Some((at, bounds[mid]));
                        lo = mid + 1;
                    }
                    None => hi = mid,
                }
            }
            let (at, len) = best?;
            if len < MIN_PIECE.min(rest.len()) {
                return None;
            }
            pieces.push(at..at + len);
            from = at + len;
            rest = &rest[len..];
        }
        Some(pieces)
    }

    /// The largest character boundary at or before `byte`.
    fn floor(&self, byte: usize) -> usize {
        let mut b = byte.min(self.text.len());
        while !self.text.is_char_boundary(b) {
            b -= 1;
        }
        b
    }
}

fn reduced(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Gives each sentence found in `lines` its boxes and the page of its
/// first one. `canonical` is the document's canonical text, which the
/// sentences' spans point into.
pub fn locate(sentences: &mut [Sentence], lines: &[PageLine], canonical: &str) {
    if lines.is_empty() {
        return;
    }
    let stream = Stream::of(lines);
    // Spans count characters; where each starts in bytes (table rows only).
    let mut char_starts: Option<Vec<usize>> = None;
    let mut cursor = 0;
    for sentence in sentences {
        let written = match sentence.source {
            SourceTag::TableRow => {
                let starts = char_starts.get_or_insert_with(|| {
                    let mut starts: Vec<usize> = canonical.char_indices().map(|(b, _)| b).collect();
                    starts.push(canonical.len());
                    starts
                });
                let span = sentence.span;
                starts
                    .get(span.offset as usize)
                    .zip(starts.get(span.end() as usize))
                    .and_then(|(&a, &b)| canonical.get(a..b))
                    .unwrap_or(&sentence.text)
            }
            _ => &sentence.text,
        };
        let needle = reduced(written);
        if needle.is_empty() {
            continue;
        }
        let window = if needle.len() < SHORT {
            SHORT_WINDOW
        } else {
            WINDOW.max(4 * needle.len())
        };
        let Some(pieces) = stream.find(&needle, cursor, window) else {
            continue;
        };
        let matched: Vec<(usize, u32, u32)> = pieces
            .iter()
            .flat_map(|r| &stream.origin[stream.index(r.start)..stream.index(r.end)])
            .copied()
            .collect();
        sentence.boxes = boxes(&matched, lines);
        if let Some(first) = sentence.boxes.first() {
            sentence.page = Some(first.page);
        }
        cursor = pieces.last().map_or(cursor, |r| r.end);
    }
}

/// One box per line among the matched characters: the line's height, from
/// the first matched character's left edge to the last one's right edge.
fn boxes(matched: &[(usize, u32, u32)], lines: &[PageLine]) -> Vec<PageBox> {
    let mut out: Vec<PageBox> = Vec::new();
    let mut current: Option<(u32, u32, u32)> = None; // line, first, last char
    let close = |run: (u32, u32, u32), out: &mut Vec<PageBox>| {
        let Some(line) = lines.get(run.0 as usize) else {
            return;
        };
        let [x0, y0, x1, y1] = line.bbox;
        let left = line.xs.get(run.1 as usize).map_or(x0, |x| x[0]);
        let right = line.xs.get(run.2 as usize).map_or(x1, |x| x[1]);
        out.push(PageBox {
            page: line.page,
            bbox: [left.min(right), y0, right.max(left), y1],
        });
    };
    for &(_, line, ch) in matched {
        current = match current {
            Some((l, first, _)) if l == line => Some((l, first, ch)),
            Some(run) => {
                close(run, &mut out);
                Some((line, ch, ch))
            }
            None => Some((line, ch, ch)),
        };
    }
    if let Some(run) = current {
        close(run, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skeleton::{ParagraphId, SectionId, SentenceId, SourceTag};

    fn line(page: u32, baseline: f32, text: &str) -> PageLine {
        let xs = (0..text.chars().count())
            .map(|i| [72.0 + 6.0 * i as f32, 78.0 + 6.0 * i as f32])
            .collect();
        PageLine {
            page,
            bbox: [
                72.0,
                baseline - 3.0,
                72.0 + 6.0 * text.chars().count() as f32,
                baseline + 10.0,
            ],
            text: text.into(),
            xs,
        }
    }

    fn sentence(text: &str) -> Sentence {
        Sentence {
            id: SentenceId(0),
            paragraph: ParagraphId(0),
            section: SectionId(0),
            text: text.into(),
            source: SourceTag::Paragraph,
            page: Some(1),
            span: Default::default(),
            confidence: 1.0,
            indexable: true,
            boxes: Vec::new(),
        }
    }

    #[test]
    fn a_sentence_gets_a_box_per_line_across_a_page_break() {
        let lines = [
            line(1, 700.0, "Intro. The supplier shall de-"),
            line(1, 20.0, "Page 1"),
            line(2, 700.0, "liver the goods. Next one here."),
        ];
        let mut sentences = [
            sentence("Intro."),
            sentence("The supplier shall deliver the goods."),
            sentence("Next one here."),
        ];
        locate(&mut sentences, &lines, "");
        assert_eq!(sentences[0].boxes.len(), 1);
        let b = &sentences[1].boxes;
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!((b[0].page, b[1].page), (1, 2));
        // "The" starts at character 7 of the first line; "goods" ends at
        // character 14 of the third (the period is not matched).
        assert_eq!(b[0].bbox[0], 72.0 + 6.0 * 7.0);
        assert_eq!(b[1].bbox[2], 78.0 + 6.0 * 14.0);
        assert_eq!(sentences[1].page, Some(1));
        assert_eq!(sentences[2].page, Some(2));
    }

    #[test]
    fn a_sentence_not_in_the_lines_keeps_its_page_and_no_boxes() {
        let lines = [line(3, 700.0, "Only this.")];
        let mut sentences = [sentence("Fee: 100 | Term: 2 years"), sentence("Only this.")];
        locate(&mut sentences, &lines, "");
        assert!(sentences[0].boxes.is_empty());
        assert_eq!(sentences[0].page, Some(1));
        assert_eq!(sentences[1].page, Some(3));
    }

    #[test]
    fn a_table_row_is_found_by_its_cells() {
        let lines = [
            line(2, 700.0, "Item   Fee"),
            line(2, 686.0, "Hosting   $5,000"),
        ];
        // Spans count characters: the "€" before the row is three bytes.
        let canonical = "| Item € | Fee |\n| --- | --- |\n| Hosting | $5,000 |\n";
        let row = canonical[..canonical.find("| Hosting").expect("row")]
            .chars()
            .count();
        let mut sentences = [Sentence {
            source: SourceTag::TableRow,
            span: crate::parse::TextSpan {
                offset: row as u32,
                len: "| Hosting | $5,000 |".len() as u32,
            },
            ..sentence("Item: Hosting | Fee: $5,000")
        }];
        locate(&mut sentences, &lines, canonical);
        assert_eq!(sentences[0].boxes.len(), 1, "{:?}", sentences[0].boxes);
        assert_eq!(sentences[0].page, Some(2));
    }
}
