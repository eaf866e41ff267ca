/* Reference execution: run nodes with the op reference kernels. */
#ifndef SMELT_EXEC_H
#define SMELT_EXEC_H

#include "graph/graph.h"

/* Run one node on concrete inputs: infer output shapes, allocate zeroed
 * outputs (out[i].data owned by the caller, smelt_free), evaluate.  Inputs
 * need data unless the op is OP_FLAG_SHAPE_ONLY.  On error no output data
 * stays allocated. */
smelt_status exec_node(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                       smelt_tensor *out);

/* Same contract as exec_node, but computes through the op's tensor
 * expressions with the te interpreter (checks compute definitions). */
smelt_status exec_node_te(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                          smelt_tensor *out);

typedef enum exec_mode { EXEC_REFERENCE, EXEC_TE } exec_mode;

/* Run the whole graph.  inputs[i] binds g->inputs[i]; outputs receive
 * g->outputs.len fresh tensors (free with smelt_free on .data). */
smelt_status exec_graph(smelt_ctx *ctx, const gr_graph *g, exec_mode mode,
                        const smelt_tensor *inputs, smelt_tensor *outputs);

/* Check a runtime tensor against a graph input's declared dtype and static dims. */
smelt_status exec_check_input(smelt_ctx *ctx, const gr_graph *g, const gr_value *v,
                              const smelt_tensor *t);

#endif
