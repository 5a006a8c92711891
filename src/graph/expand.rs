//! Stage 2 of retrieval run as Cypher against a graph store: the same
//! sentences the embedded expansion adds around the same anchors
//! (`crate::retrieve::expansion`), found by following `NEXT` and
//! `RELATED_TO` relationships instead of array offsets.

use std::collections::{BTreeMap, BTreeSet};

use super::{GraphError, GraphStore, Statement, Value, cypher, reply_error, run_with_retries};
use crate::index::{IndexVersion, SentenceNumber};
use crate::spec::{ExpansionSpec, ParentLevel};

/// How far past an anchor a numbered clause is followed (the embedded
/// expansion's bound).
pub const CLAUSE_REACH: u32 = 8;

/// The `max` members of an anchor's parent nearest it in reading order,
/// the earlier first between two as near: the sentences a climb to the
/// parent brings in, the same whichever store lists the members.
pub fn nearest_of_parent(
    anchor: SentenceNumber,
    members: impl Iterator<Item = SentenceNumber>,
    max: usize,
) -> Vec<SentenceNumber> {
    let mut members: Vec<SentenceNumber> = members.collect();
    members.sort_unstable_by_key(|&j| (j.distance(anchor), j));
    members.truncate(max);
    members
}

/// An anchor's place in the skeleton, as the graph holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnchorContext {
    pub paragraph: String,
    pub section: String,
    /// The first chunk holding it.
    pub chunk: Option<String>,
}

/// The anchor ids of `anchors`, as a parameter.
fn anchor_ids(index: &IndexVersion, anchors: &[SentenceNumber]) -> Value {
    Value::List(
        anchors
            .iter()
            .map(|&a| index.store.sentences[a].id.as_str().into())
            .collect(),
    )
}

/// The sentences stage 2 adds around `anchors`: each anchor, its window of
/// `spec.window` sentences either side, its `RELATED_TO` targets (with
/// `spec.related`), and the run of following sentences in its numbered
/// clause past the window (with `spec.sameClause`).
pub fn expand(
    store: &mut dyn GraphStore,
    index: &IndexVersion,
    anchors: &[SentenceNumber],
    spec: &ExpansionSpec,
    retries: u32,
) -> Result<BTreeSet<SentenceNumber>, GraphError> {
    let _span = tracing::debug_span!("graph_expansion", anchors = anchors.len()).entered();
    let numbers = index.ids();
    let version = index.manifest.version.as_str();
    let ids = anchor_ids(index, anchors);
    let mut added: BTreeSet<SentenceNumber> = anchors.iter().copied().collect();
    if anchors.is_empty() {
        return Ok(added);
    }
    let run = |store: &mut dyn GraphStore, name: &str, text: &str| {
        let statement = Statement::new(name, text)
            .param("version", version)
            .param("anchors", ids.clone());
        run_with_retries(store, &statement, retries)
    };
    let number = |store: &dyn GraphStore, name: &str, value: Option<&Value>| {
        value
            .and_then(Value::as_str)
            .and_then(|id| numbers.sentence(id))
            .ok_or_else(|| reply_error(store, name, format!("not a sentence id: {value:?}")))
    };

    if spec.window > 0 {
        let text = cypher::expand_window(spec.window);
        for row in run(store, "expand window", &text)? {
            added.insert(number(store, "expand window", row.get(1))?);
        }
    }
    if spec.related {
        for row in run(store, "expand related", cypher::EXPAND_RELATED)? {
            added.insert(number(store, "expand related", row.get(1))?);
        }
    }
    let from = spec.window + 1;
    if spec.same_clause && from <= CLAUSE_REACH {
        let text = cypher::expand_clause(from, CLAUSE_REACH);
        // anchor → (distance, id, same clause)
        let mut following: BTreeMap<String, Vec<(i64, SentenceNumber, bool)>> = BTreeMap::new();
        for row in run(store, "expand clause", &text)? {
            let [anchor, id, clause, anchor_clause, distance] = row.as_slice() else {
                return Err(reply_error(store, "expand clause", format!("{row:?}")));
            };
            let anchor = anchor.as_str().unwrap_or_default().to_string();
            let id = number(store, "expand clause", Some(id))?;
            let distance = distance.as_int().unwrap_or(i64::MAX);
            following
                .entry(anchor)
                .or_default()
                .push((distance, id, clause == anchor_clause));
        }
        for mut run in following.into_values() {
            run.sort_unstable();
            for (_, id, same) in run {
                if !same {
                    break;
                }
                added.insert(id);
            }
        }
    }
    added.extend(parents(store, index, anchors, spec, retries)?);
    if spec.references {
        added.extend(referenced(store, index, anchors, spec, retries)?);
    }
    Ok(added)
}

/// The opening sentences of what `anchors`' references point to, as the
/// embedded expansion finds them: each target's sentences in reading
/// order, the first `spec.referenceSentences` of each.
fn referenced(
    store: &mut dyn GraphStore,
    index: &IndexVersion,
    anchors: &[SentenceNumber],
    spec: &ExpansionSpec,
    retries: u32,
) -> Result<Vec<SentenceNumber>, GraphError> {
    let numbers = index.ids();
    let ids = anchor_ids(index, anchors);
    // (anchor, target) → its sentences.
    let mut targets: BTreeMap<(String, String), Vec<SentenceNumber>> = BTreeMap::new();
    for (name, text) in [
        (
            "expand references to paragraphs",
            cypher::REFERENCED_PARAGRAPHS,
        ),
        ("expand references to sections", cypher::REFERENCED_SECTIONS),
    ] {
        let statement = Statement::new(name, text)
            .param("version", index.manifest.version.as_str())
            .param("anchors", ids.clone());
        for row in run_with_retries(store, &statement, retries)? {
            let [anchor, target, id] = row.as_slice() else {
                return Err(reply_error(store, name, format!("{row:?}")));
            };
            let (Some(anchor), Some(target), Some(id)) = (
                anchor.as_str(),
                target.as_str(),
                id.as_str().and_then(|i| numbers.sentence(i)),
            ) else {
                return Err(reply_error(store, name, format!("{row:?}")));
            };
            targets
                .entry((anchor.to_string(), target.to_string()))
                .or_default()
                .push(id);
        }
    }
    let max = spec.reference_sentences as usize;
    let mut added = Vec::new();
    for mut sentences in targets.into_values() {
        sentences.sort_unstable();
        added.extend(sentences.into_iter().take(max));
    }
    Ok(added)
}

/// The sentences each anchor's parent brings in, as the embedded
/// expansion finds them: its parent's id read by [`context`], then every
/// member of those parents in one statement.
fn parents(
    store: &mut dyn GraphStore,
    index: &IndexVersion,
    anchors: &[SentenceNumber],
    spec: &ExpansionSpec,
    retries: u32,
) -> Result<Vec<SentenceNumber>, GraphError> {
    let (name, text) = match spec.parent {
        ParentLevel::None => return Ok(Vec::new()),
        ParentLevel::Chunk => ("expand chunk", cypher::CHUNK_MEMBERS),
        ParentLevel::Section => ("expand section", cypher::SECTION_MEMBERS),
    };
    let parent_of: Vec<(SentenceNumber, String)> = context(store, index, anchors, retries)?
        .into_iter()
        .filter_map(|(anchor, found)| match spec.parent {
            ParentLevel::Chunk => found.chunk.map(|c| (anchor, c)),
            _ => Some((anchor, found.section)),
        })
        .collect();
    let wanted: BTreeSet<&str> = parent_of.iter().map(|(_, p)| p.as_str()).collect();
    let statement = Statement::new(name, text)
        .param("version", index.manifest.version.as_str())
        .param(
            "parents",
            Value::List(wanted.into_iter().map(Value::from).collect()),
        );
    let numbers = index.ids();
    let mut members: BTreeMap<String, Vec<SentenceNumber>> = BTreeMap::new();
    for row in run_with_retries(store, &statement, retries)? {
        let [parent, id] = row.as_slice() else {
            return Err(reply_error(store, name, format!("{row:?}")));
        };
        let (Some(parent), Some(id)) = (
            parent.as_str(),
            id.as_str().and_then(|i| numbers.sentence(i)),
        ) else {
            return Err(reply_error(store, name, format!("{row:?}")));
        };
        members.entry(parent.to_string()).or_default().push(id);
    }
    let max = spec.parent_sentences as usize;
    let mut added = Vec::new();
    for (anchor, parent) in parent_of {
        let of = members.get(&parent).into_iter().flatten().copied();
        added.extend(nearest_of_parent(anchor, of, max));
    }
    Ok(added)
}

/// Each anchor's parent paragraph, section and first chunk, read from the
/// graph.
pub fn context(
    store: &mut dyn GraphStore,
    index: &IndexVersion,
    anchors: &[SentenceNumber],
    retries: u32,
) -> Result<BTreeMap<SentenceNumber, AnchorContext>, GraphError> {
    let numbers = index.ids();
    let statement = Statement::new("expand context", cypher::EXPAND_CONTEXT)
        .param("version", index.manifest.version.as_str())
        .param("anchors", anchor_ids(index, anchors));
    let mut found = BTreeMap::new();
    for row in run_with_retries(store, &statement, retries)? {
        let [anchor, paragraph, section, chunks] = row.as_slice() else {
            return Err(reply_error(store, "expand context", format!("{row:?}")));
        };
        let (Some(anchor), Some(paragraph), Some(section)) = (
            anchor.as_str().and_then(|a| numbers.sentence(a)),
            paragraph.as_str(),
            section.as_str(),
        ) else {
            return Err(reply_error(store, "expand context", format!("{row:?}")));
        };
        let chunk = chunks
            .as_list()
            .unwrap_or_default()
            .iter()
            .filter_map(|c| {
                let id = c.as_str()?;
                let n: u32 = id.rsplit_once(":c")?.1.parse().ok()?;
                Some((n, id.to_string()))
            })
            .min()
            .map(|(_, id)| id);
        found.insert(
            anchor,
            AnchorContext {
                paragraph: paragraph.to_string(),
                section: section.to_string(),
                chunk,
            },
        );
    }
    Ok(found)
}
