/* Graph passes: one entry function per pass, one file per pass. */
#ifndef SMELT_PASSES_H
#define SMELT_PASSES_H

#include "graph/graph.h"

/* Infer dtype and shape of every value; nodes whose inputs are all known
 * constants and whose outputs are small are evaluated and replaced by
 * constants, so shape subgraphs (Shape -> Gather -> Concat -> Reshape)
 * resolve when shapes are static. */
smelt_status pass_infer_shapes(smelt_ctx *ctx, gr_graph *g);

#endif
