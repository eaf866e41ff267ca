#!/usr/bin/env bash
# smelt's CUDA packages checked on an NVIDIA GPU (scripts/cuda_device_check.py
# does the work).
#
#   scripts/cuda_device_check.sh prepare [DIR]   here, where smelt is built
#       (build/smelt) and torch/onnxruntime are installed: compiles tiny_cnn,
#       small MLP/elementwise/normalisation/pooling/Gather/long-reduction/LSTM/
#       tiled-product/tiled-convolution models, a 512-wide MLP, three large
#       MatMuls (1024 x 1024 x 1024; BERT-base's FFN, 128 x 768 x 3072 and
#       128 x 3072 x 768), the tiny BERT and GPT-2, ResNet-18 and ResNet-50 to
#       CUDA packages in DIR (default build/cuda_check, about 20 MiB): each
#       twice, with the default (tiled) schedules and with SMELT_GPU_TILE=0
#       (one thread per output), with inputs and expected outputs; weights
#       over 8 MiB are regenerated on the GPU machine (cuda_device_check.py).
#   scripts/cuda_device_check.sh run [DIR] [--runs N]   on the GPU machine
#       (nvcc, make, python3 + numpy; onnxruntime for CPU timings, cuBLAS
#       for a peer of the MatMuls): builds each package for sm_90 with kernel
#       timing, runs it, compares the outputs, prints run and kernel times
#       (and, for models with a tiled stage, each call's kernel time in every
#       package side by side, with its tile and layer),
#       GFLOP/s, tiled vs plain and PASS/FAIL; $OUT/cuda_device_check.txt
#       keeps the summary.  Without a GPU it builds, says so and stops.
#
# With the device tool, after `prepare` here:
#   command: bash scripts/cuda_device_check.sh run build/cuda_check --runs 50
#   carry:   ["build/cuda_check"]
#
# The .py beside this script does the work, so a copy of both in a folder
# of the repository root (e.g. build-gpu3/, carried to the GPU machine) runs
# those versions; DIR is relative to the repository root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
cmd=${1:-}
[ $# -gt 0 ] && shift
dir=build/cuda_check
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
    dir=$1
    shift
fi
case "$cmd" in
prepare) exec python3 "$here/cuda_device_check.py" prepare "$dir" "$@" ;;
run) exec python3 "$here/cuda_device_check.py" run "$dir" "$@" ;;
*)
    sed -n '2,30p' "$0"
    exit 2
    ;;
esac
