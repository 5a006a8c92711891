//! The deterministic sentence skeleton: Document → Section → Paragraph →
//! Sentence.
//!
//! Every node is parsed from document structure, none guessed. Nodes live in
//! arrays in reading order and are addressed by small integer ids, so that
//! the parent paragraph, the section and the previous and next sentence of
//! any sentence are array lookups. The same input always yields the same
//! ids; the stable string ids ([`Skeleton::sentence_key`] and friends) exist
//! for export and citations.
//!
//! Edges are implicit in the arrays: `PART_OF` (sentence → paragraph →
//! section → parent section → document) and `NEXT` (reading order, for
//! sentences and for paragraphs). [`Skeleton::edges`] lists them.

use std::fmt;
use std::ops::{ControlFlow, Range};

use serde::Serialize;

use crate::byteset::{count_chars, scan_blocks};
use crate::parse::legibility::{Legibility, is_unknown_glyph};
use crate::parse::{
    BlockKind, DocumentInfo, DocumentTree, FormField, Format, Table, TextSpan, TocEntry,
};
use crate::segment::{Screen, Segmenter, SentenceFilter};
pub use tables::TableNode;

mod locate;
pub mod tables;

pub use locate::PageBox;

/// A document's stable id: the first 16 hex digits of the BLAKE3 hash of its
/// key (the path or URI it was read from, as given).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct DocId(String);

impl DocId {
    pub fn from_key(key: &str) -> Self {
        let hash = blake3::hash(key.as_bytes());
        DocId(hash.to_hex()[..16].to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

macro_rules! node_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

node_id!(
    /// Index of a section in [`Skeleton::sections`].
    SectionId
);
node_id!(
    /// Index of a paragraph in [`Skeleton::paragraphs`].
    ParagraphId
);
node_id!(
    /// Index of a sentence in [`Skeleton::sentences`].
    SentenceId
);

/// Headings from the top of the document down to a section.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct SectionPath(pub Vec<String>);

impl SectionPath {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `self` lies under (or is) `prefix`.
    pub fn starts_with(&self, prefix: &SectionPath) -> bool {
        self.0.starts_with(&prefix.0)
    }
}

impl fmt::Display for SectionPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(" > "))
    }
}

/// What kind of content a sentence came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceTag {
    Paragraph,
    TableRow,
    ListItem,
    FigureCaption,
    Code,
}

/// What kind of block a paragraph node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParagraphKind {
    Text,
    ListItem,
    Caption,
    Code,
    Table,
}

/// The document node.
#[derive(Clone, Debug, Serialize)]
pub struct DocumentNode {
    pub id: DocId,
    /// The path or URI the document was read from.
    pub source: String,
    pub format: Format,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Author, date, version and language, as the document records them.
    #[serde(skip_serializing_if = "DocumentInfo::is_empty")]
    pub info: DocumentInfo,
}

#[derive(Clone, Debug, Serialize)]
pub struct SectionNode {
    pub id: SectionId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<SectionId>,
    /// 0 for the document root, 1 for top-level headings.
    pub level: u8,
    /// Numbering and title: "5.1 Payment" (empty for the root).
    pub heading: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numbering: Option<String>,
    pub path: SectionPath,
    pub span: TextSpan,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// The section's own paragraphs (not its subsections').
    pub paragraphs: Range<u32>,
    /// The form fields that stand in it (not in its subsections').
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FormField>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ParagraphNode {
    pub id: ParagraphId,
    pub section: SectionId,
    pub kind: ParagraphKind,
    pub sentences: Range<u32>,
    pub span: TextSpan,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// List nesting depth, for list items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_depth: Option<u8>,
    /// The table grid, for table paragraphs (chunks render it as Markdown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<Table>,
}

/// A sentence: the retrieval unit, and a unified node that carries all it
/// needs for expansion without joins.
#[derive(Clone, Debug, Serialize)]
pub struct Sentence {
    pub id: SentenceId,
    pub paragraph: ParagraphId,
    pub section: SectionId,
    pub text: String,
    pub source: SourceTag,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Where the sentence lies in the document's canonical text.
    pub span: TextSpan,
    /// Extraction confidence: the share of its characters read exactly
    /// (1.0 for text as written; lower for unknown glyphs and, in PDFs,
    /// for words that read as a lost font encoding: see
    /// [`crate::parse::legibility`]).
    pub confidence: f32,
    /// Whether the sentence passes the index filters (length, form labels).
    pub indexable: bool,
    /// Where it stands on its pages, one box per line (paged formats).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<PageBox>,
}

/// Kinds of skeleton edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EdgeKind {
    PartOf,
    Next,
}

/// A node reference, for edge listings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "id", rename_all = "snake_case")]
pub enum NodeRef {
    Document,
    Section(SectionId),
    Paragraph(ParagraphId),
    Sentence(SentenceId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Edge {
    pub kind: EdgeKind,
    pub from: NodeRef,
    pub to: NodeRef,
}

/// Fewer bytes of canonical text than prose has per sentence, for the
/// first capacity of a skeleton's sentences.
const BYTES_PER_SENTENCE: usize = 128;

/// One document's skeleton.
#[derive(Clone, Debug, Serialize)]
pub struct Skeleton {
    pub document: DocumentNode,
    pub toc: Vec<TocEntry>,
    pub sections: Vec<SectionNode>,
    pub paragraphs: Vec<ParagraphNode>,
    pub sentences: Vec<Sentence>,
    /// The document's tables as objects ([`tables`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<TableNode>,
    /// The canonical text every span points into.
    #[serde(skip)]
    pub text: String,
}

impl Skeleton {
    /// Builds the skeleton of a parsed document. `key` is the path or URI
    /// the document was read from; it determines the document id.
    pub fn build(
        key: &str,
        tree: DocumentTree,
        segmenter: &Segmenter,
        filter: &SentenceFilter,
    ) -> Skeleton {
        let mut builder = Builder {
            sections: Vec::with_capacity(tree.sections.len()),
            paragraphs: Vec::new(),
            // Prose runs at about 150 bytes a sentence: room for that many
            // spares the copies of a vector grown by doubling.
            sentences: Vec::with_capacity(tree.text.len() / BYTES_PER_SENTENCE),
            ranges: Vec::new(),
            segmenter,
            filter,
            judge_words: tree.format == Format::Pdf,
            doubtful_pages: tree
                .garbled_pages
                .iter()
                .chain(&tree.damaged_pages)
                .copied()
                .collect(),
        };
        for (idx, section) in tree.sections.iter().enumerate() {
            let id = SectionId(idx as u32);
            let parent = section.parent.map(|p| SectionId(p as u32));
            let path = SectionPath(tree.section_path(idx));
            let first_paragraph = builder.paragraphs.len() as u32;
            builder.sections.push(SectionNode {
                id,
                parent,
                level: section.level,
                heading: section.heading(),
                numbering: section.numbering.clone(),
                path,
                span: section.span,
                page: section.page,
                paragraphs: first_paragraph..first_paragraph,
                fields: section.fields.clone(),
            });
            for block in &section.blocks {
                builder.add_block(id, block);
            }
            builder.sections[idx].paragraphs.end = builder.paragraphs.len() as u32;
        }
        locate::locate(&mut builder.sentences, &tree.lines, &tree.text);
        let (tables, repeated) = tables::find(&builder.paragraphs);
        // A near-copy of an earlier table is kept for display and left
        // out of the index.
        for rows in repeated {
            for sentence in &mut builder.sentences[rows.start as usize..rows.end as usize] {
                sentence.indexable = false;
            }
        }
        Skeleton {
            document: DocumentNode {
                id: DocId::from_key(key),
                source: key.to_string(),
                format: tree.format,
                title: tree.title,
                info: tree.info,
            },
            toc: tree.toc,
            sections: builder.sections,
            paragraphs: builder.paragraphs,
            sentences: builder.sentences,
            tables,
            text: tree.text,
        }
    }

    /// The skeleton of what `builder` holds, under `key`, split and
    /// filtered by the defaults: the tests' way from a few blocks to a
    /// skeleton.
    #[cfg(test)]
    pub(crate) fn from_builder(key: &str, builder: crate::parse::TreeBuilder) -> Skeleton {
        let mut tree = builder.finish();
        tree.render();
        Skeleton::build(
            key,
            tree,
            &crate::segment::Segmenter::default(),
            &SentenceFilter::default(),
        )
    }

    pub fn sentence(&self, id: SentenceId) -> &Sentence {
        &self.sentences[id.index()]
    }

    pub fn paragraph(&self, id: ParagraphId) -> &ParagraphNode {
        &self.paragraphs[id.index()]
    }

    pub fn section(&self, id: SectionId) -> &SectionNode {
        &self.sections[id.index()]
    }

    /// The previous sentence in reading order (`NEXT` reversed).
    pub fn prev(&self, id: SentenceId) -> Option<SentenceId> {
        id.0.checked_sub(1).map(SentenceId)
    }

    /// The next sentence in reading order.
    pub fn next(&self, id: SentenceId) -> Option<SentenceId> {
        (id.index() + 1 < self.sentences.len()).then(|| SentenceId(id.0 + 1))
    }

    /// The heading path of a sentence.
    pub fn section_path(&self, id: SentenceId) -> &SectionPath {
        &self.sections[self.sentence(id).section.index()].path
    }

    /// Stable string id of a sentence: `<doc>:s<n>`.
    pub fn sentence_key(&self, id: SentenceId) -> String {
        format!("{}:s{}", self.document.id, id.0)
    }

    /// Stable string id of a paragraph: `<doc>:p<n>`.
    pub fn paragraph_key(&self, id: ParagraphId) -> String {
        format!("{}:p{}", self.document.id, id.0)
    }

    /// Stable string id of a section: `<doc>:h<n>`.
    pub fn section_key(&self, id: SectionId) -> String {
        format!("{}:h{}", self.document.id, id.0)
    }

    /// The canonical text of a span.
    pub fn span_text(&self, span: TextSpan) -> String {
        self.text
            .chars()
            .skip(span.offset as usize)
            .take(span.len as usize)
            .collect()
    }

    /// Every `PART_OF` and `NEXT` edge, in a fixed order.
    pub fn edges(&self) -> impl Iterator<Item = Edge> + '_ {
        let part_of = |from, to| Edge {
            kind: EdgeKind::PartOf,
            from,
            to,
        };
        let next = |from, to| Edge {
            kind: EdgeKind::Next,
            from,
            to,
        };
        let sections = self.sections.iter().map(move |s| {
            let to = s.parent.map_or(NodeRef::Document, NodeRef::Section);
            part_of(NodeRef::Section(s.id), to)
        });
        let paragraphs = self
            .paragraphs
            .iter()
            .map(move |p| part_of(NodeRef::Paragraph(p.id), NodeRef::Section(p.section)));
        let sentences = self
            .sentences
            .iter()
            .map(move |s| part_of(NodeRef::Sentence(s.id), NodeRef::Paragraph(s.paragraph)));
        let paragraph_next = self
            .paragraphs
            .windows(2)
            .map(move |w| next(NodeRef::Paragraph(w[0].id), NodeRef::Paragraph(w[1].id)));
        let sentence_next = self
            .sentences
            .windows(2)
            .map(move |w| next(NodeRef::Sentence(w[0].id), NodeRef::Sentence(w[1].id)));
        sections
            .chain(paragraphs)
            .chain(sentences)
            .chain(paragraph_next)
            .chain(sentence_next)
    }
}

/// How exactly a sentence's text was extracted: the share of its characters
/// that are not unknown glyphs (U+FFFD, which the parsers put where bytes
/// did not decode, control characters, private-use code points).
fn extraction_confidence(text: &str) -> f32 {
    // Most sentences hold no byte an unknown glyph can start with: a
    // pass over their bytes says so without decoding or counting, for
    // accented letters, dashes and curly quotes as well as for ASCII.
    if !may_hold_unknown_glyph(text) {
        return 1.0;
    }
    let (mut all, mut unknown) = (0usize, 0usize);
    for c in text.chars().filter(|c| !c.is_whitespace()) {
        all += 1;
        unknown += usize::from(is_unknown_glyph(c));
    }
    if all == 0 {
        1.0
    } else {
        1.0 - unknown as f32 / all as f32
    }
}

/// Whether `text` may hold a character [`is_unknown_glyph`] rejects. In
/// UTF-8 every such character is a C0 control or DEL (one byte), a C1
/// control (`C2 80..=9F`), or starts with a lead byte of `EE` or above
/// (U+E000 onwards: the private-use areas, U+FFFD, the noncharacters, the
/// supplementary planes; a `str` holds no byte above `F4`). Without any of
/// these bytes, the text has no unknown glyph; with one, it may.
fn may_hold_unknown_glyph(text: &str) -> bool {
    const HIGH_LEADS_AND_DEL: [u8; 8] = [0x7f, 0xee, 0xef, 0xf0, 0xf1, 0xf2, 0xf3, 0xf4];
    let bytes = text.as_bytes();
    let found = scan_blocks(
        bytes,
        (&HIGH_LEADS_AND_DEL, 0x20),
        (&[0xc2], 0),
        |start, single, mut c1_leads| {
            if single != 0 {
                return ControlFlow::Break(());
            }
            while c1_leads != 0 {
                let at = start + c1_leads.trailing_zeros() as usize;
                if let Some(0x80..=0x9f) = bytes.get(at + 1) {
                    return ControlFlow::Break(());
                }
                c1_leads &= c1_leads - 1;
            }
            ControlFlow::Continue(())
        },
    );
    found.is_break()
}

/// What a paragraph's text rules out for all of its sentences, read once
/// (a sentence is part of its paragraph's text): most paragraphs hold no
/// unknown glyph and no checkbox, and then their sentences are not
/// searched for them one by one.
#[derive(Clone, Copy)]
struct ParagraphScreen {
    filter: Screen,
    may_hold_unknown_glyph: bool,
}

impl ParagraphScreen {
    /// For a sentence screened by nothing but itself: a code block (one
    /// sentence) and a table row (text made for the row).
    const NOTHING_RULED_OUT: ParagraphScreen = ParagraphScreen {
        filter: Screen::NOTHING_RULED_OUT,
        may_hold_unknown_glyph: true,
    };
}

/// What the sentences of one paragraph share.
struct Site<'b> {
    paragraph: ParagraphId,
    section: SectionId,
    block: &'b crate::parse::Block,
    source: SourceTag,
    screen: ParagraphScreen,
}

struct Builder<'a> {
    sections: Vec<SectionNode>,
    paragraphs: Vec<ParagraphNode>,
    sentences: Vec<Sentence>,
    ranges: Vec<Range<usize>>,
    segmenter: &'a Segmenter,
    filter: &'a SentenceFilter,
    /// Judge the words of each sentence, not only its characters: text
    /// extracted from a PDF can be garbled without an unknown glyph in it
    /// (see [`crate::parse::legibility`]).
    judge_words: bool,
    /// Pages whose whole text looks garbled, or that were drawn from a
    /// stream that did not decode: no sentence on them is believed,
    /// whatever its words look like alone.
    doubtful_pages: Vec<u32>,
}

impl Builder<'_> {
    fn add_block(&mut self, section: SectionId, block: &crate::parse::Block) {
        match &block.kind {
            BlockKind::Paragraph { text } => {
                self.add_prose(
                    section,
                    block,
                    ParagraphKind::Text,
                    SourceTag::Paragraph,
                    text,
                    None,
                );
            }
            BlockKind::ListItem { text, depth, .. } => {
                self.add_prose(
                    section,
                    block,
                    ParagraphKind::ListItem,
                    SourceTag::ListItem,
                    text,
                    Some(*depth),
                );
            }
            BlockKind::Caption { text } => {
                self.add_prose(
                    section,
                    block,
                    ParagraphKind::Caption,
                    SourceTag::FigureCaption,
                    text,
                    None,
                );
            }
            BlockKind::Code { text, .. } => {
                let paragraph = self.open_paragraph(section, block, ParagraphKind::Code, None);
                // Code is one unit: splitting it at periods would cut
                // statements, not sentences.
                let site = Site {
                    paragraph,
                    section,
                    block,
                    source: SourceTag::Code,
                    screen: ParagraphScreen::NOTHING_RULED_OUT,
                };
                self.push_sentence(&site, text.clone(), block.span);
                self.close_paragraph(paragraph);
            }
            BlockKind::Table(table) => self.add_table(section, block, table),
        }
    }

    fn open_paragraph(
        &mut self,
        section: SectionId,
        block: &crate::parse::Block,
        kind: ParagraphKind,
        list_depth: Option<u8>,
    ) -> ParagraphId {
        let id = ParagraphId(self.paragraphs.len() as u32);
        let first = self.sentences.len() as u32;
        self.paragraphs.push(ParagraphNode {
            id,
            section,
            kind,
            sentences: first..first,
            span: block.span,
            page: block.page,
            list_depth,
            table: None,
        });
        id
    }

    fn close_paragraph(&mut self, id: ParagraphId) {
        self.paragraphs[id.index()].sentences.end = self.sentences.len() as u32;
    }

    fn push_sentence(&mut self, site: &Site<'_>, text: String, span: TextSpan) {
        let Site {
            paragraph,
            section,
            block,
            source,
            screen,
        } = *site;
        let indexable = self.filter.is_indexable_within(&text, screen.filter);
        let confidence = if block.page.is_some_and(|p| self.doubtful_pages.contains(&p)) {
            0.0
        } else if self.judge_words {
            Legibility::of(&text).legible_share()
        } else if !screen.may_hold_unknown_glyph {
            1.0
        } else {
            extraction_confidence(&text)
        };
        self.sentences.push(Sentence {
            id: SentenceId(self.sentences.len() as u32),
            paragraph,
            section,
            text,
            source,
            page: block.page,
            span,
            confidence,
            indexable,
            boxes: Vec::new(),
        });
    }

    fn add_prose(
        &mut self,
        section: SectionId,
        block: &crate::parse::Block,
        kind: ParagraphKind,
        source: SourceTag,
        text: &str,
        list_depth: Option<u8>,
    ) {
        let paragraph = self.open_paragraph(section, block, kind, list_depth);
        let site = Site {
            paragraph,
            section,
            block,
            source,
            screen: ParagraphScreen {
                filter: Screen::of(text),
                // Only the character check reads glyphs; judged words do not.
                may_hold_unknown_glyph: self.judge_words || may_hold_unknown_glyph(text),
            },
        };
        let mut ranges = std::mem::take(&mut self.ranges);
        ranges.clear();
        self.segmenter.split_into(text, &mut ranges);
        // Char offsets are counted incrementally: each range's start is
        // reached from the previous range's end, so every byte of the
        // paragraph is counted once.
        let chars = |s: &str| count_chars(s) as u32;
        let mut byte_cursor = 0usize;
        let mut char_cursor = block.span.offset;
        for range in &ranges {
            char_cursor += chars(&text[byte_cursor..range.start]);
            let sentence = &text[range.clone()];
            let len = chars(sentence);
            let span = TextSpan {
                offset: char_cursor,
                len,
            };
            self.push_sentence(&site, sentence.to_string(), span);
            char_cursor += len;
            byte_cursor = range.end;
        }
        self.ranges = ranges;
        self.close_paragraph(paragraph);
    }

    fn add_table(&mut self, section: SectionId, block: &crate::parse::Block, table: &Table) {
        if let (Some(caption), Some(span)) = (&table.caption, table.caption_span) {
            let caption_block = crate::parse::Block {
                kind: BlockKind::Caption {
                    text: caption.clone(),
                },
                page: block.page,
                span,
            };
            self.add_prose(
                section,
                &caption_block,
                ParagraphKind::Caption,
                SourceTag::FigureCaption,
                caption,
                None,
            );
        }
        let paragraph = self.open_paragraph(section, block, ParagraphKind::Table, None);
        let site = Site {
            paragraph,
            section,
            block,
            source: SourceTag::TableRow,
            screen: ParagraphScreen::NOTHING_RULED_OUT,
        };
        let labels = table.column_labels();
        for (r, row) in table.rows.iter().enumerate() {
            if !table.is_data_row(r) {
                continue;
            }
            let text = table_row_sentence(&labels, row);
            if text.is_empty() {
                continue;
            }
            let span = table.row_spans.get(r).copied().unwrap_or(block.span);
            self.push_sentence(&site, text, span);
        }
        self.paragraphs[paragraph.index()].table = Some(table.clone());
        self.close_paragraph(paragraph);
    }
}

/// "Header: val | Header: val"; cells without a header are written bare,
/// empty cells are left out.
pub fn table_row_sentence(labels: &[String], row: &[String]) -> String {
    let mut out = String::new();
    for (c, cell) in row.iter().enumerate() {
        if cell.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str(" | ");
        }
        match labels.get(c).filter(|l| !l.is_empty() && *l != cell) {
            Some(label) => {
                out.push_str(label);
                out.push_str(": ");
                out.push_str(cell);
            }
            None => out.push_str(cell),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::TreeBuilder;

    fn skeleton() -> Skeleton {
        let mut b = TreeBuilder::new(Format::Markdown);
        b.heading(1, "1 Terms");
        b.paragraph("First sentence here. Second sentence here.");
        b.heading(2, "1.1 Fees");
        b.table(Table {
            caption: Some("Table 1: Fees".into()),
            header_rows: 1,
            rows: vec![
                vec!["Item".into(), "Fee (USD)".into()],
                vec!["Setup".into(), "100".into()],
                vec!["Item".into(), "Fee (USD)".into()],
                vec!["Hosting".into(), "".into()],
            ],
            ..Table::default()
        });
        b.list_item(0, Some("-"), "A list item.");
        Skeleton::from_builder("docs/terms.md", b)
    }

    #[test]
    fn structure_and_spans() {
        let s = skeleton();
        let texts: Vec<&str> = s.sentences.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "First sentence here.",
                "Second sentence here.",
                "Table 1: Fees",
                "Item: Setup | Fee (USD): 100",
                "Item: Hosting",
                "A list item."
            ]
        );
        for sentence in &s.sentences[..3] {
            assert_eq!(s.span_text(sentence.span), sentence.text);
        }
        assert_eq!(s.span_text(s.sentences[3].span), "| Setup | 100 |");
        assert_eq!(s.sentences[3].source, SourceTag::TableRow);
        assert_eq!(
            s.section_path(SentenceId(3)).to_string(),
            "1 Terms > 1.1 Fees"
        );
        assert_eq!(s.sentences[5].source, SourceTag::ListItem);
        let p = s.paragraph(s.sentences[1].paragraph);
        assert_eq!(p.sentences, 0..2);
    }

    #[test]
    fn confidence_is_the_share_of_characters_read() {
        assert_eq!(extraction_confidence("All read."), 1.0);
        assert_eq!(extraction_confidence("ab \u{FFFD}\u{FFFD}"), 0.5);
        assert_eq!(extraction_confidence("   "), 1.0);
    }

    #[test]
    fn ascii_confidence_follows_the_same_rules_as_any_text() {
        // The rules for every character, decoded: what the ASCII path must
        // agree with.
        let decoded = |text: &str| {
            let counted: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
            let unknown = counted.iter().filter(|&&c| is_unknown_glyph(c)).count();
            if counted.is_empty() {
                1.0
            } else {
                1.0 - unknown as f32 / counted.len() as f32
            }
        };
        for b in 0u8..0x80 {
            let text = format!("ab{}c", b as char);
            assert_eq!(extraction_confidence(&text), decoded(&text), "{b:#x}");
        }
    }

    #[test]
    fn every_character_is_judged_as_when_decoded() {
        // The byte screen must let through every character whose decoded
        // rule says unknown: all of Unicode, each between letters.
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            let text = format!("ab{c}c");
            let decoded = usize::from(is_unknown_glyph(c) && !c.is_whitespace());
            let expected = 1.0 - decoded as f32 / 4.0;
            assert_eq!(extraction_confidence(&text), expected, "U+{:04X}", c as u32);
        }
    }

    proptest::proptest! {
        /// The paragraph screens rule out only what no sentence of the
        /// paragraph has: every sentence is judged as it is alone.
        #[test]
        fn sentences_are_judged_as_alone_whatever_their_paragraph_holds(
            paragraphs in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::sample::select(vec![
                        "Name: ", "____", "☐ Yes ", "☐ No", "[ ] Yes ", "[x] No ", "Date: .....",
                        "The fee is due. ", "It ends here.", " \u{FFFD}", "\u{C2}\u{85}", "\u{1}",
                        "\u{E000}x ", "— “quoted” ", "Signature:", "\n", "é ", "ok",
                    ]),
                    1..12,
                ),
                1..4,
            )
        ) {
            let mut b = TreeBuilder::new(Format::Text);
            for pieces in &paragraphs {
                b.paragraph(&pieces.concat());
            }
            let mut tree = b.finish();
            tree.render();
            let filter = SentenceFilter::default();
            let skeleton = Skeleton::build("p.txt", tree, &Segmenter::default(), &filter);
            for sentence in &skeleton.sentences {
                proptest::prop_assert_eq!(
                    sentence.indexable,
                    filter.is_indexable(&sentence.text),
                    "{:?}",
                    sentence.text
                );
                proptest::prop_assert_eq!(
                    sentence.confidence,
                    extraction_confidence(&sentence.text),
                    "{:?}",
                    sentence.text
                );
            }
        }
    }

    #[test]
    fn ids_are_deterministic() {
        let a = skeleton();
        let b = skeleton();
        assert_eq!(a.document.id, b.document.id);
        assert_eq!(a.sentence_key(SentenceId(2)), b.sentence_key(SentenceId(2)));
        assert_eq!(a.document.id.as_str().len(), 16);
    }

    #[test]
    fn edges_cover_every_node() {
        let s = skeleton();
        let part_of = s.edges().filter(|e| e.kind == EdgeKind::PartOf).count();
        assert_eq!(
            part_of,
            s.sections.len() + s.paragraphs.len() + s.sentences.len()
        );
        let next = s.edges().filter(|e| e.kind == EdgeKind::Next).count();
        assert_eq!(next, s.sentences.len() - 1 + s.paragraphs.len() - 1);
    }
}
