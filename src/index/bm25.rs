//! The BM25 index over sentences (tantivy).
//!
//! Four fields are searched: the sentence text with English stemming, the
//! section path and the text of the sentence's whole paragraph (each at a
//! lower weight), and an identifier field that keeps tokens such as
//! "TK-421", "5.1" or "§ 12(b)" whole, so that an exact identifier in a
//! query matches exactly. The paragraph field lets a query whose words are
//! spread over neighbouring sentences still find them: every sentence of
//! the paragraph shares that part of the score, and the sentence's own
//! text decides between them. Queries are analysed with the
//! same tokenizers and turned into term queries directly, never through a
//! query language, so no user input is ever syntax.
//!
//! A fifth field, never searched, holds each document's words once, on its
//! first indexed sentence, so that its document frequency counts
//! documents rather than sentences: how many of the corpus' documents use
//! a query's words tells a question about one document from a question
//! every document answers ([`Bm25Index::document_share`]).

use std::path::Path;
use std::sync::Arc;

use tantivy::collector::TopDocs;
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};
use tantivy::query::{BooleanQuery, BoostQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{
    Field, INDEXED, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RegexTokenizer, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument, Term, doc};

use super::IndexError;

pub(super) const TEXT_TOKENIZER: &str = "trellis_en";
pub(super) const ID_TOKENIZER: &str = "trellis_ids";
/// The text analyzer without the words that ask rather than say: what a
/// query is about, for [`Bm25Index::document_share`].
pub(super) const TOPIC_TOKENIZER: &str = "trellis_topic";
/// Interrogatives, auxiliaries and pronouns, which every document uses and
/// no question is about (the English stop words are left out already).
const QUESTION_WORDS: &[&str] = &[
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "do", "does", "did",
    "can", "could", "would", "should", "shall", "may", "might", "must", "has", "have", "had",
    "been", "being", "were", "am", "i", "you", "we", "he", "she", "its", "any", "all",
];
/// Weight of a section-path match relative to a text match.
pub(super) const SECTION_BOOST: f32 = 0.3;
/// Weight of a whole-identifier match relative to a text match.
pub(super) const ID_BOOST: f32 = 1.5;

struct Fields {
    sentence: Field,
    text: Field,
    section: Field,
    paragraph: Field,
    ids: Field,
    document: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let stemmed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TEXT_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    // The sentence text keeps positions, for phrase matches.
    let positioned = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TEXT_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let ids = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ID_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    // Presence is all the document field records: no frequencies, no
    // positions.
    let words = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TEXT_TOKENIZER)
            .set_index_option(IndexRecordOption::Basic),
    );
    let fields = Fields {
        sentence: builder.add_u64_field("sentence", INDEXED | STORED),
        text: builder.add_text_field("text", positioned),
        section: builder.add_text_field("section", stemmed.clone()),
        paragraph: builder.add_text_field("paragraph", stemmed),
        ids: builder.add_text_field("ids", ids),
        document: builder.add_text_field("document", words),
    };
    (builder.build(), fields)
}

/// The three analyzers, by the names the schema gives them.
fn analyzers() -> Result<[(&'static str, TextAnalyzer); 3], IndexError> {
    let stop_words = StopWordFilter::new(Language::English).ok_or_else(|| {
        IndexError::Bm25("no English stop-word list in this tantivy build".into())
    })?;
    let english = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(stop_words.clone())
        .filter(Stemmer::new(Language::English))
        .build();
    let topic = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(stop_words)
        .filter(StopWordFilter::remove(
            QUESTION_WORDS.iter().map(|w| w.to_string()),
        ))
        .filter(Stemmer::new(Language::English))
        .build();
    // Identifiers: a run of letters/digits joined by - . / that holds at
    // least one digit ("TK-421", "5.1", "10-K", "2024/25").
    let ids = TextAnalyzer::builder(
        RegexTokenizer::new(
            r"[A-Za-z0-9]*[0-9][A-Za-z0-9]*(?:[-./][A-Za-z0-9]+)+|[A-Za-z]+-[0-9]+",
        )
        .map_err(|e| IndexError::Bm25(e.to_string()))?,
    )
    .filter(LowerCaser)
    .build();
    Ok([
        (TEXT_TOKENIZER, english),
        (ID_TOKENIZER, ids),
        (TOPIC_TOKENIZER, topic),
    ])
}

fn register_tokenizers(index: &Index) -> Result<(), IndexError> {
    for (name, analyzer) in analyzers()? {
        index.tokenizers().register(name, analyzer);
    }
    Ok(())
}

pub(super) fn analyzer(name: &str) -> Result<TextAnalyzer, IndexError> {
    analyzers()?
        .into_iter()
        .find_map(|(n, analyzer)| (n == name).then_some(analyzer))
        .ok_or_else(|| IndexError::Bm25(format!("tokenizer {name} missing")))
}

/// The distinct tokens `analyzer` makes of `text`, in order of appearance.
pub(super) fn distinct_words(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut stream = analyzer.token_stream(text);
    let mut words: Vec<String> = Vec::new();
    while let Some(token) = stream.next() {
        if !words.contains(&token.text) {
            words.push(token.text.clone());
        }
    }
    words
}

/// The mean over `words` (sorted, so that the sum and a share at a
/// threshold come out the same on every run) of the share of the
/// `documents` that use each, as `used_by` counts them.
pub(super) fn mean_share(
    mut words: Vec<String>,
    documents: usize,
    mut used_by: impl FnMut(&str) -> Result<u64, IndexError>,
) -> Result<f32, IndexError> {
    if documents == 0 || words.is_empty() {
        return Ok(0.0);
    }
    words.sort();
    let mut total = 0.0;
    for word in &words {
        total += (used_by(word)? as f32 / documents as f32).min(1.0);
    }
    Ok(total / words.len() as f32)
}

/// One sentence to index.
pub struct Bm25Input<'a> {
    pub sentence: u32,
    pub text: &'a str,
    /// The sentence's heading path (empty to leave it out).
    pub section_path: String,
    /// The text of the sentence's paragraph (empty to leave it out).
    pub paragraph: &'a str,
    /// The text of the sentence's whole document on the first indexed
    /// sentence of each document, empty on every other.
    pub document: &'a str,
}

/// Builds the index in `dir` (which must exist and be empty).
pub fn build<'a>(
    dir: &Path,
    sentences: impl Iterator<Item = Bm25Input<'a>>,
) -> Result<(), IndexError> {
    let (schema, fields) = schema();
    let index = Index::create_in_dir(dir, schema).map_err(bm25_error)?;
    register_tokenizers(&index)?;
    // One indexing thread: with several, sentences land in segments in
    // whatever order the threads take them, and BM25 ties (and which of
    // them a limit cuts off) then differ from one build of the same input
    // to the next.
    let mut writer = index
        .writer_with_num_threads(1, 64 * 1024 * 1024)
        .map_err(bm25_error)?;
    for s in sentences {
        writer
            .add_document(doc!(
                fields.sentence => u64::from(s.sentence),
                fields.text => s.text,
                fields.section => s.section_path,
                fields.paragraph => s.paragraph,
                fields.ids => s.text,
                fields.document => s.document,
            ))
            .map_err(bm25_error)?;
    }
    writer.commit().map_err(bm25_error)?;
    writer.wait_merging_threads().map_err(bm25_error)?;
    Ok(())
}

/// A version's BM25 directory opened for reading only. Retrieval pods
/// mount the data volume read-only, where tantivy's meta lock (a file it
/// creates beside `meta.json` while a reader opens its segments) cannot
/// be made; and a published version has no writer to guard against, so
/// the lock is granted without a file. Every write is refused.
#[derive(Clone, Debug)]
struct ReadOnlyDirectory(MmapDirectory);

fn read_only(path: &Path) -> Arc<std::io::Error> {
    Arc::new(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!("{} belongs to a published index version", path.display()),
    ))
}

impl Directory for ReadOnlyDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.0.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError {
            io_error: read_only(path),
            filepath: path.to_path_buf(),
        })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.0.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::IoError {
            io_error: read_only(path),
            filepath: path.to_path_buf(),
        })
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.0.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, _data: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            read_only(path).to_string(),
        ))
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, _lock: &Lock) -> Result<DirectoryLock, LockError> {
        Ok(DirectoryLock::from(Box::new(())))
    }

    fn watch(&self, callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.0.watch(callback)
    }
}

/// A BM25 index opened for search.
pub struct Bm25Index {
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

impl Bm25Index {
    pub fn open(dir: &Path) -> Result<Self, IndexError> {
        let directory = ReadOnlyDirectory(
            MmapDirectory::open(dir)
                .map_err(|e| IndexError::Bm25(format!("opening {}: {e}", dir.display())))?,
        );
        let index = Index::open(directory).map_err(bm25_error)?;
        register_tokenizers(&index)?;
        let (_, fields) = schema();
        // A published version never changes: nothing to reload.
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(bm25_error)?;
        Ok(Self {
            index,
            reader,
            fields,
        })
    }

    /// How many sentences the index holds.
    pub fn documents(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// The mean, over the query's distinct words (stemmed; stop words and
    /// question words left out), of the share of the `documents` indexed
    /// documents that use the word; 0 for a query with no such word. A query about one document
    /// names words few others use (a person, a compound, a topic); one
    /// that every document answers ("Which law governs the contract?" over
    /// a set of contracts) is made of words most of them use.
    pub fn document_share(&self, query: &str, documents: usize) -> Result<f32, IndexError> {
        let words = self.words(TOPIC_TOKENIZER, query)?;
        let searcher = self.reader.searcher();
        mean_share(words, documents, |word| {
            let term = Term::from_field_text(self.fields.document, word);
            searcher.doc_freq(&term).map_err(bm25_error)
        })
    }

    /// The tokens the text analyzer makes of `text`, each with its
    /// position (stop words leave gaps), in order.
    fn positioned_words(&self, text: &str) -> Result<Vec<(usize, String)>, IndexError> {
        let mut analyzer = self
            .index
            .tokenizers()
            .get(TEXT_TOKENIZER)
            .ok_or_else(|| IndexError::Bm25(format!("tokenizer {TEXT_TOKENIZER} missing")))?;
        let mut stream = analyzer.token_stream(text);
        let mut words = Vec::new();
        while let Some(token) = stream.next() {
            words.push((token.position, token.text.clone()));
        }
        Ok(words)
    }

    /// The distinct tokens `tokenizer` makes of `text`, in order of
    /// appearance.
    fn words(&self, tokenizer: &str, text: &str) -> Result<Vec<String>, IndexError> {
        let mut analyzer = self
            .index
            .tokenizers()
            .get(tokenizer)
            .ok_or_else(|| IndexError::Bm25(format!("tokenizer {tokenizer} missing")))?;
        Ok(distinct_words(&mut analyzer, text))
    }

    /// The `limit` best sentences for `query`, best first, with scores.
    /// `paragraph_boost` weighs a match in the sentence's paragraph against
    /// one in its own text (0 leaves the paragraph out). `allowed` filters
    /// sentences (ACL, document filters) before ranking.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        paragraph_boost: f32,
        allowed: &dyn Fn(u32) -> bool,
    ) -> Result<Vec<(u32, f32)>, IndexError> {
        self.search_phrases(query, limit, paragraph_boost, 0.0, allowed)
    }

    /// [`search`](Self::search), and each two neighbouring words of the
    /// query found as the same phrase in a sentence's text (the same
    /// words, stop words between them counted: "governed by the laws"
    /// matches "governed by the laws", not "the laws that govern") adds
    /// a phrase match's BM25 score at `phrase_boost` (0 for none).
    pub fn search_phrases(
        &self,
        query: &str,
        limit: usize,
        paragraph_boost: f32,
        phrase_boost: f32,
        allowed: &dyn Fn(u32) -> bool,
    ) -> Result<Vec<(u32, f32)>, IndexError> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if phrase_boost > 0.0 {
            for pair in self.positioned_words(query)?.windows(2) {
                let [(p, a), (q, b)] = pair else { continue };
                let phrase = PhraseQuery::new_with_offset(vec![
                    (0, Term::from_field_text(self.fields.text, a)),
                    (q - p, Term::from_field_text(self.fields.text, b)),
                ]);
                clauses.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(Box::new(phrase), phrase_boost)),
                ));
            }
        }
        for (field, tokenizer, boost) in [
            (self.fields.text, TEXT_TOKENIZER, 1.0),
            (self.fields.section, TEXT_TOKENIZER, SECTION_BOOST),
            (self.fields.paragraph, TEXT_TOKENIZER, paragraph_boost),
            (self.fields.ids, ID_TOKENIZER, ID_BOOST),
        ] {
            if boost <= 0.0 {
                continue;
            }
            for word in self.words(tokenizer, query)? {
                let term = Term::from_field_text(field, &word);
                let q: Box<dyn Query> =
                    Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs));
                clauses.push((Occur::Should, Box::new(BoostQuery::new(q, boost))));
            }
        }
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        // Filtered-out sentences are dropped after ranking; over-fetch so
        // that a restrictive filter still fills the list in most cases.
        let mut fetch = limit.max(1);
        loop {
            let top = searcher
                .search(&query, &TopDocs::with_limit(fetch).order_by_score())
                .map_err(bm25_error)?;
            let exhausted = top.len() < fetch;
            let mut out = Vec::with_capacity(limit);
            for (score, address) in &top {
                let stored: TantivyDocument = searcher.doc(*address).map_err(bm25_error)?;
                let Some(id) = stored
                    .get_first(self.fields.sentence)
                    .and_then(|v| v.as_u64())
                else {
                    continue;
                };
                let id = id as u32;
                if allowed(id) {
                    out.push((id, *score));
                    if out.len() == limit {
                        return Ok(out);
                    }
                }
            }
            if exhausted || fetch >= 1 << 20 {
                return Ok(out);
            }
            fetch *= 4;
        }
    }
}

fn bm25_error(e: tantivy::TantivyError) -> IndexError {
    IndexError::Bm25(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_of(sentences: &[(&str, &str)]) -> (tempfile::TempDir, Bm25Index) {
        let dir = tempfile::tempdir().expect("temp dir");
        build(
            dir.path(),
            sentences
                .iter()
                .enumerate()
                .map(|(n, &(text, paragraph))| Bm25Input {
                    sentence: n as u32,
                    text,
                    section_path: String::new(),
                    paragraph,
                    document: "",
                }),
        )
        .expect("build");
        let index = Bm25Index::open(dir.path()).expect("open");
        (dir, index)
    }

    #[test]
    fn a_phrase_counts_its_stop_words_and_its_order() {
        let (_dir, index) = index_of(&[
            ("The laws that governed it.", ""),
            ("It is governed by the laws.", ""),
            ("It is governed by laws.", ""),
        ]);
        let all = |_: u32| true;
        let scores = |boost: f32| {
            let hits = index
                .search_phrases("governed by the laws", 10, 0.0, boost, &all)
                .expect("search");
            let mut scores = [0f32; 3];
            for (i, score) in hits {
                scores[i as usize] = score;
            }
            scores
        };
        let [apart, phrase, gap] = scores(0.0);
        let [apart_p, phrase_p, gap_p] = scores(2.0);
        // Only the sentence that says it as the query does gains.
        assert_eq!((apart, gap), (apart_p, gap_p));
        assert!(phrase_p > phrase, "{phrase} → {phrase_p}");
    }

    #[test]
    fn opening_for_search_writes_nothing_into_the_version() {
        // Retrieval pods mount index versions read-only: a reader's meta
        // lock may not be a file, and nothing may be written.
        let (dir, index) = index_of(&[("The tenant pays the rent monthly.", "")]);
        let listing = || {
            let mut names: Vec<_> = std::fs::read_dir(dir.path())
                .expect("list")
                .map(|e| e.expect("entry").file_name())
                .collect();
            names.sort();
            names
        };
        let before = listing();
        let directory = ReadOnlyDirectory(MmapDirectory::open(dir.path()).expect("open"));
        let lock = directory
            .acquire_lock(&tantivy::directory::META_LOCK)
            .expect("lock");
        assert_eq!(listing(), before, "the lock made a file");
        drop(lock);
        assert!(directory.open_write(Path::new("new.idx")).is_err());
        assert!(directory.delete(Path::new("meta.json")).is_err());
        assert_eq!(listing(), before);
        assert_eq!(
            index
                .search("rent", 5, 0.0, &|_| true)
                .expect("search")
                .len(),
            1,
            "a reader on the read-only directory searches"
        );
    }

    #[test]
    fn paragraph_words_reach_every_sentence_of_the_paragraph() {
        let first = "The tenant pays the rent monthly.";
        let second = "Payment is due on the first day.";
        let paragraph = format!("{first} {second}");
        let other = "Deposits are held in escrow by the landlord.";
        let (_dir, index) = index_of(&[(first, &paragraph), (second, &paragraph), (other, other)]);
        let all = |_: u32| true;

        // "tenant" appears only in the first sentence: without the
        // paragraph field the second cannot match it.
        let alone = index
            .search("tenant payment", 10, 0.0, &all)
            .expect("search");
        assert_eq!(alone.len(), 2);
        let with_paragraph = index
            .search("tenant payment", 10, 1.5, &all)
            .expect("search");
        assert_eq!(with_paragraph.len(), 2);
        let second_score = |hits: &[(u32, f32)]| hits.iter().find(|h| h.0 == 1).map(|h| h.1);
        assert!(second_score(&with_paragraph) > second_score(&alone));
        // The unrelated paragraph stays out either way.
        assert!(with_paragraph.iter().all(|&(i, _)| i != 2));
    }

    #[test]
    fn identifiers_stay_whole() {
        let (_dir, index) = index_of(&[
            ("See clause 5.1 for the fee.", ""),
            ("See clause 5 for the term.", ""),
        ]);
        let hits = index.search("5.1", 10, 1.0, &|_| true).expect("search");
        assert_eq!(hits.first().map(|h| h.0), Some(0));
    }

    #[test]
    fn document_share_counts_documents_not_sentences() {
        let dir = tempfile::tempdir().expect("temp dir");
        // Three documents: every one names the governing law, one alone
        // names an escrow agent, whose sentences repeat the word.
        let documents = [
            "This Agreement is governed by the law of Delaware. The escrow agent holds the code. The escrow agent releases it.",
            "This Agreement is governed by the law of New York.",
            "The law of England governs this Agreement.",
        ];
        let mut sentences = Vec::new();
        for (d, text) in documents.iter().enumerate() {
            for (n, sentence) in text.split_inclusive(". ").enumerate() {
                sentences.push((d, n, sentence));
            }
        }
        build(
            dir.path(),
            sentences
                .iter()
                .enumerate()
                .map(|(i, &(d, n, text))| Bm25Input {
                    sentence: i as u32,
                    text,
                    section_path: String::new(),
                    paragraph: "",
                    document: if n == 0 { documents[d] } else { "" },
                }),
        )
        .expect("build");
        let index = Bm25Index::open(dir.path()).expect("open");
        let share = |q: &str| index.document_share(q, documents.len()).expect("share");
        assert!((share("Which law governs the agreement?") - 1.0).abs() < 1e-6);
        assert!((share("escrow agent") - 1.0 / 3.0).abs() < 1e-6);
        assert!((share("law of Delaware") - (1.0 + 1.0 / 3.0) / 2.0).abs() < 1e-6);
        assert_eq!(share("the of"), 0.0);
        assert_eq!(share("unheard"), 0.0);
    }
}
