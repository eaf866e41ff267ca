#!/bin/sh
# Data the reference refuses (an index out of range) fails the compiled path
# too, with the reference's message, on 1 and 2 threads; in-range and
# negative (wrapping) indices still run.  Usage: check_data_errors.sh SMELT MODELS_DIR
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
[ $fail -eq 0 ] && echo "data errors: ok"
exit $fail
