/* The blocked channel layout NCHW[x]c and its internal ops (layout.c).
 *
 * A tensor in block b >= 1 holds the channels of a plain [N, C, spatial...]
 * tensor as [N, C/b, spatial..., b]: channel c lives at block c / b, lane
 * c % b, so b channels of one position are adjacent (one vector).  Block 0
 * names the plain layout itself.  Block 1 has the plain layout's memory.
 *
 * The ops are made by passes/alter_layout.c and never imported from a model
 * (OP_FLAG_INTERNAL):
 *   LayoutTransform  src_block -> dst_block, any dtype, any spatial rank
 *   ConvNCHWc        2-D convolution in blocks, weights pre-packed:
 *                      X [N, Ci/ib, H, W, ib]  (or plain [N, Ci, H, W]: ib = 1)
 *                      W [Co/ob, Ci/ib, KH, KW, ib, ob]   group 1
 *                        [C/b,   1,     KH, KW, 1,  b ]   depthwise (group = Ci = Co, ib = ob)
 *                      B [Co/ob, ob] (optional)
 *                      Y [N, Co/ob, OH, OW, ob]
 *                    with Conv's attributes (strides, pads, dilations, group).
 */
#ifndef SMELT_OPS_LAYOUT_H
#define SMELT_OPS_LAYOUT_H

#include "ops/conv.h"

/* node->op_attrs of LayoutTransform. */
typedef struct op_layout_attrs {
    int64_t src_block, dst_block; /* 0: plain */
} op_layout_attrs;

/* ConvNCHWc geometry for given X and W shapes (node->op_attrs is an
 * op_conv_attrs). */
typedef struct op_nchwc_shape {
    int64_t batch, in_channels, out_channels;
    int64_t in_block, out_block;
    bool depthwise;
    op_conv_window win;
} op_nchwc_shape;

smelt_status op_conv_nchwc_resolve(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                   const smelt_tensor *w, op_nchwc_shape *out);

#endif
