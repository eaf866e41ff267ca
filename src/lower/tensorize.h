/* Lowering of tensorize: match the innermost loops of a stage against a
 * micro-kernel's declared computation and build the IR_STMT_CALL. */
#ifndef SMELT_LOWER_TENSORIZE_H
#define SMELT_LOWER_TENSORIZE_H

#include "tir/ir.h"

#define LT_MAX_INNER 8

typedef struct lt_request {
    const char *kernel, *stage; /* kernel name; stage name for messages */
    int n_inner;                /* the replaced loops, outermost first */
    ir_var *var[LT_MAX_INNER];
    int64_t extent[LT_MAX_INNER];
    bool reduce[LT_MAX_INNER];
    ir_buffer *dst;             /* the accumulator the update stores to */
    int dst_n;
    ir_expr **dst_idx;          /* its (multi-dim) index */
    ir_expr *value;             /* the reduced value, over the loop vars */
    int n_guards;               /* conditions the update runs under */
    ir_expr **guards;
} lt_request;

/* The call (wrapped in the guards that do not involve the replaced loops),
 * or SMELT_ERR_ARG naming the stage when the nest does not match. */
smelt_status lower_tensorize(smelt_ctx *ctx, ir_builder *b, const lt_request *rq, ir_stmt **out);

#endif
