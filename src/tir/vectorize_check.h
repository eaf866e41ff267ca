/* Legality of VECTORIZED loops.  A loop may run its iterations as vector
 * lanes when doing so cannot change results:
 *   - the body has no nested loop, allocation or micro-kernel call;
 *   - every store's flat element index is  v + (terms free of v), i.e.
 *     stride 1 in the loop variable v (so lanes write distinct elements);
 *   - all stores to one buffer use the same index, and every load of a
 *     buffer that is stored in the body reads exactly that index (no value
 *     flows between iterations through memory).
 * Let-bound variables that depend on v count as v.  Loads of buffers not
 * written in the body may use any index. */
#ifndef SMELT_TIR_VECTORIZE_CHECK_H
#define SMELT_TIR_VECTORIZE_CHECK_H

#include "tir/ir.h"

bool tir_can_vectorize(const ir_stmt *for_loop);

/* Turn every VECTORIZED loop that tir_can_vectorize rejects into a SERIAL
 * one (never wrong code).  Returns s itself when nothing changed. */
ir_stmt *tir_legalize_vectorize(ir_builder *b, ir_stmt *s);

#endif
