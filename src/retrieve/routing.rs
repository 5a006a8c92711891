//! Query routing (`anchors.mode: auto`): a precise question is answered
//! from sentences, a broad one through the chunks that hold its answer
//! as well. The decision reads the query alone, by cues a person can
//! check, and the response says which it took and why:
//!
//! | cue | reads as |
//! |---|---|
//! | a number, a date, an amount | precise |
//! | a proper name (a capitalised word past the first, an acronym) | precise |
//! | a clause, section, article, exhibit or schedule named | precise |
//! | a document named outright | precise |
//! | who, when, where, which, how many, how much, how long | precise |
//! | why, how, describe, explain, summarise, compare, what are | broad |
//! | fifteen words or more | broad |
//!
//! A precise cue wins over a broad one: a long question that names a
//! number or a clause still asks for the sentence that holds it. A query
//! with no cue at all (a claim to check, a phrase) is precise: sentences
//! are what every other mode searches.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::spec::{AnchorMode, RetrievalRouteSpec};

/// Chunks a broad query takes when the route itself takes none
/// (`anchors.chunks: 0`): the ten nearest, as measured in the figures.
pub const BROAD_CHUNKS: u32 = 10;

/// Words from which a question counts as long, and so broad.
const LONG_QUERY_WORDS: usize = 15;

/// What a query is answered from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// Anchor sentences alone (the `full` mode as the route sets it).
    Sentences,
    /// Anchor sentences and the chunks nearest the query.
    Chunks,
}

/// What `anchors.mode: auto` chose for one query, and the cues it read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Routing {
    pub granularity: Granularity,
    /// The cues that decided, in the table's order ("names a number").
    pub reasons: Vec<&'static str>,
}

/// Question openings that ask for one fact.
const FACT_OPENINGS: &[&str] = &[
    "who ",
    "whom ",
    "whose ",
    "when ",
    "where ",
    "which ",
    "how many ",
    "how much ",
    "how long ",
    "how often ",
    "what year",
    "what date",
    "what day",
];

/// Openings that ask for an explanation or an overview.
const BROAD_OPENINGS: &[&str] = &[
    "why ",
    "how ",
    "describe ",
    "explain ",
    "summarise ",
    "summarize ",
    "summary of ",
    "overview ",
    "give an overview",
    "compare ",
    "discuss ",
    "what are ",
    "tell me about ",
];

/// Month names: a date written out.
const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

static PROVISION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(\b(section|clause|article|exhibit|schedule|annex|appendix|paragraph)s?\s+(\d|[ivxlc]+\b|[a-z]\b|\()|§)",
    )
    .expect("a valid pattern")
});

/// Decides how `query` is answered; `names_document` says whether it
/// names a document outright (read by the caller, which knows the
/// documents the query may see).
pub fn route_query(query: &str, names_document: bool) -> Routing {
    let lower = query.trim().to_lowercase();
    let tokens: Vec<&str> = query
        .split_whitespace()
        .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|t| !t.is_empty())
        .collect();
    let mut precise = Vec::new();
    let has_number = tokens.iter().any(|t| t.chars().any(|c| c.is_ascii_digit()))
        || query.contains(['$', '€', '£', '%'])
        || tokens
            .iter()
            .any(|t| MONTHS.contains(&t.to_lowercase().as_str()));
    if has_number {
        precise.push("names a number, a date or an amount");
    }
    if tokens.iter().skip(1).any(|t| is_proper_name(t))
        || tokens.first().is_some_and(|t| is_acronym(t))
    {
        precise.push("names a proper name");
    }
    if PROVISION.is_match(query) {
        precise.push("names a clause, section or exhibit");
    }
    if names_document {
        precise.push("names a document");
    }
    if FACT_OPENINGS.iter().any(|o| lower.starts_with(o)) {
        precise.push("asks for one fact");
    }
    if !precise.is_empty() {
        return Routing {
            granularity: Granularity::Sentences,
            reasons: precise,
        };
    }
    let mut broad = Vec::new();
    if BROAD_OPENINGS.iter().any(|o| lower.starts_with(o)) {
        broad.push("asks for an explanation or an overview");
    }
    if tokens.len() >= LONG_QUERY_WORDS {
        broad.push("is long");
    }
    match broad.is_empty() {
        true => Routing {
            granularity: Granularity::Sentences,
            reasons: vec!["no cue of a broad question"],
        },
        false => Routing {
            granularity: Granularity::Chunks,
            reasons: broad,
        },
    }
}

/// `route` as `full` mode runs it for a query routed to `granularity`:
/// the route's own chunks (or [`BROAD_CHUNKS`]) for a broad one, none for
/// a precise one.
pub(super) fn decided(route: &RetrievalRouteSpec, granularity: Granularity) -> RetrievalRouteSpec {
    let mut decided = route.clone();
    decided.anchors.mode = AnchorMode::Full;
    decided.anchors.chunks = match granularity {
        Granularity::Sentences => 0,
        Granularity::Chunks if route.anchors.chunks > 0 => route.anchors.chunks,
        Granularity::Chunks => BROAD_CHUNKS,
    };
    decided
}

/// A capitalised word that is not a sentence's first nor the pronoun "I".
fn is_proper_name(token: &str) -> bool {
    let mut chars = token.chars();
    (chars.next().is_some_and(char::is_uppercase) && token != "I") || is_acronym(token)
}

/// Two or more capitals, and nothing lower-case ("NASA", "IBM", "EBITDA").
fn is_acronym(token: &str) -> bool {
    token.chars().filter(|c| c.is_uppercase()).count() >= 2
        && !token.chars().any(char::is_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chose(query: &str) -> Granularity {
        route_query(query, false).granularity
    }

    #[test]
    fn facts_numbers_names_and_clauses_go_to_sentences() {
        for query in [
            "When does the agreement expire?",
            "How much is the monthly fee?",
            "What is the fee in 2023?",
            "what did Acme agree to deliver",
            "Is IBM a party?",
            "What does Section 4.2 require of the supplier under the services agreement and why?",
            "What happens on the first of March?",
        ] {
            assert_eq!(chose(query), Granularity::Sentences, "{query}");
        }
        let named = route_query("Explain how the hosting agreement ends", true);
        assert_eq!(named.granularity, Granularity::Sentences);
        assert_eq!(named.reasons, vec!["names a document"]);
    }

    #[test]
    fn explanations_and_long_questions_go_to_chunks() {
        let why = route_query("Why would the licence end early?", false);
        assert_eq!(why.granularity, Granularity::Chunks);
        assert_eq!(why.reasons, vec!["asks for an explanation or an overview"]);
        let long = route_query(
            "Is there a restriction on the ability of a party to compete with the counterparty \
             or operate in a certain geography?",
            false,
        );
        assert_eq!(long.granularity, Granularity::Chunks);
        assert_eq!(long.reasons, vec!["is long"]);
    }

    #[test]
    fn a_query_without_cues_stays_with_sentences() {
        let claim = route_query("vitamin d deficiency raises the risk of fractures", false);
        assert_eq!(claim.granularity, Granularity::Sentences);
        assert_eq!(claim.reasons, vec!["no cue of a broad question"]);
    }
}
