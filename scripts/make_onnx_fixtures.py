#!/usr/bin/env python3
"""Writes the ONNX fixtures the encoder's ONNX loader is checked against.

No ONNX model but bge-small can be fetched where Trellis is built, so the
loader is proven on small, randomly initialised models exported here with
`torch.onnx` (the TorchScript exporter, whose output Xenova and Optimum
publish: named biases, anonymous transposed `onnx::MatMul_*` weights), in
Xenova's layout (`config.json`, `tokenizer.json`, `onnx/model.onnx`):

- `bert-embedder/`: a `BertModel` (hidden 32, 2 layers, 4 heads);
  `reference.json` holds texts, their token ids and the last hidden state
  onnxruntime computes for each.
- `bert-cross-encoder/`, `xlm-roberta-cross-encoder/`: the two
  sequence-classification fixtures of `tests/fixtures/cross-encoders/`
  (made by `scripts/make_cross_encoder_fixtures.py`) exported as they are;
  `reference.json` holds their pairs with the logits onnxruntime computes.
- `bert-embedder-quantized/`: the embedder through onnxruntime's dynamic
  quantization (`MatMulInteger` nodes), which the loader must refuse.

With `--bge DIR` (the directory `scripts/fetch-model.sh bge-small-en-v1.5`
makes), it also writes `embeddings/bge-small-en-v1.5-onnxruntime.json`:
the texts of `embeddings/all-MiniLM-L6-v2.json` with the `[CLS]` state
onnxruntime computes for each (bge pools that token).

Not run by the test suite (it needs PyTorch and onnxruntime); run it again
only when the fixtures change:

    python3 -m venv /tmp/ox && /tmp/ox/bin/pip install torch transformers onnx onnxruntime
    /tmp/ox/bin/python scripts/make_onnx_fixtures.py tests/fixtures \
        --bge ~/.cache/trellis/models/bge-small-en-v1.5
"""
import json
import os
import shutil
import sys

import numpy as np
import onnxruntime
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from tokenizers import Tokenizer
from transformers import AutoModelForSequenceClassification, BertConfig, BertModel

# The cross-encoder fixtures' way of drawing weights wide, so that a wrong
# step cannot hide under the tolerance.
from make_cross_encoder_fixtures import widen

TEXTS = [
    "This Agreement shall be governed by the laws of the State of New York.",
    "Who conquered England?",
    "Fees are due within 30 days; late payments accrue interest per month.",
    "a",
    "Naïve café owners?",
    # Longer than the 48-token limit: cut by the tokenizer.
    " ".join(["The Supplier shall deliver the Products within thirty (30) days."] * 6),
]


def export(model, path, inputs, outputs):
    """Exports `model` with the TorchScript exporter. The model's forward is
    swapped for one taking its inputs by position and returning one
    tensor (transformers' own wrappers do not trace); the module, and so
    every parameter's name, stays the model's."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    names = list(inputs)
    base = model.__class__
    field = outputs[0]

    def forward(self, *args):
        return getattr(base.forward(self, **dict(zip(names, args))), field)

    model.__class__ = type("Traced" + base.__name__, (base,), {"forward": forward})
    dynamic = {name: {0: "batch", 1: "sequence"} for name in names}
    for name in outputs:
        dynamic[name] = {0: "batch"}
    torch.onnx.export(
        model,
        tuple(inputs[n] for n in names),
        path,
        input_names=names,
        output_names=outputs,
        dynamic_axes=dynamic,
        opset_version=14,
        do_constant_folding=True,
        dynamo=False,
    )


def run(session, ids, types=None):
    """onnxruntime's first output for one sequence of token ids (a list),
    all attended, token types 0 unless given."""
    ids = np.array([ids], dtype=np.int64)
    feeds = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "token_type_ids": np.zeros_like(ids) if types is None else np.array([types], dtype=np.int64),
    }
    wanted = {i.name for i in session.get_inputs()}
    return session.run(None, {k: v for k, v in feeds.items() if k in wanted})[0]


def embedder(fixtures):
    out = os.path.join(fixtures, "onnx", "bert-embedder")
    source = os.path.join(fixtures, "cross-encoders", "bert")
    tokenizer = Tokenizer.from_file(os.path.join(source, "tokenizer.json"))
    tokenizer.enable_truncation(48)
    config = BertConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = BertModel(config, add_pooling_layer=False)
    widen(model)
    # Two equal parameters are stored once, the other reached through an
    # Identity node named after it, as in exports of fresh checkpoints
    # (zero biases): the loader must follow it.
    with torch.no_grad():
        layers = model.encoder.layer
        layers[1].attention.output.dense.bias.copy_(layers[0].attention.output.dense.bias)
    model.eval()
    os.makedirs(out, exist_ok=True)
    config.save_pretrained(out)
    shutil.copy(os.path.join(source, "tokenizer.json"), os.path.join(out, "tokenizer.json"))
    sample = torch.tensor([tokenizer.encode(TEXTS[0]).ids])
    onnx_path = os.path.join(out, "onnx", "model.onnx")
    export(
        model,
        onnx_path,
        {
            "input_ids": sample,
            "attention_mask": torch.ones_like(sample),
            "token_type_ids": torch.zeros_like(sample),
        },
        ["last_hidden_state"],
    )
    session = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    cases = []
    for text in TEXTS:
        ids = tokenizer.encode(text).ids
        states = run(session, ids)[0]
        batch = torch.tensor([ids])
        with torch.no_grad():
            torch_states = model(batch, torch.ones_like(batch), torch.zeros_like(batch))[0].numpy()
        assert np.abs(states - torch_states).max() < 1e-4, "onnxruntime and PyTorch disagree"
        cases.append({"text": text, "input_ids": ids, "last_hidden_state": states.tolist()})
    with open(os.path.join(out, "reference.json"), "w", encoding="utf-8") as f:
        json.dump({"max_length": 48, "cases": cases}, f, ensure_ascii=False)
        f.write("\n")

    quantized = os.path.join(fixtures, "onnx", "bert-embedder-quantized")
    os.makedirs(os.path.join(quantized, "onnx"), exist_ok=True)
    quantize_dynamic(onnx_path, os.path.join(quantized, "onnx", "model.onnx"), weight_type=QuantType.QUInt8)
    config.save_pretrained(quantized)
    shutil.copy(os.path.join(source, "tokenizer.json"), os.path.join(quantized, "tokenizer.json"))


def cross_encoder(fixtures, name):
    source = os.path.join(fixtures, "cross-encoders", name)
    out = os.path.join(fixtures, "onnx", f"{name}-cross-encoder")
    model = AutoModelForSequenceClassification.from_pretrained(source)
    model.eval()
    with open(os.path.join(source, "reference.json"), encoding="utf-8") as f:
        reference = json.load(f)
    os.makedirs(out, exist_ok=True)
    for file in ("config.json", "tokenizer.json"):
        shutil.copy(os.path.join(source, file), os.path.join(out, file))
    first = reference["cases"][0]
    ids = torch.tensor([first["input_ids"]])
    onnx_path = os.path.join(out, "onnx", "model.onnx")
    export(
        model,
        onnx_path,
        {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "token_type_ids": torch.tensor([first["token_type_ids"]]),
        },
        ["logits"],
    )
    session = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    for case in reference["cases"]:
        logits = run(session, case["input_ids"], case["token_type_ids"])[0]
        assert np.abs(logits - np.array(case["logits"])).max() < 1e-4, "ONNX and PyTorch disagree"
        case["logits"] = logits.tolist()
    with open(os.path.join(out, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(reference, f, ensure_ascii=False, indent=1)
        f.write("\n")


def bge(fixtures, model_dir):
    with open(os.path.join(fixtures, "embeddings", "all-MiniLM-L6-v2.json"), encoding="utf-8") as f:
        texts = json.load(f)["texts"]
    tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tokenizer.enable_truncation(512)
    session = onnxruntime.InferenceSession(
        os.path.join(model_dir, "onnx", "model.onnx"), providers=["CPUExecutionProvider"]
    )
    cls = []
    for text in texts:
        cls.append(run(session, tokenizer.encode(text).ids)[0, 0].tolist())
    out = os.path.join(fixtures, "embeddings", "bge-small-en-v1.5-onnxruntime.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"model": "bge-small-en-v1.5", "max_seq_length": 512, "texts": texts, "cls": cls}, f, ensure_ascii=False)
        f.write("\n")


def main():
    fixtures = sys.argv[1]
    embedder(fixtures)
    for name in ("bert", "xlm-roberta"):
        cross_encoder(fixtures, name)
    if len(sys.argv) == 4 and sys.argv[2] == "--bge":
        bge(fixtures, sys.argv[3])


if __name__ == "__main__":
    main()
