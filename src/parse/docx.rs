//! DOCX (Office Open XML) → DocumentTree.

use super::{DocumentTree, Format, ParseFailure};
use crate::spec::ParsingSpec;

pub fn parse(_bytes: &[u8], _spec: &ParsingSpec) -> Result<DocumentTree, ParseFailure> {
    Err(ParseFailure::Unsupported(Format::Docx))
}
