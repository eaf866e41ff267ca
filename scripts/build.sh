#!/usr/bin/env bash
# Release build of the compiler, runtime and CLI into build/ (build/smelt).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
