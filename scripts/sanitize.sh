#!/usr/bin/env bash
# Sanitizer runs (issue 5); results are recorded in docs/fuzzing.md.
#
#   scripts/sanitize.sh [asan|valgrind|tsan]...   (default: all three)
#
#   asan      the whole suite under ASan + UBSan (scripts/test.sh, build-test/)
#   valgrind  memcheck on the runtime tests and on one compiled model run
#             (smelt run models/tiny_cnn/model.onnx) from a plain build
#             (build-vg/), --leak-check=full --error-exitcode=1
#   tsan      ThreadSanitizer build (build-tsan/, -DSMELT_TSAN=ON) of
#             test_runtime_pool and test_runtime_model, run clean
# Each step prints PASS or FAIL; the script exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(asan valgrind tsan)
failed=0

result() { # name status
    if [ "$2" -eq 0 ]; then echo "== $1: PASS"; else echo "== $1: FAIL"; failed=1; fi
}

run_asan() {
    bash scripts/test.sh
    result "asan+ubsan suite" $?
}

run_valgrind() {
    # plain gcc -O2 gives maybe-uninitialized warnings (tensorize.c, interp.c)
    # that the -O1/ASan builds do not: no -Werror here
    cmake -S . -B build-vg -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSMELT_WERROR=OFF >/dev/null &&
        cmake --build build-vg -j"$jobs" --target test_runtime_pool test_runtime_model smelt_cli ||
        { result "valgrind build" 1; return; }
    local vg=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect
              --error-exitcode=1)
    for t in test_runtime_pool test_runtime_model; do
        "${vg[@]}" "build-vg/tests/$t" >/dev/null
        result "valgrind $t" $?
    done
    # a private cache: the model is built by cc outside valgrind's view
    # (valgrind follows no children), then loaded and run under it; avx2,
    # as valgrind does not know AVX-512 (the host target's -march=native)
    local cache
    cache=$(mktemp -d)
    SMELT_CACHE_DIR="$cache" "${vg[@]}" --trace-children=no build-vg/smelt run \
        models/tiny_cnn/model.onnx --target avx2 --threads 2 >/dev/null
    result "valgrind smelt run tiny_cnn" $?
    rm -rf "$cache"
}

run_tsan() {
    # gcc -fsanitize=thread gives false maybe-uninitialized warnings: no -Werror
    cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSMELT_TSAN=ON -DSMELT_WERROR=OFF \
        >/dev/null &&
        cmake --build build-tsan -j"$jobs" --target test_runtime_pool test_runtime_model ||
        { result "tsan build" 1; return; }
    for t in test_runtime_pool test_runtime_model; do
        TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "build-tsan/tests/$t" >/dev/null
        result "tsan $t" $?
    done
}

for s in "${steps[@]}"; do
    case "$s" in
    asan) run_asan ;;
    valgrind) run_valgrind ;;
    tsan) run_tsan ;;
    *) echo "unknown step '$s' (asan, valgrind, tsan)"; exit 2 ;;
    esac
done
exit "$failed"
