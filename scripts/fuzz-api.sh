#!/usr/bin/env bash
# Schema-driven robustness run of the retrieval service: ingests the
# quick-start corpus, starts `trellis serve` with a bearer token on a free
# loopback port, and runs schemathesis (from PyPI, into a cached virtualenv)
# against the server's own /openapi.json. Fails on any 5xx, any response
# that breaks the schema, any schema-valid request refused or invalid one
# accepted.
#
#   scripts/fuzz-api.sh                 # 100 examples per operation
#   FUZZ_API_EXAMPLES=1000 scripts/fuzz-api.sh
#   scripts/fuzz-api.sh --install       # install schemathesis only (the test command does this first)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cargo-env.sh

SCHEMATHESIS_VERSION="4.32.5"
EXAMPLES="${FUZZ_API_EXAMPLES:-100}"
PYTHON="${PYTHON:-python3}"
TOOLS="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"
VENV="$TOOLS/schemathesis-$SCHEMATHESIS_VERSION"

if [[ ! -x "$VENV/bin/schemathesis" ]]; then
  echo "installing schemathesis $SCHEMATHESIS_VERSION into $VENV" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "schemathesis==$SCHEMATHESIS_VERSION"
fi
[[ "${1:-}" == "--install" ]] && exit 0

# The binary as the integration tests build it (dev-dependency features
# unified), so that after `cargo test` nothing is compiled again.
cargo test --locked --no-run --quiet --test it
TRELLIS="$CARGO_TARGET_DIR/debug/trellis"

WORK="$(mktemp -d)"
SERVER=""
cleanup() {
  if [[ -n "$SERVER" ]]; then
    kill "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

"$TRELLIS" ingest -f examples/quickstart --data-dir "$WORK/data" >/dev/null 2>"$WORK/ingest.log" || {
  cat "$WORK/ingest.log" >&2
  exit 1
}

TOKEN="fuzz-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(16))')"
echo "$TOKEN *" >"$WORK/tokens"
PORT="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$TRELLIS" serve -f examples/quickstart --data-dir "$WORK/data" \
  --listen "127.0.0.1:$PORT" --token-file "$WORK/tokens" 2>"$WORK/serve.log" &
SERVER=$!

# Ready within a minute, or the server's log says why not.
"$PYTHON" scripts/wait_ready.py "$PORT" "$SERVER" || { cat "$WORK/serve.log" >&2; exit 1; }

# From the scratch directory, where schemathesis keeps its example database.
cd "$WORK"
"$VENV/bin/schemathesis" --no-color run "http://127.0.0.1:$PORT/openapi.json" \
  --header "Authorization: Bearer $TOKEN" \
  --max-examples "$EXAMPLES" || {
  echo "schemathesis found failures; the server's log:" >&2
  tail -n 50 "$WORK/serve.log" >&2
  exit 1
}
