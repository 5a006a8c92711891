//! Markdown (CommonMark with the GFM extensions) → [`DocumentTree`].
//!
//! The document is read with `pulldown-cmark` as a flat stream of events and
//! folded into the tree by `Walker`, a small state machine: no recursion,
//! so nesting costs nothing but a counter, which is still bounded by
//! `parsing.maxNestingDepth` so that a pathological document is refused
//! rather than turned into a thousand-level list.
//!
//! What becomes what:
//!
//! * ATX and setext headings → sections at their level;
//! * paragraphs → paragraphs, with soft and hard line breaks as spaces;
//! * list items → list items with their depth (0 at the top level) and
//!   marker (`-` for bullets, `N.` or `N)` for ordered lists, counting from
//!   the list's start number). An item's first paragraph, and paragraphs
//!   directly following it, are the item's text; a paragraph after a nested
//!   block (a sub-list, a code block) becomes a paragraph of its own;
//! * task list items keep their checkbox as `[x] ` / `[ ] ` before the text;
//! * fenced and indented code blocks → code blocks (with the fence's
//!   language);
//! * GFM tables → tables with one header row;
//! * block quotes → their paragraphs (a quote is not a section);
//! * links keep their text, inline code its text, images their alt text
//!   (a paragraph made only of images becomes a caption);
//! * footnote definitions are appended to the first paragraph or list item
//!   that references them, as `[label] text`, where they help a reader of
//!   that paragraph; definitions nobody references stay paragraphs where
//!   they were written;
//! * raw HTML blocks go through the HTML parser
//!   ([`super::html::parse_fragment_into`]); HTML comments are dropped, and
//!   inline HTML tags are dropped while the text between them is kept;
//! * thematic breaks are dropped; YAML (`---`) or TOML (`+++`) front matter
//!   is not content, but its `title` becomes the document's title and its
//!   `author`, `date`, `version` and `lang` the document's metadata.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::{DocumentTree, Field, Format, InfoReader, ParseFailure, Table, TreeBuilder, html};
use crate::spec::ParsingSpec;

/// Parses a Markdown document. The caller runs the shared passes
/// ([`super::finish`]) on the result.
pub fn parse(text: &str, spec: &ParsingSpec) -> Result<DocumentTree, ParseFailure> {
    let mut builder = TreeBuilder::new(Format::Markdown);
    let footnotes = Footnotes::collect(text);
    let mut walker = Walker::new(&mut builder, spec, text, footnotes);
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        walker.event(event, range)?;
    }
    walker.finish()?;
    Ok(builder.finish())
}

/// The CommonMark extensions documents are written with in practice.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS
        | Options::ENABLE_GFM
}

/// Footnote definitions and the labels referenced in the body, read in a
/// first pass so that a definition can join the paragraph that cites it
/// whether it is written before or after it.
#[derive(Default)]
struct Footnotes {
    /// Label → the definition's text (its blocks joined by spaces).
    definitions: HashMap<String, String>,
    /// Labels referenced outside any definition.
    referenced: HashSet<String>,
}

impl Footnotes {
    fn collect(text: &str) -> Self {
        let mut notes = Footnotes::default();
        // Footnotes need "[^"; most documents have none and skip the pass.
        if memchr::memmem::find(text.as_bytes(), b"[^").is_none() {
            return notes;
        }
        let mut current: Option<(String, String)> = None;
        for event in Parser::new_ext(text, options()) {
            match (event, &mut current) {
                (Event::Start(Tag::FootnoteDefinition(label)), _) => {
                    current = Some((label.to_string(), String::new()));
                }
                (Event::End(TagEnd::FootnoteDefinition), _) => {
                    if let Some((label, body)) = current.take() {
                        notes
                            .definitions
                            .entry(label)
                            .or_insert_with(|| super::collapse_whitespace(&body));
                    }
                }
                (Event::Text(t) | Event::Code(t), Some((_, body))) => body.push_str(&t),
                (Event::FootnoteReference(label), Some((_, body))) => {
                    body.push_str(&format!("[{label}]"));
                }
                (Event::FootnoteReference(label), None) => {
                    notes.referenced.insert(label.to_string());
                }
                (
                    Event::SoftBreak
                    | Event::HardBreak
                    | Event::End(TagEnd::Paragraph | TagEnd::Item | TagEnd::TableCell),
                    Some((_, body)),
                ) => body.push(' '),
                _ => {}
            }
        }
        notes
    }
}

/// A list being read: the number of its next item, if ordered.
struct OpenList {
    next_number: Option<u64>,
}

/// A list item being read.
struct OpenItem {
    depth: u8,
    marker: String,
    /// The item's text so far (its first paragraphs).
    text: String,
    /// Whether the item's block was emitted; anything read after that (past
    /// a nested list, say) becomes a paragraph of its own.
    emitted: bool,
}

/// A table being read.
#[derive(Default)]
struct OpenTable {
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    header_rows: usize,
}

/// Folds pulldown-cmark's events into a [`TreeBuilder`].
struct Walker<'b, 's> {
    builder: &'b mut TreeBuilder,
    spec: &'s ParsingSpec,
    source: &'s str,
    footnotes: Footnotes,
    /// Footnotes already appended somewhere (each is appended once).
    footnotes_placed: HashSet<String>,
    /// Footnotes referenced by the block being read.
    block_footnotes: Vec<String>,
    /// Inline text of the block being read (paragraph, heading, cell).
    inline: String,
    /// Whether the block being read has text outside images.
    inline_has_text: bool,
    /// Depth of image nesting and the alt text's start in `inline`, with
    /// the image's title (used when the alt text is empty).
    images: Vec<(usize, String)>,
    heading: Option<u8>,
    code: Option<(Option<String>, String)>,
    table: Option<OpenTable>,
    lists: Vec<OpenList>,
    items: Vec<OpenItem>,
    /// Consecutive raw HTML blocks, parsed as one fragment when something
    /// else starts.
    html: String,
    front_matter: Option<String>,
    /// Events left to skip inside a footnote definition placed elsewhere.
    skip_depth: usize,
    /// Block quotes and lists currently open.
    nesting: u32,
}

impl<'b, 's> Walker<'b, 's> {
    fn new(
        builder: &'b mut TreeBuilder,
        spec: &'s ParsingSpec,
        source: &'s str,
        footnotes: Footnotes,
    ) -> Self {
        Self {
            builder,
            spec,
            source,
            footnotes,
            footnotes_placed: HashSet::new(),
            block_footnotes: Vec::new(),
            inline: String::new(),
            inline_has_text: false,
            images: Vec::new(),
            heading: None,
            code: None,
            table: None,
            lists: Vec::new(),
            items: Vec::new(),
            html: String::new(),
            front_matter: None,
            skip_depth: 0,
            nesting: 0,
        }
    }

    fn event(&mut self, event: Event<'_>, range: Range<usize>) -> Result<(), ParseFailure> {
        if self.skip_depth > 0 {
            match event {
                Event::Start(_) => self.skip_depth += 1,
                Event::End(_) => self.skip_depth -= 1,
                _ => {}
            }
            return Ok(());
        }
        if !matches!(
            event,
            Event::Start(Tag::HtmlBlock) | Event::Html(_) | Event::End(TagEnd::HtmlBlock)
        ) {
            self.flush_html()?;
        }
        if let Some((_, code)) = &mut self.code {
            match event {
                Event::Text(text) => code.push_str(&text),
                Event::End(TagEnd::CodeBlock) => self.end_code(),
                _ => {}
            }
            return Ok(());
        }
        if let Some(front_matter) = &mut self.front_matter {
            match event {
                Event::Text(text) => front_matter.push_str(&text),
                Event::End(TagEnd::MetadataBlock(_)) => self.end_front_matter(),
                _ => {}
            }
            return Ok(());
        }
        match event {
            Event::Start(tag) => self.start(tag, range)?,
            Event::End(tag) => self.end(tag),
            Event::Text(text) | Event::Code(text) => self.push_inline(&text),
            Event::InlineMath(text) | Event::DisplayMath(text) => self.push_inline(&text),
            Event::SoftBreak | Event::HardBreak => self.inline.push(' '),
            Event::InlineHtml(tag) => {
                // Tags are markup, not text; a line break still separates.
                if is_line_break_tag(&tag) {
                    self.inline.push(' ');
                }
            }
            Event::Html(line) => self.html.push_str(&line),
            Event::FootnoteReference(label) => {
                self.push_inline(&format!("[{label}]"));
                if self.footnotes.definitions.contains_key(label.as_ref()) {
                    self.block_footnotes.push(label.to_string());
                }
            }
            Event::TaskListMarker(checked) => {
                self.push_inline(if checked { "[x] " } else { "[ ] " });
            }
            Event::Rule => {}
        }
        Ok(())
    }

    fn start(&mut self, tag: Tag<'_>, range: Range<usize>) -> Result<(), ParseFailure> {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.flush_item();
                self.heading = Some(heading_level(level));
            }
            Tag::BlockQuote(_) => {
                self.flush_item();
                self.enter()?;
            }
            Tag::CodeBlock(kind) => {
                self.flush_item();
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .map(|l| l.trim_matches(['{', '}', '.']).to_string()),
                    CodeBlockKind::Indented => None,
                };
                self.code = Some((language, String::new()));
            }
            Tag::HtmlBlock => self.flush_item(),
            Tag::List(start) => {
                self.flush_item();
                self.enter()?;
                self.lists.push(OpenList { next_number: start });
            }
            Tag::Item => {
                self.flush_item();
                let depth = u8::try_from(self.lists.len().saturating_sub(1)).unwrap_or(u8::MAX);
                let marker = match self.lists.last_mut() {
                    Some(OpenList {
                        next_number: Some(n),
                    }) => {
                        let delimiter = ordered_delimiter(self.source.get(range.clone()));
                        let marker = format!("{n}{delimiter}");
                        *n = n.saturating_add(1);
                        marker
                    }
                    _ => "-".to_string(),
                };
                self.items.push(OpenItem {
                    depth,
                    marker,
                    text: String::new(),
                    emitted: false,
                });
            }
            Tag::FootnoteDefinition(label) => {
                self.flush_item();
                // Every definition's text was read in the first pass; it is
                // placed with its first reference, or here if it has none.
                self.skip_depth = 1;
                if !self.footnotes.referenced.contains(label.as_ref())
                    && let Some(text) = self.footnotes.definitions.get(label.as_ref())
                {
                    self.builder.paragraph(&format!("[{label}] {text}"));
                }
            }
            Tag::Table(_) => {
                self.flush_item();
                self.table = Some(OpenTable::default());
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.row.clear();
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::Image { title, .. } => {
                self.images.push((self.inline.len(), title.to_string()));
            }
            Tag::MetadataBlock(_) => self.front_matter = Some(String::new()),
            Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Superscript
            | Tag::Subscript
            | Tag::Link { .. }
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition => {}
        }
        Ok(())
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.end_paragraph(),
            TagEnd::Heading(_) => {
                let level = self.heading.take().unwrap_or(1);
                let text = std::mem::take(&mut self.inline);
                self.builder.heading(level, &text);
                self.inline_has_text = false;
                self.place_footnotes_after();
            }
            TagEnd::BlockQuote(_) => {
                self.end_paragraph();
                self.leave();
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.leave();
            }
            TagEnd::Item => {
                self.flush_item();
                // Text read after the item was emitted (behind a nested
                // list) is a paragraph of its own.
                self.end_paragraph();
                self.items.pop();
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                if let Some(table) = &mut self.table {
                    table.row.push(cell);
                }
                self.inline_has_text = false;
            }
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.rows.push(std::mem::take(&mut table.row));
                    table.header_rows = table.rows.len();
                }
            }
            TagEnd::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(std::mem::take(&mut table.row));
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.builder.table(Table {
                        header_rows: table.header_rows,
                        rows: table.rows,
                        ..Table::default()
                    });
                }
                self.place_footnotes_after();
            }
            TagEnd::Image => {
                if let Some((start, title)) = self.images.pop() {
                    let alt_is_empty = self
                        .inline
                        .get(start..)
                        .is_none_or(|alt| alt.trim().is_empty());
                    if alt_is_empty && !title.trim().is_empty() {
                        self.inline.push_str(&title);
                    }
                }
            }
            // Handled before dispatch (code, front matter, skipped
            // definitions) or markup without a block of its own.
            TagEnd::CodeBlock
            | TagEnd::HtmlBlock
            | TagEnd::FootnoteDefinition
            | TagEnd::MetadataBlock(_)
            | TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::Link
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition => {}
        }
    }

    fn push_inline(&mut self, text: &str) {
        if self.images.is_empty() && !text.trim().is_empty() {
            self.inline_has_text = true;
        }
        self.inline.push_str(text);
    }

    /// Opens a block quote or list, refusing nesting past the spec's bound.
    fn enter(&mut self) -> Result<(), ParseFailure> {
        self.nesting += 1;
        if self.nesting > self.spec.max_nesting_depth {
            return Err(ParseFailure::TooDeep {
                limit: self.spec.max_nesting_depth,
            });
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.nesting = self.nesting.saturating_sub(1);
    }

    /// Ends a paragraph: its text goes to the open list item if that item
    /// has not been emitted yet, else it becomes a paragraph (or a caption
    /// when it holds only images).
    fn end_paragraph(&mut self) {
        let text = std::mem::take(&mut self.inline);
        let only_images = !self.inline_has_text;
        self.inline_has_text = false;
        if let Some(item) = self.items.last_mut().filter(|item| !item.emitted) {
            if !item.text.is_empty() {
                item.text.push(' ');
            }
            item.text.push_str(&text);
            return;
        }
        if text.trim().is_empty() && self.block_footnotes.is_empty() {
            return;
        }
        let text = self.with_footnotes(text);
        if only_images {
            self.builder.caption(&text);
        } else {
            self.builder.paragraph(&text);
        }
    }

    /// Emits the innermost open list item, if not yet emitted, with the text
    /// read so far: called when the item ends or a block starts inside it.
    fn flush_item(&mut self) {
        let Some(item) = self.items.last_mut().filter(|item| !item.emitted) else {
            return;
        };
        item.emitted = true;
        let mut text = std::mem::take(&mut item.text);
        let (depth, marker) = (item.depth, item.marker.clone());
        // A tight item's text is not wrapped in a paragraph.
        let tight = std::mem::take(&mut self.inline);
        self.inline_has_text = false;
        if !tight.trim().is_empty() {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&tight);
        }
        let text = self.with_footnotes(text);
        self.builder.list_item(depth, Some(&marker), &text);
    }

    /// Appends the footnotes the block referenced (those not placed yet).
    fn with_footnotes(&mut self, mut text: String) -> String {
        for label in std::mem::take(&mut self.block_footnotes) {
            if let Some(note) = self.footnotes.definitions.get(&label)
                && self.footnotes_placed.insert(label.clone())
            {
                text.push_str(&format!(" [{label}] {note}"));
            }
        }
        text
    }

    /// Footnotes referenced from a heading or a table follow it as
    /// paragraphs.
    fn place_footnotes_after(&mut self) {
        let notes = self.with_footnotes(String::new());
        self.builder.paragraph(&notes);
    }

    fn end_code(&mut self) {
        if let Some((language, code)) = self.code.take() {
            self.builder.code(language.as_deref(), &code);
        }
    }

    fn end_front_matter(&mut self) {
        let Some(front_matter) = self.front_matter.take() else {
            return;
        };
        let mut info = InfoReader::default();
        for (key, value) in front_matter_fields(&front_matter) {
            let field = match key.to_ascii_lowercase().as_str() {
                "title" => {
                    self.builder.set_title(&value);
                    continue;
                }
                "author" | "authors" | "creator" => Field::Author,
                "date" | "created" | "published" => Field::Date,
                "version" => Field::Version,
                "lang" | "language" => Field::Language,
                _ => continue,
            };
            info.set(field, &value);
        }
        self.builder.set_info(info);
    }

    /// Hands the raw HTML read so far to the HTML parser, comments removed.
    fn flush_html(&mut self) -> Result<(), ParseFailure> {
        if self.html.is_empty() {
            return Ok(());
        }
        let html = strip_html_comments(&std::mem::take(&mut self.html));
        if html.trim().is_empty() {
            return Ok(());
        }
        html::parse_fragment_into(self.builder, &html, self.spec)
    }

    fn finish(mut self) -> Result<(), ParseFailure> {
        self.flush_html()?;
        self.end_code();
        while !self.items.is_empty() {
            self.end(TagEnd::Item);
        }
        self.end_paragraph();
        Ok(())
    }
}

fn heading_level(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// The delimiter an ordered item was written with ("3)" → ')'), read from
/// the item's source text; '.' when it cannot be read.
fn ordered_delimiter(item_source: Option<&str>) -> char {
    item_source
        .map(str::trim_start)
        .map(|s| s.trim_start_matches(|c: char| c.is_ascii_digit()))
        .and_then(|s| s.chars().next())
        .filter(|&c| c == ')')
        .unwrap_or('.')
}

/// `<br>`, `<br/>`, `<br />`.
fn is_line_break_tag(tag: &str) -> bool {
    let name = tag
        .trim_start_matches('<')
        .trim_end_matches('>')
        .trim_end_matches('/')
        .trim();
    name.eq_ignore_ascii_case("br")
}

/// Removes `<!-- … -->` comments; an unterminated comment runs to the end.
fn strip_html_comments(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 4..];
        rest = match after.find("-->") {
            Some(end) => &after[end + 3..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// The `title` of YAML (`title: …`) or TOML (`title = "…"`) front matter,
/// read from its top-level lines.
/// The top-level `key: value` (YAML) or `key = value` (TOML) pairs of
/// front matter, quotes removed. A list value, inline (`[a, b]`) or as the
/// `- item` lines after its key, is joined by `; `. Nested tables and
/// multi-line strings are not metadata Trellis reads, and are skipped.
fn front_matter_fields(front_matter: &str) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> = Vec::new();
    // The key whose value is the `- item` lines that follow.
    let mut list: Option<(String, Vec<String>)> = None;
    for line in front_matter.lines() {
        if let Some(item) = line.trim_start().strip_prefix("- ")
            && line.starts_with([' ', '-'])
            && let Some((_, items)) = &mut list
        {
            items.push(unquote(item.trim()).to_string());
            continue;
        }
        if let Some((key, items)) = list.take()
            && !items.is_empty()
        {
            fields.push((key, items.join("; ")));
        }
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let Some((key, value)) = line
            .split_once(':')
            .filter(|(key, _)| !key.contains('='))
            .or_else(|| line.split_once('='))
        else {
            continue;
        };
        let key = key.trim().to_string();
        let value = value.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            continue;
        }
        if value.is_empty() {
            list = Some((key, Vec::new()));
        } else if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            let items: Vec<&str> = inner
                .split(',')
                .map(|item| unquote(item.trim()))
                .filter(|item| !item.is_empty())
                .collect();
            fields.push((key, items.join("; ")));
        } else {
            fields.push((key, unquote(value).to_string()));
        }
    }
    if let Some((key, items)) = list
        && !items.is_empty()
    {
        fields.push((key, items.join("; ")));
    }
    fields
}

/// `value` without the quotes around it, if it has them.
fn unquote(value: &str) -> &str {
    value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::BlockKind;
    use crate::parse::test_support::{blocks, headings, item, paragraph};

    fn parse_md(text: &str) -> DocumentTree {
        parse(text, &ParsingSpec::default()).expect("parses")
    }

    #[test]
    fn atx_and_setext_headings_set_levels() {
        let tree = parse_md(
            "# One\n\ntext\n\nTwo\n---\n\n### 2.1 Three {#three}\n\nSetext\n======\n\n#\n",
        );
        assert_eq!(
            headings(&tree),
            vec![
                (1, "One".into()),
                (2, "Two".into()),
                (3, "2.1 Three".into()),
                (1, "Setext".into())
            ]
        );
        assert_eq!(tree.sections[3].numbering.as_deref(), Some("2.1"));
    }

    #[test]
    fn paragraphs_join_lines_and_decode_entities_and_escapes() {
        let tree = parse_md(
            "First line\nsecond line  \nafter a hard break\\\nand another.\n\n\
             &amp; &lt;b&gt; &quot;q&quot; &#39;s&#39; \\*not emphasis\\* 2\\. x\n",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                paragraph("First line second line after a hard break and another."),
                paragraph("& <b> \"q\" 's' *not emphasis* 2. x"),
            ]
        );
    }

    #[test]
    fn inline_markup_keeps_its_text() {
        let tree = parse_md(
            "Foo *em* **strong** ~~gone~~ `code()` [link **text**](https://x.y) <span>in</span>line<br>next <!-- note --> end\n",
        );
        assert_eq!(
            blocks(&tree),
            vec![paragraph(
                "Foo em strong gone code() link text inline next end"
            )]
        );
    }

    #[test]
    fn lists_carry_depth_and_markers() {
        let tree = parse_md(
            "- a\n  - b\n    - c\n- d\n\n3. three\n4. four\n   1) inner\n   2) inner two\n\n* [x] done\n* [ ] todo\n",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                item(0, "-", "a"),
                item(1, "-", "b"),
                item(2, "-", "c"),
                item(0, "-", "d"),
                item(0, "3.", "three"),
                item(0, "4.", "four"),
                item(1, "1)", "inner"),
                item(1, "2)", "inner two"),
                item(0, "-", "[x] done"),
                item(0, "-", "[ ] todo"),
            ]
        );
    }

    #[test]
    fn list_items_keep_their_paragraphs() {
        let tree = parse_md(
            "1. First paragraph.\n\n   Second paragraph.\n\n   - nested\n\n   After the nested list.\n2. Next\n",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                item(0, "1.", "First paragraph. Second paragraph."),
                item(1, "-", "nested"),
                paragraph("After the nested list."),
                item(0, "2.", "Next"),
            ]
        );
    }

    #[test]
    fn code_blocks_keep_text_and_language() {
        let tree = parse_md(
            "```python\nprint(\"Hi\")\n\n  x = 1\n```\n\n    indented &amp;\n\n```\n\n```\n",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                BlockKind::Code {
                    text: "print(\"Hi\")\n\n  x = 1".into(),
                    language: Some("python".into())
                },
                BlockKind::Code {
                    text: "indented &amp;".into(),
                    language: None
                },
            ]
        );
    }

    #[test]
    fn gfm_tables_have_one_header_row() {
        let tree =
            parse_md("| Key | **Value** |\n|---|---:|\n| a \\| b | &lt; |\n| `c` | |\n\nAfter.\n");
        let BlockKind::Table(table) = &blocks(&tree)[0] else {
            panic!("table expected: {:?}", blocks(&tree));
        };
        assert_eq!(table.header_rows, 1);
        assert_eq!(
            table.rows,
            vec![vec!["Key", "Value"], vec!["a | b", "<"], vec!["c", ""],]
        );
        assert_eq!(blocks(&tree)[1], paragraph("After."));
    }

    #[test]
    fn block_quotes_thematic_breaks_and_images() {
        let tree = parse_md(
            "> quoted\n> text\n>\n> > deeper\n\n---\n\n![A duck swimming](duck.png)\n\nSee ![chart](c.png \"Revenue\") here and ![](x.png \"Titled\").\n",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                paragraph("quoted text"),
                paragraph("deeper"),
                BlockKind::Caption {
                    text: "A duck swimming".into()
                },
                paragraph("See chart here and Titled."),
            ]
        );
    }

    #[test]
    fn footnotes_join_the_paragraph_that_cites_them() {
        let tree = parse_md(
            "Claim one.[^1] Claim two.[^note]\n\n## Heading[^h]\n\nOther.\n\n\
             [^1]: First source.\n[^note]: Second\n    source.\n[^h]: On a heading.\n[^unused]: Never cited.\n",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                paragraph("Claim one.[1] Claim two.[note] [1] First source. [note] Second source."),
                paragraph("[h] On a heading."),
                paragraph("Other."),
                paragraph("[unused] Never cited."),
            ]
        );
        assert_eq!(headings(&tree), vec![(2, "Heading[h]".into())]);
    }

    #[test]
    fn front_matter_is_skipped_and_gives_the_title() {
        let tree =
            parse_md("---\ntitle: \"Master Agreement\"\nauthor: x\n---\n\n# Scope\n\nBody.\n");
        assert_eq!(tree.title.as_deref(), Some("Master Agreement"));
        assert_eq!(blocks(&tree), vec![paragraph("Body.")]);
        let toml = parse_md("+++\ntitle = 'Handbook'\n+++\n\nBody.\n");
        assert_eq!(toml.title.as_deref(), Some("Handbook"));
    }

    #[test]
    fn front_matter_gives_author_date_version_and_language() {
        let tree = parse_md(
            "---\ntitle: Handbook\nauthors:\n  - Jane Doe\n  - John Roe\ndate: 2023-04-15\n\
             version: \"2.1\"\nlang: en-GB\ntags: [a, b]\n---\n\nBody.\n",
        );
        assert_eq!(tree.info.author.as_deref(), Some("Jane Doe; John Roe"));
        assert_eq!(tree.info.date.as_deref(), Some("2023-04-15"));
        assert_eq!(tree.info.version.as_deref(), Some("2.1"));
        assert_eq!(tree.info.language.as_deref(), Some("en-GB"));
        let toml = parse_md("+++\nauthor = ['Ann', 'Bo']\ndate = 2021-11\n+++\n\nBody.\n");
        assert_eq!(toml.info.author.as_deref(), Some("Ann; Bo"));
        assert_eq!(toml.info.date.as_deref(), Some("2021-11"));
        // A date in a form not read is a warning, not a guess.
        let spoken = parse_md("---\ndate: April 2023\n---\n\nBody.\n");
        assert_eq!(spoken.info.date, None);
        assert!(spoken.warnings.iter().any(|w| w.contains("April 2023")));
    }

    #[test]
    fn html_comments_are_dropped() {
        let tree = parse_md("Before.\n\n<!-- hidden\n\nstill hidden -->\n\nAfter.\n");
        assert_eq!(
            blocks(&tree),
            vec![paragraph("Before."), paragraph("After.")]
        );
    }

    /// The HTML block's content reaches the HTML parser; how it is
    /// structured is that parser's business, so only its text is checked.
    #[test]
    fn html_blocks_go_to_the_html_parser() {
        let tree = parse_md(
            "Intro.\n\n<div>\n  <p>Inside a div.</p>\n\n  <p>After a blank line.</p>\n</div>\n\nOutro.\n",
        );
        let texts: Vec<String> = tree
            .blocks()
            .filter_map(|(_, b)| b.kind.text().map(str::to_string))
            .collect();
        assert_eq!(texts.first().map(String::as_str), Some("Intro."));
        assert_eq!(texts.last().map(String::as_str), Some("Outro."));
        let middle = texts[1..texts.len() - 1].join(" ");
        assert!(middle.contains("Inside a div."), "{texts:?}");
        assert!(middle.contains("After a blank line."), "{texts:?}");
    }

    #[test]
    fn nesting_past_the_bound_is_refused() {
        let spec = ParsingSpec {
            max_nesting_depth: 16,
            ..ParsingSpec::default()
        };
        let deep_quote = ">".repeat(100) + " deep\n";
        assert!(matches!(
            parse(&deep_quote, &spec),
            Err(ParseFailure::TooDeep { limit: 16 })
        ));
        let deep_list: String = (0..40)
            .map(|i| format!("{}- x\n", "  ".repeat(i)))
            .collect();
        assert!(matches!(
            parse(&deep_list, &spec),
            Err(ParseFailure::TooDeep { limit: 16 })
        ));
        assert!(parse(&">".repeat(10), &spec).is_ok());
    }

    #[test]
    fn pathological_input_does_not_panic() {
        let inputs = [
            "[".repeat(10_000),
            "*a ".repeat(5_000),
            "<div>".repeat(2_000),
            "|".repeat(3_000) + "\n|-|\n",
            "[^".repeat(2_000) + "]",
            "```\n".to_string(),
            "- ".repeat(1_000),
            "\u{0}\u{feff}# \u{202e}x".to_string(),
        ];
        for input in inputs {
            let _ = parse(&input, &ParsingSpec::default());
        }
    }
}
