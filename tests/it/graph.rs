//! The graph stores against real servers: FalkorDB, which the test
//! command installs and every test here starts on a free loopback port
//! (`scripts/falkordb-test-server.sh`; a test fails, never skips, when it
//! cannot start), and Neo4j 5 Community, whose embedded DBMS every Neo4j
//! test here starts the same way (`scripts/neo4j-test-server.sh`, from
//! Maven Central).
//!
//! Each suite exports a small corpus built with the real model and checks
//! the graph against the index version: node and relationship counts,
//! embeddings bit for bit, text with quotes and newlines, an idempotent
//! second export, removal of versions no route serves, and stage 2 run in
//! the graph against the embedded expansion.

use crate::common;

use std::path::{Path, PathBuf};

use trellis::graph::{self, GraphError, GraphStore, Statement, Value, cypher, export};
use trellis::index::lexical::query_words;
use trellis::index::{IndexVersion, SentenceNumber};
use trellis::retrieve::{self, Filter, LoadedRoute, Retriever};
use trellis::spec::{
    self, AnchorSource, ExpansionSource, ExpansionSpec, FalkorDbSpec, GraphSpec, GraphStoreKind,
    Neo4jSpec, ParentLevel,
};

/// A FalkorDB server on a free port, stopped on drop.
struct FalkorServer(common::ScriptServer);

impl FalkorServer {
    fn start() -> FalkorServer {
        FalkorServer(common::ScriptServer::start("falkordb-test-server.sh"))
    }

    fn spec(&self, graph: &str) -> GraphSpec {
        GraphSpec {
            store: GraphStoreKind::Falkordb,
            falkordb: Some(FalkorDbSpec {
                url: format!("falkor://127.0.0.1:{}", self.0.port),
                graph: graph.to_string(),
                password_secret_ref: None,
                password_env: None,
            }),
            batch_size: Some(64),
            timeout_seconds: Some(30),
            ..GraphSpec::default()
        }
    }
}

/// A loopback port that refuses connections for as long as the returned
/// socket lives: bound, so no server started by a parallel test can take it,
/// but never listening, so every connect is refused.
fn refused_port() -> (std::os::fd::OwnedFd, u16) {
    use nix::sys::socket::{
        AddressFamily, SockFlag, SockType, SockaddrIn, bind, getsockname, socket,
    };
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .expect("a TCP socket");
    bind(
        std::os::fd::AsRawFd::as_raw_fd(&fd),
        &SockaddrIn::new(127, 0, 0, 1, 0),
    )
    .expect("bind to a loopback port");
    let addr: SockaddrIn =
        getsockname(std::os::fd::AsRawFd::as_raw_fd(&fd)).expect("the bound address");
    (fd, addr.port())
}

/// The password the Neo4j test server gives user `neo4j` (the script's
/// default), and the variable a Neo4j spec reads it from.
const NEO4J_PASSWORD: &str = "trellis-test-password";
const NEO4J_PASSWORD_ENV: &str = "TRELLIS_TEST_NEO4J_PASSWORD";

/// A Neo4j server on a free port, stopped on drop.
struct Neo4jServer(common::ScriptServer);

impl Neo4jServer {
    fn start() -> Neo4jServer {
        Neo4jServer(common::ScriptServer::start("neo4j-test-server.sh"))
    }

    fn spec(&self) -> GraphSpec {
        GraphSpec {
            store: GraphStoreKind::Neo4j,
            neo4j: Some(Neo4jSpec {
                uri: format!("bolt://127.0.0.1:{}", self.0.port),
                database: None,
                username: "neo4j".into(),
                password_secret_ref: None,
                password_env: Some(NEO4J_PASSWORD_ENV.into()),
            }),
            batch_size: Some(64),
            timeout_seconds: Some(30),
            ..GraphSpec::default()
        }
    }
}

/// Runs `suite` against a Neo4j server of its own. The password reaches
/// the spec through the environment, which only a process's start may
/// set: the test runs again in a child process that has it.
fn with_neo4j(test: &str, suite: fn(&GraphSpec)) {
    if !common::is_child(test) {
        let password = std::ffi::OsStr::new(NEO4J_PASSWORD);
        return common::run_in_child(test, &[(NEO4J_PASSWORD_ENV, password)]);
    }
    let server = Neo4jServer::start();
    suite(&server.spec());
}

const QUOTES: &str = "Notices\n\n\
The Supplier wrote \"it's final\" and the Buyer's agent answered 'agreed' \\ nothing more.\n\n\
A second paragraph: {braces}, `backticks`, $dollars and a tab\there.\n";

/// The manifests of the test corpus: the example corpus (a contract, an
/// addendum, a report and a manual, with numbered clauses) plus a note
/// full of quotes, with links loose enough to exist.
fn write_corpus(dir: &Path) -> String {
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/corpus");
    for entry in std::fs::read_dir(examples).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, docs.join(path.file_name().unwrap())).unwrap();
    }
    std::fs::write(docs.join("quotes.txt"), QUOTES).unwrap();
    // A PDF, whose sentences stand in boxes on their pages.
    let mut pdf = common::pdf::PdfParts::text(&[
        "The warehouse in Rotterdam ships every pallet within two days.",
        "Returned pallets are inspected before they are restocked.",
    ]);
    // And a form field, which its section's node carries.
    let field = pdf.first_object();
    pdf.catalog_entries = format!("/AcroForm << /Fields [{field} 0 R] >>");
    pdf.entries_by_page = vec![format!("/Annots [{field} 0 R]")];
    pdf.objects = vec![
        "<< /FT /Tx /T (Inspector) /V (Ann Lee) /Type /Annot /Subtype /Widget /Rect [72 600 300 620] >>"
            .to_string(),
    ];
    std::fs::write(docs.join("shipping.pdf"), common::pdf::write(&pdf)).unwrap();
    r#"
apiVersion: trellis.dev/v1alpha1
kind: IndexProfile
metadata: {name: p}
spec:
  semanticLinks: {threshold: 0.6, maxPerSentence: 3}
---
apiVersion: trellis.dev/v1alpha1
kind: Corpus
metadata: {name: c}
spec:
  profileRef: {name: p}
  sources: [{path: docs}]
  storage: {retainVersions: 3}
"#
    .to_string()
}

/// The items of a list property (a store may give an empty list as null).
fn list(value: &Value) -> &[Value] {
    match value {
        Value::List(items) => items,
        Value::Null => &[],
        other => panic!("not a list: {other:?}"),
    }
}

/// Ingests the corpus under `dir`, the graph store step included.
fn ingest(
    dir: &Path,
    manifests: &str,
    graph: &GraphSpec,
    served: &[String],
) -> trellis::ingest::IngestReport {
    let origin = dir.join("trellis.yaml");
    let loaded = spec::parse_str(manifests, &origin).unwrap();
    let (corpus, _) = spec::select_corpus(&loaded, None, &origin).unwrap();
    let (profile, _) = spec::select_profile(&loaded, None, &origin).unwrap();
    let mut profile = profile.spec.clone();
    profile.graph = graph.clone();
    common::ingest_in(dir, &corpus.spec, &profile, served).unwrap()
}

fn connect(spec: &GraphSpec) -> Box<dyn GraphStore> {
    graph::connect(spec).unwrap().expect("a graph store")
}

/// Export, counts, read-back, idempotence and version removal.
fn export_suite(spec: &GraphSpec) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let manifests = write_corpus(dir);
    let first = ingest(dir, &manifests, spec, &[]);
    let outcome = first.graph.as_ref().unwrap();
    assert!(!outcome.failed(), "{outcome:?}");
    let written = outcome.export.as_ref().expect("an export").written.clone();
    let v1 = first.manifest.version.clone();

    // Nodes and relationships: as written, and as the manifest counts.
    let mut store = connect(spec);
    let counts = export::counts(store.as_mut(), &v1).unwrap();
    assert_eq!(counts, written);
    let c = &first.manifest.counts;
    let nodes = |label: &str| counts.nodes[label];
    assert_eq!(nodes(cypher::DOCUMENT), c.documents);
    assert_eq!(nodes(cypher::SECTION), c.sections);
    assert_eq!(nodes(cypher::PARAGRAPH), c.paragraphs);
    assert_eq!(nodes(cypher::CHUNK), c.chunks);
    assert_eq!(nodes(cypher::SENTENCE), c.sentences);
    assert_eq!(nodes(cypher::VERSION), 1);
    let links = |link| counts.relationships[&export::link_key(link)];
    assert_eq!(links(cypher::RELATED_TO), c.related_edges);
    assert!(c.related_edges > 0, "the test corpus should have links");
    assert_eq!(links(cypher::SENTENCE_IN_PARAGRAPH), c.sentences);
    assert_eq!(links(cypher::IN_SECTION), c.sentences);
    assert_eq!(links(cypher::SENTENCE_IN_DOCUMENT), c.sentences);
    assert_eq!(links(cypher::PARAGRAPH_IN_SECTION), c.paragraphs);
    assert_eq!(links(cypher::SENTENCE_NEXT), c.sentences - c.documents);
    assert_eq!(
        links(cypher::HAS_SECTION) + links(cypher::SUBSECTION_OF),
        c.sections
    );
    assert_eq!(links(cypher::CHUNK_IN_DOCUMENT), c.chunks);

    // Every sentence reads back as the index holds it: text, and the
    // embedding bit for bit.
    let index = IndexVersion::open(&dir.join("data"), "c", Some(&v1)).unwrap();
    // Tables: a node each, in its document, its rows linked.
    assert!(c.tables >= 2, "the examples hold tables: {c:?}");
    assert_eq!(nodes(cypher::TABLE), c.tables);
    assert_eq!(links(cypher::TABLE_IN_DOCUMENT), c.tables);
    assert_eq!(links(cypher::REPEATS), c.duplicate_tables);
    let table_rows: usize = index
        .store
        .tables
        .iter()
        .flat_map(|t| &t.parts)
        .map(|&p| {
            let [start, end] = index.store.paragraphs[p].sentences;
            (end - start) as usize
        })
        .sum();
    assert_eq!(links(cypher::ROW_OF), table_rows);
    let ids: Vec<Value> = index
        .store
        .sentences
        .iter()
        .map(|s| s.id.as_str().into())
        .collect();
    let rows = store
        .run(
            &Statement::new("read", cypher::READ_SENTENCES)
                .param("version", v1.as_str())
                .param("ids", Value::List(ids)),
        )
        .unwrap();
    assert_eq!(rows.len(), index.store.sentences.len());
    let mut exact = 0;
    for row in &rows {
        let id = row[0].as_str().unwrap();
        let i = index
            .store
            .sentences
            .iter()
            .position(|s| s.id == id)
            .unwrap();
        let sentence = &index.store.sentences[i];
        assert_eq!(row[1].as_str(), Some(sentence.text.as_str()));
        if sentence.indexed {
            let read = row[2].as_vector().expect("an embedding");
            let want = index.search().unwrap().vectors.row(i as u32);
            assert_eq!(read.len(), want.len());
            assert!(
                read.iter()
                    .zip(want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{id}: embedding differs"
            );
            exact += 1;
        } else {
            assert_eq!(row[2], Value::Null, "{id}");
        }
    }
    assert_eq!(exact, c.indexed_sentences);
    // Each paragraph's centroid, as the version derives it, bit for bit;
    // none for a paragraph without an indexed sentence.
    let rows = store
        .run(
            &Statement::new(
                "centroids",
                "MATCH (n:Paragraph {index_version: $version}) RETURN n.id AS id, n.centroid AS c",
            )
            .param("version", v1.as_str()),
        )
        .unwrap();
    assert_eq!(rows.len(), c.paragraphs);
    let mut with_centroid = 0;
    for row in &rows {
        let id = row[0].as_str().unwrap();
        let p = index.ids().paragraph(id).expect("a paragraph id");
        let want = index.search().unwrap().paragraphs.row(p.0);
        match row[1].as_vector() {
            Some(read) => {
                assert!(
                    read.iter()
                        .zip(want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{id}: centroid differs"
                );
                with_centroid += 1;
            }
            None => assert!(want.iter().all(|&x| x == 0.0), "{id}: no centroid"),
        }
    }
    assert!(with_centroid > 0);
    // Each sentence node carries its page boxes and its paragraph's text.
    let rows = store
        .run(
            &Statement::new(
                "boxes",
                "MATCH (n:Sentence {index_version: $version}) \
                 RETURN n.id, n.box_pages, n.boxes, n.paragraph_text",
            )
            .param("version", v1.as_str()),
        )
        .unwrap();
    assert_eq!(rows.len(), c.sentences);
    let mut boxed = 0;
    for row in &rows {
        let id = row[0].as_str().unwrap();
        let sentence = index.store.sentences.iter().find(|s| s.id == id).unwrap();
        let pages: Vec<i64> = sentence.boxes.iter().map(|b| i64::from(b.page)).collect();
        let corners: Vec<f32> = sentence.boxes.iter().flat_map(|b| b.bbox).collect();
        let read_pages: Vec<i64> = list(&row[1]).iter().map(|v| v.as_int().unwrap()).collect();
        // The index keeps f32; a store may print the double it holds
        // with fewer digits than it takes to read it back as that double.
        let read_corners: Vec<f32> = list(&row[2])
            .iter()
            .map(|v| v.as_float().unwrap() as f32)
            .collect();
        assert_eq!(read_pages, pages, "{id}");
        assert_eq!(read_corners, corners, "{id}");
        let paragraph = &index.store.paragraphs[sentence.paragraph];
        assert_eq!(
            row[3].as_str(),
            Some(index.store.paragraph_text(paragraph).as_str()),
            "{id}"
        );
        boxed += usize::from(!pages.is_empty());
    }
    assert!(boxed >= 2, "the PDF's sentences have boxes");
    // Each section node carries its form fields, names beside values.
    let rows = store
        .run(
            &Statement::new(
                "fields",
                "MATCH (n:Section {index_version: $version}) \
                 RETURN n.id, n.field_names, n.field_values",
            )
            .param("version", v1.as_str()),
        )
        .unwrap();
    let strings = |v: &Value| -> Vec<String> {
        list(v)
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    let read: Vec<(Vec<String>, Vec<String>)> = rows
        .iter()
        .map(|row| (strings(&row[1]), strings(&row[2])))
        .filter(|(names, _)| !names.is_empty())
        .collect();
    assert_eq!(
        read,
        [(vec!["Inspector".to_string()], vec!["Ann Lee".to_string()])]
    );
    let quoted = index
        .store
        .sentences
        .iter()
        .find(|s| s.text.contains("it's final"))
        .expect("the quotes sentence");
    assert!(quoted.text.contains(r#""it's final""#) && quoted.text.contains('\\'));
    // Chunk text keeps its newlines.
    let chunks = index.chunks().unwrap();
    let multiline = chunks
        .iter()
        .find(|c| c.text.contains('\n') && c.text.contains("it's final"))
        .expect("a chunk over several lines");
    let rows = store
        .run(
            &Statement::new(
                "read chunk",
                "MATCH (c:TextChunk {id: $id, index_version: $version}) RETURN c.text",
            )
            .param("id", multiline.id.as_str())
            .param("version", v1.as_str()),
        )
        .unwrap();
    assert_eq!(rows, vec![vec![Value::Str(multiline.text.clone())]]);

    // A second export of the same version changes nothing.
    let again = export::export(
        store.as_mut(),
        &index,
        graph::ExportOptions {
            batch_size: 7,
            retries: 0,
        },
    )
    .unwrap();
    assert_eq!(again.written, written);
    assert_eq!(export::counts(store.as_mut(), &v1).unwrap(), written);
    // And an ingest of the unchanged corpus finds it exported.
    let unchanged = ingest(dir, &manifests, spec, &[]);
    assert!(unchanged.graph.as_ref().unwrap().already_exported);
    // An export an earlier release wrote, in another format, is not
    // complete: the next ingest writes it again, to the same counts.
    let earlier = Statement::new(
        "earlier format",
        "MATCH (n:IndexVersion {id: $version, index_version: $version}) \
         SET n.export_format = 1 RETURN n.id AS id",
    )
    .param("version", v1.as_str());
    assert_eq!(store.run(&earlier).unwrap().len(), 1);
    assert!(!export::is_complete(store.as_mut(), &v1).unwrap());
    let rewritten = ingest(dir, &manifests, spec, &[]);
    let outcome = rewritten.graph.as_ref().unwrap();
    assert!(
        !outcome.already_exported && !outcome.failed(),
        "{outcome:?}"
    );
    assert!(export::is_complete(store.as_mut(), &v1).unwrap());
    assert_eq!(export::counts(store.as_mut(), &v1).unwrap(), written);

    // A changed corpus: a new version; the old one, which no route
    // serves, leaves the store.
    std::fs::write(
        dir.join("docs/extra.txt"),
        "Termination\n\nEither party may terminate on ninety days' notice.\n",
    )
    .unwrap();
    let second = ingest(dir, &manifests, spec, &[]);
    let v2 = second.manifest.version.clone();
    assert_ne!(v2, v1);
    let outcome = second.graph.as_ref().unwrap();
    assert!(!outcome.failed(), "{outcome:?}");
    assert_eq!(outcome.removed, vec![v1.clone()]);
    let gone = export::counts(store.as_mut(), &v1).unwrap();
    assert!(gone.nodes.values().all(|&n| n == 0), "{gone:?}");
    assert!(export::is_complete(store.as_mut(), &v2).unwrap());

    // Another corpus sharing the graph removes only its own versions.
    let others = export::remove_versions(
        store.as_mut(),
        "another-corpus",
        &[],
        graph::ExportOptions {
            batch_size: 50,
            retries: 0,
        },
    )
    .unwrap();
    assert!(others.is_empty(), "{others:?}");
    assert!(export::is_complete(store.as_mut(), &v2).unwrap());

    // A version a route still serves stays.
    std::fs::write(
        dir.join("docs/extra.txt"),
        "Termination\n\nEither party may terminate on thirty days' notice.\n",
    )
    .unwrap();
    let third = ingest(dir, &manifests, spec, std::slice::from_ref(&v2));
    assert!(third.graph.as_ref().unwrap().removed.is_empty());
    assert!(export::is_complete(store.as_mut(), &v2).unwrap());
    assert!(export::is_complete(store.as_mut(), &third.manifest.version).unwrap());

    // Stage 1 asked of the store, with two versions of the same sentences
    // beside each other.
    let index = IndexVersion::open(&dir.join("data"), "c", Some(&third.manifest.version)).unwrap();
    store_anchors_agree(store.as_mut(), &index);
}

/// The store's vector index finds, among `index`'s version only, the
/// sentences an exact search of the version finds, with the same cosine
/// similarities; its full-text index finds sentences holding the words.
fn store_anchors_agree(store: &mut dyn GraphStore, index: &IndexVersion) {
    const SENTENCES: (graph::anchors::Matched, usize) = (graph::anchors::Matched::Sentences, 10);
    let version = index.manifest.version.as_str();
    let sentences = &index.store.sentences;
    let indexed: Vec<u32> = (0..sentences.len() as u32)
        .filter(|&i| sentences[i as usize].indexed)
        .collect();
    let k = 5;
    for &i in indexed.iter().step_by(4) {
        let q = index.search().unwrap().vectors.row(i);
        let found = graph::anchors::nearest(store, version, q, k, 0, &|_| true).unwrap();
        let mut exact: Vec<f32> = indexed
            .iter()
            .map(|&j| trellis::vector::dot(q, index.search().unwrap().vectors.row(j)))
            .collect();
        exact.sort_by(|a, b| b.total_cmp(a));
        assert_eq!(found.len(), k, "{found:?}");
        for (rank, (id, similarity)) in found.iter().enumerate() {
            assert!(
                sentences.iter().any(|s| &s.id == id && s.indexed),
                "{id} is no indexed sentence of the version"
            );
            assert!(
                (similarity - exact[rank]).abs() < 1e-3,
                "sentence {i}, rank {rank}: {similarity} where an exact search finds {}",
                exact[rank]
            );
        }
        let distinct: std::collections::HashSet<&String> = found.iter().map(|(id, _)| id).collect();
        assert_eq!(distinct.len(), k, "each sentence once: {found:?}");
    }
    let found = graph::anchors::matching(
        store,
        version,
        &query_words("Terminate, NOTICE?"),
        SENTENCES,
        0,
        &|_| true,
    )
    .unwrap();
    assert!(!found.is_empty());
    for (id, _) in &found {
        let s = sentences
            .iter()
            .find(|s| &s.id == id)
            .expect("a sentence of the version");
        let text = s.text.to_lowercase();
        assert!(
            // Both stores stem: "termination" matches "terminate".
            s.indexed && (text.contains("termin") || text.contains("notic")),
            "{id}: {}",
            s.text
        );
    }
    let ids: std::collections::HashSet<&String> = found.iter().map(|(id, _)| id).collect();
    assert_eq!(ids.len(), found.len(), "each sentence once: {found:?}");
    assert!(
        graph::anchors::matching(store, version, &query_words("?!"), SENTENCES, 0, &|_| true)
            .unwrap()
            .is_empty()
    );
}

/// Stage 2 in the graph adds what the embedded expansion adds, for the
/// same anchors, and whole queries answer the same.
fn expansion_suite(spec: &GraphSpec) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let manifests = write_corpus(dir);
    let report = ingest(dir, &manifests, spec, &[]);
    assert!(!report.graph.as_ref().unwrap().failed(), "{report:?}");
    let index = IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    let mut store = connect(spec);
    let n = index.store.sentences.len() as u32;
    let anchor_sets: Vec<Vec<SentenceNumber>> = vec![
        (0..n).map(SentenceNumber).collect(),
        (0..n).step_by(5).map(SentenceNumber).collect(),
        vec![SentenceNumber(0), SentenceNumber(n - 1)],
        index
            .store
            .sentences
            .iter()
            .enumerate()
            .filter(|(_, s)| s.clause.is_some())
            .map(|(i, _)| SentenceNumber(i as u32))
            .collect(),
    ];
    assert!(!anchor_sets[3].is_empty(), "the corpus should have clauses");
    let climbs = [ParentLevel::Chunk, ParentLevel::Section].map(|parent| (1, true, true, parent));
    let settings = [0, 1, 2, 7, 9]
        .into_iter()
        .flat_map(|window| {
            [(true, true), (false, true), (true, false)]
                .map(|(related, same_clause)| (window, related, same_clause, ParentLevel::None))
        })
        .chain(climbs);
    let mut climbed = [false; 2];
    for (window, related, same_clause, parent) in settings {
        let expansion = ExpansionSpec {
            window,
            related,
            same_clause,
            parent,
            parent_sentences: 3,
            ..ExpansionSpec::default()
        };
        for anchors in &anchor_sets {
            let embedded = retrieve::expansion(&index, anchors, &expansion).unwrap();
            let graph =
                graph::expand::expand(store.as_mut(), &index, anchors, &expansion, 0).unwrap();
            assert_eq!(
                graph, embedded,
                "window {window}, related {related}, same clause {same_clause}, parent {parent:?}"
            );
            if parent != ParentLevel::None {
                let without = ExpansionSpec {
                    parent: ParentLevel::None,
                    ..expansion.clone()
                };
                let plain = retrieve::expansion(&index, anchors, &without).unwrap();
                assert!(embedded.is_superset(&plain));
                climbed[parent as usize - 1] |= embedded.len() > plain.len();
            }
        }
    }
    assert_eq!(climbed, [true, true], "each climb should add sentences");
    // References are followed alike (the loop above follows them too: on
    // by default), and the corpus has references they add sentences for.
    let referring = ExpansionSpec {
        window: 0,
        related: false,
        same_clause: false,
        reference_sentences: 2,
        ..ExpansionSpec::default()
    };
    let unreferring = ExpansionSpec {
        references: false,
        ..referring.clone()
    };
    let referrers: Vec<SentenceNumber> = (0..n)
        .map(SentenceNumber)
        .filter(|&i| {
            let references = &index.store.sentences[i].references;
            references.iter().any(|r| r.target.is_some())
        })
        .collect();
    assert!(!referrers.is_empty(), "the corpus should have references");
    let followed = retrieve::expansion(&index, &referrers, &referring).unwrap();
    assert!(followed != retrieve::expansion(&index, &referrers, &unreferring).unwrap());
    assert_eq!(
        graph::expand::expand(store.as_mut(), &index, &referrers, &referring, 0).unwrap(),
        followed
    );
    // Each anchor's paragraph, section and first chunk.
    let all: Vec<SentenceNumber> = (0..n).map(SentenceNumber).collect();
    let context = graph::expand::context(store.as_mut(), &index, &all, 0).unwrap();
    assert_eq!(context.len(), n as usize);
    for (&i, found) in &context {
        let s = &index.store.sentences[i];
        let doc = &index.store.documents[s.document].id;
        assert!(
            found.paragraph.starts_with(&format!("{doc}:p")),
            "{found:?}"
        );
        assert!(found.section.starts_with(&format!("{doc}:h")), "{found:?}");
        assert_eq!(
            found.chunk,
            s.chunk.map(|c| format!("{doc}:c{c}")),
            "sentence {i}"
        );
    }

    // Whole queries: a route expanding in the graph answers as one
    // expanding in the index.
    let embedder = trellis::embed::from_spec(&index.profile.embedding, None).unwrap();
    let embedded_route = spec::RetrievalRouteSpec::for_corpus("c");
    let mut graph_route = embedded_route.clone();
    graph_route.expansion.source = ExpansionSource::Graph;
    let shared = graph::Pool::new(store, spec.clone(), 1);
    let plain = Retriever::new(&index, embedder.as_ref()).unwrap();
    let through_graph = Retriever::new(&index, embedder.as_ref())
        .unwrap()
        .with_graph(&shared);
    for query in [
        "Which law governs the agreement?",
        "How is personal data processed by the sub-processor?",
        "What did the supplier write about it being final?",
    ] {
        let a = plain
            .retrieve(&embedded_route, query, None, &Filter::default())
            .unwrap();
        let b = through_graph
            .retrieve(&graph_route, query, None, &Filter::default())
            .unwrap();
        let ids = |answer: &retrieve::Answer| {
            answer
                .hits
                .iter()
                .map(|h| (h.citation.sentence_id.clone(), h.score.to_bits()))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&a), ids(&b), "{query}");
    }
    // Without a store, a graph route says so.
    let err = plain
        .retrieve(&graph_route, "law", None, &Filter::default())
        .unwrap_err();
    assert!(err.to_string().contains("graph store"), "{err}");
}

/// A route whose anchors come from the store: loaded without the
/// version's sentence vectors, HNSW graph and BM25 index, it finds the
/// same dense anchors as the embedded route, the same first lexical
/// anchor (the store's full-text index finds, the version's BM25
/// statistics rank), tells common queries by the same document shares,
/// answers the quick start's questions with the same first hit, and
/// keeps to the caller's access filters.
fn anchored_suite(spec: &GraphSpec) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let quickstart = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart");
    let documents = dir.join("documents");
    std::fs::create_dir_all(&documents).unwrap();
    for entry in std::fs::read_dir(quickstart.join("documents")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, documents.join(path.file_name().unwrap())).unwrap();
    }
    let manifests = std::fs::read_to_string(quickstart.join("trellis.yaml")).unwrap();
    let report = ingest(dir, &manifests, spec, &[]);
    assert!(!report.graph.as_ref().unwrap().failed(), "{report:?}");

    let origin = dir.join("trellis.yaml");
    let loaded = spec::parse_str(&manifests, &origin).unwrap();
    let (route, _) = spec::select_route(&loaded, None, &origin).unwrap();
    // The test ingest names its corpus `c`.
    let mut embedded_route = route.spec.clone();
    embedded_route.corpus_ref.name = "c".into();
    let mut graph_route = embedded_route.clone();
    graph_route.anchors.source = AnchorSource::Graph;
    let data = dir.join("data");
    let embedded = LoadedRoute::open(&data, &embedded_route, None, 1).unwrap();
    let anchored = LoadedRoute::open(&data, &graph_route, None, 3).unwrap();
    assert!(embedded.graph.is_none());
    assert!(
        anchored.index.search().is_err(),
        "the graph-anchored route loaded the search files"
    );
    let (plain, through_graph) = (embedded.retriever().unwrap(), anchored.retriever().unwrap());
    let questions = std::fs::read_to_string(quickstart.join("queries.txt")).unwrap();
    let questions: Vec<&str> = questions.lines().filter(|q| !q.trim().is_empty()).collect();
    let ids = |answer: &retrieve::Answer| {
        answer
            .hits
            .iter()
            .map(|h| h.citation.sentence_id.clone())
            .collect::<Vec<_>>()
    };
    // The embedded route's answer and the graph route's, in `mode` or
    // the routes' own.
    let both = |question: &str, mode: Option<spec::AnchorMode>| {
        let answer = |retriever: &Retriever<'_>, route: &spec::RetrievalRouteSpec| {
            let mut route = route.clone();
            route.anchors.mode = mode.unwrap_or(route.anchors.mode);
            retriever
                .retrieve(&route, question, None, &Filter::default())
                .unwrap()
        };
        (
            answer(&plain, &embedded_route),
            answer(&through_graph, &graph_route),
        )
    };
    for &question in &questions {
        // Counted from the documents' words at load, as the BM25 index
        // counts them.
        assert_eq!(
            embedded.index.document_share(question).unwrap(),
            anchored.index.document_share(question).unwrap(),
            "{question}"
        );
        // The dense list is the store's vector index's, mixed with
        // paragraph centroids made of vectors read from the store.
        let (a, b) = both(question, Some(spec::AnchorMode::Dense));
        assert_eq!(ids(&a), ids(&b), "dense: {question}");
        // The lexical list: the store finds, the version's BM25
        // statistics rank.
        let (a, b) = both(question, Some(spec::AnchorMode::Bm25));
        assert_eq!(ids(&a).first(), ids(&b).first(), "bm25: {question}");
        let (a, b) = both(question, None);
        assert!(!a.hits.is_empty(), "{question}");
        assert_eq!(
            ids(&a).first(),
            ids(&b).first(),
            "{question}: embedded {:?}, graph {:?}",
            ids(&a),
            ids(&b)
        );
    }

    // Queries at once each take a connection of the route's pool, and
    // answer as they did one at a time.
    let alone: Vec<Vec<String>> = questions.iter().map(|q| ids(&both(q, None).1)).collect();
    let at_once: Vec<Vec<String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = questions
            .iter()
            .map(|&question| {
                let (route, retriever) = (&graph_route, &through_graph);
                scope.spawn(move || {
                    let mut last = Vec::new();
                    for _ in 0..3 {
                        let answer = retriever.retrieve(route, question, None, &Filter::default());
                        last = ids(&answer.unwrap());
                    }
                    last
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(alone, at_once);
    // The pool opens real connections up to its size, and each answers.
    let pool = anchored.graph.as_ref().unwrap();
    let mut lent: Vec<_> = (0..pool.size()).map(|_| pool.get().unwrap()).collect();
    assert_eq!(pool.open(), 3);
    for store in &mut lent {
        let ping = graph::Statement::new("ping", "RETURN 1");
        assert_eq!(store.run(&ping).unwrap(), vec![vec![graph::Value::Int(1)]]);
    }
    drop(lent);

    // A pod without the index volume: the version's serving files read
    // back from the store into an empty data directory answer as the
    // volume's. Nothing of the search files comes along.
    let version = anchored.index.manifest.version.clone();
    let empty = tempfile::tempdir().unwrap();
    let fetched = graph::fetch_version(spec, empty.path(), "c", &version).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&fetched)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "checksums.json",
            "chunks.f32",
            "chunks.json",
            "headings.f32",
            "manifest.json",
            "profile.json",
            "related.json",
            "skeleton.json",
            "terms.f32"
        ]
    );
    for name in &names {
        let original = std::fs::read(anchored.index.dir.join(name)).unwrap();
        assert!(
            std::fs::read(fetched.join(name)).unwrap() == original,
            "{name} differs"
        );
    }
    let remote = LoadedRoute::open(empty.path(), &graph_route, Some(&version), 1).unwrap();
    let from_store = remote.retriever().unwrap();
    for &question in &questions {
        let answer = from_store
            .retrieve(&graph_route, question, None, &Filter::default())
            .unwrap();
        assert_eq!(ids(&answer), ids(&both(question, None).1), "{question}");
    }
    // A part damaged in the store is named when the version opens.
    let mut store = connect(spec);
    let damage = graph::Statement::new(
        "damage",
        "MATCH (n:IndexFile {id: 'skeleton.json#0', index_version: $version}) \
         SET n.data = 'e30=' RETURN n.id AS id",
    )
    .param("version", version.as_str());
    assert_eq!(store.run(&damage).unwrap().len(), 1);
    let other = tempfile::tempdir().unwrap();
    graph::fetch_version(spec, other.path(), "c", &version).unwrap();
    let err = LoadedRoute::open(other.path(), &graph_route, Some(&version), 1)
        .err()
        .expect("a damaged skeleton");
    let err: Vec<String> =
        std::iter::successors(Some(&err as &dyn std::error::Error), |e| e.source())
            .map(ToString::to_string)
            .collect();
    assert!(
        err.iter().any(|e| e.contains("skeleton.json: damaged")),
        "{err:?}"
    );
    // A version the store does not hold is refused by name.
    let err = graph::fetch_version(spec, other.path(), "c", "0000000000000000").unwrap_err();
    assert!(err.to_string().contains("0000000000000000"), "{err}");

    // Access filters apply before the anchors: a caller holding no tag
    // of the corpus sees nothing, and a document filter keeps to it.
    let nobody = Filter {
        acl: Some(vec!["nobody".into()]),
        ..Filter::default()
    };
    let answer = through_graph
        .retrieve(&graph_route, "Who conquered England?", None, &nobody)
        .unwrap();
    assert!(answer.hits.is_empty(), "{:?}", ids(&answer));
    let hosting = anchored
        .index
        .store
        .documents
        .iter()
        .find(|d| d.key.contains("hosting"))
        .expect("the hosting agreement")
        .key
        .clone();
    let only = Filter {
        documents: Some(vec![hosting.clone()]),
        ..Filter::default()
    };
    let answer = through_graph
        .retrieve(&graph_route, "Who conquered England?", None, &only)
        .unwrap();
    assert!(!answer.hits.is_empty());
    assert!(
        answer.hits.iter().all(|h| h.citation.document == hosting),
        "{:?}",
        answer
            .hits
            .iter()
            .map(|h| &h.citation.document)
            .collect::<Vec<_>>()
    );
}

#[test]
fn falkordb_graph_anchors_answer_as_the_embedded_route() {
    let server = FalkorServer::start();
    anchored_suite(&server.spec("anchored"));
}

#[test]
fn neo4j_graph_anchors_answer_as_the_embedded_route() {
    with_neo4j(
        "graph::neo4j_graph_anchors_answer_as_the_embedded_route",
        anchored_suite,
    );
}

#[test]
fn falkordb_export_counts_round_trips_and_removes_unserved_versions() {
    let server = FalkorServer::start();
    export_suite(&server.spec("export"));
}

#[test]
fn falkordb_expansion_equals_the_embedded_expansion() {
    let server = FalkorServer::start();
    expansion_suite(&server.spec("expansion"));
}

#[test]
fn an_unreachable_server_fails_the_export_and_the_embedded_index_serves() {
    let (_reserved, port) = refused_port();
    let spec = GraphSpec {
        store: GraphStoreKind::Falkordb,
        falkordb: Some(FalkorDbSpec {
            url: format!("falkor://127.0.0.1:{port}"),
            graph: "g".into(),
            password_secret_ref: None,
            password_env: None,
        }),
        timeout_seconds: Some(2),
        ..GraphSpec::default()
    };
    let err = graph::connect(&spec).err().expect("no server on the port");
    assert!(matches!(err, GraphError::Unreachable { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&format!(
            "falkordb at falkor://127.0.0.1:{port} is unreachable"
        )),
        "{err}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let manifests = write_corpus(dir);
    let report = ingest(dir, &manifests, &spec, &[]);
    let outcome = report.graph.as_ref().unwrap();
    assert!(outcome.failed() && outcome.export.is_none(), "{outcome:?}");
    assert!(
        outcome.error.as_ref().unwrap().contains("unreachable"),
        "{outcome:?}"
    );
    // The version was published all the same.
    let index = IndexVersion::open(&dir.join("data"), "c", None).unwrap();
    assert_eq!(index.manifest.version, report.manifest.version);
}

#[test]
fn a_missing_password_variable_is_a_clear_error() {
    let mut spec = GraphSpec {
        store: GraphStoreKind::Falkordb,
        falkordb: Some(FalkorDbSpec {
            url: "falkor://127.0.0.1:1".into(),
            graph: "g".into(),
            password_secret_ref: None,
            password_env: Some("TRELLIS_TEST_UNSET_PASSWORD_VARIABLE".into()),
        }),
        ..GraphSpec::default()
    };
    let err = graph::connect(&spec).err().unwrap();
    assert!(
        err.to_string()
            .contains("TRELLIS_TEST_UNSET_PASSWORD_VARIABLE"),
        "{err}"
    );
    spec.falkordb = None;
    let err = graph::connect(&spec).err().unwrap();
    assert!(
        err.to_string().contains("graph.falkordb is not set"),
        "{err}"
    );
}

#[test]
fn neo4j_export_counts_round_trips_and_removes_unserved_versions() {
    with_neo4j(
        "graph::neo4j_export_counts_round_trips_and_removes_unserved_versions",
        export_suite,
    );
}

#[test]
fn neo4j_expansion_equals_the_embedded_expansion() {
    with_neo4j(
        "graph::neo4j_expansion_equals_the_embedded_expansion",
        expansion_suite,
    );
}
