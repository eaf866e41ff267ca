#!/bin/sh
# The CLI refuses what it cannot do as asked (issue 15, part 3): input bindings
# that do not match the model's inputs, numbers that are not numbers or out of
# range, a check folder without tests, several models, output files whose
# names collide; every dump on stdout; --version; bench --json.
# usage: check_cli_strict.sh SMELT MODEL_DIR (models/tiny_cnn)
smelt=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tiny=$2/model.onnx
fails=0
count=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SMELT_CACHE_DIR="${SMELT_CACHE_DIR:-$tmp/cache}"

expect() { # expect STATUS PATTERN -- command...
    want=$1 pattern=$2
    shift 3
    count=$((count + 1))
    "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    cat "$tmp/out" "$tmp/err" >"$tmp/all"
    if [ "$got" != "$want" ] || ! grep -q -- "$pattern" "$tmp/all"; then
        echo "FAIL: '$*' -> status $got (want $want), output lacks '$pattern':"
        sed 's/^/    /' "$tmp/all"
        fails=$((fails + 1))
    fi
}
check() { # check DESCRIPTION -- command... (status 0 wanted)
    what=$1
    shift 2
    count=$((count + 1))
    if ! "$@"; then
        echo "FAIL: $what"
        fails=$((fails + 1))
    fi
}

# A model with two inputs x, y and three outputs whose names sanitise to one
# file name ("a/b", "a:b" -> a_b; "A_b" differs only in case).
/usr/bin/python3 - "$tmp" <<'EOF' || { echo "FAIL: cannot write the test model"; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, TensorProto as T
d = sys.argv[1]
v = lambda n: helper.make_tensor_value_info(n, T.FLOAT, [2, 3])
g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["a/b"]),
                       helper.make_node("Sub", ["x", "y"], ["a:b"]),
                       helper.make_node("Mul", ["x", "y"], ["A_b"])],
                      "two", [v("x"), v("y")], [v("a/b"), v("a:b"), v("A_b")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, f"{d}/two.onnx")
np.save(f"{d}/x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
np.save(f"{d}/y.npy", np.ones((2, 3), np.float32))
np.save(f"{d}/tiny_in.npy", np.zeros((1, 3, 32, 32), np.float32))
EOF
two=$tmp/two.onnx
mkdir -p "$tmp/p=q"
cp "$tmp/y.npy" "$tmp/p=q/y=1.npy"

# ---- input bindings ----
expect 2 "no input named 'X' (its inputs: 'x', 'y')" -- "$smelt" run "$two" --input X="$tmp/x.npy"
expect 2 "takes 2 inputs ('x', 'y')" -- \
    "$smelt" run "$two" --input "$tmp/x.npy" --input "$tmp/y.npy" --input "$tmp/y.npy"
expect 2 "takes 1 input ('input')" -- "$smelt" run "$tiny" --input "$tmp/tiny_in.npy" --input "$tmp/x.npy"
expect 2 "input 'x' is given twice" -- "$smelt" run "$two" --input x="$tmp/x.npy" --input x="$tmp/y.npy"
expect 2 "input 'x' is given twice" -- "$smelt" run "$two" --input "$tmp/x.npy" --input x="$tmp/y.npy"
# a path with '=' (a '/' before the first '=') is a path, bound in model order
expect 0 "a/b: f32\[2,3\] min 1 max 6" -- "$smelt" run "$two" --input "$tmp/x.npy" --input "$tmp/p=q/y=1.npy"
# NAME=PATH where PATH itself holds '=': split at the first '='
expect 0 "a:b: f32\[2,3\] min -1 max 4" -- "$smelt" run "$two" --input y="$tmp/p=q/y=1.npy" --input x="$tmp/x.npy"
# an existing file named like NAME=FILE is that file
(cd "$tmp" && cp x.npy "x=y.npy")
expect 0 "A_b: f32\[2,3\] min 0 max 5" -- sh -c "cd '$tmp' && '$smelt' run two.onnx --input x=y.npy --input y.npy"
# inputs not given: random data, announced on stderr
expect 0 "no --input for 'y': random data (seed 8" -- "$smelt" run "$two" --input x="$tmp/x.npy" --seed 7
check "random-data notes go to stderr" -- grep -q "random data" "$tmp/err"

# ---- numbers ----
for bad in abc -1 999 1.5 ""; do
    expect 2 "--threads takes 1 to" -- "$smelt" run "$tiny" --threads "$bad"
done
expect 2 "--threads takes 1 to" -- "$smelt" bench "$tiny" --threads 9999
expect 2 "--repeat takes an integer" -- "$smelt" run "$tiny" --repeat abc
expect 2 "--repeat takes an integer" -- "$smelt" run "$tiny" --repeat 0
expect 2 "--repeat takes an integer" -- "$smelt" bench "$tiny" --repeat -3
expect 2 "--warmup takes an integer" -- "$smelt" bench "$tiny" --warmup x
expect 2 "--seed takes an integer" -- "$smelt" run "$tiny" --seed abc
expect 2 "--seed takes an integer" -- "$smelt" run "$tiny" --seed -1
expect 2 "--rtol takes a number" -- "$smelt" check --rtol abc "$2"
expect 2 "--atol takes a number" -- "$smelt" check --atol -1 "$2"
expect 0 "ran" -- "$smelt" run "$tiny" --threads 0 --repeat 2 --seed 18446744073709551615

# ---- flags without effect in a combination ----
expect 2 "--threads has no effect with --reference" -- "$smelt" run "$tiny" --reference --threads 2
expect 2 "exclude each other" -- "$smelt" run "$tiny" --reference --te
expect 2 "--json needs --stats" -- "$smelt" compile "$tiny" --json
expect 2 "--embed-weights needs -o" -- "$smelt" compile "$tiny" --embed-weights

# ---- check: a folder without tests fails ----
mkdir -p "$tmp/empty/sub"
expect 1 "no tests found under" -- "$smelt" check "$tmp/empty"

# ---- several models ----
expect 0 "two.onnx: 3 nodes" -- "$smelt" compile "$tiny" "$two"
check "compile of two models reports both" -- grep -q "tiny_cnn/model.onnx: .*compiled" "$tmp/out"
expect 2 "-o writes the package of one model; 2 models" -- "$smelt" compile "$tiny" "$two" -o "$tmp/pkg"
printf 'junk' >"$tmp/bad.onnx"
expect 1 "bad.onnx" -- "$smelt" compile "$tiny" "$tmp/bad.onnx"
expect 2 "one model per run" -- "$smelt" run "$tiny" "$two"

# ---- --output-dir: parents created, colliding names kept apart ----
expect 0 "wrote" -- "$smelt" run "$two" --input "$tmp/x.npy" --input "$tmp/y.npy" --output-dir "$tmp/o/deep"
check "three output files" -- test "$(ls "$tmp/o/deep" | wc -l)" = 3
check "a/b, a:b, A_b kept apart" -- \
    test -f "$tmp/o/deep/a_b.npy" -a -f "$tmp/o/deep/a_b_2.npy" -a -f "$tmp/o/deep/A_b_3.npy"
check "a:b's file holds x - y" -- /usr/bin/python3 -c "
import numpy as np, sys
a = np.load('$tmp/o/deep/a_b_2.npy'); sys.exit(0 if a.min() == -1 and a.max() == 4 else 1)"
printf 'x' >"$tmp/file"
expect 1 "cannot create the folder" -- "$smelt" run "$tiny" --output-dir "$tmp/file/sub"

# ---- dumps on stdout; --version; bench --json ----
"$smelt" compile "$tiny" --dump-ir=tir >"$tmp/tir" 2>"$tmp/tir_err"
check "--dump-ir=tir on stdout" -- grep -q "^lower .*: build nests" "$tmp/tir"
check "--dump-ir=tir: nothing on stderr" -- test ! -s "$tmp/tir_err"
"$smelt" compile "$tiny" --dump-ir=graph 2>/dev/null | grep -q "Conv" ||
    { echo "FAIL: --dump-ir=graph on stdout"; fails=$((fails + 1)); }
expect 0 "^smelt [0-9]*\.[0-9]*\.[0-9]*$" -- "$smelt" --version
expect 0 '"median_ms"' -- "$smelt" bench "$tiny" --json --repeat 3 --warmup 1
check "bench --json is one JSON object" -- /usr/bin/python3 -c "
import json; d = json.load(open('$tmp/out')); assert d['runs'] == 3 and d['mode'] == 'compiled'"

# ---- bench --profile: every generated function timed, named as --dump-ir=tir names it ----
expect 0 '"profile"' -- "$smelt" bench "$tiny" --json --profile --repeat 3 --warmup 1
cp "$tmp/out" "$tmp/prof"
"$smelt" compile "$tiny" --dump-ir=tir 2>/dev/null |
    sed -n 's/^lower \([^:]*\): build nests$/\1/p' | sort >"$tmp/funcs"
check "bench --profile: one entry per function, each timed and named" -- /usr/bin/python3 -c "
import json; p = json.load(open('$tmp/prof'))['profile']
assert sorted(e['function'] for e in p) == open('$tmp/funcs').read().split(), p
assert sorted(e['call'] for e in p) == list(range(len(p))), p
assert all(0 < e['min_ms'] <= e['median_ms'] and '/' in e['nodes'] for e in p), p"
expect 0 "profile, each call's median over 3 runs" -- "$smelt" bench "$tiny" --profile --repeat 3
expect 2 "--profile has no effect with --reference" -- "$smelt" bench "$tiny" --reference --profile

echo "$((count - fails)) passed, $fails failed"
[ "$fails" = 0 ]
