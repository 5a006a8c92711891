//! The words that name each document, for queries that name one.
//!
//! "Which state's law governs the hosting agreement?" over a folder of
//! agreements asks about the one called the hosting agreement: its file
//! name and title say so, while its sentences may say "this Agreement"
//! throughout. A document is named by the words of its title and of its
//! key's file name (`webhelp-hosting-agreement.txt`), three letters or
//! more, lower case. Built from the skeleton when a query first asks.

use std::collections::{HashMap, HashSet};

use super::numbers::DocumentNumber;
use super::store::DocumentRecord;

/// Words of document names, each with the documents it names.
pub struct DocumentNames {
    documents: usize,
    by_word: HashMap<String, Vec<DocumentNumber>>,
    /// Each document's names, its file name's words and its title's, in
    /// the singular, distinct.
    names: Vec<[Vec<String>; 2]>,
}

impl DocumentNames {
    pub fn new(documents: &[DocumentRecord]) -> Self {
        let mut by_word: HashMap<String, Vec<DocumentNumber>> = HashMap::new();
        let mut names = Vec::with_capacity(documents.len());
        for (d, document) in documents.iter().enumerate() {
            let file = document.key.rsplit('/').next().unwrap_or_default();
            let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
            let mut words: Vec<String> = name_words(stem)
                .chain(document.title.as_deref().into_iter().flat_map(name_words))
                .collect();
            words.sort_unstable();
            words.dedup();
            for word in words {
                by_word
                    .entry(word)
                    .or_default()
                    .push(DocumentNumber(d as u32));
            }
            let singular = |text: &str| {
                let mut words: Vec<String> =
                    name_words(text).map(|w| singular(&w).to_string()).collect();
                words.sort_unstable();
                words.dedup();
                words
            };
            names.push([
                singular(stem),
                singular(document.title.as_deref().unwrap_or("")),
            ]);
        }
        Self {
            documents: documents.len(),
            by_word,
            names,
        }
    }

    /// How strongly `words` (a query's topic words) name each document:
    /// the share of the naming weight of the query's words that a
    /// document's name holds, each word weighted by how few documents it
    /// names (`ln(documents / named)`). A word in every name, or in none,
    /// names nothing; a query none of whose words names a document gives
    /// an empty map. A plural matches its singular ("Normans", "Norman").
    pub fn named_by(&self, words: &[String]) -> HashMap<DocumentNumber, f32> {
        let mut scores: HashMap<DocumentNumber, f32> = HashMap::new();
        let mut total = 0.0;
        for (_, named) in self.naming(words) {
            let weight = (self.documents as f32 / named.len() as f32).ln();
            total += weight;
            for d in named {
                *scores.entry(d).or_default() += weight;
            }
        }
        if total > 0.0 {
            for score in scores.values_mut() {
                *score /= total;
            }
        }
        scores
    }

    /// The documents `words` (a query's topic words) name outright: those
    /// whose name holds every word of the query that names documents, and
    /// whose title or file name they spell out, all of it but one word at
    /// most and at least half of it. "the
    /// hosting agreement" names `webhelp-hosting-agreement.txt` outright,
    /// though "agreement" alone would also name the endorsement agreement;
    /// a claim that shares four words with a paper's twelve-word title
    /// shares its topic, and names nothing. None when no document is
    /// named so.
    pub fn named_outright(&self, words: &[String]) -> Option<Outright> {
        let naming = self.naming(words);
        let (_, first) = naming.first()?;
        let mentioned = |name: &[String]| {
            let held = name
                .iter()
                .filter(|w| naming.iter().any(|(n, _)| n == *w))
                .count();
            // "webhelp hosting agreement" is named by "the hosting
            // agreement", "Nikola Tesla" by "Tesla": all of a name but one
            // word, and at least half of it.
            held > 0 && held + 1 >= name.len() && 2 * held >= name.len()
        };
        let documents: Vec<DocumentNumber> = first
            .iter()
            .copied()
            .filter(|d| naming.iter().all(|(_, named)| named.contains(d)))
            .filter(|&d| {
                self.names
                    .get(d.index())
                    .is_some_and(|names| names.iter().any(|name| mentioned(name)))
            })
            .collect();
        (!documents.is_empty()).then(|| Outright {
            documents,
            words: naming
                .into_iter()
                .flat_map(|(word, _)| [format!("{word}s"), word])
                .collect(),
        })
    }

    /// Each distinct word of `words` that names some documents but not
    /// all (singular, as names are matched), with the documents it names,
    /// sorted.
    fn naming(&self, words: &[String]) -> Vec<(String, Vec<DocumentNumber>)> {
        let mut naming: Vec<(String, Vec<DocumentNumber>)> = Vec::new();
        for word in words {
            let word = singular(word);
            if naming.iter().any(|(w, _)| w == word) {
                continue;
            }
            let mut named: Vec<DocumentNumber> = [word.to_string(), format!("{word}s")]
                .iter()
                .filter_map(|w| self.by_word.get(w))
                .flatten()
                .copied()
                .collect();
            named.sort_unstable();
            named.dedup();
            if !named.is_empty() && named.len() < self.documents {
                naming.push((word.to_string(), named));
            }
        }
        naming
    }
}

/// Documents a query names outright ([`DocumentNames::named_outright`]).
#[derive(Debug, PartialEq)]
pub struct Outright {
    /// The documents, in order.
    pub documents: Vec<DocumentNumber>,
    /// The query's words that name them, in both numbers ("agreement",
    /// "agreements").
    pub words: HashSet<String>,
}

/// A name word in the singular, as names are matched: a trailing "s"
/// cut when three letters are left ("normans" → "norman").
fn singular(word: &str) -> &str {
    word.strip_suffix('s')
        .filter(|w| w.len() >= 3)
        .unwrap_or(word)
}

/// Lower-case words of three letters or more.
fn name_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::SentenceNumber;

    fn document(key: &str, title: Option<&str>) -> DocumentRecord {
        DocumentRecord {
            id: key.into(),
            key: key.into(),
            title: title.map(str::to_string),
            info: Default::default(),
            acl: Vec::new(),
            metadata: Default::default(),
            sentences: [SentenceNumber(0); 2],
        }
    }

    #[test]
    fn the_rarer_naming_words_decide() {
        let names = DocumentNames::new(&[
            document("documents/webhelp-hosting-agreement.txt", None),
            document("documents/lifeway-endorsement-agreement.txt", None),
            document("documents/normans.md", Some("Normans")),
            document("documents/computational-complexity-theory.md", None),
        ]);
        let words = |q: &str| name_words(q).collect::<Vec<_>>();
        let named = names.named_by(&words("which state law governs the hosting agreement"));
        assert_eq!(named.get(&DocumentNumber(0)), Some(&1.0));
        let endorsement = named[&DocumentNumber(1)];
        assert!(endorsement > 0.0 && endorsement < 0.5, "{endorsement}");
        assert!(!named.contains_key(&DocumentNumber(2)));
        // A plural or singular of a name word names it.
        let norman = names.named_by(&words("who was the norman leader"));
        assert_eq!(norman.get(&DocumentNumber(2)), Some(&1.0));
        // Words in no name, or in every name, name nothing.
        assert!(
            names
                .named_by(&words("what does a turing machine model"))
                .is_empty()
        );

        // Named outright: one name holds every naming word.
        let naming = |q: &str| {
            names.named_outright(&words(q)).map(|o| {
                let mut w: Vec<String> = o.words.into_iter().collect();
                w.sort();
                (o.documents, w)
            })
        };
        assert_eq!(
            naming("which state law governs the hosting agreement"),
            Some((
                vec![DocumentNumber(0)],
                ["agreement", "agreements", "hosting", "hostings"]
                    .map(String::from)
                    .to_vec()
            ))
        );
        assert_eq!(
            naming("who were the normans"),
            Some((
                vec![DocumentNumber(2)],
                ["norman", "normans"].map(String::from).to_vec()
            ))
        );
        // A long title that holds the query's naming words is not named
        // by them: they are less than half of it.
        let papers = DocumentNames::new(&[
            document(
                "corpus/4983",
                Some(
                    "Distinct roles of interleukin signalling in the thymic development \
                     and peripheral homeostasis of regulatory T cells",
                ),
            ),
            document("corpus/1234", Some("Vitamin D and bone density")),
        ]);
        assert!(
            papers
                .named_outright(&words("interleukin signalling shapes regulatory cells"))
                .is_none()
        );
        assert_eq!(
            papers
                .named_outright(&words("does vitamin intake change bone density"))
                .map(|o| o.documents),
            Some(vec![DocumentNumber(1)])
        );
        // Two names share the query's naming words only in part: neither
        // is named outright.
        assert_eq!(naming("the hosting and the endorsement agreements"), None);
        assert_eq!(naming("what does a turing machine model"), None);
    }
}
