#!/usr/bin/env python3
"""Writes the reference vectors the local embedder is checked against.

Runs sentence-transformers (PyTorch) on a model directory and stores a fixed
sample of texts with their normalised embeddings as JSON. Not run by the test
suite (it needs PyTorch); run it again only when the sample changes:

    python3 -m venv /tmp/st && /tmp/st/bin/pip install sentence-transformers
    /tmp/st/bin/python scripts/make_reference_vectors.py \
        ~/.cache/trellis/models/all-MiniLM-L6-v2 \
        tests/fixtures/embeddings/all-MiniLM-L6-v2.json
"""
import json
import sys

from sentence_transformers import SentenceTransformer

TEXTS = [
    "Contoso Ltd. is at P.O. Box 123, FL.",
    "The Supplier shall deliver the Products within thirty (30) days of the Purchase Order.",
    "This Agreement shall be governed by the laws of the State of New York.",
    "Revenue grew 12% to $4.2 billion in FY2024.",
    "Press the reset button for 5 seconds until the LED blinks green.",
    "What is the termination notice period?",
    "a",
    "Table 3: Quarterly results | Q1: 1.2 | Q2: 1.4",
    "Naïve café owners in São Paulo paid €1.000,00 — or so they said…",
    "東京は日本の首都です。",
    "TK-421, why aren't you at your post?",
    "Section 5.1 Payment. Fees are due within 30 days; late payments accrue 1.5% interest per month.",
    "Vitamin D deficiency is associated with increased risk of respiratory infections in adults.",
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy.",
    " ".join(["The indemnifying party shall defend and hold harmless the indemnified party"] * 40),
    "   leading and trailing spaces   ",
    "UPPER CASE HEADING: LIMITATION OF LIABILITY",
    "x = 3.14159; y = 2.71828; z = x * y",
    "e.g. the U.S. Food and Drug Administration (FDA) approved it in Jan. 2020.",
    "😀 emoji and symbols ©®™ are part of real text too.",
]


def main() -> None:
    model_dir, out = sys.argv[1], sys.argv[2]
    model = SentenceTransformer(model_dir, device="cpu")
    vectors = model.encode(TEXTS, normalize_embeddings=True, batch_size=8)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(
            {
                "model": model_dir.rstrip("/").split("/")[-1],
                "max_seq_length": model.max_seq_length,
                "texts": TEXTS,
                "vectors": [[round(float(x), 7) for x in v] for v in vectors],
            },
            f,
            ensure_ascii=False,
        )
        f.write("\n")


if __name__ == "__main__":
    main()
