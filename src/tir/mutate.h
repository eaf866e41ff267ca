/* Generic one-level rewriting and visiting of tir nodes, so each pass only
 * writes the cases it cares about and recurses through these helpers. */
#ifndef SMELT_TIR_MUTATE_H
#define SMELT_TIR_MUTATE_H

#include "tir/ir.h"

typedef ir_expr *(*tir_expr_map_fn)(void *ctx, ir_expr *e);
typedef ir_stmt *(*tir_stmt_map_fn)(void *ctx, ir_stmt *s);

/* e with every direct operand replaced by fn(operand); e itself when none
 * changed, NULL when fn failed (returned NULL) or the builder did. */
ir_expr *tir_expr_map_children(ir_builder *b, ir_expr *e, tir_expr_map_fn fn, void *ctx);

/* s with its direct expressions replaced by efn and its direct
 * sub-statements by sfn (either may be NULL: unchanged); s itself when
 * nothing changed. */
ir_stmt *tir_stmt_map_children(ir_builder *b, ir_stmt *s, tir_expr_map_fn efn, tir_stmt_map_fn sfn,
                               void *ctx);

typedef void (*tir_expr_visit_fn)(void *ctx, const ir_expr *e);
typedef void (*tir_stmt_visit_fn)(void *ctx, const ir_stmt *s);

/* Call fn on each direct operand of e. */
void tir_expr_visit_children(const ir_expr *e, tir_expr_visit_fn fn, void *ctx);
/* Call efn on each direct expression of s and sfn on each direct
 * sub-statement (either may be NULL). */
void tir_stmt_visit_children(const ir_stmt *s, tir_expr_visit_fn efn, tir_stmt_visit_fn sfn, void *ctx);

#endif
