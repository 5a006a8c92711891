#!/usr/bin/env python3
"""Trellis' local embedder beside sentence-transformers, in one run on the
same sentences, model directory and cores: throughput ratio and cosine
agreement of the vectors.

    python3 scripts/bench_embed.py          # sets up target/bench-embed-venv on first use
    python3 scripts/bench_embed.py --n 500

The baseline is sentence-transformers (PyTorch, CPU) encoding the first N
(default 2,000) SciFact sentences with batch size 32, normalised, after a
warm-up; Trellis' figure comes from `cargo bench --bench embed -- --json`
on the same sentences. The model directory is the one scripts/fetch-model.sh
provides. Installing PyTorch from PyPI takes several GB; point
TRELLIS_BENCH_EMBED_VENV at an existing environment that has
sentence-transformers to skip that.

Writes target/bench/embed.json and prints the comparison.
"""
import json
import os
import pathlib
import subprocess
import sys
import time

from benchlib import ROOT, ensure_venv, eval_dir

VENV = pathlib.Path(
    os.environ.get("TRELLIS_BENCH_EMBED_VENV", ROOT / "target" / "bench-embed-venv")
)
PINNED = ["sentence-transformers==6.2.0"]


def sentences(n):
    """The first n sentences of the SciFact corpus, in file order (as the
    Rust bench reads them)."""
    out = []
    with open(eval_dir() / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            for s in json.loads(line)["sentences"]:
                out.append(s)
                if len(out) == n:
                    return out
    return out


def main():
    ensure_venv(VENV, PINNED, __file__)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    n = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 2000
    model_dir = subprocess.run(
        [str(ROOT / "scripts" / "fetch-model.sh")], check=True, capture_output=True, text=True
    ).stdout.strip()
    texts = sentences(n)

    model = SentenceTransformer(model_dir, device="cpu")
    model.encode(texts[:64], batch_size=32)
    started = time.perf_counter()
    theirs = model.encode(texts, batch_size=32, normalize_embeddings=True)
    st_seconds = time.perf_counter() - started
    st_rate = len(texts) / st_seconds

    print("running cargo bench --bench embed (builds in release mode on first use)", file=sys.stderr)
    out = subprocess.run(
        ["cargo", "bench", "--quiet", "--bench", "embed", "--", "--json", "--n", str(n)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    ours = json.loads(out.strip().splitlines()[-1])
    vectors = np.asarray(ours["vectors"], dtype=np.float32)
    cosines = (vectors * theirs).sum(axis=1)

    summary = {
        "sentences": len(texts),
        "threads": {"torch": torch.get_num_threads(), "trellis": ours["threads"]},
        "sentence_transformers": {"seconds": st_seconds, "sentences_per_second": st_rate},
        "trellis": {"seconds": ours["seconds"], "sentences_per_second": ours["sentences_per_second"]},
        "ratio": ours["sentences_per_second"] / st_rate,
        "cosine": {"min": float(cosines.min()), "mean": float(cosines.mean())},
    }
    out_dir = ROOT / "target" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "embed.json").write_text(json.dumps(summary, indent=2))
    print(f"{len(texts)} SciFact sentences, all-MiniLM-L6-v2")
    print(f"  sentence-transformers {st_rate:8.1f} sentences/s ({torch.get_num_threads()} threads)")
    print(f"  trellis               {ours['sentences_per_second']:8.1f} sentences/s ({ours['threads']} threads)")
    print(f"  ratio {summary['ratio']:.2f}x, cosine min {cosines.min():.6f} mean {cosines.mean():.6f}")
    print(f"wrote {out_dir / 'embed.json'}")


if __name__ == "__main__":
    main()
