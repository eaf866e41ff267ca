#!/usr/bin/env bash
# Sanitizer runs (issue 5); results are recorded in docs/fuzzing.md.
#
#   scripts/sanitize.sh [asan|valgrind|tsan]...   (default: all three)
#   cmake --build BUILD --target sanitize         (the same, all three)
#
#   asan      the whole test suite (ctest) under ASan + UBSan, from an ASan
#             build (build-test/, as scripts/test.sh makes it)
#   valgrind  memcheck on the runtime tests and on one compiled model run
#             (smelt run models/tiny_cnn/model.onnx) from a plain build
#             (build-vg/), --leak-check=full --error-exitcode=1
#   tsan      ThreadSanitizer build (build-tsan/, -DSMELT_TSAN=ON) of
#             test_runtime_pool, test_runtime_model and smelt (a compiled
#             tiny_cnn run on 4 threads), run clean
#
# Environment: JOBS (build and ctest jobs, default 2); SANITIZE_DIR_PREFIX
# puts the three builds in PREFIXasan, PREFIXvg, PREFIXtsan instead (so
# several people can run it in one tree); ASAN_CTEST_ARGS are passed to
# ctest (e.g. "-E ^models/" to leave out the torchvision models).
# Each step prints PASS or FAIL; the script exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
prefix=${SANITIZE_DIR_PREFIX:-}
asan_dir=${prefix:+${prefix}asan}
asan_dir=${asan_dir:-build-test}
vg_dir=${prefix:+${prefix}vg}
vg_dir=${vg_dir:-build-vg}
tsan_dir=${prefix:+${prefix}tsan}
tsan_dir=${tsan_dir:-build-tsan}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(asan valgrind tsan)
failed=0

result() { # name status
    if [ "$2" -eq 0 ]; then echo "== $1: PASS"; else echo "== $1: FAIL"; failed=1; fi
}

run_asan() {
    cmake -S . -B "$asan_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSMELT_SANITIZE=ON >/dev/null &&
        cmake --build "$asan_dir" -j"$jobs" || { result "asan build" 1; return; }
    # shellcheck disable=SC2086
    (cd "$asan_dir" && ctest --output-on-failure -j"$jobs" --timeout 1500 ${ASAN_CTEST_ARGS:-})
    result "asan+ubsan suite" $?
}

run_valgrind() {
    # plain gcc -O2 gives maybe-uninitialized warnings (tensorize.c, interp.c)
    # that the -O1/ASan builds do not: no -Werror here
    cmake -S . -B "$vg_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSMELT_WERROR=OFF >/dev/null &&
        cmake --build "$vg_dir" -j"$jobs" --target test_runtime_pool test_runtime_model smelt_cli ||
        { result "valgrind build" 1; return; }
    local vg=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect
              --error-exitcode=1)
    for t in test_runtime_pool test_runtime_model; do
        "${vg[@]}" "$vg_dir/tests/$t" >/dev/null
        result "valgrind $t" $?
    done
    # a private cache: the model is built by cc outside valgrind's view
    # (valgrind follows no children), then loaded and run under it; avx2,
    # as valgrind does not know AVX-512 (the host target's -march=native)
    local cache
    cache=$(mktemp -d)
    SMELT_CACHE_DIR="$cache" "${vg[@]}" --trace-children=no "$vg_dir/smelt" run \
        models/tiny_cnn/model.onnx --target avx2 --threads 2 >/dev/null
    result "valgrind smelt run tiny_cnn" $?
    rm -rf "$cache"
}

run_tsan() {
    # gcc -fsanitize=thread gives false maybe-uninitialized warnings: no -Werror
    cmake -S . -B "$tsan_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSMELT_TSAN=ON \
        -DSMELT_WERROR=OFF >/dev/null &&
        cmake --build "$tsan_dir" -j"$jobs" --target test_runtime_pool test_runtime_model test_api_threads smelt_cli ||
        { result "tsan build" 1; return; }
    local tsan_opts="halt_on_error=1 second_deadlock_stack=1"
    for t in test_runtime_pool test_runtime_model test_api_threads; do
        TSAN_OPTIONS=$tsan_opts "$tsan_dir/tests/$t" >/dev/null
        result "tsan $t" $?
    done
    # generated parallel loops handed out by the (instrumented) pool
    local cache
    cache=$(mktemp -d)
    TSAN_OPTIONS=$tsan_opts SMELT_CACHE_DIR="$cache" "$tsan_dir/smelt" run \
        models/tiny_cnn/model.onnx --threads 4 --repeat 20 >/dev/null
    result "tsan smelt run tiny_cnn --threads 4" $?
    rm -rf "$cache"
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
