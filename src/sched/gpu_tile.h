/* GPU default schedules for matrix products and convolutions: a block
 * computes a 2-D tile of the output, each thread a register tile of it,
 * the reduction walked in steps whose operand tiles the block's threads
 * stage in shared memory (cache_read).  Internal to sched/ (default.c). */
#ifndef SMELT_SCHED_GPU_TILE_H
#define SMELT_SCHED_GPU_TILE_H

#include "sched/sched.h"

/* The plan for one reduction stage. */
typedef struct sch_gpu_tile {
    const te_tensor *acc;       /* the reduction: a float32 sum of a product of two loads */
    int row, col, col2;         /* acc's axes: rows; columns (ow of a conv); a conv's oh, else -1 */
    const ir_buffer *operand[2]; /* the buffers read: [0] by rows, [1] by columns */
    int64_t ty, txh, txw;       /* threads of a block: ty on rows, txh x txw on the columns */
    int64_t tm, tn;             /* a thread's register tile: rows x columns */
    int64_t kt;                 /* the first reduce axis walked in steps of kt */
    int64_t shared_bytes;       /* of the two tiles (lowering's sizes, padding included) */
    double cost, plain_cost;    /* the model's time: tiled, one thread per output */
    const char *why;            /* not tiled: the reason (SMELT_DEBUG=2), else NULL */
} sch_gpu_tile;

/* A tiled plan for reduction t of g (inlined[i]: tensor i is inlined, so
 * its loads stand for its body), or false when tiling does not apply (not
 * a float32 product of two loads whose indices are affine in the axes, no
 * tile that fits the target's shared memory, or one thread per output is
 * expected to be as fast: matrix-vector shapes). */
bool sch_gpu_tile_plan(const te_graph *g, const te_tensor *t, const bool *inlined,
                       const smelt_hw *hw, sch_gpu_tile *out);

/* The steps of plan p: `out` (t itself, then after a cache_write of t, or
 * the stage reading t at its own points, with t's epilogue inlined into
 * it) gets the block and thread loops, the accumulation is computed at the
 * thread loop with its operands staged per reduction step. */
smelt_status sch_gpu_tile_steps(smelt_ctx *ctx, const sch_gpu_tile *p, const te_tensor *out,
                                sch_schedule *s);

#endif
