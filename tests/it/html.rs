//! The HTML parser on whole pages: a realistic page keeps its content and
//! loses its chrome, Wikipedia's "Duck" article parses, and pathological
//! nesting is refused before html5ever sees it.

use crate::common;

use std::path::PathBuf;
use std::time::Instant;

use trellis::parse::{BlockKind, Format, ParseFailure, parse_bytes, parse_file};
use trellis::spec::ParsingSpec;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/html")
        .join(name)
}

#[test]
fn a_corporate_page_keeps_its_content_and_drops_its_chrome() {
    let tree = parse_file(&fixture("policy_page.html"), &ParsingSpec::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        tree.title.as_deref(),
        Some("Travel Expense Policy | Contoso Intranet")
    );
    let headings: Vec<String> = tree.sections.iter().skip(1).map(|s| s.heading()).collect();
    assert_eq!(
        headings,
        [
            "Travel Expense Policy",
            "1. Scope",
            "2. Allowances",
            "3. Claims"
        ]
    );
    for chrome in [
        "Skip to main content",
        "Toggle navigation",
        "Finance\n",
        "Search",
        "cookies",
        "Accept all",
        "Draft note",
        "not text",
        "All rights reserved",
        "Back to top",
        "Contoso logo",
    ] {
        assert!(
            !tree.text.contains(chrome),
            "{chrome:?} left in:\n{}",
            tree.text
        );
    }
    for content in [
        "Finance department, effective 1 January 2024",
        "This policy applies to all employees of Contoso Ltd. and its subsidiaries",
        "Figure 1. How a claim is approved.",
        "Policy owner: Group Finance.",
        "expenses submit --trip 2024-017\nexpenses status --trip 2024-017",
    ] {
        assert!(
            tree.text.contains(content),
            "{content:?} missing:\n{}",
            tree.text
        );
    }

    let table = tree
        .blocks()
        .find_map(|(_, b)| match &b.kind {
            BlockKind::Table(t) => Some(t),
            _ => None,
        })
        .expect("the allowance table");
    assert_eq!(
        table.caption.as_deref(),
        Some("Daily allowances by region (EUR)")
    );
    assert_eq!(table.header_rows, 2);
    assert_eq!(
        table.column_labels(),
        ["Region", "Allowance / Meals", "Allowance / Lodging"]
    );
    assert_eq!(table.rows[4], ["Rest of world", "On request", "On request"]);

    let items: Vec<(u8, Option<&str>, &str)> = tree
        .blocks()
        .filter_map(|(_, b)| match &b.kind {
            BlockKind::ListItem {
                text,
                depth,
                marker,
            } => Some((*depth, marker.as_deref(), text.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        items,
        [
            (0, Some("1."), "Submit receipts within 30 days."),
            (0, Some("2."), "Attach approval for:"),
            (1, Some("-"), "flights over 1,000 EUR;"),
            (1, Some("-"), "hotels over the allowance."),
        ]
    );
}

#[test]
fn wikipedia_duck_parses_within_the_default_depth() {
    let path = common::eval_dir().join("docling/html/sources/wiki_duck.html");
    let tree = parse_file(&path, &ParsingSpec::default()).unwrap_or_else(|e| panic!("{e}"));
    assert!(tree.sections.iter().any(|s| s.title == "Etymology"));
    assert!(!tree.text.contains("Privacy policy"), "page footer kept");
    assert!(!tree.text.contains("What links here"), "page tools kept");
}

/// Pathological nesting is refused by the linear pre-scan: html5ever alone
/// takes close to a minute on 100,000 nested `<div>`s (quadratic in depth).
/// The bound below is only a guard against that path coming back; the
/// measured time is printed.
#[test]
fn deep_nesting_fails_fast() {
    let spec = ParsingSpec::default();
    for (name, open) in [("div", "<div>"), ("b", "<b>"), ("div/", "<div/>")] {
        let html = format!("<html><body>{}deep</body></html>", open.repeat(100_000));
        let started = Instant::now();
        let result = parse_bytes(html.as_bytes(), Format::Html, &spec);
        let elapsed = started.elapsed();
        println!("100,000 nested <{name}>: refused in {elapsed:?}");
        assert!(
            matches!(result, Err(ParseFailure::TooDeep { limit: 512 })),
            "<{name}>: {result:?}"
        );
        assert!(elapsed.as_secs() < 10, "<{name}> took {elapsed:?}");
    }
}

mod never_panics {
    use proptest::prelude::*;
    use trellis::parse::{Format, ParseFailure, TreeBuilder, html};
    use trellis::spec::ParsingSpec;

    /// Pieces of HTML that exercise every branch of the walk when shuffled:
    /// unbalanced tags, spans, lists, tables inside everything, raw text.
    const TOKENS: &[&str] = &[
        "<div>",
        "</div>",
        "<p>",
        "</p>",
        "<table>",
        "</table>",
        "<tr>",
        "</tr>",
        "<td colspan=3>",
        "<td rowspan=0>",
        "<th rowspan=2>",
        "</td>",
        "<thead>",
        "</thead>",
        "<caption>",
        "<ul>",
        "<ol start=-3 type=a reversed>",
        "<li value=9>",
        "</li>",
        "</ol>",
        "<dl>",
        "<dt>",
        "<dd>",
        "<pre>",
        "</pre>",
        "<code class=language-x>",
        "<br>",
        "<h2>",
        "</h2>",
        "<a href=#>",
        "</a>",
        "Skip to content",
        "<sup>",
        "</sup>",
        "<!--",
        "-->",
        "<script>",
        "</script>",
        "<figure>",
        "<figcaption>",
        "<nav>",
        "<header>",
        "<main>",
        "<svg>",
        "<x/>",
        "<title>",
        "text",
        " ",
        "\n",
        "&amp;",
        "\u{ad}",
        "\u{0}",
        "é",
        "<span hidden>",
        "<div style='display:none'>",
        "<div class=cookie-banner>",
    ];

    proptest! {
        #[test]
        fn any_tag_soup_parses_or_fails_cleanly(
            picks in proptest::collection::vec(0..TOKENS.len(), 0..300)
        ) {
            let soup: String = picks.iter().filter_map(|&i| TOKENS.get(i).copied()).collect();
            let spec = ParsingSpec { max_nesting_depth: 16, ..ParsingSpec::default() };
            // The one way a soup of these tokens may fail is too deep a
            // nesting; a tree that parses holds no empty block.
            let clean = |outcome: Result<(), ParseFailure>| match outcome {
                Ok(()) => Ok(()),
                Err(ParseFailure::TooDeep { limit: 16 }) => Ok(()),
                Err(other) => Err(TestCaseError::fail(format!("{other} for {soup:?}"))),
            };
            let no_empty_block = |tree: &trellis::parse::DocumentTree| {
                tree.blocks().all(|(_, b)| b.kind.text().is_none_or(|t| !t.trim().is_empty()))
            };
            clean(html::parse(&soup, &spec).map(|tree| assert!(no_empty_block(&tree), "{soup:?}")))?;
            let mut builder = TreeBuilder::new(Format::Markdown);
            clean(html::parse_fragment_into(&mut builder, &soup, &spec))?;
            prop_assert!(no_empty_block(&builder.finish()), "{:?}", soup);
        }
    }
}
