#!/usr/bin/env bash
# Builds the image the Dockerfile describes, without a container daemon or
# registry, as an OCI image layout, and prints what it weighs, layer by
# layer: the base system, the model, the stripped `trellis` binary.
#
#   sudo scripts/image.sh [--binary PATH] [--model DIR] [OUT_DIR]   # default: target/image
#
#   sudo scripts/image.sh --base-only    # only make the cached base system
#
# --binary packs an already built `trellis` instead of building the
# release binary (the end-to-end suite packs its test build, so that the
# image runs the code under test without a second compile); it is
# stripped all the same. --model packs that model directory instead of
# scripts/fetch-model.sh's.
#
# The Dockerfile starts FROM debian:bookworm-slim, which needs a registry;
# here the same base is made from Debian's own packages: debootstrap's
# minbase variant of bookworm with ca-certificates, slimmed as the slim
# tag is (no apt lists or caches, documentation, manual pages or
# translations). It is made once per machine and kept as a tarball in the
# tools cache (~/.cache/trellis/tools/image-base-*): Debian's archive
# changes slowly, and debootstrap takes a minute. The binary is built in
# release mode and stripped, as the Dockerfile's build stage does.
# Needs root (debootstrap chroots), debootstrap and umoci (both in Debian);
# /dev is left empty for the runtime to fill, as in any image. Push the
# result with `skopeo copy oci:target/image/oci:trellis
# docker://HOST/trellis:TAG`, or load it with `skopeo copy
# oci:target/image/oci:trellis docker-daemon:trellis:dev`.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "image: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap builds the base in a chroot)"
for tool in debootstrap umoci strip; do
  command -v "$tool" >/dev/null || die "needs $tool (apt-get install debootstrap umoci binutils)"
done

binary="" model="" base_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --base-only) base_only=1; shift ;;
    --binary) binary="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
out="${1:-target/image}"
((base_only)) && out="$(mktemp -d)"
rm -rf "$out"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

if ((base_only)); then
  :
elif [[ -z "$binary" ]]; then
  command -v cargo >/dev/null || die "needs cargo"
  echo "image: building the release binary" >&2
  cargo build --release --locked --bin trellis >&2
  binary=target/release/trellis
fi
if ((!base_only)); then
  [[ -x "$binary" ]] || die "no executable at $binary"
  strip -o "$out/trellis" "$binary"
  [[ -n "$model" ]] || model="$(scripts/fetch-model.sh)"
  [[ -d "$model" ]] || die "no model directory at $model"
fi

# Bump when the base's recipe below changes.
BASE_REVISION=1
tools="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"
base_tar="$tools/image-base-bookworm-$BASE_REVISION.tar"
base="$out/base"
mkdir -p "$tools"
# One base per machine even when two builds start together.
exec 8>"$base_tar.lock"
flock 8
if [[ ! -f "$base_tar" ]]; then
  echo "image: making the base system (debootstrap minbase, bookworm)" >&2
  rm -rf "$base"
  debootstrap --variant=minbase --include=ca-certificates bookworm "$base" \
    http://deb.debian.org/debian >"$out/debootstrap.log" 2>&1 \
    || die "debootstrap failed; see $out/debootstrap.log"
  rm -rf "$base"/var/cache/apt/* "$base"/var/lib/apt/lists/* "$base"/usr/share/doc/* \
    "$base"/usr/share/man/* "$base"/usr/share/info/* "$base"/usr/share/locale/* \
    "$base"/var/log/* "$base"/debootstrap "$base"/dev/*
  chroot "$base" useradd --system --uid 10001 --home-dir /nonexistent \
    --shell /usr/sbin/nologin trellis
  mkdir -p "$base/var/lib/trellis"
  chown 10001:10001 "$base/var/lib/trellis"
  tar -C "$base" -cf "$base_tar.tmp" . && mv "$base_tar.tmp" "$base_tar"
  if ((base_only)); then rm -rf "$out"; exit 0; fi
elif ((base_only)); then
  rm -rf "$out"
  exit 0
fi
exec 8>&-

# One layer per step, as the Dockerfile's instructions make them, each
# packed from a tarball of just what the step adds. The base and model
# layers are the same for every image built on this machine with that
# model: they are packed once and kept in the tools cache as an OCI layout
# whose blobs each image starts from, so that an image costs the packing
# of its binary alone (the end-to-end suite builds two a run).
pack() { # pack <tree> <tarball>: a layer's files, owned by root
  tar --numeric-owner --owner=0 --group=0 --sort=name -C "$1" -cf "$2" .
}
model_key="$(cd "$model" && find . -type f -print0 | sort -z | xargs -0 sha256sum \
  | { cat; basename "$model"; } | sha256sum | cut -c1-12)"
# Bump when the layers' recipe below changes.
LAYERS_REVISION=1
layers="$tools/image-layers-bookworm-$BASE_REVISION-$model_key-$LAYERS_REVISION"
exec 8>"$layers.lock"
flock 8
if [[ ! -f "$layers/index.json" ]]; then
  echo "image: packing the base and model layers into $layers" >&2
  rm -rf "$layers.tmp"
  umoci init --layout "$layers.tmp"
  umoci new --image "$layers.tmp:trellis"
  umoci raw add-layer --image "$layers.tmp:trellis" \
    --history.created_by "base: debian bookworm minbase + ca-certificates, slimmed" "$base_tar"
  mkdir -p "$out/model-layer/opt/trellis/models"
  cp -a "$model" "$out/model-layer/opt/trellis/models/"
  pack "$out/model-layer" "$out/model-layer.tar"
  umoci raw add-layer --image "$layers.tmp:trellis" \
    --history.created_by "COPY model /opt/trellis/models" "$out/model-layer.tar"
  rm -rf "$out/model-layer" "$out/model-layer.tar"
  rm -rf "$layers" && mv "$layers.tmp" "$layers"
fi
exec 8>&-

layout="$out/oci"
# Blobs are named by their digest and never written in place, so the
# image shares the cached ones (hard links where the file system allows).
mkdir -p "$layout/blobs"
cp -al "$layers/blobs/." "$layout/blobs/" 2>/dev/null || cp -a "$layers/blobs/." "$layout/blobs/"
cp "$layers/index.json" "$layers/oci-layout" "$layout/"
install -D -m 0755 "$out/trellis" "$out/binary-layer/usr/local/bin/trellis"
pack "$out/binary-layer" "$out/binary-layer.tar"
umoci raw add-layer --image "$layout:trellis" \
  --history.created_by "COPY trellis /usr/local/bin/trellis" "$out/binary-layer.tar"
rm -rf "$out/binary-layer" "$out/binary-layer.tar"
umoci config --image "$layout:trellis" \
  --config.user 10001:10001 \
  --config.env TRELLIS_MODEL_DIR=/opt/trellis/models \
  --config.env TRELLIS_DATA_DIR=/var/lib/trellis \
  --config.exposedports 8080/tcp \
  --config.entrypoint /usr/local/bin/trellis \
  --config.cmd --help
umoci gc --layout "$layout"

# The binary runs on the base as the image's user (its libc is the
# base's, not this machine's).
if [[ ! -d "$base" ]]; then
  mkdir -p "$base"
  tar -C "$base" -xf "$base_tar"
fi
install -D -m 0755 "$out/trellis" "$base/usr/local/bin/trellis"
chroot --userspec=10001:10001 "$base" /usr/local/bin/trellis --version >&2 \
  || die "the binary does not run on the image's base system"
rm "$base/usr/local/bin/trellis"

# Each layer's size as pulled (gzip) and as unpacked.
python3 - "$layout" "$base" "$out/trellis" "$model" <<'PY'
import json, os, sys
layout, base, binary, model = sys.argv[1:]
def tree_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs
               if not os.path.islink(os.path.join(d, f)))
index = json.load(open(os.path.join(layout, "index.json")))
blob = lambda digest: os.path.join(layout, "blobs", *digest.split(":"))
manifest = json.load(open(blob(index["manifests"][0]["digest"])))
names = ["base system", "model", "trellis (stripped)"]
unpacked = [tree_bytes(base), tree_bytes(model), tree_bytes(binary)]
mb = lambda n: f"{n / 1e6:7.1f} MB"
total_pulled = 0
print(f"{'layer':<20} {'pulled (gzip)':>14} {'unpacked':>12}")
for name, layer, size in zip(names, manifest["layers"], unpacked):
    total_pulled += layer["size"]
    print(f"{name:<20} {mb(layer['size']):>14} {mb(size):>12}")
print(f"{'image':<20} {mb(total_pulled):>14} {mb(sum(unpacked)):>12}")
PY
echo "image: OCI layout in $layout (tag trellis)" >&2
rm -rf "$base" "$out/trellis"
