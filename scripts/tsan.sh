#!/usr/bin/env bash
# ThreadSanitizer run of the concurrency tests (issue 15): builds build-tsan/
# with -DSMELT_TSAN=ON and runs
#   test_api_threads    2 models x 8 threads through smelt_model_run, every
#                       output compared bit for bit with the serial run
#   test_runtime_model  concurrent runs on one runtime model, invokes refused
#   test_runtime_pool   the worker pool
# usage: scripts/tsan.sh [BUILD_DIR] [CALLS_PER_THREAD]   (defaults build-tsan, 200)
# Generated model code is built by the system compiler without TSan, so
# races inside a generated kernel are not seen; everything around it is.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-tsan}
calls=${2:-200}
jobs=${SMELT_JOBS:-2}
# gcc -fsanitize=thread gives false maybe-uninitialized warnings: no -Werror
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSMELT_TSAN=ON -DSMELT_WERROR=OFF >/dev/null &&
    cmake --build "$dir" -j"$jobs" --target test_api_threads test_runtime_model test_runtime_pool ||
    { echo "tsan: build failed"; exit 1; }
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
failed=0
for t in test_api_threads test_runtime_model test_runtime_pool; do
    if TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" SMELT_CACHE_DIR="$cache" \
        SMELT_STRESS_CALLS="$calls" "$dir/tests/$t" >"$cache/$t.log" 2>&1; then
        echo "tsan: PASS $t ($(grep -E 'calls on|passed' "$cache/$t.log" | head -1))"
    else
        echo "tsan: FAIL $t"
        sed 's/^/    /' "$cache/$t.log" | head -80
        failed=1
    fi
done
exit "$failed"
