//! The streaming path: HTML that needs no repair, read token by token
//! straight into the walk, without html5ever building a tree.
//!
//! Most documents are written so that the tree a browser builds is the
//! nesting of their tags, plus the elements it implies. For those, this
//! module follows the HTML Standard's tree construction for the steps it
//! reproduces — the implied `<html>`, `<head>` and `<body>`, head content,
//! tables with their implied row groups, rows and column groups, the open
//! `<p>`, list item, term or cell that a new block, item or cell closes,
//! the `<p>`, item or cell an enclosing end tag closes, raw text,
//! `<pre>`'s leading newline — and feeds the walk the elements it would
//! have met in html5ever's tree, in the same order.
//!
//! Anything where the tree builder would move or re-open elements makes it
//! give up: an end tag that would close more than those, formatting
//! elements closed out of order or with their block, a block opening in a
//! `<p>` that is not the current element, text in a table outside its
//! cells, nested forms or links, foreign content, legacy character
//! references, and the parser states it does not model (`<textarea>`,
//! `<select>`, `<template>`…). [`super::extract`] then parses the document
//! with html5ever, so what a document yields never depends on which path
//! read it; a differential test holds the two equal wherever this one
//! accepts. Fragments (HTML blocks in Markdown) take the same path,
//! starting in the body, against html5ever's fragment parser.

use std::borrow::Cow;

use super::element::Attributes;
use super::tokens::{self, RawText, Token, Tokens, Unsupported, prepare};
use super::walk::{Extracted, Opened, WalkOptions, Walker};

/// Reads a whole document through the walk; `None` when it needs the full
/// parser (or the walk failed, so that the full parser reports it).
pub(super) fn read(html: &str, options: &WalkOptions) -> Option<Extracted> {
    read_from(html, options, Phase::BeforeHtml)
}

/// Reads a fragment of a body (an HTML block inside Markdown) as
/// html5ever's fragment parser with a `<body>` context does: its nodes
/// hang straight from an `<html>` element, with no head or body, and the
/// reading starts in the body. The body's rules then apply unchanged: the
/// start tags that would reach the missing head or body (`<html>`,
/// `<body>`…) already give up, and `</body>` and `</html>` change nothing
/// in either tree.
pub(super) fn read_fragment(html: &str, options: &WalkOptions) -> Option<Extracted> {
    read_from(html, options, Phase::InBody)
}

fn read_from(html: &str, options: &WalkOptions, phase: Phase) -> Option<Extracted> {
    let html = prepare(html).ok()?;
    let mut reader = Reader {
        tokens: Tokens::new(&html),
        walker: Walker::new(options),
        open: Vec::new(),
        skipped_from: None,
        paragraphs: 0,
        in_form: false,
        phase,
        after_pre: false,
    };
    if phase == Phase::InBody {
        reader.push("html".into(), &[], false, "").ok()?;
    }
    reader.run().ok()?;
    Some(reader.walker.finish())
}

/// Where in the document the reader is: the Standard's insertion modes
/// before the body (in the body, the current element decides).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    BeforeHtml,
    BeforeHead,
    InHead,
    AfterHead,
    InBody,
}

/// An open element.
struct Open<'a> {
    name: Cow<'a, str>,
    /// Whether the walk entered it (and so must leave it).
    entered: bool,
}

struct Reader<'a> {
    tokens: Tokens<'a>,
    walker: Walker,
    /// The stack of open elements.
    open: Vec<Open<'a>>,
    /// Index in `open` of the element whose content the walk skips
    /// (dropped noise, a `<title>`), if inside one.
    skipped_from: Option<usize>,
    /// How many `<p>` are open.
    paragraphs: usize,
    /// The Standard's form element pointer is set.
    in_form: bool,
    phase: Phase,
    /// The previous token opened a `<pre>` or `<listing>`, whose first
    /// newline is dropped.
    after_pre: bool,
}

/// An element as the walk meets it here.
struct StreamElement<'e, 'a> {
    name: &'e str,
    attributes: &'e [(Cow<'a, str>, Cow<'a, str>)],
    text: &'e str,
}

impl Opened for StreamElement<'_, '_> {
    fn name(&self) -> &str {
        self.name
    }

    fn attributes(&self) -> Attributes<'_> {
        Attributes::read(
            self.attributes
                .iter()
                .map(|(name, value)| (name.as_ref(), value.as_ref())),
        )
    }

    fn text(&self) -> String {
        self.text.to_string()
    }

    fn items(&self) -> usize {
        // Never asked: such lists are left to html5ever (see
        // `Reader::start_in_body`), since a stream cannot count the items
        // before reading them.
        0
    }
}

/// Table structure: where text must be whitespace and only table parts
/// may open.
fn is_table_structure(name: &str) -> bool {
    matches!(name, "table" | "tbody" | "thead" | "tfoot" | "tr")
}

/// The Standard's grouping elements, one rule for their start tags (which
/// close an open `<p>`) and one for their end tags (which close the `<p>`,
/// `<li>`, `<dd>` and `<dt>` open inside them).
fn is_grouping(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "center"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "header"
            | "hgroup"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "search"
            | "section"
            | "summary"
            | "ul"
    )
}

fn is_heading(name: &str) -> bool {
    matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}

/// Elements that close an open `<p>` when they start.
fn closes_paragraph(name: &str) -> bool {
    is_grouping(name)
        || is_heading(name)
        || matches!(
            name,
            "pre" | "listing" | "form" | "li" | "dd" | "dt" | "table" | "hr" | "xmp"
        )
}

/// The Standard's "special" elements that stop the search for an open list
/// item when a new one starts (all but `address`, `div` and `p`, which do
/// not stop it).
fn stops_item_search(name: &str) -> bool {
    matches!(
        name,
        "applet"
            | "area"
            | "article"
            | "aside"
            | "base"
            | "basefont"
            | "bgsound"
            | "blockquote"
            | "body"
            | "br"
            | "button"
            | "caption"
            | "center"
            | "col"
            | "colgroup"
            | "dd"
            | "details"
            | "dir"
            | "dl"
            | "dt"
            | "embed"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "frame"
            | "frameset"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "head"
            | "header"
            | "hgroup"
            | "hr"
            | "html"
            | "iframe"
            | "img"
            | "input"
            | "keygen"
            | "li"
            | "link"
            | "listing"
            | "main"
            | "marquee"
            | "menu"
            | "meta"
            | "nav"
            | "noembed"
            | "noframes"
            | "noscript"
            | "object"
            | "ol"
            | "param"
            | "plaintext"
            | "pre"
            | "script"
            | "search"
            | "section"
            | "select"
            | "source"
            | "style"
            | "summary"
            | "table"
            | "tbody"
            | "td"
            | "template"
            | "textarea"
            | "tfoot"
            | "th"
            | "thead"
            | "title"
            | "tr"
            | "track"
            | "ul"
            | "wbr"
            | "xmp"
    )
}

/// The Standard's formatting elements, which html5ever re-opens when
/// they are closed out of order.
fn is_formatting(name: &str) -> bool {
    matches!(
        name,
        "a" | "b"
            | "big"
            | "code"
            | "em"
            | "font"
            | "i"
            | "nobr"
            | "s"
            | "small"
            | "strike"
            | "strong"
            | "tt"
            | "u"
    )
}

/// Elements whose end tag first closes the open `p`, `li`, `dd` and `dt`
/// above them ("generate implied end tags", then pop up to the element).
fn ends_after_implied(name: &str) -> bool {
    is_grouping(name)
        || is_heading(name)
        || matches!(
            name,
            "button"
                | "listing"
                | "pre"
                | "li"
                | "dd"
                | "dt"
                | "form"
                | "td"
                | "th"
                | "caption"
                | "applet"
                | "marquee"
                | "object"
        )
}

/// Elements without content or end tag that may appear in a body.
fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "br"
            | "embed"
            | "img"
            | "input"
            | "wbr"
            | "param"
            | "source"
            | "track"
            | "hr"
            | "base"
            | "basefont"
            | "bgsound"
            | "link"
            | "meta"
    )
}

/// Start tags whose handling this path does not model: parser states of
/// their own (`textarea`, `select`, `noscript`, `plaintext`, foreign
/// content, templates, frames), and elements the body ignores or repairs
/// (`image`, a second `body`, table parts outside a table).
fn unsupported_in_body(name: &str) -> bool {
    matches!(
        name,
        "html"
            | "head"
            | "body"
            | "frameset"
            | "frame"
            | "template"
            | "textarea"
            | "select"
            | "option"
            | "optgroup"
            | "plaintext"
            | "image"
            | "keygen"
            | "math"
            | "svg"
            | "rb"
            | "rp"
            | "rt"
            | "rtc"
            | "caption"
            | "col"
            | "colgroup"
            | "tbody"
            | "thead"
            | "tfoot"
            | "tr"
            | "td"
            | "th"
    )
}

/// HTML's ASCII whitespace.
fn is_space(c: char) -> bool {
    u8::try_from(c).is_ok_and(tokens::is_space)
}

/// Splits text into its leading whitespace and the rest.
fn split_space(text: &str) -> (&str, &str) {
    let rest = text.trim_start_matches(is_space);
    text.split_at(text.len() - rest.len())
}

type Step<T = ()> = Result<T, Unsupported>;

impl<'a> Reader<'a> {
    fn run(&mut self) -> Step {
        loop {
            let token = self.tokens.next()?;
            let after_pre = std::mem::take(&mut self.after_pre);
            let token = match token {
                Token::Text(Cow::Borrowed(text)) if after_pre => {
                    Token::Text(Cow::Borrowed(text.strip_prefix('\n').unwrap_or(text)))
                }
                Token::Text(Cow::Owned(text)) if after_pre => {
                    let text = text.strip_prefix('\n').unwrap_or(&text).to_string();
                    Token::Text(Cow::Owned(text))
                }
                token => token,
            };
            if token == Token::Eof {
                return self.finish();
            }
            self.dispatch(token)?;
        }
    }

    /// Hands a token to the current phase, reprocessing it when a phase
    /// ends implicitly.
    fn dispatch(&mut self, token: Token<'a>) -> Step {
        match token {
            Token::Ignored => Ok(()),
            Token::Text(text) => self.text(text),
            Token::Start { name } => self.start(name),
            Token::End { name } => self.end(&name),
            Token::Eof => Ok(()),
        }
    }

    /// At the end of the input the Standard still implies the elements
    /// not yet open: the tree always has a head and a body.
    fn finish(&mut self) -> Step {
        while self.phase != Phase::InBody {
            self.imply_next_phase()?;
        }
        while !self.open.is_empty() {
            self.pop();
        }
        Ok(())
    }

    /// Opens what the current phase implies when other content arrives.
    fn imply_next_phase(&mut self) -> Step {
        match self.phase {
            Phase::BeforeHtml => {
                self.push("html".into(), &[], false, "")?;
                self.phase = Phase::BeforeHead;
            }
            Phase::BeforeHead => {
                self.push("head".into(), &[], false, "")?;
                self.phase = Phase::InHead;
            }
            Phase::InHead => {
                self.pop();
                self.phase = Phase::AfterHead;
            }
            Phase::AfterHead => {
                self.push("body".into(), &[], false, "")?;
                self.phase = Phase::InBody;
            }
            Phase::InBody => {}
        }
        Ok(())
    }

    fn text(&mut self, text: Cow<'a, str>) -> Step {
        let mut text: &str = &text;
        while self.phase != Phase::InBody {
            let (space, rest) = split_space(text);
            match self.phase {
                // Whitespace before the head is dropped.
                Phase::BeforeHtml | Phase::BeforeHead => {}
                Phase::InHead | Phase::AfterHead => self.emit_text(space),
                Phase::InBody => {}
            }
            if rest.is_empty() {
                return Ok(());
            }
            text = rest;
            self.imply_next_phase()?;
        }
        match self.current() {
            Some(current) if is_table_structure(current) || current == "colgroup" => {
                // Text in a table outside its cells is moved before the
                // table; only whitespace stays where it is.
                if text.chars().all(is_space) {
                    self.emit_text(text);
                    Ok(())
                } else {
                    Err(Unsupported)
                }
            }
            _ => {
                self.emit_text(text);
                Ok(())
            }
        }
    }

    fn start(&mut self, name: Cow<'a, str>) -> Step {
        loop {
            match self.phase {
                Phase::BeforeHtml if name == "html" => {
                    let attributes = std::mem::take(&mut self.tokens.attributes);
                    self.push(name, &attributes, false, "")?;
                    self.phase = Phase::BeforeHead;
                    return Ok(());
                }
                Phase::BeforeHead if name == "head" => {
                    let attributes = std::mem::take(&mut self.tokens.attributes);
                    self.push(name, &attributes, false, "")?;
                    self.phase = Phase::InHead;
                    return Ok(());
                }
                Phase::BeforeHead | Phase::AfterHead if name == "html" || name == "head" => {
                    return Err(Unsupported);
                }
                Phase::InHead => match name.as_ref() {
                    "base" | "basefont" | "bgsound" | "link" | "meta" => {
                        return self.open_void(name);
                    }
                    // With scripting on (html5ever's default), `<noscript>`
                    // is raw text.
                    "title" | "style" | "script" | "noscript" | "noframes" => {
                        return self.open_raw_text(name);
                    }
                    "template" | "head" | "html" => return Err(Unsupported),
                    _ => {}
                },
                Phase::AfterHead if name == "body" => {
                    let attributes = std::mem::take(&mut self.tokens.attributes);
                    self.push(name, &attributes, false, "")?;
                    self.phase = Phase::InBody;
                    return Ok(());
                }
                Phase::AfterHead
                    if matches!(
                        name.as_ref(),
                        "base"
                            | "basefont"
                            | "bgsound"
                            | "link"
                            | "meta"
                            | "noframes"
                            | "script"
                            | "style"
                            | "template"
                            | "title"
                            | "frameset"
                    ) =>
                {
                    // Moved back into the head.
                    return Err(Unsupported);
                }
                Phase::InBody => return self.start_in_body(name),
                _ => {}
            }
            self.imply_next_phase()?;
        }
    }

    fn start_in_body(&mut self, name: Cow<'a, str>) -> Step {
        let current = self.current().unwrap_or_default();
        if current == "colgroup" {
            if name == "col" {
                return self.open_void(name);
            }
            // Anything else ends the column group.
            self.pop();
            return self.start_in_body(name);
        }
        if is_table_structure(current) {
            return self.start_in_table(name);
        }
        if matches!(
            name.as_ref(),
            "caption" | "col" | "colgroup" | "tbody" | "td" | "tfoot" | "th" | "thead" | "tr"
        ) && self.close_cell(None)?
        {
            // A table part inside a cell ends the cell.
            return self.start_in_body(name);
        }
        if unsupported_in_body(&name) {
            return Err(Unsupported);
        }
        match name.as_ref() {
            "li" => self.close_item(&["li"])?,
            "dd" | "dt" => self.close_item(&["dd", "dt"])?,
            _ => {}
        }
        if self.paragraphs > 0 && closes_paragraph(&name) {
            // A `<table>` closes it only outside quirks mode, which depends
            // on the doctype.
            if name == "table" {
                return Err(Unsupported);
            }
            // Closes the `<p>` when it is the current element; one further
            // down would take elements with it that html5ever re-opens.
            if self.current() == Some("p") {
                self.pop();
            }
            if self.paragraphs > 0 {
                return Err(Unsupported);
            }
        }
        let current = self.current().unwrap_or_default();
        match name.as_ref() {
            "title" | "style" | "script" | "noscript" | "noframes" | "xmp" | "iframe"
            | "noembed" => return self.open_raw_text(name),
            heading if is_heading(heading) && is_heading(current) => {
                // A heading inside a heading ends it.
                self.pop();
            }
            "form" if self.in_form => return Err(Unsupported),
            "a" | "button" | "nobr" if self.is_open(&name) => return Err(Unsupported),
            "ol" if self.tokens.attributes.iter().any(|(n, _)| n == "reversed")
                && !self.tokens.attributes.iter().any(|(n, _)| n == "start") =>
            {
                return Err(Unsupported);
            }
            _ => {}
        }
        if is_void(&name) {
            return self.open_void(name);
        }
        if name == "form" {
            self.in_form = true;
        }
        let after_pre = matches!(name.as_ref(), "pre" | "listing");
        self.open(name)?;
        self.after_pre = after_pre;
        Ok(())
    }

    /// A start tag where the current element is a table, a row group or a
    /// row: table parts open (with the row groups and rows the Standard
    /// implies); anything else would be moved out of the table.
    fn start_in_table(&mut self, name: Cow<'a, str>) -> Step {
        let current = self.current().unwrap_or_default();
        match (current, name.as_ref()) {
            ("table", "caption" | "colgroup" | "tbody" | "thead" | "tfoot") => self.open(name)?,
            ("table", "col") => {
                self.push("colgroup".into(), &[], false, "")?;
                self.open_void(name)?;
            }
            ("table", "tr") => {
                self.push("tbody".into(), &[], false, "")?;
                self.open(name)?;
            }
            ("table", "td" | "th") => {
                self.push("tbody".into(), &[], false, "")?;
                self.push("tr".into(), &[], false, "")?;
                self.open(name)?;
            }
            ("tbody" | "thead" | "tfoot", "tr") => self.open(name)?,
            ("tbody" | "thead" | "tfoot", "td" | "th") => {
                self.push("tr".into(), &[], false, "")?;
                self.open(name)?;
            }
            ("tr", "td" | "th") => self.open(name)?,
            // A new row or row group ends the open one.
            ("tr", "tr" | "tbody" | "thead" | "tfoot" | "caption" | "col" | "colgroup")
            | (
                "tbody" | "thead" | "tfoot",
                "tbody" | "thead" | "tfoot" | "caption" | "col" | "colgroup",
            ) => {
                self.pop();
                return self.start_in_table(name);
            }
            (_, "style" | "script") => return self.open_raw_text(name),
            _ => return Err(Unsupported),
        }
        Ok(())
    }

    fn end(&mut self, name: &str) -> Step {
        loop {
            match self.phase {
                Phase::BeforeHtml | Phase::BeforeHead | Phase::AfterHead
                    if matches!(name, "head" | "body" | "html" | "br") => {}
                Phase::InHead if name == "head" => {
                    self.pop();
                    self.phase = Phase::AfterHead;
                    return Ok(());
                }
                Phase::InHead if matches!(name, "body" | "html" | "br") => {}
                Phase::InBody => return self.end_in_body(name),
                // Ignored by the Standard: the tree would not show it.
                _ => return Err(Unsupported),
            }
            self.imply_next_phase()?;
        }
    }

    fn end_in_body(&mut self, name: &str) -> Step {
        // After `</body>` or `</html>` the Standard goes on adding content
        // to the element that was current, as if they were not there.
        if matches!(name, "body" | "html") {
            return Ok(());
        }
        let current = self.current().unwrap_or_default();
        if current == "colgroup" && name != "colgroup" {
            self.pop();
            return self.end_in_body(name);
        }
        if current == name {
            return self.close_through(name, |_| false);
        }
        if is_table_structure(current) {
            return self.end_in_table(name);
        }
        match name {
            "td" | "th" if self.close_cell(Some(name))? => return Ok(()),
            "table" | "tbody" | "tfoot" | "thead" | "tr" if self.close_cell(None)? => {
                // The end of a row or table ends the cell first.
                return self.end_in_body(name);
            }
            _ => {}
        }
        if name == "p" && self.paragraphs == 0 {
            // `</p>` without a `<p>`: the Standard makes an empty one.
            self.push(Cow::Borrowed("p"), &[], false, "")?;
            self.pop();
            return Ok(());
        }
        if ends_after_implied(name) {
            return self.close_through(name, |open| matches!(open, "p" | "li" | "dd" | "dt"));
        }
        Err(Unsupported)
    }

    /// An end tag where the current element is a table, a row group or a
    /// row (and not the element ending).
    fn end_in_table(&mut self, name: &str) -> Step {
        // A row group or table end closes the rows and row groups inside
        // it.
        let closes = match name {
            "table" => &["tr", "tbody", "thead", "tfoot"][..],
            "tbody" | "thead" | "tfoot" => &["tr"][..],
            _ => return Err(Unsupported),
        };
        self.close_through(name, |open| closes.contains(&open))
    }

    /// Ends `name` and the elements open above it, all of which must be in
    /// the `implied` chain (the end tags the Standard implies first);
    /// anything else above it is a repair left to html5ever. Closing the
    /// form by its end tag also clears the form pointer.
    fn close_through(&mut self, name: &str, implied: impl Fn(&str) -> bool) -> Step {
        let above = self
            .open
            .iter()
            .rev()
            .take_while(|open| open.name != name && implied(open.name.as_ref()))
            .count();
        let target = self.open.len().checked_sub(above + 1).ok_or(Unsupported)?;
        if self.open.get(target).map(|open| open.name.as_ref()) != Some(name) {
            return Err(Unsupported);
        }
        if name == "form" {
            self.in_form = false;
        }
        while self.open.len() > target {
            self.pop();
        }
        Ok(())
    }

    fn current(&self) -> Option<&str> {
        self.open.last().map(|open| open.name.as_ref())
    }

    fn is_open(&self, name: &str) -> bool {
        self.open.iter().any(|open| open.name == name)
    }

    /// Before a new list item (`names` `li`) or term or description (`dd`,
    /// `dt`): closes an open one the Standard would close, found searching
    /// down the stack before an element that stops the search. The
    /// elements above it are closed with it, so none may be one html5ever
    /// would re-open (formatting elements and their markers).
    fn close_item(&mut self, names: &[&str]) -> Step {
        for (above, open) in self.open.iter().rev().enumerate() {
            let name = open.name.as_ref();
            if names.contains(&name) {
                for _ in 0..=above {
                    self.pop();
                }
                return Ok(());
            }
            if stops_item_search(name) {
                return Ok(());
            }
            if is_formatting(name) || matches!(name, "applet" | "marquee" | "object") {
                return Err(Unsupported);
            }
        }
        Ok(())
    }

    /// Closes the open cell and everything open inside it, as the Standard
    /// does when a cell ends (whatever formatting elements were open in it
    /// are then forgotten, never re-opened). `Ok(false)` when no cell is
    /// open in the current table; with `only`, the cell must be a `<td>` or
    /// a `<th>`.
    fn close_cell(&mut self, only: Option<&str>) -> Step<bool> {
        let mut cell = None;
        for (at, open) in self.open.iter().enumerate().rev() {
            match open.name.as_ref() {
                "td" | "th" => {
                    cell = Some((at, open.name.as_ref()));
                    break;
                }
                "table" | "html" => return Ok(false),
                // Their own markers would keep formatting elements alive.
                "applet" | "marquee" | "object" => return Err(Unsupported),
                _ => {}
            }
        }
        let Some((at, name)) = cell else {
            return Ok(false);
        };
        if only.is_some_and(|only| only != name) {
            return Err(Unsupported);
        }
        while self.open.len() > at {
            self.pop();
        }
        Ok(true)
    }

    /// Opens an element with the last start tag's attributes.
    fn open(&mut self, name: Cow<'a, str>) -> Step {
        let attributes = std::mem::take(&mut self.tokens.attributes);
        let opened = self.push(name, &attributes, false, "");
        self.tokens.attributes = attributes;
        opened
    }

    fn open_void(&mut self, name: Cow<'a, str>) -> Step {
        let attributes = std::mem::take(&mut self.tokens.attributes);
        let opened = self.push(name, &attributes, true, "");
        self.tokens.attributes = attributes;
        opened
    }

    /// Opens `<title>`, `<style>` or `<script>` with its text, and closes
    /// it.
    fn open_raw_text(&mut self, name: Cow<'a, str>) -> Step {
        let attributes = std::mem::take(&mut self.tokens.attributes);
        let kind = match name.as_ref() {
            "title" => RawText::Escapable,
            "script" => RawText::Script,
            _ => RawText::Raw,
        };
        let text = self.tokens.raw_text(&name, kind)?;
        self.push(name, &attributes, false, &text)?;
        if !text.is_empty() {
            self.emit_text(&text);
        }
        self.pop();
        self.tokens.attributes = attributes;
        Ok(())
    }

    /// Pushes an element (and, when `void`, closes it at once), telling the
    /// walk unless inside skipped content. `text` is its text content when
    /// known up front (raw-text elements).
    fn push(
        &mut self,
        name: Cow<'a, str>,
        attributes: &[(Cow<'a, str>, Cow<'a, str>)],
        void: bool,
        text: &str,
    ) -> Step {
        let mut entered = false;
        if self.skipped_from.is_none() {
            let element = StreamElement {
                name: &name,
                attributes,
                text,
            };
            match self.walker.enter(&element) {
                Ok(true) => entered = true,
                Ok(false) => {
                    if !void {
                        self.skipped_from = Some(self.open.len());
                    }
                }
                // Too deep: the full parser reports it.
                Err(_) => return Err(Unsupported),
            }
        }
        if void {
            if entered {
                self.walker.leave();
            }
            return Ok(());
        }
        if name == "p" {
            self.paragraphs += 1;
        }
        self.open.push(Open { name, entered });
        Ok(())
    }

    fn pop(&mut self) {
        let Some(open) = self.open.pop() else {
            return;
        };
        if open.name == "p" {
            self.paragraphs = self.paragraphs.saturating_sub(1);
        }
        if open.entered {
            self.walker.leave();
        }
        if self.skipped_from == Some(self.open.len()) {
            self.skipped_from = None;
        }
    }

    fn emit_text(&mut self, text: &str) {
        if self.skipped_from.is_none() && !text.is_empty() {
            self.walker.text(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use scraper::Html;

    use super::*;
    use crate::parse::html::walk;

    fn options() -> WalkOptions {
        WalkOptions {
            max_depth: 512,
            table_cells: 100_000,
            read_title: true,
        }
    }

    /// What html5ever's tree yields.
    fn through_tree(html: &str) -> Result<Extracted, String> {
        let dom = Html::parse_document(html);
        walk::walk(dom.tree.root(), &options()).map_err(|e| e.to_string())
    }

    /// Reads `html` both ways; the stream's result, if it accepted.
    fn agree(html: &str) -> Option<Extracted> {
        let streamed = read(html, &options())?;
        assert_eq!(
            Ok(&streamed),
            through_tree(html).as_ref(),
            "the two paths differ on {html:?}"
        );
        Some(streamed)
    }

    /// Options as [`super::super::extract`] sets them for a fragment,
    /// whose `<title>` is no document title.
    fn fragment_options() -> WalkOptions {
        WalkOptions {
            read_title: false,
            ..options()
        }
    }

    /// Reads `html` as a fragment both ways; the stream's result, if it
    /// accepted.
    fn agree_as_fragment(html: &str) -> Option<Extracted> {
        let streamed = read_fragment(html, &fragment_options())?;
        let dom = Html::parse_fragment(html);
        let tree = walk::walk(dom.tree.root(), &fragment_options()).map_err(|e| e.to_string());
        assert_eq!(
            Ok(&streamed),
            tree.as_ref(),
            "the two paths differ on the fragment {html:?}"
        );
        Some(streamed)
    }

    #[test]
    fn fragments_stream_as_html5ever_reads_them() {
        for html in [
            "plain text",
            "",
            "  leading space kept",
            "<table>\n  <tr>\n    <th>Character</th>\n  </tr>\n  <tr>\n    <td>Huey</td>\n  </tr>\n</table>\n",
            "<div title=\"\">&amp; &lt; &gt; &quot; &#39;/div>\n",
            "<title>not the document's</title><p>x",
            "<p>a</p></body></html>after",
            "<ul><li>a<li>b</ul>",
            "<p>a<div>b</div></p>",
            "<details><summary>More</summary><p>hidden text</p></details>",
        ] {
            assert!(
                agree_as_fragment(html).is_some(),
                "{html:?} needed the full parser"
            );
        }
        for html in [
            "<html lang=en><p>x",
            "<body class=x>y",
            "<p><table><td>x</table>",
            "<b>a<i>b</b>c</i>",
        ] {
            assert!(
                read_fragment(html, &fragment_options()).is_none(),
                "{html:?} streamed"
            );
        }
    }

    #[test]
    fn documents_in_the_repository_stream_as_html5ever_reads_them() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for path in [
            "examples/corpus/annual-report-2024.html",
            "tests/fixtures/html/policy_page.html",
            "src/serve/console/index.html",
            "src/serve/console/signin.html",
        ] {
            let html = std::fs::read_to_string(root.join(path)).expect("fixture reads");
            assert!(agree(&html).is_some(), "{path} needed the full parser");
        }
    }

    #[test]
    fn implied_structure_and_tables() {
        for html in [
            "plain text",
            "",
            "  <title>T</title><p>x",
            "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>A &amp; B</title>\n</head>\n<body><h1>H</h1><p>x</p></body></html>\n",
            "<table><tr><td>a<td>b</table>",
            "<table><tr><td>a</td><td>b</td></tr><tr><th>c</th></tr></table>",
            "<table><col><col><thead><tr><th>h</th></tr></thead><tbody><tr><td>d</td></tr></tbody></table>",
            "<table><caption>c</caption><td>x</td></table>",
            "<pre>\n  code\n</pre><pre>\n\nkept</pre>",
            "<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>",
            "<p>a<br><br>b</p><div hidden><p>gone</p></div>after",
            "<a href=#>Skip to content</a><p>body",
            "<p>a<div>b</div></p>",
            "<ul><li>a<li><p>b<li>c</ul><dl><dt>t<dd>d<dt>u</dl>",
            "<h1>a<h2>b</h2>",
            "<div><p>unclosed</div><table><td><p>x</td><td><b>y<tr><td>z</table>",
            "<noscript><p>x</p></noscript><xmp><b></xmp>",
        ] {
            assert!(agree(html).is_some(), "{html:?} needed the full parser");
        }
    }

    #[test]
    fn repairs_are_left_to_html5ever() {
        for html in [
            "<p><b>a<div>b</div>",
            "<b>a<i>b</b>c</i>",
            "<ul><li><b>a<li>b</ul>",
            "<table>text<tr><td>x</td></tr></table>",
            "<ol reversed><li>a</li></ol>",
            "<a href=1>x<a href=2>y</a></a>",
            "<p>x</p></div>",
            "<svg><circle/></svg>",
            "<textarea>x</textarea>",
            "a&ampb",
            "a\0b",
            // Whether the table closes the paragraph depends on the doctype.
            "<p id=cookie-banner><table>",
        ] {
            assert!(read(html, &options()).is_none(), "{html:?} streamed");
            // Whichever reads it, html5ever's tree still does.
            assert!(through_tree(html).is_ok());
        }
    }

    /// Pieces of markup, well formed and not, for the random documents.
    const PIECES: &[&str] = &[
        "<p>",
        "</p>",
        "<P class=x>",
        "<div>",
        "</div>",
        "<div/>",
        "<span>",
        "</span>",
        "<b>",
        "</b>",
        "<i>",
        "</i>",
        "<a href='#'>",
        "</a>",
        "<ul>",
        "</ul>",
        "<ol start=3>",
        "<ol reversed start=2>",
        "<ol type=a>",
        "</ol>",
        "<li>",
        "<li value=7>",
        "</li>",
        "<dl>",
        "</dl>",
        "<dt>",
        "</dt>",
        "<dd>",
        "</dd>",
        "<table>",
        "<table role=presentation>",
        "</table>",
        "<tr>",
        "</tr>",
        "<td>",
        "<td rowspan=2>",
        "</td>",
        "<th colspan=2>",
        "</th>",
        "<tbody>",
        "</tbody>",
        "<thead>",
        "</thead>",
        "<tfoot>",
        "</tfoot>",
        "<caption>",
        "</caption>",
        "<colgroup>",
        "</colgroup>",
        "<col>",
        "<h1>",
        "</h1>",
        "<h2>",
        "</h2>",
        "<div role=heading aria-level=3>",
        "<pre>",
        "</pre>",
        "<listing>",
        "</listing>",
        "<br>",
        "<BR/>",
        "</br>",
        "<img alt=x>",
        "<hr>",
        "<wbr>",
        "<form>",
        "</form>",
        "<button>",
        "</button>",
        "<input type=hidden>",
        "<nobr>",
        "</nobr>",
        "<script>if (a<b) {}</script>",
        "<script><!--x--></script>",
        "<style>p { }</style>",
        "<title>T &amp; t</title>",
        "<title role=heading>R</title>",
        "<html>",
        "</html>",
        "<head>",
        "</head>",
        "<body>",
        "</body>",
        "<meta charset=utf-8>",
        "<link rel=x>",
        "<!-- c -->",
        "<!-->",
        "<!DOCTYPE html>",
        "<?x?>",
        "text",
        "Skip to content",
        "words here",
        " ",
        "  ",
        "\n",
        "\r\n",
        "\r",
        "\t",
        "&amp;",
        "&lt;",
        "&#10;",
        "&#x20;",
        "&nbsp;",
        "&copy",
        "& ",
        "&zz;",
        "<",
        "< x",
        "<nav>",
        "</nav>",
        "<section>",
        "</section>",
        "<header>",
        "</header>",
        "<footer>",
        "</footer>",
        "<main>",
        "</main>",
        "<sup>",
        "</sup>",
        "<code class=language-rust>",
        "</code>",
        "<div hidden>",
        "<div style='display:none'>",
        "<span aria-hidden=true>",
        "<figure>",
        "</figure>",
        "<figcaption>",
        "</figcaption>",
        "<blockquote>",
        "</blockquote>",
        "<select>",
        "<option>",
        "<textarea>",
        "<svg>",
        "</svg>",
        "<x-card>",
        "</x-card>",
        "<template>",
        "\u{feff}",
        "\u{a0}",
        "\u{ad}",
        "<p id=cookie-banner>",
        "<address>",
        "</address>",
        "<object>",
        "</object>",
        "<noscript>",
        "</noscript>",
        "<xmp>",
        "</xmp>",
        "<iframe>",
        "</iframe>",
        "<h3>",
        "</h3>",
        "<em>",
        "</em>",
        "<ruby>",
        "<rt>",
        "</td></tr>",
    ];

    /// Text and empty elements, the leaves of the random trees.
    const LEAVES: &[&str] = &[
        "text",
        "Skip to content",
        "two words",
        " ",
        "\n",
        "\r\n",
        "&amp; &#8212;",
        "a < b",
        "&nbsp;",
        "<br>",
        "<br><br>",
        "<img alt=x>",
        "<hr>",
        "<!-- c -->",
        "<col>",
        "<script>if (a<b) {}</script>",
        "<style>p { }</style>",
        "<title>T</title>",
        "<input>",
        "<meta charset=utf-8>",
        "\u{ad}",
        "",
    ];

    /// Elements, as start and end tag (an empty end tag is left out).
    const CONTAINERS: &[(&str, &str)] = &[
        ("<p>", "</p>"),
        ("<p>", ""),
        ("<div>", "</div>"),
        ("<span>", "</span>"),
        ("<b>", "</b>"),
        ("<a href=#>", "</a>"),
        ("<ul>", "</ul>"),
        ("<ol start=4>", "</ol>"),
        ("<ol reversed>", "</ol>"),
        ("<li>", "</li>"),
        ("<li>", ""),
        ("<dl>", "</dl>"),
        ("<dt>", "</dt>"),
        ("<dd>", ""),
        ("<table>", "</table>"),
        ("<tbody>", "</tbody>"),
        ("<thead>", "</thead>"),
        ("<tr>", "</tr>"),
        ("<tr>", ""),
        ("<td>", "</td>"),
        ("<td>", ""),
        ("<th colspan=2>", "</th>"),
        ("<caption>", "</caption>"),
        ("<colgroup>", "</colgroup>"),
        ("<colgroup>", ""),
        ("<h2>", "</h2>"),
        ("<h3>", "</h3>"),
        ("<pre>", "</pre>"),
        ("<listing>", "</listing>"),
        ("<form>", "</form>"),
        ("<button>", "</button>"),
        ("<nav>", "</nav>"),
        ("<section>", "</section>"),
        ("<header>", "</header>"),
        ("<footer>", "</footer>"),
        ("<sup>", "</sup>"),
        ("<code>", "</code>"),
        ("<div hidden>", "</div>"),
        ("<figure>", "</figure>"),
        ("<figcaption>", "</figcaption>"),
        ("<blockquote>", "</blockquote>"),
        ("<x-card>", "</x-card>"),
        ("<html>", "</html>"),
        ("<head>", "</head>"),
        ("<body>", "</body>"),
        ("<object>", "</object>"),
        ("<div role=heading>", "</div>"),
        ("<main>", "</main>"),
    ];

    /// Nested markup, mostly well formed.
    fn tree() -> impl Strategy<Value = String> {
        prop::sample::select(LEAVES)
            .prop_map(String::from)
            .prop_recursive(5, 96, 6, |inner| {
                (
                    prop::sample::select(CONTAINERS),
                    prop::collection::vec(inner, 0..6),
                )
                    .prop_map(|((open, close), children)| {
                        format!("{open}{}{close}", children.concat())
                    })
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn random_trees_stream_as_html5ever_reads_them(
            head in prop::sample::select(&["", "<!DOCTYPE html>", "<html><head><title>t</title></head>", "<html><body>"][..]),
            body in prop::collection::vec(tree(), 0..4),
        ) {
            agree(&format!("{head}{}", body.concat()));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_markup_streams_as_html5ever_reads_it(
            pieces in prop::collection::vec(prop::sample::select(PIECES), 0..48)
        ) {
            agree(&pieces.concat());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_fragments_stream_as_html5ever_reads_them(
            trees in prop::collection::vec(tree(), 0..4),
            pieces in prop::collection::vec(prop::sample::select(PIECES), 0..24),
        ) {
            agree_as_fragment(&trees.concat());
            agree_as_fragment(&pieces.concat());
        }
    }
}
