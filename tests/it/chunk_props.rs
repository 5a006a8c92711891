//! Chunker invariants on random documents, built through the real path:
//! `TreeBuilder` → `render` → `Skeleton::build` → `chunk_skeleton`.
//!
//! Documents mix headings of random levels, paragraphs of random sentences
//! (some far longer than a chunk), nested list items, code, and small and
//! large tables (some repeated, some without header rows, some with units
//! rows); specs use small limits so that every limit bites.

use std::collections::HashSet;

use proptest::prelude::*;
use trellis::chunk::{Chunk, ChunkKind, TokenCounter, TopicShifts, WordCounter, chunk_at_shifts};
use trellis::parse::{Format, Table, TreeBuilder};
use trellis::segment::{Segmenter, SentenceFilter};
use trellis::skeleton::{Skeleton, SourceTag};
use trellis::spec::{ChunkStrategy, ChunkingSpec, FixedChunkingSpec, SemanticChunkingSpec};

#[derive(Clone, Debug)]
enum Block {
    Heading(u8, String),
    Paragraph(String),
    ListItem(u8, String),
    Code(String),
    Table(Table),
    /// A copy of the n-th table generated so far (modulo their count).
    RepeatTable(usize),
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[a-z]{1,9}",
        1 => "[A-Z][a-z]{0,6}",
        1 => "[0-9]{1,4}",
        1 => prop::sample::select(vec!["é", "naïve", "a|b", "U.S.", "e.g.", "—", "%", "USD", "(m)"])
            .prop_map(String::from),
    ]
}

fn sentence() -> impl Strategy<Value = String> {
    let length = prop_oneof![12 => 1usize..14, 1 => 40usize..260];
    length
        .prop_flat_map(|n| prop::collection::vec(word(), n))
        .prop_map(|words| format!("{}.", words.join(" ")))
}

fn paragraph() -> impl Strategy<Value = String> {
    prop::collection::vec(sentence(), 1..6).prop_map(|s| s.join(" "))
}

fn cell() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(String::new()),
        1 => prop::sample::select(vec!["USD m", "%", "€bn", "x"]).prop_map(String::from),
        6 => prop::collection::vec(word(), 1..4).prop_map(|w| w.join(" ")),
        1 => prop::collection::vec(word(), 20..60).prop_map(|w| w.join(" ")),
    ]
}

fn table() -> impl Strategy<Value = Table> {
    let rows = prop_oneof![4 => 1usize..8, 1 => 20usize..120];
    (1usize..6, rows, 0usize..3, prop::option::of(paragraph())).prop_flat_map(
        |(columns, rows, header_rows, caption)| {
            prop::collection::vec(prop::collection::vec(cell(), columns), rows).prop_map(
                move |rows| Table {
                    caption: caption.clone(),
                    header_rows,
                    rows,
                    ..Table::default()
                },
            )
        },
    )
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        2 => (1u8..5, "[A-Z][a-z]{2,8}( [a-z]{2,6}){0,3}")
            .prop_map(|(level, title)| Block::Heading(level, title)),
        6 => paragraph().prop_map(Block::Paragraph),
        2 => (0u8..3, paragraph()).prop_map(|(depth, text)| Block::ListItem(depth, text)),
        1 => "[a-z =();]{1,40}(\n[a-z =();]{0,40}){0,6}".prop_map(Block::Code),
        2 => table().prop_map(Block::Table),
        1 => (0usize..8).prop_map(Block::RepeatTable),
    ]
}

fn document() -> impl Strategy<Value = Vec<Block>> {
    prop::collection::vec(block(), 0..40)
}

fn chunking_spec() -> impl Strategy<Value = ChunkingSpec> {
    let strategy = prop::sample::select(vec![
        ChunkStrategy::Structure,
        ChunkStrategy::Recursive,
        ChunkStrategy::Fixed,
        ChunkStrategy::Semantic,
    ]);
    (
        strategy,
        20u32..200,
        0u32..250,
        0u32..60,
        (1u32..300, 0u32..100),
        (0u32..100, 0.0f64..1.0),
        1u32..50,
        any::<bool>(),
    )
        .prop_map(
            |(
                strategy,
                max,
                min,
                overlap,
                (size, fixed_overlap),
                (merge, jaccard),
                rows,
                prefix,
            )| {
                ChunkingSpec {
                    strategy,
                    min_tokens: min,
                    max_tokens: max,
                    overlap_tokens: overlap,
                    fixed: FixedChunkingSpec {
                        size_tokens: size,
                        overlap_tokens: fixed_overlap,
                    },
                    semantic: SemanticChunkingSpec {
                        min_tokens: min / 4,
                        ..SemanticChunkingSpec::default()
                    },
                    merge_below_tokens: merge,
                    merge_min_jaccard: jaccard,
                    table_max_rows: rows,
                    heading_prefix: prefix,
                    tokenizer: None,
                }
            },
        )
}

/// Words plus line breaks.
struct LineWordCounter;

impl TokenCounter for LineWordCounter {
    fn count(&self, text: &str) -> usize {
        WordCounter.count(text) + text.matches('\n').count()
    }

    fn describe(&self) -> String {
        "words+lines".into()
    }
}

fn build(items: &[Block]) -> Skeleton {
    let mut builder = TreeBuilder::new(Format::Markdown);
    let mut tables: Vec<Table> = Vec::new();
    for block in items {
        match block {
            Block::Heading(level, title) => builder.heading(*level, title),
            Block::Paragraph(text) => builder.paragraph(text),
            Block::ListItem(depth, text) => builder.list_item(*depth, Some("-"), text),
            Block::Code(text) => builder.code(None, text),
            Block::Table(table) => {
                tables.push(table.clone());
                builder.table(table.clone());
            }
            Block::RepeatTable(n) => {
                if let Some(table) = tables.get(n % tables.len().max(1)) {
                    builder.table(table.clone());
                }
            }
        }
    }
    let mut tree = builder.finish();
    tree.render();
    Skeleton::build(
        "random.md",
        tree,
        &Segmenter::default(),
        &SentenceFilter::default(),
    )
}

fn check(skeleton: &Skeleton, spec: &ChunkingSpec, chunks: &[Chunk], counter: &dyn TokenCounter) {
    let max = spec.max_tokens.max(1);
    let mut covered = HashSet::new();
    let mut last_first = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        assert_eq!(chunk.index as usize, i);
        assert_eq!(
            chunk.tokens as usize,
            counter.count(&chunk.text),
            "{chunk:#?}"
        );
        assert!(chunk.tokens <= max, "{} > {max}: {chunk:#?}", chunk.tokens);
        assert!(chunk.overlap_tokens <= chunk.tokens, "{chunk:#?}");
        assert!(
            chunk.sentences.windows(2).all(|w| w[0] < w[1]),
            "sentences out of order: {chunk:#?}"
        );
        match chunk.sentences.first() {
            Some(first) => {
                assert!(first.0 >= last_first, "chunk {i} out of reading order");
                last_first = first.0;
            }
            // Only the header of a table too wide to repeat its header
            // stands for no sentence.
            None => assert_eq!(chunk.kind, ChunkKind::Table, "{chunk:#?}"),
        }
        for id in &chunk.sentences {
            let sentence = &skeleton.sentences[id.index()];
            let in_table = matches!(sentence.source, SourceTag::TableRow);
            match chunk.kind {
                // Table chunks hold table rows and captions only.
                ChunkKind::Table => assert!(
                    in_table || sentence.source == SourceTag::FigureCaption,
                    "{chunk:#?}"
                ),
                ChunkKind::Text => assert!(!in_table, "table row in a text chunk: {chunk:#?}"),
            }
            covered.insert(*id);
        }
        assert!(chunk.span.end() as usize <= skeleton.text.chars().count());
    }
    for sentence in &skeleton.sentences {
        assert!(
            covered.contains(&sentence.id),
            "sentence {} ({:?}) in no chunk",
            sentence.id.0,
            sentence.text
        );
    }
}

/// Chunks `skeleton`; the `semantic` strategy with a topic shift at
/// every third sentence.
fn chunk_skeleton(
    skeleton: &Skeleton,
    spec: &ChunkingSpec,
    counter: &dyn TokenCounter,
) -> Vec<Chunk> {
    let shifts = TopicShifts::at((0..skeleton.sentences.len()).map(|i| i % 3 == 1).collect());
    chunk_at_shifts(skeleton, spec, counter, &shifts)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn chunks_keep_their_invariants(items in document(), spec in chunking_spec()) {
        let skeleton = build(&items);
        let chunks = chunk_skeleton(&skeleton, &spec, &WordCounter);
        check(&skeleton, &spec, &chunks, &WordCounter);
    }

    /// A counter that is not additive over joins (line breaks count) must
    /// not take chunks over the limit either.
    #[test]
    fn non_additive_counters_keep_the_limit(items in document(), spec in chunking_spec()) {
        let skeleton = build(&items);
        let chunks = chunk_skeleton(&skeleton, &spec, &LineWordCounter);
        check(&skeleton, &spec, &chunks, &LineWordCounter);
    }

    #[test]
    fn chunking_is_deterministic(items in document(), spec in chunking_spec()) {
        let skeleton = build(&items);
        let a = chunk_skeleton(&skeleton, &spec, &WordCounter);
        let b = chunk_skeleton(&skeleton, &spec, &WordCounter);
        prop_assert_eq!(
            serde_json::to_string(&a).expect("chunks serialise"),
            serde_json::to_string(&b).expect("chunks serialise")
        );
    }
}

/// Degenerate limits: a zero maximum is treated as one token, overlaps
/// larger than chunks are capped.
#[test]
fn degenerate_limits_do_not_panic() {
    let items = vec![
        Block::Heading(1, "Title here".into()),
        Block::Paragraph("One two three. Four five six seven.".into()),
        Block::ListItem(2, "Nested item text.".into()),
        Block::Table(Table {
            caption: Some("A caption".into()),
            header_rows: 2,
            rows: vec![
                vec!["A".into(), "B".into()],
                vec!["USD m".into(), "%".into()],
                vec!["1".into(), "2".into()],
            ],
            ..Table::default()
        }),
    ];
    let skeleton = build(&items);
    for strategy in [
        ChunkStrategy::Structure,
        ChunkStrategy::Recursive,
        ChunkStrategy::Fixed,
        ChunkStrategy::Semantic,
    ] {
        for max in [0, 1, 2, 3] {
            let spec = ChunkingSpec {
                strategy,
                min_tokens: 0,
                max_tokens: max,
                overlap_tokens: 1000,
                fixed: FixedChunkingSpec {
                    size_tokens: 0,
                    overlap_tokens: 1000,
                },
                table_max_rows: 0,
                ..ChunkingSpec::default()
            };
            let chunks = chunk_skeleton(&skeleton, &spec, &WordCounter);
            check(&skeleton, &spec, &chunks, &WordCounter);
        }
    }
}
