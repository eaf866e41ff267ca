#!/usr/bin/env bash
# Soak test (minutes; not in CI): THREADS threads run the tiny CNN and the
# small attention model through the C API for SECONDS, one line every REPORT
# seconds with throughput and resident memory (flat = no growth).
# usage: scripts/soak.sh [SECONDS=600] [THREADS=8] [REPORT=30]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build -j2 --target smelt_soak >/dev/null
exec build/tests/smelt_soak --seconds "${1:-600}" --threads "${2:-8}" --report "${3:-30}" \
    models/tiny_cnn/model.onnx tests/models/small/attention.onnx
