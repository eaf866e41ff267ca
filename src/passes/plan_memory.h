/* Memory planning: arena offsets for tensors with known sizes and lifetimes.
 *
 * Lowering (lower/program.c) calls it once the program's calls are fixed:
 * only then is it known which values are materialised (group outputs; values
 * inside a fused group never reach memory) and in which order they live.
 */
#ifndef SMELT_PLAN_MEMORY_H
#define SMELT_PLAN_MEMORY_H

#include "base/base.h"

#define MEM_PLAN_ALIGN 64

typedef struct mem_block {
    int64_t bytes;  /* > 0 */
    int first, last; /* live over calls [first, last] (write .. last read) */
    int inplace_of; /* a block this one may overwrite (written where that one
                       dies, elementwise, same size), or -1 */
    int64_t offset; /* out: MEM_PLAN_ALIGN-aligned */
} mem_block;

/* Best-fit placement in order of first use: blocks whose lifetimes overlap
 * never overlap in memory, except a block placed in place of its
 * inplace_of, which it replaces at the call where that one dies.  *arena:
 * the arena size needed. */
smelt_status mem_plan(smelt_ctx *ctx, mem_block *blocks, int n, int64_t *arena);

#endif
