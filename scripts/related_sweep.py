#!/usr/bin/env python3
"""The RELATED_TO threshold sweep: edges and their effect on retrieval.

For each threshold, builds the dataset's index with
`semanticLinks.threshold` set to it (the embedding cache makes every build
after the first re-use the vectors) and evaluates the default full-mode
route; one more row evaluates the default index with `expansion.related:
false`, the same route with no RELATED_TO hop. Prints one table row per
setting: edges, edges per indexed sentence, whether the build stayed within
its `2 × sentences` bound, seconds spent linking, and the metrics.

usage: scripts/related_sweep.py DATASET DATA_DIR [THRESHOLD ...]
  DATASET    as `trellis eval --dataset` takes it (beir:DIR, squad:FILE, cuad:DIR)
  DATA_DIR   the evaluation's data directory
  THRESHOLD  default 0.80 0.85 0.90 0.95

The trellis binary is $TRELLIS (default: `trellis` on the PATH).
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MANIFEST = """apiVersion: trellis.dev/v1alpha1
kind: IndexProfile
metadata: {{name: sweep}}
spec:
  semanticLinks: {{threshold: {threshold}}}
---
apiVersion: trellis.dev/v1alpha1
kind: RetrievalRoute
metadata: {{name: sweep}}
spec:
  corpusRef: {{name: evaluation}}
  expansion: {{related: {related}}}
"""


def evaluate(trellis, dataset, data_dir, threshold, related):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(MANIFEST.format(threshold=threshold, related=str(related).lower()))
        manifest = f.name
    try:
        out = subprocess.run(
            [trellis, "eval", "--dataset", dataset, "--data-dir", data_dir, "-f", manifest, "--json"],
            check=True,
            stdout=subprocess.PIPE,
        ).stdout
    finally:
        os.unlink(manifest)
    report = json.loads(out)
    version = report["index_version"]
    found = list(Path(data_dir, "indexes").glob(f"*/{version}/manifest.json"))
    if len(found) != 1:
        sys.exit(f"index version {version}: {len(found)} manifests under {data_dir}/indexes")
    return report, json.loads(found[0].read_text())


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    dataset, data_dir = sys.argv[1], sys.argv[2]
    thresholds = [float(t) for t in sys.argv[3:]] or [0.80, 0.85, 0.90, 0.95]
    trellis = os.environ.get("TRELLIS", "trellis")
    rows = [(f"{t:.2f}", t, True) for t in thresholds] + [("0.90, not followed", 0.90, False)]
    print(
        "| threshold | edges | per sentence | linked at | links s "
        "| doc nDCG@10 | sent R@1 | sent R@10 | sent MRR@10 | coverage@10 |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for label, threshold, related in rows:
        report, manifest = evaluate(trellis, dataset, data_dir, threshold, related)
        counts = manifest["counts"]
        edges = counts["related_edges"]
        per = edges / max(counts["indexed_sentences"], 1)
        doc = report.get("document") or {}
        sent = report.get("sentence") or {}
        sections = report.get("sections") or {}

        def fmt(metrics, key):
            return f"{metrics[key]:.4f}" if key in metrics else "–"

        print(
            f"| {label} | {edges} | {per:.3f} | {manifest['links']['threshold']:.2f} "
            f"| {manifest['timings']['links']:.1f} | {fmt(doc, 'ndcg@10')} | {fmt(sent, 'recall@1')} "
            f"| {fmt(sent, 'recall@10')} | {fmt(sent, 'mrr')} | {fmt(sections, 'coverage@10')} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
