/* Typed attributes of the resampling family (resize.c): Resize and Upsample. */
#ifndef SMELT_OPS_RESIZE_H
#define SMELT_OPS_RESIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "smelt.h"

typedef enum op_resize_mode {
    OP_RESIZE_NEAREST,
    OP_RESIZE_LINEAR, /* n-linear over every resized axis */
    OP_RESIZE_CUBIC,
} op_resize_mode;

/* How an output coordinate maps back to an input coordinate. */
typedef enum op_resize_coord {
    OP_RESIZE_HALF_PIXEL,
    OP_RESIZE_HALF_PIXEL_SYMMETRIC,
    OP_RESIZE_PYTORCH_HALF_PIXEL,
    OP_RESIZE_ALIGN_CORNERS,
    OP_RESIZE_ASYMMETRIC,
    OP_RESIZE_TF_HALF_PIXEL_FOR_NN,
    OP_RESIZE_TF_CROP_AND_RESIZE,
} op_resize_coord;

/* Resize-18's keep_aspect_ratio_policy (with sizes): one scale for all
 * resized axes, the smallest (not_larger) or largest (not_smaller). */
typedef enum op_resize_policy {
    OP_RESIZE_STRETCH,
    OP_RESIZE_NOT_LARGER,
    OP_RESIZE_NOT_SMALLER,
} op_resize_policy;

typedef enum op_resize_nearest {
    OP_RESIZE_ROUND_PREFER_FLOOR,
    OP_RESIZE_ROUND_PREFER_CEIL,
    OP_RESIZE_FLOOR,
    OP_RESIZE_CEIL,
    /* Resize-10 and Upsample: floor when enlarging an axis, ceil when
     * shrinking it (what ONNX Runtime does; the old specs say nothing). */
    OP_RESIZE_SIMPLE,
} op_resize_nearest;

/* After import, Resize inputs are always X, roi, scales, sizes (Resize-10's
 * scales is moved from input 1 to 2) and Upsample inputs are X, scales
 * (Upsample-7's attribute becomes input 1).  Empty roi/scales/sizes tensors
 * count as absent. */
typedef struct op_resize_attrs {
    op_resize_mode mode;
    op_resize_coord coord;
    op_resize_nearest nearest;
    float cubic_coeff_a;
    bool exclude_outside;
    float extrapolation_value;
    op_resize_policy policy;
    bool antialias; /* linear/cubic: the filter widened by 1 / scale when shrinking */
    int n_axes; /* opset 18 'axes': scales/sizes/roi cover these axes only; 0 = all */
    int64_t axes[SMELT_MAX_RANK];
} op_resize_attrs;

/* Keys' cubic convolution (coefficient A), shared by Resize and GridSample:
 * the weights of the 4 taps at distances 1+t, t, 1-t, 2-t (0 <= t < 1), and
 * as an expression the kernel at distance d, `near` for its piece d <= 1
 * (float64, in the reference's operation order). */
void op_cubic_weights(double t, double A, double w[4]);
struct ir_builder;
struct ir_expr;
struct ir_expr *op_te_cubic(struct ir_builder *b, double A, struct ir_expr *d, bool near);

#endif
