//! Stage 3: the composite score and the selection of results.

use std::collections::{HashMap, HashSet};

use super::vectors::QueryVectors;
use super::{Candidate, Candidates, Signals};
use crate::index::{
    DocumentNumber, IndexVersion, ParagraphNumber, Ranking, SectionNumber, SentenceNumber,
};
use crate::spec::{ProvenanceFavours, RetrievalRouteSpec, ScoringSpec, SelectionSpec, Signal};
use crate::vector::dot;

/// Words that carry no topic; left out of the structure and entity signals.
const STOP: &[&str] = &[
    "the", "and", "for", "that", "this", "with", "what", "which", "when", "where", "who", "how",
    "does", "are", "was", "were", "from", "into", "any", "all", "there", "their", "have", "has",
    "been", "shall", "will", "may", "can", "its", "not", "but", "than", "then", "such", "other",
];

/// A query's topic words: three letters or more, stop words left out,
/// lower case.
pub(super) fn query_words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect()
}

/// What scoring needs of the query, worked out once per query rather than
/// once per candidate.
pub(super) struct QueryFeatures<'q> {
    /// Topic words (three letters or more, stop words left out).
    words: Vec<String>,
    lower: String,
    /// Tokens with a digit: numbers, dates, amounts, clause ids, looked
    /// for in the sentence.
    wanted: Vec<String>,
    /// The proper names the query writes ([`proper_names`]), each
    /// weighted by the share of the candidates' paragraphs that do not
    /// hold it (a name every paragraph holds tells none apart), with the
    /// paragraphs that do.
    name_weights: Vec<f32>,
    name_paragraphs: HashMap<ParagraphNumber, Vec<bool>>,
    /// The query asks for a date ("the date of the contract", "when
    /// does …"), so a sentence that states one may hold the answer.
    asks_date: bool,
    /// The best fused score among the candidates, which scales the rest.
    max_fused: f32,
    /// The query's vector (empty in BM25 mode).
    vector: &'q [f32],
    /// Weights of fusion, dense and lexical, for the context signal.
    relevance_weights: [f32; 3],
    /// Sentences that define terms, with the query's best similarity to
    /// one of them.
    definitions: HashMap<SentenceNumber, f32>,
    /// Documents whose names (titles, file names) the query's words name,
    /// and how strongly.
    named: HashMap<DocumentNumber, f32>,
    /// Which sections the provenance signal favours.
    provenance: ProvenanceFavours,
}

/// The query as scoring reads it.
pub(super) struct Query<'q> {
    /// As asked: it names documents.
    pub text: &'q str,
    /// What is left once the words that name a document outright are
    /// taken out, if they are (`named.rs`): the rest of the signals read
    /// it.
    pub rest: Option<&'q str>,
    /// The vector of the rest, or else of the query (empty in BM25 mode).
    pub vector: &'q [f32],
}

impl<'q> QueryFeatures<'q> {
    pub(super) fn new(
        index: &IndexVersion,
        query: Query<'q>,
        scoring: &ScoringSpec,
        candidates: &Candidates,
        definitions: HashMap<SentenceNumber, f32>,
    ) -> Self {
        let Query { text, rest, vector } = query;
        let named = index.document_names().named_by(&query_words(text));
        let query = rest.unwrap_or(text);
        let lower = query.to_lowercase();
        let wanted: Vec<String> = lower
            .split(|c: char| c.is_whitespace() || ",;?()".contains(c))
            .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
            .map(str::to_string)
            .collect();
        let names: Vec<String> = proper_names(query)
            .into_iter()
            .filter(|name| !wanted.contains(name))
            .collect();
        // A name marks the passage that is about it, not one sentence of
        // it (the next says "he" or "the company"): it is looked for in
        // the candidates' paragraphs.
        let mut paragraphs: HashMap<ParagraphNumber, Vec<bool>> = HashMap::new();
        if !names.is_empty() {
            for &i in candidates.keys() {
                let p = index.store.sentences[i].paragraph;
                paragraphs.entry(p).or_insert_with(|| {
                    let record = &index.store.paragraphs[p];
                    let text = index.store.paragraph_text(record).to_lowercase();
                    let [start, end] = record.sentences;
                    let entities = &index.store.sentences[start.index()..end.index()];
                    names
                        .iter()
                        .map(|name| {
                            holds_word(&text, name)
                                || entities
                                    .iter()
                                    .any(|s| s.entities.iter().any(|e| holds_word(e, name)))
                        })
                        .collect()
                });
            }
        }
        let name_weights: Vec<f32> = (0..names.len())
            .map(|n| {
                let holding = paragraphs.values().filter(|held| held[n]).count();
                1.0 - holding as f32 / paragraphs.len().max(1) as f32
            })
            .collect();
        let words = query_words(query);
        let asks_date = asks_for_date(&lower, &words);
        Self {
            named,
            asks_date,
            words,
            vector,
            relevance_weights: [
                scoring.weights.of(Signal::Fusion),
                scoring.weights.of(Signal::Dense),
                scoring.weights.of(Signal::Lexical),
            ],
            provenance: scoring.provenance,
            wanted,
            name_weights,
            name_paragraphs: paragraphs,
            lower,
            definitions,
            max_fused: candidates
                .values()
                .map(|c| c.fused)
                .fold(f32::EPSILON, f32::max),
        }
    }

    /// A candidate's fusion, dense and lexical scores combined with their
    /// weights, scaled to [0, 1].
    fn relevance(&self, c: &Candidate) -> f32 {
        let [wf, wd, wl] = self.relevance_weights;
        let total = wf + wd + wl;
        if total <= 0.0 {
            return 0.0;
        }
        (wf * c.fused / self.max_fused + wd * c.dense.unwrap_or(0.0).max(0.0) + wl * c.lexical)
            / total
    }
}

/// Signals of one candidate.
pub(super) fn signals(
    index: &IndexVersion,
    vectors: &QueryVectors<'_>,
    query: &QueryFeatures<'_>,
    i: SentenceNumber,
    candidates: &Candidates,
) -> Signals {
    let store = &index.store;
    let s = &store.sentences[i];
    let c = candidates.get(&i).copied().unwrap_or_default();
    let words = &query.words;

    // Structure: anchors clustering in the same paragraph, query words in
    // the heading path, definitions, a clause id named in the query.
    let others = SentenceNumber::range(store.paragraphs[s.paragraph].sentences)
        .filter(|&j| j != i && candidates.get(&j).is_some_and(|c| c.anchor))
        .count();
    let coherence = (others as f32 / 2.0).min(1.0);
    let path = store.sections[s.section].path.join(" ").to_lowercase();
    let in_path = if words.is_empty() {
        0.0
    } else {
        words.iter().filter(|w| path.contains(w.as_str())).count() as f32 / words.len() as f32
    };
    let clause_match = s
        .clause
        .as_ref()
        .is_some_and(|id| id.len() > 1 && query.lower.contains(&id.to_lowercase()));
    let definition = s.definition && {
        let text = s.text.to_lowercase();
        words.iter().any(|w| text.contains(w.as_str()))
    };
    let structure = 0.4 * coherence
        + 0.4 * in_path
        + 0.1 * f32::from(u8::from(definition))
        + 0.1 * f32::from(u8::from(clause_match));

    // Provenance: the body, or the annexes, count more, as the route
    // says.
    let annex = store.sections[s.section].is_annex;
    let favoured = match query.provenance {
        ProvenanceFavours::Body => !annex,
        ProvenanceFavours::Annexes => annex,
    };
    let provenance = f32::from(u8::from(favoured));

    // Entity: the numbers, dates, amounts and names the query writes are
    // present.
    let text = match query.wanted.is_empty() {
        true => String::new(),
        false => s.text.to_lowercase(),
    };
    let held = query.name_paragraphs.get(&s.paragraph);
    let present =
        query
            .wanted
            .iter()
            .map(|w| (1.0, holds(&text, &s.entities, w)))
            .chain(
                query.name_weights.iter().enumerate().map(|(n, &weight)| {
                    (weight, held.is_some_and(|held| held.get(n) == Some(&true)))
                }),
            );
    let (mut total, mut found) = (0f32, 0f32);
    for (weight, is_present) in present {
        total += weight;
        found += if is_present { weight } else { 0.0 };
    }
    let entity = if total > 0.0 { found / total } else { 0.0 };

    // Answer type: the query asks for a date and the sentence states one.
    let answer_type = f32::from(u8::from(
        query.asks_date && s.entities.iter().any(|e| is_iso_date(e)),
    ));

    // Context: the better of the sentences just before and after, within
    // the document.
    let context = [i.0.checked_sub(1), i.0.checked_add(1)]
        .into_iter()
        .flatten()
        .map(SentenceNumber)
        .filter(|&j| {
            store
                .sentences
                .get(j.index())
                .is_some_and(|o| o.document == s.document)
        })
        .filter_map(|j| candidates.get(&j).map(|c| query.relevance(c)))
        .fold(0.0, f32::max);

    // Heading: the query against the embedded heading path.
    let heading = if query.vector.is_empty() {
        0.0
    } else {
        dot(query.vector, index.headings.row(s.section.0)).max(0.0)
    };

    // Paragraph: the query against the paragraph's centroid.
    let paragraph = if query.vector.is_empty() {
        0.0
    } else {
        vectors
            .paragraph(s.paragraph)
            .map_or(0.0, |centroid| dot(query.vector, centroid).max(0.0))
    };

    // Definition: the query against the terms the sentence defines.
    let definition = query.definitions.get(&i).map_or(0.0, |&s| s.max(0.0));

    // Document: the query names the sentence's document.
    let document = query.named.get(&s.document).copied().unwrap_or(0.0);

    let mut signals = Signals::default();
    for (signal, value) in [
        (Signal::Fusion, c.fused / query.max_fused),
        (Signal::Dense, c.dense.unwrap_or(0.0).max(0.0)),
        (Signal::Lexical, c.lexical),
        (Signal::Structure, structure),
        (Signal::Context, context),
        (Signal::Heading, heading),
        (Signal::Paragraph, paragraph),
        (Signal::Definition, definition),
        (Signal::Provenance, provenance),
        (Signal::Entity, entity),
        (Signal::AnswerType, answer_type),
        (Signal::Document, document),
    ] {
        signals[signal] = value;
    }
    signals
}

/// Whether a (lower-cased) query asks for a date: it names one ("the
/// date of the contract", "dated") or opens with "when".
fn asks_for_date(lower: &str, words: &[String]) -> bool {
    words.iter().any(|w| w == "date" || w == "dated")
        || lower.split_whitespace().next() == Some("when")
}

/// Whether a sentence (its lower-cased text, its extracted entities)
/// holds what the query wants.
fn holds(text: &str, entities: &[String], wanted: &str) -> bool {
    text.contains(wanted) || entities.iter().any(|e| e.contains(wanted))
}

/// Whether `name` occurs in `text` as whole words ("ip" is not in
/// "relationship").
fn holds_word(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Words written with a capital that name nothing: a question's opening
/// word is capitalised by convention and skipped anyway, but these also
/// open clauses inside one ("… and Which …").
const NOT_NAMES: &[&str] = &[
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "the", "a", "an", "is",
    "are", "was", "were", "do", "does", "did", "i", "in", "of", "on", "and", "or",
];

/// The proper names a query writes: runs of capitalised words (an
/// organisation, a place, a person: "Acme Corp", "New York", "Norman"),
/// or acronyms, lower-cased. The first word of the query (or of a
/// sentence in it) is capitalised by convention, so it opens a name only
/// as an acronym or when the next word is capitalised too.
fn proper_names(query: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let mut flush = |run: &mut Vec<&str>| {
        if !run.is_empty() {
            let name = run.join(" ").to_lowercase();
            if name.chars().count() >= 2 && !names.contains(&name) {
                names.push(name);
            }
            run.clear();
        }
    };
    let tokens: Vec<NameToken<'_>> = query.split_whitespace().map(NameToken::read).collect();
    for (n, token) in tokens.iter().enumerate() {
        let word = token.word;
        let acronym = word.chars().count() >= 2 && word.chars().all(|c| c.is_ascii_uppercase());
        // The first word of the query, or of a sentence or a clause after
        // a colon inside it, is capitalised by convention.
        let first = n == 0 || tokens[n - 1].closes;
        let next_capitalised = !token.ends && tokens.get(n + 1).is_some_and(|t| t.capitalised);
        if token.capitalised && (!first || acronym || next_capitalised) {
            run.push(word);
        } else {
            flush(&mut run);
        }
        if token.ends {
            flush(&mut run);
        }
    }
    flush(&mut run);
    names
}

/// One whitespace-separated token of a query, read for [`proper_names`].
struct NameToken<'q> {
    /// The word, surrounding punctuation and a possessive cut.
    word: &'q str,
    /// Capitalised, and not a question or function word.
    capitalised: bool,
    /// Punctuation or a possessive ends the name it belongs to.
    ends: bool,
    /// It ends a sentence or opens a clause with a colon.
    closes: bool,
}

impl<'q> NameToken<'q> {
    fn read(token: &'q str) -> Self {
        let word = token.trim_matches(|c: char| !c.is_alphanumeric());
        let possessive = word.strip_suffix("'s").or_else(|| word.strip_suffix("’s"));
        let word = possessive.unwrap_or(word);
        let capitalised = word.chars().next().is_some_and(char::is_uppercase)
            && word.chars().any(char::is_alphabetic)
            && !NOT_NAMES.contains(&word.to_lowercase().as_str());
        Self {
            word,
            capitalised,
            ends: possessive.is_some() || token.ends_with(|c: char| ",;:?!.)\"'”".contains(c)),
            closes: token.ends_with(|c: char| ".?!:".contains(c)),
        }
    }
}

/// Whether an entity is a date as enrichment writes one (`YYYY-MM-DD`).
fn is_iso_date(entity: &str) -> bool {
    let b = entity.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// The composite score of every candidate.
pub(super) fn score(
    index: &IndexVersion,
    vectors: &QueryVectors<'_>,
    route: &RetrievalRouteSpec,
    query: &QueryFeatures<'_>,
    candidates: &Candidates,
) -> Vec<(SentenceNumber, f32)> {
    let weights = &route.scoring.weights;
    candidates
        .keys()
        .map(|&i| {
            // The reranker's signal is 0 here: it joins the composite
            // later, for the best candidates only (`rerank`).
            let composite = weights.composite(&signals(index, vectors, query, i, candidates));
            (i, composite)
        })
        .collect()
}

/// Picks `k` results from a ranking: threshold, per-document limits and
/// decay, per-section decay, MMR diversity (when `mmrLambda` < 1).
pub(super) fn select(
    index: &IndexVersion,
    vectors: &QueryVectors<'_>,
    spec: &SelectionSpec,
    ranking: &Ranking,
    k: usize,
    query: Option<&[f32]>,
) -> Ranking {
    let store = &index.store;
    let mut pool: Vec<(SentenceNumber, f32)> = ranking
        .iter()
        .copied()
        .filter(|&(_, s)| s >= spec.threshold)
        .collect();
    let mut chosen: Vec<(SentenceNumber, f32)> = Vec::with_capacity(k);
    let mut per_doc: HashMap<DocumentNumber, u32> = HashMap::new();
    let mut seen_text: HashSet<&str> = HashSet::new();
    let mut deferred: Vec<(SentenceNumber, f32)> = Vec::new();
    let lambda = spec.mmr_lambda.clamp(0.0, 1.0);
    let mmr = lambda < 1.0 && query.is_some();
    let keep = 1.0 - spec.document_decay.clamp(0.0, 1.0);
    let keep_section = 1.0 - spec.section_decay.clamp(0.0, 1.0);
    let mut per_section: HashMap<SectionNumber, u32> = HashMap::new();
    while chosen.len() < k && !pool.is_empty() {
        let pick = if mmr || keep < 1.0 || keep_section < 1.0 {
            let best = pool
                .iter()
                .enumerate()
                .map(|(n, &(i, s))| {
                    // Each result already taken from the same document, or
                    // the same section of it, discounts this one.
                    let sentence = &store.sentences[i];
                    let taken = per_doc.get(&sentence.document).copied().unwrap_or(0);
                    let in_section = per_section.get(&sentence.section).copied().unwrap_or(0);
                    let s = s * keep.powi(taken as i32) * keep_section.powi(in_section as i32);
                    if !mmr {
                        return (n, s);
                    }
                    // MMR: relevance against similarity to what is
                    // already chosen.
                    let redundancy = chosen
                        .iter()
                        .map(|&(j, _)| match (vectors.sentence(i), vectors.sentence(j)) {
                            (Some(a), Some(b)) => dot(a, b),
                            _ => 0.0,
                        })
                        .fold(0.0, f32::max);
                    (n, lambda * s - (1.0 - lambda) * redundancy)
                })
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            best.map_or(0, |(n, _)| n)
        } else {
            0
        };
        let (i, s) = pool.remove(pick);
        let sentence = &store.sentences[i];
        let n = per_doc.entry(sentence.document).or_default();
        if spec.max_per_document > 0 && *n >= spec.max_per_document {
            continue;
        }
        if spec.spread_per_document > 0 && *n >= spec.spread_per_document {
            // Other documents first; this one's turn comes if they run out.
            deferred.push((i, s));
            continue;
        }
        // The same sentence text twice (boilerplate, repeated clauses) is
        // one result.
        if !seen_text.insert(sentence.text.as_str()) {
            continue;
        }
        *n += 1;
        *per_section.entry(sentence.section).or_default() += 1;
        chosen.push((i, s));
    }
    for (i, s) in deferred {
        if chosen.len() >= k {
            break;
        }
        let sentence = &store.sentences[i];
        let n = per_doc.entry(sentence.document).or_default();
        if spec.max_per_document > 0 && *n >= spec.max_per_document {
            continue;
        }
        if seen_text.insert(sentence.text.as_str()) {
            *n += 1;
            chosen.push((i, s));
        }
    }
    // In the order chosen: each pick was the best of what was left.
    Ranking::as_ranked(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proper_names_are_runs_of_capitalised_words_after_the_first() {
        assert_eq!(
            proper_names("Who was the Norman leader who conquered England?"),
            ["norman", "england"]
        );
        assert_eq!(
            proper_names("Which state's law governs the hosting agreement?"),
            Vec::<String>::new()
        );
        assert_eq!(
            proper_names("When did Acme Corp. sign with New York's Widget Ltd?"),
            ["acme corp", "new york", "widget ltd"]
        );
        assert_eq!(
            proper_names("IBM and the EU: what did Super Bowl 50 decide?"),
            ["ibm", "eu", "super bowl"]
        );
        // A capitalised opening word names nothing on its own.
        assert_eq!(proper_names("Fees are due when?"), Vec::<String>::new());
        assert_eq!(
            proper_names("Highlight the \"Governing Law\" parts. Details: Which law?"),
            ["governing law"]
        );
    }

    #[test]
    fn names_match_whole_words() {
        assert!(holds_word("the transfer of ip rights", "ip"));
        assert!(holds_word("ip.", "ip"));
        assert!(!holds_word("the relationship", "ip"));
        assert!(holds_word("acme corp. and new york", "new york"));
        assert!(!holds_word("new yorker", "new york"));
    }

    #[test]
    fn date_questions_and_date_entities() {
        let asks = |q: &str| asks_for_date(&q.to_lowercase(), &query_words(q));
        assert!(asks("The date of the contract"));
        assert!(asks("When does the initial term expire?"));
        assert!(asks("On what date is the agreement dated?"));
        assert!(!asks("Who are the parties to the agreement?"));
        assert!(!asks("Is there a cap on liability? (consolidated)"));
        assert!(!asks("What are the candidates to update?"));

        assert!(is_iso_date("2012-05-07"));
        for entity in ["2012-05", "$5,000", "acme corp.", "fy2019", "2012-05-0a"] {
            assert!(!is_iso_date(entity), "{entity}");
        }
    }
}
