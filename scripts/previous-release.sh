#!/usr/bin/env bash
# Builds the previous release of Trellis — the commit named in
# tests/e2e/previous-release — for the end-to-end suite's upgrade
# scenario: its `trellis` binary and its Helm chart, under
# target/e2e-previous/<commit>/. Built once per target directory.
#
#   scripts/previous-release.sh      # prints the directory
#
# The build shares this checkout's target directory, so that the
# dependencies compiled for this checkout serve it too (a few minutes
# instead of a cold build).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "previous-release: $*" >&2; exit 1; }

rev="$(grep -v '^#' tests/e2e/previous-release | tr -d '[:space:]')"
[[ "$rev" =~ ^[0-9a-f]{40}$ ]] || die "tests/e2e/previous-release must name a full commit hash"
dest="target/e2e-previous/$rev"
if [[ -x "$dest/trellis" && -f "$dest/charts/trellis/Chart.yaml" ]]; then
  echo "$dest"
  exit 0
fi
if ! git cat-file -e "$rev^{commit}" 2>/dev/null; then
  shallow="$(git rev-parse --is-shallow-repository 2>/dev/null || echo unknown)"
  die "commit $rev is not in this clone (shallow: $shallow); the upgrade scenario needs the history up to it"
fi

rm -rf "$dest"
mkdir -p "$dest/src"
git archive "$rev" | tar -x -C "$dest/src"
# Its binary target renamed, so that it does not link over this checkout's
# target/debug/trellis; nothing else of the release changes.
python3 - "$dest/src/Cargo.toml" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
text = text.replace('default-run = "trellis"', 'default-run = "trellis-previous"')
text, n = re.subn(r'(\[\[bin\]\]\s*\nname = )"trellis"', r'\1"trellis-previous"', text)
if n != 1:
    sys.exit("previous-release: no [[bin]] named trellis in " + path)
open(path, "w").write(text)
PY
echo "previous-release: building trellis at ${rev:0:12}" >&2
cargo build --locked --quiet --manifest-path "$dest/src/Cargo.toml" --target-dir target \
  --bin trellis-previous
cp target/debug/trellis-previous "$dest/trellis"
cp -r "$dest/src/charts" "$dest/charts"
rm -rf "$dest/src"
echo "$dest"
