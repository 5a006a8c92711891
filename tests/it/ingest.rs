//! Ingest and query through index versions on disk: re-ingesting an
//! unchanged corpus reuses its version and embeds nothing, a changed one
//! re-embeds only new sentences, results are deterministic, and an
//! unfinished build never becomes visible.

use crate::common;

use std::path::Path;

use trellis::embed;
use trellis::index::{self, IndexVersion, SentenceNumber};
use trellis::retrieve::{Filter, Retriever};
use trellis::spec::{self, Corpus, IndexProfile, RetrievalRoute, Signal};

const MANIFESTS: &str = r#"
apiVersion: trellis.dev/v1alpha1
kind: IndexProfile
metadata: {name: p}
---
apiVersion: trellis.dev/v1alpha1
kind: Corpus
metadata: {name: c}
spec:
  profileRef: {name: p}
  sources: [{path: docs}]
  acl: [public]
  storage: {retainVersions: 1}
---
apiVersion: trellis.dev/v1alpha1
kind: RetrievalRoute
metadata: {name: r}
spec:
  corpusRef: {name: c}
  selection: {topK: 3}
"#;

fn setup(dir: &Path) -> (Corpus, IndexProfile, RetrievalRoute) {
    common::write_two_documents(dir);
    setup_manifests(dir)
}

fn ingest(dir: &Path, corpus: &Corpus, profile: &IndexProfile) -> trellis::ingest::IngestReport {
    ingest_serving(dir, corpus, profile, &[])
}

/// An ingest while retrieval pods serve the `served` versions.
fn ingest_serving(
    dir: &Path,
    corpus: &Corpus,
    profile: &IndexProfile,
    served: &[String],
) -> trellis::ingest::IngestReport {
    try_ingest(dir, corpus, profile, served).unwrap()
}

fn try_ingest(
    dir: &Path,
    corpus: &Corpus,
    profile: &IndexProfile,
    served: &[String],
) -> Result<trellis::ingest::IngestReport, trellis::ingest::IngestError> {
    common::ingest_in(dir, &corpus.spec, &profile.spec, served)
}

#[test]
fn ingest_query_reingest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (corpus, profile, route) = setup(dir);

    let first = ingest(dir, &corpus, &profile);
    assert!(!first.reused);
    let m = &first.manifest;
    assert_eq!(m.counts.documents, 2);
    assert_eq!(m.counts.failed_documents, 0);
    assert!(m.counts.indexed_sentences >= 6, "{:?}", m.counts);
    assert_eq!(m.embedded_sentences, m.counts.indexed_sentences);
    assert!(m.counts.related_edges <= m.links.budget);

    // Unchanged corpus: the same version, nothing embedded.
    let again = ingest(dir, &corpus, &profile);
    assert!(again.reused);
    assert_eq!(again.manifest.version, m.version);

    // Query: the governing-law sentence comes first, with its citation.
    let version = IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    // The reloaded graph holds every indexed sentence (its size decides
    // between exact and graph search).
    assert_eq!(
        version.search().unwrap().graph.len(),
        m.counts.indexed_sentences
    );
    let embedder = embed::from_spec(&version.profile.embedding, None).unwrap();
    let retriever = Retriever::new(&version, embedder.as_ref()).unwrap();
    let answer = retriever
        .retrieve(
            &route.spec,
            "Which law governs the agreement?",
            None,
            &Filter::default(),
        )
        .unwrap();
    // Three sentences selected; results that would show the same
    // paragraph are one, with the others highlighted in it.
    assert_eq!(answer.sentences.len(), 3);
    let shown: usize = answer.hits.iter().map(|h| 1 + h.highlights.len()).sum();
    assert_eq!(shown, 3);
    let mut displays: Vec<&str> = answer.hits.iter().map(|h| h.display.as_str()).collect();
    displays.sort_unstable();
    displays.dedup();
    assert_eq!(displays.len(), answer.hits.len(), "no passage shown twice");
    assert!(
        answer.hits[0]
            .text
            .contains("laws of the State of New York"),
        "{:?}",
        answer.hits[0]
    );
    assert_eq!(answer.hits[0].citation.document, "docs/contract.txt");
    assert!(!answer.context.contains(":s"), "context carries no ids");
    let again = retriever
        .retrieve(
            &route.spec,
            "Which law governs the agreement?",
            None,
            &Filter::default(),
        )
        .unwrap();
    let ids = |a: &trellis::retrieve::Answer| a.hits.iter().map(|h| h.sentence).collect::<Vec<_>>();
    assert_eq!(ids(&answer), ids(&again));

    // A route that shows no paragraphs shows each sentence with its
    // `neighbours` (here none): only the selected sentences, adjacent ones
    // in one result.
    let mut bare = route.spec.clone();
    bare.expansion.paragraph = false;
    bare.selection.neighbours = 0;
    let sentences = retriever
        .retrieve(
            &bare,
            "Which law governs the agreement?",
            None,
            &Filter::default(),
        )
        .unwrap();
    for hit in &sentences.hits {
        let shown: usize = hit.text.len()
            + hit
                .highlights
                .iter()
                .map(|h| h.text.len() + 1)
                .sum::<usize>();
        assert_eq!(hit.display.len(), shown, "{hit:?}");
    }
    let paragraphs: usize = answer.hits.iter().map(|h| h.display.len()).sum();
    let bare_shown: usize = sentences.hits.iter().map(|h| h.display.len()).sum();
    assert!(bare_shown < paragraphs, "{bare_shown} < {paragraphs}");

    // ACL: a caller without the tag sees nothing.
    let hidden = Filter {
        acl: Some(vec!["legal".into()]),
        ..Filter::default()
    };
    let none = retriever
        .retrieve(
            &route.spec,
            "Which law governs the agreement?",
            None,
            &hidden,
        )
        .unwrap();
    assert!(none.hits.is_empty());

    // A changed document: a new version, only the new sentence embedded,
    // and retention removes the old version.
    std::fs::write(
        dir.join("docs/manual.md"),
        "# Reset\n\nHold the reset button for five seconds until the light blinks green. The device then restarts.\n\nUnplug the charger before cleaning the device.\n",
    )
    .unwrap();
    let changed = ingest(dir, &corpus, &profile);
    assert!(!changed.reused);
    assert_ne!(changed.manifest.version, m.version);
    assert_eq!(changed.manifest.embedded_sentences, 1);
    assert_eq!(changed.removed, vec![m.version.clone()]);
    assert_eq!(
        index::current_version(&dir.join("data"), "c").unwrap(),
        changed.manifest.version
    );

    // A version pods still serve outlives retention until they stop.
    let served = changed.manifest.version.clone();
    std::fs::write(
        dir.join("docs/manual.md"),
        "# Reset

Hold the button.
",
    )
    .unwrap();
    let next = ingest_serving(dir, &corpus, &profile, std::slice::from_ref(&served));
    assert!(next.removed.is_empty(), "{:?}", next.removed);
    assert!(dir.join("data/indexes/c").join(&served).is_dir());
    std::fs::write(
        dir.join("docs/manual.md"),
        "# Reset

Release the button.
",
    )
    .unwrap();
    let last = ingest(dir, &corpus, &profile);
    let mut removed = last.removed.clone();
    removed.sort();
    let mut expected = vec![served, next.manifest.version.clone()];
    expected.sort();
    assert_eq!(removed, expected);
}

#[test]
fn shards_embed_their_slices_and_the_full_ingest_then_embeds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, profile, _) = setup(dir.path());
    let mut total = 0;
    for index in 0..2 {
        let shard = trellis::ingest::embed_shard(
            &trellis::ingest::Inputs {
                corpus_name: "c",
                corpus: &corpus.spec,
                sources: &trellis::source::SourceContext::new(dir.path()),
                profile: &profile.spec,
                profile_base: dir.path(),
                data_dir: &dir.path().join("data"),
            },
            trellis::ingest::Shard { index, count: 2 },
            &|_, _, _| {},
        )
        .unwrap();
        // Two documents, two shards: one each.
        assert_eq!(shard.documents, 1, "shard {index}");
        assert!(shard.embedded > 0);
        total += shard.sentences;
    }
    // Shards publish nothing.
    assert!(index::current_version(&dir.path().join("data"), "c").is_err());
    let report = ingest(dir.path(), &corpus, &profile);
    let m = &report.manifest;
    assert_eq!(m.counts.sentences, total);
    assert_eq!(m.embedded_sentences, 0, "every vector came from the shards");
    assert_eq!(m.cached_sentences, m.counts.indexed_sentences);
    assert_eq!((m.embedded_headings, m.embedded_terms), (0, 0));
    assert!("2/2".parse::<trellis::ingest::Shard>().is_err());
    assert_eq!(
        "1/3".parse::<trellis::ingest::Shard>().unwrap(),
        trellis::ingest::Shard { index: 1, count: 3 }
    );
}

#[test]
fn an_unfinished_build_is_never_current() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (corpus, profile, _) = setup(dir);
    let first = ingest(dir, &corpus, &profile);
    // A crash mid-build leaves a `.build-*` directory, no manifest, and
    // the build's lock file, which nobody holds any more.
    let root = index::corpus_dir(&dir.join("data"), "c");
    let crashed = root.join(".build-deadbeef-a-crashed-pod");
    std::fs::create_dir_all(crashed.join("bm25")).unwrap();
    std::fs::write(crashed.join("vectors.f32"), b"half").unwrap();
    std::fs::write(root.join(".build-deadbeef-a-crashed-pod.lock"), b"").unwrap();
    assert_eq!(
        index::current_version(&dir.join("data"), "c").unwrap(),
        first.manifest.version
    );
    IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    // The next ingest cleans it up.
    ingest(dir, &corpus, &profile);
    assert!(!crashed.exists());
    assert!(!root.join(".build-deadbeef-a-crashed-pod.lock").exists());
}

/// A version that does not open is never published: a NaN threshold
/// (which a manifest can no longer carry, but a caller of the library
/// can) wrote `null` into the version's profile, `current` moved to it
/// and every query failed. The first version stays current.
#[test]
fn a_version_that_does_not_open_is_not_published() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (corpus, profile, _) = setup(dir);
    let first = ingest(dir, &corpus, &profile);
    let mut broken = profile.clone();
    broken.spec.semantic_links.threshold = f32::NAN;
    let err = try_ingest(dir, &corpus, &broken, &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not open"), "{err}");
    assert_eq!(
        index::current_version(&dir.join("data"), "c").unwrap(),
        first.manifest.version
    );
    IndexVersion::open(&dir.join("data"), "c", None).unwrap();
}

#[test]
fn a_bad_document_is_counted_and_the_rest_are_indexed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (corpus, profile, _) = setup(dir);
    std::fs::write(dir.join("docs/empty.md"), b"").unwrap();
    std::fs::write(dir.join("docs/broken.docx"), b"PK\x03\x04 not really a zip").unwrap();
    let report = ingest(dir, &corpus, &profile);
    let m = &report.manifest;
    assert_eq!(m.counts.documents, 2);
    assert_eq!(m.counts.failed_documents, 2);
    let mut failed: Vec<&str> = m.failed.iter().map(|f| f.key.as_str()).collect();
    failed.sort();
    assert_eq!(failed, ["docs/broken.docx", "docs/empty.md"]);
    assert!(m.failed.iter().all(|f| !f.reason.is_empty()));
    IndexVersion::open(&dir.join("data"), "c", None).unwrap();
}

/// A PDF whose every page reads as a lost font encoding fails; one with
/// a garbled page is indexed and flagged, in the manifest and its counts.
#[test]
fn garbled_pdfs_are_refused_or_flagged_in_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (corpus, profile, _) = setup(dir);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad");
    for name in ["lost_fonts.pdf", "garbled_page.pdf"] {
        std::fs::copy(fixtures.join(name), dir.join("docs").join(name)).unwrap();
    }
    let report = ingest(dir, &corpus, &profile);
    let m = &report.manifest;
    assert_eq!(m.counts.failed_documents, 1);
    assert_eq!(m.failed[0].key, "docs/lost_fonts.pdf");
    assert!(
        m.failed[0].reason.contains("garbled"),
        "{}",
        m.failed[0].reason
    );
    assert_eq!(m.counts.flagged_documents, 1);
    assert_eq!(m.flagged[0].key, "docs/garbled_page.pdf");
    assert!(
        m.flagged[0].reason.contains("page 2"),
        "{}",
        m.flagged[0].reason
    );
    IndexVersion::open(&dir.join("data"), "c", None).unwrap();
}

/// A document over `parsing.maxSentencesPerDocument` fails, named and
/// counted, before it is embedded; the rest is indexed.
#[test]
fn a_document_over_the_sentence_cap_fails_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (corpus, mut profile, _) = setup(dir);
    profile.spec.parsing.max_sentences_per_document = 20;
    let long: String = (0..40)
        .map(|i| format!("Clause {i} of the long agreement binds both parties. "))
        .collect();
    std::fs::write(dir.join("docs/long.txt"), long).unwrap();
    let report = ingest(dir, &corpus, &profile);
    let m = &report.manifest;
    assert_eq!(m.counts.failed_documents, 1);
    assert_eq!(m.failed[0].key, "docs/long.txt");
    assert!(
        m.failed[0]
            .reason
            .contains("40 sentences, over the limit of 20 (parsing.maxSentencesPerDocument)"),
        "{}",
        m.failed[0].reason
    );
    assert!(m.counts.documents >= 1);
}

#[test]
fn a_question_about_a_defined_term_reaches_its_definition() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (corpus, profile, route) = setup(dir);
    std::fs::write(
        dir.join("docs/supply.txt"),
        "SUPPLY AGREEMENT\n\n\
         This Supply Agreement (the \"Agreement\") is entered into as of May 6, 2019 (the \"Effective Date\") by Acme Corp. and Widget Ltd.\n\n\
         1. Orders\n\nWidget Ltd. ships each order within ten days. Prices are reviewed every year.\n",
    )
    .unwrap();
    let report = ingest(dir, &corpus, &profile);
    let version = IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    assert_eq!(version.terms.len(), version.term_sentences.len());
    let defining = version
        .store
        .sentences
        .iter()
        .position(|s| s.terms.iter().any(|t| t == "Effective Date"))
        .map(|i| SentenceNumber(i as u32))
        .expect("the preamble defines its terms");
    assert!(version.term_sentences.contains(&defining));
    assert!(report.manifest.embedded_terms >= 2);

    let embedder = embed::from_spec(&version.profile.embedding, None).unwrap();
    let retriever = Retriever::new(&version, embedder.as_ref()).unwrap();
    let answer = retriever
        .retrieve(
            &route.spec,
            "On what date does the contract become effective?",
            None,
            &Filter::default(),
        )
        .unwrap();
    let first = &answer.hits[0];
    assert_eq!(first.sentence, defining, "{:?}", answer.hits);
    assert!(
        first.signals[Signal::Definition] > 0.5,
        "{:?}",
        first.signals
    );
    // It states a date, which the question asks for.
    assert_eq!(
        first.signals[Signal::AnswerType],
        1.0,
        "{:?}",
        first.signals
    );
    // Other sentences carry no definition signal.
    assert!(
        answer
            .hits
            .iter()
            .filter(|h| h.sentence != defining)
            .all(|h| h.signals[Signal::Definition] == 0.0)
    );
}

#[test]
fn spread_and_decay_put_other_documents_first_and_never_empty_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (corpus, profile, route) = setup(dir);
    ingest(dir, &corpus, &profile);
    let version = IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    let embedder = embed::from_spec(&version.profile.embedding, None).unwrap();
    let retriever = Retriever::new(&version, embedder.as_ref()).unwrap();
    let mut spread = route.spec.clone();
    spread.selection.spread_per_document = 1;
    let question = "When are fees due and which law governs?";
    // The selected sentences' documents, in rank order (results that show
    // one passage are joined after selection).
    let documents = |answer: &trellis::retrieve::Answer| {
        answer
            .sentences
            .iter()
            .map(|&i| version.store.sentences[i].document)
            .collect::<Vec<_>>()
    };

    // Over the corpus: one result per document before a second from either.
    let plain = retriever
        .retrieve(&route.spec, question, Some(4), &Filter::default())
        .unwrap();
    let spread_hits = retriever
        .retrieve(&spread, question, Some(4), &Filter::default())
        .unwrap();
    let docs = documents(&spread_hits);
    assert_eq!(docs.len(), 4, "{docs:?}");
    assert_ne!(docs[0], docs[1], "{docs:?}");
    assert_eq!(plain.hits[0].sentence, spread_hits.hits[0].sentence);
    // A steep document decay does the same softly: the first result stays,
    // a second document's comes next.
    let mut decay = route.spec.clone();
    decay.selection.document_decay = 0.99;
    let decayed = retriever
        .retrieve(&decay, question, Some(4), &Filter::default())
        .unwrap();
    let docs = documents(&decayed);
    assert_eq!(docs.len(), 4, "{docs:?}");
    assert_ne!(docs[0], docs[1], "{docs:?}");
    assert_eq!(plain.hits[0].sentence, decayed.hits[0].sentence);

    // Filtered to one document: nothing to spread over, results as before.
    let only = Filter {
        documents: Some(vec!["docs/contract.txt".to_string()]),
        ..Filter::default()
    };
    let plain = retriever
        .retrieve(&route.spec, question, Some(3), &only)
        .unwrap();
    let spread_hits = retriever
        .retrieve(&spread, question, Some(3), &only)
        .unwrap();
    assert_eq!(plain.sentences.len(), 3);
    assert_eq!(plain.sentences, spread_hits.sentences);
    decay.selection.document_decay = 0.5;
    let decayed = retriever
        .retrieve(&decay, question, Some(3), &only)
        .unwrap();
    assert_eq!(plain.sentences, decayed.sentences);
}

#[test]
fn a_question_every_document_answers_is_answered_in_each() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    // Three agreements: each names its governing law, and the first says
    // more about it than the others do.
    let contracts = [
        (
            "alpha.txt",
            "1. Governing Law\n\nThis Agreement is governed by the laws of the State of Delaware. \
             The law of Delaware governs its interpretation. Disputes under the governing law \
             go to the courts of Delaware. The governing law applies to every amendment.\n\n\
             2. Escrow\n\nThe escrow agent holds the source code of the Licensor.\n",
        ),
        (
            "beta.txt",
            "1. Term\n\nThis Agreement lasts two years.\n\n2. Law\n\n\
             This Agreement is governed by the laws of England.\n",
        ),
        (
            "gamma.txt",
            "1. Fees\n\nFees are due monthly under this Agreement.\n\n2. Law\n\n\
             The laws of the State of New York govern this Agreement.\n",
        ),
    ];
    for (name, text) in contracts {
        std::fs::write(dir.join("docs").join(name), text).unwrap();
    }
    let (_, route) = common::ingest_manifests(MANIFESTS, dir);
    let version = IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    let embedder = embed::from_spec(&version.profile.embedding, None).unwrap();
    let retriever = Retriever::new(&version, embedder.as_ref()).unwrap();
    let documents = |answer: &trellis::retrieve::Answer| {
        answer
            .hits
            .iter()
            .map(|h| h.citation.document.clone())
            .collect::<Vec<_>>()
    };

    // Every agreement has a governing law: each gives its answer before
    // the first gives a second.
    let question = "Which law governs this agreement?";
    let common = retriever
        .retrieve(&route.spec, question, Some(3), &Filter::default())
        .unwrap();
    let mut found = documents(&common);
    found.sort();
    assert_eq!(
        found,
        ["docs/alpha.txt", "docs/beta.txt", "docs/gamma.txt"],
        "{:?}",
        common.hits
    );
    assert!(common.common_query);
    assert!(common.hits.iter().all(|h| h.text.contains("law")));
    // A question about what one agreement alone says is not spread.
    let specific = retriever
        .retrieve(
            &route.spec,
            "Who holds the source code in escrow?",
            Some(2),
            &Filter::default(),
        )
        .unwrap();
    assert!(!specific.common_query);
    assert_eq!(documents(&specific)[0], "docs/alpha.txt");
    assert!(specific.hits[0].text.contains("escrow agent"));

    // Filtered to one agreement, the common question is as it would be
    // without the rule.
    let mut off = route.spec.clone();
    off.selection.common_query_share = 2.0;
    let only = Filter {
        documents: Some(vec!["docs/alpha.txt".to_string()]),
        ..Filter::default()
    };
    let sentences = |answer: &trellis::retrieve::Answer| {
        answer.hits.iter().map(|h| h.sentence).collect::<Vec<_>>()
    };
    assert_eq!(
        sentences(
            &retriever
                .retrieve(&route.spec, question, Some(3), &only)
                .unwrap()
        ),
        sentences(&retriever.retrieve(&off, question, Some(3), &only).unwrap())
    );
}

/// A version opened without its BM25 index (a route anchored in a graph
/// store) counts the index's statistics from the skeleton: over every
/// indexed sentence, they rank a query's matches as the index does, with
/// scores within the index's one-byte length rounding, and give the
/// same document shares.
#[test]
fn statistics_counted_from_the_skeleton_score_as_the_bm25_index() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let examples = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/corpus");
    for entry in std::fs::read_dir(examples).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, docs.join(path.file_name().unwrap())).unwrap();
    }
    // A form left blank: its lines are labels, none indexed, so its words
    // are in no field of the BM25 index, and must be in no count either.
    std::fs::write(
        docs.join("blank-form.txt"),
        "Signed: ________\n\nDated: ________\n\nWitness: ________\n",
    )
    .unwrap();
    let (corpus, profile, _) = setup_manifests(dir);
    ingest(dir, &corpus, &profile);
    let data = dir.join("data");
    let whole = IndexVersion::open(&data, "c", None).unwrap();
    let blank = whole
        .store
        .documents
        .iter()
        .find(|d| d.key.ends_with("blank-form.txt"))
        .expect("the blank form is a document of the version");
    assert!(!whole.store.has_indexed_sentence(blank));
    let counted = IndexVersion::open_as(&data, "c", None, index::Opening::WithoutSearch).unwrap();
    assert!(counted.search().is_err());
    let bm25 = &whole.search().unwrap().bm25;
    let stats = counted.lexical().unwrap();
    let everything: Vec<SentenceNumber> = (0..whole.store.sentences.len() as u32)
        .map(SentenceNumber)
        .filter(|&i| whole.store.sentences[i].indexed)
        .collect();
    for query in [
        "Which law governs the agreement?",
        "termination for convenience with 30 days notice",
        "What does section 5.1 say about TK-421?",
        "personal data processed by the sub-processor",
        "revenue growth in 2024",
        "Who signed as witness, and when was it dated?",
    ] {
        for boost in [0.0, 1.5] {
            let index = bm25.search(query, 10, boost, &|_| true).unwrap();
            let skeleton = stats.score(&whole.store, query, &everything, boost);
            assert!(!index.is_empty(), "{query}");
            for (n, (&(i, a), &(j, b))) in index.iter().zip(&skeleton).enumerate() {
                // Near-equal scores may swap places.
                if SentenceNumber(i) != j {
                    assert!((a - b).abs() <= 0.02 * a, "{query} #{n}: {i} {a} / {j} {b}");
                }
                let own = skeleton.iter().find(|&&(k, _)| k.0 == i).unwrap().1;
                assert!((a - own).abs() <= 0.02 * a, "{query}: {i} {a} / {own}");
            }
        }
        assert_eq!(
            whole.document_share(query).unwrap(),
            counted.document_share(query).unwrap(),
            "{query}"
        );
    }
}

#[test]
fn the_rarest_words_of_a_query_fill_the_budget_rarest_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    // "zebra" in one sentence, "apples" in three, "river" in five.
    std::fs::write(
        dir.join("docs/field.txt"),
        "A zebra stood by the river. Apples fell into the river. The river was cold today. \
         Apples were sold near the river. Nobody swam in the river. Apples are red.\n",
    )
    .unwrap();
    let (corpus, profile, _) = setup_manifests(dir);
    ingest(dir, &corpus, &profile);
    let data = dir.join("data");
    let counted = IndexVersion::open_as(&data, "c", None, index::Opening::WithoutSearch).unwrap();
    let stats = counted.lexical().unwrap();
    let query = "The river, the apple and the zebra?";
    // Stop words weigh nothing in BM25 and are never asked for; a word
    // weighs as its stem ("apple" as "apples").
    assert_eq!(
        stats.rarest_words(query, usize::MAX),
        ["zebra", "apple", "river"].map(String::from)
    );
    assert_eq!(
        stats.rarest_words(query, 4),
        ["zebra", "apple"].map(String::from)
    );
    // The rarest word is asked for whatever the budget.
    assert_eq!(stats.rarest_words(query, 0), ["zebra"].map(String::from));
    // A word no sentence uses finds nothing and costs nothing.
    assert_eq!(
        stats.rarest_words("zebra unicorn", 1),
        ["unicorn", "zebra"].map(String::from)
    );
    assert!(stats.rarest_words("the of and", 10).is_empty());
}

fn setup_manifests(dir: &Path) -> (Corpus, IndexProfile, RetrievalRoute) {
    let loaded = spec::parse_str(MANIFESTS, &dir.join("trellis.yaml")).unwrap();
    let origin = dir.join("trellis.yaml");
    let (corpus, _) = spec::select_corpus(&loaded, None, &origin).unwrap();
    let (profile, _) = spec::select_profile(&loaded, None, &origin).unwrap();
    let (route, _) = spec::select_route(&loaded, None, &origin).unwrap();
    (corpus.clone(), profile.clone(), route.clone())
}

#[test]
fn chunk_candidates_bring_the_nearest_chunk_into_the_anchors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (corpus, mut profile, route) = setup(dir);
    ingest(dir, &corpus, &profile);
    let version = IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    let records = version.chunks().unwrap();
    let chunks = version.chunk_index().unwrap();
    assert_eq!(chunks.vectors.len(), records.len());
    assert_eq!(records.len(), version.manifest.counts.chunks);

    let embedder = embed::from_spec(&version.profile.embedding, None).unwrap();
    let retriever = Retriever::new(&version, embedder.as_ref()).unwrap();
    let query = "When are invoices due, and which state's law applies?";
    let q = embedder.embed_query(query).unwrap();
    let nearest = chunks.nearest(&q, 1, &|_| true)[0].0;
    let held = &chunks.sentences[nearest as usize];
    assert!(held.len() >= 4, "the contract's chunk: {held:?}");

    // One sentence from each list: the chunk's other sentences are not
    // candidates until the route takes chunk candidates.
    let mut narrow = route.spec.clone();
    narrow.anchors.mode = trellis::spec::AnchorMode::Hybrid;
    narrow.anchors.candidates = 1;
    let ranked = |spec: &trellis::spec::RetrievalRouteSpec| -> Vec<SentenceNumber> {
        let answer = retriever
            .retrieve(spec, query, None, &Filter::default())
            .unwrap();
        answer.ranking.iter().map(|&(i, _)| i).collect()
    };
    let without = ranked(&narrow);
    assert!(without.len() <= 2, "{without:?}");
    narrow.anchors.chunks = 1;
    let with = ranked(&narrow);
    for i in held {
        assert!(
            with.contains(i),
            "sentence {i} of the nearest chunk: {with:?}"
        );
    }
    let mut full = narrow.clone();
    full.anchors.mode = trellis::spec::AnchorMode::Full;
    assert!(!ranked(&full).is_empty());

    // Encoded whole, a chunk's vector is its text's embedding.
    profile.spec.embedding.chunks = trellis::spec::ChunkVectors::Whole;
    ingest(dir, &corpus, &profile);
    let whole = IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    assert_ne!(whole.manifest.version, version.manifest.version);
    let records = whole.chunks().unwrap();
    let texts: Vec<&str> = records.iter().map(|c| c.text.as_str()).collect();
    let expected = embedder.embed_documents(&texts).unwrap();
    let vectors = &whole.chunk_index().unwrap().vectors;
    for (row, e) in expected.iter().enumerate() {
        let got = vectors.row(row as u32);
        let diff = got
            .iter()
            .zip(e)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(diff < 1e-5, "chunk {row}: {diff}");
    }
}

/// A profile that makes vectors another way never reuses another's cached
/// vectors: ingesting with `maxSeqLength: 8` and then with the default into
/// one data directory publishes, under the default's version name, the
/// bytes a clean build of the default publishes.
#[test]
fn a_cached_vector_is_reused_only_for_the_recipe_that_made_it() {
    let shared = tempfile::tempdir().unwrap();
    let (corpus, profile, _) = setup(shared.path());
    let mut truncated = profile.clone();
    truncated.spec.embedding.max_seq_length = Some(8);
    let first = ingest(shared.path(), &corpus, &truncated);
    let second = ingest(shared.path(), &corpus, &profile);
    assert_ne!(first.manifest.version, second.manifest.version);
    assert_eq!(
        second.manifest.cached_sentences, 0,
        "no vector of the truncated build is reused"
    );

    let clean = tempfile::tempdir().unwrap();
    let (corpus, profile, _) = setup(clean.path());
    let alone = ingest(clean.path(), &corpus, &profile);
    assert_eq!(second.manifest.version, alone.manifest.version);
    let vectors = |dir: &Path, version: &str| {
        std::fs::read(
            index::files::corpus_dir(&dir.join("data"), "c")
                .join(version)
                .join(index::files::SENTENCE_VECTORS),
        )
        .unwrap()
    };
    assert!(
        vectors(shared.path(), &second.manifest.version)
            == vectors(clean.path(), &alone.manifest.version),
        "the version's vectors differ from a clean build's"
    );
}

/// A PDF nested 3,000 levels deep among good documents: it fails alone,
/// named, with the nesting as its reason, and the rest is published.
#[test]
fn a_deeply_nested_pdf_fails_alone() {
    use crate::common::pdf::{self, PdfParts};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (corpus, profile, _) = setup(dir);
    let mut parts = PdfParts::text(&["A deep page."]);
    parts.pages[0].extend(format!(" BT {} TJ ET", pdf::nested_arrays(3000)).bytes());
    std::fs::write(dir.join("docs/deep.pdf"), pdf::write(&parts)).unwrap();
    let report = ingest(dir, &corpus, &profile);
    let m = &report.manifest;
    assert_eq!(m.counts.documents, 2);
    assert_eq!(m.failed.len(), 1);
    assert_eq!(m.failed[0].key, "docs/deep.pdf");
    assert!(
        m.failed[0].reason.contains("maxNestingDepth"),
        "{}",
        m.failed[0].reason
    );
    IndexVersion::open(&dir.join("data"), "c", None).unwrap();
}

/// PDFs damaged without any tampering with the index: a flipped byte in
/// a page's Flate stream, a file cut after its first page, a Flate bomb.
/// The damaged page's sentences are doubted (confidence 0) and the
/// document flagged; the pages a cut file promises but lacks are counted
/// as lost, in the report, and the document flagged; the bomb fails alone
/// with the bomb as its reason.
#[test]
fn damaged_pdfs_are_flagged_with_what_was_lost() {
    use crate::common::pdf::{self, PdfParts};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (corpus, profile, _) = setup(dir);
    let lines: Vec<String> = (1..=6)
        .map(|n| format!("Page {n} of the manual says the pump must be serviced every {n} months."))
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();

    // Page 2's compressed content with one byte flipped in its middle.
    let whole = pdf::write(&PdfParts::text(&lines[..2]));
    let page2 = pdf::deflate(&pdf::text_content(lines[1]));
    let at = whole
        .windows(page2.len())
        .position(|w| w == page2.as_slice())
        .unwrap();
    let mut flipped = whole.clone();
    flipped[at + page2.len() / 2] ^= 0x10;
    std::fs::write(dir.join("docs/flipped.pdf"), flipped).unwrap();

    // Six pages, cut just after the first page's content stream.
    let six = pdf::write(&PdfParts::text(&lines));
    let first = pdf::deflate(&pdf::text_content(lines[0]));
    let end_of_first = six
        .windows(first.len())
        .position(|w| w == first.as_slice())
        .unwrap()
        + first.len();
    let cut = end_of_first + b"\nendstream\nendobj\n".len();
    std::fs::write(dir.join("docs/cut.pdf"), &six[..cut]).unwrap();

    // A content stream of 20 MB of spaces, 20 KB compressed, under a
    // memory bound of 64 MiB a document (16 MiB a stream; 256 MiB at the
    // default bound, which the survey's unit test checks).
    let mut bomb_parts = PdfParts::text(&lines[..1]);
    bomb_parts.pages[0].extend(vec![b' '; 20 * 1024 * 1024]);
    std::fs::write(dir.join("docs/bomb.pdf"), pdf::write(&bomb_parts)).unwrap();
    let mut profile = profile.clone();
    profile.spec.parsing.max_memory_bytes_per_document = 64 << 20;

    let report = ingest(dir, &corpus, &profile);
    let m = &report.manifest;
    let note = |key: &str| {
        m.flagged
            .iter()
            .find(|f| f.key == key)
            .map(|f| f.reason.clone())
            .unwrap_or_else(|| panic!("{key} not flagged: {:?}", m.flagged))
    };
    assert!(note("docs/flipped.pdf").contains("page 2: a content stream did not decode"));
    assert!(note("docs/cut.pdf").contains("pages 2–6 of 6 could not be read"));
    assert_eq!(m.counts.lost_pages, 5);
    assert_eq!(m.counts.flagged_documents, 2);
    let bomb = m.failed.iter().find(|f| f.key == "docs/bomb.pdf").unwrap();
    assert!(bomb.reason.contains("compression bomb"), "{}", bomb.reason);

    // What was read of the flipped page carries no confidence; page 1's
    // sentences and the cut file's first page are believed.
    let index = IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    let store = &index.store;
    for (d, document) in store.documents.iter().enumerate() {
        let [start, end] = document.sentences;
        for s in &store.sentences[start.index()..end.index()] {
            let page2 = s.text.contains("Page 2");
            if document.key == "docs/flipped.pdf" && (page2 || s.text.contains("Tj")) {
                assert_eq!(s.confidence, 0.0, "document {d}: {:?}", s.text);
            }
            if s.text.contains("Page 1 ") {
                assert!(s.confidence > 0.9, "{:?} {}", s.text, s.confidence);
            }
        }
    }
}
