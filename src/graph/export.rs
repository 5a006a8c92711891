//! Writing an index version to a graph store, counting what is there, and
//! deleting versions no route serves.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::cypher::{self, Link};
use super::{GraphError, GraphStore, Statement, Value, run_with_retries};
use crate::index::{
    ChunkRecord, DocumentNumber, IndexVersion, ParagraphNumber, ReferenceTarget, SectionNumber,
    SentenceNumber, SkeletonStore,
};
use crate::parse::FieldValue;

/// What an export writes, numbered: 2 added the version's serving files
/// ([`super::version_files`]) and the paragraphs' centroids to the nodes
/// and links of 1; 3 added the sentences' `REFERS_TO` links; 4 their
/// boxes and paragraph text; 5 the `Table` nodes; 6 the sections' form
/// fields. Recorded on the version's marker.
pub const EXPORT_FORMAT: i64 = 6;

/// How an export writes.
#[derive(Clone, Copy, Debug)]
pub struct ExportOptions {
    /// Rows per `UNWIND` statement.
    pub batch_size: usize,
    /// Further attempts of a statement that failed for a reason that may
    /// pass.
    pub retries: u32,
}

/// Nodes per label and relationships per kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphCounts {
    pub nodes: BTreeMap<String, usize>,
    /// Keyed `From-KIND->To`.
    pub relationships: BTreeMap<String, usize>,
}

/// What one export wrote.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExportReport {
    /// `neo4j` or `falkordb`.
    pub store: String,
    pub version: String,
    /// What was written (each node and relationship once).
    pub written: GraphCounts,
    pub statements: usize,
    pub seconds: f64,
    /// Sentences written per second, over the whole export.
    pub sentences_per_second: f64,
}

/// The key of a relationship kind in [`GraphCounts`].
pub fn link_key(link: Link) -> String {
    format!("{}-{}->{}", link.from, link.kind, link.to)
}

/// The skeleton's string ids, from the store's global numbers.
pub struct Ids<'a> {
    index: &'a IndexVersion,
    vectors: &'a crate::index::Vectors,
    /// Per document, its first section and paragraph numbers: the store's
    /// arrays are appended document by document.
    section_base: Vec<SectionNumber>,
    paragraph_base: Vec<ParagraphNumber>,
    /// Each paragraph's text, made once: the paragraph node and each of
    /// its sentences' nodes carry it.
    paragraph_text: Vec<String>,
}

impl<'a> Ids<'a> {
    fn new(index: &'a IndexVersion) -> Result<Self, GraphError> {
        let store = &index.store;
        let mut section_base = vec![SectionNumber(u32::MAX); store.documents.len()];
        for (i, s) in store.sections.iter().enumerate().rev() {
            section_base[s.document.index()] = SectionNumber(i as u32);
        }
        let mut paragraph_base = vec![ParagraphNumber(u32::MAX); store.documents.len()];
        for (i, p) in store.paragraphs.iter().enumerate().rev() {
            paragraph_base[store.sections[p.section].document.index()] = ParagraphNumber(i as u32);
        }
        Ok(Self {
            index,
            vectors: &index.search()?.vectors,
            section_base,
            paragraph_base,
            paragraph_text: store
                .paragraphs
                .iter()
                .map(|p| store.paragraph_text(p))
                .collect(),
        })
    }

    fn store(&self) -> &'a SkeletonStore {
        &self.index.store
    }

    fn document(&self, d: DocumentNumber) -> &'a str {
        &self.store().documents[d].id
    }

    fn section(&self, s: SectionNumber) -> String {
        let d = self.store().sections[s].document;
        format!("{}:h{}", self.document(d), s - self.section_base[d.index()])
    }

    fn paragraph_document(&self, p: ParagraphNumber) -> DocumentNumber {
        let store = self.store();
        store.sections[store.paragraphs[p].section].document
    }

    fn paragraph(&self, p: ParagraphNumber) -> String {
        let d = self.paragraph_document(p);
        format!(
            "{}:p{}",
            self.document(d),
            p - self.paragraph_base[d.index()]
        )
    }

    fn sentence(&self, i: SentenceNumber) -> &'a str {
        &self.store().sentences[i].id
    }

    /// The sentence after `i` in its document.
    fn next(&self, i: SentenceNumber) -> Option<SentenceNumber> {
        let store = self.store();
        let [_, end] = store.documents[store.sentences[i].document].sentences;
        let next = i.after(1);
        (next < end).then_some(next)
    }

    /// The sentence before `i` in its document.
    fn prev(&self, i: SentenceNumber) -> Option<SentenceNumber> {
        let store = self.store();
        let [start, _] = store.documents[store.sentences[i].document].sentences;
        (i > start).then(|| SentenceNumber(i.0 - 1))
    }
}

fn pair(from: impl Into<Value>, to: impl Into<Value>) -> Value {
    Value::map([("from", from.into()), ("to", to.into())])
}

/// The rows of one table (a label or a relationship kind).
pub enum Rows {
    Made(Vec<Value>),
    /// At most one row per sentence, made as it is written: these tables
    /// are most of an export, and the sentence rows hold the embeddings.
    PerSentence {
        row: fn(&Ids<'_>, SentenceNumber) -> Option<Value>,
        /// Every sentence has a row (counted without making them).
        every: bool,
    },
}

/// Everything the export writes for one index version, table by table, as
/// the statements of [`cypher`] take them.
pub struct GraphRows<'a> {
    pub ids: Ids<'a>,
    /// Label, statement, rows.
    pub nodes: Vec<(&'static str, String, Rows)>,
    pub links: Vec<(Link, Rows)>,
}

impl GraphRows<'_> {
    /// The rows of `table`, `batch` at a time.
    pub fn batches<'s>(
        &'s self,
        table: &'s Rows,
        batch: usize,
    ) -> Box<dyn Iterator<Item = Vec<Value>> + 's> {
        let batch = batch.max(1);
        match table {
            Rows::Made(rows) => Box::new(rows.chunks(batch).map(<[Value]>::to_vec)),
            Rows::PerSentence { row, .. } => {
                let n = self.ids.store().sentences.len() as u32;
                let mut rows = (0..n)
                    .filter_map(move |i| row(&self.ids, SentenceNumber(i)))
                    .peekable();
                Box::new(std::iter::from_fn(move || {
                    rows.peek()?;
                    Some(rows.by_ref().take(batch).collect())
                }))
            }
        }
    }

    fn len(&self, table: &Rows) -> usize {
        match table {
            Rows::Made(rows) => rows.len(),
            Rows::PerSentence { every: true, .. } => self.ids.store().sentences.len(),
            Rows::PerSentence { row, .. } => {
                let n = self.ids.store().sentences.len() as u32;
                (0..n)
                    .filter(|&i| row(&self.ids, SentenceNumber(i)).is_some())
                    .count()
            }
        }
    }

    pub fn counts(&self) -> GraphCounts {
        GraphCounts {
            nodes: self
                .nodes
                .iter()
                .map(|(label, _, rows)| (label.to_string(), self.len(rows)))
                .chain([(cypher::VERSION.to_string(), 1)])
                .collect(),
            relationships: self
                .links
                .iter()
                .map(|(link, rows)| (link_key(*link), self.len(rows)))
                .collect(),
        }
    }
}

/// The sentence node: everything stage 2 needs, and the embedding (null
/// for sentences the index filters leave out). Its boxes on the page are
/// two lists, as a store's properties hold only lists of plain values:
/// `box_pages` (one page per box) and `boxes` (`x0, y0, x1, y1` per box,
/// in PDF points), empty where the format has no pages.
fn sentence_row(ids: &Ids<'_>, i: SentenceNumber) -> Option<Value> {
    let store = ids.store();
    let s = &store.sentences[i];
    let [start, _] = store.documents[s.document].sentences;
    let embedding = if s.indexed {
        Value::Vector(ids.vectors.row(i.0).to_vec())
    } else {
        Value::Null
    };
    Some(Value::map([
        ("id", s.id.as_str().into()),
        ("text", s.text.as_str().into()),
        ("embedding", embedding),
        ("source", source_name(s.source).into()),
        ("page", s.page.into()),
        ("confidence", s.confidence.into()),
        ("char_offset", s.span[0].into()),
        ("char_length", s.span[1].into()),
        ("section_path", store.section_path(i).to_vec().into()),
        ("parent_paragraph_id", ids.paragraph(s.paragraph).into()),
        (
            "paragraph_text",
            ids.paragraph_text[s.paragraph.index()].as_str().into(),
        ),
        (
            "box_pages",
            Value::List(s.boxes.iter().map(|b| b.page.into()).collect()),
        ),
        (
            "boxes",
            Value::List(
                s.boxes
                    .iter()
                    .flat_map(|b| b.bbox)
                    .map(Value::from)
                    .collect(),
            ),
        ),
        (
            "prev_sentence_id",
            ids.prev(i).map(|j| ids.sentence(j)).into(),
        ),
        (
            "next_sentence_id",
            ids.next(i).map(|j| ids.sentence(j)).into(),
        ),
        ("clause", s.clause.clone().into()),
        ("indexed", s.indexed.into()),
        ("position", (i - start).into()),
        ("document_id", ids.document(s.document).into()),
    ]))
}

fn sentence_in_paragraph(ids: &Ids<'_>, i: SentenceNumber) -> Option<Value> {
    let s = &ids.store().sentences[i];
    Some(pair(s.id.as_str(), ids.paragraph(s.paragraph)))
}

fn sentence_in_section(ids: &Ids<'_>, i: SentenceNumber) -> Option<Value> {
    let s = &ids.store().sentences[i];
    Some(pair(s.id.as_str(), ids.section(s.section)))
}

fn sentence_in_document(ids: &Ids<'_>, i: SentenceNumber) -> Option<Value> {
    let s = &ids.store().sentences[i];
    Some(pair(s.id.as_str(), ids.document(s.document)))
}

fn sentence_next(ids: &Ids<'_>, i: SentenceNumber) -> Option<Value> {
    ids.next(i).map(|j| pair(ids.sentence(i), ids.sentence(j)))
}

/// Everything the export writes for `index`, with `chunks` from its
/// `chunks.json`; `vector` makes the store's expression for a row's list
/// of floats as a vector ([`GraphStore::vector`]).
pub fn rows<'a>(
    index: &'a IndexVersion,
    chunks: &[ChunkRecord],
    vector: impl Fn(&str) -> String,
) -> Result<GraphRows<'a>, GraphError> {
    let ids = Ids::new(index)?;
    let store = &index.store;
    let centroids = &index.search()?.paragraphs;

    let documents = store
        .documents
        .iter()
        .map(|d| {
            Value::map([
                ("id", d.id.as_str().into()),
                ("key", d.key.as_str().into()),
                ("title", d.title.clone().into()),
                ("format", d.metadata.get("format").cloned().into()),
                ("author", d.info.author.clone().into()),
                ("date", d.info.date.clone().into()),
                ("version", d.info.version.clone().into()),
                ("language", d.info.language.clone().into()),
            ])
        })
        .collect();
    let mut has_section = Vec::new();
    let mut subsection_of = Vec::new();
    let sections = store
        .sections
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let id = ids.section(SectionNumber(i as u32));
            match s.parent {
                Some(parent) => subsection_of.push(pair(id.clone(), ids.section(parent))),
                None => has_section.push(pair(ids.document(s.document), id.clone())),
            }
            Value::map([
                ("id", id.into()),
                ("heading", s.path.last().cloned().unwrap_or_default().into()),
                ("numbering", s.numbering.clone().into()),
                ("level", (s.path.len() as u32).into()),
                ("section_path", s.path.clone().into()),
                ("document_id", ids.document(s.document).into()),
                // Its form fields as two lists, names and values (a check
                // box's as `true` or `false`): a store's properties hold
                // lists of plain values only.
                (
                    "field_names",
                    s.fields
                        .iter()
                        .map(|f| f.name.clone())
                        .collect::<Vec<_>>()
                        .into(),
                ),
                (
                    "field_values",
                    s.fields
                        .iter()
                        .map(|f| match &f.value {
                            FieldValue::Checked(checked) => checked.to_string(),
                            FieldValue::Text(text) => text.clone(),
                        })
                        .collect::<Vec<_>>()
                        .into(),
                ),
            ])
        })
        .collect();
    let mut paragraph_in_section = Vec::new();
    let mut paragraph_next = Vec::new();
    let paragraphs = store
        .paragraphs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let i = ParagraphNumber(i as u32);
            let document = ids.paragraph_document(i);
            paragraph_in_section.push(pair(ids.paragraph(i), ids.section(p.section)));
            let next = i.after(1);
            if next.index() < store.paragraphs.len() && ids.paragraph_document(next) == document {
                paragraph_next.push(pair(ids.paragraph(i), ids.paragraph(next)));
            }
            Value::map([
                ("id", ids.paragraph(i).into()),
                ("text", ids.paragraph_text[i.index()].as_str().into()),
                (
                    "position",
                    (i - ids.paragraph_base[document.index()]).into(),
                ),
                ("document_id", ids.document(document).into()),
                ("centroid", centroid(centroids.row(i.0))),
            ])
        })
        .collect();
    let mut sentence_in_chunk = Vec::new();
    let mut paragraph_in_chunk = BTreeSet::new();
    let mut chunk_in_document = Vec::new();
    let chunk_rows = chunks
        .iter()
        .map(|c| {
            chunk_in_document.push(pair(c.id.as_str(), ids.document(c.document)));
            let sentences: BTreeSet<SentenceNumber> = c.sentences.iter().copied().collect();
            for &s in &sentences {
                sentence_in_chunk.push(pair(ids.sentence(s), c.id.as_str()));
                paragraph_in_chunk.insert((store.sentences[s].paragraph, c.id.as_str()));
            }
            Value::map([
                ("id", c.id.as_str().into()),
                ("text", c.text.as_str().into()),
                ("heading_path", c.heading_path.clone().into()),
                ("tokens", c.tokens.into()),
                ("position", c.index.into()),
                ("document_id", ids.document(c.document).into()),
            ])
        })
        .collect();
    let paragraph_in_chunk = paragraph_in_chunk
        .into_iter()
        .map(|(p, chunk)| pair(ids.paragraph(p), chunk))
        .collect();
    let related = index
        .related
        .iter()
        .enumerate()
        .flat_map(|(from, targets)| {
            targets.iter().map(move |&(to, similarity)| {
                Value::map([
                    ("from", store.sentences[from].id.as_str().into()),
                    ("to", store.sentences[to as usize].id.as_str().into()),
                    ("similarity", similarity.into()),
                ])
            })
        })
        .collect();

    // A reference's label rides on its link: two references of one
    // sentence to the same target are one link, labelled by the first.
    let mut refers_to_section = Vec::new();
    let mut refers_to_paragraph = Vec::new();
    let mut linked = std::collections::HashSet::new();
    for (i, sentence) in store.sentences.iter().enumerate() {
        for reference in &sentence.references {
            let Some(target) = reference.target else {
                continue;
            };
            if !linked.insert((i, target)) {
                continue;
            }
            let (rows, to) = match target {
                ReferenceTarget::Section(h) => (&mut refers_to_section, ids.section(h)),
                ReferenceTarget::Paragraph(p) => (&mut refers_to_paragraph, ids.paragraph(p)),
            };
            rows.push(Value::map([
                ("from", sentence.id.as_str().into()),
                ("to", to.into()),
                ("label", reference.label.as_str().into()),
            ]));
        }
    }

    // Tables: one node each, its rows and the table it repeats linked.
    let mut table_in_document = Vec::new();
    let mut row_of = Vec::new();
    let mut repeats = Vec::new();
    let tables = store
        .tables
        .iter()
        .map(|t| {
            table_in_document.push(pair(t.id.as_str(), ids.document(t.document)));
            if let Some(d) = t.duplicate_of {
                repeats.push(pair(t.id.as_str(), store.tables[d as usize].id.as_str()));
            }
            let mut row = 0u32;
            for &part in &t.parts {
                for s in SentenceNumber::range(store.paragraphs[part].sentences) {
                    row += 1;
                    row_of.push(Value::map([
                        ("from", ids.sentence(s).into()),
                        ("to", t.id.as_str().into()),
                        ("row", row.into()),
                    ]));
                }
            }
            Value::map([
                ("id", t.id.as_str().into()),
                ("caption", t.caption.clone().into()),
                ("columns", t.columns.clone().into()),
                (
                    "units",
                    t.units
                        .iter()
                        .map(|u| u.clone().unwrap_or_default())
                        .collect::<Vec<String>>()
                        .into(),
                ),
                ("row_headers", t.row_headers.clone().into()),
                ("rows", t.shape[0].into()),
                ("cols", t.shape[1].into()),
                ("parts", (t.parts.len() as u32).into()),
                ("first_page", t.pages.map(|p| p[0]).into()),
                ("last_page", t.pages.map(|p| p[1]).into()),
                ("document_id", ids.document(t.document).into()),
            ])
        })
        .collect();

    Ok(GraphRows {
        ids,
        nodes: vec![
            (
                cypher::DOCUMENT,
                cypher::UPSERT_DOCUMENTS.to_string(),
                Rows::Made(documents),
            ),
            (
                cypher::SECTION,
                cypher::UPSERT_SECTIONS.to_string(),
                Rows::Made(sections),
            ),
            (
                cypher::PARAGRAPH,
                cypher::upsert_paragraphs(&vector("row.centroid")),
                Rows::Made(paragraphs),
            ),
            (
                cypher::CHUNK,
                cypher::UPSERT_CHUNKS.to_string(),
                Rows::Made(chunk_rows),
            ),
            (
                cypher::SENTENCE,
                cypher::upsert_sentences(&vector("row.embedding")),
                Rows::PerSentence {
                    row: sentence_row,
                    every: true,
                },
            ),
            (
                cypher::TABLE,
                cypher::UPSERT_TABLES.to_string(),
                Rows::Made(tables),
            ),
        ],
        links: vec![
            (cypher::HAS_SECTION, Rows::Made(has_section)),
            (cypher::SUBSECTION_OF, Rows::Made(subsection_of)),
            (
                cypher::SENTENCE_IN_PARAGRAPH,
                Rows::PerSentence {
                    row: sentence_in_paragraph,
                    every: true,
                },
            ),
            (
                cypher::PARAGRAPH_IN_SECTION,
                Rows::Made(paragraph_in_section),
            ),
            (cypher::SENTENCE_IN_CHUNK, Rows::Made(sentence_in_chunk)),
            (cypher::PARAGRAPH_IN_CHUNK, Rows::Made(paragraph_in_chunk)),
            (
                cypher::IN_SECTION,
                Rows::PerSentence {
                    row: sentence_in_section,
                    every: true,
                },
            ),
            (
                cypher::SENTENCE_IN_DOCUMENT,
                Rows::PerSentence {
                    row: sentence_in_document,
                    every: true,
                },
            ),
            (cypher::CHUNK_IN_DOCUMENT, Rows::Made(chunk_in_document)),
            (
                cypher::SENTENCE_NEXT,
                Rows::PerSentence {
                    row: sentence_next,
                    every: false,
                },
            ),
            (cypher::PARAGRAPH_NEXT, Rows::Made(paragraph_next)),
            (cypher::RELATED_TO, Rows::Made(related)),
            (cypher::REFERS_TO_SECTION, Rows::Made(refers_to_section)),
            (cypher::REFERS_TO_PARAGRAPH, Rows::Made(refers_to_paragraph)),
            (cypher::TABLE_IN_DOCUMENT, Rows::Made(table_in_document)),
            (cypher::ROW_OF, Rows::Made(row_of)),
            (cypher::REPEATS, Rows::Made(repeats)),
        ],
    })
}

/// A paragraph's centroid as written: null for the zero vector of a
/// paragraph with no indexed sentence.
fn centroid(row: &[f32]) -> Value {
    if row.iter().all(|&x| x == 0.0) {
        Value::Null
    } else {
        Value::Vector(row.to_vec())
    }
}

/// The snake-case name of a source tag, as the skeleton serialises it.
fn source_name(tag: crate::skeleton::SourceTag) -> String {
    serde_json::to_value(tag)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Writes `index` to `store`: schema first, then nodes, then
/// relationships, in batches, then the version's serving files
/// ([`super::version_files`]), and last the version's marker node. Safe to
/// run again: every write is a `MERGE` on `(id, index_version)`.
pub fn export(
    store: &mut dyn GraphStore,
    index: &IndexVersion,
    options: ExportOptions,
) -> Result<ExportReport, GraphError> {
    let started = Instant::now();
    let version = index.manifest.version.as_str();
    let _span = tracing::info_span!("graph_export", store = store.name(), version).entered();
    let chunks = index.chunks()?;
    let rows = rows(index, &chunks, |list| store.vector(list))?;
    let mut written = rows.counts();
    store.prepare(index.manifest.dims)?;
    let mut statements = 0;
    let mut write = |store: &mut dyn GraphStore, name: &str, text: &str, table: &Rows| {
        for batch in rows.batches(table, options.batch_size) {
            let statement = Statement::new(name, text)
                .param("version", version)
                .param("corpus", index.manifest.corpus.as_str())
                .param("rows", Value::List(batch));
            run_with_retries(store, &statement, options.retries)?;
            statements += 1;
        }
        Ok::<(), GraphError>(())
    };
    for (label, text, table) in &rows.nodes {
        write(store, label, text, table)?;
    }
    for (link, table) in &rows.links {
        write(
            store,
            &link_key(*link),
            &cypher::upsert_statement(*link),
            table,
        )?;
    }
    // The files a pod without the index volume serves from; before the
    // marker, so that a complete version has them.
    let parts = super::version_files::write(store, index, options.retries)?;
    written.nodes.insert(cypher::FILE.to_string(), parts);
    statements += parts;
    let mark = Statement::new("mark version", cypher::MARK_VERSION)
        .param("version", version)
        .param("corpus", index.manifest.corpus.as_str())
        .param("sentences", Value::Int(index.store.sentences.len() as i64))
        .param("format", Value::Int(EXPORT_FORMAT));
    run_with_retries(store, &mark, options.retries)?;
    statements += 1;
    let seconds = started.elapsed().as_secs_f64();
    Ok(ExportReport {
        store: store.name().to_string(),
        version: version.to_string(),
        written,
        statements,
        seconds,
        sentences_per_second: index.store.sentences.len() as f64 / seconds.max(1e-9),
    })
}

/// Counts the nodes and relationships of `version` in `store`.
pub fn counts(store: &mut dyn GraphStore, version: &str) -> Result<GraphCounts, GraphError> {
    let mut counts = GraphCounts::default();
    let count = |store: &mut dyn GraphStore, name: &str, text: &str| {
        let rows = store.run(&Statement::new(name, text).param("version", version))?;
        rows.first()
            .and_then(|row| row.first())
            .and_then(Value::as_int)
            .map(|n| n as usize)
            .ok_or_else(|| GraphError::Reply {
                store: store.name(),
                statement: name.to_string(),
                reason: format!("no count in {rows:?}"),
            })
    };
    for label in cypher::LABELS {
        let n = count(store, label, &cypher::count_nodes(label))?;
        counts.nodes.insert(label.to_string(), n);
    }
    for link in cypher::LINKS {
        let n = count(store, &link_key(link), &cypher::count_links(link))?;
        counts.relationships.insert(link_key(link), n);
    }
    Ok(counts)
}

/// Whether `version` was completely exported to `store` in this build's
/// [`EXPORT_FORMAT`]. An export in another format is not: the next ingest
/// writes it again (every write a `MERGE`, so it completes what is
/// there).
pub fn is_complete(store: &mut dyn GraphStore, version: &str) -> Result<bool, GraphError> {
    let rows = store.run(
        &Statement::new("version complete", cypher::VERSION_COMPLETE).param("version", version),
    )?;
    Ok(rows.first().is_some_and(|row| {
        row.first() == Some(&Value::Bool(true))
            && row.get(1).and_then(Value::as_int) == Some(EXPORT_FORMAT)
    }))
}

/// Deletes every version of `corpus` in `store` not in `keep`, in
/// batches; returns the versions deleted. Other corpora's versions in the
/// same graph are left alone.
pub fn remove_versions(
    store: &mut dyn GraphStore,
    corpus: &str,
    keep: &[String],
    options: ExportOptions,
) -> Result<Vec<String>, GraphError> {
    let rows = run_with_retries(
        store,
        &Statement::new("versions", cypher::VERSIONS).param("corpus", corpus),
        options.retries,
    )?;
    let present: BTreeSet<String> = rows
        .iter()
        .filter_map(|row| row.first()?.as_str().map(str::to_string))
        .collect();
    let mut removed = Vec::new();
    for version in present {
        if keep.contains(&version) {
            continue;
        }
        // The marker first, so that a half-deleted version is never taken
        // for a complete one; then its files, and its nodes from
        // sentences, which hold most relationships, up to documents.
        for label in std::iter::once(cypher::VERSION)
            .chain((cypher::LABELS.iter().rev().copied()).filter(|&l| l != cypher::VERSION))
        {
            let text = cypher::delete_batch(label, options.batch_size.max(1) * 10);
            loop {
                let rows = run_with_retries(
                    store,
                    &Statement::new("delete version", &text).param("version", version.as_str()),
                    options.retries,
                )?;
                let deleted = rows
                    .first()
                    .and_then(|row| row.first())
                    .and_then(Value::as_int)
                    .unwrap_or(0);
                if deleted == 0 {
                    break;
                }
            }
        }
        tracing::info!(store = store.name(), %version, "graph version removed");
        removed.push(version);
    }
    Ok(removed)
}
