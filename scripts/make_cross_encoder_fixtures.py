#!/usr/bin/env python3
"""Writes the small cross-encoder fixtures the local reranker is checked against.

No reranker weights can be downloaded where Trellis is built, so the local
cross-encoder's forward pass is proven on two small, randomly initialised
models made here with `transformers` (PyTorch): a
`BertForSequenceClassification` with one label (the ms-marco-MiniLM shape)
and an `XLMRobertaForSequenceClassification` with two (the shape of
bge-reranker-base's family: position ids offset by the padding id, no token
types, a dense-tanh-projection head). Each gets a small WordPiece tokenizer
trained on the sample below, and `reference.json` holds query/passage pairs
with the token ids and the logits PyTorch computes for them. The weights are
drawn wider than a fresh checkpoint's (std 0.02) so that the logits spread
and a wrong step cannot hide under the 1e-4 tolerance.

Not run by the test suite (it needs PyTorch); run it again only when the
sample changes:

    python3 -m venv /tmp/ce && /tmp/ce/bin/pip install torch transformers
    /tmp/ce/bin/python scripts/make_cross_encoder_fixtures.py tests/fixtures/cross-encoders
"""
import json
import os
import sys

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    XLMRobertaConfig,
    XLMRobertaForSequenceClassification,
)

SAMPLE = [
    "This Agreement shall be governed by the laws of the State of New York.",
    "The Supplier shall deliver the Products within thirty (30) days of the Purchase Order.",
    "Either party may terminate this Agreement upon ninety days written notice.",
    "The Normans were the people who gave their name to Normandy, a region in France.",
    "William the Conqueror led the Norman conquest of England in 1066.",
    "Vitamin D deficiency is associated with increased risk of respiratory infections.",
    "Revenue grew 12% to $4.2 billion in fiscal 2024, driven by cloud services.",
    "Press the reset button for 5 seconds until the LED blinks green.",
    "Fees are due within 30 days; late payments accrue interest per month.",
    "The hosting agreement names the courts of Delaware for any dispute.",
]

PAIRS = [
    ("Which law governs the agreement?", SAMPLE[0]),
    ("Which law governs the agreement?", SAMPLE[3]),
    ("Who conquered England?", SAMPLE[4]),
    ("Who conquered England?", SAMPLE[6]),
    ("How long is the notice period?", SAMPLE[2]),
    ("vitamin d infections", SAMPLE[5]),
    # The passage is cut, the query kept: longer than max_length together.
    ("When are fees due?", " ".join(SAMPLE)),
    ("", "An empty query still makes a pair."),
    ("Naïve café owners?", "Unknown wörds map to the unknown token ✓."),
]

MAX_LENGTH = 48


def wordpiece(specials, template):
    tokenizer = Tokenizer(models.WordPiece(unk_token=specials["unk"]))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=300, special_tokens=list(specials.values()), min_frequency=1
    )
    tokenizer.train_from_iterator(SAMPLE + [q for q, _ in PAIRS], trainer)
    tokenizer.post_processor = template(tokenizer)
    tokenizer.enable_truncation(MAX_LENGTH, strategy="only_second")
    return tokenizer


def bert_tokenizer():
    specials = {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]"}

    def template(t):
        return processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[(s, t.token_to_id(s)) for s in ("[CLS]", "[SEP]")],
        )

    return wordpiece(specials, template)


def roberta_tokenizer():
    # The XLM-R id layout: <s> 0, <pad> 1, </s> 2, <unk> 3.
    specials = {"cls": "<s>", "pad": "<pad>", "sep": "</s>", "unk": "<unk>"}

    def template(t):
        return processors.RobertaProcessing(
            ("</s>", t.token_to_id("</s>")), ("<s>", t.token_to_id("<s>"))
        )

    return wordpiece(specials, template)


def widen(model):
    """Draws every weight wider than a fresh checkpoint's."""
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=generator))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=generator))


def write(out_dir, model, tokenizer):
    os.makedirs(out_dir, exist_ok=True)
    model.eval()
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save(os.path.join(out_dir, "tokenizer.json"))
    cases = []
    for query, passage in PAIRS:
        encoding = tokenizer.encode(query, passage)
        ids = torch.tensor([encoding.ids])
        types = torch.tensor([encoding.type_ids])
        with torch.no_grad():
            logits = model(input_ids=ids, token_type_ids=types).logits[0].tolist()
        cases.append(
            {
                "query": query,
                "passage": passage,
                "input_ids": encoding.ids,
                "token_type_ids": encoding.type_ids,
                "logits": logits,
            }
        )
    with open(os.path.join(out_dir, "reference.json"), "w", encoding="utf-8") as f:
        json.dump({"max_length": MAX_LENGTH, "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main() -> None:
    out = sys.argv[1]
    torch.manual_seed(0)

    tokenizer = bert_tokenizer()
    config = BertConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=1,
    )
    model = BertForSequenceClassification(config)
    widen(model)
    write(os.path.join(out, "bert"), model, tokenizer)

    tokenizer = roberta_tokenizer()
    config = XLMRobertaConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        # Positions start after the padding id (1), as in XLM-R.
        max_position_embeddings=64 + 2,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        num_labels=2,
    )
    model = XLMRobertaForSequenceClassification(config)
    widen(model)
    write(os.path.join(out, "xlm-roberta"), model, tokenizer)


if __name__ == "__main__":
    main()
