#!/usr/bin/env bash
# The main job on the embedded default: fetch the model, build Trellis,
# ingest the quickstart corpus (real public contracts and Wikipedia
# articles, examples/quickstart/) into a versioned local index and answer the
# example questions with its RetrievalRoute: the results, then the answer
# written from them with its numbered sources (the route's generation
# stage; extractive, so no model service is needed).
#
#   scripts/demo.sh
#
# Data (indexes, embedding cache) goes to target/demo/data; a second run
# finds the index version already built and reuses it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/fetch-model.sh >/dev/null
cargo build --release --locked --quiet

DATA=target/demo/data
MANIFESTS=examples/quickstart/trellis.yaml
./target/release/trellis ingest -f "$MANIFESTS" --data-dir "$DATA"

while IFS= read -r question; do
  [[ -z "$question" ]] && continue
  echo
  echo "Q: $question"
  ./target/release/trellis query -f "$MANIFESTS" --data-dir "$DATA" "$question"
  echo "Answer:"
  ./target/release/trellis answer -f "$MANIFESTS" --data-dir "$DATA" "$question"
done < examples/quickstart/queries.txt
