# Sourced by the test scripts (not run): the one cargo build they all
# share, where it lives and how it is compiled.
#
#   source scripts/cargo-env.sh   # exports CARGO_TARGET_DIR, TRELLIS_TOOLS and the lint wrapper
#
# Where: a build directory under the tools cache that outlives a clone, as
# CI systems cache target/, so that a fresh clone on a machine that has
# built Trellis before compiles only Trellis itself, not its few hundred
# dependencies. It is keyed by the toolchain (`rustc -vV` and
# `cargo -vV`), so two toolchains never share one; within a key cargo's
# own fingerprints decide what is fresh. A fresh clone's sources are newer
# than anything built from another clone, so the crate itself always
# compiles again: what is reused is what was built from the same registry
# sources with the same flags, features and compiler. A CARGO_TARGET_DIR
# set by the caller wins.
#
# How: with clippy as the workspace's compiler wrapper
# (RUSTC_WORKSPACE_WRAPPER=clippy-driver, which is how `cargo clippy`
# itself runs), and every warning an error. The test build then lints
# Trellis' own targets while it compiles them, and the dependencies are
# compiled once, for the tests, instead of a second time as clippy's
# check-only metadata. Dependencies never go through the wrapper. Set
# TRELLIS_NO_LINT=1 to build without it (a different build, compiled
# apart).
#
# Housekeeping: a build directory of another toolchain unused for 7 days
# is removed, and one that has grown past TRELLIS_BUILD_DIR_MAX_GB
# (default 40) is emptied before the build, so the cache cannot fill the
# disk across many dependency updates.

TRELLIS_TOOLS="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"
export TRELLIS_TOOLS

if [[ -z "${CARGO_TARGET_DIR:-}" ]]; then
  _toolchain_key="$({ rustc -vV && cargo -vV; } | sha256sum | cut -c1-12)"
  CARGO_TARGET_DIR="$TRELLIS_TOOLS/cargo-target-$_toolchain_key"
  mkdir -p "$CARGO_TARGET_DIR"
  # Other toolchains' build directories, unused for a week, go.
  for _dir in "$TRELLIS_TOOLS"/cargo-target-*; do
    [[ "$_dir" == "$CARGO_TARGET_DIR" || ! -d "$_dir" ]] && continue
    if [[ -z "$(find "$_dir/.last-used" -mtime -7 2>/dev/null)" ]]; then
      echo "cargo-env: removing $_dir (another toolchain's, unused for 7 days)" >&2
      rm -rf "$_dir"
    fi
  done
  _size_kb="$(du -sk "$CARGO_TARGET_DIR" 2>/dev/null | cut -f1)"
  if ((${_size_kb:-0} > ${TRELLIS_BUILD_DIR_MAX_GB:-40} * 1024 * 1024)); then
    echo "cargo-env: $CARGO_TARGET_DIR holds $((_size_kb / 1024 / 1024)) GB, over the bound; emptying it" >&2
    rm -rf "$CARGO_TARGET_DIR"
    mkdir -p "$CARGO_TARGET_DIR"
  fi
  touch "$CARGO_TARGET_DIR/.last-used"
  unset _toolchain_key _dir _size_kb
fi
export CARGO_TARGET_DIR

if [[ "${TRELLIS_NO_LINT:-0}" != 1 && -z "${RUSTC_WORKSPACE_WRAPPER:-}" ]]; then
  if ! RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)"; then
    echo "cargo-env: clippy-driver not found (rustup component add clippy)" >&2
    return 1
  fi
  # `cargo clippy -- -D warnings`, as the driver reads it.
  CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
  export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
fi

# Incremental compilation: rustc keeps its work per crate to reuse in the
# next build, but discards it whenever the working directory differs, as
# it does for every fresh clone. CI builds from a fresh clone each time,
# so there it would only cost (writing the cache, and 256 code-generation
# units per crate instead of 16): CI compiles without it. A local
# checkout, rebuilt in place, keeps it.
if [[ "${CI:-}" == true && -z "${CARGO_INCREMENTAL:-}" ]]; then
  export CARGO_INCREMENTAL=0
fi
