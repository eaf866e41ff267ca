#!/usr/bin/env bash
# `smelt check --target opencl` on small models, run on the OpenCL device
# (PoCL here): outputs compared with the test data (PyTorch's or ONNX
# Runtime's), and `compile --stats` must show every function as OpenCL
# kernels (not for --no-stats: models with symbolic dims, compiled per input
# signature).  Exit 77 (ctest: skipped) when no OpenCL platform is present.
# usage: check_opencl.sh SMELT [--schedule FILE | --no-stats] MODEL_DIR...
set -euo pipefail
smelt=$1
shift
opts=()
stats=1
if [ "${1:-}" = --no-stats ]; then
    stats=0
    shift
elif [ "${1:-}" = --schedule ]; then
    opts=(--schedule "$2")
    shift 2
fi
shopt -s nullglob
icds=(/etc/OpenCL/vendors/*.icd)
if ((${#icds[@]} == 0)); then
    echo "SKIP: no OpenCL platform (no ICD in /etc/OpenCL/vendors; scripts/setup.sh installs PoCL)"
    exit 77
fi
fail() { echo "FAIL: $*" >&2; exit 1; }
"$smelt" check --target opencl "${opts[@]}" --rtol 1e-3 --atol 1e-4 "$@"
((stats)) || exit 0
for dir in "$@"; do
    stats=$("$smelt" compile --target opencl "${opts[@]}" --stats "$dir/model.onnx")
    n_funcs=$(grep -c '^f[0-9]* ' <<<"$stats" || true)
    n_gpu=$(grep -c '^f[0-9]* .*: opencl kernel f[0-9]*_k0 ' <<<"$stats" || true)
    ((n_funcs > 0)) || fail "$dir: compile --stats lists no function: $stats"
    ((n_funcs == n_gpu)) || fail "$dir: $((n_funcs - n_gpu)) function(s) not on OpenCL kernels: $stats"
    echo "ok: $(basename "$dir"): $n_funcs function(s), all OpenCL kernels"
done
