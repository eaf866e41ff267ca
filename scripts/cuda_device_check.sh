#!/usr/bin/env bash
# smelt's CUDA packages checked on an NVIDIA GPU (scripts/cuda_device_check.py
# does the work).
#
#   scripts/cuda_device_check.sh prepare [DIR]   here, where smelt is built
#       (build/smelt) and torch/onnxruntime are installed: compiles tiny_cnn,
#       small MLP/elementwise/normalisation/pooling/Gather/long-reduction/LSTM
#       models, a 512-wide MLP, the tiny BERT and GPT-2 and ResNet-18 to CUDA
#       packages in DIR (default build/cuda_check, about 56 MiB), with their
#       inputs and expected outputs.
#   scripts/cuda_device_check.sh run [DIR] [--runs N]   on the GPU machine
#       (nvcc, make, python3 + numpy; onnxruntime for CPU timings): builds
#       each package for sm_90, runs it, compares the outputs, times it and
#       ONNX Runtime (CPU), prints PASS/FAIL; $OUT/cuda_device_check.txt
#       keeps the summary.  Without a GPU it builds, says so and stops.
#
# With the device tool, after `prepare` here:
#   command: bash scripts/cuda_device_check.sh run build/cuda_check
#   carry:   ["build/cuda_check"]
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-}
[ $# -gt 0 ] && shift
dir=build/cuda_check
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
    dir=$1
    shift
fi
case "$cmd" in
prepare) exec python3 scripts/cuda_device_check.py prepare "$dir" "$@" ;;
run) exec python3 scripts/cuda_device_check.py run "$dir" "$@" ;;
*)
    sed -n '2,20p' "$0"
    exit 2
    ;;
esac
