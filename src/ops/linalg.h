/* Typed attributes of the linear algebra family (linalg.c), for later stages. */
#ifndef SMELT_OPS_LINALG_H
#define SMELT_OPS_LINALG_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/op.h"
#include "te/te.h"

/* MatMul's output shape (numpy matmul: batch dims broadcast, 1-D operands
 * promoted and the added dim dropped); out->dtype = a's. */
smelt_status op_matmul_shape(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *a,
                             const smelt_tensor *b, smelt_tensor *out);
/* The reduce stage `name` (tag "matmul") of x @ w in acc_dt, shaped as
 * a->out_type[0]; the integer products pass zero-point-shifted stages.
 * NULL on error (in a->ctx). */
te_tensor *op_matmul_te_sum(op_compute_args *a, const te_tensor *x, const te_tensor *w,
                            smelt_dtype acc_dt, const char *name);

/* Gemm: Y = alpha * A' * B' + beta * C, with A' = transpose(A) if trans_a
 * (likewise B'), and the optional C broadcast unidirectionally to (M, N). */
typedef struct op_gemm_attrs {
    float alpha;
    float beta;
    bool trans_a;
    bool trans_b;
} op_gemm_attrs;

/* Einsum: the equation, parsed.  Labels are 0..51 for the letters a-z, A-Z;
 * OP_EINSUM_ELLIPSIS marks where "..." stands in a term. */
#define OP_EINSUM_MAX_OPERANDS 16
#define OP_EINSUM_MAX_TERM 16 /* letters (and one ellipsis) per term */
#define OP_EINSUM_ELLIPSIS (-1)

typedef struct op_einsum_term {
    int n;                           /* entries in labels */
    int8_t labels[OP_EINSUM_MAX_TERM]; /* a label, or OP_EINSUM_ELLIPSIS */
} op_einsum_term;

typedef struct op_einsum_attrs {
    int n_operands;
    op_einsum_term in[OP_EINSUM_MAX_OPERANDS];
    bool explicit_output; /* "->" given; else the implicit output applies */
    op_einsum_term out;
} op_einsum_attrs;

#endif
