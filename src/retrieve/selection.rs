//! Stage 3's last step, selection: the ranking becomes hits. A query
//! common to the corpus is first answered in each of its best documents,
//! searched alone; then top-k, threshold, per-document limits and MMR
//! select the results ([`scoring::select`](super::scoring)), each shown
//! inside its paragraph ("sentence search, paragraph display"); results
//! that would show the same passage become one, with each of their
//! sentences highlighted.

use crate::index::{DocumentNumber, IndexVersion, ParagraphNumber, Ranking, SentenceNumber};
use crate::spec::{ParentLevel, RetrievalRouteSpec};

use super::budget::{self, BudgetUse, Reach};
use super::{
    Citation, CitedReference, CitedTable, Filter, Highlight, Hit, REFERENCED_BY_SHOWN,
    RetrieveError, Retriever, Signals,
};

/// The places of the corpus-wide ranking in which one document must not
/// hold more than half for a query to count as common.
const COMMON_QUERY_PLACES: usize = 10;

impl Retriever<'_> {
    /// Whether `query` is common to the corpus: its words are used, on
    /// average, by at least `selection.commonQueryShare` of the documents
    /// (see [`Bm25Index::document_share`](crate::index::bm25::Bm25Index::document_share)),
    /// and the corpus-wide `ranking` does not already settle on one
    /// document (its first holds at most half of the first ten places).
    /// A question about one document may use common words ("In what year
    /// was …?"), but its ranking then gathers in that document.
    pub(super) fn is_common(
        &self,
        route: &RetrievalRouteSpec,
        query: &str,
        allowed_docs: &[bool],
        ranking: &Ranking,
    ) -> Result<bool, RetrieveError> {
        let spec = &route.selection;
        if spec.common_query_share > 1.0 || allowed_docs.iter().filter(|&&a| a).nth(1).is_none() {
            return Ok(false);
        }
        let store = &self.index.store;
        let document = |&(i, _): &(SentenceNumber, f32)| store.sentences[i].document;
        let Some(first) = ranking.first().map(document) else {
            return Ok(false);
        };
        let lead = ranking
            .iter()
            .take(COMMON_QUERY_PLACES)
            .filter(|r| document(r) == first)
            .count();
        let share = self.index.document_share(query)?;
        tracing::debug!(share, lead, "how common the query is");
        Ok(share >= spec.common_query_share && 2 * lead <= COMMON_QUERY_PLACES)
    }

    /// The ranking of a common query: the `k` documents that `ranking`
    /// (over the whole corpus) puts first are each searched alone, as a
    /// reviewer asks "in this document, …", which finds the best sentences
    /// of a document far better than a corpus-wide candidate list that
    /// holds a few of them. Each document's sentences keep their order
    /// and are scaled so that its best scores what the document's best
    /// did corpus-wide; other documents keep their corpus-wide scores.
    pub(super) fn per_document(
        &self,
        route: &RetrievalRouteSpec,
        query: &str,
        query_vector: Option<&[f32]>,
        k: usize,
        filter: &Filter,
        ranking: Ranking,
    ) -> Result<Ranking, RetrieveError> {
        let store = &self.index.store;
        // The best documents, each with its best sentence's score.
        let mut best: Vec<(DocumentNumber, f32)> = Vec::new();
        for &(i, score) in &ranking {
            let document = store.sentences[i].document;
            if !best.iter().any(|&(d, _)| d == document) {
                best.push((document, score));
                if best.len() == k {
                    break;
                }
            }
        }
        // Searched alone, a document is never common to itself; the
        // reranker reads the merged ranking once.
        let mut alone = route.clone();
        alone.selection.common_query_share = f32::INFINITY;
        alone.reranker.kind = crate::spec::RerankerKind::None;
        let mut merged: Vec<(SentenceNumber, f32)> = ranking
            .into_iter()
            .filter(|&(i, _)| {
                let document = store.sentences[i].document;
                !best.iter().any(|&(d, _)| d == document)
            })
            .collect();
        for (document, corpus_best) in best {
            let only = Filter {
                documents: Some(vec![store.documents[document].key.clone()]),
                ..filter.clone()
            };
            let answer = self.retrieve_embedded(&alone, query, query_vector, Some(k), &only)?;
            let local_best = answer.ranking.best_score().unwrap_or(1.0);
            let scale = if local_best > 0.0 && corpus_best > 0.0 {
                corpus_best / local_best
            } else {
                1.0
            };
            merged.extend(answer.ranking.into_iter().map(|(i, s)| (i, s * scale)));
        }
        Ok(Ranking::best_first(merged))
    }

    /// The results of `selected` (best first): a sentence whose passage
    /// overlaps one already shown (the same paragraph, or touching windows
    /// of a long one) is highlighted in that result rather than shown
    /// again, so no passage appears twice. Results keep their first
    /// sentence's rank and score.
    pub(super) fn hits(
        &self,
        selected: &Ranking,
        signals: impl Fn(SentenceNumber) -> Signals,
        display: Display,
    ) -> Vec<Hit> {
        let store = &self.index.store;
        struct Group {
            lead: (SentenceNumber, f32),
            reach: Reach,
            paragraph: ParagraphNumber,
            range: [SentenceNumber; 2],
            also: Vec<(SentenceNumber, f32)>,
        }
        let hull = |[a, b]: [SentenceNumber; 2], [c, d]: [SentenceNumber; 2]| [a.min(c), b.max(d)];
        let mut groups: Vec<Group> = Vec::new();
        for &(i, score) in selected {
            let paragraph = store.sentences[i].paragraph;
            let reach = display.reach(self.index, i);
            let [from, to] = reach.full();
            // One passage: the same paragraph shown in touching windows,
            // or displays that overlap (clauses span paragraphs).
            let shared = groups.iter_mut().find(|g| {
                let touching = from <= g.range[1] && g.range[0] <= to;
                let overlapping = from < g.range[1] && g.range[0] < to;
                (g.paragraph == paragraph && touching) || overlapping
            });
            match shared {
                Some(group) => {
                    group.range = hull(group.range, [from, to]);
                    group.reach.display = hull(group.reach.display, reach.display);
                    group.reach.parent = hull(group.reach.parent, group.range);
                    group.also.push((i, score));
                }
                None => groups.push(Group {
                    lead: (i, score),
                    reach,
                    paragraph,
                    range: [from, to],
                    also: Vec::new(),
                }),
            }
        }
        groups
            .into_iter()
            .map(|mut group| {
                group.also.sort_by_key(|&(i, _)| i);
                let (i, score) = group.lead;
                let highlights = group
                    .also
                    .iter()
                    .map(|&(j, score)| {
                        let s = &store.sentences[j];
                        Highlight {
                            sentence: j,
                            score,
                            text: s.text.clone(),
                            sentence_id: s.id.clone(),
                            char_span: s.span,
                        }
                    })
                    .collect();
                self.hit(i, score, signals(i), group.reach, highlights)
            })
            .collect()
    }

    fn hit(
        &self,
        i: SentenceNumber,
        score: f32,
        signals: Signals,
        reach: Reach,
        highlights: Vec<Highlight>,
    ) -> Hit {
        let [from, to] = reach.full();
        let store = &self.index.store;
        let s = &store.sentences[i];
        let doc = &store.documents[s.document];
        Hit {
            sentence: i,
            score,
            signals,
            text: s.text.clone(),
            display: joined(self.index, from, to),
            passage: [from, to],
            reach,
            highlights,
            citation: Citation {
                document: doc.key.clone(),
                document_id: doc.id.clone(),
                document_title: doc.title.clone(),
                document_info: doc.info.clone(),
                sentence_id: s.id.clone(),
                section_path: store.sections[s.section].path.clone(),
                page: s.page,
                char_span: s.span,
                boxes: s.boxes.clone(),
                references: s
                    .references
                    .iter()
                    .map(|r| {
                        let first = r
                            .target
                            .and_then(|t| store.target_sentences(t).first().copied());
                        CitedReference {
                            label: r.label.clone(),
                            section_path: first.map(|f| store.section_path(f).to_vec()),
                            sentence_id: first.map(|f| store.sentences[f].id.clone()),
                        }
                    })
                    .collect(),
                referenced_by: referenced_by(self.index, i),
                table: cited_table(store, i),
                values: s.values.clone(),
                fields: store.framing_fields(s.section),
            },
        }
    }
}

/// What a result shows around its sentence.
#[derive(Clone, Copy, Debug)]
pub struct Display {
    /// The whole paragraph when it is short (`expansion.paragraph`).
    pub paragraph: bool,
    /// Sentences either side otherwise (`selection.neighbours`).
    pub neighbours: u32,
    /// A sentence of a numbered clause shows the clause, up to this many
    /// characters (`selection.wholeClause`, `clauseMaxChars`).
    pub clause_chars: Option<u32>,
    /// The display goes on into the sentence's parent chunk or section,
    /// at most this many sentences more (`expansion.parent`,
    /// `parentSentences`).
    pub parent: Option<(ParentLevel, u32)>,
}

impl Display {
    pub fn of(route: &RetrievalRouteSpec) -> Self {
        let selection = &route.selection;
        let expansion = &route.expansion;
        Display {
            paragraph: expansion.paragraph,
            neighbours: selection.neighbours,
            clause_chars: selection.whole_clause.then_some(selection.clause_max_chars),
            parent: (expansion.parent != ParentLevel::None)
                .then_some((expansion.parent, expansion.parent_sentences)),
        }
    }

    /// The passage a result shows: its paragraph, or a window of
    /// `neighbours` sentences around it when the paragraph is long or the
    /// route shows no paragraphs.
    pub(super) fn text(self, index: &IndexVersion, i: SentenceNumber) -> String {
        let [from, to] = self.range(index, i);
        joined(index, from, to)
    }

    /// The sentences [`Display::text`] shows, as a range of sentence
    /// numbers: the sentence's clause when the route shows clauses and it
    /// has one, else never past its paragraph; then its parent's
    /// sentences around that when the route climbs.
    pub fn range(self, index: &IndexVersion, i: SentenceNumber) -> [SentenceNumber; 2] {
        self.reach(index, i).full()
    }

    /// What a result at sentence `i` shows, step by step, for a budget to
    /// fill ([`budget::fill`](super::budget::fill)).
    pub fn reach(self, index: &IndexVersion, i: SentenceNumber) -> Reach {
        let store = &index.store;
        let s = &store.sentences[i];
        let [p_start, p_end] = store.paragraphs[s.paragraph].sentences;
        let neighbours = self.neighbours;
        let display = match self
            .clause_chars
            .and_then(|c| clause_range(index, i, c as usize))
        {
            Some(clause) => clause,
            None if self.paragraph && p_end - p_start <= 2 * neighbours + 1 + 4 => [p_start, p_end],
            None => [
                SentenceNumber(i.0.saturating_sub(neighbours)).max(p_start),
                i.after(neighbours + 1).min(p_end),
            ],
        };
        let parent = match self.parent {
            Some((level, max)) => parent_range(index, i, display, level, max),
            None => display,
        };
        Reach {
            lead: i,
            paragraph: [display[0].max(p_start), display[1].min(p_end)],
            display,
            parent,
        }
    }
}

/// `display` grown into the parent of sentence `i` (its own section, or
/// the first chunk holding it), a sentence after and one before in turn,
/// by at most `max` sentences and never past a sentence of another
/// parent: the parent's sentences nearest the display, in one run.
fn parent_range(
    index: &IndexVersion,
    i: SentenceNumber,
    [mut from, mut to]: [SentenceNumber; 2],
    level: ParentLevel,
    max: u32,
) -> [SentenceNumber; 2] {
    let store = &index.store;
    let s = &store.sentences[i];
    let [start, end] = store.documents[s.document].sentences;
    // The chunk members were read when the query's expansion climbed.
    let chunk: &[SentenceNumber] = match (level, s.chunk, index.chunk_members()) {
        (ParentLevel::Chunk, Some(c), Ok(members)) => members.of(s.document, c),
        _ => &[],
    };
    let member = |j: SentenceNumber| match level {
        ParentLevel::None => false,
        ParentLevel::Section => store.sentences[j].section == s.section,
        ParentLevel::Chunk => chunk.binary_search(&j).is_ok(),
    };
    let mut added = 0;
    let (mut after, mut before) = (true, true);
    while (after || before) && added < max {
        if after {
            after = to < end && member(to);
            if after {
                to = to.after(1);
                added += 1;
            }
        }
        if before && added < max {
            before = from > start && member(from.before(1));
            if before {
                from = from.before(1);
                added += 1;
            }
        }
    }
    [from, to]
}

/// The run of sentences around `i` that belong to its numbered clause,
/// within its document, as a range: all of it when its text fits in
/// `max_chars`, else a sentence before and one after `i` in turn while
/// they fit (`i` itself always). None for a sentence in no clause.
fn clause_range(
    index: &IndexVersion,
    i: SentenceNumber,
    max_chars: usize,
) -> Option<[SentenceNumber; 2]> {
    let store = &index.store;
    let s = &store.sentences[i];
    let clause = s.clause.as_ref()?;
    let [start, end] = store.documents[s.document].sentences;
    let same = |j: SentenceNumber| store.sentences[j].clause.as_ref() == Some(clause);
    let chars = |j: SentenceNumber| store.sentences[j].text.chars().count() + 1;
    let (mut from, mut to) = (i, i.after(1));
    let mut used = chars(i);
    let (mut before, mut after) = (true, true);
    while before || after {
        if after {
            after = to < end && same(to) && used + chars(to) <= max_chars;
            if after {
                used += chars(to);
                to = to.after(1);
            }
        }
        if before {
            let previous = from.before(1);
            before = from > start && same(previous) && used + chars(previous) <= max_chars;
            if before {
                from = previous;
                used += chars(from);
            }
        }
    }
    Some([from, to])
}

/// The table sentence `i` is a row of, as its citation shows it.
fn cited_table(store: &crate::index::SkeletonStore, i: SentenceNumber) -> Option<CitedTable> {
    let (table, row) = store.table_row(i)?;
    let paragraph = store.sentences[i].paragraph;
    Some(CitedTable {
        id: table.id.clone(),
        caption: table.caption.clone(),
        columns: table.columns.clone(),
        units: table.units.clone(),
        row_header: table.row_headers.get(row).cloned(),
        row: row as u32 + 1,
        rows: table.shape[0],
        continued: table.parts.first() != Some(&paragraph),
    })
}

/// The ids of the sentences whose references point to sentence `i`'s
/// paragraph or section, in reading order, each once, at most
/// [`REFERENCED_BY_SHOWN`].
fn referenced_by(index: &IndexVersion, i: SentenceNumber) -> Vec<String> {
    let store = &index.store;
    let s = &store.sentences[i];
    let mut from: Vec<SentenceNumber> = store.paragraphs[s.paragraph]
        .inbound
        .iter()
        .chain(&store.sections[s.section].inbound)
        .copied()
        .collect();
    from.sort_unstable();
    from.dedup();
    from.into_iter()
        .take(REFERENCED_BY_SHOWN)
        .map(|j| store.sentences[j].id.clone())
        .collect()
}

/// `hits` (best first) shortened to what `budget` tokens hold, by the
/// priorities of [`budget::fill`]: `cost` counts a sentence's tokens and
/// `frame` a result's beyond its sentences. A result that keeps nothing is
/// left out; a highlight outside what its result keeps is dropped.
pub fn fit_hits(
    index: &IndexVersion,
    hits: Vec<Hit>,
    budget: usize,
    cost: &dyn Fn(SentenceNumber) -> usize,
    frame: &dyn Fn(&Hit) -> usize,
) -> (Vec<Hit>, BudgetUse) {
    let reaches: Vec<Reach> = hits.iter().map(|h| h.reach).collect();
    let (ranges, spent) = budget::fill(&reaches, budget, cost, &|n| frame(&hits[n]));
    let hits = hits
        .into_iter()
        .zip(ranges)
        .filter_map(|(mut hit, range)| {
            let [from, to] = range?;
            hit.passage = [from, to];
            hit.display = joined(index, from, to);
            hit.reach = hit.reach.within([from, to]);
            hit.highlights.retain(|h| (from..to).contains(&h.sentence));
            Some(hit)
        })
        .collect();
    (hits, spent)
}

/// Sentences `from..to`, joined by spaces.
fn joined(index: &IndexVersion, from: SentenceNumber, to: SentenceNumber) -> String {
    SentenceNumber::range([from, to])
        .map(|j| index.store.sentences[j].text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}
