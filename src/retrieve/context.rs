//! The context handed to a generator: results' displays in reading order,
//! exact and substring duplicates removed, no ids or scores in the text.

use super::Hit;

/// Joins the hits' display texts in reading order (document, then
/// position), dropping a display that repeats or lies inside another.
pub fn assemble_context(hits: &[Hit]) -> String {
    let mut ordered: Vec<&Hit> = hits.iter().collect();
    ordered.sort_by(|a, b| {
        a.citation
            .document
            .cmp(&b.citation.document)
            .then(a.sentence.cmp(&b.sentence))
    });
    let mut kept: Vec<&str> = Vec::new();
    for hit in ordered {
        let text = hit.display.trim();
        if text.is_empty() || kept.iter().any(|k| k.contains(text)) {
            continue;
        }
        // A longer display replaces the shorter ones it contains.
        kept.retain(|k| !text.contains(k));
        kept.push(text);
    }
    kept.join("\n\n")
}
