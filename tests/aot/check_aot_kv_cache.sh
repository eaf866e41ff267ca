#!/bin/sh
# A package with a key/value cache (--dim past=1..40) builds with -Werror, its
# caches are taken at the caller's length (dense) and its model.h API decodes
# steps whose presents append one row to the past (kv_cache_driver.c).
# usage: check_aot_kv_cache.sh SMELT KV_CACHE_ONNX DRIVER_C OUT_DIR
set -eu
smelt=$1 model=$2 driver=$3 out=$4
rm -rf "$out"
"$smelt" compile "$model" --dim past=1..40 -o "$out"
grep -q "past+1<=41" "$out/model.h"
grep -q '"past_key", 1, 4, {1, 2, 40, 4}, {0, 0, 1, 0}, {0, 0, 0, 0}, 1}' "$out/model.c"
cd "$out"
${CC:-cc} -std=c99 -O2 -Wall -Wextra -Werror -I. "$driver" model.c smelt_rt_model.c smelt_rt_pool.c \
    -lm -lpthread -o kv_driver
./kv_driver
