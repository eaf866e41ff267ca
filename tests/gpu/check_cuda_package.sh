#!/usr/bin/env bash
# A CUDA AOT package: `smelt compile --target cuda -o DIR` must build with
# its Makefile (model.c etc. under -std=c99 -Wall -Wextra -Werror; the
# kernels and host code by nvcc with -Werror all-warnings and the host
# compiler's -Wall -Wextra) for sm_80 and sm_90 (one nvcc run, both in one
# fat binary), and link; tiled_* packages also with -DSMELT_GPU_TIMING and
# its per-call timers.  No GPU is
# needed (none runs here); exit 77 (ctest: skipped) when nvcc is absent.
# usage: check_cuda_package.sh SMELT WORK_DIR MODEL_DIR...
set -euo pipefail
smelt=$1 work=$(realpath -m "$2")
shift 2
export PATH=$PATH:/usr/local/cuda/bin
if ! command -v nvcc >/dev/null; then
    echo "SKIP: nvcc not found (the CUDA toolkit; /usr/local/cuda/bin is searched too)"
    exit 77
fi
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
for dir in "$@"; do
    name=$(basename "$dir")
    pkg=$work/$name
    "$smelt" compile "$dir/model.onnx" --target cuda -o "$pkg" >/dev/null
    [ -f "$pkg/model_gpu.cu" ] || fail "$name: no model_gpu.cu in the package"
    grep -q "__global__ void f0_k0(" "$pkg/model_gpu.cu" || fail "$name: no kernel f0_k0"
    arch="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90"
    (cd "$pkg" && make -s NVCC_ARCH="$arch" >"$work/$name.log" 2>&1) ||
        { cat "$work/$name.log"; fail "$name: make NVCC_ARCH='$arch'"; }
    if grep -qi "warning" "$work/$name.log"; then
        cat "$work/$name.log"
        fail "$name: warnings"
    fi
    [ -x "$pkg/main" ] || fail "$name: no program"
    # tiled products and convolutions: shared-memory tiles between barriers,
    # and the kernel timing the device check builds in (-DSMELT_GPU_TIMING)
    case $name in
    tiled_*)
        grep -q "__shared__ float t" "$pkg/model_gpu.cu" || fail "$name: no __shared__ tile"
        grep -q "__syncthreads();" "$pkg/model_gpu.cu" || fail "$name: no barrier"
        (cd "$pkg" && nvcc -O3 -arch=sm_90 -Werror all-warnings -Xcompiler -Wall,-Wextra -DSMELT_GPU_TIMING \
            -c model_gpu.cu -o timing.o >"$work/$name.timing.log" 2>&1) ||
            { cat "$work/$name.timing.log"; fail "$name: -DSMELT_GPU_TIMING"; }
        ! grep -qi "warning" "$work/$name.timing.log" || { cat "$work/$name.timing.log"; fail "$name: warnings"; }
        # per-call times (scripts/cuda_device_runner.c): an event after each call
        for sym in model_gpu_time_calls model_gpu_call_count model_gpu_call_name model_gpu_call_ms; do
            nm "$pkg/timing.o" | grep -q " T $sym\$" || fail "$name: -DSMELT_GPU_TIMING defines no $sym"
        done
        calls=$(grep -c "smelt_cu_call_mark_([0-9]*)) return" "$pkg/model_gpu.cu")
        want=$(($(sed -n 's/^#define SMELT_N_CALLS //p' "$pkg/model_gpu.cu") + 1))
        [ "$calls" = "$want" ] || fail "$name: $calls call marks for $want events"
        ;;
    esac
    # the fat binary names the architecture of each of its cubins
    grep -aq sm_80 "$pkg/model_gpu.o" || fail "$name: no sm_80 code in model_gpu.o"
    grep -aq sm_90 "$pkg/model_gpu.o" || fail "$name: no sm_90 code in model_gpu.o"
    echo "ok: $name: the CUDA package builds for sm_80 and sm_90 without warnings"
done
