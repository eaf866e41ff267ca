#!/usr/bin/env bash
# Installs everything smelt needs to build, test and benchmark, from Debian's
# packages.  Idempotent: packages already present are not reinstalled.
set -euo pipefail

DEBIAN_PACKAGES=(
    build-essential cmake pkg-config
    protobuf-c-compiler libprotobuf-c-dev   # ONNX decoding
    libonnx-dev                             # onnx.proto, compiled at build time
    libonnx-testdata                        # ONNX backend node tests (pinned: onnx 1.12)
    python3 python3-numpy python3-onnx      # test-model generation
    python3-torch python3-torchvision       # real architectures exported by torch.onnx
    graphviz                                # smelt graph -o x.svg
    clang libclang-rt-14-dev                # libFuzzer, sanitizers
    valgrind
    libxgboost-dev                          # the tuner's cost model (XGBoost C API)
    libopenmpi-dev openmpi-bin              # smelt tune under mpirun (distributed measurement)
    gcc-aarch64-linux-gnu libc6-dev-arm64-cross  # --target aarch64: the cross compiler and libc
    qemu-user file                          # aarch64 code run under qemu-aarch64 (smelt check, tests)
    pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo  # --target opencl: run on PoCL (CPU OpenCL)
)

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    echo "setup: all Debian packages present"
fi

# ONNX Runtime: the peer in bench/bench_models.py (PyPI, for the python3 on PATH;
# Debian's /usr/bin/python3 keeps torch/onnx for generating test models).
if ! python3 -c "import onnxruntime, numpy" 2>/dev/null; then
    echo "setup: installing onnxruntime (PyPI) for the benchmarks"
    python3 -m pip install --quiet --disable-pip-version-check onnxruntime numpy
fi
# The Python package's tests (python/tests, run by ctest as python/pytest):
# pytest and onnx for the same python3.
if ! python3 -c "import pytest, onnx, onnxruntime, numpy" 2>/dev/null; then
    echo "setup: installing pytest and onnx (PyPI) for the Python package's tests"
    python3 -m pip install --quiet --disable-pip-version-check pytest onnx==1.23.2 onnxruntime numpy
fi
# The current-onnx conformance tests (conformance/current_onnx_*) generate the
# node tests of this onnx release; tests/conformance/expected_failures_current.txt
# is made for it.
if [ "$(python3 -c 'import onnx; print(onnx.__version__)' 2>/dev/null)" != "1.23.2" ]; then
    echo "setup: installing onnx 1.23.2 (PyPI) for the current-onnx node tests"
    python3 -m pip install --quiet --disable-pip-version-check onnx==1.23.2
fi
