#!/usr/bin/env bash
# Fuzzes the PDF and DOCX parsers with cargo fuzz (libFuzzer), for a bounded
# time per target, from seed corpora of real documents.
#
#   scripts/fuzz-parsers.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Defaults: 300 seconds for each of parse_pdf and parse_docx. Installs
# cargo-fuzz under target/tools on first use. The targets (fuzz/) must end
# every input with a tree or a ParseFailure: a panic outside the PDF
# reader's guarded thread, an abort, a run over 30 s or over 4 GiB is a
# crash. A crash stops the run, leaves the input under
# fuzz/artifacts/<target>/ and exits non-zero; fix it, then copy the input
# to tests/fixtures/fuzz/<pdf|docx>/, where `cargo test --test it fuzz_regressions::`
# parses every file on each test run.
#
# cargo fuzz passes nightly-only flags (sanitizer coverage, AddressSanitizer);
# the machine's toolchain is stable, so RUSTC_BOOTSTRAP lets it accept them.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-300}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parse_pdf parse_docx parse_nested)

tools="$PWD/target/tools"
if [ ! -x "$tools/bin/cargo-fuzz" ]; then
    echo "installing cargo-fuzz into $tools" >&2
    cargo install --locked --quiet --root "$tools" cargo-fuzz@0.13.2
fi
export PATH="$tools/bin:$PATH"
export RUSTC_BOOTSTRAP=1

eval_dir="${TRELLIS_EVAL_DIR:-$PWD/../shared/eval}"

# Seeds: the project's own fixtures, and the development documents when the
# evaluation data is beside the checkout. Files over 1 MiB are left out
# (libFuzzer mutates small inputs best).
seed() {
    local target="$1" ext="$2"
    shift 2
    local dir="fuzz/corpus/$target"
    mkdir -p "$dir"
    local source
    for source in "$@"; do
        [ -d "$source" ] || continue
        find "$source" -maxdepth 1 -type f -iname "*.$ext" -size -1024k \
            -exec cp -n {} "$dir/" \;
    done
}
seed parse_pdf pdf tests/fixtures/bad tests/fixtures/fuzz/pdf \
    "$eval_dir/docling/pdf/sources" "$eval_dir/docling/pdf"
seed parse_docx docx tests/fixtures/bad tests/fixtures/fuzz/docx examples/corpus \
    "$eval_dir/docling/docx/sources"
# parse_nested reads (choice, depth as two bytes, text): every place and
# element at 40 levels (read) and at 3,000 (refused; a stack overflow before
# the nesting bound).
mkdir -p fuzz/corpus/parse_nested
for choice in 0 1 2 3 4 5 6 7; do
    printf "\\x0$choice\\x00\\x28nested" >"fuzz/corpus/parse_nested/shallow-$choice"
    printf "\\x0$choice\\x0b\\xb8nested" >"fuzz/corpus/parse_nested/deep-$choice"
done

for target in "${targets[@]}"; do
    echo "fuzzing $target for $seconds s" >&2
    (cd fuzz && cargo fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
        -max_len=1048576 -print_final_stats=1)
done
