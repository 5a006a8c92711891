//! `DocumentTree`: what every format parser produces.
//!
//! A tree is a flat list of sections in reading order (each knowing its
//! parent), each owning its blocks. After parsing, the tree is rendered once
//! into its *canonical text*, a plain Markdown view of the document (the one
//! `trellis parse --format markdown` prints); every section and block records
//! its [`TextSpan`] in that text, and sentence offsets downstream point into
//! it as well.

use std::ops::ControlFlow;

use serde::Serialize;

use super::forms::FormField;
use super::info::{DocumentInfo, InfoReader};
use crate::byteset::{BLOCK, count_chars, scan_blocks};

/// Input formats Trellis reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Markdown,
    Html,
    Docx,
    Text,
    Pdf,
}

impl Format {
    /// The format a file name's extension names, if any.
    pub fn from_extension(path: &std::path::Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "md" | "markdown" | "mdown" | "mkd" => Format::Markdown,
            "html" | "htm" | "xhtml" => Format::Html,
            "docx" => Format::Docx,
            "txt" | "text" => Format::Text,
            "pdf" => Format::Pdf,
            _ => return None,
        })
    }

    /// The format the first bytes of a file announce, if they announce one.
    pub fn sniff(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(b"%PDF-") {
            return Some(Format::Pdf);
        }
        if bytes.starts_with(b"PK\x03\x04") {
            return Some(Format::Docx);
        }
        let head = &bytes[..bytes.len().min(1024)];
        let head = String::from_utf8_lossy(head).to_ascii_lowercase();
        let head = head.trim_start_matches('\u{feff}').trim_start();
        if head.starts_with("<!doctype html") || head.starts_with("<html") {
            return Some(Format::Html);
        }
        None
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Html => "html",
            Format::Docx => "docx",
            Format::Text => "text",
            Format::Pdf => "pdf",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A range of the canonical text, in Unicode scalar values (what Python's
/// `str` indexes), so that citations can be checked by any client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TextSpan {
    pub offset: u32,
    pub len: u32,
}

impl TextSpan {
    pub fn end(self) -> u32 {
        self.offset + self.len
    }
}

/// Index of a section in [`DocumentTree::sections`].
pub type SectionIdx = usize;

/// One line of text on a page, as laid out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PageLine {
    /// 1-based.
    pub page: u32,
    /// `[x0, y0, x1, y1]` in PDF points, origin at the page's bottom left.
    pub bbox: [f32; 4],
    pub text: String,
    /// The left and right edge of each character of `text`.
    pub xs: Vec<[f32; 2]>,
}

/// A parsed document.
#[derive(Clone, Debug, Serialize)]
pub struct DocumentTree {
    pub format: Format,
    /// The document's title (HTML `<title>`, DOCX core properties, or the
    /// first level-1 heading), if it has one.
    pub title: Option<String>,
    /// Its author, date, version and language, as its metadata gives them.
    #[serde(skip_serializing_if = "DocumentInfo::is_empty")]
    pub info: DocumentInfo,
    /// Sections in reading order. `sections[0]` is the root (level 0, no
    /// title): it holds what comes before the first heading.
    pub sections: Vec<Section>,
    /// The table of contents found in the document, removed from the body.
    pub toc: Vec<TocEntry>,
    /// Things worth telling the user that did not stop the parse
    /// ("decoded as Windows-1252", "dropped 12 boilerplate lines").
    pub warnings: Vec<String>,
    /// How exactly the text was extracted, in [0, 1]: 1.0 for text read as
    /// written; a PDF's share of glyphs with a Unicode mapping. Sentences
    /// carry their own (see the skeleton's `Sentence::confidence`).
    pub confidence: f32,
    /// Pages in the document, for paged formats (PDF).
    pub pages: Option<u32>,
    /// Pages whose text looks garbled (PDF; see [`super::legibility`]):
    /// the document is flagged in the ingest report.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub garbled_pages: Vec<u32>,
    /// Pages drawn from a stream that did not decode (PDF): their
    /// sentences carry a low confidence, as garbled pages' do.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damaged_pages: Vec<u32>,
    /// Pages the document promises that could not be read at all (PDF: a
    /// truncated or damaged file); counted in the ingest report.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost_pages: Vec<u32>,
    /// Why the document is flagged in the ingest report besides garbled
    /// pages: damaged streams, lost pages.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Where each line of a paged document's text stands on its page, in
    /// reading order, for locating sentences (PDF; empty otherwise).
    #[serde(skip)]
    pub lines: Vec<PageLine>,
    /// The canonical text: a plain Markdown rendering that every span
    /// points into. Filled by [`DocumentTree::render`].
    #[serde(skip)]
    pub text: String,
}

/// A heading and the blocks up to the next heading.
#[derive(Clone, Debug, Serialize)]
pub struct Section {
    /// 0 for the root, 1 for a top-level heading, and so on.
    pub level: u8,
    /// Heading text without its numbering.
    pub title: String,
    /// The heading's numbering as written ("5.1", "ARTICLE V", "A."), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numbering: Option<String>,
    /// The enclosing section (the nearest earlier section of lower level).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<SectionIdx>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Span of the heading text (numbering and title) in the canonical text.
    pub span: TextSpan,
    /// Whether the heading is run into its first paragraph ("11. Customer
    /// References. Customer agrees …"): it is not rendered on a line of
    /// its own, and its span points at the paragraph's opening words.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub run_in: bool,
    pub blocks: Vec<Block>,
    /// The form fields that stand in it (not in its subsections), in
    /// reading order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FormField>,
}

impl Section {
    /// Whether the section's first block is a paragraph starting with
    /// `heading`, as a run-in heading's is.
    fn opens_with(&self, heading: &str) -> bool {
        matches!(
            self.blocks.first().map(|b| &b.kind),
            Some(BlockKind::Paragraph { text }) if text.starts_with(heading)
        )
    }

    /// Numbering and title as the reader sees them: "5.1 Payment".
    pub fn heading(&self) -> String {
        match &self.numbering {
            Some(n) if self.title.is_empty() => n.clone(),
            Some(n) => format!("{n} {}", self.title),
            None => self.title.clone(),
        }
    }
}

/// One block of content.
#[derive(Clone, Debug, Serialize)]
pub struct Block {
    #[serde(flatten)]
    pub kind: BlockKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Span of the block's own text in the canonical text (for a list item,
    /// without its marker; for a table, the whole rendered table).
    pub span: TextSpan,
}

/// What a block holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockKind {
    Paragraph {
        text: String,
    },
    ListItem {
        text: String,
        /// Nesting depth, 0 for a top-level item.
        depth: u8,
        /// The item's marker as rendered ("1.", "a)", "•"), if known.
        #[serde(skip_serializing_if = "Option::is_none")]
        marker: Option<String>,
    },
    /// A figure or table caption.
    Caption {
        text: String,
    },
    Code {
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        language: Option<String>,
    },
    Table(Table),
}

impl BlockKind {
    /// The block's text; `None` for tables.
    pub fn text(&self) -> Option<&str> {
        match self {
            BlockKind::Paragraph { text }
            | BlockKind::ListItem { text, .. }
            | BlockKind::Caption { text }
            | BlockKind::Code { text, .. } => Some(text),
            BlockKind::Table(_) => None,
        }
    }

    pub fn text_mut(&mut self) -> Option<&mut String> {
        match self {
            BlockKind::Paragraph { text }
            | BlockKind::ListItem { text, .. }
            | BlockKind::Caption { text }
            | BlockKind::Code { text, .. } => Some(text),
            BlockKind::Table(_) => None,
        }
    }
}

/// A table as a rectangular grid: merged cells (colspan/rowspan, gridSpan,
/// vMerge) are expanded by repeating their text in every grid position they
/// cover, so that every row has the same number of cells.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Table {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// How many leading rows are header rows.
    pub header_rows: usize,
    pub rows: Vec<Vec<String>>,
    /// Span of each row's line in the canonical text (filled by `render`).
    #[serde(skip)]
    pub row_spans: Vec<TextSpan>,
    /// Span of the caption in the canonical text (filled by `render`).
    #[serde(skip)]
    pub caption_span: Option<TextSpan>,
}

impl Table {
    /// Number of columns (rows are padded to this width by `normalize`).
    pub fn columns(&self) -> usize {
        self.rows.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// Collapses whitespace in cells, pads short rows to the table's width
    /// and drops rows that are empty throughout (columns are kept, so the
    /// grid keeps the author's shape). Returns false when nothing is left.
    pub fn normalize(&mut self) -> bool {
        for cell in self.rows.iter_mut().flatten() {
            *cell = collapse_whitespace(cell);
        }
        let header_rows = self.header_rows.min(self.rows.len());
        let mut kept_headers = 0;
        let mut index = 0;
        self.rows.retain(|row| {
            let keep = row.iter().any(|c| !c.is_empty());
            if keep && index < header_rows {
                kept_headers += 1;
            }
            index += 1;
            keep
        });
        self.header_rows = kept_headers;
        let width = self.columns();
        for row in &mut self.rows {
            row.resize(width, String::new());
        }
        !self.rows.is_empty() && width > 0
    }

    /// Whether row `r` is data, a row the skeleton makes a sentence of:
    /// after the header rows and their units row, not a header row
    /// repeated in the body (at a page break), not empty.
    pub fn is_data_row(&self, r: usize) -> bool {
        let header = &self.rows[..self.header_rows.min(self.rows.len())];
        r >= self.header_rows
            && !self.is_units_row_at(r)
            && self
                .rows
                .get(r)
                .is_some_and(|row| !header.contains(row) && row.iter().any(|c| !c.is_empty()))
    }

    /// The rows after the header rows.
    pub fn body(&self) -> &[Vec<String>] {
        &self.rows[self.header_rows.min(self.rows.len())..]
    }

    /// One label per column: the column's header cells joined with " / "
    /// (repeats from merged cells collapsed), so multi-row headers and their
    /// units ("Revenue / USD m") survive.
    pub fn column_labels(&self) -> Vec<String> {
        let width = self.columns();
        (0..width)
            .map(|c| {
                let mut parts: Vec<&str> = Vec::new();
                for row in &self.rows[..self.header_rows.min(self.rows.len())] {
                    let cell = row.get(c).map(String::as_str).unwrap_or("");
                    if !cell.is_empty() && parts.last() != Some(&cell) {
                        parts.push(cell);
                    }
                }
                parts.join(" / ")
            })
            .collect()
    }
}

/// An entry of a document's table of contents.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TocEntry {
    pub level: u8,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
}

/// [`collapse_whitespace`] for a text the caller owns: kept as it is, not
/// copied, when it is collapsed already (as most paragraphs are).
pub fn collapse_whitespace_owned(text: String) -> String {
    if is_collapsed(text.as_bytes()) {
        text
    } else {
        collapse(&text)
    }
}

/// Collapses every run of whitespace (including newlines, NBSP and
/// zero-width spaces) into one space and trims the ends.
pub fn collapse_whitespace(text: &str) -> String {
    if is_collapsed(text.as_bytes()) {
        text.to_string()
    } else {
        collapse(text)
    }
}

/// [`collapse_whitespace`]'s work, for a text [`is_collapsed`] has found
/// to need it.
fn collapse(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut word_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let whitespace_len = match bytes[i] {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => 1,
            // Lead bytes of the non-ASCII whitespace characters: decode the
            // character to decide. `i` is on a char boundary here because
            // continuation bytes (0x80..=0xBF) never match these arms.
            0xc2 | 0xe1 | 0xe2 | 0xe3 | 0xef => text[i..]
                .chars()
                .next()
                .filter(|&c| c.is_whitespace() || c == '\u{200b}' || c == '\u{feff}')
                .map_or(0, char::len_utf8),
            _ => 0,
        };
        if whitespace_len == 0 {
            i += 1;
            continue;
        }
        if word_start < i {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&text[word_start..i]);
        }
        i += whitespace_len;
        word_start = i;
    }
    if word_start < bytes.len() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&text[word_start..]);
    }
    out
}

/// A searcher for two spaces, built once (building one per call would cost
/// more than most searches).
pub(super) static DOUBLE_SPACE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"  "));

/// Whether `bytes` is already collapsed: no ASCII whitespace but single
/// inner spaces, and none of the non-ASCII characters that
/// [`collapse_whitespace`] treats as whitespace (U+0085, U+00A0, U+1680,
/// U+2000–U+200B, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF).
fn is_collapsed(bytes: &[u8]) -> bool {
    if bytes.first() == Some(&b' ') || bytes.last() == Some(&b' ') {
        return false;
    }
    // Each block of 64 bytes gives a bit per space, and one per control
    // character or lead byte of a whitespace character; only those get the
    // exact check.
    const LEAD_BYTES: [u8; 5] = [0xc2, 0xe1, 0xe2, 0xe3, 0xef];
    let mut space_before = 0u64;
    let found = scan_blocks(
        bytes,
        (b" ", 0),
        (&LEAD_BYTES, 0x20),
        |start, spaces, mut suspicious| {
            if spaces & ((spaces << 1) | space_before) != 0 {
                return ControlFlow::Break(()); // two spaces in a row
            }
            space_before = spaces >> (BLOCK - 1);
            while suspicious != 0 {
                if whitespace_at(bytes, start + suspicious.trailing_zeros() as usize) {
                    return ControlFlow::Break(());
                }
                suspicious &= suspicious - 1;
            }
            ControlFlow::Continue(())
        },
    );
    found.is_continue()
}

/// Whether a character [`collapse_whitespace`] removes, other than the plain
/// space, starts at `bytes[i]`.
fn whitespace_at(bytes: &[u8], i: usize) -> bool {
    let at = |n: usize| bytes.get(i + n).copied().unwrap_or(0);
    match at(0) {
        b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => true,
        0xc2 => matches!(at(1), 0x85 | 0xa0),
        0xe1 => at(1) == 0x9a && at(2) == 0x80,
        0xe2 => match at(1) {
            0x80 => matches!(at(2), 0x80..=0x8b | 0xa8 | 0xa9 | 0xaf),
            0x81 => at(2) == 0x9f,
            _ => false,
        },
        0xe3 => at(1) == 0x80 && at(2) == 0x80,
        0xef => at(1) == 0xbb && at(2) == 0xbf,
        _ => false,
    }
}

/// Splits a heading's leading numbering from its title:
/// "5.1 Payment" → ("5.1", "Payment"); "ARTICLE V — TERM" → ("ARTICLE V",
/// "TERM"); "A. Scope" → ("A.", "Scope"); "Payment" → (None, "Payment").
pub fn split_heading_numbering(heading: &str) -> (Option<String>, String) {
    let heading = heading.trim();
    let mut words = heading.splitn(2, char::is_whitespace);
    let first = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default().trim_start();

    let keyword = first.trim_end_matches([':', '.']).to_ascii_lowercase();
    if matches!(
        keyword.as_str(),
        "article" | "section" | "chapter" | "part" | "clause" | "schedule" | "exhibit" | "annex"
    ) {
        let mut rest_words = rest.splitn(2, char::is_whitespace);
        let number = rest_words.next().unwrap_or_default();
        if is_number_token(number.trim_end_matches([':', '.', ')'])) {
            let title = rest_words.next().unwrap_or_default();
            let title = title
                .trim_start_matches([':', '.', '-', '–', '—', ' '])
                .trim();
            // Keep annex-like keywords in the title too: "Exhibit A" is what
            // a reader calls that section.
            let numbering = format!("{first} {}", number.trim_end_matches([':', '.']));
            return (Some(numbering), title.to_string());
        }
    }
    if is_outline_number(first) && !rest.is_empty() {
        let title = rest.trim_start_matches(['-', '–', '—', ' ']).trim();
        return (Some(first.to_string()), title.to_string());
    }
    (None, heading.to_string())
}

/// "5", "5.1", "5.1.2", "5.1." "IV", "A", "a", "(a)", "iv)" …
fn is_number_token(token: &str) -> bool {
    let token = token.trim_start_matches('(').trim_end_matches(')');
    if token.is_empty() || token.len() > 12 {
        return false;
    }
    let decimal = token
        .split('.')
        .filter(|p| !p.is_empty())
        .all(|p| p.chars().all(|c| c.is_ascii_digit()))
        && token.chars().next().is_some_and(|c| c.is_ascii_digit());
    let roman = token
        .chars()
        .all(|c| matches!(c.to_ascii_uppercase(), 'I' | 'V' | 'X' | 'L' | 'C'));
    let letter = token.len() == 1 && token.chars().all(|c| c.is_ascii_alphabetic());
    decimal || roman || letter
}

/// An outline number at the start of a heading: "5", "5.1", "5.1.", "1)",
/// "IV.", "A.", "(a)". Bare words like "I" or "A" without punctuation are
/// not numbering (they start ordinary titles).
fn is_outline_number(token: &str) -> bool {
    let stripped = token.trim_end_matches(['.', ')']).trim_start_matches('(');
    if stripped.is_empty() || stripped.len() > 12 {
        return false;
    }
    let starts_with_digit = stripped.starts_with(|c: char| c.is_ascii_digit());
    let decimal = starts_with_digit
        && stripped
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if decimal {
        return true;
    }
    let punctuated = token.len() > stripped.len();
    punctuated && is_number_token(stripped) && !stripped.chars().all(|c| c.is_ascii_digit())
}

/// Builds a [`DocumentTree`] from a parser's stream of headings and blocks.
///
/// Text is whitespace-collapsed on the way in (except code), empty blocks
/// are dropped, and parents are computed from heading levels.
pub struct TreeBuilder {
    tree: DocumentTree,
    page: Option<u32>,
    /// Grid positions (rows × columns) of the tables added so far.
    table_cells: u64,
}

impl TreeBuilder {
    pub fn new(format: Format) -> Self {
        Self {
            tree: DocumentTree {
                format,
                title: None,
                info: DocumentInfo::default(),
                sections: vec![Section {
                    level: 0,
                    title: String::new(),
                    numbering: None,
                    parent: None,
                    page: None,
                    span: TextSpan::default(),
                    run_in: false,
                    blocks: Vec::new(),
                    fields: Vec::new(),
                }],
                toc: Vec::new(),
                warnings: Vec::new(),
                confidence: 1.0,
                pages: None,
                garbled_pages: Vec::new(),
                damaged_pages: Vec::new(),
                lost_pages: Vec::new(),
                flags: Vec::new(),
                lines: Vec::new(),
                text: String::new(),
            },
            page: None,
            table_cells: 0,
        }
    }

    /// Grid positions (rows × columns) of the tables added so far, so that
    /// a parser appending to this builder (HTML blocks inside Markdown) can
    /// keep the whole document within `parsing.maxTableCells`.
    pub fn table_cells(&self) -> u64 {
        self.table_cells
    }

    pub fn set_title(&mut self, title: &str) {
        let title = collapse_whitespace(title);
        if !title.is_empty() {
            self.tree.title = Some(title);
        }
    }

    /// Records the metadata `reader` read, with a warning for a date it
    /// could not read.
    pub fn set_info(&mut self, reader: InfoReader) {
        let (info, warning) = reader.finish();
        self.tree.info = info;
        if let Some(warning) = warning {
            self.warn(warning);
        }
    }

    /// The page that following blocks are on (1-based), where known.
    pub fn set_page(&mut self, page: Option<u32>) {
        self.page = page;
    }

    pub fn warn(&mut self, warning: impl Into<String>) {
        self.tree.warnings.push(warning.into());
    }

    /// Starts a section; its numbering is split from the heading text.
    pub fn heading(&mut self, level: u8, heading: &str) {
        let (numbering, title) = split_heading_numbering(&collapse_whitespace(heading));
        self.heading_with_numbering(level, numbering, &title);
    }

    /// Starts a section whose numbering the format states separately (a
    /// DOCX numbering definition, say).
    pub fn heading_with_numbering(&mut self, level: u8, numbering: Option<String>, title: &str) {
        self.push_section(level, numbering, title, false);
    }

    /// Starts a section whose heading opens the paragraph that follows
    /// ("11. Customer References" of "11. Customer References. Customer
    /// agrees …"); that paragraph keeps its text whole. The heading is
    /// rendered as a line of its own only if the paragraph does not come
    /// to start with it (a cleaning pass dropped it).
    pub fn run_in_heading(&mut self, level: u8, heading: &str) {
        let (numbering, title) = split_heading_numbering(&collapse_whitespace(heading));
        self.push_section(level, numbering, &title, true);
    }

    fn push_section(&mut self, level: u8, numbering: Option<String>, title: &str, run_in: bool) {
        let title = collapse_whitespace(title);
        let numbering = numbering
            .map(|n| collapse_whitespace(&n))
            .filter(|n| !n.is_empty());
        if title.is_empty() && numbering.is_none() {
            return;
        }
        self.tree.sections.push(Section {
            level: level.max(1),
            title,
            numbering,
            parent: None,
            page: self.page,
            span: TextSpan::default(),
            run_in,
            blocks: Vec::new(),
            fields: Vec::new(),
        });
    }

    /// A form field standing in the section begun last.
    pub fn form_field(&mut self, field: FormField) {
        if let Some(section) = self.tree.sections.last_mut() {
            section.fields.push(field);
        }
    }

    pub fn paragraph(&mut self, text: &str) {
        let text = collapse_whitespace(text);
        if !text.is_empty() {
            self.push(BlockKind::Paragraph { text });
        }
    }

    /// [`paragraph`](Self::paragraph) for a text the caller owns, which is
    /// then not copied when its whitespace is collapsed already.
    pub fn paragraph_owned(&mut self, text: String) {
        let text = collapse_whitespace_owned(text);
        if !text.is_empty() {
            self.push(BlockKind::Paragraph { text });
        }
    }

    pub fn list_item(&mut self, depth: u8, marker: Option<&str>, text: &str) {
        let text = collapse_whitespace(text);
        if !text.is_empty() {
            let marker = marker.map(str::trim).filter(|m| !m.is_empty());
            self.push(BlockKind::ListItem {
                text,
                depth,
                marker: marker.map(str::to_string),
            });
        }
    }

    pub fn caption(&mut self, text: &str) {
        let text = collapse_whitespace(text);
        if !text.is_empty() {
            self.push(BlockKind::Caption { text });
        }
    }

    /// A code block; its text is kept as written, only trailing blank lines
    /// are trimmed.
    pub fn code(&mut self, language: Option<&str>, text: &str) {
        let text = text.trim_end().trim_start_matches('\n');
        if !text.trim().is_empty() {
            self.push(BlockKind::Code {
                text: text.to_string(),
                language: language
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string),
            });
        }
    }

    /// A table; cells are normalised and an empty table is dropped.
    pub fn table(&mut self, mut table: Table) {
        if let Some(caption) = &table.caption {
            let caption = collapse_whitespace(caption);
            table.caption = (!caption.is_empty()).then_some(caption);
        }
        if table.normalize() {
            let cells = (table.rows.len() as u64).saturating_mul(table.columns() as u64);
            self.table_cells = self.table_cells.saturating_add(cells);
            self.push(BlockKind::Table(table));
        }
    }

    /// Appends text to the last paragraph-like block (DOCX footnotes are
    /// attached to the paragraph that references them this way).
    pub fn append_to_last(&mut self, text: &str) -> bool {
        let text = collapse_whitespace(text);
        let last = self
            .tree
            .sections
            .last_mut()
            .and_then(|s| s.blocks.last_mut())
            .and_then(|b| b.kind.text_mut());
        match last {
            Some(existing) if !text.is_empty() => {
                existing.push(' ');
                existing.push_str(&text);
                true
            }
            _ => false,
        }
    }

    fn push(&mut self, kind: BlockKind) {
        let page = self.page;
        if let Some(section) = self.tree.sections.last_mut() {
            section.blocks.push(Block {
                kind,
                page,
                span: TextSpan::default(),
            });
        }
    }

    /// Finishes the tree: computes section parents and the title. Cleaning,
    /// ToC removal and rendering are the caller's next steps.
    pub fn finish(mut self) -> DocumentTree {
        self.tree.link_parents();
        if self.tree.title.is_none() {
            self.tree.title = self
                .tree
                .sections
                .iter()
                .find(|s| s.level == 1 && !s.run_in)
                .map(Section::heading);
        }
        self.tree
    }
}

impl DocumentTree {
    /// Sets every section's parent from the heading levels.
    pub fn link_parents(&mut self) {
        let mut stack: Vec<SectionIdx> = vec![0];
        for idx in 1..self.sections.len() {
            let level = self.sections[idx].level;
            while let Some(&top) = stack.last() {
                if top != 0 && self.sections[top].level >= level {
                    stack.pop();
                } else {
                    break;
                }
            }
            self.sections[idx].parent = stack.last().copied();
            stack.push(idx);
        }
    }

    /// Headings from the root down to `section` (the root excluded).
    pub fn section_path(&self, section: SectionIdx) -> Vec<String> {
        let mut path = Vec::new();
        let mut current = Some(section);
        while let Some(idx) = current {
            if idx == 0 {
                break;
            }
            path.push(self.sections[idx].heading());
            current = self.sections[idx].parent;
        }
        path.reverse();
        path
    }

    /// Every block in reading order with the section it belongs to.
    pub fn blocks(&self) -> impl Iterator<Item = (SectionIdx, &Block)> {
        self.sections
            .iter()
            .enumerate()
            .flat_map(|(idx, s)| s.blocks.iter().map(move |b| (idx, b)))
    }

    /// Drops sections that are empty placeholders (no heading text and no
    /// blocks) and re-links parents. Used after cleaning passes remove
    /// content.
    pub fn prune_empty_sections(&mut self) {
        let mut first = true;
        self.sections.retain(|s| {
            let keep = first
                || !(s.title.is_empty()
                    && s.numbering.is_none()
                    && s.blocks.is_empty()
                    && s.fields.is_empty());
            first = false;
            keep
        });
        self.link_parents();
    }

    /// Renders the canonical text and records every span in it. Call once,
    /// after all cleaning passes.
    pub fn render(&mut self) {
        let mut out = Renderer::default();
        // Grown as it is written, the text would be copied over and again.
        out.text.reserve(self.rendered_len_estimate());
        if let Some(title) = &self.title
            && !self
                .sections
                .iter()
                .any(|s| s.level == 1 && &s.heading() == title)
        {
            // The title is rendered as a front line only when no heading
            // carries it already; it is metadata, not a span anyone points at.
            out.push_str("% ");
            out.push_str(title);
            out.blank_line();
        }
        for section in &mut self.sections {
            let heading = section.heading();
            let run_in = section.run_in && section.opens_with(&heading);
            if section.level > 0 && !run_in {
                for _ in 0..section.level.min(6) {
                    out.push_str("#");
                }
                out.push_str(" ");
                section.span = out.push_spanned(&heading);
                out.blank_line();
            }
            for block in &mut section.blocks {
                block.span = out.render_block(&mut block.kind);
            }
            if run_in && let Some(first) = section.blocks.first() {
                let len = u32::try_from(count_chars(&heading)).unwrap_or(u32::MAX);
                section.span = TextSpan {
                    offset: first.span.offset,
                    len: len.min(first.span.len),
                };
            }
        }
        self.text = out.text;
    }
}

impl DocumentTree {
    /// About how many bytes [`render`](Self::render) writes: the text of
    /// every heading, block and cell, and a few bytes of separators and
    /// markers around each.
    fn rendered_len_estimate(&self) -> usize {
        const AROUND: usize = 8;
        let title = self.title.as_ref().map_or(0, |t| t.len() + AROUND);
        let sections: usize = self
            .sections
            .iter()
            .map(|section| {
                let blocks: usize = section
                    .blocks
                    .iter()
                    .map(|block| match &block.kind {
                        BlockKind::Table(table) => {
                            let cells: usize =
                                table.rows.iter().flatten().map(|cell| cell.len() + 3).sum();
                            cells + table.caption.as_ref().map_or(0, String::len) + AROUND
                        }
                        kind => kind.text().map_or(0, str::len) + AROUND,
                    })
                    .sum();
                section.title.len() + AROUND + blocks
            })
            .sum();
        title + sections
    }
}

/// Accumulates the canonical text, counting characters as it goes.
#[derive(Default)]
struct Renderer {
    text: String,
    chars: u32,
}

impl Renderer {
    fn push_str(&mut self, s: &str) {
        self.text.push_str(s);
        self.chars += count_chars(s) as u32;
    }

    fn push_spanned(&mut self, s: &str) -> TextSpan {
        let offset = self.chars;
        self.push_str(s);
        TextSpan {
            offset,
            len: self.chars - offset,
        }
    }

    fn blank_line(&mut self) {
        self.push_str("\n\n");
    }

    fn render_block(&mut self, kind: &mut BlockKind) -> TextSpan {
        let span = match kind {
            BlockKind::Paragraph { text } => self.push_spanned(text),
            BlockKind::Caption { text } => self.push_spanned(text),
            BlockKind::ListItem {
                text,
                depth,
                marker,
            } => {
                for _ in 0..*depth {
                    self.push_str("    ");
                }
                let marker = marker.as_deref().unwrap_or("-");
                let marker = if marker.ends_with(['.', ')']) || marker == "-" {
                    marker.to_string()
                } else if marker.chars().all(|c| c.is_alphanumeric()) {
                    format!("{marker}.")
                } else if marker.starts_with(|c: char| c.is_alphanumeric()) {
                    // Outline numbers as the author wrote them: "1.1", "2.3.1".
                    marker.to_string()
                } else {
                    "-".to_string()
                };
                self.push_str(&marker);
                self.push_str(" ");
                self.push_spanned(text)
            }
            BlockKind::Code { text, language } => {
                self.push_str("```");
                if let Some(language) = language {
                    self.push_str(language);
                }
                self.push_str("\n");
                let span = self.push_spanned(text);
                self.push_str("\n```");
                span
            }
            BlockKind::Table(table) => self.render_table(table),
        };
        self.blank_line();
        span
    }

    fn render_table(&mut self, table: &mut Table) -> TextSpan {
        table.caption_span = table.caption.as_deref().map(|caption| {
            let span = self.push_spanned(caption);
            self.blank_line();
            span
        });
        let start = self.chars;
        table.row_spans.clear();
        let header_rows = table.header_rows.max(1).min(table.rows.len());
        let width = table.columns();
        for (r, row) in table.rows.iter().enumerate() {
            let line = format!(
                "| {} |",
                row.iter()
                    .map(|c| c.replace('|', "\\|"))
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
            table.row_spans.push(self.push_spanned(&line));
            self.push_str("\n");
            if r + 1 == header_rows {
                self.push_str("|");
                for _ in 0..width {
                    self.push_str(" - |");
                }
                self.push_str("\n");
            }
        }
        let end = self.chars.saturating_sub(1);
        // Drop the trailing newline from the table's own span.
        TextSpan {
            offset: start,
            len: end - start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_is_split_from_titles() {
        let cases = [
            ("5.1 Payment", Some("5.1"), "Payment"),
            ("5.1. Payment terms", Some("5.1."), "Payment terms"),
            ("ARTICLE V — TERM", Some("ARTICLE V"), "TERM"),
            ("Section 2.1: Scope", Some("Section 2.1"), "Scope"),
            ("A. Scope", Some("A."), "Scope"),
            ("IV. Remedies", Some("IV."), "Remedies"),
            ("I Walk the Line", None, "I Walk the Line"),
            ("Payment", None, "Payment"),
            ("2024 Outlook", Some("2024"), "Outlook"),
        ];
        for (heading, numbering, title) in cases {
            let (n, t) = split_heading_numbering(heading);
            assert_eq!(n.as_deref(), numbering, "{heading}");
            assert_eq!(t, title, "{heading}");
        }
    }

    #[test]
    fn builder_links_parents_and_render_records_spans() {
        let mut b = TreeBuilder::new(Format::Markdown);
        b.paragraph("Preamble   text.");
        b.heading(1, "1 Intro");
        b.paragraph("Hello\n world.");
        b.heading(2, "1.1 Détails");
        b.list_item(0, Some("-"), "item one");
        b.heading(1, "2 Next");
        b.table(Table {
            caption: None,
            header_rows: 1,
            rows: vec![vec!["A".into(), "B".into()], vec!["1".into(), "2".into()]],
            ..Table::default()
        });
        let mut tree = b.finish();
        tree.render();
        assert_eq!(tree.sections[1].parent, Some(0));
        assert_eq!(tree.sections[2].parent, Some(1));
        assert_eq!(tree.sections[3].parent, Some(0));
        assert_eq!(tree.section_path(2), vec!["1 Intro", "1.1 Détails"]);
        let chars: Vec<char> = tree.text.chars().collect();
        let slice = |span: TextSpan| -> String {
            chars[span.offset as usize..span.end() as usize]
                .iter()
                .collect()
        };
        assert_eq!(slice(tree.sections[1].blocks[0].span), "Hello world.");
        assert_eq!(slice(tree.sections[2].span), "1.1 Détails");
        assert_eq!(slice(tree.sections[2].blocks[0].span), "item one");
        let BlockKind::Table(table) = &tree.sections[3].blocks[0].kind else {
            panic!("table expected");
        };
        assert_eq!(slice(table.row_spans[1]), "| 1 | 2 |");
    }

    #[test]
    fn whitespace_collapses() {
        assert_eq!(collapse_whitespace("  a \n\t b\u{a0}c\u{200b} "), "a b c");
        assert_eq!(collapse_whitespace("already clean"), "already clean");
        assert_eq!(collapse_whitespace("naïve café"), "naïve café");
        assert_eq!(collapse_whitespace("dash – ok"), "dash – ok");
        for space in [
            "\u{85}", "\u{a0}", "\u{1680}", "\u{2003}", "\u{200b}", "\u{2028}", "\u{202f}",
            "\u{205f}", "\u{3000}", "\u{feff}",
        ] {
            assert_eq!(
                collapse_whitespace(&format!("a{space}b")),
                "a b",
                "{space:?}"
            );
        }
        assert_eq!(collapse_whitespace(""), "");
    }

    proptest::proptest! {
        /// A text is found collapsed exactly when collapsing leaves it as
        /// it is, across the blocks the check reads.
        #[test]
        fn collapsed_texts_are_those_collapsing_leaves_alone(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "word", "a", " ", "  ", "\t", "\n", "\u{1}", "\u{a0}", "\u{e9}", "\u{2013}",
                    "\u{2003}", "\u{200b}", "\u{201c}", "\u{3000}", "\u{feff}", "\u{1680}",
                    "\u{e1}", "\u{fb01}",
                ]),
                0..120,
            )
        ) {
            let text = pieces.concat();
            proptest::prop_assert_eq!(is_collapsed(text.as_bytes()), collapse(&text) == text, "{:?}", text);
        }
    }

    #[test]
    fn tables_normalise_to_rectangles() {
        let mut t = Table {
            caption: None,
            header_rows: 1,
            rows: vec![
                vec!["A".into(), "".into(), "B".into()],
                vec!["1".into()],
                vec!["".into(), "".into()],
            ],
            ..Table::default()
        };
        assert!(t.normalize());
        assert_eq!(t.rows, vec![vec!["A", "", "B"], vec!["1", "", ""]]);
        assert_eq!(t.header_rows, 1);
    }
}
