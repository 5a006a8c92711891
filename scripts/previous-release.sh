#!/usr/bin/env bash
# Builds the previous release of Trellis — the commit named in
# tests/e2e/previous-release — for the end-to-end suite's upgrade
# scenario: its `trellis` binary and its Helm chart, placed under
# target/e2e-previous/<commit>/ of this checkout.
#
#   scripts/previous-release.sh      # prints the directory
#
# The result is cached under the tools cache, keyed by the commit, the
# toolchain (scripts/cargo-env.sh) and the build command's revision, so
# that a machine builds a release once; a commit's sources (its
# Cargo.lock among them) never change, so nothing else goes into the key.
# The build shares the cached build directory, so that the dependencies
# compiled for this checkout serve it too. It is built with one example
# target beside the binary: that unifies the dev-dependencies' features as
# the test build does, so the shared dependencies are reused instead of
# compiled a second time with other features.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cargo-env.sh

die() { echo "previous-release: $*" >&2; exit 1; }

# Bump when the build command below changes, so that cached releases rebuild.
BUILD_REVISION=4
rev="$(grep -v '^#' tests/e2e/previous-release | tr -d '[:space:]')"
[[ "$rev" =~ ^[0-9a-f]{40}$ ]] || die "tests/e2e/previous-release must name a full commit hash"
toolchain="$(basename "$CARGO_TARGET_DIR")"
cache="$TRELLIS_TOOLS/trellis-previous/$rev-${toolchain#cargo-target-}-$BUILD_REVISION"
dest="target/e2e-previous/$rev"

place() {
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$cache/trellis" "$dest/trellis"
  cp -r "$cache/charts" "$dest/charts"
  echo "$dest"
}

if [[ -x "$cache/trellis" && -f "$cache/charts/trellis/Chart.yaml" ]]; then
  place
  exit 0
fi
if ! git cat-file -e "$rev^{commit}" 2>/dev/null; then
  shallow="$(git rev-parse --is-shallow-repository 2>/dev/null || echo unknown)"
  die "commit $rev is not in this clone (shallow: $shallow); the upgrade scenario needs the history up to it"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/trellis-previous.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
git archive "$rev" | tar -x -C "$work/src"
# Its binary target renamed, so that it does not link over this checkout's
# trellis binary in the shared build directory; nothing else of the
# release changes.
python3 - "$work/src/Cargo.toml" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
text = text.replace('default-run = "trellis"', 'default-run = "trellis-previous"')
text, n = re.subn(r'(\[\[bin\]\]\s*\nname = )"trellis"', r'\1"trellis-previous"', text)
if n != 1:
    sys.exit("previous-release: no [[bin]] named trellis in " + path)
open(path, "w").write(text)
PY
# This checkout's build profiles, passed as cargo configuration, which
# takes precedence over the release's manifest: a dependency whose
# optimisation level differs between the two would be compiled again.
# The profiles of this workspace's own crates are left out: the release
# may not have them, and cargo warns of a profile that names no package.
python3 - Cargo.toml "$work/profiles.toml" crates/*/Cargo.toml <<'PY'
import re, sys
own = set()
for manifest in sys.argv[3:]:
    name = re.search(r'^name = "([^"]+)"', open(manifest).read(), re.M)
    if name:
        own.add(name.group(1))
lines = open(sys.argv[1]).read().splitlines(keepends=True)
out, keep = [], False
for line in lines:
    header = re.match(r"\s*\[+([^\]]*)\]", line)
    if header:
        table = header.group(1).strip()
        package = re.match(r"profile\.[^.]+\.package\.(.+)", table)
        keep = table.startswith("profile.") and not (package and package.group(1).strip('"') in own)
    if keep:
        out.append(line)
open(sys.argv[2], "w").write("".join(out))
PY
echo "previous-release: building trellis at ${rev:0:12}" >&2
# The release is built as it was, without this checkout's lint wrapper,
# and its own crates unoptimised (the dependencies keep their level, so
# they are still shared): it only ingests the quickstart's four
# documents in the upgrade scenario. Measured on 2 cores: 1.3 CPU-minutes
# to compile instead of 5.2 at opt-level 1, on the critical path of a cold
# run; the quickstart ingests in 81 CPU-seconds instead of 23, beside the
# e2e suite's idle core.
env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS \
  cargo build --locked --quiet --manifest-path "$work/src/Cargo.toml" \
  --config "$work/profiles.toml" --config profile.dev.opt-level=0 \
  --bin trellis-previous --example enrich_throughput
rm -rf "$cache.tmp"
mkdir -p "$cache.tmp"
cp "$CARGO_TARGET_DIR/debug/trellis-previous" "$cache.tmp/trellis"
cp -r "$work/src/charts" "$cache.tmp/charts"
rm -rf "$cache" && mv "$cache.tmp" "$cache"
place
