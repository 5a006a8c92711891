//! PDF: not parsed yet.
//!
//! Layout-aware PDF parsing (positions, reading order across columns,
//! running headers, tables from ruling lines, per-line boxes) lands in its
//! own change; until then a PDF is reported as unsupported, by name, and the
//! rest of a corpus carries on.

use super::{DocumentTree, Format, ParseFailure};
use crate::spec::ParsingSpec;

pub fn parse(_bytes: &[u8], _spec: &ParsingSpec) -> Result<DocumentTree, ParseFailure> {
    Err(ParseFailure::Unsupported(Format::Pdf))
}
