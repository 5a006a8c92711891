//! The OPC package (zip) around a DOCX: bounded part reads and the
//! relationships that name the parts.
//!
//! Every part is read through a reader capped at
//! `parsing.maxDecompressedBytes` (a declared size over the limit is refused
//! before inflating anything, and a lying header is caught by reading at
//! most one byte more than the limit), and archives listing more than
//! `parsing.maxArchiveEntries` entries are refused.

use std::io::{Cursor, Read};

use zip::ZipArchive;

use super::xml::{Ns, Visit, XmlReader, decode_part};
use crate::parse::{Format, ParseFailure};
use crate::spec::ParsingSpec;

/// The main document part's conventional name, used when the package does
/// not say otherwise.
const DEFAULT_DOCUMENT_PART: &str = "word/document.xml";

/// Content types of a main document part (document, macro-enabled, template).
const MAIN_CONTENT_TYPES: [&str; 4] = [
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
    "application/vnd.ms-word.document.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
];

/// The parts a DOCX parser reads, by package name.
#[derive(Debug, Default)]
pub(super) struct DocumentParts {
    pub document: String,
    pub styles: Option<String>,
    pub numbering: Option<String>,
    pub footnotes: Option<String>,
    pub endnotes: Option<String>,
    pub core_properties: Option<String>,
    /// Chart parts by the relationship id the document refers to them by.
    pub charts: Vec<(String, String)>,
}

/// A relationship from one part to another.
#[derive(Debug)]
struct Relationship {
    id: String,
    kind: String,
    target: String,
    external: bool,
}

impl Relationship {
    /// Transitional and Strict relationship types differ in their prefix
    /// only: match on the last path segment.
    fn is(&self, kind: &str) -> bool {
        self.kind.rsplit('/').next() == Some(kind)
    }
}

/// An opened DOCX archive.
pub(super) struct Package<'b> {
    archive: ZipArchive<Cursor<&'b [u8]>>,
    max_part_bytes: u64,
    max_depth: u32,
}

impl<'b> Package<'b> {
    pub fn open(bytes: &'b [u8], spec: &ParsingSpec) -> Result<Self, ParseFailure> {
        let archive = ZipArchive::new(Cursor::new(bytes)).map_err(corrupt)?;
        if archive.len() > spec.max_archive_entries as usize {
            return Err(ParseFailure::TooManyEntries {
                entries: archive.len(),
                limit: spec.max_archive_entries,
            });
        }
        Ok(Self {
            archive,
            max_part_bytes: spec.max_decompressed_bytes,
            max_depth: spec.max_nesting_depth,
        })
    }

    /// Reads a part, `None` when the package has no such part. Names match
    /// exactly, else case-insensitively (part names are case-insensitive in
    /// OPC, and some producers disagree with their own content types).
    pub fn read(&mut self, part: &str) -> Result<Option<Vec<u8>>, ParseFailure> {
        let index = match self.archive.index_for_name(part) {
            Some(index) => index,
            None => {
                let found = self.archive.file_names().position(|name| {
                    name.is_ok_and(|name| name.trim_start_matches('/').eq_ignore_ascii_case(part))
                });
                match found {
                    Some(index) => index,
                    None => return Ok(None),
                }
            }
        };
        let limit = self.max_part_bytes;
        let bomb = || ParseFailure::ZipBomb {
            part: part.to_string(),
            limit,
        };
        let file = self.archive.by_index(index).map_err(corrupt)?;
        if file.size() > limit {
            return Err(bomb());
        }
        // The declared size may lie: read at most one byte past the limit.
        let capacity = file.size().min(16 * 1024 * 1024) as usize;
        let mut bytes = Vec::with_capacity(capacity);
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| ParseFailure::Corrupt {
                format: Format::Docx,
                detail: format!("{part}: {e}"),
            })?;
        if bytes.len() as u64 > limit {
            return Err(bomb());
        }
        Ok(Some(bytes))
    }

    /// Finds the parts of the document: the main part from the package
    /// relationships (else the content types, else the conventional name),
    /// and styles, numbering and notes from the main part's relationships.
    pub fn document_parts(&mut self) -> Result<DocumentParts, ParseFailure> {
        let package_rels = self.relationships("")?;
        let document = match package_rels
            .iter()
            .find(|r| r.is("officeDocument") && !r.external)
        {
            Some(rel) => resolve_target("", &rel.target),
            None => self
                .main_part_from_content_types()?
                .unwrap_or_else(|| DEFAULT_DOCUMENT_PART.to_string()),
        };
        let core_properties = package_rels
            .iter()
            .find(|r| r.is("core-properties") && !r.external)
            .map(|r| resolve_target("", &r.target))
            .or_else(|| Some("docProps/core.xml".to_string()));

        let document_rels = self.relationships(&document)?;
        let related = |kind: &str, fallback: &str| {
            document_rels
                .iter()
                .find(|r| r.is(kind) && !r.external)
                .map(|r| resolve_target(&document, &r.target))
                .or_else(|| {
                    document_rels
                        .is_empty()
                        .then(|| sibling(&document, fallback))
                })
        };
        let charts = document_rels
            .iter()
            .filter(|r| r.is("chart") && !r.external)
            .map(|r| (r.id.clone(), resolve_target(&document, &r.target)))
            .collect();
        Ok(DocumentParts {
            charts,
            styles: related("styles", "styles.xml"),
            numbering: related("numbering", "numbering.xml"),
            footnotes: related("footnotes", "footnotes.xml"),
            endnotes: related("endnotes", "endnotes.xml"),
            core_properties,
            document,
        })
    }

    /// Reads and decodes a part as XML text, `None` when absent.
    pub fn read_text(&mut self, part: &str) -> Result<Option<String>, ParseFailure> {
        match self.read(part)? {
            Some(bytes) => Ok(Some(decode_part(&bytes, part)?.into_owned())),
            None => Ok(None),
        }
    }

    /// The deepest nesting the XML parts may have.
    pub fn max_depth(&self) -> u32 {
        self.max_depth
    }

    /// The relationships of `source` ("" for the package itself).
    fn relationships(&mut self, source: &str) -> Result<Vec<Relationship>, ParseFailure> {
        let rels_part = match source.rsplit_once('/') {
            Some((dir, file)) => format!("{dir}/_rels/{file}.rels"),
            None if source.is_empty() => "_rels/.rels".to_string(),
            None => format!("_rels/{source}.rels"),
        };
        let Some(text) = self.read_text(&rels_part)? else {
            return Ok(Vec::new());
        };
        let mut rels = Vec::new();
        let mut reader = XmlReader::new(&text, &rels_part, self.max_depth);
        reader.visit_all(|visit| {
            if let Visit::Element(_, element) = visit
                && element.ns == Ns::Package
                && element.local() == "Relationship"
            {
                rels.push(Relationship {
                    id: element.attr("Id").unwrap_or_default(),
                    kind: element.attr("Type").unwrap_or_default(),
                    target: element.attr("Target").unwrap_or_default(),
                    external: element
                        .attr("TargetMode")
                        .is_some_and(|m| m.eq_ignore_ascii_case("External")),
                });
            }
        })?;
        Ok(rels)
    }

    fn main_part_from_content_types(&mut self) -> Result<Option<String>, ParseFailure> {
        let part = "[Content_Types].xml";
        let Some(text) = self.read_text(part)? else {
            return Ok(None);
        };
        let mut main = None;
        let mut reader = XmlReader::new(&text, part, self.max_depth);
        reader.visit_all(|visit| {
            if let Visit::Element(_, element) = visit
                && element.local() == "Override"
                && main.is_none()
                && element
                    .attr("ContentType")
                    .is_some_and(|t| MAIN_CONTENT_TYPES.contains(&t.as_str()))
            {
                main = element.attr("PartName").map(|p| resolve_target("", &p));
            }
        })?;
        Ok(main)
    }
}

/// A zip error as a corrupt-file failure, keeping the zip crate's words.
fn corrupt(e: zip::result::ZipError) -> ParseFailure {
    ParseFailure::Corrupt {
        format: Format::Docx,
        detail: e.to_string(),
    }
}

/// `name` in the same folder as `part`.
fn sibling(part: &str, name: &str) -> String {
    match part.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/{name}"),
        None => name.to_string(),
    }
}

/// Resolves a relationship target against its source part: absolute
/// targets ("/word/styles.xml") from the package root, relative ones from
/// the source's folder, with "." and ".." segments applied.
fn resolve_target(source: &str, target: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    if !target.starts_with('/')
        && let Some((dir, _)) = source.rsplit_once('/')
    {
        segments.extend(dir.split('/').filter(|s| !s.is_empty()));
    }
    for segment in target.split(['/', '\\']) {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    segments.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_against_their_source() {
        assert_eq!(resolve_target("", "word/document.xml"), "word/document.xml");
        assert_eq!(
            resolve_target("", "/word/document2.xml"),
            "word/document2.xml"
        );
        assert_eq!(
            resolve_target("word/document.xml", "styles.xml"),
            "word/styles.xml"
        );
        assert_eq!(
            resolve_target("word/document.xml", "/custom/n.xml"),
            "custom/n.xml"
        );
        assert_eq!(resolve_target("word/document.xml", "../x/y.xml"), "x/y.xml");
        assert_eq!(resolve_target("a.xml", "../../../b.xml"), "b.xml");
    }
}
