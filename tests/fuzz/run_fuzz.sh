#!/usr/bin/env bash
# Build a libFuzzer harness with clang and run it.  See docs/fuzzing.md.
#
#   [FUZZ_HARNESS=onnx_import|pipeline|runtime|records|differential|schedule] tests/fuzz/run_fuzz.sh [SECONDS] [libFuzzer flags...]
#
# Builds build-fuzz/ (clang, -DSMELT_FUZZ=ON), copies the harness's seed
# corpus and crash regressions into build-fuzz/fuzz/work_<harness> (the
# checked-in corpus is never modified), and fuzzes for SECONDS (default 600)
# with SMELT_FUZZ_RUN=1 (onnx_import: models that load are also run by the
# reference executor).  Crashes land in build-fuzz/fuzz/artifacts/.  Set
# FUZZ_JOBS=N to keep going after crashes (libFuzzer fork mode with N
# workers; crashes are collected, not fatal).  One harness at a time.
# FUZZ_BUILD=DIR builds and fuzzes in DIR instead of build-fuzz/ (several
# people fuzzing one tree).  For tests/fuzz/fuzz_all.sh: FUZZ_NO_BUILD=1
# skips the build, FUZZ_NAME=N names the work folder (default: the harness),
# FUZZ_SEEDS="DIR..." adds seed folders.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
shift || true
h=${FUZZ_HARNESS:-onnx_import}
CC=${CC:-clang}
bd=${FUZZ_BUILD:-build-fuzz}
if [ -z "${FUZZ_NO_BUILD:-}" ]; then
    cmake -S . -B "$bd" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="$CC" \
        -DSMELT_FUZZ=ON -DSMELT_WERROR=OFF >/dev/null
    cmake --build "$bd" --target "fuzz_$h" -j2
fi
work=$bd/fuzz/work_${FUZZ_NAME:-$h}
art=$bd/fuzz/artifacts
mkdir -p "$work" "$art"
cp -n "tests/fuzz/corpus/$h"/* "$work"/ 2>/dev/null || true
cp -n "tests/fuzz/regressions/$h"/* "$work"/ 2>/dev/null || true
for d in ${FUZZ_SEEDS:-}; do cp -n "$d"/* "$work"/ 2>/dev/null || true; done
flags=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
       -artifact_prefix="$art/${FUZZ_NAME:-$h}-")
[ "$h" = onnx_import ] && flags+=(-dict=tests/fuzz/onnx.dict)
case $h in schedule|records) flags+=(-dict=tests/fuzz/schedule.dict) ;; esac
if [ -n "${FUZZ_JOBS:-}" ]; then
    flags+=(-fork="$FUZZ_JOBS" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi
rc=0
SMELT_FUZZ_RUN=${SMELT_FUZZ_RUN:-1} "$bd/fuzz/fuzz_$h" "${flags[@]}" "$@" "$work" || rc=$?
echo "corpus: $(ls "$work" | wc -l) files, $(du -sh "$work" | cut -f1); artifacts: $(ls "$art" | wc -l)"
exit "$rc"
