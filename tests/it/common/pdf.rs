//! Small PDFs written byte by byte, for tests that need one damaged or
//! hostile in one precise way.

use std::io::Write;

/// What goes into a PDF of [`write`].
#[derive(Clone, Debug)]
pub struct PdfParts {
    /// Each page's content stream, before compression.
    pub pages: Vec<Vec<u8>>,
    /// Compress the content streams with Flate.
    pub flate: bool,
    /// More entries for every page dictionary (`/Deep [[…]]`).
    pub page_entries: String,
    /// More entries for the trailer.
    pub trailer_entries: String,
    /// More entries for the catalog (`/AcroForm << … >>`).
    pub catalog_entries: String,
    /// More entries for one page's dictionary, by page (`/Annots [9 0 R]`).
    pub entries_by_page: Vec<String>,
    /// More objects, numbered from [`PdfParts::first_object`] on.
    pub objects: Vec<String>,
}

impl PdfParts {
    /// Pages of one line of text each.
    pub fn text(lines: &[&str]) -> Self {
        Self {
            pages: lines.iter().map(|l| text_content(l)).collect(),
            flate: true,
            page_entries: String::new(),
            trailer_entries: String::new(),
            catalog_entries: String::new(),
            entries_by_page: Vec::new(),
            objects: Vec::new(),
        }
    }

    /// The number [`write`] gives the first of [`PdfParts::objects`].
    pub fn first_object(&self) -> usize {
        4 + 2 * self.pages.len()
    }
}

/// A content stream showing `line` at the top of the page in Helvetica.
pub fn text_content(line: &str) -> Vec<u8> {
    format!("BT /F1 12 Tf 72 720 Td ({line}) Tj ET").into_bytes()
}

/// Zlib-compresses `bytes` (a Flate stream's data).
pub fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    zlib.write_all(bytes).unwrap();
    zlib.finish().unwrap()
}

/// Writes a PDF: catalog, page tree, font, one page and content stream per
/// page, and a cross-reference table that points at every object.
pub fn write(parts: &PdfParts) -> Vec<u8> {
    let mut objects: Vec<Vec<u8>> = Vec::new();
    let pages = parts.pages.len();
    // 1 catalog, 2 page tree, 3 font, then page/content pairs.
    let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    objects.push(
        format!(
            "<< /Type /Catalog /Pages 2 0 R {} >>",
            parts.catalog_entries
        )
        .into_bytes(),
    );
    objects.push(
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            kids.join(" ")
        )
        .into_bytes(),
    );
    objects.push(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec());
    for (i, content) in parts.pages.iter().enumerate() {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
                 /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R {} {} >>",
                5 + 2 * i,
                parts.page_entries,
                parts.entries_by_page.get(i).map_or("", String::as_str)
            )
            .into_bytes(),
        );
        let (data, filter) = if parts.flate {
            (deflate(content), " /Filter /FlateDecode")
        } else {
            (content.clone(), "")
        };
        let mut stream = format!("<< /Length {}{filter} >>\nstream\n", data.len()).into_bytes();
        stream.extend(&data);
        stream.extend(b"\nendstream");
        objects.push(stream);
    }
    objects.extend(parts.objects.iter().map(|o| o.clone().into_bytes()));
    let mut pdf = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
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
            "trailer\n<< /Size {} /Root 1 0 R {} >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1,
            parts.trailer_entries
        )
        .bytes(),
    );
    pdf
}

/// `[` repeated `depth` times, then as many `]`.
pub fn nested_arrays(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// `<< /A ` repeated `depth` times, then as many `>>`.
pub fn nested_dictionaries(depth: usize) -> String {
    format!("{}{}", "<< /A ".repeat(depth), ">> ".repeat(depth))
}
