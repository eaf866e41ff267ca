#!/bin/sh
# Data the reference refuses (an index out of range) fails the compiled path
# too, with the reference's message, on 1 and 2 threads; in-range and
# negative (wrapping) indices still run; an int32 Div by zero or of the
# minimum value by -1 fails the compiled C like the reference; so do RotaryEmbedding
# position_ids outside the caches, and a Compress condition true past the axis.  Usage: check_data_errors.sh SMELT MODELS_DIR
set -u
smelt=$1
model=$2/small/gather_chain.onnx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY' || exit 1
import sys, numpy as np
from onnx import numpy_helper as h
for name, v in (("bad", 3), ("good", 1), ("neg", -1)):
    open(f"{sys.argv[1]}/{name}.pb", "wb").write(
        h.from_array(np.full((4, 4, 4, 4), v, dtype=np.int64), "v0").SerializeToString())
import onnx
from onnx import helper as oh, TensorProto as T
g = oh.make_graph([oh.make_node("Div", ["a", "b"], ["q"], name="div0")], "div",
                  [oh.make_tensor_value_info(n, T.INT32, [3]) for n in "ab"],
                  [oh.make_tensor_value_info("q", T.INT32, [3])])
onnx.save(oh.make_model(g, opset_imports=[oh.make_opsetid("", 14)]), f"{sys.argv[1]}/div.onnx")
for name, a, b in (("overflow", [7, -2**31, 5], [2, -1, -1]), ("zero", [7, 1, 5], [2, 0, 1]),
                   ("fine", [7, -2**31, 5], [2, 1, -1])):
    for n, v in (("a", a), ("b", b)):
        open(f"{sys.argv[1]}/{name}_{n}.pb", "wb").write(
            h.from_array(np.array(v, dtype=np.int32), n).SerializeToString())
g = oh.make_graph([oh.make_node("RotaryEmbedding", ["x", "c", "s", "p"], ["y"], name="rope0")], "rope",
                  [oh.make_tensor_value_info("x", T.FLOAT, [1, 2, 2, 4]),
                   oh.make_tensor_value_info("c", T.FLOAT, [3, 2]),
                   oh.make_tensor_value_info("s", T.FLOAT, [3, 2]),
                   oh.make_tensor_value_info("p", T.INT64, [1, 2])],
                  [oh.make_tensor_value_info("y", T.FLOAT, [1, 2, 2, 4])])
onnx.save(oh.make_model(g, opset_imports=[oh.make_opsetid("", 23)]), f"{sys.argv[1]}/rope.onnx")
for n, v in (("x", np.ones((1, 2, 2, 4), np.float32)), ("c", np.ones((3, 2), np.float32)),
             ("s", np.zeros((3, 2), np.float32)), ("bad_p", np.array([[0, 7]], np.int64)),
             ("neg_p", np.array([[-1, 0]], np.int64)), ("good_p", np.array([[2, 0]], np.int64))):
    open(f"{sys.argv[1]}/rope_{n}.pb", "wb").write(h.from_array(v, n.split("_")[-1]).SerializeToString())
g = oh.make_graph([oh.make_node("Compress", ["x", "c"], ["y"], name="cmp0", axis=1)], "compress",
                  [oh.make_tensor_value_info("x", T.FLOAT, [2, 6, 2]),
                   oh.make_tensor_value_info("c", T.BOOL, [8])],
                  [oh.make_tensor_value_info("y", T.FLOAT, [2, "K", 2])])
onnx.save(oh.make_model(g, opset_imports=[oh.make_opsetid("", 11)]), f"{sys.argv[1]}/compress.onnx")
open(f"{sys.argv[1]}/cmp_x.pb", "wb").write(h.from_array(np.ones((2, 6, 2), np.float32), "x").SerializeToString())
for name, c in (("bad", [0, 1, 0, 0, 0, 0, 0, 1]), ("good", [0, 1, 0, 0, 0, 1, 0, 0])):
    open(f"{sys.argv[1]}/cmp_{name}.pb", "wb").write(h.from_array(np.array(c, bool), "c").SerializeToString())
PY
fail=0
"$smelt" run "$model" --input "$tmp/bad.pb" --reference >/dev/null 2>"$tmp/ref.txt" && { echo "reference accepted bad indices"; fail=1; }
grep -q "node 'n3' (GatherElements): index 9 at position 0 is out of range for axis 0 of size 4" "$tmp/ref.txt" || { echo "reference message:"; cat "$tmp/ref.txt"; fail=1; }
for threads in 1 2; do
    if "$smelt" run "$model" --input "$tmp/bad.pb" --threads $threads >/dev/null 2>"$tmp/jit.txt"; then
        echo "compiled ($threads threads) accepted bad indices"; fail=1
    fi
    grep -q "$(grep -o "node 'n3'.*" "$tmp/ref.txt")" "$tmp/jit.txt" || { echo "compiled message ($threads threads):"; cat "$tmp/jit.txt"; fail=1; }
done
for input in good neg; do
    "$smelt" run "$model" --input "$tmp/$input.pb" >/dev/null 2>"$tmp/ok.txt" || { echo "compiled failed on $input indices:"; cat "$tmp/ok.txt"; fail=1; }
done
# expect_error WANT MODEL ARGS...: both paths refuse the run, naming WANT
expect_error() {
    want=$1; shift
    for mode in --reference --compiled; do
        flag=$([ "$mode" = --reference ] && echo --reference)
        # shellcheck disable=SC2086
        if "$smelt" run "$@" $flag >/dev/null 2>"$tmp/err.txt"; then
            echo "accepted ($mode): $*"; fail=1
        fi
        grep -q "$want" "$tmp/err.txt" || { echo "message ($mode) for $*:"; cat "$tmp/err.txt"; fail=1; }
    done
}
div=$tmp/div.onnx
for case in "overflow:integer division overflow" "zero:integer division by zero"; do
    name=${case%%:*}
    expect_error "node 'div0' (Div): ${case#*:}" "$div" --input "a=$tmp/${name}_a.pb" --input "b=$tmp/${name}_b.pb"
done
"$smelt" run "$div" --input "a=$tmp/fine_a.pb" --input "b=$tmp/fine_b.pb" >/dev/null 2>"$tmp/ok.txt" || { echo "compiled Div failed on legal values:"; cat "$tmp/ok.txt"; fail=1; }
# RotaryEmbedding's position_ids index the caches: out of range (no wrapping) is refused
rope=$tmp/rope.onnx
for case in "bad:index 7 at position 1" "neg:index -1 at position 0"; do
    name=${case%%:*}
    expect_error "node 'rope0' (RotaryEmbedding): ${case#*:} is out of range for axis 0 of size 3" \
        "$rope" --input "x=$tmp/rope_x.pb" --input "c=$tmp/rope_c.pb" --input "s=$tmp/rope_s.pb" \
        --input "p=$tmp/rope_${name}_p.pb"
done
"$smelt" run "$rope" --input "x=$tmp/rope_x.pb" --input "c=$tmp/rope_c.pb" --input "s=$tmp/rope_s.pb" \
    --input "p=$tmp/rope_good_p.pb" >/dev/null 2>"$tmp/ok.txt" || { echo "compiled RotaryEmbedding failed on legal positions:"; cat "$tmp/ok.txt"; fail=1; }
# Compress: a true condition past the axis (its count taken at run time when compiled)
expect_error "node 'cmp0' (Compress): condition is true at 7, past the 6 slices along the axis" \
    "$tmp/compress.onnx" --input "x=$tmp/cmp_x.pb" --input "c=$tmp/cmp_bad.pb"
"$smelt" run "$tmp/compress.onnx" --input "x=$tmp/cmp_x.pb" --input "c=$tmp/cmp_good.pb" >/dev/null 2>"$tmp/ok.txt" || { echo "compiled Compress failed on a legal condition:"; cat "$tmp/ok.txt"; fail=1; }
[ $fail -eq 0 ] && echo "data errors: ok"
exit $fail
