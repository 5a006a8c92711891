#!/usr/bin/env python3
"""CUAD figures by category, from `trellis eval --dataset cuad:DIR --per-query FILE`.

Prints Recall@10, hit@10 and MRR@10 (and Recall@10 over all contracts)
per category, over every judged query,
and over the queries without the "Document Name" and "Parties" categories:
the evaluation README's peers report 230 queries on the 20 contracts, which
is what remains without those two (20 queries each, one empty).

usage: scripts/cuad_categories.py PER_QUERY.jsonl
"""

import collections
import json
import sys

WITHOUT = {"Document Name", "Parties"}


def metrics(rows):
    n = len(rows)
    recall = sum(r["found"] / r["relevant"] for r in rows) / n
    hit = sum(1 for r in rows if r["found"] > 0) / n
    mrr = sum(1 / r["first"] for r in rows if r["first"]) / n
    line = f"{n:3d} q  R@10 {recall:.3f}  hit@10 {hit:.3f}  MRR@10 {mrr:.3f}"
    if all("found_unfiltered" in r for r in rows):
        everywhere = sum(r["found_unfiltered"] / r["relevant"] for r in rows) / n
        line += f"  all-contracts R@10 {everywhere:.3f}"
    return line


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
    by_category = collections.defaultdict(list)
    for r in rows:
        by_category[r["id"].rsplit("#", 1)[-1]].append(r)
    for category, group in sorted(by_category.items(), key=lambda kv: -len(kv[1])):
        print(f"{metrics(group)}  {category}")
    print()
    print(f"{metrics(rows)}  all categories")
    rest = [r for r in rows if r["id"].rsplit("#", 1)[-1] not in WITHOUT]
    print(f"{metrics(rest)}  without {' and '.join(sorted(WITHOUT))}")


if __name__ == "__main__":
    main()
