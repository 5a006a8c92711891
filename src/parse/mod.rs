//! Parsing: bytes of one file → [`DocumentTree`].
//!
//! One module per format, all producing the same tree, then the shared
//! passes every format goes through: cleaning ([`clean`]), table-of-contents
//! detection ([`toc`]) and rendering of the canonical text.
//!
//! Every bound comes from [`ParsingSpec`]; every failure is a [`ParseError`]
//! that names the file and the reason, and never a panic.

pub mod clean;
pub mod decode;
pub mod docx;
mod forms;
pub mod html;
pub mod info;
pub mod legibility;
pub mod markdown;
pub mod numerals;
pub mod pdf;
#[cfg(test)]
mod test_support;
pub mod text;
pub mod toc;
mod tree;
pub mod units;

use std::path::Path;

pub use forms::{FieldValue, FormField};
pub use info::{DateRange, DocumentInfo, Field, InfoReader};
pub use tree::{
    Block, BlockKind, DocumentTree, Format, PageLine, Section, SectionIdx, Table, TextSpan,
    TocEntry, TreeBuilder, collapse_whitespace, split_heading_numbering,
};

use crate::spec::ParsingSpec;

/// The character an XML entity reference stands for: a character
/// reference (`&#233;`) or one of the five predefined entities. `None`
/// for any other entity (the formats read here declare none).
pub(crate) fn xml_reference(
    reference: &quick_xml::events::BytesRef<'_>,
) -> Result<Option<char>, quick_xml::Error> {
    if let Some(ch) = reference.resolve_char_ref()? {
        return Ok(Some(ch));
    }
    Ok(match &**reference {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => None,
    })
}

/// Why a document could not be parsed.
#[derive(Debug, thiserror::Error)]
pub enum ParseFailure {
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    #[error("empty file")]
    Empty,
    #[error("no text content")]
    NoText,
    #[error("{size} bytes is over the limit of {limit} (parsing.maxFileBytes)")]
    TooLarge { size: u64, limit: u64 },
    #[error("binary content, not text: {0}")]
    Binary(String),
    #[error("unsupported file type {0:?} (known: .md, .markdown, .html, .htm, .docx, .pdf, .txt)")]
    UnknownFormat(String),
    #[error("corrupt {format} file: {detail}")]
    Corrupt { format: Format, detail: String },
    #[error(
        "{part} inflates past {limit} bytes (parsing.maxDecompressedBytes); refusing a possible zip bomb"
    )]
    ZipBomb { part: String, limit: u64 },
    #[error(
        "the archive lists {entries} entries, over the limit of {limit} (parsing.maxArchiveEntries)"
    )]
    TooManyEntries { entries: usize, limit: u32 },
    #[error("malformed XML in {part}: {detail}")]
    Xml { part: String, detail: String },
    #[error(
        "{sentences} sentences, over the limit of {limit} (parsing.maxSentencesPerDocument); split the document or raise the limit"
    )]
    TooManySentences { sentences: usize, limit: u32 },
    #[error("nesting deeper than {limit} levels (parsing.maxNestingDepth)")]
    TooDeep { limit: u32 },
    #[error("encrypted: the document needs a password")]
    Encrypted,
    #[error(
        "its text looks garbled on every page ({detail}): a font without a usable Unicode mapping, or a damaged file"
    )]
    Garbled { detail: String },
    #[error("none of its {pages} pages has a text layer (a scan?): it needs OCR")]
    NeedsOcr { pages: usize },
    #[error("not parsed within {seconds} s (parsing.maxSecondsPerDocument)")]
    TimedOut { seconds: u32 },
    #[error(
        "needed more than {limit} bytes of memory by page {page} (parsing.maxMemoryBytesPerDocument)"
    )]
    OutOfMemory { limit: u64, page: u32 },
}

/// A failure to parse one document, naming it.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ParseError {
    /// The file (or source URI) that failed.
    pub path: String,
    #[source]
    pub reason: ParseFailure,
}

/// Parses one file. The format comes from the extension, or from the
/// content when the extension names none.
pub fn parse_file(path: &Path, spec: &ParsingSpec) -> Result<DocumentTree, ParseError> {
    let fail = |reason| ParseError {
        path: path.display().to_string(),
        reason,
    };
    let size = std::fs::metadata(path).map_err(|e| fail(e.into()))?.len();
    if size > spec.max_file_bytes {
        return Err(fail(ParseFailure::TooLarge {
            size,
            limit: spec.max_file_bytes,
        }));
    }
    let bytes = std::fs::read(path).map_err(|e| fail(e.into()))?;
    let format = detect_format(path, &bytes).map_err(fail)?;
    parse_bytes(&bytes, format, spec).map_err(fail)
}

/// Chooses a file's format: the content's signature for zip and PDF files
/// whatever their name, else the extension, else a sniff of the content.
pub fn detect_format(path: &Path, bytes: &[u8]) -> Result<Format, ParseFailure> {
    let by_extension = Format::from_extension(path);
    match (Format::sniff(bytes), by_extension) {
        (Some(sniffed @ (Format::Pdf | Format::Docx)), _) => Ok(sniffed),
        (_, Some(format)) => Ok(format),
        (Some(sniffed), None) => Ok(sniffed),
        (None, None) => Err(ParseFailure::UnknownFormat(
            path.extension()
                .map(|e| format!(".{}", e.to_string_lossy()))
                .unwrap_or_else(|| "(no extension)".into()),
        )),
    }
}

/// Parses the bytes of a document of a known format.
pub fn parse_bytes(
    bytes: &[u8],
    format: Format,
    spec: &ParsingSpec,
) -> Result<DocumentTree, ParseFailure> {
    if bytes.is_empty() {
        return Err(ParseFailure::Empty);
    }
    if bytes.len() as u64 > spec.max_file_bytes {
        return Err(ParseFailure::TooLarge {
            size: bytes.len() as u64,
            limit: spec.max_file_bytes,
        });
    }
    let mut tree = match format {
        Format::Docx => docx::parse(bytes, spec)?,
        Format::Pdf => pdf::parse(bytes, spec)?,
        Format::Markdown | Format::Html | Format::Text => {
            let decoded = decode::decode_text(bytes)?;
            let mut tree = match format {
                Format::Markdown => markdown::parse(&decoded.text, spec)?,
                Format::Html => html::parse(&decoded.text, spec)?,
                _ => text::parse(&decoded.text, spec)?,
            };
            if let Some(warning) = decoded.warning {
                tree.warnings.insert(0, warning);
            }
            tree
        }
    };
    finish(&mut tree, spec);
    if tree.blocks().next().is_none() && tree.sections.len() <= 1 {
        return Err(ParseFailure::NoText);
    }
    Ok(tree)
}

/// The passes every format shares, in order: cleaning, table-of-contents
/// extraction, rendering of the canonical text.
pub fn finish(tree: &mut DocumentTree, spec: &ParsingSpec) {
    clean::clean_tree(tree, spec);
    if spec.remove_table_of_contents {
        toc::extract_toc(tree);
    }
    tree.prune_empty_sections();
    tree.render();
}
