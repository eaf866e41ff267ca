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

echo "$((fails == 0 ? 1 : 0)) passed, $fails failed"
[ "$fails" = 0 ]
