//! The walk over a document's elements, turning them into headings and
//! blocks.
//!
//! The [`Walker`] is fed elements, text and element ends in document order:
//! by [`walk`] over html5ever's tree (iteratively: first child, next
//! sibling, parent, so no input can overflow the stack), or by the
//! streaming path as it reads. It keeps its own stack of open elements
//! ([`Frame`]) and fails with [`ParseFailure::TooDeep`] past
//! `parsing.maxNestingDepth`.
//!
//! Text accumulates in one reusable buffer (the *run*) with whitespace
//! collapsed as it arrives. Block boundaries end the run and hand it to
//! the innermost *sink*: the open list item, else a new paragraph.
//! Headings, table cells, captions and `<pre>` *collect* instead: from
//! their start to their end, everything inside them (nested blocks, lists,
//! even nested tables) becomes their text, block boundaries turning into
//! spaces (or kept as written, in `<pre>`).
//!
//! A list item's text is everything in it except its nested lists: text
//! after a nested list, or in paragraphs inside the item, is appended to
//! the item, so each item reads as one unit.

use ego_tree::NodeRef;
use scraper::Node;
use scraper::node::Element;

use super::element::{Attributes, ElementKind, classify, is_skip_link};
use super::list::OpenList;
use super::table::TableGrid;
use crate::parse::{BlockKind, Field, InfoReader, ParseFailure, collapse_whitespace};

/// A heading or block found by the walk, in reading order.
#[derive(Debug, PartialEq)]
pub(super) enum Piece {
    Heading { level: u8, text: String },
    Block(BlockKind),
}

/// What the walk found.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Extracted {
    pub(super) pieces: Vec<Piece>,
    pub(super) title: Option<String>,
    /// The document's metadata: `<html lang>` and `<meta>` elements.
    pub(super) info: InfoReader,
    pub(super) warnings: Vec<String>,
}

/// Bounds and switches of one walk.
pub(super) struct WalkOptions {
    /// Deepest element nesting accepted (`parsing.maxNestingDepth`).
    pub(super) max_depth: u32,
    /// Grid positions the tables found may still take
    /// (`parsing.maxTableCells` less what the document already holds).
    pub(super) table_cells: u64,
    /// Whether `<title>` names the document (not for fragments).
    pub(super) read_title: bool,
}

/// An element as the walk meets it, from html5ever's tree or from the
/// streaming path.
pub(super) trait Opened {
    /// Its tag name, in lower case.
    fn name(&self) -> &str;
    /// Its attributes, as (name, value) pairs.
    fn attributes(&self) -> Attributes<'_>;
    /// The text of its text children: the content of a `<title>`.
    fn text(&self) -> String;
    /// How many `<li>` children it has: asked only of a `reversed` list
    /// without `start`, which numbers down from its item count.
    fn items(&self) -> usize;
}

/// Walks the tree under `root` (a document or fragment node).
pub(super) fn walk(
    root: NodeRef<'_, Node>,
    options: &WalkOptions,
) -> Result<Extracted, ParseFailure> {
    let mut walker = Walker::new(options);
    let mut next = root.first_child();
    while let Some(node) = next {
        let descended = match node.value() {
            Node::Text(text) => {
                walker.text(text);
                false
            }
            Node::Element(element) => walker.enter(&TreeElement { node, element })?,
            _ => false,
        };
        if descended {
            if let Some(child) = node.first_child() {
                next = Some(child);
                continue;
            }
            walker.leave();
        }
        // Climb to the next sibling, leaving every element walked out of.
        let mut current = node;
        next = loop {
            if let Some(sibling) = current.next_sibling() {
                break Some(sibling);
            }
            match current.parent() {
                Some(parent) if parent.id() != root.id() => {
                    walker.leave();
                    current = parent;
                }
                _ => break None,
            }
        };
    }
    Ok(walker.finish())
}

/// An element of html5ever's tree.
struct TreeElement<'a> {
    node: NodeRef<'a, Node>,
    element: &'a Element,
}

impl Opened for TreeElement<'_> {
    fn name(&self) -> &str {
        self.element.name()
    }

    fn attributes(&self) -> Attributes<'_> {
        Attributes::read(self.element.attrs())
    }

    fn text(&self) -> String {
        let mut text = String::new();
        for child in self.node.children() {
            if let Node::Text(piece) = child.value() {
                text.push_str(piece);
            }
        }
        text
    }

    fn items(&self) -> usize {
        self.node
            .children()
            .filter(|child| {
                child
                    .value()
                    .as_element()
                    .is_some_and(|element| element.name() == "li")
            })
            .count()
    }
}

/// What to do when an element the walk entered ends.
#[derive(Debug)]
enum Frame {
    /// Nothing: inline elements.
    Inline,
    /// Set the following text off by a space.
    Separated,
    /// A link: drop its text if it turns out to be a skip link. `start` is
    /// where its text begins in the run, `flushes` the flush count when it
    /// started (a link holding blocks is never a skip link).
    Link {
        start: usize,
        flushes: u64,
    },
    Block,
    Sectioning,
    List,
    Item,
    Table,
    RowGroup,
    Row,
    /// The element whose text is being collected.
    Collect,
}

/// What a collecting element turns its text into.
#[derive(Debug)]
enum Collecting {
    Heading(u8),
    Cell {
        header: bool,
        colspan: u32,
        rowspan: u32,
    },
    TableCaption,
    FigureCaption,
    Code {
        language: Option<String>,
    },
}

/// An open list item (or term or description): where its text goes.
#[derive(Debug)]
struct OpenItem {
    depth: u8,
    /// Its marker, until its first text is written.
    marker: Option<String>,
    /// Index of the piece holding its text, once written.
    piece: Option<usize>,
}

/// The text being accumulated, whitespace collapsed as it arrives (or
/// kept as written inside `<pre>`).
#[derive(Default)]
struct Run {
    text: String,
    pending_space: bool,
    preformatted: bool,
}

impl Run {
    fn push(&mut self, text: &str) {
        if self.preformatted {
            self.text.push_str(text);
            return;
        }
        for ch in text.chars() {
            match ch {
                // Soft hyphens only mark where a word may break.
                '\u{ad}' => {}
                c if c.is_whitespace() || c == '\u{200b}' || c == '\u{feff}' => {
                    self.pending_space = !self.text.is_empty();
                }
                c => {
                    if self.pending_space {
                        self.text.push(' ');
                        self.pending_space = false;
                    }
                    self.text.push(c);
                }
            }
        }
    }

    /// A boundary inside collected text: what follows is a new word.
    fn separate(&mut self) {
        if self.preformatted {
            if !self.text.is_empty() && !self.text.ends_with('\n') {
                self.text.push('\n');
            }
        } else {
            self.pending_space = !self.text.is_empty();
        }
    }

    fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }

    /// The run's text; the buffer is cleared and keeps its capacity.
    fn take(&mut self) -> String {
        let text = self.text.as_str().to_string();
        self.text.clear();
        self.pending_space = false;
        text
    }

    fn truncate(&mut self, len: usize) {
        if self.text.is_char_boundary(len) {
            self.text.truncate(len);
        }
        self.pending_space = !self.text.is_empty();
    }
}

/// The walk's state: fed elements, text and element ends in document
/// order, it turns them into headings and blocks.
pub(super) struct Walker {
    max_depth: usize,
    read_title: bool,
    out: Extracted,
    /// Index of the last piece that is not a list item: an item's text is
    /// only extended while nothing but its nested items came after it.
    last_barrier: Option<usize>,
    run: Run,
    frames: Vec<Frame>,
    lists: Vec<OpenList>,
    items: Vec<OpenItem>,
    /// The collecting element, if inside one, with its frame index.
    collecting: Option<(Collecting, usize)>,
    /// The table being read (tables inside cells are flattened, so there
    /// is never more than one).
    table: Option<TableGrid>,
    /// Open `<article>`, `<main>`, `<section>`, `<aside>` elements.
    sectioning: u32,
    table_cells_left: u64,
    tables_cut: usize,
    /// How many times the run was handed to a sink.
    flushes: u64,
    /// Consecutive `<br>`s in the current paragraph.
    breaks: u8,
}

impl Walker {
    pub(super) fn new(options: &WalkOptions) -> Self {
        Self {
            max_depth: usize::try_from(options.max_depth).unwrap_or(usize::MAX),
            read_title: options.read_title,
            out: Extracted::default(),
            last_barrier: None,
            run: Run::default(),
            frames: Vec::new(),
            lists: Vec::new(),
            items: Vec::new(),
            collecting: None,
            table: None,
            sectioning: 0,
            table_cells_left: options.table_cells,
            tables_cut: 0,
            flushes: 0,
            breaks: 0,
        }
    }

    /// Adds a text node.
    pub(super) fn text(&mut self, text: &str) {
        if !text.trim().is_empty() {
            self.breaks = 0;
        }
        self.run.push(text);
    }

    /// Enters an element; returns whether its content is to be walked (its
    /// frame is then open, to be closed by [`Walker::leave`]).
    pub(super) fn enter(&mut self, element: &impl Opened) -> Result<bool, ParseFailure> {
        if self.frames.len() >= self.max_depth {
            return Err(ParseFailure::TooDeep {
                limit: u32::try_from(self.max_depth).unwrap_or(u32::MAX),
            });
        }
        if self.read_title {
            self.read_info(element);
        }
        let kind = classify(element.name(), &element.attributes(), self.sectioning == 0);
        let frame = match kind {
            ElementKind::Dropped => return Ok(false),
            ElementKind::Title => {
                self.read_title(element);
                return Ok(false);
            }
            ElementKind::LineBreak => {
                self.line_break();
                return Ok(false);
            }
            kind if self.collecting.is_some() => self.enter_collected(kind),
            kind => self.enter_flow(element, kind),
        };
        self.frames.push(frame);
        Ok(true)
    }

    /// An element inside a collecting one: only its text counts.
    fn enter_collected(&mut self, kind: ElementKind) -> Frame {
        match kind {
            ElementKind::Inline => Frame::Inline,
            // Code keeps its own spacing.
            ElementKind::Spaced if self.run.preformatted => Frame::Inline,
            ElementKind::Link => self.link_frame(),
            ElementKind::Code { language } => {
                if let Some((Collecting::Code { language: found }, _)) = &mut self.collecting
                    && found.is_none()
                {
                    *found = language;
                }
                Frame::Inline
            }
            _ => {
                self.run.separate();
                Frame::Separated
            }
        }
    }

    /// An element in the flow of blocks.
    fn enter_flow(&mut self, element: &impl Opened, kind: ElementKind) -> Frame {
        match kind {
            ElementKind::Inline | ElementKind::Code { .. } => Frame::Inline,
            ElementKind::Link => self.link_frame(),
            ElementKind::Spaced => {
                self.run.separate();
                Frame::Separated
            }
            ElementKind::Block => {
                self.flush();
                Frame::Block
            }
            ElementKind::Sectioning => {
                self.flush();
                self.sectioning += 1;
                Frame::Sectioning
            }
            ElementKind::Heading(level) => self.collect(Collecting::Heading(level)),
            ElementKind::List {
                numbering,
                start,
                reversed,
            } => {
                self.flush();
                let items = if reversed && start.is_none() {
                    element.items()
                } else {
                    0
                };
                self.lists
                    .push(OpenList::new(numbering, start, reversed, items));
                Frame::List
            }
            ElementKind::DescriptionList => {
                self.flush();
                self.lists.push(OpenList::description());
                Frame::List
            }
            ElementKind::ListItem { value } => {
                self.flush();
                let marker = self
                    .lists
                    .last_mut()
                    .map_or_else(|| "-".to_string(), |list| list.next_marker(value));
                self.open_item(self.list_depth(), marker)
            }
            ElementKind::Term => {
                self.flush();
                if let Some(list) = self.lists.last_mut() {
                    list.saw_term = true;
                }
                self.open_item(self.list_depth(), "-".to_string())
            }
            ElementKind::Description => {
                self.flush();
                // A description nests under the term it describes.
                let under_term = self
                    .lists
                    .last()
                    .is_some_and(|list| list.description && list.saw_term);
                let depth = self.list_depth().saturating_add(u8::from(under_term));
                self.open_item(depth, "-".to_string())
            }
            ElementKind::Table { layout } => {
                self.flush();
                if layout || self.table.is_some() {
                    Frame::Block
                } else {
                    self.table = Some(TableGrid::new(self.table_cells_left));
                    Frame::Table
                }
            }
            ElementKind::RowGroup { head } => match &mut self.table {
                Some(table) => {
                    table.row_group(head);
                    Frame::RowGroup
                }
                None => {
                    self.flush();
                    Frame::Block
                }
            },
            ElementKind::Row => match &mut self.table {
                Some(table) => {
                    table.start_row();
                    Frame::Row
                }
                None => {
                    self.flush();
                    Frame::Block
                }
            },
            ElementKind::Cell {
                header,
                colspan,
                rowspan,
            } if self.table.is_some() => self.collect(Collecting::Cell {
                header,
                colspan,
                rowspan,
            }),
            ElementKind::TableCaption if self.table.is_some() => {
                self.collect(Collecting::TableCaption)
            }
            ElementKind::Cell { .. } | ElementKind::TableCaption => {
                self.flush();
                Frame::Block
            }
            ElementKind::FigureCaption => self.collect(Collecting::FigureCaption),
            ElementKind::Preformatted { language } => {
                let frame = self.collect(Collecting::Code { language });
                self.run.preformatted = true;
                frame
            }
            ElementKind::Dropped | ElementKind::Title | ElementKind::LineBreak => Frame::Inline,
        }
    }

    fn link_frame(&self) -> Frame {
        Frame::Link {
            start: self.run.text.len(),
            flushes: self.flushes,
        }
    }

    /// Depth of an item in the innermost open list: 0 at the top level.
    fn list_depth(&self) -> u8 {
        u8::try_from(self.lists.len().saturating_sub(1)).unwrap_or(u8::MAX)
    }

    fn open_item(&mut self, depth: u8, marker: String) -> Frame {
        self.items.push(OpenItem {
            depth,
            marker: Some(marker),
            piece: None,
        });
        Frame::Item
    }

    /// Starts collecting the text of the element being entered.
    fn collect(&mut self, what: Collecting) -> Frame {
        self.flush();
        self.collecting = Some((what, self.frames.len()));
        Frame::Collect
    }

    /// Leaves the innermost open element.
    pub(super) fn leave(&mut self) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        match frame {
            Frame::Inline => {}
            Frame::Separated => self.run.separate(),
            Frame::Link { start, flushes } => {
                if flushes == self.flushes && self.run.text.get(start..).is_some_and(is_skip_link) {
                    self.run.truncate(start);
                }
            }
            Frame::Block => self.flush(),
            Frame::Sectioning => {
                self.flush();
                self.sectioning = self.sectioning.saturating_sub(1);
            }
            Frame::List => {
                self.flush();
                self.lists.pop();
            }
            Frame::Item => {
                self.flush();
                self.items.pop();
            }
            Frame::Table => self.finish_table(),
            Frame::RowGroup => {
                if let Some(table) = &mut self.table {
                    table.row_group(false);
                }
            }
            Frame::Row => {
                if let Some(table) = &mut self.table {
                    table.end_row();
                }
            }
            Frame::Collect => {
                if self
                    .collecting
                    .as_ref()
                    .is_some_and(|(_, frame)| *frame == self.frames.len())
                {
                    self.finish_collecting();
                } else {
                    self.run.separate();
                }
            }
        }
    }

    /// `<br>`: a line break inside `<pre>`, a space elsewhere, and a
    /// paragraph break when doubled in running text (`<br><br>` is how
    /// much legacy HTML separates paragraphs).
    fn line_break(&mut self) {
        if self.collecting.is_some() || !self.items.is_empty() {
            if self.run.preformatted {
                self.run.push("\n");
            } else {
                self.run.separate();
            }
            return;
        }
        if self.breaks >= 1 && !self.run.is_blank() {
            self.flush();
        } else {
            self.run.separate();
            self.breaks = self.breaks.saturating_add(1);
        }
    }

    /// Hands the run to the innermost sink: the open list item, else a new
    /// paragraph.
    fn flush(&mut self) {
        self.breaks = 0;
        if self.run.is_blank() {
            self.run.take();
            return;
        }
        let text = self.run.take();
        self.flushes += 1;
        let last_barrier = self.last_barrier;
        let Some(item) = self.items.last_mut() else {
            self.push(Piece::Block(BlockKind::Paragraph { text }));
            return;
        };
        if let Some(index) = item.piece
            && last_barrier.is_none_or(|barrier| barrier < index)
            && let Some(Piece::Block(BlockKind::ListItem { text: existing, .. })) =
                self.out.pieces.get_mut(index)
        {
            existing.push(' ');
            existing.push_str(&text);
            return;
        }
        // The item's first text, or text after a table or code block inside
        // it: a new item at the same depth (with the marker only once).
        let piece = Piece::Block(BlockKind::ListItem {
            text,
            depth: item.depth,
            marker: item.marker.take(),
        });
        item.piece = Some(self.out.pieces.len());
        self.push(piece);
    }

    fn push(&mut self, piece: Piece) {
        if !matches!(piece, Piece::Block(BlockKind::ListItem { .. })) {
            self.last_barrier = Some(self.out.pieces.len());
        }
        self.out.pieces.push(piece);
    }

    /// Ends the collecting element: its run becomes a heading, a cell, a
    /// caption or a code block.
    fn finish_collecting(&mut self) {
        let Some((what, _)) = self.collecting.take() else {
            return;
        };
        self.run.preformatted = false;
        let text = self.run.take();
        self.flushes += 1;
        if text.trim().is_empty() && !matches!(what, Collecting::Cell { .. }) {
            return;
        }
        match what {
            Collecting::Heading(level) => self.push(Piece::Heading { level, text }),
            Collecting::Cell {
                header,
                colspan,
                rowspan,
            } => {
                if let Some(table) = &mut self.table {
                    table.push_cell(text.trim(), header, colspan, rowspan);
                }
            }
            Collecting::TableCaption => {
                if let Some(table) = &mut self.table {
                    table.add_caption(&text);
                }
            }
            Collecting::FigureCaption => self.push(Piece::Block(BlockKind::Caption { text })),
            Collecting::Code { language } => {
                self.push(Piece::Block(BlockKind::Code { text, language }));
            }
        }
    }

    fn finish_table(&mut self) {
        self.flush();
        let Some(grid) = self.table.take() else {
            return;
        };
        let (table, cells, cut) = grid.finish();
        self.table_cells_left = self.table_cells_left.saturating_sub(cells);
        if cut {
            self.tables_cut += 1;
        }
        self.push(Piece::Block(BlockKind::Table(table)));
    }

    /// Reads `<title>` (its children are plain text) as the document's
    /// title, the first one only.
    fn read_title(&mut self, element: &impl Opened) {
        if !self.read_title || self.out.title.is_some() {
            return;
        }
        let title = collapse_whitespace(&element.text());
        if !title.is_empty() {
            self.out.title = Some(title);
        }
    }

    /// Reads the document's language from `<html lang>`, and its author,
    /// date, version and language from the `<meta>` elements that name
    /// them (Dublin Core's names, the citation and Open Graph dates).
    fn read_info(&mut self, element: &impl Opened) {
        let attributes = element.attributes();
        match element.name() {
            "html" => {
                if let Some(lang) = attributes.lang {
                    self.out.info.set(Field::Language, lang);
                }
            }
            "meta" => {
                let Some(content) = attributes.content else {
                    return;
                };
                let key = attributes
                    .meta_name
                    .or(attributes.property)
                    .or(attributes.http_equiv)
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase();
                let field = match key.as_str() {
                    "author" | "dc.creator" | "dcterms.creator" | "citation_author" => {
                        Field::Author
                    }
                    "date"
                    | "dc.date"
                    | "dcterms.date"
                    | "dcterms.created"
                    | "dcterms.issued"
                    | "citation_publication_date"
                    | "citation_date"
                    | "article:published_time" => Field::Date,
                    "version" | "dc.version" => Field::Version,
                    "language" | "dc.language" | "dcterms.language" | "content-language" => {
                        Field::Language
                    }
                    _ => return,
                };
                self.out.info.set(field, content);
            }
            _ => {}
        }
    }

    /// Closes what is still open and returns what the walk found.
    pub(super) fn finish(mut self) -> Extracted {
        while !self.frames.is_empty() {
            self.leave();
        }
        self.flush();
        if self.tables_cut > 0 {
            self.out.warnings.push(format!(
                "{} table(s) cut to the cell budget (parsing.maxTableCells)",
                self.tables_cut
            ));
        }
        self.out
    }
}
