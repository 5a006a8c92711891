//! Chunk sizes counted with the real all-MiniLM-L6-v2 tokenizer (WordPiece
//! tokens, not words) stay within the limit on real contracts, for every
//! strategy. The model directory comes from `scripts/fetch-model.sh`.

use crate::common;

use std::collections::BTreeSet;

use trellis::chunk::tokens::load_counter;
use trellis::pipeline::Pipeline;
use trellis::spec::{ChunkStrategy, ChunkingSpec, IndexProfileSpec};

#[test]
fn wordpiece_counted_chunks_respect_max_tokens() {
    let counter = load_counter(Some("all-MiniLM-L6-v2"), None)
        .unwrap_or_else(|e| panic!("{e}; run scripts/fetch-model.sh first"));
    assert!(counter.describe().starts_with("tokenizer:"));

    let contracts = common::eval_dir().join("cuad/contracts");
    let mut paths: Vec<_> = std::fs::read_dir(&contracts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();

    for strategy in [
        ChunkStrategy::Structure,
        ChunkStrategy::Recursive,
        ChunkStrategy::Fixed,
    ] {
        let spec = IndexProfileSpec {
            chunking: ChunkingSpec {
                strategy,
                min_tokens: 96,
                max_tokens: 128,
                tokenizer: Some("all-MiniLM-L6-v2".into()),
                ..ChunkingSpec::default()
            },
            ..IndexProfileSpec::default()
        };
        let pipeline = Pipeline::new(&spec, None).unwrap();
        for path in paths.iter().take(2) {
            let key = path.display().to_string();
            let document = pipeline.process_file(path, &key).unwrap();
            let mut covered = BTreeSet::new();
            for chunk in &document.chunks {
                assert!(
                    chunk.tokens <= 128,
                    "{strategy:?} {key}: chunk {} has {} tokens",
                    chunk.index,
                    chunk.tokens
                );
                assert_eq!(chunk.tokens as usize, counter.count(&chunk.text));
                covered.extend(chunk.sentences.iter().copied());
            }
            assert_eq!(
                covered.len(),
                document.skeleton.sentences.len(),
                "{strategy:?} {key}: every sentence lands in a chunk"
            );
        }
    }
}
