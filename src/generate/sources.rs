//! The selected results as the model's sources: one source per result,
//! its passage (what the result displays, cut down to the context budget
//! whole sentences at a time by `retrieve::fit_hits`), numbered
//! `[1]..[n]` in reading order (document, then position); a prompt whose
//! whole still counts over the budget drops whole sources from the lowest
//! score.

use crate::index::{IndexVersion, SentenceNumber};
use crate::retrieve::Hit;

use super::prompt::Prompt;
use super::tokens::TokenCounter;
use super::{Source, SourceSentence};

/// The hits' passages as sources, numbered in reading order. A passage
/// that lies inside another's (two results in one long paragraph whose
/// windows touch were joined already; this catches the rest) is left out.
pub(super) fn from_hits(hits: &[Hit], index: &IndexVersion) -> Vec<Source> {
    let store = &index.store;
    let mut ordered: Vec<&Hit> = hits.iter().collect();
    ordered.sort_by(|a, b| {
        a.citation
            .document
            .cmp(&b.citation.document)
            .then(a.passage[0].cmp(&b.passage[0]))
    });
    let mut sources: Vec<Source> = Vec::new();
    for hit in ordered {
        let [from, to] = hit.passage;
        let selected = std::iter::once(hit.citation.sentence_id.clone())
            .chain(hit.highlights.iter().map(|h| h.sentence_id.clone()));
        let container = sources.iter_mut().find(|s| {
            let first = s.sentences.first().map(|x| x.number);
            let end = s.sentences.last().map(|x| x.number.after(1));
            let (Some(first), Some(end)) = (first, end) else {
                return false;
            };
            s.document == hit.citation.document && first <= from && to <= end
        });
        if let Some(container) = container {
            // Its selected sentences are selected in the larger passage.
            container.selected.extend(selected);
            container.score = container.score.max(hit.score);
            continue;
        }
        if from >= to {
            continue;
        }
        let Some(document) = store
            .sentences
            .get(hit.sentence.index())
            .and_then(|s| store.documents.get(s.document.index()))
        else {
            continue;
        };
        let sentences: Vec<SourceSentence> = SentenceNumber::range([from, to])
            .filter_map(|i| store.sentences.get(i.index()).map(|s| (i, s)))
            .map(|(i, s)| SourceSentence {
                number: i,
                sentence_id: s.id.clone(),
                text: s.text.clone(),
                char_span: s.span,
                page: s.page,
                boxes: s.boxes.clone(),
            })
            .collect();
        let selected = selected.collect();
        sources.push(Source {
            number: sources.len() + 1,
            document: hit.citation.document.clone(),
            document_id: hit.citation.document_id.clone(),
            title: document.title.clone(),
            section_path: hit.citation.section_path.clone(),
            page: hit.citation.page,
            text: hit.display.clone(),
            sentences,
            selected,
            score: hit.score,
        });
    }
    sources
}

/// The tokens `hit`'s source takes beyond its passage: its delimiters,
/// document and section.
pub(super) fn frame_tokens(hit: &Hit, index: &IndexVersion, counter: &TokenCounter) -> usize {
    from_hits(std::slice::from_ref(hit), index)
        .first_mut()
        .map_or(0, |source| {
            source.text.clear();
            Prompt::source_tokens(source, counter)
        })
}

/// Sources that fit, and how many were left out.
pub(super) struct Fitted {
    pub sources: Vec<Source>,
    pub dropped: usize,
}

/// The best-scoring sources whose prompt, with the instructions and the
/// question, takes at most `budget` tokens; renumbered in reading order.
/// Dropping from the lowest score until the prompt fits keeps exactly the
/// longest run of best sources that fits.
pub(super) fn fit(
    sources: Vec<Source>,
    question: &str,
    system_prompt: Option<&str>,
    budget: usize,
    counter: &TokenCounter,
) -> Fitted {
    let total = sources.len();
    let mut by_score: Vec<usize> = (0..total).collect();
    by_score.sort_by(|&a, &b| {
        sources[b]
            .score
            .total_cmp(&sources[a].score)
            .then(a.cmp(&b))
    });
    let fixed = Prompt::overhead(question, system_prompt, counter);
    let mut used = fixed;
    let mut keep = vec![false; total];
    for &i in &by_score {
        let cost = Prompt::source_tokens(&sources[i], counter);
        if used + cost > budget {
            break;
        }
        used += cost;
        keep[i] = true;
    }
    let mut kept: Vec<Source> = sources
        .into_iter()
        .zip(keep)
        .filter_map(|(source, keep)| keep.then_some(source))
        .collect();
    for (n, source) in kept.iter_mut().enumerate() {
        source.number = n + 1;
    }
    let dropped = total - kept.len();
    Fitted {
        sources: kept,
        dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(number: usize, text: &str, score: f32) -> Source {
        Source {
            number,
            document: format!("doc-{number}"),
            document_id: String::new(),
            title: None,
            section_path: Vec::new(),
            page: None,
            text: text.to_string(),
            sentences: Vec::new(),
            selected: Vec::new(),
            score,
        }
    }

    #[test]
    fn the_lowest_scores_go_first_and_sources_are_never_cut() {
        let counter = TokenCounter::Estimate;
        let long = "word ".repeat(600);
        let sources = vec![
            source(1, "The first passage.", 0.9),
            source(2, &long, 0.5),
            source(3, "The third passage.", 0.7),
        ];
        let overhead = Prompt::overhead("q?", None, &counter);
        let small = Prompt::source_tokens(&sources[0], &counter);
        // Room for the two short sources, not the long one.
        let fitted = fit(
            sources.clone(),
            "q?",
            None,
            overhead + 2 * small + 5,
            &counter,
        );
        assert_eq!(fitted.dropped, 1);
        let texts: Vec<&str> = fitted.sources.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["The first passage.", "The third passage."]);
        assert_eq!(
            fitted.sources.iter().map(|s| s.number).collect::<Vec<_>>(),
            [1, 2]
        );
        // The long source scores below the third: when only one fits, it
        // is the best.
        let one = fit(sources.clone(), "q?", None, overhead + small + 1, &counter);
        assert_eq!(one.sources.len(), 1);
        assert_eq!(one.sources[0].text, "The first passage.");
        // Nothing fits: nothing is cut to make it fit.
        let none = fit(sources, "q?", None, overhead, &counter);
        assert!(none.sources.is_empty());
        assert_eq!(none.dropped, 3);
    }
}
