#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, then every unit,
# integration and property test, then the operator end to end on a real
# control plane, then a lint of the Helm chart and a schemathesis run
# against the retrieval service. Fetches what the tests need (the
# all-MiniLM-L6-v2 tokenizer, for token-counted chunking; moto's S3
# server, for the S3 source tests; FalkorDB and Neo4j, for the graph-store
# tests;
# kube-apiserver, kube-controller-manager, etcd and helm, built from their
# Go modules, for the end-to-end suite; chromium and playwright-core, for
# the console's browser test) on first use.
#
#   scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/fetch-model.sh >/dev/null
# The S3 source tests start moto's S3 server; install it before the tests
# run, so that no test waits on pip.
scripts/s3-test-server.sh --install
# The graph-store tests start a real FalkorDB and a real Neo4j 5
# Community (its embedded DBMS from Maven Central); a failed install fails
# the run here rather than as a skipped test.
scripts/falkordb-test-server.sh --install
scripts/neo4j-test-server.sh --install
# The control plane builds from Go modules once per machine (about 12
# minutes cold); it builds beside the Rust build, whose single-crate
# stretches leave a core idle, and is waited for before the e2e suite.
control_plane_log="$(mktemp)"
scripts/control-plane.sh build >"$control_plane_log" 2>&1 &
control_plane_build=$!

cargo fmt --all -- --check
cargo clippy --locked --all-targets -- -D warnings
# The e2e suite is `test = false`, which `--all-targets` skips (even when
# named beside it).
cargo clippy --locked --test e2e -- -D warnings

# Every test runner's summary goes to a log as well, so that the run ends
# with one line that totals them.
log="$(mktemp)"
trap 'rm -f "$log" "$control_plane_log"' EXIT
cargo test --locked --doc 2>&1 | tee -a "$log"
cargo test --locked --lib --bins --tests 2>&1 | tee -a "$log"
awk '/^test result:/ { passed += $4; failed += $6 }
     END { printf "all tests: %d passed, %d failed\n", passed, failed }' "$log"

# The operator against a real kube-apiserver, controller manager and etcd,
# the chart installed with helm and pods run by the node harness
# (tests/e2e/); it needs root for its network and mount namespaces. Its
# upgrade scenario starts from the previous release, built here from the
# commit in tests/e2e/previous-release with the dependencies just built.
scripts/previous-release.sh
if ! wait "$control_plane_build"; then
  cat "$control_plane_log" >&2
  echo "building the control plane failed" >&2
  exit 1
fi
cat "$control_plane_log"
cargo test --locked --test e2e

# The Helm chart, linted by Helm's library with each values overlay, and
# the GitOps health checks run on sample objects.
scripts/lint-deploy.sh

# The retrieval service against its own OpenAPI document (schemathesis).
scripts/fuzz-api.sh

# The console in Debian's chromium, driven by playwright-core (both
# installed on first use), against live services over the quick start and
# a PDF.
scripts/browser-test.sh
