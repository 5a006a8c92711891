//! A query that names a document ("Which state's law governs the hosting
//! agreement?") asks two things at once: which document (the hosting
//! agreement) and what inside it (which state's law governs). Measured
//! against the whole query, the sentences that repeat the document's name
//! (its title line, its opening "This Hosting Agreement …") win on words
//! that every sentence of that document is about anyway, and the clause
//! that answers comes third. So the naming words pick the document (the
//! `document` signal reads the whole query) and the rest of the query
//! picks the sentence: its dense, lexical, heading and paragraph signals
//! read what is left once the naming words are taken out.

use crate::index::{DocumentNumber, IndexVersion, Ranking, SentenceNumber};
use crate::spec::{AnchorSource, RetrievalRouteSpec};

use super::scoring::query_words;
use super::{Candidates, RetrieveError, Retriever};

/// A query that names documents outright, and what is left of it.
///
/// The named documents are not put first by force: the `document` signal
/// lifts them, and the rest of the query decides among sentences. On
/// SQuAD, forcing them first cost what the rest gained (a question that
/// names one article is sometimes answered in another).
pub(super) struct Named {
    /// The documents it names.
    pub documents: Vec<DocumentNumber>,
    /// The query without its naming words.
    pub rest: String,
}

/// The documents `query` names outright
/// ([`DocumentNames::named_outright`](crate::index::names::DocumentNames::named_outright))
/// among those it may see (`visible`, one entry per document), and what is
/// left of it once the naming words are taken out: None when it names
/// none it may see (a document outside its filters is neither searched
/// nor told of), or when nothing but stop words would be left ("the
/// hosting agreement?" asks for the document itself).
pub(super) fn named(index: &IndexVersion, query: &str, visible: &[bool]) -> Option<Named> {
    let mut outright = index.document_names().named_outright(&query_words(query))?;
    outright
        .documents
        .retain(|&d| visible.get(d.index()).copied().unwrap_or(false));
    if outright.documents.is_empty() {
        return None;
    }
    let names = |token: &str| {
        let words: Vec<String> = token
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 3)
            .map(str::to_lowercase)
            .collect();
        !words.is_empty() && words.iter().all(|w| outright.words.contains(w))
    };
    let mut rest: Vec<&str> = query
        .split_whitespace()
        .filter(|token| !names(token))
        .collect();
    // The question mark often sits on the naming word that went.
    let asks = query.trim_end().ends_with('?') && !rest.last().is_some_and(|t| t.ends_with('?'));
    if asks {
        rest.push("?");
    }
    let rest = rest.join(" ");
    (!query_words(&rest).is_empty()).then_some(Named {
        documents: outright.documents,
        rest,
    })
}

impl Retriever<'_> {
    /// Measures `candidates` against the rest of a query that names a
    /// document: its BM25 score for the rest's words among the
    /// candidates, relative to the best, and no dense similarity yet
    /// (stage 3 fills it in from the rest's vector, as it does for every
    /// candidate stage 1 did not score).
    pub(super) fn measure_against(
        &self,
        route: &RetrievalRouteSpec,
        rest: &str,
        candidates: &mut Candidates,
    ) -> Result<(), RetrieveError> {
        for c in candidates.values_mut() {
            c.dense = None;
        }
        let ids: Vec<SentenceNumber> = candidates.keys().copied().collect();
        let boost = route.anchors.paragraph_boost;
        let lexical = match route.anchors.source {
            AnchorSource::Embedded => {
                // The BM25 index's documents are sentences, by number.
                let among = |i: u32| candidates.contains_key(&SentenceNumber(i));
                let search = self.index.search()?;
                Ranking::from_rows(search.bm25.search(rest, ids.len(), boost, &among)?)
            }
            AnchorSource::Graph => {
                self.index
                    .lexical()?
                    .score(&self.index.store, rest, &ids, boost)
            }
        };
        let best = lexical.first().map_or(1.0, |&(_, s)| s.max(f32::EPSILON));
        for c in candidates.values_mut() {
            c.lexical = 0.0;
        }
        for (i, score) in lexical {
            if let Some(c) = candidates.get_mut(&i) {
                c.lexical = score / best;
            }
        }
        Ok(())
    }
}
