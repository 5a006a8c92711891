#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, then every unit,
# integration and property test. Fetches what the tests need (the
# all-MiniLM-L6-v2 tokenizer, for token-counted chunking) on first use.
#
#   scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/fetch-model.sh >/dev/null

cargo fmt --all -- --check
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked --lib --bins --tests
cargo test --locked --doc
