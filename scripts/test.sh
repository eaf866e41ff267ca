#!/usr/bin/env bash
# Builds the release configuration (what README command 1 uses) and smoke-runs
# it; fuzzes each libFuzzer harness for a minute (clang, build-fuzz/; one
# harness per core at a time); then
# builds with AddressSanitizer + UBSan into build-test/ and runs every test with
# ctest (unit, conformance, model, AOT, error, fuzz-replay tests, and the
# Python package's pytest suite over the sanitized libsmelt.so).  Ends with
# ctest's summary.
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
ctest --output-on-failure -j"$(nproc)" --timeout 1500 "$@"
