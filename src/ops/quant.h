/* Typed attributes of the quantization family (quant.c), for passes. */
#ifndef SMELT_OPS_QUANT_H
#define SMELT_OPS_QUANT_H

#include <stdint.h>

#include "smelt.h"

/* QuantizeLinear and DequantizeLinear. */
typedef struct op_quant_attrs {
    int64_t axis;             /* per-axis and blocked: the quantized axis */
    int64_t block_size;       /* 0: per tensor or per axis */
    smelt_dtype output_dtype; /* UNDEFINED: from the zero point / the scale */
    smelt_dtype precision;    /* QuantizeLinear's division; UNDEFINED: default */
    bool saturate;            /* QuantizeLinear to a float8 type */
} op_quant_attrs;

/* a_scale * b_scale / y_scale rounded in the scales' type dt, as the
 * reference requantization uses it (quant.c). */
double op_quant_multiplier(smelt_dtype dt, double a, double b, double y);

struct op_compute_args;
struct te_tensor;
/* QLinearConv as int8 micro-kernel calls (quant_fast.c): an extern stage
 * writing y, when the op's constants and shape allow it; *out = NULL (and
 * SMELT_OK) when they do not, and the caller builds the generic loop nest. */
smelt_status op_qlinear_conv_fast(struct op_compute_args *a, struct te_tensor **out);
/* MatMulInteger and QLinearMatMul with a constant 2-D B as calls of the
 * int8 matrix-product micro-kernel (quant_fast.c), under the same contract. */
smelt_status op_matmul_integer_fast(struct op_compute_args *a, struct te_tensor **out);
smelt_status op_qlinear_matmul_fast(struct op_compute_args *a, struct te_tensor **out);

#endif
