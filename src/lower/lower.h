/* Lowering: a scheduled te graph -> one loop-IR function.
 *
 * lower_func runs the ordered pipeline (lower.c): schedule -> loop nests
 * (nest.c), simplify, partition loops, storage flatten, vectorize legality,
 * simplify.  Each step's output is logged at SMELT_DEBUG >= 3.
 */
#ifndef SMELT_LOWER_H
#define SMELT_LOWER_H

#include "sched/sched.h"
#include "tir/func.h"

/* Loop nests straight from the schedule: multi-dim loads/stores, split
 * guards as Ifs, reductions as init + update.  Temps allocated. */
smelt_status lower_build_nests(smelt_ctx *ctx, const sch_state *st, ir_builder *b,
                               ir_stmt **out);

/* Parameters of the function for st: placeholders in te order, then the
 * outputs in te_graph.outputs order.  *params is allocated in b's arena. */
smelt_status lower_params(smelt_ctx *ctx, const sch_state *st, ir_builder *b, int *n,
                          ir_buffer ***params);

/* The whole pipeline into *out (allocated in b's arena). */
smelt_status lower_func(smelt_ctx *ctx, const sch_state *st, ir_builder *b, const char *name,
                        ir_func **out);
/* The same; when an access to a buffer laid out at the run's dims is not
 * proved inside them (lower/dense_check.h), fails UNSUPPORTED with that
 * buffer in *dense_refused. */
smelt_status lower_func_dense(smelt_ctx *ctx, const sch_state *st, ir_builder *b, const char *name,
                              ir_func **out, const ir_buffer **dense_refused);

#endif
