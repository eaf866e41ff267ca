#!/bin/sh
# AOT packages inside applications (issue 15, part 4): model.h's size macros
# and model_run_static with static buffers, the Makefile's ARCH (portable by
# default, native on request) and lib target, and no stale files when a
# package is written again into the same folder.
# usage: check_aot_embedding.sh SMELT MODEL_DIR
smelt=$1 model=$2/model.onnx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SMELT_CACHE_DIR="$tmp/cache"
here=$(cd "$(dirname "$0")" && pwd)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pkg=$tmp/pkg
"$smelt" compile "$model" -o "$pkg" >/dev/null || { echo "FAIL: compile -o"; exit 1; }
for m in MODEL_ARENA_BYTES MODEL_WEIGHT_BYTES MODEL_INPUT_0_BYTES MODEL_OUTPUT_0_BYTES MODEL_HEAP_FREE; do
    grep -q "#define $m " "$pkg/model.h" || fail "model.h lacks $m"
done
(cd "$pkg" && make -s >/dev/null 2>&1 && ./main >/dev/null) || fail "make && ./main"
(cd "$pkg" && make -B -n | grep -q -- "-march=native") && fail "the default build uses -march=native"
(cd "$pkg" && make -B -n ARCH=native | grep -q -- "-march=native") || fail "ARCH=native lacks -march=native"
(cd "$pkg" && make -s lib >/dev/null 2>&1 && test -f libmodel.a) || fail "make lib"
cc -std=c99 -O2 -Wall -Werror -I "$pkg" -o "$tmp/static_main" "$here/static_main.c" \
    -L "$pkg" -lmodel -lpthread -lm || fail "building static_main against libmodel.a"
"$tmp/static_main" "$pkg/weights.bin" || fail "static_main"
# written again with the weights compiled in: no weights.bin, no old build products
"$smelt" compile "$model" -o "$pkg" --embed-weights >/dev/null || fail "compile -o again"
for f in weights.bin main main.o model.o libmodel.a; do
    [ -e "$pkg/$f" ] && fail "stale $f left in the package"
done
(cd "$pkg" && make -s >/dev/null 2>&1 && ./main >/dev/null) || fail "the rewritten package builds and runs"
echo "$((fails == 0 ? 1 : 0)) passed, $fails failed"
[ "$fails" = 0 ]
