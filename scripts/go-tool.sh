#!/usr/bin/env bash
# The Go command-line tools the checks run, each built from the Go module
# that scripts/go-tools/NAME/go.mod pins; nothing comes from a release
# page, only the Go module proxy.
#
#   scripts/go-tool.sh promtool     # build once per machine (cached); prints the binary's path
#   scripts/go-tool.sh actionlint
#
# - promtool (github.com/prometheus/prometheus): checks and unit-tests the
#   Helm chart's alerting rules and dashboard queries
#   (scripts/check_monitoring.py). Built without the service-discovery
#   plugins (build tag remove_all_sd), which rule checks and tests do not
#   use: a cold build, downloads included, took 135 s on 2 cores (280 s
#   with them).
# - actionlint (github.com/rhysd/actionlint): lints the release workflow,
#   with shellcheck over its scripts when shellcheck is installed.
#
# The binary goes to ~/.cache/trellis/tools (or $TRELLIS_TOOLS_DIR), keyed
# by the module's version and a hash of its files, so a change of version
# rebuilds it; the Go caches a build used are removed afterwards (promtool's
# are about 1.8 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

die() { echo "go-tool: $*" >&2; exit 1; }

name="${1:-}"
case "$name" in
  promtool) package=github.com/prometheus/prometheus/cmd/promtool tags=remove_all_sd ;;
  actionlint) package=github.com/rhysd/actionlint/cmd/actionlint tags="" ;;
  *) die "usage: scripts/go-tool.sh promtool|actionlint" ;;
esac
# Bump when the build command below changes, so that caches rebuild.
BUILD_REVISION=3
MODULE_DIR="$ROOT/scripts/go-tools/$name"
TOOLS="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"

# The version of the module the command belongs to, as go.mod requires it.
version="$(awk -v pkg="$package" '
  { module = $1; v = $2; if (module == "require") { module = $2; v = $3 } }
  index(pkg "/", module "/") == 1 && v ~ /^v/ { print v; exit }' "$MODULE_DIR/go.mod")"
[[ -n "$version" ]] || die "scripts/go-tools/$name/go.mod requires no module of $package"
hash="$({ cat "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum"; echo "$tags $BUILD_REVISION"; } | sha256sum | cut -c1-12)"
bin="$TOOLS/$name-$version-$hash/bin"
mkdir -p "$TOOLS"
# One build per machine even when two runs start together.
exec 9>"$TOOLS/$name.lock"
flock 9
if [[ -x "$bin/$name" ]]; then
  echo "$bin/$name"
  exit 0
fi
command -v go >/dev/null || die "go is required to build $name"
work="$TOOLS/$name-build"
rm -rf "$work" "$bin.tmp"
mkdir -p "$work" "$bin.tmp"
echo "go-tool: building $name ($version) into $bin" >&2
started=$SECONDS
(
  cd "$MODULE_DIR"
  export GOCACHE="$work/cache" GOMODCACHE="$work/mod" GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
  # The linker drops the debug information (-s -w), so the compiler does
  # not generate it either: go build only does that by itself for go run
  # and go test.
  go build -trimpath -gcflags=all=-dwarf=false -tags "$tags" -ldflags "-s -w" -o "$bin.tmp/" "$package"
) >&2
# Module cache files are read-only; let rm through.
chmod -R u+w "$work" && rm -rf "$work"
rm -rf "$bin" && mv "$bin.tmp" "$bin"
echo "go-tool: $name built in $((SECONDS - started)) s" >&2
echo "$bin/$name"
