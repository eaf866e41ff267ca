#!/bin/sh
# Every test under DIR must be refused by `smelt check --compiled` with a
# message holding PATTERN (an UNSUPPORTED line each), none passing or failing:
#
#   tests/conformance/check_all_refused.sh SMELT DIR COUNT PATTERN
set -u
smelt=$1 dir=$2 count=$3 pattern=$4
out=$("$smelt" check --compiled "$dir") || { printf '%s\n' "$out"; exit 1; }
printf '%s\n' "$out"
refused=$(printf '%s\n' "$out" | grep -c "^UNSUPPORTED .*$pattern")
[ "$refused" -eq "$count" ] || { echo "expected $count refusals naming '$pattern', got $refused"; exit 1; }
printf '%s\n' "$out" | grep -qx "0 passed, 0 failed, $count skipped" || { echo "expected 0 passed, 0 failed, $count skipped"; exit 1; }
