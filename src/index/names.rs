//! The words that name each document, for queries that name one.
//!
//! "Which state's law governs the hosting agreement?" over a folder of
//! agreements asks about the one called the hosting agreement: its file
//! name and title say so, while its sentences may say "this Agreement"
//! throughout. A document is named by the words of its title and of its
//! key's file name (`webhelp-hosting-agreement.txt`), three letters or
//! more, lower case. Built from the skeleton when a query first asks.

use std::collections::HashMap;

use super::store::DocumentRecord;

/// Words of document names, each with the documents it names.
pub struct DocumentNames {
    documents: usize,
    by_word: HashMap<String, Vec<u32>>,
}

impl DocumentNames {
    pub fn new(documents: &[DocumentRecord]) -> Self {
        let mut by_word: HashMap<String, Vec<u32>> = HashMap::new();
        for (d, document) in documents.iter().enumerate() {
            let file = document.key.rsplit('/').next().unwrap_or_default();
            let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
            let mut words: Vec<String> = name_words(stem)
                .chain(document.title.as_deref().into_iter().flat_map(name_words))
                .collect();
            words.sort_unstable();
            words.dedup();
            for word in words {
                by_word.entry(word).or_default().push(d as u32);
            }
        }
        Self {
            documents: documents.len(),
            by_word,
        }
    }

    /// How strongly `words` (a query's topic words) name each document:
    /// the share of the naming weight of the query's words that a
    /// document's name holds, each word weighted by how few documents it
    /// names (`ln(documents / named)`). A word in every name, or in none,
    /// names nothing; a query none of whose words names a document gives
    /// an empty map. A plural matches its singular ("Normans", "Norman").
    pub fn named_by(&self, words: &[String]) -> HashMap<u32, f32> {
        let mut scores: HashMap<u32, f32> = HashMap::new();
        let mut total = 0.0;
        let mut seen: Vec<&str> = Vec::new();
        for word in words {
            let word = word
                .strip_suffix('s')
                .filter(|w| w.len() >= 3)
                .unwrap_or(word);
            if seen.contains(&word) {
                continue;
            }
            seen.push(word);
            let mut named: Vec<u32> = [word.to_string(), format!("{word}s")]
                .iter()
                .filter_map(|w| self.by_word.get(w))
                .flatten()
                .copied()
                .collect();
            named.sort_unstable();
            named.dedup();
            if named.is_empty() || named.len() >= self.documents {
                continue;
            }
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

    fn document(key: &str, title: Option<&str>) -> DocumentRecord {
        DocumentRecord {
            id: key.into(),
            key: key.into(),
            title: title.map(str::to_string),
            acl: Vec::new(),
            metadata: Default::default(),
            sentences: [0, 0],
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
        assert_eq!(named.get(&0), Some(&1.0));
        let endorsement = named[&1];
        assert!(endorsement > 0.0 && endorsement < 0.5, "{endorsement}");
        assert!(!named.contains_key(&2));
        // A plural or singular of a name word names it.
        let norman = names.named_by(&words("who was the norman leader"));
        assert_eq!(norman.get(&2), Some(&1.0));
        // Words in no name, or in every name, name nothing.
        assert!(
            names
                .named_by(&words("what does a turing machine model"))
                .is_empty()
        );
    }
}
