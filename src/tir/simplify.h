/* The tir simplifier: constant folding, canonical affine index arithmetic,
 * floordiv/floormod rules using variable ranges, provable min/max/select/if
 * removal, trivial loop and let elimination.
 *
 * Rules (all exact; integer arithmetic wraps per dtype, floats fold only
 * where IEEE gives the same bits at run time, division by zero never folds):
 *   - int64 +, -, * by constants become a sum of coef*atom + constant, larger
 *     |coef| first, then a fixed structural order; floordiv(x,c)*c +
 *     floormod(x,c) fuses back to x.
 *   - floordiv/floormod by positive constants split off multiples of the
 *     divisor and drop remainders proven to lie in [0, divisor).
 *   - x+0, x-0, x*1, x*0, x/1 for integers only.
 *   - int64 comparisons become "positive terms <op> rest"; provable
 *     conditions fold; If/select branches are simplified knowing the
 *     condition (ranges narrowed for "var <op> expr").
 *   - For with extent <= 0 is removed, extent 1 is replaced by its body;
 *     Lets of constants/variables are inlined, unused Lets dropped; empty
 *     Seq/Allocate/If are removed.
 * Deterministic; an input that needs no change is returned as the same
 * pointer.  A statement that simplifies to nothing is an empty Seq.  On
 * allocation failure the builder's `failed` flag is set (result may be NULL).
 */
#ifndef SMELT_TIR_SIMPLIFY_H
#define SMELT_TIR_SIMPLIFY_H

#include "tir/bounds.h"
#include "tir/ir.h"

ir_stmt *tir_simplify(ir_builder *b, ir_stmt *s);
/* ranges: facts known at the statement/expression (may be NULL). */
ir_stmt *tir_simplify_stmt(ir_builder *b, ir_stmt *s, const tir_scope *ranges);
ir_expr *tir_simplify_expr(ir_builder *b, ir_expr *e, const tir_scope *ranges);

/* True for NULL or an empty Seq (what the passes use for "no statement"). */
bool tir_stmt_is_empty(const ir_stmt *s);

#endif
