#!/usr/bin/env bash
# The console (`GET /` of `trellis serve`) in a real browser: installs
# Debian's chromium (apt) and playwright-core (npm, into a cached
# directory) when missing, ingests the quick start and a three-page PDF,
# starts one `trellis serve` with a bearer token over each, and runs
# tests/browser/console.test.cjs against them. Writes a screenshot of the
# console answering a quick-start question.
#
#   scripts/browser-test.sh                           # screenshot in target/console.png
#   SCREENSHOT=docs/console.png scripts/browser-test.sh   # refresh the README's
#   scripts/browser-test.sh --install                 # install chromium and playwright-core only
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cargo-env.sh

PLAYWRIGHT_VERSION="1.65.1"
PYTHON="${PYTHON:-python3}"
TOOLS="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"
PLAYWRIGHT_DIR="$TOOLS/playwright-core-$PLAYWRIGHT_VERSION"
SCREENSHOT="$(realpath -m "${SCREENSHOT:-target/console.png}")"

CHROMIUM="$(command -v chromium || true)"
if [[ -z "$CHROMIUM" ]]; then
  echo "installing chromium (apt)" >&2
  export DEBIAN_FRONTEND=noninteractive
  flock /var/lib/dpkg/trellis-apt.lock apt-get update -qq >/dev/null
  flock /var/lib/dpkg/trellis-apt.lock apt-get install -y -qq chromium >/dev/null
  CHROMIUM="$(command -v chromium)"
fi
if [[ ! -f "$PLAYWRIGHT_DIR/node_modules/playwright-core/package.json" ]]; then
  echo "installing playwright-core $PLAYWRIGHT_VERSION into $PLAYWRIGHT_DIR" >&2
  rm -rf "$PLAYWRIGHT_DIR"
  mkdir -p "$PLAYWRIGHT_DIR"
  npm install --prefix "$PLAYWRIGHT_DIR" --no-audit --no-fund --silent \
    "playwright-core@$PLAYWRIGHT_VERSION"
fi
[[ "${1:-}" == "--install" ]] && exit 0

# The binary as the integration tests build it (dev-dependency features
# unified), so that after `cargo test` nothing is compiled again.
cargo test --locked --no-run --quiet --test it
TRELLIS="$CARGO_TARGET_DIR/debug/trellis"

WORK="$(mktemp -d)"
SERVERS=()
cleanup() {
  for pid in "${SERVERS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

TOKEN="console-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(16))')"
echo "$TOKEN *" >"$WORK/tokens"

# The PDF corpus: the quick start's manifests over one valid three-page
# PDF, whose sentences carry page boxes.
mkdir -p "$WORK/pdf/documents"
cp tests/fixtures/bad/three_pages.pdf "$WORK/pdf/documents/"
sed -e 's/\["\*\*\/\*\.md", "\*\*\/\*\.txt"\]/["**\/*.pdf"]/' \
  examples/quickstart/trellis.yaml >"$WORK/pdf/trellis.yaml"
grep -q '"\*\*/\*\.pdf"' "$WORK/pdf/trellis.yaml" || {
  echo "could not point the quick start's manifests at the PDF" >&2
  exit 1
}

# Ingests MANIFESTS, serves them on a free port and, once the service is
# ready, sets SERVICE_URL to it.
start_service() {
  local name="$1" manifests="$2" port
  "$TRELLIS" ingest -f "$manifests" --data-dir "$WORK/$name-data" >/dev/null 2>"$WORK/$name-ingest.log" || {
    cat "$WORK/$name-ingest.log" >&2
    return 1
  }
  port="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "$TRELLIS" serve -f "$manifests" --data-dir "$WORK/$name-data" \
    --listen "127.0.0.1:$port" --token-file "$WORK/tokens" 2>"$WORK/$name-serve.log" &
  SERVERS+=($!)
  "$PYTHON" scripts/wait_ready.py "$port" "$!" || { cat "$WORK/$name-serve.log" >&2; return 1; }
  SERVICE_URL="http://127.0.0.1:$port"
}

start_service quickstart examples/quickstart
QUICKSTART_URL="$SERVICE_URL"
start_service pdf "$WORK/pdf"
PDF_URL="$SERVICE_URL"

mkdir -p "$(dirname "$SCREENSHOT")"
PLAYWRIGHT_CORE="$PLAYWRIGHT_DIR/node_modules/playwright-core" CHROMIUM="$CHROMIUM" \
  QUICKSTART_URL="$QUICKSTART_URL" PDF_URL="$PDF_URL" TOKEN="$TOKEN" SCREENSHOT="$SCREENSHOT" \
  node tests/browser/console.test.cjs || {
  echo "the browser tests failed; the services' logs:" >&2
  tail -n 30 "$WORK"/*-serve.log >&2
  exit 1
}
echo "screenshot: $SCREENSHOT"
