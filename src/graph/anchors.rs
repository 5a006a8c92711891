//! Stage 1 asked of a graph store: the sentences of one index version
//! nearest a query vector (the store's vector index) and those matching
//! the query's words (its full-text index), each list best first, so
//! that a route can take its anchors from the store rather than from
//! index files.
//!
//! Both indexes span every version the store holds, and neither Neo4j 5
//! nor FalkorDB filters inside the index: a query asks for more
//! candidates than it needs, keeps those of its version, and asks again
//! for more while the store had more to give and too few were kept.

use super::{GraphError, GraphStore, Statement, Value, cypher, reply_error, run_with_retries};
use crate::index::ids::IdNumbers;
use crate::index::lexical::query_words;
use crate::index::{IndexVersion, ParagraphNumber, Ranking, SentenceNumber};

/// What a store's search procedures are asked, and how they answer.
#[derive(Clone, Copy)]
pub struct Search {
    /// Returns `id, version, indexed, score` of the `$candidates`
    /// sentences nearest `$vector`, of every version.
    pub nearest: &'static str,
    /// Returns `id, version, indexed, score` of the `$candidates` best
    /// matches of `$query`, of every version.
    pub matching: &'static str,
    /// As `matching`, over paragraphs (`indexed` is always true).
    pub matching_paragraphs: &'static str,
    /// The cosine similarity a `nearest` score stands for.
    pub similarity: fn(f64) -> f32,
    /// The full-text query matching any of `words` (lower-case letters
    /// and digits only, so nothing needs escaping).
    pub any_word: fn(&[String]) -> String,
    /// Whether the full-text score weighs a word by how rare it is, so
    /// that the first matches of a query are those its rare words find.
    /// Lucene's BM25 does; FalkorDB's score does not (a word held by one
    /// sentence scores below one held by ninety), and a query is then
    /// asked for its rarest words only ([`crate::index::lexical::LexicalStats::rarest_words`]).
    pub weighs_rarity: bool,
}

/// Neo4j's cosine score is (1 + cos) / 2.
pub fn neo4j_similarity(score: f64) -> f32 {
    (2.0 * score - 1.0) as f32
}

/// FalkorDB's vector score is the cosine distance, 1 − cos.
pub fn falkordb_similarity(score: f64) -> f32 {
    (1.0 - score) as f32
}

/// Lucene's default operator is OR: the words, separated by spaces.
pub fn lucene_any(words: &[String]) -> String {
    words.join(" ")
}

/// RediSearch intersects words by default: `|` asks for any of them.
pub fn redisearch_any(words: &[String]) -> String {
    words.join("|")
}

/// How many times `k` a query asks for at the most: past that, the
/// version holds fewer matches than asked for, or the store holds that
/// many other versions, and the shorter list is the answer.
const MAX_OVERSAMPLING: usize = 64;

/// The fewest candidates a vector search asks the store for. Its index is
/// approximate (HNSW) and searches a list as long as the count asked for:
/// asked for five among two versions' copies of every vector, Neo4j's
/// missed the fourth nearest. A longer list costs the store little and
/// finds what an exact search would.
const LEAST_VECTOR_CANDIDATES: usize = 64;

/// The `k` sentences of `version` that `keep` lets through nearest
/// `vector`: ids and cosine similarities, best first.
pub fn nearest(
    store: &mut dyn GraphStore,
    version: &str,
    vector: &[f32],
    k: usize,
    retries: u32,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Vec<(String, f32)>, GraphError> {
    let search = store.search();
    let counts = (k, LEAST_VECTOR_CANDIDATES);
    let found = oversampled(store, version, counts, retries, keep, |candidates| {
        Statement::new("nearest_sentences", search.nearest)
            .param("candidates", Value::Int(candidates as i64))
            .param("vector", Value::Vector(vector.to_vec()))
    })?;
    Ok(best_first(found, search.similarity))
}

/// What [`matching`] searches: sentences or paragraphs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matched {
    Sentences,
    Paragraphs,
}

/// The `k` indexed sentences (or paragraphs) of `version` that `keep`
/// lets through best matching any of `words` ([`query_words`]): ids and
/// the store's relevance scores, best first. No words match nothing.
pub fn matching(
    store: &mut dyn GraphStore,
    version: &str,
    words: &[String],
    (what, k): (Matched, usize),
    retries: u32,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Vec<(String, f32)>, GraphError> {
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let search = store.search();
    let text = (search.any_word)(words);
    let (name, statement) = match what {
        Matched::Sentences => ("matching_sentences", search.matching),
        Matched::Paragraphs => ("matching_paragraphs", search.matching_paragraphs),
    };
    let found = oversampled(store, version, (k, k), retries, keep, |candidates| {
        Statement::new(name, statement)
            .param("candidates", Value::Int(candidates as i64))
            .param("query", text.as_str())
    })?;
    Ok(best_first(found, |score| score as f32))
}

/// Stage 1 for a route whose anchors come from the store: [`nearest`]
/// and [`matching`] over `index`'s version, as the version's sentence
/// numbers, each list holding up to `k` sentences that `admits` lets
/// through (access filters apply before the `k` are counted).
pub struct VersionSearch<'a> {
    index: &'a IndexVersion,
    numbers: &'a IdNumbers,
    retries: u32,
}

impl<'a> VersionSearch<'a> {
    pub fn new(index: &'a IndexVersion, retries: u32) -> Self {
        Self {
            index,
            numbers: index.ids(),
            retries,
        }
    }

    /// The `k` admitted sentences nearest `vector`, with cosine
    /// similarities, best first.
    pub fn nearest(
        &self,
        store: &mut dyn GraphStore,
        vector: &[f32],
        k: usize,
        admits: &dyn Fn(SentenceNumber) -> bool,
    ) -> Result<Ranking, GraphError> {
        let keep = |id: &str| self.numbers.sentence(id).is_some_and(admits);
        let found = nearest(store, self.version(), vector, k, self.retries, &keep)?;
        Ok(self.numbered(found))
    }

    /// The admitted sentences the store's full-text indexes find for
    /// `query`: its `k` best sentences and, `with_paragraphs`, every
    /// admitted sentence of its `k` best paragraphs (as the embedded BM25
    /// index matches a sentence by its paragraph's words too). The
    /// caller ranks them; the store's engine only finds them. A store
    /// whose score does not weigh rarity ([`Search::weighs_rarity`]) is
    /// asked for the query's rarest words, as many as `k` sentences use.
    pub fn matching(
        &self,
        store: &mut dyn GraphStore,
        query: &str,
        k: usize,
        with_paragraphs: bool,
        admits: &dyn Fn(SentenceNumber) -> bool,
    ) -> Result<Vec<SentenceNumber>, GraphError> {
        let words = match store.search().weighs_rarity {
            true => query_words(query),
            // The engine's first matches would be those of the common
            // words: it is asked for the words BM25 weighs most.
            false => self.index.lexical()?.rarest_words(query, k),
        };
        let keep = |id: &str| self.numbers.sentence(id).is_some_and(admits);
        let wanted = (Matched::Sentences, k);
        let found = matching(store, self.version(), &words, wanted, self.retries, &keep)?;
        let mut sentences: Vec<SentenceNumber> = self.numbered(found).sentences().collect();
        if with_paragraphs {
            let skeleton = &self.index.store;
            let members = |p: ParagraphNumber| {
                SentenceNumber::range(skeleton.paragraphs[p].sentences).filter(|&i| admits(i))
            };
            let keep = |id: &str| {
                self.numbers
                    .paragraph(id)
                    .is_some_and(|p| members(p).next().is_some())
            };
            let wanted = (Matched::Paragraphs, k);
            let found = matching(store, self.version(), &words, wanted, self.retries, &keep)?;
            for (id, _) in found {
                if let Some(p) = self.numbers.paragraph(&id) {
                    sentences.extend(members(p));
                }
            }
        }
        sentences.sort_unstable();
        sentences.dedup();
        Ok(sentences)
    }

    /// The embeddings of `sentences` (indexed ones; others have none), in
    /// one round trip.
    pub fn vectors(
        &self,
        store: &mut dyn GraphStore,
        sentences: &[SentenceNumber],
    ) -> Result<Vec<(SentenceNumber, Vec<f32>)>, GraphError> {
        let ids = sentences
            .iter()
            .map(|&i| self.index.store.sentences[i].id.clone())
            .collect();
        let statement = Statement::new("sentence_vectors", cypher::SENTENCE_VECTORS);
        self.vectors_by_id(store, statement, ids, |id| self.numbers.sentence(id))
    }

    /// The centroids of `paragraphs` written by the export (paragraphs
    /// with an indexed sentence have one), in one round trip.
    pub fn centroids(
        &self,
        store: &mut dyn GraphStore,
        paragraphs: &[ParagraphNumber],
    ) -> Result<Vec<(ParagraphNumber, Vec<f32>)>, GraphError> {
        let skeleton = &self.index.store;
        let ids = paragraphs
            .iter()
            .filter_map(|&p| self.numbers.paragraph_id(skeleton, p))
            .collect();
        let statement = Statement::new("paragraph_centroids", cypher::PARAGRAPH_CENTROIDS);
        self.vectors_by_id(store, statement, ids, |id| self.numbers.paragraph(id))
    }

    /// Runs `statement`, which returns an id and a vector (or null) for
    /// each of `$ids`, and numbers its rows by `number`.
    fn vectors_by_id<N>(
        &self,
        store: &mut dyn GraphStore,
        statement: Statement<'_>,
        ids: Vec<String>,
        number: impl Fn(&str) -> Option<N>,
    ) -> Result<Vec<(N, Vec<f32>)>, GraphError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.into_iter().map(Value::from).collect();
        let statement = statement
            .param("version", self.version())
            .param("ids", Value::List(ids));
        let rows = run_with_retries(store, &statement, self.retries)?;
        let mut vectors = Vec::with_capacity(rows.len());
        for row in &rows {
            let reply = |reason: String| reply_error(store, statement.name, reason);
            let [id, vector] = row.as_slice() else {
                return Err(reply(format!("expected an id and a vector: {row:?}")));
            };
            let n = id
                .as_str()
                .and_then(&number)
                .ok_or_else(|| reply(format!("not an id of the version: {id:?}")))?;
            if let Some(v) = vector.as_vector() {
                vectors.push((n, v));
            }
        }
        Ok(vectors)
    }

    fn version(&self) -> &'a str {
        &self.index.manifest.version
    }

    /// The store's best-first list, by sentence number.
    fn numbered(&self, found: Vec<(String, f32)>) -> Ranking {
        let numbered = found
            .into_iter()
            .filter_map(|(id, score)| Some((self.numbers.sentence(&id)?, score)));
        Ranking::as_ranked(numbered)
    }
}

/// `found` with each score as `score` makes it, highest first.
fn best_first(found: Vec<(String, f64)>, score: impl Fn(f64) -> f32) -> Vec<(String, f32)> {
    let mut ranked: Vec<(String, f32)> = found.into_iter().map(|(id, s)| (id, score(s))).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked
}

/// Runs `statement(candidates)` for `k` candidates (or `least`, when
/// more), then twice as many, and so on, until `k` indexed sentences of
/// `version` that `keep` lets through came back, asking for more gave no
/// more, or [`MAX_OVERSAMPLING`] is reached; those with their raw scores,
/// in the store's order, at most `k`.
fn oversampled<'s>(
    store: &mut dyn GraphStore,
    version: &str,
    (k, least): (usize, usize),
    retries: u32,
    keep: &dyn Fn(&str) -> bool,
    statement: impl Fn(usize) -> Statement<'s>,
) -> Result<Vec<(String, f64)>, GraphError> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let first = k.max(least);
    let mut candidates = first;
    let mut rows_before = 0;
    loop {
        let statement = statement(candidates);
        let rows = run_with_retries(store, &statement, retries)?;
        let mut found = Vec::with_capacity(rows.len());
        for row in &rows {
            let reply = |reason: String| reply_error(store, statement.name, reason);
            let [id, row_version, indexed, score] = row.as_slice() else {
                return Err(reply(format!(
                    "expected id, version, indexed, score: {row:?}"
                )));
            };
            if row_version.as_str() != Some(version) || indexed != &Value::Bool(true) {
                continue;
            }
            let id = id
                .as_str()
                .ok_or_else(|| reply(format!("a sentence id that is not text: {id:?}")))?;
            if !keep(id) {
                continue;
            }
            let score = score
                .as_float()
                .ok_or_else(|| reply(format!("a score that is not a number: {score:?}")))?;
            found.push((id.to_string(), score));
        }
        // Asking for more gave no more: the index holds no more. (Fewer
        // rows than asked for is no sign of it: FalkorDB can answer `k`
        // with fewer distinct nodes.)
        let exhausted = rows.len() <= rows_before;
        rows_before = rows.len();
        if found.len() >= k || exhausted || candidates >= first * MAX_OVERSAMPLING {
            found.truncate(k);
            return Ok(found);
        }
        candidates *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_word_queries_join_the_words_as_each_engine_reads_them() {
        assert_eq!(lucene_any(&query_words("a b")), "a b");
        assert_eq!(redisearch_any(&query_words("a b")), "a|b");
    }

    #[test]
    fn scores_become_cosine_similarities() {
        assert_eq!(neo4j_similarity(1.0), 1.0);
        assert_eq!(neo4j_similarity(0.5), 0.0);
        assert_eq!(falkordb_similarity(0.0), 1.0);
        assert_eq!(falkordb_similarity(2.0), -1.0);
    }
}
