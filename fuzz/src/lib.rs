//! What the fuzz targets share.

use std::sync::Once;

use trellis::spec::ParsingSpec;

/// The parsing bounds under fuzzing: the defaults, with a time bound short
/// enough that a hang shows up as a `TimedOut` error well inside
/// libFuzzer's own `-timeout`, which the fuzz script sets above it.
pub fn spec() -> ParsingSpec {
    ParsingSpec {
        max_seconds_per_document: 10,
        ..ParsingSpec::default()
    }
}

/// Installs, once, a panic hook that ignores panics on the PDF parser's
/// guarded thread (the parser turns them into errors, as users see them)
/// and aborts on every other panic, as libFuzzer's own hook does, so that
/// those are reported as crashes.
pub fn quiet_guarded_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            if std::thread::current().name() == Some("pdf") {
                return;
            }
            eprintln!("{info}");
            std::process::abort();
        }));
    });
}

/// Small PDFs written byte by byte: the integration tests' writer.
#[path = "../../tests/it/common/pdf.rs"]
pub mod pdf;

/// A one-page PDF with `text` at the innermost of `depth` levels of
/// nesting. `place` picks where: a Flate content stream, an uncompressed
/// one, the page dictionary, the trailer; arrays or dictionaries.
pub fn nested_pdf(place: u8, depth: usize, text: &str) -> Vec<u8> {
    let escaped: String = text
        .chars()
        .filter(|c| !matches!(c, '(' | ')' | '\\'))
        .collect();
    let (open, close) = if place & 1 == 0 {
        ("[", "]")
    } else {
        ("<< /A ", ">> ")
    };
    let nested = format!("{}({escaped}){}", open.repeat(depth), close.repeat(depth));
    let mut parts = pdf::PdfParts::text(&[&escaped]);
    match (place >> 1) % 4 {
        0 | 1 => parts.pages[0].extend(format!(" BT {nested} TJ ET").bytes()),
        2 => parts.page_entries = format!("/Deep {nested}"),
        _ => parts.trailer_entries = format!("/Deep {nested}"),
    }
    parts.flate = (place >> 1) % 4 != 1;
    pdf::write(&parts)
}

/// A DOCX whose body nests `depth` levels of one element around a
/// paragraph of `text`. `kind` picks the element: content controls,
/// tables, text boxes or equations.
pub fn nested_docx(kind: u8, depth: usize, text: &str) -> Vec<u8> {
    use std::io::Write;
    let text: String = text
        .chars()
        .filter(|c| !matches!(c, '<' | '>' | '&'))
        .collect();
    let paragraph = format!("<w:p><w:r><w:t>{text}</w:t></w:r></w:p>");
    let (open, close) = match kind % 4 {
        0 => ("<w:sdt><w:sdtContent>", "</w:sdtContent></w:sdt>"),
        1 => ("<w:tbl><w:tr><w:tc>", "</w:tc></w:tr></w:tbl>"),
        2 => (
            "<w:p><w:r><w:pict><v:shape><v:textbox><w:txbxContent>",
            "</w:txbxContent></v:textbox></v:shape></w:pict></w:r></w:p>",
        ),
        _ => ("<w:p><m:oMath><m:f><m:num>", "</m:num></m:f></m:oMath></w:p>"),
    };
    let document = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\
         <w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\" \
         xmlns:m=\"http://schemas.openxmlformats.org/officeDocument/2006/math\" \
         xmlns:v=\"urn:schemas-microsoft-com:vml\"><w:body>{}{paragraph}{}</w:body></w:document>",
        open.repeat(depth),
        close.repeat(depth)
    );
    let parts = [
        (
            "[Content_Types].xml",
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
             <Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">\
             <Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>\
             <Default Extension=\"xml\" ContentType=\"application/xml\"/>\
             <Override PartName=\"/word/document.xml\" \
             ContentType=\"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml\"/>\
             </Types>"
                .to_string(),
        ),
        (
            "_rels/.rels",
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
             <Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\
             <Relationship Id=\"rId1\" \
             Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" \
             Target=\"word/document.xml\"/></Relationships>"
                .to_string(),
        ),
        ("word/document.xml", document),
    ];
    let mut archive = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, body) in parts {
        if archive.start_file(name, options).is_err() || archive.write_all(body.as_bytes()).is_err() {
            return Vec::new();
        }
    }
    archive
        .finish()
        .map(|cursor| cursor.into_inner())
        .unwrap_or_default()
}
