/* Typed attributes of the pooling family (pool.c): MaxPool, AveragePool,
 * GlobalAveragePool, GlobalMaxPool (no attributes) and LRN.  The window
 * geometry is shared with Conv (conv.h). */
#ifndef SMELT_OPS_POOL_H
#define SMELT_OPS_POOL_H

#include "ops/conv.h"

/* node->op_attrs of MaxPool, AveragePool, LpPool (GlobalLpPool: only p). */
typedef struct op_pool_attrs {
    op_conv_window_attrs win;  /* kernel_shape is required */
    bool ceil_mode;
    bool count_include_pad;    /* AveragePool: divide by the window size including pads */
    bool column_major_indices; /* MaxPool storage_order = 1 */
    int64_t p;                 /* LpPool, GlobalLpPool: the norm's order (>= 1) */
} op_pool_attrs;

/* node->op_attrs of LRN: y = x / (bias + alpha / size * sum of squares over
 * `size` neighbouring channels) ^ beta. */
typedef struct op_lrn_attrs {
    float alpha, beta, bias;
    int64_t size;
} op_lrn_attrs;

/* Validate x against the attributes and resolve the window (auto_pad,
 * ceil_mode) for x's spatial dims. */
smelt_status op_pool_resolve(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                             op_conv_window *out);

#endif
