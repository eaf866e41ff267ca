/* Buffers laid out at the run's dims (ir_buffer.rt_extent: model inputs and
 * outputs with a run-time dim that the caller lays out at its own length,
 * lower/program.c) have no padding past a run's rows, so every access must
 * stay inside the run's extents.  Checked on a function's loop nests before
 * flattening; a value whose accesses cannot be proved is staged through a
 * buffer at the maxima instead (lower_graph tries again without it). */
#ifndef SMELT_LOWER_DENSE_CHECK_H
#define SMELT_LOWER_DENSE_CHECK_H

#include "te/te.h"
#include "tir/ir.h"

/* The first dense buffer s accesses where an index is not proved inside the
 * run's extent (or NULL: all are); te gives the run-time dims' variables. */
const ir_buffer *lower_dense_refused(ir_builder *b, const te_graph *te, const ir_stmt *s);
/* Extern kernels that take the run-time extents and the operands' strides
 * as arguments, so dense operands are theirs to handle. */
bool lower_dense_kernel_ok(const char *kernel);

#endif
