/* Typed attributes and resolved geometry of the sliding-window ops: Conv,
 * ConvTranspose (conv.c) and the pools (pool.c, see pool.h).
 *
 * Two levels:
 *   *_attrs   what the model wrote, parsed and validated by import.  Spatial
 *             lists may be absent (count <= 0) because the spatial rank is
 *             only known once the input shapes are; defaults then apply.
 *   op_conv_window / op_conv_shape
 *             everything explicit for given input shapes: kernel, strides,
 *             dilations, begin/end pads (auto_pad resolved), output sizes.
 *             Later stages (layout, fusion, codegen) should read these via
 *             op_conv_resolve / op_conv_window_resolve rather than
 *             re-deriving ONNX's padding rules.
 */
#ifndef SMELT_OPS_CONV_H
#define SMELT_OPS_CONV_H

#include "ops/op.h"
#include "te/te.h"

#define OP_CONV_MAX_SPATIAL (SMELT_MAX_RANK - 2)
/* The reference kernels handle up to 3 spatial dims (1D/2D/3D). */
#define OP_CONV_MAX_SPATIAL_EVAL 3

typedef enum op_auto_pad {
    OP_AUTO_PAD_NOTSET,     /* explicit `pads` */
    OP_AUTO_PAD_SAME_UPPER, /* output = ceil(in / stride); odd padding extra at the end */
    OP_AUTO_PAD_SAME_LOWER, /* same, extra padding at the beginning */
    OP_AUTO_PAD_VALID,      /* no padding */
} op_auto_pad;

/* Spatial window attributes shared by Conv, ConvTranspose and the pools. */
typedef struct op_conv_window_attrs {
    op_auto_pad auto_pad;
    int n_kernel_shape, n_strides, n_dilations, n_pads; /* <= 0: absent */
    int64_t kernel_shape[OP_CONV_MAX_SPATIAL];
    int64_t strides[OP_CONV_MAX_SPATIAL];   /* default 1 */
    int64_t dilations[OP_CONV_MAX_SPATIAL]; /* default 1 */
    int64_t pads[2 * OP_CONV_MAX_SPATIAL];  /* ONNX order: all begins, then all ends; default 0 */
} op_conv_window_attrs;

/* node->op_attrs of Conv and ConvTranspose. */
typedef struct op_conv_attrs {
    op_conv_window_attrs win;
    int64_t group; /* >= 1 */
    /* ConvTranspose only (absent: count <= 0) */
    int n_output_padding, n_output_shape;
    int64_t output_padding[OP_CONV_MAX_SPATIAL];
    /* As written: the spatial sizes, or (some exporters) N, C and the spatial
     * sizes; the last n_spatial values are the ones used. */
    int64_t output_shape[SMELT_MAX_RANK];
} op_conv_attrs;

/* A window fully resolved for one input shape.  Sizes are static except
 * where the input size is symbolic: then out[i] is GR_DIM_UNKNOWN and the
 * pads of that axis are meaningless when auto_pad is SAME_*. */
typedef struct op_conv_window {
    int n_spatial;
    int64_t in[OP_CONV_MAX_SPATIAL];
    int64_t out[OP_CONV_MAX_SPATIAL];
    int64_t kernel[OP_CONV_MAX_SPATIAL];
    int64_t stride[OP_CONV_MAX_SPATIAL];
    int64_t dilation[OP_CONV_MAX_SPATIAL];
    int64_t pad_begin[OP_CONV_MAX_SPATIAL];
    int64_t pad_end[OP_CONV_MAX_SPATIAL]; /* may be negative for ConvTranspose with output_shape */
} op_conv_window;

/* Defaults (every list absent, NOTSET, group 1), for passes that build nodes. */
void op_conv_attrs_init(op_conv_attrs *a);

/* Conv / ConvTranspose geometry for given X and W shapes.
 *   Conv:          X [N, C, in...], W [M, C/group, k...],  Y [N, M, out...]
 *   ConvTranspose: X [N, C, in...], W [C, M/group, k...],  Y [N, M, out...]
 * For ConvTranspose, win.out/pad_* describe the output: out = stride*(in-1)
 * + dilation*(k-1) + 1 - pad_begin - pad_end (output_padding folded into
 * pad_end as a negative amount). */
typedef struct op_conv_shape {
    bool transpose;
    int64_t batch;        /* N (may be symbolic) */
    int64_t in_channels;  /* C */
    int64_t out_channels; /* M */
    int64_t group;
    op_conv_window win;
} op_conv_shape;

/* Validates ranks, channels and attributes against x and w and resolves
 * everything.  Symbolic spatial sizes give GR_DIM_UNKNOWN output sizes. */
smelt_status op_conv_resolve(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                             const smelt_tensor *w, op_conv_shape *out);

/* ---- shared with pool.c ---- */

/* Parse auto_pad, kernel_shape, strides, dilations, pads of `node`. */
smelt_status op_conv_window_import(smelt_ctx *ctx, const gr_node *node, bool kernel_required,
                                   op_conv_window_attrs *out);

/* Resolve a forward (Conv/pool) window.  `kernel` holds n_spatial sizes
 * taken from W when the kernel_shape attribute is absent, else it is NULL.
 * ceil_mode (pools): round the output size up, but never let the last
 * window start in the end padding. */
smelt_status op_conv_window_resolve(smelt_ctx *ctx, const gr_node *node,
                                    const op_conv_window_attrs *a, int n_spatial,
                                    const int64_t *in, const int64_t *kernel, bool ceil_mode,
                                    op_conv_window *out);

const char *op_auto_pad_name(op_auto_pad p);

/* Positions a in [0, na) whose partner b = a*s + off lies in [0, nb), as
 * [*lo, *hi) (empty: *lo == *hi).  s >= 1. */
void op_conv_valid_range(int64_t na, int64_t nb, int64_t s, int64_t off, int64_t *lo,
                         int64_t *hi);

/* ---- compute definitions (te; shared with pool.c) ---- */

/* A te tensor's dtype and static shape as a type (no data), for the
 * geometry resolvers. */
smelt_tensor op_conv_te_type(const te_tensor *t);

/* The dtype arithmetic runs in: float32 for float16/bfloat16 (rounding once
 * at the end rather than after every operation), else dt itself. */
/* The reduce stage `name` of a forward (or transposed, by the node's op)
 * convolution of te tensors x and w in acc_dt over the node's attributes and
 * a->out_type[0]'s shape: sum(select(in window, x, 0) * w), both cast to
 * acc_dt (the integer convolutions pass zero-point-shifted int32 stages).
 * NULL on error (in a->ctx). */
te_tensor *op_conv_te_sum(op_compute_args *a, const te_tensor *x, const te_tensor *w,
                          smelt_dtype acc_dt, const char *name);
smelt_dtype op_conv_acc_dtype(smelt_dtype dt);

/* One reduce axis per spatial dim with the given extents, named (last dim
 * first) "rx", "ry", "rz", "rw", "rv", "ru". */
void op_conv_spatial_axes(te_graph *g, int n_spatial, const int64_t *extents, ir_axis *axes);

/* The input coordinates pos[i] = o[i]*stride - pad_begin + k[i]*dilation
 * that kernel taps k of output positions o read in a forward window.
 * Returns the condition that every pos[i] lies inside the input, or NULL
 * when no tap can reach the padding (no guard needed). */
ir_expr *op_conv_window_taps(te_graph *g, const op_conv_window *w, ir_expr *const *o,
                             const ir_axis *k, ir_expr **pos);

/* e*scale + offset, leaving out a scale of 1 and an offset of 0. */
ir_expr *op_conv_affine(ir_builder *b, ir_expr *e, int64_t scale, int64_t offset);

/* a && c, where a NULL condition means "always true". */
ir_expr *op_conv_and(ir_builder *b, ir_expr *a, ir_expr *c);

/* n elements of t starting at element `off`, converted to/from double with
 * one dtype switch per call (for the reference kernels' inner loops). */
void op_conv_load_f64(const smelt_tensor *t, int64_t off, int64_t n, double *dst);
void op_conv_store_f64(smelt_tensor *t, int64_t off, int64_t n, const double *src);

#endif
