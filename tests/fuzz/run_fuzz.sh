#!/usr/bin/env bash
# Build the libFuzzer harness with clang and run it.  See docs/fuzzing.md.
#
#   tests/fuzz/run_fuzz.sh [SECONDS] [extra libFuzzer flags...]
#
# Builds build-fuzz/ (clang, -DSMELT_FUZZ=ON), copies the seed corpus and the
# crash regressions into build-fuzz/fuzz/work_onnx_import (the checked-in
# corpus is never modified), and fuzzes for SECONDS (default 600) with
# SMELT_FUZZ_RUN=1, so models that load are also run by the reference
# executor.  Crashes land in build-fuzz/fuzz/artifacts/.  Set FUZZ_JOBS=N to
# keep going after crashes (libFuzzer fork mode with N workers; crashes are
# collected, not fatal).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
shift || true
CC=${CC:-clang}
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="$CC" \
    -DSMELT_FUZZ=ON -DSMELT_WERROR=OFF >/dev/null
cmake --build build-fuzz --target fuzz_onnx_import -j2
work=build-fuzz/fuzz/work_onnx_import
art=build-fuzz/fuzz/artifacts
mkdir -p "$work" "$art"
cp -n tests/fuzz/corpus/onnx_import/* "$work"/ 2>/dev/null || true
cp -n tests/fuzz/regressions/onnx_import/* "$work"/ 2>/dev/null || true
flags=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
       -dict=tests/fuzz/onnx.dict -artifact_prefix="$art/")
if [ -n "${FUZZ_JOBS:-}" ]; then
    flags+=(-fork="$FUZZ_JOBS" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi
rc=0
SMELT_FUZZ_RUN=${SMELT_FUZZ_RUN:-1} build-fuzz/fuzz/fuzz_onnx_import "${flags[@]}" "$@" "$work" || rc=$?
echo "corpus: $(ls "$work" | wc -l) files, $(du -sh "$work" | cut -f1); artifacts: $(ls "$art" | wc -l)"
exit "$rc"
