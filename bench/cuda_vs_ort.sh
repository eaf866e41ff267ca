#!/usr/bin/env bash
# smelt's CUDA packages against ONNX Runtime (its CUDA execution provider when
# onnxruntime-gpu is installed, and the CPU) on this machine's NVIDIA GPU:
# prepares the packages (needs build/smelt, torch for ResNet-18) and runs
# scripts/cuda_device_check.sh (build, run, compare, time).  Without a GPU it
# prints a clear skip and exits 0.  usage: bench/cuda_vs_ort.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "SKIP: no NVIDIA GPU here (nvidia-smi -L lists none): nothing to compare"
    exit 0
fi
bash scripts/cuda_device_check.sh prepare build/cuda_bench
bash scripts/cuda_device_check.sh run build/cuda_bench "$@"
