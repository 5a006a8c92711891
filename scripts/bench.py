#!/usr/bin/env python3
"""Trellis' parse + segment + chunk throughput beside the Python baselines,
in one run on the same texts, with the ratios.

    python3 scripts/bench.py            # sets up target/bench-venv on first use

Baselines (pinned versions, installed from PyPI into a private venv):
  * LangChain RecursiveCharacterTextSplitter(chunk_size=2000, chunk_overlap=200)
  * chonkie RecursiveChunker() with its defaults
  * pySBD Segmenter(language="en", clean=False), also scored on the Golden
    Rules beside Trellis' segmenter.

Texts: SQuAD v1.1 dev part 1, each article's contexts joined by blank lines,
plus Docling's Markdown inputs ("squad_text+md", 0.79 MB); Docling's HTML
inputs separately. pySBD gets the SQuAD contexts one by one, as Trellis'
segmenter does. Trellis' own figures come from `cargo bench --bench pipeline
-- --json` (single thread, fastest of repeated passes, as here).

Writes target/bench/pipeline.json and prints a table.
"""
import glob
import json
import os
import pathlib
import subprocess
import sys
import time

import benchlib
from benchlib import ROOT, ensure_venv, eval_dir

VENV = pathlib.Path(os.environ.get("TRELLIS_BENCH_VENV", ROOT / "target" / "bench-venv"))
PINNED = ["pysbd==0.3.4", "chonkie==1.7.0", "langchain-text-splitters==1.1.3"]
MIN_SECONDS = 2.0


def fastest(work):
    """Runs work() for at least MIN_SECONDS (three passes at least); best time."""
    return benchlib.fastest(work, MIN_SECONDS, 3)


def main():
    ensure_venv(VENV, PINNED, __file__)
    import pysbd
    from chonkie import RecursiveChunker
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    ev = eval_dir()
    squad = json.load(open(ev / "squad" / "dev-v1.1-part1.json"))
    articles = ["\n\n".join(p["context"] for p in a["paragraphs"]) for a in squad["data"]]
    contexts = [p["context"] for a in squad["data"] for p in a["paragraphs"]]
    md = [open(f, encoding="utf-8").read() for f in sorted(glob.glob(str(ev / "docling/md/sources/*.md")))]
    html = [open(f, encoding="utf-8", errors="replace").read()
            for f in sorted(glob.glob(str(ev / "docling/html/sources/*.html")))]
    corpora = {"squad_text+md": articles + md, "docling_html": html}

    langchain = RecursiveCharacterTextSplitter(chunk_size=2000, chunk_overlap=200)
    chonkie = RecursiveChunker()
    results = []

    def record(tool, corpus, nbytes, seconds, units):
        results.append({"tool": tool, "corpus": corpus, "bytes": nbytes, "seconds": seconds,
                         "mb_per_s": nbytes / 1e6 / seconds, **units})

    for name, texts in corpora.items():
        nbytes = sum(len(t.encode()) for t in texts)
        t, n = fastest(lambda: sum(len(langchain.split_text(x)) for x in texts))
        record("langchain_recursive", name, nbytes, t, {"chunks": n})
        t, n = fastest(lambda: sum(len(chonkie.chunk(x)) for x in texts))
        record("chonkie_recursive", name, nbytes, t, {"chunks": n})

    segmenter = pysbd.Segmenter(language="en", clean=False)
    nbytes = sum(len(c.encode()) for c in contexts)
    t = time.perf_counter()
    n = sum(len(segmenter.segment(c)) for c in contexts)  # one pass: pySBD is slow
    record("pysbd", "squad_contexts", nbytes, time.perf_counter() - t, {"sentences": n})

    golden = json.load(open(ev / "sentences" / "golden_rules_en.json"))
    pysbd_ok = sum(1 for case in golden
                   if [s.strip() for s in segmenter.segment(case["text"])] == case["sentences"])

    print("running cargo bench --bench pipeline (builds in release mode on first use)", file=sys.stderr)
    out = subprocess.run(["cargo", "bench", "--quiet", "--bench", "pipeline", "--", "--json"],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            row["tool"] = "trellis " + row.pop("bench")
            results.append(row)
    ours_golden = subprocess.run(["cargo", "test", "--quiet", "--release", "--test", "it", "golden_rules::",
                                  "--", "--nocapture"], cwd=ROOT, capture_output=True, text=True)
    golden_line = next((l for l in ours_golden.stdout.splitlines() if "golden rules" in l.lower()), "")

    def find(tool, corpus):
        return next(r for r in results if r["tool"] == tool and r["corpus"] == corpus)

    print(f"\n{'tool':<40} {'corpus':<16} {'MB/s':>9}")
    for r in results:
        print(f"{r['tool']:<40} {r['corpus']:<16} {r['mb_per_s']:>9.2f}")
    print("\nratios (same run, same texts):")
    for corpus in corpora:
        ours = find("trellis parse+segment+chunk", corpus)["mb_per_s"]
        for tool in ["chonkie_recursive", "langchain_recursive"]:
            print(f"  trellis parse+segment+chunk / {tool:<20} on {corpus:<14}: "
                  f"{ours / find(tool, corpus)['mb_per_s']:.2f}x")
    seg = find("trellis segment", "squad_contexts")["mb_per_s"]
    sbd = find("pysbd", "squad_contexts")["mb_per_s"]
    print(f"  trellis segment / pysbd on squad_contexts: {seg / sbd:,.0f}x")
    print(f"\ngolden rules: pySBD {pysbd_ok}/{len(golden)} = {pysbd_ok / len(golden):.3f}; "
          f"trellis: {golden_line.strip() or 'see cargo test --test it golden_rules::'}")

    out_dir = ROOT / "target" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = {"results": results, "golden_rules": {"pysbd_correct": pysbd_ok, "cases": len(golden),
                                                    "trellis": golden_line.strip()}}
    (out_dir / "pipeline.json").write_text(json.dumps(summary, indent=2))
    print(f"\nwrote {out_dir / 'pipeline.json'}")


if __name__ == "__main__":
    main()
