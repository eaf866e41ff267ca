#!/usr/bin/env bash
# Output must not depend on the per-process hash key (src/base/hash.c, the
# string maps' keyed hash): compile each model in separate processes under
# different keys (SMELT_HASH_SEED=1, =2, and the random default) and require
# the same graph after every pass, the same generated C and the same compile
# cache keys (the cache's file names).
#
#   tests/errors/check_hash_determinism.sh SMELT_BINARY MODEL.onnx...
set -u
smelt=${1:?usage: check_hash_determinism.sh SMELT_BINARY MODEL.onnx...}
shift
[ $# -gt 0 ] || { echo "no model given"; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

compile_under() { # model seed dir
    mkdir -p "$3"
    SMELT_HASH_SEED="$2" SMELT_CACHE_DIR="$3/cache" "$smelt" compile "$1" --dump-ir=all \
        >"$3/passes.txt" 2>&1 &&
        SMELT_HASH_SEED="$2" SMELT_CACHE_DIR="$3/cache" "$smelt" compile "$1" --dump-ir=c \
            >"$3/c.txt" 2>&1 &&
        (cd "$3/cache" && ls -R) >"$3/keys.txt"
}

for model in "$@"; do
    name=$(basename "$(dirname "$model")")
    for seed in 1 2 ""; do
        if ! compile_under "$model" "$seed" "$work/$name/seed_$seed"; then
            echo "FAIL $name: compile failed under SMELT_HASH_SEED='$seed'"
            cat "$work/$name/seed_$seed"/*.txt | head -20
            failed=1
            continue 2
        fi
    done
    for f in passes.txt c.txt keys.txt; do
        for seed in 2 ""; do
            if ! cmp -s "$work/$name/seed_1/$f" "$work/$name/seed_$seed/$f"; then
                echo "FAIL $name: $f differs between SMELT_HASH_SEED=1 and '$seed'"
                diff "$work/$name/seed_1/$f" "$work/$name/seed_$seed/$f" | head -20
                failed=1
            fi
        done
    done
    [ -s "$work/$name/seed_1/c.txt" ] || { echo "FAIL $name: no C printed"; failed=1; }
    [ "$failed" -eq 0 ] && echo "PASS $name ($(wc -l <"$work/$name/seed_1/c.txt") lines of C," \
        "$(grep -c '\.so$' "$work/$name/seed_1/keys.txt") cached librar(y/ies))"
done
exit "$failed"
