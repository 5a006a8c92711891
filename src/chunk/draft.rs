//! Chunk drafts: what the strategies build, the merge policy joins and the
//! final fit check renders.
//!
//! A draft is a list of pieces (sentences, parts of sentences, table lines)
//! with their token counts, so that sizes are running sums, merging is
//! moving pieces, and each chunk's text is rendered exactly once.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use super::fragment::halves;
use super::merge::{Mergeable, word_hashes};
use super::table::SeenTable;
use super::tokens::TokenCounter;
use super::{Chunk, ChunkKind};
use crate::byteset::count_chars;
use crate::parse::TextSpan;
use crate::skeleton::{Sentence, SentenceId, Skeleton};

/// How a piece joins the piece before it in a chunk's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Start {
    /// Continues the paragraph after a space.
    Continue,
    /// Starts a new line (code lines, table rows).
    Line,
    /// Starts a paragraph, after a blank line.
    Paragraph,
    /// Starts a list item of the given depth: "- " indented two spaces per
    /// level, on the next line after another list item, else after a blank
    /// line.
    ListItem(u8),
}

/// A run of text in a chunk.
#[derive(Clone, Debug)]
pub(super) struct Piece<'a> {
    pub text: Cow<'a, str>,
    /// Tokens of the text, plus the list marker when `start` renders one.
    pub tokens: u32,
    /// The sentence the text is (part of).
    pub sentence: Option<SentenceId>,
    /// Where the text lies in the canonical text, when it is a verbatim run
    /// of it (headings prefixes and repeated table headers have none).
    pub span: Option<TextSpan>,
    pub start: Start,
    /// Whether the piece belongs to a list item (the next item then follows
    /// on the next line rather than after a blank line).
    pub in_list: bool,
}

impl<'a> Piece<'a> {
    /// A piece that is not a sentence (a heading prefix, a table line).
    pub fn new(text: impl Into<Cow<'a, str>>, tokens: u32, start: Start) -> Self {
        Self {
            text: text.into(),
            tokens,
            sentence: None,
            span: None,
            start,
            in_list: false,
        }
    }

    /// A whole sentence.
    pub fn of_sentence(sentence: &'a Sentence, tokens: u32, start: Start, in_list: bool) -> Self {
        Self {
            text: Cow::Borrowed(&sentence.text),
            tokens,
            sentence: Some(sentence.id),
            span: Some(sentence.span),
            start,
            in_list,
        }
    }

    /// Bytes `range` of this piece as a piece of its own, with `tokens`
    /// counted by the caller; its span narrows to match. To cut many
    /// fragments from one piece, use [`Fragments`].
    pub fn fragment(&self, range: Range<usize>, tokens: u32, start: Start) -> Piece<'a> {
        Fragments::new(self).cut(range, tokens, start)
    }

    /// The same piece repeated elsewhere (a table header in a later shard):
    /// it covers no new canonical text.
    pub fn repeated(&self) -> Piece<'a> {
        Piece {
            span: None,
            ..self.clone()
        }
    }
}

/// Cuts fragments out of one piece in order, counting characters (for the
/// fragments' spans) incrementally, so that cutting a long sentence into
/// many fragments stays linear in its length.
pub(super) struct Fragments<'p, 'a> {
    piece: &'p Piece<'a>,
    /// A byte position in the piece's text and its character offset.
    byte: usize,
    chars: u32,
}

impl<'p, 'a> Fragments<'p, 'a> {
    pub fn new(piece: &'p Piece<'a>) -> Self {
        Self {
            piece,
            byte: 0,
            chars: 0,
        }
    }

    fn chars_to(&mut self, byte: usize) -> u32 {
        if byte < self.byte {
            (self.byte, self.chars) = (0, 0);
        }
        let gap = self.piece.text.get(self.byte..byte).unwrap_or_default();
        self.chars += count_chars(gap) as u32;
        self.byte = byte;
        self.chars
    }

    /// Bytes `range` of the piece (best at or after the previous range) as
    /// a piece of its own, with `tokens` counted by the caller.
    pub fn cut(&mut self, range: Range<usize>, tokens: u32, start: Start) -> Piece<'a> {
        let text: Cow<'a, str> = match &self.piece.text {
            Cow::Borrowed(s) => Cow::Borrowed(s.get(range.clone()).unwrap_or_default()),
            Cow::Owned(s) => Cow::Owned(s.get(range.clone()).unwrap_or_default().to_owned()),
        };
        let first = self.chars_to(range.start);
        let end = self.chars_to(range.end);
        let span = self.piece.span.map(|s| TextSpan {
            offset: s.offset + first,
            len: end - first,
        });
        Piece {
            text,
            tokens,
            sentence: self.piece.sentence,
            span,
            start,
            in_list: self.piece.in_list,
        }
    }
}

/// The separator before `piece` when it follows `prev`.
fn separator(prev: &Piece<'_>, piece: &Piece<'_>) -> &'static str {
    match piece.start {
        Start::Continue => " ",
        Start::Line => "\n",
        Start::ListItem(_) if prev.in_list => "\n",
        Start::ListItem(_) | Start::Paragraph => "\n\n",
    }
}

/// Content under one heading path: a head repeated whenever the part is
/// split (the heading prefix; a table's caption and header), then the body.
#[derive(Clone, Debug)]
pub(super) struct Part<'a> {
    pub path: &'a [String],
    pub head: Vec<Piece<'a>>,
    pub body: Vec<Piece<'a>>,
}

impl Part<'_> {
    fn tokens(&self) -> u32 {
        sum_tokens(&self.head) + sum_tokens(&self.body)
    }
}

pub(super) fn sum_tokens(pieces: &[Piece<'_>]) -> u32 {
    pieces.iter().map(|p| p.tokens).sum()
}

/// The longest common prefix of two heading paths.
pub(super) fn common_path<'a>(a: &'a [String], b: &[String]) -> &'a [String] {
    let k = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    a.get(..k).unwrap_or_default()
}

/// A chunk before rendering.
#[derive(Clone, Debug)]
pub(super) struct Draft<'a> {
    pub kind: ChunkKind,
    /// The common prefix of the parts' heading paths.
    pub path: &'a [String],
    /// One part, or several after chunks of different heading paths merged
    /// (each keeps its own heading line).
    pub parts: Vec<Part<'a>>,
    /// Sum of the pieces' tokens: exact for additive counters, an estimate
    /// otherwise (the fit check counts the rendered text).
    pub tokens: u32,
    /// Tokens of the leading body pieces that repeat the previous chunk.
    pub overlap_tokens: u32,
    pub overlap_pieces: usize,
    /// The draft the overlap was taken from.
    pub overlap_from: Option<u32>,
    /// This draft's id (its position in [`Drafts`]).
    pub id: u32,
    /// Ids of the drafts merged into this one.
    pub merged: Vec<u32>,
    /// Sentences covered without being rendered: those of dropped duplicate
    /// tables.
    pub extra_sentences: Vec<SentenceId>,
}

impl<'a> Draft<'a> {
    pub fn new(
        kind: ChunkKind,
        part: Part<'a>,
        overlap_pieces: usize,
        overlap_from: Option<u32>,
    ) -> Self {
        let overlap_tokens = sum_tokens(part.body.get(..overlap_pieces).unwrap_or_default());
        Self {
            kind,
            path: part.path,
            tokens: part.tokens(),
            parts: vec![part],
            overlap_tokens,
            overlap_pieces,
            overlap_from,
            id: 0,
            merged: Vec::new(),
            extra_sentences: Vec::new(),
        }
    }

    /// Whether the draft is, or has absorbed, draft `id`.
    fn holds(&self, id: u32) -> bool {
        self.id == id || self.merged.contains(&id)
    }

    fn body_len(&self) -> usize {
        self.parts.iter().map(|p| p.body.len()).sum()
    }

    fn pieces(&self) -> impl Iterator<Item = &Piece<'a>> {
        self.parts.iter().flat_map(|p| p.head.iter().chain(&p.body))
    }

    /// The chunk's text, built once (see the module docs of `chunk` for the
    /// layout).
    pub fn render(&self) -> String {
        let len = self.pieces().map(|p| p.text.len() + 4).sum();
        let mut out = String::with_capacity(len);
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                out.push_str("\n\n");
            }
            let mut prev: Option<&Piece<'_>> = None;
            for (k, piece) in part.head.iter().chain(&part.body).enumerate() {
                if let Some(prev) = prev {
                    let first_of_body = k == part.head.len();
                    out.push_str(match (self.kind, piece.start) {
                        // The heading prefix stands alone on its line.
                        (ChunkKind::Text, _) if first_of_body => "\n\n",
                        // A row fragment still starts below the header.
                        (ChunkKind::Table, Start::Continue) if first_of_body => "\n",
                        _ => separator(prev, piece),
                    });
                }
                if let Start::ListItem(depth) = piece.start {
                    for _ in 0..depth {
                        out.push_str("  ");
                    }
                    out.push_str("- ");
                }
                out.push_str(&piece.text);
                prev = Some(piece);
            }
        }
        out
    }

    /// The final chunk, given its rendered text and exact token count.
    pub fn into_chunk(self, text: String, tokens: u32, skeleton: &Skeleton) -> Chunk {
        let mut sentences = Vec::with_capacity(self.parts.iter().map(|p| p.body.len()).sum());
        let mut span: Option<(u32, u32)> = None;
        let mut pages: Option<[u32; 2]> = None;
        for piece in self.pieces() {
            if let Some(id) = piece.sentence {
                sentences.push(id);
                if let Some(page) = skeleton.sentences.get(id.index()).and_then(|s| s.page) {
                    pages = Some(pages.map_or([page, page], |[a, b]| [a.min(page), b.max(page)]));
                }
            }
            if let Some(s) = piece.span {
                span = Some(span.map_or((s.offset, s.end()), |(a, b)| {
                    (a.min(s.offset), b.max(s.end()))
                }));
            }
        }
        sentences.extend(self.extra_sentences);
        sentences.sort_unstable();
        sentences.dedup();
        let span = span.map_or_else(TextSpan::default, |(start, end)| TextSpan {
            offset: start,
            len: end - start,
        });
        Chunk {
            index: 0,
            kind: self.kind,
            text,
            heading_path: self.path.to_vec(),
            sentences,
            tokens,
            // The overlap is counted piece by piece; with a counter that is
            // not additive (one that counts line breaks, say) a piece's
            // count can exceed what its text adds to the rendered chunk
            // (whitespace at a cut is trimmed), and the overlap is never
            // more than the chunk.
            overlap_tokens: self.overlap_tokens.min(tokens),
            span,
            pages,
        }
    }

    /// Splits a draft whose rendered text came out over the limit (possible
    /// only with counters that are not additive): its body in two halves by
    /// tokens, heads repeated; a single body piece is halved by words, a
    /// single word by characters. `Err` when nothing is left to cut.
    pub fn split_in_two(
        mut self,
        counter: &dyn TokenCounter,
        marker_tokens: u32,
    ) -> Result<(Draft<'a>, Draft<'a>), Draft<'a>> {
        let body_len = self.body_len();
        if body_len == 1 {
            let Some(part) = self.parts.iter_mut().find(|p| !p.body.is_empty()) else {
                return Err(self);
            };
            let Some(piece) = part.body.pop() else {
                return Err(self);
            };
            let Some((a, b)) = halves(&piece.text) else {
                part.body.push(piece);
                return Err(self);
            };
            let count =
                |r: &Range<usize>| piece.text.get(r.clone()).map_or(0, |s| counter.count(s));
            let marker = match piece.start {
                Start::ListItem(_) => marker_tokens,
                _ => 0,
            };
            let mut fragments = Fragments::new(&piece);
            let first = fragments.cut(a.clone(), count(&a) as u32 + marker, piece.start);
            let second = fragments.cut(b.clone(), count(&b) as u32, Start::Continue);
            part.body.extend([first, second]);
            self.overlap_pieces = 0;
            self.overlap_tokens = 0;
        } else if body_len == 0 {
            return Err(self);
        }
        let total: u32 = self.parts.iter().map(|p| sum_tokens(&p.body)).sum();
        let mut at = self.body_len() - 1;
        let mut acc = 0;
        for (g, piece) in self.parts.iter().flat_map(|p| &p.body).enumerate() {
            acc += piece.tokens;
            if acc * 2 >= total {
                at = g + 1;
                break;
            }
        }
        let at = at.clamp(1, self.body_len() - 1);
        let (mut left, mut right) = (Vec::new(), Vec::new());
        let mut seen = 0;
        for mut part in std::mem::take(&mut self.parts) {
            let n = part.body.len();
            if seen + n <= at {
                left.push(part);
            } else if seen >= at {
                right.push(part);
            } else {
                let tail = part.body.split_off(at - seen);
                right.push(Part {
                    path: part.path,
                    head: part.head.iter().map(Piece::repeated).collect(),
                    body: tail,
                });
                left.push(part);
            }
            seen += n;
        }
        let build = |parts: Vec<Part<'a>>, overlap_pieces: usize, overlap_from, extra| {
            let path = parts
                .iter()
                .map(|p| p.path)
                .reduce(common_path)
                .unwrap_or_default();
            Draft {
                kind: self.kind,
                path,
                tokens: parts.iter().map(Part::tokens).sum(),
                overlap_tokens: parts.first().map_or(0, |p| {
                    sum_tokens(p.body.get(..overlap_pieces).unwrap_or_default())
                }),
                parts,
                overlap_pieces,
                overlap_from,
                id: self.id,
                merged: self.merged.clone(),
                extra_sentences: extra,
            }
        };
        let overlap_pieces = self.overlap_pieces.min(at);
        let extra = std::mem::take(&mut self.extra_sentences);
        let first = build(left, overlap_pieces, self.overlap_from, extra);
        let second = build(right, 0, None, Vec::new());
        Ok((first, second))
    }

    /// Tokens saved by merging `later` after `self`: `later`'s overlap when
    /// it repeats `self`, and `later`'s heading prefix when both parts share
    /// a heading path (the merged part keeps one).
    fn merge_savings(&self, later: &Draft<'_>) -> (bool, bool) {
        let drop_overlap =
            later.overlap_pieces > 0 && later.overlap_from.is_some_and(|id| self.holds(id));
        let same_path = matches!(
            (self.parts.last(), later.parts.first()),
            (Some(a), Some(b)) if a.path == b.path
        );
        (drop_overlap, same_path)
    }
}

impl<'a> Mergeable for Draft<'a> {
    fn tokens(&self) -> u32 {
        self.tokens
    }

    fn can_merge(&self) -> bool {
        self.kind == ChunkKind::Text
    }

    fn heading_path(&self) -> &[String] {
        self.path
    }

    fn merged_tokens(&self, later: &Self) -> u32 {
        let (drop_overlap, same_path) = self.merge_savings(later);
        let mut tokens = self.tokens + later.tokens;
        if drop_overlap {
            tokens = tokens.saturating_sub(later.overlap_tokens);
        }
        if same_path && let Some(first) = later.parts.first() {
            tokens = tokens.saturating_sub(sum_tokens(&first.head));
        }
        tokens
    }

    fn merge(mut self, later: Self) -> Self {
        let tokens = self.merged_tokens(&later);
        let (drop_overlap, same_path) = self.merge_savings(&later);
        let mut parts = later.parts.into_iter();
        if let Some(mut first) = parts.next() {
            if drop_overlap {
                first
                    .body
                    .drain(..later.overlap_pieces.min(first.body.len()));
            }
            match self.parts.last_mut() {
                Some(last) if same_path => last.body.append(&mut first.body),
                _ => self.parts.push(first),
            }
        }
        self.parts.extend(parts);
        self.tokens = tokens;
        self.path = common_path(self.path, later.path);
        self.merged.push(later.id);
        self.merged.extend(later.merged);
        self.extra_sentences.extend(later.extra_sentences);
        self
    }

    fn word_set(&self) -> Vec<u64> {
        word_hashes(
            self.parts
                .iter()
                .flat_map(|p| &p.body)
                .map(|p| p.text.as_ref()),
        )
    }
}

/// Drafts in reading order, as the strategies build them.
#[derive(Default)]
pub(super) struct Drafts<'a> {
    pub items: Vec<Draft<'a>>,
    /// Tables emitted so far, by content signature, for dropping duplicates.
    pub tables: HashMap<blake3::Hash, SeenTable>,
}

impl<'a> Drafts<'a> {
    /// Appends a draft and returns its id (its position here).
    pub fn push(&mut self, mut draft: Draft<'a>) -> u32 {
        let id = self.items.len() as u32;
        draft.id = id;
        self.items.push(draft);
        id
    }
}
