#!/bin/sh
# A package with a run-time dim (--dim seq=1..64) builds with -Werror and its
# model.h API serves several lengths (rt_dims_driver.c).
# usage: check_aot_rt_dims.sh SMELT SEQ_BLOCK_ONNX DRIVER_C OUT_DIR
set -eu
smelt=$1 model=$2 driver=$3 out=$4
rm -rf "$out"
"$smelt" compile "$model" --dim seq=1..64 -o "$out"
grep -q "seq<=64" "$out/model.h"
cd "$out"
${CC:-cc} -std=c99 -O2 -Wall -Wextra -Werror -I. "$driver" model.c smelt_rt_model.c smelt_rt_pool.c \
    -lm -lpthread -o rt_driver
./rt_driver
