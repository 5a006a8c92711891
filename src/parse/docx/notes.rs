//! `word/footnotes.xml` and `word/endnotes.xml`: each note's text, to be
//! attached to the paragraph that references it.

use std::collections::HashMap;

use super::body::{Context, NoteKind, Notes, PageMode, Paragraph, Sink, Walker};
use super::xml::{Node, Ns, XmlReader};
use crate::parse::{ParseFailure, Table, collapse_whitespace};

/// Collects one note's paragraphs (and tables, flattened) as one line.
#[derive(Default)]
struct NoteText {
    parts: Vec<String>,
}

impl Sink for NoteText {
    fn paragraph(&mut self, paragraph: Paragraph) {
        self.parts.push(paragraph.inline_text());
    }

    fn table(&mut self, table: Table, _page: Option<u32>) {
        for row in &table.rows {
            self.parts.push(row.join(" | "));
        }
    }
}

impl Notes {
    /// Reads the notes of one part. Separator and continuation notes (the
    /// rules Word draws above notes) carry no text and are skipped.
    pub fn read(
        &mut self,
        kind: NoteKind,
        text: &str,
        part: &str,
        ctx: Context<'_>,
        max_depth: u32,
    ) -> Result<(), ParseFailure> {
        let element = match kind {
            NoteKind::Footnote => "footnote",
            NoteKind::Endnote => "endnote",
        };
        let mut found: HashMap<i64, String> = HashMap::new();
        let ctx = Context { notes: None, ..ctx };
        let mut walker = Walker::new(ctx, NoteText::default(), part, PageMode::Unknown);
        let mut r = XmlReader::new(text, part, max_depth);
        loop {
            match r.next()? {
                Node::Open(e) if e.is(Ns::Word, element) => {
                    let separator = matches!(
                        e.attr("type").as_deref(),
                        Some("separator" | "continuationSeparator" | "continuationNotice")
                    );
                    let id = e.attr("id").and_then(|id| id.trim().parse::<i64>().ok());
                    match id {
                        Some(id) if !separator => {
                            walker.walk_children(&mut r)?;
                            let parts = std::mem::take(&mut walker.sink_mut().parts);
                            let note = collapse_whitespace(&parts.join(" "));
                            if !note.is_empty() {
                                found.insert(id, note);
                            }
                        }
                        _ => r.skip()?,
                    }
                }
                Node::Eof => break,
                _ => {}
            }
        }
        match kind {
            NoteKind::Footnote => self.footnotes.extend(found),
            NoteKind::Endnote => self.endnotes.extend(found),
        }
        Ok(())
    }
}
