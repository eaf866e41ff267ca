#!/bin/sh
# --schedule FILE on compile, run, bench and check: entries by function name
# and by workload key (from tune --list-tasks) schedule those functions, the
# results still match the expected outputs, the others keep their default;
# bad entries fail (status 1) naming the file, the line and the step.
# usage: check_schedule.sh SMELT MODEL_DIR (an ONNX backend-style folder)
smelt=$1
dir=$2
model=$dir/model.onnx
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/expect.sh"

# the second task's key, as --list-tasks prints it (8 hex digits)
key=$("$smelt" tune "$model" --list-tasks | awk 'NR == 3 { print $2 }')
case $key in
????????) ;;
*) echo "FAIL: no task key in tune --list-tasks: '$key'"; fails=$((fails + 1)) ;;
esac
cat >"$tmp/s.txt" <<EOT
# tiny_cnn's classifier: the bias add split and parallel, the product at root
task f5_matmulpacked
split n1_y i1 4      # a comment after a step
parallel n1_y i0

task $key            # no steps: the naive loop nest
EOT
expect 0 "2 of 6 functions scheduled" -- "$smelt" check --compiled --schedule "$tmp/s.txt" "$dir"
expect 0 "1 passed" -- "$smelt" check --compiled --schedule "$tmp/s.txt" "$dir"
expect 0 "schedule file: 2 of 6" -- "$smelt" run "$model" --schedule "$tmp/s.txt"
expect 0 "schedule file: 2 of 6" -- "$smelt" bench "$model" --repeat 1 --schedule="$tmp/s.txt"
expect 0 "schedule file: 2 of 6" -- "$smelt" compile "$model" --schedule "$tmp/s.txt"

printf 'task f5_matmulpacked\nsplit n1_y i1 4\n\nsplit n1_y i7 2\n' >"$tmp/bad_iter.txt"
expect 1 "bad_iter.txt:4: task 'f5_matmulpacked' (function f5_matmulpacked): step 'split n1_y i7 2': no iteration variable named 'i7'" \
    -- "$smelt" compile "$model" --schedule "$tmp/bad_iter.txt"
printf 'task f5_matmulpacked\nvectorize n0_y k\n' >"$tmp/race.txt"
expect 1 "race.txt:2: .*step 'vectorize n0_y k': cannot vectorize" \
    -- "$smelt" run "$model" --schedule "$tmp/race.txt"
printf 'task f5_matmulpacked\nsplat n1_y i1 4\n' >"$tmp/typo.txt"
expect 1 "typo.txt:2: unknown step 'splat'" -- "$smelt" compile "$model" --schedule "$tmp/typo.txt"
printf 'task f9_conv\n' >"$tmp/none.txt"
expect 1 "none.txt:1: no generated function is task 'f9_conv' (the functions: f0_convnchwc" \
    -- "$smelt" compile "$model" --schedule "$tmp/none.txt"
printf 'split n1_y i1 4\n' >"$tmp/orphan.txt"
expect 1 "orphan.txt:1: a step before the first 'task NAME' line" \
    -- "$smelt" compile "$model" --schedule "$tmp/orphan.txt"
printf 'task f5_matmulpacked\ntask f5_matmulpacked\n' >"$tmp/twice.txt"
expect 1 "twice.txt:2: task 'f5_matmulpacked' has an entry already (line 1)" \
    -- "$smelt" compile "$model" --schedule "$tmp/twice.txt"
expect 1 "missing.txt" -- "$smelt" compile "$model" --schedule "$tmp/missing.txt"
expect 2 "needs a value" -- "$smelt" compile "$model" --schedule

echo "$((fails == 0 ? 1 : 0)) passed, $fails failed"
[ "$fails" = 0 ]
