//! Markdown (CommonMark with GFM tables) → DocumentTree.

use super::{DocumentTree, Format, ParseFailure, TreeBuilder};
use crate::spec::ParsingSpec;

pub fn parse(text: &str, _spec: &ParsingSpec) -> Result<DocumentTree, ParseFailure> {
    let mut b = TreeBuilder::new(Format::Markdown);
    for para in text.split("\n\n") {
        b.paragraph(para);
    }
    Ok(b.finish())
}
