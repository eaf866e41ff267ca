#!/usr/bin/env bash
# Run smelt on every case of a gen_bad_models.py folder and check the failure.
#
#   tests/errors/check_bad_models.sh SMELT_BINARY CASES_DIR
#
# For each line of CASES_DIR/cases.txt (<case> <compile|run|runc> <status> <substr>...,
# tab-separated) runs `smelt compile CASE/model.onnx`,
# `smelt run --reference CASE/model.onnx` or (runc) `smelt run CASE/model.onnx`
# (compiled) and requires:
#   - exit status 1 (0 for status "ok"); anything else (a signal, a sanitizer
#     abort, a usage error) fails the case;
#   - stderr holding "smelt: <status>: " and every substring (one written
#     "!TEXT": stderr must not hold TEXT);
#   - no sanitizer report on stderr.
# Last line: "N passed, N failed".  Exits non-zero if any case failed.
set -u

smelt=${1:?usage: check_bad_models.sh SMELT_BINARY CASES_DIR}
dir=${2:?usage: check_bad_models.sh SMELT_BINARY CASES_DIR}
manifest="$dir/cases.txt"
[ -r "$manifest" ] || { echo "no $manifest"; echo "0 passed, 1 failed"; exit 1; }
[ -x "$smelt" ] || { echo "no executable $smelt"; echo "0 passed, 1 failed"; exit 1; }
# Huge allocations must fail cleanly (SMELT_ERR_NOMEM), not abort under ASan.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1"
# The reference executor's memory limit, the same on every machine (the
# default is half the physical memory): cases expect it in their messages.
export SMELT_MEMORY_LIMIT=4G

passed=0
failed=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT

fail() {
    failed=$((failed + 1))
    echo "FAIL $1: $2"
    sed 's/^/    /' "$err" | head -c 2000
}

while IFS=$'\t' read -r name mode status subs_line; do
    [ -z "$name" ] || [ "${name#\#}" != "$name" ] && continue
    model="$dir/$name/model.onnx"
    case "$mode" in
    compile) timeout 60 "$smelt" compile "$model" >/dev/null 2>"$err" ;;
    run) timeout 60 "$smelt" run --reference "$model" >/dev/null 2>"$err" ;;
    runc) timeout 120 "$smelt" run "$model" >/dev/null 2>"$err" ;;
    *) echo "FAIL $name: unknown mode '$mode'"; failed=$((failed + 1)); continue ;;
    esac
    rc=$?
    want_rc=1
    [ "$status" = ok ] && want_rc=0
    if [ "$rc" -ne "$want_rc" ]; then
        fail "$name" "exit status $rc, expected $want_rc"
        continue
    fi
    if grep -qE 'Sanitizer|[0-9]+:[0-9]+: runtime error:|smelt: internal error' "$err"; then
        fail "$name" "sanitizer report or internal error"
        continue
    fi
    missing=""
    if [ "$status" != ok ]; then
        IFS=$'\t' read -r -a subs <<<"$subs_line"
        # load failures name the model: "smelt: MODEL: <status>: "
        grep -qF -e "smelt: $status: " -e "smelt: $model: $status: " "$err" ||
            missing="'smelt: [$model: ]$status: '"
        for s in "${subs[@]}"; do
            if [ "${s:0:1}" = "!" ]; then
                grep -qF -- "${s:1}" "$err" && missing="$missing (holds '${s:1}')"
            else
                grep -qF -- "$s" "$err" || missing="$missing '$s'"
            fi
        done
    fi
    if [ -n "$missing" ]; then
        fail "$name" "stderr lacks or holds:$missing"
        continue
    fi
    passed=$((passed + 1))
    echo "PASS $name"
done <"$manifest"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
