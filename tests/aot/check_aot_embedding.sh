#!/bin/sh
# AOT packages inside applications (issue 15, part 4): model.h's size macros
# and model_run_static with static buffers, the Makefile's ARCH (portable by
# default, native on request) and lib target, and no stale files when a
# package is written again into the same folder.
# Two packages built with --prefix link into one program.
# usage: check_aot_embedding.sh SMELT MODEL_DIR SECOND_MODEL.onnx [WORKSPACE_MODEL.onnx]
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
cc -std=c99 -O2 -Wall -Wextra -Werror -I "$pkg" -o "$tmp/static_main" "$here/static_main.c" \
    -L "$pkg" -lmodel -lpthread -lm || fail "building static_main against libmodel.a"
"$tmp/static_main" "$pkg/weights.bin" || fail "static_main"
# a model whose generated code needs a workspace (Softmax over 32000: its
# exponentials, 128 KB, after the arena): MODEL_ARENA_BYTES must count it
if [ -n "${4:-}" ]; then
    ws=$tmp/ws
    "$smelt" compile "$4" -o "$ws" >/dev/null || fail "compile -o of the workspace model"
    arena=$(sed -n 's/^#define MODEL_ARENA_BYTES \([0-9]*\)u$/\1/p' "$ws/model.h")
    [ "${arena:-0}" -ge 128000 ] || fail "MODEL_ARENA_BYTES ($arena) lacks the 128000-byte workspace"
    : > "$ws/empty.bin"
    (cd "$ws" && make -s lib >/dev/null 2>&1) &&
        cc -std=c99 -O2 -Wall -Wextra -Werror -I "$ws" -o "$tmp/ws_main" "$here/static_main.c" \
            -L "$ws" -lmodel -lpthread -lm &&
        "$tmp/ws_main" "$ws/empty.bin" >/dev/null || fail "static_main on the workspace model"
fi
# written again with the weights compiled in: no weights.bin, no old build products
"$smelt" compile "$model" -o "$pkg" --embed-weights >/dev/null || fail "compile -o again"
for f in weights.bin main main.o model.o libmodel.a; do
    [ -e "$pkg/$f" ] && fail "stale $f left in the package"
done
(cd "$pkg" && make -s >/dev/null 2>&1 && ./main >/dev/null) || fail "the rewritten package builds and runs"
# two packages with different prefixes in one program (one runtime copy)
"$smelt" compile "$model" -o "$tmp/two/cnn" --prefix cnn >/dev/null || fail "compile --prefix cnn"
"$smelt" compile "$3" -o "$tmp/two/att" --prefix att >/dev/null || fail "compile --prefix att"
grep -q "cnn_create" "$tmp/two/cnn/model.h" && grep -q "CNN_ARENA_BYTES" "$tmp/two/cnn/model.h" ||
    fail "cnn/model.h lacks the prefixed names"
grep -q "smelt_rt_model_from_info_file(&smelt_module_info" "$tmp/two/cnn/model.c" ||
    fail "model.c renamed a runtime function"
cc -std=c99 -O2 -Wall -Wextra -Werror -I "$tmp/two" -I "$tmp/two/cnn" -o "$tmp/two_models" "$here/two_models.c" \
    "$tmp/two/cnn/model.c" "$tmp/two/att/model.c" "$tmp/two/cnn/smelt_rt_pool.c" \
    "$tmp/two/cnn/smelt_rt_model.c" -lpthread -lm || fail "linking two prefixed packages"
"$tmp/two_models" "$tmp/two/cnn/weights.bin" "$tmp/two/att/weights.bin" || fail "two_models"
nm "$tmp/two_models" | grep -q " cnn_module_info" || fail "no cnn_module_info symbol"
expect_refused=$("$smelt" compile "$model" -o "$tmp/bad" --prefix "9x-y" 2>&1)
echo "$expect_refused" | grep -q "is not a C identifier" || fail "--prefix 9x-y was not refused: $expect_refused"
"$smelt" compile "$model" --prefix cnn 2>&1 | grep -q "needs -o" || fail "--prefix without -o"

echo "$((fails == 0 ? 1 : 0)) passed, $fails failed"
[ "$fails" = 0 ]
