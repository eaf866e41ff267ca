#!/usr/bin/env bash
# The bigger aarch64 checks, not in CI (minutes under qemu): every test
# model (torchvision CNNs, transformers) through `smelt check --target
# aarch64` (cross-built with aarch64-linux-gnu-gcc, run under qemu-aarch64,
# outputs compared with the exporting framework's), and the ResNet-18 AOT
# package built with `make CC=aarch64-linux-gnu-gcc` (-Wall -Wextra -Werror)
# and run under qemu, and its model.c with tests/aot's driver on the test
# data (outputs compared).  Needs scripts/setup.sh's packages and the test models
# (ctest -R models/ generates them under BUILD/models).
# usage: scripts/check_aarch64.sh [BUILD_DIR [MODELS_DIR]]   (default: build, BUILD_DIR/models)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build}")
smelt=$build/smelt
models=${2:-$build/models}
[ -x "$smelt" ] || { echo "no $smelt: build first" >&2; exit 2; }
[ -d "$models" ] || { echo "no $models: run ctest -R models/ first (it generates the models)" >&2; exit 2; }
status=0
for dir in "$models"/*/; do
    [ -f "$dir/model.onnx" ] || continue
    nice -n 19 "$smelt" check --target aarch64 --rtol 1e-3 --atol 1e-4 "$dir" | tail -1 |
        sed "s|^|$(basename "$dir"): |" || status=1
done
if [ -d "$models/resnet18" ]; then
    nice -n 19 "$root/tests/aarch64/check_package.sh" "$smelt" "$models/resnet18" "$build/aarch64/resnet18" ||
        status=1
    AOT_CC=aarch64-linux-gnu-gcc AOT_EMULATOR="qemu-aarch64 -L /usr/aarch64-linux-gnu" nice -n 19 \
        /usr/bin/python3 "$root/tests/aot/check_aot.py" "$smelt" "$models/resnet18" \
        "$build/aarch64/resnet18_aot" --target aarch64 || status=1
fi
exit $status
