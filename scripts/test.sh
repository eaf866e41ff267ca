#!/usr/bin/env bash
# Builds the release configuration (what README command 1 uses) and smoke-runs
# it; fuzzes each libFuzzer harness for a minute (clang, build-fuzz/; one
# harness per core at a time); then
# builds with AddressSanitizer + UBSan into build-test/ and runs every test with
# ctest (unit, conformance, model, AOT, error, fuzz-replay tests, and the
# Python package's pytest suite over the sanitized libsmelt.so, run first and
# verbose so that its "N passed" line shows).  Ends with ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build/smelt check models/tiny_cnn
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DSMELT_FUZZ=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_onnx_import fuzz_pipeline fuzz_runtime fuzz_records fuzz_differential fuzz_schedule
(cd build-fuzz && ctest --output-on-failure -j"$(nproc)" -R '^fuzz/.*_brief$')
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSMELT_SANITIZE=ON >/dev/null
cmake --build build-test -j"$(nproc)"
cd build-test
if [ "$#" -gt 0 ]; then
    exec ctest --output-on-failure -j"$(nproc)" --timeout 1500 "$@"
fi
# The Python package's suite first and verbose, so that pytest's own "N passed"
# line is in the log; then everything else, ending with ctest's summary.
pytest_rc=0
if ctest -N -R '^python/pytest$' | grep -q 'python/pytest'; then
    ctest -V -R '^python/pytest$' --timeout 1500 || pytest_rc=$?
fi
ctest --output-on-failure -j"$(nproc)" --timeout 1500 -E '^python/pytest$'
exit "$pytest_rc"
