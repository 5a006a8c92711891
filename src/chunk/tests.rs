//! Behaviour of the strategies, tables and merging on small skeletons.

use super::*;
use crate::parse::{Format, TreeBuilder};

fn skeleton(build: impl FnOnce(&mut TreeBuilder)) -> Skeleton {
    let mut builder = TreeBuilder::new(Format::Markdown);
    build(&mut builder);
    Skeleton::from_builder("test.md", builder)
}

/// A spec with nothing but the limits under test switched on.
fn spec(strategy: ChunkStrategy, max: u32) -> ChunkingSpec {
    ChunkingSpec {
        strategy,
        min_tokens: max,
        max_tokens: max,
        overlap_tokens: 0,
        merge_below_tokens: 0,
        ..ChunkingSpec::default()
    }
}

fn texts(chunks: &[Chunk]) -> Vec<&str> {
    chunks.iter().map(|c| c.text.as_str()).collect()
}

fn ids(chunk: &Chunk) -> Vec<u32> {
    chunk.sentences.iter().map(|s| s.0).collect()
}

/// Every chunk within the limit and counted exactly; every sentence covered.
fn check(skeleton: &Skeleton, chunks: &[Chunk], max: u32, counter: &dyn TokenCounter) {
    for (i, chunk) in chunks.iter().enumerate() {
        assert_eq!(chunk.index as usize, i);
        assert_eq!(
            chunk.tokens as usize,
            counter.count(&chunk.text),
            "{chunk:?}"
        );
        assert!(chunk.tokens <= max, "{chunk:?}");
    }
    for sentence in &skeleton.sentences {
        assert!(
            chunks.iter().any(|c| c.sentences.contains(&sentence.id)),
            "sentence {:?} in no chunk",
            sentence.text
        );
    }
}

/// "A1 a2 a3." for `words("a", 3)`: a sentence of `n` numbered words that
/// starts with a capital, so that the segmenter ends the one before it.
fn words(prefix: &str, n: usize) -> String {
    let words: Vec<String> = (1..=n)
        .map(|i| {
            let word = format!("{prefix}{i}");
            if i == 1 { capitalize(&word) } else { word }
        })
        .collect();
    format!("{}.", words.join(" "))
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[test]
fn structure_lays_out_heading_paragraphs_and_lists() {
    let s = skeleton(|b| {
        b.heading(1, "Part 1");
        b.heading(2, "1.1 Fees");
        b.paragraph("Fees are due monthly. Late fees apply.");
        b.list_item(0, Some("-"), "First item.");
        b.list_item(1, Some("-"), "Nested item.");
        b.paragraph("Closing words here.");
    });
    let chunks = chunk_skeleton(&s, &spec(ChunkStrategy::Structure, 100), &WordCounter);
    assert_eq!(
        texts(&chunks),
        [
            "Part 1 > 1.1 Fees\n\nFees are due monthly. Late fees apply.\n\n- First item.\n  - Nested item.\n\nClosing words here."
        ]
    );
    let chunk = &chunks[0];
    assert_eq!(chunk.heading_path, ["Part 1", "1.1 Fees"]);
    assert_eq!(ids(chunk), [0, 1, 2, 3, 4]);
    let covered = s.span_text(chunk.span);
    assert!(covered.starts_with("Fees are due") && covered.ends_with("words here."));
    check(&s, &chunks, 100, &WordCounter);
}

#[test]
fn structure_closes_at_a_paragraph_boundary_once_min_is_reached() {
    let s = skeleton(|b| {
        for p in ["a", "b", "c", "d"] {
            b.paragraph(&words(p, 4));
        }
    });
    let spec = ChunkingSpec {
        min_tokens: 6,
        ..spec(ChunkStrategy::Structure, 100)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        [
            "A1 a2 a3 a4.\n\nB1 b2 b3 b4.",
            "C1 c2 c3 c4.\n\nD1 d2 d3 d4."
        ]
    );
}

#[test]
fn structure_closes_before_max_at_sentence_boundaries() {
    let s = skeleton(|b| {
        let sentences: Vec<String> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|p| words(p, 3))
            .collect();
        b.paragraph(&sentences.join(" "));
    });
    let chunks = chunk_skeleton(&s, &spec(ChunkStrategy::Structure, 7), &WordCounter);
    assert_eq!(
        texts(&chunks),
        ["A1 a2 a3. B1 b2 b3.", "C1 c2 c3. D1 d2 d3.", "E1 e2 e3."]
    );
    check(&s, &chunks, 7, &WordCounter);
}

#[test]
fn structure_overlap_repeats_trailing_whole_sentences() {
    let s = skeleton(|b| {
        let sentences: Vec<String> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|p| words(p, 3))
            .collect();
        b.paragraph(&sentences.join(" "));
    });
    let spec = ChunkingSpec {
        overlap_tokens: 4,
        ..spec(ChunkStrategy::Structure, 10)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        [
            "A1 a2 a3. B1 b2 b3. C1 c2 c3.",
            "C1 c2 c3. D1 d2 d3. E1 e2 e3."
        ]
    );
    assert_eq!(chunks[1].overlap_tokens, 3);
    assert_eq!(ids(&chunks[1]), [2, 3, 4]);
}

#[test]
fn structure_overlap_takes_last_words_of_a_long_sentence() {
    let s = skeleton(|b| b.paragraph(&format!("{} {}", words("a", 6), words("b", 6))));
    let spec = ChunkingSpec {
        overlap_tokens: 2,
        ..spec(ChunkStrategy::Structure, 8)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        ["A1 a2 a3 a4 a5 a6.", "a5 a6. B1 b2 b3 b4 b5 b6."]
    );
    assert_eq!(chunks[1].overlap_tokens, 2);
    assert_eq!(ids(&chunks[1]), [0, 1]);
}

#[test]
fn structure_hard_splits_only_a_sentence_over_max() {
    let s = skeleton(|b| b.paragraph(&format!("{} Short one here.", words("w", 25))));
    let spec = ChunkingSpec {
        overlap_tokens: 3,
        ..spec(ChunkStrategy::Structure, 10)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        [
            "W1 w2 w3 w4 w5 w6 w7 w8 w9 w10",
            // The overlap does not fit beside a full fragment.
            "w11 w12 w13 w14 w15 w16 w17 w18 w19 w20",
            "w18 w19 w20 w21 w22 w23 w24 w25.",
            "w23 w24 w25. Short one here.",
        ]
    );
    assert!(chunks.iter().take(3).all(|c| ids(c) == [0]));
    assert_eq!(ids(&chunks[3]), [0, 1]);
    check(&s, &chunks, 10, &WordCounter);
}

#[test]
fn structure_overlap_stays_within_a_heading_path() {
    let s = skeleton(|b| {
        b.heading(1, "One");
        b.paragraph(&words("a", 5));
        b.heading(1, "Two");
        b.paragraph(&words("b", 5));
    });
    let spec = ChunkingSpec {
        overlap_tokens: 10,
        ..spec(ChunkStrategy::Structure, 40)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        ["One\n\nA1 a2 a3 a4 a5.", "Two\n\nB1 b2 b3 b4 b5."]
    );
    assert!(chunks.iter().all(|c| c.overlap_tokens == 0));
}

#[test]
fn heading_prefix_is_optional_and_never_crowds_out_content() {
    let s = skeleton(|b| {
        b.heading(1, "A very long heading of many words");
        b.paragraph(&words("a", 3));
    });
    let off = ChunkingSpec {
        heading_prefix: false,
        ..spec(ChunkStrategy::Structure, 40)
    };
    assert_eq!(
        texts(&chunk_skeleton(&s, &off, &WordCounter)),
        ["A1 a2 a3."]
    );
    // Seven words of prefix would take more than half of ten.
    let chunks = chunk_skeleton(&s, &spec(ChunkStrategy::Structure, 10), &WordCounter);
    assert_eq!(texts(&chunks), ["A1 a2 a3."]);
    assert_eq!(
        chunks[0].heading_path,
        ["A very long heading of many words"]
    );
}

#[test]
fn recursive_keeps_paragraphs_whole_when_they_fit() {
    let s = skeleton(|b| {
        b.heading(1, "S");
        for p in ["a", "b", "c"] {
            b.paragraph(&words(p, 4));
        }
    });
    let chunks = chunk_skeleton(&s, &spec(ChunkStrategy::Recursive, 10), &WordCounter);
    assert_eq!(
        texts(&chunks),
        ["S\n\nA1 a2 a3 a4.\n\nB1 b2 b3 b4.", "S\n\nC1 c2 c3 c4."]
    );
    let spec = ChunkingSpec {
        overlap_tokens: 4,
        ..spec(ChunkStrategy::Recursive, 10)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        [
            "S\n\nA1 a2 a3 a4.\n\nB1 b2 b3 b4.",
            "S\n\nB1 b2 b3 b4.\n\nC1 c2 c3 c4."
        ]
    );
    assert_eq!(chunks[1].overlap_tokens, 4);
}

#[test]
fn recursive_splits_long_paragraphs_at_sentences_and_code_at_lines() {
    let s = skeleton(|b| {
        let sentences: Vec<String> = ["a", "b", "c", "d"].iter().map(|p| words(p, 3)).collect();
        b.paragraph(&sentences.join(" "));
        b.code(None, "X1 x2 x3\nY1 y2 y3\n\nZ1 z2 z3\nV1 v2 v3");
    });
    let chunks = chunk_skeleton(&s, &spec(ChunkStrategy::Recursive, 7), &WordCounter);
    assert_eq!(
        texts(&chunks),
        [
            "A1 a2 a3. B1 b2 b3.",
            "C1 c2 c3. D1 d2 d3.",
            "X1 x2 x3\nY1 y2 y3",
            "Z1 z2 z3\nV1 v2 v3"
        ]
    );
    check(&s, &chunks, 7, &WordCounter);
}

#[test]
fn fixed_windows_have_exact_size_and_overlap() {
    let s = skeleton(|b| {
        let sentences: Vec<String> = (0..4)
            .map(|i| {
                let n = 3 * i;
                format!("W{} w{} w{}.", n + 1, n + 2, n + 3)
            })
            .collect();
        b.paragraph(&sentences.join(" "));
    });
    let spec = ChunkingSpec {
        fixed: crate::spec::FixedChunkingSpec {
            size_tokens: 5,
            overlap_tokens: 2,
        },
        ..spec(ChunkStrategy::Fixed, 100)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        [
            "W1 w2 w3. W4 w5",
            "W4 w5 w6. W7 w8",
            "W7 w8 w9. W10 w11",
            "W10 w11 w12."
        ]
    );
    assert_eq!(ids(&chunks[1]), [1, 2]);
    assert_eq!(chunks[1].overlap_tokens, 2);
    assert_eq!(s.span_text(chunks[1].span), "W4 w5 w6. W7 w8");
}

#[test]
fn fixed_windows_stop_at_tables() {
    let s = skeleton(|b| {
        b.heading(1, "Prices");
        b.paragraph(&words("a", 3));
        b.table(Table {
            header_rows: 1,
            rows: vec![vec!["Item".into()], vec!["x".into()]],
            ..Table::default()
        });
        b.paragraph(&words("b", 3));
    });
    let spec = ChunkingSpec {
        fixed: crate::spec::FixedChunkingSpec {
            size_tokens: 50,
            overlap_tokens: 5,
        },
        ..spec(ChunkStrategy::Fixed, 100)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        ["A1 a2 a3.", "Prices\n\n| Item |\n| - |\n| x |", "B1 b2 b3."]
    );
    assert_eq!(chunks[1].kind, ChunkKind::Table);
    assert_eq!(chunks[0].heading_path, ["Prices"]);
}

fn fee_table(rows: usize) -> Table {
    let mut grid = vec![vec!["Item".to_string(), "Fee (USD)".to_string()]];
    grid.extend((1..=rows).map(|i| vec![format!("Item{i}"), format!("{}", i * 100)]));
    Table {
        caption: Some("Table 1: Fees".into()),
        header_rows: 1,
        rows: grid,
        ..Table::default()
    }
}

#[test]
fn tables_render_as_markdown_with_caption_and_prefix() {
    let s = skeleton(|b| {
        b.heading(1, "Fees");
        b.table(fee_table(2));
    });
    for strategy in [
        ChunkStrategy::Structure,
        ChunkStrategy::Recursive,
        ChunkStrategy::Fixed,
    ] {
        let chunks = chunk_skeleton(&s, &spec(strategy, 100), &WordCounter);
        assert_eq!(
            texts(&chunks),
            [
                "Fees\n\nTable 1: Fees\n\n| Item | Fee (USD) |\n| - | - |\n| Item1 | 100 |\n| Item2 | 200 |"
            ]
        );
        assert_eq!(chunks[0].kind, ChunkKind::Table);
        assert_eq!(ids(&chunks[0]), [0, 1, 2]);
        assert!(
            s.span_text(chunks[0].span)
                .starts_with("Table 1: Fees\n\n| Item |")
        );
    }
}

#[test]
fn large_tables_shard_with_the_header_repeated() {
    let s = skeleton(|b| b.table(fee_table(5)));
    let by_rows = ChunkingSpec {
        table_max_rows: 2,
        ..spec(ChunkStrategy::Structure, 100)
    };
    let chunks = chunk_skeleton(&s, &by_rows, &WordCounter);
    assert_eq!(chunks.len(), 3);
    for chunk in &chunks {
        assert!(
            chunk
                .text
                .starts_with("Table 1: Fees\n\n| Item | Fee (USD) |\n| - | - |\n"),
            "{}",
            chunk.text
        );
    }
    assert!(chunks[2].text.ends_with("| - | - |\n| Item5 | 500 |"));
    assert_eq!(ids(&chunks[1]), [0, 3, 4]);
    // The caption repeats; the span covers each shard's own rows.
    assert_eq!(
        s.span_text(chunks[1].span),
        "| Item3 | 300 |\n| Item4 | 400 |"
    );

    // Caption, header and separator: 3 + 6 + 5 tokens; rows 5 each.
    let by_tokens = spec(ChunkStrategy::Structure, 28);
    let chunks = chunk_skeleton(&s, &by_tokens, &WordCounter);
    assert_eq!(chunks.len(), 3);
    check(&s, &chunks, 28, &WordCounter);
    assert!(
        chunks
            .iter()
            .all(|c| c.text.contains("| Item | Fee (USD) |"))
    );
}

#[test]
fn units_rows_stay_in_the_header_of_every_shard() {
    let s = skeleton(|b| {
        b.table(Table {
            header_rows: 1,
            rows: vec![
                vec!["Segment".into(), "Revenue".into(), "Margin".into()],
                vec!["".into(), "USD m".into(), "%".into()],
                vec!["North".into(), "120".into(), "12".into()],
                vec!["South".into(), "80".into(), "9".into()],
            ],
            ..Table::default()
        });
    });
    let spec = ChunkingSpec {
        table_max_rows: 1,
        ..spec(ChunkStrategy::Structure, 100)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        [
            "| Segment | Revenue | Margin |\n|  | USD m | % |\n| - | - | - |\n| North | 120 | 12 |",
            "| Segment | Revenue | Margin |\n|  | USD m | % |\n| - | - | - |\n| South | 80 | 9 |",
        ]
    );
    check(&s, &chunks, 100, &WordCounter);
}

#[test]
fn tables_without_header_rows_keep_their_first_row_on_top() {
    let s = skeleton(|b| {
        b.table(Table {
            header_rows: 0,
            rows: vec![
                vec!["a".into(), "b".into()],
                vec!["c".into(), "d".into()],
                vec!["e".into(), "f".into()],
            ],
            ..Table::default()
        });
    });
    let spec = ChunkingSpec {
        table_max_rows: 1,
        ..spec(ChunkStrategy::Structure, 100)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        [
            "| a | b |\n| - | - |\n| c | d |",
            "| a | b |\n| - | - |\n| e | f |"
        ]
    );
    assert_eq!(ids(&chunks[0]), [0, 1]);
    assert_eq!(ids(&chunks[1]), [0, 2]);
}

#[test]
fn duplicate_tables_are_dropped_and_their_sentences_kept() {
    let s = skeleton(|b| {
        b.heading(1, "Page 1");
        b.table(fee_table(3));
        b.heading(1, "Page 2");
        b.paragraph("Between the copies.");
        let mut copy = fee_table(3);
        copy.rows[1][0] = "ITEM1 ".into();
        b.table(copy);
    });
    let spec = ChunkingSpec {
        table_max_rows: 2,
        ..spec(ChunkStrategy::Structure, 100)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    let tables: Vec<&Chunk> = chunks
        .iter()
        .filter(|c| c.kind == ChunkKind::Table)
        .collect();
    assert_eq!(tables.len(), 2);
    // Sentences: 0 caption, 1–3 rows; 4 text; 5 caption, 6–8 rows again.
    assert_eq!(ids(tables[0]), [0, 1, 2, 5, 6, 7]);
    assert_eq!(ids(tables[1]), [0, 3, 8]);
    check(&s, &chunks, 100, &WordCounter);
}

#[test]
fn tiny_chunks_merge_keeping_each_heading_line() {
    let s = skeleton(|b| {
        b.heading(1, "Intro");
        b.paragraph("Short intro.");
        b.heading(2, "Details");
        b.paragraph(&words("d", 10));
    });
    let spec = ChunkingSpec {
        merge_below_tokens: 5,
        ..spec(ChunkStrategy::Structure, 100)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        ["Intro\n\nShort intro.\n\nIntro > Details\n\nD1 d2 d3 d4 d5 d6 d7 d8 d9 d10."]
    );
    assert_eq!(chunks[0].heading_path, ["Intro"]);
    check(&s, &chunks, 100, &WordCounter);
}

#[test]
fn merging_with_the_same_heading_path_drops_repeated_overlap_and_prefix() {
    let s = skeleton(|b| {
        b.heading(1, "S");
        b.paragraph(&format!("{} {}", words("a", 5), words("b", 5)));
        b.paragraph("Tiny end.");
    });
    let spec = ChunkingSpec {
        min_tokens: 8,
        overlap_tokens: 3,
        merge_below_tokens: 7,
        ..spec(ChunkStrategy::Structure, 30)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        ["S\n\nA1 a2 a3 a4 a5. B1 b2 b3 b4 b5.\n\nTiny end."]
    );
    assert_eq!(chunks[0].tokens, 13);
    assert_eq!(chunks[0].overlap_tokens, 0);
}

#[test]
fn table_chunks_never_merge() {
    let s = skeleton(|b| {
        b.paragraph("Tiny text.");
        b.table(Table {
            header_rows: 1,
            rows: vec![vec!["A".into()], vec!["1".into()]],
            ..Table::default()
        });
        b.paragraph("More tiny text.");
    });
    let spec = ChunkingSpec {
        merge_below_tokens: 50,
        ..spec(ChunkStrategy::Structure, 100)
    };
    let chunks = chunk_skeleton(&s, &spec, &WordCounter);
    assert_eq!(
        texts(&chunks),
        ["Tiny text.\n\nMore tiny text.", "| A |\n| - |\n| 1 |"]
    );
}

/// Words plus line breaks: not additive over paragraph joins.
struct LineWordCounter;

impl TokenCounter for LineWordCounter {
    fn count(&self, text: &str) -> usize {
        text.split_ascii_whitespace().count() + text.matches('\n').count()
    }

    fn describe(&self) -> String {
        "words+lines".into()
    }
}

#[test]
fn non_additive_counters_still_respect_max() {
    let s = skeleton(|b| {
        b.heading(1, "S");
        for p in ["a", "b", "c", "d", "e", "f"] {
            b.list_item(0, None, &words(p, 3));
        }
        b.table(fee_table(6));
    });
    for strategy in [
        ChunkStrategy::Structure,
        ChunkStrategy::Recursive,
        ChunkStrategy::Fixed,
    ] {
        let spec = ChunkingSpec {
            overlap_tokens: 3,
            ..spec(strategy, 12)
        };
        let chunks = chunk_skeleton(&s, &spec, &LineWordCounter);
        check(&s, &chunks, 12, &LineWordCounter);
    }
}

/// `semantic` closes a chunk at a topic shift once it holds
/// `semantic.minTokens`, not before, and never across headings.
#[test]
fn semantic_chunks_close_at_topic_shifts_past_their_minimum() {
    let skeleton = skeleton(|b| {
        b.heading(1, "Notes");
        b.paragraph("One two. Three four. Five six. Seven eight. Nine ten. Eleven twelve.");
        b.heading(1, "More");
        b.paragraph("Alpha beta. Gamma delta.");
    });
    let spec = ChunkingSpec {
        semantic: crate::spec::SemanticChunkingSpec {
            min_tokens: 5,
            ..Default::default()
        },
        heading_prefix: false,
        ..spec(ChunkStrategy::Semantic, 100)
    };
    // Shifts before sentences 1 (under the minimum: no cut), 3 and 7 (the
    // first of the second section: cut by the heading anyway).
    let shifts = TopicShifts::at(
        (0..skeleton.sentences.len())
            .map(|i| [1, 3, 7].contains(&i))
            .collect(),
    );
    let chunks = chunk_at_shifts(&skeleton, &spec, &WordCounter, &shifts);
    check(&skeleton, &chunks, 100, &WordCounter);
    let cut: Vec<Vec<u32>> = chunks.iter().map(ids).collect();
    assert_eq!(cut, vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7]]);
    // Without shifts, one chunk per section, as the limit allows.
    let none = chunk_skeleton(&skeleton, &spec, &WordCounter);
    let cut: Vec<Vec<u32>> = none.iter().map(ids).collect();
    assert_eq!(cut, vec![vec![0, 1, 2, 3, 4, 5], vec![6, 7]]);
}
