/* Typed attributes of the unary elementwise ops (elementwise.c).
 *
 * One struct serves every unary op; each op reads only its own fields.
 * Later stages (fusion, codegen) read these to emit the same arithmetic.
 */
#ifndef SMELT_OPS_ELEMENTWISE_H
#define SMELT_OPS_ELEMENTWISE_H

#include "ops/op.h"
#include "tir/ir.h"

typedef struct op_unary_attrs {
    double alpha; /* LeakyRelu, Elu, Selu, Celu, ThresholdedRelu, HardSigmoid, HardSwish,
                     Swish; Shrink's lambd */
    double beta;  /* HardSigmoid, HardSwish; Shrink's bias */
    double gamma;       /* Selu */
    bool gelu_tanh;     /* Gelu approximate="tanh" */
    bool detect_neg;    /* IsInf */
    bool detect_pos;    /* IsInf */
    smelt_dtype to;     /* Cast */
    int lowbit_mode;    /* Cast, CastLike: saturate and round_mode (SMELT_LB_*, smelt_lowbit.h) */
} op_unary_attrs;

/* Compiled path: x (a float expression) converted to the integer dtype `to`
 * as the reference converts: NaN -> 0, saturating to int64, then wrapping
 * to narrower dtypes; uint64 takes negatives to 0.  Also used by binary.c. */
ir_expr *op_float_to_int_expr(ir_builder *b, smelt_dtype to, ir_expr *x);

#endif
