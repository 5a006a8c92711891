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

use super::{GraphError, GraphStore, Statement, Value, run_with_retries};

/// What a store's search procedures are asked, and how they answer.
#[derive(Clone, Copy)]
pub struct Search {
    /// Returns `id, version, indexed, score` of the `$candidates`
    /// sentences nearest `$vector`, of every version.
    pub nearest: &'static str,
    /// Returns `id, version, indexed, score` of the `$candidates` best
    /// matches of `$query`, of every version.
    pub matching: &'static str,
    /// The cosine similarity a `nearest` score stands for.
    pub similarity: fn(f64) -> f32,
    /// The full-text query matching any of `words` (lower-case letters
    /// and digits only, so nothing needs escaping).
    pub any_word: fn(&[String]) -> String,
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

/// The `k` sentences of `version` nearest `vector`: ids and cosine
/// similarities, best first.
pub fn nearest(
    store: &mut dyn GraphStore,
    version: &str,
    vector: &[f32],
    k: usize,
    retries: u32,
) -> Result<Vec<(String, f32)>, GraphError> {
    let search = store.search();
    let found = oversampled(store, version, k, retries, |candidates| {
        Statement::new("nearest_sentences", search.nearest)
            .param("candidates", Value::Int(candidates as i64))
            .param("vector", Value::Vector(vector.to_vec()))
    })?;
    Ok(best_first(found, search.similarity))
}

/// The `k` indexed sentences of `version` best matching any word of
/// `query`: ids and the store's relevance scores, best first. A query
/// without a letter or digit matches nothing.
pub fn matching(
    store: &mut dyn GraphStore,
    version: &str,
    query: &str,
    k: usize,
    retries: u32,
) -> Result<Vec<(String, f32)>, GraphError> {
    let words = words(query);
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let search = store.search();
    let text = (search.any_word)(&words);
    let found = oversampled(store, version, k, retries, |candidates| {
        Statement::new("matching_sentences", search.matching)
            .param("candidates", Value::Int(candidates as i64))
            .param("query", text.as_str())
    })?;
    Ok(best_first(found, |score| score as f32))
}

/// `found` with each score as `score` makes it, highest first.
fn best_first(found: Vec<(String, f64)>, score: impl Fn(f64) -> f32) -> Vec<(String, f32)> {
    let mut ranked: Vec<(String, f32)> = found.into_iter().map(|(id, s)| (id, score(s))).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked
}

/// The words of `text` as the full-text queries take them: runs of
/// letters and digits, lower-cased (Lucene's `AND`, `OR` and `NOT` are
/// operators only in capitals), each once.
fn words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        if !words.contains(&word) {
            words.push(word);
        }
    }
    words
}

/// Runs `statement(candidates)` for `k` candidates, then twice as many,
/// and so on, until `k` indexed sentences of `version` came back, asking
/// for more gave no more, or [`MAX_OVERSAMPLING`] is reached; those of the
/// version with their raw scores, in the store's order, at most `k`.
fn oversampled<'s>(
    store: &mut dyn GraphStore,
    version: &str,
    k: usize,
    retries: u32,
    statement: impl Fn(usize) -> Statement<'s>,
) -> Result<Vec<(String, f64)>, GraphError> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let mut candidates = k;
    let mut rows_before = 0;
    loop {
        let statement = statement(candidates);
        let rows = run_with_retries(store, &statement, retries)?;
        let mut found = Vec::with_capacity(rows.len());
        for row in &rows {
            let reply = |reason: String| GraphError::Reply {
                store: store.name(),
                statement: statement.name.to_string(),
                reason,
            };
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
        if found.len() >= k || exhausted || candidates >= k * MAX_OVERSAMPLING {
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
    fn words_are_lower_case_runs_of_letters_and_digits_once_each() {
        assert_eq!(
            words("What did the Seller OR \"buyer\" pay in 2019? pay-out: AND"),
            [
                "what", "did", "the", "seller", "or", "buyer", "pay", "in", "2019", "out", "and"
            ]
        );
        assert!(words("?! …").is_empty());
        assert_eq!(lucene_any(&words("a b")), "a b");
        assert_eq!(redisearch_any(&words("a b")), "a|b");
    }

    #[test]
    fn scores_become_cosine_similarities() {
        assert_eq!(neo4j_similarity(1.0), 1.0);
        assert_eq!(neo4j_similarity(0.5), 0.0);
        assert_eq!(falkordb_similarity(0.0), 1.0);
        assert_eq!(falkordb_similarity(2.0), -1.0);
    }
}
