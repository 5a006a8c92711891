//! Evaluation sets read as retrieval tasks (see the evaluation data's
//! README): BEIR directories, SQuAD JSON files and CUAD directories become
//! documents to index and queries with their relevant documents and
//! sentences. A directory of a team's own files (`files:DIR`), with a
//! JSON Lines file of queries that quote the text answering them, is read
//! the same way, its files indexed as they are.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::EvalError;

/// Which reader a `--dataset` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatasetKind {
    Beir,
    Squad,
    Cuad,
    Files,
}

impl DatasetKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DatasetKind::Beir => "beir",
            DatasetKind::Squad => "squad",
            DatasetKind::Cuad => "cuad",
            DatasetKind::Files => "files",
        }
    }
}

/// `beir:DIR`, `squad:FILE`, `cuad:DIR` or `files:DIR`.
pub fn parse_dataset_arg(arg: &str) -> Result<(DatasetKind, PathBuf), EvalError> {
    let (kind, path) = arg.split_once(':').ok_or_else(|| {
        EvalError::Dataset(format!(
            "{arg:?}: expected beir:DIR, squad:FILE, cuad:DIR or files:DIR"
        ))
    })?;
    let kind = match kind {
        "beir" => DatasetKind::Beir,
        "squad" => DatasetKind::Squad,
        "cuad" => DatasetKind::Cuad,
        "files" => DatasetKind::Files,
        other => {
            return Err(EvalError::Dataset(format!(
                "unknown dataset kind {other:?}; expected beir, squad, cuad or files"
            )));
        }
    };
    Ok((kind, PathBuf::from(path)))
}

/// One document to index.
#[derive(Clone, Debug)]
pub struct EvalDocument {
    /// File name in the materialised corpus directory.
    pub file: String,
    /// The file's content.
    pub content: Vec<u8>,
    /// The dataset's own text of the document: what [`Relevance::Spans`]
    /// refer to, and where Trellis' sentences are placed to judge them.
    /// `None` for a team's own file (`files:DIR`): its quoted spans are
    /// looked for in the text Trellis reads from it.
    pub reference: Option<String>,
}

/// Which of a document's sentences answer a query.
#[derive(Clone, Debug)]
pub enum Relevance {
    /// Byte ranges of the document's reference text: a sentence is
    /// relevant when its aligned range overlaps one.
    Spans(Vec<Range<usize>>),
    /// Quoted excerpts (CUAD): a sentence is relevant when it shares a run
    /// of at least 30 characters with one, contains a shorter one whole,
    /// or lies inside one.
    Excerpts(Vec<String>),
}

/// One query and what answers it.
#[derive(Clone, Debug)]
pub struct EvalQuery {
    pub id: String,
    pub text: String,
    /// Relevant documents (by file name) and their grades.
    pub documents: Vec<(String, f64)>,
    /// Relevant sentences, per document file name.
    pub sentences: Vec<(String, Relevance)>,
    /// Run the query against this document only (CUAD's primary setting).
    pub within: Option<String>,
    /// Gold answers, for the answer metrics (SQuAD: every annotator's
    /// answer text); empty where the set has none.
    pub answers: Vec<String>,
}

/// A dataset made ready to index and query.
#[derive(Clone, Debug)]
pub struct EvalSet {
    pub kind: DatasetKind,
    /// The split whose queries are used.
    pub split: String,
    pub documents: Vec<EvalDocument>,
    pub queries: Vec<EvalQuery>,
    /// Whether document-level metrics mean anything for this set.
    pub document_level: bool,
    /// Queries the reader could not use, with the reason.
    pub skipped: Vec<(String, String)>,
}

impl EvalSet {
    /// Reads a dataset; `queries` is the JSON Lines file of a `files:DIR`
    /// set (and refused for the others, which hold their own).
    pub fn load(
        kind: DatasetKind,
        path: &Path,
        split: Option<&str>,
        queries: Option<&Path>,
    ) -> Result<Self, EvalError> {
        match (kind, queries) {
            (DatasetKind::Files, Some(queries)) => read_files(path, queries, split),
            (DatasetKind::Files, None) => Err(EvalError::Dataset(format!(
                "files:{}: --queries names the JSON Lines file of queries for your own files",
                path.display()
            ))),
            (_, Some(queries)) => Err(EvalError::Dataset(format!(
                "--queries {}: only a files:DIR set takes its queries from a file; \
                 {} sets hold their own",
                queries.display(),
                kind.as_str()
            ))),
            (DatasetKind::Beir, None) => read_beir(path, split),
            (DatasetKind::Squad, None) => read_squad(path, split),
            (DatasetKind::Cuad, None) => read_cuad(path, split),
        }
    }

    /// Hash of everything indexed (file names and contents): the cache key
    /// of the materialised corpus.
    pub fn content_hash(&self) -> String {
        let mut hasher = blake3::Hasher::new();
        for doc in &self.documents {
            hasher.update(doc.file.as_bytes());
            hasher.update(&[0]);
            hasher.update(blake3::hash(&doc.content).as_bytes());
        }
        hasher.finalize().to_hex()[..12].to_string()
    }
}

fn read_text(path: &Path) -> Result<String, EvalError> {
    std::fs::read_to_string(path).map_err(|e| EvalError::io(path, e))
}

fn bad(path: &Path, reason: impl std::fmt::Display) -> EvalError {
    EvalError::Dataset(format!("{}: {reason}", path.display()))
}

/// A file name made of an id: letters, digits, `-` and `_` kept, the rest
/// replaced, so any id maps to one safe name.
fn file_name(id: &str, extension: &str) -> String {
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    // Ids that differ only in replaced characters stay distinct.
    let tag = &blake3::hash(id.as_bytes()).to_hex()[..6];
    format!("{safe}-{tag}.{extension}")
}

/// Text escaped for Markdown: every ASCII punctuation character gets a
/// backslash (CommonMark's escape), so that the parser gives the text back
/// unchanged whatever it holds (`*`, `<`, `#`, list markers…).
fn markdown_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A Markdown document: the title as its heading, then the paragraphs.
fn markdown_document(title: &str, paragraphs: &[&str]) -> Vec<u8> {
    let mut out = String::new();
    let title = title.trim();
    if !title.is_empty() {
        out.push_str("# ");
        out.push_str(&markdown_escape(&title.replace('\n', " ")));
        out.push_str("\n\n");
    }
    for p in paragraphs {
        // Blank lines inside a paragraph would split it.
        let single = p.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&markdown_escape(&single));
        out.push_str("\n\n");
    }
    out.into_bytes()
}

// ---------------------------------------------------------------- BEIR

#[derive(Deserialize)]
struct BeirDocument {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    text: String,
    /// SciFact's abstract as its original sentence list.
    #[serde(default)]
    sentences: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct BeirQuery {
    #[serde(rename = "_id")]
    id: String,
    text: String,
    /// SciFact: per document id, evidence sets with sentence indices.
    #[serde(default)]
    metadata: serde_json::Value,
}

fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, EvalError> {
    read_text(path)?
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            serde_json::from_str(line).map_err(|e| bad(path, format!("line {}: {e}", n + 1)))
        })
        .collect()
}

/// The split to read when none is named: `test`, else `dev`, else `train`.
fn default_beir_split(qrels: &Path) -> Option<String> {
    ["test", "dev", "train"]
        .into_iter()
        .find(|s| qrels.join(format!("{s}.tsv")).is_file())
        .map(str::to_string)
}

fn read_beir(dir: &Path, split: Option<&str>) -> Result<EvalSet, EvalError> {
    let qrels_dir = dir.join("qrels");
    let split = match split {
        Some(s) => s.to_string(),
        None => default_beir_split(&qrels_dir)
            .ok_or_else(|| bad(&qrels_dir, "no test.tsv, dev.tsv or train.tsv"))?,
    };
    let corpus: Vec<BeirDocument> = read_jsonl(&dir.join("corpus.jsonl"))?;
    let queries: Vec<BeirQuery> = read_jsonl(&dir.join("queries.jsonl"))?;
    let qrels_path = qrels_dir.join(format!("{split}.tsv"));
    let mut qrels: HashMap<String, Vec<(String, f64)>> = HashMap::new();
    for (n, line) in read_text(&qrels_path)?.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() < 3 || (n == 0 && fields[2].parse::<f64>().is_err()) {
            continue; // the header, or a blank line
        }
        let grade: f64 = fields[2]
            .trim()
            .parse()
            .map_err(|e| bad(&qrels_path, format!("line {}: {e}", n + 1)))?;
        if grade > 0.0 {
            qrels
                .entry(fields[0].to_string())
                .or_default()
                .push((fields[1].to_string(), grade));
        }
    }

    let mut files: HashMap<String, String> = HashMap::new();
    // Per document: its sentences' byte ranges in the reference text.
    let mut sentence_ranges: HashMap<String, Vec<Range<usize>>> = HashMap::new();
    let mut documents = Vec::with_capacity(corpus.len());
    for doc in corpus {
        let file = file_name(&doc.id, "md");
        let (reference, ranges) = match &doc.sentences {
            Some(list) if !list.is_empty() => {
                let mut reference = String::new();
                let mut ranges = Vec::with_capacity(list.len());
                for s in list {
                    if !reference.is_empty() {
                        reference.push(' ');
                    }
                    let start = reference.len();
                    reference.push_str(s.trim());
                    ranges.push(start..reference.len());
                }
                (reference, ranges)
            }
            _ => (doc.text.clone(), Vec::new()),
        };
        let content = markdown_document(&doc.title, &[reference.as_str()]);
        sentence_ranges.insert(doc.id.clone(), ranges);
        files.insert(doc.id.clone(), file.clone());
        documents.push(EvalDocument {
            file,
            content,
            reference: Some(reference),
        });
    }

    let mut skipped = Vec::new();
    let mut out = Vec::new();
    for q in queries {
        let Some(judged) = qrels.get(&q.id) else {
            continue; // not in this split
        };
        let mut relevant_docs = Vec::new();
        for (doc_id, grade) in judged {
            match files.get(doc_id) {
                Some(file) => relevant_docs.push((file.clone(), *grade)),
                None => skipped.push((
                    q.id.clone(),
                    format!("judged document {doc_id} is not in the corpus"),
                )),
            }
        }
        let mut sentences = Vec::new();
        if let Some(evidence) = q.metadata.as_object() {
            for (doc_id, sets) in evidence {
                let (Some(file), Some(ranges)) = (files.get(doc_id), sentence_ranges.get(doc_id))
                else {
                    continue;
                };
                let spans: Vec<Range<usize>> = sets
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|set| set.get("sentences")?.as_array().cloned())
                    .flatten()
                    .filter_map(|i| ranges.get(i.as_u64()? as usize).cloned())
                    .collect();
                if !spans.is_empty() {
                    sentences.push((file.clone(), Relevance::Spans(spans)));
                }
            }
        }
        if relevant_docs.is_empty() {
            continue;
        }
        out.push(EvalQuery {
            id: q.id,
            text: q.text,
            documents: relevant_docs,
            sentences,
            within: None,
            answers: Vec::new(),
        });
    }
    Ok(EvalSet {
        kind: DatasetKind::Beir,
        split,
        documents,
        queries: out,
        document_level: true,
        skipped,
    })
}

// --------------------------------------------------------------- SQuAD

#[derive(Deserialize)]
struct SquadFile {
    data: Vec<SquadArticle>,
}

#[derive(Deserialize)]
struct SquadArticle {
    title: String,
    paragraphs: Vec<SquadParagraph>,
}

#[derive(Deserialize)]
struct SquadParagraph {
    context: String,
    qas: Vec<SquadQuestion>,
}

#[derive(Deserialize)]
struct SquadQuestion {
    id: String,
    question: String,
    answers: Vec<SquadAnswer>,
}

#[derive(Deserialize)]
struct SquadAnswer {
    /// Offset in characters (not bytes) of the answer in the context.
    answer_start: usize,
    text: String,
}

fn read_squad(path: &Path, split: Option<&str>) -> Result<EvalSet, EvalError> {
    let file: SquadFile = serde_json::from_str(&read_text(path)?).map_err(|e| bad(path, e))?;
    let split = split.map(str::to_string).unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default()
    });
    let mut documents = Vec::new();
    let mut queries = Vec::new();
    let mut skipped = Vec::new();
    for (n, article) in file.data.iter().enumerate() {
        let title = article.title.replace('_', " ");
        let name = file_name(&format!("{n:03}-{}", article.title), "md");
        // The reference text: the contexts, as written, one blank line apart.
        let mut reference = String::new();
        for p in &article.paragraphs {
            if !reference.is_empty() {
                reference.push_str("\n\n");
            }
            let base = reference.len();
            reference.push_str(&p.context);
            for qa in &p.qas {
                // The first answer is the question's answer span.
                let Some(answer) = qa.answers.first() else {
                    skipped.push((qa.id.clone(), "no answer".to_string()));
                    continue;
                };
                let Some(start) = p
                    .context
                    .char_indices()
                    .nth(answer.answer_start)
                    .map(|(b, _)| b)
                else {
                    skipped.push((qa.id.clone(), "answer_start beyond the context".to_string()));
                    continue;
                };
                let end = (start + answer.text.len()).min(p.context.len());
                queries.push(EvalQuery {
                    id: qa.id.clone(),
                    text: qa.question.clone(),
                    documents: vec![(name.clone(), 1.0)],
                    sentences: vec![(
                        name.clone(),
                        Relevance::Spans(
                            std::iter::once(base + start..base + end.max(start + 1)).collect(),
                        ),
                    )],
                    within: None,
                    answers: qa.answers.iter().map(|a| a.text.clone()).collect(),
                });
            }
        }
        let paragraphs: Vec<&str> = article
            .paragraphs
            .iter()
            .map(|p| p.context.as_str())
            .collect();
        documents.push(EvalDocument {
            file: name,
            content: markdown_document(&title, &paragraphs),
            reference: Some(reference),
        });
    }
    Ok(EvalSet {
        kind: DatasetKind::Squad,
        split,
        documents,
        queries,
        document_level: true,
        skipped,
    })
}

// ---------------------------------------------------------------- CUAD

#[derive(Deserialize)]
struct CuadCategory {
    column: String,
    question: String,
}

fn read_cuad(dir: &Path, split: Option<&str>) -> Result<EvalSet, EvalError> {
    let categories_path = dir.join("categories.json");
    let categories: Vec<CuadCategory> = serde_json::from_str(&read_text(&categories_path)?)
        .map_err(|e| bad(&categories_path, e))?;
    let csv_path = dir.join("master_clauses.csv");
    let mut reader = csv::Reader::from_path(&csv_path).map_err(|e| bad(&csv_path, e))?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| bad(&csv_path, e))?
        .iter()
        .map(str::to_string)
        .collect();
    let column = |name: &str| header.iter().position(|h| h == name);
    let filename_col = column("Filename").ok_or_else(|| bad(&csv_path, "no Filename column"))?;
    let mut rows: HashMap<String, csv::StringRecord> = HashMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| bad(&csv_path, e))?;
        let name = record.get(filename_col).unwrap_or_default();
        let stem = Path::new(name)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        rows.insert(stem, record);
    }

    // `--split pdf` indexes the same contracts as PDFs; their text versions
    // stay the reference the excerpts are placed in.
    let pdf = split == Some("pdf");
    let (folder, extension) = if pdf {
        ("pdf", "pdf")
    } else {
        ("contracts", "txt")
    };
    let contracts_dir = dir.join(folder);
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&contracts_dir)
        .map_err(|e| EvalError::io(&contracts_dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x.eq_ignore_ascii_case(extension))
        })
        .collect();
    entries.sort();

    let mut documents = Vec::new();
    let mut queries = Vec::new();
    let mut skipped = Vec::new();
    for path in entries {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        // Contracts without a row have no annotations to score against.
        let Some(row) = rows.get(&stem) else {
            skipped.push((stem.clone(), "no row in master_clauses.csv".to_string()));
            continue;
        };
        let content = std::fs::read(&path).map_err(|e| EvalError::io(&path, e))?;
        let reference = if pdf {
            let text = dir.join("contracts").join(format!("{stem}.txt"));
            match std::fs::read(&text) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(_) => {
                    skipped.push((stem.clone(), "no text version to place excerpts in".into()));
                    continue;
                }
            }
        } else {
            String::from_utf8_lossy(&content).into_owned()
        };
        let file = file_name(&stem, extension);
        for category in &categories {
            let Some(cell) = column(&category.column).and_then(|c| row.get(c)) else {
                continue;
            };
            let excerpts = parse_python_list(cell)
                .map_err(|e| bad(&csv_path, format!("{stem} / {}: {e}", category.column)))?;
            let excerpts: Vec<String> = excerpts
                .into_iter()
                .filter(|e| !e.trim().is_empty())
                .collect();
            if excerpts.is_empty() {
                continue;
            }
            queries.push(EvalQuery {
                id: format!("{stem}#{}", category.column),
                text: category.question.clone(),
                documents: Vec::new(),
                sentences: vec![(file.clone(), Relevance::Excerpts(excerpts))],
                within: Some(file.clone()),
                answers: Vec::new(),
            });
        }
        documents.push(EvalDocument {
            file,
            reference: Some(reference),
            content,
        });
    }
    Ok(EvalSet {
        kind: DatasetKind::Cuad,
        split: split.unwrap_or("contracts").to_string(),
        documents,
        queries,
        document_level: false,
        skipped,
    })
}

// ---------------------------------------------------------------- files

/// One line of a `files:DIR` set's queries file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileQuery {
    /// Defaults to the line number.
    #[serde(default)]
    id: Option<String>,
    query: String,
    /// The passages that answer it: each a document (its path under DIR)
    /// and a quoted span of its text.
    answers: Vec<FileAnswer>,
    /// Run the query against this document only (its path under DIR).
    #[serde(default)]
    within: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAnswer {
    document: String,
    text: String,
}

/// A directory of a team's own documents (every file of a format Trellis
/// reads, found as `trellis ingest` finds them) and a JSON Lines file of
/// queries, each naming the passages that answer it by document and
/// quoted text: `{"id": "q1", "query": "When are fees due?", "answers":
/// [{"document": "contracts/msa.pdf", "text": "Fees are due within thirty
/// days"}]}`. A sentence answers when it shares a run of 30 characters
/// with a quote, holds a shorter one whole, or lies inside one; a
/// document answers when a quote names it.
fn read_files(dir: &Path, queries_path: &Path, split: Option<&str>) -> Result<EvalSet, EvalError> {
    let discovery = crate::source::discover(&[dir.to_path_buf()]).map_err(|e| bad(dir, e))?;
    if discovery.files.is_empty() {
        return Err(bad(dir, "no documents of a format Trellis reads"));
    }
    // Each document by its path under DIR, `/`-separated.
    let mut by_path: HashMap<String, String> = HashMap::new();
    let mut documents = Vec::new();
    for path in &discovery.files {
        let relative = path
            .strip_prefix(dir)
            .unwrap_or(path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let extension = path
            .extension()
            .map(|x| x.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        let stem = relative
            .strip_suffix(&format!(".{extension}"))
            .unwrap_or(&relative)
            .to_string();
        let file = file_name(&stem, &extension);
        let content = std::fs::read(path).map_err(|e| EvalError::io(path, e))?;
        by_path.insert(relative, file.clone());
        documents.push(EvalDocument {
            file,
            content,
            reference: None,
        });
    }
    let lines = read_text(queries_path)?;
    let mut queries = Vec::new();
    for (n, line) in lines.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |reason: String| bad(queries_path, format!("line {}: {reason}", n + 1));
        let q: FileQuery = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        let file_of = |document: &str| {
            by_path.get(document.trim_start_matches("./")).cloned().ok_or_else(|| {
                at(format!(
                    "no document {document:?} under {} (paths are relative to it, `/`-separated)",
                    dir.display()
                ))
            })
        };
        if q.answers.is_empty() {
            return Err(at("a query needs at least one answer".to_string()));
        }
        let mut quotes: Vec<(String, Vec<String>)> = Vec::new();
        for answer in &q.answers {
            if answer.text.trim().is_empty() {
                return Err(at(format!("an empty quote for {:?}", answer.document)));
            }
            let file = file_of(&answer.document)?;
            match quotes.iter_mut().find(|(f, _)| *f == file) {
                Some((_, texts)) => texts.push(answer.text.clone()),
                None => quotes.push((file, vec![answer.text.clone()])),
            }
        }
        queries.push(EvalQuery {
            id: q.id.unwrap_or_else(|| (n + 1).to_string()),
            text: q.query,
            documents: quotes.iter().map(|(file, _)| (file.clone(), 1.0)).collect(),
            sentences: quotes
                .into_iter()
                .map(|(file, texts)| (file, Relevance::Excerpts(texts)))
                .collect(),
            within: q.within.as_deref().map(file_of).transpose()?,
            answers: Vec::new(),
        });
    }
    if queries.is_empty() {
        return Err(bad(queries_path, "no queries"));
    }
    Ok(EvalSet {
        kind: DatasetKind::Files,
        split: split.unwrap_or("files").to_string(),
        documents,
        queries,
        document_level: true,
        skipped: discovery
            .skipped
            .iter()
            .map(|p| {
                (
                    p.display().to_string(),
                    "not a format Trellis reads".to_string(),
                )
            })
            .collect(),
    })
}

/// Parses a Python list literal of strings (`['a', "b's"]`), as CUAD's
/// CSV cells hold them.
pub(crate) fn parse_python_list(cell: &str) -> Result<Vec<String>, String> {
    let text = cell.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| "not a list literal".to_string())?;
    let mut out = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let Some(quote) = chars.next() else { break };
        if quote != '\'' && quote != '"' {
            return Err(format!("expected a quoted string, found {quote:?}"));
        }
        let mut s = String::new();
        loop {
            match chars.next() {
                None => return Err("unterminated string".to_string()),
                Some(c) if c == quote => break,
                Some('\\') => match chars.next() {
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some('r') => s.push('\r'),
                    Some('x') => {
                        let hex: String = chars.by_ref().take(2).collect();
                        let code = u32::from_str_radix(&hex, 16).map_err(|e| e.to_string())?;
                        s.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    Some('u') => {
                        let hex: String = chars.by_ref().take(4).collect();
                        let code = u32::from_str_radix(&hex, 16).map_err(|e| e.to_string())?;
                        s.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    Some(other) => s.push(other),
                    None => return Err("unterminated escape".to_string()),
                },
                Some(c) => s.push(c),
            }
        }
        out.push(s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_lists_parse_with_both_quotes_and_escapes() {
        let cell = r#"['It\'s here.', "Party's \"name\"", 'a\nb']"#;
        assert_eq!(
            parse_python_list(cell).unwrap(),
            ["It's here.", "Party's \"name\"", "a\nb"]
        );
        assert!(parse_python_list("[]").unwrap().is_empty());
        assert!(parse_python_list("").unwrap().is_empty());
        assert!(parse_python_list("['open").is_err());
        assert!(parse_python_list("nope").is_err());
    }

    #[test]
    fn escaped_markdown_parses_back_to_the_same_text() {
        let text = "* not a list <b>bold</b> 1. [x](y) _z_ # h | a | b \\ `c`";
        let bytes = markdown_document("T*tle", &[text]);
        let tree = crate::parse::parse_bytes(
            &bytes,
            crate::parse::Format::Markdown,
            &crate::spec::ParsingSpec::default(),
        )
        .unwrap();
        let json = serde_json::to_string(&tree).unwrap();
        assert!(json.contains("T*tle"), "{json}");
        let expected = serde_json::to_string(text).unwrap();
        assert!(json.contains(expected.trim_matches('"')), "{json}");
    }

    #[test]
    fn file_names_are_safe_and_distinct() {
        let a = file_name("a/b", "md");
        let b = file_name("a_b", "md");
        assert_ne!(a, b);
        assert!(!a.contains('/'));
    }
}
