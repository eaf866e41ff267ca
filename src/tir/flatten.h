/* Storage flattening: every load/store that carries one index per dimension
 * of its buffer (shape [d0..dn-1]) gets one row-major element index
 * i0*d1*...*dn-1 + ... + in-1, simplified with the ranges of the enclosing
 * loops; rank-0 buffers use index 0.  Accesses that already have a single
 * index are left alone, so the pass is idempotent. */
#ifndef SMELT_TIR_FLATTEN_H
#define SMELT_TIR_FLATTEN_H

#include "tir/ir.h"

ir_stmt *tir_flatten_storage(ir_builder *b, ir_stmt *s);

/* The flat row-major index of idx[0..n) into buf (unsimplified). */
ir_expr *tir_flat_index(ir_builder *b, const ir_buffer *buf, int n, ir_expr *const *idx);

#endif
