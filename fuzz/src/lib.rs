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

/// A one-page PDF with `text` at the innermost of `depth` levels of
/// nesting. `place` picks where: a Flate content stream, an uncompressed
/// one, the page dictionary, the trailer, an object stream; arrays or
/// dictionaries.
pub fn nested_pdf(place: u8, depth: usize, text: &str) -> Vec<u8> {
    use std::io::Write;
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
    let line = format!("BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET");
    let (content, page_extra, trailer_extra) = match (place >> 1) % 4 {
        0 | 1 => (format!("{line} BT {nested} TJ ET"), String::new(), String::new()),
        2 => (line, format!("/Deep {nested}"), String::new()),
        _ => (line, String::new(), format!("/Deep {nested}")),
    };
    let (data, filter) = if (place >> 1) % 4 == 0 {
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        let _ = zlib.write_all(content.as_bytes());
        (zlib.finish().unwrap_or_default(), " /Filter /FlateDecode")
    } else {
        (content.into_bytes(), "")
    };
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
             /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R {page_extra} >>"
        )
        .into_bytes(),
    ];
    let mut stream = format!("<< /Length {}{filter} >>\nstream\n", data.len()).into_bytes();
    stream.extend(&data);
    stream.extend(b"\nendstream");
    objects.push(stream);
    let mut pdf = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend(format!("{} 0 obj\n", i + 1).bytes());
        pdf.extend(object);
        pdf.extend(b"\nendobj\n");
    }
    let xref = pdf.len();
    pdf.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for offset in offsets {
        pdf.extend(format!("{offset:010} 00000 n \n").bytes());
    }
    pdf.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R {trailer_extra} >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .bytes(),
    );
    pdf
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
