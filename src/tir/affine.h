/* Affine (linear) form of int64 index expressions: sum of coef * atom plus a
 * constant, where an atom is any subexpression that is not +, - or * by a
 * constant (a variable, floordiv, min, a load, ...).  Used by the simplifier
 * for canonical forms and by the prover to cancel terms (x - x).
 *
 * Coefficient arithmetic is overflow-checked; on overflow (or out of memory)
 * the form is marked failed and callers fall back to leaving the expression
 * alone. */
#ifndef SMELT_TIR_AFFINE_H
#define SMELT_TIR_AFFINE_H

#include "tir/bounds.h"
#include "tir/ir.h"

typedef struct tir_term {
    ir_expr *atom;
    int64_t coef;
} tir_term;

/* Index forms rarely have more terms than this: they need no heap, so an
 * analysis does not give up (and change the code) when memory is short. */
#define TIR_AFFINE_INLINE_TERMS 16

/* Not to be copied by value: terms may point into the struct. */
typedef struct tir_affine {
    tir_term *terms; /* small[] or heap; equal atoms are combined as they are added */
    tir_term small[TIR_AFFINE_INLINE_TERMS];
    int n, cap;
    int64_t k;   /* constant term */
    bool failed; /* overflow or out of memory: do not use */
} tir_affine;

void tir_affine_init(tir_affine *f);
void tir_affine_fini(tir_affine *f);
void tir_affine_clear(tir_affine *f);
void tir_affine_add_const(tir_affine *f, int64_t c);
void tir_affine_add_term(tir_affine *f, ir_expr *atom, int64_t coef);
/* Add coef * e, decomposing INT64 +, -, * by constants and immediates;
 * any other subexpression is added as an atom unchanged. */
void tir_affine_add_expr(tir_affine *f, ir_expr *e, int64_t coef);
/* Drop zero terms and put terms in canonical order: larger |coef| first,
 * then by tir_expr_compare of the atoms. */
void tir_affine_normalize(tir_affine *f);
/* Build the canonical INT64 expression (call normalize first). */
ir_expr *tir_affine_emit(ir_builder *b, const tir_affine *f);
/* Coefficient of a plain variable term (0 when absent). */
int64_t tir_affine_coef(const tir_affine *f, const ir_var *v);
/* True when v occurs inside some atom (not as a plain term). */
bool tir_affine_var_in_atoms(const tir_affine *f, const ir_var *v);
tir_interval tir_affine_bounds(const tir_affine *f, const tir_scope *scope);

/* A deterministic total order on expressions (structural: kind, dtype, then
 * variable/buffer ids, values and children). */
int tir_expr_compare(const ir_expr *a, const ir_expr *b);

/* Overflow-checked interval helpers used by bounds and affine. */
tir_interval tir_interval_add(tir_interval a, tir_interval b);
tir_interval tir_interval_mul_const(tir_interval a, int64_t c);

#endif
