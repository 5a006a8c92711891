//! Stage 2, expansion: around the best anchors, the NEXT/PREV window, the
//! `RELATED_TO` links, the continuation of the same clause, what the
//! anchor's references point to ("as defined in Section 1.4") and, when
//! the route climbs, the anchor's parent chunk or section become
//! candidates too, found in the embedded index or in the graph store.

use std::collections::{BTreeSet, HashMap};

use crate::graph::expand::{CLAUSE_REACH, nearest_of_parent};
use crate::index::{IndexError, IndexVersion, Ranking, SentenceNumber};
use crate::spec::{ExpansionSource, ExpansionSpec, ParentLevel, RetrievalRouteSpec};

use super::{Candidate, RetrieveError, Retriever};

impl Retriever<'_> {
    /// Stage 2: adds the window, related and same-clause neighbours of the
    /// best anchors as candidates, found in the embedded index or, when the
    /// route says so, in the graph store.
    pub(super) fn expand(
        &self,
        route: &RetrievalRouteSpec,
        candidates: &mut HashMap<SentenceNumber, Candidate>,
        allowed: &dyn Fn(SentenceNumber) -> bool,
    ) -> Result<(), RetrieveError> {
        let spec = &route.expansion;
        let anchors: Vec<SentenceNumber> =
            Ranking::best_first(candidates.iter().map(|(&i, c)| (i, c.fused)))
                .sentences()
                .take(spec.anchors as usize)
                .collect();
        let added = match spec.source {
            ExpansionSource::Embedded => expansion(self.index, &anchors, spec)?,
            ExpansionSource::Graph => {
                let graph = self.graph_store()?;
                let mut store = graph.connection()?;
                crate::graph::expand::expand(
                    &mut *store,
                    self.index,
                    &anchors,
                    spec,
                    self.index.profile.graph.retries(),
                )?
            }
        };
        for j in added {
            if allowed(j) {
                candidates.entry(j).or_default();
            }
        }
        Ok(())
    }
}

/// Stage 2 on the embedded index: each anchor, its window of `window`
/// sentences either side within its document, its `RELATED_TO` targets
/// (with `related`), the following sentences of its numbered clause past
/// the window, up to 8 sentences after the anchor (with `sameClause`),
/// the sentences of its parent chunk or section nearest it (with
/// `parent`), and the opening sentences of what its references point to
/// (with `references`). [`crate::graph::expand::expand`] finds the same in
/// a graph store.
pub fn expansion(
    index: &IndexVersion,
    anchors: &[SentenceNumber],
    spec: &ExpansionSpec,
) -> Result<BTreeSet<SentenceNumber>, IndexError> {
    let store = &index.store;
    let mut added = BTreeSet::new();
    for &a in anchors {
        let [start, end] = store.documents[store.sentences[a].document].sentences;
        let w = spec.window;
        let from = SentenceNumber(a.0.saturating_sub(w)).max(start);
        added.extend(SentenceNumber::range([from, a.after(w + 1).min(end)]));
        if spec.related {
            added.extend(
                index.related[a.index()]
                    .iter()
                    .map(|&(j, _)| SentenceNumber(j)),
            );
        }
        if spec.same_clause
            && let Some(clause) = &store.sentences[a].clause
        {
            // The clause continues past the window: its next sentences
            // up to the next clause, within the document.
            let mut j = a.after(w + 1);
            while j < end && j <= a.after(CLAUSE_REACH) {
                if store.sentences[j].clause.as_ref() != Some(clause) {
                    break;
                }
                added.insert(j);
                j = j.after(1);
            }
        }
    }
    added.extend(parents(index, anchors, spec)?);
    if spec.references {
        let max = spec.reference_sentences as usize;
        for &a in anchors {
            for target in store.sentences[a]
                .references
                .iter()
                .filter_map(|r| r.target)
            {
                added.extend(store.target_sentences(target).into_iter().take(max));
            }
        }
    }
    Ok(added)
}

/// The sentences each anchor's parent (`spec.parent`) brings in: its
/// chunk's or its section's, nearest the anchor first, at most
/// `spec.parentSentences` each.
fn parents(
    index: &IndexVersion,
    anchors: &[SentenceNumber],
    spec: &ExpansionSpec,
) -> Result<Vec<SentenceNumber>, IndexError> {
    let store = &index.store;
    let max = spec.parent_sentences as usize;
    let mut added = Vec::new();
    match spec.parent {
        ParentLevel::None => {}
        ParentLevel::Chunk => {
            let members = index.chunk_members()?;
            for &a in anchors {
                let s = &store.sentences[a];
                if let Some(chunk) = s.chunk {
                    let of = members.of(s.document, chunk).iter().copied();
                    added.extend(nearest_of_parent(a, of, max));
                }
            }
        }
        ParentLevel::Section => {
            for &a in anchors {
                let s = &store.sentences[a];
                let of = SentenceNumber::range(store.documents[s.document].sentences)
                    .filter(|&j| store.sentences[j].section == s.section);
                added.extend(nearest_of_parent(a, of, max));
            }
        }
    }
    Ok(added)
}
