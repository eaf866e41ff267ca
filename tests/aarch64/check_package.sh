#!/usr/bin/env bash
# An aarch64 AOT package: `smelt compile --target aarch64 -o DIR` must build
# with `make CC=aarch64-linux-gnu-gcc` under -std=c99 -Wall -Wextra -Werror
# (the package's own Makefile flags), and its example program must run
# under qemu-aarch64 and print every output.  (Output values are compared
# with the test data by `smelt check --target aarch64`.)
# usage: check_package.sh SMELT MODEL_DIR WORK_DIR
set -euo pipefail
smelt=$1 model=$2 work=$(realpath -m "$3")
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
"$smelt" compile "$model/model.onnx" --target aarch64 -o "$work/pkg" >/dev/null
grep -q -- "-Wextra -Werror" "$work/pkg/Makefile" || fail "the package's CFLAGS lack -Wextra -Werror"
grep -q "ARCH_FLAGS_portable = -march=armv8-a" "$work/pkg/Makefile" || fail "the package is not built for ARMv8-A"
grep -q "immintrin" "$work/pkg/model.c" && fail "x86 intrinsics in an aarch64 package"
(cd "$work/pkg" && make -s CC=aarch64-linux-gnu-gcc >"$work/make.log" 2>&1) ||
    { cat "$work/make.log"; fail "make CC=aarch64-linux-gnu-gcc"; }
file -b "$work/pkg/main" | grep -q "ARM aarch64" || fail "main is not an aarch64 executable"
(cd "$work/pkg" && qemu-aarch64 -L /usr/aarch64-linux-gnu ./main weights.bin >"$work/run.log" 2>&1) ||
    { cat "$work/run.log"; fail "./main under qemu-aarch64"; }
grep -q "^output '" "$work/run.log" || { cat "$work/run.log"; fail "no output printed"; }
grep -q " nan 0 " "$work/run.log" || { cat "$work/run.log"; fail "NaN in the outputs"; }
echo "ok: $(grep -c "^output '" "$work/run.log") output(s) from the aarch64 package under qemu"
