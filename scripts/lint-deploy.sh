#!/usr/bin/env bash
# Checks what users deploy besides the binary: lints the Helm chart with
# Helm's own library (the helm_sdkpy wheel from PyPI) so that templates
# render with the default values and with every optional part switched on
# and values.schema.json accepts them; and runs the Argo CD health checks
# of the examples on sample objects under Lua 5.1 (the lupa wheel). Tools
# go into a cached virtualenv. Then checks the chart's alerts and dashboard
# for real (scripts/check_monitoring.py): rendered by helm (the one
# scripts/control-plane.sh builds; $HELM overrides it), checked and
# unit-tested by promtool. Then lints the release workflow
# (.github/workflows/release.yml) with actionlint, shellcheck over its
# scripts (Debian's package), and checks that the chart's appVersion is
# the crate's version. promtool and actionlint are built by
# scripts/go-tool.sh. Fails on any lint error or warning and on any
# failed check.
#
#   scripts/lint-deploy.sh [CHART_DIR]
#   scripts/lint-deploy.sh --install   # install the linters, build promtool and actionlint only
set -euo pipefail
cd "$(dirname "$0")/.."

INSTALL_ONLY=0
if [[ "${1:-}" == "--install" ]]; then INSTALL_ONLY=1; shift; fi
CHART="${1:-charts/trellis}"
HELM_SDKPY_VERSION="0.1.32"
PYTHON="${PYTHON:-python3}"
TOOLS="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"
LUPA_VERSION="2.8"
VENV="$TOOLS/deploy-lint-$HELM_SDKPY_VERSION-$LUPA_VERSION"

if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c "import helm_sdkpy, yaml, lupa" 2>/dev/null; then
  echo "installing helm_sdkpy $HELM_SDKPY_VERSION and lupa $LUPA_VERSION into $VENV" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  # The wheel declares a newer Python than it needs.
  "$VENV/bin/pip" install --quiet --ignore-requires-python "helm_sdkpy==$HELM_SDKPY_VERSION" "pyyaml==6.0.2" "lupa==$LUPA_VERSION"
fi
if ! command -v shellcheck >/dev/null; then
  echo "installing shellcheck (apt)" >&2
  # The same lock as the other scripts' installs: apt allows one at a time.
  flock /var/lib/dpkg/trellis-apt.lock apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive flock /var/lib/dpkg/trellis-apt.lock \
    apt-get install -y -qq --no-install-recommends shellcheck >/dev/null \
    || { echo "lint-deploy: apt-get install shellcheck failed" >&2; exit 1; }
fi
if ((INSTALL_ONLY)); then
  scripts/go-tool.sh promtool >/dev/null
  scripts/go-tool.sh actionlint >/dev/null
  exit 0
fi

"$VENV/bin/python" scripts/lint_chart.py "$CHART"
"$VENV/bin/python" scripts/check_health_lua.py

# Both tools build once per machine from the Go module proxy and are cached
# (the test command has built helm for the e2e suite by now).
HELM="${HELM:-$(scripts/control-plane.sh build)/helm}"
PROMTOOL="$(scripts/go-tool.sh promtool)"
"$VENV/bin/python" scripts/check_monitoring.py "$CHART" "$HELM" "$PROMTOOL"

# The release workflow cannot run here (no GitHub runner, no registry);
# actionlint checks its syntax, expressions, action inputs and, through
# shellcheck, its scripts.
"$(scripts/go-tool.sh actionlint)" -no-color .github/workflows/*.yml
echo "actionlint: $(ls .github/workflows/*.yml | wc -l) workflow(s) ok"
