#!/bin/sh
# The CLI's contract: help on stdout with status 0, usage errors on stderr
# with status 2, failures (bad model) status 1 with a message naming the problem.
# usage: check_cli.sh SMELT MODEL_DIR
smelt=$1
model=$2/model.onnx
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/expect.sh"

expect 0 "commands:" -- "$smelt" --help
expect 0 "commands:" -- "$smelt" help
expect 2 "usage: smelt <command>" -- "$smelt"
for cmd in run check compile bench tune records graph; do
    expect 0 "  $cmd " -- "$smelt" "$cmd" --help
    expect 0 "  $cmd " -- "$smelt" help "$cmd"
done
expect 2 "unknown command 'nope'" -- "$smelt" nope
expect 2 "unknown command 'nope'" -- "$smelt" help nope
expect 2 "unknown option '--bogus'" -- "$smelt" compile "$model" --bogus
expect 2 "unknown pass" -- "$smelt" compile "$model" --disable-pass=no_such_pass
printf 'not a model' >"$tmp/bad.onnx"
expect 1 "bad.onnx" -- "$smelt" compile "$tmp/bad.onnx"
expect 1 "No such file\|not found\|cannot open" -- "$smelt" run "$tmp/missing.onnx"
expect 0 "functions:" -- "$smelt" compile "$model" --stats
# a fused group of 40 ops prints its first and last ops and the count
chain="$(dirname "$0")/../models/small/long_chain.onnx"
expect 0 "f0: Add Mul Sub .* \.\.\. (40 ops) Add Mul Sub Add$" -- "$smelt" compile "$chain" --stats

# compile never says "compiled" without code: a symbolic dim is named and
# --dim binds it; an op that refuses its input's dtype is named as the cause
small="$(dirname "$0")/../models/small"
expect 1 "input 'x' dim 0 (batch) is symbolic" -- "$smelt" compile "$small/dynamic_batch.onnx"
expect 1 "input 'x' dim 0 (batch) is symbolic" -- "$smelt" compile "$small/dynamic_batch.onnx" -o "$tmp/dyn"
expect 0 "compiled" -- "$smelt" compile "$small/dynamic_batch.onnx" --dim batch=3
expect 0 "wrote package" -- "$smelt" compile "$small/dynamic_batch.onnx" --dim batch=3 -o "$tmp/dyn3"
expect 0 "y: f32\[5,4\]" -- "$smelt" run "$small/dynamic_batch.onnx" --dim batch=5
expect 1 "no input of the model has a symbolic dim named 'seq'" -- "$smelt" compile "$small/dynamic_batch.onnx" --dim seq=3
expect 2 "expected NAME=VALUE" -- "$smelt" compile "$small/dynamic_batch.onnx" --dim batch
expect 2 "--dim takes an integer" -- "$smelt" run "$small/dynamic_batch.onnx" --dim batch=0
# a dim tied to another: the mask [1, total] follows the caches' past (+1),
# one compile for the range; offsets beyond 8 and unknown dims are refused
expect 0 "present_key: f32\[1,2,41,4\]" -- "$smelt" run "$small/kv_cache_mask.onnx" --dim total=past+1 --dim past=1..40
expect 0 "present_key: f32\[1,2,8,4\]" -- "$smelt" run "$small/kv_cache_mask.onnx" --dim past=7 --dim total=past+1
expect 2 "--dim takes an integer from -8 to 8, not '9'" -- "$smelt" run "$small/kv_cache_mask.onnx" --dim total=past+9
expect 1 "no input of the model has a symbolic dim named 'nope'" -- "$smelt" run "$small/kv_cache_mask.onnx" --dim total=nope+1
# run-time dims: one compile for a range; run and bench generate inputs of
# VALUE@MIN..MAX; ops that cannot take the dim at run time are named
expect 0 "wrote package" -- "$smelt" compile "$small/seq_block.onnx" --dim seq=1..64 -o "$tmp/rt"
expect 0 "seq<=64" -- cat "$tmp/rt/model.h"
expect 0 "hidden: f32\[1,5,16\]" -- "$smelt" run "$small/seq_block.onnx" --dim seq=5@1..64
expect 0 "hidden: f32\[1,64,16\]" -- "$smelt" run "$small/seq_block.onnx" --dim seq=1..64
expect 0 "compiled median" -- "$smelt" bench "$small/seq_block.onnx" --dim seq=9@1..64 --repeat 2 --warmup 0
expect 2 "expected VALUE, MIN..MAX or VALUE@MIN..MAX" -- "$smelt" run "$small/seq_block.onnx" --dim seq=..64
expect 2 "--dim takes an integer" -- "$smelt" run "$small/seq_block.onnx" --dim seq=65@1..64
expect 1 "node 'mean_over_seq' (ReduceMean): 'r' has the run-time dim 'seq'" -- "$smelt" compile "$small/seq_mean.onnx" --dim seq=1..32
expect 1 "value 'y' dim 1 is 64 with 'seq' = 32" -- "$smelt" compile "$small/seq_twice.onnx" --dim seq=1..32
expect 2 "tuning a build with run-time dims is not supported yet" -- "$smelt" tune "$small/seq_block.onnx" --dim seq=1..64 -o "$tmp/rec.jsonl"
expect 1 "node 'sin_of_int' (Sin): input 'x' has unsupported dtype i32" -- "$smelt" compile "$small/sin_int32.onnx"
expect 1 "node 'sin_of_int' (Sin): input 'x' has unsupported dtype i32" -- "$smelt" run "$small/sin_int32.onnx"

# fused groups with the same code share one C function (the three
# projections of attention.onnx: weights differ, code does not); python's
# test_attention_matches_onnxruntime checks the result
expect 0 "f_1 runs f_0's code" -- "$smelt" compile "$small/attention.onnx" --dump-ir=c

echo "$((fails == 0 ? 1 : 0)) passed, $fails failed"
[ "$fails" = 0 ]
