//! HTML → [`DocumentTree`].
//!
//! Three steps, each bounded:
//!
//! 1. `depth`: a linear pre-scan refuses inputs nesting deeper than
//!    `parsing.maxNestingDepth` before html5ever (whose tree builder is
//!    quadratic in depth) sees them;
//! 2. the tree a browser would build: for a whole document that needs no
//!    repair, `stream` reads it token by token (`tokens`) and hands the
//!    elements to the walk as it goes, with no tree in memory; otherwise
//!    (implied closings that re-open elements, misnesting, foreign content,
//!    fragments) html5ever, through `scraper`, builds the tree with every
//!    repair, in an arena: no recursive drop. Both give the walk the same
//!    elements in the same order;
//! 3. `walk` reads the elements in order into headings and blocks:
//!    headings (`h1`–`h6`, `role="heading"`), paragraphs, lists with their
//!    markers and depth, description lists, tables as grids (see `table`),
//!    figure captions and code blocks; noise (scripts, navigation, page
//!    headers and footers, form controls, hidden elements, cookie banners,
//!    skip links) is left out (see `element`).
//!
//! Where this reading departs from Docling's (whose conversions are the
//! fidelity reference), it does so for retrieval: `<nav>` menus, buttons
//! and form labels are dropped rather than kept as text, image `alt` text
//! is not body text, text before the first heading is content (Docling
//! files it as furniture), and inline elements are not padded with spaces
//! (`<code>x</code>y` reads "xy", as a browser shows it) except `<sup>` and
//! `<sub>`, whose footnote marks would otherwise glue onto words.

mod depth;
mod element;
mod list;
mod stream;
mod table;
mod tokens;
mod walk;

use scraper::Html;

use super::{BlockKind, DocumentTree, Format, ParseFailure, TreeBuilder};
use crate::spec::ParsingSpec;
use walk::{Extracted, Piece, WalkOptions};

/// Parses an HTML document. `<title>` names the document; `<html lang>`
/// and `<meta>` give its metadata.
pub fn parse(text: &str, spec: &ParsingSpec) -> Result<DocumentTree, ParseFailure> {
    let mut builder = TreeBuilder::new(Format::Html);
    let mut extracted = extract(text, spec, Source::Document, 0)?;
    if let Some(title) = &extracted.title {
        builder.set_title(title);
    }
    builder.set_info(std::mem::take(&mut extracted.info));
    replay(extracted, &mut builder);
    Ok(builder.finish())
}

/// Parses an HTML fragment (an HTML block inside Markdown, say) and appends
/// its headings and blocks to `builder`. A `<title>` in a fragment is not
/// the document's title and is ignored.
pub fn parse_fragment_into(
    builder: &mut TreeBuilder,
    html: &str,
    spec: &ParsingSpec,
) -> Result<(), ParseFailure> {
    let extracted = extract(html, spec, Source::Fragment, builder.table_cells())?;
    replay(extracted, builder);
    Ok(())
}

/// Whether the text is a whole document or a fragment of a body.
#[derive(Clone, Copy)]
enum Source {
    Document,
    Fragment,
}

fn extract(
    html: &str,
    spec: &ParsingSpec,
    source: Source,
    table_cells_used: u64,
) -> Result<Extracted, ParseFailure> {
    // html5ever's buffers index with u32.
    if u32::try_from(html.len()).is_err() {
        return Err(ParseFailure::TooLarge {
            size: html.len() as u64,
            limit: u64::from(u32::MAX),
        });
    }
    depth::check_nesting(html, spec.max_nesting_depth)?;
    let options = WalkOptions {
        max_depth: spec.max_nesting_depth,
        table_cells: spec.max_table_cells.saturating_sub(table_cells_used),
        read_title: matches!(source, Source::Document),
    };
    let dom = match source {
        Source::Document => {
            if let Some(extracted) = stream::read(html, &options) {
                return Ok(extracted);
            }
            Html::parse_document(html)
        }
        Source::Fragment => {
            if let Some(extracted) = stream::read_fragment(html, &options) {
                return Ok(extracted);
            }
            Html::parse_fragment(html)
        }
    };
    walk::walk(dom.tree.root(), &options)
}

/// Appends what the walk found to a builder.
fn replay(extracted: Extracted, builder: &mut TreeBuilder) {
    for warning in extracted.warnings {
        builder.warn(warning);
    }
    for piece in extracted.pieces {
        match piece {
            Piece::Heading { level, text } => builder.heading(level, &text),
            Piece::Block(BlockKind::Paragraph { text }) => builder.paragraph(&text),
            Piece::Block(BlockKind::ListItem {
                text,
                depth,
                marker,
            }) => builder.list_item(depth, marker.as_deref(), &text),
            Piece::Block(BlockKind::Caption { text }) => builder.caption(&text),
            Piece::Block(BlockKind::Code { text, language }) => {
                builder.code(language.as_deref(), &text);
            }
            Piece::Block(BlockKind::Table(table)) => builder.table(table),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::test_support::{blocks, headings, item, tables, texts};

    fn parse_html(html: &str) -> DocumentTree {
        match parse(html, &ParsingSpec::default()) {
            Ok(tree) => tree,
            Err(e) => panic!("parse failed: {e}"),
        }
    }

    #[test]
    fn lang_and_meta_give_the_documents_metadata() {
        let html = "<!DOCTYPE html><html lang='en-US'><head><title>Report</title>\
             <meta name='Author' content=' Jane  Doe '>\
             <meta property='article:published_time' content='2024-03-01T08:00:00Z'>\
             <meta name='version' content='3'><meta name='description' content='x'>\
             </head><body><p>Text.</p></body></html>";
        // Both paths, the streaming one and html5ever's tree.
        for html in [html.to_string(), format!("{html}<b><i>x</b></i>")] {
            let tree = parse_html(&html);
            assert_eq!(tree.info.author.as_deref(), Some("Jane Doe"));
            assert_eq!(tree.info.date.as_deref(), Some("2024-03-01"));
            assert_eq!(tree.info.version.as_deref(), Some("3"));
            assert_eq!(tree.info.language.as_deref(), Some("en-US"));
        }
        // A fragment's meta is not its document's.
        let mut builder = TreeBuilder::new(Format::Markdown);
        parse_fragment_into(
            &mut builder,
            "<meta name='author' content='X'><p>y</p>",
            &ParsingSpec::default(),
        )
        .unwrap();
        assert!(builder.finish().info.is_empty());
    }

    #[test]
    fn headings_paragraphs_and_title() {
        let tree = parse_html(
            "<html><head><title> Annual  Report </title></head><body>\
             <h1>Report</h1><p>Intro <b>bold</b> and <a href='#'>a link</a>.</p>\
             <h2>2.1 Revenue</h2><div>Direct div text</div>\
             <div role='heading' aria-level='3'>Aria heading</div>\
             <blockquote>Quoted<br>line</blockquote></body></html>",
        );
        assert_eq!(tree.title.as_deref(), Some("Annual Report"));
        assert_eq!(
            headings(&tree),
            vec![
                (1, "Report".to_string()),
                (2, "2.1 Revenue".to_string()),
                (3, "Aria heading".to_string()),
            ]
        );
        assert_eq!(
            texts(&tree),
            vec!["Intro bold and a link.", "Direct div text", "Quoted line"]
        );
    }

    #[test]
    fn double_line_breaks_separate_paragraphs() {
        let tree = parse_html("<p>First line<br>same paragraph<br><br>Second paragraph</p>");
        assert_eq!(
            texts(&tree),
            vec!["First line same paragraph", "Second paragraph"]
        );
    }

    #[test]
    fn footnote_marks_are_set_off() {
        let tree = parse_html("<p>Water is H<sub>2</sub>O, see note<sup>12</sup>.</p>");
        assert_eq!(texts(&tree), vec!["Water is H 2 O, see note 12 ."]);
    }

    #[test]
    fn nested_lists_have_depths_and_markers() {
        let tree = parse_html(
            "<ul><li>Asia<ul><li>China</li><li>Japan</li></ul></li><li>Europe</li></ul>\
             <ol start='42'><li>forty-two</li><li>forty-three</li></ol>\
             <ol type='a'><li>alpha<ol type='I'><li>one</li><li>two</li></ol>tail</li></ol>\
             <ol reversed><li>three</li><li>two</li><li value='9'>nine</li></ol>",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                item(0, "-", "Asia"),
                item(1, "-", "China"),
                item(1, "-", "Japan"),
                item(0, "-", "Europe"),
                item(0, "42.", "forty-two"),
                item(0, "43.", "forty-three"),
                item(0, "a.", "alpha tail"),
                item(1, "I.", "one"),
                item(1, "II.", "two"),
                item(0, "3.", "three"),
                item(0, "2.", "two"),
                item(0, "9.", "nine"),
            ]
        );
    }

    #[test]
    fn blocks_inside_list_items_join_the_item() {
        let tree = parse_html(
            "<ol><li>Item with <b>bold</b> text <p>First block</p><p>Second block</p></li>\
             <li><span>Step</span><div><div><ul><li>Detail</li></ul></div></div></li></ol>",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                item(0, "1.", "Item with bold text First block Second block"),
                item(0, "2.", "Step"),
                item(1, "-", "Detail"),
            ]
        );
    }

    #[test]
    fn description_lists_nest_descriptions_under_terms() {
        let tree = parse_html(
            "<dl><dt>Coffee</dt><dd>Black hot drink</dd><dt>Soda</dt>\
             <dd><dl><dt>Cola</dt><dd>Brown</dd></dl></dd></dl>",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                item(0, "-", "Coffee"),
                item(1, "-", "Black hot drink"),
                item(0, "-", "Soda"),
                item(1, "-", "Cola"),
                item(2, "-", "Brown"),
            ]
        );
    }

    #[test]
    fn spans_expand_and_thead_marks_headers() {
        let tree = parse_html(
            "<table><caption>Quarterly <i>results</i></caption>\
             <thead><tr><th>Region</th><th colspan='2'>Revenue</th></tr></thead>\
             <tbody><tr><td rowspan='2'>North</td><td>1</td><td>2</td></tr>\
             <tr><td colspan='2'>3</td></tr></tbody></table>",
        );
        let [table] = tables(&tree).try_into().expect("one table");
        assert_eq!(table.caption.as_deref(), Some("Quarterly results"));
        assert_eq!(table.header_rows, 1);
        assert_eq!(
            table.rows,
            vec![
                vec!["Region", "Revenue", "Revenue"],
                vec!["North", "1", "2"],
                vec!["North", "3", "3"],
            ]
        );
    }

    #[test]
    fn leading_th_rows_are_headers_without_thead() {
        let tree = parse_html(
            "<table><tr><th>Name</th><th>Qty</th></tr><tr><th>Total</th><td>3</td></tr></table>",
        );
        let [table] = tables(&tree).try_into().expect("one table");
        assert_eq!(table.header_rows, 1);
        assert_eq!(table.rows.len(), 2);
    }

    #[test]
    fn absurd_spans_are_clamped() {
        let tree = parse_html(
            "<table><tr><td colspan='99999999'>wide</td></tr>\
             <tr><td rowspan='0'>down</td><td>x</td></tr><tr><td>y</td></tr></table>",
        );
        let [table] = tables(&tree).try_into().expect("one table");
        assert_eq!(table.columns(), 1000);
        assert_eq!(table.rows.len(), 3);
        assert_eq!(table.rows[2][..2], ["down", "y"]);
    }

    #[test]
    fn nested_tables_and_lists_flatten_into_cells() {
        let tree = parse_html(
            "<table><tr><td>A</td><td>B</td></tr><tr><td>\
             <table><tr><td>A1</td><td>B1</td></tr></table></td>\
             <td><ul><li>one</li><li>two</li></ul><p>after</p></td></tr></table>",
        );
        let [table] = tables(&tree).try_into().expect("one table");
        assert_eq!(
            table.rows,
            vec![vec!["A", "B"], vec!["A1 B1", "one two after"]]
        );
    }

    #[test]
    fn figure_captions_and_images() {
        let tree = parse_html(
            "<figure><img src='x.png' alt='Alt text'><figcaption>Figure 1: Growth</figcaption>\
             </figure>",
        );
        assert_eq!(
            blocks(&tree),
            vec![BlockKind::Caption {
                text: "Figure 1: Growth".into()
            }]
        );
    }

    #[test]
    fn code_blocks_keep_whitespace_and_language() {
        let tree = parse_html(
            "<p>Run <code>cargo test</code>:</p>\
             <pre><code class='language-rust'>fn main() {\n    println!(\"hi\");\n}\n</code></pre>\
             <pre>  plain\n    x<sup>2</sup><br>indented</pre>",
        );
        assert_eq!(
            blocks(&tree),
            vec![
                BlockKind::Paragraph {
                    text: "Run cargo test:".into()
                },
                BlockKind::Code {
                    text: "fn main() {\n    println!(\"hi\");\n}".into(),
                    language: Some("rust".into()),
                },
                BlockKind::Code {
                    text: "  plain\n    x2\nindented".into(),
                    language: None,
                },
            ]
        );
    }

    #[test]
    fn navigation_scripts_and_banners_are_dropped() {
        let tree = parse_html(
            "<body><a class='skip' href='#main'>Skip to main content</a>\
             <header><nav><ul><li>Home</li><li>About</li></ul></nav><p>Site slogan</p></header>\
             <div id='cookie-banner'><p>We use cookies.</p><button>Accept</button></div>\
             <div class='consent-modal'>Manage consent</div>\
             <script>var x = '<p>not text</p>';</script><style>p{}</style>\
             <noscript>Enable JavaScript</noscript><template><p>later</p></template>\
             <main><article><header><h1>Article title</h1></header>\
             <p>Body text.</p><form><label for='q'>Search</label><input id='q'>\
             <select><option>One</option></select><textarea>typed</textarea></form>\
             <svg><text>chart label</text></svg>\
             <footer><p>Article footnote.</p></footer></article></main>\
             <a href='#top'>Back to top ↑</a>\
             <footer><p>Copyright 2024</p></footer></body>",
        );
        assert_eq!(headings(&tree), vec![(1, "Article title".to_string())]);
        assert_eq!(texts(&tree), vec!["Body text.", "Article footnote."]);
    }

    #[test]
    fn hidden_elements_are_dropped() {
        let tree = parse_html(
            "<p>Visible</p><p hidden>Hidden attribute</p>\
             <p aria-hidden='true'>Aria hidden</p>\
             <div style='color:red; display: none'>Display none</div>\
             <span style='visibility:hidden'>Invisible</span>\
             <div hidden='until-found'>Found on search</div>",
        );
        assert_eq!(texts(&tree), vec!["Visible", "Found on search"]);
    }

    #[test]
    fn fragments_append_to_an_existing_builder() {
        let spec = ParsingSpec::default();
        let mut builder = TreeBuilder::new(Format::Markdown);
        builder.heading(1, "Markdown heading");
        builder.paragraph("Markdown text.");
        let fragment = "<title>Not the title</title><table><tr><th>K</th><th>V</th></tr>\
                        <tr><td>a</td><td>1</td></tr></table><ul><li>raw item</li></ul>";
        if let Err(e) = parse_fragment_into(&mut builder, fragment, &spec) {
            panic!("fragment failed: {e}");
        }
        let tree = builder.finish();
        assert_eq!(tree.title.as_deref(), Some("Markdown heading"));
        assert_eq!(tree.sections.len(), 2);
        let kinds = blocks(&tree);
        assert_eq!(kinds.len(), 3);
        assert!(matches!(&kinds[1], BlockKind::Table(t) if t.rows.len() == 2));
        assert_eq!(kinds[2], item(0, "-", "raw item"));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let spec = ParsingSpec {
            max_nesting_depth: 64,
            ..ParsingSpec::default()
        };
        let deep = "<div>".repeat(65);
        assert!(matches!(
            parse(&deep, &spec),
            Err(ParseFailure::TooDeep { limit: 64 })
        ));
        let shallow = format!("{}text", "<div>".repeat(40));
        assert!(parse(&shallow, &spec).is_ok());
    }

    #[test]
    fn the_walk_is_bounded_even_when_the_estimate_is_fooled() {
        // `<table>` inside `<td>` nests for the parser, but the pre-scan
        // does not count the optional-end `td`: the walk's own bound holds.
        let spec = ParsingSpec {
            max_nesting_depth: 30,
            ..ParsingSpec::default()
        };
        let html = "<table><tr><td>".repeat(20);
        assert!(matches!(
            parse(&html, &spec),
            Err(ParseFailure::TooDeep { limit: 30 })
        ));
    }

    #[test]
    fn malformed_input_never_panics() {
        let spec = ParsingSpec::default();
        for html in [
            "",
            "<",
            "<<<>>>",
            "<table><td colspan=5 rowspan=9>",
            "<ol start=-5 type=i><li>x<li value=0>y",
            "</p></li></table></div>",
            "<pre><code class='language-'>",
            "\u{0}\u{1}\u{fffd}<b>\u{0}</b>",
            "<dl><dd>orphan<dt>term",
            "<caption>stray</caption><tr><td>cell",
            "<li>orphan item</li>",
            "<h1><table><tr><td>in heading</td></tr></table></h1>",
        ] {
            let _ = parse(html, &spec);
            let mut builder = TreeBuilder::new(Format::Markdown);
            let _ = parse_fragment_into(&mut builder, html, &spec);
        }
    }

    #[test]
    fn table_cell_budget_bounds_expansion() {
        let spec = ParsingSpec {
            max_table_cells: 50,
            ..ParsingSpec::default()
        };
        let html = "<table><tr><td colspan=1000>x</td></tr></table>".repeat(3);
        let tree = match parse(&html, &spec) {
            Ok(tree) => tree,
            Err(e) => panic!("{e}"),
        };
        let cells: usize = tables(&tree)
            .iter()
            .map(|t| t.rows.len() * t.columns())
            .sum();
        assert!(cells <= 50 + 3, "{cells} cells");
        assert!(tree.warnings.iter().any(|w| w.contains("maxTableCells")));
    }
}
