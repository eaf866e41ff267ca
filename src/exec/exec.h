/* Reference execution: run nodes with the op reference kernels. */
#ifndef SMELT_EXEC_H
#define SMELT_EXEC_H

#include "graph/graph.h"

/* ---- Memory budget ----
 * The reference executor, and constant folding (which runs the same
 * kernels), never hold more than a limit of bytes of the tensors they
 * allocate at once: $SMELT_MEMORY_LIMIT (bytes, or with a K, M, G or T
 * suffix: powers of 1024), else half the machine's physical memory.  A model
 * asking for more gets SMELT_ERR_LIMIT naming the limit, rather than an
 * allocation the kernel overcommits and later kills the process for. */
typedef struct exec_budget {
    int64_t limit; /* bytes */
    int64_t live;  /* bytes charged now */
} exec_budget;

#define EXEC_MEMORY_LIMIT_ENV "SMELT_MEMORY_LIMIT"

/* The limit now in force (the environment is read on every call). */
smelt_status exec_memory_limit(smelt_ctx *ctx, int64_t *bytes);
smelt_status exec_budget_init(smelt_ctx *ctx, exec_budget *b);
/* Charge `bytes` for node (NULL: not a node's) or fail naming the limit. */
smelt_status exec_budget_charge(smelt_ctx *ctx, exec_budget *b, const gr_node *node,
                                int64_t bytes, const char *what);
void exec_budget_release(exec_budget *b, int64_t bytes);

/* Run one node on concrete inputs: infer output shapes, allocate zeroed
 * outputs (out[i].data owned by the caller, smelt_free), evaluate.  Inputs
 * need data unless the op is OP_FLAG_SHAPE_ONLY.  On error no output data
 * stays allocated.  The outputs together must fit the memory limit. */
smelt_status exec_node(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                       smelt_tensor *out);
/* Same, charging the outputs' bytes to b (the caller releases them when it
 * frees the outputs; nothing stays charged on error). */
smelt_status exec_node_budget(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out, exec_budget *b);

/* Same contract as exec_node, but computes through the op's tensor
 * expressions with the te interpreter (checks compute definitions). */
smelt_status exec_node_te(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                          smelt_tensor *out);

typedef enum exec_mode { EXEC_REFERENCE, EXEC_TE } exec_mode;

/* Run the whole graph.  inputs[i] binds g->inputs[i]; outputs receive
 * g->outputs.len fresh tensors (free with smelt_free on .data). */
smelt_status exec_graph(smelt_ctx *ctx, const gr_graph *g, exec_mode mode,
                        const smelt_tensor *inputs, smelt_tensor *outputs);

/* exec_graph charging the tensors it holds to b: what stays charged when it
 * returns is the outputs' bytes (nothing on error). */
smelt_status exec_graph_budget(smelt_ctx *ctx, const gr_graph *g, exec_mode mode,
                               const smelt_tensor *inputs, smelt_tensor *outputs,
                               exec_budget *b);
smelt_status exec_node_te_budget(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out, exec_budget *b);

/* If, Loop, Scan (OP_FLAG_SUBGRAPHS): run the bodies with exec_graph_budget
 * (exec/control.c).  Outputs allocated here, charged to b, as exec_node's. */
smelt_status exec_control_node(smelt_ctx *ctx, const gr_node *node, exec_mode mode,
                               const smelt_tensor *const *in, smelt_tensor *out, exec_budget *b);

/* Check a runtime tensor against a graph input's declared dtype and static dims. */
smelt_status exec_check_input(smelt_ctx *ctx, const gr_graph *g, const gr_value *v,
                              const smelt_tensor *t);
/* The same, a run-time dim (gr_rt_dim) taking any value of its range:
 * compiled code's inputs (the reference executor runs at the maxima). */
smelt_status exec_check_input_rt(smelt_ctx *ctx, const gr_graph *g, const gr_value *v,
                                 const smelt_tensor *t);

#endif
