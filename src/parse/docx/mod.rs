//! DOCX (Office Open XML WordprocessingML) → [`DocumentTree`].
//!
//! The package is opened with every part read through a size cap
//! ([`package`]); the main document part is found through the package
//! relationships, so Strict and Transitional documents (and renamed main
//! parts) read alike. Styles ([`styles`]) and numbering ([`numbering`])
//! are read first, then footnotes and endnotes ([`notes`]), then the body
//! is streamed once ([`body`]) into headings, paragraphs, list items,
//! captions, code blocks and tables. Headers and footers are page
//! furniture, not content, and are never read.
//!
//! Choices where the format leaves one:
//!
//! * A paragraph in the "Title" style is the document title (the first
//!   one; later ones are level-1 headings); "heading N" styles and outline
//!   levels give heading levels 1–9. The core properties' title is used
//!   only when the body has no Title paragraph, as it is often a template's
//!   leftover.
//! * Footnotes and endnotes are appended to the paragraph that references
//!   them, as `[Footnote 1: text]`, so that a sentence and its note are
//!   retrieved together.
//! * Consecutive paragraphs in a code style ("Source Code", "HTML
//!   Preformatted") become one code block; so do consecutive paragraphs set
//!   entirely in a monospaced font when they contain code punctuation
//!   (a memo typed in Courier stays prose).
//! * Charts become tables of their cached data, captioned with their title.
//! * Malformed XML in the document, styles, numbering or notes fails the
//!   document; a malformed chart or core properties part is skipped with a
//!   warning (a figure or a metadata title is no reason to lose the text).

mod body;
mod chart;
mod math;
mod notes;
mod numbering;
mod package;
mod styles;
mod xml;

use std::collections::HashMap;

use body::{Context, NoteKind, Notes, PageMode, Paragraph, ParagraphKind, Sink, Walker};
use numbering::Numbering;
use package::Package;
use styles::Styles;
use xml::{Node, Ns, Visit, XmlReader};

use super::{DocumentTree, Field, FormField, Format, InfoReader, ParseFailure, Table, TreeBuilder};
use crate::spec::ParsingSpec;

/// Parses the bytes of a DOCX file. The caller runs the shared cleaning,
/// table-of-contents and rendering passes.
pub fn parse(bytes: &[u8], spec: &ParsingSpec) -> Result<DocumentTree, ParseFailure> {
    let mut package = Package::open(bytes, spec)?;
    let parts = package.document_parts()?;
    let max_depth = package.max_depth();
    let Some(document) = package.read_text(&parts.document)? else {
        return Err(ParseFailure::Corrupt {
            format: Format::Docx,
            detail: format!("missing the main document part {}", parts.document),
        });
    };
    let styles = match &parts.styles {
        Some(part) => match package.read_text(part)? {
            Some(text) => Styles::parse(&text, part, max_depth)?,
            None => Styles::default(),
        },
        None => Styles::default(),
    };
    let numbering = match &parts.numbering {
        Some(part) => match package.read_text(part)? {
            Some(text) => Numbering::parse(&text, part, max_depth)?,
            None => Numbering::default(),
        },
        None => Numbering::default(),
    };
    let mut builder = TreeBuilder::new(Format::Docx);
    let mut charts = HashMap::new();
    for (id, part) in &parts.charts {
        let chart = package.read_text(part).and_then(|text| match text {
            Some(text) => chart::read_chart(&text, part, max_depth),
            None => Ok(None),
        });
        match chart {
            Ok(Some(table)) => {
                charts.insert(id.clone(), table);
            }
            Ok(None) => {}
            // A chart is a figure: losing one is no reason to lose the text.
            Err(e) => builder.warn(format!("skipped a chart: {e}")),
        }
    }
    let ctx = Context {
        styles: &styles,
        numbering: &numbering,
        charts: &charts,
        notes: None,
        max_table_bytes: spec.max_decompressed_bytes,
    };
    let mut notes = Notes::default();
    for (kind, part) in [
        (NoteKind::Footnote, &parts.footnotes),
        (NoteKind::Endnote, &parts.endnotes),
    ] {
        if let Some(part) = part
            && let Some(text) = package.read_text(part)?
        {
            notes.read(kind, &text, part, ctx, max_depth)?;
        }
    }

    let core = match &parts.core_properties {
        Some(part) => match package.read_text(part).and_then(|text| match text {
            Some(text) => core_properties(&text, part, max_depth),
            None => Ok(CoreProperties::default()),
        }) {
            Ok(core) => core,
            Err(e) => {
                builder.warn(format!("ignored the core properties: {e}"));
                CoreProperties::default()
            }
        },
        None => CoreProperties::default(),
    };
    builder.set_info(core.info);

    let ctx = Context {
        notes: Some(&notes),
        ..ctx
    };
    let sink = TreeSink {
        builder,
        code: Vec::new(),
        has_title: false,
    };
    let mut walker = Walker::new(ctx, sink, &parts.document, PageMode::detect(&document));
    let mut reader = XmlReader::new(&document, &parts.document, max_depth);
    loop {
        match reader.next()? {
            Node::Open(e) if e.is(Ns::Word, "body") => walker.walk_children(&mut reader)?,
            // Only the body holds content (not w:background and the like).
            Node::Open(_) if reader.depth() > 1 => reader.skip()?,
            Node::Eof => break,
            _ => {}
        }
    }
    let mut sink = walker.into_sink();
    sink.flush_code();
    if !sink.has_title
        && let Some(title) = core.title
    {
        sink.builder.set_title(&title);
    }
    Ok(sink.builder.finish())
}

/// What the core properties (`docProps/core.xml`) say of the document.
#[derive(Default)]
struct CoreProperties {
    title: Option<String>,
    info: InfoReader,
}

/// Reads the core properties: `dc:title`; `dc:creator` for the author;
/// `dcterms:created`, else `dcterms:modified`, for the date; `cp:version`
/// (not `cp:revision`, which counts saves); `dc:language`.
fn core_properties(text: &str, part: &str, max_depth: u32) -> Result<CoreProperties, ParseFailure> {
    // Each property's text, by which one it is.
    let mut values: [String; 6] = Default::default();
    let mut current: Option<usize> = None;
    XmlReader::new(text, part, max_depth).visit_all(|visit| match visit {
        Visit::Element(path, e) => {
            current = (path.len() == 1)
                .then(|| {
                    [
                        (Ns::DublinCore, "title"),
                        (Ns::DublinCore, "creator"),
                        (Ns::DcTerms, "created"),
                        (Ns::DcTerms, "modified"),
                        (Ns::CoreProperties, "version"),
                        (Ns::DublinCore, "language"),
                    ]
                    .iter()
                    .position(|&(ns, name)| e.is(ns, name))
                })
                .flatten();
        }
        Visit::Text(path, text) => {
            if let Some(i) = current
                && path.len() == 2
            {
                values[i].push_str(text);
            }
        }
    })?;
    let [title, creator, created, modified, version, language] = values;
    let mut info = InfoReader::default();
    info.set(Field::Author, &creator);
    info.set(Field::Date, &created);
    info.set(Field::Date, &modified);
    info.set(Field::Version, &version);
    info.set(Field::Language, &language);
    let title = title.trim();
    Ok(CoreProperties {
        title: (!title.is_empty()).then(|| title.to_string()),
        info,
    })
}

/// Builds the tree from the walker's blocks, merging code paragraphs.
struct TreeSink {
    builder: TreeBuilder,
    /// Consecutive code-like paragraphs not yet emitted.
    code: Vec<Paragraph>,
    /// Whether a Title paragraph gave the document its title.
    has_title: bool,
}

impl Sink for TreeSink {
    fn paragraph(&mut self, paragraph: Paragraph) {
        let code_like = paragraph.kind == ParagraphKind::Code
            || (paragraph.kind == ParagraphKind::Body && paragraph.monospace);
        if code_like {
            self.code.push(paragraph);
        } else {
            self.flush_code();
            self.emit(paragraph);
        }
    }

    fn table(&mut self, table: Table, page: Option<u32>) {
        self.flush_code();
        self.builder.set_page(page);
        self.builder.table(table);
    }

    fn form_field(&mut self, field: FormField) {
        self.flush_code();
        self.builder.form_field(field);
    }
}

impl TreeSink {
    /// Emits the pending code-like paragraphs: one code block when any is
    /// in a code style or shows code punctuation, else prose.
    fn flush_code(&mut self) {
        let group = std::mem::take(&mut self.code);
        let Some(first) = group.first() else {
            return;
        };
        let is_code = group
            .iter()
            .any(|p| p.kind == ParagraphKind::Code || looks_like_code(&p.text));
        if !is_code {
            for paragraph in group {
                self.emit(paragraph);
            }
            return;
        }
        self.builder.set_page(first.page);
        let text = group
            .iter()
            .map(|p| p.text.trim_end())
            .collect::<Vec<_>>()
            .join("\n");
        self.builder.code(None, &text);
        let notes: Vec<&str> = group
            .iter()
            .flat_map(|p| p.notes.iter().map(String::as_str))
            .collect();
        if !notes.is_empty() {
            self.builder.paragraph(&notes.join(" "));
        }
    }

    fn emit(&mut self, paragraph: Paragraph) {
        let b = &mut self.builder;
        b.set_page(paragraph.page);
        let notes = paragraph.notes.join(" ");
        let with_notes = || format!("{} {notes}", paragraph.text);
        match &paragraph.kind {
            ParagraphKind::Heading { level, numbering } => {
                if !paragraph.text.trim().is_empty() {
                    b.heading_with_numbering(*level, numbering.clone(), &paragraph.text);
                }
                b.paragraph(&notes);
            }
            ParagraphKind::Title => {
                if !self.has_title && !paragraph.text.trim().is_empty() {
                    b.set_title(&paragraph.text);
                    self.has_title = true;
                } else {
                    b.heading_with_numbering(1, None, &paragraph.text);
                }
                b.paragraph(&notes);
            }
            ParagraphKind::Caption => b.caption(&with_notes()),
            ParagraphKind::ListItem { depth, marker } => {
                b.list_item(*depth, marker.as_deref(), &with_notes())
            }
            ParagraphKind::Code | ParagraphKind::Body => b.paragraph(&with_notes()),
        }
    }
}

/// Punctuation that prose rarely has and code nearly always does.
fn looks_like_code(text: &str) -> bool {
    text.chars()
        .any(|c| matches!(c, '{' | '}' | '(' | ')' | '[' | ']' | ';' | '=' | '<' | '>'))
}

#[cfg(test)]
mod tests {
    use crate::parse::test_support::{blocks, paragraph};
    use std::io::{Cursor, Write};

    use zip::write::SimpleFileOptions;

    use super::*;
    use crate::parse::BlockKind;

    const NS: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" xmlns:w14="http://schemas.microsoft.com/office/word/2010/wordml" xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" xmlns:v="urn:schemas-microsoft-com:vml""#;

    /// A package of stored parts.
    fn package(parts: &[(&str, String)]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options =
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        for (name, content) in parts {
            zip.start_file(*name, options).unwrap();
            zip.write_all(content.as_bytes()).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    fn document(body: &str) -> String {
        format!(r#"<?xml version="1.0"?><w:document {NS}><w:body>{body}</w:body></w:document>"#)
    }

    fn part(root: &str, content: &str) -> String {
        format!(r#"<w:{root} {NS}>{content}</w:{root}>"#)
    }

    fn p(text: &str) -> String {
        format!("<w:p><w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>")
    }

    fn styled(style: &str, text: &str) -> String {
        format!(
            "<w:p><w:pPr><w:pStyle w:val=\"{style}\"/></w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>"
        )
    }

    fn parse_body(body: &str, extra: &[(&str, String)]) -> DocumentTree {
        let mut parts = vec![("word/document.xml", document(body))];
        parts.extend(extra.iter().cloned());
        parse(&package(&parts), &ParsingSpec::default()).unwrap()
    }

    const STYLES: &str = r#"
      <w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style>
      <w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
      <w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr><w:outlineLvl w:val="1"/></w:pPr></w:style>
      <w:style w:type="paragraph" w:styleId="Clause"><w:name w:val="Clause"/><w:basedOn w:val="Heading2"/></w:style>
      <w:style w:type="paragraph" w:styleId="Caption"><w:name w:val="caption"/></w:style>
      <w:style w:type="paragraph" w:styleId="SourceCode"><w:name w:val="Source Code"/></w:style>"#;

    const NUMBERING: &str = r#"
      <w:abstractNum w:abstractNumId="0">
        <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="Article %1"/></w:lvl>
        <w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:isLgl/><w:lvlText w:val="%1.%2"/></w:lvl>
      </w:abstractNum>
      <w:abstractNum w:abstractNumId="1">
        <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="(%1)"/></w:lvl>
        <w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="bullet"/><w:lvlText w:val="o"/></w:lvl>
      </w:abstractNum>
      <w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>
      <w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>"#;

    fn numbered(num: u32, level: u8, style: Option<&str>, text: &str) -> String {
        let style = style
            .map(|s| format!("<w:pStyle w:val=\"{s}\"/>"))
            .unwrap_or_default();
        format!(
            "<w:p><w:pPr>{style}<w:numPr><w:ilvl w:val=\"{level}\"/><w:numId w:val=\"{num}\"/></w:numPr></w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>"
        )
    }

    fn with_styles_and_numbering() -> Vec<(&'static str, String)> {
        vec![
            ("word/styles.xml", part("styles", STYLES)),
            ("word/numbering.xml", part("numbering", NUMBERING)),
        ]
    }

    #[test]
    fn core_properties_give_author_date_version_and_language() {
        let core = r#"<?xml version="1.0"?><cp:coreProperties
            xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties"
            xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/"
            xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
            <dc:title>Data Processing Addendum</dc:title><dc:creator>Legal Team</dc:creator>
            <cp:revision>7</cp:revision><cp:version>1.2</cp:version><dc:language>de-DE</dc:language>
            <dcterms:modified xsi:type="dcterms:W3CDTF">2024-01-02T00:00:00Z</dcterms:modified>
            <dcterms:created xsi:type="dcterms:W3CDTF">2023-06-30T10:00:00Z</dcterms:created>
            </cp:coreProperties>"#;
        let tree = parse_body(&p("Text."), &[("docProps/core.xml", core.to_string())]);
        assert_eq!(tree.title.as_deref(), Some("Data Processing Addendum"));
        assert_eq!(tree.info.author.as_deref(), Some("Legal Team"));
        assert_eq!(
            tree.info.date.as_deref(),
            Some("2023-06-30"),
            "created first"
        );
        assert_eq!(tree.info.version.as_deref(), Some("1.2"));
        assert_eq!(tree.info.language.as_deref(), Some("de-DE"));
    }

    #[test]
    fn headings_resolve_through_styles_outline_levels_and_numbering() {
        let body = [
            styled("Title", "Master Services Agreement"),
            numbered(1, 0, Some("Heading1"), "Definitions"),
            styled("Clause", "Services"),
            "<w:p><w:pPr><w:outlineLvl w:val=\"2\"/></w:pPr><w:r><w:t>Outlined</w:t></w:r></w:p>"
                .to_string(),
            numbered(1, 0, Some("Heading1"), "Payment"),
            styled("Heading2", "Fees"),
        ]
        .concat();
        let tree = parse_body(&body, &with_styles_and_numbering());
        assert_eq!(tree.title.as_deref(), Some("Master Services Agreement"));
        let headings: Vec<(u8, String)> = tree
            .sections
            .iter()
            .skip(1)
            .map(|s| (s.level, s.heading()))
            .collect();
        assert_eq!(
            headings,
            [
                (1, "Article I Definitions".to_string()),
                (2, "1.1 Services".to_string()),
                (3, "Outlined".to_string()),
                (1, "Article II Payment".to_string()),
                (2, "2.1 Fees".to_string()),
            ]
        );
    }

    #[test]
    fn list_items_carry_depth_and_rendered_markers() {
        let body = [
            numbered(2, 0, None, "first"),
            numbered(2, 1, None, "bullet"),
            numbered(2, 0, None, "second"),
            "<w:p><w:pPr><w:numPr><w:ilvl w:val=\"0\"/><w:numId w:val=\"0\"/></w:numPr></w:pPr><w:r><w:t>unnumbered</w:t></w:r></w:p>".to_string(),
        ]
        .concat();
        let tree = parse_body(&body, &with_styles_and_numbering());
        let item = |depth, marker: &str, text: &str| BlockKind::ListItem {
            text: text.into(),
            depth,
            marker: Some(marker.into()),
        };
        assert_eq!(
            blocks(&tree),
            [
                item(0, "(a)", "first"),
                item(1, "-", "bullet"),
                item(0, "(b)", "second"),
                paragraph("unnumbered"),
            ]
        );
    }

    #[test]
    fn footnotes_are_appended_to_the_referencing_paragraph() {
        let reference = "<w:r><w:footnoteReference w:id=\"2\"/></w:r>";
        let body = format!(
            "<w:p><w:r><w:t>The fee is due in 30 days.</w:t></w:r>{reference}</w:p>\
             <w:p><w:r><w:t>Again.</w:t></w:r>{reference}</w:p>"
        );
        let footnotes = part(
            "footnotes",
            r#"<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>
               <w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:t>CONT</w:t></w:r></w:p></w:footnote>
               <w:footnote w:id="2"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> Calendar days.</w:t></w:r></w:p></w:footnote>"#,
        );
        let tree = parse_body(&body, &[("word/footnotes.xml", footnotes)]);
        assert_eq!(
            blocks(&tree),
            [
                paragraph("The fee is due in 30 days. [Footnote 1: Calendar days.]"),
                // A note is placed once, however often it is referenced.
                paragraph("Again."),
            ]
        );
    }

    #[test]
    fn tracked_changes_fields_and_hidden_text() {
        let body = r#"<w:p>
            <w:r><w:t xml:space="preserve">Pay </w:t></w:r>
            <w:del w:id="1" w:author="A"><w:r><w:delText>ten</w:delText></w:r></w:del>
            <w:ins w:id="2" w:author="A"><w:r><w:t>twenty</w:t></w:r></w:ins>
            <w:moveFrom w:id="3" w:author="A"><w:r><w:t>moved away</w:t></w:r></w:moveFrom>
            <w:r><w:t xml:space="preserve"> days, see page </w:t></w:r>
            <w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> PAGEREF _Ref1 \h </w:instrText></w:r>
            <w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>7</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>
            <w:r><w:rPr><w:vanish/></w:rPr><w:t>secret</w:t></w:r>
            <w:hyperlink w:anchor="x"><w:r><w:t>.</w:t></w:r></w:hyperlink>
          </w:p>"#;
        let tree = parse_body(body, &[]);
        assert_eq!(blocks(&tree), [paragraph("Pay twenty days, see page 7.")]);
    }

    #[test]
    fn merged_cells_repeat_over_the_grid() {
        let cell = |props: &str, text: &str| {
            format!("<w:tc><w:tcPr>{props}</w:tcPr><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:tc>")
        };
        let body = format!(
            "<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/><w:gridCol/></w:tblGrid>\
             <w:tr><w:trPr><w:tblHeader/></w:trPr>{}{}</w:tr>\
             <w:tr>{}{}{}</w:tr>\
             <w:tr>{}{}{}</w:tr>\
             <w:tr><w:trPr><w:gridBefore w:val=\"1\"/></w:trPr>{}{}</w:tr></w:tbl>",
            cell("<w:gridSpan w:val=\"2\"/>", "Region"),
            cell("", "Total"),
            cell("<w:vMerge w:val=\"restart\"/>", "North"),
            cell("", "Q1"),
            cell("", "10"),
            cell("<w:vMerge/>", ""),
            cell("", "Q2"),
            cell("", "20"),
            cell("", "late"),
            cell("", "30"),
        );
        let tree = parse_body(&body, &[]);
        let kinds = blocks(&tree);
        let [BlockKind::Table(table)] = kinds.as_slice() else {
            panic!("one table expected: {kinds:?}");
        };
        assert_eq!(table.header_rows, 1);
        assert_eq!(
            table.rows,
            [
                ["Region", "Region", "Total"],
                ["North", "Q1", "10"],
                ["North", "Q2", "20"],
                ["", "late", "30"],
            ]
        );
    }

    #[test]
    fn nested_tables_flatten_and_one_cell_frames_unwrap() {
        let inner = "<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/></w:tblGrid><w:tr><w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>b</w:t></w:r></w:p></w:tc></w:tr></w:tbl>";
        let body = format!(
            "<w:tbl><w:tblGrid><w:gridCol/></w:tblGrid><w:tr><w:tc>{}</w:tc></w:tr></w:tbl>\
             <w:tbl><w:tblGrid><w:gridCol/><w:gridCol/></w:tblGrid>\
             <w:tr><w:tc>{}</w:tc><w:tc>{}</w:tc></w:tr>\
             <w:tr><w:tc>{}</w:tc><w:tc>{inner}</w:tc></w:tr></w:tbl>",
            p("Boxed note."),
            p("k"),
            p("v"),
            p("nested")
        );
        let tree = parse_body(&body, &[]);
        let kinds = blocks(&tree);
        assert_eq!(kinds[0], paragraph("Boxed note."));
        let BlockKind::Table(table) = &kinds[1] else {
            panic!("table expected: {kinds:?}");
        };
        assert_eq!(table.rows, [["k", "v"], ["nested", "a b"]]);
    }

    #[test]
    fn text_boxes_alternate_content_checkboxes_and_math() {
        let textbox = |text: &str| format!("<w:txbxContent>{}</w:txbxContent>", p(text));
        let body = format!(
            "<w:p><w:r><mc:AlternateContent><mc:Choice Requires=\"wps\"><w:drawing><wps:txbx>{}</wps:txbx></w:drawing></mc:Choice>\
             <mc:Fallback><w:pict><v:textbox>{}</v:textbox></w:pict></mc:Fallback></mc:AlternateContent></w:r>\
             <w:r><w:t>Anchor.</w:t></w:r></w:p>\
             <w:p><w:sdt><w:sdtPr><w14:checkbox><w14:checked w14:val=\"1\"/></w14:checkbox></w:sdtPr>\
             <w:sdtContent><w:r><w:t>X</w:t></w:r></w:sdtContent></w:sdt><w:r><w:t>Approved</w:t></w:r></w:p>\
             <w:p><w:r><w:t xml:space=\"preserve\">Area </w:t></w:r><m:oMath><m:r><m:t>A=π</m:t></m:r>\
             <m:sSup><m:e><m:r><m:t>r</m:t></m:r></m:e><m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup></m:oMath></w:p>",
            textbox("In the box."),
            textbox("In the box.")
        );
        let tree = parse_body(&body, &[]);
        assert_eq!(
            blocks(&tree),
            [
                paragraph("In the box."),
                paragraph("Anchor."),
                paragraph("☒ Approved"),
                paragraph("Area $A=\\pi r^{2}$"),
            ]
        );
    }

    /// Named content controls and legacy form fields become fields of
    /// the section they stand in; their text stays in the body as well.
    #[test]
    fn form_fields_are_kept_by_name_in_their_section() {
        use crate::parse::{FieldValue, FormField};
        let control = |props: &str, content: &str| {
            format!(
                "<w:sdt><w:sdtPr>{props}</w:sdtPr><w:sdtContent>{content}</w:sdtContent></w:sdt>"
            )
        };
        let run = |text: &str| format!("<w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r>");
        let legacy = |data: &str, result: &str| {
            format!(
                "<w:r><w:fldChar w:fldCharType=\"begin\"><w:ffData>{data}</w:ffData></w:fldChar></w:r>\
                 <w:r><w:instrText> FORMTEXT </w:instrText></w:r>\
                 <w:r><w:fldChar w:fldCharType=\"separate\"/></w:r>{}\
                 <w:r><w:fldChar w:fldCharType=\"end\"/></w:r>",
                run(result)
            )
        };
        let body = [
            format!(
                "<w:p>{}{}</w:p>",
                run("Party: "),
                control("<w:alias w:val=\"Party name\"/><w:tag w:val=\"party\"/>", &run("Acme Corp"))
            ),
            styled("Heading1", "Term"),
            format!(
                "<w:p>{}{}</w:p>",
                control(
                    "<w:tag w:val=\"auto_renew\"/><w14:checkbox><w14:checked w14:val=\"1\"/></w14:checkbox>",
                    &run("X")
                ),
                run("Renews automatically")
            ),
            format!(
                "<w:p>{}</w:p>",
                control(
                    "<w:alias w:val=\"Start date\"/><w:showingPlcHdr/>",
                    &run("Click to enter a date.")
                )
            ),
            format!(
                "<w:p>{}{}</w:p>",
                run("Notice period: "),
                legacy("<w:name w:val=\"Notice\"/><w:textInput/>", "90 days")
            ),
            format!(
                "<w:p>{}{}</w:p>",
                legacy(
                    "<w:name w:val=\"Insured\"/><w:checkBox><w:default w:val=\"0\"/><w:checked/></w:checkBox>",
                    ""
                ),
                run("Insured")
            ),
            format!(
                "<w:p>{}</w:p>",
                legacy(
                    "<w:name w:val=\"Law\"/><w:ddList><w:result w:val=\"1\"/>\
                     <w:listEntry w:val=\"Delaware\"/><w:listEntry w:val=\"New York\"/></w:ddList>",
                    ""
                )
            ),
            // A building block (a table of contents) and an unnamed
            // control are content, not fields.
            control(
                "<w:docPartObj><w:docPartGallery w:val=\"Table of Contents\"/></w:docPartObj><w:alias w:val=\"TOC\"/>",
                &p("Contents")
            ),
            control("", &p("Plain wrapped text.")),
        ]
        .concat();
        let tree = parse_body(&body, &with_styles_and_numbering());
        let field = |name: &str, value: FieldValue| FormField::new(name, value).unwrap();
        let text = |t: &str| FieldValue::Text(t.into());
        assert_eq!(
            tree.sections[0].fields,
            [field("Party name", text("Acme Corp"))]
        );
        assert_eq!(tree.sections[1].title, "Term");
        assert_eq!(
            tree.sections[1].fields,
            [
                field("auto_renew", FieldValue::Checked(true)),
                field("Start date", text("")),
                field("Notice", text("90 days")),
                field("Insured", FieldValue::Checked(true)),
                field("Law", text("New York")),
            ]
        );
        let shown = blocks(&tree);
        assert!(shown.contains(&paragraph("Party: Acme Corp")), "{shown:?}");
        assert!(
            shown.contains(&paragraph("☒ Renews automatically")),
            "{shown:?}"
        );
        assert!(
            shown.contains(&paragraph("Notice period: 90 days")),
            "{shown:?}"
        );
    }

    #[test]
    fn code_paragraphs_merge_and_captions_are_kept() {
        let mono = |text: &str| {
            format!(
                "<w:p><w:r><w:rPr><w:rFonts w:ascii=\"Consolas\"/></w:rPr><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>"
            )
        };
        let body = [
            styled("SourceCode", "fn main() {"),
            styled("SourceCode", "}"),
            p("Prose."),
            mono("def f(x):"),
            mono("    return x"),
            p("More prose."),
            mono("A memo in a typewriter face."),
            styled("Caption", "Figure 1: A duck"),
        ]
        .concat();
        let tree = parse_body(&body, &with_styles_and_numbering());
        let code = |text: &str| BlockKind::Code {
            text: text.into(),
            language: None,
        };
        assert_eq!(
            blocks(&tree),
            [
                code("fn main() {\n}"),
                paragraph("Prose."),
                code("def f(x):\n    return x"),
                paragraph("More prose."),
                paragraph("A memo in a typewriter face."),
                BlockKind::Caption {
                    text: "Figure 1: A duck".into()
                },
            ]
        );
    }

    #[test]
    fn pages_follow_rendered_page_breaks() {
        let body = [
            p("one"),
            "<w:p><w:r><w:lastRenderedPageBreak/><w:t>two</w:t></w:r></w:p>".to_string(),
            "<w:p><w:r><w:br w:type=\"page\"/></w:r></w:p>".to_string(),
            p("still two: the explicit break was laid out where Word recorded it"),
        ]
        .concat();
        let tree = parse_body(&body, &[]);
        let pages: Vec<Option<u32>> = tree.blocks().map(|(_, b)| b.page).collect();
        assert_eq!(pages, [Some(1), Some(2), Some(2)]);

        let explicit = [
            p("one"),
            "<w:p><w:r><w:br w:type=\"page\"/><w:t>two</w:t><w:br w:type=\"page\"/><w:t>three</w:t></w:r></w:p>".to_string(),
            p("three"),
        ]
        .concat();
        let tree = parse_body(&explicit, &[]);
        let pages: Vec<Option<u32>> = tree.blocks().map(|(_, b)| b.page).collect();
        assert_eq!(
            pages,
            [Some(1), Some(2), Some(3)],
            "a paragraph keeps its first page"
        );

        let tree = parse_body(&[p("one"), p("two")].concat(), &[]);
        assert!(
            tree.blocks().all(|(_, b)| b.page.is_none()),
            "no page information"
        );
    }

    #[test]
    fn the_main_part_comes_from_the_package_relationships() {
        let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
            <Relationship Id="rId1" Type="http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument" Target="/content/main.xml"/></Relationships>"#;
        let bytes = package(&[
            ("_rels/.rels", rels.to_string()),
            ("content/main.xml", document(&p("Strict body"))),
        ]);
        let tree = parse(&bytes, &ParsingSpec::default()).unwrap();
        assert_eq!(blocks(&tree), [paragraph("Strict body")]);
    }

    #[test]
    fn bounds_are_enforced() {
        let bytes = package(&[("word/document.xml", document(&p(&"x".repeat(5000))))]);
        let spec = ParsingSpec {
            max_decompressed_bytes: 1000,
            ..ParsingSpec::default()
        };
        let err = parse(&bytes, &spec).unwrap_err();
        assert!(
            matches!(&err, ParseFailure::ZipBomb { part, limit: 1000 } if part == "word/document.xml"),
            "{err}"
        );

        let spec = ParsingSpec {
            max_archive_entries: 1,
            ..ParsingSpec::default()
        };
        let two = package(&[
            ("word/document.xml", document(&p("x"))),
            ("word/styles.xml", part("styles", "")),
        ]);
        assert!(matches!(
            parse(&two, &spec),
            Err(ParseFailure::TooManyEntries {
                entries: 2,
                limit: 1
            })
        ));

        let malformed = package(&[("word/document.xml", "<w:document><w:body>".to_string())]);
        assert!(matches!(
            parse(&malformed, &ParsingSpec::default()),
            Err(ParseFailure::Xml { .. })
        ));
    }
}
