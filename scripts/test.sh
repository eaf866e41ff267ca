#!/usr/bin/env bash
# Builds the release configuration (what README command 1 uses) and smoke-runs
# it, then builds with AddressSanitizer + UBSan into build-test/ and runs every
# test with ctest (unit, conformance, model, AOT, error tests).  Ends with
# ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build/smelt check models/tiny_cnn
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSMELT_SANITIZE=ON >/dev/null
cmake --build build-test -j"$(nproc)"
cd build-test
ctest --output-on-failure -j"$(nproc)" --timeout 1500 "$@"
