#!/usr/bin/env bash
# A real S3-compatible server for the tests of `s3` sources: moto's server
# mode (PyPI `moto[server]`), installed into a cached virtualenv on first
# use. It keeps everything in memory and accepts any credentials.
#
#   scripts/s3-test-server.sh --install   install only (the test command does this first)
#   scripts/s3-test-server.sh PORT        serve on 127.0.0.1:PORT until killed
set -euo pipefail

MOTO_VERSION="5.2.5"
PYTHON="${PYTHON:-python3}"
TOOLS="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"
VENV="$TOOLS/moto-$MOTO_VERSION"

if [[ ! -x "$VENV/bin/moto_server" ]]; then
  echo "installing moto[server] $MOTO_VERSION into $VENV" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "moto[server]==$MOTO_VERSION"
fi

if [[ "${1:-}" == "--install" ]]; then
  exit 0
fi
PORT="${1:?usage: $0 PORT | --install}"
exec "$VENV/bin/moto_server" -H 127.0.0.1 -p "$PORT"
