//! The skeleton store: every document's skeleton flattened into global
//! arrays, so that stage 2 of retrieval (parent paragraph, neighbours,
//! section) is array lookups on sentence numbers.
//!
//! Global sentence numbers are the row numbers of the vector file and the
//! ids stored in the BM25 and HNSW indexes. Written once per index version
//! as `skeleton.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::chunk::{Chunk, ChunkKind};
use crate::enrich::{Enrichment, Target, TypedValue, typed_values};
use crate::parse::{DocumentInfo, FormField};
use crate::pipeline::ProcessedDocument;
use crate::skeleton::{PageBox, Skeleton, SourceTag};

use super::numbers::{DocumentNumber, ParagraphNumber, SectionNumber, SentenceNumber};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SkeletonStore {
    pub documents: Vec<DocumentRecord>,
    pub sections: Vec<SectionRecord>,
    pub paragraphs: Vec<ParagraphRecord>,
    pub sentences: Vec<SentenceRecord>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<TableRecord>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DocumentRecord {
    /// Stable document id (hash of the key).
    pub id: String,
    /// The document's key (source path and file path).
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Author, date, version and language, as the document records them.
    #[serde(default, skip_serializing_if = "DocumentInfo::is_empty")]
    pub info: DocumentInfo,
    pub acl: Vec<String>,
    /// Labels for exact-match filters: the source's, and `format`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Global sentence numbers of the document, `[start, end)`.
    pub sentences: [SentenceNumber; 2],
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SectionRecord {
    pub document: DocumentNumber,
    /// The enclosing section (global number); `None` for a document's root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<SectionNumber>,
    pub path: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numbering: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_annex: bool,
    /// The form fields that stand in it (not in its subsections').
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FormField>,
    /// Sentences whose references point here (global numbers), in reading
    /// order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inbound: Vec<SentenceNumber>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ParagraphRecord {
    pub section: SectionNumber,
    /// Global sentence numbers, `[start, end)`.
    pub sentences: [SentenceNumber; 2],
    /// Sentences whose references point here (a caption, a title line, a
    /// numbered clause), in reading order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inbound: Vec<SentenceNumber>,
    /// The table this paragraph holds (part of), by global number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<u32>,
}

/// A table as an object ([`crate::skeleton::tables`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableRecord {
    /// Stable id, `<doc>:t<n>`.
    pub id: String,
    pub document: DocumentNumber,
    /// Its paragraphs (global numbers) in reading order: more than one
    /// when it continues over a page break.
    pub parts: Vec<ParagraphNumber>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Each column's label, its header cells joined.
    pub columns: Vec<String>,
    /// Each column's unit, where its header gives one.
    pub units: Vec<Option<String>>,
    /// Each data row's label, when the first column labels rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub row_headers: Vec<String>,
    /// Data rows and columns.
    pub shape: [u32; 2],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<[u32; 2]>,
    /// The earlier table (global number) it nearly repeats; its rows are
    /// not indexed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<u32>,
}

/// A reference a sentence makes ("as defined in Section 1.4", "Exhibit
/// B"), with what it points to in the same document when that was found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReferenceRecord {
    /// The reference as written ("Section 1.4").
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<ReferenceTarget>,
}

/// What a reference points to, by global number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", content = "id", rename_all = "snake_case")]
pub enum ReferenceTarget {
    Section(SectionNumber),
    Paragraph(ParagraphNumber),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SentenceRecord {
    /// Stable id, `<doc>:s<n>`.
    pub id: String,
    pub document: DocumentNumber,
    pub section: SectionNumber,
    pub paragraph: ParagraphNumber,
    /// Document-local chunk number of the first chunk holding it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<u32>,
    pub text: String,
    pub source: SourceTag,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Character offset and length in the document's canonical text.
    pub span: [u32; 2],
    pub confidence: f32,
    /// Where it stands on its pages, one box per line (PDF).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<PageBox>,
    /// Whether it is in the search indexes (the sentence filters passed).
    pub indexed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clause: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub definition: bool,
    /// The terms it defines, as written (`Agreement`, `Effective Date`);
    /// each has a row in the version's `terms.f32`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<String>,
    /// Dates, amounts, percentages, periods and organisations it mentions,
    /// lower-cased, for the entity signal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<String>,
    /// The references it makes, each with its target when found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<ReferenceRecord>,
    /// The amounts, percentages and dates it states, typed for exact
    /// filters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<TypedValue>,
}

/// A chunk of a document, kept in `chunks.json` for the graph export
/// (retrieval itself needs only each sentence's first chunk).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChunkRecord {
    /// Stable id, `<doc>:c<n>`.
    pub id: String,
    pub document: DocumentNumber,
    /// Position among the document's chunks, from 0.
    pub index: u32,
    pub text: String,
    pub heading_path: Vec<String>,
    pub tokens: u32,
    /// Global sentence numbers of the sentences it covers, in reading order.
    pub sentences: Vec<SentenceNumber>,
    /// For a chunk of a table (or of a shard of one), the table's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
}

impl ChunkRecord {
    /// The chunks of `doc`, numbered as if it were appended to `store` next.
    pub fn of(doc: &ProcessedDocument, store: &SkeletonStore) -> Vec<ChunkRecord> {
        let document = DocumentNumber(store.documents.len() as u32);
        Self::of_document(&doc.skeleton, &doc.chunks, document, store)
    }

    /// The `chunks` of `skeleton`, document `document` of `store`.
    pub fn of_document(
        skeleton: &Skeleton,
        chunks: &[Chunk],
        document: DocumentNumber,
        store: &SkeletonStore,
    ) -> Vec<ChunkRecord> {
        let sentence_base = store
            .documents
            .get(document.index())
            .map_or(SentenceNumber(store.sentences.len() as u32), |d| {
                d.sentences[0]
            });
        chunks
            .iter()
            .map(|chunk| ChunkRecord {
                id: format!("{}:c{}", skeleton.document.id, chunk.index),
                document,
                index: chunk.index,
                text: chunk.text.clone(),
                heading_path: chunk.heading_path.clone(),
                tokens: chunk.tokens,
                sentences: chunk
                    .sentences
                    .iter()
                    .map(|s| sentence_base.after(s.0))
                    .collect(),
                // Its rows' table (a caption's sentence may come first).
                table: (chunk.kind == ChunkKind::Table)
                    .then(|| {
                        chunk.sentences.iter().find_map(|&s| {
                            let paragraph = skeleton.sentence(s).paragraph;
                            skeleton
                                .tables
                                .iter()
                                .find(|t| t.parts.contains(&paragraph))
                        })
                    })
                    .flatten()
                    .map(|table| format!("{}:t{}", skeleton.document.id, table.index)),
            })
            .collect()
    }
}

/// Per sentence of a document, the first of its `chunks` that holds it.
fn first_chunks(chunks: &[Chunk], sentences: usize) -> Vec<Option<u32>> {
    let mut first = vec![None; sentences];
    for chunk in chunks {
        for s in &chunk.sentences {
            if let Some(slot) = first.get_mut(s.index())
                && slot.is_none()
            {
                *slot = Some(chunk.index);
            }
        }
    }
    first
}

impl SkeletonStore {
    /// Checks that every number in the store points inside it and that
    /// ranges hold what they claim: a document's and a paragraph's
    /// sentences name that document and paragraph. Retrieval indexes by
    /// these numbers, so a store that fails this (a version from before
    /// checksums, damaged on disk) is refused on open instead of panicking
    /// in a query.
    pub fn validate(&self) -> Result<(), String> {
        let (documents, sections, paragraphs, sentences) = (
            self.documents.len(),
            self.sections.len(),
            self.paragraphs.len(),
            self.sentences.len(),
        );
        let range = |what: &str, i: usize, [start, end]: [SentenceNumber; 2]| {
            if start > end || end.index() > sentences {
                Err(format!(
                    "{what} {i}: sentences {start}..{end} outside the {sentences} sentences"
                ))
            } else {
                Ok(start.index()..end.index())
            }
        };
        for (d, document) in self.documents.iter().enumerate() {
            for s in range("document", d, document.sentences)? {
                if self.sentences[s].document.index() != d {
                    return Err(format!("document {d}: sentence {s} names another document"));
                }
            }
        }
        for (i, section) in self.sections.iter().enumerate() {
            if section.document.index() >= documents {
                return Err(format!(
                    "section {i}: document {} of {documents}",
                    section.document
                ));
            }
            if section.parent.is_some_and(|p| p.index() >= sections) {
                return Err(format!(
                    "section {i}: parent outside the {sections} sections"
                ));
            }
        }
        for (p, paragraph) in self.paragraphs.iter().enumerate() {
            if paragraph.section.index() >= sections {
                return Err(format!(
                    "paragraph {p}: section {} of {sections}",
                    paragraph.section
                ));
            }
            for s in range("paragraph", p, paragraph.sentences)? {
                if self.sentences[s].paragraph.index() != p {
                    return Err(format!(
                        "paragraph {p}: sentence {s} names another paragraph"
                    ));
                }
            }
            if let Some(t) = paragraph.table
                && !self
                    .tables
                    .get(t as usize)
                    .is_some_and(|table| table.parts.contains(&ParagraphNumber(p as u32)))
            {
                return Err(format!("paragraph {p}: table {t} does not hold it"));
            }
        }
        for (t, table) in self.tables.iter().enumerate() {
            if table.document.index() >= documents
                || table.parts.is_empty()
                || table.parts.iter().any(|&p| p.index() >= paragraphs)
                || table.duplicate_of.is_some_and(|d| d as usize >= t)
            {
                return Err(format!(
                    "table {t}: document, parts or the table it repeats outside the store"
                ));
            }
        }
        for (i, sentence) in self.sentences.iter().enumerate() {
            if sentence.document.index() >= documents
                || sentence.section.index() >= sections
                || sentence.paragraph.index() >= paragraphs
            {
                return Err(format!(
                    "sentence {i}: document {}, section {}, paragraph {} outside the store",
                    sentence.document, sentence.section, sentence.paragraph
                ));
            }
            if !sentence.confidence.is_finite() {
                return Err(format!("sentence {i}: confidence is not a number"));
            }
            for reference in &sentence.references {
                let document = match reference.target {
                    None => continue,
                    Some(ReferenceTarget::Section(t)) => {
                        self.sections.get(t.index()).map(|s| s.document)
                    }
                    Some(ReferenceTarget::Paragraph(t)) => self
                        .paragraphs
                        .get(t.index())
                        .and_then(|p| self.sections.get(p.section.index()))
                        .map(|s| s.document),
                };
                if document != Some(sentence.document) {
                    return Err(format!(
                        "sentence {i}: reference {:?} points outside its document",
                        reference.label
                    ));
                }
            }
        }
        Ok(())
    }

    /// Points each sentence of `document` at the first of `chunks` that
    /// holds it: for chunks cut after the document was added (the
    /// `semantic` strategy cuts once the vectors are known).
    pub fn set_chunks(&mut self, document: DocumentNumber, chunks: &[Chunk]) {
        let Some(&DocumentRecord {
            sentences: [start, end],
            ..
        }) = self.documents.get(document.index())
        else {
            return;
        };
        let first = first_chunks(chunks, (end - start) as usize);
        for (sentence, chunk) in self.sentences[start.index()..end.index()]
            .iter_mut()
            .zip(first)
        {
            sentence.chunk = chunk;
        }
    }

    /// Whether document `document` has a sentence in the index: only
    /// those documents are in the BM25 index's document field (their
    /// words ride on their first indexed sentence), and only they count
    /// as the version's indexed documents.
    pub fn has_indexed_sentence(&self, document: &DocumentRecord) -> bool {
        let [start, end] = document.sentences;
        self.sentences
            .get(start.index()..end.index())
            .is_some_and(|sentences| sentences.iter().any(|s| s.indexed))
    }

    /// The form fields of section `section` and of the sections
    /// enclosing it (global numbers), outermost first: the key-values
    /// that frame what the section says.
    pub fn framing_fields(&self, section: SectionNumber) -> Vec<FormField> {
        let mut chain = Vec::new();
        let mut at = Some(section);
        // Only a parent numbered before its child is followed, so the walk
        // ends even over a damaged store.
        while let Some(s) = at {
            let Some(record) = self.sections.get(s.index()) else {
                break;
            };
            chain.push(record);
            at = record.parent.filter(|p| *p < s);
        }
        chain
            .iter()
            .rev()
            .flat_map(|r| r.fields.iter().cloned())
            .collect()
    }

    /// Appends one processed document.
    pub fn add(
        &mut self,
        doc: &ProcessedDocument,
        acl: &[String],
        labels: &BTreeMap<String, String>,
    ) {
        let skeleton = &doc.skeleton;
        let document = DocumentNumber(self.documents.len() as u32);
        let section_base = SectionNumber(self.sections.len() as u32);
        let paragraph_base = ParagraphNumber(self.paragraphs.len() as u32);
        let sentence_base = SentenceNumber(self.sentences.len() as u32);
        let enrichment: &Enrichment = &doc.enrichment;

        for (i, section) in skeleton.sections.iter().enumerate() {
            self.sections.push(SectionRecord {
                document,
                parent: section.parent.map(|p| section_base.after(p.0)),
                path: section.path.0.clone(),
                numbering: section.numbering.clone(),
                is_annex: enrichment.sections.get(i).is_some_and(|a| a.is_annex),
                fields: section.fields.clone(),
                inbound: enrichment.sections.get(i).map_or_else(Vec::new, |a| {
                    a.inbound.iter().map(|s| sentence_base.after(s.0)).collect()
                }),
            });
        }
        for (i, paragraph) in skeleton.paragraphs.iter().enumerate() {
            self.paragraphs.push(ParagraphRecord {
                section: section_base.after(paragraph.section.0),
                sentences: [
                    sentence_base.after(paragraph.sentences.start),
                    sentence_base.after(paragraph.sentences.end),
                ],
                inbound: enrichment.paragraphs.get(i).map_or_else(Vec::new, |a| {
                    a.inbound.iter().map(|s| sentence_base.after(s.0)).collect()
                }),
                table: None,
            });
        }
        let table_base = self.tables.len() as u32;
        for table in &skeleton.tables {
            let number = table_base + table.index;
            for part in &table.parts {
                self.paragraphs[paragraph_base.after(part.0).index()].table = Some(number);
            }
            self.tables.push(TableRecord {
                id: format!("{}:t{}", skeleton.document.id, table.index),
                document,
                parts: table
                    .parts
                    .iter()
                    .map(|p| paragraph_base.after(p.0))
                    .collect(),
                caption: table.caption.clone(),
                columns: table.columns.clone(),
                units: table.units.clone(),
                row_headers: table.row_headers.clone(),
                shape: table.shape,
                pages: table.pages,
                duplicate_of: table.duplicate_of.map(|d| table_base + d),
            });
        }
        let chunk_of = first_chunks(&doc.chunks, skeleton.sentences.len());
        for sentence in &skeleton.sentences {
            let notes = enrichment.sentence(sentence.id);
            let mut entities = Vec::new();
            entities.extend(notes.dates.iter().map(|d| d.date.clone()));
            entities.extend(notes.amounts.iter().map(|a| a.text.to_lowercase()));
            entities.extend(notes.percentages.iter().map(|p| p.text.to_lowercase()));
            entities.extend(notes.fiscal_periods.iter().map(|p| p.period.to_lowercase()));
            entities.extend(notes.organizations.iter().map(|o| o.to_lowercase()));
            self.sentences.push(SentenceRecord {
                id: skeleton.sentence_key(sentence.id),
                document,
                section: section_base.after(sentence.section.0),
                paragraph: paragraph_base.after(sentence.paragraph.0),
                chunk: chunk_of[sentence.id.index()],
                text: sentence.text.clone(),
                source: sentence.source,
                page: sentence.page,
                span: [sentence.span.offset, sentence.span.len],
                confidence: sentence.confidence,
                boxes: sentence.boxes.clone(),
                indexed: sentence.indexable,
                clause: notes.clause.clone(),
                definition: notes.definition.is_some(),
                terms: notes.defined_terms.clone(),
                entities,
                references: notes
                    .references
                    .iter()
                    .map(|r| ReferenceRecord {
                        label: r.label.clone(),
                        target: r.target.map(|t| match t {
                            Target::Section(id) => {
                                ReferenceTarget::Section(section_base.after(id.0))
                            }
                            Target::Paragraph(id) => {
                                ReferenceTarget::Paragraph(paragraph_base.after(id.0))
                            }
                        }),
                    })
                    .collect(),
                values: typed_values(notes),
            });
        }
        let mut metadata = labels.clone();
        metadata.insert(
            "format".to_string(),
            skeleton.document.format.as_str().to_string(),
        );
        self.documents.push(DocumentRecord {
            id: skeleton.document.id.to_string(),
            key: skeleton.document.source.clone(),
            title: skeleton.document.title.clone(),
            info: skeleton.document.info.clone(),
            acl: acl.to_vec(),
            metadata,
            sentences: [sentence_base, SentenceNumber(self.sentences.len() as u32)],
        });
    }

    /// The indexed sentences of a paragraph, joined by spaces.
    pub fn paragraph_text(&self, paragraph: &ParagraphRecord) -> String {
        self.indexed_text(paragraph.sentences)
    }

    /// The indexed sentences of a document, joined by spaces.
    pub fn document_text(&self, document: &DocumentRecord) -> String {
        self.indexed_text(document.sentences)
    }

    /// The indexed sentences of the range `[start, end)`, joined by spaces.
    fn indexed_text(&self, [start, end]: [SentenceNumber; 2]) -> String {
        let mut text = String::new();
        for s in &self.sentences[start.index()..end.index()] {
            if s.indexed {
                if !text.is_empty() {
                    text.push(' ');
                }
                text.push_str(&s.text);
            }
        }
        text
    }

    /// The sentences a reference's target holds, in reading order: a
    /// paragraph's, or a section's own (not its subsections'). Empty for a
    /// target outside the store.
    pub fn target_sentences(&self, target: ReferenceTarget) -> Vec<SentenceNumber> {
        match target {
            ReferenceTarget::Paragraph(p) => self
                .paragraphs
                .get(p.index())
                .map_or(Vec::new(), |p| SentenceNumber::range(p.sentences).collect()),
            ReferenceTarget::Section(h) => {
                let Some(section) = self.sections.get(h.index()) else {
                    return Vec::new();
                };
                SentenceNumber::range(self.documents[section.document].sentences)
                    .filter(|&i| self.sentences[i].section == h)
                    .collect()
            }
        }
    }

    /// The table sentence `i` is a row of, with the row's position among
    /// the table's data rows (over all its parts); `None` for a sentence
    /// outside tables.
    pub fn table_row(&self, i: SentenceNumber) -> Option<(&TableRecord, usize)> {
        let s = self.sentences.get(i.index())?;
        let p = s.paragraph;
        let table = self
            .tables
            .get(self.paragraphs.get(p.index())?.table? as usize)?;
        let mut row = 0usize;
        for &part in &table.parts {
            let [start, end] = self.paragraphs.get(part.index())?.sentences;
            if part == p {
                return Some((table, row + (i - start) as usize));
            }
            row += (end - start) as usize;
        }
        None
    }

    pub fn section_path(&self, sentence: SentenceNumber) -> &[String] {
        let s = &self.sentences[sentence];
        &self.sections[s.section].path
    }
}
