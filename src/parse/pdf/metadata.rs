//! What a PDF says about itself: the document information dictionary
//! (`/Info`: `/Title`, `/Author`, `/CreationDate`, `/ModDate`), the XMP
//! packet (`/Metadata` of the catalog: `dc:title`, `dc:creator`,
//! `xmp:CreateDate`, `dc:language`) and the catalog's `/Lang`.
//!
//! XMP is read first, as PDF 2.0 asks: the information dictionary is
//! deprecated, and writers that keep both update XMP. Anything that does
//! not read (a missing object, a stream that does not decode, XML that is
//! not well formed) is left out: a document's metadata is never a reason
//! to lose its text.

use pdf_oxide::PdfDocument;
use pdf_oxide::object::Object;
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;

use crate::parse::{Field, InfoReader};

/// Largest XMP packet read, decoded: a packet is a few kilobytes, and a
/// larger one is not metadata worth the memory.
const MAX_XMP_BYTES: usize = 1 << 20;
/// Deepest XMP nesting followed.
const MAX_XMP_DEPTH: usize = 32;

const DUBLIN_CORE: &str = "http://purl.org/dc/elements/1.1/";
const XMP_BASIC: &str = "http://ns.adobe.com/xap/1.0/";

/// A PDF's title (where it sets one) and metadata.
#[derive(Debug, Default)]
pub(super) struct PdfMetadata {
    pub title: Option<String>,
    pub info: InfoReader,
}

/// Reads the metadata of `document`.
pub(super) fn read(document: &PdfDocument) -> PdfMetadata {
    let mut metadata = PdfMetadata::default();
    let catalog = document.catalog().ok();
    let catalog = catalog.as_ref().and_then(Object::as_dict);
    if let Some(xmp) = catalog
        .and_then(|c| resolve(document, c.get("Metadata")?))
        .and_then(|stream| stream.decode_stream_data().ok())
        .filter(|bytes| bytes.len() <= MAX_XMP_BYTES)
    {
        read_xmp(&String::from_utf8_lossy(&xmp), &mut metadata);
    }
    if let Some(lang) = catalog.and_then(|c| resolve(document, c.get("Lang")?)) {
        set_text(&mut metadata.info, Field::Language, &lang);
    }
    let info = document
        .trailer()
        .as_dict()
        .and_then(|t| resolve(document, t.get("Info")?));
    if let Some(info) = info.as_ref().and_then(Object::as_dict) {
        let text = |key: &str| info.get(key).and_then(|v| resolve(document, v));
        if metadata.title.is_none() {
            metadata.title = text("Title")
                .and_then(|t| string(&t))
                .filter(|t| !t.trim().is_empty());
        }
        for (key, field) in [
            ("Author", Field::Author),
            ("CreationDate", Field::Date),
            ("ModDate", Field::Date),
        ] {
            if let Some(value) = text(key) {
                set_text(&mut metadata.info, field, &value);
            }
        }
    }
    metadata
}

/// The object `object` is, following one reference.
pub(super) fn resolve(document: &PdfDocument, object: &Object) -> Option<Object> {
    match object {
        Object::Reference(r) => document.load_object(*r).ok(),
        other => Some(other.clone()),
    }
}

fn set_text(info: &mut InfoReader, field: Field, value: &Object) {
    if let Some(text) = string(value) {
        info.set(field, &text);
    }
}

/// A PDF text string: UTF-16BE after its byte order mark, UTF-8 after its
/// (PDF 2.0), else PDFDocEncoding, which agrees with Latin-1 on the
/// printable characters.
pub(super) fn string(object: &Object) -> Option<String> {
    let Object::String(bytes) = object else {
        return None;
    };
    if let Some(utf16) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        let units: Vec<u16> = utf16
            .chunks_exact(2)
            .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
            .collect();
        return String::from_utf16(&units).ok();
    }
    if let Some(utf8) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return String::from_utf8(utf8.to_vec()).ok();
    }
    Some(bytes.iter().map(|&b| char::from(b)).collect())
}

/// Which XMP property a text belongs to.
#[derive(Clone, Copy, PartialEq)]
enum Property {
    Title,
    Creator,
    Language,
    Date,
}

/// Reads the XMP properties of a packet: each as an element (`dc:title`
/// holding an `rdf:Alt`, `dc:creator` an `rdf:Seq`…) or as an attribute
/// of `rdf:Description` (`xmp:CreateDate="…"`).
fn read_xmp(xml: &str, metadata: &mut PdfMetadata) {
    let mut reader = NsReader::from_str(xml);
    // The property each open element is inside, if any.
    let mut open: Vec<Option<Property>> = Vec::new();
    let mut creators: Vec<String> = Vec::new();
    let mut title = String::new();
    let mut text = String::new();
    loop {
        let event = match reader.read_resolved_event() {
            Ok((namespace, event)) => (property(&namespace, &event), event),
            Err(_) => return,
        };
        match event {
            (found, Event::Start(start)) => {
                if open.len() >= MAX_XMP_DEPTH {
                    return;
                }
                let inherited = open.last().copied().flatten();
                open.push(inherited.or(found));
                text.clear();
                attribute_properties(&reader, &start, &mut metadata.info);
            }
            (_, Event::Empty(start)) => attribute_properties(&reader, &start, &mut metadata.info),
            (_, Event::Text(t)) => {
                text.push_str(&t.xml10_content());
            }
            (_, Event::GeneralRef(reference)) => {
                if let Ok(Some(ch)) = crate::parse::xml_reference(&reference) {
                    text.push(ch);
                }
            }
            (_, Event::End(_)) => {
                let Some(within) = open.pop() else {
                    return;
                };
                let value = std::mem::take(&mut text);
                let value = value.trim();
                if value.is_empty() {
                    continue;
                }
                match within {
                    // The first alternative of the title (the default
                    // language's, by convention).
                    Some(Property::Title) if title.is_empty() => title = value.to_string(),
                    Some(Property::Creator) => creators.push(value.to_string()),
                    Some(Property::Language) => metadata.info.set(Field::Language, value),
                    Some(Property::Date) => metadata.info.set(Field::Date, value),
                    _ => {}
                }
            }
            (_, Event::Eof) => break,
            _ => {}
        }
    }
    if !creators.is_empty() {
        metadata.info.set(Field::Author, &creators.join("; "));
    }
    if !title.is_empty() {
        metadata.title = Some(title);
    }
}

/// The property an element opens, by its namespace and local name.
fn property(namespace: &ResolveResult<'_>, event: &Event<'_>) -> Option<Property> {
    let Event::Start(start) = event else {
        return None;
    };
    let ResolveResult::Bound(ns) = namespace else {
        return None;
    };
    let local = start.local_name();
    match (ns.into_inner(), local.into_inner()) {
        (DUBLIN_CORE, "title") => Some(Property::Title),
        (DUBLIN_CORE, "creator") => Some(Property::Creator),
        (DUBLIN_CORE, "language") => Some(Property::Language),
        (XMP_BASIC, "CreateDate") => Some(Property::Date),
        _ => None,
    }
}

/// The simple properties written as attributes (`xmp:CreateDate="…"`).
fn attribute_properties(
    reader: &NsReader<&[u8]>,
    start: &quick_xml::events::BytesStart<'_>,
    info: &mut InfoReader,
) {
    for attribute in start.attributes().with_checks(false).flatten() {
        let (namespace, local) = reader.resolver().resolve_attribute(attribute.key);
        if let ResolveResult::Bound(ns) = namespace
            && ns.into_inner() == XMP_BASIC
            && local.into_inner() == "CreateDate"
            && let Ok(value) = attribute.normalized_value(quick_xml::XmlVersion::Implicit1_0)
        {
            info.set(Field::Date, &value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xmp_gives_title_creators_date_and_language_as_elements_or_attributes() {
        let xmp = r#"<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"
  xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:CreateDate="2022-11-30T09:00:00+01:00">
<dc:title><rdf:Alt><rdf:li xml:lang="x-default">Supply &amp; Services Agreement</rdf:li>
<rdf:li xml:lang="de">Liefervertrag</rdf:li></rdf:Alt></dc:title>
<dc:creator><rdf:Seq><rdf:li>Jane Doe</rdf:li><rdf:li>John Roe</rdf:li></rdf:Seq></dc:creator>
<dc:language><rdf:Bag><rdf:li>en-GB</rdf:li></rdf:Bag></dc:language>
</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>"#;
        let mut metadata = PdfMetadata::default();
        read_xmp(xmp, &mut metadata);
        assert_eq!(
            metadata.title.as_deref(),
            Some("Supply & Services Agreement")
        );
        let (info, warning) = metadata.info.finish();
        assert_eq!(warning, None);
        assert_eq!(info.author.as_deref(), Some("Jane Doe; John Roe"));
        assert_eq!(info.date.as_deref(), Some("2022-11-30"));
        assert_eq!(info.language.as_deref(), Some("en-GB"));
    }

    #[test]
    fn broken_xmp_keeps_what_it_read_and_does_not_fail() {
        let mut metadata = PdfMetadata::default();
        read_xmp(
            r#"<x xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:language>fr</dc:language><oops"#,
            &mut metadata,
        );
        assert_eq!(metadata.info.finish().0.language.as_deref(), Some("fr"));
    }

    #[test]
    fn pdf_text_strings_decode_by_their_byte_order_mark() {
        let utf16 = Object::String(vec![0xFE, 0xFF, 0x00, b'J', 0x00, 0xE9]);
        assert_eq!(string(&utf16).as_deref(), Some("Jé"));
        let latin = Object::String(vec![b'J', 0xE9]);
        assert_eq!(string(&latin).as_deref(), Some("Jé"));
        assert_eq!(string(&Object::Integer(3)), None);
    }
}
