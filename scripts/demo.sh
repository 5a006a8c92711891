#!/usr/bin/env bash
# The main job on the embedded default: fetch what it needs, build Trellis,
# and run the bundled example corpus (a contract, a manual, an annual report
# and a DOCX addendum) through parse → sentence skeleton → chunks with
# enrichment, using examples/profile.yaml.
#
#   scripts/demo.sh
#
# Output: target/demo/chunks.jsonl (one JSON object per chunk) and a summary.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/fetch-model.sh >/dev/null
cargo build --release --locked --quiet

mkdir -p target/demo
./target/release/trellis chunk examples/corpus -f examples/profile.yaml --out target/demo/chunks.jsonl

python3 - target/demo/chunks.jsonl <<'PY'
import json, sys
chunks = [json.loads(line) for line in open(sys.argv[1])]
print(f"\n{len(chunks)} chunks written to {sys.argv[1]}\n")
for c in chunks:
    path = " > ".join(c["heading_path"]) or "(document start)"
    meta = {k: v for k, v in c["metadata"].items() if v}
    print(f"[{c['source'].split('/')[-1]} #{c['index']}] {c['kind']}, {c['tokens']} tokens, "
          f"{len(c['sentence_ids'])} sentences — {path}")
    if meta:
        print(f"    metadata: {json.dumps(meta, ensure_ascii=False)[:300]}")
PY

echo
echo "Sentences of the contract's payment clause, as the skeleton sees them:"
sed -n '/^3.1 /,/^3.3 /p' examples/corpus/master-services-agreement.txt | ./target/release/trellis segment
