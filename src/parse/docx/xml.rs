//! A namespace-aware, depth-bounded pull reader over one XML part.
//!
//! WordprocessingML comes in two dialects (Transitional and Strict) that
//! differ only in their namespace URIs, so elements are identified by a
//! [`Ns`] family and their local name, never by prefix. Every element opened
//! counts against `parsing.maxNestingDepth`, so that no part can make a
//! parser (or the recursion of a caller) go arbitrarily deep.

use std::borrow::Cow;

use quick_xml::events::{BytesEnd, BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;

use crate::parse::ParseFailure;

/// The vocabularies a DOCX parser tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ns {
    /// WordprocessingML main (`w:`), Transitional or Strict.
    Word,
    /// Word 2010 extensions (`w14:`): checkbox content controls.
    Word2010,
    /// Office Math (`m:`), Transitional or Strict.
    Math,
    /// Markup compatibility (`mc:`): `AlternateContent`.
    Compat,
    /// DrawingML charts (`c:`): a chart's reference and its cached data.
    Chart,
    /// Dublin Core elements (`dc:`) in the core properties.
    DublinCore,
    /// Dublin Core terms (`dcterms:`) in the core properties: dates.
    DcTerms,
    /// The core properties' own elements (`cp:`): version, revision.
    CoreProperties,
    /// Package relationships and content types.
    Package,
    /// Anything else (DrawingML, VML, …): walked through, never read.
    Other,
}

impl Ns {
    fn from_uri(uri: &str) -> Ns {
        match uri {
            "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
            | "http://purl.oclc.org/ooxml/wordprocessingml/main" => Ns::Word,
            "http://schemas.microsoft.com/office/word/2010/wordml" => Ns::Word2010,
            "http://schemas.openxmlformats.org/officeDocument/2006/math"
            | "http://purl.oclc.org/ooxml/officeDocument/math" => Ns::Math,
            "http://schemas.openxmlformats.org/markup-compatibility/2006" => Ns::Compat,
            "http://schemas.openxmlformats.org/drawingml/2006/chart"
            | "http://purl.oclc.org/ooxml/drawingml/chart" => Ns::Chart,
            "http://purl.org/dc/elements/1.1/" => Ns::DublinCore,
            "http://purl.org/dc/terms/" => Ns::DcTerms,
            "http://schemas.openxmlformats.org/package/2006/metadata/core-properties" => {
                Ns::CoreProperties
            }
            "http://schemas.openxmlformats.org/package/2006/relationships"
            | "http://schemas.openxmlformats.org/package/2006/content-types" => Ns::Package,
            _ => Ns::Other,
        }
    }

    /// Producers that forget a namespace declaration still use the
    /// conventional prefixes; reading those beats dropping the text.
    fn from_prefix(prefix: &str) -> Ns {
        match prefix {
            "w" => Ns::Word,
            "w14" => Ns::Word2010,
            "m" => Ns::Math,
            "mc" => Ns::Compat,
            "c" => Ns::Chart,
            "dc" => Ns::DublinCore,
            "dcterms" => Ns::DcTerms,
            "cp" => Ns::CoreProperties,
            _ => Ns::Other,
        }
    }
}

/// An opening (or empty) element tag.
pub(super) struct Element<'a> {
    pub ns: Ns,
    start: BytesStart<'a>,
}

impl Element<'_> {
    pub fn local(&self) -> &str {
        self.start.local_name().into_inner()
    }

    pub fn is(&self, ns: Ns, local: &str) -> bool {
        self.ns == ns && self.local() == local
    }

    /// The value of the attribute with this local name (`w:val`, `m:val`
    /// and `val` alike), unescaped. Malformed attributes read as absent.
    pub fn attr(&self, local: &str) -> Option<String> {
        self.start
            .attributes()
            .with_checks(false)
            .filter_map(Result::ok)
            .find(|a| a.key.local_name().into_inner() == local)
            .and_then(|a| {
                a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                    .ok()
                    .map(Cow::into_owned)
            })
    }

    /// An OOXML on/off property: present without a value, or with a value
    /// other than "0"/"false"/"off", means on.
    pub fn is_on(&self) -> bool {
        !matches!(self.attr("val").as_deref(), Some("0" | "false" | "off"))
    }

    /// An integer `val` attribute.
    pub fn int_val(&self) -> Option<i64> {
        self.attr("val")?.trim().parse().ok()
    }
}

/// One step of the pull reader.
pub(super) enum Node<'a> {
    /// An element with content; a matching [`Node::Close`] follows.
    Open(Element<'a>),
    /// An empty element (`<w:tab/>`); no close follows.
    Leaf(Element<'a>),
    /// The end of an [`Node::Open`] element.
    Close(Ns, BytesEnd<'a>),
    Text(Cow<'a, str>),
    Eof,
}

/// What a subtree visit sees: an element with the local names of its
/// ancestors inside the subtree, or text.
pub(super) enum Visit<'e, 'a> {
    Element(&'e [String], &'e Element<'a>),
    Text(&'e [String], &'e str),
}

/// Pull reader over one decoded part.
pub(super) struct XmlReader<'a> {
    reader: NsReader<&'a [u8]>,
    part: &'a str,
    depth: u32,
    max_depth: u32,
}

impl<'a> XmlReader<'a> {
    pub fn new(text: &'a str, part: &'a str, max_depth: u32) -> Self {
        let mut reader = NsReader::from_str(text);
        reader.config_mut().check_end_names = true;
        Self {
            reader,
            part,
            depth: 0,
            max_depth,
        }
    }

    /// The deepest nesting allowed (`parsing.maxNestingDepth`).
    pub fn max_depth(&self) -> u32 {
        self.max_depth
    }

    /// How many elements are open.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// An XML error in this part at the reader's position.
    pub fn error(&self, detail: impl std::fmt::Display) -> ParseFailure {
        ParseFailure::Xml {
            part: self.part.to_string(),
            detail: format!("{detail} (at byte {})", self.reader.error_position()),
        }
    }

    /// The next node. Ending the part with elements still open is an error.
    pub fn next(&mut self) -> Result<Node<'a>, ParseFailure> {
        loop {
            let (ns, event) = match self.reader.read_resolved_event() {
                Ok((resolved, event)) => {
                    let ns = match resolved {
                        ResolveResult::Bound(ns) => Ns::from_uri(ns.into_inner()),
                        ResolveResult::Unknown(prefix) => Ns::from_prefix(&prefix),
                        ResolveResult::Unbound => Ns::Other,
                    };
                    (ns, event)
                }
                Err(e) => return Err(self.error(e)),
            };
            return Ok(match event {
                Event::Start(start) => {
                    self.depth += 1;
                    if self.depth > self.max_depth {
                        return Err(ParseFailure::TooDeep {
                            limit: self.max_depth,
                        });
                    }
                    Node::Open(Element { ns, start })
                }
                Event::Empty(start) => {
                    if self.depth + 1 > self.max_depth {
                        return Err(ParseFailure::TooDeep {
                            limit: self.max_depth,
                        });
                    }
                    Node::Leaf(Element { ns, start })
                }
                Event::End(end) => {
                    self.depth = self.depth.saturating_sub(1);
                    Node::Close(ns, end)
                }
                Event::Text(text) => Node::Text(text.xml10_content()),
                Event::CData(data) => Node::Text(data.into_inner()),
                Event::GeneralRef(reference) => match crate::parse::xml_reference(&reference) {
                    Ok(Some(ch)) => Node::Text(Cow::Owned(ch.to_string())),
                    // OOXML declares no entities; an unknown one is noise.
                    Ok(None) => continue,
                    Err(e) => return Err(self.error(e)),
                },
                Event::Eof => {
                    if self.depth > 0 {
                        return Err(self.error("the part ends inside an open element"));
                    }
                    Node::Eof
                }
                Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => continue,
            });
        }
    }

    /// Skips the rest of the element just opened (after [`Node::Open`]).
    pub fn skip(&mut self) -> Result<(), ParseFailure> {
        let target = self.depth.saturating_sub(1);
        loop {
            match self.next()? {
                Node::Close(..) if self.depth == target => return Ok(()),
                Node::Eof => return Err(self.error("the part ends inside an open element")),
                _ => {}
            }
        }
    }

    /// Walks the rest of the element just opened (after [`Node::Open`]),
    /// handing every element and text to `visit` with the local names of
    /// its ancestors below the opened element.
    pub fn visit_subtree(&mut self, visit: impl FnMut(Visit<'_, 'a>)) -> Result<(), ParseFailure> {
        let target = self.depth.saturating_sub(1);
        self.walk(Some(target), visit)
    }

    /// Walks a whole part from its start, like [`XmlReader::visit_subtree`]
    /// with the root element's name first in every path.
    pub fn visit_all(&mut self, visit: impl FnMut(Visit<'_, 'a>)) -> Result<(), ParseFailure> {
        self.walk(None, visit)
    }

    /// Hands every node to `visit` until the element closing back to depth
    /// `until` (then the end of the part is an error), or to the end of the
    /// part when `until` is `None`.
    fn walk(
        &mut self,
        until: Option<u32>,
        mut visit: impl FnMut(Visit<'_, 'a>),
    ) -> Result<(), ParseFailure> {
        let mut path: Vec<String> = Vec::new();
        loop {
            match self.next()? {
                Node::Open(element) => {
                    visit(Visit::Element(&path, &element));
                    path.push(element.local().to_string());
                }
                Node::Leaf(element) => visit(Visit::Element(&path, &element)),
                Node::Text(text) => visit(Visit::Text(&path, &text)),
                Node::Close(..) => {
                    if until == Some(self.depth) {
                        return Ok(());
                    }
                    path.pop();
                }
                Node::Eof if until.is_some() => {
                    return Err(self.error("the part ends inside an open element"));
                }
                Node::Eof => return Ok(()),
            }
        }
    }
}

/// Decodes a part's bytes to text: UTF-8 (with or without a byte-order
/// mark), or UTF-16 when a byte-order mark says so.
pub(super) fn decode_part<'b>(bytes: &'b [u8], part: &str) -> Result<Cow<'b, str>, ParseFailure> {
    if let Some((encoding, bom_len)) = encoding_rs::Encoding::for_bom(bytes)
        && encoding != encoding_rs::UTF_8
    {
        let (text, had_errors) =
            encoding.decode_without_bom_handling(bytes.get(bom_len..).unwrap_or_default());
        if had_errors {
            return Err(ParseFailure::Xml {
                part: part.to_string(),
                detail: format!("invalid {} text", encoding.name()),
            });
        }
        return Ok(Cow::Owned(text.into_owned()));
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes)
        .map(Cow::Borrowed)
        .map_err(|e| ParseFailure::Xml {
            part: part.to_string(),
            detail: format!("not UTF-8: {e}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_and_transitional_namespaces_read_alike() {
        for uri in [
            "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
            "http://purl.oclc.org/ooxml/wordprocessingml/main",
        ] {
            let xml = format!(r#"<x:document xmlns:x="{uri}"><x:body/></x:document>"#);
            let mut r = XmlReader::new(&xml, "word/document.xml", 16);
            let Ok(Node::Open(root)) = r.next() else {
                panic!("root expected");
            };
            assert!(root.is(Ns::Word, "document"));
        }
    }

    #[test]
    fn nesting_past_the_limit_is_refused() {
        let xml = "<a>".repeat(10) + &"</a>".repeat(10);
        let mut r = XmlReader::new(&xml, "p", 5);
        let err = loop {
            match r.next() {
                Ok(Node::Eof) => panic!("limit not enforced"),
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert!(matches!(err, ParseFailure::TooDeep { limit: 5 }));
    }

    #[test]
    fn truncated_and_mismatched_xml_are_errors() {
        for xml in ["<a><b>text</b>", "<a><b></a></b>"] {
            let mut r = XmlReader::new(xml, "part.xml", 16);
            let err = loop {
                match r.next() {
                    Ok(Node::Eof) => panic!("{xml} accepted"),
                    Ok(_) => {}
                    Err(e) => break e,
                }
            };
            assert!(matches!(err, ParseFailure::Xml { .. }), "{xml}: {err}");
        }
    }

    #[test]
    fn entity_references_become_text() {
        let mut r = XmlReader::new("<t>a &amp; b &#x2013; c</t>", "p", 4);
        let mut text = String::new();
        loop {
            match r.next() {
                Ok(Node::Text(t)) => text.push_str(&t),
                Ok(Node::Eof) => break,
                Ok(_) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(text, "a & b – c");
    }

    #[test]
    fn utf16_parts_are_decoded() {
        let mut bytes = vec![0xFF, 0xFE];
        for unit in "<a>é</a>".encode_utf16() {
            bytes.extend_from_slice(&unit.to_le_bytes());
        }
        assert_eq!(decode_part(&bytes, "p").unwrap(), "<a>é</a>");
        assert!(decode_part(b"\xff\xff\xff", "p").is_err());
    }
}
