/* Run-time dims in lowering: which ops' computes take them.
 *
 * Loops over a run-time dim run to the run's length (lower/nest.c), so an
 * op is right at every length when its compute uses the dim only as an
 * iteration range: elementwise and broadcasting ops, matrix products,
 * softmax, sums and maxima, transposes, and reshapes that keep a row's
 * place in the layout.  Ops that use the size itself (a mean's divisor, an
 * index checked against it, a kernel sized at compile time) are refused,
 * naming node, op, value and dim. */
#ifndef SMELT_LOWER_RT_CHECK_H
#define SMELT_LOWER_RT_CHECK_H

#include "graph/graph.h"

smelt_status lower_check_rt_dims(smelt_ctx *ctx, const gr_graph *g);

#endif
