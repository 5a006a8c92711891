#!/usr/bin/env python3
"""Writes the reference vectors of sentences embedded in context.

`embedding.context: paragraph` encodes a paragraph once and makes each
sentence's vector the mean of the sentence's own tokens' last hidden states
("late chunking"); the paragraph's opening [CLS] goes with its first sentence
and its closing [SEP] with its last, so that a paragraph of one sentence
embeds as that sentence does. This script computes the same with PyTorch and
`transformers` from a model directory, for passages short enough to be one
window, and stores passages, sentence byte ranges and normalised vectors as
JSON. Not run by the test suite; run it again only when the sample changes:

    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch transformers
    /tmp/tv/bin/python scripts/make_context_reference.py \
        ~/.cache/trellis/models/all-MiniLM-L6-v2 \
        tests/fixtures/embeddings/all-MiniLM-L6-v2-context.json
"""
import json
import sys

import torch
from transformers import AutoModel, AutoTokenizer

# Each passage is its sentences joined by one space, as ingest joins them.
PASSAGES = [
    [
        "In 1066, Duke William II of Normandy conquered England killing King Harold II at the Battle of Hastings.",
        "The invading Normans and their descendants replaced the Anglo-Saxons as the ruling class of England.",
        "They considered England to be their most important holding.",
    ],
    [
        "This Agreement shall be governed by the laws of the State of California.",
        "It does so exclusive of its conflict of laws principles.",
    ],
    ["A Turing machine is a mathematical model of a general computing machine."],
    [
        "Naïve café owners in São Paulo paid €1.000,00 — or so they said…",
        "東京は日本の首都です。",
        "Revenue grew 12% to $4.2 billion in FY2024.",
    ],
]


def main(model_dir: str, out_path: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    cases = []
    for sentences in PASSAGES:
        text = " ".join(sentences)
        spans = []  # character ranges
        start = 0
        for sentence in sentences:
            spans.append((start, start + len(sentence)))
            start += len(sentence) + 1
        encoded = tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
        offsets = encoded.pop("offset_mapping")[0].tolist()
        with torch.no_grad():
            states = model(**encoded).last_hidden_state[0]
        n = states.shape[0]
        vectors = []
        for i, (a, b) in enumerate(spans):
            # Content tokens are 1..n-1; a token belongs to the span its
            # first character falls in.
            rows = [t for t in range(1, n - 1) if a <= offsets[t][0] < b]
            if i == 0:
                rows = [0] + rows
            if i == len(spans) - 1:
                rows = rows + [n - 1]
            v = states[rows].mean(dim=0)
            v = v / v.norm()
            vectors.append(v.tolist())
        byte_spans = [
            [len(text[:a].encode()), len(text[:b].encode())] for a, b in spans
        ]
        cases.append({"text": text, "spans": byte_spans, "vectors": vectors})
    with open(out_path, "w") as f:
        json.dump({"model": model_dir.rstrip("/").split("/")[-1], "passages": cases}, f)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
