/* Typed attributes of the linear algebra family (linalg.c), for later stages. */
#ifndef SMELT_OPS_LINALG_H
#define SMELT_OPS_LINALG_H

#include <stdbool.h>
#include <stdint.h>

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
