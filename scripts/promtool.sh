#!/usr/bin/env bash
# promtool, for checking and unit-testing the Helm chart's alerting rules
# and dashboard queries (scripts/check_monitoring.py): built from the
# github.com/prometheus/prometheus Go module that scripts/promtool/go.mod
# pins, without the service-discovery plugins (build tag remove_all_sd),
# which promtool's rule checks and tests do not use. Nothing comes from a
# release page: only the Go module proxy.
#
#   scripts/promtool.sh   # build once per machine (cached); prints the binary's path
#
# The binary goes to ~/.cache/trellis/tools (or $TRELLIS_TOOLS_DIR), keyed
# by a hash of the module files, so a change of version rebuilds it. A cold
# build, downloads included, took 135 s on 2 cores (280 s with the
# discovery plugins); the Go caches it used are removed afterwards
# (about 1.8 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

PROMETHEUS_VERSION="v0.316.0"
# Bump when the build command below changes, so that caches rebuild.
BUILD_REVISION=2
MODULE_DIR="$ROOT/scripts/promtool"
TOOLS="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"

die() { echo "promtool: $*" >&2; exit 1; }

module_hash() {
  { cat "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum"; echo "$BUILD_REVISION"; } | sha256sum | cut -c1-12
}

grep -q "github.com/prometheus/prometheus $PROMETHEUS_VERSION\$" "$MODULE_DIR/go.mod" \
  || die "scripts/promtool/go.mod does not pin github.com/prometheus/prometheus $PROMETHEUS_VERSION"

bin="$TOOLS/promtool-$PROMETHEUS_VERSION-$(module_hash)/bin"
mkdir -p "$TOOLS"
# One build per machine even when two runs start together.
exec 9>"$TOOLS/promtool.lock"
flock 9
if [[ -x "$bin/promtool" ]]; then
  echo "$bin/promtool"
  exit 0
fi
command -v go >/dev/null || die "go is required to build promtool"
work="$TOOLS/promtool-build"
rm -rf "$work" "$bin.tmp"
mkdir -p "$work" "$bin.tmp"
echo "promtool: building promtool ($PROMETHEUS_VERSION) into $bin; about 2 to 3 minutes on 2 cores" >&2
started=$SECONDS
(
  cd "$MODULE_DIR"
  export GOCACHE="$work/cache" GOMODCACHE="$work/mod" GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
  # The linker drops the debug information (-s -w), so the compiler does
  # not generate it either: go build only does that by itself for go run
  # and go test.
  go build -trimpath -gcflags=all=-dwarf=false -tags remove_all_sd -ldflags "-s -w" -o "$bin.tmp/" \
    github.com/prometheus/prometheus/cmd/promtool
) >&2
# Module cache files are read-only; let rm through.
chmod -R u+w "$work" && rm -rf "$work"
rm -rf "$bin" && mv "$bin.tmp" "$bin"
echo "promtool: built in $((SECONDS - started)) s" >&2
echo "$bin/promtool"
