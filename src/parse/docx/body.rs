//! The block walker: the content of `w:body` (or of one footnote) →
//! classified paragraphs and tables, handed to a [`Sink`].
//!
//! One streaming pass over the XML events, with stacks for what nests:
//! paragraphs (a text box's paragraphs sit inside the paragraph anchoring
//! it), tables (nested tables inside cells), content controls, fields and
//! `mc:AlternateContent` choices. What is kept:
//!
//! * runs' text, tabs and breaks; hyperlinks, smart tags, custom XML and
//!   content controls are looked through; tracked insertions are kept and
//!   deletions (`w:del`, `w:moveFrom`) dropped; hidden runs (`w:vanish`)
//!   dropped;
//! * fields show their result, never their instruction (`w:instrText`);
//!   checkboxes (content controls and legacy form fields) become ☒ / ☐;
//! * named content controls and legacy form fields are also handed to the
//!   sink as form fields ([`FormField`]): a check box's state, a text,
//!   choice or date control's text (blank while it shows its placeholder);
//! * text boxes' paragraphs are emitted where their anchor is, before the
//!   anchoring paragraph; of an `mc:AlternateContent` only the first
//!   choice is read, so that a shape's DrawingML and VML copies do not
//!   both appear;
//! * a chart becomes a table of its cached data where it is anchored
//!   ([`super::chart`]);
//! * equations become inline LaTeX between `$` signs ([`super::math`]);
//! * a footnote or endnote reference appends the note's text to the end of
//!   its paragraph as `[Footnote 1: text]` / `[Endnote i: text]`, numbered
//!   in reading order as Word numbers them by default;
//! * tables become rectangular grids, merged cells repeated over the grid
//!   positions they cover; a table inside a cell is flattened into the
//!   cell's text.

use std::collections::{HashMap, HashSet};

use super::math::read_math;
use super::numbering::{Counters, NumberFormat, Numbering};
use super::styles::{NumberingRef, ResolvedStyle, StyleRole, Styles};
use super::xml::{Element, Node, Ns, Visit, XmlReader};
use crate::parse::{FieldValue, FormField, ParseFailure, Table};

/// Footnote and endnote texts, by id.
#[derive(Debug, Default)]
pub(super) struct Notes {
    pub footnotes: HashMap<i64, String>,
    pub endnotes: HashMap<i64, String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NoteKind {
    Footnote,
    Endnote,
}

/// What the walker needs to know about the document.
#[derive(Clone, Copy)]
pub(super) struct Context<'c> {
    pub styles: &'c Styles,
    pub numbering: &'c Numbering,
    /// Notes to attach at their references; `None` while reading notes.
    pub notes: Option<&'c Notes>,
    /// Charts' data tables, by the relationship id drawings refer to.
    pub charts: &'c HashMap<String, Table>,
    /// Most bytes merged-cell expansion may add to one table
    /// (`parsing.maxDecompressedBytes`).
    pub max_table_bytes: u64,
}

/// How page numbers are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PageMode {
    /// From the page breaks Word recorded at its last layout
    /// (`w:lastRenderedPageBreak`): the pages a reader saw.
    Rendered,
    /// From explicit page breaks only: a lower bound, for documents never
    /// laid out by Word.
    Explicit,
    /// Not at all (notes, or documents without any page information).
    Unknown,
}

impl PageMode {
    /// The mode a document part's text supports.
    pub fn detect(text: &str) -> PageMode {
        if text.contains("lastRenderedPageBreak") {
            PageMode::Rendered
        } else if text.contains("type=\"page\"") || text.contains("pageBreakBefore") {
            PageMode::Explicit
        } else {
            PageMode::Unknown
        }
    }
}

/// What a paragraph is, from its style, outline level and numbering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum ParagraphKind {
    Heading {
        level: u8,
        /// The heading's number as Word shows it ("2.1", "Article IV").
        numbering: Option<String>,
    },
    Title,
    Caption,
    /// A paragraph in a code style.
    Code,
    ListItem {
        depth: u8,
        /// "1.", "a)", "-" for bullets; `None` for a level without a number.
        marker: Option<String>,
    },
    Body,
}

/// A finished paragraph.
#[derive(Clone, Debug)]
pub(super) struct Paragraph {
    pub kind: ParagraphKind,
    /// The text as written: tabs and line breaks kept (code needs them).
    pub text: String,
    pub page: Option<u32>,
    /// Rendered notes referenced from the paragraph.
    pub notes: Vec<String>,
    /// Whether every character is set in a monospaced font.
    pub monospace: bool,
}

impl Paragraph {
    /// The paragraph on one line with its marker or number and its notes,
    /// as it reads inside a table cell or a note.
    pub fn inline_text(&self) -> String {
        let mut out = match &self.kind {
            ParagraphKind::ListItem {
                marker: Some(marker),
                ..
            }
            | ParagraphKind::Heading {
                numbering: Some(marker),
                ..
            } => format!("{marker} {}", self.text),
            _ => self.text.clone(),
        };
        for note in &self.notes {
            out.push(' ');
            out.push_str(note);
        }
        out
    }
}

/// Where the walker's blocks go.
pub(super) trait Sink {
    fn paragraph(&mut self, paragraph: Paragraph);
    fn table(&mut self, table: Table, page: Option<u32>);
    /// A form field, handed over once the paragraph it stands in has been.
    /// Sinks that keep no fields (a note's text) drop it.
    fn form_field(&mut self, _field: FormField) {}
}

#[derive(Debug, Default)]
struct ParagraphProps {
    style: Option<String>,
    outline_level: Option<u8>,
    numbering: Option<NumberingRef>,
    page_break_before: bool,
}

#[derive(Debug, Default)]
struct OpenParagraph {
    props: ParagraphProps,
    text: String,
    page: Option<u32>,
    notes: Vec<String>,
    /// Characters in a monospaced, proportional or inherited font.
    monospace_chars: usize,
    proportional_chars: usize,
    inherited_chars: usize,
}

#[derive(Clone, Copy, Debug, Default)]
struct RunProps {
    /// `Some` when the run (or its character style) sets the font.
    monospace: Option<bool>,
    hidden: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Merge {
    #[default]
    None,
    /// Continues the cell above (`w:vMerge` without "restart").
    Up,
    /// Continues the cell to the left (legacy `w:hMerge`).
    Left,
}

/// What a table cell holds until its table is complete: a one-cell table
/// is a frame around its content, which then goes on as ordinary blocks.
#[derive(Debug)]
enum CellBlock {
    Paragraph(Paragraph),
    Table(Table),
}

#[derive(Debug, Default)]
struct Cell {
    blocks: Vec<CellBlock>,
    span: usize,
    merge: Merge,
}

impl Cell {
    /// The cell's content on one line: paragraphs with their markers,
    /// nested tables row by row.
    fn text(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        for block in &self.blocks {
            match block {
                CellBlock::Paragraph(paragraph) => parts.push(paragraph.inline_text()),
                CellBlock::Table(table) => {
                    for row in &table.rows {
                        let mut cells: Vec<&str> = row.iter().map(|c| c.trim()).collect();
                        cells.dedup();
                        parts.extend(
                            cells
                                .iter()
                                .filter(|c| !c.is_empty())
                                .map(|c| c.to_string()),
                        );
                    }
                }
            }
        }
        parts.retain(|p| !p.trim().is_empty());
        parts.join(" ")
    }
}

#[derive(Debug, Default)]
struct Row {
    cells: Vec<Cell>,
    header: bool,
    before: usize,
    after: usize,
}

#[derive(Debug, Default)]
struct OpenTable {
    rows: Vec<Row>,
    /// Columns of `w:tblGrid`: the most any span or offset may cover.
    grid_columns: usize,
    page: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Container {
    Cell,
    TextBox,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FieldPhase {
    Instruction,
    Result,
}

/// An open content control (`w:sdt`).
#[derive(Debug, Default)]
struct OpenControl {
    /// Its title (`w:alias`), else its tag: the name it is kept under.
    name: Option<String>,
    /// Its check box state, if it is one.
    checkbox: Option<bool>,
    /// Whether it shows its placeholder text, which is no value.
    placeholder: bool,
    /// Whether it wraps a building block (a table of contents, a cover
    /// page, a bibliography): content, not a field.
    building_block: bool,
    /// Its content's text so far.
    text: String,
}

impl OpenControl {
    /// Whether its text is its value: a named text control.
    fn keeps_text(&self) -> bool {
        self.name.is_some() && !self.building_block && self.checkbox.is_none()
    }

    /// The field it is, if it is one: a named control that is no
    /// building block.
    fn into_field(self) -> Option<FormField> {
        if self.building_block {
            return None;
        }
        let value = match self.checkbox {
            Some(checked) => FieldValue::Checked(checked),
            None if self.placeholder => FieldValue::Text(String::new()),
            None => FieldValue::Text(self.text),
        };
        FormField::new(self.name.as_deref()?, value)
    }
}

/// An open legacy form field (`w:fldChar` with `w:ffData`).
#[derive(Debug, Default)]
struct OpenFormField {
    name: Option<String>,
    /// Its state, for a check box.
    checkbox: Option<bool>,
    /// A drop-down's entries and the one chosen.
    entries: Vec<String>,
    chosen: usize,
    /// The field's result text so far (what a text field shows).
    text: String,
}

impl OpenFormField {
    /// Whether its result text is its value: a named field, no check box.
    fn keeps_text(&self) -> bool {
        self.name.is_some() && self.checkbox.is_none()
    }

    fn into_field(self) -> Option<FormField> {
        let value = match self.checkbox {
            Some(checked) => FieldValue::Checked(checked),
            // A drop-down's result is the entry it shows; a file that
            // kept no result still says which entry was chosen.
            None if self.text.trim().is_empty() && !self.entries.is_empty() => {
                FieldValue::Text(self.entries.get(self.chosen).cloned().unwrap_or_default())
            }
            None => FieldValue::Text(self.text),
        };
        FormField::new(self.name.as_deref()?, value)
    }
}

/// Where a finished paragraph goes.
enum Destination {
    Sink,
    Cell,
}

/// Word elements whose content is never shown.
const SKIPPED: [&str; 18] = [
    "del",
    "moveFrom",
    "delText",
    "instrText",
    "delInstrText",
    "sectPr",
    "pPrChange",
    "rPrChange",
    "tblPrChange",
    "trPrChange",
    "tcPrChange",
    "sectPrChange",
    "numberingChange",
    "tblPr",
    "tblPrEx",
    "customXmlPr",
    // Ruby annotations' pronunciation text (the base text is kept).
    "rt",
    "fldData",
];

/// Walks block content into a [`Sink`].
pub(super) struct Walker<'c, S> {
    ctx: Context<'c>,
    sink: S,
    part: String,
    counters: Counters,
    pages: PageMode,
    page: u32,
    paragraphs: Vec<OpenParagraph>,
    runs: Vec<RunProps>,
    in_text: bool,
    tables: Vec<OpenTable>,
    containers: Vec<Container>,
    fields: Vec<FieldPhase>,
    /// Per open field: the form field it is, if it is one.
    form_fields: Vec<Option<OpenFormField>>,
    /// The open content controls.
    controls: Vec<OpenControl>,
    /// Form fields closed in the open paragraph, handed to the sink after
    /// it, so that they land in the section it belongs to.
    closed_fields: Vec<FormField>,
    /// Per open `mc:AlternateContent`: whether a choice was taken.
    alternates: Vec<bool>,
    footnotes_seen: u32,
    endnotes_seen: u32,
    /// Notes and charts already placed: each is placed once, at its first
    /// reference, so that repeated references cannot multiply its text.
    placed: HashSet<(Placed, String)>,
    /// Paragraph styles resolved so far, by style id ("" for the default).
    resolved_styles: HashMap<String, ResolvedStyle>,
}

/// What the walker places once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Placed {
    Footnote,
    Endnote,
    Chart,
}

impl<'c, S: Sink> Walker<'c, S> {
    pub fn new(ctx: Context<'c>, sink: S, part: &str, pages: PageMode) -> Self {
        Self {
            ctx,
            sink,
            part: part.to_string(),
            counters: Counters::default(),
            pages,
            page: 1,
            paragraphs: Vec::new(),
            runs: Vec::new(),
            in_text: false,
            tables: Vec::new(),
            containers: Vec::new(),
            fields: Vec::new(),
            form_fields: Vec::new(),
            controls: Vec::new(),
            closed_fields: Vec::new(),
            alternates: Vec::new(),
            footnotes_seen: 0,
            endnotes_seen: 0,
            placed: HashSet::new(),
            resolved_styles: HashMap::new(),
        }
    }

    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    pub fn into_sink(self) -> S {
        self.sink
    }

    /// Walks the content of the element just opened, up to its close.
    pub fn walk_children(&mut self, r: &mut XmlReader<'_>) -> Result<(), ParseFailure> {
        let target = r.depth().saturating_sub(1);
        loop {
            match r.next()? {
                Node::Open(element) => self.open(r, &element, false)?,
                Node::Leaf(element) => self.open(r, &element, true)?,
                Node::Close(ns, end) => {
                    if r.depth() == target {
                        return Ok(());
                    }
                    self.close(ns, end.local_name().into_inner())?;
                }
                Node::Text(text) => {
                    if self.in_text {
                        self.push_text(&text);
                    }
                }
                Node::Eof => return Err(r.error("the part ends inside an open element")),
            }
        }
    }

    fn page(&self) -> Option<u32> {
        (self.pages != PageMode::Unknown).then_some(self.page)
    }

    fn open(
        &mut self,
        r: &mut XmlReader<'_>,
        e: &Element<'_>,
        leaf: bool,
    ) -> Result<(), ParseFailure> {
        match e.ns {
            Ns::Word => self.open_word(r, e, leaf),
            Ns::Math if e.local() == "oMath" && !leaf => {
                let latex = read_math(r)?;
                if !latex.is_empty() {
                    self.push_text(&format!(" ${latex}$ "));
                }
                Ok(())
            }
            Ns::Chart if e.local() == "chart" => {
                if let Some(id) = e.attr("id")
                    && let Some(table) = self.ctx.charts.get(&id)
                    && self.placed.insert((Placed::Chart, id))
                {
                    let page = self.page();
                    self.route_table(table.clone(), page);
                }
                Ok(())
            }
            Ns::Compat if !leaf => match e.local() {
                "AlternateContent" => {
                    self.alternates.push(false);
                    Ok(())
                }
                "Choice" | "Fallback" => match self.alternates.last_mut() {
                    Some(taken @ false) => {
                        *taken = true;
                        Ok(())
                    }
                    _ => r.skip(),
                },
                _ => Ok(()),
            },
            // Drawings, VML, other extensions: looked through, so that the
            // text boxes inside them are found.
            _ => Ok(()),
        }
    }

    fn open_word(
        &mut self,
        r: &mut XmlReader<'_>,
        e: &Element<'_>,
        leaf: bool,
    ) -> Result<(), ParseFailure> {
        match e.local() {
            "p" => {
                self.paragraphs.push(OpenParagraph {
                    page: self.page(),
                    ..OpenParagraph::default()
                });
                if leaf {
                    self.close_paragraph()?;
                }
            }
            "pPr" if !leaf => {
                let props = read_paragraph_props(r)?;
                if props.page_break_before && self.pages == PageMode::Explicit {
                    self.page += 1;
                }
                let page = self.page();
                if let Some(paragraph) = self.paragraphs.last_mut() {
                    if props.page_break_before {
                        paragraph.page = page;
                    }
                    paragraph.props = props;
                }
            }
            "r" if !leaf => self.runs.push(RunProps::default()),
            "rPr" if !leaf => {
                let props = read_run_props(r, self.ctx.styles)?;
                if let Some(run) = self.runs.last_mut() {
                    *run = props;
                }
            }
            "t" if !leaf => self.in_text = true,
            "tab" | "ptab" => self.push_text("\t"),
            "br" => {
                if e.attr("type").as_deref() == Some("page") && self.pages == PageMode::Explicit {
                    self.next_page();
                }
                self.push_text("\n");
            }
            "cr" => self.push_text("\n"),
            "noBreakHyphen" => self.push_text("-"),
            "sym" => {
                // Symbol-font characters live in the private use area
                // (F000–F0FF) and mean nothing without the font: skip them.
                let ch = e
                    .attr("char")
                    .and_then(|hex| u32::from_str_radix(hex.trim(), 16).ok())
                    .filter(|code| !(0xE000..=0xF8FF).contains(code))
                    .and_then(char::from_u32);
                if let Some(ch) = ch {
                    self.push_text(ch.encode_utf8(&mut [0; 4]));
                }
            }
            "lastRenderedPageBreak" => self.rendered_page_break(),
            "fldChar" => self.field_char(r, e, leaf)?,
            "footnoteReference" => self.note_reference(NoteKind::Footnote, e),
            "endnoteReference" => self.note_reference(NoteKind::Endnote, e),
            "sdt" if !leaf => self.controls.push(OpenControl::default()),
            "sdtPr" if !leaf => {
                let control = read_control(r)?;
                if let Some(open) = self.controls.last_mut() {
                    *open = control;
                }
            }
            "sdtContent" if !leaf => {
                if let Some(checked) = self.controls.last().and_then(|c| c.checkbox) {
                    // The content is the box's glyph in some font; the
                    // state is what counts.
                    self.push_text(checkbox_glyph(checked));
                    r.skip()?;
                }
            }
            "sdtEndPr" if !leaf => r.skip()?,
            "tbl" if !leaf => self.tables.push(OpenTable {
                page: self.page(),
                ..OpenTable::default()
            }),
            "tblGrid" if !leaf => {
                let mut columns = 0;
                r.visit_subtree(|visit| {
                    if let Visit::Element(_, col) = visit
                        && col.is(Ns::Word, "gridCol")
                    {
                        columns += 1;
                    }
                })?;
                if let Some(table) = self.tables.last_mut() {
                    table.grid_columns = columns;
                }
            }
            "tr" => {
                if let Some(table) = self.tables.last_mut() {
                    table.rows.push(Row::default());
                }
            }
            "trPr" if !leaf => {
                let (header, before, after) = read_row_props(r)?;
                if let Some(table) = self.tables.last_mut() {
                    let limit = table.grid_columns;
                    if let Some(row) = table.rows.last_mut() {
                        row.header = header;
                        row.before = before.min(limit);
                        row.after = after.min(limit);
                    }
                }
            }
            "tc" => {
                if let Some(row) = self.tables.last_mut().and_then(|t| t.rows.last_mut()) {
                    row.cells.push(Cell {
                        span: 1,
                        ..Cell::default()
                    });
                    if !leaf {
                        self.containers.push(Container::Cell);
                    }
                }
            }
            "tcPr" if !leaf => {
                let (span, merge) = read_cell_props(r)?;
                if let Some(table) = self.tables.last_mut() {
                    let limit = table.grid_columns.max(1);
                    if let Some(cell) = table.rows.last_mut().and_then(|row| row.cells.last_mut()) {
                        cell.span = span.clamp(1, limit);
                        cell.merge = merge;
                    }
                }
            }
            "txbxContent" if !leaf => self.containers.push(Container::TextBox),
            local if !leaf && SKIPPED.contains(&local) => r.skip()?,
            _ => {}
        }
        Ok(())
    }

    fn close(&mut self, ns: Ns, local: &str) -> Result<(), ParseFailure> {
        match (ns, local) {
            (Ns::Word, "p") => self.close_paragraph()?,
            (Ns::Word, "r") => {
                self.runs.pop();
            }
            (Ns::Word, "t") => self.in_text = false,
            (Ns::Word, "sdt") => {
                if let Some(field) = self.controls.pop().and_then(OpenControl::into_field) {
                    self.close_field(field);
                }
            }
            (Ns::Word, "tc") if self.containers.last() == Some(&Container::Cell) => {
                self.containers.pop();
            }
            (Ns::Word, "tbl") => self.close_table()?,
            (Ns::Word, "txbxContent") if self.containers.last() == Some(&Container::TextBox) => {
                self.containers.pop();
            }
            (Ns::Compat, "AlternateContent") => {
                self.alternates.pop();
            }
            _ => {}
        }
        Ok(())
    }

    /// Appends run text to the open paragraph, unless a field instruction
    /// or hidden run is being read.
    fn push_text(&mut self, text: &str) {
        if self.fields.contains(&FieldPhase::Instruction) {
            return;
        }
        let run = self.runs.last().copied().unwrap_or_default();
        if run.hidden {
            return;
        }
        // Only what can become a field's value is kept: not the text of
        // an unnamed control (one may wrap the whole body), a building
        // block or a check box.
        for control in self.controls.iter_mut().filter(|c| c.keeps_text()) {
            control.text.push_str(text);
        }
        for field in self.form_fields.iter_mut().flatten() {
            if field.keeps_text() {
                field.text.push_str(text);
            }
        }
        let Some(paragraph) = self.paragraphs.last_mut() else {
            return;
        };
        paragraph.text.push_str(text);
        let visible = text.chars().filter(|c| !c.is_whitespace()).count();
        match run.monospace {
            Some(true) => paragraph.monospace_chars += visible,
            Some(false) => paragraph.proportional_chars += visible,
            None => paragraph.inherited_chars += visible,
        }
    }

    fn rendered_page_break(&mut self) {
        if self.pages == PageMode::Rendered {
            self.next_page();
        }
    }

    /// Moves on to the next page (breaks inside text boxes float with
    /// their shape and count for nothing).
    fn next_page(&mut self) {
        if self.containers.contains(&Container::TextBox) {
            return;
        }
        self.page += 1;
        let page = self.page();
        // A break before any text moves the whole paragraph to the page.
        if let Some(paragraph) = self.paragraphs.last_mut()
            && paragraph.text.trim().is_empty()
        {
            paragraph.page = page;
        }
    }

    fn field_char(
        &mut self,
        r: &mut XmlReader<'_>,
        e: &Element<'_>,
        leaf: bool,
    ) -> Result<(), ParseFailure> {
        match e.attr("fldCharType").as_deref() {
            Some("begin") => {
                let form = if leaf { None } else { read_form_field(r)? };
                // A legacy form checkbox keeps its state in the field data.
                if let Some(checked) = form.as_ref().and_then(|f| f.checkbox) {
                    self.push_text(checkbox_glyph(checked));
                }
                // Fields nest like elements; unbalanced begins must not pile
                // up without bound.
                if self.fields.len() >= r.max_depth() as usize {
                    return Err(ParseFailure::TooDeep {
                        limit: r.max_depth(),
                    });
                }
                self.fields.push(FieldPhase::Instruction);
                self.form_fields.push(form);
            }
            Some("separate") => {
                if let Some(phase) = self.fields.last_mut() {
                    *phase = FieldPhase::Result;
                }
            }
            Some("end") => {
                self.fields.pop();
                if let Some(field) = self
                    .form_fields
                    .pop()
                    .flatten()
                    .and_then(OpenFormField::into_field)
                {
                    self.close_field(field);
                }
            }
            _ => {}
        }
        if !leaf && r.depth() > 0 && !matches!(e.attr("fldCharType").as_deref(), Some("begin")) {
            r.skip()?;
        }
        Ok(())
    }

    fn note_reference(&mut self, kind: NoteKind, e: &Element<'_>) {
        if self.fields.contains(&FieldPhase::Instruction) {
            return;
        }
        let Some(notes) = self.ctx.notes else {
            return;
        };
        let Some(id) = e.attr("id").and_then(|id| id.trim().parse::<i64>().ok()) else {
            return;
        };
        let placed = match kind {
            NoteKind::Footnote => Placed::Footnote,
            NoteKind::Endnote => Placed::Endnote,
        };
        if !self.placed.insert((placed, id.to_string())) {
            return;
        }
        let (texts, seen, label, format) = match kind {
            NoteKind::Footnote => (
                &notes.footnotes,
                &mut self.footnotes_seen,
                "Footnote",
                NumberFormat::Decimal,
            ),
            NoteKind::Endnote => (
                &notes.endnotes,
                &mut self.endnotes_seen,
                "Endnote",
                NumberFormat::LowerRoman,
            ),
        };
        *seen += 1;
        let number = format.format(i64::from(*seen));
        if let Some(text) = texts.get(&id)
            && let Some(paragraph) = self.paragraphs.last_mut()
        {
            paragraph
                .notes
                .push(format!("[{label} {number}: {}]", text.trim()));
        }
    }

    fn destination(&self) -> Destination {
        for container in self.containers.iter().rev() {
            if *container == Container::Cell {
                return Destination::Cell;
            }
        }
        Destination::Sink
    }

    fn current_cell(&mut self) -> Option<&mut Cell> {
        self.tables
            .last_mut()
            .and_then(|t| t.rows.last_mut())
            .and_then(|r| r.cells.last_mut())
    }

    fn close_paragraph(&mut self) -> Result<(), ParseFailure> {
        let Some(open) = self.paragraphs.pop() else {
            return Ok(());
        };
        // An instruction never spans paragraphs in well-formed documents;
        // if one seems to, show what follows rather than lose it.
        for phase in &mut self.fields {
            *phase = FieldPhase::Result;
        }
        let paragraph = self.classify(open);
        self.route_paragraph(paragraph);
        if self.paragraphs.is_empty() {
            for field in std::mem::take(&mut self.closed_fields) {
                self.sink.form_field(field);
            }
        }
        Ok(())
    }

    /// Keeps a form field for the sink: at once outside any paragraph,
    /// else once its paragraph has gone to the sink.
    fn close_field(&mut self, field: FormField) {
        if self.paragraphs.is_empty() {
            self.sink.form_field(field);
        } else {
            self.closed_fields.push(field);
        }
    }

    fn route_paragraph(&mut self, paragraph: Paragraph) {
        match self.destination() {
            Destination::Cell => {
                if let Some(cell) = self.current_cell() {
                    cell.blocks.push(CellBlock::Paragraph(paragraph));
                }
            }
            Destination::Sink => self.sink.paragraph(paragraph),
        }
    }

    fn route_table(&mut self, table: Table, page: Option<u32>) {
        match self.destination() {
            Destination::Cell => {
                if let Some(cell) = self.current_cell() {
                    cell.blocks.push(CellBlock::Table(table));
                }
            }
            Destination::Sink => self.sink.table(table, page),
        }
    }

    fn classify(&mut self, open: OpenParagraph) -> Paragraph {
        let styles = self.ctx.styles;
        let style_id = open.props.style.as_deref().unwrap_or_default();
        let style = match self.resolved_styles.get(style_id) {
            Some(style) => style.clone(),
            None => {
                let style = styles.resolve(open.props.style.as_deref());
                self.resolved_styles
                    .insert(style_id.to_string(), style.clone());
                style
            }
        };
        let heading_level = match open.props.outline_level {
            Some(level) => (level < 9).then_some(level + 1),
            None => style.heading_level,
        };
        let reference = open.props.numbering.unwrap_or_default().or(style.numbering);
        let marker = match reference.num_id {
            Some(num_id) if num_id != 0 => {
                let level = reference
                    .level
                    .or_else(|| {
                        let style_id = open.props.style.as_deref()?;
                        self.ctx.numbering.level_for_style(num_id, style_id, styles)
                    })
                    .unwrap_or(0);
                self.ctx
                    .numbering
                    .advance(&mut self.counters, num_id, level, styles)
                    .map(|marker| (level, marker))
            }
            _ => None,
        };
        let kind = if style.role == StyleRole::Title && heading_level.is_none() {
            ParagraphKind::Title
        } else if let Some(level) = heading_level {
            ParagraphKind::Heading {
                level,
                numbering: marker
                    .filter(|(_, m)| !m.bullet && !m.text.is_empty())
                    .map(|(_, m)| m.text),
            }
        } else if style.role == StyleRole::Caption {
            ParagraphKind::Caption
        } else if style.role == StyleRole::Code {
            ParagraphKind::Code
        } else if let Some((level, marker)) = marker {
            ParagraphKind::ListItem {
                depth: level,
                marker: if marker.bullet {
                    Some("-".to_string())
                } else {
                    Some(marker.text).filter(|t| !t.is_empty())
                },
            }
        } else {
            ParagraphKind::Body
        };
        let monospace = open.proportional_chars == 0
            && open.monospace_chars + open.inherited_chars > 0
            && (open.inherited_chars == 0 || style.monospace);
        Paragraph {
            kind,
            text: open.text,
            page: open.page,
            notes: open.notes,
            monospace,
        }
    }

    fn close_table(&mut self) -> Result<(), ParseFailure> {
        let Some(mut open) = self.tables.pop() else {
            return Ok(());
        };
        let page = open.page;
        if let Some(cell) = open.single_cell() {
            // A one-cell table frames its content (a boxed note, a layout
            // cell): it is not data, so its blocks go on as they are.
            for block in cell.blocks {
                match block {
                    CellBlock::Paragraph(paragraph) => self.route_paragraph(paragraph),
                    CellBlock::Table(table) => self.route_table(table, page),
                }
            }
            return Ok(());
        }
        let table = expand_grid(open, self.ctx.max_table_bytes, &self.part)?;
        self.route_table(table, page);
        Ok(())
    }
}

impl OpenTable {
    /// The only cell of a one-row, one-column table.
    fn single_cell(&mut self) -> Option<Cell> {
        match self.rows.as_mut_slice() {
            [row] if row.before == 0 && row.after == 0 && row.cells.len() == 1 => row.cells.pop(),
            _ => None,
        }
    }
}

/// Lays a table's cells out on its grid: spans and merged cells repeat
/// their text in every position they cover. The header rows are the
/// leading rows marked `w:tblHeader`, else the first row (as Word's
/// default table styles show it) when there is more than one.
fn expand_grid(open: OpenTable, max_bytes: u64, part: &str) -> Result<Table, ParseFailure> {
    let mut rows: Vec<Vec<String>> = Vec::with_capacity(open.rows.len());
    let mut added: u64 = 0;
    let mut charge = |text: &str| -> Result<(), ParseFailure> {
        added = added.saturating_add(text.len() as u64);
        if added > max_bytes {
            return Err(ParseFailure::ZipBomb {
                part: format!("{part} (merged table cells)"),
                limit: max_bytes,
            });
        }
        Ok(())
    };
    for row in &open.rows {
        let mut grid: Vec<String> = vec![String::new(); row.before];
        for cell in &row.cells {
            let own = cell.text();
            let text = match cell.merge {
                Merge::None => own,
                Merge::Up => {
                    let column = grid.len();
                    let above = rows.last().and_then(|r| r.get(column));
                    match above {
                        Some(above) if own.is_empty() => above.clone(),
                        _ => own,
                    }
                }
                Merge::Left => grid.last().cloned().unwrap_or_default(),
            };
            for _ in 0..cell.span {
                charge(&text)?;
                grid.push(text.clone());
            }
        }
        grid.extend(std::iter::repeat_n(String::new(), row.after));
        rows.push(grid);
    }
    let marked = open.rows.iter().take_while(|row| row.header).count();
    let header_rows = match marked {
        0 if rows.len() > 1 => 1,
        n => n,
    };
    Ok(Table {
        caption: None,
        header_rows,
        rows,
        ..Table::default()
    })
}

fn checkbox_glyph(checked: bool) -> &'static str {
    if checked { "☒ " } else { "☐ " }
}

/// Reads a `w:pPr` (just opened).
fn read_paragraph_props(r: &mut XmlReader<'_>) -> Result<ParagraphProps, ParseFailure> {
    let mut props = ParagraphProps::default();
    r.visit_subtree(|visit| {
        let Visit::Element(path, e) = visit else {
            return;
        };
        if e.ns != Ns::Word {
            return;
        }
        match (path, e.local()) {
            ([], "pStyle") => props.style = e.attr("val"),
            ([], "outlineLvl") => {
                props.outline_level = e.int_val().and_then(|v| u8::try_from(v).ok())
            }
            ([], "pageBreakBefore") => props.page_break_before = e.is_on(),
            ([p], "numId") if p == "numPr" => {
                props.numbering.get_or_insert_default().num_id =
                    e.int_val().and_then(|v| u32::try_from(v).ok());
            }
            ([p], "ilvl") if p == "numPr" => {
                props.numbering.get_or_insert_default().level =
                    e.int_val().and_then(|v| u8::try_from(v).ok());
            }
            _ => {}
        }
    })?;
    Ok(props)
}

/// Reads a run's `w:rPr` (just opened).
fn read_run_props(r: &mut XmlReader<'_>, styles: &Styles) -> Result<RunProps, ParseFailure> {
    let mut props = RunProps::default();
    let mut character_style = None;
    r.visit_subtree(|visit| {
        let Visit::Element([], e) = visit else {
            return;
        };
        if e.ns != Ns::Word {
            return;
        }
        match e.local() {
            "rFonts" => {
                if let Some(font) = e.attr("ascii").or_else(|| e.attr("hAnsi")) {
                    props.monospace = Some(super::styles::is_monospace_font(&font));
                }
            }
            "rStyle" => character_style = e.attr("val"),
            "vanish" => props.hidden = e.is_on(),
            _ => {}
        }
    })?;
    if props.monospace.is_none() {
        props.monospace = character_style.and_then(|id| styles.character_monospace(&id));
    }
    Ok(props)
}

/// Reads a `w:trPr` (just opened): header flag, grid columns before and
/// after the row's cells.
fn read_row_props(r: &mut XmlReader<'_>) -> Result<(bool, usize, usize), ParseFailure> {
    let (mut header, mut before, mut after) = (false, 0, 0);
    r.visit_subtree(|visit| {
        if let Visit::Element([], e) = visit
            && e.ns == Ns::Word
        {
            let count = || {
                e.int_val()
                    .and_then(|v| usize::try_from(v).ok())
                    .unwrap_or(0)
            };
            match e.local() {
                "tblHeader" => header = e.is_on(),
                "gridBefore" => before = count(),
                "gridAfter" => after = count(),
                _ => {}
            }
        }
    })?;
    Ok((header, before, after))
}

/// Reads a `w:tcPr` (just opened): the grid columns spanned and how the
/// cell merges.
fn read_cell_props(r: &mut XmlReader<'_>) -> Result<(usize, Merge), ParseFailure> {
    let (mut span, mut merge) = (1, Merge::None);
    r.visit_subtree(|visit| {
        if let Visit::Element([], e) = visit
            && e.ns == Ns::Word
        {
            let continues = e.attr("val").is_none_or(|v| v != "restart");
            match e.local() {
                "gridSpan" => {
                    span = e
                        .int_val()
                        .and_then(|v| usize::try_from(v).ok())
                        .unwrap_or(1)
                }
                "vMerge" if continues => merge = Merge::Up,
                "hMerge" if continues => merge = Merge::Left,
                _ => {}
            }
        }
    })?;
    Ok((span, merge))
}

/// Reads a content control's `w:sdtPr` (just opened): its name, and
/// whether it is a checkbox, shows its placeholder or holds a building
/// block.
fn read_control(r: &mut XmlReader<'_>) -> Result<OpenControl, ParseFailure> {
    let mut control = OpenControl::default();
    let mut tag = None;
    r.visit_subtree(|visit| {
        let Visit::Element(path, e) = visit else {
            return;
        };
        match (e.ns, e.local()) {
            (Ns::Word, "alias") if path.is_empty() => control.name = e.attr("val"),
            (Ns::Word, "tag") if path.is_empty() => tag = e.attr("val"),
            (Ns::Word, "showingPlcHdr") if path.is_empty() => control.placeholder = e.is_on(),
            (Ns::Word, "docPartObj" | "docPartList") => control.building_block = true,
            (Ns::Word2010, "checkbox") => {
                control.checkbox.get_or_insert(false);
            }
            (Ns::Word2010, "checked") if path.last().is_some_and(|p| p == "checkbox") => {
                control.checkbox = Some(e.is_on());
            }
            _ => {}
        }
    })?;
    control.name = control
        .name
        .filter(|n| !n.trim().is_empty())
        .or(tag.filter(|t| !t.trim().is_empty()));
    Ok(control)
}

/// Reads a field's opening `w:fldChar` (just opened): the legacy form
/// field it begins, if it begins one (`w:ffData`).
fn read_form_field(r: &mut XmlReader<'_>) -> Result<Option<OpenFormField>, ParseFailure> {
    let mut form: Option<OpenFormField> = None;
    let (mut default, mut checked) = (false, None);
    let (mut chosen, mut chosen_default) = (None, None);
    r.visit_subtree(|visit| {
        let Visit::Element(path, e) = visit else {
            return;
        };
        if e.ns != Ns::Word {
            return;
        }
        let parent = path.last().map(String::as_str);
        if parent.is_none() && e.local() == "ffData" {
            form = Some(OpenFormField::default());
        }
        let Some(form) = form.as_mut() else {
            return;
        };
        match (parent, e.local()) {
            (Some("ffData"), "name") => form.name = e.attr("val"),
            (Some("ffData"), "checkBox") => form.checkbox = Some(false),
            (Some("checkBox"), "default") => default = e.is_on(),
            (Some("checkBox"), "checked") => checked = Some(e.is_on()),
            (Some("ddList"), "listEntry") => form.entries.extend(e.attr("val")),
            (Some("ddList"), "result") => chosen = e.int_val(),
            (Some("ddList"), "default") => chosen_default = e.int_val(),
            _ => {}
        }
    })?;
    Ok(form.map(|mut form| {
        if form.checkbox.is_some() {
            form.checkbox = Some(checked.unwrap_or(default));
        }
        form.chosen = chosen
            .or(chosen_default)
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(0);
        form
    }))
}
