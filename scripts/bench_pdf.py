#!/usr/bin/env python3
"""Trellis' PDF parser beside two Python PDF text extractors, in one run on
the same files and one core: pages per second and the ratios.

    python3 scripts/bench_pdf.py      # sets up target/bench-pdf-venv on first use

The files are the development PDFs: the 20 CUAD contracts
(`cuad/pdf`) and Docling's PDF inputs (`docling/pdf/sources`). Baselines,
pinned:

- pdfminer.six `extract_text` (layout analysis: lines, boxes, reading
  order), the closest in kind to what Trellis does;
- pypdf `extract_text` per page (plain text-layer extraction, no layout).

Each is timed as the fastest of repeated passes over all files after a
warm-up, as `cargo bench --bench pdf -- --json` times Trellis. Docling
publishes 0.6-1.3 pages/s on CPU for its ML pipeline; that figure is
quoted, not run (its models need a hub download).

Writes target/bench/pdf.json and prints the comparison.
"""
import json
import os
import pathlib
import subprocess
import sys

from benchlib import ROOT, ensure_venv, eval_dir, fastest

VENV = pathlib.Path(os.environ.get("TRELLIS_BENCH_PDF_VENV", ROOT / "target" / "bench-pdf-venv"))
PINNED = ["pdfminer.six==20260107", "pypdf==7.1.1"]
MIN_MEASURE = 3.0


def pdfs():
    """The PDFs the Rust bench reads, in the same (sorted) order."""
    root = eval_dir()
    files = []
    for d in [root / "cuad" / "pdf", root / "docling" / "pdf" / "sources"]:
        files += [p for p in d.iterdir() if p.suffix.lower() == ".pdf"]
    return sorted(files)


def main():
    ensure_venv(VENV, PINNED, __file__)
    import logging

    logging.disable(logging.WARNING)
    from pdfminer.high_level import extract_text
    from pdfminer.pdfpage import PDFPage
    from pypdf import PdfReader

    files = pdfs()
    blobs = [p.read_bytes() for p in files]

    def pdfminer_pass():
        import io

        pages = failed = 0
        for blob in blobs:
            try:
                extract_text(io.BytesIO(blob))
                pages += sum(1 for _ in PDFPage.get_pages(io.BytesIO(blob)))
            except Exception:  # a failure counts, as in the Rust bench
                failed += 1
        return pages, failed

    def pypdf_pass():
        import io

        pages = failed = 0
        for blob in blobs:
            try:
                reader = PdfReader(io.BytesIO(blob))
                for page in reader.pages:
                    page.extract_text()
                    pages += 1
            except Exception:
                failed += 1
        return pages, failed

    results = {}
    for name, fn in [("pdfminer.six", pdfminer_pass), ("pypdf", pypdf_pass)]:
        print(f"timing {name}", file=sys.stderr)
        seconds, (pages, failed) = fastest(fn, MIN_MEASURE, 2)
        results[name] = {"pages": pages, "failed": failed, "seconds": seconds,
                         "pages_per_second": pages / seconds}

    print("running cargo bench --bench pdf (builds in release mode on first use)", file=sys.stderr)
    out = subprocess.run(
        ["cargo", "bench", "--quiet", "--bench", "pdf", "--", "--json"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    ours = json.loads(out.strip().splitlines()[-1])
    results["trellis"] = {k: ours[k] for k in ["pages", "failed", "seconds", "pages_per_second"]}

    summary = {"files": len(files), "tools": results,
               "ratios": {name: ours["pages_per_second"] / r["pages_per_second"]
                          for name, r in results.items() if name != "trellis"}}
    out_dir = ROOT / "target" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "pdf.json").write_text(json.dumps(summary, indent=2))
    print(f"{len(files)} PDFs, one core")
    for name, r in results.items():
        print(f"  {name:13} {r['pages_per_second']:8.1f} pages/s "
              f"({r['pages']} pages, {r['failed']} failed, {r['seconds']:.2f} s)")
    for name, ratio in summary["ratios"].items():
        print(f"  trellis / {name}: {ratio:.2f}x")
    print(f"wrote {out_dir / 'pdf.json'}")


if __name__ == "__main__":
    main()
