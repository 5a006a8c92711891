//! The openCypher statements every graph store runs, and the schema
//! statements only one of them accepts, kept apart and named.
//!
//! Every node carries `id` (the skeleton's stable string id) and
//! `index_version`; the pair is the key every `MERGE` and `MATCH` uses, so
//! two index versions of the same document never share a node. Labels and
//! relationship types cannot be parameters in Cypher; they come from the
//! fixed tables below, never from data. Everything else is a parameter.

/// Node labels, in the order they are written.
pub const DOCUMENT: &str = "Document";
pub const SECTION: &str = "Section";
pub const PARAGRAPH: &str = "Paragraph";
pub const CHUNK: &str = "TextChunk";
pub const SENTENCE: &str = "Sentence";
/// A table as an object: headers, units, shape; its rows are sentences.
pub const TABLE: &str = "Table";
/// A part of a file of the version: what a retrieval pod without the
/// index volume loads (`version_files`). Its id is `<file>#<part>`.
pub const FILE: &str = "IndexFile";
/// One node per exported version, written last: its presence says the
/// export completed.
pub const VERSION: &str = "IndexVersion";

/// Every label Trellis writes.
pub const LABELS: [&str; 8] = [
    DOCUMENT, SECTION, PARAGRAPH, CHUNK, SENTENCE, TABLE, FILE, VERSION,
];

/// A relationship type and the labels it joins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Link {
    pub from: &'static str,
    pub kind: &'static str,
    pub to: &'static str,
}

const fn link(from: &'static str, kind: &'static str, to: &'static str) -> Link {
    Link { from, kind, to }
}

pub const HAS_SECTION: Link = link(DOCUMENT, "HAS_SECTION", SECTION);
pub const SUBSECTION_OF: Link = link(SECTION, "SUBSECTION_OF", SECTION);
pub const SENTENCE_IN_PARAGRAPH: Link = link(SENTENCE, "PART_OF", PARAGRAPH);
pub const PARAGRAPH_IN_SECTION: Link = link(PARAGRAPH, "PART_OF", SECTION);
pub const SENTENCE_IN_CHUNK: Link = link(SENTENCE, "PART_OF", CHUNK);
pub const PARAGRAPH_IN_CHUNK: Link = link(PARAGRAPH, "PART_OF", CHUNK);
pub const IN_SECTION: Link = link(SENTENCE, "IN_SECTION", SECTION);
pub const SENTENCE_IN_DOCUMENT: Link = link(SENTENCE, "IN_DOCUMENT", DOCUMENT);
pub const CHUNK_IN_DOCUMENT: Link = link(CHUNK, "IN_DOCUMENT", DOCUMENT);
pub const SENTENCE_NEXT: Link = link(SENTENCE, "NEXT", SENTENCE);
pub const PARAGRAPH_NEXT: Link = link(PARAGRAPH, "NEXT", PARAGRAPH);
pub const RELATED_TO: Link = link(SENTENCE, "RELATED_TO", SENTENCE);
pub const REFERS_TO_SECTION: Link = link(SENTENCE, "REFERS_TO", SECTION);
pub const REFERS_TO_PARAGRAPH: Link = link(SENTENCE, "REFERS_TO", PARAGRAPH);
pub const TABLE_IN_DOCUMENT: Link = link(TABLE, "IN_DOCUMENT", DOCUMENT);
/// A row of a table, `{row}` its place among the data rows from 1.
pub const ROW_OF: Link = link(SENTENCE, "ROW_OF", TABLE);
/// A table nearly repeating an earlier one (its rows are not indexed).
pub const REPEATS: Link = link(TABLE, "REPEATS", TABLE);

/// Every relationship Trellis writes, in the order they are written.
pub const LINKS: [Link; 17] = [
    HAS_SECTION,
    SUBSECTION_OF,
    SENTENCE_IN_PARAGRAPH,
    PARAGRAPH_IN_SECTION,
    SENTENCE_IN_CHUNK,
    PARAGRAPH_IN_CHUNK,
    IN_SECTION,
    SENTENCE_IN_DOCUMENT,
    CHUNK_IN_DOCUMENT,
    SENTENCE_NEXT,
    PARAGRAPH_NEXT,
    RELATED_TO,
    REFERS_TO_SECTION,
    REFERS_TO_PARAGRAPH,
    TABLE_IN_DOCUMENT,
    ROW_OF,
    REPEATS,
];

/// Writes `$rows` of documents of `$corpus`.
pub const UPSERT_DOCUMENTS: &str = "UNWIND $rows AS row
MERGE (n:Document {id: row.id, index_version: $version})
SET n.key = row.key, n.title = row.title, n.format = row.format, n.corpus = $corpus,
    n.author = row.author, n.date = row.date, n.version = row.version,
    n.language = row.language";

/// Writes `$rows` of sections.
pub const UPSERT_SECTIONS: &str = "UNWIND $rows AS row
MERGE (n:Section {id: row.id, index_version: $version})
SET n.heading = row.heading, n.numbering = row.numbering, n.level = row.level,
    n.section_path = row.section_path, n.document_id = row.document_id,
    n.field_names = row.field_names, n.field_values = row.field_values";

/// Writes `$rows` of paragraphs, each with its centroid (the normalised
/// mean of its indexed sentences' vectors, null for a paragraph with
/// none); `centroid` is the store's expression for `row.centroid` as a
/// vector.
pub fn upsert_paragraphs(centroid: &str) -> String {
    format!(
        "UNWIND $rows AS row
MERGE (n:Paragraph {{id: row.id, index_version: $version}})
SET n.text = row.text, n.position = row.position, n.document_id = row.document_id,
    n.centroid = {centroid}"
    )
}

/// Writes `$rows` of chunks.
pub const UPSERT_CHUNKS: &str = "UNWIND $rows AS row
MERGE (n:TextChunk {id: row.id, index_version: $version})
SET n.text = row.text, n.heading_path = row.heading_path, n.tokens = row.tokens,
    n.position = row.position, n.document_id = row.document_id";

/// Writes `$rows` of tables. Units are strings, empty for a column
/// without one: a store's list property holds no nulls.
pub const UPSERT_TABLES: &str = "UNWIND $rows AS row
MERGE (n:Table {id: row.id, index_version: $version})
SET n.caption = row.caption, n.columns = row.columns, n.units = row.units,
    n.row_headers = row.row_headers, n.rows = row.rows, n.cols = row.cols,
    n.parts = row.parts, n.first_page = row.first_page, n.last_page = row.last_page,
    n.document_id = row.document_id";

/// Writes `$rows` of sentences: the unified node, everything stage 2
/// needs. `embedding` is the store's expression for `row.embedding` as a
/// vector ([`neo4j_vector`], [`falkordb_vector`]).
pub fn upsert_sentences(embedding: &str) -> String {
    format!(
        "UNWIND $rows AS row
MERGE (n:Sentence {{id: row.id, index_version: $version}})
SET n.text = row.text, n.embedding = {embedding}, n.source = row.source,
    n.page = row.page, n.confidence = row.confidence,
    n.char_offset = row.char_offset, n.char_length = row.char_length,
    n.section_path = row.section_path, n.parent_paragraph_id = row.parent_paragraph_id,
    n.paragraph_text = row.paragraph_text, n.box_pages = row.box_pages, n.boxes = row.boxes,
    n.prev_sentence_id = row.prev_sentence_id, n.next_sentence_id = row.next_sentence_id,
    n.clause = row.clause, n.indexed = row.indexed, n.position = row.position,
    n.document_id = row.document_id"
    )
}

/// Neo4j only: a list of floats is what its vector index reads.
pub fn neo4j_vector(list: &str) -> String {
    list.to_string()
}

/// FalkorDB only: its vector index reads `vecf32` values, and its
/// parameters can only be literals, so the list is converted in the
/// statement (`vecf32(null)` is null).
pub fn falkordb_vector(list: &str) -> String {
    format!("vecf32({list})")
}

/// Marks `$version` as completely exported, in export format `$format`.
pub const MARK_VERSION: &str = "MERGE (n:IndexVersion {id: $version, index_version: $version})
SET n.corpus = $corpus, n.sentences = $sentences, n.complete = true,
    n.export_format = $format";

/// Writes one part of a version file: `$id` (`<file>#<part>`), its
/// `$name`, `$part` and `$parts` numbers and its bytes in base64,
/// `$data`.
pub const UPSERT_FILE_PART: &str = "MERGE (n:IndexFile {id: $id, index_version: $version})
SET n.corpus = $corpus, n.name = $name, n.part = $part, n.parts = $parts, n.data = $data";

/// Reads one part of a version file: how many the file has, and its
/// bytes in base64.
pub const READ_FILE_PART: &str = "MATCH (n:IndexFile {id: $id, index_version: $version})
RETURN n.parts AS parts, n.data AS data";

/// Whether `$version` was completely exported.
pub const VERSION_COMPLETE: &str = "MATCH (n:IndexVersion {id: $version, index_version: $version})
RETURN n.complete AS complete, n.export_format AS format";

/// The versions of `$corpus` with nodes in the store (complete or not).
/// Several corpora may share a graph; each removes only its own versions.
pub const VERSIONS: &str =
    "MATCH (n:Document {corpus: $corpus}) RETURN DISTINCT n.index_version AS version
UNION
MATCH (n:IndexVersion {corpus: $corpus}) RETURN DISTINCT n.index_version AS version";

/// Writes `$rows` of `{from, to}` ids as `link` relationships, each of
/// `properties` set from the row's field of that name.
pub fn upsert_links(link: Link, properties: &[&str]) -> String {
    let Link { from, kind, to } = link;
    let set: String = properties
        .iter()
        .map(|p| format!("\nSET r.{p} = row.{p}"))
        .collect();
    format!(
        "UNWIND $rows AS row
MATCH (a:{from} {{id: row.from, index_version: $version}})
MATCH (b:{to} {{id: row.to, index_version: $version}})
MERGE (a)-[r:{kind}]->(b){set}"
    )
}

/// Writes `$rows` of `{from, to, similarity}` as `RELATED_TO` links.
pub const UPSERT_RELATED: &str = "UNWIND $rows AS row
MATCH (a:Sentence {id: row.from, index_version: $version})
MATCH (b:Sentence {id: row.to, index_version: $version})
MERGE (a)-[r:RELATED_TO]->(b)
SET r.similarity = row.similarity, r.source = 'knn_sentence'";

/// The statement writing `link`'s rows.
pub fn upsert_statement(link: Link) -> String {
    if link == RELATED_TO {
        UPSERT_RELATED.to_string()
    } else if link == REFERS_TO_SECTION || link == REFERS_TO_PARAGRAPH {
        // The reference as written ("Section 1.4").
        upsert_links(link, &["label"])
    } else if link == ROW_OF {
        upsert_links(link, &["row"])
    } else {
        upsert_links(link, &[])
    }
}

/// Deletes up to `limit` nodes labelled `label` of `$version` with their
/// relationships; returns how many. Run until it returns 0.
pub fn delete_batch(label: &str, limit: usize) -> String {
    format!(
        "MATCH (n:{label} {{index_version: $version}})
WITH n LIMIT {limit}
DETACH DELETE n
RETURN count(n) AS deleted"
    )
}

/// Counts the `label` nodes of `$version`.
pub fn count_nodes(label: &str) -> String {
    format!("MATCH (n:{label} {{index_version: $version}}) RETURN count(n) AS count")
}

/// Counts the `link` relationships between nodes of `$version`.
pub fn count_links(link: Link) -> String {
    let Link { from, kind, to } = link;
    format!(
        "MATCH (a:{from} {{index_version: $version}})-[r:{kind}]->(b:{to} {{index_version: $version}})
RETURN count(r) AS count"
    )
}

/// Reads back sentences by id: `$ids`.
pub const READ_SENTENCES: &str = "UNWIND $ids AS wanted
MATCH (n:Sentence {id: wanted, index_version: $version})
RETURN n.id AS id, n.text AS text, n.embedding AS embedding, n.page AS page,
       n.section_path AS section_path, n.prev_sentence_id AS prev,
       n.next_sentence_id AS next, n.parent_paragraph_id AS paragraph";

/// Stage 3 of a route anchored in the store: the embeddings of the
/// sentences `$ids` (indexed ones carry one).
pub const SENTENCE_VECTORS: &str = "UNWIND $ids AS wanted
MATCH (n:Sentence {id: wanted, index_version: $version})
WHERE n.embedding IS NOT NULL
RETURN n.id AS id, n.embedding AS embedding";

/// Stage 1 and 3 of a route anchored in the store: the centroids of the
/// paragraphs `$ids` (those with an indexed sentence carry one).
pub const PARAGRAPH_CENTROIDS: &str = "UNWIND $ids AS wanted
MATCH (n:Paragraph {id: wanted, index_version: $version})
WHERE n.centroid IS NOT NULL
RETURN n.id AS id, n.centroid AS centroid";

/// Stage 2, window: the sentences within `window` `NEXT` steps of each of
/// `$anchors`, before or after (a document's chain never crosses into
/// another's). `window` is at least 1.
pub fn expand_window(window: u32) -> String {
    format!(
        "UNWIND $anchors AS anchor
MATCH (a:Sentence {{id: anchor, index_version: $version}})-[:NEXT*1..{window}]-(n:Sentence)
RETURN DISTINCT anchor, n.id AS id"
    )
}

/// Stage 2, semantic links: the `RELATED_TO` targets of each of `$anchors`.
pub const EXPAND_RELATED: &str = "UNWIND $anchors AS anchor
MATCH (a:Sentence {id: anchor, index_version: $version})-[:RELATED_TO]->(n:Sentence)
RETURN anchor, n.id AS id";

/// Stage 2, clause continuation: the sentences `from..=to` `NEXT` steps
/// after each of `$anchors` that has a clause id, with their clause ids and
/// distances; the caller keeps the run that shares the anchor's clause.
pub fn expand_clause(from: u32, to: u32) -> String {
    format!(
        "UNWIND $anchors AS anchor
MATCH p = (a:Sentence {{id: anchor, index_version: $version}})-[:NEXT*{from}..{to}]->(n:Sentence)
WHERE a.clause IS NOT NULL
RETURN anchor, n.id AS id, n.clause AS clause, a.clause AS anchor_clause, length(p) AS distance"
    )
}

/// Stage 2, context: each of `$anchors`' parent paragraph, section and
/// chunks.
pub const EXPAND_CONTEXT: &str = "UNWIND $anchors AS anchor
MATCH (a:Sentence {id: anchor, index_version: $version})-[:PART_OF]->(p:Paragraph)
MATCH (a)-[:IN_SECTION]->(s:Section)
OPTIONAL MATCH (a)-[:PART_OF]->(c:TextChunk)
RETURN anchor, p.id AS paragraph, s.id AS section, collect(c.id) AS chunks";

/// Stage 2, climbing to chunks: every sentence `PART_OF` each of the text
/// chunks `$parents`.
pub const CHUNK_MEMBERS: &str = "UNWIND $parents AS parent
MATCH (s:Sentence)-[:PART_OF]->(c:TextChunk {id: parent, index_version: $version})
RETURN parent, s.id AS id";

/// Stage 2, climbing to sections: every sentence `IN_SECTION` each of the
/// sections `$parents` (their own sentences, not their subsections').
pub const SECTION_MEMBERS: &str = "UNWIND $parents AS parent
MATCH (s:Sentence)-[:IN_SECTION]->(h:Section {id: parent, index_version: $version})
RETURN parent, s.id AS id";

/// Stage 2, following references: the sentences of each paragraph one of
/// `$anchors` `REFERS_TO`, with the anchor and the target.
pub const REFERENCED_PARAGRAPHS: &str = "UNWIND $anchors AS anchor
MATCH (a:Sentence {id: anchor, index_version: $version})-[:REFERS_TO]->(t:Paragraph)
MATCH (s:Sentence)-[:PART_OF]->(t)
RETURN anchor, t.id AS target, s.id AS id";

/// Stage 2, following references: the sentences of each section one of
/// `$anchors` `REFERS_TO` (its own, not its subsections').
pub const REFERENCED_SECTIONS: &str = "UNWIND $anchors AS anchor
MATCH (a:Sentence {id: anchor, index_version: $version})-[:REFERS_TO]->(t:Section)
MATCH (s:Sentence)-[:IN_SECTION]->(t)
RETURN anchor, t.id AS target, s.id AS id";

/// Neo4j 5 only: uniqueness of `(id, index_version)` per label, an index
/// on `index_version` for deletes, the cosine vector index over the
/// sentence embeddings (unquantised, 5.23+: quantised vectors move
/// similarities by about 0.01, enough to reorder anchors against the
/// embedded index), and the full-text index over sentence text.
pub fn neo4j_schema(dims: usize) -> Vec<String> {
    let mut statements = Vec::new();
    for label in LABELS {
        let name = label.to_lowercase();
        statements.push(format!(
            "CREATE CONSTRAINT trellis_{name}_key IF NOT EXISTS \
             FOR (n:{label}) REQUIRE (n.id, n.index_version) IS UNIQUE"
        ));
        statements.push(format!(
            "CREATE INDEX trellis_{name}_version IF NOT EXISTS \
             FOR (n:{label}) ON (n.index_version)"
        ));
    }
    statements.push(format!(
        "CREATE VECTOR INDEX trellis_sentence_embedding IF NOT EXISTS \
         FOR (s:Sentence) ON s.embedding \
         OPTIONS {{indexConfig: {{`vector.dimensions`: {dims}, \
         `vector.similarity_function`: 'cosine', \
         `vector.quantization.enabled`: false}}}}"
    ));
    // Lucene's English analyzer (stop words, Porter stemming), as the
    // embedded BM25 index analyses text with English stop words and
    // stemming: "governs" finds "governed" in both.
    for (label, name) in [(SENTENCE, "sentence"), (PARAGRAPH, "paragraph")] {
        statements.push(format!(
            "CREATE FULLTEXT INDEX trellis_{name}_words IF NOT EXISTS \
             FOR (n:{label}) ON EACH [n.text] \
             OPTIONS {{indexConfig: {{`fulltext.analyzer`: 'english'}}}}"
        ));
    }
    statements
}

/// Neo4j only: the `$candidates` sentences nearest `$vector` in the vector
/// index, which spans every version (the caller keeps its own). Scores
/// are Neo4j's cosine scores, (1 + cos) / 2.
pub const NEO4J_NEAREST: &str =
    "CALL db.index.vector.queryNodes('trellis_sentence_embedding', $candidates, $vector)
YIELD node, score
RETURN node.id AS id, node.index_version AS version, node.indexed AS indexed, score";

/// FalkorDB only: as [`NEO4J_NEAREST`]; scores are cosine distances,
/// 1 − cos.
pub const FALKORDB_NEAREST: &str =
    "CALL db.idx.vector.queryNodes('Sentence', 'embedding', $candidates, vecf32($vector))
YIELD node, score
RETURN node.id AS id, node.index_version AS version, node.indexed AS indexed, score";

/// Neo4j only: the `$candidates` best matches of `$query` (Lucene
/// syntax) in the full-text index, of every version.
pub const NEO4J_MATCHING: &str =
    "CALL db.index.fulltext.queryNodes('trellis_sentence_words', $query, {limit: $candidates})
YIELD node, score
RETURN node.id AS id, node.index_version AS version, node.indexed AS indexed, score";

/// Neo4j only: as [`NEO4J_MATCHING`], over paragraphs.
pub const NEO4J_MATCHING_PARAGRAPHS: &str =
    "CALL db.index.fulltext.queryNodes('trellis_paragraph_words', $query, {limit: $candidates})
YIELD node, score
RETURN node.id AS id, node.index_version AS version, true AS indexed, score";

/// FalkorDB only: as [`NEO4J_MATCHING`], over paragraphs.
pub const FALKORDB_MATCHING_PARAGRAPHS: &str =
    "CALL db.idx.fulltext.queryNodes('Paragraph', $query)
YIELD node, score
RETURN node.id AS id, node.index_version AS version, true AS indexed, score
ORDER BY score DESC
LIMIT $candidates";

/// FalkorDB only: as [`NEO4J_MATCHING`], `$query` in RediSearch syntax.
pub const FALKORDB_MATCHING: &str = "CALL db.idx.fulltext.queryNodes('Sentence', $query)
YIELD node, score
RETURN node.id AS id, node.index_version AS version, node.indexed AS indexed, score
ORDER BY score DESC
LIMIT $candidates";

/// FalkorDB only: a range index on `id` and `index_version` per label
/// (FalkorDB indexes each property on its own, so the pair serves both
/// lookups and deletes), and its cosine vector index over the sentence
/// embeddings. FalkorDB has no `IF NOT EXISTS`; an index that exists is
/// reported as "already indexed", which the backend accepts.
pub fn falkordb_schema(dims: usize) -> Vec<String> {
    let mut statements: Vec<String> = LABELS
        .iter()
        .map(|label| format!("CREATE INDEX FOR (n:{label}) ON (n.id, n.index_version)"))
        .collect();
    statements.push(format!(
        "CREATE VECTOR INDEX FOR (s:Sentence) ON (s.embedding) \
         OPTIONS {{dimension: {dims}, similarityFunction: 'cosine'}}"
    ));
    for label in [SENTENCE, PARAGRAPH] {
        statements.push(format!(
            "CALL db.idx.fulltext.createNodeIndex('{label}', 'text')"
        ));
    }
    statements
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_statements_name_their_labels_and_type() {
        let text = upsert_statement(SENTENCE_IN_PARAGRAPH);
        assert!(text.contains("MATCH (a:Sentence {id: row.from, index_version: $version})"));
        assert!(text.contains("MATCH (b:Paragraph {id: row.to, index_version: $version})"));
        assert!(text.ends_with("MERGE (a)-[r:PART_OF]->(b)"));
        assert!(upsert_statement(RELATED_TO).contains("r.source = 'knn_sentence'"));
        assert!(upsert_statement(REFERS_TO_SECTION).ends_with(
            "MATCH (b:Section {id: row.to, index_version: $version})\n\
             MERGE (a)-[r:REFERS_TO]->(b)\nSET r.label = row.label"
        ));
    }

    #[test]
    fn neo4j_schema_has_a_key_per_label_and_a_cosine_vector_index() {
        let schema = neo4j_schema(384);
        for label in LABELS {
            assert!(
                schema.iter().any(|s| s.contains(&format!(
                    "FOR (n:{label}) REQUIRE (n.id, n.index_version) IS UNIQUE"
                ))),
                "{label}"
            );
        }
        assert!(
            upsert_sentences(&neo4j_vector("row.embedding"))
                .contains("n.embedding = row.embedding,")
        );
        let vector = &schema[schema.len() - 3];
        assert!(vector.starts_with("CREATE VECTOR INDEX trellis_sentence_embedding IF NOT EXISTS"));
        assert!(vector.contains("FOR (s:Sentence) ON s.embedding"));
        assert!(vector.contains("`vector.dimensions`: 384"));
        assert!(vector.contains("`vector.similarity_function`: 'cosine'"));
        let words = &schema[schema.len() - 2..];
        for (text, label) in words.iter().zip(["sentence", "paragraph"]) {
            assert!(
                text.starts_with(&format!(
                    "CREATE FULLTEXT INDEX trellis_{label}_words IF NOT EXISTS"
                )),
                "{text}"
            );
            assert!(text.contains("`fulltext.analyzer`: 'english'"), "{text}");
        }
        assert!(schema.iter().all(|s| s.contains("IF NOT EXISTS")));
    }

    #[test]
    fn falkordb_schema_uses_its_own_vector_index_syntax() {
        let schema = falkordb_schema(768);
        assert_eq!(schema.len(), LABELS.len() + 3);
        assert_eq!(
            schema[LABELS.len()],
            "CREATE VECTOR INDEX FOR (s:Sentence) ON (s.embedding) \
             OPTIONS {dimension: 768, similarityFunction: 'cosine'}"
        );
        assert!(schema.iter().all(|s| !s.contains("IF NOT EXISTS")));
        assert_eq!(
            schema[LABELS.len() + 1..],
            [
                "CALL db.idx.fulltext.createNodeIndex('Sentence', 'text')",
                "CALL db.idx.fulltext.createNodeIndex('Paragraph', 'text')"
            ]
        );
        assert!(
            upsert_sentences(&falkordb_vector("row.embedding"))
                .contains("n.embedding = vecf32(row.embedding),")
        );
    }
}
