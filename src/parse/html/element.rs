//! What an element means for the text of a document: a block, a heading, a
//! list, a table part, inline text — or noise to be dropped with everything
//! inside it.
//!
//! Noise is what a reader of the page never reads as content: scripts and
//! styles, form controls, page-level navigation, headers and footers,
//! hidden elements, cookie and consent banners. Skip links ("Skip to main
//! content", "Back to top") are recognised by their text instead, by the
//! walker (see [`is_skip_link`]).

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use super::list::Numbering;

/// The role of one element in the walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum ElementKind {
    /// Noise: left out with everything inside it.
    Dropped,
    /// `<title>`: the document's title, not body text.
    Title,
    /// Adds its text to the running paragraph (span, a, b, em, code, …).
    Inline,
    /// Inline, with its text set off by spaces: `<sup>`/`<sub>`, so that a
    /// footnote mark does not glue onto the word before it ("claim 12"
    /// rather than "claim12").
    Spaced,
    /// `<br>`.
    LineBreak,
    /// Ends the running paragraph where it starts and where it ends.
    Block,
    /// `<article>`, `<main>`, `<section>`, `<aside>`: a block inside which
    /// headers and footers belong to the content, not to the page.
    Sectioning,
    Heading(u8),
    /// `<ul>`, `<ol>`, `<menu>`, `<dir>`.
    List {
        numbering: Numbering,
        start: Option<i64>,
        reversed: bool,
    },
    ListItem {
        value: Option<i64>,
    },
    /// `<dl>`.
    DescriptionList,
    /// `<dt>`.
    Term,
    /// `<dd>`.
    Description,
    /// `<table>`; `layout` for `role="presentation"`/`"none"`, whose cells
    /// are read as ordinary blocks.
    Table {
        layout: bool,
    },
    /// `<thead>`, `<tbody>`, `<tfoot>`: rowspans end with their group.
    RowGroup {
        head: bool,
    },
    Row,
    Cell {
        header: bool,
        colspan: u32,
        rowspan: u32,
    },
    /// `<caption>` of a table.
    TableCaption,
    /// `<figcaption>`.
    FigureCaption,
    /// `<pre>`, with the language its class names, if any.
    Preformatted {
        language: Option<String>,
    },
    /// `<code>`: inline, but inside `<pre>` its class may name the language.
    Code {
        language: Option<String>,
    },
    /// `<a>`: inline, checked for skip-link text when it ends.
    Link,
}

/// HTML caps `colspan` at 1000 (HTML Standard, "processing model" of
/// tables).
const MAX_COLSPAN: u32 = 1000;
/// HTML caps `rowspan` at 65534; 0 means "to the end of the row group".
const MAX_ROWSPAN: u32 = 65534;

/// Classifies an element. `page_level` is true outside every `<article>`,
/// `<main>`, `<section>` and `<aside>`: a `<header>` or `<footer>` there
/// belongs to the page (logo, menus, legal links), not to the content.
pub(super) fn classify(name: &str, attrs: &Attributes<'_>, page_level: bool) -> ElementKind {
    if attrs.is_hidden() || attrs.is_consent_banner() {
        return ElementKind::Dropped;
    }
    // `role="navigation"` is kept: besides site menus it marks in-content
    // boxes of related links (Wikipedia's navboxes); the `<nav>` element is
    // what marks site navigation.
    if let Some(role) = attrs.role {
        match role.trim() {
            "banner" | "contentinfo" | "search" => return ElementKind::Dropped,
            "heading" => return ElementKind::Heading(attrs.heading_level()),
            _ => {}
        }
    }
    match name {
        "script" | "style" | "noscript" | "template" | "svg" | "iframe" | "frame" | "frameset"
        | "object" | "embed" | "applet" | "canvas" | "video" | "audio" | "picture" | "map"
        | "button" | "input" | "select" | "textarea" | "option" | "optgroup" | "datalist"
        | "output" | "progress" | "meter" | "label" | "nav" | "search" | "rt" | "rp" | "dialog" => {
            ElementKind::Dropped
        }
        "header" | "footer" if page_level => ElementKind::Dropped,
        "title" => ElementKind::Title,
        "br" => ElementKind::LineBreak,
        "sup" | "sub" => ElementKind::Spaced,
        "a" => ElementKind::Link,
        "code" => ElementKind::Code {
            language: attrs.language(),
        },
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
            let level = name.as_bytes().get(1).map_or(1, |d| d - b'0');
            ElementKind::Heading(level)
        }
        "article" | "main" | "section" | "aside" => ElementKind::Sectioning,
        "ul" | "menu" | "dir" => ElementKind::List {
            numbering: Numbering::Bullet,
            start: None,
            reversed: false,
        },
        "ol" => ElementKind::List {
            numbering: Numbering::from_type(attrs.list_type),
            start: attrs.start.and_then(parse_integer),
            reversed: attrs.reversed,
        },
        "li" => ElementKind::ListItem {
            value: attrs.value.and_then(parse_integer),
        },
        "dl" => ElementKind::DescriptionList,
        "dt" => ElementKind::Term,
        "dd" => ElementKind::Description,
        "table" => ElementKind::Table {
            layout: attrs
                .role
                .is_some_and(|r| matches!(r.trim(), "presentation" | "none")),
        },
        "thead" => ElementKind::RowGroup { head: true },
        "tbody" | "tfoot" => ElementKind::RowGroup { head: false },
        "tr" => ElementKind::Row,
        "td" | "th" => ElementKind::Cell {
            header: name == "th",
            colspan: span(attrs.colspan, MAX_COLSPAN),
            rowspan: match attrs.rowspan.and_then(parse_integer) {
                // `rowspan="0"` spans the rest of the row group.
                Some(0) => MAX_ROWSPAN,
                _ => span(attrs.rowspan, MAX_ROWSPAN),
            },
        },
        "caption" => ElementKind::TableCaption,
        "figcaption" => ElementKind::FigureCaption,
        "pre" | "listing" | "xmp" | "plaintext" => ElementKind::Preformatted {
            language: attrs.language(),
        },
        "address" | "blockquote" | "body" | "center" | "details" | "div" | "fieldset"
        | "figure" | "footer" | "form" | "header" | "hgroup" | "hr" | "html" | "head"
        | "legend" | "p" | "summary" | "colgroup" => ElementKind::Block,
        // Custom elements (`<app-card>`) are components, laid out as blocks.
        _ if name.contains('-') => ElementKind::Block,
        _ => ElementKind::Inline,
    }
}

/// The attributes the walk cares about, read in one pass (looking each up
/// by name would intern a new atom per lookup).
#[derive(Default)]
pub(super) struct Attributes<'a> {
    hidden: Option<&'a str>,
    aria_hidden: Option<&'a str>,
    style: Option<&'a str>,
    role: Option<&'a str>,
    aria_level: Option<&'a str>,
    class: Option<&'a str>,
    id: Option<&'a str>,
    colspan: Option<&'a str>,
    rowspan: Option<&'a str>,
    start: Option<&'a str>,
    list_type: Option<&'a str>,
    reversed: bool,
    value: Option<&'a str>,
    data_lang: Option<&'a str>,
    /// `<html lang>`.
    pub(super) lang: Option<&'a str>,
    /// A `<meta>`'s `name`, `property` (Open Graph), `http-equiv` and
    /// `content`.
    pub(super) meta_name: Option<&'a str>,
    pub(super) property: Option<&'a str>,
    pub(super) http_equiv: Option<&'a str>,
    pub(super) content: Option<&'a str>,
}

impl<'a> Attributes<'a> {
    /// Reads an element's attributes, given as (name, value) pairs with
    /// names in lower case (as the tokenizer gives them).
    pub(super) fn read(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut attrs = Attributes::default();
        for (name, value) in pairs {
            match name {
                "hidden" => attrs.hidden = Some(value),
                "aria-hidden" => attrs.aria_hidden = Some(value),
                "style" => attrs.style = Some(value),
                "role" => attrs.role = Some(value),
                "aria-level" => attrs.aria_level = Some(value),
                "class" => attrs.class = Some(value),
                "id" => attrs.id = Some(value),
                "colspan" => attrs.colspan = Some(value),
                "rowspan" => attrs.rowspan = Some(value),
                "start" => attrs.start = Some(value),
                "type" => attrs.list_type = Some(value),
                "reversed" => attrs.reversed = true,
                "value" => attrs.value = Some(value),
                "data-lang" | "data-language" => attrs.data_lang = Some(value),
                "lang" => attrs.lang = Some(value),
                "name" => attrs.meta_name = Some(value),
                "property" => attrs.property = Some(value),
                "http-equiv" => attrs.http_equiv = Some(value),
                "content" => attrs.content = Some(value),
                _ => {}
            }
        }
        attrs
    }

    /// `hidden` (except `hidden="until-found"`, whose content the browser
    /// reveals to find-in-page), `aria-hidden="true"`, or an inline style
    /// with `display: none` or `visibility: hidden`.
    fn is_hidden(&self) -> bool {
        if self
            .hidden
            .is_some_and(|v| !v.trim().eq_ignore_ascii_case("until-found"))
        {
            return true;
        }
        if self
            .aria_hidden
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        {
            return true;
        }
        self.style.is_some_and(style_hides)
    }

    /// Cookie and consent banners, known by their id or class names.
    fn is_consent_banner(&self) -> bool {
        self.id
            .into_iter()
            .chain(self.class.into_iter().flat_map(str::split_ascii_whitespace))
            .any(names_consent_banner)
    }

    /// `aria-level`, clamped to 1–6; ARIA's default for a heading is 2.
    fn heading_level(&self) -> u8 {
        self.aria_level
            .and_then(parse_integer)
            .map_or(2, |level| level.clamp(1, 6) as u8)
    }

    /// The language a code block's class or `data-lang` names:
    /// `language-rust`, `lang-rust`, `highlight-rust`.
    fn language(&self) -> Option<String> {
        let from_class = self
            .class
            .into_iter()
            .flat_map(str::split_ascii_whitespace)
            .find_map(|c| {
                ["language-", "lang-", "highlight-source-", "highlight-"]
                    .iter()
                    .find_map(|prefix| c.strip_prefix(prefix))
                    .filter(|l| !l.is_empty())
            });
        from_class
            .or(self.data_lang.map(str::trim))
            .filter(|l| !l.is_empty())
            .map(str::to_string)
    }
}

/// Whether an inline style hides its element.
fn style_hides(style: &str) -> bool {
    // Most styles say neither word: no need to normalise them.
    if !contains_ignoring_case(style, "none") && !contains_ignoring_case(style, "hidden") {
        return false;
    }
    let compact: String = style
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    compact.contains("display:none") || compact.contains("visibility:hidden")
}

/// Names that mark a consent banner wherever they occur in an id or class
/// name.
const ALWAYS_BANNER: &[&str] = &[
    "consent",
    "gdpr",
    "onetrust",
    "cookiebot",
    "cookielaw",
    "cookie-law",
    "cc-banner",
    "cc-window",
    "cc_banner",
];

/// Words that make a "cookie" name a banner's.
const BANNER_WORDS: &[&str] = &[
    "banner",
    "notice",
    "bar",
    "popup",
    "modal",
    "message",
    "alert",
    "policy",
    "dialog",
    "overlay",
    "wall",
    "notification",
    "warning",
    "disclaimer",
    "accept",
];

/// [`ALWAYS_BANNER`] and then "cookie", found in one pass ignoring ASCII
/// case: this runs on the id and class names of every element.
static BANNER_NAMES: LazyLock<AhoCorasick> = LazyLock::new(|| {
    let patterns = ALWAYS_BANNER.iter().chain(&["cookie"]);
    match AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(patterns)
    {
        Ok(automaton) => automaton,
        Err(error) => panic!("invalid banner names: {error}"),
    }
});

/// Whether one id or class name marks a cookie or consent banner. "cookie"
/// alone is not enough (a recipe site's `cookie-list` is content); it must
/// come with a banner word, or be the whole name.
fn names_consent_banner(name: &str) -> bool {
    let mut cookie = false;
    for found in BANNER_NAMES.find_overlapping_iter(name) {
        if found.pattern().as_usize() < ALWAYS_BANNER.len() {
            return true;
        }
        cookie = true;
    }
    cookie
        && (name.eq_ignore_ascii_case("cookie")
            || name.eq_ignore_ascii_case("cookies")
            || BANNER_WORDS.iter().any(|w| contains_ignoring_case(name, w)))
}

/// `haystack.contains(needle)` ignoring ASCII case, without allocating
/// (it runs on the class names of every element).
fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    let needle = needle.as_bytes();
    needle.is_empty()
        || haystack
            .as_bytes()
            .windows(needle.len())
            .any(|window| window.eq_ignore_ascii_case(needle))
}

/// Parses an integer attribute the way HTML does: leading whitespace, an
/// optional sign, then digits; anything after the digits is ignored.
fn parse_integer(value: &str) -> Option<i64> {
    let value = value.trim_start();
    let (negative, digits) = match value.as_bytes().first() {
        Some(b'-') => (true, value.get(1..)?),
        Some(b'+') => (false, value.get(1..)?),
        _ => (false, value),
    };
    let end = digits
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    let number: i64 = digits.get(..end)?.parse().ok()?;
    Some(if negative { -number } else { number })
}

/// A `colspan`/`rowspan` value: 1 when absent or invalid, at most `max`.
fn span(value: Option<&str>, max: u32) -> u32 {
    value
        .and_then(parse_integer)
        .map_or(1, |n| n.clamp(1, i64::from(max)) as u32)
}

/// Whether a link's text is a "skip to content"-style jump, which reads as
/// noise in the extracted text. Compares the letters only, so arrows and
/// punctuation around the words do not matter.
pub(super) fn is_skip_link(text: &str) -> bool {
    if text.len() > 48 {
        return false;
    }
    let words: String = text
        .chars()
        .filter(|c| c.is_alphabetic() || c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    let words = words.split_whitespace().collect::<Vec<_>>().join(" ");
    const SKIP_LINKS: &[&str] = &[
        "skip to content",
        "skip to main content",
        "skip to main",
        "skip to navigation",
        "skip to main navigation",
        "skip navigation",
        "skip to search",
        "skip to footer",
        "skip to primary content",
        "jump to content",
        "jump to navigation",
        "jump to search",
        "toggle navigation",
        "back to top",
        "go to top",
        "return to top",
        "scroll to top",
        "to top",
        "top of page",
    ];
    SKIP_LINKS.contains(&words.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_like_html() {
        assert_eq!(parse_integer(" 42"), Some(42));
        assert_eq!(parse_integer("3px"), Some(3));
        assert_eq!(parse_integer("-2"), Some(-2));
        assert_eq!(parse_integer("x"), None);
        assert_eq!(parse_integer("99999999999999999999999"), None);
        assert_eq!(span(Some("100000"), MAX_COLSPAN), 1000);
        assert_eq!(span(Some("-4"), MAX_COLSPAN), 1);
        assert_eq!(span(None, MAX_COLSPAN), 1);
    }

    #[test]
    fn hidden_styles_are_recognised() {
        assert!(style_hides("color: red; DISPLAY : none"));
        assert!(style_hides("visibility:hidden"));
        assert!(!style_hides("display: block"));
    }

    #[test]
    fn consent_banners_but_not_cookie_recipes() {
        assert!(names_consent_banner("cookie-banner"));
        assert!(names_consent_banner("CookieConsent"));
        assert!(names_consent_banner("gdpr-notice"));
        assert!(names_consent_banner("cc-window"));
        assert!(names_consent_banner("cookies"));
        assert!(!names_consent_banner("cookie-recipes"));
        assert!(!names_consent_banner("content"));
    }

    #[test]
    fn skip_links_are_recognised_by_text() {
        assert!(is_skip_link("Skip to main content"));
        assert!(is_skip_link(" ↑ Back to top "));
        assert!(is_skip_link("Toggle navigation"));
        assert!(!is_skip_link("Skip to the good part of the contract"));
        assert!(!is_skip_link("Top"));
    }
}
