#!/usr/bin/env bash
# Generated C for small graphs must match the checked-in golden files, so
# codegen drift shows up in review.  SMELT_UPDATE_GOLDEN=1 rewrites them.
# usage: check_graph_golden.sh SMELT GOLDEN_DIR
set -u
smelt=$1 golden=$2
nodes=/usr/include/onnx/backend/test/data/node
passed=0 failed=0
for case in "test_add_bcast avx512" "test_softmax_axis_1 avx2" "test_basic_conv_with_padding generic"; do
    set -- $case
    want="$golden/graph_$1_$2.c"
    got=$(mktemp)
    if ! "$smelt" compile "$nodes/$1/model.onnx" --target "$2" --dump-ir=c > "$got"; then
        echo "FAIL $1 ($2): smelt compile failed"; failed=$((failed + 1)); rm -f "$got"; continue
    fi
    if [ "${SMELT_UPDATE_GOLDEN:-0}" = 1 ]; then cp "$got" "$want"; fi
    if diff -u "$want" "$got" > /dev/null; then
        echo "PASS $1 ($2)"; passed=$((passed + 1))
    else
        echo "FAIL $1 ($2): generated C differs from $want (SMELT_UPDATE_GOLDEN=1 to accept):"
        diff -u "$want" "$got" | head -40
        failed=$((failed + 1))
    fi
    rm -f "$got"
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
